"""The TGB-Seq protocol (Yi et al., ICLR 2025): streams, splits, training.

Generators of user-item streams with known dynamics and the paper's toy; the
chronological split, the fixed negatives, MRR and the repeated-edge ratio; the
training (validation MRR, early stopping) and the evaluation of the models of
``models.py``, which read a stream through the sampler of ``stream.py``. The
package's docstring (:mod:`iclr25.chapters.tgbseq`) says what each piece follows.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from iclr25 import core
from iclr25.chapters.tgbseq.models import (
    JODIE,
    DyGFormer,
    EdgeBank,
    GraphMixer,
    SASRec,
    TemporalLinkModel,
    bce,
)
from iclr25.chapters.tgbseq.stream import RecentNeighbors, Stream

# ---------------------------------------------------------------------------------
# Streams with known dynamics
# ---------------------------------------------------------------------------------

HORIZON = 1e6
"""Length of a stream in time units (seconds: about 12 days), the scale DyGLib's time
encoding cos(w dt), w = 10^-(0..9), is made for."""


def zipf_weights(n_items: int, exponent: float, rng: np.random.Generator) -> np.ndarray:
    """Popularity of each item: proportional to rank^-exponent, ranks in a random order
    of the items (0 gives uniform popularity)."""
    rank = rng.permutation(n_items) + 1
    w = rank.astype(np.float64) ** -exponent
    return w / w.sum()


def bursty_times(n_users: int, length: int, burst: float, rng: np.random.Generator) -> np.ndarray:
    """[n_users, length] sorted times in [0, ``HORIZON``).

    ``burst`` = 0: uniform random times. ``burst`` > 0: the gaps between a user's
    interactions are log-normal with sigma ``burst``, so that activity comes in bursts
    (many short gaps, a few long ones), rescaled to span the horizon.
    """
    if burst == 0:
        return np.sort(HORIZON * rng.random((n_users, length)), axis=1)
    gaps = np.exp(burst * rng.standard_normal((n_users, length + 1)))
    times = np.cumsum(gaps, axis=1)
    return HORIZON * times[:, :-1] / times[:, -1:]


def generate(
    n_users: int,
    n_items: int,
    length: int,
    repeat: float,
    noise: float,
    n_patterns: int,
    seed: int,
    *,
    cycle: int | None = None,
    zipf: float = 0.0,
    burst: float = 0.0,
    n_features: int = 0,
) -> Stream:
    """Each user makes ``length`` interactions (times from :func:`bursty_times`).

    Pattern p is a cycle of ``cycle`` distinct items (all items by default), drawn
    without replacement with Zipf popularity (:func:`zipf_weights`) and put in a random
    order: popular items sit on many cycles. User u walks the cycle of pattern
    u mod n_patterns from a random start. At each step after the first, with probability
    ``repeat`` the user re-interacts with the item of one of its past interactions
    (chosen uniformly, so frequent items come back more: a repeated edge); otherwise,
    with probability ``noise`` it takes a detour to an item drawn by popularity, and
    else the walk moves on to the next item of its cycle. Repeats and detours leave the
    walk where it was. ``n_features`` > 0 gives every item a fixed N(0, 1) feature
    vector, the edge feature of its interactions.
    """
    for name, value in {"repeat": repeat, "noise": noise}.items():
        if not 0 <= value <= 1:
            raise ValueError(f"generate: {name} must lie in [0, 1], got {value}")
    if min(n_users, n_items, length, n_patterns) < 1:
        raise ValueError("generate: n_users, n_items, length and n_patterns must be >= 1")
    cycle = n_items if cycle is None else cycle
    if not 2 <= cycle <= n_items:
        raise ValueError(f"generate: cycle must lie in [2, n_items={n_items}], got {cycle}")
    rng = np.random.default_rng(seed)
    popularity = zipf_weights(n_items, zipf, rng)
    cycles = np.stack(
        [rng.choice(n_items, size=cycle, replace=False, p=popularity) for _ in range(n_patterns)]
    )
    walker = cycles[np.arange(n_users) % n_patterns]  # [n_users, cycle]
    rows = np.arange(n_users)
    items = np.empty((n_users, length), dtype=np.int64)
    pos = rng.integers(cycle, size=n_users)
    items[:, 0] = walker[rows, pos]
    for step in range(1, length):
        detour = rng.random(n_users) < noise
        jump = rng.choice(n_items, size=n_users, p=popularity)
        past = items[rows, rng.integers(step, size=n_users)]
        again = rng.random(n_users) < repeat
        moves = ~again & ~detour
        pos = np.where(moves, (pos + 1) % cycle, pos)
        items[:, step] = np.where(again, past, np.where(detour, jump, walker[rows, pos]))
    times = bursty_times(n_users, length, burst, rng)
    users = np.repeat(rows, length)
    order = np.argsort(times.ravel(), kind="stable")
    feat = rng.standard_normal((n_items, n_features)) if n_features else None
    return Stream(users[order], items.ravel()[order], times.ravel()[order], n_users, n_items, feat)


# ---------------------------------------------------------------------------------
# The TGB-Seq protocol
# ---------------------------------------------------------------------------------


@dataclass
class Benchmark:
    """A stream, its chronological split and the fixed negatives of the evaluated
    validation and test positives."""

    stream: Stream
    n_train: int
    n_val: int
    negatives: np.ndarray  # [n_eval, k] items, row j for test positive eval_idx[j]
    eval_idx: np.ndarray  # indices into the stream of the evaluated test positives
    val_negatives: np.ndarray  # [n_val_eval, k], as negatives, for val_idx
    val_idx: np.ndarray  # indices of the evaluated validation positives
    stats: dict[str, float] = field(default_factory=dict)  # repeated-edge ratio per split


def chronological_split(
    stream: Stream, val_ratio: float = 0.15, test_ratio: float = 0.15
) -> tuple[int, int]:
    """Sizes of the train and validation splits; the test split is the rest.

    torch_geometric's ``TemporalData.train_val_test_split`` cuts at the time quantiles
    1 - val - test and 1 - test: every training interaction precedes every validation
    one, which precedes every test one.
    """
    from torch_geometric.data import TemporalData

    data = TemporalData(
        src=torch.as_tensor(stream.src),
        dst=torch.as_tensor(stream.dst),
        t=torch.as_tensor(stream.t),
    )
    train, val, _ = data.train_val_test_split(val_ratio=val_ratio, test_ratio=test_ratio)
    return train.num_events, val.num_events


def sample_negatives(
    positives: np.ndarray, n_items: int, k: int, rng: np.random.Generator
) -> np.ndarray:
    """For each positive item, ``min(k, n_items - 1)`` distinct other items, uniformly."""
    k = min(k, n_items - 1)
    if k < 1:
        raise ValueError(f"sample_negatives needs at least 2 items, got n_items={n_items}")
    draws = np.stack([rng.choice(n_items - 1, size=k, replace=False) for _ in positives])
    return draws + (draws >= positives[:, None])  # skip the positive: 0..n-2 -> items != pos


def seen_before(stream: Stream, idx: np.ndarray) -> np.ndarray:
    """Whether interaction (u, v, t) of each index repeats a pair seen strictly before t."""
    return EdgeBank(stream).score(stream.src[idx], stream.dst[idx], stream.t[idx]) > 0


def repeat_ratios(stream: Stream, n_train: int, n_val: int) -> dict[str, float]:
    """The repeated-edge ratio of each split: the share of its edges seen before."""
    bounds = {
        "train": (0, n_train),
        "val": (n_train, n_train + n_val),
        "test": (n_train + n_val, len(stream)),
    }
    return {
        name: float(seen_before(stream, np.arange(a, b)).mean()) for name, (a, b) in bounds.items()
    }


def benchmark(
    stream: Stream, n_negatives: int, max_eval: int, seed: int, max_val: int | None = None
) -> Benchmark:
    """Split ``stream``, draw the fixed negatives and record the repeated-edge ratios.

    At most ``max_eval`` test positives (0: all of them, as TGB-Seq ranks them) and
    ``max_val`` validation positives (``max_eval`` by default) are evaluated: uniform
    samples, in time order. The validation sample is drawn first, so that the
    positives a model is selected on do not change with ``max_eval``.
    """
    n_train, n_val = chronological_split(stream)
    rng = np.random.default_rng(seed)
    max_val = max_eval if max_val is None else max_val

    def sample(a: int, b: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        size = b - a if size == 0 else min(size, b - a)
        idx = np.sort(rng.choice(np.arange(a, b), size=size, replace=False))
        return idx, sample_negatives(stream.dst[idx], stream.n_items, n_negatives, rng)

    val_idx, val_negatives = sample(n_train, n_train + n_val, max_val)
    eval_idx, negatives = sample(n_train + n_val, len(stream), max_eval)
    return Benchmark(
        stream,
        n_train,
        n_val,
        negatives,
        eval_idx,
        val_negatives,
        val_idx,
        repeat_ratios(stream, n_train, n_val),
    )


def toy(n_users: int = 1000, seed: int = 0) -> Benchmark:
    """The paper's toy, built as the official ``toy_example/example_generator.py`` does.

    Users come in pairs (official ids 10 + i and 11 + i) that walk items 0-4 and 5-9 in
    lockstep: the j-th interaction of both users of a pair shares one time. Pair i takes
    its five times in [0.7 i / N, 0.7 (i + 2) / N] of the horizon. The first 70% of the
    users keep all five interactions in training. For the others the fifth interaction
    (item 4 or 9) is the one to predict, in validation (users up to 85%, times in
    [0.70, 0.85] of the horizon) or test (the rest, [0.85, 1]): of each pair only one
    user keeps it, alternating between pairs (validation: the first user when its id is
    0 mod 4; test: when it is 2 mod 4), the second user's at the previous pair's time.
    Every positive v has one fixed negative, (v + 5) mod 10: the item at the same step
    of the other walk. Times are scaled from the official span of 1,000 to ``HORIZON``.
    """
    if n_users % 2 or n_users < 20:
        raise ValueError(f"toy: n_users must be even and >= 20, got {n_users}")
    rng = np.random.default_rng(seed)
    val_start, test_start = 10 + int(n_users * 0.7), 10 + int(n_users * 0.85)
    rows: list[tuple[int, int, float, int, int]] = []  # official user id, item, t, split, neg
    last_time = 0.0
    for i in range(0, n_users, 2):
        u1, u2 = 10 + i, 11 + i
        times = np.sort(rng.uniform(0.7 * i / n_users, 0.7 * (i + 2) / n_users, 5)) * HORIZON
        for j in range(4):
            rows += [(u1, j, times[j], 0, j + 5), (u2, j + 5, times[j], 0, j)]
        if u1 <= val_start:
            rows += [(u1, 4, times[4], 0, 9), (u2, 9, times[4], 0, 4)]
            continue
        split = 1 if u1 < test_start else 2 if u1 > test_start else 0
        when = {
            0: times[4],
            1: rng.uniform(0.7, 0.85) * HORIZON,
            2: rng.uniform(0.85, 1.0) * HORIZON,
        }[split]
        if u1 % 4 == (0 if u1 <= test_start else 2):
            rows.append((u1, 4, when, split, 9))
            last_time = when
        else:
            rows.append((u2, 9, last_time, split, 4))
    user, item, t, split, neg = (np.array(c) for c in zip(*rows))
    order = np.argsort(t, kind="stable")
    user, item, t, split, neg = (a[order] for a in (user, item, t, split, neg))
    stream = Stream(user - 10, item, t, n_users, 10)
    n_train, n_val = int((split == 0).sum()), int((split == 1).sum())
    test, val = np.flatnonzero(split == 2), np.flatnonzero(split == 1)
    return Benchmark(
        stream,
        n_train,
        n_val,
        neg[test, None],
        test,
        neg[val, None],
        val,
        repeat_ratios(stream, n_train, n_val),
    )


def mrr(pos: np.ndarray, neg: np.ndarray) -> float:
    """Mean reciprocal rank of each positive among its negatives, ties counted half.

    rank = 1 + #{neg > pos} + #{neg = pos} / 2, the mean of TGB's optimistic and
    pessimistic ranks; MRR = mean(1 / rank).
    """
    pos, neg = np.asarray(pos, dtype=np.float64), np.asarray(neg, dtype=np.float64)
    if neg.ndim != 2 or pos.shape != (len(neg),):
        raise ValueError(
            f"mrr needs pos of shape [n] and neg of shape [n, k], got {pos.shape} and {neg.shape}"
        )
    return float(np.mean(1.0 / ranks(pos, neg)))


def ranks(pos: np.ndarray, neg: np.ndarray) -> np.ndarray:
    """The rank of each positive among its negatives: 1 + #{neg > pos} + #{neg = pos} / 2."""
    return 1 + (neg > pos[:, None]).sum(1) + 0.5 * (neg == pos[:, None]).sum(1)


def chance_mrr(bench: Benchmark) -> float:
    """Expected MRR of a random ranking of each positive among its k negatives:
    mean(1 / r) over r = 1..k+1."""
    return float(np.mean(1 / np.arange(1, bench.negatives.shape[1] + 2)))


def average_precision(pos: np.ndarray, neg: np.ndarray) -> float:
    """DyGLib's link-prediction AP: positives labelled 1, their negatives 0, one ranking."""
    from sklearn.metrics import average_precision_score

    scores = np.r_[np.ravel(pos), np.ravel(neg)]
    labels = np.r_[np.ones(np.size(pos)), np.zeros(np.size(neg))]
    return float(average_precision_score(labels, scores))


# ---------------------------------------------------------------------------------
# Training and evaluation
# ---------------------------------------------------------------------------------

MODELS = ("EdgeBank", "GraphMixer", "DyGFormer", "JODIE", "SASRec")
TEMPORAL_GNNS = ("GraphMixer", "DyGFormer", "JODIE")


@dataclass
class Fit:
    """A trained model (its best epoch on validation MRR), the training loss and the
    validation MRR of each epoch run, training seconds per epoch and the interactions
    one epoch trains on."""

    model: EdgeBank | TemporalLinkModel
    losses: list[float]
    seconds_per_epoch: float
    val_mrr: list[float] = field(default_factory=list)
    best_epoch: int = 0
    interactions: int = 0


def fit(
    name: str,
    bench: Benchmark,
    *,
    epochs: int,
    lr: float,
    batch_size: int,
    dim: int,
    neighbors: int,
    seed: int,
    patience: int | None = None,
    device: str | torch.device = "cpu",
) -> Fit:
    """Train model ``name`` (one of :data:`MODELS`) on the training split of ``bench``.

    Adam for at most ``epochs`` epochs; after each, the validation MRR (the stored
    validation negatives); the best epoch's weights are kept, and training stops after
    ``patience`` epochs without improvement (DyGLib's early stopping; None: never).
    The temporal GNNs run over the training interactions in time order, in batches, each
    positive (u, v, t) against one uniformly drawn item (DyGLib's protocol); SASRec
    trains on the users' training sequences. EdgeBank has nothing to train.
    """
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; accepted: {', '.join(MODELS)}")
    if name == "EdgeBank":
        return Fit(EdgeBank(bench.stream), [], 0.0)
    model, batches, loss_fn, interactions = _setup(
        name, bench, batch_size=batch_size, dim=dim, neighbors=neighbors, seed=seed, device=device
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    out = Fit(model, [], 0.0, interactions=interactions)
    best, best_state, wait, seconds = -np.inf, None, 0, 0.0
    with core.threads(1):
        for epoch in range(epochs):
            start = time.perf_counter()
            out.losses.append(core.train_epoch(model, optimiser, batches, loss_fn))
            seconds += time.perf_counter() - start
            out.val_mrr.append(evaluate(model, bench, split="val").mrr)
            if out.val_mrr[-1] >= best:
                best, out.best_epoch, wait = out.val_mrr[-1], epoch, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                wait += 1
                if patience is not None and wait >= patience:
                    break
    model.load_state_dict(best_state)
    out.seconds_per_epoch = seconds / len(out.losses)
    return out


def epoch_runner(
    name: str,
    bench: Benchmark,
    *,
    lr: float,
    batch_size: int,
    dim: int,
    neighbors: int,
    seed: int,
    device: str | torch.device = "cpu",
) -> tuple[Callable[[int], float], int]:
    """A fresh model ``name`` (a trained one of :data:`MODELS`), a function that trains
    it one more epoch on one CPU thread and returns the epoch's mean loss (what
    ``core.alternate`` times), and the number of interactions an epoch trains on."""
    if name == "EdgeBank":
        raise ValueError("EdgeBank has nothing to train")
    model, batches, loss_fn, interactions = _setup(
        name, bench, batch_size=batch_size, dim=dim, neighbors=neighbors, seed=seed, device=device
    )
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)

    def epoch(_: int) -> float:
        with core.threads(1):
            return core.train_epoch(model, optimiser, batches, loss_fn)

    return epoch, interactions


def make_model(
    name: str, bench: Benchmark, *, dim: int, neighbors: int, batch_size: int
) -> EdgeBank | TemporalLinkModel:
    """A fresh model ``name`` (one of :data:`MODELS`) for the stream of ``bench``, with
    the chapter's widths: every model ``dim`` wide (DyGFormer's channels ``dim`` / 2),
    ``neighbors`` recent links per node (SASRec: its sequence length)."""
    if name not in MODELS:
        raise ValueError(f"unknown model {name!r}; accepted: {', '.join(MODELS)}")
    stream = bench.stream
    if name == "EdgeBank":
        return EdgeBank(stream)
    sampler = RecentNeighbors(stream)
    if name == "GraphMixer":
        return GraphMixer(sampler, k=neighbors, dim=dim)
    if name == "DyGFormer":
        return DyGFormer(sampler, seq_len=neighbors, dim=dim // 2)
    if name == "JODIE":
        return JODIE(sampler, dim=dim, batch_size=batch_size, n_train=bench.n_train)
    return SASRec(sampler, stream.n_items, max_len=neighbors, dim=dim)


def _setup(
    name: str,
    bench: Benchmark,
    *,
    batch_size: int,
    dim: int,
    neighbors: int,
    seed: int,
    device: str | torch.device,
):
    """A fresh model ``name``, its training batches, its loss function and the number of
    interactions an epoch trains on."""
    if name not in MODELS or name == "EdgeBank":
        raise ValueError(f"no trainable model {name!r}; accepted: {', '.join(MODELS[1:])}")
    core.seed_everything(seed)
    rng = np.random.default_rng(seed)
    model = make_model(name, bench, dim=dim, neighbors=neighbors, batch_size=batch_size)
    model.to(device)
    if isinstance(model, SASRec):
        return model, *_sasrec_batches(model, bench, batch_size, rng)
    return model, *_link_batches(model, bench, batch_size, rng)


def _link_batches(model: TemporalLinkModel, bench: Benchmark, batch_size: int, rng):
    """Chronological batches of training links, each with a random negative item."""
    s = bench.stream

    def batches():
        if isinstance(model, JODIE):
            model.reset_memory()  # DyGLib resets the memory bank at every epoch
        for a in range(0, bench.n_train, batch_size):
            i = np.arange(a, min(a + batch_size, bench.n_train))
            yield i, rng.integers(s.n_items, size=len(i))

    def loss_fn(model, batch):
        if isinstance(model, JODIE):
            return model.batch_loss(batch)
        i, neg = batch
        return bce(*model.pos_neg_logits(s.src[i], s.dst[i], neg, s.t[i]))

    return batches, loss_fn, bench.n_train


def _sasrec_batches(model: SASRec, bench: Benchmark, batch_size: int, rng: np.random.Generator):
    """Users' training item sequences (latest max_len + 1, left-padded), shuffled each epoch."""
    s, length = bench.stream, model.max_len + 1
    seqs = np.zeros((s.n_users, length), dtype=np.int64)
    for user in range(s.n_users):
        items = s.dst[: bench.n_train][s.src[: bench.n_train] == user][-length:] + 1
        seqs[user, length - len(items) :] = items
    seqs = seqs[(seqs > 0).sum(1) >= 2]
    interactions = int(((seqs[:, :-1] > 0) & (seqs[:, 1:] > 0)).sum())  # trained targets
    seqs = torch.as_tensor(seqs, device=model.device)

    def batches():
        order = torch.as_tensor(rng.permutation(len(seqs)), device=model.device)
        for a in range(0, len(seqs), batch_size):
            yield seqs[order[a : a + batch_size]]

    def loss_fn(model, seq):
        x, target = seq[:, :-1], seq[:, 1:]
        neg = torch.as_tensor(
            rng.integers(1, s.n_items + 1, size=tuple(target.shape)), device=seq.device
        )
        out, keep = model.sequence(x), (x > 0) & (target > 0)
        pos_logit, neg_logit = (out * model.item(target)).sum(-1), (out * model.item(neg)).sum(-1)
        return bce(pos_logit[keep], neg_logit[keep])

    return batches, loss_fn, interactions


@dataclass
class Evaluation:
    """MRR overall, on the seen (repeated) and unseen positives, the share seen, the
    average precision (AP) of the positives against their negatives, and each evaluated
    positive's reciprocal rank and whether its pair was seen (the units of an interval)."""

    mrr: float
    mrr_seen: float
    mrr_unseen: float
    share_seen: float
    ap: float = float("nan")
    rr: np.ndarray = field(default_factory=lambda: np.zeros(0))
    seen: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool))


def evaluate(
    model: EdgeBank | TemporalLinkModel, bench: Benchmark, split: str = "test"
) -> Evaluation:
    """Rank each evaluated positive of ``split`` ("test" or "val") against its stored
    negatives: reciprocal ranks, MRR by edge kind, and AP."""
    if split not in ("test", "val"):
        raise ValueError(f"evaluate: split must be 'test' or 'val', got {split!r}")
    i, negatives = (
        (bench.eval_idx, bench.negatives)
        if split == "test"
        else (bench.val_idx, bench.val_negatives)
    )
    s = bench.stream
    n, k = negatives.shape
    u = np.repeat(s.src[i], k + 1)
    v = np.concatenate([s.dst[i, None], negatives], 1).ravel()
    scores = model.score(u, v, np.repeat(s.t[i], k + 1)).reshape(n, k + 1)
    seen = seen_before(s, i)
    rr = 1.0 / ranks(scores[:, 0], scores[:, 1:])

    def part(m: np.ndarray) -> float:
        return float(rr[m].mean()) if m.any() else float("nan")

    return Evaluation(
        float(rr.mean()),
        part(seen),
        part(~seen),
        float(seen.mean()),
        average_precision(scores[:, 0], scores[:, 1:]),
        rr,
        seen,
    )


def train(name: str, bench: Benchmark, **fit_args) -> dict[str, Any]:
    """:func:`fit` model ``name`` with ``fit_args`` and keep what can be cached apart from
    any evaluation: the selected epoch's weights (``state``, on the CPU) and the record
    of its training."""
    trained = fit(name, bench, **fit_args)
    state = {} if name == "EdgeBank" else trained.model.state_dict()
    return {
        "state": {k: v.detach().cpu() for k, v in state.items()},
        "epochs_run": float(len(trained.losses)),
        "best_epoch": float(trained.best_epoch + 1),
        "seconds_per_epoch": trained.seconds_per_epoch,
        "interactions": float(trained.interactions),
    }


def evaluate_trained(
    name: str,
    bench: Benchmark,
    trained: dict[str, Any],
    *,
    dim: int,
    neighbors: int,
    batch_size: int,
    device: str | torch.device = "cpu",
) -> dict[str, Any]:
    """:func:`evaluate` model ``name`` with the weights of ``trained`` (:func:`train`) on
    the test positives of ``bench``: the numbers the chapter keeps (plain floats and
    lists of them, so they can be cached), with each test positive's reciprocal rank
    (``rr``) and seen flag, and the training record beside them.

    ``tie_gap`` (benchmarks with one negative per positive, as the toy) is the largest
    |score(positive) - score(negative)| over the test positives: 0 when the model cannot
    tell the two candidates apart.
    """
    model = make_model(name, bench, dim=dim, neighbors=neighbors, batch_size=batch_size)
    if name != "EdgeBank":
        model.load_state_dict(trained["state"])
        model.to(device)
    e = evaluate(model, bench)
    out = {
        "mrr": e.mrr,
        "rr": [float(x) for x in e.rr],
        "seen_mask": [bool(x) for x in e.seen],
        "seen": e.mrr_seen,
        "unseen": e.mrr_unseen,
        "share_seen": e.share_seen,
        "ap": e.ap,
        **{k: v for k, v in trained.items() if k != "state"},
    }
    if bench.negatives.shape[1] == 1:
        s, i = bench.stream, bench.eval_idx
        pos = model.score(s.src[i], s.dst[i], s.t[i])
        neg = model.score(s.src[i], bench.negatives[:, 0], s.t[i])
        out["tie_gap"] = float(np.abs(pos - neg).max())
    return out


def _even(value: int) -> int:
    if value % 2:
        raise ValueError(f"must be even (users come in pairs), got {value}")
    return value
