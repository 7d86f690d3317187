"""What a run made of a claim: the :class:`Claim` record, its outcome and its status.

:mod:`iclr25.core.claims` records a claim against its chapter's registry and makes this
record of it; :mod:`iclr25.core.report` and :mod:`iclr25.core.glance` draw it, and
:func:`claim_from_record` reads it back from an executed notebook's JSON.

Written by hand: no library records paper-versus-measured claims with their rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from iclr25.core.registry import KINDS
from iclr25.core.stats import size

OUTCOMES = ("holds", "contradicted", "inconclusive")
STATUSES = ("holds", "inconclusive", "known gap", "FAILED", "holds, gap declared")


# ---------------------------------------------------------------------------------
# What a run made of a claim
# ---------------------------------------------------------------------------------


@dataclass
class Claim:
    """One claim as a chapter tested it, and what became of it.

    ``outcome`` is what the rule made of the evidence (``holds``, ``contradicted``,
    ``inconclusive``); ``blocked_by`` lists the setup claims it rests on that missed.
    ``status`` follows:

    ================  ============  ============  =========================
    blocked by setup  outcome       declared gap  status
    ================  ============  ============  =========================
    yes               any           any           ``inconclusive``
    no                holds         no            ``holds``
    no                holds         yes           ``holds, gap declared`` (stale)
    no                holds         it varies     ``holds``
    no                a miss        yes           ``known gap``
    no                a miss        no            ``FAILED``
    ================  ============  ============  =========================

    A claim decided by a :class:`Margin` keeps its ``margin`` and the side it must clear
    (``beyond``: ``above`` or ``below``), from which :mod:`iclr25.core.glance` draws it.
    """

    chapter: str
    id: str
    kind: str
    statement: str
    paper: str
    control: str
    rule: str
    measured: str
    outcome: str
    value: Any = None
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    unit: str | None = None
    items: int | None = None
    margin: float | None = None
    beyond: str | None = None
    one_model: str = ""
    diagnosis: str | None = None
    declared_after: bool = False
    varies: bool = False
    rests_on: list[str] = field(default_factory=list)
    blocked_by: list[str] = field(default_factory=list)
    status: str = field(init=False)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(
                f"claim {self.id!r} has kind {self.kind!r}; accepted: {', '.join(KINDS)}"
            )
        if self.outcome not in OUTCOMES:
            raise ValueError(
                f"claim {self.id!r} has outcome {self.outcome!r}; accepted: {', '.join(OUTCOMES)}"
            )
        declared = self.diagnosis is not None
        if self.blocked_by:
            self.status = "inconclusive"
        elif self.outcome == "holds":
            self.status = "holds, gap declared" if declared and not self.varies else "holds"
        else:
            self.status = "known gap" if declared else "FAILED"

    @property
    def holds(self) -> bool:
        return self.status == "holds"

    @property
    def size(self) -> str:
        """What the estimate rests on (:func:`iclr25.core.stats.size`)."""
        return size(self.n, self.unit, self.items)

    @property
    def interval(self) -> str:
        """``[low, high]`` as text, or empty for a point claim."""
        if self.low is None or self.high is None:
            return "n/a" if self.estimate is not None else ""
        return f"[{self.low:.3g}, {self.high:.3g}]"


_FIELDS = {f.name for f in fields(Claim) if f.init}


def claim_from_record(record: Mapping[str, Any]) -> Claim:
    """A :class:`Claim` from its JSON record (``status`` is computed again, not trusted)."""
    return Claim(**{k: v for k, v in record.items() if k in _FIELDS})
