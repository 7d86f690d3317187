"""Execute the book's chapters in parallel, before Sphinx renders them.

Jupyter Book executes notebooks one after another while Sphinx reads them; with
nineteen chapters that takes too long. So the book's Sphinx extension first calls
:func:`execute_chapters`: every chapter runs in a process of its own, ``jobs`` at a
time, each kernel held to ``threads`` torch and BLAS threads (``jobs * threads`` is
the machine's cores, so the processes never oversubscribe them), longest first. Each
executed notebook goes into the jupyter-cache that myst-nb reads in ``cache`` mode,
which then renders it without executing it again. Nothing carries over from an
earlier build: the cache is emptied first, so every number on the site is computed
by this build (the trained models in :func:`iclr25.core.cached` do carry over).

Why not jupyter-cache's own parallel executor: it takes no per-process environment
(the thread limits), no limit on a whole notebook's CPU time, and keeps no record
of where each chapter's time went. A chapter runs under nbclient, as myst-nb runs one.

Every limit on a chapter is on CPU time, which other processes on the machine change
little; the only wall-clock limit is a backstop against a hung kernel, a generous
multiple of the CPU limit (:data:`iclr25.toc.WALL_BACKSTOP`) that load cannot reach.
nbclient's own wall-clock timeouts (each cell's, the kernel's start-up, the wait for a
cell's last output) are set to it (:func:`kernel_timeouts`): a fixed number of
seconds per cell stopped mcqa's cold build on a machine with one more busy process.

While the chapters run, the build shows each as it starts and ends (:class:`Progress`).

The build writes its record as it goes (``_build/iclr25-build.json``): each
chapter's state, wall and CPU seconds, and the model-cache artefacts it loaded or
built, with the CPU seconds each build took. The Scoreboard page shows it; a failed
or timed-out build names the chapter.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from iclr25.processes import end_with_parent, kill_tree, tree_cpu_s
from iclr25.toc import WALL_BACKSTOP

RUNS = "ICLR25_RUNS"
"""Environment variable: a folder of chapters that :mod:`iclr25.run` executed
(``<slug>.ipynb``, papermill's output). Where it is set, the book is rendered from
those runs and executes nothing (:func:`render_runs`): ``make test`` builds the site
from its smoke runs."""

JOBS = "ICLR25_JOBS"
"""Environment variable: how many chapters run at a time (default: one per core)."""

THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")
"""Set in each chapter's kernel: torch's intra-op pool and the BLAS libraries read them."""

ALLOCATOR_VARIABLES = {
    "MALLOC_MMAP_THRESHOLD_": str(32 * 2**20),
    "MALLOC_TRIM_THRESHOLD_": str(2**30),
}
"""glibc's allocator settings in each chapter's kernel, unless the environment has its own.
By default glibc gives the memory of a large freed tensor back to the operating system,
and the next tensor of that size faults its pages in again one by one, each zeroed: in
brainood's edge MLP (tensors of 25 MB) that was 15% of the training's CPU time, all of it
system time. These keep freed blocks of up to 32 MiB (the largest threshold glibc takes)
in the heap and give memory back only once 1 GiB lies free at its top. They decide where
memory lies, not what is computed: every result is the same, bit for bit."""


def machine() -> dict[str, object]:
    """What the build ran on, for reading its CPU times: the processor, its cores, and
    the widest vector instructions it offers (torch's kernels differ between AVX2 and
    AVX-512, in speed and in rounding)."""
    import platform

    info = Path("/proc/cpuinfo")
    text = info.read_text() if info.is_file() else ""
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if "model name" in line]
    flags = next((line.split() for line in text.splitlines() if line.startswith("flags")), [])
    vector = next((v for f, v in (("avx512f", "AVX-512"), ("avx2", "AVX2")) if f in flags), "")
    return {
        "cpu": names[0] if names else platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "vector": vector or "unknown",
    }


PROBE = """
import time, torch
torch.set_num_threads(1)
a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0))
began = time.process_time()
for _ in range(1000):
    a = torch.tanh(a @ a * 0.01)
print(time.process_time() - began)
"""
"""The speed probe's work: 1,000 products of 256 x 256 matrices on one thread."""


REFERENCE_PROBE_S = 0.25
"""The speed probe's reading on the machine the chapters' budgets were measured on, a
2-core Intel Xeon with AVX-512 (0.22 to 0.25 CPU-s idle, alone or two at a time)."""

PROBE_SEEN = (
    f"{REFERENCE_PROBE_S} on the budgets' 2-core Intel Xeon (AVX-512), "
    "0.9 on a 2-core AMD EPYC (AVX2) beside a busy process"
)
"""Speed-probe readings on machines of known cold times, for a failed build's message."""


def speed_probe() -> float:
    """CPU seconds that :data:`PROBE`, the same work on every machine, takes in a fresh
    process: how fast the machine ran at that moment, to read the chapters' CPU times
    against (a shared host's other work slows it too)."""
    env = {**os.environ, **{name: "1" for name in THREAD_VARIABLES}}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True
    )
    return round(float(done.stdout), 3)


def speed_factor(probe_s: float) -> float:
    """How many times slower than the budgets' machine a machine ran while the probe took
    ``probe_s``: ``probe_s / REFERENCE_PROBE_S``, never below 1. A chapter's CPU limit,
    in CPU seconds of the budgets' machine, is multiplied by it: a slower processor, or
    a shared host's other work, takes more CPU seconds for the same work (on the
    budgets' own machine, beside a busy process and a running chapter, the probe read
    up to 0.31 CPU-s); a faster machine keeps the limits as they are."""
    return max(1.0, probe_s / REFERENCE_PROBE_S)


PROBE_EVERY_S = 30
"""Seconds between speed probes while chapters run (a probe costs about 0.25 CPU-s)."""


class BuildError(RuntimeError):
    """A chapter failed or ran out of time; the message names it."""


@dataclass
class Run:
    """One chapter's execution in a build."""

    slug: str
    cpu_limit_s: int
    """CPU seconds it may use: on the budgets' machine until it starts, then times the
    :func:`speed_factor` of :attr:`speed_probe_s`; :data:`iclr25.toc.WALL_BACKSTOP` times
    as many of wall time."""
    reference_limit_s: int | None = None
    """Its CPU limit on the budgets' machine (set when it starts)."""
    speed_probe_s: float | None = None
    """The speed probe's mean reading over its run: just before it started, then every
    :data:`PROBE_EVERY_S` seconds, beside the chapters running."""
    state: str = "waiting"  # waiting, running, done, failed, timed out, stopped
    wall_s: float | None = None
    cpu_s: float | None = None
    cache: dict[str, int] = field(default_factory=dict)  # {"hit": n, "built": m}
    built: dict[str, dict[str, float]] = field(default_factory=dict)
    """The artefacts it built, by name: how many, and the CPU seconds their builds took."""
    error: str | None = None

    def summary(self) -> str:
        return f"{self.slug} {self.wall_s:.0f} s" if self.state == "done" else self.slug


def cores() -> int:
    """The cores this process may use: its CPU affinity where the system has one
    (Linux), else all the machine's (macOS has no ``os.sched_getaffinity``)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def jobs_and_threads(available: int | None = None) -> tuple[int, int]:
    """Chapters at a time (``$ICLR25_JOBS``, else one per core) and threads each, on
    ``available`` cores (default: :func:`cores`)."""
    available = available or cores()
    text = os.environ.get(JOBS, str(available))
    if not text.isdigit() or int(text) < 1:
        raise ValueError(f"{JOBS}={text!r} is not a whole number >= 1 (chapters at a time)")
    jobs = int(text)
    return jobs, max(1, available // jobs)


def kernel_timeouts(backstop_s: float) -> dict[str, int | None]:
    """nbclient's wall-clock timeouts for a run whose process tree its parent holds to
    a CPU limit and the wall-clock ``backstop_s``: no timeout per cell, and the backstop
    for the kernel's start-up and for a cell's last output after its reply. nbclient's
    defaults, 60 s and 4 s of wall time, are within a loaded machine's reach (kernel
    start-ups alone took 68 s on a loaded 2-core machine)."""
    backstop = round(backstop_s)
    return {"timeout": None, "startup_timeout": backstop, "iopub_timeout": backstop}


class Progress:
    """What a build shows as its chapters start and end: plain lines through ``log``
    (CI, a log file), or, where stderr is a terminal, a tqdm bar with the same lines
    above it. A chapter's end gives its CPU time against its limit, the chapters done
    and the time left: the CPU limits of the chapters still to run, and what is left
    of those running, over the jobs. Limits allow for a cold model cache, so on a warm
    one the estimate runs high."""

    def __init__(self, total: int, jobs: int, log: Callable[[str], None], bar: bool) -> None:
        from tqdm import tqdm

        self.total, self.jobs, self.log = total, jobs, log
        self.bar = tqdm(total=total, unit="chapter", file=sys.stderr) if bar else None

    def started(self, run: Run, running: int) -> None:
        line = f"{run.slug} started: limit {run.cpu_limit_s:,} CPU-s, {running} running"
        if self.bar is None:
            self.log(f"iclr25: {line}")
        else:
            self.bar.set_postfix_str(line)

    def ended(self, run: Run, ended: int, left_cpu_s: float) -> None:
        used = f"{run.cpu_s:,.0f}" if run.cpu_s is not None else "?"
        line = (
            f"{run.slug} {run.state}: {used} CPU-s of {run.cpu_limit_s:,} limit, "
            f"{ended} of {self.total} chapters"
        )
        if ended < self.total:
            line += f", about {math.ceil(left_cpu_s / self.jobs / 60)} min left"
        if self.bar is None:
            self.log(f"iclr25: {line}")
        else:
            self.bar.update()
            self.bar.write(f"iclr25: {line}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _environment(slug: str, threads: int, cache_log: Path) -> dict[str, str]:
    from iclr25.core import CACHE_LOG, CHAPTER

    env = dict(os.environ)
    env[CHAPTER] = slug
    env.update({name: str(threads) for name in THREAD_VARIABLES})
    env.update({name: os.environ.get(name, value) for name, value in ALLOCATOR_VARIABLES.items()})
    env[CACHE_LOG] = str(cache_log)
    env["TQDM_DISABLE"] = "1"  # a finished progress bar tells a page's reader nothing
    return env


def execute_chapters(
    chapters: Sequence[tuple[str, Path, int]],
    *,
    cache_path: Path,
    record_path: Path,
    executed_dir: Path,
    jobs: int,
    threads: int,
    log: Callable[[str], None] = print,
    bar: bool = False,
) -> list[Run]:
    """Execute ``(slug, notebook, cpu_limit_s)`` chapters, ``jobs`` at a time, into the
    jupyter-cache at ``cache_path`` and ``executed_dir/<slug>.ipynb``. ``cpu_limit_s`` is
    in CPU seconds of the budgets' machine: :func:`speed_probe` measures the machine just
    before a chapter starts and every :data:`PROBE_EVERY_S` seconds while chapters run,
    and a chapter's limit is multiplied by the :func:`speed_factor` of the probe's mean
    over its run so far. The first chapter that fails, uses more CPU seconds than
    its limit (its process tree, kernel included) or runs past the wall-clock backstop
    (``WALL_BACKSTOP`` times the CPU limit) stops the build: :class:`BuildError` names
    it and the limit it crossed, with the times of the chapters that finished, and
    those stopped or not yet run. Each chapter's start and end go to ``log``, or to a
    tqdm bar with ``bar`` (:class:`Progress`)."""
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_path))
    cache.clear_cache()
    cache = get_cache(str(cache_path))
    runs = {slug: Run(slug, limit) for slug, _, limit in chapters}
    sources = {slug: source for slug, source, _ in chapters}
    waiting = sorted(runs, key=lambda s: -runs[s].cpu_limit_s)  # longest first
    running: dict[str, tuple[subprocess.Popen, float, Path, int]] = {}
    work = Path(tempfile.mkdtemp(prefix="iclr25-build-"))
    probe = {"start": speed_probe()}
    start = time.monotonic()
    readings: list[tuple[float, float]] = []  # (when, speed probe's CPU seconds)
    progress = Progress(len(runs), jobs, log, bar)

    def measure() -> int:
        readings.append((time.monotonic(), speed_probe()))
        return len(readings) - 1

    def save() -> None:
        record = {
            "machine": machine(),
            "speed_probe_cpu_s": probe,
            "jobs": jobs,
            "threads": threads,
            "wall_s": round(time.monotonic() - start, 1),
            "chapters": [asdict(r) for r in runs.values()],
        }
        tmp = record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=1))
        os.replace(tmp, record_path)

    record_path.parent.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(executed_dir, ignore_errors=True)
    executed_dir.mkdir(parents=True)
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                slug = waiting.pop(0)
                run = runs[slug]
                first = measure()  # the probe just before it starts
                run.reference_limit_s, run.speed_probe_s = run.cpu_limit_s, readings[first][1]
                run.cpu_limit_s = round(run.cpu_limit_s * speed_factor(run.speed_probe_s))
                folder = work / slug
                folder.mkdir()
                with (folder / "stderr").open("w") as stderr:
                    process = subprocess.Popen(
                        [sys.executable, "-m", "iclr25.build", str(sources[slug]), str(folder)]
                        + [str(WALL_BACKSTOP * run.cpu_limit_s), str(os.getpid())],
                        env=_environment(slug, threads, folder / "cache.log"),
                        stdout=subprocess.DEVNULL,
                        stderr=stderr,
                    )
                running[slug] = (process, time.monotonic(), folder, first)
                runs[slug].state = "running"
                save()
                progress.started(run, len(running))
            time.sleep(0.2)
            if running and time.monotonic() - readings[-1][0] >= PROBE_EVERY_S:
                measure()
            for slug, (process, began, folder, first) in list(running.items()):
                run = runs[slug]
                seen = [reading for _, reading in readings[first:]]
                run.speed_probe_s = round(sum(seen) / len(seen), 3)
                run.cpu_limit_s = round(run.reference_limit_s * speed_factor(run.speed_probe_s))
                if process.poll() is None:
                    wall, cpu = time.monotonic() - began, tree_cpu_s(process.pid)
                    crossed = limit_crossed(
                        cpu, wall, run.cpu_limit_s, WALL_BACKSTOP * run.cpu_limit_s
                    )
                    if crossed is None:
                        continue
                    if run.cpu_limit_s != run.reference_limit_s:
                        crossed += (
                            f" (its limit {run.reference_limit_s} s on the budgets' machine, "
                            f"times {speed_factor(run.speed_probe_s):.2f}: the speed probe "
                            f"took {run.speed_probe_s:.2f} CPU-s over its run)"
                        )
                    _stop(process)
                    run.state, run.wall_s, run.cpu_s, run.error = "timed out", wall, cpu, crossed
                else:
                    _finish(run, folder, process.returncode, sources[slug], cache)
                    if run.state == "done":
                        shutil.copyfile(folder / "executed.ipynb", executed_dir / f"{slug}.ipynb")
                del running[slug]
                left = sum(runs[s].cpu_limit_s for s in waiting) + sum(
                    max(0.0, runs[s].cpu_limit_s - tree_cpu_s(p.pid))
                    for s, (p, *_) in running.items()
                )
                ended = sum(r.state not in ("waiting", "running") for r in runs.values())
                progress.ended(run, ended, left)
                if run.state != "done":  # the build has failed: stop, rather than wait
                    waiting.clear()
                    for other, (rest, *_) in running.items():
                        _stop(rest)
                        runs[other].state = "stopped"
                    running.clear()
                    break
                save()
    finally:
        progress.close()
        for process, *_ in running.values():
            _stop(process)
        probe["end"] = speed_probe()
        save()
        shutil.rmtree(work, ignore_errors=True)
    failed = [r for r in runs.values() if r.state in ("failed", "timed out")]
    if failed:
        others = [
            f"{state}: "
            + (", ".join(r.summary() for r in runs.values() if r.state == key) or "none")
            for key, state in (("done", "finished"), ("stopped", "stopped"), ("waiting", "not run"))
        ]
        raise BuildError(
            "; ".join(f"chapter {r.slug} {r.state}: {r.error}" for r in failed)
            + f" ({'; '.join(others)}; the speed probe took {probe['start']:.2f} CPU-s at the "
            f"start and {probe['end']:.2f} at the end, {PROBE_SEEN})"
        )
    return list(runs.values())


def render_runs(
    chapters: Sequence[tuple[str, Path, int]],
    *,
    runs: Path,
    cache_path: Path,
    record_path: Path,
    executed_dir: Path,
) -> list[Run]:
    """Put the chapters that :mod:`iclr25.run` executed into ``runs`` into the
    jupyter-cache at ``cache_path`` and ``executed_dir``, as :func:`execute_chapters`
    does with those it executes. Each run's outputs go into its chapter's source as
    myst-nb reads it, cell by cell, without the cell of parameters papermill put in,
    so that myst-nb finds them by the source's hash. A missing run, or one whose cells
    are not its source's, raises :class:`BuildError` naming the chapter."""
    import jupytext
    import nbformat
    from jupyter_cache import get_cache

    cache = get_cache(str(cache_path))
    cache.clear_cache()
    cache = get_cache(str(cache_path))
    shutil.rmtree(executed_dir, ignore_errors=True)
    executed_dir.mkdir(parents=True)
    done = []
    for slug, source, limit in chapters:
        ran = runs / f"{slug}.ipynb"
        if not ran.is_file():
            raise BuildError(f"chapter {slug}: no run of it in {runs} (iclr25.run writes one)")
        cells = [
            c
            for c in nbformat.read(ran, as_version=4).cells
            if "injected-parameters" not in c.metadata.get("tags", [])
        ]
        nb = jupytext.reads(source.read_text(), fmt="py:percent")
        if [c.source for c in cells] != [c.source for c in nb.cells]:
            raise BuildError(f"chapter {slug}: its run in {runs} is of another version of it")
        for cell, run_cell in zip(nb.cells, cells):
            if cell.cell_type == "code":
                cell.outputs, cell.execution_count = run_cell.outputs, run_cell.execution_count
        wall = sum(c.metadata.get("papermill", {}).get("duration") or 0 for c in cells)
        with tempfile.TemporaryDirectory() as folder:
            nbformat.write(nb, Path(folder) / "executed.ipynb")
            result = {"wall_s": round(wall, 1), "cpu_s": None, "error": None}
            (Path(folder) / "result.json").write_text(json.dumps(result))
            run = Run(slug, limit)
            _finish(run, Path(folder), 0, source, cache)
            if run.state != "done":
                raise BuildError(f"chapter {slug}: {run.error}")
            shutil.copyfile(Path(folder) / "executed.ipynb", executed_dir / f"{slug}.ipynb")
        done.append(run)
    record = {"machine": machine(), "jobs": 1, "threads": 1, "runs": str(runs)}
    record["wall_s"] = round(sum(r.wall_s or 0 for r in done), 1)
    record["chapters"] = [asdict(r) for r in done]
    record_path.parent.mkdir(parents=True, exist_ok=True)
    record_path.write_text(json.dumps(record, indent=1))
    return done


def limit_crossed(
    cpu_s: float, wall_s: float, cpu_limit_s: float, wall_limit_s: float
) -> str | None:
    """The limit a run has crossed, with both its figures, or None: its CPU limit, or
    the wall-clock backstop against a hang."""
    if cpu_s > cpu_limit_s:
        crossed = f"past its CPU limit of {cpu_limit_s:.0f} s"
    elif wall_s > wall_limit_s:
        crossed = f"by the wall-clock backstop of {wall_limit_s:.0f} s (a hung kernel?)"
    else:
        return None
    return f"stopped {crossed}, at {cpu_s:.0f} s of CPU and {wall_s:.0f} s of wall time"


def run_within(
    command: Sequence[str],
    *,
    cpu_limit_s: float,
    wall_limit_s: float,
    cwd: Path,
    output: Path | None,
    cancel: threading.Event | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[int | None, str | None]:
    """Run ``command`` in a session of its own (``env``: its environment), its output
    into the file ``output`` (None: this process's stdout and stderr), until it exits:
    ``(returncode, None)``; or until its process tree crosses :func:`limit_crossed`'s
    limits, or ``cancel`` is set: then the whole tree is killed, ``(None, why)``. It is
    killed too if the caller is interrupted (Ctrl-C reaches the caller alone, as the
    command has a session of its own). The book's test runs ``jupyter-book build``
    this way, under the chapters' rule, in a thread of its own (``cancel`` stops it
    with the tests), and :func:`iclr25.run.execute` a chapter."""
    with contextlib.ExitStack() as files:
        out = files.enter_context(output.open("w")) if output else None
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT if out else None,
            start_new_session=True,
        )
    began = time.monotonic()
    try:
        while True:
            with contextlib.suppress(subprocess.TimeoutExpired):
                return process.wait(1), None
            why = limit_crossed(
                tree_cpu_s(process.pid), time.monotonic() - began, cpu_limit_s, wall_limit_s
            )
            if why is None and cancel is not None and cancel.is_set():
                why = "cancelled"
            if why is not None and process.poll() is None:
                return None, why
    finally:
        if process.poll() is None:
            kill_tree(process.pid)
            process.wait()


def _stop(process: subprocess.Popen) -> None:
    """SIGTERM: the chapter's process kills its kernel and exits; SIGKILL if it lingers."""
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def _finish(run: Run, folder: Path, returncode: int, source: Path, cache) -> None:
    """Read a chapter process's result; put its executed notebook into the cache."""
    import jupytext
    import nbformat
    from jupyter_cache.base import CacheBundleIn

    result = {}
    if (folder / "result.json").is_file():
        result = json.loads((folder / "result.json").read_text())
    run.wall_s, run.cpu_s = result.get("wall_s"), result.get("cpu_s")
    if (folder / "cache.log").is_file():
        lines = [line.split("\t") for line in (folder / "cache.log").read_text().splitlines()]
        run.cache = {event: [w[0] for w in lines].count(event) for event in ("hit", "built")}
        for event, name, *seconds in lines:
            if event == "built":
                entry = run.built.setdefault(name, {"count": 0, "cpu_s": 0.0})
                entry["count"] += 1
                entry["cpu_s"] = round(entry["cpu_s"] + float(seconds[0] if seconds else 0), 1)
    if returncode != 0 or result.get("error"):
        stderr = (folder / "stderr").read_text().strip().splitlines()
        run.state = "failed"
        run.error = result.get("error") or (stderr[-1] if stderr else f"exit {returncode}")
        return
    nb = nbformat.read(folder / "executed.ipynb", as_version=4)
    cache.cache_notebook_bundle(
        CacheBundleIn(nb, str(source), data={"execution_seconds": run.wall_s}),
        check_validity=False,
        overwrite=True,
    )
    try:  # myst-nb will look the notebook up by the hash of its source: check it finds it
        cache.match_cache_notebook(jupytext.reads(source.read_text(), fmt="py:percent"))
    except KeyError:
        run.state, run.error = "failed", "its executed notebook does not match its source"
        return
    run.state = "done"


def execute_one(source: Path, folder: Path, backstop_s: float) -> None:
    """In a chapter's own process: execute ``source`` as myst-nb would (nbclient, the
    notebook's folder as working directory) into ``folder/executed.ipynb``, and write
    ``folder/result.json`` (wall and CPU seconds, kernel included; the error, if any).
    The parent holds it to its limits; nbclient's timeouts are its wall-clock
    ``backstop_s`` (:func:`kernel_timeouts`)."""
    import jupytext
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb = jupytext.reads(source.read_text(), fmt="py:percent")
    client = NotebookClient(
        nb,
        **kernel_timeouts(backstop_s),
        allow_errors=False,
        record_timing=False,  # timings in cell metadata would change the notebook's hash
        store_widget_state=False,  # a page shows a live control's text, not the control
        resources={"metadata": {"path": str(source.parent)}},
    )

    def stop(signum: int, frame: object) -> None:  # the build's time limit: kill the kernel too
        pgid = getattr(getattr(client.km, "provisioner", None), "pgid", None)
        if pgid:
            os.killpg(pgid, signal.SIGKILL)
        os._exit(124)

    signal.signal(signal.SIGTERM, stop)
    began, error = time.monotonic(), None
    try:
        client.execute()
    except CellExecutionError as err:
        error = f"{err.ename}: {err.evalue}"
    except Exception as err:  # a kernel that died, or that hung past the backstop
        error = " ".join(f"{type(err).__name__}: {err}".split())[:300]
    wall = time.monotonic() - began
    if error is None:
        nbformat.write(nb, folder / "executed.ipynb")
    used = os.times()  # the kernel, shut down and reaped by now, counts as a child
    cpu = used.user + used.system + used.children_user + used.children_system
    (folder / "result.json").write_text(
        json.dumps({"wall_s": round(wall, 1), "cpu_s": round(cpu, 1), "error": error})
    )


if __name__ == "__main__":
    end_with_parent(int(sys.argv[4]))
    execute_one(Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]))
