"""Sphinx extension for the book's offline site.

* plotly.js ships inside the plotly Python package, so it is copied into ``_static`` at
  build time rather than committed. It loads before require.js (priority 200 < 500):
  loaded after, plotly registers as an AMD module and leaves ``window.Plotly`` unset.
* Jupyter Book always adds sphinx-thebe, whose live-code loader points at a CDN and,
  under Sphinx 7, declares ``THEBE_JS_URL`` twice (a JavaScript error on every page).
  A static offline book has no kernel to connect to, so its scripts are left out, as
  plotly.js is from the pages that draw no figure.
* Before Sphinx reads a page, every chapter is executed, several at a time
  (:mod:`iclr25.build`), into the jupyter-cache from which myst-nb (``cache`` mode)
  takes the outputs. A chapter that fails or runs out of time stops the build with
  its name and the times of those that finished. Each chapter's start and end are
  shown as they happen: a tqdm bar on a terminal, plain lines in CI. Where
  ``$ICLR25_RUNS`` names a folder of chapters already run (``make test``'s smoke
  runs), the site is rendered from them instead (:func:`iclr25.build.render_runs`).
* The ``iclr25-scoreboard`` directive marks where the Scoreboard page puts every claim
  of the book (``claims``) or each chapter's build time (``build-times``), filled in
  once all pages are read (``doctree-resolved``) from the notebooks myst-nb wrote to
  ``_build/jupyter_execute`` and the build's record.
* Each chapter page opens with a "Run this chapter" box (:data:`RUN_BOX`): the
  commands that run it, and its executed notebook, copied beside the page.
"""

import json
import os
import re
import shutil
import sys
from pathlib import Path

import plotly
from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from iclr25 import build, scoreboard, toc

logger = logging.getLogger(__name__)

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _copy_plotly(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PLOTLY_JS, static / "plotly.min.js")


def _page_scripts(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    """Leave out thebe's scripts on every page, and plotly.js (3.5 MB) on a page that
    draws no plotly figure."""

    def unused(script) -> bool:
        name = script.filename or ""
        if "thebe" in name or "THEBE" in script.attributes.get("body", ""):
            return True
        return name == "plotly.min.js" and "plotly-graph-div" not in context.get("body", "")

    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not unused(s)]


class scoreboard_placeholder(nodes.General, nodes.Element):
    """Where the scoreboard goes, until every chapter has been executed."""


class ScoreboardDirective(SphinxDirective):
    """``{iclr25-scoreboard} claims`` (every claim), ``fidelity`` (the fidelity line
    alone) or ``build-times`` (per chapter)."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        if self.arguments[0] not in ("claims", "fidelity", "build-times"):
            raise self.error(
                "iclr25-scoreboard takes 'claims', 'fidelity' or 'build-times', "
                f"not {self.arguments[0]!r}"
            )
        return [scoreboard_placeholder(what=self.arguments[0])]


class ChaptersDirective(SphinxDirective):
    """``{iclr25-chapters}``: the table of chapters (part, chapter, paper), from
    ``iclr25.toc`` and each chapter's citation key in ``book/references.bib``."""

    def run(self) -> list[nodes.Node]:
        bib = (toc.ROOT / "book" / "references.bib").read_text()
        lines = ["| part | chapter | paper |", "|---|---|---|"]
        part = None
        for chapter in toc.built():
            found = re.search(rf"@inproceedings{{(\w+2025{chapter.slug}),", bib)
            if not found:
                raise self.error(f"book/references.bib has no entry <author>2025{chapter.slug}")
            shown = chapter.part if chapter.part != part else ""
            part = chapter.part
            lines.append(
                f"| {shown} | {{doc}}`/notebooks/{chapter.slug}` | {{cite:t}}`{found[1]}` |"
            )
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source="iclr25.toc"), 0, container)
        return container.children


def _record(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "iclr25-build.json"


def _executed(app: Sphinx) -> Path:
    return Path(app.outdir).parent / "iclr25-executed"


def _execute(app: Sphinx) -> None:
    config = app.env.mystnb_config
    if config.execution_mode != "cache":
        return
    try:
        jobs, threads = build.jobs_and_threads()
    except ValueError as err:
        raise ExtensionError(f"iclr25: {err}") from None
    chapters = [(c.slug, c.notebook, toc.chapter_cpu_limit(c)) for c in toc.built()]
    runs = os.environ.get(build.RUNS)
    if runs:
        logger.info(f"iclr25: rendering the {len(chapters)} chapters run into {runs}")
        try:
            build.render_runs(
                chapters,
                runs=Path(runs),
                cache_path=Path(config.execution_cache_path),
                record_path=_record(app),
                executed_dir=_executed(app),
            )
        except build.BuildError as err:
            raise ExtensionError(f"iclr25: {err}") from None
        return
    logger.info(
        f"iclr25: executing {len(chapters)} chapters, {jobs} at a time, "
        f"{threads} thread{'s' if threads > 1 else ''} each"
    )
    try:
        build.execute_chapters(
            chapters,
            cache_path=Path(config.execution_cache_path),
            record_path=_record(app),
            executed_dir=_executed(app),
            jobs=jobs,
            threads=threads,
            log=logger.info,
            bar=sys.stderr.isatty(),  # a tqdm bar on a terminal; plain lines in CI
        )
    except build.BuildError as err:
        raise ExtensionError(f"iclr25: {err}") from None


def _put_back_outputs(app: Sphinx, env) -> None:
    """myst-nb in ``cache`` mode renders the cached outputs but writes the notebook it
    read, without them, to ``_build/jupyter_execute``: put the executed one there."""
    if env.mystnb_config.execution_mode != "cache":
        return
    target = Path(app.outdir).parent / "jupyter_execute" / "notebooks"
    for executed in _executed(app).glob("*.ipynb"):
        shutil.copyfile(executed, target / executed.name)


def _build_times(app: Sphinx) -> str:
    return scoreboard.build_times_html(json.loads(_record(app).read_text()))


def _fill_scoreboard(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in doctree.findall(scoreboard_placeholder):
        if node["what"] == "build-times":
            body = _build_times(app)
        else:
            executed = Path(app.outdir).parent / "jupyter_execute" / "notebooks"
            built = {c.slug for c in toc.built()}
            claims = [c for c in scoreboard.collect(executed) if c.chapter in built]
            page = scoreboard.fidelity_html if node["what"] == "fidelity" else scoreboard.page_html
            body = page(claims)
        node.replace_self(nodes.raw("", body, format="html"))


RUN_BOX = """<div class="admonition tip iclr25-run">
<p class="admonition-title">Run this chapter</p>
<p>From a clone of this book's repository, <code>make lab</code> opens
<code>notebooks/{slug}.py</code> as a notebook in JupyterLab, with its live controls;
<code>.venv/bin/python -m iclr25 run {slug} -p seed=1</code> re-runs it with other
parameters (<code>python -m iclr25 list</code> names them). The notebook as this build
executed it: <a class="reference download" href="{slug}.ipynb" download>{slug}.ipynb</a>.</p>
</div>"""
"""The box at the top of each chapter page: how to run it, and its executed notebook."""


def _add_run_box(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    slug = docname.removeprefix("notebooks/")
    if docname == slug or slug not in {c.slug for c in toc.built()}:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is not None:  # beneath the chapter's title
        title = section.next_node(nodes.title)
        section.insert(
            section.index(title) + 1, nodes.raw("", RUN_BOX.format(slug=slug), format="html")
        )


def _copy_executed(app: Sphinx, exception: Exception | None) -> None:
    """Each chapter's executed notebook beside its page, for the run box's link."""
    if exception is None and app.builder.format == "html":
        pages = Path(app.outdir) / "notebooks"
        for executed in _executed(app).glob("*.ipynb"):
            shutil.copyfile(executed, pages / executed.name)


def setup(app: Sphinx) -> dict:
    app.add_js_file("plotly.min.js", priority=200)
    app.add_js_file("scoreboard.js")
    app.add_directive("iclr25-scoreboard", ScoreboardDirective)
    app.add_directive("iclr25-chapters", ChaptersDirective)
    app.add_node(scoreboard_placeholder)
    app.connect("builder-inited", _execute, priority=900)  # after myst-nb sets its config
    app.connect("env-updated", _put_back_outputs)
    app.connect("doctree-resolved", _fill_scoreboard)
    app.connect("doctree-resolved", _add_run_box)
    app.connect("build-finished", _copy_plotly)
    app.connect("build-finished", _copy_executed)
    app.connect("html-page-context", _page_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
