"""The chapter's figures: robustness and flatness against sensitivity over the trained
models, the regulariser's effect, and the grokking run."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go


def robustness_figure(
    table: pd.DataFrame, rho_robust: float, rho_sharp: float, colors: Mapping[str, str]
) -> go.Figure:
    """Per trained model (a row of ``table``), mean S against corrupted accuracy (left)
    and against sharpness (right, log), one colour per architecture (column ``"arch"``,
    ``colors`` maps it to a colour), titled with the two Spearman rhos over the
    architectures (means over runs)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=["robustness", "flatness"])
    for arch in table["arch"].unique():
        rows = table[table["arch"] == arch]
        for col, column in [(1, "corrupted acc"), (2, "sharpness")]:
            fig.add_scatter(
                x=rows["mean S"],
                y=rows[column],
                text=list(rows.index),
                mode="markers",
                name=arch,
                legendgroup=arch,
                showlegend=col == 1,
                marker=dict(size=10, color=colors[arch]),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="mean sensitivity")
    fig.update_yaxes(title_text="mean corrupted test accuracy", col=1)
    fig.update_yaxes(title_text="sharpness (logit change)", type="log", col=2)
    fig.update_layout(
        height=420,
        title=f"Unregularised models, every architecture and run. Spearman rho over the "
        f"architectures, mean over runs: sensitivity vs corrupted accuracy {rho_robust:+.2f}, "
        f"vs sharpness {rho_sharp:+.2f}",
    )
    return fig


def reg_figure(
    plain: Mapping[str, float],
    regularised: Mapping[str, float],
    reg: float,
    sigmas: Sequence[float],
    corruptions: Collection[str],
    color: str,
) -> go.Figure:
    """The ViT trained with regulariser weight p = ``reg`` against the plain ViT (p = 0,
    gray): sensitivity curves S(sigma) (left, log sigma) and clean and corrupted test
    accuracies (right). A row holds ``"S(<sigma>)"``, ``"test acc"``, ``"<k> acc"``."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=["sensitivity (training set)", "test accuracy: clean and corrupted"],
    )
    columns = ["test acc", *(f"{k} acc" for k in corruptions)]
    for r, row, line in [(0.0, plain, "gray"), (reg, regularised, color)]:
        fig.add_scatter(
            x=sigmas,
            y=[row[f"S({s:g})"] for s in sigmas],
            name=f"p = {r:g}",
            legendgroup=str(r),
            mode="lines+markers",
            line_color=line,
            row=1,
            col=1,
        )
        fig.add_bar(
            x=["clean", *corruptions],
            y=[row[c] for c in columns],
            name=f"p = {r:g}",
            legendgroup=str(r),
            marker_color=line,
            showlegend=False,
            row=1,
            col=2,
        )
    fig.update_xaxes(type="log", title_text="noise std sigma", row=1, col=1)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    fig.update_layout(
        title=f"ViT with the sensitivity regulariser, p = {reg:g}",
        height=380,
        barmode="group",
    )
    return fig


def grokking_figure(
    log: Mapping[str, np.ndarray],
    smooth: np.ndarray,
    events: Mapping[str, int | None],
    modulus: int,
    colors: tuple[str, str],
    title: str | None = None,
) -> go.Figure:
    """Train and test accuracy (left axis) and the training-set sensitivity, raw and
    smoothed (right axis), against the epoch of :func:`grok`'s ``log``; each event
    ``label -> epoch`` that happened (not None or NaN) is a dashed vertical line.

    ``colors`` are the test accuracy's and the sensitivity's.
    """
    from plotly.subplots import make_subplots

    acc_color, sens_color = colors
    epoch = log["epoch"]
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    fig.add_scatter(x=epoch, y=log["train_acc"], name="train accuracy", line_color="black")
    fig.add_scatter(x=epoch, y=log["test_acc"], name="test accuracy", line_color=acc_color)
    fig.add_scatter(
        x=epoch,
        y=log["sensitivity"],
        name="train sensitivity",
        opacity=0.3,
        line_color=sens_color,
        secondary_y=True,
        showlegend=False,
    )
    fig.add_scatter(
        x=epoch,
        y=smooth,
        name="train sensitivity (smoothed)",
        line_color=sens_color,
        secondary_y=True,
    )
    for label, at in events.items():
        if at is not None and not np.isnan(at):  # a trace, so that a slider can switch it
            fig.add_scatter(
                x=[at, at],
                y=[0, 1.02],
                mode="lines+text",
                text=[None, label],
                textposition="top center",
                line=dict(dash="dash", color="gray"),
                showlegend=False,
                name=label,
            )
    fig.update_yaxes(title_text="accuracy", range=[0, 1.02], secondary_y=False)
    fig.update_yaxes(title_text="sensitivity", secondary_y=True)
    fig.update_layout(
        title=title or f"Grokking a + b mod {modulus}", xaxis_title="epoch", height=420
    )
    return fig
