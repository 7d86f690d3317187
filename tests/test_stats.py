"""core.stats: the book's intervals are scipy's, with its degenerate cases decided."""

import numpy as np
import pytest
from scipy import stats as sp

from iclr25.core import stats

RNG = np.random.default_rng(7)
A = RNG.normal(1.0, 1.0, 40)
B = A - RNG.normal(0.3, 0.5, 40)


def test_paired_difference_is_scipys_paired_bca_bootstrap():
    got = stats.paired_difference(A, B, seed=3)
    ci = sp.bootstrap(
        (A, B),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        paired=True,
        vectorized=True,
        method="BCa",
        n_resamples=stats.RESAMPLES,
        rng=np.random.default_rng(3),
    ).confidence_interval
    assert got.value == pytest.approx(np.mean(A - B))
    assert (got.low, got.high) == pytest.approx((ci.low, ci.high))
    assert got.n == 40 and got.method == "paired bootstrap (BCa)"
    assert got.low < got.value < got.high


def test_identical_arms_cover_zero():
    same = stats.paired_difference(A, A)
    assert (same.value, same.low, same.high) == (0.0, 0.0, 0.0)
    # two draws of one distribution: the paired interval covers 0 (this draw)
    x, y = RNG.normal(size=(2, 50))
    null = stats.paired_difference(x, y)
    assert null.low < 0 < null.high


def test_mean_share_and_permutation_match_scipy():
    got = stats.mean(A, seed=1)
    ci = sp.bootstrap(
        (A,), np.mean, method="BCa", n_resamples=stats.RESAMPLES, rng=np.random.default_rng(1)
    ).confidence_interval
    assert (got.low, got.high) == pytest.approx((ci.low, ci.high))
    wilson = sp.binomtest(7, 20).proportion_ci(0.95, method="wilson")
    share = stats.share(7, 20)
    assert (share.value, share.low, share.high, share.n) == pytest.approx(
        (0.35, wilson.low, wilson.high, 20)
    )
    p = stats.permutation_pvalue(lambda x, y: np.mean(x) - np.mean(y), A, A - 2.0)
    assert p < 0.01
    assert stats.permutation_pvalue(lambda x, y: np.mean(x) - np.mean(y), A, A + 2.0) > 0.9


def test_too_few_units_have_no_interval_and_bad_input_is_refused():
    one = stats.mean([2.0])
    assert one.value == 2.0 and np.isnan(one.low) and np.isnan(one.high)
    with pytest.raises(ValueError, match="two 1-d arms of one length"):
        stats.paired_difference([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="0 <= k <= n"):
        stats.share(5, 3)
    with pytest.raises(ValueError, match="accepted: 'greater', 'less'"):
        stats.permutation_pvalue(np.mean, A, alternative="two-sided")
    assert str(stats.Estimate(0.5, 0.25, 0.75, 10, "x")) == "0.5 [0.25, 0.75] (n = 10)"


def test_error_bars_are_the_intervals_ends_around_each_value():
    bars = stats.error_bars([stats.Estimate(1, 0.5, 2, 9, "x"), stats.mean([3.0])])
    assert bars["array"] == [1.0, None] and bars["arrayminus"] == [0.5, None]
    assert bars["symmetric"] is False


def test_two_sample_estimates_a_ratio_and_a_difference_of_means():
    rng = np.random.default_rng(0)
    a, b = rng.normal(2.0, 0.1, 200), rng.normal(4.0, 0.1, 150)
    ratio = stats.two_sample(a, b, "ratio")
    assert ratio.value == pytest.approx(a.mean() / b.mean())
    assert ratio.low < 0.5 < ratio.high and ratio.n == 350
    diff = stats.two_sample(a, b)
    assert diff.low < -2.0 < diff.high and diff.value == pytest.approx(a.mean() - b.mean())
    with pytest.raises(ValueError, match="'difference' or 'ratio'"):
        stats.two_sample(a, b, "sum")
