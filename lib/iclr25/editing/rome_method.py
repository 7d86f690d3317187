"""ROME (Meng et al., 2022): the subject's tokens and the MLP keys there, causal tracing
to pick the layer, the key second moment ``C`` over text the model samples itself,
``v*`` and the rank-one update of the MLP down projection."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import core, llm
from iclr25.editing.edits import Change, Edit
from iclr25.editing.evaluation import probe_batch

if TYPE_CHECKING:
    from iclr25.editing.facts import Fact, Request


# ---------------------------------------------------------------------------------
# Subjects and keys
# ---------------------------------------------------------------------------------


def subject_span(lm: llm.LM, prompt: str, subject: str) -> tuple[int, int]:
    """The token indices of the subject's first and last tokens in ``prompt`` (its last
    occurrence), which must start and end on token boundaries."""
    start = prompt.rindex(subject)
    full = lm.tokens(prompt)
    first, last = (
        len(lm.tokens(prompt[:start].rstrip(" "))) if start else 0,
        len(lm.tokens(prompt[: start + len(subject)])),
    )
    if lm.tokens(prompt[: start + len(subject)]) != full[:last]:
        raise ValueError(f"the subject {subject!r} does not end on a token boundary in {prompt!r}")
    return first, last - 1


def subject_columns(
    lm: llm.LM, prompts: Sequence[str], subject: str, batch: llm.Batch
) -> list[int]:
    """The column of the subject's last token in each (left-padded) prompt of ``batch``."""
    width = batch.input_ids.shape[1]
    return [width - len(lm.tokens(p)) + subject_span(lm, p, subject)[1] for p in prompts]


def keys_at(
    lm: llm.LM,
    layer: int,
    prompts: Sequence[str],
    columns: Sequence[int] | None = None,
    batch: llm.Batch | None = None,
) -> torch.Tensor:
    """The MLP hidden activations ``k`` (the input of ``W_down``) of ``layer``: at one
    column per prompt ``[prompt, d_mlp]``, or at every real token ``[token, d_mlp]``."""
    batch = batch if batch is not None else llm.encode(lm, prompts)
    k = llm.read(lm, batch, [("neurons", layer)])["neurons", layer]
    if columns is None:
        return k[batch.attention_mask.bool()]
    return k[torch.arange(len(prompts)), list(columns)]


# ---------------------------------------------------------------------------------
# ROME
# ---------------------------------------------------------------------------------

#: ROME's context prefixes, fixed here (ROME samples them from the model).
PREFIXES = ("", "Here is a fact. ", "As everyone knows, ")

#: ROME's optimisation of v* (its GPT-2 XL settings).
ROME_STEPS, ROME_LR, ROME_KL, ROME_DECAY, ROME_CLAMP = 20, 0.5, 0.0625, 0.5, 4.0


def causal_trace(
    lm: llm.LM, facts: Sequence[Fact], *, window: int = 6, n_noise: int = 2, seed: int = 0
) -> np.ndarray:
    """ROME's causal tracing of the MLPs at the subject's last token.

    The subject's token embeddings are corrupted with Gaussian noise (3 times the
    embeddings' standard deviation); then, for each layer ``l``, the clean MLP outputs of
    the ``window`` layers around ``l`` are restored at the subject's last token. The
    indirect effect is ``P_restored(object) - P_corrupted(object)`` for the object's
    first token, averaged over facts and ``n_noise`` noise samples (ROME: 10): ``[layer]``.
    """
    n_layers = lm.n_layers
    embed = lm.model.model.embed_tokens
    sigma = 3 * float(embed.weight.detach().std())
    gen = torch.Generator().manual_seed(seed)
    effects = np.zeros(n_layers)
    for fact in facts:
        prompt, token = fact.prompt, lm.tokens(" " + fact.object)[0]
        batch = llm.encode(lm, [prompt])
        first, col = subject_span(lm, prompt, fact.subject)  # one prompt: columns are indices
        mlps = [("mlp", l) for l in range(n_layers)]
        clean = [value[0, col] for value in llm.read(lm, batch, mlps).values()]
        rows = 1 + n_layers  # row 0: corrupted only; row 1 + l: restore the window around l
        restore = torch.zeros(rows, n_layers, dtype=torch.bool)
        for l in range(n_layers):
            lo = max(0, l - window // 2)
            restore[1 + l, lo : min(n_layers, lo + window)] = True
        noise = torch.randn(n_noise, col - first + 1, lm.d_model, generator=gen) * sigma

        def corrupt(x: torch.Tensor) -> torch.Tensor:  # the token embeddings, ("resid", 0)
            x = x.clone()
            x[:, first : col + 1] += noise.repeat_interleave(rows, 0).to(x)
            return x

        def restorer(l: int) -> Callable[[torch.Tensor], torch.Tensor]:
            def fn(x: torch.Tensor) -> torch.Tensor:
                x = x.clone()
                x[restore[:, l].repeat(n_noise), col] = clean[l]
                return x

            return fn

        big = batch.repeat_interleave(rows * n_noise)
        edits = {("resid", 0): corrupt, **{site: restorer(l) for l, site in enumerate(mlps)}}
        with torch.no_grad(), llm.writing(lm, edits):
            probs = lm.model(**big.inputs(), logits_to_keep=1).logits[:, -1].softmax(-1)[:, token]
        probs = probs.view(n_noise, rows).mean(0).cpu().numpy()
        effects += probs[1:] - probs[0]
    return effects / len(facts)


def trace_layer(effects: np.ndarray, window: int) -> int:
    """The layer ROME edits: the largest indirect effect among the layers whose restored
    window leaves out layer 0 (whose MLP acts on the token embedding itself, so that
    restoring it undoes the corruption of the subject trivially)."""
    first = window // 2 + 1
    return first + int(np.argmax(effects[first:]))


#: ROME's sample of keys for ``C``: how many texts the model samples, and their length
#: (tokens). 512 texts give about 58,000 tokens (some stop early; ROME: 100,000 Wikipedia
#: samples).
SAMPLE_TEXTS, SAMPLE_TOKENS = 512, 128

#: The sampled texts' openings (one token each, so that a batch needs no padding).
OPENINGS = ("The", "In", "A", "It", "When", "This", "There", "My")


def sample_texts(
    lm: llm.LM,
    *,
    n_texts: int = 32,
    n_tokens: int = 64,
    seed: int = 0,
    batch_size: int = 64,
    progress: bool = False,
) -> list[str]:
    """Text the model samples itself (top-50 sampling) from short neutral openings: the
    stand-in for ROME's Wikipedia sample (cached). Sampled ``batch_size`` texts at a time
    (a progress bar with ``progress``); the seed is set once, before the first batch."""

    def build() -> list[str]:
        from tqdm.auto import tqdm

        torch.manual_seed(seed)
        texts: list[str] = []
        starts = range(0, n_texts, batch_size)
        for at in tqdm(starts, desc="sampling text for C", disable=not progress):
            size = min(batch_size, n_texts - at)
            batch = llm.encode(lm, [OPENINGS[(at + i) % len(OPENINGS)] for i in range(size)])
            with torch.no_grad():
                out = lm.model.generate(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    max_new_tokens=n_tokens,
                    do_sample=True,
                    top_k=50,
                    pad_token_id=lm.tokenizer.pad_token_id,
                )
            texts += lm.tokenizer.batch_decode(out, skip_special_tokens=True)
        return texts

    config = {"model": lm.name, "n_texts": n_texts, "n_tokens": n_tokens, "seed": seed}
    if batch_size != 64:
        config["batch_size"] = batch_size
    return core.cached("editing-sample", config, build)


def second_moment(lm: llm.LM, layer: int, texts: Sequence[str]) -> torch.Tensor:
    """ROME's ``C = E[k k^T]`` of ``layer``'s MLP keys over every token of ``texts`` (cached)."""

    def build() -> torch.Tensor:
        keys = torch.cat([keys_at(lm, layer, texts[i : i + 16]) for i in range(0, len(texts), 16)])
        return (keys.T @ keys / len(keys)).cpu()

    return core.cached(
        "editing-second-moment", {"model": lm.name, "layer": layer, "texts": list(texts)}, build
    )


def moments_config(
    lm: llm.LM, layer: int, *, n_texts: int, n_tokens: int, seed: int, sizes: Sequence[int]
) -> dict[str, Any]:
    """The cache key of :func:`second_moments`: everything the estimate depends on (the
    model, the layer, the sample of text and the token counts kept)."""
    return {
        "model": lm.name,
        "layer": int(layer),
        "sample": {"n_texts": n_texts, "n_tokens": n_tokens, "seed": seed, "top_k": 50},
        "openings": list(OPENINGS),
        "sizes": sorted(int(n) for n in sizes),
    }


def second_moments(
    lm: llm.LM,
    layer: int,
    *,
    n_texts: int = SAMPLE_TEXTS,
    n_tokens: int = SAMPLE_TOKENS,
    seed: int = 0,
    sizes: Sequence[int] = (),
    batch_size: int = 16,
    progress: bool = False,
) -> dict[int, torch.Tensor]:
    """ROME's ``C = E[k k^T]`` of ``layer``'s MLP keys over the text the model samples
    itself (:func:`sample_texts`), estimated once and cached (key:
    :func:`moments_config`): ``{n: C over the first n tokens}`` for each of ``sizes`` that
    the sample reaches, and for all its tokens (the largest key). Keys are read
    ``batch_size`` texts at a time, the pass stopping at ``layer``."""
    config = moments_config(lm, layer, n_texts=n_texts, n_tokens=n_tokens, seed=seed, sizes=sizes)

    def build() -> dict[int, torch.Tensor]:
        from tqdm.auto import tqdm

        texts = sample_texts(lm, n_texts=n_texts, n_tokens=n_tokens, seed=seed, progress=progress)
        d_mlp = llm.down_proj(lm, layer).weight.shape[1]
        total = torch.zeros(d_mlp, d_mlp, dtype=torch.float64)
        wanted, seen, out = sorted(int(n) for n in sizes), 0, {}
        starts = range(0, len(texts), batch_size)
        for at in tqdm(starts, desc="keys for C", disable=not progress):
            keys = keys_at(lm, layer, texts[at : at + batch_size]).double().cpu()
            for row in range(0, len(keys), 256):  # cut the running sum at each size
                part = keys[row : row + 256]
                while wanted and seen + len(part) >= wanted[0]:
                    cut = wanted[0] - seen
                    total += part[:cut].T @ part[:cut]
                    part, seen = part[cut:], wanted[0]
                    out[wanted.pop(0)] = (total / seen).float()
                total += part.T @ part
                seen += len(part)
        out[seen] = (total / seen).float()
        return out

    return core.cached("editing-second-moments", config, build)


@dataclass
class Penalty:
    """A term added to :func:`rome_v`'s loss at every step. ``watch()`` is a context in
    which the model runs (the layers below the edit once, then each step's forward);
    ``loss(seen, queries, subjects)`` gets what ``watch()`` handed out, each rewrite
    prompt's last column before the target and its subject's last column."""

    watch: Callable[[], contextlib.AbstractContextManager[Any]]
    loss: Callable[[Any, list[int], torch.Tensor], torch.Tensor]


def rome_v(
    lm: llm.LM,
    request: Request,
    layer: int,
    *,
    steps: int = ROME_STEPS,
    lr: float = ROME_LR,
    kl_factor: float = ROME_KL,
    weight_decay: float = ROME_DECAY,
    clamp: float = ROME_CLAMP,
    prefixes: Sequence[str] = PREFIXES,
    kl_at_subject: bool = False,
    penalty: Penalty | None = None,
) -> tuple[torch.Tensor, torch.Tensor, int]:
    """ROME's ``v*``: the MLP output at the subject's last token that makes the model say
    the new object.

    ``v* = v + delta`` where ``delta``, added to the MLP output at the subject's last token,
    minimises the mean over the prefixed rewrite prompts of ``-log P'(new | prefix + prompt)``
    (per token) ``+ kl_factor * KL(P'(.|"{s} is a") || P(.|"{s} is a"))`` (the subject's
    essence, against the unedited ``P``; read after the prompt's last token, or with
    ``kl_at_subject`` after the subject's last token, as ROME's code reads it)
    ``+ weight_decay * |delta| / |v|^2``, with Adam,
    ``|delta| <= clamp * |v|`` and a stop once the loss is below 0.05 (ROME's code).
    A :class:`Penalty` adds a term of its own to the loss (SADR's attention term).
    Returns ``(v*, k*, steps taken)``, ``k*`` the mean key at the subject over the prefixes.
    """
    target = lm.tokens(request.target)
    texts = [p + request.prompt for p in prefixes]
    essence = f"{request.subject} is a"
    batch, columns, _ = probe_batch(lm, [(t, request.target) for t in texts], extra=[essence])
    subj = subject_columns(
        lm, [t + request.target for t in texts] + [essence], request.subject, batch
    )
    rows = torch.arange(len(texts) + 1)
    kl_col = subj[-1] if kl_at_subject else batch.input_ids.shape[1] - 1
    v_site, k_site = ("mlp", layer), ("neurons", layer)
    with torch.no_grad(), llm.reading(lm, [v_site, k_site]) as seen:
        kl_ref = llm.logits_at(lm, batch, [len(texts)], [kl_col])[0].log_softmax(-1)
    v = seen[v_site][0, subj[0]]
    k_star = seen[k_site][rows[:-1], subj[:-1]].mean(
        0
    )  # causal: the target after it changes nothing
    delta = torch.zeros_like(v, requires_grad=True)
    opt = torch.optim.Adam([delta], lr=lr)

    def add(x: torch.Tensor) -> torch.Tensor:  # the MLP output, plus delta at the subject
        x = x.clone()
        x[rows, subj] += delta
        return x

    # the columns scored: each rewrite row's target positions, then the essence prompt's end
    where_rows = [i for i, cols in enumerate(columns) for _ in cols] + [len(texts)]
    where_cols = [c for cols in columns for c in cols] + [kl_col]
    watch = penalty.watch if penalty else contextlib.nullcontext
    with watch():  # the layers below never change: run them once
        resume = llm.layer_input(lm, batch, layer)
    taken = 0
    for taken in range(1, steps + 1):
        with llm.writing(lm, {v_site: add}), llm.frozen(lm), watch() as seen:
            logp = llm.logits_at(lm, batch, where_rows, where_cols, resume).log_softmax(-1)
        nll = -logp[:-1, target * len(texts)].diagonal().view(len(texts), -1).mean()
        kl = torch.nn.functional.kl_div(kl_ref, logp[-1], log_target=True, reduction="sum")
        loss = nll + kl_factor * kl + weight_decay * delta.norm() / v.norm() ** 2
        if penalty is not None:
            loss = loss + penalty.loss(seen, [cols[0] for cols in columns], subj[:-1])
        if loss.item() < 5e-2:
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():
            limit = clamp * v.norm()
            if delta.norm() > limit:
                delta.mul_(limit / delta.norm())
    return (v + delta).detach(), k_star, taken


def rome(lm: llm.LM, request: Request, layer: int, C: torch.Tensor, **kwargs: Any) -> Edit:
    """ROME's rank-one update of ``W_down[layer]``: ``W' = W + (v* - W k*) u^T`` with
    ``u = C^-1 k* / (k*^T C^-1 k*)``, so that ``W' k* = v*`` and keys ``k`` with
    ``k^T C^-1 k* = 0`` are left alone. ``v*`` and ``k*`` are kept in the edit's ``info``
    (:func:`rome_update` writes them again with another ``C``)."""
    start = time.perf_counter()
    v_star, k_star, steps = rome_v(lm, request, layer, **kwargs)
    edit = rome_update(lm, request, layer, C, v_star, k_star)
    edit.seconds = time.perf_counter() - start
    edit.info["steps"] = steps
    return edit


def rome_update(
    lm: llm.LM,
    request: Request,
    layer: int,
    C: torch.Tensor,
    v_star: torch.Tensor,
    k_star: torch.Tensor,
    key: torch.Tensor | None = None,
) -> Edit:
    """ROME's rank-one update for a given ``v*`` and ``k*`` (:func:`rome`'s second half):
    ``W' = W + (v* - W k) u^T / (k^T u)`` with ``u = C^-1 k*``, so that ``W' k = v*``.
    The key ``k`` is ``k*`` itself unless ``key`` is given; ROME's code writes the update
    for the plain prompt's key (:func:`plain_key`), its direction ``u`` still from the
    mean key ``k*``."""
    W = llm.down_proj(lm, layer).weight.detach()
    v_star, k_star = v_star.to(W), k_star.to(W)
    k = k_star if key is None else key.to(W)
    u = torch.linalg.solve(C.to(W), k_star)
    delta = torch.outer(v_star - W @ k, u / (k @ u))
    info = {"layer": layer, "v_star": v_star.cpu(), "k_star": k_star.cpu()}
    return Edit("ROME", request, [Change(layer, delta)], 0.0, info)


def plain_key(lm: llm.LM, request: Request, layer: int) -> torch.Tensor:
    """The MLP key at the subject's last token of the plain rewrite prompt (no prefix)."""
    with torch.no_grad():
        column = subject_span(lm, request.prompt, request.subject)[1]
        return keys_at(lm, layer, [request.prompt], [column])[0]


#: ROME's context templates: openings, and (tokens, number) of each length sampled.
CONTEXT_OPENINGS = ("The", "Therefore", "Because", "I", "You")
CONTEXT_LENGTHS = ((5, 10), (10, 10))


def context_prefixes(lm: llm.LM, seed: int = 0) -> tuple[str, ...]:
    """ROME's sampled context prefixes: the plain prompt, then for each (tokens,
    number) of ``CONTEXT_LENGTHS`` that many texts of that many tokens, which the
    model samples (top-5) from ``CONTEXT_OPENINGS`` in turn, each followed by ". "
    (20 prefixes and the plain prompt, as ROME's ``get_context_templates``; cached)."""

    def build() -> list[str]:
        torch.manual_seed(seed)
        texts = []
        for n_tokens, number in CONTEXT_LENGTHS:
            openings = [CONTEXT_OPENINGS[i % len(CONTEXT_OPENINGS)] for i in range(number)]
            batch = llm.encode(lm, openings)
            with torch.no_grad():
                out = lm.model.generate(
                    input_ids=batch.input_ids,
                    attention_mask=batch.attention_mask,
                    max_new_tokens=n_tokens - 1,
                    do_sample=True,
                    top_k=5,
                    pad_token_id=lm.tokenizer.pad_token_id,
                )
            texts += lm.tokenizer.batch_decode(out, skip_special_tokens=True)
        return [""] + [t.replace("{", " ").replace("}", " ").strip() + ". " for t in texts]

    config = {"model": lm.name, "openings": list(CONTEXT_OPENINGS),
              "lengths": [list(x) for x in CONTEXT_LENGTHS], "seed": seed}  # fmt: skip
    return tuple(core.cached("editing-context-prefixes", config, build))


def regularised(C: torch.Tensor, ridge: float = 1e-3) -> torch.Tensor:
    """``C + ridge * mean(diag C) * I``: invertible when the sample has fewer tokens than keys."""
    return C + ridge * C.diagonal().mean() * torch.eye(len(C))
