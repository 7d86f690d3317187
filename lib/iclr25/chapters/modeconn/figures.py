"""The chapter's figures: losses along straight lines, a path's rounds, barrier
boxplots, the path explorer and the attack-sensitivity boxplots."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25.chapters.modeconn.method import Route

if TYPE_CHECKING:
    import plotly.graph_objects as go


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

KIND_COLORS = {"real": "#1f77b4", "interpolated": "#2ca02c", "synthetic": "#9467bd"}
SET_COLORS = {"within class": "royalblue", "adversarial": "firebrick"}


def paths_figure(curves: Mapping[str, Sequence[np.ndarray]], title: str) -> go.Figure:
    """One panel per kind of pair (``curves[kind]``: losses along each path, t from 0
    to 1): the CE of the class along straight lines, as the paper's Fig. 3."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(curves), subplot_titles=list(curves))
    for col, (kind, losses) in enumerate(curves.items(), start=1):
        for i, loss in enumerate(losses):
            fig.add_scatter(
                x=np.linspace(0, 1, len(loss)),
                y=loss,
                mode="lines",
                line=dict(color=KIND_COLORS.get(kind), width=1),
                opacity=0.6,
                name=kind,
                legendgroup=kind,
                showlegend=i == 0,
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="t along A -> C")
    fig.update_yaxes(title_text="CE of the class", col=1)
    return fig.update_layout(title=title, height=340)


ROUND_NAMES = ("primary", "secondary", "tertiary")


def rounds_figure(route: Route, title: str, log_y: bool = False) -> go.Figure:
    """A path's loss after each round, one panel per round (the paper's Fig. 7:
    primary A -> C, secondary through B', tertiary through the next B')."""
    from plotly.subplots import make_subplots

    names = [
        ROUND_NAMES[r] if r < len(ROUND_NAMES) else f"round {r}" for r in range(len(route.curves))
    ]
    fig = make_subplots(rows=1, cols=len(route.curves), subplot_titles=names)
    for col, (x, loss) in enumerate(route.curves, start=1):
        fig.add_scatter(
            x=x, y=loss, mode="lines", showlegend=False, row=1, col=col, line_color="#1f77b4"
        )
        fig.add_hline(y=route.endpoint, line_dash="dot", line_color="gray", row=1, col=col)
    fig.update_xaxes(title_text="position on the path")
    fig.update_yaxes(title_text="CE of the class", col=1, type="log" if log_y else None)
    if log_y:
        fig.update_yaxes(type="log")
    return fig.update_layout(title=title, height=330)


def barriers_figure(stats: Mapping[str, Mapping[str, np.ndarray]], title: str) -> go.Figure:
    """Boxplots of barrier max and gap, within class against real-to-adversarial
    (the paper's Fig. 6). ``stats[set]`` holds arrays ``max`` and ``gap``."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in stats.items():
        fig.add_box(
            x=["barrier max"] * len(values["max"]) + ["barrier gap"] * len(values["gap"]),
            y=np.r_[values["max"], values["gap"]],
            name=name,
            marker_color=SET_COLORS.get(name),
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
        )
    return fig.update_layout(
        boxmode="group", title=title, yaxis_title="CE of the class", height=380
    )


def explorer_figure(
    route: Route, images: Sequence[np.ndarray], title: str, slots: int = 5
) -> go.Figure:
    """A path's loss after its last round (top) and its nodes A, B', ..., C (below,
    in order along the path, at most ``slots``)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=2,
        cols=slots,
        specs=[[{"colspan": slots}] + [None] * (slots - 1), [{}] * slots],
        row_heights=[0.55, 0.45],
        vertical_spacing=0.12,
    )
    x, loss = route.curves[-1]
    fig.add_scatter(x=x, y=loss, mode="lines", showlegend=False, row=1, col=1)
    fig.add_scatter(
        x=route.positions,
        y=np.interp(route.positions, x, loss),
        mode="markers",
        marker=dict(size=8, color="firebrick"),
        showlegend=False,
        row=1,
        col=1,
    )
    for j, image in enumerate(images[:slots]):
        fig.add_heatmap(
            z=np.asarray(image).reshape(np.shape(image)[-2:])[::-1],
            colorscale="gray",
            showscale=False,
            row=2,
            col=j + 1,
        )
    for j in range(slots):
        fig.update_xaxes(visible=False, row=2, col=j + 1)
        fig.update_yaxes(visible=False, scaleanchor=f"x{j + 2}", row=2, col=j + 1)
    fig.update_xaxes(title_text="position on the path", row=1, col=1)
    fig.update_yaxes(title_text="CE", row=1, col=1)
    return fig.update_layout(title=title, height=460)


def sensitivity_figure(
    within: Mapping[str, np.ndarray], adversarial: Mapping[str, np.ndarray], title: str
) -> go.Figure:
    """Gaps within class and real-to-adversarial for one attack setting: boxplots of
    the gap, with the title carrying the AUC and the medians."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, values in (("within class", within), ("adversarial", adversarial)):
        fig.add_box(
            y=values["gap"],
            name=name,
            marker_color=SET_COLORS[name],
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
        )
    return fig.update_layout(title=title, yaxis_title="barrier gap", height=360)
