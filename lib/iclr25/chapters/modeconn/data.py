"""The experiment's inputs: the data set and its classifier (trained or untrained),
and the pairs drawn from the test images (same class, other-class sources,
interpolated)."""

from __future__ import annotations

import numpy as np
import torch

from iclr25 import vision

# ---------------------------------------------------------------------------------
# Models and pairs
# ---------------------------------------------------------------------------------


def load_model(
    dataset: str, arch: str, *, n: int, width: int, epochs: int, seed: int, trained: bool = True
) -> tuple[vision.ImageData, vision.Classifier]:
    """The data set and a classifier for it: trained by :func:`iclr25.vision.train`
    (Adam, lr 2e-3, batch 128, cached), or its untrained copy (the same initialisation).
    The model is in eval mode, its weights frozen, its input shape in ``in_shape``.
    ``n`` is the number of images drawn; the fixed set ``digits16`` ignores it."""
    data = vision.load(dataset, seed, None if dataset == "digits16" else n)
    config = vision.ModelConfig.for_data(arch, data, width=width)
    if trained:
        train = vision.TrainConfig(
            epochs=epochs, batch_size=128, lr=2e-3, anneal_epochs=epochs // 10, seed=seed
        )
        model = vision.train(data, config, train, progress=False).model
    else:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            model = vision.build(config).eval()
    for weight in model.parameters():
        weight.requires_grad_(False)
    model.in_shape = data.shape
    return data, model


def class_pairs(
    labels: np.ndarray, keep: np.ndarray, n_pairs: int, rng: np.random.Generator
) -> np.ndarray:
    """``n_pairs`` pairs of distinct indices (rows) of one class each, among the
    indices where ``keep`` holds: classes in turn, disjoint pairs within a class."""
    labels = np.asarray(labels)
    pools = {
        k: list(rng.permutation(np.flatnonzero((labels == k) & keep))) for k in np.unique(labels)
    }
    pairs = []
    while len(pairs) < n_pairs and any(len(v) >= 2 for v in pools.values()):
        for k in sorted(pools):
            if len(pools[k]) >= 2 and len(pairs) < n_pairs:
                pairs.append((pools[k].pop(), pools[k].pop()))
    return np.array(pairs, dtype=int).reshape(-1, 2)


def other_class_sources(
    labels: np.ndarray, keep: np.ndarray, classes: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """For each class in ``classes``, one index of an image (where ``keep`` holds) of
    a randomly chosen other class: the official attack's source image."""
    labels = np.asarray(labels)
    out = []
    for k in classes:
        others = np.flatnonzero((labels != k) & keep)
        out.append(int(rng.choice(others)))
    return np.array(out, dtype=int)


def interpolated_pairs(
    x: torch.Tensor,
    labels: np.ndarray,
    keep: np.ndarray,
    pairs: np.ndarray,
    rng: np.random.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Interpolated inputs for each pair (A, C) of one class: A and C are each mixed
    half and half with another correct image of their class drawn at random (any
    image of the class when no other is correct)."""
    labels = np.asarray(labels)

    def partner(i: int, pair: np.ndarray) -> int:
        same = labels == labels[i]
        for pool in (same & keep, same):  # fall back to any image of the class
            pool = np.setdiff1d(np.flatnonzero(pool), pair)
            if len(pool):
                return int(rng.choice(pool))
        return int(i)

    ends = []
    for column in (0, 1):
        partners = [partner(i, pair) for i, pair in zip(pairs[:, column], pairs)]
        ends.append(0.5 * (x[pairs[:, column]] + x[partners]))
    return ends[0], ends[1]
