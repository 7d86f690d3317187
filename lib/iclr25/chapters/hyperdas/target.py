"""The HyperDAS chapter's target: the tiny model trained on the world's facts, the facts
it knows, and reading and writing the residual stream entering one of its layers."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclr25 import llm
from iclr25.chapters.hyperdas.data import World, label_id, vocabulary, world_texts

# ---------------------------------------------------------------------------------
# The target: the tiny model and its known facts
# ---------------------------------------------------------------------------------


def train_target(
    world: World, steps: int, *, batch: int, lr: float, seed: int, n_layers: int = 6
) -> llm.LM:
    """The tiny Llama (``n_layers`` layers) trained on every fact of ``world`` (cached)."""
    texts = world_texts(world)

    def sample(rng: np.random.Generator, n: int) -> list[str]:
        return [texts[i] for i in rng.integers(len(texts), size=n)]

    run = llm.train_tiny(
        "hyperdas-target",
        vocabulary(world),
        sample,
        config=llm.TinyConfig(n_layers=n_layers),
        data={"generator": "hyperdas.world_texts", "texts": texts},
        steps=steps,
        checkpoints=1,
        batch_size=batch,
        lr=lr,
        seed=seed,
        progress=False,
    )
    lm = run.lm
    for p in lm.model.parameters():
        p.requires_grad_(False)
    return lm


def known(lm: llm.LM, world: World) -> set[tuple[str, int, str]]:
    """The facts ``(attribute, template, entity)`` whose answer's first token is the
    model's greedy next token."""
    cells = [
        (a, i, e)
        for a, ts in world.templates.items()
        for i in range(len(ts))
        for e in world.entities
    ]
    prompts = [world.templates[a][i].format(e) for a, i, e in cells]
    with torch.no_grad():
        top = llm.next_token_logits(lm, prompts, batch_size=64).argmax(-1).tolist()
    return {c for c, t in zip(cells, top) if t == label_id(lm, world.value(c[0], c[2]))}


# ---------------------------------------------------------------------------------
# Reading and writing the residual stream: the ``("resid", l)`` sites of ``llm``
# ---------------------------------------------------------------------------------


def check_layer(lm: llm.LM, layer: int) -> int:
    if not 0 <= layer < lm.n_layers:
        raise ValueError(
            f"layer {layer} is out of range; {lm.name} has layers 0..{lm.n_layers - 1} "
            "(the residual stream entering that layer; 0 is the embeddings)"
        )
    return layer


def hidden(lm: llm.LM, batch: llm.Batch, layer: int) -> torch.Tensor:
    """``("resid", layer)``, the stream entering ``layer``: ``[n, width, d]``."""
    site = ("resid", check_layer(lm, layer))
    return llm.read(lm, batch, [site])[site]


def stacked(lm: llm.LM, batch: llm.Batch) -> torch.Tensor:
    """Every ``("resid", l)``, ``l = 0..n_layers``: ``[n, width, n_layers + 1, d]``, the
    states the hypernetwork reads (the official ``hidden_states`` stacked)."""
    sites = [("resid", l) for l in range(lm.n_layers + 1)]
    seen = llm.read(lm, batch, sites)
    return torch.stack([seen[s] for s in sites], 2)


def run_with(lm: llm.LM, batch: llm.Batch, layer: int, edit: Any) -> torch.Tensor:
    """Last-position logits of ``batch`` with ``("resid", layer)`` replaced by ``edit(h)``
    (gradients flow through ``edit``)."""
    with llm.writing(lm, {("resid", check_layer(lm, layer)): edit}):
        return lm.model(**batch.inputs(), logits_to_keep=1).logits[:, -1]
