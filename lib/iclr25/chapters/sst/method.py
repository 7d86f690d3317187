"""SST's method: the notions of sufficiency, their fills (the PGD attack on the
complement among them) and the sufficiency check; the SST network, its loss and its
training."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core, vision

NOTIONS = ("baseline", "probabilistic", "robust")
BASELINES = ("SIS", "Anchors", "IG", "gradient")
VARIANT_NAMES = ("SST", "SST-ST")
METHODS = (*VARIANT_NAMES, *BASELINES)


# ---------------------------------------------------------------------------------
# Sufficiency: the mask, the three fills and the check
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notion:
    """One notion of sufficiency. ``kind`` is one of NOTIONS; ``eps`` is the width of
    the one-sided uniform noise or the radius of the attack; ``steps`` the PGD steps;
    ``draws`` the random fills a probabilistic check uses and ``precision`` the share
    of them that must keep the prediction. Features live in [``low``, ``high``]."""

    kind: str = "baseline"
    eps: float = 0.1
    steps: int = 10
    draws: int = 16
    precision: float = 0.95
    low: float = 0.0
    high: float = 1.0

    def __post_init__(self) -> None:
        if self.kind not in NOTIONS:
            raise ValueError(
                f"unknown sufficiency notion {self.kind!r}; accepted: {', '.join(NOTIONS)}"
            )
        if self.eps <= 0 or self.steps < 1 or self.draws < 1 or not 0 < self.precision <= 1:
            raise ValueError(
                f"Notion needs eps > 0, steps >= 1, draws >= 1 and precision in (0, 1]; got {self}"
            )

    @property
    def checks(self) -> int:
        """How many fills one sufficiency check draws (one unless probabilistic)."""
        return self.draws if self.kind == "probabilistic" else 1


def check_tau(tau: float) -> float:
    """``tau`` if it lies in the open interval (0, 1), where sigmoid scores can cross it."""
    if not 0.0 < tau < 1.0:
        raise ValueError(f"tau must lie in (0, 1), got {tau!r}")
    return float(tau)


def explanation_mask(scores: torch.Tensor, tau: float) -> torch.Tensor:
    """The explanation: the features whose score passes the threshold, s_i >= tau."""
    return scores >= check_tau(tau)


def _check_shapes(x: torch.Tensor, mask: torch.Tensor) -> None:
    if mask.shape != x.shape or mask.dtype != torch.bool:
        raise ValueError(
            f"the mask must be a bool tensor of the input's shape {tuple(x.shape)}, "
            f"got {mask.dtype} of shape {tuple(mask.shape)}"
        )


def pgd_complement(
    model: nn.Module,
    x: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    notion: Notion,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The robust fill: a PGD attack on the complement of ``mask`` only.

    From a random start in the L-inf ball of radius eps around x, ``steps`` ascent steps
    of size 2.5 eps / steps on CE(f(z), target), each followed by projection onto the
    ball, the feature range, and x on the kept features. Parameter gradients are left
    alone (``torch.autograd.grad`` with respect to z only).
    """
    eps, free = notion.eps, ~mask
    step = 2.5 * eps / notion.steps
    noise = torch.rand(x.shape, generator=generator, device=x.device) * 2 - 1
    z = torch.where(free, (x + eps * noise).clamp(notion.low, notion.high), x)
    for _ in range(notion.steps):
        z.requires_grad_(True)
        with torch.enable_grad():
            (grad,) = torch.autograd.grad(F.cross_entropy(model(z), target), z)
        z = z.detach() + step * grad.sign()
        z = torch.minimum(torch.maximum(z, x - eps), x + eps).clamp(notion.low, notion.high)
        z = torch.where(free, z, x)
    return z.detach()


def fill(
    model: nn.Module,
    x: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    notion: Notion,
    generator: torch.Generator | None = None,
    shared: bool = False,
) -> torch.Tensor:
    """x with the complement of ``mask`` filled by ``notion`` (the kept features are x's).

    baseline: z = m * x; probabilistic: z = m * x + (1 - m) clip(x + eps * U(0, 1)), the
    official one-sided noise, drawn per input or, with ``shared``, once for the whole
    batch (the official training draws one noise image per batch); robust:
    :func:`pgd_complement` against ``target`` (the prediction to keep).
    """
    _check_shapes(x, mask)
    if notion.kind == "baseline":
        return torch.where(mask, x, torch.zeros_like(x))
    if notion.kind == "probabilistic":
        shape = x.shape[1:] if shared else x.shape
        noise = torch.rand(shape, generator=generator, device=x.device)
        return torch.where(mask, x, (x + notion.eps * noise).clamp(notion.low, notion.high))
    return pgd_complement(model, x, mask, target, notion, generator)


@torch.no_grad()
def survives(
    model: nn.Module,
    x: torch.Tensor,
    mask: torch.Tensor,
    target: torch.Tensor,
    notion: Notion,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Per input, whether the prediction ``target`` survives one fill of the complement.
    The share of True is the *faithfulness* of the explanations ``mask``."""
    return model(fill(model, x, mask, target, notion, generator)).argmax(-1) == target


class Outcome(NamedTuple):
    """For each candidate subset: the mean probability of the target class under the
    fill, and the share of fills that keep the prediction (its precision)."""

    probability: torch.Tensor
    precision: torch.Tensor


@torch.no_grad()
def outcomes(
    model: nn.Module,
    x: torch.Tensor,
    masks: torch.Tensor,
    target: int,
    notion: Notion,
    generator: torch.Generator | None = None,
) -> Outcome:
    """Fill one input ``x`` (shape s) under each candidate mask of ``masks`` (m, *s),
    ``notion.checks`` times, and score the target class."""
    k = notion.checks
    xs = x.expand(len(masks) * k, *x.shape)
    ms = masks.repeat_interleave(k, 0)
    targets = torch.full((len(xs),), target, dtype=torch.long, device=x.device)
    probs = model(fill(model, xs, ms, targets, notion, generator)).softmax(-1)
    kept = (probs.argmax(-1) == target).float().view(len(masks), k)
    return Outcome(probs[:, target].view(len(masks), k).mean(1), kept.mean(1))


def sufficient(
    model: nn.Module,
    x: torch.Tensor,
    masks: torch.Tensor,
    target: int,
    notion: Notion,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Whether each candidate subset is sufficient for ``target`` by the notion's check:
    the prediction survives the fill (baseline, robust), or survives at least a share
    ``precision`` of ``draws`` fills (probabilistic)."""
    return outcomes(model, x, masks, target, notion, generator).precision >= notion.precision


# ---------------------------------------------------------------------------------
# The SST network and its loss
# ---------------------------------------------------------------------------------


class SSTNet(nn.Module):
    """A classifier (:class:`iclr25.vision.Classifier`) with an explanation head: one
    sigmoid score per input feature, from the same backbone features as the logits.
    Calling it returns the logits, so it is a plain classifier to fills and attacks."""

    def __init__(self, classifier: vision.Classifier, in_shape: tuple[int, ...]) -> None:
        super().__init__()
        self.classifier = classifier
        self.in_shape = tuple(in_shape)
        self.explainer = nn.Linear(classifier.head.in_features, int(np.prod(in_shape)))

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        if tuple(x.shape[1:]) != self.in_shape:
            raise ValueError(
                f"SSTNet expects inputs of shape (n, {', '.join(map(str, self.in_shape))}), "
                f"got {tuple(x.shape)}"
            )
        return self.classifier.backbone(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier.head(self._features(x))

    def predict_and_score(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and explanation scores s = sigmoid(W h + b), in one forward pass."""
        h = self._features(x)
        return self.classifier.head(h), torch.sigmoid(self.explainer(h)).view(x.shape)

    @torch.no_grad()
    def explain(self, x: torch.Tensor, tau: float) -> tuple[torch.Tensor, torch.Tensor]:
        """Predicted classes and explanation masks {i : s_i >= tau}: one forward pass."""
        logits, scores = self.predict_and_score(x)
        return logits.argmax(-1), explanation_mask(scores, tau)


def sst_loss(
    net: SSTNet,
    x: torch.Tensor,
    y: torch.Tensor,
    tau: float,
    gamma: float,
    notion: Notion,
    generator: torch.Generator | None = None,
    straight_through: bool = False,
) -> torch.Tensor:
    """CE(f(x), y) + CE(f(z), argmax f(x)) + gamma * mean(s), z the filled input.

    The mask m = 1[s >= tau] is hard. As in the official code no gradient goes through
    it, so the explanation head only feels the size term; with ``straight_through`` the
    faithfulness term reaches the scores as if m were s (z = m' x + (1 - m') fill,
    m' = m + s - stop_gradient(s)). The probabilistic fill draws one noise image for
    the batch, as the official training does. The size term is the official
    gamma ||s||_1 / (batch * features).
    """
    logits, scores = net.predict_and_score(x)
    predicted = logits.argmax(-1).detach()
    mask = explanation_mask(scores.detach(), tau)
    z = fill(net, x, mask, predicted, notion, generator, shared=True)
    if straight_through:
        soft = mask.float() + scores - scores.detach()
        z = soft * x + (1 - soft) * z
    return F.cross_entropy(logits, y) + F.cross_entropy(net(z), predicted) + gamma * scores.mean()


@dataclass(frozen=True)
class SSTConfig:
    """SST training: Adam at ``lr`` for at most ``epochs`` passes in batches of
    ``batch_size``, with threshold ``tau``, size weight ``gamma`` and the fill of
    ``notion``; early stopping after ``patience`` epochs without a lower validation loss,
    keeping the best weights (the official procedure). ``straight_through=False`` is
    the official hard mask; True is our straight-through variant."""

    tau: float = 0.5
    gamma: float = 1.0
    notion: Notion = Notion()
    epochs: int = 30
    patience: int = 5
    batch_size: int = 64
    lr: float = 2e-3
    straight_through: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        check_tau(self.tau)
        if self.gamma < 0 or self.epochs < 1 or self.patience < 1:
            raise ValueError(
                f"SSTConfig needs gamma >= 0, epochs >= 1 and patience >= 1; got {self}"
            )


def _batches(split: vision.Split, batch_size: int, order: torch.Generator | None) -> Iterator[Any]:
    """Minibatches of ``split``, shuffled by ``order`` (in order when None)."""
    index = (
        torch.arange(len(split)) if order is None else torch.randperm(len(split), generator=order)
    )
    for start in range(0, len(split), batch_size):
        idx = index[start : start + batch_size]
        yield split.x[idx], split.y[idx]


def train_sst(
    data: vision.ImageData, model: vision.ModelConfig, config: SSTConfig, *, progress: bool = False
) -> SSTNet:
    """Train an :class:`SSTNet` on ``data.train`` with :func:`sst_loss`, early-stopped on
    the loss over ``data.val``; cached by the data, the model and the training config
    (CPU, one thread). The loop is written out because :func:`iclr25.core.train` has
    no validation hook for early stopping."""
    from tqdm.auto import tqdm

    # "fill" names the probabilistic fill's version: one-sided noise, one draw per batch
    key = {
        "data": data.spec,
        "model": asdict(model),
        "sst": asdict(config),
        "fill": "one-sided, one draw per batch",
    }
    loss = functools.partial(
        sst_loss,
        tau=config.tau,
        gamma=config.gamma,
        notion=config.notion,
        straight_through=config.straight_through,
    )

    def fit() -> dict[str, torch.Tensor]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            net = SSTNet(vision.build(model), data.shape)
        order, noise = (torch.Generator().manual_seed(config.seed + k) for k in (0, 1))
        optimiser = torch.optim.Adam(net.parameters(), lr=config.lr)
        best, best_state, waited = float("inf"), net.state_dict(), 0
        with core.threads(1):
            for _ in tqdm(range(config.epochs), disable=not progress, desc="SST"):
                net.train()
                for x, y in _batches(data.train, config.batch_size, order):
                    optimiser.zero_grad()
                    loss(net, x, y, generator=noise).backward()
                    optimiser.step()
                net.eval()
                val = sum(
                    loss(net, x, y, generator=noise).item() * len(y)
                    for x, y in _batches(data.val, 512, None)
                ) / len(data.val)
                if val <= best:
                    best, waited = val, 0
                    best_state = {k: v.clone() for k, v in net.state_dict().items()}
                else:
                    waited += 1
                    if waited == config.patience:
                        break
        return best_state

    net = SSTNet(vision.build(model), data.shape)
    net.load_state_dict(core.cached("sst-net", key, fit))
    return net.eval()
