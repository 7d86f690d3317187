"""The rendered book: it builds without warnings, its book-mode claims hold, and its
pages work in a browser with no network (figures drawn, no JavaScript error).

The pages' tests run twice: on the site rendered from the chapters' smoke runs
(``html`` is ``"smoke"``: ``make test``, minutes) and on the book itself (``"book"``:
``make book``, after the hour its chapters take)."""

import functools
import http.server
import json
import re
import threading
import time
from pathlib import Path

import pytest
import yaml

from iclr25 import scoreboard, toc
from iclr25.core import MIN_RUNS, book_problems, read_claims, under_replicated
from iclr25.core.report import INTERPRETS

ROOT = toc.ROOT
BUILD = ROOT / "_build"
HTML = BUILD / "html"
BUILT = [c.slug for c in toc.built()]


@pytest.fixture(scope="session")
def book(book_build) -> Path:
    """The book that ``book_build`` (conftest) started building when the session began:
    it built within its limits, with no warning, and executed no chapter in Sphinx."""
    returncode, stopped, log = book_build.result()
    if stopped:
        record = json.loads((BUILD / "iclr25-build.json").read_text())
        states = ", ".join(
            f"{r['slug']} {r['state']}" + (f" {r['wall_s']:.0f} s" if r["wall_s"] else "")
            for r in record["chapters"]
        )
        pytest.fail(f"the book build was {stopped}: {states}")
    output = log.read_text()
    assert_rendered(returncode, output)
    return HTML


def assert_rendered(returncode: int | None, output: str) -> None:
    """The site built with no warning and executed no chapter in Sphinx."""
    problems = [
        line
        for line in output.splitlines()
        if "WARNING" in line or "ERROR" in line or "Error" in line
    ]
    assert returncode == 0, "\n".join(problems[-30:]) or output[-4000:]
    assert "Executing notebook" not in output, "myst-nb executed a chapter itself"


@pytest.fixture(scope="session", params=["smoke", "book"])
def html(request) -> Path:
    """The rendered site: from the smoke runs (``make test``) or the book (``make book``)."""
    if request.param == "book":
        return request.getfixturevalue("book")
    returncode, stopped, log, folder = request.getfixturevalue("smoke_site")
    assert stopped is None, f"the site of the smoke runs was {stopped}"
    assert_rendered(returncode, log.read_text())
    return folder


def test_toc_yml_lists_the_chapters_of_iclr25_toc_in_its_parts():
    """iclr25.toc is the one list of chapters: the intro's table is generated from it
    ({iclr25-chapters}), and _toc.yml must hold the same chapters, parts and order."""
    layout = yaml.safe_load((ROOT / "_toc.yml").read_text())
    listed = [
        (part["caption"], c["file"].removeprefix("notebooks/"))
        for part in layout["parts"]
        for c in part["chapters"]
        if c["file"].startswith("notebooks/")
    ]
    expected = [(c.part, c.slug) for c in toc.built()]
    drift = [f"{p}/{s}" for p, s in expected if (p, s) not in listed]
    drift += [f"{p}/{s} (not in iclr25.toc)" for p, s in listed if (p, s) not in expected]
    assert not drift and listed == expected, (
        f"_toc.yml differs from iclr25.toc: {', '.join(drift) or 'the order'}"
    )
    assert "{iclr25-chapters}" in (ROOT / "book" / "intro.md").read_text()


def test_every_chapter_has_a_module_test_and_citation():
    bib = (ROOT / "book" / "references.bib").read_text()
    for chapter in toc.ALL:
        assert re.search(rf"@inproceedings{{\w+2025{chapter.slug},", bib), chapter.slug
    for slug in BUILT:
        assert (ROOT / "tests" / f"test_{slug}.py").is_file()
        assert "{cite" in toc.get(slug).notebook.read_text()


EXECUTED = BUILD / "jupyter_execute" / "notebooks"


@pytest.mark.parametrize("slug", BUILT)
def test_book_mode_claims_hold_or_are_declared_gaps(book, slug):
    """No FAILED claim, no stale gap declaration, no registry entry left undecided."""
    claims = read_claims(EXECUTED / f"{slug}.ipynb")
    module = toc.get(slug).module()
    assert [c.id for c in claims] == [c for c in module.CLAIMS if c in {x.id for x in claims}]
    assert not book_problems(claims, module.CLAIMS), "every registry entry is decided"


UNDER_REPLICATED = {
    "mcqa": {"tiny-sparse-heads", "tiny-learned-seeds", "tiny-formats"},
}  # fmt: skip
"""The claims decided by an interval that rest on fewer than five training runs and name
no one model they are about (:func:`iclr25.core.under_replicated`), chapter by chapter,
as the replication issue found them: their intervals measure one draw of training or
data. The chapters' passes empty this list; a claim that is not in it fails the test
below, so no new one joins it, and one that reaches five runs must leave it."""


@pytest.mark.parametrize("slug", BUILT)
def test_claims_on_trained_models_rest_on_five_runs_or_are_listed(book, slug):
    found = under_replicated(read_claims(EXECUTED / f"{slug}.ipynb"))
    listed = UNDER_REPLICATED.get(slug, set())
    new = [f"{c.id} ({c.size})" for c in found if c.id not in listed]
    assert not new, f"rest on fewer than {MIN_RUNS} runs and name no one model: {new}"
    assert {c.id for c in found} == listed, "a listed claim now rests on enough runs"


@pytest.mark.parametrize("slug", BUILT)
def test_claims_paragraph_names_every_claim_that_did_not_hold(book, slug):
    """The paragraph that the run writes beneath the claims table reads the build's
    outcome: every claim that did not hold is named in it with its outcome."""
    executed = json.loads((EXECUTED / f"{slug}.ipynb").read_text())
    opening = f"<strong>{INTERPRETS}</strong>"
    paragraphs = [
        html
        for c in executed["cells"]
        for o in c.get("outputs", [])
        if opening in (html := "".join(o.get("data", {}).get("text/html", "")))
    ]
    assert len(paragraphs) == 1, f"one output with the paragraph opening {INTERPRETS}"
    text = paragraphs[0][paragraphs[0].index(opening) :]
    missed = [c for c in read_claims(executed) if c.status != "holds"]
    unnamed = [f"{c.id} ({c.status})" for c in missed if f"<code>{c.id}</code>" not in text]
    assert not unnamed, f"the claims paragraph does not name {', '.join(unnamed)}"


def test_scoreboard_lists_exactly_the_claims_of_the_executed_chapters(book):
    page = (book / "book" / "scoreboard.html").read_text()
    table = page[page.index("iclr25-scoreboard") :]
    listed = [
        (chapter, id.replace("<wbr>", ""))
        for chapter, id in re.findall(r"<tr><td>(\w+)</td><td><code>(.+?)</code>", table)
    ]
    executed = [
        (c.chapter, c.id) for slug in BUILT for c in read_claims(EXECUTED / f"{slug}.ipynb")
    ]
    assert listed == executed
    held, total = scoreboard.fidelity(scoreboard.collect(EXECUTED))
    assert f"Fidelity: {held} of {total} paper claims hold" in page
    assert all(f"<td>{slug}</td><td>" in page for slug in BUILT)  # the build-times table


def test_vendored_javascript_names_no_cdn():
    for path in (ROOT / "book" / "static").rglob("*.js"):
        found = re.findall(
            r"[\w.-]*(?:cdn\.jsdelivr|unpkg\.com|cdnjs\.)[^\"'\s]*", path.read_text()
        )
        assert not found, f"{path.relative_to(ROOT)} names {found[:3]}"


def test_site_references_no_cdn(html):
    for page in html.rglob("*.html"):
        text = page.read_text()
        for src in re.findall(r"<(?:script|link)[^>]+(?:src|href)=\"([^\"]+)\"", text):
            assert not re.match(r"(https?:)?//", src), f"{page.name} loads {src}"


@pytest.fixture(scope="session")
def site(html):
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(Quiet, directory=str(html))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


PLOTS = "[...document.querySelectorAll('.plotly-graph-div')]"
STATE = "script[type='application/vnd.jupyter.widget-state+json']"
COUNTS = f"""() => ({{plots: {PLOTS}.length,
    drawn: {PLOTS}.filter(d => d.querySelector('.main-svg')).length,
    widget_state: document.querySelectorAll("{STATE}").length,
    notes: [...document.querySelectorAll('.output pre, .cell_output pre')]
        .filter(e => e.textContent.includes('make lab')).length,
    widgets: document.querySelectorAll('.jupyter-widgets').length,
    sliders: document.querySelectorAll('.plotly-graph-div .slider-container').length}})"""


def settled(page, timeout: float = 30.0, every: float = 0.5) -> dict:
    """The page's figure and widget counts once they stop changing: plotly and the widget
    manager draw after the network settles, one output after another. Returns the last
    counts (still changing, or something undrawn, if ``timeout`` ran out)."""
    deadline, last = time.monotonic() + timeout, None
    while True:
        now = page.evaluate(COUNTS)
        done = (
            now == last
            and now["plots"] > 0
            and now["drawn"] == now["plots"]
            and (now["widgets"] > 0 or not now["widget_state"])
        )
        if done or time.monotonic() > deadline:
            return now
        last = now
        page.wait_for_timeout(every * 1000)


MATH_ERRORS = """async () => {
    if (window.MathJax && MathJax.startup) await MathJax.startup.promise;
    return [...document.querySelectorAll('mjx-merror')].map(e => e.textContent);
}"""


def visit(browser, url: str, figures: bool = True) -> dict:
    """Open ``url`` with every request off this machine blocked; report what happened
    (with ``figures``, once its figures and widgets are drawn)."""
    page = browser.new_page()
    seen = {"external": [], "errors": []}

    def route(r):
        if r.request.url.startswith(("http://127.0.0.1", "data:", "blob:")):
            r.continue_()
        else:
            seen["external"].append(r.request.url)
            r.abort()

    page.route("**/*", route)
    page.on("pageerror", lambda e: seen["errors"].append(str(e)))
    page.on("console", lambda m: m.type == "error" and seen["errors"].append(m.text))
    page.goto(url, wait_until="networkidle")
    seen["math_errors"] = page.evaluate(MATH_ERRORS)
    if figures:
        seen.update(settled(page))
    page.close()
    return seen


@pytest.mark.parametrize("slug", BUILT)
def test_chapter_page_says_how_to_run_it_and_offers_its_executed_notebook(html, slug):
    page = (html / "notebooks" / f"{slug}.html").read_text()
    box = page[page.index("iclr25-run") :][:1500]
    assert "make lab" in box and f"python -m iclr25 run {slug}" in box
    assert f'href="{slug}.ipynb"' in box
    executed = json.loads((html / "notebooks" / f"{slug}.ipynb").read_text())
    assert any(c.get("outputs") for c in executed["cells"] if c["cell_type"] == "code")


def test_intro_states_the_builds_fidelity_as_the_scoreboard_does(html):
    line = re.compile(r"<p class='iclr25-fidelity'>.*?</p>", re.S)
    intro = line.findall((html / "book" / "intro.html").read_text())
    board = line.findall((html / "book" / "scoreboard.html").read_text())
    assert len(intro) == 1 and intro == board, (intro, board)


def test_intro_page_works_offline(browser, site):
    seen = visit(browser, f"{site}/book/intro.html", figures=False)
    assert not seen["external"] and not seen["errors"] and not seen["math_errors"], seen


@pytest.mark.parametrize("slug", BUILT)
def test_claims_section_opens_with_the_claims_at_a_glance(html, slug):
    page = (html / "notebooks" / f"{slug}.html").read_text()
    section = page[page.index('<section id="claims">') :]
    assert section.index("plotly-graph-div") < section.index("iclr25-claims")
    assert "Claims at a glance" in section[: section.index("iclr25-claims")]


def test_scoreboard_page_sorts_and_filters_offline(browser, site):
    seen = visit(browser, f"{site}/book/scoreboard.html")
    assert not seen["external"] and not seen["errors"] and not seen["math_errors"], seen
    assert seen["plots"] == 1 and seen["drawn"] == 1, "the book's claims at a glance"
    page = browser.new_page()
    page.route(
        "**/*",
        lambda r: r.continue_() if r.request.url.startswith("http://127.0.0.1") else r.abort(),
    )
    page.goto(f"{site}/book/scoreboard.html", wait_until="networkidle")
    rows = "table.iclr25-scoreboard tbody tr:not(.iclr25-diagnosis)"
    page.locator(rows).first.wait_for()  # a loaded machine can answer before it is parsed
    heads = "() => [...document.querySelectorAll('table.iclr25-scoreboard thead th')]"
    assert page.evaluate(f"{heads}.map(h => h.textContent)") == [
        "chapter", "claim", "statement", "paper", "control", "measured here",
        "estimate", "95% interval", "runs", "items", "rule", "outcome",
    ]  # fmt: skip
    chapters = f"() => [...document.querySelectorAll('{rows}')].map(r => r.cells[0].textContent)"
    before = page.evaluate(chapters)
    assert before, "the scoreboard table has rows"
    page.click("table.iclr25-scoreboard thead th:nth-child(1)")  # sort by chapter
    assert page.evaluate(chapters) == sorted(before)
    page.click("table.iclr25-scoreboard thead th:nth-child(1)")
    assert page.evaluate(chapters) == sorted(before, reverse=True)
    follows = """() => [...document.querySelectorAll('tr.iclr25-diagnosis')].every(d =>
        d.previousElementSibling.cells[1].querySelector('code').textContent ===
        d.querySelector('summary code').textContent)"""
    assert page.evaluate(follows), "a diagnosis row left its claim when the table sorted"
    page.fill("input.iclr25-filter", BUILT[0])
    visible = page.evaluate(
        f"() => [...document.querySelectorAll('{rows}')]"
        ".filter(r => !r.hidden).map(r => r.cells[0].textContent)"
    )
    assert visible and set(visible) == {BUILT[0]}
    page.fill("input.iclr25-filter", "holds")  # a row's own words, not its diagnosis's
    kept = page.evaluate(
        f"() => [...document.querySelectorAll('{rows}')].map(r => [!r.hidden, "
        "[...r.cells].map(c => c.textContent).join(' ').toLowerCase().includes('holds')])"
    )
    assert any(shown for shown, _ in kept) and all(shown == has for shown, has in kept)
    shown = "() => [...document.querySelectorAll('tr.iclr25-diagnosis')].filter(d => !d.hidden)"
    assert page.evaluate(f"{shown}.every(d => !d.previousElementSibling.hidden)")
    page.close()


CONTRAST = """() => {
    const rgb = c => (c.match(/[\\d.]+/g) || []).map(Number);
    const light = ([r, g, b]) => [r, g, b].map(v => v / 255)
        .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
        .reduce((s, v, i) => s + v * [0.2126, 0.7152, 0.0722][i], 0);
    const ground = e => {
        for (; e; e = e.parentElement) {
            const c = rgb(getComputedStyle(e).backgroundColor);
            if (c.length === 3 || c[3] > 0) return c;
        }
        return [255, 255, 255];
    };
    const texts = [...document.querySelectorAll(
        'table.iclr25-claims :is(th, td, code, small, summary)')];
    return texts.filter(e => e.textContent.trim()).map(e => {
        const [a, b] = [light(rgb(getComputedStyle(e).color)), light(ground(e))];
        return [e.textContent.trim().slice(0, 30),
                (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
    });
}"""
"""Each text of the claims tables with its WCAG contrast ratio against the background
it is drawn on (the nearest ancestor's that is not transparent)."""


@pytest.mark.parametrize("mode", ["light", "dark"])
def test_claims_table_reads_in_both_modes(browser, site, mode, tmp_path):
    """In the theme's light and dark modes every text of a chapter's claims table, the
    ids, statuses and diagnoses included, stands out from its background at WCAG AA's
    4.5:1; the screenshot of the table is kept beside the test's files."""
    page = browser.new_page(viewport={"width": 1366, "height": 900})
    page.route(
        "**/*",
        lambda r: r.continue_() if r.request.url.startswith("http://127.0.0.1") else r.abort(),
    )
    page.add_init_script(  # what the theme's switch remembers
        f"localStorage.setItem('mode', '{mode}'); localStorage.setItem('theme', '{mode}');"
    )
    page.goto(f"{site}/notebooks/{BUILT[0]}.html", wait_until="networkidle")
    assert page.evaluate("() => document.documentElement.dataset.theme") == mode
    page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
    page.locator("table.iclr25-claims").last.screenshot(path=str(tmp_path / f"{mode}.png"))
    faint = [(text, round(ratio, 2)) for text, ratio in page.evaluate(CONTRAST) if ratio < 4.5]
    page.close()
    assert not faint, f"{mode} mode: texts below 4.5:1 {faint[:8]}"


WIDE = ("book/scoreboard", f"notebooks/{BUILT[0]}", "notebooks/fine")


@pytest.mark.parametrize("width", [390, 1366])
def test_pages_never_scroll_sideways(browser, site, width):
    """At a phone's width and a laptop's, the Scoreboard and two chapters keep their
    wide tables, figures and listings in boxes of their own: the page itself never
    scrolls sideways, even with every diagnosis open."""
    page = browser.new_page(viewport={"width": width, "height": 900})
    page.route(
        "**/*",
        lambda r: r.continue_() if r.request.url.startswith("http://127.0.0.1") else r.abort(),
    )
    for path in WIDE:
        page.goto(f"{site}/{path}.html", wait_until="networkidle")
        page.evaluate("() => document.querySelectorAll('details').forEach(d => d.open = true)")
        page.wait_for_timeout(500)
        wide = page.evaluate("() => document.documentElement.scrollWidth")
        assert wide <= width, f"{path} at {width} px scrolls sideways: {wide} px wide"
    page.close()


@pytest.mark.parametrize("slug", BUILT)
def test_chapter_page_draws_its_figures_offline(browser, site, slug):
    seen = visit(browser, f"{site}/notebooks/{slug}.html")
    assert not seen["external"], seen["external"]
    assert not seen["errors"], seen["errors"]
    assert not seen["math_errors"], seen["math_errors"]  # TeX MathJax could not typeset
    assert seen["plots"] > 0 and seen["drawn"] == seen["plots"], seen
    assert not seen["widget_state"] and not seen["widgets"], "a dead live control on the page"
    if "core.explore(" in toc.get(slug).notebook.read_text():
        # each live control says how to run it, beside its twin that works on the page
        assert seen["notes"] > 0, "a live control shows no note on the static page"
        assert seen["sliders"] > 0, "a live control needs its static plotly-slider twin"
