"""The paper's method: the activations (DRA, Snake, ReLU, GELU), the transformer over
partition tokens, its training and R^2; the split by genus; split conformal prediction with
a sliding window over n; and the linear probes (the Virasoro residuals are in
``virasoro.py``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import numpy as np
import torch
from crepes import ConformalRegressor
from sklearn.linear_model import RidgeCV
from sklearn.metrics import r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from torch import nn

from iclr25.chapters.enumerative.intersection import (
    ASYMPTOTIC_TERMS,
    Dataset,
    asymptotic_terms,
)

# ---------------------------------------------------------------------------------
# Activations
# ---------------------------------------------------------------------------------


def sin2_over(a: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """sin^2(a x) / a, written as x sin(a x) sinc(a x / pi) so that it never divides.

    torch.sinc(z) = sin(pi z) / (pi z) with sinc(0) = 1, so the product equals
    sin^2(a x) / a for a != 0 and tends to its limit 0 (like a x^2) as a -> 0,
    with finite gradients everywhere: Snake's guard against a near-zero a.
    """
    ax = a * x
    return x * torch.sin(ax) * torch.sinc(ax / math.pi)


class DRA(nn.Module):
    """The Dynamic Range Activator, as the network behind the paper's results writes it
    (the official ``model/TR_ABCD2seq.py``):

        DRA(x) = x + a sin^2(a x) / b + c cos(b x) + d tanh(b x),

    with scalar learnable a, b, c, d drawn from N(0, 1), as there. The identity carries
    large values through, the periodic terms model recursion and the tanh a bounded
    nonlinearity around zero. The authors' ``torch-dra`` package writes
    x + b sin^2(a x)/a + c cos(a x) + d tanh(b x), the paper's text
    x + a sin^2(x/b) + c cos(b x) + d tanh(b x).
    """

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c, self.d = (nn.Parameter(torch.randn(1)) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        bx = self.b * x
        return (
            x
            + self.a * torch.sin(self.a * x) ** 2 / self.b
            + self.c * torch.cos(bx)
            + self.d * torch.tanh(bx)
        )


class Snake(nn.Module):
    """Snake (Ziyin, Hartwig & Ueda, 2020): x + sin^2(a x) / a, a learnable (from 1)."""

    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Parameter(torch.ones(1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + sin2_over(self.a, x)


ACTIVATIONS: dict[str, Callable[[], nn.Module]] = {
    "dra": DRA,
    "relu": nn.ReLU,
    "gelu": nn.GELU,
    "snake": Snake,
}


def activation(name: str) -> nn.Module:
    """A fresh activation module called ``name``."""
    if name not in ACTIVATIONS:
        raise ValueError(f"unknown activation {name!r}; accepted: {', '.join(ACTIVATIONS)}")
    return ACTIVATIONS[name]()


# ---------------------------------------------------------------------------------
# The transformer over partition tokens
# ---------------------------------------------------------------------------------


class Batch(NamedTuple):
    """Model inputs: (g, n) per row, the partition as floats and its padding mask."""

    gn: torch.Tensor  # (B, 2)
    d: torch.Tensor  # (B, L, 1)
    pad: torch.Tensor  # (B, L), True where padded


def as_batch(data: Dataset, device: torch.device | str = "cpu") -> Batch:
    """The tensors the model reads, for a whole data set."""
    gn = torch.tensor(np.stack([data.g, data.n], axis=1), dtype=torch.float32, device=device)
    d = torch.tensor(data.d, dtype=torch.float32, device=device)
    return Batch(gn, d.clamp(min=0).unsqueeze(-1), d < 0)


DROPOUT = 0.1
"""The official dropout: 0.1 on the attention weights, the feed-forward block and the
residual branches of every encoder layer (``attn_dropout``, ``ff_dropout`` and
``layer_dropout`` of ``model/TR_ABCD2seq.py``)."""


class IntersectionTransformer(nn.Module):
    """A small transformer regressing log <tau_d1 ... tau_dn>_g.

    Each marked point is a token embedded from its d_i (a continuous embedding, so
    that the larger d of unseen genera still have one), plus an embedding of (g, n)
    added to every token, the paper's "+" modulation. Pre-norm encoder layers use
    ``act`` in their feed-forward blocks; a masked mean pools the tokens, and an MLP
    with ``act`` reads the pooled vector concatenated with the (g, n) embedding (the
    representation that :meth:`represent` returns and the probe reads). Inputs are
    divided by the training maxima and the output is de-standardised, both by
    buffers set in :meth:`set_scales`.
    """

    def __init__(self, act: str, width: int = 32, heads: int = 4, layers: int = 2) -> None:
        super().__init__()
        if width % heads:
            raise ValueError(f"width must be a multiple of heads={heads}, got width={width}")

        def mlp(n_in: int, n_out: int) -> nn.Sequential:
            return nn.Sequential(nn.Linear(n_in, width), activation(act), nn.Linear(width, n_out))

        self.embed_gn, self.embed_d = mlp(2, width), mlp(1, width)
        layer = nn.TransformerEncoderLayer(
            width,
            heads,
            2 * width,
            dropout=DROPOUT,
            activation=activation(act),
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = mlp(2 * width, 1)
        for name in ("gn_scale", "d_scale", "y_mean", "y_std"):
            self.register_buffer(name, torch.ones(()))

    def set_scales(self, batch: Batch, y: torch.Tensor) -> None:
        """Input scales and target standardisation, from the training set."""
        self.gn_scale.copy_(batch.gn.max())
        self.d_scale.copy_(batch.d.max())
        self.y_mean.copy_(y.mean())
        self.y_std.copy_(y.std())

    def represent(self, batch: Batch) -> torch.Tensor:
        """The pooled representation [mean over tokens, (g, n) embedding], (B, 2 width)."""
        cond = self.embed_gn(batch.gn / self.gn_scale)
        tokens = self.embed_d(batch.d / self.d_scale) + cond.unsqueeze(1)
        out = self.encoder(tokens, src_key_padding_mask=batch.pad)
        keep = (~batch.pad).unsqueeze(-1).float()
        pooled = (out * keep).sum(1) / keep.sum(1)
        return torch.cat([pooled, cond], dim=1)

    def standardised(self, batch: Batch) -> torch.Tensor:
        """The prediction in standardised units (what the loss compares), (B,)."""
        return self.head(self.represent(batch)).squeeze(-1)

    def forward(self, batch: Batch) -> torch.Tensor:
        """Predicted natural log of the intersection number, (B,)."""
        return self.standardised(batch) * self.y_std + self.y_mean


def take(batch: Batch, index: torch.Tensor) -> Batch:
    """The rows ``index`` of a batch."""
    return Batch(*(t[index] for t in batch))


def l1_loss(model: IntersectionTransformer, batch: tuple[Batch, torch.Tensor]) -> torch.Tensor:
    """The paper's L1 loss, on standardised log values."""
    inputs, y = batch
    return (model.standardised(inputs) - (y - model.y_mean) / model.y_std).abs().mean()


STEP_SIZE, GAMMA, WEIGHT_DECAY, CLIP_NORM = 14, 0.5, 1e-5, 10.0
"""The official schedule and regularisation (``CFG`` and ``train_epoch`` of
``model/TR_ABCD2seq.py``): the rate halves every 14 epochs (torch's ``StepLR``); Adam
with L2 weight decay 1e-5; the gradient's global norm clipped at 10, on the L1 loss
summed over the batch's raw log values."""


def clip_threshold(batch_size: int, y_std: float) -> float:
    """CLIP_NORM on :func:`l1_loss`'s scale. The official loss sums |error| in nats over
    a batch of B rows; ours averages it in standardised units, a factor B y_std smaller,
    and so is its gradient: clipping ours at CLIP_NORM / (B y_std) clips the same
    steps (every batch has B rows, as the official loader's ``drop_last``)."""
    return CLIP_NORM / (batch_size * y_std)


def fit(
    act: str,
    data: Dataset,
    *,
    width: int,
    layers: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    device: torch.device | str = "cpu",
) -> tuple[IntersectionTransformer, list[float]]:
    """Train an :class:`IntersectionTransformer` with activation ``act`` on ``data``.

    The official optimiser: Adam (L2 weight decay WEIGHT_DECAY) on the L1 loss, the rate
    lr * GAMMA^floor(epoch / STEP_SIZE), the gradient norm clipped as the official
    CLIP_NORM (:func:`clip_threshold`); full minibatches reshuffled every epoch (the
    last, partial one dropped, as the official loader does). The seed
    fixes the initialisation and the batch order, so every activation sees the same
    batches. Returns the model and the loss per epoch.
    """
    from iclr25.core import threads, train_epoch

    if len(data) < batch_size:
        raise ValueError(
            f"fit needs at least batch_size={batch_size} training rows, got {len(data)}"
        )
    torch.manual_seed(seed)
    model = IntersectionTransformer(act, width=width, layers=layers).to(device)
    inputs = as_batch(data, device)
    y = torch.tensor(data.log_value, dtype=torch.float32, device=device)
    model.set_scales(inputs, y)
    order = torch.Generator().manual_seed(seed)

    def batches() -> Iterator[tuple[Batch, torch.Tensor]]:
        perm = torch.randperm(len(y), generator=order).to(device)
        for start in range(0, len(y) - batch_size + 1, batch_size):
            rows = perm[start : start + batch_size]
            yield take(inputs, rows), y[rows]

    optimiser = torch.optim.Adam(model.parameters(), lr=lr, weight_decay=WEIGHT_DECAY)
    schedule = torch.optim.lr_scheduler.StepLR(optimiser, STEP_SIZE, GAMMA)
    clip = clip_threshold(batch_size, float(model.y_std))
    history = []
    with threads(1):  # as fast for a model this small, and steady on shared cores
        for _ in range(epochs):
            history.append(train_epoch(model, optimiser, batches, l1_loss, clip=clip))
            schedule.step()
    return model, history


@torch.no_grad()
def predict(
    model: nn.Module, data: Dataset, device: torch.device | str = "cpu", chunk: int = 4096
) -> np.ndarray:
    """Predicted natural log values for a data set."""
    model.eval()
    batch = as_batch(data, device)
    return (
        torch.cat(
            [
                model(take(batch, torch.arange(i, min(i + chunk, len(data)), device=device)))
                for i in range(0, len(data), chunk)
            ]
        )
        .cpu()
        .numpy()
    )


@torch.no_grad()
def represent(
    model: IntersectionTransformer, data: Dataset, device: torch.device | str = "cpu"
) -> np.ndarray:
    """The pooled representation of every row of ``data``, (N, 2 width)."""
    model.eval()
    return model.represent(as_batch(data, device)).cpu().numpy()


def r2(y: np.ndarray, y_hat: np.ndarray) -> float:
    """The paper's metric: R^2 of the log values (scikit-learn's r2_score)."""
    return float(r2_score(y, y_hat))


# ---------------------------------------------------------------------------------
# Splits
# ---------------------------------------------------------------------------------


class Splits(NamedTuple):
    """Row indices: training, calibration and test within the training genera (ID),
    and the out-of-distribution genera (OOD)."""

    train: np.ndarray
    calibration: np.ndarray
    test: np.ndarray
    ood: np.ndarray


def split_by_genus(
    data: Dataset, g_test: int, fractions: tuple[float, float], rng: np.random.Generator
) -> Splits:
    """OOD = every row with g >= g_test; the rest shuffled into train, calibration
    and test with ``fractions`` = (calibration, test) shares."""
    ood = np.flatnonzero(data.g >= g_test)
    ind = rng.permutation(np.flatnonzero(data.g < g_test))
    n_cal, n_test = (int(round(f * len(ind))) for f in fractions)
    if min(n_cal, n_test, len(ood), len(ind) - n_cal - n_test) < 1:
        raise ValueError(f"split_by_genus left a split empty (g_test={g_test}, {len(data)} rows)")
    return Splits(
        np.sort(ind[n_cal + n_test :]),
        np.sort(ind[:n_cal]),
        np.sort(ind[n_cal : n_cal + n_test]),
        ood,
    )


# ---------------------------------------------------------------------------------
# Conformal prediction with a sliding window over n
# ---------------------------------------------------------------------------------


def conformal_halfwidths(
    residuals_cal: np.ndarray,
    n_cal: np.ndarray,
    n_test: np.ndarray,
    confidence: float,
    window: int | None,
) -> np.ndarray:
    """Half-widths q of the split-conformal intervals y_hat +- q for test rows with n_test.

    The score is the absolute residual |y - y_hat| on the calibration set; q is its
    ceil((1 - alpha)(m + 1))-th smallest of m (crepes' ConformalRegressor; infinite
    when m is too small). crepes rounds (1 - alpha)(m + 1) down in floating point, so
    where that product is a whole number it takes the next larger residual: slightly
    conservative, never below the guarantee. With ``window`` = w, a test row with n points is
    calibrated only on calibration rows with |n' - n| <= w (the paper's sliding window over the
    number of marked points); ``window=None`` is one global quantile.
    """
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if window is not None and window < 0:
        raise ValueError(f"window must be >= 0 or None (global), got {window}")
    halfwidths = np.empty(len(n_test))
    for n in np.unique(n_test):
        near = np.ones(len(n_cal), bool) if window is None else np.abs(n_cal - n) <= window
        rows = n_test == n
        if not near.any():
            halfwidths[rows] = np.inf
            continue
        regressor = ConformalRegressor().fit(residuals_cal[near])
        halfwidths[rows] = regressor.predict_int(np.zeros(1), confidence=confidence)[0, 1]
    return halfwidths


class Coverage(NamedTuple):
    """Per value of n: the test rows, the empirical coverage and the mean interval width."""

    n: np.ndarray
    count: np.ndarray
    coverage: np.ndarray
    width: np.ndarray


def coverage_by_n(
    y: np.ndarray, y_hat: np.ndarray, halfwidths: np.ndarray, n: np.ndarray
) -> Coverage:
    """Share of test rows with |y - y_hat| <= q, and the mean width 2q, for each n."""
    covered = np.abs(y - y_hat) <= halfwidths
    values = np.unique(n)
    return Coverage(
        values,
        np.array([(n == v).sum() for v in values]),
        np.array([covered[n == v].mean() for v in values]),
        np.array([2 * halfwidths[n == v].mean() for v in values]),
    )


def coverage_tolerance(confidence: float, count: np.ndarray, floor: float = 0.05) -> np.ndarray:
    """Allowed |coverage - confidence| for a group of ``count`` test rows, fixed in
    advance: max(floor, 3 binomial standard deviations sqrt(c (1 - c) / count))."""
    return np.maximum(floor, 3 * np.sqrt(confidence * (1 - confidence) / np.asarray(count)))


def width_tracking(
    halfwidths: np.ndarray,
    abs_residuals: np.ndarray,
    n: np.ndarray,
    confidence: float,
    min_count: int,
) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """Whether interval widths follow the errors across n, on held-out rows: Spearman's
    rank correlation, over the values of n with at least ``min_count`` rows, between the
    mean interval width and the ``confidence`` quantile of the rows' |residual| (the
    width each n would need). Returns (rho, those n, widths, needed widths)."""
    from scipy.stats import spearmanr

    values = np.array([v for v in np.unique(n) if (n == v).sum() >= min_count])
    width = np.array([2 * halfwidths[n == v].mean() for v in values])
    needed = np.array([2 * np.quantile(abs_residuals[n == v], confidence) for v in values])
    rho = float(spearmanr(width, needed).statistic) if len(values) > 2 else float("nan")
    return rho, values, width, needed


def mean_by(values: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct ``keys`` and the mean of ``values`` for each."""
    distinct = np.unique(keys)
    return distinct, np.array([values[keys == k].mean() for k in distinct])


# ---------------------------------------------------------------------------------
# Probing
# ---------------------------------------------------------------------------------

PROBE_TARGETS = (*ASYMPTOTIC_TERMS, "log(exact/asymptotic)")


def probe_targets(data: Dataset) -> np.ndarray:
    """The probes' targets, one column each (PROBE_TARGETS): the asymptotic's three
    log-terms, then log(exact / asymptotic), the part of the number the closed form
    misses, which no single smooth term of the inputs gives away."""
    terms = asymptotic_terms(data)
    return np.column_stack([terms, data.log_value - terms.sum(axis=1)])


INPUT_FEATURES = "g, n, g^2, n^2, g n, log(g+1), #(d=0), #(d=1), and per slot d_i, d_i^2, present"


def input_features(data: Dataset) -> np.ndarray:
    """The control probe's features: the inputs alone and simple transforms of them
    (INPUT_FEATURES; the slots hold the partition largest first, 0 where padded). Read
    from (g, n, d) only, never from a network or the target."""
    g, n = data.g.astype(np.float64), data.n.astype(np.float64)
    present = data.d >= 0
    d = np.where(present, data.d, 0).astype(np.float64)
    counts = [((data.d == v) & present).sum(axis=1) for v in (0, 1)]
    return np.column_stack(
        [g, n, g**2, n**2, g * n, np.log1p(g), *counts, d, d**2, present.astype(np.float64)]
    )


ALPHAS = np.logspace(-4, 4, 17)
"""The ridge penalties RidgeCV chooses from (by leave-one-out), for the probes and the
null regressor."""


def ridge_baseline(train: Dataset) -> Callable[[Dataset], np.ndarray]:
    """The null regressor: ridge regression of the log value on the control probe's input
    features (:func:`input_features`, standardised; RidgeCV), fitted on ``train``. It
    predicts smoothly from the same inputs as the network and knows nothing of the
    recursion. Returns its prediction function, data set -> log values."""
    model = make_pipeline(StandardScaler(), RidgeCV(alphas=ALPHAS))
    model.fit(input_features(train), train.log_value)
    return lambda data: model.predict(input_features(data))


def probe_r2(
    features_train: np.ndarray,
    targets_train: np.ndarray,
    features_test: np.ndarray,
    targets_test: np.ndarray,
) -> np.ndarray:
    """Held-out R^2 of a linear probe (standardised features, ridge with its penalty
    chosen by leave-one-out, scikit-learn's RidgeCV) for each target column; NaN for a
    column that is constant on the test rows (one genus fixes log(24^g g!)), where R^2
    is undefined."""
    probe = make_pipeline(StandardScaler(), RidgeCV(alphas=ALPHAS))
    predicted = probe.fit(features_train, targets_train).predict(features_test)
    return np.array(
        [
            r2_score(targets_test[:, k], predicted[:, k])
            if np.ptp(targets_test[:, k]) > 1e-9 * (1 + np.abs(targets_test[:, k]).max())
            else np.nan
            for k in range(targets_test.shape[1])
        ]
    )
