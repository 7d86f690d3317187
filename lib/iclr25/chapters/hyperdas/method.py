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
from iclr25.chapters.hyperdas.target import check_layer, hidden, run_with

# ---------------------------------------------------------------------------------
# HyperDAS
# ---------------------------------------------------------------------------------


def rms(x: torch.Tensor) -> torch.Tensor:
    """``x`` divided by its root mean square: the normalised hidden states."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6)


class CrossAttention(nn.Module):
    """Multi-head cross-attention initialised from a copy of a self-attention's
    projections (no rotary positions: the keys are another sequence)."""

    def __init__(self, attn: nn.Module, norm: nn.Module, heads: int) -> None:
        super().__init__()
        self.q, self.k = copy.deepcopy(attn.q_proj), copy.deepcopy(attn.k_proj)
        self.v, self.o = copy.deepcopy(attn.v_proj), copy.deepcopy(attn.o_proj)
        self.norm, self.heads = copy.deepcopy(norm), heads

    def forward(self, x: torch.Tensor, kv: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        n, lq, _ = x.shape
        q = self.q(self.norm(x)).view(n, lq, self.heads, -1).transpose(1, 2)
        k = self.k(kv).view(n, kv.shape[1], self.heads, -1).transpose(1, 2)
        v = self.v(kv).view(n, kv.shape[1], self.heads, -1).transpose(1, 2)
        bias = torch.zeros(mask.shape, dtype=x.dtype).masked_fill(~mask, -1e9)[:, None, None]
        att = ((q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1]) + bias).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(n, lq, -1))


class HyperLayer(nn.Module):
    """A copied target decoder layer plus cross-attention to the base and to the source
    hidden states (both initialised from the layer's own self-attention)."""

    def __init__(self, layer: nn.Module, heads: int) -> None:
        super().__init__()
        self.layer = copy.deepcopy(layer)
        self.to_base = CrossAttention(layer.self_attn, layer.input_layernorm, heads)
        self.to_source = CrossAttention(layer.self_attn, layer.input_layernorm, heads)

    def forward(self, x, pos, attn_mask, base, base_mask, src, src_mask) -> torch.Tensor:
        ly = self.layer
        h = ly.self_attn(ly.input_layernorm(x), position_embeddings=pos, attention_mask=attn_mask)
        x = x + h[0]
        x = x + self.to_source(x, src, src_mask)  # the official order: source, then base
        x = x + self.to_base(x, base, base_mask)
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
            HyperLayer(m.layers[i], target.n_heads) for i in range(n_layers)
        )
        self.norm = copy.deepcopy(m.norm)
        self.heads = heads
        self.query = nn.Linear(d, d)
        self.pair_key = nn.Linear(2 * d, d)
        self.null_key = nn.Linear(d, d)
        self.basis = nn.utils.parametrizations.orthogonal(nn.Linear(d, k, bias=False))
        self.reflect_norm = nn.RMSNorm(d)
        self.reflect = nn.Sequential(nn.Linear(d, d), nn.SiLU(), nn.Linear(d, d))
        for p in self.parameters():
            p.requires_grad_(True)

    def encode(self, instr: llm.Batch, base: torch.Tensor, bmask, src: torch.Tensor, smask):
        x = self.embed(instr.input_ids)
        pos = self.rotary(x, instr.position_ids)
        n, w = instr.input_ids.shape
        causal = (
            torch.ones(w, w, dtype=torch.bool).tril()[None] & instr.attention_mask.bool()[:, None]
        )
        attn_mask = torch.zeros(n, 1, w, w).masked_fill(~causal[:, None], -1e9)
        for layer in self.layers:
            x = layer(x, pos, attn_mask, rms(base), bmask, rms(src), smask)
        return self.norm(x)[:, -1]

    def subspace(self, z: torch.Tensor) -> torch.Tensor:
        """``R = (I - 2 r r^T) W`` per example: ``[n, d, k]`` with orthonormal columns."""
        W = self.basis.weight.T  # [d, k]
        r = nn.functional.normalize(self.reflect(self.reflect_norm(z)), dim=-1)
        return W[None] - 2 * r[:, :, None] * (r @ W)[:, None, :]

    def bids(self, z, base, bmask, src, smask, tau: float) -> torch.Tensor:
        """Bidding weights ``[n, base_len, src_len + 1]`` (the last column is the null)."""
        n, lb, d = base.shape
        ls, h = src.shape[1], self.heads
        hb, hs = rms(base), rms(src)
        q = self.query(z).view(n, 1, 1, h, -1)
        keys = self.pair_key(
            torch.cat([hb[:, :, None].expand(n, lb, ls, d), hs[:, None].expand(n, lb, ls, d)], -1)
        ).view(n, lb, ls, h, -1)
        null = self.null_key(hb).view(n, lb, 1, h, -1)
        s = ((torch.cat([keys, null], 2) * q).sum(-1) / math.sqrt(d // h)).mean(-1) / tau
        allowed = torch.cat(
            [smask[:, None].expand(n, lb, ls), torch.ones(n, lb, 1, dtype=torch.bool)], 2
        )
        allowed = allowed & torch.cat(
            [bmask[:, :, None].expand(n, lb, ls), torch.ones(n, lb, 1, dtype=torch.bool)], 2
        )
        return s.masked_fill(~allowed, -torch.inf).softmax(-1)


def interchange(
    h: torch.Tensor, src: torch.Tensor, w: torch.Tensor, R: torch.Tensor
) -> torch.Tensor:
    """``h_j + R R^T (mix_j - h_j)``, ``mix_j = sum_i w_ij src_i + w_null,j h_j``."""
    mix = torch.einsum("nji,nid->njd", w[..., :-1], src) + w[..., -1:] * h
    return h + torch.einsum("ndk,njk->njd", R, torch.einsum("ndk,njd->njk", R, mix - h))


def hard(w: torch.Tensor) -> torch.Tensor:
    """Bidding-argmax: each base position takes its highest bid, one-hot."""
    return nn.functional.one_hot(w.argmax(-1), w.shape[-1]).to(w.dtype)


def sparsity_penalty(w: torch.Tensor) -> torch.Tensor:
    """``sum_i max(0, sum_j w_ij - 1)``: a source token spent on more than one base token."""
    return (w[..., :-1].sum(1) - 1).clamp(min=0).sum(-1).mean()


def penalty_weight(step: int, steps: int, start: float = 0.15, end: float = 1.5) -> float:
    """0 for the first half of training, then linear from ``start`` to ``end``."""
    half = steps // 2
    if step < half:
        return 0.0
    return start + (end - start) * (step - half) / max(1, steps - half - 1)


def temperature(step: int, steps: int, start: float, end: float) -> float:
    """Bidding temperature, log-linear from ``start`` to ``end``; 1 throughout is the
    official plain softmax (an annealed temperature is an option, not the official code)."""
    return float(start * (end / start) ** (step / max(1, steps - 1)))


def optimiser(net: ReflectSelect, lr: float) -> torch.optim.AdamW:
    """AdamW (decay 0.01), but none on the orthogonal basis: torch stores the signs of its
    Householder parametrisation as exact +-1 on the diagonal, which decay would break."""
    basis = set(map(id, net.basis.parameters()))
    rest = [q for q in net.parameters() if id(q) not in basis]
    return torch.optim.AdamW(
        [{"params": rest}, {"params": list(net.basis.parameters()), "weight_decay": 0.0}], lr=lr
    )


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
    """Run the target on the base prompts with the hypernetwork's intervention at ``layer``."""
    base, src, _ = pair(lm, xs)
    instr = encode(lm, [x.instruction for x in xs])
    with torch.no_grad():
        hb, hs = hidden(lm, base.batch, layer), hidden(lm, src.batch, layer)
    z = net.encode(instr, hb, base.mask, hs, src.mask)
    w = net.bids(z, hb, base.mask, hs, src.mask, tau)
    used = hard(w) if mode == "argmax" else w
    R = net.subspace(z)
    logits = run_with(lm, base.batch, layer, lambda h: interchange(h, hs, used, R))
    return HyperOutput(logits, w, base, src)


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
    torch.manual_seed(seed)
    net = ReflectSelect(lm, n_layers, k)
    opt = optimiser(net, lr)
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
    net: ReflectSelect, lm: llm.LM, test: Sequence[Example], layer: int, tau: float
) -> dict[str, Any]:
    """Soft and argmax scores per attribute and overall, the share of examples whose
    argmax bid at the base entity is the source entity, and the mean count of source
    tokens given weight > 0.1."""
    net.eval()
    labels = torch.tensor([label_id(lm, x.label) for x in test])
    cause = torch.tensor([x.cause for x in test])
    attr = np.array([x.attribute for x in test])
    res: dict[str, Any] = {}
    for mode in ("soft", "argmax"):
        out = hyper_forward(net, lm, test, layer, tau, mode)
        res[mode] = {"all": scores(out.logits, labels, cause)}
        for a in dict.fromkeys(attr):
            sel = torch.tensor(attr == a)
            res[mode][a] = scores(out.logits[sel], labels[sel], cause[sel])
    w, n = out.bids, len(test)
    at_entity = w[torch.arange(n), out.base.entity]  # [n, src + 1]
    res["locates"] = float((at_entity.argmax(-1) == out.src.entity).float().mean())
    res["tokens_used"] = float((w[..., :-1].sum(1) > 0.1).float().sum(-1).mean())
    res["bids"] = w
    return res


def hyper_net(lm: llm.LM, state: dict, n_layers: int, k: int) -> ReflectSelect:
    net = ReflectSelect(lm, n_layers, k)
    net.load_state_dict(state)
    return net.eval()
