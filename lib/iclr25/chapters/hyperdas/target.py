"""The HyperDAS chapter's target: the tiny model trained on the world's facts, the facts
it knows, and reading and writing the residual stream entering one of its layers."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25 import llm
from iclr25.chapters.hyperdas.data import World, label_id, vocabulary, world_texts

# ---------------------------------------------------------------------------------
# The target: the tiny model and its known facts
# ---------------------------------------------------------------------------------


def train_target(world: World, steps: int, *, batch: int, lr: float, seed: int) -> llm.LM:
    """The tiny Llama trained on every fact of ``world`` (cached)."""
    texts = world_texts(world)

    def sample(rng: np.random.Generator, n: int) -> list[str]:
        return [texts[i] for i in rng.integers(len(texts), size=n)]

    run = llm.train_tiny(
        "hyperdas-target",
        vocabulary(world),
        sample,
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
# Reading and writing the residual stream entering a layer
# ---------------------------------------------------------------------------------


def check_layer(lm: llm.LM, layer: int) -> int:
    if not 0 <= layer < lm.n_layers:
        raise ValueError(
            f"layer {layer} is out of range; {lm.name} has layers 0..{lm.n_layers - 1} "
            "(the residual stream entering that layer; 0 is the embeddings)"
        )
    return layer


def hidden(lm: llm.LM, batch: llm.Batch, layer: int) -> torch.Tensor:
    """The residual stream entering ``layer``: ``[n, width, d]`` (0 is the embeddings)."""
    found: list[torch.Tensor] = []

    def grab(module: nn.Module, args: tuple, kwargs: dict) -> None:
        found.append(kwargs["hidden_states"] if "hidden_states" in kwargs else args[0])
        raise llm.Stop

    with llm.hooks((lm.model.model.layers[layer], grab), pre=True, with_kwargs=True):
        lm.model(**batch.inputs())
    return found[0]


def run_with(lm: llm.LM, batch: llm.Batch, layer: int, edit: Any) -> torch.Tensor:
    """Last-position logits of ``batch`` with the stream entering ``layer`` replaced by
    ``edit(h)`` (gradients flow through ``edit``)."""

    def swap(module: nn.Module, args: tuple, kwargs: dict) -> tuple:
        if "hidden_states" in kwargs:
            return args, {**kwargs, "hidden_states": edit(kwargs["hidden_states"])}
        return (edit(args[0]), *args[1:]), kwargs

    with llm.hooks((lm.model.model.layers[layer], swap), pre=True, with_kwargs=True):
        return lm.model(**batch.inputs(), logits_to_keep=1).logits[:, -1]
