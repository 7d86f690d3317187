"""The shared substrate every chapter stands on.

A chapter notebook starts with a tagged ``parameters`` cell of plain scalars and then
calls :func:`chapter`, which checks those parameters against the chapter module's
``PARAMETERS`` schema, seeds every generator and installs the offline plotly
renderer. The rest of this module is what chapters share:

* :class:`Param` and :func:`validate` -- the parameter schema and its one-line errors;
* :func:`seed_everything`, :func:`get_device` -- determinism and device choice;
* :func:`cached`, :func:`cached_dir` -- trained artefacts (a value, or a folder of files)
  keyed by a hash of their configuration;
* :func:`train` -- a small training loop with a tqdm progress bar;
* :func:`plot` -- one or more y series against x as a plotly line figure;
* :func:`explore` -- a live ipywidgets control and its static plotly-slider twin;
* :func:`claim`, :func:`claims_table`, :func:`read_claims` -- the claims a chapter
  tests, decided by its module's ``CLAIMS`` registry of :class:`ClaimSpec` entries
  (:mod:`iclr25.core.claims`), shown as a table and recorded in the executed notebook
  for the tests and the scoreboard; :mod:`iclr25.core.stats` gives their intervals;
* :func:`alternate` -- methods timed in alternation (A, B, A, B), wall and CPU time.

Only the plotly renderer, the claim record and the alternating timer are written by
hand: plotly's own renderers either emit a mimetype the static site cannot show or load
plotly.js from a CDN, no library records paper-versus-measured claims, and timeit runs
one statement at a time, not two methods in alternation with their CPU time.
"""

from __future__ import annotations

import contextlib
import hashlib
import html
import io
import json
import os
import pickle
import random
import tempfile
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25.core import claims, stats
from iclr25.core.claims import (
    AFTER_THE_RUN,
    CLAIM_MIME,
    KINDS,
    OUTCOMES,
    STATUSES,
    Bound,
    Claim,
    ClaimSpec,
    Gap,
    Margin,
    book_problems,
    check_bound,
    claim,
    claim_from_record,
    claim_rows,
    claims_table,
    counts,
    describe_rule,
    format_value,
    json_value,
    read_claims,
    tally,
)

if TYPE_CHECKING:  # torch is imported lazily: `python -m iclr25 list` should be quick
    import plotly.graph_objects as go
    import torch

Scalar = int | float | str | bool

# ---------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------


class ParameterError(ValueError):
    """A parameter that is unknown, of the wrong type or out of range (one-line message)."""


@dataclass(frozen=True)
class Param:
    """One chapter parameter: its book default, what it means and what is accepted.

    The type of the parameter is the type of its default; an ``int`` is accepted
    where a ``float`` is expected. ``parser`` (optional) reads a structured string such
    as ``"XOR,AND"``: it raises ``ValueError`` saying what is accepted when it cannot.
    """

    default: Scalar
    help: str
    low: float | None = None
    high: float | None = None
    choices: tuple[Scalar, ...] | None = None
    parser: Callable[[Any], object] | None = None

    @property
    def type(self) -> type:
        return type(self.default)

    def accepted(self) -> str:
        """What this parameter accepts, in words."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        bounds = [
            f">= {self.low:g}" if self.low is not None else "",
            f"<= {self.high:g}" if self.high is not None else "",
        ]
        return " ".join([f"a {self.type.__name__}", *filter(None, bounds)])

    def check(self, name: str, value: Any) -> Scalar:
        """Return ``value`` as this parameter's type, or raise :class:`ParameterError`."""
        ok_type = isinstance(value, self.type) and not (
            self.type is not bool and isinstance(value, bool)
        )
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok_type = float(value), True
        if not ok_type:
            got = f"{value!r} ({type(value).__name__})"
            raise ParameterError(f"parameter {name!r} got {got}; accepted: {self.accepted()}")
        in_range = (self.choices is None or value in self.choices) and (
            (self.low is None or value >= self.low) and (self.high is None or value <= self.high)
        )
        if not in_range:
            raise ParameterError(f"parameter {name!r} got {value!r}; accepted: {self.accepted()}")
        if self.parser is not None:
            try:
                self.parser(value)
            except ValueError as err:
                raise ParameterError(f"parameter {name!r}: {err}") from None
        return value

    def parse(self, name: str, text: str) -> Scalar:
        """Parse a command-line string ``text`` into this parameter's type and check it."""
        try:
            if self.type is bool:
                value: Any = {"true": True, "false": False}[text.strip().lower()]
            elif self.type is str:
                value = text
            else:
                value = float(text) if self.type is float else int(text)
        except (KeyError, ValueError):
            raise ParameterError(
                f"parameter {name!r} got {text!r}; accepted: {self.accepted()}"
            ) from None
        return self.check(name, value)


def validate(
    schema: Mapping[str, Param], values: Mapping[str, Any], *, complete: bool = False
) -> dict[str, Scalar]:
    """Check ``values`` against ``schema``; return the schema's defaults updated by them.

    Unknown names are errors (papermill only warns about them). With ``complete``,
    every parameter of the schema must be present in ``values`` too.
    """
    unknown = sorted(set(values) - set(schema))
    if unknown:
        raise ParameterError(f"unknown parameter {unknown[0]!r}; accepted: {', '.join(schema)}")
    missing = sorted(set(schema) - set(values)) if complete else []
    if missing:
        raise ParameterError(f"parameter {missing[0]!r} is not set by the parameters cell")
    checked = {name: p.default for name, p in schema.items()}
    checked.update({name: schema[name].check(name, v) for name, v in values.items()})
    return checked


def _notebook_parameters(namespace: Mapping[str, Any]) -> dict[str, Any]:
    """The names a notebook has defined so far that could be parameters."""
    hidden: set[str] = set()
    try:  # IPython's own names (In, Out, exit, ...) are not the chapter's
        hidden = set(get_ipython().user_ns_hidden)  # type: ignore[name-defined]  # noqa: F821
    except NameError:
        pass
    return {
        k: v
        for k, v in namespace.items()
        if not k.startswith("_")
        and k not in hidden
        and not isinstance(v, types.ModuleType)
        and not callable(v)
    }


# ---------------------------------------------------------------------------------
# Seeds and devices
# ---------------------------------------------------------------------------------


def seed_everything(seed: int) -> np.random.Generator:
    """Seed Python, NumPy and torch; return a NumPy generator seeded with ``seed``."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    return np.random.default_rng(seed)


@contextlib.contextmanager
def threads(n: int) -> Iterator[None]:
    """Let torch use ``n`` CPU threads inside the block, then restore the count.

    Training a small model on one thread is as fast as on several, does not collapse
    when other processes share the cores, and gives weights that do not depend on the
    machine's core count (threads sum in a different order). The book's build
    (:mod:`iclr25.build`) runs each chapter with ``OMP_NUM_THREADS`` set to its share of
    the cores (one, on two cores), torch's default inside the chapter.
    """
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def get_device(device: str = "auto") -> torch.device:
    """``"auto"`` is CUDA when present, else the CPU; ``"cpu"``/``"cuda"`` as asked."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            "device 'cuda' was asked for but no CUDA device is present; "
            "accepted here: 'auto', 'cpu'"
        )
    return torch.device(device)


# ---------------------------------------------------------------------------------
# The chapter entry point
# ---------------------------------------------------------------------------------


def chapter(slug: str, namespace: Mapping[str, Any]) -> types.SimpleNamespace:
    """Start chapter ``slug`` from its notebook's namespace (pass ``globals()``).

    Checks the parameters the notebook defined (its parameters cell and whatever
    papermill injected) against ``iclr25.chapters.<slug>.PARAMETERS``: an unknown name, a wrong
    type or an out-of-range value stops the run with one line. Then seeds everything,
    installs the offline plotly renderer and starts a fresh claims record, decided by the
    module's ``CLAIMS`` registry (:mod:`iclr25.core.claims`). Returns the
    parameters as attributes, plus ``rng`` (a seeded NumPy generator) and
    ``torch_device`` (the resolved device).
    """
    from iclr25 import toc

    module = toc.get(slug).module()
    params = validate(module.PARAMETERS, _notebook_parameters(namespace), complete=True)
    use_offline_plotly()
    claims.start(slug, module.CLAIMS)
    rng = seed_everything(int(params["seed"]))
    return types.SimpleNamespace(**params, rng=rng, torch_device=get_device(str(params["device"])))


# ---------------------------------------------------------------------------------
# Cache of trained artefacts
# ---------------------------------------------------------------------------------


def cache_dir() -> Path:
    """``$ICLR25_CACHE``, else ``~/.cache/iclr25``."""
    return Path(os.environ.get("ICLR25_CACHE", Path.home() / ".cache" / "iclr25"))


def cache_path(name: str, config: Mapping[str, Any]) -> Path:
    """Where the artefact ``name`` built from ``config`` (JSON-serialisable) is kept."""
    key = hashlib.sha256(json.dumps([name, config], sort_keys=True).encode()).hexdigest()
    return cache_dir() / f"{name}-{key[:16]}.pt"


CACHE_LOG = "ICLR25_CACHE_LOG"
"""Environment variable: a file to which :func:`cached` and :func:`cached_dir` append
one line per artefact, ``hit <name>`` or ``built <name>``; the book's build sets it to
report whether each chapter's models came from the cache."""


def _log_cache(event: str, name: str) -> None:
    log = os.environ.get(CACHE_LOG)
    if log:
        with open(log, "a") as f:
            f.write(f"{event} {name}\n")


def _unsafe_leaf(value: Any, where: str = "value") -> tuple[str, Any]:
    """The first part of ``value`` that is neither a tensor, a plain number, string or
    None, nor a dict, list or tuple of those, with its path (``value['state'][2]``); the
    value itself if none is found (a safe load refused it for another reason)."""
    import torch

    if isinstance(value, dict):
        parts = [(f"{where}[{k!r}]", v) for k, v in value.items()]
    elif isinstance(value, list | tuple):
        parts = [(f"{where}[{i}]", v) for i, v in enumerate(value)]
    elif value is None or isinstance(value, torch.Tensor | bool | int | float | str):
        return "", None
    else:
        return where, value
    for part, v in parts:
        found, leaf = _unsafe_leaf(v, part)
        if found:
            return found, leaf
    return ("", None) if where != "value" else (where, value)


def cached(name: str, config: Mapping[str, Any], build: Callable[[], Any]) -> Any:
    """Load the artefact for ``config``, or ``build()`` it and store it.

    The file holds the SHA-256 of its payload, then the payload (``torch.save`` of
    ``{"config", "value"}``). A file whose digest or config does not match --
    truncated, corrupt or a hash collision -- is rebuilt, never trusted. Loads use
    ``weights_only=True``, so a value must be tensors in plain containers (dicts, lists,
    numbers, strings; a model's ``state_dict()``); anything else is refused before it
    is written. Writes are atomic (temporary file, then rename).
    """
    import torch

    path = cache_path(name, config)
    config = json.loads(json.dumps(config))  # as it reads back
    if path.is_file():
        blob = path.read_bytes()
        digest, payload = blob[:32], blob[32:]
        if hashlib.sha256(payload).digest() == digest:
            stored = torch.load(io.BytesIO(payload), weights_only=True)
            if stored.get("config") == config:
                _log_cache("hit", name)
                return stored["value"]
        warnings.warn(f"cache file {path} is corrupt or stale; rebuilding it", stacklevel=2)
    value = build()
    _log_cache("built", name)
    buffer = io.BytesIO()
    torch.save({"config": config, "value": value}, buffer)
    payload = buffer.getvalue()
    try:
        torch.load(io.BytesIO(payload), weights_only=True)
    except pickle.UnpicklingError as err:
        where, leaf = _unsafe_leaf(value)
        raise TypeError(
            f"cached({name!r}) can only keep tensors in plain containers, "
            f"not {type(leaf).__name__} (at {where})"
        ) from err
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(hashlib.sha256(payload).digest() + payload)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return value


def cached_dir(name: str, config: Mapping[str, Any], build: Callable[[Path], None]) -> Path:
    """The directory of files ``build(folder)`` writes for ``config``, built once and kept.

    For artefacts that a library saves as files (a model's ``save_pretrained``), where
    :func:`cached`'s single ``torch.save`` does not fit. ``build`` fills a fresh temporary
    folder; a ``MANIFEST.json`` recording ``config`` and the SHA-256 of every file is
    written last, and the folder is renamed into place (atomic). A directory whose
    manifest, config or any file's digest does not match is rebuilt, never trusted.
    """
    import shutil

    path = cache_path(name, config).with_suffix("")
    config = json.loads(json.dumps(config))  # as it reads back

    def digests(folder: Path) -> dict[str, str]:
        found = {}
        for f in sorted(folder.rglob("*")):
            if f.is_file() and f.name != "MANIFEST.json":
                with f.open("rb") as handle:
                    found[str(f.relative_to(folder))] = hashlib.file_digest(
                        handle, "sha256"
                    ).hexdigest()
        return found

    def intact(folder: Path) -> bool:
        try:
            manifest = json.loads((folder / "MANIFEST.json").read_text())
        except (OSError, ValueError):
            return False
        return manifest.get("config") == config and manifest.get("files") == digests(folder)

    if path.is_dir():
        if intact(path):
            _log_cache("hit", name)
            return path
        warnings.warn(f"cache directory {path} is corrupt or stale; rebuilding it", stacklevel=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name, suffix=".tmp"))
    try:
        build(tmp)
        (tmp / "MANIFEST.json").write_text(json.dumps({"config": config, "files": digests(tmp)}))
        _log_cache("built", name)
        if path.is_dir():
            shutil.rmtree(path)
        os.replace(tmp, path)
    except OSError:
        if not intact(path):  # another process may have put an intact copy in place first
            raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return path


# ---------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------


def train(
    model: torch.nn.Module,
    batches: Callable[[], Iterable[Any]],
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    *,
    epochs: int,
    lr: float,
    weight_decay: float = 0.0,
    optimizer: str = "adamw",
    milestones: Sequence[int] = (),
    desc: str = "training",
    progress: bool = True,
) -> list[float]:
    """Minimise ``loss_fn(model, batch)`` over ``epochs`` passes of ``batches()``.

    ``optimizer`` is ``"adamw"`` (decoupled weight decay) or ``"sgd"`` (momentum 0.9,
    L2 weight decay). The rate is ``lr``, divided by 10 after each epoch listed in
    ``milestones`` (a step schedule, one optimiser throughout: torch's ``MultiStepLR``).
    ``batches`` is called once per epoch (so it can reshuffle). Returns the mean loss of
    each epoch. Batches must already be on the model's device.
    """
    import torch
    from tqdm.auto import tqdm

    optimisers = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=lr, weight_decay=weight_decay),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9, weight_decay=weight_decay),
    }
    if optimizer not in optimisers:
        raise ValueError(f"unknown optimizer {optimizer!r}; accepted: {', '.join(optimisers)}")
    optimiser = optimisers[optimizer](model.parameters())
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimiser, list(milestones), gamma=0.1)
    history: list[float] = []
    bar = tqdm(range(epochs), desc=desc, disable=not progress)
    for _ in bar:
        history.append(train_epoch(model, optimiser, batches, loss_fn))
        schedule.step()
        bar.set_postfix(loss=f"{history[-1]:.4g}")
    return history


def train_epoch(
    model: torch.nn.Module,
    optimiser: torch.optim.Optimizer,
    batches: Callable[[], Iterable[Any]],
    loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor],
    *,
    clip: float | None = None,
    schedule: torch.optim.lr_scheduler.LRScheduler | None = None,
) -> float:
    """One pass of ``batches()``, an optimiser step per batch, in train mode; the model is
    left in eval mode. Returns the epoch's mean loss. ``clip`` caps the gradients' global
    norm; ``schedule`` steps after every optimiser step (a per-step rate, e.g. a warm-up).
    :func:`train` repeats it; a chapter whose loop decides after each epoch (train to an
    accuracy, keep the best validation epoch, time epochs against each other) calls it
    directly."""
    import torch

    model.train()
    losses = []
    for batch in batches():
        optimiser.zero_grad()
        loss = loss_fn(model, batch)
        loss.backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        optimiser.step()
        if schedule is not None:
            schedule.step()
        losses.append(loss.item())
    model.eval()
    return float(np.mean(losses))


# ---------------------------------------------------------------------------------
# Figures: the offline plotly renderer
# ---------------------------------------------------------------------------------


def figure_html(fig: go.Figure | dict) -> str:
    """A figure as an HTML fragment that draws with the page's own plotly.js (no CDN)."""
    import plotly.io as pio

    return pio.to_html(
        fig, full_html=False, include_plotlyjs=False, include_mathjax=False, auto_play=False
    )


def use_offline_plotly() -> None:
    """Make ``fig.show()`` emit plotly's mimetype (for Jupyter) and offline HTML (for the book)."""
    import plotly.io as pio
    from plotly.io.base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
            return {"text/html": figure_html(fig_dict)}

    pio.renderers["iclr25"] = BookRenderer()
    pio.renderers.default = "plotly_mimetype+iclr25"
    pio.templates.default = "plotly_white"


def plot(
    x: Sequence[float],
    ys: Mapping[str, Sequence[float]],
    *,
    title: str = "",
    xlabel: str = "",
    ylabel: str = "",
    log_x: bool = False,
    log_y: bool = False,
    mode: str = "lines",
    colors: Mapping[str, str] | None = None,
    height: int | None = None,
) -> go.Figure:
    """A line figure: each series ``ys[name]`` against ``x``, named in the legend.

    ``mode`` is plotly's (``"lines"``, ``"lines+markers"``), ``colors`` maps a series
    to its colour (default: the template's colour cycle), ``log_x``/``log_y`` make an
    axis logarithmic. Further traces and layout can be added to the returned figure.
    """
    import plotly.graph_objects as go

    fig = go.Figure()
    for name, y in ys.items():
        fig.add_scatter(x=x, y=y, name=name, mode=mode, line_color=(colors or {}).get(name))
    fig.update_xaxes(title_text=xlabel, type="log" if log_x else None)
    fig.update_yaxes(title_text=ylabel, type="log" if log_y else None)
    return fig.update_layout(title=title, height=height)


# ---------------------------------------------------------------------------------
# Widgets: a live control and its static twin
# ---------------------------------------------------------------------------------


def slider_figure(
    figures: Sequence[go.Figure], values: Sequence[Scalar], label: str, active: int = 0
) -> go.Figure:
    """One figure holding every figure of ``figures``, a plotly slider choosing which shows.

    The slider switches trace visibility and the title, so it works on a static page
    with no kernel: the static twin of a live control.
    """
    import plotly.graph_objects as go

    if len(figures) != len(values) or not figures:
        raise ValueError("slider_figure needs one figure per value, and at least one")
    combined = go.Figure(layout=figures[active].layout)
    owner: list[int] = []
    for k, fig in enumerate(figures):
        for trace in fig.data:
            combined.add_trace(trace)
            owner.append(k)
    for trace, k in zip(combined.data, owner):
        trace.visible = k == active
    steps = [
        dict(
            method="update",
            label=str(v),
            args=[{"visible": [k == i for k in owner]}, {"title.text": fig.layout.title.text}],
        )
        for i, (v, fig) in enumerate(zip(values, figures))
    ]
    combined.update_layout(
        sliders=[
            dict(active=active, steps=steps, pad=dict(t=50), currentvalue=dict(prefix=f"{label}: "))
        ]
    )
    return combined


def explore(
    make_figure: Callable[[Any], go.Figure],
    values: Sequence[Scalar],
    label: str,
    *,
    live: Any = None,
    active: int = 0,
    pickers: Sequence[Any] = (),
) -> None:
    """Show a live control redrawing ``make_figure(value)``, then its static slider twin.

    ``live`` is the ipywidgets control for Jupyter (default: a selection slider over
    ``values``); it calls ``make_figure`` afresh on every change, so it may offer
    values the twin does not. ``pickers`` are widgets shown above it that set it (a
    menu that fills a text box, say). The twin is :func:`slider_figure` over ``values`` and
    is what a reader of the static site moves. Returns nothing, so that a cell ending
    in the call does not show the twin a second time.
    """
    import ipywidgets as widgets
    from IPython.display import display

    twin = slider_figure([make_figure(v) for v in values], values, label, active)
    control = (
        live
        if live is not None
        else widgets.SelectionSlider(
            options=list(values),
            value=values[active],
            description=label,
            continuous_update=False,
            style={"description_width": "initial"},
        )
    )
    out = widgets.Output()

    def redraw(change: Mapping[str, Any]) -> None:
        with out:
            out.clear_output(wait=True)
            make_figure(change["new"]).show()

    control.observe(redraw, names="value")
    note = widgets.HTML(
        "<em>Live control: redraws with a running kernel. "
        "On the static page, use the slider of the figure below.</em>"
    )
    display(widgets.VBox([note, *pickers, control, out]))
    twin.show()


# ---------------------------------------------------------------------------------
# Timing: methods measured in alternation
# ---------------------------------------------------------------------------------


@dataclass
class Timing:
    """The wall-clock and process-CPU seconds of each call of one method."""

    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    results: list[Any] = field(default_factory=list)

    @property
    def median_wall(self) -> float:
        return float(np.median(self.wall))

    @property
    def median_cpu(self) -> float:
        return float(np.median(self.cpu))

    def __str__(self) -> str:
        n = len(self.wall)
        return f"{self.median_wall:.3g} s wall, {self.median_cpu:.3g} s CPU (median of {n})"


def alternate(methods: Mapping[str, Callable[[int], Any]], rounds: int) -> dict[str, Timing]:
    """Time each method ``rounds`` times in alternation: A(0), B(0), A(1), B(1), ...

    A load that comes and goes on the machine then falls on every method alike, and the
    medians compare them fairly. Each call's wall time (``perf_counter``) and process CPU
    time (``process_time``, all threads) are kept, with its result.
    """
    import time

    if rounds < 1 or not methods:
        raise ValueError("alternate() needs at least one method and one round")
    timings = {name: Timing() for name in methods}
    for i in range(rounds):
        for name, method in methods.items():
            wall, cpu = time.perf_counter(), time.process_time()
            result = method(i)
            timings[name].wall.append(time.perf_counter() - wall)
            timings[name].cpu.append(time.process_time() - cpu)
            timings[name].results.append(result)
    return timings
