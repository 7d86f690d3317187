"""The words of a chapter's pages: what they may state by hand, and what only the run
may (its outcomes, and the numbers a diagnosis gives). Each failure says what to write
instead."""

import re

import jupytext
import pytest

from iclr25 import toc
from iclr25.core.claims import describe_rule

BUILT = [c.slug for c in toc.built()]


NUMBER = re.compile(r"(?<![\w.{:,])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w}]|,\d)")
"""A number as prose writes it (``0.95``, ``2,000``, ``17``), outside a ``{field}``."""

NOT_FROM_A_RUN = {
    ("mcqa", "tiny-learned"): "8000 20",  # settings to run with
    ("mcqa", "tiny-learned-seeds"): "8000 20",
    ("sadr", "sadr-rs"): "80 2,000",  # the paper's steps and edits
    ("sadr", "restore-recovers"): "28 16 9",  # GPT-J's layers and heads; SmolLM2's heads
    ("faithfulness", "detects-hiding"): "2",  # sqrt(2)
    ("sst", "faithful_baseline_st"): "10,000",  # MNIST's test split
    ("enumerative", "fits-training-genera"): "100",  # the official epochs
    ("kbg", "beats_global"): "23",  # the benchmark's other datasets
    ("kbg", "near_oracle"): "23",
    ("selective", "ls_worse_auroc_0.2"): "0.4",  # the other official alpha
}
"""The numbers an after-run diagnosis states that no run measures, claim by claim."""


def _numbers(text: str) -> list[float]:
    """The magnitudes of the numbers in ``text``, outside its ``{fields}``."""
    prose = re.sub(r"\{[^}]*\}", "", text)
    return [abs(float(n.replace(",", ""))) for n in NUMBER.findall(prose)]


@pytest.mark.parametrize("slug", BUILT)
def test_after_run_diagnoses_quote_the_run_s_numbers(slug):
    """A gap declared after a run explains a measured miss; the numbers it cites come
    from the run through its fields (``{estimate:.2f}``), never copied by hand: each
    number left in its text is a setting, a rule's or the paper's, or named above."""
    module = toc.get(slug).module()
    settings = " ".join(str(p.default) for p in module.PARAMETERS.values())
    copied = []
    for cid, spec in module.CLAIMS.items():
        if spec.gap is None or not spec.gap.after_run:
            continue
        rules = spec.rule.values() if isinstance(spec.rule, dict) else [spec.rule]
        fixed = [spec.statement, spec.paper, spec.control, describe_rule(spec.rule)]
        fixed += [getattr(r, "why", "") for r in rules]
        fixed += [settings, NOT_FROM_A_RUN.get((slug, cid), ""), "0 1"]
        known = set(_numbers(" ".join(fixed)))
        copied += [f"{cid}: {n:g}" for n in _numbers(spec.gap.diagnosis) if n not in known]
    assert not copied, (
        f"numbers copied from a run into {slug}'s diagnoses: {copied}. Write a field "
        "instead ({estimate:.2f}, or a name passed with quote= to core.claim), or add a "
        "number that no run measures to NOT_FROM_A_RUN with its reason"
    )


HISTORY = re.compile(
    r"\b(issues?|pilots?|helpers?|parked|first book run|earlier runs?|"
    r"first design|STACK\.md)\b|#\d{2}\b|\btests?/\w+\.py\b",
    re.IGNORECASE,
)
"""Words that tell how the book came about (issues, pilots, earlier runs, files the reader
does not have), which a page must not: it tells what the chapter does and finds."""


def _reader_strings(slug: str) -> list[tuple[str, str]]:
    """(where, text) for what a chapter's reader sees: the notebook, and each claim's
    statement, paper figure, control, rule and diagnosis."""
    chapter = toc.get(slug)
    found = [(f"notebooks/{slug}.py", chapter.notebook.read_text())]
    for id, spec in chapter.module().CLAIMS.items():
        rules = spec.rule.values() if isinstance(spec.rule, dict) else [spec.rule]
        texts = [spec.statement, spec.paper or "", spec.control or ""]
        texts += [getattr(r, "why", "") or "" for r in rules]
        texts += [spec.gap.diagnosis] if spec.gap else []
        found += [(f"{slug}.CLAIMS[{id!r}]", t) for t in texts]
    return found


@pytest.mark.parametrize("slug", BUILT)
def test_pages_tell_results_not_history(slug):
    told = [
        f"{where}: {m.group(0)!r} in ...{text[max(0, m.start() - 50) : m.end() + 30]}..."
        for where, text in _reader_strings(slug)
        for m in HISTORY.finditer(text)
    ]
    assert not told, (
        "say what the chapter does and why, not how it came about (no issues, pilots, "
        "earlier runs or the repository's own files):\n" + "\n".join(told)
    )


OUTCOME = re.compile(
    r"(\bclaims?\b|`[a-z][a-z0-9_.-]*`)\s+(?!that\b|which\b)(\w+\s+){0,3}?"
    r"(holds|held(?!-)|hold|fails|failed|misses|missed|(is|are) contradicted"
    r"|(is|are) inconclusive|(is|are) (a )?known gaps?|reproduces?)\b"
    r"|\b(is|are|was|were) (not )?reproduced\b"
    r"|\bwithin (its|the) [\w-]*-minute budget\b"
    r"|\b\d+ (CPU-)?s against (its|a|the) \d+",
    re.IGNORECASE,
)
"""A sentence that tells an outcome: a claim held or missed, a finding reproduced, a run
within its budget. Outcomes come from the build (the claims table with the paragraph
that :func:`iclr25.core.report.outcome_paragraph` writes beneath it, the run box): no
hand-written sentence states one, so the page agrees with its table at any seed."""

CONDITION = re.compile(r"\b(if|when|whether|unless|where|whose|must|would|should|only)\b", re.I)
"""A sentence with one of these states a rule (a claim holds *when* ...), not an outcome."""


def _prose_sentences(source: str) -> list[str]:
    """The sentences of a notebook's markdown cells."""
    sentences = []
    for cell in jupytext.reads(source, fmt="py:percent").cells:
        if cell.cell_type == "markdown":
            sentences += re.split(r"(?<=[.!?])\s+", " ".join(cell.source.split()))
    return sentences


@pytest.mark.parametrize("slug", BUILT)
def test_prose_states_no_outcome_the_build_does_not_give(slug):
    stated = [
        f"{m.group(0)!r} in: {sentence[:160]}"
        for sentence in _prose_sentences(toc.get(slug).notebook.read_text())
        if (m := OUTCOME.search(sentence)) and not CONDITION.search(sentence)
    ]
    assert not stated, (
        "say what the claim asks (`x` asks whether ..., `x` holds when ...), never what "
        "became of it: core.claims_table() writes the outcome from the run\n" + "\n".join(stated)
    )


def test_outcome_words_are_caught():
    """The check above, on sentences it must flag and sentences it must let through."""
    flagged = [
        "The claim `drift` holds at our scale.",
        "The paper's headline finding is reproduced.",
        "It runs within its two-minute budget.",
        "sadr ran 363 s against its 300 s budget.",
    ]
    passed = [
        "A claim holds when the interval lies beyond the margin.",
        "A paper claim that rests on a setup claim that missed is inconclusive.",
        "Each email holds one cue of each family.",
    ]
    assert all(OUTCOME.search(s) and not CONDITION.search(s) for s in flagged)
    assert not any(OUTCOME.search(s) and not CONDITION.search(s) for s in passed)
