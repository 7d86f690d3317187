"""Small offline vision: image datasets, small classifiers and a cached training run.

Several chapters train small image classifiers (selective classification, sufficient
subsets, sensitivity, probing, mode connectivity). This module is what they share:

* :func:`load` -- a dataset by name, with fixed train/validation/test splits drawn
  from a seed. Nothing is downloaded: ``"digits"`` is scikit-learn's bundled 8x8
  digits, ``"digits16"`` the same upsampled to 16x16, and two harder sets are drawn
  here: ``"noisy_digits"`` (digits rescaled, shifted, with a distractor stroke and
  pixel noise on a 16x16 canvas) and ``"shapes"`` (six procedurally drawn shapes,
  rotated and scaled, with noise and a distractor). The generated sets also return
  the object's pixel mask, a ground truth for attribution chapters.
* :class:`ModelConfig` and :func:`build` -- an MLP, a small CNN or a small vision
  transformer (patch tokens) from one config, each a :class:`Classifier` with a
  ``backbone`` (features) and a linear ``head`` (logits).
* :class:`TrainConfig` and :func:`train` -- cross-entropy training with optional
  label smoothing and a step learning-rate schedule, through
  :func:`iclr25.core.train` (Adam or SGD) and cached by configuration through
  :func:`iclr25.core.cached`.
* :func:`image_grid` -- images in a grid of plotly heatmaps with a title each.

The layers come from torch (``nn.TransformerEncoder`` for the transformer), the
label smoothing from ``F.cross_entropy(label_smoothing=...)``; only the data
generators are written here, since no offline package ships such images.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from scipy import ndimage
from torch import nn

from iclr25 import core

if TYPE_CHECKING:
    import plotly.graph_objects as go

SPLITS = ("train", "val", "test")
FRACTIONS = (0.6, 0.2, 0.2)  # train / validation / test

# ---------------------------------------------------------------------------------
# Datasets
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Split:
    """Images ``x`` (n, channels, height, width) in [0, 1], labels ``y`` (n,) and,
    for generated sets, the object's pixel ``mask`` (n, height, width)."""

    x: torch.Tensor
    y: torch.Tensor
    mask: torch.Tensor | None = None

    def __len__(self) -> int:
        return len(self.y)


@dataclass(frozen=True)
class ImageData:
    """A dataset with fixed splits. ``spec`` (name, seed, n) identifies it in caches."""

    name: str
    classes: tuple[str, ...]
    train: Split
    val: Split
    test: Split
    spec: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int, int]:
        """(channels, height, width) of one image."""
        return tuple(self.train.x.shape[1:])  # type: ignore[return-value]

    @property
    def n_classes(self) -> int:
        return len(self.classes)

    def split(self, name: str) -> Split:
        """The split ``"train"``, ``"val"`` or ``"test"``."""
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; accepted: {', '.join(SPLITS)}")
        return getattr(self, name)


def _sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 bundled 8x8 digits, scaled to [0, 1]."""
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return (bunch.images / 16.0).astype(np.float32), bunch.target.astype(np.int64)


def _split_indices(n: int, rng: np.random.Generator) -> list[np.ndarray]:
    """A random partition of range(n) into train/validation/test by FRACTIONS."""
    order = rng.permutation(n)
    cuts = np.cumsum([round(f * n) for f in FRACTIONS[:-1]])
    return np.split(order, cuts)


def _line(
    canvas: np.ndarray, rng: np.random.Generator, length: tuple[float, float], value: float
) -> None:
    """Draw a straight stroke of random position, angle and length onto ``canvas``."""
    h, w = canvas.shape
    start = rng.uniform(0, [h, w])
    angle, size = rng.uniform(0, np.pi), rng.uniform(*length)
    t = np.linspace(0, size, 4 * int(size) + 2)[:, None]
    points = np.rint(start + t * [np.sin(angle), np.cos(angle)]).astype(int)
    inside = (points >= 0).all(1) & (points < [h, w]).all(1)
    canvas[points[inside, 0], points[inside, 1]] = np.maximum(
        canvas[points[inside, 0], points[inside, 1]], value
    )


def _finish(
    objects: np.ndarray, rng: np.random.Generator, noise: float, distractor: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """Add one distractor stroke and Gaussian pixel noise; clip to [0, 1].

    Returns the images and the object masks (object pixels above 0.25 before clutter).
    """
    masks = objects > 0.25
    images = objects.copy()
    for image in images:
        _line(image, rng, distractor, rng.uniform(0.5, 1.0))
    images += noise * rng.standard_normal(images.shape).astype(np.float32)
    return np.clip(images, 0.0, 1.0), masks


def _noisy_digits(
    base: np.ndarray, rng: np.random.Generator, size: int = 16, noise: float = 0.25, jitter: int = 1
) -> tuple[np.ndarray, np.ndarray]:
    """Each 8x8 digit rescaled to 10-14 pixels, placed up to ``jitter`` pixels off the
    centre of a ``size`` x ``size`` canvas, with a distractor stroke and pixel noise."""
    objects = np.zeros((len(base), size, size), np.float32)
    for k, digit in enumerate(base):
        glyph = np.clip(ndimage.zoom(digit, int(rng.integers(10, 15)) / 8, order=1), 0, 1)
        top = [(size - side) // 2 for side in glyph.shape]
        r, c = np.clip(
            top + rng.integers(-jitter, jitter + 1, size=2),
            0,
            [size - side for side in glyph.shape],
        )
        objects[k, r : r + glyph.shape[0], c : c + glyph.shape[1]] = glyph
    return _finish(objects, rng, noise, distractor=(4, 9))


SHAPES = ("disc", "ring", "square", "frame", "triangle", "cross")


def _shape_mask(kind: str, u: np.ndarray, v: np.ndarray, radius: float) -> np.ndarray:
    """Pixels inside shape ``kind`` of size ``radius``, in rotated coordinates (u, v)."""
    r, box = np.hypot(u, v), np.maximum(abs(u), abs(v))
    if kind == "disc":
        return r <= radius
    if kind == "ring":
        return (r <= radius) & (r >= 0.55 * radius)
    if kind == "square":
        return box <= 0.8 * radius
    if kind == "frame":
        return (box <= 0.85 * radius) & (box >= 0.45 * radius)
    if kind == "triangle":  # equilateral: three half-planes at distance radius / 2
        normals = [(np.cos(a), np.sin(a)) for a in np.pi / 2 + 2 * np.pi * np.arange(3) / 3]
        return np.all([nu * u + nv * v <= radius / 2 for nu, nv in normals], axis=0)
    if kind == "cross":
        arm = 0.3 * radius
        return ((abs(u) <= arm) & (abs(v) <= radius)) | ((abs(v) <= arm) & (abs(u) <= radius))
    raise ValueError(f"unknown shape {kind!r}; accepted: {', '.join(SHAPES)}")


def _shapes(
    labels: np.ndarray,
    rng: np.random.Generator,
    size: int = 16,
    noise: float = 0.15,
    radius: tuple[float, float] = (4.0, 6.5),
) -> tuple[np.ndarray, np.ndarray]:
    """Shape ``SHAPES[label]`` with random radius (in ``radius`` pixels), rotation,
    centre and brightness on a ``size`` x ``size`` canvas, with a distractor stroke and
    pixel noise. Small rotated shapes on a coarse grid are genuinely ambiguous (a
    square and a disc of radius 4 differ by a few pixels): the errors are not all
    for lack of data."""
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float32)
    objects = np.zeros((len(labels), size, size), np.float32)
    for k, label in enumerate(labels):
        r = rng.uniform(*radius)
        centre = rng.uniform(r - 1, size - r, size=2)
        angle = rng.uniform(0, 2 * np.pi)
        dr, dc = rows - centre[0], cols - centre[1]
        u, v = np.cos(angle) * dc + np.sin(angle) * dr, -np.sin(angle) * dc + np.cos(angle) * dr
        objects[k] = rng.uniform(0.6, 1.0) * _shape_mask(SHAPES[label], u, v, r)
    return _finish(objects, rng, noise, distractor=(3, 7))


def _to_split(images: np.ndarray, labels: np.ndarray, masks: np.ndarray | None = None) -> Split:
    return Split(
        torch.from_numpy(np.ascontiguousarray(images, np.float32)).unsqueeze(1),
        torch.from_numpy(labels.astype(np.int64)),
        None if masks is None else torch.from_numpy(masks),
    )


DATASETS = ("digits", "digits16", "noisy_digits", "shapes")


@functools.lru_cache(maxsize=16)
def load(name: str, seed: int = 0, n: int | None = None) -> ImageData:
    """The dataset ``name`` with train/validation/test splits (60/20/20) fixed by ``seed``.

    ``"digits"`` and ``"digits16"`` split scikit-learn's 1,797 digits (``n`` must stay
    None). ``"noisy_digits"`` splits the 1,797 base digits first and then draws ``n``
    noisy variants (default 6,000) from each split's own digits, so no digit crosses
    splits. ``"shapes"`` draws ``n`` images (default 6,000) from three independent
    streams. The same arguments always give the same tensors (the result is memoised:
    treat it as read-only).
    """
    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; accepted: {', '.join(DATASETS)}")
    if n is not None and (name in ("digits", "digits16") or n < 10):
        raise ValueError(
            f"dataset {name!r} got n={n}; accepted: n=None for 'digits' and "
            "'digits16', an int >= 10 for 'noisy_digits' and 'shapes'"
        )
    sizes = [round(f * (6000 if n is None else n)) for f in FRACTIONS]
    if name == "shapes":
        splits = []
        for k, size in enumerate(sizes):
            rng = np.random.default_rng([seed, 2, k])
            labels = rng.integers(0, len(SHAPES), size)
            images, masks = _shapes(labels, rng)
            splits.append(_to_split(images, labels, masks))
        return ImageData(name, SHAPES, *splits, spec={"name": name, "seed": seed, "n": n})

    images, labels = _sklearn_digits()
    parts = _split_indices(len(labels), np.random.default_rng([seed, 0]))
    if name == "digits":
        splits = [_to_split(images[i], labels[i]) for i in parts]
    elif name == "digits16":
        up = (
            F.interpolate(
                torch.from_numpy(images).unsqueeze(1), size=16, mode="bilinear", align_corners=False
            )
            .squeeze(1)
            .numpy()
        )
        splits = [_to_split(up[i], labels[i]) for i in parts]
    else:
        splits = []
        for k, (index, size) in enumerate(zip(parts, sizes)):
            rng = np.random.default_rng([seed, 1, k])
            chosen = rng.choice(index, size=size, replace=True)
            noisy, masks = _noisy_digits(images[chosen], rng)
            splits.append(_to_split(noisy, labels[chosen], masks))
    return ImageData(
        name, tuple(str(d) for d in range(10)), *splits, spec={"name": name, "seed": seed, "n": n}
    )


# ---------------------------------------------------------------------------------
# Models
# ---------------------------------------------------------------------------------

ARCHS = ("mlp", "cnn", "vit")


@dataclass(frozen=True)
class ModelConfig:
    """One small classifier. ``width``: hidden units (MLP), channels of the first
    block, doubled per block (CNN), or token dimension (ViT). ``depth``: hidden layers,
    convolution blocks or transformer blocks. ``patch`` and ``heads``: ViT only."""

    arch: str
    in_shape: tuple[int, int, int]
    n_classes: int
    width: int = 64
    depth: int = 2
    patch: int = 4
    heads: int = 4

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"unknown architecture {self.arch!r}; accepted: {', '.join(ARCHS)}")
        for name in ("width", "depth", "n_classes", "patch", "heads"):
            if int(getattr(self, name)) < 1:
                raise ValueError(
                    f"ModelConfig.{name} must be a positive int, got {getattr(self, name)!r}"
                )
        object.__setattr__(self, "in_shape", tuple(int(s) for s in self.in_shape))
        _, h, w = self.in_shape
        if self.arch == "vit" and (h % self.patch or w % self.patch or self.width % self.heads):
            raise ValueError(
                f"ViT needs patch {self.patch} to divide the image size {h}x{w} and "
                f"heads {self.heads} to divide width {self.width}"
            )

    @classmethod
    def for_data(cls, arch: str, data: ImageData, **kwargs: int) -> ModelConfig:
        """A config whose input shape and class count are those of ``data``."""
        return cls(arch, data.shape, data.n_classes, **kwargs)


class Classifier(nn.Module):
    """``head(backbone(x))``: features from the backbone, logits from one linear head."""

    def __init__(self, backbone: nn.Module, features: int, n_classes: int) -> None:
        super().__init__()
        self.backbone = backbone
        self.head = nn.Linear(features, n_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.backbone(x))


class ViTBackbone(nn.Module):
    """Vision transformer: non-overlapping patches -> tokens, a [CLS] token and learned
    positions, pre-norm ``nn.TransformerEncoder`` blocks; the [CLS] output is the feature."""

    def __init__(
        self, in_shape: tuple[int, int, int], width: int, depth: int, patch: int, heads: int
    ) -> None:
        super().__init__()
        c, h, w = in_shape
        self.embed = nn.Conv2d(c, width, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, width))
        self.pos = nn.Parameter(0.02 * torch.randn(1, (h // patch) * (w // patch) + 1, width))
        block = nn.TransformerEncoderLayer(
            width,
            heads,
            dim_feedforward=2 * width,
            dropout=0.0,
            activation="gelu",
            batch_first=True,
            norm_first=True,
        )
        self.encoder = nn.TransformerEncoder(block, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tokens = self.embed(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([self.cls.expand(len(x), -1, -1), tokens], dim=1) + self.pos
        return self.norm(self.encoder(tokens)[:, 0])


def build(config: ModelConfig) -> Classifier:
    """A freshly initialised :class:`Classifier` for ``config`` (seed torch first)."""
    c, h, w = config.in_shape
    if config.arch == "mlp":
        layers: list[nn.Module] = [nn.Flatten()]
        for k in range(config.depth):
            layers += [nn.Linear(c * h * w if k == 0 else config.width, config.width), nn.ReLU()]
        return Classifier(nn.Sequential(*layers), config.width, config.n_classes)
    if config.arch == "cnn":
        layers, channels, side = [], c, min(h, w)
        for k in range(config.depth):
            out = config.width * 2**k
            layers += [nn.Conv2d(channels, out, 3, padding=1), nn.BatchNorm2d(out), nn.ReLU()]
            if side >= 4:  # pool while the map is at least 4 pixels wide
                layers.append(nn.MaxPool2d(2))
                h, w, side = h // 2, w // 2, side // 2
            channels = out
        hidden = 2 * channels
        layers += [nn.Flatten(), nn.Linear(channels * h * w, hidden), nn.ReLU()]
        return Classifier(nn.Sequential(*layers), hidden, config.n_classes)
    backbone = ViTBackbone(config.in_shape, config.width, config.depth, config.patch, config.heads)
    return Classifier(backbone, config.width, config.n_classes)


# ---------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainConfig:
    """Minibatch training of cross-entropy against labels smoothed by ``label_smoothing``
    (alpha: targets (1 - alpha) y + alpha / K) with ``optimizer``: ``"adamw"`` (Adam,
    decoupled ``weight_decay``) or ``"sgd"`` (momentum 0.9), as :func:`iclr25.core.train`.

    The schedule is a step: ``lr`` for the first ``epochs - anneal_epochs`` epochs,
    ``lr / 10`` for the last ``anneal_epochs`` (which settles the last iterate), with a
    fresh optimiser for each; or, with ``milestones``, one optimiser throughout whose rate
    is divided by 10 after each epoch listed (as :func:`iclr25.core.train`). ``seed``
    fixes the initialisation and the batch order. ``threads`` is the number of CPU
    threads torch may use while training (:func:`iclr25.core.threads`).
    """

    epochs: int = 20
    batch_size: int = 64
    lr: float = 1e-3
    weight_decay: float = 0.0
    label_smoothing: float = 0.0
    anneal_epochs: int = 0
    seed: int = 0
    threads: int = 1
    optimizer: str = "adamw"
    milestones: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if self.optimizer not in ("adamw", "sgd"):
            raise ValueError(f"optimizer must be 'adamw' or 'sgd', got {self.optimizer!r}")
        if not 0.0 <= self.label_smoothing < 1.0:
            raise ValueError(f"label_smoothing must be in [0, 1), got {self.label_smoothing!r}")
        if not 0 <= self.anneal_epochs < self.epochs:
            raise ValueError(f"anneal_epochs must be in [0, epochs), got {self.anneal_epochs!r}")
        if list(self.milestones) != sorted(set(self.milestones)) or not all(
            0 < m < self.epochs for m in self.milestones
        ):
            raise ValueError(
                f"milestones must be increasing epochs in (0, epochs), got {self.milestones!r}"
            )
        if self.milestones and self.anneal_epochs:
            raise ValueError("TrainConfig takes milestones or anneal_epochs, not both")
        if self.batch_size < 1 or self.threads < 1 or self.lr <= 0 or self.weight_decay < 0:
            raise ValueError(
                "TrainConfig needs batch_size >= 1, threads >= 1, lr > 0 and "
                f"weight_decay >= 0; got {self}"
            )


class Trained(NamedTuple):
    """A trained classifier (in eval mode) and its mean training loss per epoch."""

    model: Classifier
    losses: list[float]


def _fingerprint(split: Split) -> str:
    """A short hash of a split's tensors: a cache key that changes when the data do."""
    digest = hashlib.sha256(split.x.numpy().tobytes())
    digest.update(split.y.numpy().tobytes())
    return digest.hexdigest()[:16]


def train(
    data: ImageData,
    model: ModelConfig,
    config: TrainConfig,
    *,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> Trained:
    """Train ``model`` on ``data.train`` by ``config``; cached by all three.

    The loss is ``F.cross_entropy(logits, y, label_smoothing=alpha)``, torch's label
    smoothing: cross-entropy against (1 - alpha) one_hot(y) + alpha / K. Training goes
    through :func:`iclr25.core.train` (one call per step of an ``anneal_epochs``
    schedule, so the optimiser's moment estimates restart when the rate drops; one call
    for ``milestones``); the state dict and losses
    through :func:`iclr25.core.cached`, keyed by the dataset's spec and a hash of its
    training split, the model config and the training config.
    """
    device = core.get_device(device) if isinstance(device, str) else device
    key = {
        "data": {**data.spec, "train": _fingerprint(data.train)},
        "model": asdict(model),
        "train": asdict(config),
    }

    def fit() -> dict[str, Any]:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(config.seed)
            net = build(model).to(device)
        x, y = data.train.x.to(device), data.train.y.to(device)
        order = torch.Generator().manual_seed(config.seed)

        def batches() -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
            perm = torch.randperm(len(y), generator=order).to(device)
            for start in range(0, len(y), config.batch_size):
                idx = perm[start : start + config.batch_size]
                yield x[idx], y[idx]

        def loss_fn(net: nn.Module, batch: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
            return F.cross_entropy(net(batch[0]), batch[1], label_smoothing=config.label_smoothing)

        desc = f"{model.arch} on {data.name}, alpha={config.label_smoothing:g}, seed {config.seed}"
        losses: list[float] = []
        steps = [
            (config.lr, config.epochs - config.anneal_epochs),
            (config.lr / 10, config.anneal_epochs),
        ]
        with core.threads(config.threads):
            for lr, epochs in steps:  # each core.train call starts a fresh Adam
                if epochs:
                    losses += core.train(
                        net,
                        batches,
                        loss_fn,
                        epochs=epochs,
                        lr=lr,
                        weight_decay=config.weight_decay,
                        optimizer=config.optimizer,
                        milestones=config.milestones,
                        desc=desc,
                        progress=progress,
                    )
        return {"state": {k: v.cpu() for k, v in net.state_dict().items()}, "losses": losses}

    stored = core.cached("vision-classifier", key, fit)
    net = build(model)
    net.load_state_dict(stored["state"])
    return Trained(net.to(device).eval(), [float(v) for v in stored["losses"]])


@torch.no_grad()
def logits(model: nn.Module, x: torch.Tensor, batch_size: int = 2048) -> torch.Tensor:
    """The model's logits for images ``x``, computed in eval mode, returned on the CPU."""
    model.eval()
    device = next(model.parameters()).device
    return torch.cat(
        [model(x[i : i + batch_size].to(device)).cpu() for i in range(0, len(x), batch_size)]
    )


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def image_grid(
    images: Sequence[np.ndarray | torch.Tensor],
    rows: int,
    cols: int,
    *,
    titles: Sequence[str] | None = None,
    colorscale: str | Sequence[str] = "gray",
    zmin: float | None | Sequence[float | None] = None,
    zmax: float | None | Sequence[float | None] = None,
    hovertemplate: str | None | Sequence[str | None] = None,
    spacing: tuple[float, float] = (0.01, 0.08),
    title_size: int = 10,
    **layout: Any,
) -> go.Figure:
    """``images`` (each h x w, or 1 x h x w) as heatmaps filling a ``rows`` x ``cols``
    grid row by row, top row of each image at the top, square pixels and no axes.

    ``colorscale``, ``zmin``, ``zmax`` and ``hovertemplate`` are one value for every
    image or one per image (NaN pixels show the plot background); ``spacing`` is the
    (horizontal, vertical) gap between cells, ``title_size`` the font size of the
    titles, and ``layout`` goes to ``fig.update_layout`` (title, height, ...).
    """
    from plotly.subplots import make_subplots

    n = len(images)
    if not 0 < n <= rows * cols or (titles is not None and len(titles) != n):
        raise ValueError(
            f"image_grid needs 1 to rows * cols = {rows * cols} images and one "
            f"title per image; got {n} images, "
            f"{'no' if titles is None else len(titles)} titles"
        )

    def each(value: Any) -> list[Any]:
        """One value per image: ``value`` itself when a list or tuple, else repeated."""
        if not isinstance(value, (list, tuple)):
            return [value] * n
        if len(value) != n:
            raise ValueError(f"image_grid got {len(value)} per-image values for {n} images")
        return list(value)

    fig = make_subplots(
        rows=rows,
        cols=cols,
        horizontal_spacing=spacing[0],
        vertical_spacing=spacing[1],
        subplot_titles=titles,
    )
    for k, (image, scale, low, high, hover) in enumerate(
        zip(images, each(colorscale), each(zmin), each(zmax), each(hovertemplate))
    ):
        z = np.asarray(image).reshape(np.shape(image)[-2:])[::-1]
        fig.add_heatmap(
            z=z,
            colorscale=scale,
            zmin=low,
            zmax=high,
            hovertemplate=hover,
            showscale=False,
            row=k // cols + 1,
            col=k % cols + 1,
        )
    fig.update_xaxes(visible=False).update_yaxes(visible=False, scaleanchor="x")
    fig.update_annotations(font_size=title_size)
    return fig.update_layout(**layout)
