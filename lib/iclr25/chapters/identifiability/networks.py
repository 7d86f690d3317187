"""The task and the networks under study: Boolean functions of two inputs as 4-bit truth
tables, the noisy data of a gate (or of several), and batches of MLPs trained at once
(the package docstring gives the paper and its two strategies)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, fields

import numpy as np
import torch

from iclr25 import core

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
    repeats: int = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` corners drawn from the four inputs (uniformly, or with probabilities
    proportional to ``weights``), each repeated ``repeats`` times, plus Gaussian noise of
    std ``noise_std`` on every copy (the official ``get_inputs`` and
    ``add_noise_and_repeat``); targets are the gate(s) on the clean corners (``gate`` as
    :func:`parse_gates` reads it). Returns float tensors x (n * repeats, 2) and y
    (n * repeats,) for one gate, (n * repeats, k) for k gates."""
    tables = [GATES[g] for g in parse_gates(gate)]
    p = None if weights is None else np.asarray(weights, float) / np.sum(weights)
    corner = np.repeat(rng.choice(4, size=n, p=p), repeats)
    x = INPUTS[corner] + rng.normal(0.0, noise_std, size=(len(corner), 2))
    y = bits(np.array(tables)).T[corner]  # (n * repeats, k)
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
    """How a batch of networks is trained. The defaults are the official code's basic
    setup (``main.py --noise-std 0.0``): MSE, AdamW (lr 1e-3, weight decay 0.01), batch
    100, 1,000 × 4 clean corners to train on and 50 × 4 to validate on, stopping when an
    epoch's mean loss falls below ``loss_target`` 0.01, after ``patience`` 3 epochs
    without improvement of it (``early_stopping_steps``) or after ``max_epochs`` 1,000.
    ``gate`` may name several gates ("XOR,AND", see :func:`parse_gates`): one output
    each, the MSE averaged over all outputs, and a sample is right when every output is.

    With ``noise_std`` > 0 the data are the official noisy setting
    (``add_noise_and_repeat``): an epoch shows each drawn training corner ``repeats``
    times, each time with fresh Gaussian noise, and the validation set repeats each
    drawn corner ``val_repeats`` times with noise of its own."""

    gate: str = "XOR"
    width: int = 3
    n_train: int = 4000
    n_val: int = 200
    noise_std: float = 0.0
    repeats: int = 1000
    val_repeats: int = 50
    skewed: bool = False
    lr: float = 1e-3
    batch_size: int = 100
    max_epochs: int = 1000
    loss_target: float = 0.01
    patience: int = 3


@dataclass
class Trained:
    """Trained networks and, per network: epochs run, final epoch loss, validation
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
    """The clean training corners (:func:`train_networks` adds fresh noise at every
    pass) and the validation set, noisy and repeated when ``noise_std`` > 0."""
    rng = np.random.default_rng([seed, 1])
    weights = rng.random(4) if config.skewed else None  # the official skewed distribution
    x, y = boolean_data(config.gate, config.n_train, 0.0, rng, weights)
    repeats = config.val_repeats if config.noise_std > 0 else 1
    vx, vy = boolean_data(config.gate, config.n_val, config.noise_std, rng, weights, repeats)
    return x, y, vx, vy


def train_networks(
    config: TrainConfig, seeds: Sequence[int], device: torch.device | str = "cpu"
) -> Trained:
    """Train one network per seed (its own data, initialisation and batch order), all at once.

    Each network's loss is its own minibatch MSE (over all its outputs), so the summed loss
    gives each network its own gradient, and AdamW updates every weight independently. A
    network is frozen (a snapshot of its weights kept) at the end of the first epoch whose
    mean loss is below ``loss_target``, or that ends ``patience`` epochs without a new
    lowest mean loss, as the official early stopping does.
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
    best = torch.full((n,), float("inf"), device=device)
    bad = torch.zeros(n, dtype=torch.long, device=device)
    shufflers = [torch.Generator().manual_seed(int(s) + 1) for s in seeds]  # batch order per seed
    noise = torch.Generator().manual_seed(int(seeds[0]) * 1_000_003 + n)  # fresh input noise
    passes = config.repeats if config.noise_std > 0 else 1  # passes over the corners an epoch
    steps = config.n_train // config.batch_size
    rows = torch.arange(n, device=device)[:, None]
    for epoch in range(config.max_epochs):
        epoch_loss = torch.zeros(n, device=device)
        for _ in range(passes):
            order = torch.stack([torch.randperm(config.n_train, generator=g) for g in shufflers])
            for k in range(steps):
                idx = order[:, k * config.batch_size : (k + 1) * config.batch_size].to(device)
                xb, yb = x[rows, idx], y[rows, idx]
                if config.noise_std > 0:
                    xb = xb + config.noise_std * torch.randn(xb.shape, generator=noise).to(device)
                losses = ((forward(live, xb)[-1] - yb) ** 2).flatten(1).mean(1)
                optimiser.zero_grad()
                losses.sum().backward()
                optimiser.step()
                epoch_loss += losses.detach()
        epoch_loss /= steps * passes
        improved = epoch_loss < best
        best = torch.where(improved, epoch_loss, best)
        bad = torch.where(improved, 0, bad + 1)
        newly = ((epoch_loss < config.loss_target) | (bad >= config.patience)) & ~done
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
