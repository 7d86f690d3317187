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

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from iclr25.core.outcomes import Claim, claim_from_record
from iclr25.core.registry import (
    MIN_RUNS,
    QUOTED_FROM_THE_CLAIM,
    ClaimSpec,
    Gap,
    check_registry,
    format_value,
)
from iclr25.core.report import HOW_DECIDED, claim_rows, outcome_paragraph
from iclr25.core.rules import Margin, check_bound, describe_rule
from iclr25.core.stats import UNITS, Estimate

CLAIM_MIME = "application/vnd.iclr25.claim+json"


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
    record.update(margin=None, beyond=None)
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
            margin=spec.rule.above if spec.rule.above is not None else spec.rule.below,
            beyond="above" if spec.rule.above is not None else "below",
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
    """Show every claim recorded so far in this chapter: at a glance
    (:func:`iclr25.core.glance.claims_figure`), then as one table with the tally, how
    the claims are decided, and the outcome in words; return them."""
    from IPython.display import HTML, display

    from iclr25.core.glance import claims_figure

    claims: list[Claim] = list(_RUN["claims"])
    claims_figure(claims).show()
    display(
        HTML(
            f"<p><strong>{tally(counts(claims))}.</strong> {HOW_DECIDED}</p>"
            f"{claim_rows(claims)}{outcome_paragraph(claims)}"
        )
    )
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
