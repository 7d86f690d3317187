"""Claims at a glance: each claim's 95% interval against its margin, in one figure.

A chapter's claims are measured in different units (points of AURC, nats, a share of
networks), so the figure puts every interval on one scale: the distance of each point
:math:`x` of it beyond the margin :math:`m`, in half-widths of the interval,

.. math:: u(x) = s\\,\\frac{x - m}{(\\text{high} - \\text{low})/2},

with :math:`s = +1` for a claim that must lie above its margin and :math:`-1` for one
that must lie below. Every interval is then 2 wide, and the margin is at 0: the claim
holds when the whole interval lies right of 0, is contradicted when it lies wholly
left, and is inconclusive when it straddles 0. A point check has no interval; it is
drawn as a diamond on the side its rule put it. The hover gives each claim's own
estimate and interval in its units.

Written by hand: a forest plot of this one scale is a few plotly traces.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from iclr25.core.outcomes import Claim

COLOURS = {
    "holds": "#1a7f37",
    "inconclusive": "#6e7781",
    "known gap": "#9a6700",
    "FAILED": "#cf222e",
    "holds, gap declared": "#cf222e",
}
"""The outcome colours of the claims tables (light mode's)."""

REACH = 6.0
"""Half-widths shown either side of the margin; a farther interval is drawn at the edge,
its hover giving where it lies."""

POINT = 2.0
"""Where a point check is drawn: at +2 when its rule held, at -2 when it did not."""


def beyond_margin(c: Claim) -> tuple[float, float, float] | None:
    """A claim's estimate and interval on the figure's scale, ``(u, low, high)``, each
    clipped to :data:`REACH`; ``None`` for a point check or a missing interval."""
    if c.margin is None or c.low is None or c.high is None or c.estimate is None:
        return None
    side = 1.0 if c.beyond == "above" else -1.0
    half = (c.high - c.low) / 2

    def scaled(x: float) -> float:
        distance = side * (x - c.margin)
        u = distance / half if half > 0 else REACH * float(np.sign(distance))
        return max(-REACH, min(REACH, u))

    ends = sorted((scaled(c.low), scaled(c.high)))
    return scaled(c.estimate), ends[0], ends[1]


def _hover(c: Claim) -> str:
    said = (html.escape(t) for t in (c.chapter, c.id, c.status, c.measured, c.rule))
    chapter, id, status, measured, rule = said
    return f"<b>{chapter}/{id}</b> ({status})<br>{measured}<br>rule: {rule}"


def claims_figure(claims: Sequence[Claim]) -> go.Figure:
    """A chapter's claims, one row each in the order they were decided, the paper
    claims above and the setup claims below: the interval as a bar with its estimate,
    a point check as a diamond, coloured by status; the margin is the line at 0."""
    from plotly.subplots import make_subplots

    kinds = [k for k in ("paper", "setup") if any(c.kind == k for c in claims)]
    rows = {k: [c for c in claims if c.kind == k] for k in kinds}
    fig = make_subplots(
        rows=len(kinds),
        cols=1,
        shared_xaxes=True,
        row_heights=[len(rows[k]) for k in kinds],
        vertical_spacing=0.12 if len(kinds) > 1 else 0,
        subplot_titles=[f"{k} claims" for k in kinds],
    )
    for r, kind in enumerate(kinds, start=1):
        for c in rows[kind]:
            where = beyond_margin(c)
            colour = COLOURS[c.status]
            if where is None:
                x, bar = (POINT if c.outcome == "holds" else -POINT), None
            else:
                x, bar = where[0], where[1:]
            fig.add_scatter(
                x=[x], y=[c.id], mode="markers", row=r, col=1, showlegend=False,
                marker=dict(color=colour, size=9, symbol="circle" if bar else "diamond"),
                error_x=None if bar is None else dict(
                    type="data", symmetric=False, array=[bar[1] - x], arrayminus=[x - bar[0]],
                    color=colour, thickness=2, width=4,
                ),
                hovertext=_hover(c), hoverinfo="text",
            )  # fmt: skip
        fig.add_vline(x=0, line_dash="dot", line_color="#6e7781", row=r, col=1)
        fig.update_yaxes(autorange="reversed", row=r, col=1)
    fig.update_xaxes(range=[-REACH - 0.5, REACH + 0.5], zeroline=False)
    fig.update_xaxes(
        title_text="beyond the margin, in half-widths of the 95% interval (diamond: a point check)",
        row=len(kinds),
        col=1,
    )
    return fig.update_layout(
        title="Claims at a glance: an interval wholly right of the dotted line clears its margin",
        height=140 + 26 * len(claims),
        margin=dict(l=10, r=10, t=70, b=50),
    )


def _nearer_end(c: Claim) -> float:
    """Where the book's figure marks a claim: its interval's left end, or its right end
    when the whole interval lies left of the margin (the end nearer the margin, except
    that an interval straddling it is marked left of it), or a point check's side."""
    where = beyond_margin(c)
    if where is None:
        return POINT if c.outcome == "holds" else -POINT
    _, low, high = where
    return high if high < 0 else low


def book_figure(claims: Sequence[Claim]) -> go.Figure:
    """The book's paper claims, one row per chapter: each claim a mark on the scale of
    :func:`claims_figure` (:func:`_nearer_end`; a point check as a diamond), coloured
    by status: right of 0 its interval clears the margin, left of 0 it does not."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for status, colour in COLOURS.items():
        shown = [c for c in claims if c.kind == "paper" and c.status == status]
        if not shown:
            continue
        xs = [_nearer_end(c) for c in shown]
        fig.add_scatter(
            x=xs,
            y=[c.chapter for c in shown],
            mode="markers",
            name=status,
            marker=dict(
                color=colour,
                size=9,
                opacity=0.8,
                symbol=["circle" if beyond_margin(c) else "diamond" for c in shown],
            ),
            hovertext=[_hover(c) for c in shown],
            hoverinfo="text",
        )
    chapters = list(dict.fromkeys(c.chapter for c in claims))
    fig.add_vline(x=0, line_dash="dot", line_color="#6e7781")
    fig.update_yaxes(categoryorder="array", categoryarray=chapters, autorange="reversed")
    fig.update_xaxes(
        range=[-REACH - 0.5, REACH + 0.5],
        title_text="the interval's end nearer the margin, beyond it, in half-widths",
    )
    return fig.update_layout(
        title="Every paper claim at a glance: right of the dotted line, it clears its margin",
        height=160 + 26 * len(chapters),
        margin=dict(l=10, r=10, t=60, b=50),
    )
