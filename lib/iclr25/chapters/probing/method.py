"""The probes and their training: the attribution methods and probe kinds by name, the
backbone, the linear, MLP and B-cos probes, the CE/BCE loss, training to convergence;
then the backbones' pre-training (supervised, SimCLR)."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core, vision
from iclr25.core import ParameterError

METHODS = ("ixg", "ig", "gbp", "gradcam", "lrp", "lime")
"""The six post-hoc attribution methods, in the order of the figures."""
BCOS = "bcos"
"""The B-cos contribution map W(x) x, for B-cos probes only."""
METHOD_NAMES = {
    "ixg": "IxG",
    "ig": "IntGrad",
    "gbp": "GuidedBP",
    "gradcam": "GradCAM",
    "lrp": "LRP",
    "lime": "LIME",
    "bcos": "B-cos W(x)x",
}
PROBES = ("linear", "linear_nobias", "mlp2", "mlp3", "bcos2")
"""Linear with and without bias, 2- and 3-layer ReLU MLPs, a 2-layer B-cos MLP."""
LOSSES = ("ce", "bce")
PARADIGMS = ("supervised", "simclr")
"""How the backbone was pre-trained."""


def _accepted(kind: str, value: object, accepted: Sequence[str]) -> ParameterError:
    return ParameterError(f"unknown {kind} {value!r}; accepted: {', '.join(accepted)}")


def methods_for(probe: str, methods: Sequence[str] = METHODS) -> list[str]:
    """The attribution methods that apply to ``probe``: LRP has no rule for the B-cos
    layers, and the B-cos contribution map exists for B-cos probes only."""
    if probe not in PROBES:
        raise _accepted("probe", probe, PROBES)
    if probe == "bcos2":
        return [m for m in methods if m != "lrp"] + [BCOS]
    return list(methods)


def parse_methods(text: str) -> list[str]:
    """``"ixg,gradcam"`` -> ``["ixg", "gradcam"]``; unknown names are refused."""
    names = [t.strip() for t in str(text).split(",") if t.strip()]
    for name in names:
        if name not in METHODS:
            raise _accepted("method", name, METHODS)
    if not names or len(set(names)) != len(names):
        raise ParameterError(f"methods must name distinct methods from: {', '.join(METHODS)}")
    return names


# ---------------------------------------------------------------------------------
# Backbone and probes
# ---------------------------------------------------------------------------------


class Backbone(nn.Module):
    """Three conv-BN-ReLU blocks, the first ``pools`` of them max-pooled, then global
    average pooling.

    Every layer is its own module (captum's LRP and guided backprop need that), and
    global pooling lets a 2x2 grid of the 16x16 training images pass through. With one
    max-pool a unit of the last convolution sees 12 x 12 pixels, less than a 16-pixel
    GridPG cell (see :func:`receptive_field`); with two it sees 18 x 18, more than a
    cell, so no unit of it can tell one cell from its neighbour.
    """

    def __init__(self, width: int = 8, in_channels: int = 1, pools: int = 2) -> None:
        super().__init__()
        c = (width, 2 * width, 4 * width)
        layers: list[nn.Module] = []
        for i, (c_in, c_out) in enumerate(zip((in_channels, *c[:2]), c)):
            layers += [nn.Conv2d(c_in, c_out, 3, padding=1), nn.BatchNorm2d(c_out), nn.ReLU()]
            if i < pools:
                layers.append(nn.MaxPool2d(2))
        self.features = nn.Sequential(*layers)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dim = c[2]

    @property
    def last_conv(self) -> nn.Conv2d:
        return [m for m in self.features if isinstance(m, nn.Conv2d)][-1]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.flatten(self.pool(self.features(x)), 1)


class BcosLinear(nn.Module):
    """B-cos linear layer (official ``BcosLinear``): unit-norm weight rows w, a max-out
    over ``max_out`` units per output, and out = |w.x|^(B-1) / ||x||^(B-1) * (w.x),
    for B = 2: |cos(x, w)| (w.x). No bias. In ``detach`` mode (explanation mode) the
    dynamic scale |w.x| / ||x|| is a constant, so out = W(x) x exactly."""

    def __init__(self, in_features: int, out_features: int, max_out: int = 2, b: float = 2):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.max_out, self.b, self.detach = max_out, b, False
        self.weight = nn.Parameter(torch.empty(out_features * max_out, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self.weight / self.weight.norm(dim=1, keepdim=True)
        out = F.linear(x, w)
        if self.max_out > 1:
            out = out.unflatten(-1, (self.out_features, self.max_out)).amax(-1)
        norm = x.norm(dim=-1, keepdim=True) + 1e-12
        scale_of, norm_of = (out.detach(), norm.detach()) if self.detach else (out, norm)
        return (scale_of.abs() / norm_of) ** (self.b - 1) * out


class BcosMLP(nn.Module):
    """Two B-cos layers, each followed by a positive per-channel gain (the official
    head's uncentred batch norm without bias, as it acts in eval mode), then the fixed
    logit bias -log(K - 1) of the official ``LogitLayer``."""

    def __init__(self, d: int, hidden: int, k: int) -> None:
        super().__init__()
        self.fc0, self.fc1 = BcosLinear(d, hidden), BcosLinear(hidden, k)
        self.log_gain0 = nn.Parameter(torch.zeros(hidden))
        self.log_gain1 = nn.Parameter(torch.zeros(k))
        self.register_buffer("logit_bias", torch.tensor(-math.log(max(k - 1, 1))))

    def forward(self, f: torch.Tensor) -> torch.Tensor:
        h = self.fc0(f) * self.log_gain0.exp()
        return self.fc1(h) * self.log_gain1.exp() + self.logit_bias


def make_probe(kind: str, d: int, k: int, width: int = 32) -> nn.Module:
    """A fresh probe of ``kind`` from ``d`` pooled features to ``k`` logits."""
    if kind == "linear":
        return nn.Linear(d, k)
    if kind == "linear_nobias":
        return nn.Linear(d, k, bias=False)
    if kind == "mlp2":
        return nn.Sequential(nn.Linear(d, width), nn.ReLU(), nn.Linear(width, k))
    if kind == "mlp3":
        return nn.Sequential(
            nn.Linear(d, width), nn.ReLU(), nn.Linear(width, width), nn.ReLU(), nn.Linear(width, k)
        )
    if kind == "bcos2":
        return BcosMLP(d, width, k)
    raise _accepted("probe", kind, PROBES)


def feature_scale(features: torch.Tensor) -> torch.Tensor:
    """1 / root-mean-square of each pooled feature over the training images: the probe
    reads features of unit scale whatever the backbone (no centring, so no bias enters
    a probe that has none, and B-cos layers stay homogeneous)."""
    return 1.0 / features.pow(2).mean(0).sqrt().clamp(min=1e-6)


class Probed(nn.Module):
    """probe(scale * backbone(x)): the model whose attributions are evaluated."""

    def __init__(self, backbone: Backbone, probe: nn.Module, scale: torch.Tensor) -> None:
        super().__init__()
        self.backbone, self.probe = backbone, probe
        self.register_buffer("scale", scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.probe(self.backbone(x) * self.scale)


def loss_weight(loss: str | float) -> float:
    """The BCE weight a of a loss: "ce" is 0, "bce" is 1, a number in [0, 1] itself."""
    if isinstance(loss, str):
        if loss not in LOSSES:
            raise _accepted("loss", loss, LOSSES)
        return float(loss == "bce")
    if not 0.0 <= float(loss) <= 1.0:
        raise ParameterError(f"loss weight {loss!r} is outside [0, 1]; accepted: 'ce', 'bce'")
    return float(loss)


def probe_loss(logits: torch.Tensor, y: torch.Tensor, loss: str | float) -> torch.Tensor:
    """(1 - a) CE + a BCE, a = :func:`loss_weight` (CE 0, BCE 1): softmax
    cross-entropy, and binary cross-entropy (mean over classes and images) on targets
    t_k = max(y_k, 1/K) of the K classes, the official
    ``UniformOffLabelsBCEWithLogitsLoss`` (on-class 1, off-class 1/K)."""
    a = loss_weight(loss)
    total = logits.new_zeros(())
    if a < 1:
        total = total + (1 - a) * F.cross_entropy(logits, y)
    if a > 0:
        k = logits.shape[-1]
        target = F.one_hot(y, k).to(logits.dtype).clamp(min=1.0 / k)
        total = total + a * F.binary_cross_entropy_with_logits(logits, target)
    return total


def train_probe(
    features: torch.Tensor,
    y: torch.Tensor,
    kind: str,
    loss: str | float,
    *,
    seed: int,
    val: tuple[torch.Tensor, torch.Tensor] | None = None,
    max_iter: int = 1000,
    chunk: int = 25,
    tol: float = 1e-4,
    width: int = 32,
) -> nn.Module:
    """Fit a probe on frozen, precomputed (scaled) features until it stops improving,
    as the paper trains its probes to convergence: full-batch L-BFGS (strong-Wolfe line
    search, no weight decay), in chunks of ``chunk`` iterations, stopped when a chunk
    lowers the training loss by less than a fraction ``tol`` or, given ``val``
    (features, labels), when the validation loss has not improved for two chunks (the
    best-validation weights are kept: an MLP on a few thousand images would otherwise
    converge by memorising them); at most ``max_iter`` iterations. Returned in eval mode
    with ``probe.fit = {"iterations", "loss", "stopped"}``."""
    a = loss_weight(loss)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        probe = make_probe(kind, features.shape[1], int(y.max()) + 1, width)
    optimiser = torch.optim.LBFGS(
        probe.parameters(),
        lr=1.0,
        max_iter=chunk,
        tolerance_grad=1e-9,
        tolerance_change=1e-12,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure() -> torch.Tensor:
        optimiser.zero_grad()
        value = probe_loss(probe(features), y, a)
        value.backward()
        return value

    def losses() -> tuple[float, float]:
        with torch.no_grad():
            train = float(probe_loss(probe(features), y, a))
            held = float(probe_loss(probe(val[0]), val[1], a)) if val is not None else train
        return train, held

    train, best = losses()
    best_state, stale, done, stopped = copy.deepcopy(probe.state_dict()), 0, 0, "max_iter"
    while done < max_iter:
        optimiser.step(closure)
        done += chunk
        new_train, held = losses()
        if held < best:
            best, best_state, stale = held, copy.deepcopy(probe.state_dict()), 0
        else:
            stale += 1
        if train - new_train < tol * abs(train):
            stopped = "converged"
            break
        if stale >= 2:
            stopped = "validation"
            break
        train = new_train
    probe.load_state_dict(best_state)
    probe.fit = {"iterations": done, "loss": losses()[0], "stopped": stopped}
    return probe.eval()


def confidence(logits: torch.Tensor, loss: str | float) -> torch.Tensor:
    """The probe's probabilities as its loss reads them: softmax for a CE probe,
    the sigmoid of each logit otherwise (the official script's convention)."""
    return logits.softmax(-1) if loss_weight(loss) == 0 else logits.sigmoid()


# ---------------------------------------------------------------------------------
# Pre-training the backbones
# ---------------------------------------------------------------------------------


def augment(
    x: torch.Tensor, generator: torch.Generator, shift: int = 2, low: float = 0.6
) -> torch.Tensor:
    """SimCLR views of small images: a random resized crop (area ``low`` to 1 of the
    image, aspect ratio 3/4 to 4/3) shifted by up to ``shift`` pixels, one affine warp,
    then pixel noise. No flips or rotations: they would make a digit and its mirror
    (2 and 5, 6 and 9) one view of the same thing."""
    n, _, h, w = x.shape
    area = low + (1 - low) * torch.rand(n, generator=generator)
    aspect = ((2 * torch.rand(n, generator=generator) - 1) * math.log(4 / 3)).exp()
    t = torch.randint(-shift, shift + 1, (n, 2), generator=generator).float()
    theta = torch.zeros(n, 2, 3)
    theta[:, 0, 0], theta[:, 1, 1] = (area * aspect).sqrt(), (area / aspect).sqrt()
    theta[:, 0, 2], theta[:, 1, 2] = 2 * t[:, 0] / w, 2 * t[:, 1] / h
    grid = F.affine_grid(theta, list(x.shape), align_corners=False)
    views = F.grid_sample(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    noise = 0.1 * torch.randn(views.shape, generator=generator)
    return (views + noise).clamp(0, 1)


def nt_xent(z1: torch.Tensor, z2: torch.Tensor, temperature: float = 0.5) -> torch.Tensor:
    """SimCLR's NT-Xent: each view's positive is the other view of its image, among the
    2N - 1 other views; cosine similarities divided by the temperature."""
    z = F.normalize(torch.cat([z1, z2]), dim=1)
    n = len(z1)
    sim = z @ z.T / temperature
    sim = sim.masked_fill(torch.eye(2 * n, dtype=torch.bool), float("-inf"))
    target = torch.cat([torch.arange(n, 2 * n), torch.arange(n)])
    return F.cross_entropy(sim, target)


def pretrain(
    paradigm: str,
    data: vision.ImageData,
    *,
    width: int = 8,
    pools: int = 2,
    epochs: int = 8,
    batch_size: int = 256,
    lr: float = 3e-3,
    temperature: float = 0.5,
    seed: int = 0,
) -> Backbone:
    """A backbone pre-trained by ``paradigm`` on ``data.train``, frozen (eval mode, no
    gradients); cached by configuration, which it keeps as ``backbone.key``.
    "supervised": CE through a linear head; "simclr": NT-Xent on two :func:`augment`
    views through a 2-layer projection head (dropped after)."""
    if paradigm not in PARADIGMS:
        raise _accepted("pre-training paradigm", paradigm, PARADIGMS)
    config = {
        "paradigm": paradigm,
        "data": {**data.spec, "train": vision._fingerprint(data.train)},
        "width": width,
        "pools": pools,
        "epochs": epochs,
        "batch_size": batch_size,
        "lr": lr,
        "temperature": temperature,
        "seed": seed,
    }

    def build() -> dict[str, torch.Tensor]:
        with torch.random.fork_rng(devices=[]), core.threads(1):
            torch.manual_seed(seed)
            backbone = Backbone(width, data.shape[0], pools)
            d = backbone.dim
            head = (
                nn.Linear(d, data.n_classes)
                if paradigm == "supervised"
                else nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d // 2))
            )
            model = nn.Sequential(backbone, head)
            order = torch.Generator().manual_seed(seed)
            x, y = data.train.x, data.train.y

            def batches():
                perm = torch.randperm(len(y), generator=order)
                for start in range(0, len(y) - batch_size // 2, batch_size):
                    yield perm[start : start + batch_size]

            def loss_fn(net: nn.Module, idx: torch.Tensor) -> torch.Tensor:
                if paradigm == "supervised":
                    return F.cross_entropy(net(x[idx]), y[idx])
                v1, v2 = augment(x[idx], order), augment(x[idx], order)
                return nt_xent(net(v1), net(v2), temperature)

            core.train(model, batches, loss_fn, epochs=epochs, lr=lr, progress=False)
            return backbone.state_dict()

    backbone = Backbone(width, data.shape[0], pools)
    backbone.load_state_dict(core.cached("probing-backbone", config, build))
    for parameter in backbone.parameters():
        parameter.requires_grad_(False)
    backbone.key = config
    return backbone.eval()


def receptive_field(backbone: Backbone) -> int:
    """Side in pixels of the input window one unit of the last convolution sees."""
    field, jump = 1, 1
    for module in backbone.features:
        if isinstance(module, (nn.Conv2d, nn.MaxPool2d)):
            k = module.kernel_size if isinstance(module.kernel_size, int) else module.kernel_size[0]
            s = module.stride if isinstance(module.stride, int) else module.stride[0]
            field, jump = field + (k - 1) * jump, jump * s
        if module is backbone.last_conv:
            break
    return field


@torch.no_grad()
def pooled(backbone: Backbone, x: torch.Tensor, batch: int = 1024) -> torch.Tensor:
    """The frozen backbone's pooled features of images ``x``."""
    return torch.cat([backbone(x[i : i + batch]) for i in range(0, len(x), batch)])


def fit_probes(
    backbone: Backbone,
    data: vision.ImageData,
    kinds: Sequence[str],
    losses: Sequence[str | float],
    seeds: Sequence[int],
    *,
    max_iter: int = 1000,
    width: int = 32,
) -> dict[tuple[str, str | float, int], Probed]:
    """Every probe (kind, loss, seed) of ``backbone`` by :func:`train_probe` on its
    scaled pooled features (:func:`feature_scale`), with validation stopping; cached by
    the backbone's key and the probes' settings. (kind, loss, seed) -> frozen model."""
    config = {
        "backbone": backbone.key,
        "kinds": list(kinds),
        "losses": [loss_weight(loss) for loss in losses],
        "seeds": list(seeds),
        "max_iter": max_iter,
        "width": width,
        "loss": "uniform off-labels BCE",
    }
    train_f, val_f = pooled(backbone, data.train.x), pooled(backbone, data.val.x)
    scale = feature_scale(train_f)
    keys = [(kind, loss, s) for kind in kinds for loss in losses for s in seeds]

    def build() -> list[dict]:
        fitted = []
        with core.threads(1):
            for kind, loss, s in keys:
                probe = train_probe(
                    train_f * scale,
                    data.train.y,
                    kind,
                    loss,
                    seed=s,
                    val=(val_f * scale, data.val.y),
                    max_iter=max_iter,
                    width=width,
                )
                fitted.append({"state": probe.state_dict(), "fit": probe.fit})
        return fitted

    models = {}
    for key, stored in zip(keys, core.cached("probing-probes", config, build)):
        probe = make_probe(key[0], backbone.dim, data.n_classes, width)
        probe.load_state_dict(stored["state"])
        probe.fit = stored["fit"]
        models[key] = Probed(backbone, probe.eval(), scale)
    return models
