"""Sphinx extension for the book's offline site.

* plotly.js ships inside the plotly Python package, so it is copied into ``_static`` at
  build time rather than committed. It loads before require.js (priority 200 < 500):
  loaded after, plotly registers as an AMD module and leaves ``window.Plotly`` unset.
* Jupyter Book always adds sphinx-thebe, whose live-code loader points at a CDN and,
  under Sphinx 7, declares ``THEBE_JS_URL`` twice (a JavaScript error on every page).
  A static offline book has no kernel to connect to, so its scripts are left out.
"""

import shutil
from pathlib import Path

import plotly
from sphinx.application import Sphinx

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


def _copy_plotly(app: Sphinx, exception: Exception | None) -> None:
    if exception is None and app.builder.format == "html":
        static = Path(app.outdir) / "_static"
        static.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(PLOTLY_JS, static / "plotly.min.js")


def _drop_thebe(app: Sphinx, pagename: str, templatename: str, context: dict, doctree) -> None:
    def is_thebe(script) -> bool:
        return "thebe" in (script.filename or "") or "THEBE" in script.attributes.get("body", "")

    if "script_files" in context:
        context["script_files"] = [s for s in context["script_files"] if not is_thebe(s)]


def setup(app: Sphinx) -> dict:
    app.add_js_file("plotly.min.js", priority=200)
    app.connect("build-finished", _copy_plotly)
    app.connect("html-page-context", _drop_thebe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
