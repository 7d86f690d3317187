"""The method: losses and barriers along linear paths, the optimisers of inputs
(bypass, free optimisation, FVO, targeted adversarial examples), rounds of bypasses
along a piecewise-linear path, and the official postprocess and the detector's AUC."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25.core import ParameterError

# ---------------------------------------------------------------------------------
# Checking what is asked
# ---------------------------------------------------------------------------------


def as_batch(model: nn.Module, x: torch.Tensor, name: str = "image") -> torch.Tensor:
    """``x`` as a batch (n, C, H, W) on the model's device; a one-line error when the
    model does not take its shape (the model's ``in_shape``, when it has one)."""
    if not isinstance(x, torch.Tensor) or x.dim() not in (3, 4):
        got = tuple(x.shape) if isinstance(x, torch.Tensor) else type(x).__name__
        raise ParameterError(f"{name} must be a tensor (C, H, W) or (n, C, H, W), got {got}")
    x = x.unsqueeze(0) if x.dim() == 3 else x
    shape = getattr(model, "in_shape", None)
    if shape is not None and tuple(x.shape[1:]) != tuple(shape):
        raise ParameterError(
            f"{name} has shape {tuple(x.shape[1:])}; the model accepts images of "
            f"shape {tuple(shape)}"
        )
    return x.detach().to(next(model.parameters()).device, torch.float32)


def _check_count(name: str, value: int, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ParameterError(f"{name} must be an int >= {low}, got {value!r}")
    return int(value)


def pair_class(model: nn.Module, a: torch.Tensor, c: torch.Tensor) -> int:
    """The class both images of a pair are predicted as; a one-line error if they
    differ (mode connectivity joins inputs with the same prediction)."""
    a, c = as_batch(model, a, "A"), as_batch(model, c, "C")
    if len(a) != 1 or len(c) != 1:
        raise ParameterError("a pair is two single images A and C (C, H, W)")
    with torch.no_grad():
        ka, kc = int(model(a).argmax()), int(model(c).argmax())
    if ka != kc:
        raise ParameterError(
            f"A is predicted as class {ka} and C as class {kc}; accepted: a pair "
            "that the model predicts as one class"
        )
    return ka


# ---------------------------------------------------------------------------------
# Losses along linear paths
# ---------------------------------------------------------------------------------


def cross_entropy(model: nn.Module, x: torch.Tensor, target: torch.Tensor | int) -> torch.Tensor:
    """CE of class ``target`` (one int, or one per image) for each image of ``x``."""
    target = torch.as_tensor(target, device=x.device).long().expand(len(x))
    return F.cross_entropy(model(x), target, reduction="none")


@torch.no_grad()
def path_losses(
    model: nn.Module,
    start: torch.Tensor,
    end: torch.Tensor,
    target: torch.Tensor | int,
    steps: int = 250,
    chunk: int = 8192,
) -> np.ndarray:
    """CE of the class at ``steps`` points (1 - t) start + t end, t = 0 .. 1 evenly,
    for each of the n pairs of rows of ``start`` and ``end``: an (n, steps) array.
    t = 0 and t = 1 give the endpoints exactly (official: 1,000 points for figures,
    250 for statistics)."""
    steps = _check_count("steps", steps, 2)
    start, end = as_batch(model, start, "start"), as_batch(model, end, "end")
    n = len(start)
    target = torch.as_tensor(target, device=start.device).long().expand(n)
    t = torch.linspace(0, 1, steps, device=start.device).view(1, steps, 1, 1, 1)
    points = ((1 - t) * start[:, None] + t * end[:, None]).flatten(0, 1)
    labels = target.repeat_interleave(steps)
    losses = [
        F.cross_entropy(model(points[i : i + chunk]), labels[i : i + chunk], reduction="none")
        for i in range(0, len(points), chunk)
    ]
    return torch.cat(losses).view(n, steps).cpu().double().numpy()


class Barrier(NamedTuple):
    """The loss along one path: its maximum (the barrier), the gap (maximum minus the
    larger endpoint loss) and where along the path the maximum lies."""

    max: float
    gap: float
    argmax: int


def barrier(losses: np.ndarray) -> Barrier:
    """Barrier max, gap and position of the loss along one path (official
    ``find_barrier`` and ``plot_statistics``)."""
    losses = np.asarray(losses, dtype=float)
    top = int(np.argmax(losses))
    return Barrier(float(losses[top]), float(losses[top] - max(losses[0], losses[-1])), top)


def linear_path(
    model: nn.Module, a: torch.Tensor, c: torch.Tensor, steps: int = 1000
) -> tuple[np.ndarray, Barrier]:
    """The CE of the pair's class along the straight line from A to C, and its
    barrier. A and C must be predicted as one class."""
    steps = _check_count("steps", steps, 2)
    k = pair_class(model, a, c)
    losses = path_losses(model, a, c, k, steps)[0]
    return losses, barrier(losses)


# ---------------------------------------------------------------------------------
# Optimising inputs: bypass, free optimisation, FVO, adversarial examples
# ---------------------------------------------------------------------------------


def total_variation(x: torch.Tensor) -> torch.Tensor:
    """Per image, the sum of absolute differences of neighbouring pixels (the official
    ``_high_freq_penalty``)."""
    dx = (x[..., :, 1:] - x[..., :, :-1]).abs().flatten(1).sum(1)
    dy = (x[..., 1:, :] - x[..., :-1, :]).abs().flatten(1).sum(1)
    return dx + dy


def project_out(g: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """Each row of ``g`` without its component along the same row of ``v``:
    g - (g.v / v.v) v, so that it is orthogonal to v."""
    gf, vf = g.flatten(1), v.flatten(1)
    coef = (gf * vf).sum(1) / (vf * vf).sum(1).clamp_min(1e-30)
    return (gf - coef[:, None] * vf).view_as(g)


class Bypass(NamedTuple):
    """Optimised barrier points B', and per point the cosine between the whole move
    B' - B and the path direction C - A (the projection makes each gradient
    orthogonal to C - A, but Adam rescales it per pixel, so the step is not)."""

    point: torch.Tensor
    along: np.ndarray


def bypass(
    model: nn.Module,
    start: torch.Tensor,
    end: torch.Tensor,
    point: torch.Tensor,
    target: torch.Tensor | int,
    *,
    steps: int = 1024,
    lr: float = 0.005,
    mse: float = 0.1,
    tv: float = 1e-8,
) -> Bypass:
    """Move barrier points B (rows of ``point``) off the segments start -> end: Adam
    (lr 0.005, 1,024 steps) on CE + mse mean((x - B)^2) + tv TV(x - B), each gradient
    projected orthogonal to end - start (official ``bypass_barrier``)."""
    steps = _check_count("steps", steps, 1)
    anchor = as_batch(model, point, "B")
    v = as_batch(model, end, "C") - as_batch(model, start, "A")
    x = anchor.clone().requires_grad_(True)
    optimiser = torch.optim.Adam([x], lr=lr)
    for _ in range(steps):
        optimiser.zero_grad()
        dev = x - anchor
        loss = cross_entropy(model, x, target) + mse * dev.pow(2).flatten(1).mean(1)
        (loss + tv * total_variation(dev)).sum().backward()
        with torch.no_grad():
            x.grad.copy_(project_out(x.grad, v))
        optimiser.step()
    move = (x.detach() - anchor).flatten(1)
    cos = (move * v.flatten(1)).sum(1) / (move.norm(dim=1) * v.flatten(1).norm(dim=1) + 1e-30)
    return Bypass(x.detach(), cos.abs().cpu().numpy())


def optimize_point(
    model: nn.Module,
    x: torch.Tensor,
    target: torch.Tensor | int,
    *,
    steps: int = 4096,
    lr: float = 0.05,
    weight_decay: float = 1e-7,
    threshold: float = 5e-4,
) -> tuple[torch.Tensor, np.ndarray]:
    """Free optimisation of inputs (official ``optimize_point``, the bypass used for
    untrained models): Adam on CE alone until each input's CE < ``threshold`` or
    ``steps``. Returns the inputs and their CE."""
    steps = _check_count("steps", steps, 1)
    x = as_batch(model, x).clone().requires_grad_(True)
    out, done = x.detach().clone(), torch.zeros(len(x), dtype=torch.bool, device=x.device)
    optimiser = torch.optim.Adam([x], lr=lr, weight_decay=weight_decay)
    for _ in range(steps):
        optimiser.zero_grad()
        ce = cross_entropy(model, x, target)
        new = (ce.detach() < threshold) & ~done
        out[new], done = x.detach()[new], done | new
        if done.all():
            break
        ce.sum().backward()
        optimiser.step()
    out[~done] = x.detach()[~done]
    with torch.no_grad():
        return out, cross_entropy(model, out, target).cpu().numpy()


def feature_visualization(
    model: nn.Module,
    target: torch.Tensor | Sequence[int],
    shape: Sequence[int],
    *,
    steps: int = 8192,
    lr: float = 0.05,
    weight_decay: float = 1e-7,
    threshold: float = 5e-4,
    noise: float = 0.01,
    tv: float = 0.0,
    generator: torch.Generator | None = None,
) -> tuple[torch.Tensor, np.ndarray]:
    """Synthetic inputs, one per entry of ``target`` (official
    ``feature_visualization``): from ``noise`` N(0, 1), Adam (lr 0.05, weight decay
    1e-7) on CE (+ tv TV(x)) until CE < ``threshold`` or ``steps``, keeping each
    input's best. Returns the inputs and their CE."""
    steps = _check_count("steps", steps, 1)
    device = next(model.parameters()).device
    target = torch.as_tensor(target, device=device).long().view(-1)
    start = noise * torch.randn((len(target), *shape), generator=generator)
    x = as_batch(model, start.to(device)).clone().requires_grad_(True)
    best, best_ce = x.detach().clone(), torch.full((len(target),), float("inf"), device=device)
    done = torch.zeros(len(target), dtype=torch.bool, device=device)
    optimiser = torch.optim.Adam([x], lr=lr, weight_decay=weight_decay)
    for _ in range(steps):
        optimiser.zero_grad()
        (cross_entropy(model, x, target) + tv * total_variation(x)).sum().backward()
        optimiser.step()
        with torch.no_grad():
            ce = cross_entropy(model, x, target)
        better = (ce < best_ce) & ~done
        best[better], best_ce[better] = x.detach()[better], ce[better]
        done |= best_ce < threshold
        if done.all():
            break
    return best, best_ce.cpu().numpy()


def adversarial(
    model: nn.Module,
    source: torch.Tensor,
    target: torch.Tensor | int,
    stop: torch.Tensor | np.ndarray | float,
    *,
    steps: int = 512,
    lr: float = 0.005,
    mse: float = 0.1,
    tv: float = 1e-8,
) -> tuple[torch.Tensor, np.ndarray]:
    """Targeted adversarial examples (official ``create_adversarial``): each source
    image x0 is moved by Adam on CE(target) + mse mean((x - x0)^2) + tv TV(x - x0),
    and stopped once (after 32 steps) its CE falls below ``stop`` (the official
    statistics stop at the real image's loss). Returns the examples and their CE."""
    steps = _check_count("steps", steps, 1)
    carrier = as_batch(model, source, "source")
    stop = torch.as_tensor(np.asarray(stop, dtype=np.float32), device=carrier.device)
    stop = stop.expand(len(carrier))
    x = carrier.clone().requires_grad_(True)
    out, done = carrier.clone(), torch.zeros(len(x), dtype=torch.bool, device=x.device)
    optimiser = torch.optim.Adam([x], lr=lr)
    for i in range(steps):
        optimiser.zero_grad()
        ce = cross_entropy(model, x, target)
        dev = x - carrier
        loss = ce + mse * dev.pow(2).flatten(1).mean(1) + tv * total_variation(dev)
        loss.sum().backward()
        optimiser.step()
        new = (ce.detach() < stop) & ~done if i > 32 else torch.zeros_like(done)
        out[new], done = x.detach()[new], done | new
        if done.all():
            break
    out[~done] = x.detach()[~done]
    with torch.no_grad():
        return out, cross_entropy(model, out, target).cpu().numpy()


# ---------------------------------------------------------------------------------
# Rounds of bypasses along a piecewise-linear path
# ---------------------------------------------------------------------------------


@dataclass
class Route:
    """One pair's piecewise-linear path A -> B'_1 -> ... -> C as rounds add nodes.

    ``positions`` place each node on [0, 1] (a new node inherits the position of
    the barrier point it came from, as in the paper's Fig. 7); ``curves[r]`` is the
    (position, loss) curve after round r (round 0: the straight line); ``detours``,
    ``pixels`` and ``along`` hold, for each bypass, ||B' - B|| / ||end - start||,
    the largest pixel change max |B' - B| / max |B| (the paper's Fig. 1 measure) and
    the cosine of B' - B with end - start."""

    target: int
    nodes: list[torch.Tensor]
    positions: list[float]
    curves: list[tuple[np.ndarray, np.ndarray]] = field(default_factory=list)
    detours: list[float] = field(default_factory=list)
    pixels: list[float] = field(default_factory=list)
    along: list[float] = field(default_factory=list)
    segments: list[np.ndarray] = field(default_factory=list)

    @property
    def endpoint(self) -> float:
        """The larger of the two endpoint losses."""
        return float(max(self.curves[0][1][0], self.curves[0][1][-1]))

    @property
    def maxes(self) -> list[float]:
        """The path's maximum loss after each round."""
        return [float(loss.max()) for _, loss in self.curves]

    @property
    def gaps(self) -> list[float]:
        """The path's gap (maximum minus the larger endpoint loss) after each round."""
        return [m - self.endpoint for m in self.maxes]


def _evaluate(model: nn.Module, routes: list[Route], steps: int) -> None:
    """Append each route's current (position, loss) curve, segment by segment."""
    jobs = [(r, s) for r in routes for s in range(len(r.nodes) - 1)]
    losses = path_losses(
        model,
        torch.stack([r.nodes[s] for r, s in jobs]),
        torch.stack([r.nodes[s + 1] for r, s in jobs]),
        torch.tensor([r.target for r, _ in jobs]),
        steps,
    )
    t = np.linspace(0, 1, steps)
    for r in routes:
        r.segments = []
    for (r, s), loss in zip(jobs, losses):
        r.segments.append(loss)
    for r in routes:
        pos = [p0 + t * (p1 - p0) for p0, p1 in zip(r.positions[:-1], r.positions[1:])]
        r.curves.append((np.concatenate(pos), np.concatenate(r.segments)))


def connect(
    model: nn.Module,
    a: torch.Tensor,
    c: torch.Tensor,
    target: Sequence[int] | torch.Tensor,
    rounds: int,
    *,
    points: int = 250,
    split: str = "worst",
    tolerance: float | None = None,
    free: bool = False,
    **optimiser: float,
) -> list[Route]:
    """Paths between the rows of ``a`` and ``c`` (class ``target`` each), with
    ``rounds`` rounds of bypasses: each round takes the barrier point of the worst
    segment (``split="worst"``) or of every segment (``"all"``, the official Fig. 7)
    and replaces it by its bypass (:func:`bypass`, or :func:`optimize_point` when
    ``free``), skipping paths whose gap is already <= ``tolerance``. Each segment is
    evaluated at ``points`` points; ``optimiser`` goes to the optimiser (steps, lr...)."""
    rounds = _check_count("rounds", rounds, 0)
    points = _check_count("points", points, 2)
    if split not in ("worst", "all"):
        raise ParameterError(f"split must be 'worst' or 'all', got {split!r}")
    a, c = as_batch(model, a, "A"), as_batch(model, c, "C")
    target = torch.as_tensor(target).long().view(-1).expand(len(a)).tolist()
    routes = [Route(k, [ai, ci], [0.0, 1.0]) for ai, ci, k in zip(a, c, target)]
    _evaluate(model, routes, points)
    t = np.linspace(0, 1, points)
    for _ in range(rounds):
        jobs = []
        for r in routes:
            if tolerance is not None and r.gaps[-1] <= tolerance:
                continue
            worst = int(np.argmax([seg.max() for seg in r.segments]))
            chosen = [worst] if split == "worst" else range(len(r.segments))
            jobs += [(r, s, float(t[int(np.argmax(r.segments[s]))])) for s in chosen]
        if not jobs:
            for r in routes:
                r.curves.append(r.curves[-1])
            continue
        starts = torch.stack([r.nodes[s] for r, s, _ in jobs])
        ends = torch.stack([r.nodes[s + 1] for r, s, _ in jobs])
        alpha = torch.tensor([u for *_, u in jobs], device=a.device).view(-1, 1, 1, 1)
        barriers = (1 - alpha) * starts + alpha * ends
        labels = torch.tensor([r.target for r, *_ in jobs], device=a.device)
        if free:
            moved, _ = optimize_point(model, barriers, labels, **optimiser)
            along = np.full(len(jobs), np.nan)
        else:
            moved, along = bypass(model, starts, ends, barriers, labels, **optimiser)
        change = (moved - barriers).flatten(1)
        sizes = change.norm(dim=1) / (ends - starts).flatten(1).norm(dim=1)
        pixels = change.abs().amax(1) / barriers.flatten(1).abs().amax(1).clamp_min(1e-30)
        # insert from the last segment backwards so that earlier indices stay valid
        order = sorted(range(len(jobs)), key=lambda j: -jobs[j][1])
        for j in order:
            r, s, u = jobs[j]
            r.nodes.insert(s + 1, moved[j])
            r.positions.insert(s + 1, r.positions[s] + u * (r.positions[s + 1] - r.positions[s]))
            r.detours.append(float(sizes[j]))
            r.pixels.append(float(pixels[j]))
            r.along.append(float(along[j]))
        changed = {id(r): r for r, *_ in jobs}
        _evaluate(model, list(changed.values()), points)
        for r in routes:
            if id(r) not in changed:  # a path left alone keeps its curve
                r.curves.append(r.curves[-1])
    return routes


# ---------------------------------------------------------------------------------
# Statistics: the official postprocess and the detector's AUC
# ---------------------------------------------------------------------------------


def drop_mismatched(
    classes: Sequence[int], loss1: Sequence[float], loss2: Sequence[float], drop: int = 2
) -> np.ndarray:
    """Which pairs to keep: per class, all but the ``drop`` pairs with the largest
    |loss1 - loss2| (official ``postprocess_barriers``; ties keep the earlier pair)."""
    classes, diff = np.asarray(classes), np.abs(np.subtract(loss1, loss2))
    keep = np.zeros(len(classes), dtype=bool)
    for k in np.unique(classes):
        members = np.flatnonzero(classes == k)
        order = members[np.argsort(diff[members], kind="stable")]
        keep[order[: max(len(members) - drop, 0)]] = True
    return keep


class Comparison(NamedTuple):
    """Per pair (A, C) and (A, A'), barrier max and gap within class and to the
    adversarial example A', and which pairs the official postprocess keeps in both
    sets (``kept``), so that the two gaps of a kept pair share their A."""

    within_max: np.ndarray
    within_gap: np.ndarray
    adversarial_max: np.ndarray
    adversarial_gap: np.ndarray
    kept: np.ndarray


def compare_barriers(
    classes: Sequence[int], within: np.ndarray, adversarial: np.ndarray, drop: int = 2
) -> Comparison:
    """Barriers of the rows of ``within`` (losses along A -> C) and ``adversarial``
    (along A -> A'), pair by pair, with the pairs that :func:`drop_mismatched` keeps
    in each set."""
    bars = [[barrier(loss) for loss in losses] for losses in (within, adversarial)]
    kept = drop_mismatched(classes, within[:, 0], within[:, -1], drop) & drop_mismatched(
        classes, adversarial[:, 0], adversarial[:, -1], drop
    )
    return Comparison(
        *(np.array([getattr(b, name) for b in bs]) for bs in bars for name in ("max", "gap")),
        kept,
    )


def detection_auc(within: Sequence[float], adversarial: Sequence[float]) -> float:
    """ROC AUC of a score (the barrier gap) that calls a pair adversarial when high:
    within-class pairs are negatives, real-to-adversarial pairs positives. NaN when
    either set is empty."""
    from sklearn.metrics import roc_auc_score

    within, adversarial = np.asarray(within, float), np.asarray(adversarial, float)
    if not len(within) or not len(adversarial):
        return float("nan")
    labels = np.r_[np.zeros(len(within)), np.ones(len(adversarial))]
    return float(roc_auc_score(labels, np.r_[within, adversarial]))
