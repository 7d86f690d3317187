"""Grokking: modular addition with a one-layer transformer, trained full-batch while its
training-set sensitivity is logged (the official run, opt-in, and a shorter one for the
book)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core
from iclr25.chapters.sensitivity.method import accuracy, sensitivity

# ---------------------------------------------------------------------------------
# Grokking: modular addition with a one-layer transformer
# ---------------------------------------------------------------------------------


class OneLayerTransformer(nn.Module):
    """Tokens "a b =" -> embeddings + positions -> one attention layer and one MLP
    (residual, no layer norm, as in the grokking literature) -> logits read at "=".

    Only the "=" position is read, and with one layer nothing else reaches it: the
    attention takes "=" as its only query and the MLP runs on that position alone,
    which gives the same logits as computing every position at a third of the cost.
    :meth:`from_embeddings` is that computation on any embeddings (noised ones for
    the sensitivity); :meth:`forward` gives the same logits for token ids from
    per-token tables, at about half the cost of an epoch.
    """

    def __init__(self, modulus: int, dim: int = 128, heads: int = 4, hidden: int = 512) -> None:
        super().__init__()
        self.embed = nn.Embedding(modulus + 1, dim)  # id `modulus` is "="
        self.pos = nn.Parameter(0.02 * torch.randn(1, 3, dim))
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Linear(hidden, dim))
        self.unembed = nn.Linear(dim, modulus)

    def from_embeddings(self, e: torch.Tensor) -> torch.Tensor:
        h = e + self.pos
        last = h[:, -1:]
        last = last + self.attn(last, h, h, need_weights=False)[0]
        last = last + self.mlp(last)
        return self.unembed(last[:, 0])

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The logits of :meth:`from_embeddings` on the embeddings of ``ids`` (n, 3).

        Each key and value, and the query, depends on one token at one position, so
        they are looked up in a table of every token at every position (3 (p + 1)
        rows) instead of projected once per pair; the attention mixes them head by
        head. Only the MLP and the read-out still run once per pair.
        """
        n, dim, heads = len(ids), self.embed.embedding_dim, self.attn.num_heads
        w_q, w_kv = self.attn.in_proj_weight.split([dim, 2 * dim])
        b_q, b_kv = self.attn.in_proj_bias.split([dim, 2 * dim])
        h = (self.embed.weight + self.pos[0, :, None]).flatten(0, 1)  # (3 (p + 1), dim)
        rows = ids + self.embed.num_embeddings * torch.arange(3, device=ids.device)
        last = F.embedding(rows[:, 2], h)
        q = F.linear(last, w_q, b_q).view(n, 1, heads, -1)
        k, v = F.embedding(rows, F.linear(h, w_kv, b_kv)).view(n, 3, 2, heads, -1).unbind(2)
        weights = ((q * k).sum(-1) / (dim // heads) ** 0.5).softmax(1)  # (n, 3, heads)
        last = last + self.attn.out_proj((weights[..., None] * v).sum(1).flatten(1))
        last = last + self.mlp(last)
        return self.unembed(last)


def modular_addition(modulus: int, train_fraction: float, seed: int = 0) -> dict[str, torch.Tensor]:
    """All pairs (a, b) as "a b =" with label (a + b) mod ``modulus``, split at random:
    ``train_fraction`` of the pairs for training, the rest for testing."""
    if modulus < 2 or not 0 < train_fraction < 1:
        raise ValueError(
            f"modular_addition needs modulus >= 2 and 0 < train_fraction < 1, "
            f"got {modulus!r}, {train_fraction!r}"
        )
    a, b = torch.meshgrid(torch.arange(modulus), torch.arange(modulus), indexing="ij")
    ids = torch.stack([a.flatten(), b.flatten(), torch.full((modulus**2,), modulus)], 1)
    labels = (a + b).flatten() % modulus
    order = torch.randperm(len(ids), generator=torch.Generator().manual_seed(seed))
    cut = int(train_fraction * len(ids))
    return {
        "train_x": ids[order[:cut]],
        "train_y": labels[order[:cut]],
        "test_x": ids[order[cut:]],
        "test_y": labels[order[cut:]],
    }


GENERALISED = 0.99
"""Test accuracy at which a grokking run has generalised (``stop_after`` counts from
it)."""

ADAMW_BETAS = (0.9, 0.999)
"""AdamW's betas in the official notebook (torch's defaults, not passed there)."""

GROK_PAPER = {"modulus": 113, "train_fraction": 0.3, "epochs": 17000, "lr": 1e-3, "every": 50}
"""The official grokking run (p = 113, 30% of the pairs, AdamW lr 1e-3, weight decay 1,
17,000 full-batch epochs): built only when asked (about half an hour on one CPU core, a
minute or two on a GPU), then cached."""


def grok_settings(setting: str, book: Mapping[str, Any]) -> dict[str, Any]:
    """The :func:`grok` arguments of a grokking run: ``"paper"`` is :data:`GROK_PAPER`,
    ``"book"`` is ``book`` (the book's shorter run, its keys those of
    :data:`GROK_PAPER`)."""
    if setting not in ("paper", "book"):
        raise ValueError(f"unknown grokking setting {setting!r}; accepted: paper, book")
    return dict(GROK_PAPER if setting == "paper" else book)


def _grok_config(**kwargs: Any) -> dict[str, Any]:
    config = dict(
        modulus=53,
        train_fraction=0.3,
        epochs=3000,
        lr=1e-2,
        weight_decay=1.0,
        betas=ADAMW_BETAS,
        dim=128,
        sigma=0.1,
        every=20,
        repeats=5,
        stop_after=None,
        seed=0,
    )
    unknown = set(kwargs) - set(config) - {"device"}
    if unknown:
        raise TypeError(f"grok() got unknown arguments {sorted(unknown)}")
    config.update((k, v) for k, v in kwargs.items() if k != "device")
    config["measure"] = "a and b noised together"  # the official code's sensitivity
    return config


def grok(
    modulus: int = 53,
    train_fraction: float = 0.3,
    epochs: int = 3000,
    lr: float = 1e-2,
    weight_decay: float = 1.0,
    betas: tuple[float, float] = ADAMW_BETAS,
    dim: int = 128,
    sigma: float = 0.1,
    every: int = 20,
    repeats: int = 5,
    stop_after: int | None = None,
    seed: int = 0,
    device: str | torch.device = "cpu",
) -> dict[str, torch.Tensor]:
    """Full-batch AdamW (weight decay ``weight_decay``, ``betas`` by default the official
    notebook's) on modular addition, logging every
    ``every`` epochs the train and test accuracy and the training-set sensitivity: as in
    the official code, noise of std ``sigma`` on the embeddings of a and b together,
    here ``repeats`` draws. With ``stop_after``, training ends that many epochs after
    the first logged test accuracy of :data:`GENERALISED`, rounded up to a logged
    epoch (or at ``epochs``): the
    official notebook trains for all its epochs, which adds nothing once the model has
    generalised. Runs on ``device`` (``"auto"``: a GPU when one exists); cached by its
    other arguments, so a run made on a GPU serves a CPU build.

    Returns tensors ``epoch``, ``train_acc``, ``test_acc``, ``sensitivity``.
    """
    config = _grok_config(
        modulus=modulus,
        train_fraction=train_fraction,
        epochs=epochs,
        lr=lr,
        weight_decay=weight_decay,
        betas=tuple(betas),
        dim=dim,
        sigma=sigma,
        every=every,
        repeats=repeats,
        stop_after=stop_after,
        seed=seed,
    )
    if stop_after is not None and stop_after < 0:
        raise ValueError(f"grok() needs stop_after >= 0 or None, got {stop_after!r}")
    where = core.get_device(device) if isinstance(device, str) else device

    def run() -> dict[str, torch.Tensor]:
        data = {k: v.to(where) for k, v in modular_addition(modulus, train_fraction, seed).items()}
        torch.manual_seed(seed)
        model = OneLayerTransformer(modulus, dim, 4, 4 * dim).to(where)
        optimiser = torch.optim.AdamW(
            model.parameters(), lr=lr, weight_decay=weight_decay, betas=tuple(betas)
        )
        noise = torch.Generator().manual_seed(seed + 1)
        log: dict[str, list[float]] = {
            "epoch": [],
            "train_acc": [],
            "test_acc": [],
            "sensitivity": [],
        }
        end = epochs
        with core.threads(1):
            for epoch in range(epochs + 1):
                if epoch % every == 0:
                    model.eval()
                    with torch.no_grad():
                        e = model.embed(data["train_x"])
                        log["epoch"].append(epoch)
                        log["train_acc"].append(accuracy(model, data["train_x"], data["train_y"]))
                        log["test_acc"].append(accuracy(model, data["test_x"], data["test_y"]))
                        log["sensitivity"].append(
                            sensitivity(
                                model.from_embeddings,
                                e,
                                sigma,
                                repeats=repeats,
                                generator=noise,
                                positions=(0, 1),
                                joint=True,
                            )
                        )
                    model.train()
                    if stop_after is not None and log["test_acc"][-1] >= GENERALISED:
                        end = min(end, epoch + -(-stop_after // every) * every)
                if epoch >= end:
                    break
                optimiser.zero_grad()
                F.cross_entropy(model(data["train_x"]), data["train_y"]).backward()
                optimiser.step()
        return {k: torch.tensor(v) for k, v in log.items()}

    return core.cached("sensitivity-grok", config, run)


def first_epoch(
    epochs: np.ndarray, values: np.ndarray, threshold: float, *, below: bool, after: int = 0
) -> int | None:
    """The first logged epoch (at or after ``after``) where ``values`` is below (or, with
    ``below=False``, at or above) ``threshold``; None if never."""
    epochs, values = np.asarray(epochs), np.asarray(values)
    hit = (values < threshold) if below else (values >= threshold)
    hit &= epochs >= after
    return int(epochs[np.argmax(hit)]) if hit.any() else None


def grokking_events(
    log: Mapping[str, np.ndarray], train_fraction: float, window: int = 5
) -> dict[str, int | None]:
    """The events of one :func:`grok` run, each a logged epoch (None if it never
    happens):

    - ``memorised``: the training accuracy first reaches 0.99;
    - ``peak``: the smoothed sensitivity (a centred mean over ``window`` logged points)
      is highest, from ``memorised`` on (not the random initialisation's);
    - ``drop``: the smoothed sensitivity is first back below half that peak, after it;
    - ``jump``: the test accuracy first reaches ``(1 + train_fraction) / 2``, halfway
      from the training share to 1 (a model that memorises the training pairs and
      learns only that a + b = b + a gets that share of test pairs right).
    """
    epoch = np.asarray(log["epoch"])
    smooth = smoothed(log["sensitivity"], window)
    memorised = first_epoch(epoch, log["train_acc"], 0.99, below=False)
    since = epoch >= (memorised or 0)
    peak = int(epoch[since][np.argmax(smooth[since])])
    drop = first_epoch(epoch, smooth, smooth[since].max() / 2, below=True, after=peak)
    halfway = (1 + train_fraction) / 2
    jump = first_epoch(epoch, log["test_acc"], halfway, below=False)
    return {"memorised": memorised, "peak": peak, "drop": drop, "jump": jump}


def smoothed(values: np.ndarray, window: int = 5) -> np.ndarray:
    """The centred moving mean over ``window`` logged points (fewer at the ends)."""
    return (
        pd.Series(np.asarray(values)).rolling(window, center=True, min_periods=1).mean().to_numpy()
    )
