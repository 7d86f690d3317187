"""The MCQA chapter's figures, and the patching explorer's control."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25 import core
from iclr25.chapters.mcqa.method import Patching

if TYPE_CHECKING:
    import ipywidgets as widgets
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# The patching explorer
# ---------------------------------------------------------------------------------


def patching_figure(
    results: dict[str, Patching], key: str, cell: tuple[int, int] | None = None
) -> go.Figure:
    """Heatmap of a sweep's normalised effect and, for one cell (default: the strongest),
    the symbol probabilities before and after patching it."""
    from plotly.subplots import make_subplots

    result = results[key]
    effect = result.shown
    what = "normalised effect" if result.normalise else "change of LD (nats)"
    scale = 1.0 if result.normalise else max(float(np.nanmax(np.abs(effect))), 1e-6)
    row, column = cell if cell is not None else np.unravel_index(np.nanargmax(effect), effect.shape)
    layers = result.sweep.layers
    text = [
        [
            f"layer {layers[r]}, {result.columns[c]}<br>{what} {effect[r, c]:.2f}<br>"
            + "<br>".join(
                f"{run}: " + ", ".join(f"{role} {p:.2f}" for role, p in roles.items())
                for run, roles in result.distributions(r, c).items()
            )
            for c in range(effect.shape[1])
        ]
        for r in range(effect.shape[0])
    ]
    fig = make_subplots(
        2,
        1,
        row_heights=[0.58, 0.42],
        vertical_spacing=0.2,
        subplot_titles=(
            f"{what} of patching one cell (x: position and its token, or head)",
            "symbol probabilities at the marked cell",
        ),
    )
    fig.add_heatmap(
        z=effect,
        x=result.columns,
        y=layers,
        zmin=-scale,
        zmax=scale,
        colorscale="RdBu_r",
        text=text,
        hoverinfo="text",
        colorbar=dict(len=0.55, y=1, yanchor="top"),
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=[result.columns[column]],
        y=[layers[row]],
        mode="markers",
        showlegend=False,
        marker=dict(symbol="square-open", size=16, color="black", line_width=2),
        hoverinfo="skip",
        row=1,
        col=1,
    )
    for run, roles in result.distributions(row, column).items():
        fig.add_bar(x=list(roles), y=list(roles.values()), name=run, row=2, col=1)
    fig.update_layout(
        title=f"{key} (full effect {result.full:.2f} nats); marked: layer "
        f"{layers[row]}, {result.columns[column]}",
        barmode="group",
        height=760,
        legend=dict(x=1.02, y=0.3),
    )
    fig.update_yaxes(title_text="layer", row=1, col=1)
    fig.update_yaxes(title_text="mean probability", range=[0, 1], row=2, col=1)
    return fig


def patching_explorer(results: dict[str, Patching]) -> widgets.VBox:
    """The live control of the patching explorer: a model and component, and a cell.

    Its ``value`` is ``(key, row, column)``; :func:`patching_figure` draws it.
    """
    import ipywidgets as widgets
    import traitlets

    class Explorer(widgets.VBox):
        value = traitlets.Any()

    keys = list(results)
    view = widgets.Dropdown(
        options=keys, description="model / component", style={"description_width": "initial"}
    )
    row = widgets.IntSlider(description="layer row", min=0, continuous_update=False)
    column = widgets.IntSlider(description="column", min=0, continuous_update=False)
    explorer = Explorer([view, row, column])

    def update(_: object = None) -> None:
        shape = results[view.value].effect.shape
        row.max, column.max = shape[0] - 1, shape[1] - 1
        explorer.value = (view.value, row.value, column.value)

    for control in (view, row, column):
        control.observe(update, names="value")
    update()
    return explorer


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def accuracy_figure(accuracy: dict[tuple[str, str], float], title: str) -> go.Figure:
    """Accuracy per (task, format), grouped by task, with chance (4 options) marked."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for task in dict.fromkeys(t for t, _ in accuracy):
        fmts = [f for t, f in accuracy if t == task]
        fig.add_bar(
            x=fmts,
            y=[accuracy[task, f] for f in fmts],
            name=task,
            text=[f"{accuracy[task, f]:.2f}" for f in fmts],
        )
    fig.add_hline(y=0.25, line_dash="dot", annotation_text="chance (4 options)")
    fig.update_layout(title=title, yaxis_title="accuracy", yaxis_range=[0, 1.05], barmode="group")
    return fig


def separation_figure(
    lines: dict[str, np.ndarray], shares: dict[str, np.ndarray], title: str
) -> go.Figure:
    """Per layer, separations (nats, left axis) and probabilities or accuracies (right
    axis, dotted and dashed)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for name, y in lines.items():
        fig.add_scatter(x=list(range(len(y))), y=y, name=name, mode="lines+markers")
    for (name, y), dash in zip(shares.items(), ("dot", "dash", "dashdot")):
        fig.add_scatter(x=list(range(len(y))), y=y, name=name, line_dash=dash, secondary_y=True)
    fig.update_layout(title=title, xaxis_title="layer", xaxis_dtick=1)
    fig.update_yaxes(title_text="separation (nats)", secondary_y=False)
    fig.update_yaxes(title_text="probability / accuracy", range=[0, 1], secondary_y=True)
    return fig


def training_figure(
    steps: Sequence[int],
    lines: dict[str, Sequence[float]],
    right: dict[str, tuple[Sequence[int], Sequence[float]]],
    title: str,
    left_title: str,
    right_title: str,
    left_range: list[float] | None = None,
) -> go.Figure:
    """Curves over training: ``lines`` at ``steps`` on the left axis, ``right`` (each with
    its own steps) dotted on the right axis."""
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for name, y in lines.items():
        fig.add_scatter(x=list(steps), y=list(y), name=name, mode="lines+markers")
    for name, (x, y) in right.items():
        fig.add_scatter(x=list(x), y=list(y), name=name, line_dash="dot", secondary_y=True)
    fig.update_layout(title=title, xaxis_title="training step")
    fig.update_yaxes(title_text=left_title, range=left_range, secondary_y=False)
    fig.update_yaxes(title_text=right_title, secondary_y=True)
    return fig


def heads_figure(z: np.ndarray, title: str, **colours: float) -> go.Figure:
    """A ``[layer, head]`` heatmap (red positive, blue negative)."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"head {h}" for h in range(z.shape[1])],
            y=list(range(z.shape[0])),
            colorscale="RdBu_r",
            **colours,
        )
    )
    fig.update_layout(title=title, yaxis_title="layer")
    return fig


def layers_figure(effects: dict[str, np.ndarray], title: str) -> go.Figure:
    """The normalised effect of patching each layer, one line per component."""
    n_layers = len(next(iter(effects.values())))
    fig = core.plot(
        list(range(n_layers)),
        effects,
        title=title,
        xlabel="layer",
        ylabel="normalised effect",
        mode="lines+markers",
    )
    return fig.update_layout(xaxis_dtick=1, yaxis_range=[-0.1, 1.1])
