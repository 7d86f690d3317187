"""Estimates with 95% intervals, for claims that rest on seeds, items, edits or pairs.

Every function returns an :class:`Estimate`: the value, its interval, the number of
units it rests on and the method that gave the interval. All the statistics are
scipy's; this module only fixes the choices the book makes everywhere:

* :func:`paired_difference` -- the mean of ``a - b`` over paired units (seeds, edits,
  items), with ``scipy.stats.bootstrap(paired=True, method="BCa")``;
* :func:`mean` -- the mean of one sample, with the same BCa bootstrap;
* :func:`two_sample` -- the difference or ratio of the means of two independent
  samples (two streams, seen and unseen items), each resampled apart;
* :func:`share` -- a proportion ``k / n``, with the Wilson interval of
  ``scipy.stats.binomtest``;
* :func:`permutation_pvalue` -- a one-sided ``scipy.stats.permutation_test``, for rank
  statistics that have a p-value rather than an interval.

The resampling is seeded, so a chapter's intervals are the same from one run to the
next. Two degenerate cases get an interval scipy cannot give: a sample whose values are
all equal has the point interval ``[v, v]``, and fewer than two units have no interval
(NaN), which no margin can decide.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

CONFIDENCE = 0.95
RESAMPLES = 9999


@dataclass(frozen=True)
class Estimate:
    """A value with its ``confidence`` interval ``[low, high]`` over ``n`` units."""

    value: float
    low: float
    high: float
    n: int
    method: str

    def __str__(self) -> str:
        return f"{self.value:.3g} [{self.low:.3g}, {self.high:.3g}] (n = {self.n})"


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic: Callable, paired: bool, seed: int, method: str
) -> Estimate:
    from scipy.stats import bootstrap

    n = len(samples[0])
    value = float(statistic(*samples, axis=-1))
    if n < 2:
        return Estimate(value, float("nan"), float("nan"), n, method)
    pooled = np.concatenate([np.ravel(s) for s in samples]) if not paired else None
    spread = samples[0] - samples[1] if paired and len(samples) == 2 else samples[0]
    if np.ptp(spread if pooled is None else pooled) == 0:
        return Estimate(value, value, value, n, "all equal")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # BCa warns, then returns NaN, when it cannot
        ci = bootstrap(
            samples,
            statistic,
            paired=paired,
            vectorized=True,
            confidence_level=CONFIDENCE,
            n_resamples=RESAMPLES,
            method="BCa",
            rng=np.random.default_rng(seed),
        ).confidence_interval
        if np.isnan(ci.low) or np.isnan(ci.high):
            method = method.replace("BCa", "percentile")
            ci = bootstrap(
                samples,
                statistic,
                paired=paired,
                vectorized=True,
                confidence_level=CONFIDENCE,
                n_resamples=RESAMPLES,
                method="percentile",
                rng=np.random.default_rng(seed),
            ).confidence_interval
    return Estimate(value, float(ci.low), float(ci.high), n, method)


def paired_difference(a: Sequence[float], b: Sequence[float], *, seed: int = 0) -> Estimate:
    """mean_i (a_i - b_i) over paired units, with a paired BCa bootstrap interval."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired_difference() needs two 1-d arms of one length, got {a.shape} and {b.shape}"
        )

    def mean_difference(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.mean(x - y, axis=axis)

    return _bootstrap((a, b), mean_difference, True, seed, "paired bootstrap (BCa)")


def mean(x: Sequence[float], *, seed: int = 0) -> Estimate:
    """mean_i x_i over units, with a BCa bootstrap interval."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1:
        raise ValueError(f"mean() needs a 1-d sample, got shape {x.shape}")
    return _bootstrap((x,), np.mean, False, seed, "bootstrap (BCa)")


def two_sample(
    a: Sequence[float], b: Sequence[float], statistic: str = "difference", *, seed: int = 0
) -> Estimate:
    """mean(a) - mean(b) (``statistic="difference"``) or mean(a) / mean(b) (``"ratio"``)
    over two independent samples, with a BCa bootstrap that resamples each apart; ``n``
    counts the units of both."""
    if statistic not in ("difference", "ratio"):
        raise ValueError(
            f"two_sample: statistic must be 'difference' or 'ratio', not {statistic!r}"
        )
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.ndim != 1 or b.ndim != 1:
        raise ValueError(f"two_sample() needs two 1-d samples, got shapes {a.shape} and {b.shape}")

    def of_means(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        mx, my = np.mean(x, axis=axis), np.mean(y, axis=axis)
        return mx / my if statistic == "ratio" else mx - my

    if min(len(a), len(b)) < 2:
        return Estimate(float(of_means(a, b)), float("nan"), float("nan"), len(a) + len(b), "")
    e = _bootstrap((a, b), of_means, False, seed, "two-sample bootstrap (BCa)")
    return Estimate(e.value, e.low, e.high, len(a) + len(b), e.method)


def share(k: int, n: int) -> Estimate:
    """k / n, with the Wilson score interval."""
    from scipy.stats import binomtest

    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"share() needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(CONFIDENCE, method="wilson")
    return Estimate(k / n, float(ci.low), float(ci.high), int(n), "Wilson")


def permutation_pvalue(
    statistic: Callable[..., float],
    *samples: Sequence[float],
    alternative: str = "greater",
    permutation_type: str = "independent",
    seed: int = 0,
) -> float:
    """One-sided p-value of ``statistic(*samples)`` under ``scipy.stats.permutation_test``
    (``permutation_type``: ``"independent"`` arms, ``"pairings"`` of x with y, or
    ``"samples"`` swapped within pairs)."""
    from scipy.stats import permutation_test

    if alternative not in ("greater", "less"):
        raise ValueError(f"alternative {alternative!r}; accepted: 'greater', 'less'")
    result = permutation_test(
        tuple(np.asarray(s, dtype=float) for s in samples),
        lambda *s: statistic(*s),
        permutation_type=permutation_type,
        alternative=alternative,
        n_resamples=RESAMPLES,
        rng=np.random.default_rng(seed),
    )
    return float(result.pvalue)


def error_bars(estimates: Sequence[Estimate]) -> dict:
    """Plotly's ``error_y`` (or ``error_x``) for the estimates' 95% intervals; an
    estimate without an interval gets no bar."""

    def ends(e: Estimate) -> tuple[float | None, float | None]:
        if np.isnan(e.low) or np.isnan(e.high):
            return None, None
        return e.high - e.value, e.value - e.low

    plus, minus = zip(*map(ends, estimates), strict=True) if estimates else ((), ())
    return {"type": "data", "symmetric": False, "array": list(plus), "arrayminus": list(minus)}
