"""Small offline tables: scikit-learn's bundled classification data sets, split and scaled.

Chapters that explain or train on tabular inputs (sufficient subsets, deep linearly
gated networks) share this loader. :func:`load` returns a :class:`Table`: features as
a 2-D float tensor (rows x columns), integer labels, the column and class names, and
fixed train/validation/test splits. Chapters reshape the rows to what their models
take (``x.view(n, 1, 1, d)`` for a model of 1 x 1 x d images, say).

Offered, all shipped inside scikit-learn, so nothing is downloaded:

* ``"breast_cancer"`` -- 569 tumours, 30 measurements, malignant or benign;
* ``"iris"`` -- 150 flowers, 4 measurements, 3 species;
* ``"wine"`` -- 178 wines, 13 chemical measurements, 3 cultivars;
* ``"digits"`` -- 1,797 handwritten digits as 8 x 8 = 64 grey levels (0-16), 10 classes.

Splits: a random permutation of the rows drawn from ``seed`` is cut 60/20/20 into
train, validation and test. Scaling: min-max by the training split,
x' = clip((x - min_train) / (max_train - min_train), 0, 1), so every column lies in
[0, 1] (a constant column maps to 0) and no statistic of the held-out rows leaks in.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

DATASETS = ("breast_cancer", "iris", "wine", "digits")
SPLITS = ("train", "val", "test")
FRACTIONS = (0.6, 0.2, 0.2)  # train / validation / test


@dataclass(frozen=True)
class Split:
    """Rows ``x`` (n, d) float32 in [0, 1] and labels ``y`` (n,) int64."""

    x: torch.Tensor
    y: torch.Tensor

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class Table:
    """A classification table with fixed splits; ``spec`` (name, seed) identifies it in
    caches."""

    name: str
    features: tuple[str, ...]
    classes: tuple[str, ...]
    train: Split
    val: Split
    test: Split
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return len(self.features)

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def split(self, name: str) -> Split:
        """The split ``"train"``, ``"val"`` or ``"test"``."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; accepted: {', '.join(SPLITS)}")
        return getattr(self, name)


def min_max(x: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """clip((x - min) / (max - min), 0, 1), min and max per column of ``reference``;
    a column constant in ``reference`` is divided by 1."""
    low, high = reference.min(0), reference.max(0)
    return np.clip((x - low) / np.where(high > low, high - low, 1.0), 0.0, 1.0)


@functools.lru_cache(maxsize=8)
def load(name: str, seed: int = 0) -> Table:
    """The bundled table ``name`` split 60/20/20 by ``seed``, min-max scaled by its
    training split. The same arguments give the same tensors (the result is memoised:
    treat it as read-only)."""
    from sklearn import datasets

    if name not in DATASETS:
        raise ValueError(f"unknown tabular data set {name!r}; accepted: {', '.join(DATASETS)}")
    bunch = getattr(datasets, f"load_{name}")()
    x, y = bunch.data.astype(np.float32), bunch.target.astype(np.int64)
    order = np.random.default_rng([seed, 3]).permutation(len(y))
    parts = np.split(order, np.cumsum([round(f * len(y)) for f in FRACTIONS[:-1]]))
    scaled = min_max(x, x[parts[0]])
    splits = [Split(torch.from_numpy(scaled[i]), torch.from_numpy(y[i])) for i in parts]
    return Table(
        name,
        tuple(str(f) for f in bunch.feature_names),
        tuple(str(c) for c in bunch.target_names),
        *splits,
        spec={"name": name, "seed": seed},
    )
