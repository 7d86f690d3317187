"""The batched trainer: seed k of one batched run is seed k trained alone."""

import pytest
import torch
from torch import nn

from iclr25 import core, vision

SEEDS = (0, 1, 2)
TOLERANCE = dict(atol=1e-5, rtol=1e-4)  # float32 sums taken in another order


def data(seed: int, n: int = 96) -> tuple[torch.Tensor, torch.Tensor]:
    """Images [n, 1, 8, 8] and labels of 4 classes that a small model can partly learn."""
    g = torch.Generator().manual_seed(100 + seed)
    y = torch.randint(0, 4, (n,), generator=g)
    x = torch.randn(n, 1, 8, 8, generator=g) + y.view(-1, 1, 1, 1).float()
    return x, y


def batches_of(seed: int, size: int = 16):
    """``batches()`` for one seed: its own data, reshuffled each epoch by its own generator."""
    x, y = data(0)
    order = torch.Generator().manual_seed(seed)

    def batches():
        perm = torch.randperm(len(y), generator=order)
        return [(x[perm[i : i + size]], y[perm[i : i + size]]) for i in range(0, len(y), size)]

    return batches


def loss_fn(model, batch) -> torch.Tensor:
    return nn.functional.cross_entropy(model(batch[0]), batch[1])


def build(arch: str, seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return vision.build(vision.ModelConfig(arch, (1, 8, 8), 4, width=16, patch=4, heads=2))


def weights(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def assert_same(batched: nn.Module, alone: nn.Module) -> None:
    for name, value in alone.state_dict().items():
        torch.testing.assert_close(batched.state_dict()[name], value, **TOLERANCE, msg=name)


@pytest.mark.parametrize("optimizer", ["sgd", "adamw"])
def test_seed_k_of_a_batched_mlp_run_equals_seed_k_trained_alone(optimizer):
    settings = dict(epochs=3, lr=0.02, weight_decay=5e-4, optimizer=optimizer, milestones=[2])
    batched = [build("mlp", s) for s in SEEDS]
    losses = core.train_seeds(batched, [batches_of(s) for s in SEEDS], loss_fn, **settings)
    for k, s in enumerate(SEEDS):
        alone = build("mlp", s)
        alone_losses = core.train(alone, batches_of(s), loss_fn, progress=False, **settings)
        assert_same(batched[k], alone)
        torch.testing.assert_close(losses[k], alone_losses, **TOLERANCE)
    assert not torch.equal(batched[0].head.weight, batched[1].head.weight)  # own inits


@pytest.mark.parametrize("arch", ["cnn", "vit"])
def test_seed_k_of_a_batched_cnn_or_vit_run_equals_seed_k_trained_alone(arch):
    """Convolutions, batch norm (its running statistics are stacked buffers), attention
    and layer norms, with each seed's gradient clipped to its own norm. SGD: AdamW
    would turn the rounding noise of a gradient that is zero in exact arithmetic (a
    bias just before a norm, the key bias before a softmax) into full-size steps, so
    two float orders of one sum part at once."""
    batched = [build(arch, s) for s in SEEDS]
    core.train_seeds(
        batched,
        [batches_of(s) for s in SEEDS],
        loss_fn,
        epochs=2,
        lr=0.02,
        optimizer="sgd",
        clip=0.5,
    )
    for k, s in enumerate(SEEDS):
        alone = build(arch, s)
        optimiser = torch.optim.SGD(alone.parameters(), lr=0.02, momentum=0.9)
        batches = batches_of(s)
        for _ in range(2):
            core.train_epoch(alone, optimiser, batches, loss_fn, clip=0.5)
        assert_same(batched[k], alone)


def test_a_seed_that_stops_early_does_not_move_after_it_stops():
    settings = dict(lr=0.05, weight_decay=5e-4, optimizer="sgd")
    seen: dict[int, dict[str, torch.Tensor]] = {}

    def stop(k: int, model: nn.Module, epoch: int) -> bool:
        if k == 1 and epoch == 0:  # seed 1 stops after its first epoch
            seen[k] = weights(model)
            return True
        return False

    batched = [build("mlp", s) for s in SEEDS]
    batches = [batches_of(s) for s in SEEDS]
    losses = core.train_seeds(batched, batches, loss_fn, epochs=3, stop=stop, **settings)
    assert [len(history) for history in losses] == [3, 1, 3]
    for name, value in weights(batched[1]).items():
        assert torch.equal(value, seen[1][name]), name
    for k, s in enumerate(SEEDS):
        alone = build("mlp", s)
        core.train(
            alone, batches_of(s), loss_fn, epochs=1 if k == 1 else 3, progress=False, **settings
        )
        assert_same(batched[k], alone)
