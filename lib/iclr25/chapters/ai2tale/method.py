"""AI2TALE's method and its baselines: the relaxed selection (SampleConcrete), the
random-mask step, the prior term, the encoder, selector and predictor, the two-step
training, the evaluation, the cached trained models and the bag-of-words reference."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from iclr25 import core
from iclr25.chapters.ai2tale.corpus import CORPUS_VERSION, PAD, Email, Encoded
from iclr25.chapters.ai2tale.measures import (
    cognitive_true_positive,
    cue_hit,
    is_cognitive,
    label_metrics,
)
from iclr25.core import ParameterError

# ---------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------

METHODS = ("ai2tale", "l2x", "attention", "random")


def check_settings(k: int, tau: float, sigma: float, max_sentences: int, method: str) -> None:
    """One clear line for a setting the method cannot run with."""
    if method not in METHODS:
        raise ParameterError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
    if not 1 <= k <= max_sentences:
        raise ParameterError(f"k got {k!r}; accepted: an integer from 1 to {max_sentences}")
    if not tau > 0:
        raise ParameterError(f"tau got {tau!r}; accepted: a number > 0")
    if not sigma > 0:
        raise ParameterError(f"sigma got {sigma!r}; accepted: a number > 0")


def gumbel(shape: Sequence[int], generator: torch.Generator | None = None) -> torch.Tensor:
    """Standard Gumbel noise -log(-log u), u uniform in (tiny, 1) as the official layer."""
    tiny = torch.finfo(torch.float32).tiny
    u = torch.rand(*shape, generator=generator).clamp_min(tiny)
    return -torch.log(-torch.log(u))


def sample_concrete(
    p: torch.Tensor, tau: float, g_a: torch.Tensor, g_b: torch.Tensor
) -> torch.Tensor:
    """The official SampleConcrete relaxation with p and 1 - p as logits:
    z = e^((g_a + p)/tau) / (e^((g_a + p)/tau) + e^((g_b + 1 - p)/tau)), computed as the
    sigmoid of the difference of the two exponents (the same number, without overflow)
    and kept inside the open interval (0, 1), which float rounding could leave."""
    a = (g_a + p) / tau
    b = (g_b + 1.0 - p) / tau
    eps = torch.finfo(p.dtype).eps
    return torch.sigmoid(a - b).clamp(eps, 1.0 - eps)


def relaxed_random_mask(shape: Sequence[int], temperature: float = 0.5) -> torch.Tensor:
    """Step 1's mask: r ~ Bern(0.5) per sentence, then a relaxed Bernoulli sample with
    logit r and temperature 0.5 (official ``RelaxedBernoulli(0.5, logits=r)``):
    sigmoid((r + log u - log(1 - u)) / temperature)."""
    r = (torch.rand(*shape) > 0.5).float()
    u = torch.rand(*shape).clamp(1e-7, 1 - 1e-7)
    return torch.sigmoid((r + torch.log(u) - torch.log1p(-u)) / temperature)


def topk_mask(scores: torch.Tensor, k: int, valid: torch.Tensor) -> torch.Tensor:
    """Hard top-k over the sentences [N, S]: the k valid (non-empty) sentences with the
    largest scores; an email with fewer valid sentences keeps all of them."""
    masked = scores.masked_fill(~valid, float("-inf"))
    idx = masked.topk(k, dim=-1).indices
    mask = torch.zeros_like(valid).scatter(-1, idx, True)
    return mask & valid


def prior_term(p: torch.Tensor, e: torch.Tensor, sigma: float) -> torch.Tensor:
    """The prior term per email [N]: sum_i p_i (mean_d e_id)^2 / (2 sigma^2)
    + S (log sigma + sigma^2 / 2), over all S sentence slots as the official code."""
    n_slots = p.shape[-1]
    quad = (p * e.mean(-1).square()).sum(-1) / (2 * sigma**2)
    return quad + n_slots * (np.log(sigma) + sigma**2 / 2)


def keras_init(module: nn.Module) -> None:
    """The official model's (Keras') initialisers: embeddings U(-0.05, 0.05), Glorot-uniform
    kernels, zero biases. The prior weighs (mean_d e_id)^2, so it acts on the scale of
    the features; torch's defaults (embeddings N(0, 1)) make them about 30 times larger
    and the prior about a thousand times stronger than in the official code."""
    if isinstance(module, nn.Embedding):
        nn.init.uniform_(module.weight, -0.05, 0.05)
    elif isinstance(module, (nn.Linear, nn.Conv1d)):
        nn.init.xavier_uniform_(module.weight)
        nn.init.zeros_(module.bias)


class Encoder(nn.Module):
    """Sentence encoder: embedding, dropout 0.2, Conv1D (width 3, ReLU), max over tokens."""

    def __init__(self, vocab_size: int, embedding: int, filters: int):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, embedding)
        self.drop = nn.Dropout(0.2)
        self.conv = nn.Conv1d(embedding, filters, 3)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        n, s, t = tokens.shape
        x = self.drop(self.embed(tokens.reshape(n * s, t))).transpose(1, 2)
        return F.relu(self.conv(x)).amax(-1).reshape(n, s, -1)


class Localiser(nn.Module):
    """Encoder, selector (dropout, 100 ReLU, dropout, 100 ReLU, 1) and predictor (sum of
    the weighted sentence vectors, 250 ReLU, 2). ``method`` decides how the selector's
    output weighs the sentences (see :meth:`weights`)."""

    def __init__(self, method: str, vocab_size: int, embedding: int, filters: int,
                 k: int = 1, tau: float = 0.5):  # fmt: skip
        super().__init__()
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; accepted: {', '.join(METHODS)}")
        self.method, self.k, self.tau = method, k, tau
        self.encoder = Encoder(vocab_size, embedding, filters)
        self.selector = nn.Sequential(
            nn.Dropout(0.2), nn.Linear(filters, 100), nn.ReLU(),
            nn.Dropout(0.2), nn.Linear(100, 100), nn.ReLU(), nn.Linear(100, 1),
        )  # fmt: skip
        self.predictor = nn.Sequential(nn.Linear(filters, 250), nn.ReLU(), nn.Linear(250, 2))
        self.apply(keras_init)

    def scores(self, e: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Per-sentence selection scores [N, S]: p (AI2TALE), logits (L2X), attention
        weights (softmax over the valid sentences), uniform noise (random)."""
        if self.method == "random":
            return torch.rand(valid.shape)
        raw = self.selector(e).squeeze(-1)
        if self.method == "ai2tale":
            return torch.sigmoid(raw)
        if self.method == "attention":
            return raw.masked_fill(~valid, float("-inf")).softmax(-1)
        return raw

    def weights(self, scores: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
        """Training weights of the sentences: the relaxed selection."""
        if self.method == "ai2tale":
            return sample_concrete(scores, self.tau, gumbel(scores.shape), gumbel(scores.shape))
        if self.method == "l2x":  # Chen et al.: k Gumbel-softmax draws, max over them
            logits = scores.masked_fill(~valid, float("-inf")).unsqueeze(1)
            draws = (gumbel((len(scores), self.k, scores.shape[-1])) + logits) / self.tau
            return draws.softmax(-1).amax(1)
        if self.method == "attention":
            return scores
        return topk_mask(scores, self.k, valid).float()

    def predict(self, e: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return self.predictor((w.unsqueeze(-1) * e).sum(1))

    def forward(self, tokens: torch.Tensor):
        """Inference: hard top-k selection; returns scores, mask and logits."""
        valid = (tokens != PAD).any(-1)
        e = self.encoder(tokens)
        scores = self.scores(e, valid)
        mask = topk_mask(scores, self.k, valid)
        return scores, mask, self.predict(e, mask.float())


@dataclass(frozen=True)
class Recipe:
    """Training settings (official defaults: Adam 1e-3 with clipnorm 1, 10 epochs,
    batch 128; sigma 0.3, lambda 0.1), and whether to take step (1)."""

    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    sigma: float = 0.3
    lam: float = 0.1
    random_mask_step: bool = True
    seed: int = 0


def _clip_each(params: Sequence[nn.Parameter], max_norm: float = 1.0) -> None:
    # Keras' clipnorm clips every gradient tensor to norm 1 on its own
    for q in params:
        if q.grad is not None:
            norm = q.grad.norm()
            if norm > max_norm:
                q.grad.mul_(max_norm / norm)


def train_step(model: Localiser, opt, tokens, labels, recipe: Recipe) -> float:
    """One batch: for AI2TALE, step (1) (selector frozen, relaxed random masks) if
    the recipe takes it, then step (2) (everything, CE + lambda * prior); the baselines
    take step (2) with CE alone. Returns step (2)'s cross-entropy."""
    valid = (tokens != PAD).any(-1)
    ai2tale = model.method == "ai2tale"
    if ai2tale and recipe.random_mask_step:
        opt.zero_grad()
        e = model.encoder(tokens)
        mask = relaxed_random_mask(valid.shape)
        F.cross_entropy(model.predict(e, mask), labels).backward()
        for q in model.selector.parameters():
            q.grad = None  # frozen: Adam skips a parameter without a gradient
        _clip_each(list(model.parameters()))
        opt.step()
    opt.zero_grad()
    e = model.encoder(tokens)
    scores = model.scores(e, valid)
    ce = F.cross_entropy(model.predict(e, model.weights(scores, valid)), labels)
    loss = ce + recipe.lam * prior_term(scores, e, recipe.sigma).mean() if ai2tale else ce
    loss.backward()
    _clip_each(list(model.parameters()))
    opt.step()
    return float(ce.detach())


def train(
    model: Localiser, data: Encoded, recipe: Recipe, validation: Encoded | None = None
) -> tuple[list[float], list[float]]:
    """Train ``model`` on ``data`` (Adam, clipnorm 1) and keep the epoch with the best
    Label-Accuracy on ``validation`` (the official selection; the last epoch without
    it). Returns the mean CE and the validation accuracy of every epoch."""
    torch.manual_seed(recipe.seed)
    opt = torch.optim.Adam(model.parameters(), lr=recipe.lr)
    curve, val_curve, best, best_state = [], [], -1.0, None
    for _ in range(recipe.epochs):
        model.train()
        order = torch.randperm(len(data))
        losses = []
        for start in range(0, len(data), recipe.batch_size):
            idx = order[start : start + recipe.batch_size]
            losses.append(train_step(model, opt, data.tokens[idx], data.labels[idx], recipe))
        curve.append(float(np.mean(losses)))
        if validation is not None:
            state = torch.get_rng_state()
            acc = evaluate(model, validation, seed=recipe.seed)["accuracy"]
            torch.set_rng_state(state)
            val_curve.append(acc)
            if acc > best:
                best = acc
                best_state = {k: v.clone() for k, v in model.state_dict().items()}
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()
    return curve, val_curve


@torch.no_grad()
def evaluate(model: Localiser, data: Encoded, seed: int = 0) -> dict[str, Any]:
    """Select and predict on ``data``: Label-Accuracy, F1, FPR, FNR, CTP, Cue-Hit, and the
    per-email scores, masks and predictions."""
    model.eval()
    torch.manual_seed(seed)  # the random baseline's draws
    scores, mask, logits = model(data.tokens)
    y_hat = logits.argmax(-1).numpy()
    mask_np = mask.numpy()
    selected = [[t for t, m in zip(texts, row) if m] for texts, row in zip(data.texts, mask_np)]
    labels = data.true_labels.numpy()
    return {
        **label_metrics(labels, y_hat),
        "ctp": cognitive_true_positive(selected, labels),
        "cue_hit": cue_hit(mask_np, data.cues, labels),
        "scores": scores.numpy(),
        "mask": mask_np,
        "pred": y_hat,
        "correct": (y_hat == labels).astype(float),
        "keyword_share": np.array(
            [np.mean([is_cognitive(t) for t in s if t.strip()] or [0.0]) for s in selected]
        ),  # fmt: skip
        "hit": (mask_np & data.cues).sum(1) / np.maximum(data.cues.sum(1), 1),
    }


def train_cached(
    method: str,
    data: Encoded,
    vocab_size: int,
    arch: Mapping[str, Any],
    recipe: Recipe,
    key: Mapping[str, Any],
    validation: Encoded | None = None,
) -> tuple[Localiser, list[float], list[float]]:
    """A trained :class:`Localiser` (best validation epoch), from the cache when ``key``
    (the data's config) and the settings match; built on one thread otherwise. Returns
    the model, its CE curve and its validation-accuracy curve."""
    model = Localiser(method, vocab_size, **arch)
    config = {"method": method, "arch": dict(arch), "recipe": vars(recipe), "data": dict(key),
              "init": "keras", "corpus": CORPUS_VERSION,
              "select": validation is not None}  # fmt: skip

    def build() -> dict[str, Any]:
        torch.manual_seed(recipe.seed)
        fresh = Localiser(method, vocab_size, **arch)
        with core.threads(1):
            curve, val_curve = train(fresh, data, recipe, validation)
        return {"state": fresh.state_dict(), "curve": torch.tensor(curve),
                "val": torch.tensor(val_curve)}  # fmt: skip

    stored = core.cached("ai2tale-model", config, build)
    model.load_state_dict(stored["state"])
    model.eval()
    return model, stored["curve"].tolist(), stored["val"].tolist()


def bag_of_words_accuracy(train: Sequence[Email], test: Sequence[Email], seed: int) -> float:
    """Label-Accuracy of a bag-of-words logistic regression on whole emails (the reference)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    vec = CountVectorizer(token_pattern=r"[a-z0-9]+")
    x_train = vec.fit_transform([" ".join(e.sentences) for e in train])
    clf = LogisticRegression(max_iter=2000, random_state=seed)
    clf.fit(x_train, [e.label for e in train])
    pred = clf.predict(vec.transform([" ".join(e.sentences) for e in test]))
    return float(np.mean(pred == np.array([e.true_label for e in test])))
