"""SADR's method: the recording attention (transformers' ``AttentionInterface``), SADR's
hinge, attention term, ``v*`` and edit, the drift of attention to the subject and the
edited model run with its unedited attention put back (the package docstring gives the
paper and its equations)."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import torch

from iclr25 import editing, llm

# ---------------------------------------------------------------------------------
# Attention weights through transformers' AttentionInterface
# ---------------------------------------------------------------------------------

#: The name the recording attention is registered under.
ATTENTION = "iclr25_recording"

#: What the recording attention does now: ``record`` (layer -> weights, filled in) and
#: ``replace`` (layer -> weights put in the computed ones' place).
_STATE: dict[str, Any] = {"record": None, "replace": None}


def recording_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention, ``softmax(q k^T * scaling + mask) v``, whose weights
    ``[batch, head, query, key]`` are recorded per layer, or replaced by given ones
    (:func:`attention`)."""
    from transformers.models.llama.modeling_llama import repeat_kv

    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scores = query @ key.transpose(2, 3) * scaling
    if attention_mask is not None:
        mask = attention_mask[..., : key.shape[-2]]
        if mask.dtype == torch.bool:
            scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + mask
    weights = scores.softmax(-1, dtype=torch.float32).to(query.dtype)
    layer = module.layer_idx
    if _STATE["replace"] is not None and layer in _STATE["replace"]:
        weights = _STATE["replace"][layer].to(weights)
    if _STATE["record"] is not None:
        _STATE["record"][layer] = weights
    out = (weights @ value).transpose(1, 2).contiguous()
    return out, weights


def _register() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(ATTENTION, recording_attention)
    AttentionMaskInterface.register(ATTENTION, eager_mask)


@contextlib.contextmanager
def attention(
    lm: llm.LM, replace: Mapping[int, torch.Tensor] | None = None
) -> Iterator[dict[int, torch.Tensor]]:
    """Inside the block the model's attention is :func:`recording_attention`: the dict
    handed out fills with each layer's weights (not detached) as the layers run, and the
    weights of each layer in ``replace`` are put in place of the computed ones. A
    :class:`iclr25.llm.LayerInput` for the block must be taken inside it (its mask is
    the eager one)."""
    _register()
    config = lm.model.config
    saved, state = config._attn_implementation, dict(_STATE)
    record: dict[int, torch.Tensor] = {}
    config._attn_implementation = ATTENTION
    _STATE.update(record=record, replace=dict(replace) if replace else None)
    try:
        yield record
    finally:
        config._attn_implementation = saved
        _STATE.update(state)


# ---------------------------------------------------------------------------------
# SADR's objective
# ---------------------------------------------------------------------------------

#: The authors' SADR settings: the attention term's weight (100 * 1e-4) and v*'s steps.
SADR_WEIGHT, SADR_STEPS = 100e-4, 80


def over_attending(p_subject: torch.Tensor, q_subject: torch.Tensor) -> torch.Tensor:
    """SADR's hinge: ``[prompt, head]`` true where a head's current attention to the
    subject's last token (``q_subject``) exceeds the largest unedited attention to it
    over the heads of its layer (``p_subject``; both ``[prompt, head]``)."""
    return q_subject > p_subject.max(-1, keepdim=True).values


def attention_loss(
    before: Mapping[int, torch.Tensor],
    after: Mapping[int, torch.Tensor],
    queries: Sequence[int],
    subjects: Sequence[int],
    *,
    hinge: bool = True,
    eps: float = 1e-8,
) -> torch.Tensor:
    """``sum_layers sum_heads m * KL(p || q)``, mean over prompts: ``p`` the unedited
    attention over the keys at each prompt's query column (``before[layer]``, weights
    ``[prompt, head, query, key]``), ``q`` the current one (``after``), ``m``
    :func:`over_attending` at the prompt's subject column (1 for every head without
    ``hinge``); ``eps`` is added to both, as the authors' code does."""
    rows = torch.arange(len(queries))
    total = torch.zeros(())
    for layer, weights in after.items():
        p = before[layer][rows, :, list(queries)].detach() + eps  # [prompt, head, key]
        q = weights[rows, :, list(queries)] + eps
        kl = (p * (p / q).log()).sum(-1)  # [prompt, head]
        if hinge:
            kl = kl * over_attending(p[rows, :, list(subjects)], q[rows, :, list(subjects)])
        total = total + kl.sum() / len(queries)
    return total


def sadr_v(
    lm: llm.LM,
    request: editing.Request,
    layer: int,
    *,
    steps: int = SADR_STEPS,
    attn_weight: float = SADR_WEIGHT,
    hinge: bool = True,
    lr: float = editing.ROME_LR,
    kl_factor: float = editing.ROME_KL,
    weight_decay: float = editing.ROME_DECAY,
    clamp: float = editing.ROME_CLAMP,
    prefixes: Sequence[str] = editing.PREFIXES,
) -> tuple[torch.Tensor, torch.Tensor, int, list[float]]:
    """SADR's ``v*``: ROME's objective (:func:`iclr25.editing.rome_v`) plus
    ``attn_weight *`` :func:`attention_loss` over the layers above ``layer`` (those below
    never change), at the last token of each prefixed rewrite prompt, against the
    attention of the first step (the unedited model's). Returns ``(v*, k*, steps
    taken, the attention term at each step)``."""
    lm.check_layer(layer)
    if attn_weight < 0:
        raise ValueError(f"attn_weight is {attn_weight}; SADR's weight must be >= 0")
    if steps < 1:
        raise ValueError(f"steps is {steps}; SADR takes at least one step")
    above = range(layer + 1, lm.n_layers)
    first: dict[int, torch.Tensor] = {}
    history: list[float] = []

    def term(
        weights: dict[int, torch.Tensor], queries: list[int], subjects: torch.Tensor
    ) -> torch.Tensor:
        now = {l: weights[l][: len(prefixes)] for l in above}  # not the essence prompt
        if not first:  # step 1: delta is 0, the unedited attention
            first.update({l: w.detach() for l, w in now.items()})
        attn = attention_loss(first, now, queries, subjects, hinge=hinge)
        history.append(float(attn.detach()))
        return attn_weight * attn

    v_star, k_star, taken = editing.rome_v(
        lm,
        request,
        layer,
        steps=steps,
        lr=lr,
        kl_factor=kl_factor,
        weight_decay=weight_decay,
        clamp=clamp,
        prefixes=prefixes,
        penalty=editing.Penalty(lambda: attention(lm), term),
    )
    return v_star, k_star, taken, history


def sadr(
    lm: llm.LM, request: editing.Request, layer: int, C: torch.Tensor, **kwargs: Any
) -> editing.Edit:
    """SADR's edit: :func:`sadr_v`, then ROME's rank-one update
    (:func:`iclr25.editing.rome_update`)."""
    start = time.perf_counter()
    v_star, k_star, steps, history = sadr_v(lm, request, layer, **kwargs)
    edit = editing.rome_update(lm, request, layer, C, v_star, k_star)
    edit.method, edit.seconds = "SADR", time.perf_counter() - start
    edit.info.update(steps=steps, attention_loss=history)
    return edit


# ---------------------------------------------------------------------------------
# Drift, and the edited model with its unedited attention put back
# ---------------------------------------------------------------------------------


def _check_subject(prompts: Sequence[str], subject: str) -> None:
    for prompt in prompts:
        if subject not in prompt:
            raise ValueError(
                f"the distract prompt {prompt!r} does not contain the edited subject "
                f"{subject!r}; a distract prompt starts with the edited sentence"
            )


@torch.no_grad()
def subject_attention(lm: llm.LM, prompts: Sequence[str], subject: str) -> torch.Tensor:
    """Each head's attention from each prompt's last token to the subject's last token
    (its last occurrence), for every layer: ``[prompt, layer, head]``."""
    _check_subject(prompts, subject)
    batch = llm.encode(lm, prompts)
    subj = editing.subject_columns(lm, prompts, subject, batch)
    with attention(lm) as weights:
        lm.model.model(**batch.inputs(), use_cache=False)
    rows = torch.arange(len(prompts))
    return torch.stack([weights[l][rows, :, -1, subj] for l in range(lm.n_layers)], 1).float()


def restore_attention(
    lm: llm.LM, edit: editing.Edit, probes: Sequence[tuple[str, str, str]], layer: int
) -> np.ndarray:
    """The margins (:func:`iclr25.editing.counterfact_margins`) of ``(prompt, right,
    wrong)`` probes on the model edited by ``edit``, run with the unedited model's
    attention weights put back in every layer above ``layer``: if the edit's failures
    come from attention drift, they should recover."""
    lm.check_layer(layer)
    _check_subject([p for p, _, _ in probes], edit.request.subject)
    pairs = [(p, r) for p, r, _ in probes] + [(p, w) for p, _, w in probes]
    batch, columns, objs = editing.probe_batch(lm, pairs)
    rows = [i for i, cols in enumerate(columns) for _ in cols]
    cols = [c for cols_ in columns for c in cols_]
    with torch.no_grad():
        with attention(lm) as unedited:
            lm.model.model(**batch.inputs(), use_cache=False)
        kept = {l: unedited[l] for l in range(layer + 1, lm.n_layers)}
        with editing.applied(lm, edit), attention(lm, replace=kept):
            logp = llm.logits_at(lm, batch, rows, cols).float().log_softmax(-1)
    picked = logp[torch.arange(len(rows)), [t for o in objs for t in o]]
    nll = np.array([-float(x.mean()) for x in picked.split([len(o) for o in objs])])
    return nll[len(probes) :] - nll[: len(probes)]


def recovered(unedited: np.ndarray, edited: np.ndarray, restored: np.ndarray, drop: float = 0.5):
    """Over the probes the edit lowered by more than ``drop`` nats, the share of the
    mean margin drop that restoring the attention wins back, ``(share, probes)``:
    ``(mean restored - mean edited) / (mean unedited - mean edited)``."""
    unedited, edited, restored = map(np.asarray, (unedited, edited, restored))
    hit = unedited - edited > drop
    if not hit.any():
        return float("nan"), 0
    lost = unedited[hit].mean() - edited[hit].mean()
    return float((restored[hit].mean() - edited[hit].mean()) / lost), int(hit.sum())


def heads_above(before: np.ndarray, after: np.ndarray) -> np.ndarray:
    """Heads whose attention to the subject after the edit exceeds the largest before
    it in their layer (the hinge's heads), from ``[..., layer, head]`` arrays."""
    return after > before.max(-1, keepdims=True)


def mid_sentence(fact: editing.Fact) -> bool:
    """Whether the fact's rewrite prompt has text before its subject: the facts this
    chapter edits. SmolLM2 puts no beginning-of-text token before a prompt, so a subject
    that opens it sits at the first position, the attention sink, whose residual is many
    times larger than elsewhere: a ``v*`` there (clamped at 4 times a small MLP output)
    cannot move it, and ROME misses the new object on the rewrite prompt itself."""
    return not fact.prompt.startswith(fact.subject)
