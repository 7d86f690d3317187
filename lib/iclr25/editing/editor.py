"""Before and after an edit: the prompts shown, the top next-token predictions, their
figure, and the live editor widget."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import torch

from iclr25 import llm
from iclr25.editing.edits import Applied, Edit
from iclr25.editing.facts import RELATIONS, Fact, Request

if TYPE_CHECKING:
    import ipywidgets as widgets
    import plotly.graph_objects as go


# ---------------------------------------------------------------------------------
# Before and after: the figure and the live editor
# ---------------------------------------------------------------------------------


def views(request: Request, relation: str, facts: Sequence[Fact]) -> dict[str, str]:
    """The four prompts the editor shows: the rewrite, a paraphrase, a neighbour (another
    subject, same relation) and another relation of the same subject."""
    rel = RELATIONS[relation]
    neighbour = next(
        (f for f in facts if f.relation == relation and f.subject != request.subject), None
    )
    other = next(r for r in RELATIONS.values() if r.name != relation)
    shown = {
        "rewrite": request.prompt,
        "paraphrase": rel.paraphrases[0].format(request.subject),
        f"other relation ({other.name})": other.prompt.format(request.subject),
    }
    if neighbour is not None:
        shown["neighbour"] = neighbour.prompt
    return shown


@torch.no_grad()
def top_predictions(
    lm: llm.LM, prompts: dict[str, str], k: int = 5
) -> dict[str, list[tuple[str, float]]]:
    """The ``k`` most probable next tokens (text, probability) for each prompt."""
    probs = llm.next_token_logits(lm, list(prompts.values())).softmax(-1)
    top = probs.topk(k, -1)
    return {
        name: [(lm.tokenizer.decode([int(t)]), float(p)) for t, p in zip(ids, ps)]
        for name, ids, ps in zip(prompts, top.indices, top.values)
    }


def before_after_figure(
    before: dict[str, list[tuple[str, float]]],
    after: dict[str, list[tuple[str, float]]] | None,
    title: str,
) -> go.Figure:
    """Top next-token probabilities per prompt, before (and after) the edit."""
    from plotly.subplots import make_subplots

    names = list(before)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names, horizontal_spacing=0.08)
    for j, name in enumerate(names, 1):
        for label, table, colour in (("before", before, "#8c8c8c"), ("after", after, "#d62728")):
            if table is None:
                continue
            fig.add_bar(
                x=[p for _, p in table[name]],
                y=[repr(t) for t, _ in table[name]],
                orientation="h",
                name=label,
                marker_color=colour,
                showlegend=j == 1,
                legendgroup=label,
                row=1,
                col=j,
            )
        fig.update_yaxes(autorange="reversed", row=1, col=j)
        fig.update_xaxes(range=[0, 1], row=1, col=j)
    fig.update_layout(title=title, height=380, barmode="group")
    return fig


def editor_widget(
    lm: llm.LM, editors: dict[str, Callable[[Request], Edit]], facts: Sequence[Fact]
) -> widgets.VBox:
    """The live editor: a subject, a relation (its cloze prompt) and a new object; Edit
    writes the chosen method's edit into the model, Reset restores the weights.

    Its ``value`` is ``("edit", request, relation, method)`` after an edit and
    ``("reset", request, relation)`` after a reset; :func:`editor_figure` draws the
    predictions before and after. A bad request is reported below the controls.
    """
    import ipywidgets as widgets
    import traitlets

    class Editor(widgets.VBox):
        value = traitlets.Any()

    style = {"description_width": "initial"}
    subject = widgets.Text(value="France", description="subject", style=style)
    relation = widgets.Dropdown(options=list(RELATIONS), description="relation", style=style)
    new = widgets.Text(value="Rome", description="new object", style=style)
    method = widgets.ToggleButtons(options=list(editors), description="method", style=style)
    edit_button, reset_button = (
        widgets.Button(description="Edit"),
        widgets.Button(description="Reset"),
    )
    message = widgets.HTML()
    box = Editor(
        [
            widgets.HBox([subject, relation, new]),
            method,
            widgets.HBox([edit_button, reset_button]),
            message,
        ]
    )
    state: dict[str, Any] = {"applied": None}

    def reset() -> None:
        if state["applied"] is not None:
            state["applied"].restore()
            state["applied"] = None

    def request() -> Request:
        old = next(
            (f.object for f in facts if (f.subject, f.relation) == (subject.value, relation.value)),
            None,
        )
        return Request(
            RELATIONS[relation.value].prompt.format(subject.value), subject.value, new.value, old
        )

    def on_edit(_: object) -> None:
        reset()
        try:
            req = request()
        except ValueError as err:
            message.value = f"<span style='color:#cf222e'>{err}</span>"
            return
        message.value = f"editing with {method.value}..."
        state["before"] = top_predictions(lm, views(req, relation.value, facts))
        edit = editors[method.value](req)
        state["applied"] = Applied(lm, edit)
        message.value = (
            f"{method.value}: {edit.n_params:,} parameters changed in {edit.seconds:.1f} s"
        )
        box.value = ("edit", req, relation.value, method.value, state["before"])

    def on_reset(_: object) -> None:
        reset()
        message.value = "weights restored"
        try:
            box.value = ("reset", request(), relation.value)
        except ValueError as err:
            message.value = f"weights restored; <span style='color:#cf222e'>{err}</span>"

    edit_button.on_click(on_edit)
    reset_button.on_click(on_reset)
    box.reset = reset  # type: ignore[attr-defined]
    return box


def editor_figure(lm: llm.LM, value: tuple, facts: Sequence[Fact]) -> go.Figure:
    """Draw the live editor's state: the model as it is now, and before the edit."""
    kind, req, relation = value[:3]
    now = top_predictions(lm, views(req, relation, facts))
    if kind == "edit":
        return before_after_figure(value[4], now, f"{value[3]}: {req.subject} -> {req.new.strip()}")
    return before_after_figure(now, None, "unedited model")
