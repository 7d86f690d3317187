"""The TGB-Seq chapter's figure builders."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from iclr25.chapters.tgbseq.stream import Stream

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

COLORS = {
    "EdgeBank": "#7f7f7f",
    "GraphMixer": "#636EFA",
    "DyGFormer": "#EF553B",
    "JODIE": "#AB63FA",
    "SASRec": "#00CC96",
}
"""One colour per model (EdgeBank grey, the others plotly's first four)."""


def mrr_figure(
    mrr: dict[str, float],
    chance: float,
    title: str,
    err: dict[str, float] | None = None,
    metric: str = "MRR",
) -> go.Figure:
    """Test ``metric`` of each model (name -> value) as bars, with error bars ``err``
    (name -> sd over seeds) where given, and the value of a random ranking
    (``chance``) as a dashed line."""
    import plotly.graph_objects as go

    error = None if err is None else dict(type="data", array=[err[m] for m in mrr])
    fig = go.Figure(
        go.Bar(
            x=list(mrr), y=list(mrr.values()), marker_color=[COLORS[m] for m in mrr], error_y=error
        )
    )
    fig.add_hline(y=chance, line_dash="dash", line_color="gray", annotation_text="random")
    return fig.update_layout(title=title, yaxis_title=metric, yaxis_range=[0, 1], height=360)


def streams_figure(rows: dict[str, dict[str, np.ndarray]]) -> go.Figure:
    """Two panels: item popularity by rank (log-log) and the distribution of gaps between
    a user's interactions, one line per stream (name -> {"popularity", "gaps"})."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["item popularity by rank", "gaps between a user's interactions"],
    )
    for name, row in rows.items():
        pop = np.sort(row["popularity"])[::-1]
        fig.add_scatter(
            x=np.arange(1, len(pop) + 1),
            y=pop,
            name=name,
            mode="lines",
            legendgroup=name,
            row=1,
            col=1,
        )
        gaps = np.sort(row["gaps"])
        fig.add_scatter(
            x=gaps,
            y=1 - np.arange(len(gaps)) / len(gaps),
            name=name,
            mode="lines",
            legendgroup=name,
            showlegend=False,
            row=1,
            col=2,
        )
    fig.update_xaxes(type="log", title_text="rank", row=1, col=1)
    fig.update_yaxes(type="log", title_text="interactions", row=1, col=1)
    fig.update_xaxes(type="log", title_text="gap (s)", row=1, col=2)
    fig.update_yaxes(type="log", title_text="share of gaps ≥ x", row=1, col=2)
    return fig.update_layout(
        height=360, title="What the streams offer a model without item identity"
    )


def stream_profile(stream: Stream) -> dict[str, np.ndarray]:
    """Interactions per item and the gaps between consecutive interactions of a user."""
    order = np.lexsort((stream.t, stream.src))
    same = stream.src[order][1:] == stream.src[order][:-1]
    return {
        "popularity": np.bincount(stream.dst, minlength=stream.n_items),
        "gaps": np.diff(stream.t[order])[same],
    }
