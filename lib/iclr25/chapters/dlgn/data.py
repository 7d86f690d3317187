"""The DLGN chapter's data: points labelled by an oblique (or axis-aligned) decision
tree, how much of each tree hyperplane is a discontinuity of the label, and the bundled
tabular sets (``iclr25.tabular``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from iclr25 import tabular
from iclr25.core import ParameterError

LIMITS = {"dim": (2, None), "depth": (1, 6), "width": (1, None), "beta": (0, None)}

# ---------------------------------------------------------------------------
# Data: points labelled by a decision tree
# ---------------------------------------------------------------------------


def check_setting(**values: float) -> None:
    """One-line errors for dim >= 2, 1 <= depth <= 6, width >= 1, beta > 0, margin >= 0."""
    for name, value in values.items():
        if name == "margin":
            if not value >= 0:
                raise ParameterError(f"margin got {value!r}; accepted: a number >= 0")
            continue
        low, high = LIMITS[name]
        if name == "beta":
            if not value > 0:
                raise ParameterError(f"beta got {value!r}; accepted: a number > 0")
            continue
        if int(value) != value or value < low or (high is not None and value > high):
            accepted = f"an integer >= {low}" + (f" and <= {high}" if high else "")
            raise ParameterError(f"{name} got {value!r}; accepted: {accepted}")


@dataclass(frozen=True)
class Tree:
    """A complete binary tree of hyperplanes in heap order: node k is
    {x : normals[k].x + biases[k] = 0}; a point with normals[k].x + biases[k] > 0 goes
    to child 2k + ``positive_child`` (2 in the reference's oblique generator, 1 in its
    axis-aligned one), else to the other child; a leaf's label is its heap index mod 2
    (sibling leaves differ), as in the reference."""

    normals: np.ndarray  # (2^depth - 1, dim), unit rows
    biases: np.ndarray  # (2^depth - 1,)
    positive_child: int = 2

    @property
    def depth(self) -> int:
        return int(np.log2(len(self.biases) + 1))

    def route(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per point: the leaf position (0 .. 2^d - 1, heap index minus 2^d - 1), the
        smallest |w.x + b| along its path, and which nodes it reaches (n, 2^d - 1)."""
        node = np.zeros(len(x), dtype=np.int64)
        closest = np.full(len(x), np.inf)
        reached = np.zeros((len(x), len(self.biases)), dtype=bool)
        for _ in range(self.depth):
            reached[np.arange(len(x)), node] = True
            side = np.einsum("nd,nd->n", x, self.normals[node]) + self.biases[node]
            closest = np.minimum(closest, np.abs(side))
            node = self.child(node, side)
        return node - len(self.biases), closest, reached

    def child(self, node: np.ndarray, side: np.ndarray) -> np.ndarray:
        """The child of ``node`` on ``side`` (= w.x + b) of its hyperplane."""
        return 2 * node + np.where(side > 0, self.positive_child, 3 - self.positive_child)

    def predict(self, x: np.ndarray) -> np.ndarray:
        """The tree's label of each row of ``x``: its leaf's heap index mod 2."""
        return (self.route(np.asarray(x, dtype=float))[0] + len(self.biases)) % 2

    def clearance(self, x: np.ndarray) -> np.ndarray:
        """Per point, the distance to the closest of all the tree's hyperplanes (each
        extended over the whole space, as the reference's margin measures it)."""
        return np.abs(np.asarray(x, dtype=float) @ self.normals.T + self.biases).min(1)


@dataclass(frozen=True)
class TreeData:
    """Points ``x`` (n, dim) float32 and labels ``y`` (n,) int64 of ``tree``."""

    x: np.ndarray
    y: np.ndarray
    tree: Tree

    def split(self, test_fraction: float = 0.2) -> tuple[np.ndarray, ...]:
        """x_train, y_train, x_test, y_test: the last ``test_fraction`` of the (already
        random) points is the test set."""
        cut = int(round(len(self.y) * (1 - test_fraction)))
        return self.x[:cut], self.y[:cut], self.x[cut:], self.y[cut:]


def _keep_labelled(tree: Tree, draw: Callable[[int], np.ndarray], n: int, margin: float):
    """Draw points until ``n`` lie farther than ``margin`` from every hyperplane of
    the tree (the reference's rule); label them by the tree."""
    xs, total = [], 0
    for _ in range(1000):
        x = draw(n)
        x = x[tree.clearance(x) > margin]
        xs.append(x)
        total += len(x)
        if total >= n:
            break
    else:
        raise ParameterError(f"margin {margin} leaves almost no points; accepted: a smaller margin")
    x = np.concatenate(xs)[:n]
    return TreeData(x.astype(np.float32), tree.predict(x).astype(np.int64), tree)


def oblique_tree(
    dim: int = 8, depth: int = 3, n: int = 5000, margin: float = 0.0, seed: int = 0
) -> TreeData:
    """``n`` points uniform in [-1, 1]^dim labelled by a random oblique tree of ``depth``:
    unit normals from N(0, I), each bias minus the median of w.x over the points that
    reach the node (so each split halves them), points within ``margin`` of any of
    the tree's hyperplanes dropped (the reference prunes them; we redraw to keep
    ``n``)."""
    check_setting(dim=dim, depth=depth, margin=margin)
    rng = np.random.default_rng([seed, 25])
    n_nodes = 2**depth - 1
    normals = rng.standard_normal((n_nodes, dim))
    normals /= np.linalg.norm(normals, axis=1, keepdims=True)
    biases = np.zeros(n_nodes)
    tree = Tree(normals, biases)  # biases filled in below, level by level
    x = rng.uniform(-1, 1, (n, dim))
    node = np.zeros(n, dtype=np.int64)
    for level in range(depth):
        for k in range(2**level - 1, 2 ** (level + 1) - 1):
            here = node == k
            if here.any():
                biases[k] = -np.median(x[here] @ normals[k])
        node = tree.child(node, np.einsum("nd,nd->n", x, normals[node]) + biases[node])
    return _keep_labelled(tree, lambda m: rng.uniform(-1, 1, (m, dim)), n, margin)


def flip_share(tree: Tree, x: np.ndarray, eps: float = 0.02) -> np.ndarray:
    """Per node, how much of its hyperplane is a discontinuity of the label: over the
    points of ``x`` that reach the node and lie within ``eps`` of its hyperplane, the
    share whose label differs at x + eps w and x - eps w (w the node's unit normal);
    NaN where no point qualifies. Bottom-level nodes give 1 (sibling leaves differ)."""
    x = np.asarray(x, dtype=float)
    _, _, reached = tree.route(x)
    shares = np.full(len(tree.biases), np.nan)
    for k, (w, b) in enumerate(zip(tree.normals, tree.biases)):
        near = x[reached[:, k] & (np.abs(x @ w + b) < eps)]
        if len(near):
            on_plane = near - np.outer(near @ w + b, w)
            shares[k] = np.mean(
                tree.predict(on_plane + eps * w) != tree.predict(on_plane - eps * w)
            )
    return shares


def discontinuity_scope(tree: Tree, x: np.ndarray, band: float = 0.05) -> np.ndarray:
    """Per node k, how much of its hyperplane, over the region the points ``x``
    cover, is a discontinuity of the label: the number of points within ``band`` of
    it whose projection p onto it has tree.predict(p + band w_k) != tree.predict(p -
    band w_k). Unlike :func:`flip_share` it counts the jumps (a scope, not a share),
    and a hyperplane counts only where it splits (elsewhere crossing it changes
    nothing). A hyperplane that leaves all the points on one side scores 0: they
    show no jump across it."""
    x = np.asarray(x, dtype=float)
    scope = np.zeros(len(tree.biases), dtype=np.int64)
    for k, (w, b) in enumerate(zip(tree.normals, tree.biases)):
        side = x @ w + b
        if (side > 0).all() or (side <= 0).all():
            continue
        near = x[np.abs(side) < band]
        on_plane = near - np.outer(near @ w + b, w)
        jumps = tree.predict(on_plane + band * w) != tree.predict(on_plane - band * w)
        scope[k] = int(jumps.sum())
    return scope


def axis_tree(
    dim: int = 8, depth: int = 3, n: int = 5000, margin: float = 0.0, seed: int = 0
) -> TreeData:
    """The reference's axis-aligned tree on the unit sphere: node k splits on x_k, going
    to child 2k + 1 when x_k > 0 as the reference does (so ``dim`` >= 2^depth - 1),
    points N(0, I) divided by their norm."""
    check_setting(dim=dim, depth=depth, margin=margin)
    n_nodes = 2**depth - 1
    if dim < n_nodes:
        raise ParameterError(
            f"an axis tree of depth {depth} needs dim >= {n_nodes}, got {dim}; "
            "accepted: a larger dim or a smaller depth"
        )
    rng = np.random.default_rng([seed, 26])

    def draw(m: int) -> np.ndarray:
        x = rng.standard_normal((m, dim))
        return x / np.linalg.norm(x, axis=1, keepdims=True)

    tree = Tree(np.eye(dim)[:n_nodes], np.zeros(n_nodes), positive_child=1)
    return _keep_labelled(tree, draw, n, margin)


# ---------------------------------------------------------------------------
# Tabular data: scikit-learn's bundled sets (iclr25.tabular)
# ---------------------------------------------------------------------------

TABULAR = ("breast_cancer", "wine", "iris", "digits")


def load_table(name: str, seed: int) -> tabular.Table:
    """A bundled table split 60/20/20 and min-max scaled by ``iclr25.tabular.load``;
    one-line error for a set this chapter does not use."""
    if name not in TABULAR:
        raise ParameterError(f"unknown data set {name!r}; accepted: {', '.join(TABULAR)}")
    return tabular.load(name, seed)
