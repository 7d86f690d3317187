"""The claims a chapter tests: one registry per chapter, the evidence from its notebook.

A chapter module holds ``CLAIMS``: claim id -> :class:`ClaimSpec`, written before the
run. Each entry gives the statement, its kind (``paper`` or ``setup``), the paper's
figure, the rule that decides it, the control it is measured against, the setup claims
it rests on and, where a miss is expected at our scale, the declared :class:`Gap`. The
notebook passes only the evidence::

    core.claim("accuracy-gain", estimate=stats.paired_runs(smoothed, plain))
    core.claim("locality-better", estimate=stats.paired_difference(fine, rome))
    core.claim("slope-recovered", value=z, measured=f"z = {z:.2f}")

Two kinds of rule decide a claim (:mod:`iclr25.core.rules`):

* :class:`Margin` -- an estimate with a 95% interval (:mod:`iclr25.core.stats`) against
  the smallest effect worth reporting: ``holds`` when the interval lies beyond the
  margin, ``contradicted`` when it lies wholly on the control's side of it,
  ``inconclusive`` when it straddles it;
* :class:`Bound` -- a point check (an exact count, an oracle, one number): ``holds`` or
  ``contradicted``.

A Margin claim's evidence says what its ``n`` counts (:attr:`Estimate.unit`):
independent training runs, or items of one fixed model. A claim on trained models rests
on at least :data:`MIN_RUNS` runs; one that keeps items as its unit names the model it
is about in its registry entry (:attr:`ClaimSpec.one_model`). :func:`under_replicated`
lists the claims that do neither.

A paper claim whose setup claim missed is ``inconclusive``, whatever its number: it
cannot hold on an experiment that did not reach the paper's regime. A miss with a
declared gap is a ``known gap``; an undeclared miss is ``FAILED`` and fails the build.

Written by hand: no library records paper-versus-measured claims with their rules.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.core.registry import (
    KINDS,
    MIN_RUNS,
    QUOTED_FROM_THE_CLAIM,
    ClaimSpec,
    Gap,
    check_registry,
    format_value,
)
from iclr25.core.rules import Margin, check_bound, describe_rule
from iclr25.core.stats import UNITS, Estimate, size

CLAIM_MIME = "application/vnd.iclr25.claim+json"
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


_STATUS_STYLE = {
    "holds": "color:#1a7f37",
    "inconclusive": "color:#6e7781",
    "known gap": "color:#9a6700",
    "FAILED": "color:#cf222e;font-weight:bold",
    "holds, gap declared": "color:#cf222e",
}


def _status_cell(c: Claim) -> str:
    why = ""
    if c.blocked_by:
        why = f"<br><small>rests on {', '.join(c.blocked_by)}, which missed</small>"
    elif c.status != c.outcome:
        why = f"<br><small>{c.outcome}</small>"
    return f"<td style='{_STATUS_STYLE[c.status]}'>{c.status}{why}</td>"


def _diagnosis_row(c: Claim, columns: int) -> str:
    """A declared gap's diagnosis, in a row of its own beneath its claim's, the table's
    full width, closed until opened; empty for a claim without one."""
    if not c.diagnosis:
        return ""
    return (
        f"<tr class='iclr25-diagnosis'><td colspan='{columns}'><details><summary>diagnosis "
        f"of <code>{html.escape(c.id)}</code></summary>{html.escape(c.diagnosis)}"
        "</details></td></tr>"
    )


def _estimate(c: Claim) -> str:
    """``0.12 [0.03, 0.21], 5 runs``, or empty for a point claim; a claim on one model
    says which."""
    if c.estimate is None:
        return ""
    model = f" of {html.escape(c.one_model)}" if c.one_model and c.unit == "items" else ""
    return f"{c.estimate:.3g} {c.interval}, {c.size}{model}"


def _table(columns: Mapping[str, int], rows: Sequence[str]) -> str:
    total = sum(columns.values())
    widths = "".join(f"<col style='width: {100 * w / total:.1f}%'>" for w in columns.values())
    head = "".join(f"<th>{h}</th>" for h in columns)
    return (  # the box scrolls sideways on a narrow screen; the page does not
        f"<div class='iclr25-scroll'><table class='iclr25-claims'><colgroup>{widths}</colgroup>"
        f"<thead><tr>{head}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table></div>"
    )


def claim_rows(claims: Iterable[Claim], *, chapter_column: bool = False) -> str:
    """Claims as an HTML table, with the outcome last: the claim's status and the rule's
    own outcome where that differs; a declared gap's diagnosis opens beneath its row.

    A chapter's table fits its page's column: the id and kind; the statement with its
    control beneath; the paper's figure; ours with the estimate, its 95% interval and n
    beneath; the rule. The Scoreboard's (``chapter_column``) gives the chapter, and
    the control, estimate, interval, runs and items each a column of their own, to sort
    by (runs blank for a claim on one model, items blank where they were not counted).
    """
    if chapter_column:
        columns = {
            "chapter": 7,
            "claim": 10,
            "statement": 16,
            "paper": 13,
            "control": 11,
            "measured here": 15,
            "estimate": 6,
            "95% interval": 8,
            "runs": 4,
            "items": 5,
            "rule": 10,
            "outcome": 9,
        }
    else:
        columns = {
            "claim": 14,
            "statement and control": 25,
            "paper": 18,
            "measured here": 20,
            "rule": 11,
            "outcome": 12,
        }
    rows = []
    for c in claims:
        wrappable = html.escape(c.id).replace("_", "_<wbr>").replace("-", "-<wbr>")
        claim = f"<td><code>{wrappable}</code><br><small>{c.kind}</small></td>"
        if chapter_column:
            rows.append(
                f"<tr><td>{html.escape(c.chapter)}</td>{claim}"
                f"<td>{html.escape(c.statement)}</td><td>{html.escape(c.paper)}</td>"
                f"<td>{html.escape(c.control)}</td><td>{html.escape(c.measured)}</td>"
                f"<td>{'' if c.estimate is None else f'{c.estimate:.3g}'}</td>"
                f"<td>{c.interval}</td><td>{_runs(c)}</td><td>{_items(c)}</td>"
                f"<td>{html.escape(c.rule)}</td>{_status_cell(c)}</tr>"
                + _diagnosis_row(c, len(columns))
            )
        else:
            estimate = (
                f"<br><small>estimate {_estimate(c)}</small>" if c.estimate is not None else ""
            )
            rows.append(
                f"<tr>{claim}<td>{html.escape(c.statement)}<br><small>control: "
                f"{html.escape(c.control)}</small></td><td>{html.escape(c.paper)}</td>"
                f"<td>{html.escape(c.measured)}{estimate}</td>"
                f"<td>{html.escape(c.rule)}</td>{_status_cell(c)}</tr>"
                + _diagnosis_row(c, len(columns))
            )
    return _table(columns, rows)


def _runs(c: Claim) -> str:
    return str(c.n) if c.unit == "runs" else ""


def _items(c: Claim) -> str:
    if c.unit == "runs":
        return "" if c.items is None else str(c.items)
    return "" if c.n is None else str(c.n)


def json_value(value: Any) -> Any:
    """A claim's value as JSON: a number, a list of numbers, or a mapping of those; NaN
    (which JSON lacks) is ``None``."""
    if isinstance(value, Mapping):
        return {str(k): json_value(v) for k, v in value.items()}
    if np.ndim(value):
        return [json_value(v) for v in np.ravel(value)]
    number = float(value)
    return None if np.isnan(number) else number


# ---------------------------------------------------------------------------------
# Recording claims in a chapter's run
# ---------------------------------------------------------------------------------

_RUN: dict[str, Any] = {"slug": None, "claims": [], "registry": {}, "params": {}}

EVIDENCE = ("value", "estimate", "interval", "n", "unit", "measured", "quote")


def start(
    slug: str, registry: Mapping[str, ClaimSpec], params: Mapping[str, Any] | None = None
) -> None:
    """Begin a fresh claims record for chapter ``slug``, decided by ``registry``, for a
    run with ``params`` (which decide the gaps declared only ``when`` they match)."""
    check_registry(slug, registry)
    params = dict(params or {})
    for id, spec in registry.items():
        unknown = sorted(set((spec.gap.when or {}) if spec.gap else ()) - set(params))
        if unknown and params:
            raise ValueError(
                f"{slug}.CLAIMS[{id!r}]: its gap's 'when' names {', '.join(unknown)}, "
                f"which are not parameters of the chapter ({', '.join(params)})"
            )
    _RUN.update(slug=slug, claims=[], registry=registry, params=params)


def claim(
    id: str,
    *refused_args: Any,
    value: Any = None,
    estimate: Estimate | float | None = None,
    interval: tuple[float, float] | None = None,
    n: int | None = None,
    unit: str | None = None,
    measured: str | None = None,
    quote: Mapping[str, Any] | None = None,
    **refused: Any,
) -> Claim:
    """Record and show one claim from its evidence; the module's ``CLAIMS[id]`` holds the
    rest and decides it.

    A :class:`Bound` rule takes ``value`` (a number, numbers, or a mapping named as the
    rule). A :class:`Margin` rule takes ``estimate``: a :class:`~iclr25.core.stats.Estimate`
    that says its unit, or a number with its 95% ``interval``, ``n`` and ``unit``
    (``"runs"`` or ``"items"``). ``measured`` says it in words
    (default: the value or the estimate). ``quote`` gives the run's numbers that the
    declared gap's diagnosis names (:class:`Gap`), exactly those.
    """
    from IPython.display import display

    if refused_args or refused:
        given = [repr(a)[:40] for a in refused_args] + [repr(k) for k in refused]
        raise TypeError(
            f"claim({id!r}) got {', '.join(given)}; it takes only the evidence "
            f"({', '.join(EVIDENCE)}): the statement, kind, paper's figure, rule, control "
            "and gap live in the chapter module's CLAIMS"
        )
    if _RUN["slug"] is None:
        raise RuntimeError("claim() before chapter(): start the chapter first")
    slug, registry = _RUN["slug"], _RUN["registry"]
    if id not in registry:
        raise KeyError(
            f"claim {id!r} has no entry in iclr25.chapters.{slug}.CLAIMS; "
            f"its entries: {', '.join(registry)}"
        )
    if any(c.id == id for c in _RUN["claims"]):
        raise ValueError(f"claim {id!r} was already recorded in this run")
    spec: ClaimSpec = registry[id]
    record = dict(estimate=None, low=None, high=None, n=None, unit=None, items=None)
    if isinstance(spec.rule, Margin):
        if value is not None or estimate is None:
            raise TypeError(
                f"claim {id!r} is decided by a Margin: pass estimate= (a stats.Estimate, "
                "or a number with interval= and n=), not value="
            )
        if not isinstance(estimate, Estimate):
            if interval is None or n is None or unit is None:
                raise TypeError(
                    f"claim {id!r}: a numeric estimate needs interval=, n= and unit= "
                    f"({' or '.join(map(repr, UNITS))})"
                )
            estimate = Estimate(float(estimate), *map(float, interval), int(n), "given", unit)
        elif interval is not None or n is not None or unit is not None:
            raise TypeError(f"claim {id!r}: a stats.Estimate carries its interval, n and unit")
        if not estimate.unit:
            raise TypeError(
                f"claim {id!r}: its estimate does not say what its n counts; accepted units: "
                "'runs' (independent training runs) or 'items' (of one fixed model)"
            )
        record = dict(
            estimate=estimate.value,
            low=estimate.low,
            high=estimate.high,
            n=estimate.n,
            unit=estimate.unit,
            items=estimate.items,
        )
        record = {
            k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in record.items()
        }
        outcome = spec.rule.decide(estimate.low, estimate.high)
        value = estimate.value
        if measured is None:
            measured = str(estimate)
    else:
        if any(e is not None for e in (estimate, interval, n, unit)):
            raise TypeError(
                f"claim {id!r} is a point check (a Bound): pass value=, not an estimate"
            )
        if value is None:
            raise TypeError(f"claim {id!r} needs its value=")
        outcome = "holds" if check_bound(spec.rule, value) else "contradicted"
        if measured is None:
            measured = format_value(value)
    recorded = {c.id: c for c in _RUN["claims"]}
    missing = [s for s in spec.rests_on if s not in recorded]
    if missing:
        raise RuntimeError(
            f"claim {id!r} rests on {', '.join(missing)}: record that setup claim first"
        )
    quoted = _quotes(id, spec.gap, quote, dict(record, value=value, measured=measured))
    gap = spec.gap if spec.gap and spec.gap.applies(_RUN["params"]) else None
    c = Claim(
        slug,
        id,
        spec.kind,
        spec.statement,
        spec.paper,
        spec.control,
        describe_rule(spec.rule),
        measured,
        outcome,
        json_value(value),
        **record,
        diagnosis=gap.text(quoted) if gap else None,
        declared_after=bool(gap and gap.after_run),
        varies=bool(gap and gap.varies),
        one_model=spec.one_model,
        rests_on=list(spec.rests_on),
        blocked_by=[s for s in spec.rests_on if recorded[s].outcome != "holds"],
    )
    _RUN["claims"].append(c)
    display({"text/html": claim_rows([c]), CLAIM_MIME: asdict(c)}, raw=True)
    return c


def _quotes(
    id: str, gap: Gap | None, quote: Mapping[str, Any] | None, own: Mapping[str, Any]
) -> dict[str, Any]:
    """The numbers a gap's diagnosis names: the claim's own evidence and ``quote``, which
    must give exactly the other fields (refused with one line naming what differs)."""
    if gap is None:
        if quote:
            raise TypeError(f"claim {id!r} has no declared gap: quote= fills a gap's diagnosis")
        return {}
    wanted = gap.fields - set(QUOTED_FROM_THE_CLAIM)
    given = set(quote or {})
    if wanted != given:
        missing, unknown = sorted(wanted - given), sorted(given - wanted)
        raise TypeError(
            f"claim {id!r}: its gap's diagnosis quotes {sorted(wanted) or 'nothing'} from "
            f"the run; quote= "
            + "; ".join(
                part
                for part in (
                    missing and f"lacks {', '.join(missing)}",
                    unknown and f"gives {', '.join(unknown)}, which it does not name",
                )
                if part
            )
        )
    return {**own, **(quote or {})}


def counts(claims: Sequence[Claim]) -> dict[str, int]:
    """The paper claims' tally: tested, holds, contradicted, inconclusive, known gaps
    (declared before and after the run), failed; and the setup claims held of all."""
    paper = [c for c in claims if c.kind == "paper"]
    setup = [c for c in claims if c.kind == "setup"]
    gaps = [c for c in paper if c.status == "known gap"]
    return {
        "paper claims": len(paper),
        "holds": sum(c.status == "holds" for c in paper),
        "contradicted": sum(c.outcome == "contradicted" and not c.blocked_by for c in paper),
        "inconclusive": sum(c.outcome == "inconclusive" or bool(c.blocked_by) for c in paper),
        "gaps before": sum(not c.declared_after for c in gaps),
        "gaps after": sum(c.declared_after for c in gaps),
        "failed": sum(c.status in ("FAILED", "holds, gap declared") for c in paper),
        "setup claims": len(setup),
        "setup holds": sum(c.outcome == "holds" for c in setup),
        "setup failed": sum(c.status in ("FAILED", "holds, gap declared") for c in setup),
    }


def tally(counted: Mapping[str, int]) -> str:
    """The tally in one line of words."""
    gaps = counted["gaps before"] + counted["gaps after"]
    text = (
        f"{counted['holds']} of {counted['paper claims']} paper claims hold, "
        f"{counted['contradicted']} contradicted, {counted['inconclusive']} inconclusive"
    )
    if gaps:
        text += (
            f"; {gaps} known gap{'s' * (gaps != 1)} ({counted['gaps before']} declared "
            f"before the run, {counted['gaps after']} after)"
        )
    if counted["setup claims"]:
        text += f"; {counted['setup holds']} of {counted['setup claims']} setup claims hold"
    failed = counted["failed"] + counted["setup failed"]
    return text + (f"; {failed} FAILED" if failed else "")


def claims_table() -> list[Claim]:
    """Show every claim recorded so far in this chapter as one table; return them."""
    from IPython.display import HTML, display

    claims: list[Claim] = list(_RUN["claims"])
    display(HTML(f"<p><strong>{tally(counts(claims))}.</strong></p>{claim_rows(claims)}"))
    return claims


def read_claims(notebook: str | Path | Mapping[str, Any]) -> list[Claim]:
    """The claims recorded in an executed notebook (a path or an nbformat dict)."""
    if not isinstance(notebook, Mapping):
        notebook = json.loads(Path(notebook).read_text())
    found = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            record = output.get("data", {}).get(CLAIM_MIME)
            if record is not None:
                found.append(claim_from_record(record))
    return found


_FIELDS = {f.name for f in fields(Claim) if f.init}


def claim_from_record(record: Mapping[str, Any]) -> Claim:
    """A :class:`Claim` from its JSON record (``status`` is computed again, not trusted)."""
    return Claim(**{k: v for k, v in record.items() if k in _FIELDS})


def book_problems(claims: Sequence[Claim], registry: Mapping[str, ClaimSpec]) -> list[str]:
    """What a book-mode run must not have: a FAILED claim, a stale gap declaration, or a
    registry entry that no claim of the run decided. Empty when the run is in order."""
    problems = [
        f"{c.chapter}/{c.id}: {c.status} (measured {c.measured}; rule {c.rule})"
        for c in claims
        if c.status in ("FAILED", "holds, gap declared")
    ]
    ran = {c.id for c in claims}
    problems += [
        f"CLAIMS holds {cid!r}, which no claim of the run decided"
        for cid in registry
        if cid not in ran
    ]
    return problems


def under_replicated(claims: Iterable[Claim]) -> list[Claim]:
    """The claims decided by an interval that rest on fewer than :data:`MIN_RUNS`
    training runs and name no one model they are about: each is a claim on trained
    models (or generated data) whose interval measures one draw of them."""
    return [
        c
        for c in claims
        if c.estimate is not None
        and not c.one_model
        and not (c.unit == "runs" and c.n is not None and c.n >= MIN_RUNS)
    ]
