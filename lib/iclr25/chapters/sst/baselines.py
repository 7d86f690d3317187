"""The post-hoc baselines, searches on a normally trained model: SIS, the
Anchors-style greedy search, and IG and gradient top-k grown until sufficient."""

from __future__ import annotations

import functools
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

from iclr25.chapters.sst.method import BASELINES, Notion, outcomes, sufficient

# ---------------------------------------------------------------------------------
# Post-hoc baselines on a normally trained model
# ---------------------------------------------------------------------------------


def _prefix_masks(ranking: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Masks of the top-0 (empty), top-1, ..., top-d features of ``ranking`` (best first)."""
    d = len(ranking)
    position = torch.empty(d, dtype=torch.long)
    position[ranking] = torch.arange(d)
    return (position[None, :] < torch.arange(d + 1)[:, None]).view(d + 1, *shape)


def smallest_sufficient_prefix(
    model: nn.Module,
    x: torch.Tensor,
    ranking: torch.Tensor,
    target: int,
    notion: Notion,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The shortest prefix of ``ranking`` (features, most important first) that is
    sufficient; all features if none shorter is (the whole input always is)."""
    masks = _prefix_masks(ranking, tuple(x.shape))
    ok = sufficient(model, x, masks, target, notion, generator)
    ok[-1] = True
    return masks[int(ok.nonzero()[0])]


SIS_FILL = Notion("baseline")
"""SIS's own fill: it searches with removed features set to the zero baseline, whatever
notion its subsets are judged by afterwards."""


def sis(
    model: nn.Module,
    x: torch.Tensor,
    target: int,
    notion: Notion = SIS_FILL,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Sufficient input subsets (Carter et al., 2019), the first SIS of ``x``.

    BackSelect: starting from all features, repeatedly remove the feature whose removal
    (its value replaced by the zero baseline) leaves the highest probability of the
    target; the reverse removal order ranks the features. The SIS is the smallest prefix
    of that ranking that is sufficient under the zero baseline. SIS searches under its
    own fill: ``notion`` is accepted for a common signature and ignored, so under the
    probabilistic and robust notions its subsets are judged by a fill it never saw.
    """
    d = x.numel()
    kept = torch.ones(d, dtype=torch.bool)
    removed: list[int] = []
    for _ in range(d - 1):
        candidates = kept.nonzero().flatten()
        masks = kept.repeat(len(candidates), 1)
        masks[torch.arange(len(candidates)), candidates] = False
        probability = outcomes(
            model, x, masks.view(-1, *x.shape), target, SIS_FILL, generator
        ).probability
        drop = int(candidates[probability.argmax()])
        kept[drop] = False
        removed.append(drop)
    ranking = torch.tensor([int(kept.nonzero()[0]), *removed[::-1]])
    return smallest_sufficient_prefix(model, x, ranking, target, SIS_FILL, generator)


def superpixels(shape: tuple[int, ...], patch: int) -> torch.Tensor:
    """For inputs of ``shape`` (channels, height, width), the superpixel of each feature
    (flattened): square ``patch`` x ``patch`` blocks shared by the channels. A patch that
    does not divide the height and the width, or a 1-pixel-high table row, gives every
    feature its own superpixel."""
    c, h, w = shape
    if patch < 1:
        raise ValueError(f"patch must be a positive int, got {patch!r}")
    if patch == 1 or h % patch or w % patch:
        return torch.arange(c * h * w)
    rows = torch.arange(h)[:, None] // patch
    cols = torch.arange(w)[None, :] // patch
    return (rows * (w // patch) + cols).expand(c, h, w).flatten()


def anchors(
    model: nn.Module,
    x: torch.Tensor,
    target: int,
    notion: Notion,
    generator: torch.Generator | None = None,
    patch: int = 1,
) -> torch.Tensor:
    """An Anchors-style greedy search (Ribeiro et al., 2018, beam width 1).

    From the empty anchor, add the superpixel (``patch`` x ``patch`` blocks, as Anchors
    segments images into superpixels; single features for tables) whose anchor has the
    highest precision under the notion's fill (ties broken by the target's probability)
    until the anchor is sufficient.
    """
    groups = superpixels(tuple(x.shape), patch)
    members = F.one_hot(groups).T.bool()  # (superpixels, features)
    anchor = torch.zeros(len(members), dtype=torch.bool)
    empty = torch.zeros(1, *x.shape, dtype=torch.bool)
    if sufficient(model, x, empty, target, notion, generator)[0]:
        return empty[0]
    while True:
        candidates = (~anchor).nonzero().flatten()
        if len(candidates) == 0:
            return members[anchor].any(0).view(x.shape)
        chosen = anchor.repeat(len(candidates), 1)
        chosen[torch.arange(len(candidates)), candidates] = True
        masks = (chosen.float() @ members.float()).bool()
        result = outcomes(model, x, masks.view(-1, *x.shape), target, notion, generator)
        best = int((result.precision + 1e-3 * result.probability).argmax())
        anchor = chosen[best]
        if result.precision[best] >= notion.precision:
            return masks[best].view(x.shape)


def attribution_topk(
    model: nn.Module,
    x: torch.Tensor,
    target: int,
    notion: Notion,
    method: str = "IG",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Features ranked by an attribution for the target -- integrated gradients from a
    zero baseline (``"IG"``) or the plain input gradient (``"gradient"``), both from
    captum -- then the smallest sufficient top-k."""
    from captum.attr import IntegratedGradients, Saliency

    inputs = x[None].clone().requires_grad_(True)
    if method == "IG":
        attribution = IntegratedGradients(model).attribute(inputs, target=target, n_steps=32)
    elif method == "gradient":
        attribution = Saliency(model).attribute(inputs, target=target, abs=True)
    else:
        raise ValueError(f"unknown attribution {method!r}; accepted: IG, gradient")
    ranking = torch.argsort(attribution.flatten(), descending=True, stable=True)
    return smallest_sufficient_prefix(model, x, ranking, target, notion, generator)


def posthoc(method: str, patch: int = 1) -> Callable[..., torch.Tensor]:
    """The search named ``method`` (one of BASELINES) as f(model, x, target, notion, gen);
    ``patch`` is the side of Anchors' superpixels on images."""
    searches = {
        "SIS": sis,
        "Anchors": functools.partial(anchors, patch=patch),
        "IG": functools.partial(attribution_topk, method="IG"),
        "gradient": functools.partial(attribution_topk, method="gradient"),
    }
    if method not in searches:
        raise ValueError(f"unknown baseline {method!r}; accepted: {', '.join(BASELINES)}")
    return searches[method]
