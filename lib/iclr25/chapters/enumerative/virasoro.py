"""The Virasoro constraints as residuals of a model's predictions: the string and dilaton
equations (L_{-1}, L_0), which relate numbers of one genus, and L_1, which ties genus g to
genus g - 1 and to products of lower genera. Written by hand: no library writes the
constraints as linear relations between rows of a data set."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from iclr25.chapters.enumerative.intersection import Dataset, is_stable

# ---------------------------------------------------------------------------------
# The Virasoro constraints in the predictions: string and dilaton residuals
# ---------------------------------------------------------------------------------


class Equations(NamedTuple):
    """Linear relations exp(y[lhs[e]]) = sum_t exp(y[row[t]] + y[partner[t]] + log_coef[t])
    over the terms t with ``term_eq[t] == e``, between rows of one data set (``kind[e]``
    names each); ``partner[t]`` is -1 for a term with one number (y[-1] reads as 0)."""

    kind: np.ndarray  # (E,) "string", "dilaton" or "L_1"
    lhs: np.ndarray  # (E,) row of the left-hand side
    term_eq: np.ndarray  # (T,) equation of each right-hand term
    row: np.ndarray  # (T,) row of each right-hand term
    log_coef: np.ndarray  # (T,) log of its coefficient
    partner: np.ndarray  # (T,) row of the second factor of a product term, or -1


Key = tuple[int, tuple[int, ...]]


def _key(g: int, ds: Iterable[int]) -> Key:
    """A row's identity: its genus and its partition, largest first."""
    return int(g), tuple(sorted((int(v) for v in ds if v >= 0), reverse=True))


def _equations(kind: list, lhs: list, terms: list[list[tuple[int, int, float]]]) -> Equations:
    """Equations from their left-hand rows and, for each, its (row, partner, log coef)."""
    flat = [(e, *term) for e, eq_terms in enumerate(terms) for term in eq_terms]
    term_eq, row, partner, log_coef = (np.array(c) for c in zip(*flat)) if flat else [[]] * 4
    return Equations(
        np.array(kind, dtype=object),
        np.array(lhs, dtype=np.int64),
        np.asarray(term_eq, dtype=np.int64),
        np.asarray(row, dtype=np.int64),
        np.asarray(log_coef, dtype=np.float64),
        np.asarray(partner, dtype=np.int64),
    )


def virasoro_equations(data: Dataset) -> Equations:
    """The string (L_{-1}) and dilaton (L_0) equations that hold among the rows of ``data``:

        string   <tau_0 tau_D>_g = sum_{j: d_j > 0} <tau_{d_j - 1} tau_{D minus j}>_g,
        dilaton  <tau_1 tau_D>_g = (2g - 2 + |D|) <tau_D>_g,

    one of each for every row with a d_i = 0 (resp. 1) whose reduced numbers, at the same
    genus with one point fewer, are stable and all present in ``data``. Both sides have
    the same genus: on held-out genera the equations relate predictions to predictions.
    """
    index = {_key(g, d): i for i, (g, d) in enumerate(zip(data.g, data.d))}
    kind, lhs, terms = [], [], []
    for (g, ds), i in index.items():
        for removed, name in ((0, "string"), (1, "dilaton")):
            if removed not in ds or not is_stable(g, len(ds) - 1):
                continue
            rest = list(ds)
            rest.remove(removed)
            if name == "string":  # lower one of the other points by one
                reduced = [
                    (rest[:j] + [d - 1] + rest[j + 1 :], 0.0) for j, d in enumerate(rest) if d > 0
                ]
            else:
                reduced = [(rest, math.log(2 * g - 2 + len(rest)))]
            rows = [index.get(_key(g, t)) for t, _ in reduced]
            if not reduced or any(r is None for r in rows):
                continue
            kind.append(name)
            lhs.append(i)
            terms.append([(r, -1, c) for r, (_, c) in zip(rows, reduced)])
    return _equations(kind, lhs, terms)


def l1_equations(data: Dataset, genera: Iterable[int]) -> Equations:
    """The Virasoro constraint L_1 (DVV with k = 1, removing a tau_2), one equation for
    every row of ``data`` with genus in ``genera`` and a d_i = 2 whose nonzero terms are
    all present in ``data``; D is the other points:

        15 <tau_2 tau_D>_g = sum_{j in D} (2d_j+1)(2d_j+3) <tau_{d_j+1} tau_{D minus j}>_g
                             + 1/2 <tau_0 tau_0 tau_D>_{g-1}
                             + 1/2 sum_{g1+g2=g, I u J = D} <tau_0 tau_I>_{g1} <tau_0 tau_J>_{g2}.

    Unlike L_{-1} and L_0 it ties genus g to genus g - 1 (with one point more) and to
    products of lower genera, so an error common to one genus does not cancel. A term
    is zero (left out) where its moduli space is unstable or its degrees miss the
    dimension 3g - 3 + n; the ordered splits (I, J) are each counted.
    """
    index = {_key(g, d): i for i, (g, d) in enumerate(zip(data.g, data.d))}
    keep = set(int(g) for g in genera)

    def nonzero(g: int, ds: tuple[int, ...]) -> bool:
        return is_stable(g, len(ds)) and sum(ds) == 3 * g - 3 + len(ds)

    kind, lhs, terms = [], [], []
    for (g, ds), i in index.items():
        if g not in keep or 2 not in ds:
            continue
        rest = list(ds)
        rest.remove(2)
        factors = [  # ([(genus, partition), ...], coefficient) of each right-hand term
            ([(g, tuple(rest[:j] + [d + 1] + rest[j + 1 :]))], (2 * d + 1) * (2 * d + 3) / 15)
            for j, d in enumerate(rest)
        ]
        factors.append(([(g - 1, (0, 0, *rest))], 1 / 30))
        for mask in range(1 << len(rest)):  # separating node: I gets the points in mask
            I = tuple(d for b, d in enumerate(rest) if mask >> b & 1)
            J = tuple(d for b, d in enumerate(rest) if not mask >> b & 1)
            g1, remainder = divmod(sum(I) + 2 - len(I), 3)  # dimension fixes g1
            if remainder == 0:
                factors.append(([(g1, (0, *I)), (g - g1, (0, *J))], 1 / 30))
        factors = [(f, c) for f, c in factors if all(nonzero(*part) for part in f)]
        rows = [[index.get(_key(*part)) for part in f] for f, _ in factors]
        if any(r is None for pair in rows for r in pair):
            continue
        kind.append("L_1")
        lhs.append(i)
        terms.append(
            [(r[0], r[-1] if len(r) > 1 else -1, math.log(c)) for r, (_, c) in zip(rows, factors)]
        )
    return _equations(kind, lhs, terms)


def virasoro_residuals(eqs: Equations, y: np.ndarray) -> np.ndarray:
    """log(left side) - log(right side) of every equation for log values ``y`` (one per row
    of the data set the equations index), in nats; zero on the exact numbers. In the
    string and dilaton equations a common offset of all log values of one genus cancels:
    they measure the relative structure within a genus, not its level; in L_1 it does
    not."""
    y = np.asarray(y, dtype=np.float64)
    second = np.where(eqs.partner >= 0, y[eqs.partner], 0.0)
    terms = y[eqs.row] + second + eqs.log_coef
    peak = np.full(len(eqs.lhs), -np.inf)
    np.maximum.at(peak, eqs.term_eq, terms)
    total = np.zeros(len(eqs.lhs))
    np.add.at(total, eqs.term_eq, np.exp(terms - peak[eqs.term_eq]))
    return y[eqs.lhs] - (peak + np.log(total))
