"""The method: the token interface, the sensitivity estimate, the sensitivity regulariser
and sharpness; training every model to one target accuracy (cached); the corruptions of
the robustness test; the permutation test of the correlations; and the noise grid built from
the chapter's parameters (the package docstring gives the paper and its findings)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core

Forward = Callable[[torch.Tensor], torch.Tensor]  # tokens (B, T, D) -> logits (B, K)

# ---------------------------------------------------------------------------------
# The token interface
# ---------------------------------------------------------------------------------


def patchify(images: torch.Tensor, patch: int) -> torch.Tensor:
    """Images (B, C, H, W) -> tokens (B, (H/patch)(W/patch), C patch^2), row by row:
    the non-overlapping patches a ViT embeds as its tokens."""
    b, c, h, w = images.shape
    if h % patch or w % patch:
        raise ValueError(f"patch {patch} must divide the image size {h}x{w}")
    return F.unfold(images, patch, stride=patch).transpose(1, 2)


def unpatchify(tokens: torch.Tensor, shape: Sequence[int], patch: int) -> torch.Tensor:
    """The inverse of :func:`patchify`: tokens back to images of ``shape`` (C, H, W)."""
    _, h, w = shape
    return F.fold(tokens.transpose(1, 2), (h, w), patch, stride=patch)


def image_forward(model: nn.Module, shape: Sequence[int], patch: int) -> Forward:
    """An image classifier seen through the token interface: patches -> logits."""
    return lambda tokens: model(unpatchify(tokens, shape, patch))


def perturb_one_token(
    tokens: torch.Tensor,
    sigma: float,
    generator: torch.Generator | None = None,
    positions: Sequence[int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """x~ = x + e_i (x) eta: Gaussian noise N(0, sigma^2) on one token per example.

    The token i is drawn uniformly from ``positions`` (default: all), independently
    for each example. Returns the noised tokens and the chosen positions.
    """
    if tokens.ndim != 3:
        raise ValueError(
            f"tokens must be (batch, tokens, features), got shape {tuple(tokens.shape)}"
        )
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    allowed = torch.arange(tokens.shape[1]) if positions is None else torch.as_tensor(positions)
    pick = allowed[torch.randint(len(allowed), (len(tokens),), generator=generator)]
    noise = sigma * torch.randn(tokens.shape[0], tokens.shape[2], generator=generator)
    noised = tokens.clone()
    rows = torch.arange(len(tokens), device=tokens.device)
    noised[rows, pick.to(tokens.device)] += noise.to(tokens)
    return noised, pick


def perturb_tokens(
    tokens: torch.Tensor,
    sigma: float,
    positions: Sequence[int],
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Gaussian noise N(0, sigma^2) on *every* token of ``positions`` at once (the
    official grokking code's measure, which noises the embeddings of a and b together)."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    where = torch.as_tensor(positions, device=tokens.device)
    noise = sigma * torch.randn(len(tokens), len(where), tokens.shape[2], generator=generator)
    noised = tokens.clone()
    noised[:, where] += noise.to(tokens)
    return noised


@torch.no_grad()
def sensitivity(
    forward: Forward,
    tokens: torch.Tensor,
    sigma: float,
    *,
    repeats: int = 5,
    generator: torch.Generator | None = None,
    positions: Sequence[int] | None = None,
    joint: bool = False,
    batch_size: int = 4096,
) -> float:
    """S_sigma(f): the fraction of (input, draw) pairs whose argmax flips when one random
    token gets N(0, sigma^2) noise, over ``repeats`` draws per input (paper: 5).

    With ``joint`` every token of ``positions`` is noised at once (:func:`perturb_tokens`).
    """
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats!r}")
    if joint and positions is None:
        raise ValueError("joint noise needs the positions to noise")
    flips = 0
    for start in range(0, len(tokens), batch_size):
        x = tokens[start : start + batch_size]
        clean = forward(x).argmax(-1)
        for _ in range(repeats):
            if joint:
                noised = perturb_tokens(x, sigma, positions, generator)  # type: ignore[arg-type]
            else:
                noised, _ = perturb_one_token(x, sigma, generator, positions)
            flips += int((forward(noised).argmax(-1) != clean).sum())
    return flips / (repeats * len(tokens))


def sensitivity_curve(
    forward: Forward,
    tokens: torch.Tensor,
    sigmas: Sequence[float],
    *,
    repeats: int = 5,
    seed: int = 0,
) -> np.ndarray:
    """S_sigma(f) at every sigma of ``sigmas``, each from the same seeded noise stream."""
    return np.array(
        [
            sensitivity(
                forward, tokens, s, repeats=repeats, generator=torch.Generator().manual_seed(seed)
            )
            for s in sigmas
        ]
    )


SCATTERED_PIXELS = 16
"""Pixels the official estimate noises: as many as a 4x4 patch has, scattered."""


def perturb_scattered_pixels(
    images: torch.Tensor,
    sigma: float,
    pixels: int = SCATTERED_PIXELS,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The official estimate's perturbation: N(0, sigma^2) noise on ``pixels`` pixels of
    each image (B, C, H, W), every channel, each pixel's row and column drawn uniformly
    and apart (a pixel drawn twice is noised once). Not a patch: no 4x4 window of it
    need be what the regulariser noised."""
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma!r}")
    b, _, h, w = images.shape
    rows = torch.randint(h, (b, pixels), generator=generator)
    cols = torch.randint(w, (b, pixels), generator=generator)
    mask = torch.zeros(b, h * w).scatter_(1, rows * w + cols, 1.0).view(b, 1, h, w)
    noise = sigma * torch.randn(images.shape, generator=generator)
    return images + (noise * mask).to(images)


@torch.no_grad()
def scattered_sensitivity(
    model: nn.Module,
    images: torch.Tensor,
    sigma: float,
    *,
    pixels: int = SCATTERED_PIXELS,
    repeats: int = 5,
    seed: int = 0,
) -> float:
    """The official code's sensitivity estimate: the fraction of (image, draw) pairs whose
    argmax flips under :func:`perturb_scattered_pixels`, ``repeats`` draws per image."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats!r}")
    generator = torch.Generator().manual_seed(seed)
    clean = model(images).argmax(-1)
    flips = sum(
        int(
            (
                model(perturb_scattered_pixels(images, sigma, pixels, generator)).argmax(-1)
                != clean
            ).sum()
        )
        for _ in range(repeats)
    )
    return flips / (repeats * len(images))


# ---------------------------------------------------------------------------------
# The sensitivity regulariser and sharpness
# ---------------------------------------------------------------------------------


def regularised_loss(
    forward: Forward,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    p: float,
    sigma: float,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """(1 - p) CE(f(x), y) + p MSE(f(x~), f(x)), x~ with one token noised (std ``sigma``).

    As in the official code the clean logits are not detached: both terms train f.
    With p = 0 this is plain cross-entropy (and no noised pass is made).
    """
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"regulariser weight p must be in [0, 1], got {p!r}")
    logits = forward(tokens)
    loss = F.cross_entropy(logits, labels)
    if p == 0:
        return loss
    noised, _ = perturb_one_token(tokens, sigma, generator)
    return (1 - p) * loss + p * F.mse_loss(forward(noised), logits)


@torch.no_grad()
def sharpness(
    model: nn.Module,
    forward: Callable[[nn.Module], torch.Tensor],
    *,
    std: float = 0.05,
    repeats: int = 5,
    seed: int = 0,
) -> float:
    """Mean L1 change of the logits when every weight gets N(0, std^2) noise (the
    official code's ``sharpness1``): E_delta mean_x ||f_{w+delta}(x) - f_w(x)||_1.

    ``forward(m)`` returns the logits of model ``m`` on the data. The model is
    restored afterwards. Flat minima change little.
    """
    generator = torch.Generator().manual_seed(seed)
    clean = forward(model)
    saved = [w.detach().clone() for w in model.parameters()]
    total = 0.0
    try:
        for _ in range(repeats):
            for w, w0 in zip(model.parameters(), saved):
                w.copy_(w0 + std * torch.randn(w.shape, generator=generator).to(w))
            total += float((forward(model) - clean).abs().sum(-1).mean())
    finally:
        for w, w0 in zip(model.parameters(), saved):
            w.copy_(w0)
    return total / repeats


# ---------------------------------------------------------------------------------
# Training with the regulariser, cached
# ---------------------------------------------------------------------------------


def train_to_accuracy(
    model: nn.Module,
    forward: Forward,
    tokens: torch.Tensor,
    labels: torch.Tensor,
    *,
    target: float,
    max_epochs: int,
    lr: float = 2e-3,
    batch_size: int = 64,
    p: float = 0.0,
    sigma_reg: float = 1.0,
    seed: int = 0,
) -> list[float]:
    """Train ``model`` with :func:`regularised_loss` (Adam, shuffled minibatches) until its
    clean training accuracy reaches ``target``, at most ``max_epochs`` epochs.

    The accuracy is measured on the whole training set, in eval mode, after every
    epoch; training stops at the first epoch that reaches ``target``. So models trained
    to one target are compared at matched training accuracy by design (unless the cap
    stops one first: the returned history shows it). Tokens and labels must be on the
    model's device. Returns the training accuracy after each epoch; the model is left in
    eval mode.
    """
    if not 0 < target <= 1 or max_epochs < 1:
        raise ValueError(
            f"train_to_accuracy needs 0 < target <= 1 and max_epochs >= 1, "
            f"got {target!r}, {max_epochs!r}"
        )
    order = torch.Generator().manual_seed(seed)
    noise = torch.Generator().manual_seed(seed + 1)
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)

    def batches() -> Iterator[torch.Tensor]:
        perm = torch.randperm(len(labels), generator=order).to(labels.device)
        return iter(perm.split(batch_size))

    def loss_fn(_: nn.Module, idx: torch.Tensor) -> torch.Tensor:
        return regularised_loss(forward, tokens[idx], labels[idx], p, sigma_reg, noise)

    history: list[float] = []
    for _ in range(max_epochs):
        core.train_epoch(model, optimiser, batches, loss_fn)
        history.append(accuracy(forward, tokens, labels))
        if history[-1] >= target:
            break
    return history


def fit(
    name: str,
    config: dict[str, Any],
    make_model: Callable[[], nn.Module],
    to_forward: Callable[[nn.Module], Forward],
    tokens: torch.Tensor,
    labels: torch.Tensor,
    *,
    target_acc: float,
    max_epochs: int,
    lr: float = 2e-3,
    batch_size: int = 64,
    p: float = 0.0,
    sigma_reg: float = 1.0,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> tuple[nn.Module, np.ndarray]:
    """:func:`train_to_accuracy` on ``device`` (``"auto"``: a GPU when one exists, by
    :func:`iclr25.core.get_device`), one CPU thread, cached by ``name``, ``config`` and
    the settings (not the device: a model trained on a GPU serves a CPU run).

    ``to_forward(model)`` is the model's token interface. Returns the model, on the CPU
    in eval mode, and its training accuracy after each epoch.
    """
    where = core.get_device(device) if isinstance(device, str) else device
    key = {
        "config": config,
        "target_acc": target_acc,
        "max_epochs": max_epochs,
        "lr": lr,
        "batch_size": batch_size,
        "p": p,
        "sigma_reg": sigma_reg,
        "seed": seed,
        "n": len(labels),
        "data": hashlib.sha256(
            tokens.contiguous().numpy().tobytes() + labels.numpy().tobytes()
        ).hexdigest()[:16],
    }

    def build() -> dict[str, Any]:
        torch.manual_seed(seed)
        model = make_model().to(where)
        with core.threads(1):
            history = train_to_accuracy(
                model,
                to_forward(model),
                tokens.to(where),
                labels.to(where),
                target=target_acc,
                max_epochs=max_epochs,
                lr=lr,
                batch_size=batch_size,
                p=p,
                sigma_reg=sigma_reg,
                seed=seed,
            )
        state = {k: v.detach().cpu() for k, v in model.state_dict().items()}
        return {"state": state, "train_acc": torch.tensor(history)}

    stored = core.cached(f"sensitivity-{name}", key, build)
    model = make_model()
    model.load_state_dict(stored["state"])
    return model.eval(), stored["train_acc"].numpy()


@torch.no_grad()
def accuracy(forward: Forward, tokens: torch.Tensor, labels: torch.Tensor) -> float:
    """Top-1 accuracy of ``forward`` on (tokens, labels)."""
    return int((forward(tokens).argmax(-1) == labels).sum()) / len(labels)  # exact fraction


# ---------------------------------------------------------------------------------
# Corruptions (robustness)
# ---------------------------------------------------------------------------------

CORRUPTIONS = ("noise", "blur", "shift")


def corrupt(images: torch.Tensor, kind: str, severity: float, seed: int = 0) -> torch.Tensor:
    """A corrupted copy of images (B, C, H, W) in [0, 1], clipped to [0, 1]:
    ``"noise"`` adds N(0, severity^2) per pixel, ``"blur"`` is a Gaussian blur of
    std ``severity`` pixels, ``"shift"`` rolls each image by ``round(severity)`` pixels
    in a random direction (one of eight)."""
    from scipy import ndimage

    generator = torch.Generator().manual_seed(seed)
    if kind == "noise":
        out = images + severity * torch.randn(images.shape, generator=generator)
    elif kind == "blur":
        out = torch.from_numpy(ndimage.gaussian_filter(images.numpy(), (0, 0, severity, severity)))
    elif kind == "shift":
        step = round(severity)
        moves = [(dy, dx) for dy in (-step, 0, step) for dx in (-step, 0, step) if dy or dx]
        pick = torch.randint(len(moves), (len(images),), generator=generator)
        out = torch.stack(
            [torch.roll(x, moves[k], dims=(1, 2)) for x, k in zip(images, pick.tolist())]
        )
    else:
        raise ValueError(f"unknown corruption {kind!r}; accepted: {', '.join(CORRUPTIONS)}")
    return out.clamp(0, 1)


# ---------------------------------------------------------------------------------
# Correlations over the trained models
# ---------------------------------------------------------------------------------


def spearman_p_value(x: Sequence[float], y: Sequence[float], alternative: str) -> float:
    """One-sided p-value of Spearman's rho between x and y under no association.

    A permutation test (``scipy.stats.permutation_test`` over the pairings of x with y):
    exact, over all n! pairings, for n <= 8, from 40,000 seeded random pairings beyond.
    ``alternative`` is ``"less"`` (rho < 0 expected) or ``"greater"``.
    """
    from scipy.stats import permutation_test, spearmanr

    if alternative not in ("less", "greater"):
        raise ValueError(f"alternative must be 'less' or 'greater', got {alternative!r}")
    y = np.asarray(y, dtype=float)
    result = permutation_test(
        (np.asarray(x, dtype=float),),
        lambda a: spearmanr(a, y).statistic,
        permutation_type="pairings",
        alternative=alternative,
        n_resamples=40_000,
        random_state=0,
    )
    return float(result.pvalue)


# ---------------------------------------------------------------------------------
# The noise grid of the chapter's parameters
# ---------------------------------------------------------------------------------


def sigma_grid(sigma_min: float, sigma_max: float) -> list[float]:
    """The noise levels: ``sigma_min`` doubled until it would pass ``sigma_max``."""
    if not 0 < sigma_min <= sigma_max:
        raise core.ParameterError(
            f"the sigma grid needs 0 < sigma_min <= sigma_max, got {sigma_min!r}, {sigma_max!r}"
        )
    count = int(np.floor(np.log2(sigma_max / sigma_min) + 1e-9)) + 1
    return [float(f"{sigma_min * 2**k:.6g}") for k in range(count)]
