"""The Knowledge Benchmark Graph chapter's figure builders and its benchmark table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def heatmap(
    table: pd.DataFrame,
    title: str,
    *,
    zmin: float | None = None,
    zmax: float | None = None,
    colorscale: str = "Viridis",
    height: int | None = None,
) -> go.Figure:
    """A labelled heatmap of ``table`` (rows x columns) with its values on hover."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Heatmap(
            z=table.to_numpy(),
            x=list(table.columns),
            y=list(table.index),
            zmin=zmin,
            zmax=zmax,
            colorscale=colorscale,
            hovertemplate="%{y} / %{x}: %{z:.3f}<extra></extra>",
        )
    )
    return fig.update_layout(
        title=title, height=height or 120 + 28 * len(table), xaxis_tickangle=-45
    )


def percentile_figure(loo: pd.DataFrame, title: str) -> go.Figure:
    """Grouped bars: the percentile of each method's pick per held-out dataset, with
    each method's mean in the legend."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for method, part in loo.groupby("method", sort=False):
        fig.add_bar(
            x=part["dataset"],
            y=part["percentile"],
            name=f"{method} (mean {part['percentile'].mean():.0f})",
            customdata=part["arch"],
            hovertemplate="%{x}: %{y:.0f} (%{customdata})<extra></extra>",
        )
    fig.update_yaxes(title_text="percentile of the pick on the held-out dataset", range=[0, 105])
    return fig.update_layout(title=title, barmode="group", height=420)


def neighbours_figure(
    name: str, neighbours: pd.DataFrame, facts: pd.DataFrame, recommended: str
) -> go.Figure:
    """A dataset's neighbours by similarity (bars) beside the facts a recommendation
    reads from them (table), the pick in the title."""
    import plotly.graph_objects as go
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.4, 0.6], specs=[[{"type": "bar"}, {"type": "table"}]]
    )
    fig.add_bar(x=neighbours["dataset"], y=neighbours["similarity"], row=1, col=1, showlegend=False)
    cols = ["dataset", "arch", "value", "score"]
    fig.add_trace(
        go.Table(
            header=dict(values=cols),
            cells=dict(
                values=[[f"{v:.3f}" if isinstance(v, float) else v for v in facts[c]] for c in cols]
            ),
        ),
        row=1,
        col=2,
    )
    fig.update_yaxes(title_text="similarity", row=1, col=1)
    return fig.update_layout(
        title=f"{name}: neighbours, their facts; pick {recommended}", height=380
    )


def bench_table(bench: Mapping[str, Any]) -> pd.DataFrame:
    """The benchmark's facts as a datasets x architectures table of accuracies, each
    the mean over its seeds."""
    facts = pd.DataFrame(bench["facts"])
    return facts.pivot_table(index="dataset", columns="arch", values="value").reindex(
        index=list(bench["descriptions"]), columns=bench["archs"]
    )
