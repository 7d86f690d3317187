"""SADR's figures: CounterFact accuracy beside the paper's GPT-J row, each head's
attention to the subject before and after an edit, the distract margins and the
attention heatmaps; and the live editor's distract prompt."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from iclr25 import editing
from iclr25.chapters.sadr.method import heads_above
from iclr25.chapters.sadr.paper import PAPER_GPTJ

if TYPE_CHECKING:
    import plotly.graph_objects as go

METHOD_COLOURS = {
    "unedited": "#8c8c8c",
    "ROME": "#1f77b4",
    "SADR": "#d62728",
    "random v*": "#9467bd",
}


def metrics_figure(ours: Mapping[str, Mapping[str, float]], n_cases: int) -> go.Figure:
    """CounterFact accuracy per score (ES, PS, NS, RS, DNS) of the unedited model, ROME
    and SADR: ours (``ours[method][score]``, shares) beside the paper's GPT-J row."""
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        subplot_titles=(f"SmolLM2-135M, {n_cases} edits (ours)", "GPT-J (paper, Table 3)"),
    )
    for col, table, scale in ((1, ours, 1.0), (2, PAPER_GPTJ, 0.01)):
        for method, scores in table.items():
            fig.add_bar(
                x=list(editing.COUNTERFACT),
                y=[scale * scores[m] if m in scores else None for m in editing.COUNTERFACT],
                name=method,
                marker_color=METHOD_COLOURS[method],
                legendgroup=method,
                showlegend=col == 1,
                row=1,
                col=col,
            )
    fig.update_yaxes(range=[0, 1.05], title_text="CounterFact accuracy", row=1, col=1)
    fig.update_yaxes(range=[0, 1.05], row=1, col=2)
    return fig.update_layout(barmode="group", title="Edit success and specificity")


def drift_figure(
    before: np.ndarray, after: Mapping[str, np.ndarray], layers: Sequence[int]
) -> go.Figure:
    """Each head above the edit: mean attention to the subject on the distract prompts
    before (x) and after (y) each method's edit (``[layer, head]`` arrays over
    ``layers``); filled markers are the heads above their layer's largest value before."""
    import plotly.graph_objects as go

    fig = go.Figure()
    names = [f"layer {l}, head {h}" for l in layers for h in range(before.shape[1])]
    for method, a in after.items():
        above = heads_above(before, a).ravel()
        fig.add_scatter(
            x=before.ravel(),
            y=a.ravel(),
            mode="markers",
            name=f"{method} ({int(above.sum())} heads above their layer's maximum)",
            text=names,
            marker=dict(
                color=METHOD_COLOURS[method],
                symbol=["circle" if u else "circle-open" for u in above],
                size=7,
            ),
        )
    top = float(max(before.max(), *(a.max() for a in after.values())))
    fig.add_scatter(x=[0, top], y=[0, top], mode="lines", name="no change", line_dash="dot")
    return fig.update_layout(
        title="Attention from the distract prompt's last token to the edited subject",
        xaxis_title="unedited model",
        yaxis_title="edited model",
    )


def margins_figure(
    probes: Sequence[str], margins: Mapping[str, Sequence[float]], title: str
) -> go.Figure:
    """Each distract probe's margin (nats; > 0: the true object is preferred) under
    each model in ``margins`` (unedited, ROME, ROME with parts of the unedited model
    restored; five at most)."""
    import plotly.graph_objects as go

    colours = ["#8c8c8c", "#1f77b4", "#2ca02c", "#ff7f0e", "#17becf"]
    numbers = [f"probe {i + 1}" for i in range(len(probes))]
    fig = go.Figure()
    for colour, (name, values) in zip(colours, margins.items()):
        fig.add_bar(x=numbers, y=list(values), name=name, marker_color=colour,
                    hovertext=list(probes))  # fmt: skip
    return fig.update_layout(
        title=title,
        barmode="group",
        xaxis_title="distract probe (hover for its prompt)",
        yaxis_title="margin: NLL(new) - NLL(true), nats",
    )


def heatmap_figure(before: np.ndarray, after: np.ndarray, title: str) -> go.Figure:
    """Layer x head heatmaps of attention to the edited subject on a distract prompt,
    before and after an edit (``[layer, head]``)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=1, cols=2, subplot_titles=("before", "after"))
    top = float(max(before.max(), after.max()))
    for col, values in ((1, before), (2, after)):
        fig.add_heatmap(
            z=values,
            zmin=0,
            zmax=top,
            colorscale="Viridis",
            showscale=col == 2,
            row=1,
            col=col,
        )
        fig.update_xaxes(title_text="head", row=1, col=col)
    fig.update_yaxes(title_text="layer", row=1, col=1)
    return fig.update_layout(title=title, height=450)


def distract_prompt(request: editing.Request, relation: str, facts: Sequence[editing.Fact]) -> str:
    """The edited sentence, then a neighbour's prompt (another subject, the same
    relation): the editor's distract prompt."""
    shown = editing.views(request, relation, facts)
    if "neighbour" not in shown:
        raise ValueError(f"no other subject with the relation {relation!r} to write after")
    return f"{request.prompt} {request.new.strip()}. {shown['neighbour']}"
