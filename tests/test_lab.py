"""The chapters as a reader runs them: in JupyterLab, from this checkout's ``.venv``
(``make lab``), driven in Debian's Chromium with no network. Three live controls are
moved and must redraw: fine's editor (a new object typed, Edit pressed, the model's
answer changes), mcqa's patching explorer (another layer row redraws the heatmap) and
a ``core.explore`` slider (dlgn's epoch). Each chapter runs with its smoke overrides,
one kernel at a time."""

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
import urllib.request

import papermill
import pytest

from iclr25 import run, toc

pytestmark = pytest.mark.smoke  # every test here starts a kernel

CHAPTERS = ("fine", "mcqa", "dlgn")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(process: subprocess.Popen) -> None:
    """End ``make lab`` and the JupyterLab and kernels it started (its session)."""
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(30)
    except ProcessLookupError:
        pass
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """``make lab`` on the loopback address with a token, serving the three chapters as
    notebooks prepared with their smoke parameters, and one chapter's percent-format
    source; yields ``(base_url, token)``."""
    root = tmp_path_factory.mktemp("lab")
    for slug in CHAPTERS:
        papermill.execute_notebook(
            run.to_notebook(toc.get(slug)),
            str(root / f"{slug}.ipynb"),
            parameters=run.parameters(slug, smoke=True),
            prepare_only=True,
            kernel_name="python3",
        )
    home = root / "jupyter"
    env = dict(os.environ, JUPYTER_CONFIG_DIR=str(home / "config"))
    env.update(JUPYTER_DATA_DIR=str(home / "data"), JUPYTER_RUNTIME_DIR=str(home / "run"))
    env.update({name: "1" for name in run.THREAD_VARIABLES})
    shutil.copyfile(toc.get("dlgn").notebook, root / "source-dlgn.py")
    port, token = _free_port(), secrets.token_hex(16)
    options = [f"--ServerApp.port={port}", f"--IdentityProvider.token={token}"]
    options += [f"--LabApp.workspaces_dir={home / 'ws'}"]
    options += ["--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None"]
    options += ["--LabApp.extension_manager=readonly"]
    process = subprocess.Popen(  # the reader's command, on a free port, serving ``root``
        ["make", "--no-print-directory", "lab", f"LAB_ROOT={root}"]
        + [f"LAB_ARGS={' '.join(options)}"],
        cwd=toc.ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=(root / "lab.log").open("w"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=5) as r:
                json.load(r)
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                stop(process)
                pytest.fail("JupyterLab did not start:\n" + (root / "lab.log").read_text()[-3000:])
            time.sleep(1)
    yield base, token
    stop(process)


RAN = """() => {
    const panel = window.jupyterapp.shell.currentWidget;
    const kernel = panel.sessionContext.session?.kernel;
    const cells = panel.content.widgets.map(c => c.model.toJSON());
    const code = cells.filter(c => c.cell_type === 'code');
    const errors = code.flatMap(c => c.outputs).filter(o => o.output_type === 'error')
        .map(o => `${o.ename}: ${o.evalue}`);
    return {status: kernel?.status, done: code.filter(c => c.execution_count).length,
            total: code.length, errors};
}"""


def open_and_run(browser, base: str, token: str, slug: str, timeout: float = 400):
    """Open ``slug.ipynb`` in JupyterLab, run every cell in its kernel, and return the
    page once the kernel is idle with every code cell run and no error."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    external: list[str] = []

    def route(r):
        if r.request.url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            external.append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.goto(f"{base}/lab/workspaces/{slug}/tree/{slug}.ipynb?token={token}&reset")
    page.wait_for_function(
        "() => window.jupyterapp?.shell.currentWidget?.sessionContext?.session?.kernel"
        "?.status === 'idle'",
        timeout=120_000,
    )
    page.evaluate(
        """() => {
        const app = window.jupyterapp, panel = app.shell.currentWidget;
        app.shell.activateById(panel.id);
        return app.commands.execute('notebook:run-all-cells');
        }"""
    )
    deadline, state = time.monotonic() + timeout, None
    while time.monotonic() < deadline:
        page.wait_for_timeout(2000)
        state = page.evaluate(RAN)
        if state["errors"] or (state["status"] == "idle" and state["done"] == state["total"]):
            break
    assert state and not state["errors"], f"{slug}: {state}"
    assert state["done"] == state["total"], f"{slug} did not finish in {timeout} s: {state}"
    assert not external, f"{slug} asked for {external}"
    return page


def live_plot(page, text: str, timeout: float = 120_000) -> dict:
    """The first figure inside a live control's output (not a static twin) whose title
    holds ``text``, once drawn: its title and its traces' names and y values."""
    found = page.wait_for_function(
        """text => {
        const plots = [...document.querySelectorAll('.widget-output .js-plotly-plot')];
        const plot = plots.find(p => (p.layout?.title?.text || '').includes(text));
        return plot && plot.querySelector('.main-svg') &&
            {title: plot.layout.title.text,
             traces: plot.data.map(t => ({name: t.name, y: Array.from(t.y || [])}))};
        }""",
        arg=text,
        timeout=timeout,
    )
    return found.json_value()


def test_the_live_editor_changes_the_models_answer(browser, lab):
    base, token = lab
    page = open_and_run(browser, base, token, "fine")
    editor = page.locator(".widget-vbox", has=page.locator("button", has_text="Edit")).last
    new_object = editor.locator(".widget-text", has_text="new object").locator("input")
    new_object.fill("Berlin")
    editor.locator("button", has_text="Edit").click()
    plot = live_plot(page, "-> Berlin")
    before, after = plot["traces"][0], plot["traces"][1]  # the first prompt's bars
    assert (before["name"], after["name"]) == ("before", "after"), plot
    # the smoke run's ROME takes 3 steps, so the new object rises into the top five
    assert "' Berlin'" not in before["y"] and "' Berlin'" in after["y"], plot
    page.close()


def test_the_patching_explorer_redraws_at_another_layer(browser, lab):
    base, token = lab
    page = open_and_run(browser, base, token, "mcqa")
    row = page.locator(".widget-slider", has_text="layer row").last
    row.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowRight")
    first = live_plot(page, "marked: layer")["title"]
    page.keyboard.press("ArrowRight")  # the next layer row: the marked cell moves
    page.wait_for_function(
        """first => [...document.querySelectorAll('.widget-output .js-plotly-plot')]
            .some(p => (p.layout?.title?.text || '').includes('marked: layer')
                       && p.layout.title.text !== first)""",
        arg=first,
        timeout=60_000,
    )
    page.close()


def test_an_explore_slider_redraws_its_figure(browser, lab):
    base, token = lab
    page = open_and_run(browser, base, token, "dlgn")
    slider = page.locator(".widget-slider", has_text="epoch").first
    slider.locator(".noUi-handle").focus()
    page.keyboard.press("ArrowLeft")
    value = slider.locator(".widget-readout").inner_text().strip()
    plot = live_plot(page, f"epoch {value}:")
    assert plot["title"].startswith(f"epoch {value}:"), plot
    page.close()


def test_a_chapters_source_opens_as_a_notebook(browser, lab):
    """``make lab`` opens a percent-format chapter as a notebook (jupytext's viewer)."""
    base, token = lab
    page = browser.new_page()
    page.goto(f"{base}/lab/workspaces/source/tree/source-dlgn.py?token={token}&reset")
    panel = "window.jupyterapp?.shell.currentWidget"
    page.wait_for_function(  # a notebook panel with the chapter's cells, not a text editor
        f"() => {panel}?.sessionContext && {panel}.content.widgets.length > 10",
        timeout=120_000,
    )
    page.close()
