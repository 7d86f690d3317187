"""A small training loop with a tqdm progress bar, and one epoch of it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported lazily: `python -m iclr25 list` should be quick
    import torch


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
