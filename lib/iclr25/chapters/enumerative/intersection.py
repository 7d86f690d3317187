"""The psi-class intersection numbers: exact values by the DVV recursion (the Virasoro
constraints), in Python Fractions and memoised; the data set of every nonzero number up to
a genus; and the log-terms of Aggarwal's large-genus asymptotic."""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from fractions import Fraction
from functools import cache
from typing import NamedTuple

import numpy as np

# ---------------------------------------------------------------------------------
# Exact numbers: the DVV recursion (Virasoro constraints)
# ---------------------------------------------------------------------------------


def double_factorial(m: int) -> int:
    """m!! = m (m - 2) (m - 4) ... down to 1 or 2; (-1)!! = 0!! = 1."""
    if m < -1:
        raise ValueError(f"double_factorial needs m >= -1, got {m}")
    return math.prod(range(m, 0, -2))


def _key(ds: Sequence[int]) -> tuple[int, ...]:
    """Intersection numbers are symmetric in the d_i: a multiset, kept sorted."""
    return tuple(sorted(ds))


def is_stable(g: int, n: int) -> bool:
    """The moduli space M_{g,n} of stable curves exists: g, n >= 0 and 2g - 2 + n > 0."""
    return g >= 0 and n >= 0 and 2 * g - 2 + n > 0


def dvv(g: int, ds: Sequence[int], i: int) -> Fraction:
    """The Virasoro constraint L_k that removes tau_{d_i}, k = d_i - 1 >= -1:

        (2k+3)!! <tau_{k+1} tau_D>_g
            = sum_j (2k+2d_j+1)!!/(2d_j-1)!! <tau_{d_j+k} tau_{D minus j}>_g
            + 1/2 sum_{r+s=k-1} (2r+1)!! (2s+1)!! [ <tau_r tau_s tau_D>_{g-1}
                + sum_{g1+g2=g, I u J = D} <tau_r tau_I>_{g1} <tau_s tau_J>_{g2} ],

    with D the other points. k = -1 is the string equation, k = 0 the dilaton
    equation. Away from the two initial values, every choice of i gives the same
    number: that the constraints agree is a test of the implementation. Sub-terms
    come from the memoised recursion.
    """
    ds = tuple(ds)
    if not 0 <= i < len(ds):
        raise ValueError(f"dvv removes one of the {len(ds)} points, got index {i}")
    k, rest = ds[i] - 1, ds[:i] + ds[i + 1 :]
    total = Fraction(0)
    for j, dj in enumerate(rest):  # the marked point j absorbs the removed one
        if dj + k >= 0:
            total += Fraction(
                double_factorial(2 * k + 2 * dj + 1), double_factorial(2 * dj - 1)
            ) * _correlator(g, _key(rest[:j] + (dj + k,) + rest[j + 1 :]))
    m = len(rest)
    for r in range(k):  # r + s = k - 1: the curve degenerates at a node
        s = k - 1 - r
        weight = Fraction(double_factorial(2 * r + 1) * double_factorial(2 * s + 1), 2)
        total += weight * _correlator(g - 1, _key((r, s) + rest))  # non-separating node
        for mask in range(1 << m):  # separating node: split the other points into I, J
            I = tuple(rest[b] for b in range(m) if mask >> b & 1)
            J = tuple(rest[b] for b in range(m) if not mask >> b & 1)
            g1, remainder = divmod(sum(I) + r + 2 - len(I), 3)  # dimension fixes g1
            if remainder == 0 and 0 <= g1 <= g:
                left = _correlator(g1, _key((r,) + I))
                if left:
                    total += weight * left * _correlator(g - g1, _key((s,) + J))
    return total / double_factorial(2 * k + 3)


@cache
def _correlator(g: int, ds: tuple[int, ...]) -> Fraction:
    n = len(ds)
    if not is_stable(g, n) or sum(ds) != 3 * g - 3 + n:
        return Fraction(0)
    if (g, ds) == (0, (0, 0, 0)):
        return Fraction(1)
    if (g, ds) == (1, (1,)):
        return Fraction(1, 24)
    return dvv(g, ds, 0)  # remove the smallest d: the cheapest constraint


def correlator(g: int, ds: Sequence[int]) -> Fraction:
    """<tau_d1 ... tau_dn>_g exactly, by the DVV recursion from <tau_0^3>_0 = 1 and
    <tau_1>_1 = 1/24 (memoised). Zero unless 2g - 2 + n > 0 and sum d_i = 3g - 3 + n."""
    if not (isinstance(g, int) and g >= 0 and all(isinstance(d, int) and d >= 0 for d in ds)):
        raise ValueError(
            f"intersection numbers need a genus g >= 0 and integers d_i >= 0, "
            f"got g={g!r}, d={tuple(ds)!r}"
        )
    return _correlator(g, _key(ds))


def partitions(total: int, n: int, largest: int | None = None) -> Iterator[tuple[int, ...]]:
    """Every multiset of n integers >= 0 summing to ``total``, largest first."""
    largest = total if largest is None else largest
    if n == 0:
        if total == 0:
            yield ()
        return
    for v in range(min(total, largest), -1, -1):
        if v * n < total:
            break
        for rest in partitions(total - v, n - 1, v):
            yield (v,) + rest


def generate(g_max: int, n_max: int) -> dict[str, list]:
    """Every nonzero <tau_d1 ... tau_dn>_g with g <= g_max, 1 <= n <= n_max.

    Returns plain lists (for :func:`iclr25.core.cached`): ``g``, ``n``, ``d`` (each
    partition, largest first), ``exact`` ("p/q" strings) and ``log_value``
    (natural log). Every number is a positive rational.
    """
    if g_max < 0 or n_max < 1:
        raise ValueError(f"generate needs g_max >= 0 and n_max >= 1, got {g_max}, {n_max}")
    rows: dict[str, list] = {"g": [], "n": [], "d": [], "exact": [], "log_value": []}
    for g in range(g_max + 1):
        for n in range(1, n_max + 1):
            if not is_stable(g, n):
                continue
            for ds in partitions(3 * g - 3 + n, n):
                value = correlator(g, ds)
                rows["g"].append(g)
                rows["n"].append(n)
                rows["d"].append(list(ds))
                rows["exact"].append(str(value))
                rows["log_value"].append(math.log(value.numerator) - math.log(value.denominator))
    return rows


class Dataset(NamedTuple):
    """The intersection numbers as arrays: genus, number of points, the partition
    padded with -1 to ``n_max`` columns (largest first) and the natural log value."""

    g: np.ndarray
    n: np.ndarray
    d: np.ndarray
    log_value: np.ndarray

    @classmethod
    def from_rows(cls, rows: dict[str, list], n_max: int) -> Dataset:
        d = np.full((len(rows["d"]), n_max), -1, dtype=np.int64)
        for row, ds in enumerate(rows["d"]):
            d[row, : len(ds)] = ds
        return cls(np.array(rows["g"]), np.array(rows["n"]), d, np.array(rows["log_value"]))

    def __len__(self) -> int:
        return len(self.g)

    def subset(self, index: np.ndarray) -> Dataset:
        return Dataset(*(a[index] for a in self))


# ---------------------------------------------------------------------------------
# Aggarwal's large-genus asymptotic
# ---------------------------------------------------------------------------------

ASYMPTOTIC_TERMS = ("log (6g-5+2n)!!", "-log(24^g g!)", "-sum log (2d_i+1)!!")


def log_double_factorial(m: np.ndarray) -> np.ndarray:
    """log m!! for odd m >= -1: log (2k-1)!! = log (2k)! - k log 2 - log k!, k = (m+1)/2."""
    k = (np.asarray(m, dtype=np.float64) + 1) / 2
    return np.vectorize(math.lgamma)(2 * k + 1) - k * math.log(2) - np.vectorize(math.lgamma)(k + 1)


def asymptotic_terms(data: Dataset) -> np.ndarray:
    """The three log-terms of Aggarwal's asymptotic, one column each (ASYMPTOTIC_TERMS):

        <tau_d1 ... tau_dn>_g ~ (6g-5+2n)!! / (24^g g! prod_i (2d_i+1)!!)   as g -> infinity,

    uniformly in d for n = o(sqrt g). Their sum is the log of the asymptotic.
    """
    g, n = data.g.astype(np.float64), data.n.astype(np.float64)
    top = log_double_factorial(6 * g - 5 + 2 * n)
    genus = -(g * math.log(24) + np.vectorize(math.lgamma)(g + 1))
    marked = np.where(data.d >= 0, log_double_factorial(2 * np.maximum(data.d, 0) + 1), 0.0).sum(
        axis=1
    )
    return np.stack([top, genus, -marked], axis=1)
