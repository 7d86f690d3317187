"""Evaluation: each method's explanations, timed in alternation and scored for size
and faithfulness; whether SST's explanations are needed, the choice of gamma on
validation, accuracy, the slope over gamma, and tables as the models' inputs."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import torch
from torch import nn

from iclr25 import core, tabular, vision
from iclr25.chapters.sst.baselines import posthoc
from iclr25.chapters.sst.method import Notion, SSTNet, survives

# ---------------------------------------------------------------------------------
# Evaluation: size, faithfulness, time per explanation
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Explained:
    """Explanations of n inputs by one method: predicted classes, masks (n, *shape),
    size (mean share of features), faithfulness (share whose prediction survives one
    fresh fill), the median wall-clock and process-CPU seconds per explanation (the
    prediction included) and, once judged, ``kept``: per input, whether its
    prediction survived the fill."""

    predicted: torch.Tensor
    masks: torch.Tensor
    size: float
    faithfulness: float
    seconds: float
    cpu_seconds: float
    kept: torch.Tensor | None = None

    @property
    def sizes(self) -> torch.Tensor:
        """Per input, the share of the features its explanation keeps."""
        return self.masks.flatten(1).float().mean(1)


Explainer = Callable[[torch.Tensor], tuple[int, torch.Tensor]]
"""One input (without a batch axis) -> its predicted class and explanation mask."""


def sst_explainer(net: SSTNet, tau: float) -> Explainer:
    """SST's explainer: the prediction and the mask of one input, one forward pass."""

    def explain(xi: torch.Tensor) -> tuple[int, torch.Tensor]:
        predicted, mask = net.explain(xi[None], tau)
        return int(predicted[0]), mask[0]

    return explain


def posthoc_explainer(
    model: nn.Module, method: str, notion: Notion, generator: torch.Generator, patch: int = 1
) -> Explainer:
    """A post-hoc search's explainer of ``model``: predict one input, then search."""
    search = posthoc(method, patch)

    def explain(xi: torch.Tensor) -> tuple[int, torch.Tensor]:
        with torch.no_grad():
            target = int(model(xi[None]).argmax())
        return target, search(model, xi, target, notion, generator=generator)

    return explain


def judge(
    model: nn.Module,
    x: torch.Tensor,
    found: Explained,
    notion: Notion,
    generator: torch.Generator,
) -> Explained:
    """``found`` (explanations of ``x`` by one method of ``model``) scored under
    ``notion``: its faithfulness is the share of inputs whose prediction survives one
    fresh fill of the complement; size and timings are kept."""
    kept = survives(model, x, found.masks, found.predicted, notion, generator)
    return dataclasses.replace(found, faithfulness=float(kept.float().mean()), kept=kept)


def compare(
    explainers: Mapping[str, tuple[nn.Module, Explainer]],
    x: torch.Tensor,
    notion: Notion | Mapping[str, Notion],
    generator: torch.Generator,
) -> dict[str, Explained]:
    """Explain every input of ``x`` by every method, timed in alternation
    (:func:`iclr25.core.alternate`: input 0 by each method, then input 1, ...), so a
    load that comes and goes on the machine falls on every method alike; then score
    each method's masks against its own model under ``notion`` (one for all, or one
    per method's name).

    ``explainers`` maps a method's name to the model it explains and its explainer.
    """
    timings = core.alternate(
        {name: (lambda i, f=f: f(x[i])) for name, (_, f) in explainers.items()}, len(x)
    )
    found = {}
    for name, (model, _) in explainers.items():
        timing = timings[name]
        masks = torch.stack([r[1] for r in timing.results])
        unjudged = Explained(
            torch.tensor([r[0] for r in timing.results]),
            masks,
            float(masks.float().mean()),
            float("nan"),
            timing.median_wall,
            timing.median_cpu,
        )
        scored_by = notion if isinstance(notion, Notion) else notion[name]
        found[name] = judge(model, x, unjudged, scored_by, generator)
    return found


def explain_sst(
    net: SSTNet, x: torch.Tensor, tau: float, notion: Notion, generator: torch.Generator
) -> Explained:
    """SST's explanations of ``x``, one input at a time (one forward pass each)."""
    return compare({"SST": (net, sst_explainer(net, tau))}, x, notion, generator)["SST"]


def explain_posthoc(
    model: nn.Module,
    x: torch.Tensor,
    method: str,
    notion: Notion,
    generator: torch.Generator,
    patch: int = 1,
) -> Explained:
    """A post-hoc search's explanations of the model's predictions on ``x``, timed
    (the prediction itself included, as for SST)."""
    explainer = posthoc_explainer(model, method, notion, generator, patch)
    return compare({method: (model, explainer)}, x, notion, generator)[method]


@torch.no_grad()
def needed(
    net: SSTNet, x: torch.Tensor, tau: float, notion: Notion, generator: torch.Generator
) -> torch.Tensor:
    """Per input, whether SST's explanation is non-empty and needed: its mask keeps at
    least one feature, and the empty subset (the whole input filled by ``notion``) does
    not keep the prediction."""
    predicted, masks = net.explain(x, tau)
    empty = torch.zeros_like(masks)
    kept_by_nothing = survives(net, x, empty, predicted, notion, generator)
    return masks.flatten(1).any(1) & ~kept_by_nothing


class Validated(NamedTuple):
    """One gamma's SST-ST on the validation split: the mean size of its explanations,
    their faithfulness, and the share of inputs whose explanation is needed."""

    size: float
    faithfulness: float
    needed: float


def choose_gamma(scores: Mapping[float, Validated], min_faithfulness: float) -> float:
    """The gamma of ``scores`` with the smallest explanations among those at least
    ``min_faithfulness`` faithful (ties: the more faithful, then the smaller gamma); the
    most faithful gamma if none is. Only gammas whose explanations are needed for most
    validation inputs compete (all of them when none is): an empty explanation, or one
    that the empty subset already matches, is faithful whatever it keeps, so its
    faithfulness does not measure an explanation."""
    if not scores:
        raise ValueError("choose_gamma() needs validation scores for at least one gamma")
    explaining = {g: v for g, v in scores.items() if v.needed > 0.5} or dict(scores)
    faithful = {g: v for g, v in explaining.items() if v.faithfulness >= min_faithfulness}
    if not faithful:
        return max(explaining, key=lambda g: (explaining[g].faithfulness, -g))
    return min(faithful, key=lambda g: (faithful[g].size, -faithful[g].faithfulness, g))


@torch.no_grad()
def accuracy(model: nn.Module, split: vision.Split) -> float:
    """Share of ``split`` the model classifies correctly."""
    return float((model(split.x).argmax(-1) == split.y).float().mean())


def slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The least-squares slope b of y = a + b x (``scipy.stats.linregress``)."""
    from scipy.stats import linregress

    if len(xs) != len(ys) or len(xs) < 2 or np.ptp(np.asarray(xs, dtype=float)) == 0:
        raise ValueError(
            f"slope() needs two sequences of equal length >= 2, xs not all equal; got {xs}, {ys}"
        )
    return float(linregress(xs, ys).slope)


# ---------------------------------------------------------------------------------
# Tables as the models' inputs
# ---------------------------------------------------------------------------------


def as_images(table: tabular.Table) -> vision.ImageData:
    """A table's rows (n, d) as n "images" of shape 1 x 1 x d, the inputs the chapter's
    models and fills take (the columns are in [0, 1], min-max scaled by
    :func:`iclr25.tabular.load`, so the fills act on every data set alike)."""
    splits = [
        vision.Split(part.x.view(len(part), 1, 1, -1), part.y)
        for part in (table.train, table.val, table.test)
    ]
    return vision.ImageData(table.name, table.classes, *splits, spec=table.spec)
