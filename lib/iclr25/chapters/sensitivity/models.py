"""The models beside the image models of :mod:`iclr25.vision`: the ConvMixer, sequence
classifiers over embeddings (transformer, LSTM, MLP) and the synthetic language task."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from iclr25 import vision

# ---------------------------------------------------------------------------------
# Models: ConvMixer (vision) and sequence classifiers over embeddings (language)
# ---------------------------------------------------------------------------------


class _Residual(nn.Sequential):
    """x + layers(x)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + super().forward(x)


class ConvMixer(nn.Module):
    """ConvMixer (Trockman & Kolter): a patch embedding, then blocks of a residual
    depthwise convolution and a pointwise convolution (GELU, batch norm), pooled."""

    def __init__(
        self,
        in_shape: Sequence[int],
        n_classes: int,
        width: int = 32,
        depth: int = 2,
        patch: int = 4,
        kernel: int = 3,
    ) -> None:
        super().__init__()

        def act_norm(channels: int) -> list[nn.Module]:
            return [nn.GELU(), nn.BatchNorm2d(channels)]

        blocks: list[nn.Module] = [
            nn.Conv2d(in_shape[0], width, patch, stride=patch),
            *act_norm(width),
        ]
        for _ in range(depth):
            blocks += [
                _Residual(
                    nn.Conv2d(width, width, kernel, groups=width, padding="same"), *act_norm(width)
                ),
                nn.Conv2d(width, width, 1),
                *act_norm(width),
            ]
        self.net = nn.Sequential(
            *blocks, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, n_classes)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


IMAGE_ARCHS = ("vit", "mlp", "cnn", "convmixer")


def build_image_model(
    arch: str, data: vision.ImageData, width: int, depth: int = 2, patch: int = 4
) -> nn.Module:
    """A ViT, MLP or CNN from :mod:`iclr25.vision`, or a :class:`ConvMixer` (seed torch first)."""
    if arch not in IMAGE_ARCHS:
        raise ValueError(f"unknown architecture {arch!r}; accepted: {', '.join(IMAGE_ARCHS)}")
    if arch == "convmixer":
        return ConvMixer(data.shape, data.n_classes, width, depth, patch)
    return vision.build(
        vision.ModelConfig.for_data(arch, data, width=width, depth=depth, patch=patch)
    )


SEQUENCE_ARCHS = ("transformer", "lstm", "mlp")


class SequenceClassifier(nn.Module):
    """A transformer, an LSTM or an MLP reading a sequence of token embeddings.

    The embedding table is fixed (random, not trained) and shared by all three, so
    noise of a given sigma means the same for each: ``forward`` takes token ids,
    ``from_embeddings`` the embedded sequence (B, T, D) -- the token interface.
    """

    def __init__(
        self, arch: str, embeddings: torch.Tensor, length: int, n_classes: int, width: int = 64
    ) -> None:
        super().__init__()
        if arch not in SEQUENCE_ARCHS:
            raise ValueError(
                f"unknown architecture {arch!r}; accepted: {', '.join(SEQUENCE_ARCHS)}"
            )
        self.arch = arch
        self.register_buffer("embeddings", embeddings)
        dim = embeddings.shape[1]
        if arch == "transformer":
            self.pos = nn.Parameter(0.02 * torch.randn(1, length, dim))
            block = nn.TransformerEncoderLayer(
                dim, 4, dim_feedforward=2 * width, dropout=0.0, batch_first=True, norm_first=True
            )
            self.body = nn.TransformerEncoder(block, 2, enable_nested_tensor=False)
            features = dim
        elif arch == "lstm":
            self.body = nn.LSTM(dim, width, batch_first=True, bidirectional=True)
            features = 2 * width
        else:
            self.body = nn.Sequential(
                nn.Flatten(),
                nn.Linear(length * dim, width),
                nn.ReLU(),
                nn.Linear(width, width),
                nn.ReLU(),
            )
            features = width
        self.head = nn.Linear(features, n_classes)

    def from_embeddings(self, e: torch.Tensor) -> torch.Tensor:
        if self.arch == "transformer":
            h = self.body(e + self.pos).mean(1)
        elif self.arch == "lstm":
            h = self.body(e)[0].mean(1)
        else:
            h = self.body(e)
        return self.head(h)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.from_embeddings(self.embeddings[ids])


def sentiment_task(
    n: int, length: int = 16, vocab: int = 32, signed: int = 8, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """A synthetic sequence classification task with a planted rule.

    Token ids are uniform over ``vocab``; the first ``signed`` ids are positive words,
    the next ``signed`` negative, the rest neutral. The label is 1 when a sequence
    holds more positive than negative words (sequences with a tie are redrawn), like
    a bag-of-words sentiment. Returns ids (n, length) and labels (n,).
    """
    if 2 * signed > vocab or min(n, length, signed) < 1:
        raise ValueError(
            f"sentiment_task needs n, length, signed >= 1 and 2 signed <= vocab; "
            f"got n={n}, length={length}, vocab={vocab}, signed={signed}"
        )
    rng = np.random.default_rng([seed, 3])
    kept: list[np.ndarray] = []
    while sum(len(k) for k in kept) < n:
        ids = rng.integers(0, vocab, (2 * n, length))
        score = (ids < signed).sum(1) - ((ids >= signed) & (ids < 2 * signed)).sum(1)
        kept.append(np.c_[ids[score != 0], score[score != 0] > 0])
    rows = np.concatenate(kept)[:n]
    return torch.from_numpy(rows[:, :-1]).long(), torch.from_numpy(rows[:, -1]).long()
