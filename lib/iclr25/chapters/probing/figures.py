"""The chapter's figures: GridPG heatmaps by probe, loss and method, attribution maps
of one grid, and GridPG against the loss mixture."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from iclr25 import vision
from iclr25.chapters.probing.method import BCOS, METHOD_NAMES, PROBES
from iclr25.core import stats

if TYPE_CHECKING:
    import plotly.graph_objects as go


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def heatmaps_figure(
    table: Mapping[str, Mapping[tuple[str, str], Mapping[str, stats.Estimate]]],
    methods: Sequence[str],
) -> go.Figure:
    """GridPG (mean and 95% interval, :func:`_cell`) per probe and loss (rows) and
    method (columns), one panel per backbone. ``table[backbone][(probe, loss)][method]``
    an estimate."""
    from plotly.subplots import make_subplots

    cols = [*methods, BCOS]
    fig = make_subplots(
        rows=1, cols=len(table), subplot_titles=list(table), horizontal_spacing=0.06
    )
    for j, (backbone, rows) in enumerate(table.items(), start=1):
        labels = [f"{p} {loss.upper()}" for p, loss in rows]
        z = [[rows[r][m].value if m in rows[r] else np.nan for m in cols] for r in rows]
        text = [[_cell(rows[r].get(m)) for m in cols] for r in rows]
        fig.add_heatmap(
            z=z,
            x=[METHOD_NAMES[m] for m in cols],
            y=labels,
            text=text,
            texttemplate="%{text}",
            textfont_size=8,
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            showscale=j == 1,
            row=1,
            col=j,
        )
        fig.update_yaxes(autorange="reversed", showticklabels=j == 1, row=1, col=j)
    return fig.update_layout(title="GridPG by probe, loss and method", height=520)


def _cell(estimate: stats.Estimate | None) -> str:
    """A heatmap cell's text: the mean and its interval, the mean alone where there is
    no interval (one run), nothing where the method does not apply."""
    if estimate is None:
        return ""
    if np.isnan(estimate.low):
        return f"{estimate.value:.2f}"
    return f"{estimate.value:.2f}<br>[{estimate.low:.2f}, {estimate.high:.2f}]"


def maps_figure(
    grid: torch.Tensor,
    rows: Mapping[str, Mapping[str, torch.Tensor | None]],
    title: str,
) -> go.Figure:
    """One row per entry of ``rows`` (label -> {column title: map}): the grid image,
    then each attribution map (H x W; red positive, blue negative, scaled to its largest
    magnitude; None leaves the cell blank)."""
    images, titles, scales, lows, highs = [], [], [], [], []
    cols = 1 + max(len(r) for r in rows.values())
    for label, maps in rows.items():
        entries = [(label, grid[0], "gray", 0.0)] + [
            (name, m, "RdBu_r", -1.0) for name, m in maps.items()
        ]
        entries += [("", None, "gray", 0.0)] * (cols - len(entries))
        for name, m, scale, low in entries:
            if m is None:
                m = torch.full(tuple(grid.shape[-2:]), float("nan"))
            elif scale != "gray":
                m = m / (m.abs().max() + 1e-12)
            images.append(m.numpy())
            titles.append(name)
            scales.append(scale)
            lows.append(low)
            highs.append(1.0)
    return vision.image_grid(
        images,
        rows=len(rows),
        cols=cols,
        titles=titles,
        colorscale=scales,
        zmin=lows,
        zmax=highs,
        title=title,
        height=150 * len(rows) + 90,
        margin=dict(t=80, b=10, l=10, r=10),
    )


def mixing_figure(
    alphas: Sequence[float], curves: Mapping[str, Mapping[str, Sequence[stats.Estimate]]]
) -> go.Figure:
    """GridPG (mean and 95% interval over grids) against the BCE weight a, one panel
    per method: ``curves[method][probe] = [estimate per a]``."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=len(curves), subplot_titles=[METHOD_NAMES[m] for m in curves])
    colors = dict(zip(PROBES, ["#1f77b4", "#aec7e8", "#ff7f0e", "#d62728", "#2ca02c"]))
    for j, (method, by_probe) in enumerate(curves.items(), start=1):
        for probe, values in by_probe.items():
            fig.add_scatter(
                x=list(alphas),
                y=[e.value for e in values],
                error_y=stats.error_bars(values),
                name=probe,
                legendgroup=probe,
                showlegend=j == 1,
                line_color=colors[probe],
                row=1,
                col=j,
            )
    fig.update_xaxes(title_text="BCE weight a in (1 - a) CE + a BCE")
    fig.update_yaxes(title_text="GridPG", col=1)
    return fig.update_layout(title="GridPG against the loss mixture (SimCLR)", height=380)
