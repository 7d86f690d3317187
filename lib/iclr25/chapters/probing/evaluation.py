"""The evaluation: the grid pointing game (confident images, grids, smoothing, GridPG),
the attribution maps it scores (captum), cached per backbone, and one run's summaries
of them (per-grid means, the swap contrast); the claims' intervals are over runs."""

from __future__ import annotations

import hashlib
import math
import warnings
from collections.abc import Mapping, Sequence

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core
from iclr25.chapters.probing.method import (
    BCOS,
    METHODS,
    Backbone,
    BcosLinear,
    BcosMLP,
    Probed,
    _accepted,
    methods_for,
    pooled,
)
from iclr25.core import ParameterError, stats

# ---------------------------------------------------------------------------------
# The grid pointing game
# ---------------------------------------------------------------------------------


def confident_pool(
    probs: Sequence[torch.Tensor],
    y: torch.Tensor,
    per_class: int,
    cells: int,
    classes: Sequence[str],
) -> tuple[dict[int, torch.Tensor], float]:
    """The ``per_class`` most confidently classified test images of each class, over a
    set of probes: only images that every probe classifies correctly (as the official
    script), those whose lowest true-class probability across probes is highest first.
    Returns class -> image indices and the lowest true-class probability among the
    images kept. A grid of ``cells`` cells needs that many classes with at least one
    image kept."""
    true = torch.stack([p.gather(1, y[:, None])[:, 0] for p in probs])
    eligible = torch.stack([p.argmax(1) == y for p in probs]).all(0)
    rank = true.amin(0)
    pool, lowest = {}, 1.0
    for c in range(len(classes)):
        idx = torch.nonzero((y == c) & eligible)[:, 0]
        if len(idx):
            best = idx[rank[idx].argsort(descending=True)[:per_class]]
            pool[c], lowest = best, min(lowest, float(true[:, best].amin()))
    if len(pool) < cells:
        short = [classes[c] for c in range(len(classes)) if c not in pool]
        raise ParameterError(
            f"a grid of {cells} cells needs {cells} classes with confidently classified "
            f"test images; {len(pool)} of {len(classes)} have them "
            f"(short: {', '.join(short) or 'none'}; a smaller grid_size needs fewer classes)"
        )
    return pool, lowest


def make_grid(images: Sequence[torch.Tensor], classes: Sequence[int]) -> torch.Tensor:
    """Tile g x g square images (channels, s, s), row by row: image k, of class
    ``classes[k]``, fills cell k (row k // g, column k % g). g is 2 or 3; the classes
    must be distinct."""
    g = math.isqrt(len(images))
    if g not in (2, 3) or g * g != len(images) or len(classes) != len(images):
        raise ParameterError(
            f"a grid takes 4 (2x2) or 9 (3x3) images with one class each; got "
            f"{len(images)} images and {len(classes)} classes"
        )
    if len(set(int(c) for c in classes)) != len(classes):
        raise ParameterError(f"the classes of a grid must be distinct; got {list(classes)}")
    if any(im.shape[-1] != im.shape[-2] for im in images):
        raise ParameterError(
            f"grid images must be square; got {tuple(images[0].shape[-2:])} and alike"
        )
    rows = [torch.cat(list(images[r * g : (r + 1) * g]), dim=-1) for r in range(g)]
    return torch.cat(rows, dim=-2)


def sample_grids(
    x: torch.Tensor,
    pool: Mapping[int, torch.Tensor],
    n: int,
    size: int,
    rng: np.random.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` grids of ``size`` x ``size`` distinct classes drawn from ``pool`` (class ->
    indices into ``x``), each image drawn at random from its class. Returns the grids
    (n, channels, size * s, size * s) and their classes (n, size * size)."""
    if size not in (2, 3):
        raise ParameterError(f"grid size {size!r}; accepted: 2, 3")
    grids, labels = [], []
    available = sorted(pool)
    for _ in range(n):
        chosen = rng.choice(available, size=size * size, replace=False)
        picks = [x[pool[c][rng.integers(len(pool[c]))]] for c in chosen]
        grids.append(make_grid(picks, chosen))
        labels.append(chosen)
    return torch.stack(grids), torch.as_tensor(np.array(labels))


def _gaussian_blur(maps: torch.Tensor, k: int) -> torch.Tensor:
    """torchvision's GaussianBlur(k, sigma=k/4): separable, reflect padding."""
    r = torch.arange(k, dtype=maps.dtype) - (k - 1) / 2
    kernel = torch.exp(-0.5 * (r / (k / 4)) ** 2)
    kernel = kernel / kernel.sum()
    out = F.pad(maps[:, None], (k // 2,) * 4, mode="reflect")
    out = F.conv2d(out, kernel.view(1, 1, 1, k))
    return F.conv2d(out, kernel.view(1, 1, k, 1))[:, 0]


def smooth(maps: torch.Tensor, kind: str | None) -> torch.Tensor:
    """The official script's smoothing before GridPG: a 5x5 average pool for 224-pixel
    cells, a Gaussian blur of kernel 129 on 672-pixel grids for Input x Gradient.
    Scaled to our 16-pixel cells: a 3x3 average pool ("avg"), a Gaussian of kernel
    about 19% of the grid side ("gauss"), or none (None)."""
    if kind is None:
        return maps
    if kind == "avg":
        return F.avg_pool2d(maps[:, None], 3, stride=1, padding=1)[:, 0]
    if kind == "gauss":
        k = max(3, round(maps.shape[-1] * 129 / 672) | 1)
        return _gaussian_blur(maps, k)
    raise _accepted("smoothing", kind, ("avg", "gauss", "None"))


def gridpg(maps: torch.Tensor, cells: torch.Tensor, size: int, smoothing: str | None = "avg"):
    """GridPG of attribution maps (n, H, W) for the class of cell ``cells[i]`` of a
    ``size`` x ``size`` grid: smoothed, negatives set to zero, the share of the map's
    mass inside that cell (official ``get_pg_val``). H must equal W."""
    maps = torch.as_tensor(maps, dtype=torch.float64)
    if maps.ndim == 2:
        maps = maps[None]
    h, w = maps.shape[-2:]
    if h != w:
        raise ParameterError(f"GridPG needs square maps; got {h}x{w}")
    maps = smooth(maps, smoothing).clamp(min=0)
    side = h // size
    cells = torch.as_tensor(cells).reshape(-1)
    inside = torch.stack(
        [
            m[
                (c // size) * side : (c // size + 1) * side,
                (c % size) * side : (c % size + 1) * side,
            ].sum()
            for m, c in zip(maps, cells.tolist())
        ]
    )
    return (inside / (maps.sum((-2, -1)) + 1e-12)).numpy()


COSTLY = ("ig", "lime")
"""The methods that cost tens of forward passes per map: run on the first grids only."""
SMOOTHING = {"ixg": "gauss"}
"""The smoothing of each method before GridPG (default "avg"), as the official script."""

# ---------------------------------------------------------------------------------
# Attributions (captum)
# ---------------------------------------------------------------------------------


class FeatureCache:
    """Pooled backbone features of inputs already seen (keyed by their bytes): LIME
    evaluates the same perturbed grids for every probe on one backbone."""

    def __init__(self, backbone: Backbone) -> None:
        self.backbone, self.store = backbone, {}

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        key = hashlib.sha1(x.detach().numpy().tobytes()).hexdigest() + str(tuple(x.shape))
        if key not in self.store:
            self.store[key] = pooled(self.backbone, x.detach())
        return self.store[key]


def _set_detach(model: nn.Module, on: bool) -> None:
    for module in model.modules():
        if isinstance(module, BcosLinear):
            module.detach = on


def attribute(
    model: Probed,
    method: str,
    x: torch.Tensor,
    targets: torch.Tensor,
    *,
    ig_steps: int = 32,
    lime_samples: int = 200,
    patch: int = 4,
    cache: FeatureCache | None = None,
    seed: int = 0,
) -> torch.Tensor:
    """Attribution maps (n, H, W), summed over channels, of ``model``'s logit
    ``targets[i]`` for input ``x[i]``, by captum's implementation of ``method``.
    IG integrates from a black image; GradCAM reads the last convolution and is
    upsampled bilinearly; LIME perturbs ``patch`` x ``patch`` patches (each image's
    draws seeded by ``seed`` + its index, so every probe sees the same ones)."""
    from captum._utils.models.linear_model import SkLearnRidge
    from captum.attr import (
        LRP,
        GuidedBackprop,
        InputXGradient,
        IntegratedGradients,
        LayerAttribution,
        LayerGradCam,
        Lime,
    )

    known = (*METHODS, BCOS)
    if method not in known:
        raise _accepted("method", method, known)
    is_bcos = isinstance(model.probe, BcosMLP)
    if (method == "lrp" and is_bcos) or (method == BCOS and not is_bcos):
        raise ParameterError(
            f"method {method!r} does not apply to this probe; accepted: "
            f"{', '.join(methods_for('bcos2' if is_bcos else 'linear'))}"
        )
    model.eval()
    targets = torch.as_tensor(targets).reshape(-1)
    inp = x.clone().requires_grad_(True)
    if method == "ixg":
        out = InputXGradient(model).attribute(inp, target=targets)
    elif method == BCOS:
        _set_detach(model, True)
        try:
            out = InputXGradient(model).attribute(inp, target=targets)
        finally:
            _set_detach(model, False)
    elif method == "ig":
        ig = IntegratedGradients(model)
        out = ig.attribute(inp, target=targets, n_steps=ig_steps, internal_batch_size=256)
    elif method == "gbp":
        with warnings.catch_warnings():  # captum warns at every call that it hooks ReLUs
            warnings.simplefilter("ignore", UserWarning)
            out = GuidedBackprop(model).attribute(inp, target=targets)
    elif method == "gradcam":
        cam = LayerGradCam(model, model.backbone.last_conv).attribute(inp, target=targets)
        out = LayerAttribution.interpolate(cam, tuple(x.shape[-2:]), interpolate_mode="bilinear")
    elif method == "lrp":
        out = LRP(model).attribute(inp, target=targets)
    else:
        h, w = x.shape[-2:]
        mask = torch.arange((h // patch) * (w // patch)).reshape(h // patch, w // patch)
        mask = mask.repeat_interleave(patch, 0).repeat_interleave(patch, 1)[None, None]
        features = cache if cache is not None else FeatureCache(model.backbone)
        lime = Lime(
            lambda z: model.probe(features(z) * model.scale),
            interpretable_model=SkLearnRidge(alpha=1.0),
        )
        rows = []
        with torch.no_grad():
            for i in range(len(x)):
                torch.manual_seed(seed + i)
                rows.append(
                    lime.attribute(
                        x[i : i + 1],
                        target=int(targets[i]),
                        feature_mask=mask,
                        n_samples=lime_samples,
                        perturbations_per_eval=lime_samples,
                    )
                )
        out = torch.cat(rows)
    return out.detach().sum(1)


def evaluate_probe(
    model: Probed,
    grids: torch.Tensor,
    classes: torch.Tensor,
    methods: Sequence[str],
    *,
    costly_grids: int,
    ig_steps: int,
    lime_samples: int,
    cache: FeatureCache | None = None,
    batch: int = 54,
) -> dict[str, np.ndarray]:
    """GridPG of every cell of every grid, per method: method -> scores (grid-major).
    IG and LIME, the costly methods, run on the first ``costly_grids`` grids only. Maps
    are computed ``batch`` at a time (the same maps; large batches of 48-pixel grids
    cost more in memory traffic than in arithmetic)."""
    size = math.isqrt(classes.shape[1])
    scores = {}
    for method in methods:
        n = min(costly_grids, len(grids)) if method in COSTLY else len(grids)
        x = grids[:n].repeat_interleave(size * size, 0)
        targets = classes[:n].reshape(-1)
        cells = torch.arange(size * size).repeat(n)
        maps = torch.cat(
            [
                attribute(
                    model,
                    method,
                    x[i : i + batch],
                    targets[i : i + batch],
                    ig_steps=ig_steps,
                    lime_samples=lime_samples,
                    cache=cache,
                    seed=i,
                )
                for i in range(0, len(x), batch)
            ]
        )
        scores[method] = gridpg(maps, cells, size, SMOOTHING.get(method, "avg"))
    return scores


def _digest(*tensors: torch.Tensor) -> str:
    digest = hashlib.sha256()
    for t in tensors:
        digest.update(t.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def score_probes(
    models: Mapping[tuple, Probed],
    grids: torch.Tensor,
    classes: torch.Tensor,
    methods: Sequence[str],
    *,
    costly_grids: int,
    ig_steps: int,
    lime_samples: int,
) -> dict[tuple, dict[str, np.ndarray]]:
    """:func:`evaluate_probe` of every model (all on one backbone, which LIME's
    :class:`FeatureCache` shares), each with the methods of :func:`methods_for` its
    probe; cached by the models' weights, the grids and the settings."""
    kinds = {
        key: "bcos2" if isinstance(m.probe, BcosMLP) else "linear" for key, m in models.items()
    }
    config = {
        "models": [[repr(key), _digest(*m.state_dict().values())] for key, m in models.items()],
        "grids": _digest(grids, classes),
        "methods": list(methods),
        "costly_grids": costly_grids,
        "ig_steps": ig_steps,
        "lime_samples": lime_samples,
    }

    def build() -> list[dict[str, torch.Tensor]]:
        cache = FeatureCache(next(iter(models.values())).backbone)
        with core.threads(1):
            return [
                {
                    m: torch.from_numpy(v)
                    for m, v in evaluate_probe(
                        model,
                        grids,
                        classes,
                        methods_for(kinds[key], methods),
                        costly_grids=costly_grids,
                        ig_steps=ig_steps,
                        lime_samples=lime_samples,
                        cache=cache,
                    ).items()
                }
                for key, model in models.items()
            ]

    stored = core.cached("probing-gridpg", config, build)
    return {key: {m: v.numpy() for m, v in s.items()} for key, s in zip(models, stored)}


def per_grid(scores: np.ndarray, cells: int) -> np.ndarray:
    """GridPG scores (grid-major, ``cells`` per grid) -> each grid's mean over its
    cells: the unit of the chapter's intervals (the cells of a grid share an image)."""
    return np.asarray(scores, dtype=float).reshape(-1, cells).mean(1)


def summarise(scores: np.ndarray, cells: int) -> stats.Estimate:
    """One run's mean GridPG with its 95% interval over its grids (:func:`per_grid`)."""
    return stats.mean(per_grid(scores, cells))


def summarise_runs(runs: Sequence[np.ndarray], cells: int) -> stats.Estimate:
    """Mean GridPG with its 95% interval over runs: ``runs`` holds each run's scores
    (grid-major), whose mean over grids (:func:`per_grid`) is the run's statistic."""
    means = [per_grid(scores, cells).mean() for scores in runs]
    return stats.over_runs(means, items=sum(len(per_grid(s, cells)) for s in runs))


def swap_contrast(loss_swaps: np.ndarray, backbone_swaps: np.ndarray) -> float:
    """One run's mean |effect| of a change of loss minus that of a change of backbone:
    arrays (swaps, grids), one row per single swap (CE -> BCE for one backbone and
    probe; SimCLR -> supervised for one probe and loss), each row a per-grid GridPG
    difference on the run's grids, the same grids and equal numbers of rows in both.
    A swap's effect is its row's mean over grids; its size, the absolute value, so
    that effects of opposite signs do not cancel."""
    a, b = np.asarray(loss_swaps, float), np.asarray(backbone_swaps, float)
    if a.shape != b.shape or a.ndim != 2:
        raise ValueError(
            f"swap_contrast() needs two (swaps, grids) arrays of one shape, got {a.shape} "
            f"and {b.shape}"
        )
    return float(np.abs(a.mean(1)).mean() - np.abs(b.mean(1)).mean())
