"""The enumerative chapter's figures: learning curves and R^2, Virasoro residuals, probe
R^2, and the conformal intervals' coverage and width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25.chapters.enumerative.method import Coverage

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def learning_figure(
    histories: dict[str, Sequence[float]],
    mean: pd.DataFrame,
    sd: pd.DataFrame,
    names: dict[str, str],
    colors: dict[str, str],
) -> go.Figure:
    """Training loss per epoch for each activation (left, log; one seed), the R^2 of the
    log values in distribution (plain bars) and OOD (hatched) (middle), and the OOD mean
    absolute error (right): bars are the mean over seeds (``mean``, one row per activation
    name), error bars one standard deviation (``sd``, zero for a single seed)."""
    from plotly.subplots import make_subplots

    acts = list(histories)
    labels = [names[a] for a in acts]
    fig = make_subplots(
        rows=1,
        cols=3,
        subplot_titles=["training loss (L1, standardised)", "R^2 of log values", "OOD MAE (nats)"],
    )
    for act, history in histories.items():
        x = np.arange(1, len(history) + 1)
        fig.add_scatter(x=x, y=history, name=names[act], line_color=colors[act], row=1, col=1)
    for column, pattern, col in [("R2 test (ID)", "", 2), ("R2 OOD", "/", 2), ("MAE OOD", "", 3)]:
        fig.add_bar(
            x=labels,
            y=mean.loc[labels, column],
            error_y=dict(type="data", array=sd.loc[labels, column].fillna(0)),
            name=column,
            marker_pattern_shape=pattern,
            marker_color=[colors[a] for a in acts],
            showlegend=False,
            hovertext=column,
            row=1,
            col=col,
        )
    fig.update_xaxes(title_text="epoch", row=1, col=1)
    fig.update_yaxes(type="log", row=1, col=1)
    lowest = mean[["R2 test (ID)", "R2 OOD"]].min().min()
    fig.update_yaxes(range=[max(0.0, lowest - 0.05), 1], row=1, col=2)
    fig.update_layout(
        title="Learning curves; R^2 in distribution (plain) and OOD (hatched); OOD error",
        barmode="group",
        height=420,
    )
    return fig


def virasoro_figure(
    by_n: dict[str, tuple[np.ndarray, np.ndarray]],
    colors: dict[str, str],
    nulls: dict[str, tuple[np.ndarray, np.ndarray]],
    constraint: str,
) -> go.Figure:
    """Mean |residual| of one constraint on the unseen genera against the number of
    points n of the left-hand side: one bar series per model (``by_n``: name -> (n,
    values)), and each reference (``nulls``, same form) as a dotted line."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, (n, values) in by_n.items():
        fig.add_bar(x=n, y=values, name=name, marker_color=colors.get(name))
    for (name, (n, values)), color in zip(nulls.items(), ("black", "gray", "brown")):
        fig.add_scatter(
            x=n, y=values, mode="lines+markers", line=dict(color=color, dash="dot"), name=name
        )
    fig.update_layout(
        title=f"Residuals of {constraint} in the predictions on the unseen genera",
        xaxis_title="number of marked points n (left-hand side)",
        yaxis_title="mean |log LHS - log RHS| (nats)",
        barmode="group",
        height=400,
    )
    return fig


def probe_figure(r2: dict[str, np.ndarray], targets: Sequence[str], split: str) -> go.Figure:
    """Held-out R^2 of the linear probes for each target: one bar series per feature set
    (``r2``: label -> R^2 per target); the y axis starts at the lowest finite value."""
    import plotly.graph_objects as go

    fig = go.Figure()
    grey = {"trained": "#1f77b4", "random": "#7f7f7f", "inputs": "#ff7f0e"}
    for label, values in r2.items():
        color = next((c for k, c in grey.items() if k in label), None)
        fig.add_bar(x=list(targets), y=values, name=label, marker_color=color)
    finite = np.concatenate([np.asarray(v, float) for v in r2.values()])
    finite = finite[np.isfinite(finite)]
    low = min(0.0, float(finite.min())) if finite.size else 0.0
    fig.update_layout(
        title=f"Linear-probe R^2 on the {split} rows",
        yaxis_title="R^2",
        yaxis_range=[low, 1],
        barmode="group",
        height=420,
    )
    return fig


def coverage_figure(
    coverage: dict[int | None, Coverage], w: int, confidence: float, tolerance: np.ndarray
) -> go.Figure:
    """Coverage (left) and mean interval width (right) per n, sliding window ``w``
    against the global quantile (key ``None``), with the nominal coverage and the
    nominal minus ``tolerance`` marked."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["coverage on the ID test set", "mean interval width (nats)"],
    )
    for key, name, color in [
        (w, f"window w = {w}", "#1f77b4"),
        (None, "global quantile", "#7f7f7f"),
    ]:
        c = coverage[key]
        fig.add_bar(x=c.n, y=c.coverage, name=name, marker_color=color, row=1, col=1)
        fig.add_bar(x=c.n, y=c.width, name=name, marker_color=color, showlegend=False, row=1, col=2)
    fig.add_scatter(
        x=coverage[None].n,
        y=confidence - tolerance,
        mode="lines",
        line=dict(color="black", dash="dot"),
        name="nominal - tolerance",
        row=1,
        col=1,
    )
    fig.add_hline(y=confidence, line_color="black", row=1, col=1)
    fig.update_xaxes(title_text="number of marked points n")
    fig.update_yaxes(range=[0, 1.02], row=1, col=1)
    fig.update_layout(
        title=f"Conformal intervals at {confidence:.0%}: sliding window w = {w} vs global",
        barmode="group",
        height=420,
    )
    return fig
