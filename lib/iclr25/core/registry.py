"""A chapter's claims registry: what each claim says and what decides it, written
before the run (:class:`ClaimSpec`), with the gap declared where a miss is expected at
the book's scale (:class:`Gap`), and :func:`check_registry`, which refuses a registry
that cannot decide its claims. :mod:`iclr25.core.claims` records what a run made of
them.

Written by hand, as the rest of :mod:`iclr25.core.claims`: no library records
paper-versus-measured claims with their rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from string import Formatter
from typing import Any

import numpy as np

from iclr25.core.rules import Bound, Margin, Rule

KINDS = ("paper", "setup")
MIN_RUNS = 5
"""The fewest independent training runs a claim on trained models is decided over."""
SMOLLM2 = "SmolLM2-135M-Instruct"
"""The fixed pretrained model of the language-model chapters: the ``one_model`` of their
claims on its edits and prompts."""

AFTER_THE_RUN = "Declared after a book run had missed this claim."
"""The line that opens the diagnosis of a gap declared after the run that missed it, so
that a reader sees which gaps were predicted and which were not."""

VARIES = (
    "At these settings its outcome differs between machines: it has held on one and "
    "missed on another, as their floating-point rounding steers the training."
)
"""The line that opens the diagnosis of a gap whose claim was seen both ways
(:attr:`Gap.varies`)."""


# ---------------------------------------------------------------------------------
# The registry
# ---------------------------------------------------------------------------------


QUOTED_FROM_THE_CLAIM = ("value", "measured", "estimate", "low", "high", "n")
"""The fields a gap's diagnosis may name without ``quote=``: the claim's own evidence."""


class _Quoted:
    """A run's number as a diagnosis quotes it: ``{x}`` as :func:`format_value` writes
    it, ``{x:.0%}`` with the format given; a missing number (None, NaN) as ``n/a``."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __format__(self, spec: str) -> str:
        if isinstance(self.value, str):
            return format(self.value, spec)
        if self.value is None or (np.ndim(self.value) == 0 and np.isnan(float(self.value))):
            return "n/a"
        return format(self.value, spec) if spec else format_value(self.value)


@dataclass(frozen=True)
class Gap:
    """A miss expected at our scale: why, and what would show the claim. ``after_run``
    marks a gap declared after a book run had missed the claim. ``when`` limits it to
    runs whose parameters have those values (``{"grok_setting": "quick"}``): a run at
    another setting, which may show the claim, is decided without it. ``varies`` marks
    a claim that, at the same settings, held on one machine and missed on another (a
    seed's training follows the machine's rounding): its outcome is a draw at this
    power, so a hold under it is ``holds``, not a stale declaration.

    A diagnosis never copies a run's number by hand: it names it as a field,
    ``"{val_share:.0%} on validation"``, and the notebook passes the number with the
    claim's evidence (``core.claim(..., quote={"val_share": v})``). The claim's own
    ``{value}``, ``{measured}``, ``{estimate}``, ``{low}``, ``{high}`` and ``{n}`` need
    no quote."""

    diagnosis: str
    after_run: bool = False
    when: Mapping[str, Any] | None = None
    varies: bool = False

    @property
    def fields(self) -> set[str]:
        """The names the diagnosis quotes from the run (raises on a malformed field)."""
        return {name for _, name, _, _ in Formatter().parse(self.diagnosis) if name is not None}

    def text(self, quoted: Mapping[str, Any] | None = None) -> str:
        """The diagnosis with the run's numbers in its fields, opened by
        :data:`AFTER_THE_RUN` where the gap was declared after the run and by
        :data:`VARIES` where the claim was seen both ways."""
        filled = self.diagnosis.format_map({k: _Quoted(v) for k, v in (quoted or {}).items()})
        openers = [AFTER_THE_RUN] * self.after_run + [VARIES] * self.varies
        return " ".join([*openers, filled])

    def applies(self, params: Mapping[str, Any]) -> bool:
        """Whether the gap is declared for a run with these parameters."""
        return all(params.get(k) == v for k, v in (self.when or {}).items())


@dataclass(frozen=True)
class ClaimSpec:
    """One entry of a chapter's ``CLAIMS``, fixed before the run.

    ``statement``: the claim in words. ``rule``: what decides it. ``control``: what it is
    measured against, which would not pass if the method did nothing. ``kind``:
    ``paper`` (``paper`` then gives the paper's figure) or ``setup`` (the experiment
    reached the regime the paper describes). ``rests_on``: the setup claims it needs.
    ``gap``: the declared gap, if a miss is expected. ``one_model``: for a claim that
    keeps items as its unit, the one model it is about (``"SmolLM2-135M-Instruct"``, a
    fixed pretrained model; ``"the seed-0 tiny model"``, whose mechanism the claim
    describes); empty for a claim on trained models, which is decided over runs.
    """

    statement: str
    rule: Rule
    control: str
    kind: str = "paper"
    paper: str = ""
    rests_on: tuple[str, ...] = ()
    gap: Gap | None = None
    one_model: str = ""


def check_registry(slug: str, registry: Mapping[str, ClaimSpec]) -> None:
    """Refuse a registry that cannot decide its claims, with one line naming the entry."""
    where = f"iclr25.chapters.{slug}.CLAIMS"
    if not isinstance(registry, Mapping) or not registry:
        raise TypeError(f"{where} must be a non-empty dict of claim id -> ClaimSpec")
    for cid, spec in registry.items():
        if not isinstance(spec, ClaimSpec):
            raise TypeError(f"{where}[{cid!r}] is a {type(spec).__name__}, not a ClaimSpec")
        if spec.kind not in KINDS:
            raise ValueError(f"{where}[{cid!r}] has kind {spec.kind!r}; accepted: paper, setup")
        if spec.kind == "paper" and not spec.paper:
            raise ValueError(f"{where}[{cid!r}] is a paper claim without the paper's figure")
        if not spec.statement or not spec.control:
            raise ValueError(f"{where}[{cid!r}] needs a statement and a control")
        if not isinstance(spec.one_model, str):
            raise TypeError(f"{where}[{cid!r}].one_model names a model in words, or is empty")
        rule = spec.rule
        named = rule.values() if isinstance(rule, Mapping) else [rule]
        if (
            not named
            or not all(isinstance(r, (Bound, Margin)) for r in named)
            or (isinstance(rule, Mapping) and any(isinstance(r, Margin) for r in named))
        ):
            raise TypeError(f"{where}[{cid!r}].rule must be a Bound, a dict of Bounds, or a Margin")
        if spec.gap is not None:
            try:
                quoted = spec.gap.fields
            except ValueError as err:
                raise ValueError(f"{where}[{cid!r}]'s gap: a malformed field ({err})") from None
            if any(not name.isidentifier() for name in quoted):
                raise ValueError(
                    f"{where}[{cid!r}]'s gap quotes {sorted(quoted)}: each field is a plain "
                    "name, {name} or {name:format}"
                )
        for other in spec.rests_on:
            if other not in registry or registry[other].kind != "setup":
                raise ValueError(
                    f"{where}[{cid!r}] rests on {other!r}, which is not a setup claim of "
                    f"the registry"
                )


def format_value(value: Any) -> str:
    """A claim's value in a few characters: ``0.8123``, ``[0.1, 0.2]``, ``r2 0.95; slope -1``."""
    if isinstance(value, Mapping):
        return "; ".join(f"{k} {format_value(v)}" for k, v in value.items())
    if np.ndim(value):
        return "[" + ", ".join(f"{float(v):.4g}" for v in np.ravel(value)) + "]"
    return f"{float(value):.4g}"
