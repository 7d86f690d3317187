"""Execute a chapter: percent-format ``.py`` -> notebook -> papermill -> claims JSON.

The CLI (``python -m iclr25 run``) and the tests use this one path, so a chapter
runs the same way from a terminal, in CI and in the book.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import papermill

from iclr25 import toc
from iclr25.build import ALLOCATOR_VARIABLES, THREAD_VARIABLES
from iclr25.core import Claim, read_claims, validate


def to_notebook(chapter: toc.Chapter) -> nbformat.NotebookNode:
    """The chapter's source as a notebook that papermill can run (kernel metadata set)."""
    nb = jupytext.read(chapter.notebook, fmt="py:percent")
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
) -> tuple[Path, list[Claim]]:
    """Run chapter ``slug`` with its checked parameters; write ``<slug>.ipynb`` and
    ``<slug>.claims.json`` to ``out_dir``. Returns the notebook's path and its claims.

    A failing cell raises papermill's ``PapermillExecutionError``.
    """
    chapter = toc.get(slug)
    params = parameters(slug, overrides, smoke=smoke)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{slug}.ipynb"
    with kernel_environment():
        papermill.execute_notebook(
            to_notebook(chapter),
            str(executed),
            parameters=params,
            kernel_name="python3",
            cwd=str(chapter.notebook.parent),
            progress_bar=progress,
            log_output=False,
        )
    claims = read_claims(executed)
    (out_dir / f"{slug}.claims.json").write_text(
        json.dumps(
            {"chapter": slug, "parameters": params, "claims": [asdict(c) for c in claims]}, indent=2
        )
        + "\n"
    )
    return executed, claims
