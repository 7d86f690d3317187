"""The template's figures."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go


def fit_figure(
    x: np.ndarray, y: np.ndarray, slope: float, intercept: float, title: str
) -> go.Figure:
    """The points and the fitted line ``y = slope x + intercept`` over x in [-1, 1]."""
    fig = go.Figure()
    fig.add_scatter(x=x, y=y, mode="markers", name="data", opacity=0.5)
    fig.add_scatter(
        x=[-1, 1],
        y=[intercept - slope, intercept + slope],
        mode="lines",
        name=f"fit: slope {slope:.3f}",
    )
    return fig.update_layout(title=title, xaxis_title="x", yaxis_title="y")
