"""Execute a chapter: percent-format ``.py`` -> notebook -> papermill -> claims JSON.

The CLI (``python -m iclr25 run``), sweeps and the tests use this one path, so a
chapter runs the same way from a terminal, in CI and in the book.

papermill runs in a process of its own (this module's ``__main__``), held to the
chapter's CPU limit, as the book's build holds it (:func:`iclr25.toc.chapter_cpu_limit`
times the machine's :func:`iclr25.build.speed_factor`): its process tree, kernel
included, is stopped past that many CPU seconds, or past
:data:`iclr25.toc.WALL_BACKSTOP` times as many of wall time, a backstop against a hung
kernel that a loaded machine does not reach. No other timeout is in wall time.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import papermill
from papermill.exceptions import PapermillExecutionError

from iclr25 import toc
from iclr25.build import (
    ALLOCATOR_VARIABLES,
    THREAD_VARIABLES,
    kernel_timeouts,
    run_within,
    speed_factor,
    speed_probe,
)
from iclr25.core import CHAPTER, Claim, read_claims, validate
from iclr25.processes import end_with_parent

ERROR_FIELDS = ("cell_index", "exec_count", "source", "ename", "evalue", "traceback")
"""A ``PapermillExecutionError``'s fields, as papermill's process hands them back."""


def to_notebook(chapter: toc.Chapter | Path) -> nbformat.NotebookNode:
    """The chapter's source (or any percent-format file) as a notebook that papermill
    can run (kernel metadata set)."""
    source = chapter.notebook if isinstance(chapter, toc.Chapter) else chapter
    nb = jupytext.read(source, fmt="py:percent")
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.metadata["language_info"] = {"name": "python"}
    return nb


@contextmanager
def kernel_environment() -> Iterator[None]:
    """Start kernels inside the block on one torch/BLAS thread and with the book's
    allocator settings (:data:`iclr25.build.ALLOCATOR_VARIABLES`), unless the environment
    already has its own (``OMP_NUM_THREADS`` and the like). Two threads are 1.2 times
    faster on an idle machine, but beside a busy core they wait on each other: 2.5 times
    slower than one thread when training, and far worse on the small tensors of a smoke
    run. The book's build sets them the same way (:mod:`iclr25.build`)."""
    defaults = {**dict.fromkeys(THREAD_VARIABLES, "1"), **ALLOCATOR_VARIABLES}
    unset = {name: value for name, value in defaults.items() if name not in os.environ}
    os.environ.update(unset)
    try:
        yield
    finally:
        for name in unset:
            del os.environ[name]


def parameters(
    slug: str, overrides: dict[str, Any] | None = None, *, smoke: bool = False
) -> dict[str, Any]:
    """Book defaults of ``slug``, then its ``SMOKE`` overrides if asked, then ``overrides``."""
    module = toc.get(slug).module()
    values = {**(module.SMOKE if smoke else {}), **(overrides or {})}
    return validate(module.PARAMETERS, values)


def execute(
    slug: str,
    out_dir: str | Path,
    overrides: dict[str, Any] | None = None,
    *,
    smoke: bool = False,
    progress: bool = False,
    environment: Mapping[str, str] | None = None,
) -> tuple[Path, list[Claim]]:
    """Run chapter ``slug`` with its checked parameters; write ``<slug>.ipynb`` and
    ``<slug>.claims.json`` to ``out_dir``. Returns the notebook's path and its claims.
    ``environment`` adds to the kernel's (a sweep's worker passes its threads).

    A failing cell raises papermill's ``PapermillExecutionError``; so does a run
    stopped at its limit (:func:`execute_within`).
    """
    chapter = toc.get(slug)
    params = parameters(slug, overrides, smoke=smoke)
    out_dir = Path(out_dir).resolve()  # its process works in the notebooks folder
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{slug}.ipynb"
    execute_within(
        chapter.notebook,
        executed,
        params,
        cpu_limit_s=toc.chapter_cpu_limit(chapter) * speed_factor(speed_probe()),
        progress=progress,
        environment={CHAPTER: slug, **(environment or {})},
    )
    claims = read_claims(executed)
    (out_dir / f"{slug}.claims.json").write_text(
        json.dumps(
            {"chapter": slug, "parameters": params, "claims": [asdict(c) for c in claims]}, indent=2
        )
        + "\n"
    )
    return executed, claims


def execute_within(
    source: Path,
    executed: Path,
    params: Mapping[str, Any],
    *,
    cpu_limit_s: float,
    progress: bool = False,
    environment: Mapping[str, str] | None = None,
) -> None:
    """Execute the percent-format ``source`` with ``params`` into ``executed`` through
    papermill, in a process of its own whose tree may use ``cpu_limit_s`` CPU seconds
    and :data:`iclr25.toc.WALL_BACKSTOP` times as many of wall time. A failing cell
    raises papermill's ``PapermillExecutionError``, and so does a run stopped at a
    limit, in the cell that was running (``ename`` ``"TimeLimit"``): whoever reports a
    failed cell reports it in one line."""
    backstop_s = toc.WALL_BACKSTOP * cpu_limit_s
    with kernel_environment():
        env = {**os.environ, **(environment or {})}
    with tempfile.TemporaryDirectory() as folder:
        error = Path(folder) / "error.json"
        command = [sys.executable, "-m", "iclr25.run", str(source), str(executed)]
        command += [json.dumps(dict(params)), str(backstop_s), str(progress), str(error)]
        command += [str(os.getpid())]  # the process it ends with (processes.end_with_parent)
        code, why = run_within(
            command,
            cpu_limit_s=cpu_limit_s,
            wall_limit_s=backstop_s,
            cwd=source.parent,
            output=None,
            env=env,
        )
        if why is not None:
            raise _stopped(executed, why)
        if code != 0:
            record = json.loads(error.read_text()) if error.is_file() else {}
            if set(ERROR_FIELDS) <= set(record):
                raise PapermillExecutionError(**record)
            raise RuntimeError(record.get("error") or f"papermill exited with status {code}")


def _stopped(executed: Path, why: str) -> PapermillExecutionError:
    """The error of a run stopped at a limit, in the cell that papermill's last save of
    ``executed`` marks as running (a code cell's count is its execution count)."""
    try:
        cells = nbformat.read(executed, as_version=4).cells
    except (OSError, ValueError):  # not saved yet, or killed while it was saved
        cells = []
    status = [cell.metadata.get("papermill", {}).get("status") for cell in cells]
    index = status.index("running") if "running" in status else None
    code = [c for c in cells[: (index or 0) + 1] if c.cell_type == "code" and c.source.strip()]
    return PapermillExecutionError(
        cell_index=index,
        exec_count=len(code) if index is not None else None,
        source=cells[index].source if index is not None else "",
        ename="TimeLimit",
        evalue=why,
        traceback=[],
    )


def _papermill(
    source: Path, executed: Path, params: dict[str, Any], backstop_s: float, progress: bool
) -> dict[str, Any] | None:
    """In papermill's own process: execute ``source`` into ``executed``; its error, if any.
    nbclient's wall-clock timeouts are the backstop (:func:`iclr25.build.kernel_timeouts`)."""
    timeouts = kernel_timeouts(backstop_s)
    try:
        papermill.execute_notebook(
            to_notebook(source),
            str(executed),
            parameters=params,
            kernel_name="python3",
            cwd=str(source.parent),
            progress_bar=progress,
            log_output=False,
            start_timeout=timeouts["startup_timeout"],
            execution_timeout=timeouts["timeout"],
            iopub_timeout=timeouts["iopub_timeout"],
        )
    except PapermillExecutionError as err:
        return {name: getattr(err, name) for name in ERROR_FIELDS}
    except Exception as err:  # the kernel died, the notebook could not be written, ...
        return {"error": " ".join(f"{type(err).__name__}: {err}".split())[:300]}
    return None


if __name__ == "__main__":
    source, executed, params, backstop, progress, error, parent = sys.argv[1:]
    end_with_parent(int(parent))
    failed = _papermill(
        Path(source), Path(executed), json.loads(params), float(backstop), progress == "True"
    )
    if failed is not None:
        Path(error).write_text(json.dumps(failed))
        sys.exit(1)
