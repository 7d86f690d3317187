"""The book's table of contents as data: every chapter's slug, title and part.

One slug names a chapter everywhere: ``notebooks/<slug>.py`` tells the story,
the package ``iclr25.chapters.<slug>`` holds the method (its ``__init__.py`` the
``PARAMETERS``, ``SMOKE`` and ``CLAIMS`` registry), and
``tests/test_<slug>.py`` tests it. A chapter is *built* once its notebook exists;
the CLI, the tests and ``_toc.yml`` only list built chapters.

New chapters start from :data:`TEMPLATE`, a runnable chapter that is not part of
the book: it is not in :data:`ALL`, so neither :func:`built`, the CLI's list nor
``_toc.yml`` shows it, but :func:`get` accepts its slug, so ``core.chapter`` and
``iclr25.run.execute`` (and ``python -m iclr25 run _template``) run it like any
chapter.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"


BUDGET_S = 120
"""Seconds a chapter may take with its book defaults once its trained models are in
the cache, on the one core it gets when the book runs two chapters at a time on two
cores. With a cold cache it also trains them, within :func:`chapter_cpu_limit`."""
LM_BUDGET_S = 300
"""The budget of a chapter that runs the real language model."""


@dataclass(frozen=True)
class Chapter:
    slug: str
    title: str
    part: str
    budget_s: int = BUDGET_S
    """Seconds the chapter may take in book mode (defaults, models cached, one core)."""
    one_off_s: int = 0
    """CPU seconds a cold cache adds once beyond the three budgets its limit allows, for
    artefacts built once and cached: fine's estimate of ROME's key covariance, and the
    models of chapters whose seeds fill most of their cold limit (brainood's 46 graph
    models, ai2tale's, kbg's and tgbseq's, mcqa's three tiny transformers, each trained
    for up to 4,000 steps on one thread, selective's 40 MLPs and 10 CNNs, dlgn's five
    DLGN-DT trees, sensitivity's five grokking runs of up to 17,000 full-batch epochs,
    hyperdas's five hypernetworks and their branches without the penalty),
    at most fifteen minutes of one-off artefacts for a chapter."""

    @property
    def notebook(self) -> Path:
        return NOTEBOOKS / f"{self.slug}.py"

    @property
    def built(self) -> bool:
        return self.notebook.is_file()

    def module(self) -> ModuleType:
        """The chapter's method module, ``iclr25.chapters.<slug>``."""
        return importlib.import_module(f"iclr25.chapters.{self.slug}")


_OPTIM = "Optimisation and learning theory"
_MECH = "Mechanistic interpretability"
_EDIT = "Editing and steering language models"
_EXPLAIN = "Explanations and attributions"
_RELIABLE = "Reliable predictions"
_GRAPHS = "Graphs and networks"

ALL: tuple[Chapter, ...] = (
    Chapter("sro", "Sketching for regularized least squares", _OPTIM),
    Chapter("sensitivity", "Transformers learn low-sensitivity functions", _OPTIM, one_off_s=800),
    Chapter("dlgn", "Deep linearly gated networks", _OPTIM, one_off_s=450),
    Chapter("modeconn", "Input-space mode connectivity", _OPTIM),
    Chapter(
        "mcqa", "How language models answer multiple-choice questions", _MECH, LM_BUDGET_S, 300
    ),
    Chapter(
        "hyperdas", "HyperDAS: locating and learning concept features", _MECH, LM_BUDGET_S, 300
    ),
    Chapter("identifiability", "Is mechanistic interpretability identifiable?", _MECH),
    Chapter("debias", "Causality-guided prompting to debias LLM decisions", _EDIT, LM_BUDGET_S),
    Chapter("fine", "FiNE: fine-grained neuron-level knowledge editing", _EDIT, LM_BUDGET_S, 600),
    Chapter("sadr", "SADR: restricting attention drift in knowledge editing", _EDIT, LM_BUDGET_S),
    Chapter("sst", "Sufficient subset training", _EXPLAIN),
    Chapter("probing", "Probe training decides post-hoc attributions", _EXPLAIN),
    Chapter("faithfulness", "Faithfulness of LLM explanations", _EXPLAIN, LM_BUDGET_S),
    Chapter("ai2tale", "AI2TALE: phishing-sentence localisation", _EXPLAIN, one_off_s=480),
    Chapter("selective", "Label smoothing and selective classification", _RELIABLE, one_off_s=540),
    Chapter(
        "enumerative", "Transformers for psi-class intersection numbers", _RELIABLE, one_off_s=180
    ),
    Chapter("tgbseq", "TGB-Seq: temporal links with sequential dynamics", _GRAPHS, one_off_s=600),
    Chapter("kbg", "Knowledge Benchmark Graph for GNN design", _GRAPHS, one_off_s=300),
    Chapter("brainood", "BrainOOD: OOD-generalisable brain-network GNNs", _GRAPHS, one_off_s=600),
)


TEMPLATE = Chapter("_template", "Template: a chapter's anatomy", "Template")
"""``notebooks/_template.py`` and ``iclr25.chapters._template``: copy them to start
a chapter. Runnable through :func:`get`, listed nowhere."""


def chapter_cpu_limit(chapter: Chapter) -> int:
    """CPU seconds (its process, its kernel and their children) before a chapter's
    execution is stopped, on the machine the budgets were measured on: three times its
    budget, for the training a cold cache adds, plus its one-off. CPU time, not wall
    time: other processes on the machine slow the wall clock, and change the CPU time
    of a chapter's work little. The processor does change it, and so can a shared
    host's other work: on a slower machine the build multiplies the limit by how much
    slower its speed probe ran (:func:`iclr25.build.speed_factor`)."""
    return 3 * chapter.budget_s + chapter.one_off_s


WALL_BACKSTOP = 4
"""A chapter is also stopped after this many times its CPU limit in wall-clock
seconds: a backstop against a kernel that hangs without using the CPU."""


RENDER_S = 120
"""Seconds Sphinx takes to render the executed book (about 60 measured), not counting
execution."""


def book_cpu_limit(chapters: list[Chapter] | None = None) -> int:
    """CPU seconds the whole book build may use on the budgets' machine: every
    chapter's CPU limit (the build stops a chapter at its own), plus rendering. Like a
    chapter's, the book's limit is on CPU time, which other processes on the machine
    change little, and a slower machine's speed factor multiplies it."""
    chapters = built() if chapters is None else chapters
    return sum(chapter_cpu_limit(c) for c in chapters) + RENDER_S


def book_wall_backstop(jobs: int, chapters: list[Chapter] | None = None) -> int:
    """Wall-clock seconds after which the book build is stopped as hung:
    :data:`WALL_BACKSTOP` times the longest a build of ``jobs`` chapters at a time can
    take with every chapter at its CPU limit (``sum / jobs + max``: list scheduling
    finishes within it), plus rendering. A backstop, as a chapter's is: a loaded
    machine does not reach it."""
    limits = [chapter_cpu_limit(c) for c in (built() if chapters is None else chapters)]
    makespan = sum(limits) / jobs + max(limits, default=0)
    return round(WALL_BACKSTOP * (makespan + RENDER_S))


def built() -> list[Chapter]:
    """Chapters whose notebook exists, in reading order."""
    return [c for c in ALL if c.built]


def get(slug: str) -> Chapter:
    """The built chapter ``slug``, or :data:`TEMPLATE` for ``"_template"``; a
    ``ValueError`` naming the built chapters otherwise."""
    for c in [*built(), TEMPLATE]:
        if c.slug == slug:
            return c
    names = ", ".join(c.slug for c in built())
    raise ValueError(f"unknown chapter {slug!r}; built chapters: {names}")
