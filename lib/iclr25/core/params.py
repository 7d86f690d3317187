"""Parameters, seeds, devices and the chapter entry point.

A notebook's tagged ``parameters`` cell holds plain scalars; :func:`chapter` checks them
against the chapter's ``PARAMETERS`` (:class:`Param`, one-line errors), seeds every
generator, installs the offline plotly renderer and starts the claims record.
"""

from __future__ import annotations

import contextlib
import os
import random
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from iclr25.core import claims
from iclr25.core.plots import use_offline_plotly

if TYPE_CHECKING:  # torch is imported lazily: `python -m iclr25 list` should be quick
    import torch

Scalar = int | float | str | bool


# ---------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------


class ParameterError(ValueError):
    """A parameter that is unknown, of the wrong type or out of range (one-line message)."""


MAX_SEED = 2**32 - 1
"""The largest seed, and the upper bound of every parameter named ``seed``: NumPy's
legacy seeding, which :func:`seed_everything` calls, takes 32 bits, and a larger seed
would pass the check only to fail in the chapter's setup with a traceback."""


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

    def bounds(self, name: str) -> tuple[float | None, float | None]:
        """The lowest and highest values accepted for parameter ``name``: a seed's
        highest is at most :data:`MAX_SEED`."""
        if name != "seed":
            return self.low, self.high
        return self.low, MAX_SEED if self.high is None else min(self.high, MAX_SEED)

    def accepted(self, name: str = "") -> str:
        """What this parameter, named ``name``, accepts, in words."""
        if self.choices is not None:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        low, high = self.bounds(name)
        words = [
            f">= {_shown(low)}" if low is not None else "",
            f"<= {_shown(high)}" if high is not None else "",
        ]
        return " ".join([f"a {self.type.__name__}", *filter(None, words)])

    def check(self, name: str, value: Any) -> Scalar:
        """Return ``value`` as this parameter's type, or raise :class:`ParameterError`."""
        ok_type = isinstance(value, self.type) and not (
            self.type is not bool and isinstance(value, bool)
        )
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok_type = float(value), True
        if not ok_type:
            got = f"{value!r} ({type(value).__name__})"
            raise ParameterError(f"parameter {name!r} got {got}; accepted: {self.accepted(name)}")
        low, high = self.bounds(name)
        in_range = (self.choices is None or value in self.choices) and (
            (low is None or value >= low) and (high is None or value <= high)
        )
        if not in_range:
            raise ParameterError(
                f"parameter {name!r} got {value!r}; accepted: {self.accepted(name)}"
            )
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
                f"parameter {name!r} got {text!r}; accepted: {self.accepted(name)}"
            ) from None
        return self.check(name, value)


def _shown(bound: float) -> str:
    """A bound as the reader typed it: a whole number in full (``4294967295``, not
    ``4.29497e+09``), a fraction in its shortest form."""
    return str(bound) if isinstance(bound, int) else f"{bound:g}"


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
    """``"auto"`` is CUDA when present, else the CPU; ``"cpu"``/``"cuda"`` as asked. On
    CUDA, sets ``CUBLAS_WORKSPACE_CONFIG`` (unless set already) so cuBLAS is
    deterministic."""
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ParameterError(
            "device 'cuda' was asked for but no CUDA device is present; "
            "accepted here: 'auto', 'cpu'"
        )
    if device == "cuda":
        # cuBLAS gives the same sums run after run only with a fixed workspace, which
        # must be set before its first call (torch's reproducibility notes)
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
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
    claims.start(slug, module.CLAIMS, params)
    rng = seed_everything(int(params["seed"]))
    return types.SimpleNamespace(**params, rng=rng, torch_device=get_device(str(params["device"])))
