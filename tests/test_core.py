"""Unit tests of the shared substrate, iclr25.core."""

import os
import time
import warnings

import numpy as np
import plotly.graph_objects as go
import pytest
import torch

from iclr25 import core, toc
from iclr25.core import Param, ParameterError, params
from iclr25.core.cache import CACHE_LOG

SCHEMA = {
    "n": Param(100, "rows", low=10),
    "lr": Param(0.1, "step", low=0.0, high=1.0),
    "kind": Param("gaussian", "sketch", choices=("gaussian", "srht")),
    "fast": Param(True, "a flag"),
}


def test_validate_fills_defaults_and_accepts_int_for_float():
    assert core.validate(SCHEMA, {"lr": 1}) == {
        "n": 100,
        "lr": 1.0,
        "kind": "gaussian",
        "fast": True,
    }


@pytest.mark.parametrize(
    "values, words",
    [
        ({"m": 3}, "unknown parameter 'm'; accepted: n, lr, kind, fast"),
        ({"n": 2.5}, "parameter 'n' got 2.5 (float); accepted: a int >= 10"),
        ({"n": True}, "parameter 'n' got True (bool)"),
        ({"n": 5}, "parameter 'n' got 5; accepted: a int >= 10"),
        ({"lr": 2.0}, "accepted: a float >= 0 <= 1"),
        ({"kind": "cauchy"}, "accepted: one of 'gaussian', 'srht'"),
        ({"fast": 1}, "parameter 'fast' got 1 (int)"),
    ],
)
def test_validate_rejects_with_one_line(values, words):
    with pytest.raises(ParameterError) as err:
        core.validate(SCHEMA, values)
    assert words in str(err.value) and "\n" not in str(err.value)


def pairs(text: str) -> list[str]:
    parts = text.split(",")
    if len(parts) % 2:
        raise ValueError(f"{len(parts)} items; accepted: an even number, separated by commas")
    return parts


def test_a_parser_checks_a_structured_string_in_one_line():
    schema = {"pairs": Param("a,b", "pairs of names", parser=pairs)}
    assert core.validate(schema, {"pairs": "a,b,c,d"}) == {"pairs": "a,b,c,d"}
    with pytest.raises(ParameterError) as err:
        core.validate(schema, {"pairs": "a,b,c"})
    assert (
        str(err.value)
        == "parameter 'pairs': 3 items; accepted: an even number, separated by commas"
    )
    with pytest.raises(ParameterError, match=r"got 3 \(int\); accepted: a str"):  # the type first
        core.validate(schema, {"pairs": 3})


def test_validate_complete_requires_every_parameter():
    with pytest.raises(ParameterError, match="'fast' is not set"):
        core.validate(SCHEMA, {"n": 100, "lr": 0.1, "kind": "srht"}, complete=True)


def test_parse_command_line_values():
    assert SCHEMA["n"].parse("n", "200") == 200
    assert SCHEMA["lr"].parse("lr", "0.5") == 0.5
    assert SCHEMA["fast"].parse("fast", "false") is False
    with pytest.raises(ParameterError, match="got 'ten'"):
        SCHEMA["n"].parse("n", "ten")


def test_notebook_parameters_skip_modules_functions_and_private_names():
    namespace = {"n": 1, "np": np, "f": lambda: 0, "_x": 2, "kind": "srht"}
    assert params._notebook_parameters(namespace) == {"n": 1, "kind": "srht"}


def test_seed_everything_is_reproducible():
    a = core.seed_everything(3).normal(size=3), torch.rand(3)
    b = core.seed_everything(3).normal(size=3), torch.rand(3)
    np.testing.assert_array_equal(a[0], b[0])
    assert torch.equal(a[1], b[1])


def test_get_device():
    assert core.get_device("cpu").type == "cpu"
    assert core.get_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    if not torch.cuda.is_available():
        with pytest.raises(ParameterError, match="no CUDA device"):
            core.get_device("cuda")


def test_a_cuda_device_makes_cublas_deterministic(monkeypatch):
    monkeypatch.delenv("CUBLAS_WORKSPACE_CONFIG", raising=False)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # a machine with a GPU
    assert core.get_device("cpu").type == "cpu"
    assert "CUBLAS_WORKSPACE_CONFIG" not in os.environ
    assert core.get_device("auto").type == "cuda"
    assert os.environ["CUBLAS_WORKSPACE_CONFIG"] == ":4096:8"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    return tmp_path


def test_cached_builds_once_then_loads(cache):
    calls = []

    def build():
        calls.append(1)
        return {"w": torch.arange(3.0), "meta": [1, 2]}

    first = core.cached("model", {"width": 4}, build)
    second = core.cached("model", {"width": 4}, build)
    assert len(calls) == 1 and torch.equal(first["w"], second["w"]) and second["meta"] == [1, 2]
    core.cached("model", {"width": 5}, build)  # another config, another artefact
    assert len(calls) == 2 and len(list(cache.glob("model-*.pt"))) == 2
    assert not list(cache.glob("*.tmp"))


BUILD_ONCE = """
import sys, time
from iclr25 import core

def build():
    with open(sys.argv[1], "a") as f:
        f.write("built\\n")
    time.sleep(1.0)  # long enough that the other process asks while this one builds
    return {"w": [1.0, 2.0]}

print(core.cached("shared", {"k": 1}, build)["w"])
print(core.cached_dir("files", {"k": 1}, lambda f: (build(), (f / "a.txt").write_text("a"))))
"""


def test_two_processes_wanting_one_artefact_build_it_once(cache, tmp_path):
    import subprocess
    import sys

    counter = tmp_path / "builds.txt"
    runs = [
        subprocess.Popen(
            [sys.executable, "-c", BUILD_ONCE, str(counter)], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    outputs = [run.communicate(timeout=120)[0] for run in runs]
    assert all(run.returncode == 0 for run in runs)
    assert counter.read_text().count("built") == 2, "one build of each artefact in all"
    assert outputs[0] == outputs[1]  # the waiting process read what the other built


def test_a_nested_build_is_logged_with_its_own_cpu_time(cache, monkeypatch):
    log = cache / "cache.log"
    monkeypatch.setenv(CACHE_LOG, str(log))

    def spin(seconds):
        began = time.process_time()
        while time.process_time() - began < seconds:
            pass

    def outer():
        spin(0.3)
        return {"inner": core.cached("inner", {}, lambda: spin(0.6) or torch.zeros(1))}

    core.cached("outer", {}, outer)
    core.cached("outer", {}, outer)
    lines = [line.split("\t") for line in log.read_text().splitlines()]
    assert [line[:2] for line in lines] == [
        ["built", "inner"],
        ["built", "outer"],
        ["hit", "outer"],
    ]
    inner, outer_own = float(lines[0][2]), float(lines[1][2])
    assert inner >= 0.6 and 0.3 <= outer_own < 0.55  # the inner build is not counted twice


TRAINING = """
import torch

def fit(width):
    # one step of a training loop, say
    return {"w": torch.full((width,), 1.0)}
"""


def toy_code(tmp_path, monkeypatch, name: str):
    """:data:`TRAINING` as the module ``name`` on disk, imported; and ``edit(old, new)``,
    which rewrites part of its file and reloads it."""
    import importlib

    folder = tmp_path / "code"
    folder.mkdir()
    path = folder / f"{name}.py"
    path.write_text(TRAINING)
    monkeypatch.syspath_prepend(str(folder))
    toy = importlib.import_module(name)

    def edit(old: str, new: str) -> None:
        path.write_text(path.read_text().replace(old, new))
        os.utime(path, ns=(time.time_ns(), time.time_ns()))
        importlib.reload(toy)

    return toy, edit


def test_an_edited_training_function_misses_the_cache(cache, tmp_path, monkeypatch):
    """The key holds the code that builds an artefact: the module of the function that
    ``build`` calls. A changed line rebuilds; a changed comment or docstring does not."""
    toy, edit = toy_code(tmp_path, monkeypatch, "toy_training")
    built = []

    def width_two():
        built.append(1)
        return toy.fit(2)

    assert torch.equal(core.cached("toy", {"w": 2}, width_two)["w"], torch.ones(2))
    edit("# one step of a training loop, say", '"""A docstring."""  # and a comment')
    assert torch.equal(core.cached("toy", {"w": 2}, width_two)["w"], torch.ones(2))
    assert len(built) == 1  # a comment and a docstring: the same code
    edit("1.0", "2.0")
    assert torch.equal(core.cached("toy", {"w": 2}, width_two)["w"], torch.full((2,), 2.0))
    assert len(built) == 2 and len(list(cache.glob("toy-*.pt"))) == 2


def test_an_edited_editor_in_a_table_misses_the_cache(cache, tmp_path, monkeypatch):
    """A build that runs the editors of a table it closes over (``editing.kept_edits``:
    ``{"ROME": partial(rome, ...)}``) counts each editor's module: editing one rebuilds."""
    import functools

    toy, edit = toy_code(tmp_path, monkeypatch, "toy_editor")

    def kept(editors):
        def build():
            return {m: editor() for m, editor in editors.items()}

        return core.cached("toy-edits", {}, build)

    assert torch.equal(kept({"toy": functools.partial(toy.fit, 2)})["toy"]["w"], torch.ones(2))
    edit("1.0", "2.0")
    again = kept({"toy": functools.partial(toy.fit, 2)})
    assert torch.equal(again["toy"]["w"], torch.full((2,), 2.0))


def test_fingerprints_count_our_code_not_the_libraries(monkeypatch):
    from iclr25.core import cache as module
    from iclr25.llm import models

    named = {m.__name__ for m in module._modules_named(models.train_tiny)}
    assert {"iclr25.llm.models", "iclr25.core.training"} <= named
    assert not {"torch", "iclr25.core.cache"} & named
    assert core.fingerprint(lambda: models.train_tiny) == core.fingerprint(
        lambda: models.train_tiny  # another lambda, the same code
    )
    namespace = {}  # a notebook's function: no module file, its own source counts
    exec("def build():\n    return 1\n", namespace)
    assert len(core.fingerprint(namespace["build"])) == 16


def test_the_cache_lists_and_clears_artefacts_by_chapter(cache, monkeypatch):
    monkeypatch.setenv(core.CHAPTER, "sro")
    core.cached("sro-model", {"k": 1}, lambda: torch.ones(2))
    core.cached("shared", {"k": 1}, lambda: torch.ones(2))
    monkeypatch.setenv(core.CHAPTER, "fine")
    core.cached("shared", {"k": 1}, lambda: torch.ones(2))
    core.cached_dir("fine-files", {"k": 1}, lambda f: (f / "a.txt").write_text("a"))
    found = {a.name: a.chapters for a in core.artefacts()}
    assert found == {"sro-model": ("sro",), "shared": ("fine", "sro"), "fine-files": ("fine",)}
    for a in core.artefacts():
        if "fine" in a.chapters:
            a.remove()
    assert [a.name for a in core.artefacts()] == ["sro-model"]
    assert sorted(p.name.split("-")[0] for p in cache.iterdir()) == [
        "sro",
        "sro",
    ]  # and its side file


@pytest.mark.parametrize("damage", ["truncate", "flip"])
def test_cached_rebuilds_a_damaged_file(cache, damage):
    core.cached("model", {"width": 4}, lambda: torch.ones(1000))
    (path,) = cache.glob("model-*.pt")
    blob = bytearray(path.read_bytes())
    if damage == "truncate":
        blob = blob[: len(blob) // 2]
    else:
        blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.warns(UserWarning, match="corrupt or stale"):
        value = core.cached("model", {"width": 4}, lambda: torch.zeros(2))
    assert torch.equal(value, torch.zeros(2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the rebuilt file is trusted again
        assert torch.equal(core.cached("model", {"width": 4}, lambda: None), torch.zeros(2))


class Opaque:
    """Picklable, but not loadable with weights_only=True."""


def test_cached_refuses_values_a_safe_load_could_not_read(cache):
    with pytest.raises(TypeError, match=r"in plain containers, not Opaque \(at value\)"):
        core.cached("bad", {}, Opaque)
    nested = {"state": {"w": torch.zeros(2)}, "record": [1.0, Opaque()]}
    with pytest.raises(TypeError, match=r"not Opaque \(at value\['record'\]\[1\]\)"):
        core.cached("bad", {}, lambda: nested)
    assert not list(cache.iterdir())


@pytest.mark.parametrize("optimizer", ["adamw", "sgd"])
def test_train_reduces_the_loss(optimizer):
    core.seed_everything(0)
    x = torch.randn(256, 3)
    y = x @ torch.tensor([1.0, -2.0, 0.5])
    model = torch.nn.Linear(3, 1)

    def batches():
        return [(x[i : i + 64], y[i : i + 64]) for i in range(0, 256, 64)]

    def loss(m, batch):
        return torch.nn.functional.mse_loss(m(batch[0]).squeeze(-1), batch[1])

    history = core.train(
        model, batches, loss, epochs=60, lr=0.05, optimizer=optimizer, progress=False
    )
    assert len(history) == 60 and history[-1] < 0.01 * history[0]
    assert not model.training


def test_train_divides_the_rate_by_ten_after_each_milestone_with_one_optimiser():
    from torch.optim.optimizer import register_optimizer_step_pre_hook

    model = torch.nn.Linear(1, 1)
    seen = []

    def loss(m, batch):
        return m(batch).pow(2).mean()

    def batches():
        return [torch.ones(2, 1)]

    def record(optimiser, args, kwargs):
        seen.append((optimiser.param_groups[0]["lr"], id(optimiser)))

    handle = register_optimizer_step_pre_hook(record)
    try:
        core.train(
            model,
            batches,
            loss,
            epochs=5,
            lr=1.0,
            optimizer="sgd",
            milestones=[2, 4],
            progress=False,
        )
    finally:
        handle.remove()
    assert [lr for lr, _ in seen] == pytest.approx([1.0, 1.0, 0.1, 0.1, 0.01])
    assert len({opt for _, opt in seen}) == 1


def test_train_epoch_is_one_epoch_of_train_and_returns_its_mean_loss():
    """Three epochs of ``train`` equal three ``train_epoch`` calls on one optimiser, weight
    for weight; each call steps in train mode (dropout on) and leaves eval mode."""
    x = torch.randn(32, 4, generator=torch.Generator().manual_seed(0))

    def model():
        torch.manual_seed(1)
        return torch.nn.Sequential(torch.nn.Dropout(0.5), torch.nn.Linear(4, 1))

    def loss(m, batch):
        assert m.training
        return m(batch).pow(2).mean()

    def batches():
        return list(x.split(8))

    a, b = model(), model()
    torch.manual_seed(2)
    history = core.train(a, batches, loss, epochs=3, lr=0.1, progress=False)
    torch.manual_seed(2)
    optimiser = torch.optim.AdamW(b.parameters(), lr=0.1, weight_decay=0.0)
    by_hand = [core.train_epoch(b, optimiser, batches, loss) for _ in range(3)]
    assert by_hand == history and not b.training
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))


def test_train_epoch_clips_and_steps_a_schedule_after_every_step():
    model = torch.nn.Linear(2, 1, bias=False)
    torch.nn.init.zeros_(model.weight)
    optimiser = torch.optim.SGD(model.parameters(), lr=1.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda k: 0.5**k)
    batches = [torch.tensor([[30.0, 40.0]])] * 3  # loss -50 w.x: gradient norm 50 each step

    def loss(m, x):
        return -50 * m(x).sum()

    core.train_epoch(model, optimiser, lambda: batches, loss, clip=1.0, schedule=schedule)
    # clipped to norm 1 along (0.6, 0.8), at rates 1, 0.5, 0.25: 1.75 in all
    assert model.weight.detach().squeeze().tolist() == pytest.approx([0.6 * 1.75, 0.8 * 1.75])
    assert schedule.last_epoch == 3


def test_train_names_the_accepted_optimizers():
    with pytest.raises(ValueError, match="unknown optimizer 'adam'; accepted: adamw, sgd"):
        core.train(torch.nn.Linear(1, 1), list, None, epochs=1, lr=0.1, optimizer="adam")


def test_figure_html_is_offline():
    fragment = core.figure_html(go.Figure(go.Scatter(y=[1, 2])))
    assert "Plotly.newPlot" in fragment
    assert "cdn" not in fragment.lower() and "<script src" not in fragment


def test_offline_renderer_emits_html_and_plotly_mimetype():
    import plotly.io as pio

    core.use_offline_plotly()
    bundle = pio.renderers._build_mime_bundle(go.Figure(go.Bar(y=[1])).to_dict())
    assert "text/html" in bundle and "application/vnd.plotly.v1+json" in bundle


def test_slider_figure_switches_visibility():
    figs = [go.Figure(go.Scatter(y=[k, k + 1]), layout={"title": f"k={k}"}) for k in range(3)]
    twin = core.slider_figure(figs, [0, 1, 2], "k", active=1)
    assert [t.visible for t in twin.data] == [False, True, False]
    steps = twin.layout.sliders[0].steps
    assert [s.label for s in steps] == ["0", "1", "2"]
    assert steps[2].args[0]["visible"] == [False, False, True]
    assert steps[2].args[1]["title.text"] == "k=2"
    with pytest.raises(ValueError, match="one figure per value"):
        core.slider_figure(figs, [0, 1], "k")


def test_alternate_interleaves_methods_and_times_wall_and_cpu():
    order = []
    timings = core.alternate(
        {"A": lambda i: order.append(("A", i)) or i, "B": lambda i: order.append(("B", i)) or -i},
        rounds=3,
    )
    assert order == [("A", 0), ("B", 0), ("A", 1), ("B", 1), ("A", 2), ("B", 2)]
    assert timings["B"].results == [0, -1, -2]
    assert len(timings["A"].wall) == len(timings["A"].cpu) == 3
    assert timings["A"].median_wall >= 0 and timings["A"].median_cpu >= 0
    assert "CPU" in str(timings["A"])
    with pytest.raises(ValueError, match="at least one method"):
        core.alternate({}, 1)


def test_cached_dir_builds_once_checks_every_file_and_rebuilds_damage(cache):
    calls = []

    def build(folder):
        calls.append(1)
        (folder / "weights.bin").write_bytes(bytes(range(256)) * 4)
        (folder / "sub").mkdir()
        (folder / "sub" / "config.json").write_text('{"layers": 2}')

    first = core.cached_dir("model", {"width": 4}, build)
    assert core.cached_dir("model", {"width": 4}, build) == first and len(calls) == 1
    assert (first / "sub" / "config.json").read_text() == '{"layers": 2}'
    assert first.parent == cache and not list(cache.glob("*.tmp"))
    assert core.cached_dir("model", {"width": 5}, build) != first and len(calls) == 2
    blob = bytearray((first / "weights.bin").read_bytes())
    blob[100] ^= 0xFF
    (first / "weights.bin").write_bytes(bytes(blob))
    with pytest.warns(UserWarning, match="corrupt or stale"):
        again = core.cached_dir("model", {"width": 4}, build)
    assert again == first and len(calls) == 3
    assert (again / "weights.bin").read_bytes() == bytes(range(256)) * 4


def test_cached_dir_keeps_nothing_when_the_build_fails(cache):
    def build(folder):
        (folder / "half.bin").write_bytes(b"x")
        raise RuntimeError("build broke")

    with pytest.raises(RuntimeError, match="build broke"):
        core.cached_dir("model", {"width": 4}, build)
    assert not list(cache.iterdir())


def test_threads_sets_and_restores_torch_threads():
    import torch

    before = torch.get_num_threads()
    with core.threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with pytest.raises(RuntimeError, match="inside"), core.threads(1):
        raise RuntimeError("inside")
    assert torch.get_num_threads() == before


def test_plot_draws_each_series_against_x_with_titles_and_log_axes():
    fig = core.plot(
        [1, 10, 100],
        {"a": [1, 2, 3], "b": [3, 2, 1]},
        title="t",
        xlabel="n",
        ylabel="error",
        log_x=True,
        mode="lines+markers",
        colors={"a": "black"},
        height=300,
    )
    assert [trace.name for trace in fig.data] == ["a", "b"]
    assert list(fig.data[1].x) == [1, 10, 100] and list(fig.data[1].y) == [3, 2, 1]
    assert fig.data[0].mode == "lines+markers" and fig.data[0].line.color == "black"
    assert fig.data[1].line.color is None  # the template's colour cycle
    assert fig.layout.title.text == "t" and fig.layout.height == 300
    assert fig.layout.xaxis.title.text == "n" and fig.layout.yaxis.title.text == "error"
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type is None
    assert core.plot([0, 1], {"y": [1, 2]}, log_y=True).layout.yaxis.type == "log"


def test_estimates_figure_groups_bars_with_their_intervals():
    from iclr25.core.stats import Estimate

    def estimate(value, low, high, n):
        return Estimate(value, low, high, n, "bootstrap")

    groups = {
        "a": {"x": estimate(0.5, 0.2, 0.9, 10), "y": estimate(-1.0, np.nan, np.nan, 1)},
        "b": {"x": estimate(0.1, 0.0, 0.3, 4), "y": estimate(0.2, 0.1, 0.4, 4)},
    }
    fig = core.estimates_figure(groups, title="t", ylabel="change", unit="edits")
    assert [trace.name for trace in fig.data] == ["a", "b"]
    assert list(fig.data[0].x) == ["x", "y"] and list(fig.data[0].y) == [0.5, -1.0]
    bars = fig.data[0].error_y
    plus, minus = list(bars.array), list(bars.arrayminus)  # no bar without an interval
    assert plus[0] == pytest.approx(0.4) and minus[0] == pytest.approx(0.3)
    assert plus[1] is None and minus[1] is None
    assert list(fig.data[1].customdata) == [4, 4] and "edits" in fig.data[1].hovertemplate
    assert fig.layout.barmode == "group" and fig.layout.yaxis.title.text == "change"
    assert fig.layout.title.text == "t"


def test_explore_shows_pickers_above_the_live_control(monkeypatch):
    import IPython.display
    import ipywidgets as widgets
    import plotly.graph_objects as go

    shown = []
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.setattr(go.Figure, "show", lambda self, *args, **kwargs: None)
    box = widgets.Text(value="a")
    pick = widgets.Dropdown(options=["a", "b"], value=None)
    pick.observe(lambda c: setattr(box, "value", c["new"]), names="value")
    drawn = []

    def figure(v):
        drawn.append(v)
        return core.plot([0, 1], {"y": [0, 1]}, title=str(v))

    core.explore(figure, ["a", "b"], "letter", live=box, pickers=[pick])
    control = shown[0].widget
    assert control.children[0] is pick and control.children[1] is box
    pick.value = "b"  # the picker sets the live control, which redraws
    assert drawn[-1] == "b"
    bundle = shown[0]._repr_mimebundle_()  # a kernel's front end draws the widget...
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == control.model_id
    assert "make lab" in bundle["text/plain"]  # ...a page without one says how to run it


def test_figures_offer_nothing_that_leaves_the_machine():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # plotly warns of a config option it does not know
        html = core.figure_html(core.plot([0, 1], {"y": [0, 1]}))
    assert '"displaylogo": false' in html and '"showSendToCloud": false' in html
    assert "sendChartToCloud" in html  # in modeBarButtonsToRemove


def test_long_titles_wrap_and_short_ones_stay():
    long = "a title that says a great deal about what the figure shows, " * 2
    fig = core.plot([0, 1], {"y": [0, 1]}, title=long).to_dict()
    fig["layout"]["sliders"] = [{"steps": [{"args": [{}, {"title.text": long}]}]}]
    wrapped = core.plots.wrap_titles(fig)
    lines = wrapped["layout"]["title"]["text"].split("<br>")
    assert len(lines) > 1 and all(len(line) <= core.plots.TITLE_WIDTH for line in lines)
    assert wrapped["layout"]["margin"]["t"] >= 100
    assert "<br>" in wrapped["layout"]["sliders"][0]["steps"][0]["args"][1]["title.text"]
    short = core.plots.wrap_titles(core.plot([0], {"y": [0]}, title="short").to_dict())
    assert short["layout"]["title"]["text"] == "short"


def test_live_controls_show_their_values_and_labels_in_full():
    import ipywidgets as widgets

    short = core.default_control([1, 2, 4], "k", active=1)
    assert isinstance(short, widgets.SelectionSlider) and short.value == 2
    names = ["Lithuania: euro -> finnish markka", "France: euro"]
    long = core.default_control(names, "edit")  # a slider's readout would cut the first
    assert isinstance(long, widgets.Dropdown) and long.layout.width == "max-content"
    assert long.style.description_width == "initial"


def test_a_seed_above_32_bits_is_refused_in_one_line():
    """NumPy's legacy seeding takes 32 bits: every parameter named seed stops there."""
    seed = Param(0, "random seed", low=0)
    assert seed.check("seed", params.MAX_SEED) == 2**32 - 1
    with pytest.raises(ParameterError) as err:
        seed.parse("seed", str(2**32))
    assert str(err.value) == "parameter 'seed' got 4294967296; accepted: a int >= 0 <= 4294967295"
    assert seed.check("other", 2**40) == 2**40  # the bound is the seed's alone
    for chapter in toc.built():  # every chapter's seed parameter has it
        with pytest.raises(ParameterError, match="accepted: a int >= 0 <= 4294967295"):
            core.validate(chapter.module().PARAMETERS, {"seed": 2**32})
