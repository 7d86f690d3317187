"""HyperDAS, the chapter's method: the ``ReflectSelect`` hypernetwork (bidding and a
Householder-reflected subspace), its intervention, training and evaluation."""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25 import llm
from iclr25.chapters.hyperdas.data import (
    Example,
    Side,
    encode,
    label_id,
    pair,
    scores,
    weighted_ce,
)
from iclr25.chapters.hyperdas.target import check_layer, hidden, run_with, stacked

# ---------------------------------------------------------------------------------
# HyperDAS
# ---------------------------------------------------------------------------------


def unit(x: torch.Tensor) -> torch.Tensor:
    """``x / ||x||``: the hidden states the hypernetwork reads (official normalisation)."""
    return x / x.norm(dim=-1, keepdim=True).clamp(min=1e-6)


def rotate(x: torch.Tensor, rotary: nn.Module, positions: torch.Tensor) -> torch.Tensor:
    """Rotary positions on ``x`` ``[n, heads, len, head_dim]`` at ``positions`` ``[n, len]``:
    ``x cos + rot(x) sin`` (the official cross-attention and bidding rotate q and k)."""
    cos, sin = rotary(x, positions)
    half = x.shape[-1] // 2
    turned = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos[:, None] + turned * sin[:, None]


def key_positions(mask: torch.Tensor) -> torch.Tensor:
    """The official key positions: ``cumsum(mask) * mask`` (0 at masked keys)."""
    m = mask.long()
    return m.cumsum(1) * m


class CrossAttention(nn.Module):
    """Multi-head cross-attention initialised from a copy of a self-attention's
    projections; rotary positions on q (the instruction's) and on k (``cumsum`` of the
    key mask), as the official ``LlamaAttentionWithCrossAttention``."""

    def __init__(self, attn: nn.Module, norm: nn.Module, rotary: nn.Module, heads: int) -> None:
        super().__init__()
        self.q, self.k = copy.deepcopy(attn.q_proj), copy.deepcopy(attn.k_proj)
        self.v, self.o = copy.deepcopy(attn.v_proj), copy.deepcopy(attn.o_proj)
        self.norm, self.heads, self.rotary = copy.deepcopy(norm), heads, rotary

    def forward(
        self, x: torch.Tensor, positions: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor
    ) -> torch.Tensor:
        n, lq, _ = x.shape
        q = self.q(self.norm(x)).view(n, lq, self.heads, -1).transpose(1, 2)
        k = self.k(kv).view(n, kv.shape[1], self.heads, -1).transpose(1, 2)
        v = self.v(kv).view(n, kv.shape[1], self.heads, -1).transpose(1, 2)
        q = rotate(q, self.rotary, positions)
        k = rotate(k, self.rotary, key_positions(mask))
        bias = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(~mask, -1e9)[:, None, None]
        att = ((q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + bias).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(n, lq, -1))


class HyperLayer(nn.Module):
    """A copied target decoder layer plus cross-attention to the base and to the source
    hidden states of every target layer (both initialised from the layer's own
    self-attention)."""

    def __init__(self, layer: nn.Module, rotary: nn.Module, heads: int) -> None:
        super().__init__()
        self.layer = copy.deepcopy(layer)
        norm = layer.input_layernorm
        self.to_base = CrossAttention(layer.self_attn, norm, rotary, heads)
        self.to_source = CrossAttention(layer.self_attn, norm, rotary, heads)

    def forward(self, x, ids, pos, attn_mask, base, base_mask, src, src_mask) -> torch.Tensor:
        ly = self.layer
        h = ly.self_attn(ly.input_layernorm(x), position_embeddings=pos, attention_mask=attn_mask)
        x = x + h[0]
        x = x + self.to_source(x, ids, src, src_mask)  # the official order: source, base
        x = x + self.to_base(x, ids, base, base_mask)
        return x + ly.mlp(ly.post_attention_layernorm(x))


class ReflectSelect(nn.Module):
    """The HyperDAS hypernetwork: the copied layers read the instruction; bidding selects
    positions; a Householder reflection of a learned basis gives the subspace."""

    def __init__(self, target: llm.LM, n_layers: int, k: int, heads: int = 4) -> None:
        super().__init__()
        d = target.d_model
        if not 1 <= k <= d:
            raise ValueError(f"k = {k} is out of range; accepted: 1..{d} (d_model)")
        if not 1 <= n_layers <= target.n_layers:
            raise ValueError(
                f"the hypernetwork copies 1..{target.n_layers} layers of {target.name}; "
                f"got {n_layers}"
            )
        m = target.model.model
        self.embed = copy.deepcopy(m.embed_tokens)
        self.rotary = copy.deepcopy(m.rotary_emb)
        self.layers = nn.ModuleList(
            HyperLayer(m.layers[i], self.rotary, target.n_heads) for i in range(n_layers)
        )
        self.norm = copy.deepcopy(m.norm)
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.combine = nn.Linear(2 * d, d)
        self.key = nn.Linear(d, d)
        self.basis = nn.utils.parametrizations.orthogonal(nn.Linear(d, k, bias=False))
        self.reflect_norm = nn.RMSNorm(d)
        self.reflect = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
        for p in self.parameters():
            p.requires_grad_(True)

    def encode(self, instr: llm.Batch, base: torch.Tensor, bmask, src: torch.Tensor, smask):
        """The instruction's last state ``z``; ``base``/``src``: every target layer's
        states ``[n, tokens, layers, d]``, read as one sequence of ``tokens x layers``
        keys (the official collapse), each masked as its token."""
        x = self.embed(instr.input_ids)
        pos = self.rotary(x, instr.position_ids)
        n, w = instr.input_ids.shape
        causal = (
            torch.ones(w, w, dtype=torch.bool).tril()[None] & instr.attention_mask.bool()[:, None]
        )
        attn_mask = torch.zeros(n, 1, w, w).masked_fill(~causal[:, None], -1e9)
        ids = key_positions(instr.attention_mask)

        def flat(h: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            keep = mask[:, :, None].expand(h.shape[:3]).reshape(n, -1)
            return unit(h).reshape(n, -1, h.shape[-1]), keep

        (hb, mb), (hs, ms) = flat(base, bmask), flat(src, smask)
        for layer in self.layers:
            x = layer(x, ids, pos, attn_mask, hb, mb, hs, ms)
        return self.norm(x)[:, -1], ids[:, -1]

    def subspace(self, z: torch.Tensor) -> torch.Tensor:
        """``R = (I - 2 r r^T) W`` per example: ``[n, d, k]`` with orthonormal columns."""
        W = self.basis.weight.T  # [d, k]
        r = nn.functional.normalize(self.reflect(self.reflect_norm(z)), dim=-1)
        return W[None] - 2 * r[:, :, None] * (r @ W)[:, None, :]

    def bids(self, z, at: torch.Tensor, base, bmask, src, smask, tau: float) -> torch.Tensor:
        """Bidding weights ``[n, base_len, src_len + 1]`` (the last column is the null),
        from the states ``base``/``src`` of the edited layer. As the official
        ``InterpreterUnembedCrossAttention``: keys ``k(combine[h_base_j; h_src_i])`` and,
        for the null, ``k(h_base_j)``; rotary positions on the query (the instruction's
        last, ``at``) and on the keys (``cumsum`` of the flattened key mask, source-major
        with the null row last); scores averaged over heads; softmax over sources and null."""
        n, lb, d = base.shape
        ls, h = src.shape[1], self.heads
        hb, hs = unit(base), unit(src)
        pairs = self.combine(
            torch.cat([hb[:, None].expand(n, ls, lb, d), hs[:, :, None].expand(n, ls, lb, d)], -1)
        )
        keys = self.key(torch.cat([pairs, hb[:, None]], 1))  # [n, ls + 1, lb, d]
        allowed = torch.cat(
            [smask[:, :, None] & bmask[:, None], torch.ones_like(bmask)[:, None]], 1
        )
        keys = keys.view(n, -1, h, d // h).transpose(1, 2)  # [n, h, (ls + 1) lb, d / h]
        keys = rotate(keys, self.rotary, key_positions(allowed.reshape(n, -1)))
        q = self.query(z).view(n, h, 1, d // h)
        q = rotate(q, self.rotary, at[:, None])
        s = (q @ keys.transpose(-1, -2)).squeeze(2) / math.sqrt(d // h)
        s = s.mean(1).view(n, ls + 1, lb).transpose(1, 2) / tau
        return s.masked_fill(~allowed.transpose(1, 2), -torch.inf).softmax(-1)


def interchange(
    h: torch.Tensor, src: torch.Tensor, w: torch.Tensor, R: torch.Tensor
) -> torch.Tensor:
    """``h_j + R R^T (mix_j - h_j)``, ``mix_j = sum_i w_ij src_i + w_null,j h_j``."""
    mix = torch.einsum("nji,nid->njd", w[..., :-1], src) + w[..., -1:] * h
    return h + torch.einsum("ndk,njk->njd", R, torch.einsum("ndk,njd->njk", R, mix - h))


MODES = ("soft", "bidding_argmax", "column_argmax", "groundtruth", "noop")
"""Inference modes: the soft weights; the official one-to-one ``bidding_argmax`` and
one-to-many ``column_argmax``; ``groundtruth``, the official oracle (base entity <- source
entity, the hypernetwork's subspace); ``noop``, every weight on the null (edits nothing)."""

BIDDING_THRESHOLD = 0.1
"""The official floor on the null weight in ``bidding_argmax``."""


def hard(w: torch.Tensor) -> torch.Tensor:
    """``column_argmax``: each base position takes its highest bid, one-hot."""
    return nn.functional.one_hot(w.argmax(-1), w.shape[-1]).to(w.dtype)


def bidding_argmax(w: torch.Tensor, threshold: float = BIDDING_THRESHOLD) -> torch.Tensor:
    """One-to-one: each source token bids for the base position where its weight is
    largest; a base position keeps those bids and its null weight, floored at
    ``threshold``, and takes the largest, one-hot."""
    src = w[..., :-1]
    won = nn.functional.one_hot(src.argmax(1), w.shape[1]).transpose(1, 2).bool()
    kept = torch.cat([src * won, w[..., -1:].clamp(min=threshold)], -1)
    return hard(kept)


def oracle(base: Side, src: Side, width: int) -> torch.Tensor:
    """``groundtruth``: the base entity takes the source entity, every other base
    position the null."""
    n, lb = base.mask.shape
    w = torch.zeros(n, lb, width + 1)
    w[..., -1] = 1
    rows = torch.arange(n)
    w[rows, base.entity, -1] = 0
    w[rows, base.entity, src.entity] = 1
    return w


def select(w: torch.Tensor, mode: str, base: Side, src: Side) -> torch.Tensor:
    """The weights an inference ``mode`` applies (:data:`MODES`)."""
    if mode == "soft":
        return w
    if mode == "bidding_argmax":
        return bidding_argmax(w)
    if mode == "column_argmax":
        return hard(w)
    if mode == "groundtruth":
        return oracle(base, src, w.shape[-1] - 1)
    if mode == "noop":
        return nn.functional.one_hot(torch.full(w.shape[:2], w.shape[-1] - 1), w.shape[-1]).float()
    raise ValueError(f"unknown inference mode {mode!r}; accepted: {', '.join(MODES)}")


def swap_logits(lm: llm.LM, xs: Sequence[Example], layer: int) -> torch.Tensor:
    """The whole-state swap at ``("resid", layer)``: the base entity token's state
    replaced by the source entity token's (the groundtruth selection with the full
    space as its subspace): it carries every attribute of the source city."""
    base, src, _ = pair(lm, xs)
    with torch.no_grad():
        hs = hidden(lm, src.batch, layer)
        rows = torch.arange(len(xs))

        def edit(h: torch.Tensor) -> torch.Tensor:
            h = h.clone()
            h[rows, base.entity] = hs[rows, src.entity]
            return h

        return run_with(lm, base.batch, layer, edit)


def sparsity_penalty(w: torch.Tensor) -> torch.Tensor:
    """``sum_i max(0, sum_j w_ij - 1)``: a source token spent on more than one base token."""
    return (w[..., :-1].sum(1) - 1).clamp(min=0).sum(-1).mean()


def penalty_weight(step: int, steps: int, start: float = 0.15, end: float = 1.5) -> float:
    """The official schedule: ``linspace(start, end, steps + 1)[step]``, zeroed for the
    first half of training (about 0.83 at the switch)."""
    if step < int(0.5 * steps):
        return 0.0
    return start + (end - start) * step / max(1, steps)


def temperature(step: int, steps: int, start: float, end: float) -> float:
    """Bidding temperature, log-linear from ``start`` to ``end``; 1 throughout is the
    official plain softmax (an annealed temperature is an option, not the official code)."""
    return float(start * (end / start) ** (step / max(1, steps - 1)))


def optimiser(net: ReflectSelect, lr: float, rotate_lr: float = 1e-3) -> torch.optim.AdamW:
    """AdamW (decay 0.01) at ``lr`` for the hypernetwork and, as the official
    ``rotate_lr``, ``rotate_lr`` without decay for the orthogonal basis: torch stores the
    signs of its Householder parametrisation as exact +-1 on the diagonal, which decay
    would break."""
    basis = set(map(id, net.basis.parameters()))
    rest = [q for q in net.parameters() if id(q) not in basis]
    rotation = {"params": list(net.basis.parameters()), "weight_decay": 0.0, "lr": rotate_lr}
    return torch.optim.AdamW([{"params": rest}, rotation], lr=lr)


@dataclass
class HyperOutput:
    logits: torch.Tensor
    bids: torch.Tensor
    base: Side
    src: Side


def hyper_forward(
    net: ReflectSelect,
    lm: llm.LM,
    xs: Sequence[Example],
    layer: int,
    tau: float,
    mode: str = "soft",
) -> HyperOutput:
    """Run the target on the base prompts with the hypernetwork's intervention at
    ``("resid", layer)``; the hypernetwork reads every layer's states."""
    base, src, _ = pair(lm, xs)
    instr = encode(lm, [x.instruction for x in xs])
    with torch.no_grad():
        hb, hs = stacked(lm, base.batch), stacked(lm, src.batch)
    z, at = net.encode(instr, hb, base.mask, hs, src.mask)
    hbl, hsl = hb[:, :, layer], hs[:, :, layer]
    w = net.bids(z, at, hbl, base.mask, hsl, src.mask, tau)
    used = select(w, mode, base, src)
    R = net.subspace(z)
    logits = run_with(lm, base.batch, layer, lambda h: interchange(h, hsl, used, R))
    return HyperOutput(logits, w, base, src)


@torch.no_grad()
def answers(
    net: ReflectSelect,
    lm: llm.LM,
    xs: Sequence[Example],
    layer: int,
    tau: float,
    mode: str = "soft",
) -> np.ndarray:
    """The target's answer (its top next token) on each example's base prompt, with the
    hypernetwork's intervention in inference ``mode``."""
    net.eval()
    return hyper_forward(net, lm, xs, layer, tau, mode).logits.argmax(-1).numpy()


def train_hyperdas(
    lm: llm.LM,
    train: Sequence[Example],
    *,
    layer: int,
    n_layers: int,
    k: int,
    steps: int,
    batch: int,
    lr: float,
    rotate_lr: float,
    tau: tuple[float, float],
    penalty: bool = True,
    start: dict | None = None,
    from_step: int = 0,
    seed: int = 0,
) -> dict[str, Any]:
    """Train ReflectSelect from step ``from_step`` (``start``: a saved state) to ``steps``.
    Returns the state, the state at mid-training (for the no-penalty branch), and per step
    the loss and the mean null weight over the base positions the bidding may use."""
    check_layer(lm, layer)
    net = initial_net(lm, n_layers, k, seed)
    opt = optimiser(net, lr, rotate_lr)
    if start is not None:
        net.load_state_dict(start["net"])
        opt.load_state_dict(start["opt"])
    rng = np.random.default_rng([seed, from_step])
    history: dict[str, list[float]] = {"loss": [], "null": []}
    mid = None
    for step in range(from_step, steps):
        if step == steps // 2:
            mid = {"net": copy.deepcopy(net.state_dict()), "opt": copy.deepcopy(opt.state_dict())}
        xs = [train[i] for i in rng.integers(len(train), size=batch)]
        out = hyper_forward(net, lm, xs, layer, temperature(step, steps, *tau))
        labels = torch.tensor([label_id(lm, x.label) for x in xs])
        cause = torch.tensor([x.cause for x in xs])
        lam = penalty_weight(step, steps) if penalty else 0.0
        loss = weighted_ce(out.logits, labels, cause) + lam * sparsity_penalty(out.bids)
        opt.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(net.parameters(), 4.0)
        opt.step()
        null = out.bids[..., -1][out.base.mask]
        history["loss"].append(float(loss.detach()))
        history["null"].append(float(null.detach().mean()))
    return {"net": net.state_dict(), "opt": opt.state_dict(), "mid": mid, "history": history}


@torch.no_grad()
def evaluate_hyperdas(
    net: ReflectSelect,
    lm: llm.LM,
    test: Sequence[Example],
    layer: int,
    tau: float,
    modes: Sequence[str] = MODES,
) -> dict[str, Any]:
    """Per inference mode: scores per attribute and overall, and each example's hit
    (``"hits"``); the share of examples whose ``bidding_argmax`` at the base entity picks
    the source entity; and the mean count of source tokens given weight > 0.1."""
    net.eval()
    labels = torch.tensor([label_id(lm, x.label) for x in test])
    cause = torch.tensor([x.cause for x in test])
    attr = np.array([x.attribute for x in test])
    res: dict[str, Any] = {}
    for mode in modes:
        out = hyper_forward(net, lm, test, layer, tau, mode)
        res[mode] = {"all": scores(out.logits, labels, cause)}
        res[mode]["hits"] = (out.logits.argmax(-1) == labels).float().numpy()
        for a in dict.fromkeys(attr):
            sel = torch.tensor(attr == a)
            res[mode][a] = scores(out.logits[sel], labels[sel], cause[sel])
    w, n = out.bids, len(test)
    picked = bidding_argmax(w)[torch.arange(n), out.base.entity]  # [n, src + 1]
    res["located"] = (picked.argmax(-1) == out.src.entity).numpy()
    res["tokens_used"] = float((w[..., :-1].sum(1) > 0.1).float().sum(-1).mean())
    res["bids"] = w
    return res


def initial_net(lm: llm.LM, n_layers: int, k: int, seed: int) -> ReflectSelect:
    """The hypernetwork as training ``seed`` starts it: the untrained selector."""
    torch.manual_seed(seed)
    return ReflectSelect(lm, n_layers, k)


def hyper_net(lm: llm.LM, state: dict, n_layers: int, k: int) -> ReflectSelect:
    net = ReflectSelect(lm, n_layers, k)
    net.load_state_dict(state)
    return net.eval()
