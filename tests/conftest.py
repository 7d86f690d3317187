"""Fixtures shared by the test modules (no test module imports another)."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest
import torch
from playwright.sync_api import sync_playwright

from iclr25 import editing, llm


@pytest.fixture(scope="session")
def facts() -> list[editing.Fact]:
    """A few facts: two subjects with two relations each, and three with one."""
    return [
        editing.Fact("France", "capital", "Paris"),
        editing.Fact("France", "language", "French"),
        editing.Fact("Japan", "capital", "Tokyo"),
        editing.Fact("Japan", "language", "Japanese"),
        editing.Fact("Italy", "capital", "Rome"),
        editing.Fact("Peru", "capital", "Lima"),
        editing.Fact("Spain", "language", "Spanish"),
    ]


@pytest.fixture(scope="session")
def editing_vocabulary() -> list[str]:
    """Every word of the editing prompts, objects and ROME's prefixes: a tiny model's vocabulary."""
    texts = [r.prompt.format(s) for r in editing.RELATIONS.values() for s, *_ in editing.COUNTRIES]
    texts += [
        p.format(s)
        for r in editing.RELATIONS.values()
        for p in r.paraphrases
        for s, *_ in editing.COUNTRIES
    ]
    texts += [" ".join(editing.objects(r)) for r in editing.RELATIONS] + [
        " is a . The people of country"
    ]
    texts += list(editing.PREFIXES) + list(editing.CONTEXT_OPENINGS)
    return llm.words(texts)


@pytest.fixture(scope="session")
def snapshot() -> Callable[[llm.LM], dict[str, torch.Tensor]]:
    """``snapshot(lm)``: a copy of the model's weights."""

    def take(lm: llm.LM) -> dict[str, torch.Tensor]:
        return {k: v.detach().clone() for k, v in lm.model.state_dict().items()}

    return take


@pytest.fixture(scope="session")
def changed() -> Callable[[llm.LM, dict[str, torch.Tensor]], list[str]]:
    """``changed(lm, before)``: the names of the weights that differ from a snapshot."""

    def diff(lm: llm.LM, before: dict[str, torch.Tensor]) -> list[str]:
        return [k for k, v in lm.model.state_dict().items() if not torch.equal(v, before[k])]

    return diff


@pytest.fixture(scope="session")
def cli() -> Callable[..., subprocess.CompletedProcess]:
    """``cli(*args, env=None)``: run ``python -m iclr25 *args`` from the repository root."""
    from iclr25 import toc

    def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "iclr25", *args],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=toc.ROOT,
            env=env,
        )

    return run


def pytest_configure(config: pytest.Config) -> None:
    """Tests run torch on one thread, as the book's chapters do: two threads beside a
    busy core wait on each other, and a loaded machine must not slow the suite down
    severalfold (chapters run by the tests get one thread from ``iclr25.run``).

    A SIGTERM (a CI job's timeout, ``kill``) stops the session as Ctrl-C does, so that
    the processes it started in sessions of their own (the book's build, a chapter's
    kernel) are killed with it rather than left running."""
    torch.set_num_threads(1)
    signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def _site(item: pytest.Item) -> str | None:
    """Which site a test of the rendered pages reads (its ``html`` parameter):
    ``"smoke"`` (``make test``) or ``"book"`` (``make book``); None for other tests."""
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("html") if callspec is not None else None


def needs_book(item: pytest.Item) -> bool:
    return "book" in getattr(item, "fixturenames", ()) or _site(item) == "book"


def needs_smoke_site(item: pytest.Item) -> bool:
    return _site(item) == "smoke"


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by these markers
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tiers: a test that needs the built book is marked ``book``, one that drives
    the browser ``browser``; one marked ``smoke`` executes chapters or notebooks, or
    reads the site rendered from the smoke runs; every other test is ``unit`` (``make
    check``). The tests of the smoke site run after the smoke runs, whose notebooks it
    is made of (:func:`smoke_site`), and those that need the built book run last, so
    that the others run while it builds (:func:`book_build`). Such a test may
    wait for the whole build: its time limit is the book's wall-clock backstop, plus a
    minute (the build itself is held to its CPU limit); others keep pytest.ini's."""
    from iclr25 import build, toc

    for item in items:
        if needs_book(item):
            item.add_marker(pytest.mark.book)
        if needs_smoke_site(item):
            item.add_marker(pytest.mark.smoke)
        if "browser" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.browser)
        if not any(item.get_closest_marker(name) for name in ("book", "browser", "smoke")):
            item.add_marker(pytest.mark.unit)
    items.sort(key=lambda item: (needs_book(item), needs_smoke_site(item)))  # stable
    limit = toc.book_wall_backstop(build.jobs_and_threads()[0]) + 60
    for item in filter(needs_book, items):
        item.add_marker(pytest.mark.timeout(limit))
    for item in filter(needs_smoke_site, items):
        item.add_marker(pytest.mark.timeout(SITE_TIMEOUT_S))


@pytest.fixture(scope="session", autouse=True)
def book_build(request, tmp_path_factory) -> Iterator[Future | None]:
    """Start building the whole book when the session begins, if a collected test needs
    it: every chapter executed with its book defaults, within the CPU time its chapters'
    limits allow (``toc.book_cpu_limit``, times the machine's ``build.speed_factor``),
    with a wall-clock backstop against a hang (``toc.book_wall_backstop``), the
    chapters' own rule. The other tests run meanwhile, on the cores the build's
    processes leave; the build's limits are on CPU time, which sharing the machine
    changes little. The future's result is ``run_within``'s ``(returncode, why)`` and
    the build's log; the build is stopped with the session if it is still running."""
    from iclr25 import build, toc

    if not any(map(needs_book, request.session.items)):
        yield None
        return
    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    jobs, _ = build.jobs_and_threads()
    log = tmp_path_factory.mktemp("book") / "jupyter-book.log"
    cancel = threading.Event()

    def run() -> tuple[int | None, str | None, Path]:
        return *build.run_within(
            [str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", "."],
            cpu_limit_s=toc.book_cpu_limit() * build.speed_factor(build.speed_probe()),
            wall_limit_s=toc.book_wall_backstop(jobs),
            cwd=toc.ROOT,
            output=log,
            cancel=cancel,
        ), log

    reporter = request.config.pluginmanager.get_plugin("terminalreporter")
    with ThreadPoolExecutor(max_workers=2) as pool:
        try:
            built = pool.submit(run)
            pool.submit(show_progress, log, built, reporter)
            yield built
        finally:
            cancel.set()


def show_progress(log: Path, built: Future, reporter: pytest.TerminalReporter) -> None:
    """The build's progress lines (``iclr25: ...``: each chapter as it starts and ends,
    the time left) through pytest's reporter as they reach its log, until the build
    ends. ``make book`` runs pytest with ``--capture=no``, so they reach the terminal;
    with capture on, they go with the output of the test running at the time."""
    seen = 0
    while True:
        done = built.done()
        text = log.read_text() if log.exists() else ""
        lines = text[: text.rfind("\n") + 1].splitlines()  # whole lines only
        for line in lines[seen:]:
            if line.startswith("iclr25: "):
                reporter.write_line(line)
                reporter.flush()  # a log file, as in CI, is not flushed line by line
        seen = len(lines)
        if done:
            return
        time.sleep(2)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """An exclusive lock on the file ``path`` while the block runs: pytest-xdist's
    workers (``make test`` runs two) share the smoke runs and the site made of them."""
    import fcntl

    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def smoke_runs(tmp_path_factory) -> Path:
    """The folder into which the smoke runs write each chapter's executed notebook, and
    from which :func:`smoke_site` renders the site: one for the whole session, the
    workers' common folder under pytest-xdist."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    folder = root / "smoke-runs"
    folder.mkdir(exist_ok=True)
    return folder


@pytest.fixture(scope="session")
def smoke_run(smoke_runs) -> Callable[[str], tuple[Path, list]]:
    """``smoke_run(slug)``: the chapter's smoke run in :func:`smoke_runs`, executed by
    whichever test asks first (``test_notebooks.py``, or the site), read back after:
    its executed notebook and its claims."""
    from iclr25 import run
    from iclr25.core import read_claims

    def once(slug: str) -> tuple[Path, list]:
        with locked(smoke_runs / f"{slug}.lock"):
            notebook = smoke_runs / f"{slug}.ipynb"
            if (smoke_runs / f"{slug}.claims.json").is_file():
                return notebook, read_claims(notebook)
            return run.execute(slug, smoke_runs, smoke=True)

    return once


SITE_CPU_LIMIT_S = 900
"""CPU seconds Sphinx may take to render the site from chapters already run (about
two minutes on the budgets' machine)."""

SITE_TIMEOUT_S = 3600
"""Wall-clock limit of a test of the smoke site: the first may wait for the smoke
runs it is made of, and render it. A backstop, as the chapters' are."""


def render_site(
    output: Path, env: dict[str, str], cpu_limit_s: float
) -> tuple[int | None, str | None, Path]:
    """``jupyter-book build`` of the whole book into ``output`` (its ``_build/html``)
    under ``cpu_limit_s`` and the chapters' wall-clock backstop, as :func:`book_build`
    runs it: ``run_within``'s ``(returncode, why)`` and the build's log."""
    from iclr25 import build, toc

    jupyter_book = Path(sys.executable).parent / "jupyter-book"
    command = [str(jupyter_book), "build", "--all", "-W", "-n", "--keep-going", "."]
    log = output / "jupyter-book.log"
    output.mkdir(parents=True, exist_ok=True)
    return *build.run_within(
        [*command, "--path-output", str(output)],
        cpu_limit_s=cpu_limit_s,
        wall_limit_s=toc.WALL_BACKSTOP * cpu_limit_s,
        cwd=toc.ROOT,
        output=log,
        env=env,
    ), log


@pytest.fixture(scope="session")
def smoke_site(smoke_runs, smoke_run) -> tuple[int | None, str | None, Path, Path]:
    """The site rendered from the chapters' smoke runs (``$ICLR25_RUNS``): every page
    of the book, in seconds of CPU rather than the book's hour, rendered once for the
    session (the first worker to ask renders it; the other reads its result). A
    chapter whose smoke run is missing (its test deselected) is run first. Returns the
    build's ``(returncode, why, log)`` and the site's ``_build/html``."""
    from iclr25 import build, toc

    output = smoke_runs.parent / "smoke-site"
    result = output / "result.json"
    with locked(smoke_runs / "site.lock"):
        if not result.is_file():
            for chapter in toc.built():
                smoke_run(chapter.slug)
            env = {**os.environ, build.RUNS: str(smoke_runs)}
            limit = SITE_CPU_LIMIT_S * build.speed_factor(build.speed_probe())
            returncode, why, _ = render_site(output, env, limit)
            result.write_text(json.dumps([returncode, why]))
    returncode, why = json.loads(result.read_text())
    return returncode, why, output / "jupyter-book.log", output / "_build" / "html"


@pytest.fixture(scope="session")
def browser():
    """Debian's Chromium under playwright (which never downloads a browser), for the
    site's and JupyterLab's checks."""
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.fail("Debian's chromium is needed for the site check (`make browser` installs it)")

    with sync_playwright() as p:
        yield p.chromium.launch(
            executable_path=chromium,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
