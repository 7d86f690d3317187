"""Every built chapter: its parameters cell matches its module, and it runs (smoke)."""

import ast
import json
import re

import jupytext
import pytest
from papermill.exceptions import PapermillExecutionError

from iclr25 import run, toc
from iclr25.core import AFTER_THE_RUN, STATUSES, Bound, Gap, Margin, ParameterError
from iclr25.core.claims import EVIDENCE, check_registry, describe_rule
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


NUMBER = re.compile(r"(?<![\w.{:,])-?\d+(?:,\d{3})*(?:\.\d+)?(?![\w}]|,\d)")
"""A number as prose writes it (``0.95``, ``2,000``, ``17``), outside a ``{field}``."""

NOT_FROM_A_RUN = {
    ("mcqa", "tiny-learned"): "8000 20",  # settings to run with
    ("mcqa", "tiny-learned-seeds"): "8000 20",
    ("sadr", "sadr-rs"): "80 2,000",  # the paper's steps and edits
    ("sadr", "restore-recovers"): "28 16 9",  # GPT-J's layers and heads; SmolLM2's heads
    ("faithfulness", "detects-hiding"): "2",  # sqrt(2)
    ("sst", "faithful_baseline_st"): "10,000",  # MNIST's test split
    ("enumerative", "fits-training-genera"): "100",  # the official epochs
    ("kbg", "beats_global"): "23",  # the benchmark's other datasets
    ("kbg", "near_oracle"): "23",
    ("selective", "ls_worse_auroc_0.2"): "0.4",  # the other official alpha
}
"""The numbers an after-run diagnosis states that no run measures, claim by claim."""


def _numbers(text: str) -> list[float]:
    """The magnitudes of the numbers in ``text``, outside its ``{fields}``."""
    prose = re.sub(r"\{[^}]*\}", "", text)
    return [abs(float(n.replace(",", ""))) for n in NUMBER.findall(prose)]


@pytest.mark.parametrize("slug", BUILT)
def test_after_run_diagnoses_quote_the_run_s_numbers(slug):
    """A gap declared after a run explains a measured miss; the numbers it cites come
    from the run through its fields (``{estimate:.2f}``), never copied by hand: each
    number left in its text is a setting, a rule's or the paper's, or named above."""
    module = toc.get(slug).module()
    settings = " ".join(str(p.default) for p in module.PARAMETERS.values())
    copied = []
    for cid, spec in module.CLAIMS.items():
        if spec.gap is None or not spec.gap.after_run:
            continue
        rules = spec.rule.values() if isinstance(spec.rule, dict) else [spec.rule]
        fixed = [spec.statement, spec.paper, spec.control, describe_rule(spec.rule)]
        fixed += [getattr(r, "why", "") for r in rules]
        fixed += [settings, NOT_FROM_A_RUN.get((slug, cid), ""), "0 1"]
        known = set(_numbers(" ".join(fixed)))
        copied += [f"{cid}: {n:g}" for n in _numbers(spec.gap.diagnosis) if n not in known]
    assert not copied, f"numbers copied from a run into {slug}'s diagnoses: {copied}"


HISTORY = re.compile(
    r"\b(issues?|pilots?|helpers?|parked|first (book )?run|earlier runs?|second run|"
    r"first design|STACK\.md)\b|#\d{2}\b|\btests?/\w+\.py\b",
    re.IGNORECASE,
)
"""Words that tell how the book came about (issues, pilots, earlier runs, files the reader
does not have), which a page must not: it tells what the chapter does and finds."""


def _reader_strings(slug: str) -> list[tuple[str, str]]:
    """(where, text) for what a chapter's reader sees: the notebook, and each claim's
    statement, paper figure, control, rule and diagnosis."""
    chapter = toc.get(slug)
    found = [(f"notebooks/{slug}.py", chapter.notebook.read_text())]
    for id, spec in chapter.module().CLAIMS.items():
        rules = spec.rule.values() if isinstance(spec.rule, dict) else [spec.rule]
        texts = [spec.statement, spec.paper or "", spec.control or ""]
        texts += [getattr(r, "why", "") or "" for r in rules]
        texts += [spec.gap.diagnosis] if spec.gap else []
        found += [(f"{slug}.CLAIMS[{id!r}]", t) for t in texts]
    return found


@pytest.mark.parametrize("slug", BUILT)
def test_pages_tell_results_not_history(slug):
    told = [
        f"{where}: {m.group(0)!r} in ...{text[max(0, m.start() - 50) : m.end() + 30]}..."
        for where, text in _reader_strings(slug)
        for m in HISTORY.finditer(text)
    ]
    assert not told, "\n".join(told)


OUTCOME = re.compile(
    r"(\bclaims?\b|`[a-z][a-z0-9_.-]*`)\s+(?!that\b|which\b)(\w+\s+){0,3}?"
    r"(holds|held(?!-)|hold|fails|failed|misses|missed|(is|are) contradicted"
    r"|(is|are) inconclusive|(is|are) (a )?known gaps?|reproduces?)\b"
    r"|\b(is|are|was|were) (not )?reproduced\b"
    r"|\bwithin (its|the) [\w-]*-minute budget\b"
    r"|\b\d+ (CPU-)?s against (its|a|the) \d+",
    re.IGNORECASE,
)
"""A sentence that tells an outcome: a claim held or missed, a finding reproduced, a run
within its budget. Outcomes come from the build (the claims table with the paragraph
that :func:`iclr25.core.report.outcome_paragraph` writes beneath it, the run box): no
hand-written sentence states one, so the page agrees with its table at any seed."""

CONDITION = re.compile(r"\b(if|when|whether|unless|where|whose|must|would|should|only)\b", re.I)
"""A sentence with one of these states a rule (a claim holds *when* ...), not an outcome."""


def _prose_sentences(source: str) -> list[str]:
    """The sentences of a notebook's markdown cells, leaving out the paragraph that reads
    the claims table (it opens with "**What the claims say.**")."""
    sentences = []
    for cell in jupytext.reads(source, fmt="py:percent").cells:
        if cell.cell_type != "markdown":
            continue
        for paragraph in re.split(r"\n\s*\n", cell.source):
            if not paragraph.lstrip().startswith("**What the claims say.**"):
                sentences += re.split(r"(?<=[.!?])\s+", " ".join(paragraph.split()))
    return sentences


@pytest.mark.parametrize("slug", BUILT)
def test_prose_states_no_outcome_the_build_does_not_give(slug):
    stated = [
        f"{m.group(0)!r} in: {sentence[:160]}"
        for sentence in _prose_sentences(toc.get(slug).notebook.read_text())
        if (m := OUTCOME.search(sentence)) and not CONDITION.search(sentence)
    ]
    assert not stated, "\n".join(stated)


def test_outcome_words_are_caught():
    """The check above, on sentences it must flag and sentences it must let through."""
    flagged = [
        "The claim `drift` holds at our scale.",
        "The paper's headline finding is reproduced.",
        "It runs within its two-minute budget.",
        "sadr ran 363 s against its 300 s budget.",
    ]
    passed = [
        "A claim holds when the interval lies beyond the margin.",
        "A paper claim that rests on a setup claim that missed is inconclusive.",
        "Each email holds one cue of each family.",
    ]
    assert all(OUTCOME.search(s) and not CONDITION.search(s) for s in flagged)
    assert not any(OUTCOME.search(s) and not CONDITION.search(s) for s in passed)


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


INTERPRETS = "**What the claims say.**"


@pytest.mark.parametrize("slug", ANATOMY)
def test_claims_open_with_the_table_then_the_paragraph_that_reads_it(slug):
    """'## Claims' stands alone; the table with its generated summary comes first, then the
    paragraph that interprets it (the book's test checks that it names every miss)."""
    nb = cells(slug)
    at = next(i for i, c in enumerate(nb) if "Claims" in headings(c, 2))
    assert nb[at].source.strip() == "## Claims", "the Claims heading stands alone"
    table, reading = nb[at + 1 : at + 3]
    assert table.cell_type == "code" and "core.claims_table()" in table.source
    assert reading.cell_type == "markdown" and reading.source.startswith(INTERPRETS), (
        f"the claims table is followed by one paragraph opening {INTERPRETS}"
    )


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
