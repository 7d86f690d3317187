"""A small training loop with a tqdm progress bar, one epoch of it, and K seeds of one
small model trained as one batched model."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
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


# ---------------------------------------------------------------------------------
# Seeds trained as one batched model
# ---------------------------------------------------------------------------------


def train_seeds(
    models: Sequence[torch.nn.Module],
    batches: Sequence[Callable[[], Iterable[Any]]],
    loss_fn: Callable[[Callable[..., Any], Any], torch.Tensor],
    *,
    epochs: int,
    lr: float,
    weight_decay: float = 0.0,
    optimizer: str = "adamw",
    milestones: Sequence[int] = (),
    clip: float | None = None,
    stop: Callable[[int, torch.nn.Module, int], bool] | None = None,
) -> list[list[float]]:
    """Train K copies of one architecture at once: seed k as :func:`train` would train
    ``models[k]`` on ``batches[k]`` alone, within float tolerance.

    Each model keeps its own initialisation (build it under its seed) and its own batch
    order (``batches[k]()`` is called once per epoch, as in :func:`train`). The K
    parameter sets are stacked (``torch.func.stack_module_state``) and the loss of every
    seed is taken in one call, ``vmap`` over the stack of ``functional_call``:

        L(theta_1, ..., theta_K) = sum_k loss_fn(f(theta_k), batch_k)

    The gradient of the sum in slice k is that of seed k's loss alone, and SGD and AdamW
    act elementwise, so one optimiser over the stacked tensors is K optimisers. ``clip``
    caps each seed's gradient norm separately (``clip_grad_norm_`` per seed). After
    each epoch ``stop(k, models[k], epoch)`` sees seed k's weights (eval mode); once it says
    True, seed k is cut out of the stack, with its optimiser state: it draws no more
    batches and its module keeps the weights it stopped with. The models are trained in
    place and left in eval mode; returns each seed's mean loss per epoch it trained.

    ``loss_fn(model, batch)`` may only call ``model(...)``: it is handed the forward
    pass of one seed. The K batches of a step must have one shape (a batch leaf that
    is the same object for all seeds, e.g. a full graph, is shared, not stacked); the
    model's forward must not branch on tensor values (vmap's rule). Random layers
    (dropout) draw for each seed separately, but not the numbers the lone run draws.

    When it pays: little. Against K lone runs, one thread, CPU time: selective's MLP
    (width 256, batch 128, 5 seeds) 1.14x; an MLP of width 64, batch 32, 1.12x;
    mcqa's tiny transformer (8 layers, d 64, batch 8, 3 seeds) 1.00x, its step is
    arithmetic; kbg's full-batch GNNs (3 seeds) 0.85-1.03x. vmap's batching rules
    cost about as much Python and dispatch as the K lone steps they replace: a lone
    MLP step is about 0.2 ms, the vmapped step of 5 seeds about 0.9 ms, 0.1 ms
    of it the optimiser. The same MLPs written as stacked matmuls (``baddbmm``) give
    1.4x and 2.0x: the saving the overhead leaves is in a model written batched, not in
    vmap. Use this for the same seeds in one loop (and early stop), not for speed.

    Written by hand: no well-kept library trains K seeds of one model as one batched
    model with per-seed optimiser state, clipping and early stop (torch.func gives the
    stacked forward, not the training loop).
    """
    from functools import partial

    import torch
    from torch.func import functional_call, stack_module_state, vmap

    if len(models) != len(batches) or not models:
        raise ValueError(
            f"train_seeds needs one batches() per model, got {len(models)} models and "
            f"{len(batches)} batches"
        )
    optimisers = {
        "adamw": lambda ps: torch.optim.AdamW(ps, lr=lr, weight_decay=weight_decay),
        "sgd": lambda ps: torch.optim.SGD(ps, lr=lr, momentum=0.9, weight_decay=weight_decay),
    }
    if optimizer not in optimisers:
        raise ValueError(f"unknown optimizer {optimizer!r}; accepted: {', '.join(optimisers)}")
    template = models[0]  # functional_call lends it each seed's tensors, then restores its own
    params, buffers = stack_module_state(list(models))  # name -> [seed, *shape]
    optimiser = optimisers[optimizer](list(params.values()))
    schedule = torch.optim.lr_scheduler.MultiStepLR(optimiser, list(milestones), gamma=0.1)
    live = list(range(len(models)))  # the seeds still training, in stack order
    history: list[list[float]] = [[] for _ in models]

    def seed_loss(theta, state, tensors, *, like):
        def forward(*args, **kwargs):
            return functional_call(template, (theta, state), args, kwargs)

        return loss_fn(forward, _rebuild(like, iter(tensors)))

    for epoch in range(epochs):
        template.train()
        total, steps = torch.zeros(len(live)), 0
        for step in zip(*(batches[k]() for k in live), strict=True):
            tensors, dims = _stack(step)
            batched = vmap(
                partial(seed_loss, like=step[0]), in_dims=(0, 0, dims), randomness="different"
            )
            losses = batched(params, buffers, tensors)  # [seed]
            optimiser.zero_grad()
            losses.sum().backward()
            if clip is not None:
                _clip_per_seed(list(params.values()), clip)
            optimiser.step()
            total, steps = total + losses.detach(), steps + 1
        schedule.step()
        keep = []
        for row, k in enumerate(live):
            history[k].append(float(total[row] / max(steps, 1)))
            _load_row(models[k], params, buffers, row)
            keep.append(stop is None or not stop(k, models[k].eval(), epoch))
        if not all(keep):
            params, buffers = _drop_rows(optimiser, params, buffers, torch.tensor(keep))
            live = [k for k, kept in zip(live, keep, strict=True) if kept]
        if not live:
            break
    template.eval()
    return history


def _stack(step: Sequence[Any]) -> tuple[list[torch.Tensor], list[int | None]]:
    """The tensors of K batches of one structure, stacked along a new first dim (the
    seed), with vmap's in_dims: None for a tensor all K batches share."""
    import torch

    columns = zip(*(_tensors(batch) for batch in step), strict=True)
    stacked, dims = [], []
    for column in columns:
        shared = all(t is column[0] for t in column)
        stacked.append(column[0] if shared else torch.stack(column))
        dims.append(None if shared else 0)
    return stacked, dims


def _tensors(batch: Any) -> list[torch.Tensor]:
    """The tensors of a batch (a tensor, or tuples, lists, dicts, dataclasses of them)."""
    import dataclasses

    import torch

    if isinstance(batch, torch.Tensor):
        return [batch]
    if dataclasses.is_dataclass(batch):
        batch = [getattr(batch, f.name) for f in dataclasses.fields(batch)]
    elif isinstance(batch, dict):
        batch = list(batch.values())
    elif not isinstance(batch, (list, tuple)):
        return []
    return [t for item in batch for t in _tensors(item)]


def _rebuild(batch: Any, tensors: Iterator[torch.Tensor]) -> Any:
    """``batch`` with its tensors replaced, in :func:`_tensors`' order, by ``tensors``."""
    import dataclasses

    import torch

    if isinstance(batch, torch.Tensor):
        return next(tensors)
    if dataclasses.is_dataclass(batch):
        fields = {
            f.name: _rebuild(getattr(batch, f.name), tensors) for f in dataclasses.fields(batch)
        }
        return dataclasses.replace(batch, **fields)
    if isinstance(batch, dict):
        return {key: _rebuild(value, tensors) for key, value in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a NamedTuple
        return type(batch)(*(_rebuild(item, tensors) for item in batch))
    if isinstance(batch, (list, tuple)):
        return type(batch)(_rebuild(item, tensors) for item in batch)
    return batch


def _clip_per_seed(params: Sequence[torch.Tensor], max_norm: float) -> None:
    """``clip_grad_norm_`` for each seed's slice: g_k <- g_k min(1, c / (||g_k|| + 1e-6))."""
    import torch

    grads = [p.grad for p in params if p.grad is not None]
    norms = torch.stack([g.flatten(1).pow(2).sum(1) for g in grads]).sum(0).sqrt()  # [seed]
    scale = (max_norm / (norms + 1e-6)).clamp(max=1.0)
    for g in grads:
        g.mul_(scale.view(-1, *[1] * (g.dim() - 1)))


def _load_row(
    model: torch.nn.Module,
    params: dict[str, torch.Tensor],
    buffers: dict[str, torch.Tensor],
    row: int,
) -> None:
    """Copy row ``row`` of the stacked tensors into ``model``'s own."""
    import torch

    with torch.no_grad():
        own = {**dict(model.named_parameters()), **dict(model.named_buffers())}
        for name, stacked in {**params, **buffers}.items():
            own[name].copy_(stacked[row])


def _drop_rows(
    optimiser: torch.optim.Optimizer,
    params: dict[str, torch.Tensor],
    buffers: dict[str, torch.Tensor],
    keep: torch.Tensor,
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """The stacked tensors with only the seeds ``keep`` (a bool per row); the optimiser
    is moved onto the new parameters, each with the kept rows of its state."""
    import torch

    with torch.no_grad():
        kept = {name: p[keep].clone().requires_grad_() for name, p in params.items()}
        for name, p in params.items():
            state = optimiser.state.pop(p, {})  # per-element state has a row per seed
            optimiser.state[kept[name]] = {
                key: value[keep].clone() if value.dim() else value for key, value in state.items()
            }
        new = {id(p): kept[name] for name, p in params.items()}
        for group in optimiser.param_groups:
            group["params"] = [new[id(p)] for p in group["params"]]
        return kept, {name: b[keep].clone() for name, b in buffers.items()}
