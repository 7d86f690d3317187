"""One independent run of the chapter's experiment: its own draw of the data, the two
backbones pre-trained from its seed, every probe on each, their test accuracy, the
confident images, the grids and their GridPG. The claims are decided over runs (their
intervals are over runs, not over the grids of one run); each step is cached by the
functions it calls. Written by hand: the chapter's own composition of its steps."""

from __future__ import annotations

import types
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch

from iclr25 import vision
from iclr25.chapters.probing.evaluation import confident_pool, sample_grids, score_probes
from iclr25.chapters.probing.method import (
    LOSSES,
    PARADIGMS,
    PROBES,
    Backbone,
    Probed,
    confidence,
    fit_probes,
    pooled,
    pretrain,
)

CONFIDENT = 0.95
"""The official script's confidence floor for a grid's images."""


@dataclass
class Run:
    """What one run leaves: keys (backbone, probe kind, loss) for ``probed`` (frozen
    models), ``accuracy`` (test accuracy in percent) and ``scores`` (method -> GridPG
    of every cell, grid-major); the grids (n, 1, H, W) with their classes (n, cells);
    how many images were kept, how many of them reach :data:`CONFIDENT` under every
    probe, and the lowest confidence used."""

    seed: int
    data: vision.ImageData
    backbones: dict[str, Backbone]
    probed: dict[tuple[str, str, str], Probed]
    accuracy: dict[tuple[str, str, str], float]
    grids: torch.Tensor
    classes: torch.Tensor
    kept: int
    confident: int
    lowest: float
    scores: dict[tuple[str, str, str], dict[str, np.ndarray]]


def one_run(p: types.SimpleNamespace, seed: int, methods: Sequence[str]) -> Run:
    """The experiment at the chapter's parameters ``p`` from ``seed``: the data drawn
    from it, both backbones and every probe (kinds x losses) trained from it, the grids
    drawn from it; GridPG of every probe on every grid by each of ``methods``."""
    data = vision.load(p.dataset, seed, p.n)
    epochs = {"supervised": p.epochs_sup, "simclr": p.epochs_simclr}
    backbones = {
        b: pretrain(
            b, data, width=p.width, pools=p.pools, epochs=epochs[b],
            temperature=p.temperature, seed=seed,
        )
        for b in PARADIGMS
    }  # fmt: skip
    probed, accuracy, probs = {}, {}, []
    for b, backbone in backbones.items():
        test_f = pooled(backbone, data.test.x)
        models = fit_probes(
            backbone, data, PROBES, LOSSES, [seed], max_iter=p.probe_iter, width=p.probe_width
        )
        for (kind, loss, _), model in models.items():
            with torch.no_grad():
                logits = model.probe(test_f * model.scale)
            probed[b, kind, loss] = model
            accuracy[b, kind, loss] = 100 * float((logits.argmax(1) == data.test.y).float().mean())
            probs.append(confidence(logits, loss))
    cells = p.grid_size**2
    pool, lowest = confident_pool(probs, data.test.y, p.per_class, cells, data.classes)
    kept = torch.cat(list(pool.values()))
    floor = torch.stack([q[kept, data.test.y[kept]] for q in probs]).amin(0)
    grids, classes = sample_grids(
        data.test.x, pool, p.grids, p.grid_size, np.random.default_rng(seed)
    )
    scores = {}
    for b in backbones:
        scored = score_probes(
            {(kind, loss): probed[b, kind, loss] for kind in PROBES for loss in LOSSES},
            grids,
            classes,
            methods,
            costly_grids=p.costly_grids,
            ig_steps=p.ig_steps,
            lime_samples=p.lime_samples,
        )
        scores.update({(b, *key): by_method for key, by_method in scored.items()})
    return Run(
        seed, data, backbones, probed, accuracy, grids, classes,
        len(kept), int((floor >= CONFIDENT).sum()), lowest, scores,
    )  # fmt: skip
