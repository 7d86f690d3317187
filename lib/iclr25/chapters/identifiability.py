"""Is mechanistic interpretability identifiable? (Méloux, Portet, Maniu and Peyrard, ICLR 2025)

Tiny MLPs (2 inputs, two hidden layers of ``width`` LeakyReLU neurons, one linear output
per gate) are trained with MSE to compute one Boolean gate of two noisy inputs, or several
at once, and every candidate explanation of each network is enumerated, by the paper's two
strategies:

* **where-then-what** -- every neuron subset (a *circuit*: at least one neuron per hidden
  layer, the others zero-ablated as in the official code) whose output, rounded, has
  accuracy above 0.99 on noisy validation inputs; then, for each such circuit, every
  *interpretation*: one activation threshold per circuit neuron, turning it into a Boolean
  function of the inputs, such that each neuron's value is a function of its parents'
  values (a consistent mapping of neurons to logic gates);
* **what-then-where** -- every candidate algorithm (a tree of two-input AND/OR gates with
  negations, up to a depth, that computes the target) and every *location* of it: a
  disjoint group of neurons of one layer for each intermediate variable, such that every
  single-variable interchange intervention, over all ordered (base, source) pairs of the
  four inputs, gives the algorithm's answer (interchange intervention accuracy, IIA, 1).
  Locations are kept when minimal under inclusion, as in the official code.

A network trained on several gates is explained one output at a time, as the official code
does (``separate_into_k_mlps``): the shared hidden layers with one gate's output neuron
(:func:`split_heads`) are a single-gate network to which both strategies apply. A circuit
of the whole network must replicate every output (:func:`joint_circuits`).

Written by hand, for speed and exhaustiveness: the networks of one width are trained as one
batch of weight tensors (AdamW is elementwise, so this is the same as training them one
by one), every circuit of a network is evaluated in one batched forward pass, and every
(neuron group, base, source) interchange intervention in another. pyvene intervenes on one
model through hooks; an exhaustive search over tens of thousands of tiny interventions is
faster as tensor arithmetic. Interpretations are counted exactly without listing them: the
consistency test is a bit operation on truth tables (see :func:`separations`).

Differences from the official code (MelouxM/MI-identifiability), also listed in the
chapter: circuits are neuron subsets (the official code also enumerates edge subsets,
which :func:`edge_circuits` does for widths up to 3);
our candidate algorithms are distinct up to negated variables and swapped operands, with
negated inputs folded into the gates, and their IIA uses all 16 ordered (base, source)
pairs (:func:`official_algorithms` and :func:`official_alignment` count as the official
code does: one candidate per AND/OR tree, negated inputs located as variables of their own,
six pairs); and an interpretation is one threshold per neuron (the official count also
multiplies by every filling of parent patterns that never occur).
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING

import numpy as np
import torch

from iclr25 import core
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param, stats

if TYPE_CHECKING:
    import plotly.graph_objects as go

# ---------------------------------------------------------------------------------
# Boolean functions of two inputs as 4-bit truth tables
# ---------------------------------------------------------------------------------

INPUTS = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
"""The four inputs (a, b); input i = 2a + b. A truth table is the integer whose bit i is
the function's value on input i."""

TRUTH_TABLES = {
    "FALSE": 0,
    "NOR": 1,
    "¬A∧B": 2,
    "¬A": 3,
    "A∧¬B": 4,
    "¬B": 5,
    "XOR": 6,
    "NAND": 7,
    "AND": 8,
    "XNOR": 9,
    "B": 10,
    "A→B": 11,
    "A": 12,
    "B→A": 13,
    "OR": 14,
    "TRUE": 15,
}
NAMES = {t: name for name, t in TRUTH_TABLES.items()}
GATES = {"XOR": 6, "AND": 8, "OR": 14, "IMP": 11, "NAND": 7, "NOR": 1}
"""The target gates of the chapter (IMP is A -> B)."""
AND_LIKE = (8, 4, 2, 1, 14, 13, 11, 7)
"""AND and OR with any of their inputs or output negated: the gates of candidate algorithms."""
INPUT_A, INPUT_B = TRUTH_TABLES["A"], TRUTH_TABLES["B"]
PAIRS = list(itertools.combinations(range(4), 2))


def bits(tt: int | np.ndarray) -> np.ndarray:
    """The values of truth table(s) ``tt`` on the four inputs, shape (..., 4)."""
    return (np.asarray(tt)[..., None] >> np.arange(4)) & 1


def separations(tt: int | np.ndarray) -> np.ndarray:
    """The 6-bit set of input pairs (i, j) on which truth table ``tt`` differs.

    A neuron's value is a function of its parents' values exactly when every pair of
    inputs it separates is separated by some parent:
    ``separations(node) & ~(separations(p1) | separations(p2) | ...) == 0``.
    """
    b = bits(tt)
    return sum((b[..., i] != b[..., j]).astype(np.int64) << k for k, (i, j) in enumerate(PAIRS))


SEPARATIONS = separations(np.arange(16))


# ---------------------------------------------------------------------------------
# Task data and training of a batch of MLPs
# ---------------------------------------------------------------------------------


def parse_gates(spec: str) -> tuple[str, ...]:
    """The gates of a task: one gate name, or several separated by commas ("XOR,AND"), each
    at most once; a network trained on it has one output per gate, in this order."""
    gates = tuple(g.strip() for g in spec.split(",")) if isinstance(spec, str) else ()
    unknown = [g for g in gates if g not in GATES]
    if not gates or unknown or len(set(gates)) < len(gates):
        why = f"unknown gate {unknown[0]!r}" if unknown else "a gate repeated or none given"
        raise ValueError(
            f"{why} in gates {spec!r}; accepted: one or more distinct of "
            f"{', '.join(GATES)}, separated by commas"
        )
    return gates


def parse_multi_gates(spec: str) -> tuple[str, ...]:
    """:func:`parse_gates` for the multi-gate experiment, which needs at least two gates."""
    gates = parse_gates(spec)
    if len(gates) < 2:
        raise ValueError(
            f"{spec!r} names one gate; accepted: at least two distinct of "
            f"{', '.join(GATES)}, separated by commas"
        )
    return gates


def boolean_data(
    gate: str,
    n: int,
    noise_std: float,
    rng: np.random.Generator,
    weights: Sequence[float] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` inputs drawn from the four corners (uniformly, or with probabilities
    proportional to ``weights``), plus Gaussian noise of std ``noise_std``; targets are the
    gate(s) on the clean corners (``gate`` as :func:`parse_gates` reads it). Returns float
    tensors x (n, 2) and y (n,) for one gate, (n, k) for k gates."""
    tables = [GATES[g] for g in parse_gates(gate)]
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    corner = rng.choice(4, size=n, p=p)
    x = INPUTS[corner] + rng.normal(0.0, noise_std, size=(n, 2))
    y = bits(np.array(tables)).T[corner]  # (n, k)
    y = y[:, 0] if len(tables) == 1 else y
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y, dtype=torch.float32)


@dataclass
class Networks:
    """A batch of N MLPs 2 -> width -> width -> k (LeakyReLU hidden, linear outputs, one
    per gate).

    ``weights[l]`` has shape (N, out, in) and ``biases[l]`` (N, out), as ``nn.Linear``.
    """

    weights: list[torch.Tensor]
    biases: list[torch.Tensor]

    @property
    def width(self) -> int:
        return self.weights[0].shape[1]

    @property
    def n_outputs(self) -> int:
        return self.weights[2].shape[1]

    def __len__(self) -> int:
        return self.weights[0].shape[0]

    def head(self, output: int) -> Networks:
        """The single-output networks of output ``output``: the shared hidden layers and
        that output neuron (the official code's ``separate_into_k_mlps``)."""
        if not 0 <= output < self.n_outputs:
            raise ValueError(
                f"output {output!r} out of range; these networks have outputs "
                f"0 to {self.n_outputs - 1}"
            )
        keep = slice(output, output + 1)
        return Networks(
            [*self.weights[:2], self.weights[2][:, keep]],
            [*self.biases[:2], self.biases[2][:, keep]],
        )

    def select(self, index: Sequence[int] | np.ndarray) -> Networks:
        index = torch.as_tensor(np.asarray(index, dtype=np.int64))
        return Networks([w[index] for w in self.weights], [b[index] for b in self.biases])

    def as_state(self) -> dict[str, torch.Tensor]:
        """Plain tensors, for :func:`iclr25.core.cached`."""
        return {
            f"{kind}{l}": t
            for kind, ts in (("w", self.weights), ("b", self.biases))
            for l, t in enumerate(ts)
        }

    @classmethod
    def from_state(cls, state: dict[str, torch.Tensor]) -> Networks:
        return cls([state[f"w{l}"] for l in range(3)], [state[f"b{l}"] for l in range(3)])


def init_networks(width: int, seeds: Sequence[int], n_outputs: int = 1) -> Networks:
    """``nn.Linear``'s default initialisation, U(-1/sqrt(in), 1/sqrt(in)), one seed per network."""
    sizes = [2, width, width, n_outputs]
    weights, biases = [[] for _ in sizes[1:]], [[] for _ in sizes[1:]]
    for seed in seeds:
        g = torch.Generator().manual_seed(int(seed))
        for l, (n_in, n_out) in enumerate(zip(sizes, sizes[1:])):
            bound = n_in**-0.5
            weights[l].append((torch.rand(n_out, n_in, generator=g) * 2 - 1) * bound)
            biases[l].append((torch.rand(n_out, generator=g) * 2 - 1) * bound)
    return Networks([torch.stack(w) for w in weights], [torch.stack(b) for b in biases])


def forward(
    nets: Networks, x: torch.Tensor, masks: Sequence[torch.Tensor] | None = None
) -> list[torch.Tensor]:
    """Activations of every layer: [hidden 1, hidden 2, output].

    ``x`` is (N, ..., n, 2), or (n, 2) shared by all networks. ``masks`` (optional) are
    two (..., width) 0/1 tensors broadcast against the hidden activations
    (N, ..., n, width) after the LeakyReLU: a 0 zero-ablates that neuron. The output is
    (N, ..., n) for single-output networks, (N, ..., n, k) for k outputs.
    """
    h = x.expand(len(nets), *x.shape) if x.dim() == 2 else x
    acts = []
    for l, (w, b) in enumerate(zip(nets.weights, nets.biases)):
        extra = h.dim() - 3  # circuit dimensions between the network and sample axes
        w_ = w.reshape(w.shape[0], *([1] * extra), *w.shape[1:])
        b_ = b.reshape(b.shape[0], *([1] * extra), 1, b.shape[1])
        h = torch.einsum("...ni,...oi->...no", h, w_) + b_
        if l < 2:
            h = torch.nn.functional.leaky_relu(h)
            if masks is not None:
                h = h * masks[l].unsqueeze(-2)
        acts.append(h)
    acts[-1] = acts[-1].squeeze(-1)
    return acts


@dataclass
class TrainConfig:
    """How a batch of networks is trained. The defaults follow the official code where it
    has one: MSE, AdamW (lr 1e-3, weight decay 0.01), batch 100, input noise 0.1, stop
    when an epoch's mean loss falls below ``loss_target`` 0.01. (The official code also
    gives up after 1,000 epochs or 3 epochs without improvement, ``early_stopping_steps``;
    here after ``max_epochs``, without patience.) ``gate`` may
    name several gates ("XOR,AND", see :func:`parse_gates`): one output each, the MSE
    averaged over all outputs, and a sample is right when every output is."""

    gate: str = "XOR"
    width: int = 3
    n_train: int = 2000
    n_val: int = 400
    noise_std: float = 0.1
    skewed: bool = False
    lr: float = 1e-3
    batch_size: int = 100
    max_epochs: int = 300
    loss_target: float = 0.01


@dataclass
class Trained:
    """Trained networks and, per network: epochs run, final epoch loss, noisy-validation
    accuracy, and whether it converged (loss below the target and accuracy >= 0.99)."""

    nets: Networks
    seeds: np.ndarray
    epochs: np.ndarray
    loss: np.ndarray
    val_accuracy: np.ndarray
    converged: np.ndarray
    val_x: torch.Tensor
    val_y: torch.Tensor


def train_cached(
    config: TrainConfig, seeds: Sequence[int], device: torch.device | str = "cpu"
) -> Trained:
    """:func:`train_networks`, kept in the book's cache (keyed by the config and seeds)."""

    def build() -> dict[str, torch.Tensor]:
        t = train_networks(config, seeds, device)
        return {
            **t.nets.as_state(),
            **{
                f.name: torch.as_tensor(getattr(t, f.name))
                for f in fields(Trained)
                if f.name != "nets"
            },
        }

    state = core.cached(
        "identifiability-nets", {**asdict(config), "seeds": [int(s) for s in seeds]}, build
    )
    return Trained(
        Networks.from_state(state),
        *(
            state[f.name] if f.name.startswith("val_") else state[f.name].numpy()
            for f in fields(Trained)
            if f.name != "nets"
        ),
    )


def _task(config: TrainConfig, seed: int) -> tuple[torch.Tensor, ...]:
    rng = np.random.default_rng([seed, 1])
    weights = rng.random(4) if config.skewed else None  # the official skewed distribution
    x, y = boolean_data(config.gate, config.n_train, config.noise_std, rng, weights)
    vx, vy = boolean_data(config.gate, config.n_val, config.noise_std, rng, weights)
    return x, y, vx, vy


def train_networks(
    config: TrainConfig, seeds: Sequence[int], device: torch.device | str = "cpu"
) -> Trained:
    """Train one network per seed (its own data, initialisation and batch order), all at once.

    Each network's loss is its own minibatch MSE (over all its outputs), so the summed loss
    gives each network its own gradient, and AdamW updates every weight independently. A
    network is frozen at the end of the first epoch whose mean loss is below
    ``loss_target`` (a snapshot of its weights is kept), as the official early stopping does.
    """
    seeds = np.asarray(seeds)
    data = [_task(config, int(s)) for s in seeds]
    x = torch.stack([d[0] for d in data]).to(device)
    y = torch.stack([d[1] for d in data]).to(device)
    n_outputs = len(parse_gates(config.gate))
    nets = init_networks(config.width, seeds, n_outputs)
    params = [t.to(device).requires_grad_() for t in nets.weights + nets.biases]
    live = Networks(params[:3], params[3:])
    optimiser = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.01)
    final = [p.detach().clone() for p in params]
    n, done = len(seeds), torch.zeros(len(seeds), dtype=torch.bool, device=device)
    epochs, last_loss = np.full(n, config.max_epochs), np.full(n, np.inf)
    shufflers = [torch.Generator().manual_seed(int(s) + 1) for s in seeds]  # batch order per seed
    steps = config.n_train // config.batch_size
    rows = torch.arange(n, device=device)[:, None]
    for epoch in range(config.max_epochs):
        order = torch.stack([torch.randperm(config.n_train, generator=g) for g in shufflers]).to(
            device
        )
        epoch_loss = torch.zeros(n, device=device)
        for k in range(steps):
            idx = order[:, k * config.batch_size : (k + 1) * config.batch_size]
            xb, yb = x[rows, idx], y[rows, idx]
            losses = ((forward(live, xb)[-1] - yb) ** 2).flatten(1).mean(1)
            optimiser.zero_grad()
            losses.sum().backward()
            optimiser.step()
            epoch_loss += losses.detach()
        epoch_loss /= steps
        newly = (epoch_loss < config.loss_target) & ~done
        for p, f in zip(params, final):
            f[newly] = p.detach()[newly]
        last_loss[newly.cpu().numpy()] = epoch_loss[newly].cpu().numpy()
        epochs[newly.cpu().numpy()] = epoch + 1
        done |= newly
        if bool(done.all()):
            break
    unfinished = ~done
    for p, f in zip(params, final):
        f[unfinished] = p.detach()[unfinished]
    last_loss[unfinished.cpu().numpy()] = epoch_loss[unfinished].cpu().numpy()
    trained = Networks([f.cpu() for f in final[:3]], [f.cpu() for f in final[3:]])
    vx = torch.stack([d[2] for d in data])
    vy = torch.stack([d[3] for d in data])
    with torch.no_grad():
        right = forward(trained, vx)[-1].round() == vy
        right = right.all(-1) if n_outputs > 1 else right  # every output right
        val_acc = right.float().mean(1).numpy()
    converged = (last_loss < config.loss_target) & (val_acc >= 0.99)
    return Trained(trained, seeds, epochs, last_loss, val_acc, converged, vx, vy)


# ---------------------------------------------------------------------------------
# Where-then-what: circuits, then their interpretations
# ---------------------------------------------------------------------------------


def neuron_circuits(width: int) -> np.ndarray:
    """Every circuit of the network as neuron masks, shape (C, 2, width): each hidden layer
    keeps a non-empty subset of its neurons. C = (2^width - 1)^2; the full network last."""
    subsets = np.array(list(itertools.product([0, 1], repeat=width))[1:], dtype=bool)
    pairs = itertools.product(range(len(subsets)), repeat=2)
    return np.array([[subsets[i], subsets[j]] for i, j in pairs])


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


def edge_covers(n_in: int, n_out: int) -> np.ndarray:
    """Every edge subset between ``n_in`` and ``n_out`` kept neurons that leaves none of
    them cut off (each row and column non-empty), as (K, n_out, n_in) 0/1 masks."""
    all_masks = np.array(list(itertools.product([0, 1], repeat=n_in * n_out)), dtype=bool).reshape(
        -1, n_out, n_in
    )
    return all_masks[all_masks.any(2).all(1) & all_masks.any(1).all(1)]


def edge_circuits(width: int) -> list[np.ndarray]:
    """The official code's circuits: a neuron subset of each hidden layer and an edge
    subset between kept neurons that cuts none of them off. Returned as the three layers'
    edge masks, shapes (K, width, 2), (K, width, width) and (K, 1, width) (a neuron is
    kept when it has edges). Only for width <= 3: there are 9,625 at width 3 and about
    10^10 at width 5."""
    if not 1 <= width <= 3:
        raise ValueError(f"edge circuits are enumerated for widths 1 to 3 only, got {width!r}")
    masks: list[list[np.ndarray]] = [[], [], []]
    subsets = [np.flatnonzero(s) for s in itertools.product([0, 1], repeat=width) if any(s)]
    for first, second in itertools.product(subsets, repeat=2):
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


def neuron_groups(width: int) -> list[tuple[int, np.ndarray]]:
    """Every candidate location of one variable: a non-empty neuron subset of one hidden
    layer, as (layer 0 or 1, boolean mask)."""
    subsets = np.array(list(itertools.product([0, 1], repeat=width))[1:], dtype=bool)
    return [(layer, s) for layer in (0, 1) for s in subsets]


BASES, SOURCES = (np.repeat(np.arange(4), 4), np.tile(np.arange(4), 4))
"""All 16 ordered (base, source) pairs of the four inputs."""
OFFICIAL_PAIRS = np.array([4 * base + source for source, base in PAIRS])
"""The official code's six (base, source) pairs, as columns of the 16: one order of each
pair of distinct inputs, the source before the base in input order (so the input (1, 1) is
never a source and (0, 0) never a base)."""


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
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "gate": Param("XOR", "the Boolean function of the main experiment", choices=tuple(GATES)),
    "width": Param(
        3, "neurons per hidden layer (two hidden layers) in the main experiment", low=2, high=5
    ),
    "seeds": Param(
        100, "networks trained for the main experiment (one seed each)", low=1, high=1000
    ),
    "sweep_seeds": Param(20, "networks per width in the width sweep", low=1, high=500),
    "max_width": Param(5, "the width sweep runs over 2..max_width", low=2, high=5),
    "variant_seeds": Param(30, "networks per training variant and per other gate", low=1, high=500),
    "multi_gates": Param(
        "XOR,AND,OR",
        "gates of the multi-gate experiment, comma-separated (at "
        "least two of " + ", ".join(GATES) + "); networks learn the first 1, 2, ... "
        "of them at once",
        parser=parse_multi_gates,
    ),
    "multi_seeds": Param(30, "networks per task in the multi-gate experiment", low=1, high=500),
    "n_train": Param(1000, "noisy training samples per network", low=100, high=100000),
    "n_val": Param(
        400, "noisy validation samples (convergence and circuit accuracy)", low=20, high=100000
    ),
    "noise_std": Param(0.1, "std of the Gaussian noise on the inputs", low=0.0, high=0.4),
    "lr": Param(
        0.01,
        "AdamW learning rate of every experiment but the learning-rate variant (the "
        "official default is 0.001)",
        low=1e-5,
        high=1.0,
    ),
    "batch_size": Param(100, "minibatch size", low=1, high=10000),
    "max_epochs": Param(
        200,
        "epochs after which a network that has not reached the loss target is dropped",
        low=1,
        high=10000,
    ),
    "loss_target": Param(
        0.01, "training stops once an epoch's mean MSE is below this", low=1e-5, high=0.25
    ),
    "algo_depth": Param(3, "largest depth of the candidate algorithms (gate trees)", low=1, high=3),
    "seed": Param(0, "first seed; networks use seed, seed + 1, ...", low=0),
    "device": Param("auto", "compute device for training", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "seeds": 8,
    "sweep_seeds": 4,
    "max_width": 3,
    "variant_seeds": 4,
    "multi_seeds": 4,
    "max_epochs": 100,
    "n_val": 100,
    "algo_depth": 2,
}

MOST_NETWORKS = Margin(above=0.5, why="the paper's 'in most networks': more than half")
"""The rule of the share claims: the share's 95% interval over the networks above 1/2."""

CLAIMS: dict[str, ClaimSpec] = {
    # share of the networks that learned the task showing each kind of non-uniqueness,
    # with its Wilson interval over the networks: "in most networks" is more than half
    "circuits_not_unique": ClaimSpec(
        "More than one circuit replicates the network's behaviour, in most networks",
        paper="multiple circuits with perfect accuracy in most of 100 XOR networks (MLP 2-3-3-1)",
        rule=MOST_NETWORKS,
        control="a fixed threshold, half the networks (no control run)",
    ),
    "interpretations_not_unique": ClaimSpec(
        "A valid circuit admits more than one interpretation as logic gates, in most networks",
        paper="multiple consistent interpretations per circuit",
        rule=MOST_NETWORKS,
        control="a fixed threshold, half the networks (no control run)",
    ),
    "locations_not_unique": ClaimSpec(
        "An aligned algorithm has more than one minimal location, in most networks",
        paper="one algorithm aligned with several neuron subsets",
        rule=MOST_NETWORKS,
        control="a fixed threshold, half the networks (no control run)",
        gap=Gap(
            "Our interchange test is stricter than the official one, and width 3 leaves "
            "little room: the IIA must be 1 on all 16 ordered (base, source) pairs, where "
            "the official code uses one order of each pair. A 3-neuron layer rarely holds "
            "a variable of the commonest aligned algorithms (two intermediate variables) "
            "in two disjoint minimal ways that pass both orders of every pair, so about "
            "half of the XOR networks of width 3 have an algorithm with two minimal "
            "locations. One order of each pair (base before source), or wider layers "
            "(-p width=4 or 5, with room for redundant copies of a variable) would show "
            "it: in an exploratory run with the book's seeds, 88% of the width-3 networks "
            "with one order per pair, and 94% and 100% of the sweep's networks of width 4 "
            "and 5 with all 16 pairs."
        ),
    ),
    # ... more than one aligned candidate, counted under the official conventions
    # (official_algorithms, IIA on the official six pairs)
    "algorithms_not_unique": ClaimSpec(
        "More than one candidate algorithm aligns with the network (IIA 1), in most networks",
        paper="several algorithms perfectly aligned; in Fig. 2 both depth-2 XOR algorithms align",
        rule=MOST_NETWORKS,
        control="a fixed threshold, half the networks (no control run)",
        gap=Gap(
            "Under the official conventions the candidates are AND/OR "
            "trees over the inputs and their negations, and XOR's two depth-2 candidates are "
            "one algorithm up to negation: a "
            "network aligns with both or with neither. So the official count is at least two "
            "for every network that aligns at all, and the share tests something else: how "
            "often training lands on the OR/AND mechanism rather than (A and not B) or (not A "
            "and B), which is not an official candidate at depth 2 and at depth 3 needs a "
            "negated input located in the hidden layer. That split is set by initialisation "
            "and the data (our input noise 0.1, width 3), not by identifiability, and a bound "
            "of one half sits on it. What would show the paper's figure: its candidate lists "
            "over the repository's noise-free basic setup and more networks, or a claim on the "
            "networks that align at all (non-unique by the official enumeration).",
            after_run=True,
        ),
    ),
    # rise of the mean count from each width to the next (2 .. max_width): all above 0
    "grows_with_width": ClaimSpec(
        "The numbers of circuits, interpretations and locations grow with the width (the "
        "mean rises at every step)",
        paper="exponential growth with hidden width 2 to 5 (log-scale figure)",
        rule={
            "circuits": Bound(gt=0),
            "interpretations": Bound(gt=0),
            "locations": Bound(gt=0),
        },
        control="the mean count at the next smaller width (no control run)",
    ),
    # share of the networks with more than one valid circuit, per training variant
    "persists_across_variants": ClaimSpec(
        "More than one valid circuit in most networks, under every training variant and gate",
        paper="non-identifiability persists under noise, skew, stopping loss and other gates",
        rule=Bound(gt=0.5),
        control="a fixed threshold, half the networks of each variant (no control run)",
    ),
    # share of the networks of each task of two or more gates with more than one circuit
    # replicating every output
    "several_gates_not_unique": ClaimSpec(
        "Trained on several gates at once, a network still has more than one circuit that "
        "replicates every output, in most networks",
        paper="non-identifiability persists for networks computing several gates at once "
        "(official code, --n-gates; counted per gate)",
        rule=Bound(gt=0.5),
        control="a fixed threshold, half the networks of each task (no control run)",
    ),
}
"""Claim id -> what the claim says, what decides it (fixed before the run) and what it is
measured against; a gap declared after the run that missed it says so."""


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def count_histograms(panels: dict[str, np.ndarray], log: Sequence[str] = ()) -> go.Figure:
    """How often each count occurs, one panel per entry of ``panels`` (title -> counts), two
    by two: bars per count, or a histogram of log10 counts for the titles in ``log``."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(rows=2, cols=2, vertical_spacing=0.18, subplot_titles=list(panels))
    for k, (title, values) in enumerate(panels.items()):
        where = dict(row=k // 2 + 1, col=k % 2 + 1)
        style = dict(marker_color=qualitative.Plotly[k], showlegend=False)
        if title in log:
            fig.add_histogram(x=np.log10(values), nbinsx=20, **style, **where)
        else:
            counts, n = np.unique(values, return_counts=True)
            fig.add_bar(x=counts, y=n, **style, **where)
    fig.update_yaxes(title_text="count")
    return fig.update_layout(height=560)


def conventions_figure(counts: dict[str, np.ndarray], title: str) -> go.Figure:
    """How many networks have each number of aligned algorithms, one group of bars per
    counting convention (``counts``: convention -> aligned algorithms per network)."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    for (name, values), color in zip(counts.items(), qualitative.Plotly):
        value, n = np.unique(values, return_counts=True)
        fig.add_bar(
            x=value,
            y=n,
            name=name,
            marker_color=color,
            hovertemplate=f"{name}: %{{y}} networks with %{{x}} aligned<extra></extra>",
        )
    fig.add_vline(x=1.5, line_dash="dot", line_color="gray")
    fig.update_xaxes(title_text="aligned algorithms per network (IIA 1)")
    fig.update_yaxes(title_text="networks")
    return fig.update_layout(barmode="group", height=380, title=title)


def draw_network(
    fig: go.Figure,
    nets: Networks,
    index: int,
    row: int,
    col: int,
    active: np.ndarray | None = None,
    labels: dict | None = None,
    colors: dict | None = None,
    title: str = "",
    hovers: dict | None = None,
) -> None:
    """Draw network ``index`` in one panel of ``fig``: ``active`` (2, width) marks the
    neurons shown as part of the circuit (the others grey), ``labels``/``colors``/``hovers``
    map (layer, neuron) to text, colour and hover text, edge colour is the weight's sign
    (blue positive, red negative), and ``title`` is written above (as a trace, so that a
    static slider can change it)."""
    sizes = [2, nets.width, nets.width, 1]
    top = (nets.width - 1) / 2
    y = {(l, j): (n - 1) / 2 - j for l, n in enumerate(sizes) for j in range(n)}
    on = {(l, j): l in (0, 3) or active is None or bool(active[l - 1][j]) for (l, j) in y}
    segments = {"positive": ([], []), "negative": ([], []), "ablated": ([], [])}
    for l in range(3):
        w = nets.weights[l][index]
        for i, j in np.ndindex(sizes[l], sizes[l + 1]):
            kept = on[l, i] and on[l + 1, j]
            kind = ("negative" if w[j, i] < 0 else "positive") if kept else "ablated"
            segments[kind][0].extend([l, l + 1, None])
            segments[kind][1].extend([y[l, i], y[l + 1, j], None])
    style = {
        "positive": dict(color="#0969da", width=2),
        "negative": dict(color="#cf222e", width=2),
        "ablated": dict(color="#d0d7de", width=1, dash="dot"),
    }
    for kind, (xs, ys) in segments.items():
        fig.add_scatter(
            x=xs,
            y=ys,
            mode="lines",
            line=style[kind],
            hoverinfo="skip",
            showlegend=False,
            row=row,
            col=col,
        )
    labels, colors, hovers = labels or {}, colors or {}, hovers or {}
    nodes = list(y)
    fig.add_scatter(
        x=[l for l, _ in nodes],
        y=[y[n] for n in nodes],
        mode="markers+text",
        text=[labels.get(n, "") for n in nodes],
        textposition="top center",
        marker=dict(
            size=22,
            line=dict(color="black", width=1),
            color=[colors.get(n, "#8c959f" if not on[n] else "#ffffff") for n in nodes],
        ),
        hovertext=[hovers.get((l, j), f"layer {l}, neuron {j}") for l, j in nodes],
        hoverinfo="text",
        showlegend=False,
        row=row,
        col=col,
    )
    fig.add_scatter(
        x=[1.5],
        y=[top + 0.75],
        mode="text",
        text=[title],
        textfont_size=10,
        hoverinfo="skip",
        showlegend=False,
        row=row,
        col=col,
    )
    fig.update_xaxes(range=[-0.3, 3.3], row=row, col=col)
    fig.update_yaxes(range=[-top - 0.4, top + 0.95], row=row, col=col)


def circuit_labels(
    nets: Networks, index: int, circuit: np.ndarray, gate: str
) -> dict[tuple[int, int], str]:
    """Gate names of one interpretation (the first found) of ``circuit`` of network
    ``index``, by (layer, neuron); only the inputs and output if it has none."""
    found = first_interpretation(circuit_candidates(nets, index, circuit[None])[0])
    labels = {(0, 0): "A", (0, 1): "B", (3, 0): gate}
    if found is not None:
        for layer in (0, 1):
            for j, t in zip(np.flatnonzero(circuit[layer]), found[layer]):
                labels[layer + 1, j] = NAMES[t]
    return labels


def location_labels(
    algorithm: Algorithm, location: tuple[int, ...], groups: list[tuple[int, np.ndarray]], gate: str
) -> tuple[dict, dict, dict]:
    """Labels, colours and hover texts, by (layer, neuron), of the neurons that hold each
    intermediate variable v1, v2, ... of ``algorithm`` at ``location`` (group indices)."""
    from plotly.colors import qualitative

    palette = qualitative.Set2
    labels, colors, hovers = {(0, 0): "A", (0, 1): "B", (3, 0): gate}, {}, {}
    for v, g in enumerate(location):
        layer, mask = groups[g]
        for j in np.flatnonzero(mask):
            labels[layer + 1, j] = f"v{v + 1}"
            colors[layer + 1, j] = palette[v % len(palette)]
            hovers[layer + 1, j] = f"v{v + 1} = {algorithm.describe(v)}"
    return labels, colors, hovers


def explanations_figure(
    nets: Networks,
    index: int,
    explained: Explanations,
    algorithms: list[Algorithm],
    gate: str,
    name: str,
) -> go.Figure:
    """One network's explanations: up to three valid circuits, the sparsest first, each
    labelled with one interpretation (top row), and up to three aligned algorithms at their
    first minimal location (bottom row)."""
    from plotly.subplots import make_subplots

    e, width = explained, nets.width
    circuits, groups = neuron_circuits(width), neuron_groups(width)
    fig = make_subplots(rows=2, cols=3, vertical_spacing=0.06, horizontal_spacing=0.03)
    for col, c in enumerate(sorted(e.circuits, key=lambda c: circuits[c].sum())[:3], start=1):
        count = e.interpretations[list(e.circuits).index(c)]
        draw_network(
            fig,
            nets,
            index,
            1,
            col,
            circuits[c],
            circuit_labels(nets, index, circuits[c], gate),
            title=f"circuit of {circuits[c].sum()} neurons, {count} interpretations",
        )
    for col, a in enumerate(e.aligned[:3], start=1):
        labels, colors, hovers = location_labels(algorithms[a], e.locations[a][0], groups, gate)
        draw_network(
            fig,
            nets,
            index,
            2,
            col,
            None,
            labels,
            colors,
            title=algorithms[a].describe(),
            hovers=hovers,
        )
    fig.update_xaxes(visible=False).update_yaxes(visible=False)
    return fig.update_layout(
        height=620,
        title=f"{name}: {len(e.circuits)} valid circuits, "
        f"{e.n_interpretations} interpretations, "
        f"{len(e.aligned)} aligned algorithms, "
        f"{e.n_locations} minimal locations",
    )


def growth_figure(
    widths: Sequence[int], growth: dict[str, list[np.ndarray]], title: str
) -> go.Figure:
    """Mean count per network against the width, one line per measure (``growth``: name ->
    one array of per-network counts per width), with 95% bootstrap intervals, on a log
    scale."""
    import plotly.graph_objects as go
    from plotly.colors import qualitative

    fig = go.Figure()
    for (name, values), color in zip(growth.items(), qualitative.Plotly):
        means = [stats.mean(v) if len(v) else None for v in values]
        fig.add_scatter(
            x=list(widths),
            y=[m.value if m else np.nan for m in means],
            error_y=stats.error_bars([m for m in means if m]) if all(means) else None,
            name=name,
            mode="lines+markers",
            line_color=color,
            customdata=[len(v) for v in values],
            hovertemplate="width %{x}: mean %{y:.3g} over %{customdata} networks<extra></extra>",
        )
    fig.update_yaxes(type="log", title_text="mean per network (log scale)")
    fig.update_xaxes(title_text="neurons per hidden layer", dtick=1)
    return fig.update_layout(height=420, title=title)


def multi_gate_figure(
    joint: dict[tuple[str, ...], np.ndarray],
    per_gate: dict[tuple[str, ...], np.ndarray],
    title: str,
) -> go.Figure:
    """Networks trained on several gates, by task (its gates): the circuits replicating
    every output per network (``joint``, boxes) and the mean valid circuits of each output
    gate (``per_gate``: (networks, gates) counts, bars with 95% bootstrap intervals)."""
    from plotly.colors import qualitative
    from plotly.subplots import make_subplots

    fig = make_subplots(
        rows=1,
        cols=2,
        horizontal_spacing=0.1,
        subplot_titles=[
            "circuits replicating every output, per network",
            "valid circuits per gate (official count)",
        ],
    )
    for gates, counts in joint.items():
        fig.add_box(
            y=counts,
            name=task_name(gates),
            boxpoints="all",
            jitter=0.4,
            pointpos=0,
            marker_color=qualitative.Plotly[len(gates) - 1],
            showlegend=False,
            row=1,
            col=1,
            hovertemplate=f"{task_name(gates)}: %{{y}} circuits<extra></extra>",
        )
    for gates, counts in per_gate.items():
        means = [stats.mean(column) for column in counts.T]
        fig.add_bar(
            x=list(gates),
            y=[m.value for m in means],
            error_y=stats.error_bars(means),
            name=task_name(gates),
            marker_color=qualitative.Plotly[len(gates) - 1],
            legendgroup=task_name(gates),
            customdata=[len(counts)] * len(gates),
            row=1,
            col=2,
            hovertemplate="%{x}: mean %{y:.3g} over %{customdata} networks<extra>"
            + task_name(gates)
            + "</extra>",
        )
    fig.update_yaxes(title_text="valid circuits", rangemode="tozero", row=1, col=1)
    fig.update_yaxes(title_text="mean valid circuits", row=1, col=2)
    fig.update_xaxes(title_text="output gate", row=1, col=2)
    return fig.update_layout(
        barmode="group", height=430, legend_title_text="trained on", title=title
    )
