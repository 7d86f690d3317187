"""What a model says: greedy and sampled continuations, next-token logits and cloze
scores (see :mod:`iclr25.llm`)."""

from __future__ import annotations

from collections.abc import Sequence

import torch

from iclr25.llm.models import LM, chunks, encode

# ---------------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------------


@torch.no_grad()
def generate(lm: LM, prompts: Sequence[str], n_tokens: int = 24) -> list[str]:
    """Greedy continuations of ``prompts`` (``n_tokens`` tokens each), without the prompt."""
    batch = encode(lm, prompts)
    out = lm.model.generate(
        input_ids=batch.input_ids,
        attention_mask=batch.attention_mask,
        max_new_tokens=n_tokens,
        do_sample=False,
        pad_token_id=lm.tokenizer.pad_token_id,
    )
    return lm.tokenizer.batch_decode(out[:, batch.input_ids.shape[1] :], skip_special_tokens=True)


@torch.inference_mode()
def sample(
    lm: LM,
    prompts: Sequence[str],
    n: int,
    *,
    max_new_tokens: int,
    temperature: float = 1.0,
    batch_size: int = 64,
    seed: int = 0,
) -> list[list[str]]:
    """``n`` sampled continuations of each prompt, without the prompt: ancestral sampling
    from ``softmax(logits / temperature)`` (no top-k or top-p), the generator seeded with
    ``seed``, ``batch_size`` sequences at a time; ``out[i]`` holds prompt ``i``'s."""
    if n < 1 or temperature <= 0:
        raise ValueError(f"sample needs n >= 1 and temperature > 0; got n={n}, {temperature}")
    torch.manual_seed(seed)
    flat = [i for i in range(len(prompts)) for _ in range(n)]
    out: list[list[str]] = [[] for _ in prompts]
    for start in range(0, len(flat), batch_size):
        rows = flat[start : start + batch_size]
        batch = encode(lm, [prompts[i] for i in rows])
        ids = lm.model.generate(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            max_new_tokens=max_new_tokens,
            do_sample=True,
            temperature=temperature,
            top_k=0,
            top_p=1.0,
            pad_token_id=lm.tokenizer.pad_token_id,
        )
        texts = lm.tokenizer.batch_decode(
            ids[:, batch.input_ids.shape[1] :], skip_special_tokens=True
        )
        for i, text in zip(rows, texts):
            out[i].append(text)
    return out


# ---------------------------------------------------------------------------------
# Cloze scoring
# ---------------------------------------------------------------------------------


@torch.inference_mode()
def next_token_logits(lm: LM, prompts: Sequence[str], *, batch_size: int = 16) -> torch.Tensor:
    """The logits of the token after each prompt, ``[len(prompts), vocabulary]``, on the CPU."""
    out = []
    for part in chunks(len(prompts), batch_size):
        batch = encode(lm, prompts[part])
        out.append(lm.model(**batch.inputs(), logits_to_keep=1).logits[:, -1].float().cpu())
    return torch.cat(out)


@torch.inference_mode()
def score_continuations(
    lm: LM, prompts: Sequence[str], options: Sequence[Sequence[str]], *, batch_size: int = 8
) -> torch.Tensor:
    """Cloze scores: ``log P(option | prompt)`` summed over the option's tokens, ``[N, K]``.

    Options continue the prompt as written (``" Paris"`` with its space). Each prompt is
    run once; its keys and values are then repeated for its ``K`` options, so an option
    of ``n`` tokens costs ``n - 1`` more positions, and a one-token option nothing.
    """
    if len({len(o) for o in options}) != 1 or len(options) != len(prompts):
        raise ValueError(
            "score_continuations needs one list of options per prompt, all of one length"
        )
    tokens = [[lm.tokens(o) for o in opts] for opts in options]
    if any(not t for opts in tokens for t in opts):
        raise ValueError("an option is empty: it has no tokens to score")
    k = len(options[0])
    scores = []
    for part in chunks(len(prompts), batch_size):
        batch, conts = encode(lm, prompts[part]), [t for opts in tokens[part] for t in opts]
        out = lm.model(**batch.inputs(), use_cache=True, logits_to_keep=1)
        first = out.logits[:, -1].float().log_softmax(-1).repeat_interleave(k, 0)
        score = first[torch.arange(len(conts)), [c[0] for c in conts]]
        rest = max(map(len, conts)) - 1
        if rest:  # the later tokens of longer options, after the prompt's cached keys and values
            cache = out.cache
            cache.batch_repeat_interleave(k)
            feed = torch.tensor(
                [c[:-1] + [0] * (rest + 1 - len(c)) for c in conts], device=lm.device
            )
            target = torch.tensor(
                [c[1:] + [0] * (rest + 1 - len(c)) for c in conts], device=lm.device
            )
            live = torch.tensor(
                [[1] * (len(c) - 1) + [0] * (rest + 1 - len(c)) for c in conts], device=lm.device
            )
            start = batch.lengths.repeat_interleave(k)[:, None]
            logits = lm.model(
                input_ids=feed,
                cache=cache,
                attention_mask=torch.cat([batch.attention_mask.repeat_interleave(k, 0), live], 1),
                position_ids=start + torch.arange(rest, device=lm.device),
            ).logits
            later = logits.float().log_softmax(-1).gather(-1, target[..., None])[..., 0]
            score = score + (later * live).sum(1)
        scores.append(score.view(-1, k).cpu())
    return torch.cat(scores)
