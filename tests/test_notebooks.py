"""Every built chapter: its parameters cell matches its module, and it runs (smoke)."""

import ast
import json
import re

import jupytext
import pytest
from papermill.exceptions import PapermillExecutionError

from iclr25 import run, toc
from iclr25.core import AFTER_THE_RUN, STATUSES, Bound, Gap, Margin, ParameterError
from iclr25.core.claims import EVIDENCE, check_registry
from iclr25.core.report import outcome_paragraph

BUILT = [c.slug for c in toc.built()]
ANATOMY_SLUGS = [*BUILT, toc.TEMPLATE.slug]
PLOTLY = "application/vnd.plotly.v1+json"


def parameters_cell(chapter: toc.Chapter) -> dict:
    """The literal values assigned in the chapter's tagged parameters cell."""
    nb = jupytext.read(chapter.notebook, fmt="py:percent")
    cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert len(cells) == 1, "a chapter has exactly one tagged parameters cell"
    values = {}
    for node in ast.parse(cells[0].source).body:
        assert isinstance(node, ast.Assign), "the parameters cell holds plain assignments only"
        values[node.targets[0].id] = ast.literal_eval(node.value)
    return values


def test_some_chapter_is_built():
    assert "sro" in BUILT


@pytest.mark.parametrize("slug", BUILT)
def test_parameters_cell_equals_module_defaults(slug):
    chapter = toc.get(slug)
    module = chapter.module()
    cell = parameters_cell(chapter)
    defaults = {name: p.default for name, p in module.PARAMETERS.items()}
    assert cell == defaults
    assert {k: type(v) for k, v in cell.items()} == {k: type(v) for k, v in defaults.items()}
    assert {"seed", "device"} <= set(cell)
    run.parameters(slug, module.SMOKE)  # the smoke overrides are valid parameters


@pytest.mark.parametrize("slug", BUILT)
def test_claims_registry_is_a_module_constant(slug):
    module = toc.get(slug).module()
    assert not hasattr(module, "BOUNDS") and not hasattr(module, "KNOWN_GAPS"), (
        "one registry: CLAIMS holds the rules and the gaps"
    )
    check_registry(slug, module.CLAIMS)
    for spec in module.CLAIMS.values():
        if spec.gap is not None:  # why our scale cannot show it, and what would
            assert isinstance(spec.gap, Gap) and len(spec.gap.diagnosis) > 80
            assert not spec.gap.diagnosis.startswith(AFTER_THE_RUN), "after_run=True says so"
        for text in (spec.statement, spec.paper, spec.control):
            assert "{" not in text and text == text.strip()


@pytest.mark.parametrize("slug", ANATOMY_SLUGS)
def test_notebook_passes_only_evidence_to_claim(slug):
    """A claim's statement, kind, figure, rule and gap live in the registry: a notebook
    that passes one is refused (core.claim raises) and caught here before it runs."""
    source = toc.get(slug).notebook.read_text()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "core.claim":
            assert len(node.args) == 1, f"core.claim({ast.unparse(node.args[0])}, ...) positional"
            given = {k.arg for k in node.keywords}
            assert given <= set(EVIDENCE), f"{ast.unparse(node)[:60]}: {given}"


@pytest.mark.smoke
@pytest.mark.parametrize("slug", BUILT)
def test_chapter_runs_in_smoke_mode(slug, smoke_run, smoke_runs):
    """Each chapter's smoke run, into the folder from which make test renders the site."""
    notebook, claims = smoke_run(slug)
    assert notebook.is_file() and (smoke_runs / f"{slug}.claims.json").is_file()
    assert claims, "a chapter records the paper's claims it tests"
    assert all(c.chapter == slug and c.status in STATUSES for c in claims)
    assert len({c.id for c in claims}) == len(claims), "claim ids are unique"
    assert {c.id for c in claims} <= set(toc.get(slug).module().CLAIMS)
    assert any(c.kind == "paper" for c in claims)
    assert _written_reading(notebook) == [outcome_paragraph(claims)], (
        "the page reads its own table: one paragraph, written from the run's claims"
    )
    for cell in json.loads(notebook.read_text())["cells"]:
        shown = [
            json.dumps(o["data"][PLOTLY], sort_keys=True)
            for o in cell.get("outputs", [])
            if PLOTLY in o.get("data", {})
        ]
        assert len(shown) == len(set(shown)), f"a cell shows one figure twice: {cell['source']}"


def _written_reading(notebook) -> list[str]:
    """The outcome paragraphs in an executed notebook's outputs."""
    opening = "<p><strong>What the claims say.</strong>"
    return [
        html[html.index(opening) :]
        for cell in json.loads(notebook.read_text())["cells"]
        for o in cell.get("outputs", [])
        if opening in (html := "".join(o.get("data", {}).get("text/html", "")))
    ]


@pytest.mark.smoke
def test_a_page_at_another_seed_reads_its_own_table(tmp_path):
    """At a seed of 1000 the outcome paragraph is the one that seed's claims give: no
    sentence of the page was written for seed 0."""
    notebook, claims = run.execute("sro", tmp_path, {"seed": 1000}, smoke=True)
    assert _written_reading(notebook) == [outcome_paragraph(claims)]


@pytest.mark.smoke
def test_chapter_stops_on_an_unknown_parameter_in_the_notebook(tmp_path, monkeypatch):
    """papermill only warns about unknown parameters; the chapter itself must refuse
    them. Every chapter starts with ``core.chapter`` in its setup cell (the anatomy
    test), so one chapter's kernel shows it for all."""
    monkeypatch.setattr(run, "parameters", lambda *a, **k: {"no_such_parameter": 1})
    with pytest.raises(PapermillExecutionError) as err:
        run.execute("sro", tmp_path)
    assert err.value.ename == "ParameterError"
    assert "unknown parameter 'no_such_parameter'" in err.value.evalue


def test_run_rejects_bad_parameters_before_executing(tmp_path):
    with pytest.raises(ParameterError, match="unknown parameter 'nope'"):
        run.execute("sro", tmp_path, {"nope": 1})
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("slug", BUILT)
def test_notebook_names_its_chapter_by_its_slug(slug):
    """``from iclr25.chapters import sro``, never an alias (``as fa``): a reader meets
    the chapter's name in every call."""
    text = toc.get(slug).notebook.read_text()
    assert f"from iclr25.chapters import {slug}\n" in text, f"import {slug} by its slug"
    assert f"import {slug} as " not in text, "no alias for the chapter"


def test_no_chapter_imports_another():
    """A chapter package imports shared code and its own files only: what two chapters
    need moves up."""
    slugs = {c.slug for c in toc.ALL}
    for path in (toc.ROOT / "lib" / "iclr25" / "chapters").glob("*/*.py"):
        own = path.parent.name
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            imported = {
                n.split(".")[2]
                for n in names
                if n.startswith("iclr25.chapters.") and n.count(".") >= 2
            }
            assert not (imported - {own}) & slugs, f"{own}/{path.name} imports {imported}"


LIB = toc.ROOT / "lib" / "iclr25"
CHAPTER_FILE_LINES = 800
"""About the most lines a chapter's file may hold."""
SHARED_FILE_LINES = 650
"""About the most lines a shared file (core, llm, editing, vision, ...) may hold."""


@pytest.mark.parametrize("slug", ANATOMY_SLUGS)
def test_every_chapter_is_a_package_of_one_shape(slug):
    """__init__.py says what the chapter decides (its docstring, PARAMETERS, SMOKE,
    CLAIMS); method.py holds the paper's method; figures.py its figures."""
    package = LIB / "chapters" / slug
    assert not (LIB / "chapters" / f"{slug}.py").exists(), "a chapter is a package"
    assert {"__init__.py", "method.py", "figures.py"} <= {p.name for p in package.glob("*.py")}
    tree = ast.parse((package / "__init__.py").read_text())
    assert ast.get_docstring(tree), "__init__.py opens with the chapter's docstring"
    assigned = {
        t.id if isinstance(t, ast.Name) else t.target.id
        for node in tree.body
        if isinstance(node, (ast.Assign, ast.AnnAssign))
        for t in (node.targets if isinstance(node, ast.Assign) else [node])
        if isinstance(t, ast.Name) or isinstance(getattr(t, "target", None), ast.Name)
    }
    assert {"PARAMETERS", "SMOKE", "CLAIMS"} <= assigned, "decided in __init__.py"
    defined = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
    assert not defined, f"the method lives in the package's files, not __init__: {defined}"


def test_files_a_reader_can_hold():
    too_long = []
    for path in LIB.rglob("*.py"):
        limit = CHAPTER_FILE_LINES if "chapters" in path.parts else SHARED_FILE_LINES
        lines = len(path.read_text().splitlines())
        if lines > limit:
            too_long.append(f"{path.relative_to(LIB)} ({lines} > {limit})")
    assert not too_long, ", ".join(too_long)


# --- the template and the chapter anatomy --------------------------------------------

ANATOMY = [*BUILT, toc.TEMPLATE.slug]
ENDING = ["Claims", "What differs from the paper", "Going further"]
MAX_CELL_LINES = 25
PAGE_COLUMNS = 78


def cells(slug: str) -> list:
    """The notebook's cells, as jupytext reads its percent-format source."""
    return jupytext.read(toc.get(slug).notebook, fmt="py:percent").cells


def headings(cell, level: int) -> list[str]:
    """The text of a markdown cell's headings of ``level`` (outside code fences)."""
    found, fenced = [], False
    for line in cell.source.splitlines() if cell.cell_type == "markdown" else []:
        fenced ^= line.lstrip().startswith(("```", "~~~"))
        if not fenced and line.startswith("#" * level + " "):
            found.append(line[level + 1 :].strip())
    return found


def imports(source: str) -> list[str]:
    """The import statements of a code cell (IPython magics left out)."""
    code = "\n".join(line for line in source.splitlines() if not line.startswith(("%", "!")))
    return [
        ast.unparse(node)
        for node in ast.walk(ast.parse(code))
        if isinstance(node, (ast.Import, ast.ImportFrom))
    ]


def test_template_is_runnable_but_not_a_chapter():
    assert toc.TEMPLATE.built and toc.get("_template") is toc.TEMPLATE
    assert toc.TEMPLATE not in toc.ALL and toc.TEMPLATE not in toc.built()


@pytest.mark.smoke
@pytest.mark.parametrize("smoke", [True, False], ids=["smoke", "book"])
def test_template_runs_with_its_claims_holding(smoke, tmp_path):
    notebook, claims = run.execute(toc.TEMPLATE.slug, tmp_path, smoke=smoke)
    assert notebook.is_file()
    assert [c.id for c in claims] == list(toc.TEMPLATE.module().CLAIMS)
    assert all(c.status == "holds" for c in claims)
    rules = {type(s.rule) for s in toc.TEMPLATE.module().CLAIMS.values()}
    kinds = {c.kind for c in claims}
    assert rules == {Bound, Margin} and kinds == {"paper", "setup"}, "the template shows all three"
    assert any(c.estimate is not None and c.low < c.estimate < c.high for c in claims)


def test_template_parameters_cell_equals_module_defaults():
    module = toc.TEMPLATE.module()
    assert parameters_cell(toc.TEMPLATE) == {k: p.default for k, p in module.PARAMETERS.items()}


@pytest.mark.parametrize("slug", ANATOMY)
def test_notebook_opens_with_title_parameters_and_setup(slug):
    nb = cells(slug)
    assert nb[0].cell_type == "markdown" and len(headings(nb[0], 1)) == 1, (
        "the first cell is markdown with the title, a single '# ' heading"
    )
    assert not any(headings(c, 1) for c in nb[1:]), "the title is the notebook's only H1"
    code = [c for c in nb if c.cell_type == "code"]
    assert "parameters" in code[0].metadata.get("tags", []), (
        "the first code cell is the tagged parameters cell"
    )
    setup = code[1].source
    assert f'core.chapter("{slug}", globals())' in setup, "the second code cell starts the chapter"
    assert imports(setup), "the second code cell holds the notebook's imports"
    late = [i for c in code[2:] for i in imports(c.source)]
    assert not late, f"imports belong in the setup cell, not later: {late}"


@pytest.mark.parametrize("slug", ANATOMY)
def test_notebook_shows_the_method_then_claims_then_closes(slug):
    nb = cells(slug)
    first = {
        key: next((i for i, c in enumerate(nb) if key in c.source), len(nb))
        for key in ("literalinclude", "core.claim(")
    }
    assert first["literalinclude"] < first["core.claim("], (
        "the method is shown from source (literalinclude) before the first claim"
    )
    h2 = [(i, h) for i, c in enumerate(nb) for h in headings(c, 2)]
    claims_at = [i for i, h in h2 if h == "Claims"]
    assert len(claims_at) == 1, "exactly one '## Claims' heading"
    assert not any("core.claim(" in c.source for c in nb[claims_at[0] :]), (
        "no claim is made after '## Claims'"
    )
    assert [h for _, h in h2][-len(ENDING) :] == ENDING


GENERATED = ("What the claims say", "How the claims are decided")
"""What :func:`iclr25.core.claims_table` writes from the run beside the table: the
outcome in words and how the claims are decided. A notebook that writes either by hand
would state an outcome that another seed can contradict, or repeat the book's rules."""


@pytest.mark.parametrize("slug", ANATOMY)
def test_claims_open_with_the_table_and_the_run_writes_their_reading(slug):
    """'## Claims' stands alone, with the table (and its generated reading) first; no
    markdown cell writes the paragraph that the run writes."""
    nb = cells(slug)
    at = next(i for i, c in enumerate(nb) if "Claims" in headings(c, 2))
    assert nb[at].source.strip() == "## Claims", "the Claims heading stands alone"
    table = nb[at + 1]
    assert table.cell_type == "code" and "core.claims_table()" in table.source
    written = [
        f"{phrase!r} in: {c.source[:80]}"
        for c in nb
        if c.cell_type == "markdown"
        for phrase in GENERATED
        if phrase in c.source
    ]
    assert not written, "the run writes these:\n" + "\n".join(written)


@pytest.mark.parametrize("slug", ANATOMY)
def test_no_code_cell_is_longer_than_25_lines(slug):
    long = {
        i: len(c.source.splitlines())
        for i, c in enumerate(cells(slug))
        if c.cell_type == "code" and len(c.source.splitlines()) > MAX_CELL_LINES
    }
    assert not long, f"cells (index: lines) over {MAX_CELL_LINES} lines: {long}"


LISTING_LINES = 40
"""The longest listing the book shows: one step of the paper, with its equation."""

LONG_LISTINGS = {
    "ai2tale": {"make_email"},
    "brainood": {"to_graphs"},
    "debias": {"causal_model"},
    "dlgn": {"DLGN"},
    "enumerative": {"fit"},
    "faithfulness": {"train_tiny"},
    "fine": {"causal_trace", "rome_v", "fine"},
    "hyperdas": {"das_layer", "ReflectSelect"},
    "identifiability": {"train_networks"},
    "mcqa": {"score_continuations", "train_tiny", "patch_sweep"},
    "modeconn": {"connect"},
    "probing": {"attribute", "train_probe"},
    "sadr": {"sadr_v", "restored_margins"},
    "sensitivity": {"train_to_accuracy", "grok"},
    "tgbseq": {"generate", "RecentNeighbors", "fit", "toy"},
}  # fmt: skip
"""The listings over :data:`LISTING_LINES` that the code issue found, chapter by chapter,
to be split into the paper's step and its engine: no new one joins, and a listing that
is cut to size leaves the list."""


def listings(slug: str) -> dict[str, int]:
    """Each ``:pyobject:`` listing of a chapter's notebook, with its number of lines."""
    notebook = toc.get(slug).notebook
    found = {}
    pattern = r"literalinclude\}\s*(\S+)\s*\n#\s*:pyobject:\s*(\S+)"
    for path, name in re.findall(pattern, notebook.read_text()):
        nodes = ast.parse((notebook.parent / path).read_text()).body
        for part in name.split("."):
            node = next(n for n in nodes if getattr(n, "name", None) == part)
            nodes = node.body
        found[name] = node.end_lineno - node.lineno + 1
    return found


@pytest.mark.parametrize("slug", ANATOMY)
def test_listings_show_one_step_of_the_paper(slug):
    long = {name for name, lines in listings(slug).items() if lines > LISTING_LINES}
    assert long == LONG_LISTINGS.get(slug, set()), (
        f"listings over {LISTING_LINES} lines (split the paper's step from its engine): "
        f"{sorted(long)}; listed: {sorted(LONG_LISTINGS.get(slug, set()))}"
    )


@pytest.mark.parametrize("slug", ANATOMY)
def test_no_code_line_is_wider_than_the_page(slug):
    """The page shows 78 characters of a code cell before it scrolls sideways."""
    wide = [
        line
        for c in cells(slug)
        if c.cell_type == "code"
        for line in c.source.splitlines()
        if len(line) > PAGE_COLUMNS
    ]
    assert not wide, f"{len(wide)} code lines over {PAGE_COLUMNS} characters, e.g. {wide[0]!r}"


REPORTS = {
    "fine": ("n_departures", {"departures", "departed"}),
    "sadr": ("n_authors", {"again", "settings", "authors"}),
}
"""Reports that decide no claim: the parameter that turns each on, and the names its
cells set."""


@pytest.mark.parametrize("slug", REPORTS)
def test_a_report_that_decides_no_claim_is_off_in_the_book_and_on_in_the_smoke_run(slug):
    """The book leaves such a report to a reader who asks for it (the notebook prints
    the command that runs it); the smoke run keeps its code running."""
    parameter, names = REPORTS[slug]
    module = toc.get(slug).module()
    assert module.PARAMETERS[parameter].default == 0 and module.SMOKE[parameter] >= 1
    source = toc.get(slug).notebook.read_text()
    assert f"python -m iclr25 run {slug} -p {parameter}=" in source
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and ast.unparse(node.func) == "core.claim":
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            assert not used & names, ast.unparse(node)[:80]
