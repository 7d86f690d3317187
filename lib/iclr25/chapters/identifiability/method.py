"""The paper's two strategies for one batch of networks: where-then-what (circuits, then
their interpretations as logic gates) and what-then-where (candidate algorithms, then
their locations by interchange interventions), and both for every converged network
(:func:`explain`), one output at a time for networks trained on several gates."""

from __future__ import annotations

import functools
import itertools
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np
import torch

from iclr25.chapters.identifiability.networks import (
    AND_LIKE,
    GATES,
    INPUT_A,
    INPUT_B,
    INPUTS,
    SEPARATIONS,
    Networks,
    Trained,
    bits,
    forward,
)
from iclr25.core import stats
from iclr25.core.stats import Estimate

# ---------------------------------------------------------------------------------
# Where-then-what: circuits, then their interpretations
# ---------------------------------------------------------------------------------


MIN_SPARSITY = {4: 0.2, 5: 0.3}
"""The official ``main.py``'s ``min_sparsity`` by width: a circuit is a candidate only if
more than this share of the hidden neurons is ablated (none is required below width 4)."""


def neuron_circuits(width: int) -> np.ndarray:
    """The candidate circuits of the official code as neuron masks, shape (C, 2, width):
    each hidden layer keeps a non-empty subset of its neurons, the full network is not a
    circuit (``all_valid_node_masks[:-1]``), and more than ``MIN_SPARSITY[width]`` of the
    2 * width hidden neurons are ablated. C = (2^width - 1)^2 - 1 up to width 3."""
    subsets = np.array(list(itertools.product([0, 1], repeat=width))[1:], dtype=bool)
    pairs = itertools.product(range(len(subsets)), repeat=2)
    masks = np.array([[subsets[i], subsets[j]] for i, j in pairs])
    ablated = (masks.reshape(len(masks), -1) == 0).mean(1)  # as the official sparsity
    return masks[(ablated > MIN_SPARSITY.get(width, 0.0)) & ~masks.all((1, 2))]


def circuit_activations(
    nets: Networks, index: int, x: torch.Tensor, circuits: np.ndarray
) -> list[torch.Tensor]:
    """Activations of every circuit of network ``index`` on inputs ``x`` (n, 2), the other
    neurons zero-ablated (as the official code does): [(C, n, width), (C, n, width), (C, n)]."""
    masks = [torch.tensor(circuits[:, l], dtype=torch.float32) for l in range(2)]
    with torch.no_grad():
        acts = forward(nets.select([index]), x[None, None], masks)
    return [a[0] for a in acts]


def circuit_accuracy(
    nets: Networks, x: torch.Tensor, y: torch.Tensor, circuits: np.ndarray
) -> np.ndarray:
    """Accuracy of every circuit of every network, (N, C): the circuit's output rounded to
    an integer, against the targets ``y`` (N, n) on the inputs ``x`` (N, n, 2)."""
    return np.stack(
        [
            (circuit_activations(nets, i, x[i], circuits)[-1].round() == y[i])
            .float()
            .mean(1)
            .numpy()
            for i in range(len(nets))
        ]
    )


def threshold_truth_tables(values: np.ndarray) -> list[int]:
    """The truth tables a neuron can stand for: one per threshold halfway between two
    consecutive distinct values of its activations on the four inputs ("1" above it)."""
    v = np.sort(np.unique(values))
    cuts = (v[1:] + v[:-1]) / 2
    return [int(((values > c) << np.arange(4)).sum()) for c in cuts]


def circuit_candidates(
    nets: Networks, index: int, circuits: np.ndarray
) -> list[list[list[list[int]]]]:
    """For each circuit of network ``index``, each of its layers (hidden 1, hidden 2, output)
    and each neuron in it: its candidate truth tables, from the circuit's own (ablated)
    activations on the four clean inputs. The output is rounded first (official code)."""
    h1, h2, out = (
        a.numpy()
        for a in circuit_activations(
            nets, index, torch.tensor(INPUTS, dtype=torch.float32), circuits
        )
    )
    return [
        [
            [threshold_truth_tables(h1[c, :, j]) for j in np.flatnonzero(circuit[0])],
            [threshold_truth_tables(h2[c, :, j]) for j in np.flatnonzero(circuit[1])],
            [threshold_truth_tables(np.round(out[c]))],
        ]
        for c, circuit in enumerate(circuits)
    ]


def _local_ok(node: np.ndarray, parents: np.ndarray) -> np.ndarray:
    """Whether truth tables ``node`` (...) are functions of ``parents`` (..., p).

    The official code also rules out a neuron whose gate over exactly two parents can only
    be XOR or XNOR: the four parent patterns all occur (so the gate is fully determined)
    and the neuron is the parity of its parents.
    """
    cover = np.bitwise_or.reduce(SEPARATIONS[parents], axis=-1)
    ok = (SEPARATIONS[node] & ~cover) == 0
    if parents.shape[-1] == 2:
        parity = node ^ parents[..., 0] ^ parents[..., 1]
        ok &= ~((cover == 63) & ((parity == 0) | (parity == 15)))
    return ok


def _combos(candidates: list[list[int]]) -> np.ndarray:
    """Every choice of one candidate per neuron, (K, n_neurons)."""
    return np.array(list(itertools.product(*candidates)), dtype=np.int64).reshape(
        -1, len(candidates)
    )


def _consistency(candidates: list[list[list[int]]]) -> tuple[np.ndarray, ...]:
    """The choices L1 of the first hidden layer (consistent with A, B) and L2 of the second,
    ``ok[a, c]`` (L2 choice c consistent with L1 choice a) and ``outputs[c]`` (how many
    output truth tables are consistent with L2 choice c)."""
    first, second, output = (_combos(c) for c in candidates)
    inputs = np.broadcast_to(np.array([INPUT_A, INPUT_B]), (*first.shape, 2))
    first = first[_local_ok(first, inputs).all(1)] if first.size else first
    ok = np.ones((len(first), len(second)), dtype=bool)
    for j in range(second.shape[1]):
        ok &= _local_ok(
            second[None, :, j],
            np.broadcast_to(first[:, None], (len(first), len(second), first.shape[1])),
        )
    outputs = sum(_local_ok(np.full(len(second), t), second).astype(np.int64) for t in output[:, 0])
    return first, second, ok, outputs


def count_interpretations(candidates: list[list[list[int]]]) -> int:
    """The number of consistent interpretations of a circuit: choices of one truth table per
    neuron such that every neuron is a function of its parents (the previous layer of the
    circuit; the inputs A, B for the first).

    Counted without listing them: with L1 and L2 the choices for the two hidden layers, the
    count is the sum over (L1, L2) of [L2 consistent with L1] times the number of output
    readings consistent with L2.
    """
    if any(not c for layer in candidates for c in layer):
        return 0  # a neuron with a constant activation stands for no Boolean variable
    _, _, ok, outputs = _consistency(candidates)
    return int(ok.sum(0) @ outputs)


def first_interpretation(candidates: list[list[list[int]]]) -> tuple[tuple[int, ...], ...] | None:
    """One consistent interpretation (truth tables per layer), or None if there is none."""
    if any(not c for layer in candidates for c in layer):
        return None
    first, second, ok, outputs = _consistency(candidates)
    hits = np.argwhere(ok & (outputs > 0)[None])
    if not len(hits):
        return None
    a, c = hits[0]
    out = next(t for t in itertools.chain(*candidates[2]) if _local_ok(np.array(t), second[c]))
    return tuple(first[a].tolist()), tuple(second[c].tolist()), (out,)


def interpretations(candidates: list[list[list[int]]]) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every consistent interpretation, listed one by one (slow; it checks
    :func:`count_interpretations`): tuples of truth tables per layer."""
    layers = [list(itertools.product(*c)) for c in candidates]
    for choice in itertools.product(*layers):
        parents = (INPUT_A, INPUT_B)
        ok = True
        for layer in choice:
            for t in layer:
                ok &= bool(_local_ok(np.array(t), np.array(parents)))
            parents = layer
        if ok:
            yield choice


# ---------------------------------------------------------------------------------
# What-then-where: candidate algorithms and their locations by interchange interventions
# ---------------------------------------------------------------------------------

Ref = str | int  # "A", "B", or the index of an earlier gate


@dataclass(frozen=True)
class Algorithm:
    """A Boolean circuit of two-input gates: ``gates[k] = (table, left, right)`` computes
    ``table`` (a truth table over (left, right)) of two earlier values; the last gate is
    the output. The other gates are the intermediate variables that must be located. A gate
    whose two operands are the same value is a NOT (table 1) or a copy of it. ``label``
    (optional) is how the official code writes the algorithm."""

    gates: tuple[tuple[int, Ref, Ref], ...]
    label: str = field(default="", compare=False)

    @property
    def variables(self) -> list[int]:
        return list(range(len(self.gates) - 1))

    def run(
        self, a: np.ndarray, b: np.ndarray, interventions: dict[int, np.ndarray] | None = None
    ) -> np.ndarray:
        """The output on inputs a, b (arrays), with variable k set to ``interventions[k]``."""
        values: dict[Ref, np.ndarray] = {"A": a, "B": b}
        for k, (table, left, right) in enumerate(self.gates):
            values[k] = (table >> (2 * values[left] + values[right])) & 1
            if interventions and k in interventions:
                values[k] = interventions[k]
        return values[len(self.gates) - 1]

    def describe(self, k: int | None = None) -> str:
        """Gate ``k`` (default: the output) as a formula, e.g. ``(A ∨ B) ∧ (¬A ∨ ¬B)``;
        a negated gate is written by De Morgan's laws, so ¬ only stands before A or B."""

        def text(ref: Ref, negated: bool) -> str:
            if isinstance(ref, str):
                return "¬" + ref if negated else ref
            table, left, right = self.gates[ref]
            if left == right:  # a gate of one value: NOT or a copy of it
                return text(left, negated != bool(table & 1))
            op, neg_left, neg_right = _GATE_FORMS[table ^ 15 if negated else table]
            parts = [text(left, neg_left), text(right, neg_right)]
            return f" {op} ".join(s if len(s) <= 2 else f"({s})" for s in parts)

        if k is None and self.label:
            return self.label
        return text(len(self.gates) - 1 if k is None else k, False)


_GATE_FORMS = {
    8: ("∧", False, False),
    4: ("∧", False, True),
    2: ("∧", True, False),
    1: ("∧", True, True),
    14: ("∨", False, False),
    13: ("∨", False, True),
    11: ("∨", True, False),
    7: ("∨", True, True),
}
"""Each AND-like gate as (operator, negate left operand, negate right operand)."""


def _transpose(table: int) -> int:
    """The table of g(y, x) given that of g(x, y)."""
    return sum(((table >> (2 * x + y)) & 1) << (2 * y + x) for x in (0, 1) for y in (0, 1))


def _flip_input(table: int, which: int) -> int:
    """The table of g with its input ``which`` (0: left, 1: right) negated."""
    return sum(
        ((table >> (2 * (x ^ (which == 0)) + (y ^ (which == 1)))) & 1) << (2 * x + y)
        for x in (0, 1)
        for y in (0, 1)
    )


def _normalise(tree: tuple, root: bool) -> tuple[tuple, bool]:
    """A key equal for two algorithms that differ only by negating intermediate variables
    (the parent gate absorbs the negation) or by swapping a gate's operands; and whether
    this node was negated to reach it (a variable is stored with its gate giving 0 when both
    operands are 0)."""
    if isinstance(tree, str):
        return (16, tree), False  # after every gate table, so keys compare
    table, left, right = tree
    (kl, fl), (kr, fr) = _normalise(left, False), _normalise(right, False)
    if kl is None or kr is None:
        return None, False
    if fl:
        table = _flip_input(table, 0)
    if fr:
        table = _flip_input(table, 1)
    if kl == kr:
        return None, False  # a gate of one variable with itself: not a candidate
    if kl > kr:
        kl, kr, table = kr, kl, _transpose(table)
    flipped = not root and bool(table & 1)
    if flipped:
        table ^= 15
    return (table, kl, kr), flipped


def _flatten(tree: tuple) -> Algorithm:
    gates: list[tuple[int, Ref, Ref]] = []

    def walk(node: tuple) -> Ref:
        if isinstance(node, str):
            return node
        table, left, right = node
        refs = walk(left), walk(right)
        gates.append((table, *refs))
        return len(gates) - 1

    walk(tree)
    return Algorithm(tuple(gates))


def candidate_algorithms(gate: str, depth: int = 2) -> list[Algorithm]:
    """Every algorithm of AND/OR gates with negations (:data:`AND_LIKE`) of depth at most
    ``depth`` over A and B that computes ``gate`` on the four inputs, one per class of
    algorithms equal up to negated variables and swapped operands (a gate's two operands
    must differ, as in the official enumeration).

    Built level by level: the distinct variables of depth < ``depth``, then every gate over
    two of them, kept when its truth table is the target's.
    """
    if gate not in GATES:
        raise ValueError(f"unknown gate {gate!r}; accepted: {', '.join(GATES)}")
    if depth not in (1, 2, 3):
        raise ValueError(f"algorithm depth must be 1, 2 or 3, got {depth!r}")
    variables: dict[tuple, object] = {(16, "A"): "A", (16, "B"): "B"}
    for _ in range(depth - 1):
        level = {}
        for g in AND_LIKE:
            for x, y in itertools.permutations(variables.values(), 2):
                key, _ = _normalise((g, x, y), root=False)
                if key is not None and key not in variables:
                    level.setdefault(key, (g, x, y))
        variables.update(level)
    trees = list(variables.values())
    a, b = INPUTS[:, 0], INPUTS[:, 1]
    values = np.array(
        [_flatten(t).run(a, b) if isinstance(t, tuple) else {"A": a, "B": b}[t] for t in trees]
    )  # (n, 4)
    target = bits(GATES[gate])
    found: dict[tuple, Algorithm] = {}
    for g in AND_LIKE:
        out = (g >> (2 * values[:, None] + values[None, :])) & 1  # (n, n, 4)
        for i, j in zip(*np.nonzero((out == target).all(-1))):
            key, _ = _normalise((g, trees[i], trees[j]), root=True)
            if key is not None:
                found.setdefault(key, _flatten((g, trees[i], trees[j])))
    return list(found.values())


def neuron_groups(width: int) -> list[tuple[int, np.ndarray]]:
    """Every candidate location of one variable: a non-empty neuron subset of one hidden
    layer, as (layer 0 or 1, boolean mask)."""
    subsets = np.array(list(itertools.product([0, 1], repeat=width))[1:], dtype=bool)
    return [(layer, s) for layer in (0, 1) for s in subsets]


BASES, SOURCES = (np.repeat(np.arange(4), 4), np.tile(np.arange(4), 4))
"""All 16 ordered (base, source) pairs of the four inputs."""


def patched_outputs(nets: Networks, groups: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """Binarised outputs (> 0.5) of every network when a neuron group takes the values it
    has on the source input while the network runs on the base input: (N, G, 16)."""
    x = torch.tensor(INPUTS, dtype=torch.float32)
    with torch.no_grad():
        clean = forward(nets, x)  # (N, 4, width) per hidden layer
        out = []
        for layer, mask in groups:
            m = torch.tensor(mask)
            h = clean[layer][:, BASES].clone()  # (N, 16, width)
            h[..., m] = clean[layer][:, SOURCES][..., m]
            for l in range(layer + 1, 3):
                h = torch.einsum("nbi,noi->nbo", h, nets.weights[l]) + nets.biases[l][:, None]
                if l < 2:
                    h = torch.nn.functional.leaky_relu(h)
            out.append(h[..., 0] > 0.5)
    return torch.stack(out, 1).numpy()


def high_level_outputs(algorithm: Algorithm) -> np.ndarray:
    """The algorithm's output on each base with each variable set to its value on the
    source: (n_variables, 16)."""
    a, b = INPUTS[:, 0], INPUTS[:, 1]
    clean: dict[Ref, np.ndarray] = {"A": a, "B": b}
    for k, (table, left, right) in enumerate(algorithm.gates):
        clean[k] = (table >> (2 * clean[left] + clean[right])) & 1
    return np.array(
        [algorithm.run(a[BASES], b[BASES], {v: clean[v][SOURCES]}) for v in algorithm.variables]
    ).reshape(-1, 16)


def interchange_accuracy(
    patched: np.ndarray, algorithm: Algorithm, pairs: np.ndarray | None = None
) -> np.ndarray:
    """IIA of every (variable, neuron group) for one network: the share of the 16 ordered
    (base, source) pairs (or of the columns ``pairs`` of them, such as
    :data:`OFFICIAL_PAIRS`) on which the patched network agrees with the intervened
    algorithm. ``patched`` is one network's (G, 16) from :func:`patched_outputs`."""
    high = high_level_outputs(algorithm)
    if pairs is not None:
        patched, high = patched[:, pairs], high[:, pairs]
    return (patched[None] == high[:, None]).mean(-1)


def minimal_locations(
    iia: np.ndarray, groups: list[tuple[int, np.ndarray]]
) -> list[tuple[int, ...]]:
    """Every minimal location: one group per variable with IIA 1, the groups pairwise
    disjoint, and no other such location using subsets of them (the official code keeps
    the locations minimal under inclusion). Returned as tuples of group indices.

    Shrinking one variable's group keeps the groups disjoint, so a location is minimal
    exactly when each of its groups is a minimal valid group of its variable: only those
    are combined.
    """
    layer = np.array([g[0] for g in groups])
    masks = np.array([g[1] for g in groups])

    def inside(h: int, g: int) -> bool:
        return layer[h] == layer[g] and not (masks[h] & ~masks[g]).any()

    minimal = []
    for row in iia:
        valid = np.flatnonzero(row == 1.0)
        minimal.append([g for g in valid if not any(h != g and inside(h, g) for h in valid)])
    return [
        combo
        for combo in itertools.product(*minimal)
        if all(
            layer[i] != layer[j] or not (masks[i] & masks[j]).any()
            for i, j in itertools.combinations(combo, 2)
        )
    ]


# ---------------------------------------------------------------------------------
# Everything for a batch of networks
# ---------------------------------------------------------------------------------


@dataclass
class Explanations:
    """The enumeration for one network: valid circuits (indices into
    :func:`neuron_circuits`) with their interpretation counts, and, per candidate
    algorithm, its minimal locations (group indices into :func:`neuron_groups`)."""

    circuits: np.ndarray
    interpretations: np.ndarray
    locations: list[list[tuple[int, ...]]]

    @property
    def n_circuits(self) -> int:
        return len(self.circuits)

    @property
    def n_interpretations(self) -> int:
        return int(self.interpretations.sum())

    @property
    def aligned(self) -> list[int]:
        return [k for k, locs in enumerate(self.locations) if locs]

    @property
    def n_locations(self) -> int:
        return sum(len(locs) for locs in self.locations)


def explain(
    trained: Trained, algorithms: list[Algorithm], threshold: float = 0.99
) -> list[Explanations]:
    """Where-then-what and what-then-where for every converged network of ``trained``."""
    index = np.flatnonzero(trained.converged)
    if not len(index):
        return []
    width = trained.nets.width
    circuits = neuron_circuits(width)
    groups = neuron_groups(width)
    accuracy = circuit_accuracy(
        trained.nets.select(index), trained.val_x[index], trained.val_y[index], circuits
    )
    patched = patched_outputs(trained.nets.select(index), groups)
    results = []
    for k, i in enumerate(index):
        valid = np.flatnonzero(accuracy[k] > threshold)
        counts = np.array(
            [
                count_interpretations(c)
                for c in circuit_candidates(trained.nets, i, circuits[valid])
            ],
            dtype=np.int64,
        )
        locations = [
            minimal_locations(interchange_accuracy(patched[k], alg), groups) for alg in algorithms
        ]
        results.append(Explanations(valid, counts, locations))
    return results


def split_heads(trained: Trained) -> list[Trained]:
    """One single-output view of ``trained`` per output gate: the networks' :meth:`Networks.head`
    and that gate's validation targets; convergence stays that of the whole network (every
    output right). Each view is explained by :func:`explain` as a single-gate network."""
    k = trained.nets.n_outputs
    if k == 1:
        return [trained]
    return [
        Trained(
            trained.nets.head(i),
            trained.seeds,
            trained.epochs,
            trained.loss,
            trained.val_accuracy,
            trained.converged,
            trained.val_x,
            trained.val_y[..., i],
        )
        for i in range(k)
    ]


def explain_outputs(
    trained: Trained, gates: Sequence[str], depth: int, threshold: float = 0.99
) -> list[list[Explanations]]:
    """:func:`explain` for each output of networks trained on ``gates`` (one output per gate,
    in order), with that gate's candidate algorithms up to ``depth``: ``[network][gate]``,
    for the converged networks."""
    views = split_heads(trained)
    if len(views) != len(gates):
        raise ValueError(
            f"{len(gates)} gates {tuple(gates)} for networks with {len(views)} outputs"
        )
    per_gate = [
        explain(view, candidate_algorithms(g, depth), threshold) for g, view in zip(gates, views)
    ]
    return [list(network) for network in zip(*per_gate)]


def joint_circuits(per_gate: Sequence[Explanations]) -> np.ndarray:
    """The circuits of one network that replicate every output: those valid for each of its
    gates (circuit indices). An ablated neuron is ablated for all outputs, so a circuit of
    the whole network is valid exactly when it is valid for every single-output view."""
    return functools.reduce(np.intersect1d, [e.circuits for e in per_gate])


def task_name(gates: Sequence[str]) -> str:
    """A multi-gate task's name: its gates joined by " + "."""
    return " + ".join(gates)


# ---------------------------------------------------------------------------------
# The estimates the claims are decided on
# ---------------------------------------------------------------------------------


def log_slope(widths: Sequence[int], counts: Sequence[np.ndarray], seed: int = 0) -> Estimate:
    """The least-squares slope of log10(mean count) against the width, with a 95% BCa
    bootstrap interval that resamples the networks of each width independently
    (``scipy.stats.bootstrap``): b = Σ (w - w̄)(y_w - ȳ) / Σ (w - w̄)², y_w = log10 mean."""
    from scipy.stats import bootstrap

    w = np.asarray(widths, dtype=float)
    if len(w) < 2 or len(counts) != len(w):
        raise ValueError(
            f"log_slope() needs one sample of counts per width, two widths or more; got "
            f"{len(counts)} samples for widths {list(widths)}"
        )
    n = sum(map(len, counts))
    if any(len(c) < 2 for c in counts):  # too few networks at a width: no interval
        return Estimate(float("nan"), float("nan"), float("nan"), n, "too few networks", "runs")

    x = w - w.mean()

    def slope(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            y = np.log10(np.stack([np.mean(s, axis=axis) for s in samples], -1))
            zero = np.isinf(y)  # a mean of 0: the slope's limit is -inf or +inf
            b = (np.where(zero, 0, y - y.mean(-1, keepdims=True)) * x).sum(-1) / (x**2).sum()
            limit = -np.sign((zero * x).sum(-1)) * np.inf
        return np.where(zero.any(-1), limit, b)

    samples = tuple(np.asarray(c, dtype=float) for c in counts)
    value = float(slope(*samples))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa warns, then returns NaN, when it cannot
        for method in ("BCa", "percentile"):
            ci = bootstrap(
                samples,
                slope,
                vectorized=True,
                n_resamples=9999,
                method=method,
                rng=np.random.default_rng(seed),
            ).confidence_interval
            if not (np.isnan(ci.low) or np.isnan(ci.high)):
                break
    return Estimate(value, float(ci.low), float(ci.high), n, f"bootstrap ({method})", "runs")


def share_of(flags: Sequence[bool]) -> Estimate:
    """The share of networks for which ``flags`` is true, with its Wilson interval
    (:func:`iclr25.core.stats.share`); no networks give NaN, which no margin decides."""
    if not len(flags):
        return Estimate(float("nan"), float("nan"), float("nan"), 0, "no networks", "runs")
    return stats.share(int(np.sum(flags)), len(flags), unit="runs")


def least_supported(estimates: dict[str, Estimate]) -> tuple[str, Estimate]:
    """The estimate with the lowest interval bound (NaN first): a claim on "every" one
    of them holds when that one's interval clears the margin, and is contradicted when
    that one's lies below it."""
    return min(estimates.items(), key=lambda kv: (not np.isnan(kv[1].low), kv[1].low))
