"""The book's parallel execution step (iclr25.build) and the time budgets behind it."""

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupyter_cache import get_cache

from iclr25 import build, toc

pytestmark = pytest.mark.smoke  # most tests here execute notebooks in kernels


def _notebook(tmp_path, name, *cells):
    text = "\n\n".join(f"# %%\n{cell}" for cell in cells)
    path = tmp_path / f"{name}.py"
    path.write_text(f"# %% [markdown]\n# # {name}\n\n{text}\n")
    return path


def _execute(tmp_path, chapters, jobs=2, log=lambda line: None):
    return build.execute_chapters(
        chapters,
        cache_path=tmp_path / "cache",
        record_path=tmp_path / "record.json",
        executed_dir=tmp_path / "executed",
        jobs=jobs,
        threads=1,
        log=log,
    )


def _busy_sibling(tmp_path, seconds):
    """A cell that waits ``seconds`` for a busy process beside the chapter, which it
    starts through a shell that exits at once: the spinner is no child of the kernel,
    so its CPU time is not the chapter's. The cell takes more wall time than CPU time."""
    done = tmp_path / "spun"
    spinner = tmp_path / "spinner.py"
    spinner.write_text(
        f"import time\nend = time.time() + {seconds}\nwhile time.time() < end:\n    pass\n"
        f"open({str(done)!r}, 'w').close()\n"
    )
    return (
        "import os, subprocess, sys, time\n"
        f"subprocess.run(['sh', '-c', sys.executable + ' {spinner} >/dev/null 2>&1 &'])\n"
        f"while not os.path.exists({str(done)!r}):\n"
        "    time.sleep(0.1)"
    )


def _wall(tmp_path, slug):
    record = json.loads((tmp_path / "record.json").read_text())
    return next(c["wall_s"] for c in record["chapters"] if c["slug"] == slug)


def test_executed_chapters_are_what_myst_nb_finds_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "models"))
    threads = (
        "import os, torch\nprint(os.environ['OMP_NUM_THREADS'], torch.get_num_threads(), "
        "os.environ['TQDM_DISABLE'])"
    )
    cached = "from iclr25 import core\ncore.cached('toy MLP', {'n': 1}, lambda: {'x': 1})"
    one = _notebook(tmp_path, "one", threads, cached)
    two = _notebook(tmp_path, "two", "x = 1 + 1")
    runs = _execute(tmp_path, [("one", one, 60), ("two", two, 60)])
    assert [r.state for r in runs] == ["done", "done"]
    cache = get_cache(str(tmp_path / "cache"))
    for source in (one, two):  # found by the hash of the source, as myst-nb looks
        record = cache.match_cache_notebook(jupytext.read(source, fmt="py:percent"))
        assert record.data["execution_seconds"] > 0
    nb = cache.get_cache_bundle(
        cache.match_cache_notebook(jupytext.read(one, fmt="py:percent")).pk
    ).nb
    printed = [o["text"] for c in nb.cells for o in c.get("outputs", []) if "text" in o]
    assert printed[0].split() == ["1", "1", "1"]  # one thread in the kernel, no progress bars
    kept = nbformat.read(tmp_path / "executed" / "one.ipynb", as_version=4)
    assert [c.cell_type for c in kept.cells] == ["markdown", "code", "code"]
    assert kept.cells[1].outputs[0]["text"] == printed[0]
    record = json.loads((tmp_path / "record.json").read_text())
    assert {c["slug"]: c["state"] for c in record["chapters"]} == {"one": "done", "two": "done"}
    assert record["machine"] == build.machine() and record["machine"]["cores"] >= 1
    assert set(record["speed_probe_cpu_s"]) == {"start", "end"}
    assert all(0 < s < 60 for s in record["speed_probe_cpu_s"].values())
    assert runs[0].cpu_s > 0 and runs[0].cache == {"hit": 0, "built": 1}
    assert list(runs[0].built) == ["toy MLP"] and runs[0].built["toy MLP"]["count"] == 1
    assert runs[0].built["toy MLP"]["cpu_s"] >= 0 and runs[1].built == {}  # a name with a space


def test_a_chapter_that_raises_fails_the_build_with_its_name(tmp_path):
    record = tmp_path / "record.json"  # bad raises once the build has recorded good done
    good = _notebook(tmp_path, "good", "x = 1")
    bad = _notebook(
        tmp_path,
        "bad",
        "import json, time\n"
        "def good_done():\n"
        "    try:\n"
        f"        chapters = json.load(open({str(record)!r}))['chapters']\n"
        "    except (OSError, ValueError):\n"
        "        return False\n"
        "    return any(c['slug'] == 'good' and c['state'] == 'done' for c in chapters)\n"
        "while not good_done():\n"
        "    time.sleep(0.1)\n"
        "raise ValueError('no such')",
    )
    slow = _notebook(tmp_path, "slow", "import time\ntime.sleep(120)")
    later = _notebook(tmp_path, "later", "x = 1")
    chapters = [("good", good, 60), ("bad", bad, 59), ("slow", slow, 58), ("later", later, 57)]
    began = time.monotonic()
    with pytest.raises(build.BuildError) as err:  # longest limit first: good and bad start
        _execute(tmp_path, chapters)
    assert str(err.value).startswith("chapter bad failed: ValueError: no such (finished: good ")
    wall = _wall(tmp_path, "good")
    assert f"good {wall:.0f} s; stopped: slow; not run: later; the speed probe took " in str(
        err.value
    )
    assert str(err.value).endswith(f"at the end, {build.PROBE_SEEN})")
    # slow was stopped, not waited for: the build ended before slow's sleep would have
    # (kernel start-ups alone took 68 s on a loaded 2-core machine)
    assert time.monotonic() - began < 120


def test_a_chapter_that_waits_past_its_cpu_limit_is_not_stopped(tmp_path):
    """A loaded machine slows the wall clock, not a chapter's work: sleeping uses no CPU."""
    sleeper = _notebook(tmp_path, "sleeper", "import time\ntime.sleep(12)")
    (run,) = _execute(tmp_path, [("sleeper", sleeper, 8)], jobs=1)
    assert run.state == "done" and run.wall_s > 12 > 8 > run.cpu_s


def test_a_cell_that_waits_on_a_busy_sibling_longer_than_its_cpu_limit_finishes(tmp_path):
    """No cell has a wall-clock timeout of its own (mcqa's cold build was stopped at
    _config.yml's 1,800 s per cell beside one more busy process): only the chapter's
    CPU limit, and the backstop, WALL_BACKSTOP times it, against a hung kernel."""
    waiter = _notebook(tmp_path, "waiter", _busy_sibling(tmp_path, 15))
    (run,) = _execute(tmp_path, [("waiter", waiter, 12)], jobs=1)
    assert run.state == "done" and run.wall_s > 15 > run.reference_limit_s > run.cpu_s
    assert build.kernel_timeouts(48) == {
        "timeout": None,
        "startup_timeout": 48,
        "iopub_timeout": 48,
    }


def _as_fast_as_the_budgets_machine(monkeypatch):
    monkeypatch.setattr(build, "speed_probe", lambda: build.REFERENCE_PROBE_S)


def test_a_chapter_past_its_cpu_limit_is_stopped_and_named(tmp_path, monkeypatch):
    _as_fast_as_the_budgets_machine(monkeypatch)
    spinner = _notebook(tmp_path, "spinner", "while True:\n    pass")
    began = time.monotonic()
    with pytest.raises(build.BuildError) as err:
        _execute(tmp_path, [("spinner", spinner, 6)], jobs=1)
    assert str(err.value).startswith("chapter spinner timed out: stopped past its CPU limit of 6 s")
    record = json.loads((tmp_path / "record.json").read_text())["chapters"][0]
    assert record["cpu_s"] > 6 and time.monotonic() - began < 60


def test_on_a_slower_machine_the_limit_grows_with_the_speed_probe(tmp_path, monkeypatch):
    """A limit is in CPU seconds of the budgets' machine: where the probe, just before
    the chapter starts, takes twice as long, the chapter may use twice as many."""
    assert build.speed_factor(build.REFERENCE_PROBE_S / 2) == 1  # a faster one: as they are
    assert build.speed_factor(3 * build.REFERENCE_PROBE_S) == 3
    slow = 2 * build.REFERENCE_PROBE_S
    monkeypatch.setattr(build, "speed_probe", lambda: slow)
    spinner = _notebook(tmp_path, "spinner", "while True:\n    pass")
    with pytest.raises(build.BuildError) as err:
        _execute(tmp_path, [("spinner", spinner, 3)], jobs=1)
    assert str(err.value).startswith(
        "chapter spinner timed out: stopped past its CPU limit of 6 s, at "
    )
    assert (
        "(its limit 3 s on the budgets' machine, times 2.00: the speed probe took "
        f"{slow:.2f} CPU-s over its run)" in str(err.value)
    )
    record = json.loads((tmp_path / "record.json").read_text())["chapters"][0]
    assert (record["cpu_limit_s"], record["reference_limit_s"]) == (6, 3)
    assert record["speed_probe_s"] == slow and record["cpu_s"] > 6


def test_the_limit_follows_the_probe_while_the_chapter_runs(tmp_path, monkeypatch):
    """A machine that slows down mid-run (a shared host's other work) is measured as it
    goes: the probe's mean over the chapter's run scales its limit."""
    readings = iter([build.REFERENCE_PROBE_S] * 2 + [3 * build.REFERENCE_PROBE_S] * 10**4)
    monkeypatch.setattr(build, "speed_probe", lambda: next(readings))
    monkeypatch.setattr(build, "PROBE_EVERY_S", 0.5)
    spinner = _notebook(tmp_path, "spinner", "while True:\n    pass")
    with pytest.raises(build.BuildError, match="stopped past its CPU limit of "):
        _execute(tmp_path, [("spinner", spinner, 3)], jobs=1)
    record = json.loads((tmp_path / "record.json").read_text())["chapters"][0]
    assert record["reference_limit_s"] == 3 and 6 <= record["cpu_limit_s"] <= 9
    assert record["cpu_s"] > 6  # the limit of its first probe, 3 s, did not stop it


def test_a_hung_chapter_is_stopped_by_the_wall_clock_backstop(tmp_path, monkeypatch):
    _as_fast_as_the_budgets_machine(monkeypatch)
    hung = _notebook(tmp_path, "hung", "import time\ntime.sleep(600)")
    began = time.monotonic()
    with pytest.raises(
        build.BuildError,
        match="chapter hung timed out: stopped by the wall-clock backstop of 20 s "
        r"\(a hung kernel\?\), at \d+ s of CPU",
    ):
        _execute(tmp_path, [("hung", hung, 5)], jobs=1)  # backstop: 4 x 5 s
    assert 20 < time.monotonic() - began < 60


def test_the_build_shows_each_chapter_as_it_starts_and_ends(tmp_path, monkeypatch):
    """Plain lines where stderr is no terminal (CI): a chapter's CPU time against its
    limit, the chapters done, and the time left from the limits still to run."""
    _as_fast_as_the_budgets_machine(monkeypatch)
    first = _notebook(tmp_path, "first", "x = 1")
    second = _notebook(tmp_path, "second", "x = 2")
    lines = []
    runs = _execute(tmp_path, [("second", second, 300), ("first", first, 600)], 1, lines.append)
    cpu = {r.slug: f"{r.cpu_s:,.0f}" for r in runs}
    assert lines == [
        "iclr25: first started: limit 600 CPU-s, 1 running",
        f"iclr25: first done: {cpu['first']} CPU-s of 600 limit, 1 of 2 chapters, "
        "about 5 min left",  # second's 300 s, one at a time
        "iclr25: second started: limit 300 CPU-s, 1 running",
        f"iclr25: second done: {cpu['second']} CPU-s of 300 limit, 2 of 2 chapters",
    ]


def test_jobs_and_threads_share_the_cores(monkeypatch):
    monkeypatch.delenv(build.JOBS, raising=False)
    assert build.jobs_and_threads(2) == (2, 1)
    monkeypatch.setenv(build.JOBS, "1")
    assert build.jobs_and_threads(2) == (1, 2)
    monkeypatch.setenv(build.JOBS, "zero")
    with pytest.raises(ValueError, match="ICLR25_JOBS='zero' is not a whole number >= 1"):
        build.jobs_and_threads(2)


def test_without_cpu_affinity_as_on_macos_the_build_takes_every_core(monkeypatch):
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 4)
    monkeypatch.delenv(build.JOBS, raising=False)
    assert build.cores() == 4 and build.jobs_and_threads() == (4, 1)


def test_chapter_kernels_get_the_threads_and_the_allocator_settings(tmp_path, monkeypatch):
    for name in build.ALLOCATOR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    env = build._environment("sro", 2, tmp_path / "cache.log")
    assert all(env[name] == "2" for name in build.THREAD_VARIABLES)
    assert {name: env[name] for name in build.ALLOCATOR_VARIABLES} == build.ALLOCATOR_VARIABLES
    monkeypatch.setenv("MALLOC_MMAP_THRESHOLD_", "65536")  # the reader's own setting wins
    assert build._environment("sro", 2, tmp_path / "cache.log")["MALLOC_MMAP_THRESHOLD_"] == "65536"


def test_limits_come_from_the_budgets():
    chapters = toc.built()
    assert all(toc.chapter_cpu_limit(c) == 3 * c.budget_s + c.one_off_s for c in chapters)
    limits = [toc.chapter_cpu_limit(c) for c in chapters]
    assert toc.book_cpu_limit() == sum(limits) + toc.RENDER_S
    for jobs in (1, 2, 4):
        bound = sum(limits) / jobs + max(limits)  # list scheduling finishes within it
        assert toc.book_wall_backstop(jobs) == round(4 * (bound + toc.RENDER_S))
    assert build.WALL_BACKSTOP == toc.WALL_BACKSTOP == 4
    assert toc.get("fine").one_off_s > 0 and toc.get("sro").one_off_s == 0
    assert all(c.one_off_s <= 15 * 60 for c in chapters)  # fifteen one-off minutes at most
    assert toc.get("mcqa").budget_s == toc.LM_BUDGET_S and toc.get("sro").budget_s == toc.BUDGET_S


def test_the_book_build_runs_under_the_chapters_rule(tmp_path):
    """``run_within``, which holds ``jupyter-book build`` in the book's test, stops a
    process tree that spins past its CPU limit (a child's CPU counts), and one that
    hangs past its wall backstop, naming the limit; a sleeper under both finishes."""
    spin = "import subprocess, sys; subprocess.run([sys.executable, '-c', 'while True: pass'])"
    log = tmp_path / "out"
    code, why = build.run_within(
        [sys.executable, "-c", spin], cpu_limit_s=2, wall_limit_s=60, cwd=tmp_path, output=log
    )
    assert code is None and why.startswith("stopped past its CPU limit of 2 s, at ")
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    code, why = build.run_within(hang, cpu_limit_s=30, wall_limit_s=3, cwd=tmp_path, output=log)
    assert code is None and "by the wall-clock backstop of 3 s (a hung kernel?)" in why
    sleeper = [sys.executable, "-c", "import time; time.sleep(3); print('done')"]
    code, why = build.run_within(sleeper, cpu_limit_s=1, wall_limit_s=30, cwd=tmp_path, output=log)
    assert (code, why) == (0, None) and log.read_text() == "done\n"


def test_a_cancelled_run_is_stopped_with_its_process_tree(tmp_path):
    """The book builds in a thread beside the tests: setting ``cancel`` (the tests have
    ended) kills the build's whole session within a second."""
    cancel = threading.Event()
    threading.Timer(1, cancel.set).start()
    began = time.monotonic()
    hang = [sys.executable, "-c", "import time; time.sleep(60)"]
    code, why = build.run_within(
        hang, cpu_limit_s=30, wall_limit_s=30, cwd=tmp_path, output=tmp_path / "out", cancel=cancel
    )
    assert (code, why) == (None, "cancelled") and time.monotonic() - began < 10


CHAPTER_PROCESS = """
import os, subprocess, sys, time
from iclr25 import processes
processes.end_with_parent(int(sys.argv[1]), poll_s=0.1)
kernel = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
open({pids!r}, "w").write(f"{{os.getpid()}} {{kernel.pid}}")
time.sleep(600)
"""


def gone(pid: int) -> bool:
    """Whether process ``pid`` has ended (a zombie that nobody reaped has)."""
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_chapter_process_ends_with_its_kernel_when_its_parent_is_killed(tmp_path):
    """A sweep's worker killed by SIGKILL cannot stop the chapter it started, which
    runs in a session of its own; the chapter's process sees its parent go and ends,
    its kernel with it."""
    pids = tmp_path / "pids"
    (tmp_path / "chapter.py").write_text(CHAPTER_PROCESS.format(pids=str(pids)))
    starter = (
        "import os, subprocess, sys, time; subprocess.Popen([sys.executable, "
        f"{str(tmp_path / 'chapter.py')!r}, str(os.getpid())], start_new_session=True); "
        "time.sleep(600)"
    )
    worker = subprocess.Popen([sys.executable, "-c", starter])
    deadline = time.monotonic() + 60
    while not pids.is_file() or len(pids.read_text().split()) < 2:
        assert time.monotonic() < deadline, "the chapter process never started"
        time.sleep(0.1)
    started = [int(pid) for pid in pids.read_text().split()]
    assert not any(gone(pid) for pid in started)
    worker.kill()
    worker.wait()
    deadline = time.monotonic() + 20
    while not all(gone(pid) for pid in started):
        assert time.monotonic() < deadline, "the chapter process outlived its parent"
        time.sleep(0.1)


HANG = """
from pathlib import Path

from iclr25 import build

def test_hang():
    sleeper = "import os, time; open({pid!r}, 'w').write(str(os.getpid())); time.sleep(600)"
    build.run_within([{python!r}, "-c", sleeper], cpu_limit_s=60, wall_limit_s=600,
                     cwd=Path("."), output=None)
"""


@pytest.mark.smoke
def test_a_terminated_test_session_kills_what_it_started(tmp_path):
    """SIGTERM (a CI job's timeout) stops the tests as Ctrl-C does: a process they
    started in a session of its own, as the book's build is, dies with them."""
    pid = tmp_path / "pid"
    (tmp_path / "test_hang.py").write_text(HANG.format(pid=str(pid), python=sys.executable))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parent)}
    session = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "conftest", "-q", "-p", "no:cacheprovider"]
        + ["-c", os.devnull, "--rootdir", str(tmp_path), str(tmp_path / "test_hang.py")],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while not pid.is_file() or not pid.read_text():
        assert time.monotonic() < deadline and session.poll() is None, "the test never started"
        time.sleep(0.2)
    child = int(pid.read_text())
    session.terminate()
    session.wait(timeout=60)
    time.sleep(0.5)
    with pytest.raises(ProcessLookupError):
        os.kill(child, 0)
