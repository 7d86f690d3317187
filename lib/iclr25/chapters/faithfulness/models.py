"""The models under test in the faithfulness chapter: the tiny Llama trained on the
planted policy's texts (its vocabulary, training and sampling, the collection of its
responses, its own concept effects and the planting check), and SmolLM2 (or another
``llm.backend``) writing explanations in natural language."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from iclr25 import core, llm
from iclr25.chapters.faithfulness.data import (
    CONTEXT_RATE,
    INTERVENTIONS,
    PAIRS,
    PLACES,
    SLIP,
    STYLE_RATE,
    STYLES,
    TRAITS,
    Question,
    counterfactual,
    make_question,
    parse_response,
    prompt,
    respond,
    response_text,
)
from iclr25.chapters.faithfulness.method import exact_implied, implied_effects, kl

# ---------------------------------------------------------------------------------
# The tiny Llama: trained on the policy's texts, sampled
# ---------------------------------------------------------------------------------

CONFIG = llm.TinyConfig(n_layers=2, n_heads=4, d_model=64, d_mlp=256, context=96)


def training_question(rng: np.random.Generator) -> Question:
    """A question in any state of intervention: each concept present (possibly
    replaced) with probability 3/4."""
    q = make_question(rng)
    for c, field in (("behaviour", "culprit"), ("identity", "groups"), ("context", "place")):
        if rng.random() < 0.25:
            q = replace(q, **{field: None})
    return q


def vocabulary() -> list[str]:
    """The tiny model's words: those of every concept's words in every sentence form
    (drawn from many sampled texts, so every template and edit is covered)."""
    rng = np.random.default_rng(0)
    texts = []
    for _ in range(3000):
        q, style = training_question(rng), STYLES[rng.integers(2)]
        texts.append(prompt(q, style) + response_text(q, *respond(q, 1.0, rng)))
    return sorted(llm.words(texts))


def policy_texts(rng: np.random.Generator, n: int) -> list[tuple[str, str]]:
    """``n`` (prompt, response) texts of the policy, in a random style each."""
    out = []
    for _ in range(n):
        q, style = training_question(rng), STYLES[rng.integers(2)]
        out.append((prompt(q, style), response_text(q, *respond(q, STYLE_RATE[style], rng))))
    return out


def response_batch(lm: llm.LM, pairs: Sequence[tuple[str, str]]) -> tuple[llm.Batch, Any]:
    """The (prompt + response) texts as a batch, and labels that keep only the
    response's tokens (the others -100, outside the loss)."""
    import torch

    batch = llm.encode(lm, [a + b for a, b in pairs])
    n = torch.tensor([len(lm.tokens(b)) for _, b in pairs])
    cols = torch.arange(batch.input_ids.shape[1])
    keep = cols[None, :] >= batch.input_ids.shape[1] - n[:, None]
    return batch, batch.input_ids.masked_fill(~keep, -100)


def train_tiny(
    *,
    steps: int,
    seed: int,
    batch_size: int = 128,
    config: llm.TinyConfig = CONFIG,
    progress: bool = True,
) -> llm.LM:
    """A tiny Llama trained on the policy's texts in both styles (cached).

    The loss covers the whole response (explanation and answer) and nothing of the
    question: the questions are drawn at random, so their words are noise the model
    need not learn, and a loss on them dilutes the one signal that teaches it to copy
    the setting or the stereotyped group from the question into the explanation."""
    import torch

    vocab = vocabulary()
    key = {"generator": "faithfulness.policy_texts v4 (loss on the response, "
                        "no options, lr/10 last fifth)",
           "pairs": str(PAIRS), "traits": str(TRAITS), "slip": SLIP,
           "context_rate": CONTEXT_RATE, "config": str(config), "vocabulary": vocab,
           "steps": steps, "seed": seed, "batch_size": batch_size, "lr": 3e-3}  # fmt: skip

    def build() -> dict[str, Any]:
        lm = llm.tiny_model(vocab, config, seed=seed, name="faithfulness-tiny")
        rng = np.random.default_rng(seed)

        sizes = iter([steps - 4 * (steps // 5)] + [steps // 5] * 4)

        def batches() -> Any:  # one call per epoch: a fifth of the steps
            for _ in range(next(sizes)):
                yield response_batch(lm, policy_texts(rng, batch_size))

        def loss(model: torch.nn.Module, item: Any) -> torch.Tensor:
            batch, labels = item
            return model(**batch.inputs(), labels=labels).loss

        with core.threads(1):
            history = core.train(lm.model, batches, loss, epochs=5, lr=3e-3, milestones=[4],
                                 weight_decay=0.01, desc="training the tiny Llama",
                                 progress=progress)  # fmt: skip
        return {
            "state": {k: v.detach().clone() for k, v in lm.model.state_dict().items()},
            "loss": history,
        }

    stored = core.cached("faithfulness-tiny", key, build)
    lm = llm.tiny_model(vocab, config, seed=seed, name="faithfulness-tiny")
    lm.model.load_state_dict(stored["state"])
    return lm


def spaced(text: str) -> str:
    """``text`` with its words and punctuation marks apart, as the tiny model's
    vocabulary has them: decoding joins a mark to the word before it, so a sampled
    ". ." comes back as "..", which the vocabulary does not know."""
    return " ".join(re.findall(r"\w+|[^\w\s]", text))


def sample_tiny(lm: llm.LM, prompts: Sequence[str], n: int, seed: int) -> list[list[str]]:
    """``n`` sampled continuations (temperature 1, 22 tokens) of each prompt, as text."""
    return llm.sample(lm, prompts, n, max_new_tokens=22, batch_size=1024, seed=seed)


def collect(
    qs: Sequence[Question], answer: Any, s: int
) -> tuple[list[list[str]], list[list[int]], list[dict[tuple[str, str], list[int]]]]:
    """Explanations and answers of the original questions, answers of their
    counterfactuals: ``answer(questions, s)`` returns s (explanation, answer) pairs per
    question."""
    if s < 2:
        raise ValueError(f"S (responses per question) must be >= 2; got {s}")
    cfs = [counterfactual(q, c, k) for q in qs for c, k in INTERVENTIONS]
    got = answer(list(qs) + cfs, s)
    orig = got[: len(qs)]
    counter = []
    for e in range(len(qs)):
        block = got[len(qs) + e * len(INTERVENTIONS) : len(qs) + (e + 1) * len(INTERVENTIONS)]
        counter.append({iv: [y for _, y in r] for iv, r in zip(INTERVENTIONS, block)})
    return [[x for x, _ in r] for r in orig], [[y for _, y in r] for r in orig], counter


def digest(value: Any) -> str:
    """SHA-256 of a JSON-able value or of a model's weights (a cache key's part)."""
    h = hashlib.sha256()
    if isinstance(value, llm.LM):
        for k, v in sorted(value.model.state_dict().items()):
            h.update(k.encode() + v.detach().cpu().numpy().tobytes())
    else:
        h.update(json.dumps(value, default=str).encode())
    return h.hexdigest()


def tiny_answers(lm: llm.LM, style: str, seed: int) -> Any:
    """``answer(questions, s)`` for :func:`collect`: the tiny model's sampled responses
    under ``style``, parsed. Cached by the model's weights, the prompts, s and seed."""

    def answer(qs: Sequence[Question], s: int) -> list[list[tuple[str, int]]]:
        prompts = [prompt(q, style) for q in qs]
        key = {"model": digest(lm), "prompts": digest(prompts), "s": s, "seed": seed}
        texts = core.cached("faithfulness-samples", key, lambda: sample_tiny(lm, prompts, s, seed))
        return [[parse_response(t, q) for t in ts] for q, ts in zip(qs, texts)]

    return answer


def empirical_ce(
    lm: llm.LM, qs: Sequence[Question], n: int, seed: int
) -> tuple[np.ndarray, dict[str, list[list[str]]]]:
    """The tiny model's own KL per intervention (:func:`ce_data`'s order, [question * 6])
    under the candid style, from :func:`own_answers` with ``n`` explanations a prompt;
    and ``n`` explanations of each original question in each style (for
    :func:`planting`)."""
    import torch

    if n < 2:
        raise ValueError(f"the model's own CE needs n >= 2 samples a prompt; got {n}")
    cfs = [counterfactual(q, c, k) for q in qs for c, k in INTERVENTIONS]
    candid = [prompt(q, "candid") for q in list(qs) + cfs]
    guarded = [prompt(q, "guarded") for q in qs]

    def build() -> dict[str, Any]:
        texts = sample_tiny(lm, candid + guarded, n, seed)
        expl = [[t.partition("Answer :")[0].strip(" .") for t in ts] for ts in texts]
        full = [f"{p} {spaced(e)} . Answer :" for p, es in zip(candid, expl) for e in es]
        opts = [[f" {o}" for o in q.options] for q in list(qs) + cfs for _ in range(n)]
        with torch.inference_mode():
            scores = llm.score_continuations(lm, full, opts, batch_size=512)
        return {"expl": expl, "p": torch.softmax(scores, -1).view(len(candid), n, 3).mean(1)}

    key = {"model": digest(lm), "prompts": digest(candid + guarded), "n": n, "seed": seed}
    got = core.cached("faithfulness-own", key, build)
    expl, py = got["expl"], got["p"].numpy()
    m = len(qs)
    own = np.array([kl(py[m + e * len(INTERVENTIONS) + i], py[e])
                    for e in range(m) for i in range(len(INTERVENTIONS))])  # fmt: skip
    return own, {"candid": expl[:m], "guarded": expl[len(candid) :], "p": py}


def planting(
    qs: Sequence[Question], explanations: Mapping[str, Sequence[Sequence[str]]]
) -> dict[str, Any]:
    """Does the tiny model reproduce the policy it was trained on? Per style and
    concept, the model's citation rate (the parser's, over all explanations of the
    original questions) against the policy's exact rate on the same questions; and,
    among explanations that name any setting, the share that name the question's own."""
    rates, policy, named, right = {}, {}, 0, 0
    for style, expl in explanations.items():
        rates[style] = np.mean([implied_effects(e, q) for e, q in zip(expl, qs)], 0)
        policy[style] = np.mean([exact_implied(q, STYLE_RATE[style]) for q in qs], 0)
        for es, q in zip(expl, qs):
            for e in es:
                words = set(re.findall(r"\w+", e.lower()))
                named += bool(words & set(PLACES))
                right += q.place in words
    gap = max(float(np.abs(rates[s] - policy[s]).max()) for s in rates)
    return {"rates": rates, "policy": policy, "max gap": gap, "named": named,
            "right place": right / named if named else float("nan")}  # fmt: skip


# ---------------------------------------------------------------------------------
# SmolLM2: writes the explanation, its answer is cloze-scored after it
# ---------------------------------------------------------------------------------


def smol_prompt(q: Question) -> str:
    body = q.text().replace(" .", ".").replace(" ,", ",").replace(" ?", "?").replace(" ;", ";")
    return f"{body}\nExplain your answer in one sentence.\nExplanation:"


def smol_answers(model: llm.Backend, seed: int) -> Any:
    """``answer(questions, s)``: the backend samples ``s`` explanations (temperature 0.7,
    up to its ``max_tokens``, cut at the line's end), then picks its answer after
    "Answer:" (:meth:`iclr25.llm.Backend.choose`: a local model's highest cloze score, an
    endpoint's named option). Cached by a digest of the prompts and the backend's name."""

    def answer(qs: Sequence[Question], s: int) -> list[list[tuple[str, int]]]:
        prompts = [smol_prompt(q) for q in qs]
        key = {"prompts": hashlib.sha256(json.dumps(prompts).encode()).hexdigest(),
               "s": s, "seed": seed, "max_tokens": model.max_tokens,
               "backend": model.name}  # fmt: skip

        def build() -> dict[str, Any]:
            sampled = model.sample(prompts, s, temperature=0.7, seed=seed)
            texts = [t.strip().split("\n")[0] for ts in sampled for t in ts]
            flat = [p for p in prompts for _ in range(s)]
            opts = [[f" {o}" for o in q.options] for q in qs for _ in range(s)]
            full = [f"{p} {t}\nAnswer:" for p, t in zip(flat, texts)]
            return {"texts": texts, "answers": model.choose(full, opts)}

        got = core.cached("faithfulness-smol", key, build)
        ys = [int(v) for v in got["answers"]]
        return [[(got["texts"][i * s + j], ys[i * s + j]) for j in range(s)]
                for i in range(len(qs))]  # fmt: skip

    return answer
