"""Execute a chapter: percent-format ``.py`` -> notebook -> papermill -> claims JSON.

The CLI (``python -m iclr25 run``) and the tests use this one path, so a chapter
runs the same way from a terminal, in CI and in the book.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

import jupytext
import nbformat
import papermill

from iclr25 import toc
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
