"""The chapter's experiments, one independent training run each: a run's seed draws
its data, trains its model and draws its pairs, so the claims' intervals over runs say
how much a result would move at another seed. A run's per-pair results are small
arrays, cached with :func:`iclr25.core.cached`, so a warm build repeats no bypass and
no attack. Written here because the runs tie the chapter's data, method and cache."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from iclr25 import core, vision
from iclr25.chapters.modeconn.data import class_pairs, load_model, other_class_sources
from iclr25.chapters.modeconn.method import adversarial as attack
from iclr25.chapters.modeconn.method import compare_barriers, connect, path_losses

# ---------------------------------------------------------------------------------
# Pairs of a run
# ---------------------------------------------------------------------------------


def real_pairs(labels: np.ndarray, correct: np.ndarray, pairs: int, seed: int) -> np.ndarray:
    """Run ``seed``'s same-class pairs of correct test images (rows of indices)."""
    return class_pairs(labels, correct, pairs, np.random.default_rng([seed, 0]))


def attack_pairs(
    labels: np.ndarray, correct: np.ndarray, pairs: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Run ``seed``'s within-class pairs (A, C) of correct test images, and for each the
    correct image of another class that the attack starts from."""
    rng = np.random.default_rng([seed, 1])
    chosen = class_pairs(labels, correct, pairs, rng)
    return chosen, other_class_sources(labels, correct, labels[chosen[:, 0]], rng)


# ---------------------------------------------------------------------------------
# The barriers of one attack setting
# ---------------------------------------------------------------------------------


def barrier_sets(
    model: torch.nn.Module,
    x: torch.Tensor,
    labels: np.ndarray,
    chosen: np.ndarray,
    sources: np.ndarray,
    *,
    stop_factor: float = 1.0,
    mse: float = 0.1,
    steps: int = 512,
    points: int = 250,
) -> dict[str, Any]:
    """Within-class barriers A -> C and real-to-adversarial barriers A -> A' for the
    pairs ``chosen``, A' attacked from ``sources`` towards A's class and stopped at
    ``stop_factor`` times A's loss; the kept pairs' barrier max and gap of each set,
    and the share of attacks predicted as their target."""
    k = torch.as_tensor(labels[chosen[:, 0]], device=x.device)
    a, c = x[chosen[:, 0]], x[chosen[:, 1]]
    within = path_losses(model, a, c, k, points)
    fake, _ = attack(model, x[sources], k, stop_factor * within[:, 0], steps=steps, mse=mse)
    hit = vision.logits(model, fake).argmax(1).numpy() == labels[chosen[:, 0]]
    towards = path_losses(model, a, fake, k, points)
    cmp = compare_barriers(labels[chosen[:, 0]], within, towards)
    kept = cmp.kept
    return {
        "hit": float(hit.mean()),
        "within class": {"max": cmp.within_max[kept], "gap": cmp.within_gap[kept]},
        "adversarial": {"max": cmp.adversarial_max[kept], "gap": cmp.adversarial_gap[kept]},
    }


# ---------------------------------------------------------------------------------
# One run of each experiment, cached
# ---------------------------------------------------------------------------------


def connectivity_run(config: dict[str, Any], seed: int, device: str = "cpu") -> dict:
    """Run ``seed`` of the connectivity experiment: its model (``config``'s dataset,
    arch, n, width, epochs), its ``pairs`` real pairs and their rounds of bypasses
    (``rounds``, ``points``, ``tolerance``; ``steps``, ``lr``, ``mse`` to the bypass).
    Per pair: ``gaps`` and ``maxes`` after each round (round 0: the straight line), and
    of the first-round bypass, if any (NaN if none), its largest pixel change
    ``pixels``, its ``detours`` and the cosine ``along`` the line."""
    c = dict(config)

    def build() -> dict:
        data, model = load_model(
            c["dataset"], c["arch"], n=c["n"], width=c["width"], epochs=c["epochs"], seed=seed
        )
        model = model.to(device)
        x, labels = data.test.x.to(device), data.test.y.numpy()
        correct = vision.logits(model, x).argmax(1).numpy() == labels
        chosen = real_pairs(labels, correct, c["pairs"], seed)
        routes = connect(
            model,
            x[chosen[:, 0]],
            x[chosen[:, 1]],
            labels[chosen[:, 0]],
            c["rounds"],
            points=c["points"],
            tolerance=c["tolerance"],
            steps=c["steps"],
            lr=c["lr"],
            mse=c["mse"],
        )

        def first(values: list[float]) -> float:
            return values[0] if values else float("nan")

        return {
            "accuracy": float(correct.mean()),
            "gaps": torch.tensor([r.gaps for r in routes]),
            "maxes": torch.tensor([r.maxes for r in routes]),
            "pixels": torch.tensor([first(r.pixels) for r in routes]),
            "detours": torch.tensor([first(r.detours) for r in routes]),
            "along": torch.tensor([first(r.along) for r in routes]),
        }

    return core.cached("modeconn-connectivity", {**c, "seed": seed}, build)


def adversarial_run(config: dict[str, Any], seed: int, device: str = "cpu") -> dict:
    """Run ``seed`` of the adversarial experiment: its accurate model (``config``'s
    dataset, arch, n, width, epochs), its ``pairs`` within-class pairs and the official
    attack (``steps``, ``mse``), stopped at A's loss; :func:`barrier_sets`' kept
    barriers, and the model's test accuracy."""
    c = dict(config)

    def build() -> dict:
        data, model = load_model(
            c["dataset"], c["arch"], n=c["n"], width=c["width"], epochs=c["epochs"], seed=seed
        )
        model = model.to(device)
        x, labels = data.test.x.to(device), data.test.y.numpy()
        correct = vision.logits(model, x).argmax(1).numpy() == labels
        chosen, sources = attack_pairs(labels, correct, c["pairs"], seed)
        sets = barrier_sets(
            model, x, labels, chosen, sources, mse=c["mse"], steps=c["steps"], points=c["points"]
        )
        for name in ("within class", "adversarial"):
            sets[name] = {k: torch.as_tensor(v) for k, v in sets[name].items()}
        return {"accuracy": float(correct.mean()), **sets}

    return core.cached("modeconn-adversarial", {**c, "seed": seed}, build)
