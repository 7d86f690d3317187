"""Evaluating an edit: teacher-forced predictions, the metrics as EasyEdit computes them
for KnowEdit, CounterFact accuracy as ROME's summarize script scores it, and running
each method over the cases (edit, measure, restore)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import llm
from iclr25.editing.edits import Edit, applied

if TYPE_CHECKING:
    from iclr25.editing.facts import Case, Request


# ---------------------------------------------------------------------------------
# Metrics
# ---------------------------------------------------------------------------------


def probe_batch(
    lm: llm.LM, probes: Sequence[tuple[str, str]], extra: Sequence[str] = ()
) -> tuple[llm.Batch, list[list[int]], list[list[int]]]:
    """``prompt + object`` batched (then the ``extra`` texts); for each probe the columns
    whose logits predict the object's tokens, and those tokens."""
    objs = [lm.tokens(o) for _, o in probes]
    for (prompt, obj), ids in zip(probes, objs):
        if lm.tokens(prompt) + ids != lm.tokens(prompt + obj):
            raise ValueError(f"{obj!r} does not tokenize on its own after {prompt!r}")
    batch = llm.encode(lm, [p + o for p, o in probes] + list(extra))
    width = batch.input_ids.shape[1]
    columns = [list(range(width - len(ids) - 1, width - 1)) for ids in objs]
    return batch, columns, objs


@torch.no_grad()
def predict(lm: llm.LM, probes: Sequence[tuple[str, str]]) -> list[torch.Tensor]:
    """Teacher forcing on each probe's object: the model's top-1 token where it predicts
    each of the object's tokens (one tensor per probe)."""
    if not probes:
        return []
    batch, columns, _ = probe_batch(lm, probes)
    found = (
        llm.logits_at(
            lm,
            batch,
            [i for i, cols in enumerate(columns) for _ in cols],
            [c for cols in columns for c in cols],
        )
        .argmax(-1)
        .cpu()
    )
    return list(found.split([len(cols) for cols in columns]))


def token_accuracy(predicted: Sequence[torch.Tensor], targets: Sequence[Sequence[int]]) -> float:
    """Mean over probes of the share of object tokens predicted exactly (EasyEdit's
    efficacy and generalisation)."""
    return float(
        np.mean(
            [
                (p == torch.as_tensor(t)).float().mean().item()
                for p, t in zip(predicted, targets, strict=True)
            ]
        )
    )


def agreement(before: Sequence[torch.Tensor], after: Sequence[torch.Tensor]) -> float:
    """Mean over probes of the share of predicted tokens the edit left unchanged
    (EasyEdit's locality); ``nan`` when there are no probes."""
    if not before:
        return float("nan")
    return float(
        np.mean([(a == b).float().mean().item() for a, b in zip(before, after, strict=True)])
    )


def n_gram_entropy(
    text: str, ns: Sequence[int] = (2, 3), weights: Sequence[float] = (2 / 3, 4 / 3)
) -> float:
    """ROME's fluency: the mean of ``w_n * H_n`` over ``n``, where ``H_n`` is the entropy
    (bits) of the frequency distribution of the text's word ``n``-grams. Repetitive text
    scores low."""
    words = text.split()
    entropies = []
    for n, w in zip(ns, weights, strict=True):
        counts = np.array(list(Counter(zip(*(words[i:] for i in range(n)))).values()), dtype=float)
        freq = counts / counts.sum() if counts.size else np.ones(1)
        entropies.append(w * float(-(freq * np.log2(freq)).sum()))
    return float(np.mean(entropies))


LOCALITY = ("neighbourhood", "relation", "distract")


def probes(case: Case) -> dict[str, list[tuple[str, str]]]:
    """A case's probes by kind: the rewrite and its paraphrases with the new object, and
    the locality probes (:data:`LOCALITY`) with their true objects."""
    target = case.request.target
    return {
        "rewrite": [(case.request.prompt, target)],
        "paraphrase": [(p, target) for p in case.paraphrases],
        "neighbourhood": list(case.neighbourhood),
        "relation": list(case.relation),
        "distract": list(case.distract),
    }


def predict_groups(
    lm: llm.LM, groups: Sequence[dict[str, list[tuple[str, str]]]], chunk: int = 64
) -> list[dict[str, list[torch.Tensor]]]:
    """:func:`predict` on many groups of probes at once (one forward pass per ``chunk``
    probes), returned in the same shape."""
    flat = [probe for group in groups for probes_ in group.values() for probe in probes_]
    found = [t for i in range(0, len(flat), chunk) for t in predict(lm, flat[i : i + chunk])]
    out, at = [], 0
    for group in groups:
        out.append({})
        for kind, probes_ in group.items():
            out[-1][kind], at = found[at : at + len(probes_)], at + len(probes_)
    return out


def fluency(lm: llm.LM, prompts: Sequence[str], n_tokens: int) -> float:
    """The mean :func:`n_gram_entropy` of greedy continuations of ``prompts`` (``nan`` for
    ``n_tokens`` 0: fluency not measured)."""
    if not n_tokens:
        return float("nan")
    return float(np.mean([n_gram_entropy(t) for t in llm.generate(lm, prompts, n_tokens)]))


@dataclass
class Baseline:
    """The unedited model's predictions on a case's locality probes, and its fluency."""

    predictions: dict[str, list[torch.Tensor]]
    fluency: float


def baselines(lm: llm.LM, cases: Sequence[Case], n_tokens: int = 24) -> list[Baseline]:
    """The unedited model on every case, batched across cases (``n_tokens`` 0: no
    generation, fluency ``nan``)."""
    found = predict_groups(lm, [{k: probes(c)[k] for k in LOCALITY} for c in cases])
    if not n_tokens:
        return [Baseline(f, float("nan")) for f in found]
    texts = iter(llm.generate(lm, [g for c in cases for g in c.generation], n_tokens))
    return [
        Baseline(f, float(np.mean([n_gram_entropy(next(texts)) for _ in c.generation])))
        for f, c in zip(found, cases)
    ]


def evaluate(lm: llm.LM, case: Case, before: Baseline, n_tokens: int = 24) -> dict[str, float]:
    """The metrics of the (already edited) model on ``case``, against the unedited ``before``:
    efficacy and generalisation (:func:`token_accuracy` of the new object), each locality
    score (:func:`agreement` with the unedited predictions) and fluency."""
    target = lm.tokens(case.request.target)
    (after,) = predict_groups(lm, [probes(case)])
    return {
        "efficacy": token_accuracy(after["rewrite"], [target]),
        "generalisation": token_accuracy(after["paraphrase"], [target] * len(case.paraphrases)),
        **{k: agreement(before.predictions[k], after[k]) for k in LOCALITY},
        "fluency": fluency(lm, case.generation, n_tokens),
        "fluency_before": before.fluency,
    }


# ---------------------------------------------------------------------------------
# CounterFact accuracy (the SADR paper's metric, from ROME's summarize script)
# ---------------------------------------------------------------------------------

#: The CounterFact scores: efficacy, paraphrase, neighbourhood, relation and
#: distract-neighbourhood.
COUNTERFACT = ("ES", "PS", "NS", "RS", "DNS")


def counterfact_probes(case: Case) -> dict[str, list[tuple[str, str, str]]]:
    """A case's probes as ``(prompt, right, wrong)`` per CounterFact score: on the
    rewrite prompt (ES) and the paraphrases (PS) the new object is right and the old one
    wrong; on the neighbourhood (NS), the subject's other relations (RS) and the
    distract prompts (DNS) the true object is right and the new one wrong."""
    new, old = case.request.target, " " + case.fact.object
    return {
        "ES": [(case.request.prompt, new, old)],
        "PS": [(p, new, old) for p in case.paraphrases],
        "NS": [(p, o, new) for p, o in case.neighbourhood],
        "RS": [(p, o, new) for p, o in case.relation],
        "DNS": [(p, o, new) for p, o in case.distract],
    }


@torch.no_grad()
def mean_nll(lm: llm.LM, probes: Sequence[tuple[str, str]], chunk: int = 32) -> np.ndarray:
    """Each probe's mean per-token negative log-likelihood of its object after its
    prompt (teacher forcing), ``[probe]``."""
    out = []
    for at in range(0, len(probes), chunk):
        part = probes[at : at + chunk]
        batch, columns, objs = probe_batch(lm, part)
        rows = [i for i, cols in enumerate(columns) for _ in cols]
        logp = llm.logits_at(lm, batch, rows, [c for cols in columns for c in cols])
        picked = logp.float().log_softmax(-1)[torch.arange(len(rows)), [t for o in objs for t in o]]
        out += [-float(x.mean()) for x in picked.cpu().split([len(o) for o in objs])]
    return np.array(out, dtype=float)


def counterfact_margins(lm: llm.LM, cases: Sequence[Case]) -> list[dict[str, np.ndarray]]:
    """Per case and CounterFact score, each probe's margin: the wrong object's mean
    per-token NLL minus the right one's (nats; positive when the model prefers the
    right object). The model as it is now: apply an edit first to score it."""
    groups = [counterfact_probes(c) for c in cases]
    flat = [t for g in groups for kind in COUNTERFACT for t in g[kind]]
    nll = mean_nll(lm, [(p, r) for p, r, _ in flat] + [(p, w) for p, _, w in flat])
    margins = nll[len(flat) :] - nll[: len(flat)]
    out, at = [], 0
    for g in groups:
        out.append({})
        for kind in COUNTERFACT:
            out[-1][kind], at = margins[at : at + len(g[kind])], at + len(g[kind])
    return out


def counterfact_accuracy(margins: Sequence[float] | np.ndarray) -> float:
    """The share of probes whose right object has the lower mean per-token NLL
    (margin > 0; ties count as misses, as in ROME's summarize script); ``nan`` for none."""
    margins = np.asarray(margins, dtype=float)
    return float((margins > 0).mean()) if margins.size else float("nan")


# ---------------------------------------------------------------------------------
# Running a method over cases
# ---------------------------------------------------------------------------------

METRICS = ("efficacy", "generalisation", "neighbourhood", "relation", "distract", "fluency")


def run_cases(
    lm: llm.LM,
    cases: Sequence[Case],
    editors: dict[str, Callable[[Request], Edit]],
    *,
    n_tokens: int = 24,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], list[Edit]]:
    """Edit the model with each method for each case, measure it and restore it. Returns
    one record per (case, method), with the metrics, the parameter count and the edit
    time, and the edits themselves (in the same order)."""
    from tqdm.auto import tqdm

    records, edits = [], []
    befores = baselines(lm, cases, n_tokens)
    for case, before in zip(tqdm(cases, desc="editing", disable=not progress), befores):
        for method, editor in editors.items():
            edit = editor(case.request)
            with applied(lm, edit):
                metrics = evaluate(lm, case, before, n_tokens)
            records.append(
                {
                    "case": f"{case.fact.subject} · {case.fact.relation}: "
                    f"{case.fact.object} -> {case.request.new}",
                    "method": method,
                    **metrics,
                    "params": edit.n_params,
                    "seconds": edit.seconds,
                }
            )
            edits.append(edit)
    return records, edits


def summary(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per method, the mean of each metric (over the cases that have its probes) and the
    median parameter count and edit time."""
    out = {}
    for method in dict.fromkeys(r["method"] for r in records):
        rows = [r for r in records if r["method"] == method]
        out[method] = {
            m: float(np.nanmean([r[m] for r in rows]))
            if any(np.isfinite(r[m]) for r in rows)
            else float("nan")
            for m in (*METRICS, "fluency_before")
        }
        out[method]["params"] = float(np.median([r["params"] for r in rows]))
        out[method]["seconds"] = float(np.median([r["seconds"] for r in rows]))
    return out
