"""The HyperDAS chapter's figures and its live widget (the bidding of one instruction)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import llm
from iclr25.chapters.hyperdas.data import (
    POSITIONS,
    TEST_TEMPLATE,
    Example,
    Side,
    World,
    check_attribute,
)
from iclr25.chapters.hyperdas.method import ReflectSelect, hyper_forward
from iclr25.chapters.hyperdas.target import run_with

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def grid_figure(grid: np.ndarray, layers: Sequence[int], title: str) -> go.Figure:
    """Heatmap of a score over layer x position (mean over attributes)."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Heatmap(
            z=grid,
            x=list(POSITIONS),
            y=[f"layer {l}" for l in layers],
            zmin=0,
            zmax=1,
            colorscale="Viridis",
            text=np.round(grid, 2),
            texttemplate="%{text}",
        )
    )
    return fig.update_layout(title=title, xaxis_title="position", yaxis_title="stream entering")


def bids_figure(
    bids: torch.Tensor, base_tokens: Sequence[str], src_tokens: Sequence[str], title: str
) -> go.Figure:
    """Bidding weights of one example: rows the base tokens, columns sources + null."""
    import plotly.graph_objects as go

    z = bids.detach().cpu().numpy()
    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[*(f"{i}:{t}" for i, t in enumerate(src_tokens)), "null"],
            y=[f"{j}:{t}" for j, t in enumerate(base_tokens)],
            zmin=0,
            zmax=1,
            colorscale="Blues",
            texttemplate="%{z:.2f}",
        )
    )
    fig.update_yaxes(autorange="reversed")
    return fig.update_layout(
        title=title, xaxis_title="source token (or null)", yaxis_title="base token"
    )


def example_tokens(lm: llm.LM, s: Side, row: int) -> list[str]:
    ids = s.batch.input_ids[row].tolist()
    return [
        lm.tokenizer.decode([i]) if m else "·" for i, m in zip(ids, s.batch.attention_mask[row])
    ]


PAPER_DISENTANGLE = {"HyperDAS soft, RAVEL (Llama3-8B)": 0.884, "MDAS, City-Country": 0.737}
"""The paper's disentangle scores (its RAVEL table, over five domains; MDAS on the City
attributes), drawn beside ours for scale: other model, data and attributes."""


def compare_figure(
    rows: dict[str, dict[str, float]],
    attributes: Sequence[str],
    paper: Mapping[str, float] | None = None,
) -> go.Figure:
    """Grouped bars: disentangle per attribute for each method; the paper's scores, if
    given, as dotted lines."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, vals in rows.items():
        fig.add_bar(name=name, x=list(attributes), y=[vals[a] for a in attributes])
    for name, value in (paper or {}).items():
        fig.add_hline(
            y=value,
            line_dash="dot",
            line_color="grey",
            annotation_text=f"paper: {name} {value:.2f}",
            annotation_position="top left",
        )
    return fig.update_layout(
        barmode="group", yaxis_range=[0, 1], yaxis_title="disentangle", title="Per attribute"
    )


def null_figure(histories: dict[str, tuple[dict, int]], window: int = 20) -> go.Figure:
    """Mean null weight over the base positions the bidding may use, per training step
    (moving average over ``window`` steps); ``histories``: name -> (history, first step)."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, (h, start) in histories.items():
        v = np.asarray(h["null"], float)
        w = max(1, min(window, len(v)))
        y = np.convolve(v, np.ones(w) / w, mode="valid")
        fig.add_scatter(x=start + w + np.arange(len(y)), y=y, name=name)
    return fig.update_layout(
        title="Mean null weight during training (base tokens up to the entity)",
        xaxis_title="step",
        yaxis_title="null weight",
        yaxis_range=[0, 1],
    )


def instruction_picker(attributes: Sequence[str], cities: Sequence[str]) -> Any:
    """The live widget's control: the intervened attribute, the attribute the base prompt
    asks (the same one: a cause example; another: isolation), the base and the source
    city; its ``value`` is ``(attribute, asked, base, source)`` for :func:`bidding_view`."""
    import ipywidgets as widgets
    import traitlets

    class Picker(widgets.VBox):
        value = traitlets.Any()

    attribute = widgets.Dropdown(options=list(attributes), description="attribute")
    asked = widgets.Dropdown(options=list(attributes), description="base asks")
    base = widgets.Dropdown(options=list(cities), description="base city")
    source = widgets.Dropdown(
        options=list(cities), value=cities[min(1, len(cities) - 1)], description="source city"
    )
    controls = (attribute, asked, base, source)
    box = Picker(list(controls))

    def update(_: object = None) -> None:
        box.value = tuple(c.value for c in controls)

    for control in controls:
        control.observe(update, names="value")
    update()
    return box


@torch.no_grad()
def bidding_view(
    net: ReflectSelect, lm: llm.LM, world: World, choice: tuple, layer: int, tau: float
) -> go.Figure:
    """The widget's figure: for ``choice = (attribute, asked, base, source)`` (held-out
    template both sides), the bidding heatmap, and the answer before and after."""
    attribute, asked, e, e2 = choice
    check_attribute(world, attribute)
    check_attribute(world, asked)
    t = world.templates[asked][TEST_TEMPLATE]
    ts = world.templates[attribute][TEST_TEMPLATE]
    label = world.value(asked, e2 if asked == attribute else e)
    x = Example(attribute, asked, e, e2, t.format(e), ts.format(e2), label)
    out = hyper_forward(net, lm, [x], layer, tau, "bidding_argmax")
    before = run_with(lm, out.base.batch, layer, lambda h: h)
    words = [lm.tokenizer.decode([int(v.argmax())]).strip() for v in (before, out.logits)]
    fig = bids_figure(
        out.bids[0],
        example_tokens(lm, out.base, 0),
        example_tokens(lm, out.src, 0),
        f"{x.instruction}: '{x.base_prompt}' → {words[0]} before, {words[1]} after "
        f"(expected {label})",
    )
    return fig.update_layout(title_font_size=13)
