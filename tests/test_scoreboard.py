"""The scoreboard reads the claims that runs and the book recorded, in reading order."""

import json
import re
from dataclasses import asdict

import pytest

from iclr25 import core, scoreboard, toc
from iclr25.core import CLAIM_MIME, Claim, book_problems


def make(
    chapter: str,
    id: str,
    kind: str = "paper",
    holds: bool = True,
    diagnosis: str | None = None,
    after: bool = False,
    blocked_by: tuple[str, ...] = (),
) -> Claim:
    return Claim(
        chapter,
        id,
        kind,
        f"{id} statement",
        "paper's figure",
        "the baseline",
        "≥ 1",
        "ours",
        "holds" if holds else "contradicted",
        diagnosis=diagnosis,
        declared_after=after,
        blocked_by=list(blocked_by),
    )


CLAIMS = [
    make("sro", "fast"),
    make("sro", "rate", holds=False, diagnosis="n too small"),
    make("sro", "site-shift", kind="setup"),
    make("fine", "local", holds=False),
    make("fine", "efficacy"),
    make("fine", "late", holds=False, diagnosis=f"{core.AFTER_THE_RUN} few edits", after=True),
    make("fine", "ready", kind="setup", holds=False, diagnosis="small model"),
    make("fine", "on-ready", blocked_by=("ready",)),
]


def executed_notebook(claims: list[Claim]) -> dict:
    """A minimal executed notebook holding ``claims`` as a chapter's outputs do."""
    return {
        "cells": [
            {
                "cell_type": "code",
                "outputs": [
                    {
                        "output_type": "display_data",
                        "data": {"text/html": "<table/>", CLAIM_MIME: asdict(c)},
                    }
                ],
            }
            for c in claims
        ]
    }


def test_collect_reads_notebooks_or_claims_json_in_reading_order(tmp_path):
    by_chapter = {"fine": CLAIMS[3:], "sro": CLAIMS[:3]}
    for slug, claims in by_chapter.items():
        (tmp_path / f"{slug}.ipynb").write_text(json.dumps(executed_notebook(claims)))
    assert scoreboard.collect(tmp_path) == CLAIMS  # sro comes before fine in the book
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "fine.claims.json").write_text(
        json.dumps({"chapter": "fine", "claims": [asdict(c) for c in CLAIMS[3:]]})
    )
    assert scoreboard.collect(runs) == CLAIMS[3:]
    with pytest.raises(FileNotFoundError, match="no folder"):
        scoreboard.collect(tmp_path / "nowhere")


def test_summary_and_fidelity_count_paper_claims_only():
    rows = {r["chapter"]: r for r in scoreboard.summary(CLAIMS)}
    assert rows["sro"] == {
        "chapter": "sro",
        "paper claims": 2,
        "holds": 1,
        "contradicted": 1,
        "inconclusive": 0,
        "gaps before": 1,
        "gaps after": 0,
        "failed": 0,
        "setup claims": 1,
        "setup holds": 1,
        "setup failed": 0,
    }
    fine = rows["fine"]
    assert (fine["failed"], fine["holds"], fine["inconclusive"]) == (1, 1, 1)
    assert (fine["gaps before"], fine["gaps after"], fine["setup holds"]) == (0, 1, 0)
    assert scoreboard.fidelity(CLAIMS) == (2, 6)


def test_page_lists_exactly_the_claims_it_was_given():
    page = scoreboard.page_html(CLAIMS)
    assert "Fidelity: 2 of 6 paper claims hold (33%)" in page
    assert "2 known gaps (1 declared before the run, 1 after)" in page
    for column in ("contradicted", "inconclusive", "known gaps declared after a run"):
        assert f"<th>{column}</th>" in page
    table = page[page.index("iclr25-scoreboard") :]
    for column in ("control", "estimate", "95% interval", "runs", "items", "rule", "outcome"):
        assert f"<th>{column}</th>" in table
    ids = re.findall(r"<tr><td>(\w+)</td><td><code>(.+?)</code>", table)
    assert [(ch, i.replace("<wbr>", "")) for ch, i in ids] == [(c.chapter, c.id) for c in CLAIMS]
    assert "<tr class='iclr25-diagnosis'><td colspan='12'>" in table  # beneath its row
    assert "n too small" in table and "FAILED" in table
    assert "rests on ready, which missed" in table
    assert core.AFTER_THE_RUN in table
    assert scoreboard.page_html([]) == "<p>No executed chapter recorded a claim.</p>"


def test_text_names_every_claim_and_the_fidelity():
    shown = scoreboard.text(CLAIMS)
    for c in CLAIMS:
        assert f"[{c.status}] {c.chapter}/{c.id} ({c.kind})" in shown
    assert "declared gap: n too small" in shown and "control: the baseline" in shown
    assert "fine: 1 of 4 paper claims hold, 2 contradicted, 1 inconclusive" in shown
    assert shown.splitlines()[-1] == "fidelity: 2 of 6 paper claims hold"


def test_a_fixture_chapter_with_an_undeclared_miss_fails_the_book_check(tmp_path):
    (tmp_path / "sro.ipynb").write_text(json.dumps(executed_notebook(CLAIMS[3:])))
    claims = scoreboard.collect(tmp_path)
    assert book_problems(claims, {}) == ["fine/local: FAILED (measured ours; rule ≥ 1)"]


def test_build_times_table_gives_each_chapters_time_budget_and_artefacts():
    record = {
        "machine": {"cpu": "AMD EPYC", "cores": 2, "vector": "AVX2"},
        "speed_probe_cpu_s": {"start": 2.331, "end": 2.6},
        "jobs": 2,
        "threads": 1,
        "wall_s": 99.6,
        "chapters": [
            {"slug": "sro", "state": "done", "wall_s": 36.2, "cpu_s": 35.0, "cache": {}},
            {"slug": "mcqa", "state": "done", "wall_s": 150, "cpu_s": 149, "cache": {"hit": 2}},
            {"slug": "fine", "state": "timed out", "wall_s": 600, "cpu_s": None, "cache": {}},
            {
                "slug": "sst",
                "state": "done",
                "wall_s": 9,
                "cpu_s": 9,
                "cache": {"built": 3, "hit": 1},
                "built": {
                    "sst-model": {"count": 2, "cpu_s": 6.2},
                    "sst-data": {"count": 1, "cpu_s": 1},
                },
            },
        ],
    }
    html = scoreboard.build_times_html(record)
    assert "4 chapters executed 2 at a time, 1 thread each, in 100 s" in html
    assert "of wall time on AMD EPYC (2 cores, AVX2)." in html
    assert "took 2.33 CPU-s at the start and 2.60 CPU-s at the end of the build." in html
    assert "<tr><td>sro</td><td>36 s</td><td>35 s</td><td>120 s</td><td>10% of 360 s</td>" in html
    mcqa_limit = toc.chapter_cpu_limit(toc.get("mcqa"))  # its budget and its one-off
    used = f"{149 / mcqa_limit:.0%} of {mcqa_limit} s"
    assert f"<td>300 s</td><td>{used}</td><td>all 2 from the cache</td>" in html
    assert "<td>600 s (timed out)</td><td>n/a</td>" in html
    record["chapters"][0]["cpu_s"] = 200  # over half of sro's 360 s
    assert "56% of 360 s <strong>(over half)</strong>" in scoreboard.build_times_html(record)
    record["chapters"][0].update(cpu_limit_s=900, reference_limit_s=360)  # a slower machine
    assert "22% of 900 s (360 s × 2.50)</td>" in scoreboard.build_times_html(record)
    assert "where the probe takes 0.25 CPU-s" in html
    assert "<td>3 built (sst-model ×2, 6 s; sst-data, 1 s), 1 from the cache</td>" in html


def test_the_summary_rows_add_up_to_the_tally():
    rows = scoreboard.summary(CLAIMS)
    total = core.counts(CLAIMS)
    for key in total:
        assert sum(r[key] for r in rows) == total[key], key
    assert total["holds"] + total["contradicted"] + total["inconclusive"] == total["paper claims"]
