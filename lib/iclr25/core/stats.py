"""Estimates with 95% intervals, for claims that rest on training runs, or on the items
of one fixed model.

Every function returns an :class:`Estimate`: the value, its interval, the number ``n``
of units it rests on, what those units are (``unit``: ``"runs"`` or ``"items"``) and the
method that gave the interval. All the statistics are scipy's; this module only fixes the
choices the book makes everywhere.

**Over runs.** A claim about a method whose result depends on training (any training
whose seed sets the initialisation, the batch order or the generated data) is decided
over independent training runs: its interval says how much the result would move at
another seed, not how noisy one model's test set is. Two forms:

* :func:`over_runs` -- one statistic per run (say a model's test accuracy), their mean
  with Student's t interval (``scipy.stats.ttest_1samp``); :func:`paired_runs` -- the
  same on ``a - b`` where two arms share each run's seed (the paired t interval, which
  is the one-sample interval of the differences). Use these when a run's statistic is
  what the claim is about: it is exact for normal run statistics and needs no
  resampling;
* :func:`two_stage` -- a cluster bootstrap, runs first and then items within each
  chosen run, for a statistic of the pooled items that is not a mean of per-run
  statistics, or runs of very unequal size. Its interval is the statistic plus or minus
  t(runs - 1) times the bootstrap's standard error: a percentile interval over five
  runs covers about 89% of the time (the bootstrap cannot see the t distribution's
  tails), the t quantile brings it back to 95%.

Both record ``n`` as runs and the items beside them (``items``). The test suite
simulates 400 designs of 5 runs by 200 items and checks that these cover the true
effect at least 93% of the time, where resampling the items of the pooled runs covers
about a third of the time.

**Over items.** A claim about one fixed model (the pretrained SmolLM2, with edits and
prompts as items; or the mechanism inside one named trained network) keeps its items
as the unit:

* :func:`paired_difference` -- the mean of ``a - b`` over paired items, with
  ``scipy.stats.bootstrap(paired=True, method="BCa")``;
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
UNITS = ("runs", "items")
"""What an estimate's ``n`` counts: independent training runs, or items of one model."""


def size(n: int | None, unit: str | None, items: int | None = None) -> str:
    """What an estimate rests on, in words: ``5 runs × 1000 items``, ``5 runs``,
    ``30 items``, or ``n = 30`` where the unit is not said."""
    if unit == "runs" and items:
        return f"{n} runs × {items} items"
    return f"{n} {unit}" if unit else f"n = {n}"


@dataclass(frozen=True)
class Estimate:
    """A value with its ``confidence`` interval ``[low, high]`` over ``n`` units.

    ``unit`` says what ``n`` counts: ``"runs"`` (independent training runs, with the
    ``items`` of all of them beside) or ``"items"`` (of one fixed model). An estimate
    made by hand must say it: a claim refuses one whose unit is empty."""

    value: float
    low: float
    high: float
    n: int
    method: str
    unit: str = ""
    items: int | None = None

    def __post_init__(self) -> None:
        if self.unit and self.unit not in UNITS:
            raise ValueError(f"Estimate unit {self.unit!r}; accepted: {', '.join(UNITS)}")

    @property
    def size(self) -> str:
        """What it rests on, in words (:func:`size`)."""
        return size(self.n, self.unit, self.items)

    def __str__(self) -> str:
        return f"{self.value:.3g} [{self.low:.3g}, {self.high:.3g}] ({self.size})"


# ---------------------------------------------------------------------------------
# Over runs
# ---------------------------------------------------------------------------------


def over_runs(per_run: Sequence[float], *, items: int | None = None) -> Estimate:
    """mean_r s_r over independent runs r, with Student's t interval: ``s_r`` is run r's
    statistic, ``items`` how many items the runs' statistics rest on, all together."""
    from scipy.stats import ttest_1samp

    s = np.asarray(per_run, dtype=float)
    if s.ndim != 1:
        raise ValueError(f"over_runs() needs one statistic per run (1-d), got shape {s.shape}")
    value, method = float(np.mean(s)) if len(s) else float("nan"), "t over runs"
    if len(s) < 2:
        low = high = float("nan")
    elif np.ptp(s) == 0:
        low, high, method = value, value, "all equal"
    else:
        ci = ttest_1samp(s, 0.0).confidence_interval(CONFIDENCE)
        low, high = float(ci.low), float(ci.high)
    return Estimate(value, low, high, len(s), method, "runs", items)


def paired_runs(a: Sequence[float], b: Sequence[float], *, items: int | None = None) -> Estimate:
    """mean_r (a_r - b_r) over runs r where both arms share run r's seed, with the paired
    t interval (the one-sample interval of the differences)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(
            f"paired_runs() needs two 1-d arms, one value per run each, got {a.shape} and {b.shape}"
        )
    e = over_runs(a - b, items=items)
    method = "paired t over runs" if e.method == "t over runs" else e.method
    return Estimate(e.value, e.low, e.high, e.n, method, "runs", items)


def _mean_of_means(runs: Sequence[np.ndarray]) -> float:
    return float(np.mean([np.mean(r) for r in runs]))


def two_stage(
    runs: Sequence[Sequence[float]],
    statistic: Callable[[Sequence[np.ndarray]], float] = _mean_of_means,
    *,
    seed: int = 0,
    resamples: int = 2000,
) -> Estimate:
    """``statistic(runs)`` (default: the mean of the runs' item means) with a two-stage
    bootstrap: draw the runs with replacement, then the items within each drawn run.
    The interval is the value +- t(R - 1) times the bootstrap's standard error over R
    runs (see the module's docstring for why not its percentiles)."""
    from scipy.stats import t

    arrays = [np.asarray(r, dtype=float) for r in runs]
    if any(r.ndim != 1 or len(r) == 0 for r in arrays):
        raise ValueError("two_stage() needs each run's items as a non-empty 1-d sample")
    n_runs, items = len(arrays), sum(len(r) for r in arrays)
    value = float(statistic(arrays)) if arrays else float("nan")
    nan = float("nan")
    if n_runs < 2:
        return Estimate(value, nan, nan, n_runs, "two-stage bootstrap", "runs", items)
    rng = np.random.default_rng(seed)
    draws = []
    for _ in range(resamples):
        chosen = rng.integers(0, n_runs, n_runs)
        draws.append(
            statistic([arrays[r][rng.integers(0, len(arrays[r]), len(arrays[r]))] for r in chosen])
        )
    half = float(t.ppf(0.5 + CONFIDENCE / 2, n_runs - 1) * np.std(draws, ddof=1))
    method = "two-stage bootstrap, t interval"
    return Estimate(value, value - half, value + half, n_runs, method, "runs", items)


# ---------------------------------------------------------------------------------
# Over items of one model
# ---------------------------------------------------------------------------------


def _bootstrap(
    samples: tuple[np.ndarray, ...], statistic: Callable, paired: bool, seed: int, method: str
) -> Estimate:
    from scipy.stats import bootstrap

    n = len(samples[0])
    value = float(statistic(*samples, axis=-1))
    if n < 2:
        return Estimate(value, float("nan"), float("nan"), n, method, "items")
    pooled = np.concatenate([np.ravel(s) for s in samples]) if not paired else None
    spread = samples[0] - samples[1] if paired and len(samples) == 2 else samples[0]
    if np.ptp(spread if pooled is None else pooled) == 0:
        return Estimate(value, value, value, n, "all equal", "items")
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
    return Estimate(value, float(ci.low), float(ci.high), n, method, "items")


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
        nan = float("nan")
        return Estimate(float(of_means(a, b)), nan, nan, len(a) + len(b), "", "items")
    e = _bootstrap((a, b), of_means, False, seed, "two-sample bootstrap (BCa)")
    return Estimate(e.value, e.low, e.high, len(a) + len(b), e.method, "items")


def share(k: int, n: int, *, unit: str = "items") -> Estimate:
    """k / n, with the Wilson score interval; ``unit`` says what the ``n`` trials are
    (``"runs"`` where each is an independent training run)."""
    from scipy.stats import binomtest

    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"share() needs 0 <= k <= n and n >= 1, got k={k}, n={n}")
    ci = binomtest(int(k), int(n)).proportion_ci(CONFIDENCE, method="wilson")
    return Estimate(k / n, float(ci.low), float(ci.high), int(n), "Wilson", unit)


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
