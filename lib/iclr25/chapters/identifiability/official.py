"""The official code's conventions (MelouxM/MI-identifiability), beside ours: circuits as
edge subsets (widths up to 3), its candidate algorithms (one per AND/OR tree, negated
inputs located as variables of their own) and its alignment count on six (base, source)
pairs. The chapter sets these counts beside the method's own."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence

import numpy as np
import torch

from iclr25.chapters.identifiability.method import (
    Algorithm,
    Ref,
    interchange_accuracy,
    minimal_locations,
    neuron_groups,
    patched_outputs,
)
from iclr25.chapters.identifiability.networks import GATES, PAIRS, TRUTH_TABLES, Networks, Trained

# ---------------------------------------------------------------------------------
# The official code's circuits: edge subsets
# ---------------------------------------------------------------------------------


def edge_covers(n_in: int, n_out: int) -> np.ndarray:
    """Every edge subset between ``n_in`` and ``n_out`` kept neurons that leaves none of
    them cut off (each row and column non-empty), as (K, n_out, n_in) 0/1 masks."""
    all_masks = np.array(list(itertools.product([0, 1], repeat=n_in * n_out)), dtype=bool).reshape(
        -1, n_out, n_in
    )
    return all_masks[all_masks.any(2).all(1) & all_masks.any(1).all(1)]


def edge_circuits(width: int) -> list[np.ndarray]:
    """The official code's circuits: a neuron subset of each hidden layer and an edge
    subset between kept neurons that cuts none of them off, with at least one hidden
    neuron ablated (the official loop skips the full node set, so every circuit keeping
    all neurons, whatever its edges). Returned as the three layers' edge masks, shapes
    (K, width, 2), (K, width, width) and (K, 1, width) (a neuron is kept when it has
    edges). Only for width <= 3: there are 3,000 at width 3 and about 10^10 at width 5."""
    if not 1 <= width <= 3:
        raise ValueError(f"edge circuits are enumerated for widths 1 to 3 only, got {width!r}")
    masks: list[list[np.ndarray]] = [[], [], []]
    subsets = [np.flatnonzero(s) for s in itertools.product([0, 1], repeat=width) if any(s)]
    for first, second in itertools.product(subsets, repeat=2):
        if len(first) == len(second) == width:
            continue  # every neuron kept: the full network's node set is not a circuit
        into_first, into_second = edge_covers(2, len(first)), edge_covers(len(first), len(second))
        for e1, e2 in itertools.product(into_first, into_second):
            m1, m2, m3 = (
                np.zeros(shape, dtype=bool) for shape in [(width, 2), (width, width), (1, width)]
            )
            m1[first] = e1
            m2[np.ix_(second, first)] = e2
            m3[0, second] = True
            for layer, m in zip(masks, (m1, m2, m3)):
                layer.append(m)
    return [np.stack(layer) for layer in masks]


def edge_circuit_accuracy(
    nets: Networks, x: torch.Tensor, y: torch.Tensor, edges: list[np.ndarray]
) -> np.ndarray:
    """Accuracy of every edge circuit of every network, (N, K), as
    :func:`circuit_accuracy`: the weights of dropped edges are zeroed (a neuron without
    edges is thereby cut off; its bias no longer reaches the output).

    Computed neuron by neuron, since the K circuits share few distinct parts: a
    first-layer neuron's activation depends only on its own incoming edges, and a
    second-layer neuron's only on the first-layer masks and its own incoming edges; each
    distinct part is run once and the output sums the kept second-layer neurons."""
    width = edges[0].shape[1]
    first, inverse1 = np.unique(edges[0].reshape(len(edges[0]), -1), axis=0, return_inverse=True)
    first = torch.tensor(first.reshape(-1, width, 2), dtype=torch.float32)  # (U, width, 2)
    kept1 = first.amax(-1)  # (U, width)
    # per second-layer neuron j: its distinct (first mask, incoming edges), and which per circuit
    parts = []
    for j in range(width):
        key = np.concatenate([inverse1.reshape(-1, 1), edges[1][:, j]], axis=1)
        distinct, inverse = np.unique(key, axis=0, return_inverse=True)
        parts.append((distinct, inverse.reshape(-1)))
    out_mask = torch.tensor(edges[2][:, 0], dtype=torch.float32)  # (K, width)
    accuracy = []
    with torch.no_grad():
        for i in range(len(nets)):
            w1, w2, w3 = (w[i] for w in nets.weights)
            b1, b2, b3 = (b[i] for b in nets.biases)
            h1 = torch.einsum("ni,uoi->uno", x[i], w1 * first) + b1  # (U, n, width)
            h1 = torch.nn.functional.leaky_relu(h1) * kept1[:, None]
            out = b3[0] + torch.zeros(len(out_mask), len(x[i]))
            for j, (distinct, inverse) in enumerate(parts):
                into = torch.tensor(distinct[:, 1:], dtype=torch.float32)  # (V, width)
                h2 = h1[distinct[:, 0]] @ (w2[j] * into)[..., None] + b2[j]  # (V, n, 1)
                h2 = torch.nn.functional.leaky_relu(h2[..., 0])
                out += (w3[0, j] * out_mask[:, j, None]) * h2[inverse]
            accuracy.append((out.round() == y[i]).float().mean(1).numpy())
    return np.stack(accuracy)


def _edge_circuit_accuracy_direct(
    nets: Networks, x: torch.Tensor, y: torch.Tensor, edges: list[np.ndarray]
) -> np.ndarray:
    """:func:`edge_circuit_accuracy` computed circuit by circuit (slow; it checks the fast
    one)."""
    masks = [torch.tensor(m, dtype=torch.float32) for m in edges]
    kept = [torch.tensor(m.any(-1), dtype=torch.float32) for m in edges[:2]]  # (K, width)
    out = []
    with torch.no_grad():
        for i in range(len(nets)):
            h = x[i].expand(len(masks[0]), *x[i].shape)  # (K, n, 2)
            for l in range(3):
                w = nets.weights[l][i] * masks[l]  # (K, out, in)
                h = torch.einsum("kni,koi->kno", h, w) + nets.biases[l][i]
                if l < 2:
                    h = torch.nn.functional.leaky_relu(h) * kept[l][:, None]
            out.append((h[..., 0].round() == y[i]).float().mean(1).numpy())
    return np.stack(out)


# The official code's candidate algorithms ------------------------------------------

Skeleton = str | tuple  # "A", "B", or (op, left, right) with op "*" (AND) or "+" (OR)


def _skeleton_text(
    tree: Skeleton, negated: frozenset = frozenset(), ids: Iterator | None = None
) -> str:
    """The official way of writing a formula: operands in parentheses, ``*`` for AND, ``+``
    for OR, ``¬`` before a negated node; the outermost parentheses dropped. ``negated``
    holds pre-order node ids (the root is 0)."""
    ids = itertools.count() if ids is None else ids
    node = next(ids)
    if isinstance(tree, str):
        out = tree
    else:
        op, left, right = tree
        out = f"({_skeleton_text(left, negated, ids)}{op}{_skeleton_text(right, negated, ids)})"
    return "¬" + out if node in negated else out


def _official_text(tree: Skeleton, negated: frozenset = frozenset()) -> str:
    out = _skeleton_text(tree, negated)
    return out[1:-1] if out.startswith("(") else out


@functools.cache
def _skeletons(depth: int) -> tuple[Skeleton, ...]:
    """AND/OR trees of depth exactly ``depth`` over A and B, generated as the official code
    does: a tree of depth d joins one of depth d - 1 (left) with one of smaller depth
    (right), kept only when the left one is written before the right one in string order."""
    if depth == 0:
        return ("A", "B")
    out = []
    for left in _skeletons(depth - 1):
        for d in range(depth):
            for right in _skeletons(d):
                if _official_text(left) < _official_text(right):
                    out += [("*", left, right), ("+", left, right)]
    return tuple(out)


def _preorder(tree: Skeleton) -> list[Skeleton]:
    if isinstance(tree, str):
        return [tree]
    return [tree, *_preorder(tree[1]), *_preorder(tree[2])]


def _negation_tables(tree: Skeleton) -> np.ndarray:
    """The truth table of ``tree`` under every set of negated nodes, indexed by a bit mask
    over the pre-order node ids (bit k set: node k negated)."""
    nodes = _preorder(tree)
    masks = np.arange(2 ** len(nodes))
    ids = itertools.count()

    def table(node: Skeleton) -> np.ndarray:
        k = next(ids)
        if isinstance(node, str):
            t = np.full(len(masks), TRUTH_TABLES[node])
        else:
            left, right = table(node[1]), table(node[2])
            t = left & right if node[0] == "*" else left | right
        return np.where((masks >> k) & 1, t ^ 15, t)

    return table(tree)


def _to_algorithm(tree: Skeleton, negated: frozenset) -> Algorithm:
    """An official formula as an :class:`Algorithm`: a negated AND/OR node becomes the
    negated gate (its NOT is the variable to locate), and a negated input a NOT gate, which
    the official code locates as a variable of its own."""
    gates: list[tuple[int, Ref, Ref]] = []
    ids = itertools.count()

    def walk(node: Skeleton) -> Ref:
        k = next(ids)
        if isinstance(node, str):
            if k not in negated:
                return node
            gates.append((1, node, node))  # NOT of an input
        else:
            refs = walk(node[1]), walk(node[2])
            table = 8 if node[0] == "*" else 14
            gates.append((table ^ 15 if k in negated else table, *refs))
        return len(gates) - 1

    walk(tree)
    return Algorithm(tuple(gates), label=_official_text(tree, negated))


@functools.cache
def official_algorithms(gate: str, depth: int = 3) -> tuple[Algorithm, ...]:
    """The candidate algorithms of the official code (``get_formula_dataset``): every
    AND/OR tree of depth at most ``depth`` from :func:`_skeletons` that computes ``gate``
    once some of its nodes (inputs included) are negated; for each tree, only the first
    such negation is kept, taking fewer negations first, then the lexicographically first
    set of pre-order node ids. One candidate per tree: two trees that compute the same
    intermediate variables up to negation are two candidates."""
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}; accepted: {', '.join(GATES)}")
    if depth not in (1, 2, 3):
        raise ValueError(f"algorithm depth must be 1, 2 or 3, got {depth!r}")
    found, seen = [], set()
    for d in range(1, depth + 1):
        for tree in _skeletons(d):
            tables = _negation_tables(tree)
            hits = np.flatnonzero(tables == GATES[gate])
            if not len(hits) or _official_text(tree) in seen:
                continue
            subsets = [tuple(k for k in range(len(_preorder(tree))) if m >> k & 1) for m in hits]
            first = min(subsets, key=lambda ids: (len(ids), ids))
            seen.add(_official_text(tree))
            found.append(_to_algorithm(tree, frozenset(first)))
    return tuple(found)


# The official code's interchange pairs and alignment count ---------------------------

OFFICIAL_PAIRS = np.array([4 * base + source for source, base in PAIRS])
"""The official code's six (base, source) pairs, as columns of the 16: one order of each
pair of distinct inputs, the source before the base in input order (so the input (1, 1) is
never a source and (0, 0) never a base)."""


def official_alignment(
    trained: Trained, algorithms: Sequence[Algorithm], pairs: np.ndarray | None = OFFICIAL_PAIRS
) -> np.ndarray:
    """What-then-where under the official conventions: for every converged network of
    ``trained`` and every candidate (:func:`official_algorithms`), its number of minimal
    locations when the IIA is taken on ``pairs`` (the official six by default), shape
    (networks, algorithms). A candidate is aligned with a network when its count is above 0."""
    index = np.flatnonzero(trained.converged)
    groups = neuron_groups(trained.nets.width)
    patched = patched_outputs(trained.nets.select(index), groups) if len(index) else []
    return np.array(
        [
            [
                len(minimal_locations(interchange_accuracy(p, alg, pairs), groups))
                for alg in algorithms
            ]
            for p in patched
        ],
        dtype=np.int64,
    ).reshape(len(index), len(algorithms))
