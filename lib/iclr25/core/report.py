"""The claims as a reader sees them: a table of compact rows with folds beneath, the
Scoreboard's sortable table, and the outcome in words.

:func:`claim_rows` draws what :mod:`iclr25.core.claims` recorded; :func:`outcome_paragraph`
writes, from the decided claims, the paragraph beneath a chapter's table, so that the
page cannot disagree with its table at another seed.

Written by hand: HTML of this shape is a few f-strings.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the records this module draws; claims.py imports this module
    from iclr25.core.outcomes import Claim

_STATUS_STYLE = {  # a colour the book's stylesheet sets for each theme, else light-mode's
    "holds": "color:var(--iclr25-holds, #1a7f37)",
    "inconclusive": "color:var(--iclr25-muted, #6e7781)",
    "known gap": "color:var(--iclr25-gap, #9a6700)",
    "FAILED": "color:var(--iclr25-failed, #cf222e);font-weight:bold",
    "holds, gap declared": "color:var(--iclr25-failed, #cf222e)",
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
    own outcome where that differs.

    A chapter's table keeps one compact row per claim: the id and kind, the statement,
    what was measured with what it rests on (``n`` runs or items), and the outcome. The
    control, the paper's figure, the rule and the estimate on the rule's scale fold
    beneath the row, with a declared gap's diagnosis; a rule that several claims share
    is given once, under the table, and named by a letter in their folds. The
    Scoreboard's (``chapter_column``) gives the chapter, and the control, estimate,
    interval, runs and items each a column of their own, to sort by (runs blank for a
    claim on one model, items blank where they were not counted).
    """
    claims = list(claims)
    if chapter_column:
        return _scoreboard_rows(claims)
    columns = {"claim": 16, "statement": 34, "measured here": 34, "outcome": 14}
    shared = _shared_rules(claims)
    rows = []
    for c in claims:
        said = c.estimate is None or c.size in c.measured  # what the estimate rests on
        size = "" if said else f"<br><small>{c.size}</small>"
        rule = f"rule {shared[c.rule]}" if c.rule in shared else html.escape(c.rule)
        estimate = f"; estimate {_estimate(c)}" if c.estimate is not None else ""
        diagnosis = (
            f"<br><strong>Diagnosis.</strong> {html.escape(c.diagnosis)}" if c.diagnosis else ""
        )
        rows.append(
            f"<tr>{_id_cell(c)}<td>{html.escape(c.statement)}</td>"
            f"<td>{html.escape(c.measured)}{size}</td>{_status_cell(c)}</tr>"
            f"<tr class='iclr25-more'><td colspan='{len(columns)}'><details><summary>"
            f"{'diagnosis, ' if c.diagnosis else ''}control, paper and rule of "
            f"<code>{html.escape(c.id)}</code></summary>control: {html.escape(c.control)}; "
            f"paper: {html.escape(c.paper)}; {rule}{estimate}{diagnosis}</details></td></tr>"
        )
    rules = "".join(f"<li>{letter}: {html.escape(rule)}</li>" for rule, letter in shared.items())
    return _table(columns, rows) + (
        f"<p class='iclr25-rules'><small>Rules shared by several claims:</small></p>"
        f"<ul class='iclr25-rules'>{rules}</ul>"
        if rules
        else ""
    )


def _shared_rules(claims: Sequence[Claim]) -> dict[str, str]:
    """Each rule that two or more of ``claims`` share, with the letter that names it."""
    counted: dict[str, int] = {}
    for c in claims:
        counted[c.rule] = counted.get(c.rule, 0) + 1
    shared = [rule for rule, n in counted.items() if n > 1]
    return {rule: "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[k % 26] for k, rule in enumerate(shared)}


def _id_cell(c: Claim) -> str:
    wrappable = html.escape(c.id).replace("_", "_<wbr>").replace("-", "-<wbr>")
    return f"<td><code>{wrappable}</code><br><small>{c.kind}</small></td>"


def _scoreboard_rows(claims: Sequence[Claim]) -> str:
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
    rows = [
        f"<tr><td>{html.escape(c.chapter)}</td>{_id_cell(c)}"
        f"<td>{html.escape(c.statement)}</td><td>{html.escape(c.paper)}</td>"
        f"<td>{html.escape(c.control)}</td><td>{html.escape(c.measured)}</td>"
        f"<td>{'' if c.estimate is None else f'{c.estimate:.3g}'}</td>"
        f"<td>{c.interval}</td><td>{_runs(c)}</td><td>{_items(c)}</td>"
        f"<td>{html.escape(c.rule)}</td>{_status_cell(c)}</tr>" + _diagnosis_row(c, len(columns))
        for c in claims
    ]
    return _table(columns, rows)


def _runs(c: Claim) -> str:
    return str(c.n) if c.unit == "runs" else ""


def _items(c: Claim) -> str:
    if c.unit == "runs":
        return "" if c.items is None else str(c.items)
    return "" if c.n is None else str(c.n)


HOW_DECIDED = (
    "Each rule, margin, control and expected gap was fixed in the chapter's "
    "<code>CLAIMS</code> registry before the run; "
    "<a href='../book/how-to-read.html'>How to read a chapter</a> says how an outcome "
    "is decided."
)
INTERPRETS = "What the claims say."


def outcome_paragraph(claims: Sequence[Claim]) -> str:
    """The run's outcome in words, as HTML: the paper claims grouped by what their rules
    made of them, each by its id with its estimate, interval and what it rests on, a
    miss marked as a known gap or FAILED; then the setup claims that missed. Written
    from the decided claims, so the page cannot disagree with its table at another
    seed."""

    def listed(group: Sequence[Claim]) -> str:
        return "; ".join(
            f"<code>{html.escape(c.id)}</code>"
            + (f" ({_estimate(c)})" if c.estimate is not None else "")
            + (f", resting on {', '.join(c.blocked_by)}, which missed" if c.blocked_by else "")
            + _MARKS.get(c.status, "")
            + (_WHEN[c.declared_after] if c.status == "known gap" else "")
            for c in group
        )

    paper = [c for c in claims if c.kind == "paper"]
    groups = {
        "Paper claims that hold": [c for c in paper if c.status == "holds"],
        "Contradicted": [c for c in paper if c.outcome == "contradicted" and not c.blocked_by],
        "Inconclusive": [c for c in paper if c.outcome == "inconclusive" or c.blocked_by],
        "Holding against a declared gap": [c for c in paper if c.status == "holds, gap declared"],
    }
    parts = [
        f"{name} ({len(group)} of {len(paper)}): {listed(group)}."
        for name, group in groups.items()
        if group
    ]
    setup = [c for c in claims if c.kind == "setup"]
    missed = [c for c in setup if c.outcome != "holds"]
    if missed:
        parts.append(
            f"Setup claims that did not hold ({len(missed)} of {len(setup)}): {listed(missed)}."
        )
    elif setup:
        parts.append(
            "The setup claim holds." if len(setup) == 1 else f"All {len(setup)} setup claims hold."
        )
    return f"<p><strong>{INTERPRETS}</strong> {' '.join(parts)}</p>"


_WHEN = {False: " before the run", True: " after the run"}
_MARKS = {
    "known gap": ", a known gap declared",
    "FAILED": ", FAILED: no gap was declared",
    "holds, gap declared": ", a stale declaration",
}
