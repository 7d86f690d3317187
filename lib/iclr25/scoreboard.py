"""The scoreboard: every claim of the book in one table, and how faithful the book is.

A chapter records its claims in its executed notebook (:func:`iclr25.core.claim`), and
``python -m iclr25 run`` also writes them to ``<slug>.claims.json``. This module reads
either, in the book's reading order, and shows them three ways:

* :func:`summary` -- per chapter, the paper claims that hold, are contradicted or are
  inconclusive, the known gaps (declared before or after the run), the failures and the
  setup claims held; :func:`fidelity` -- paper claims held / paper claims tested;
* :func:`page_html` -- the book's Scoreboard page (rendered by ``book/_ext``), a table
  that ``book/static/scoreboard.js`` sorts and filters with no network;
* :func:`text` -- the same table in a terminal (``python -m iclr25 claims DIR``).
"""

from __future__ import annotations

import html
import json
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path

from iclr25 import build, toc
from iclr25.core import Claim, claim_from_record, claim_rows, counts, read_claims, tally
from iclr25.core.glance import book_figure
from iclr25.core.plots import figure_html


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
    """One row per chapter: :func:`iclr25.core.counts` of its claims (paper claims that
    hold, are contradicted or inconclusive, known gaps declared before and after the run,
    failures, and setup claims held of all)."""
    by_chapter: dict[str, list[Claim]] = {}
    for c in claims:
        by_chapter.setdefault(c.chapter, []).append(c)
    return [{"chapter": slug, **counts(group)} for slug, group in by_chapter.items()]


def fidelity(claims: Sequence[Claim]) -> tuple[int, int]:
    """(paper claims that hold, paper claims tested): the book's fidelity figure."""
    tally = counts(claims)
    return tally["holds"], tally["paper claims"]


SUMMARY_COLUMNS = {
    "paper claims": "paper claims",
    "holds": "hold",
    "contradicted": "contradicted",
    "inconclusive": "inconclusive",
    "gaps before": "known gaps declared before the run",
    "gaps after": "known gaps declared after a run",
    "failed": "FAILED",
}


def _summary_html(rows: Sequence[Mapping[str, object]]) -> str:
    heads = ["chapter", *SUMMARY_COLUMNS.values(), "setup claims held"]
    body = "".join(
        f"<tr><td><a href='../notebooks/{r['chapter']}.html'>{r['chapter']}</a></td>"
        + "".join(f"<td>{r[k]}</td>" for k in SUMMARY_COLUMNS)
        + f"<td>{r['setup holds']} of {r['setup claims']}</td></tr>"
        for r in rows
    )
    head = "".join(f"<th>{h}</th>" for h in heads)
    return (
        "<div class='iclr25-scroll'><table class='iclr25-summary'>"
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>"
    )


def _chapters(n: int) -> str:
    return f"{n} chapter" + "s" * (n != 1)


def fidelity_html(claims: Sequence[Claim]) -> str:
    """The book's fidelity line, from this build's claims: the paper claims that hold of
    all, over how many chapters, and the whole tally (the Scoreboard and the intro)."""
    held, total = fidelity(claims)
    share = f"{100 * held / total:.0f}%" if total else "n/a"
    return (
        f"<p class='iclr25-fidelity'><strong>Fidelity: {held} of {total} paper claims "
        f"hold ({share})</strong>, over {_chapters(len({c.chapter for c in claims}))}. "
        f"In all: {tally(counts(claims))}.</p>"
    )


def page_html(claims: Sequence[Claim]) -> str:
    """The Scoreboard page's body: the fidelity figure, every paper claim at a glance
    (:func:`iclr25.core.glance.book_figure`), the per-chapter summary and every
    claim in a table that ``scoreboard.js`` sorts (click a heading) and filters."""
    if not claims:
        return "<p>No executed chapter recorded a claim.</p>"
    return (
        fidelity_html(claims)
        + figure_html(book_figure(claims))
        + _summary_html(summary(claims))
        + "<p><label>Filter: <input type='search' class='iclr25-filter' "
        "placeholder='chapter, status, words...'></label> "
        "<small>Click a heading of the table below to sort it.</small></p>"
        + claim_rows(claims, chapter_column=True).replace(
            "class='iclr25-claims'", "class='iclr25-claims iclr25-scoreboard'", 1
        )
    )


def _models(run: Mapping[str, object]) -> str:
    """Where a chapter's artefacts came from: the cache, or built in this build, with
    the CPU seconds each kind took (``name ×count, seconds``), largest first."""
    cache = run.get("cache", {})
    hit, built = cache.get("hit", 0), cache.get("built", 0)
    if not hit + built:
        return "none cached"
    if not built:
        return f"all {hit} from the cache"
    kinds = sorted(run.get("built", {}).items(), key=lambda kv: -kv[1]["cpu_s"])
    detail = "; ".join(
        name + (f" ×{e['count']}" if e["count"] > 1 else "") + f", {e['cpu_s']:.0f} s"
        for name, e in kinds
    )
    return (
        f"{built} built"
        + (f" ({detail})" if detail else "")
        + (f", {hit} from the cache" if hit else "")
    )


MARGIN_FLAG = 0.5
"""A chapter whose CPU time is over this share of its CPU limit is flagged in the build
table: the margin that load or more seeds would eat is seen before it is lost."""


def build_times_html(record: Mapping[str, object]) -> str:
    """Each chapter's execution in the build that :mod:`iclr25.build` recorded: wall and
    CPU seconds against its budget, the share of its CPU limit it used (flagged over
    :data:`MARGIN_FLAG`), and its artefacts: from the cache, or built once, with their
    CPU time."""
    chapters = {c.slug: c for c in toc.ALL}
    rows = []
    for run in record["chapters"]:
        chapter = chapters.get(run["slug"])
        wall = f"{run['wall_s']:.0f} s" if run["wall_s"] is not None else "n/a"
        cpu = f"{run['cpu_s']:.0f} s" if run["cpu_s"] is not None else "n/a"
        state = "" if run["state"] == "done" else f" ({run['state']})"
        budget = f"{chapter.budget_s} s" if chapter else "?"
        share = ""
        if chapter and run["cpu_s"] is not None:
            limit = run.get("cpu_limit_s") or toc.chapter_cpu_limit(chapter)
            reference = run.get("reference_limit_s") or limit
            used = run["cpu_s"] / limit
            share = (
                f"{used:.0%} of {limit} s"
                + (f" ({reference} s × {limit / reference:.2f})" if limit != reference else "")
                + (" <strong>(over half)</strong>" if used > MARGIN_FLAG else "")
            )
        rows.append(
            f"<tr><td>{run['slug']}</td><td>{wall}{state}</td><td>{cpu}</td>"
            f"<td>{budget}</td><td>{share}</td><td>{_models(run)}</td></tr>"
        )
    heads = "".join(
        f"<th>{h}</th>" for h in ("chapter", "wall", "CPU", "budget", "CPU limit used", "artefacts")
    )
    threads = record["threads"]
    box = record.get("machine")
    on = (
        f" on {html.escape(str(box['cpu']))} ({box['cores']} cores, {box['vector']})" if box else ""
    )
    probe = record.get("speed_probe_cpu_s") or {}
    speed = (
        " A fixed piece of torch work (<code>iclr25.build.speed_probe</code>) took "
        + " and ".join(f"{probe[k]:.2f} CPU-s at the {k}" for k in ("start", "end") if k in probe)
        + " of the build."
        if probe
        else ""
    )
    return (
        f"<p>{_chapters(len(rows))} executed {record['jobs']} at a time, "
        f"{threads} thread{'s' * (threads != 1)} each, in {record['wall_s']:.0f} s "
        f"of wall time{on}. CPU times depend on the processor, and on a shared host's "
        f"other work, as well as on the chapter's.{speed} "
        "A chapter is stopped once its process and kernel have used their "
        f"CPU limit, or after {toc.WALL_BACKSTOP} times that in wall time. The limits "
        "are CPU seconds of the machine the budgets were measured on (where the probe "
        f"takes {build.REFERENCE_PROBE_S} CPU-s). Where the probe, run every "
        f"{build.PROBE_EVERY_S} s, took longer on average over a chapter's run, the "
        "chapter's limit was multiplied by as much: a slower processor, or a machine "
        "slowed by other work, takes more CPU seconds for the same work.</p>"
        "<div class='iclr25-scroll'><table class='iclr25-summary iclr25-build-times'>"
        f"<thead><tr>{heads}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
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
        if c.paper:
            lines.append(wrap(f"paper: {c.paper}", "    "))
        lines.append(wrap(f"control: {c.control}", "    "))
        estimate = (
            f"; estimate {c.estimate:.3g} {c.interval}, {c.size}" if c.estimate is not None else ""
        )
        lines.append(wrap(f"ours: {c.measured}{estimate}  (rule: {c.rule})", "    "))
        lines.append(wrap(f"outcome: {c.outcome}", "    "))
        if c.blocked_by:
            lines.append(wrap(f"rests on {', '.join(c.blocked_by)}, which missed", "    "))
        if c.diagnosis:
            lines.append(wrap(f"declared gap: {c.diagnosis}", "    "))
    lines.append("")
    for r in summary(claims):
        lines.append(f"{r['chapter']}: {tally(r)}")
    held, total = fidelity(claims)
    lines.append(f"fidelity: {held} of {total} paper claims hold")
    return "\n".join(lines)
