"""Replication: one chapter at several seeds, each claim's outcome seed by seed.

    python -m iclr25 replicate sro --seeds 1000,1001,1002 [--workers 2 | --scheduler ADDRESS]

A replication is a sweep (:mod:`iclr25.sweep`) whose grid is the seed alone: each seed
is one point, run on Dask (a ``LocalCluster``, or the cluster at ``--scheduler``), saved
in the out folder and skipped when the same command runs again. What it adds is the
table, one row per claim of the chapter's registry and one column per seed (here the
template at smoke scale, where seed 1002's residuals missed the setup claim)::

    claim            kind   seed 1001        seed 1002             flag
    ---------------  -----  ---------------  --------------------  ------
    noise-level      setup  holds            contradicted, FAILED  FLIPS
                            1.08             0.772
    slope-recovered  paper  holds            holds, blocked        varies
                            1.79             1.12
    beats-intercept  paper  holds            holds, blocked        varies
                            0.79 [0.13,1.8]  1.5 [0.95,2.2]

A cell gives the rule's outcome, marked where the claim's status differs from it (a
declared ``known gap``, an undeclared miss ``FAILED``, ``blocked`` when a setup claim
it rests on missed, a ``gap declared`` for a claim that held), then the estimate with
its 95% interval, or the value of a point check. The flag compares the seeds: a claim
``FLIPS`` when it holds at one seed and is contradicted at another, and ``varies``
when its outcomes differ otherwise (it holds at one and is inconclusive at another). A
seed whose run failed shows ``error``, and its error follows the table. The book's CI
does not run this (a chapter at book scale, several times over); a chapter's pass
does, at seeds from 1000, and reports the table that ``replicate.md`` holds.

Written by hand: the outcomes and flags are the book's own claim statuses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from iclr25 import toc
from iclr25.core import Claim, ParameterError, Scalar, claim_from_record
from iclr25.core.params import MAX_SEED
from iclr25.sweep import Point, Sweep, counted, grid_points

ACCEPTED = f"accepted: comma-separated distinct integers 0..{MAX_SEED}, e.g. 1000,1001,1002"
"""What ``--seeds`` accepts, as each of its errors says."""

LEGEND = (
    "FLIPS: holds at one seed, contradicted at another; varies: differs between seeds otherwise"
)
"""The flags in one line, beneath the table."""

MARKS = {
    "known gap": "known gap",
    "FAILED": "FAILED",
    "holds, gap declared": "gap declared",
}
"""A status that differs from the rule's outcome, as a cell marks it (``blocked`` aside)."""

WIDTH = 100
"""The printed table's width: seeds past it continue in a block of their own."""


# ---------------------------------------------------------------------------------
# The seeds and their points
# ---------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """``--seeds 1000,1001,1002`` as a list of seeds, in the order given; a
    :class:`ParameterError` naming the first bad entry and what is accepted."""
    entries = [entry.strip() for entry in text.split(",")]
    if not text.strip():
        raise ParameterError(f"--seeds is empty; {ACCEPTED}")
    seeds: list[int] = []
    for entry in entries:
        if entry.startswith("-") and entry[1:].isdigit():
            why = f"{entry} is negative"
        elif not entry:
            why = "an entry is empty"
        elif not entry.isdigit():  # "x", "1.5"
            why = f"{entry!r} is not a whole number"
        elif int(entry) > MAX_SEED:
            why = f"{entry} is above {MAX_SEED}"
        elif int(entry) in seeds:
            why = f"{int(entry)} is listed twice"
        else:
            seeds.append(int(entry))
            continue
        raise ParameterError(f"--seeds {text!r}: {why}; {ACCEPTED}")
    return seeds


def seed_points(
    slug: str, seeds: Sequence[int], fixed: Mapping[str, Scalar] | None = None, *, smoke: bool
) -> list[Point]:
    """One sweep point per seed, on top of the ``fixed`` parameters (``-p``), each checked."""
    if "seed" not in toc.get(slug).module().PARAMETERS:
        raise ParameterError(f"{slug} has no seed parameter: it cannot be replicated over seeds")
    if "seed" in (fixed or {}):
        raise ParameterError("-p seed=... fixes the seed; replicate takes its seeds from --seeds")
    return grid_points(slug, {"seed": list(seeds)}, fixed, smoke=smoke)


# ---------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------


def verdict(claim: Claim) -> str:
    """What the seed made of the claim: the rule's outcome, or ``inconclusive`` where a
    setup claim it rests on missed."""
    return "inconclusive" if claim.blocked_by else claim.outcome


def flag(claims: Sequence[Claim | None]) -> str:
    """``FLIPS`` if the claim holds at one seed and is contradicted at another,
    ``varies`` if its verdicts differ otherwise, else empty; seeds that did not run
    (None) do not count."""
    verdicts = {verdict(c) for c in claims if c is not None}
    if {"holds", "contradicted"} <= verdicts:
        return "FLIPS"
    return "varies" if len(verdicts) > 1 else ""


def outcome_text(claim: Claim) -> str:
    """``contradicted, known gap``: the rule's outcome, marked where the status differs."""
    if claim.blocked_by:
        return f"{claim.outcome}, blocked"
    mark = MARKS.get(claim.status)
    return f"{claim.outcome}, {mark}" if mark else claim.outcome


def number_text(claim: Claim) -> str:
    """``0.12 [0.03,0.21]`` for an estimate, ``0.53`` for a point check's single number,
    empty where the value is not one number."""
    if claim.estimate is not None:
        low, high = (_compact(x, 2) if x is not None else "n/a" for x in (claim.low, claim.high))
        return f"{_compact(claim.estimate, 2)} [{low},{high}]"
    if isinstance(claim.value, int | float) and not isinstance(claim.value, bool):
        return _compact(claim.value, 3)
    return ""


def _compact(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits, but a number from 1000 on whole
    (``1234``, not ``1.23e+03``)."""
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.{digits}g}"


@dataclass
class Row:
    """One claim across the seeds: its claim at each seed (None where that seed's run
    failed or did not record it)."""

    claim: str
    kind: str
    claims: list[Claim | None]

    @property
    def flag(self) -> str:
        return flag(self.claims)


@dataclass
class Replication:
    """The chapter's claims at each seed: the rows in registry order, and each failed
    seed's error."""

    chapter: str
    seeds: list[int]
    rows: list[Row]
    errors: dict[int, str]
    smoke: bool = False

    def cell(self, row: Row, k: int) -> tuple[str, str]:
        """Row ``row``'s cell at the ``k``-th seed, as two lines: outcome, number."""
        claim = row.claims[k]
        if claim is not None:
            return outcome_text(claim), number_text(claim)
        return ("error", "") if self.seeds[k] in self.errors else ("not recorded", "")

    def summary(self) -> str:
        """``3 claims at 2 seeds: 1 flips (beats-intercept), 0 varies``, and the seeds
        that failed to run, if any."""
        parts = []
        for word in ("FLIPS", "varies"):
            named = [r.claim for r in self.rows if r.flag == word]
            parts.append(f"{len(named)} {word.lower()}" + f" ({', '.join(named)})" * bool(named))
        failed = f"; {counted(len(self.errors), 'seed')} failed to run" * bool(self.errors)
        of = f"{counted(len(self.rows), 'claim')} at {counted(len(self.seeds), 'seed')}"
        return f"{of}: {', '.join(parts)}{failed}"


def replication(
    chapter: str,
    seeds: Sequence[int],
    runs: Mapping[int, Sequence[Claim]],
    errors: Mapping[int, str] | None = None,
    *,
    smoke: bool = False,
) -> Replication:
    """The table from each seed's claims (``runs``; a failed seed is in ``errors``
    instead): a row per claim id, the registry's order first, then any id a run
    recorded that the registry lacks."""
    order = list(toc.get(chapter).module().CLAIMS)
    for claims in runs.values():
        order += [c.id for c in claims if c.id not in order]
    by_seed = {seed: {c.id: c for c in claims} for seed, claims in runs.items()}
    rows = []
    for cid in order:
        cells = [by_seed.get(seed, {}).get(cid) for seed in seeds]
        kinds = [c.kind for c in cells if c is not None]
        rows.append(Row(cid, kinds[0] if kinds else "", cells))
    return Replication(chapter, list(seeds), rows, dict(errors or {}), smoke)


def from_sweep(done: Sweep, *, smoke: bool = False) -> Replication:
    """The table of a finished replication sweep (one point per seed)."""
    runs, errors = {}, {}
    for point, record in zip(done.points, done.records, strict=True):
        seed = point.varied["seed"]
        if record is None:
            continue  # interrupted before it finished: shown as not recorded
        if record["error"] is not None:
            errors[seed] = record["error"]
        else:
            runs[seed] = [claim_from_record(c) for c in record["claims"]]
    seeds = [p.varied["seed"] for p in done.points]
    return replication(done.points[0].chapter, seeds, runs, errors, smoke=smoke)


def one_line(error: str) -> str:
    """An error's first line, at most 200 characters."""
    line = (error.strip().splitlines() or [""])[0]
    return line if len(line) <= 200 else line[:199] + "…"


def _heading(rep: Replication) -> str:
    seeds = ", ".join(map(str, rep.seeds))
    return f"{rep.chapter} at seeds {seeds}" + " (smoke: a scale that decides nothing)" * rep.smoke


def text(rep: Replication, width: int = WIDTH) -> str:
    """The table as plain text, two lines a claim (outcome, number), in blocks of seeds
    that fit ``width`` columns; then the summary and each failed seed's error."""
    head = ["claim", "kind"]
    fixed = [
        max([len(head[0]), *(len(r.claim) for r in rep.rows)]),
        max([len(head[1]), *(len(r.kind) for r in rep.rows)]),
    ]
    flag_width = max([len("flag"), *(len(r.flag) for r in rep.rows)])
    widths = [
        max([len(f"seed {seed}"), *(len(s) for r in rep.rows for s in rep.cell(r, k))])
        for k, seed in enumerate(rep.seeds)
    ]
    blocks: list[list[int]] = [[]]
    room = width - sum(fixed) - flag_width - 2 * 3
    for k, w in enumerate(widths):
        if blocks[-1] and sum(widths[j] + 2 for j in blocks[-1]) + w + 2 > room:
            blocks.append([])
        blocks[-1].append(k)

    def line(cells: Sequence[str], sizes: Sequence[int]) -> str:
        return "  ".join(c.ljust(s) for c, s in zip(cells, sizes, strict=True)).rstrip()

    lines = [_heading(rep)]
    for block in blocks:
        sizes = [*fixed, *(widths[k] for k in block), flag_width]
        lines += ["", line([*head, *(f"seed {rep.seeds[k]}" for k in block), "flag"], sizes)]
        lines.append(line(["-" * s for s in sizes], sizes))
        for r in rep.rows:
            outcome, number = zip(*(rep.cell(r, k) for k in block), strict=True)
            lines.append(line([r.claim, r.kind, *outcome, r.flag], sizes))
            if any(number):
                lines.append(line(["", "", *number, ""], sizes))
    lines += ["", LEGEND, rep.summary()]
    lines += [f"seed {seed} failed: {one_line(e)}" for seed, e in rep.errors.items()]
    return "\n".join(lines)


def markdown(rep: Replication) -> str:
    """The table as Markdown, one cell a seed (``holds 0.12 [0.03,0.21]``), for notes."""

    def escape(cell: str) -> str:
        return cell.replace("|", "\\|")

    header = ["claim", "kind", *(f"seed {s}" for s in rep.seeds), "flag"]
    lines = [
        f"Replication of `{rep.chapter}` at seeds {', '.join(map(str, rep.seeds))}"
        + " (smoke: a scale that decides nothing)" * rep.smoke
        + ".",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for r in rep.rows:
        cells = [" ".join(filter(None, rep.cell(r, k))) for k in range(len(rep.seeds))]
        lines.append(
            "| " + " | ".join([f"`{r.claim}`", r.kind, *map(escape, cells), r.flag]) + " |"
        )
    lines += ["", f"{rep.summary()}. {LEGEND}."]
    if rep.errors:
        lines += [""] + [
            f"- seed {seed} failed: {escape(one_line(e))}" for seed, e in rep.errors.items()
        ]
    return "\n".join(lines) + "\n"


def write_markdown(out: Path, rep: Replication) -> Path:
    """Write ``out/replicate.md``; return its path."""
    path = Path(out) / "replicate.md"
    path.write_text(markdown(rep))
    return path
