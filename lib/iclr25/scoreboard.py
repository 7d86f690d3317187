"""The scoreboard: every claim of the book in one table, and how faithful the book is.

A chapter records its claims in its executed notebook (:func:`iclr25.core.claim`), and
``python -m iclr25 run`` also writes them to ``<slug>.claims.json``. This module reads
either, in the book's reading order, and shows them three ways:

* :func:`summary` -- per chapter, the paper claims that hold, the known gaps and the
  failures; :func:`fidelity` -- paper claims held / paper claims, for the whole book;
* :func:`page_html` -- the book's Scoreboard page (rendered by ``book/_ext``), a table
  that ``book/static/scoreboard.js`` sorts and filters with no network;
* :func:`text` -- the same table in a terminal (``python -m iclr25 claims DIR``).
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from iclr25 import toc
from iclr25.core import AFTER_THE_RUN, Claim, claim_from_record, claim_rows, read_claims


def collect(folder: str | Path) -> list[Claim]:
    """The claims found in ``folder``: its ``<slug>.claims.json`` files (written by
    ``run``), else its executed ``<slug>.ipynb`` notebooks; chapters in reading order."""
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(
            f"no folder {folder}: give the folder that `python -m iclr25 "
            "run` wrote (--out) or the book's _build/jupyter_execute/notebooks"
        )
    order = {c.slug: k for k, c in enumerate(toc.ALL)}
    files = sorted(folder.glob("*.claims.json")) or sorted(folder.glob("*.ipynb"))
    files.sort(key=lambda f: order.get(f.name.split(".")[0], len(order)))
    found: list[Claim] = []
    for f in files:
        if f.name.endswith(".claims.json"):
            found += [claim_from_record(r) for r in json.loads(f.read_text())["claims"]]
        else:
            found += read_claims(f)
    return found


def summary(claims: Sequence[Claim]) -> list[dict[str, object]]:
    """One row per chapter: its paper claims, how many hold, are known gaps (and of
    those, declared after the run that missed), or failed, and its setup checks that
    hold (of all)."""
    rows: dict[str, dict[str, object]] = {}
    for c in claims:
        row = rows.setdefault(
            c.chapter,
            {
                "chapter": c.chapter,
                "paper claims": 0,
                "hold": 0,
                "known gaps": 0,
                "declared after": 0,
                "failed": 0,
                "stale gaps": 0,
                "setup checks": 0,
                "setup holds": 0,
            },
        )
        if c.kind == "setup":
            row["setup checks"] += 1
            row["setup holds"] += c.holds
            continue
        row["paper claims"] += 1
        row["hold"] += c.status == "holds"
        row["known gaps"] += c.status == "known gap"
        row["declared after"] += c.status == "known gap" and declared_after(c)
        row["failed"] += c.status == "FAILED"
        row["stale gaps"] += c.status == "holds, gap declared"
    return list(rows.values())


def declared_after(claim: Claim) -> bool:
    """Whether the claim's gap was declared after a run had missed it
    (its diagnosis opens with :data:`iclr25.core.AFTER_THE_RUN`)."""
    return (claim.diagnosis or "").startswith(AFTER_THE_RUN)


def fidelity(claims: Sequence[Claim]) -> tuple[int, int]:
    """(paper claims that hold, paper claims): the book's fidelity figure."""
    paper = [c for c in claims if c.kind == "paper"]
    return sum(c.holds for c in paper), len(paper)


def _summary_html(rows: Sequence[Mapping[str, object]]) -> str:
    heads = [
        "chapter",
        "paper claims",
        "hold",
        "known gaps",
        "of them declared after a run",
        "failed",
        "setup checks",
    ]
    body = "".join(
        f"<tr><td><a href='../notebooks/{r['chapter']}.html'>{r['chapter']}</a></td>"
        f"<td>{r['paper claims']}</td><td>{r['hold']}</td><td>{r['known gaps']}</td>"
        f"<td>{r['declared after']}</td>"
        f"<td>{r['failed'] + r['stale gaps']}</td>"
        f"<td>{r['setup holds']} of {r['setup checks']} hold</td></tr>"
        for r in rows
    )
    head = "".join(f"<th>{h}</th>" for h in heads)
    return (
        f"<table class='iclr25-summary'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def _gaps(claims: Sequence[Claim]) -> str:
    gaps = [c for c in claims if c.status == "known gap"]
    late = sum(declared_after(c) for c in gaps)
    return (
        f"Known gaps declared after the run that missed them: {late} of {len(gaps)} "
        "(their diagnosis says so); the others were declared before any run."
    )


def _chapters(n: int) -> str:
    return f"{n} chapter" + "s" * (n != 1)


def page_html(claims: Sequence[Claim]) -> str:
    """The Scoreboard page's body: the fidelity figure, the per-chapter summary and every
    claim in a table that ``scoreboard.js`` sorts (click a heading) and filters."""
    if not claims:
        return "<p>No executed chapter recorded a claim.</p>"
    held, total = fidelity(claims)
    share = f"{100 * held / total:.0f}%" if total else "n/a"
    return (
        f"<p class='iclr25-fidelity'><strong>Fidelity: {held} of {total} paper claims "
        f"hold ({share})</strong>, over {_chapters(len({c.chapter for c in claims}))}; "
        f"{sum(c.kind == 'setup' for c in claims)} setup checks besides. "
        f"{_gaps(claims)}</p>"
        + _summary_html(summary(claims))
        + "<p><label>Filter: <input type='search' class='iclr25-filter' "
        "placeholder='chapter, status, words...'></label> "
        "<small>Click a column heading to sort.</small></p>"
        + claim_rows(claims, chapter_column=True).replace(
            "class='iclr25-claims'", "class='iclr25-claims iclr25-scoreboard'", 1
        )
    )


def _models(cache: Mapping[str, int]) -> str:
    hit, built = cache.get("hit", 0), cache.get("built", 0)
    if not hit + built:
        return "none cached"
    if not built:
        return f"all {hit} from the cache"
    return f"{built} trained" + (f", {hit} from the cache" if hit else "")


def build_times_html(record: Mapping[str, object]) -> str:
    """Each chapter's execution in the build that :mod:`iclr25.build` recorded: wall and
    CPU seconds against its budget, and whether its models came from the cache."""
    budgets = {c.slug: c.budget_s for c in toc.ALL}
    rows = []
    for run in record["chapters"]:
        wall = f"{run['wall_s']:.0f} s" if run["wall_s"] is not None else "n/a"
        cpu = f"{run['cpu_s']:.0f} s" if run["cpu_s"] is not None else "n/a"
        state = "" if run["state"] == "done" else f" ({run['state']})"
        rows.append(
            f"<tr><td>{run['slug']}</td><td>{wall}{state}</td><td>{cpu}</td>"
            f"<td>{budgets.get(run['slug'], '?')} s</td><td>{_models(run['cache'])}</td></tr>"
        )
    heads = "".join(f"<th>{h}</th>" for h in ("chapter", "wall", "CPU", "budget", "models"))
    threads = record["threads"]
    return (
        f"<p>{_chapters(len(rows))} executed {record['jobs']} at a time, "
        f"{threads} thread{'s' * (threads != 1)} each, in {record['wall_s']:.0f} s "
        "of wall time.</p>"
        f"<table class='iclr25-summary iclr25-build-times'><thead><tr>{heads}</tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def text(claims: Sequence[Claim], width: int = 100) -> str:
    """The claims as plain text for a terminal: one block per claim, then the summary."""
    if not claims:
        return "no claims: the folder holds no executed chapter that recorded one"

    def wrap(line: str, indent: str) -> str:
        return textwrap.fill(line, width, initial_indent=indent, subsequent_indent=indent)

    lines = []
    for c in claims:
        lines.append(f"[{c.status}] {c.chapter}/{c.id} ({c.kind})")
        lines.append(wrap(c.statement, "    "))
        lines.append(wrap(f"paper: {c.paper}", "    "))
        lines.append(wrap(f"ours: {c.measured}  (bound: {c.bound})", "    "))
        if c.diagnosis:
            lines.append(wrap(f"declared gap: {c.diagnosis}", "    "))
    lines.append("")
    for r in summary(claims):
        lines.append(
            f"{r['chapter']}: {r['hold']} of {r['paper claims']} paper claims hold, "
            f"{r['known gaps']} known gaps, {r['failed'] + r['stale gaps']} failed; "
            f"setup {r['setup holds']}/{r['setup checks']}"
        )
    held, total = fidelity(claims)
    lines.append(f"fidelity: {held} of {total} paper claims hold")
    return "\n".join(lines)
