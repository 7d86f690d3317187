"""The brainood chapter's figures: accuracy per method on the training and held-out
sites, what BrainOOD selects beside the planted sub-network, and accuracy on new sites
whose disorder sub-network drifts."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25.core import stats

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def accuracy_figure(table) -> go.Figure:
    """Grouped bars: ID-test and OOD-test accuracy per method, mean +- sd over seeds.
    ``table``: DataFrame with columns method, split, mean, sd."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for split_name, part in table.groupby("split", sort=False):
        fig.add_bar(
            x=part["method"],
            y=part["mean"],
            name=split_name,
            error_y=dict(type="data", array=part["sd"].fillna(0)),
        )
    fig.update_layout(
        barmode="group", title="Accuracy on training sites (ID) and held-out sites (OOD)"
    )
    fig.update_yaxes(title_text="accuracy", range=[0.4, 1.0])
    return fig


def structure_figure(attention: np.ndarray, mask: np.ndarray, planted: np.ndarray) -> go.Figure:
    """Heatmaps side by side: BrainOOD's mean edge attention, its feature mask M, and the
    planted sub-network (1 where both ROIs are planted)."""
    from plotly.subplots import make_subplots

    truth = np.outer(planted, planted).astype(float)
    np.fill_diagonal(truth, 0)
    titles = ("mean edge attention", "feature mask M", "planted sub-network")
    fig = make_subplots(rows=1, cols=3, subplot_titles=titles, horizontal_spacing=0.06)
    for k, (z, scale) in enumerate(zip((attention, mask, truth), ("Viridis", "Cividis", "Greys"))):
        fig.add_heatmap(z=z, colorscale=scale, showscale=False, row=1, col=k + 1)
        fig.update_yaxes(
            autorange="reversed", scaleanchor=f"x{k + 1}" if k else "x", row=1, col=k + 1
        )
    fig.update_layout(title="What BrainOOD selects, beside the planted ROIs", height=380)
    return fig


def drift_figure(
    drifts: Sequence[float], accuracy: dict[str, Sequence[float]], gain: Sequence[stats.Estimate]
) -> go.Figure:
    """Left: each method's mean accuracy over the new sites against their drift. Right:
    BrainOOD's gain over ERM, paired by site, with its 95% interval."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=("mean accuracy over sites (%)", "BrainOOD minus ERM (points)"),
    )
    for name, values in accuracy.items():
        fig.add_scatter(x=list(drifts), y=list(values), name=name, row=1, col=1)
    fig.add_scatter(
        x=list(drifts),
        y=[e.value for e in gain],
        error_y=stats.error_bars(list(gain)),
        name="gain",
        mode="markers+lines",
        line_dash="dot",
        row=1,
        col=2,
    )
    fig.add_hline(y=0, line_color="grey", line_width=1, row=1, col=2)
    fig.update_xaxes(title_text="share of planted ROIs moved")
    return fig.update_layout(title="New sites whose disorder sub-network drifts")
