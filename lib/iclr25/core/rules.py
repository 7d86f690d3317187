"""What decides a claim: a :class:`Bound` (a point check) or a :class:`Margin` (an
estimate's 95% interval against the smallest effect worth reporting).

Written by hand, as the rest of :mod:`iclr25.core.claims`: no library decides
paper-versus-measured claims by such rules.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Bound:
    """A point check: a value holds if it is ``> gt``, ``>= ge``, ``< lt`` and ``<= le``
    (those that are set). A sequence of values holds if each does; NaN never holds."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None
    lt: float | None = None

    def __post_init__(self) -> None:
        if all(v is None for v in (self.ge, self.gt, self.le, self.lt)):
            raise ValueError("a Bound needs at least one of ge, gt, le, lt")

    def __call__(self, value: float | Sequence[float]) -> bool:
        values = [float(v) for v in np.ravel(np.asarray(value, dtype=float))]
        if not values:
            raise ValueError("a Bound checks at least one value, got none")
        tests = [
            (self.ge, lambda v, b: v >= b),
            (self.gt, lambda v, b: v > b),
            (self.le, lambda v, b: v <= b),
            (self.lt, lambda v, b: v < b),
        ]
        return all(op(v, b) for v in values for b, op in tests if b is not None)

    def __str__(self) -> str:
        signs = (("≥", self.ge), (">", self.gt), ("≤", self.le), ("<", self.lt))
        return ", ".join(f"{sign} {b:g}" for sign, b in signs if b is not None)


@dataclass(frozen=True)
class Margin:
    """An estimate's 95% interval against the smallest effect worth reporting.

    ``above=m``: the claim holds when the whole interval lies above ``m`` and is
    contradicted when the whole interval lies below it; ``below=m`` the other way round.
    An interval that contains ``m`` (or is NaN) is inconclusive. ``why`` gives the
    margin's reason: the paper's own effect size where it is known.
    """

    above: float | None = None
    below: float | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if (self.above is None) == (self.below is None):
            raise ValueError("a Margin needs exactly one of above, below")
        if not self.why:
            raise ValueError("a Margin says why it is the smallest effect worth reporting")

    def decide(self, low: float, high: float) -> str:
        """``holds``, ``contradicted`` or ``inconclusive`` for the interval [low, high]."""
        if np.isnan(low) or np.isnan(high):
            return "inconclusive"
        if self.above is not None:
            return (
                "holds"
                if low > self.above
                else "contradicted"
                if high < self.above
                else ("inconclusive")
            )
        return (
            "holds"
            if high < self.below
            else "contradicted"
            if low > self.below
            else ("inconclusive")
        )

    def __str__(self) -> str:
        side = f"> {self.above:g}" if self.above is not None else f"< {self.below:g}"
        return f"95% interval {side} ({self.why})"


Rule = Bound | Mapping[str, Bound] | Margin


def describe_rule(rule: Rule) -> str:
    """A rule in words: ``"≥ 10"``, ``"slope ≥ -0.75, ≤ -0.25; R² > 0.9"``, or a margin."""
    if isinstance(rule, (Bound, Margin)):
        return str(rule)
    return "; ".join(f"{name} {bound}" for name, bound in rule.items())


def check_bound(rule: Bound | Mapping[str, Bound], value: Any) -> bool:
    """Whether ``value`` meets a point rule: a :class:`Bound` takes a number or a sequence
    of numbers; a mapping of named bounds takes a mapping with the same names."""
    if isinstance(rule, Bound):
        return rule(value)
    if not isinstance(value, Mapping) or set(value) != set(rule):
        raise ValueError(
            f"this claim's rule names {sorted(rule)}; its value must be a "
            f"mapping with exactly those keys, got {value!r}"
        )
    return all(bound(value[name]) for name, bound in rule.items())
