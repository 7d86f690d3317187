"""Edits as weight changes: :class:`Edit` (a method's changes to the MLP down
projections for one request), written into the model and undone exactly
(:class:`Applied`, :func:`applied`), and kept in the model cache (:func:`kept_edits`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import torch

from iclr25 import core, llm

if TYPE_CHECKING:
    from iclr25.editing.facts import Request


# ---------------------------------------------------------------------------------
# Weight edits that can be undone
# ---------------------------------------------------------------------------------


@dataclass
class Change:
    """``W_down[layer][:, columns] += delta`` (``columns`` ``None``: the whole matrix)."""

    layer: int
    delta: torch.Tensor
    columns: list[int] | None = None


@dataclass
class Edit:
    """A method's weight changes for one request, and what it took to find them."""

    method: str
    request: Request
    changes: list[Change]
    seconds: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def n_params(self) -> int:
        """Parameters the edit changes (ROME changes a whole matrix, FiNE a few columns)."""
        return sum(c.delta.numel() for c in self.changes)


class Applied:
    """An edit written into the model; :meth:`restore` puts the original weights back."""

    def __init__(self, lm: llm.LM, edit: Edit) -> None:
        self.lm, self.saved = lm, []
        with torch.no_grad():
            for c in edit.changes:
                weight = llm.down_proj(lm, c.layer).weight
                cols = slice(None) if c.columns is None else c.columns
                self.saved.append((weight, cols, weight[:, cols].clone()))
                weight[:, cols] += c.delta.to(weight)

    def restore(self) -> None:
        with torch.no_grad():
            for weight, cols, original in reversed(self.saved):
                weight[:, cols] = original
        self.saved = []


@contextlib.contextmanager
def applied(lm: llm.LM, edit: Edit) -> Iterator[llm.LM]:
    """The model with ``edit`` written in, inside the block only."""
    handle = Applied(lm, edit)
    try:
        yield lm
    finally:
        handle.restore()


def kept_edits(
    lm: llm.LM,
    requests: Sequence[Request],
    editors: dict[str, Callable[[Request], Edit]],
    config: dict[str, Any],
) -> dict[str, Callable[[Request], Edit]]:
    """Every method's edit of every request, made once and kept in the model cache
    (:func:`iclr25.core.cached`): an edit is the result of an optimisation, like a
    trained model. ``config`` must name everything the editors depend on besides the
    model and the requests (their hyperparameters, the layer, the seed). Returns, per
    method, an editor that hands back the kept edit of a request (for
    :func:`run_cases`)."""

    def build() -> dict[str, list[dict[str, Any]]]:
        return {
            method: [
                {
                    "changes": [
                        {"layer": c.layer, "delta": c.delta, "columns": c.columns}
                        for c in edit.changes
                    ],
                    "seconds": edit.seconds,
                    "info": edit.info,
                }
                for edit in map(editor, requests)
            ]
            for method, editor in editors.items()
        }

    key = {**config, "model": lm.name, "requests": [vars(r) for r in requests]}
    kept = core.cached("editing-edits", key, build)
    made = {
        method: {
            request: Edit(
                method,
                request,
                [Change(c["layer"], c["delta"], c["columns"]) for c in state["changes"]],
                state["seconds"],
                state["info"],
            )
            for request, state in zip(requests, kept[method])
        }
        for method in editors
    }
    return {method: made[method].__getitem__ for method in editors}
