"""SRO's figures: the estimation error against the number of features, and the fitted
contraction factor against the sketch size."""

from __future__ import annotations

import numpy as np
from plotly import graph_objects as go
from plotly.colors import qualitative


def factor_figure(m_grid: list[int], factors: dict[str, np.ndarray], rank: int) -> go.Figure:
    """Mean contraction factor against the sketch size, one line per sketch kind.

    ``factors[kind]`` has one row per sketch size and one column per draw of P;
    the error bars are the standard deviation over the draws, and the small
    markers the draws themselves.
    """
    fig = go.Figure()
    for (kind, f), color in zip(factors.items(), qualitative.Plotly):
        f = np.asarray(f)
        fig.add_scatter(
            x=m_grid,
            y=f.mean(axis=1),
            error_y=dict(type="data", array=f.std(axis=1)),
            mode="lines+markers",
            line_color=color,
            name=f"{kind}: mean over {f.shape[1]} draws",
        )
        fig.add_scatter(
            x=np.repeat(m_grid, f.shape[1]),
            y=f.ravel(),
            mode="markers",
            marker=dict(color=color, size=4, opacity=0.5),
            name=f"{kind}: each draw",
        )
    return fig.update_layout(
        title=f"Fitted contraction factor of Iterative SRO (l1) against the sketch size "
        f"(rank {rank})",
        xaxis_title="sketch size m",
        yaxis_title="error multiplied per step",
    )


def error_figure(
    xs: list[int], errors: np.ndarray, names: list[str], slopes: dict[str, np.ndarray], x: str
) -> go.Figure:
    """Mean error against ``x`` on log-log axes, one line per estimator.

    ``errors`` is ``[estimator, x, draw]``; the error bars are the standard deviation
    over the draws, and each legend gives the estimator's mean log-log slope.
    """
    fig = go.Figure()
    for e, name, color in zip(errors, names, qualitative.Plotly):
        fig.add_scatter(
            x=xs,
            y=e.mean(axis=1),
            error_y=dict(type="data", array=e.std(axis=1)),
            mode="lines+markers",
            line_color=color,
            name=f"{name} (mean slope {slopes[name].mean():.2f})",
        )
    return fig.update_layout(
        title=f"Estimation error against {x} (mean of {errors.shape[2]} draws)",
        xaxis_title=x,
        yaxis_title="||b - beta*||",
        xaxis_type="log",
        yaxis_type="log",
    )
