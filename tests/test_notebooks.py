"""Every built chapter: its parameters cell matches its module, and it runs (smoke)."""

import ast

import jupytext
import pytest
from papermill.exceptions import PapermillExecutionError

from iclr25 import run, toc
from iclr25.core import STATUSES, Bound, ParameterError

BUILT = [c.slug for c in toc.built()]


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
def test_bounds_and_known_gaps_are_module_constants(slug):
    module = toc.get(slug).module()
    assert isinstance(module.BOUNDS, dict) and module.BOUNDS
    for spec in module.BOUNDS.values():
        named = spec.values() if isinstance(spec, dict) else [spec]
        assert named and all(isinstance(b, Bound) for b in named)
    assert isinstance(module.KNOWN_GAPS, dict)
    assert set(module.KNOWN_GAPS) <= set(module.BOUNDS), "a known gap names a claim"
    for diagnosis in module.KNOWN_GAPS.values():  # why our scale cannot show it, what would
        assert isinstance(diagnosis, str) and len(diagnosis) > 80
        assert "{" not in diagnosis, "a diagnosis is written before the run, not formatted"


@pytest.mark.parametrize("slug", BUILT)
def test_chapter_runs_in_smoke_mode(slug, tmp_path):
    notebook, claims = run.execute(slug, tmp_path, smoke=True)
    assert notebook.is_file() and (tmp_path / f"{slug}.claims.json").is_file()
    assert claims, "a chapter records the paper's claims it tests"
    assert all(c.chapter == slug and c.status in STATUSES for c in claims)
    assert len({c.id for c in claims}) == len(claims), "claim ids are unique"
    assert {c.id for c in claims} <= set(toc.get(slug).module().BOUNDS)
    assert any(c.kind == "paper" for c in claims)


@pytest.mark.parametrize("slug", BUILT)
def test_chapter_stops_on_an_unknown_parameter_in_the_notebook(slug, tmp_path, monkeypatch):
    # papermill only warns about unknown parameters; the chapter itself must refuse them
    monkeypatch.setattr(run, "parameters", lambda *a, **k: {"no_such_parameter": 1})
    with pytest.raises(PapermillExecutionError) as err:
        run.execute(slug, tmp_path)
    assert err.value.ename == "ParameterError"
    assert "unknown parameter 'no_such_parameter'" in err.value.evalue


def test_run_rejects_bad_parameters_before_executing(tmp_path):
    with pytest.raises(ParameterError, match="unknown parameter 'nope'"):
        run.execute("sro", tmp_path, {"nope": 1})
    assert not list(tmp_path.iterdir())


def test_no_chapter_imports_another():
    """A chapter module imports shared code only: what two chapters need moves up."""
    slugs = {c.slug for c in toc.ALL}
    for path in (toc.ROOT / "lib" / "iclr25" / "chapters").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            imported = {n.split(".")[2] for n in names
                        if n.startswith("iclr25.chapters.") and n.count(".") >= 2}
            assert not imported & slugs, f"{path.name} imports chapter {imported & slugs}"
