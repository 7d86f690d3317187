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
* :func:`explore` -- a live ipywidgets control and its static plotly-slider twin;
* :func:`claim`, :func:`claims_table`, :func:`read_claims` -- the claims a chapter
  tests, shown as a table and recorded in the executed notebook for the tests.

Only the plotly renderer and the claim record are written by hand: plotly's own
renderers either emit a mimetype the static site cannot show or load plotly.js from a
CDN, and no library records paper-versus-measured claims.
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
        bounds = [f">= {self.low:g}" if self.low is not None else "",
                  f"<= {self.high:g}" if self.high is not None else ""]
        return " ".join([f"a {self.type.__name__}", *filter(None, bounds)])

    def check(self, name: str, value: Any) -> Scalar:
        """Return ``value`` as this parameter's type, or raise :class:`ParameterError`."""
        ok_type = isinstance(value, self.type) and not (
            self.type is not bool and isinstance(value, bool))
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok_type = float(value), True
        if not ok_type:
            raise ParameterError(
                f"parameter {name!r} got {value!r} ({type(value).__name__}); accepted: {self.accepted()}")
        in_range = (self.choices is None or value in self.choices) and (
            (self.low is None or value >= self.low) and (self.high is None or value <= self.high))
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
                f"parameter {name!r} got {text!r}; accepted: {self.accepted()}") from None
        return self.check(name, value)


def validate(schema: Mapping[str, Param], values: Mapping[str, Any], *,
             complete: bool = False) -> dict[str, Scalar]:
    """Check ``values`` against ``schema``; return the schema's defaults updated by them.

    Unknown names are errors (papermill only warns about them). With ``complete``,
    every parameter of the schema must be present in ``values`` too.
    """
    unknown = sorted(set(values) - set(schema))
    if unknown:
        raise ParameterError(
            f"unknown parameter {unknown[0]!r}; accepted: {', '.join(schema)}")
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
    return {k: v for k, v in namespace.items()
            if not k.startswith("_") and k not in hidden
            and not isinstance(v, types.ModuleType) and not callable(v)}


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
    machine's core count (threads sum in a different order).
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
        raise ParameterError("device 'cuda' was asked for but no CUDA device is present; "
                             "accepted here: 'auto', 'cpu'")
    return torch.device(device)


# ---------------------------------------------------------------------------------
# The chapter entry point
# ---------------------------------------------------------------------------------

_CURRENT: dict[str, Any] = {"slug": None, "claims": []}


def chapter(slug: str, namespace: Mapping[str, Any]) -> types.SimpleNamespace:
    """Start chapter ``slug`` from its notebook's namespace (pass ``globals()``).

    Checks the parameters the notebook defined (its parameters cell and whatever
    papermill injected) against ``iclr25.<slug>.PARAMETERS``: an unknown name, a wrong
    type or an out-of-range value stops the run with one line. Then seeds everything,
    installs the offline plotly renderer and starts a fresh claims record. Returns the
    parameters as attributes, plus ``rng`` (a seeded NumPy generator) and
    ``torch_device`` (the resolved device).
    """
    from iclr25 import chapters

    schema = chapters.get(slug).module().PARAMETERS
    params = validate(schema, _notebook_parameters(namespace), complete=True)
    use_offline_plotly()
    _CURRENT.update(slug=slug, claims=[])
    rng = seed_everything(int(params["seed"]))
    return types.SimpleNamespace(**params, rng=rng,
                                 torch_device=get_device(str(params["device"])))


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
                return stored["value"]
        warnings.warn(f"cache file {path} is corrupt or stale; rebuilding it", stacklevel=2)
    value = build()
    buffer = io.BytesIO()
    torch.save({"config": config, "value": value}, buffer)
    payload = buffer.getvalue()
    try:
        torch.load(io.BytesIO(payload), weights_only=True)
    except pickle.UnpicklingError as err:
        raise TypeError(f"cached({name!r}) can only keep tensors in plain containers, "
                        f"not {type(value).__name__}") from err
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
                    found[str(f.relative_to(folder))] = hashlib.file_digest(handle, "sha256").hexdigest()
        return found

    def intact(folder: Path) -> bool:
        try:
            manifest = json.loads((folder / "MANIFEST.json").read_text())
        except (OSError, ValueError):
            return False
        return manifest.get("config") == config and manifest.get("files") == digests(folder)

    if path.is_dir():
        if intact(path):
            return path
        warnings.warn(f"cache directory {path} is corrupt or stale; rebuilding it", stacklevel=2)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=path.name, suffix=".tmp"))
    try:
        build(tmp)
        (tmp / "MANIFEST.json").write_text(json.dumps({"config": config, "files": digests(tmp)}))
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


def train(model: torch.nn.Module, batches: Callable[[], Iterable[Any]],
          loss_fn: Callable[[torch.nn.Module, Any], torch.Tensor], *, epochs: int,
          lr: float, weight_decay: float = 0.0, optimizer: str = "adamw",
          desc: str = "training", progress: bool = True) -> list[float]:
    """Minimise ``loss_fn(model, batch)`` over ``epochs`` passes of ``batches()``.

    ``optimizer`` is ``"adamw"`` (decoupled weight decay) or ``"sgd"`` (momentum 0.9,
    L2 weight decay). ``batches`` is called once per epoch (so it can reshuffle).
    Returns the mean loss of each epoch. Batches must already be on the model's device.
    """
    import torch
    from tqdm.auto import tqdm

    optimisers = {"adamw": lambda ps: torch.optim.AdamW(ps, lr=lr, weight_decay=weight_decay),
                  "sgd": lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9,
                                                    weight_decay=weight_decay)}
    if optimizer not in optimisers:
        raise ValueError(f"unknown optimizer {optimizer!r}; accepted: {', '.join(optimisers)}")
    optimiser = optimisers[optimizer](model.parameters())
    history: list[float] = []
    model.train()
    bar = tqdm(range(epochs), desc=desc, disable=not progress)
    for _ in bar:
        losses = []
        for batch in batches():
            optimiser.zero_grad()
            loss = loss_fn(model, batch)
            loss.backward()
            optimiser.step()
            losses.append(loss.item())
        history.append(float(np.mean(losses)))
        bar.set_postfix(loss=f"{history[-1]:.4g}")
    model.eval()
    return history


# ---------------------------------------------------------------------------------
# Figures: the offline plotly renderer
# ---------------------------------------------------------------------------------


def figure_html(fig: go.Figure | dict) -> str:
    """A figure as an HTML fragment that draws with the page's own plotly.js (no CDN)."""
    import plotly.io as pio

    return pio.to_html(fig, full_html=False, include_plotlyjs=False,
                       include_mathjax=False, auto_play=False)


def use_offline_plotly() -> None:
    """Make ``fig.show()`` emit both plotly's mimetype (for Jupyter) and offline HTML (for the book)."""
    import plotly.io as pio
    from plotly.io.base_renderers import MimetypeRenderer

    class BookRenderer(MimetypeRenderer):
        def to_mimebundle(self, fig_dict: dict) -> dict[str, str]:
            return {"text/html": figure_html(fig_dict)}

    pio.renderers["iclr25"] = BookRenderer()
    pio.renderers.default = "plotly_mimetype+iclr25"
    pio.templates.default = "plotly_white"


# ---------------------------------------------------------------------------------
# Widgets: a live control and its static twin
# ---------------------------------------------------------------------------------


def slider_figure(figures: Sequence[go.Figure], values: Sequence[Scalar],
                  label: str, active: int = 0) -> go.Figure:
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
    steps = [dict(method="update", label=str(v),
                  args=[{"visible": [k == i for k in owner]},
                        {"title.text": fig.layout.title.text}])
             for i, (v, fig) in enumerate(zip(values, figures))]
    combined.update_layout(sliders=[dict(active=active, steps=steps, pad=dict(t=50),
                                         currentvalue=dict(prefix=f"{label}: "))])
    return combined


def explore(make_figure: Callable[[Any], go.Figure], values: Sequence[Scalar], label: str,
            *, live: Any = None, active: int = 0) -> go.Figure:
    """Show a live control redrawing ``make_figure(value)``, then its static slider twin.

    ``live`` is the ipywidgets control for Jupyter (default: a selection slider over
    ``values``); it calls ``make_figure`` afresh on every change, so it may offer
    values the twin does not. The twin is :func:`slider_figure` over ``values`` and
    is what a reader of the static site moves. Returns the twin.
    """
    import ipywidgets as widgets
    from IPython.display import display

    twin = slider_figure([make_figure(v) for v in values], values, label, active)
    control = live if live is not None else widgets.SelectionSlider(
        options=list(values), value=values[active], description=label,
        continuous_update=False, style={"description_width": "initial"})
    out = widgets.Output()

    def redraw(change: Mapping[str, Any]) -> None:
        with out:
            out.clear_output(wait=True)
            make_figure(change["new"]).show()

    control.observe(redraw, names="value")
    note = widgets.HTML("<em>Live control: redraws with a running kernel. "
                        "On the static page, use the slider of the figure below.</em>")
    display(widgets.VBox([note, control, out]))
    twin.show()
    return twin


# ---------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------

CLAIM_MIME = "application/vnd.iclr25.claim+json"


@dataclass
class Claim:
    """One of the paper's claims as a chapter tests it.

    ``status`` is ``"holds"``, ``"known gap"`` (does not hold at our scale, for the
    stated reason) or ``"FAILED"`` (does not hold and no reason was declared).
    """

    chapter: str
    id: str
    statement: str
    paper: str
    measured: str
    holds: bool
    gap: str | None = None
    status: str = field(init=False)

    def __post_init__(self) -> None:
        self.status = "holds" if self.holds else ("known gap" if self.gap else "FAILED")


_STATUS_STYLE = {"holds": "color:#1a7f37", "known gap": "color:#9a6700",
                 "FAILED": "color:#cf222e;font-weight:bold"}


def _claim_rows(claims: Iterable[Claim]) -> str:
    rows = []
    for c in claims:
        note = f"<br><small>{html.escape(c.gap)}</small>" if c.gap and not c.holds else ""
        rows.append(
            f"<tr><td><code>{html.escape(c.id)}</code></td><td>{html.escape(c.statement)}</td>"
            f"<td>{html.escape(c.paper)}</td><td>{html.escape(c.measured)}</td>"
            f"<td style='{_STATUS_STYLE[c.status]}'>{c.status}{note}</td></tr>")
    head = "<tr><th>claim</th><th>statement</th><th>paper</th><th>measured here</th><th>status</th></tr>"
    return f"<table class='iclr25-claims'>{head}{''.join(rows)}</table>"


def claim(id: str, statement: str, *, paper: str, measured: str | float, holds: bool,
          gap: str | None = None) -> Claim:
    """Record and show one claim: the paper's figure beside ours, and whether it holds.

    ``holds`` is computed by the chapter from this run with a bound fixed in advance.
    A claim that does not hold at our scale passes ``gap`` (the reason); it is then
    shown and recorded as a known gap, never as holding.
    """
    from IPython.display import display

    if _CURRENT["slug"] is None:
        raise RuntimeError("claim() before chapter(): start the chapter first")
    if not isinstance(measured, str):
        measured = f"{measured:.4g}"
    c = Claim(_CURRENT["slug"], id, statement, paper, measured, bool(holds), gap)
    _CURRENT["claims"].append(c)
    display({"text/html": _claim_rows([c]), CLAIM_MIME: asdict(c)}, raw=True)
    return c


def claims_table() -> list[Claim]:
    """Show every claim recorded so far in this chapter as one table; return them."""
    from IPython.display import HTML, display

    claims: list[Claim] = list(_CURRENT["claims"])
    counts = {s: sum(c.status == s for c in claims) for s in _STATUS_STYLE}
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    display(HTML(f"<p><strong>{len(claims)} claims:</strong> {summary}</p>{_claim_rows(claims)}"))
    return claims


def read_claims(notebook: str | Path | Mapping[str, Any]) -> list[Claim]:
    """The claims recorded in an executed notebook (a path or an nbformat dict)."""
    if not isinstance(notebook, Mapping):
        notebook = json.loads(Path(notebook).read_text())
    found = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", []):
            record = output.get("data", {}).get(CLAIM_MIME)
            if record is not None:
                record = dict(record)
                record.pop("status")
                found.append(Claim(**record))
    return found
