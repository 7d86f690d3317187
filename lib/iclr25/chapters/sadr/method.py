"""SADR's method: SADR's hinge, attention term, ``v*`` and edit (the attention weights
read through :mod:`iclr25.llm`'s ``attn_weights`` sites), the drift of attention to the
subject against a random edit of the same size, and the edited model run with parts of
the unedited one put back (the package docstring gives the paper and its equations)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

import numpy as np
import torch

from iclr25 import editing, llm


def weight_sites(layers: Iterable[int]) -> list[tuple[str, int]]:
    """The ``attn_weights`` sites of ``layers``: each layer's attention probabilities
    ``[batch, head, query, key]``, read and written through :mod:`iclr25.llm`."""
    return [("attn_weights", l) for l in layers]


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
        seen: dict[Any, torch.Tensor], queries: list[int], subjects: torch.Tensor
    ) -> torch.Tensor:
        now = {l: seen["attn_weights", l][: len(prefixes)] for l in above}  # no essence
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
        penalty=editing.Penalty(lambda: llm.reading(lm, weight_sites(above)), term),
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


#: The book's two departures from the authors' settings that :func:`authors_editors`
#: undoes, one at a time: their 80 steps (:data:`SADR_STEPS`), and ROME's sampled
#: context prefixes (:func:`iclr25.editing.context_prefixes`, about twenty) for the
#: book's three fixed ones.
AUTHORS = ("authors' steps", "sampled prefixes")


def authors_editors(
    lm: llm.LM,
    requests: Sequence[editing.Request],
    layer: int,
    C: torch.Tensor,
    *,
    steps: int,
    attn_weight: float,
    prefixes: Sequence[str],
    config: dict[str, Any],
    authors_steps: int = SADR_STEPS,
) -> dict[str, dict[str, Callable[[editing.Request], editing.Edit]]]:
    """ROME and SADR (``attn_weight``) again, with one of :data:`AUTHORS` undone at a
    time: both at ``authors_steps`` steps (theirs: :data:`SADR_STEPS`), or both at
    ``steps`` over ``prefixes`` (the sampled ones). Each editor still ROME's control at
    its own settings. The edits of
    ``requests`` are made once and kept in the model cache under ``config``
    (:func:`iclr25.editing.kept_edits`). Returns ``{variant: {method: editor}}``."""
    variants = {
        "authors' steps": {"steps": authors_steps},
        "sampled prefixes": {"steps": steps, "prefixes": tuple(prefixes)},
    }
    return {
        name: editing.kept_edits(
            lm,
            requests,
            {
                "ROME": partial(editing.rome, lm, layer=layer, C=C, **settings),
                "SADR": partial(sadr, lm, layer=layer, C=C, attn_weight=attn_weight, **settings),
            },
            {**config, "variant": name, **settings},
        )
        for name, settings in variants.items()
    }


# ---------------------------------------------------------------------------------
# Drift against a random edit; the edited model with parts of the unedited put back
# ---------------------------------------------------------------------------------


def _check_subject(prompts: Sequence[str], subject: str) -> None:
    for prompt in prompts:
        if subject not in prompt:
            raise ValueError(
                f"the distract prompt {prompt!r} does not contain the edited subject "
                f"{subject!r}; a distract prompt mentions the edited subject"
            )


@torch.no_grad()
def subject_attention(lm: llm.LM, prompts: Sequence[str], subject: str) -> torch.Tensor:
    """Each head's attention from each prompt's last token to the subject's last token
    (its last occurrence), for every layer: ``[prompt, layer, head]``."""
    _check_subject(prompts, subject)
    batch = llm.encode(lm, prompts)
    subj = editing.subject_columns(lm, prompts, subject, batch)
    with llm.reading(lm, weight_sites(range(lm.n_layers))) as seen:
        lm.model.model(**batch.inputs(), use_cache=False)
    rows = torch.arange(len(prompts))
    layers = range(lm.n_layers)
    return torch.stack([seen["attn_weights", l][rows, :, -1, subj] for l in layers], 1).float()


def random_edit(lm: llm.LM, edit: editing.Edit, C: torch.Tensor, seed: int) -> editing.Edit:
    """The drift's control: ROME's update written for a random ``v*`` at the edit's
    distance, ``v*_r = W k* + |v* - W k*| u`` with ``u`` a random unit vector, at the
    edit's ``k*`` and layer (``edit.info``). A change of the same size that says
    nothing."""
    layer, k_star = edit.info["layer"], edit.info["k_star"]
    W = llm.down_proj(lm, layer).weight.detach()
    v = W @ k_star.to(W)
    u = torch.randn(len(v), generator=torch.Generator().manual_seed(seed)).to(W)
    size = (edit.info["v_star"].to(W) - v).norm()
    control = editing.rome_update(lm, edit.request, layer, C, v + size * u / u.norm(), k_star)
    control.method = "random v*"
    return control


def neutral_probes(case: editing.Case) -> list[tuple[str, str, str]]:
    """The official demo's distract prompts: a neutral mention of the edited subject,
    then a neighbour's prompt ("{subject} is famous. The capital of Spain is the city
    of"), as ``(prompt, true object, new object)`` probes."""
    mention = f"{case.request.subject} is famous."
    return [(f"{mention} {p}", o, case.request.target) for p, o in case.neighbourhood]


#: What :func:`restored_margins` puts back from the unedited model: every head's
#: attention above the edit, only the hinge's heads', or the edited MLP's output at the
#: subject's last token (the value every head above reads there).
RESTORED = ("attention", "hinge heads", "subject value")


def restored_margins(
    lm: llm.LM,
    edit: editing.Edit,
    probes: Sequence[tuple[str, str, str]],
    layer: int,
    part: str = "attention",
) -> np.ndarray:
    """The margins (:func:`iclr25.editing.counterfact_margins`) of ``(prompt, right,
    wrong)`` probes on the model edited by ``edit``, with one ``part`` of the unedited
    model put back (:data:`RESTORED`): ``attention``, the attention weights of every
    layer above ``layer``; ``hinge heads``, those of the heads whose attention from the
    prompt's last token to the subject exceeds, after the edit, the largest of their
    layer before it (:func:`over_attending`); ``subject value``, the output of the edited
    MLP at the subject's last token, so that only the update's effect at the other
    tokens remains."""
    lm.check_layer(layer)
    if part not in RESTORED:
        raise ValueError(f"part {part!r}; accepted: {', '.join(RESTORED)}")
    _check_subject([p for p, _, _ in probes], edit.request.subject)
    pairs = [(p, r) for p, r, _ in probes] + [(p, w) for p, _, w in probes]
    batch, columns, objs = editing.probe_batch(lm, pairs)
    texts = [p + o for p, o in pairs]
    subj = editing.subject_columns(lm, texts, edit.request.subject, batch)
    rows = [i for i, cols in enumerate(columns) for _ in cols]
    cols = [c for cols_ in columns for c in cols_]
    above = range(layer + 1, lm.n_layers)
    sites = weight_sites(above)
    every = torch.arange(len(pairs))
    last = [c[0] for c in columns]  # the prompt's last token
    with torch.no_grad():
        with llm.reading(lm, [*sites, ("mlp", layer)]) as unedited:
            lm.model.model(**batch.inputs(), use_cache=False)
        if part == "attention":
            writes = {s: (lambda w, kept=unedited[s]: kept) for s in sites}
        elif part == "subject value":
            kept = unedited["mlp", layer][every, subj]

            def put(x: torch.Tensor) -> torch.Tensor:
                x = x.clone()
                x[every, subj] = kept
                return x

            writes = {("mlp", layer): put}
        else:
            with editing.applied(lm, edit), llm.reading(lm, sites) as edited:
                lm.model.model(**batch.inputs(), use_cache=False)
            writes = {}
            for s in sites:
                p, q = unedited[s][every, :, last, subj], edited[s][every, :, last, subj]
                hinge = over_attending(p, q)[:, :, None, None]
                writes[s] = lambda w, kept=unedited[s], m=hinge: torch.where(m, kept, w)
        with editing.applied(lm, edit), llm.writing(lm, writes):
            logp = llm.logits_at(lm, batch, rows, cols).float().log_softmax(-1)
    picked = logp[torch.arange(len(rows)), [t for o in objs for t in o]]
    nll = np.array([-float(x.mean()) for x in picked.split([len(o) for o in objs])])
    return nll[len(probes) :] - nll[: len(probes)]


def recovered(
    unedited: np.ndarray, edited: np.ndarray, restored: np.ndarray, drop: float = 0.5
) -> np.ndarray:
    """Over the probes the edit lowered by more than ``drop`` nats, the share of each
    probe's margin drop that the restoration wins back, ``(restored - edited) /
    (unedited - edited)`` (0: nothing, 1: all of it)."""
    unedited, edited, restored = map(np.asarray, (unedited, edited, restored))
    hit = unedited - edited > drop
    return (restored[hit] - edited[hit]) / (unedited[hit] - edited[hit])


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
