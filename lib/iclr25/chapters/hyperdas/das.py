"""DAS, the HyperDAS chapter's baseline: one learned rank-``k`` subspace at one (layer,
position), pyvene's ``LowRankRotatedSpaceIntervention``, trained per attribute."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from torch import nn

from iclr25 import llm
from iclr25.chapters.hyperdas.data import (
    POSITIONS,
    SCORES,
    Example,
    Side,
    World,
    columns,
    pair,
    scores,
    weighted_ce,
)
from iclr25.chapters.hyperdas.target import check_layer, hidden, run_with

# ---------------------------------------------------------------------------------
# DAS with pyvene
# ---------------------------------------------------------------------------------


def das_model(lm: llm.LM, layer: int, k: int) -> Any:
    """pyvene's ``LowRankRotatedSpaceIntervention`` (rank ``k``) on the stream entering
    ``layer`` (pyvene's ``block_input``), one position."""
    check_layer(lm, layer)
    if not 1 <= k <= lm.d_model:
        raise ValueError(f"k = {k} is out of range; accepted: 1..{lm.d_model} (d_model)")
    pv = llm.load_pyvene()
    config = pv.IntervenableConfig(
        representations=[
            {
                "layer": layer,
                "component": "block_input",
                "unit": "pos",
                "max_number_of_units": 1,
                "low_rank_dimension": k,
            }
        ],
        intervention_types=pv.LowRankRotatedSpaceIntervention,
    )
    model = pv.IntervenableModel(config, lm.model)
    model.disable_model_gradients()
    return model


def das_logits(model: Any, base: Side, src: Side, position: str) -> torch.Tensor:
    b, s = columns(base, position), columns(src, position)
    _, out = model(
        {**base.batch.inputs()},
        [{**src.batch.inputs()}],
        unit_locations={"sources->base": ([[[int(c)] for c in s]], [[[int(c)] for c in b]])},
    )
    return out.logits[:, -1]


def _module(v: Any) -> nn.Module:
    return v[0] if isinstance(v, (tuple, list)) else v


WINDOW, TOL = 50, 0.02
"""DAS's stopping rule, the same at every site and on SmolLM2: windows of 50 steps, and
a 2% (relative) improvement of the mean training loss from one window to the next."""


def converged(losses: Sequence[float], window: int = WINDOW, tol: float = TOL) -> bool:
    """The stopping rule on the training loss: the mean of the last ``window`` steps is
    below ``tol`` (the labels are learnt), or it improved on the window before by less
    than ``tol`` (relative): the loss has stopped falling."""
    if len(losses) < 2 * window:
        return False
    last = float(np.mean(losses[-window:]))
    prev = float(np.mean(losses[-2 * window : -window]))
    return last < tol or last > (1 - tol) * prev


def das_layer(
    lm: llm.LM,
    train: dict[str, Sequence[Example]],
    test: dict[str, Sequence[Example]],
    layer: int,
    k: int,
    steps: int,
    *,
    batch: int,
    lr: float,
    seed: int,
    positions: Sequence[str] = POSITIONS,
    window: int = WINDOW,
    tol: float = TOL,
    fitted: dict[str, Sequence[Example]] | None = None,
) -> dict[str, Any]:
    """DAS for every (attribute, position) at one layer, trained side by side: one
    ``LowRankRotatedSpaceIntervention`` of pyvene per pair, applied by one hook to its own
    rows of a shared batch (the same maths as :func:`das_model`, in one forward pass).
    Each pair trains until its training loss has :func:`converged` (or ``steps``), then
    leaves the batch. Returns ``[attribute, position]`` arrays of cause, isolation and
    disentangle on ``test`` (and, prefixed ``train_``, on ``fitted``, examples of the
    training cities), each test example's hit per pair (``"hits"``), the steps each pair
    took, and its training-loss curve."""
    pv = llm.load_pyvene()
    check_layer(lm, layer)
    torch.manual_seed(seed)
    attrs = list(train)
    groups = list(itertools.product(range(len(attrs)), range(len(positions))))
    ivs = nn.ModuleList(
        pv.LowRankRotatedSpaceIntervention(embed_dim=lm.d_model, low_rank_dimension=k)
        for _ in groups
    )
    # no weight decay: torch keeps the Householder parametrisation's signs on the
    # diagonal of ``original`` as exact +-1, and decay would zero the basis
    opt = torch.optim.AdamW(ivs.parameters(), lr=lr, weight_decay=0.0)
    rng = np.random.default_rng(seed)

    def logits(chosen: dict[int, list[Example]]):
        ids = list(chosen)
        xs = [x for i in ids for x in chosen[i]]
        g = torch.repeat_interleave(torch.tensor(ids), torch.tensor([len(chosen[i]) for i in ids]))
        base, src, labels = pair(lm, xs)
        cb, cs = columns(base, positions[0]).clone(), columns(src, positions[0]).clone()
        for i in ids:
            sel = g == i
            cb[sel] = columns(base, positions[groups[i][1]])[sel]
            cs[sel] = columns(src, positions[groups[i][1]])[sel]
        rows = torch.arange(len(xs))
        with torch.no_grad():
            hs = hidden(lm, src.batch, layer)[rows, cs]

        def edit(h: torch.Tensor) -> torch.Tensor:
            new = h[rows, cb]
            for i in ids:
                sel = g == i
                new = new.index_put((sel,), ivs[i](new[sel], hs[sel]))
            return h.index_put((rows, cb), new)

        cause = torch.tensor([x.cause for x in xs])
        return run_with(lm, base.batch, layer, edit), labels, cause, g

    curves: list[list[float]] = [[] for _ in groups]
    active = list(range(len(groups)))
    for _ in range(steps):
        if not active:
            break
        chosen = {
            i: [
                train[attrs[groups[i][0]]][j]
                for j in rng.integers(len(train[attrs[groups[i][0]]]), size=batch)
            ]
            for i in active
        }
        out, labels, cause, g = logits(chosen)
        losses = [weighted_ce(out[g == i], labels[g == i], cause[g == i]) for i in active]
        opt.zero_grad()
        torch.stack(losses).sum().backward()  # the pairs share no parameters
        opt.step()
        for i, v in zip(active, losses):
            curves[i].append(float(v.detach()))
        active = [i for i in active if not converged(curves[i], window, tol)]
    res: dict[str, Any] = {}
    for name, xs in (("", test), ("train_", fitted or {})):
        if not xs:
            continue
        for m in SCORES:
            res[name + m] = np.zeros((len(attrs), len(positions)))
        with torch.no_grad():
            out, labels, cause, g = logits(
                {i: list(xs[attrs[a]]) for i, (a, _) in enumerate(groups)}
            )
        hit = (out.argmax(-1) == labels).float()
        for i, (a, pi) in enumerate(groups):
            sel = g == i
            sc = scores(out[sel], labels[sel], cause[sel])
            for m in SCORES:
                res[name + m][a, pi] = sc[m]
            if not name:
                res.setdefault("hits", {})[a, pi] = hit[sel].numpy()
    res["steps"] = np.array([len(c) for c in curves], float).reshape(len(attrs), len(positions))
    res["curves"] = [np.array(c) for c in curves]
    return res


def das_grid(
    lm: llm.LM,
    world: World,
    train: Sequence[Example],
    test: Sequence[Example],
    k: int,
    steps: int,
    *,
    batch: int,
    lr: float,
    seed: int,
    layers: Sequence[int] | None = None,
) -> dict[str, np.ndarray]:
    """DAS per attribute at every (layer, position): scores on the test examples and (``
    train_`` prefix) on as many training examples, and the steps each site took,
    ``[attribute, layer, position]``; ``"hits"``, each test example's hit at each site
    ``[layer, position, example]``; and ``"curves"``, the training loss per step
    ``[attribute, layer, position, step]`` (NaN once it stopped)."""
    layers = list(range(lm.n_layers)) if layers is None else list(layers)
    by = {a: [x for x in train if x.attribute == a] for a in world.attributes}
    te = {a: [x for x in test if x.attribute == a] for a in world.attributes}
    held_in = {a: by[a][: len(te[a])] for a in world.attributes}
    runs = [
        das_layer(lm, by, te, layer, k, steps, batch=batch, lr=lr, seed=seed, fitted=held_in)
        for layer in layers
    ]
    names = (*SCORES, *(f"train_{m}" for m in SCORES), "steps")
    out = {m: np.stack([r[m] for r in runs], 1) for m in names}
    n_pos = out["steps"].shape[2]
    where = {id(x): (a, j) for a, xs in te.items() for j, x in enumerate(xs)}
    hits = np.zeros((len(layers), n_pos, len(test)))
    attrs = list(world.attributes)
    for li, r in enumerate(runs):
        for pi in range(n_pos):
            for t, x in enumerate(test):
                a, j = where[id(x)]
                hits[li, pi, t] = r["hits"][attrs.index(a), pi][j]
    out["hits"] = hits
    curves = np.full((*out["steps"].shape, max(1, steps)), np.nan)
    for li, r in enumerate(runs):
        for i, c in enumerate(r["curves"]):
            curves[i // n_pos, li, i % n_pos, : len(c)] = c
    out["curves"] = curves
    return out
