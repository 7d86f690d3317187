"""FiNE: fine-grained neuron-level knowledge editing.

Pan, Wang, Cao, Shi, Yang, Li & Wang, "Precise Localization of Memories: A Fine-grained
Neuron-level Knowledge Editing Technique for LLMs" (ICLR 2025). Locate-then-edit methods
such as ROME pick a whole MLP layer by causal tracing and rewrite it for the subject;
the edit then follows the *subject* everywhere, and other relations of the same subject
come out with the new object too (poor locality). FiNE instead edits a handful of
feed-forward neurons chosen for the fact being recalled:

* **Locate.** The prompt is followed by the new object (teacher forcing). For each of
  the object's tokens, at the position that predicts it, neuron ``i`` of layer ``l``
  contributes ``c_{l,i} = a_{l,i} * (W_down[l][i,:] . W_U[:,t])`` to the logit of the
  token ``t`` the unedited model predicts there: ``a_{l,i}`` is the neuron's activation
  and ``W_down[l][i,:]`` its value vector. The top-``k`` neurons by ``c`` over all layers
  but the last few are edited, ``k`` per token of the object.
* **Edit.** Each chosen neuron's value vector gets a learned update ``delta``
  (the layer's output becomes ``... + a_{l,i} delta``), minimising the largest
  ``-log P(token | prompt, earlier tokens)`` over the object's tokens ``+ alpha KL``
  (the unedited model's next-token distributions along the prompt prefix against the
  edited ones) ``+ beta`` times the largest ``-log(1 - P(t | prompt + object))`` over the
  object's tokens ``t`` (so the new object is not repeated) ``+ gamma ||delta||`` (the L2
  norm of all updates, not squared), with Adam, stopping early once the least probable
  token of the object reaches a threshold. The updates are then written into the rows
  of ``W_down`` (a neuron chosen for two tokens gets both updates, which add).

The paper's settings for Llama-2 are 5 neurons, the last 3 layers frozen, 50 epochs,
learning rate 5e-3, alpha 1, beta 10, gamma 0.1 and early stop at 0.9. These details
follow the authors' code (``easyeditor/models/fine`` in their repository, a fork of
EasyEdit), read and re-implemented here: it pins transformers 4 and fetches data at run
time. Facts, metrics, ROME and the editor live in :mod:`iclr25.editing`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import core, editing, llm
from iclr25.core import Bound, ClaimSpec, Margin, Param

if TYPE_CHECKING:
    import plotly.graph_objects as go


def neuron_activations(lm: llm.LM, prompt: str, target: str = "") -> torch.Tensor:
    """Every MLP neuron's activation ``a_{l,i}`` (the input of ``W_down``) at each position
    that predicts a token of ``target`` after ``prompt`` (teacher forcing; with no target,
    the prompt's last position): ``[position, layer, d_mlp]``."""
    sites = [("neurons", l) for l in range(lm.n_layers)]
    n = max(1, len(lm.tokens(target))) if target else 1
    seen = llm.read(lm, llm.encode(lm, [prompt + target]), sites)
    width = seen[sites[0]].shape[1]
    at = list(range(width - n - (1 if target else 0), width - (1 if target else 0)))
    return torch.stack([seen[s][0, at] for s in sites], 1)


@torch.no_grad()
def contributions(a: torch.Tensor, lm: llm.LM, token: int) -> torch.Tensor:
    """``c_{l,i} = a_{l,i} * (W_down[l][i,:] . W_U[:,t])``: each neuron's contribution to
    token ``t``'s logit at one position, from the activations ``a`` there, ``[layer,
    d_mlp]``."""
    w_u = lm.model.lm_head.weight[token]  # [d_model]
    return torch.stack([a[l] * (llm.down_proj(lm, l).weight.T @ w_u) for l in range(len(a))])


def locate(
    lm: llm.LM, prompt: str, target: str, k: int, frozen_last: int = 3
) -> tuple[list[list[tuple[int, int]]], list[int]]:
    """FiNE's neurons: for *each* token of ``target``, the top-``k`` neurons ``(layer,
    index)`` by contribution to the token the unedited model predicts at that position
    under teacher forcing on ``prompt + target``, over all layers but the last
    ``frozen_last``. Returns the neurons per target token and those predicted tokens."""
    if not 1 <= k:
        raise ValueError(f"k is {k}; FiNE edits at least one neuron")
    n = len(lm.tokens(target))
    batch, columns, _ = editing.probe_batch(lm, [(prompt, target)])
    with torch.no_grad():
        predicted = llm.logits_at(lm, batch, [0] * n, columns[0]).argmax(-1).tolist()
    a = neuron_activations(lm, prompt, target)  # [n, layer, d_mlp]
    neurons = []
    for j, token in enumerate(predicted):
        scores = contributions(a[j], lm, token)[: lm.n_layers - frozen_last]
        top = scores.flatten().topk(k).indices
        neurons.append([(int(i) // scores.shape[1], int(i) % scores.shape[1]) for i in top])
    return neurons, predicted


def fine_loss(
    logp: torch.Tensor,
    reference: torch.Tensor,
    target: Sequence[int],
    deltas: torch.Tensor,
    *,
    alpha: float,
    beta: float,
    gamma: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """FiNE's loss as its authors' code computes it, and the NLL term alone.

    ``logp`` holds the edited model's log-probabilities at the prompt prefix's positions
    (as many as ``reference``, the unedited ones), then at the positions that predict
    each target token, then after the whole target. The loss is the *largest* NLL over
    the target tokens ``+ alpha KL(reference || edited)`` (mean over the prefix positions)
    ``+ beta`` times the largest ``-log(1 - P(t))`` over the target tokens ``t`` after the
    target (the repetition penalty) ``+ gamma ||deltas||`` (the L2 norm, not squared)."""
    n_prefix, n = len(reference), len(target)
    kl_part, target_part, after = logp[:n_prefix], logp[n_prefix : n_prefix + n], logp[-1]
    ids = torch.as_tensor(list(target))
    nll = (-target_part[torch.arange(n), ids]).max()
    kl = (
        torch.nn.functional.kl_div(kl_part, reference, log_target=True, reduction="batchmean")
        if n_prefix
        else torch.zeros(())
    )
    repeat = (-torch.log1p(-after[ids].exp().clamp(max=1 - 1e-6))).max()
    return nll + alpha * kl + beta * repeat + gamma * deltas.norm(), nll


def fine(
    lm: llm.LM,
    request: editing.Request,
    *,
    k: int = 5,
    epochs: int = 50,
    lr: float = 5e-3,
    alpha: float = 1.0,
    beta: float = 10.0,
    gamma: float = 0.1,
    early_stop: float = 0.9,
    frozen_last: int = 3,
) -> editing.Edit:
    """FiNE's edit: locate ``k`` neurons per target token, learn their value-vector
    updates (Adam on :func:`fine_loss`, stopping once every target token's probability
    exceeds ``early_stop``), return the edit."""
    start = time.perf_counter()
    per_token, predicted = locate(lm, request.prompt, request.target, k, frozen_last)
    neurons = [n for token in per_token for n in token]  # a neuron may appear twice
    layers = sorted({l for l, _ in neurons})
    slots = {l: [j for j, (m, _) in enumerate(neurons) if m == l] for l in layers}
    index = {l: [neurons[j][1] for j in slots[l]] for l in layers}
    deltas = torch.zeros(len(neurons), lm.d_model, requires_grad=True)  # one per slot
    target = lm.tokens(request.target)
    batch, columns, _ = editing.probe_batch(lm, [(request.prompt, request.target)])
    width = batch.input_ids.shape[1]
    prefix = list(range(width - len(lm.tokens(request.prompt + request.target)), columns[0][0]))
    cells = prefix + columns[0] + [width - 1]  # the prompt prefix, the target, after the target
    with torch.no_grad():
        reference = llm.logits_at(lm, batch, [0] * len(prefix), prefix).log_softmax(-1)
    resume = llm.layer_input(lm, batch, layers[0])  # the layers below never change: run them once

    def add(layer: int) -> Callable[[torch.Tensor], torch.Tensor]:
        def fn(out: torch.Tensor) -> torch.Tensor:  # W_down a + sum_i a_i delta_i
            return out + seen["neurons", layer][..., index[layer]] @ deltas[slots[layer]]

        return fn

    opt = torch.optim.Adam([deltas], lr=lr)
    epoch = 0
    for epoch in range(1, epochs + 1):
        with (
            llm.reading(lm, [("neurons", l) for l in layers]) as seen,
            llm.writing(lm, {("mlp", l): add(l) for l in layers}),
            llm.frozen(lm),
        ):
            logp = llm.logits_at(lm, batch, [0] * len(cells), cells, resume).log_softmax(-1)
        loss, nll = fine_loss(logp, reference, target, deltas, alpha=alpha, beta=beta, gamma=gamma)
        # the authors' stop: the largest NLL below -log(early_stop), i.e. the least
        # probable target token above early_stop
        if float(nll.detach()) < -np.log(early_stop) or not torch.isfinite(nll):
            break
        opt.zero_grad()
        loss.backward()
        opt.step()
    changes = []
    for l in layers:  # a neuron chosen for two tokens gets the sum of its two updates
        columns_l = sorted(set(index[l]))
        delta = torch.zeros(lm.d_model, len(columns_l))
        for j, i in zip(slots[l], index[l]):
            delta[:, columns_l.index(i)] += deltas[j].detach()
        changes.append(editing.Change(l, delta, columns_l))
    return editing.Edit(
        "FiNE",
        request,
        changes,
        time.perf_counter() - start,
        {"neurons": neurons, "per_token": k, "steps": epoch, "predicted": predicted},
    )


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_edits": Param(30, "facts edited by each method (the paper: thousands)", low=1, high=200),
    "n_neighbours": Param(3, "neighbourhood and distract prompts per edit", low=1, high=10),
    "k": Param(5, "FiNE: neurons edited per target token", low=1, high=200),
    "epochs": Param(50, "FiNE: most optimisation steps", low=1, high=1000),
    "lr": Param(0.005, "FiNE: Adam learning rate (the paper's, for Llama-2)", low=1e-5, high=1.0),
    "frozen_last": Param(3, "FiNE: last layers never edited", low=0, high=20),
    "rome_steps": Param(20, "ROME: most optimisation steps for v*", low=1, high=200),
    "n_trace": Param(4, "facts causal tracing averages over to pick ROME's layer", low=1, high=100),
    "c_texts": Param(
        512,
        "ROME: texts of 128 tokens the model samples for C (512: 58,000 tokens)",
        low=1,
        high=10_000,
    ),
    "n_timed": Param(
        5, "edits per method timed afresh, in alternation (all are kept)", low=1, high=200
    ),
    "n_sweep": Param(5, "edits the neuron-count sweep repeats", low=1, high=100),
    "k_max": Param(
        10, "largest neuron count of the sweep (1, 2, 5, 10, 20, 50, ...)", low=1, high=1000
    ),
    "gen_tokens": Param(10, "generated tokens per prompt for fluency", low=4, high=200),
    "seed": Param(0, "random seed (edits drawn, noise of causal tracing)", low=0),
    "device": Param("auto", "torch device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n_edits": 2,
    "n_neighbours": 1,
    "epochs": 5,
    "rome_steps": 3,
    "n_trace": 1,
    "c_texts": 8,
    "n_timed": 1,
    "n_sweep": 1,
    "k_max": 2,
    "gen_tokens": 6,
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

#: The token counts at which ROME's C is also kept, for the sample-size figure (2,000
#: is about the sample the chapter used before).
C_SIZES = (2_000, 5_000, 15_000)

# ---------------------------------------------------------------------------------
# The chapter's claims: the numbers that decide them, fixed before the run
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # Both methods edit the rewrite prompt (efficacy at least 0.9, FiNE's early-stop
    # probability) and differ by at most 0.1.
    "efficacy-comparable": ClaimSpec(
        "FiNE edits as successfully as ROME",
        paper="FiNE 'enhances editing locality without affecting overall success "
        "rates' (KnowEdit, Llama-2/3, GPT-J)",
        rule={
            "ROME": Bound(ge=0.9),
            "FiNE": Bound(ge=0.9),
            "|FiNE - ROME|": Bound(le=0.1),
        },
        control="ROME's efficacy on the same edits, and a fixed threshold of 0.9",
    ),
    # FiNE's paraphrase accuracy at most 0.1 below ROME's.
    "generalisation-comparable": ClaimSpec(
        "FiNE's edits carry over to paraphrases about as well as ROME's",
        paper="comparable generalisation to ROME and MEMIT",
        rule=Bound(ge=-0.1),
        control="ROME's generalisation on the same edits",
    ),
    # The 95% paired bootstrap interval over the edits of FiNE's mean locality
    # (neighbourhood, relation, distract) minus ROME's: "better" only if the interval
    # excludes 0.
    "locality-better": ClaimSpec(
        "FiNE's edits are more local than ROME's on the mean of the three "
        "locality scores (95% interval above 0)",
        paper="higher locality than ROME and MEMIT on every KnowEdit dataset",
        rule=Margin(
            above=0,
            why="FiNE ahead at all: the claim is the sign of the difference, not its size",
        ),
        control="ROME's edits of the same facts, paired by edit",
    ),
    # The 95% paired bootstrap interval over the edits of FiNE's relation specificity
    # minus ROME's (the same subject, other relations).
    "relation-better": ClaimSpec(
        "FiNE keeps the subject's other relations better than ROME (95% interval above 0)",
        paper="FiNE's Figure 1: ROME and MEMIT 'perform poorly in locality "
        "testing when changing the relation' (over-editing and unchanging "
        "rates; its numbers not retrieved here)",
        rule=Margin(
            above=0,
            why="FiNE ahead at all: the claim is the sign of the difference, not its size",
        ),
        control="ROME's edits of the same facts, paired by edit",
    ),
    # FiNE's median wall and CPU time per edit over ROME's, the two timed in alternation.
    "faster": ClaimSpec(
        "FiNE edits faster than ROME",
        paper="FiNE's editing time is below ROME's and MEMIT's",
        rule={"wall": Bound(lt=1), "CPU": Bound(lt=1)},
        control="ROME's time per edit, timed in alternation with FiNE's",
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against;
FiNE declares no gap."""


def timed_edits(
    requests: Sequence[editing.Request],
    editors: dict[str, Callable[[editing.Request], editing.Edit]],
) -> dict[str, core.Timing]:
    """Time every method's edit of each request, the methods in alternation (ROME edit 0,
    FiNE edit 0, ROME edit 1, ...; :func:`iclr25.core.alternate`), so that a load that
    comes and goes on the machine falls on both alike: wall and CPU seconds per edit."""
    if not requests:
        raise ValueError("timed_edits() needs at least one request")
    return core.alternate(
        {m: (lambda i, e=e: e(requests[i])) for m, e in editors.items()}, len(requests)
    )


def reusing(
    timing: dict[str, core.Timing],
    requests: Sequence[editing.Request],
    editors: dict[str, Callable[[editing.Request], editing.Edit]],
) -> dict[str, Callable[[editing.Request], editing.Edit]]:
    """The ``editors``, handing back the edits :func:`timed_edits` already made of the
    first ``requests`` instead of making them again."""
    done = {m: dict(zip(requests, timing[m].results)) for m in editors}
    return {m: (lambda r, m=m, e=e: done[m].get(r) or e(r)) for m, e in editors.items()}


def paired(
    records: Sequence[dict[str, Any]], metrics: Sequence[str], a: str = "FiNE", b: str = "ROME"
) -> tuple[np.ndarray, np.ndarray]:
    """Per edit, method ``a``'s and method ``b``'s mean score over ``metrics`` (over those
    the edit has probes for), paired by case, the two arms of
    :func:`iclr25.core.stats.paired_difference`; an edit with no probes of any of
    ``metrics`` is left out."""
    by = {(r["case"], r["method"]): r for r in records}
    cases = list(dict.fromkeys(r["case"] for r in records))

    def mean(case: str, method: str) -> float:
        scores = [by[case, method][m] for m in metrics]
        scores = [v for v in scores if not np.isnan(v)]
        return float(np.mean(scores)) if scores else float("nan")

    arms = np.array([[mean(c, a), mean(c, b)] for c in cases], dtype=float).reshape(-1, 2)
    kept = ~np.isnan(arms).any(axis=1)
    return arms[kept, 0], arms[kept, 1]


def c_sweep(
    lm: llm.LM,
    cases: Sequence[editing.Case],
    rome_edit: Callable[[editing.Request], editing.Edit],
    moments: dict[int, torch.Tensor],
    layer: int,
) -> dict[int, list[dict[str, Any]]]:
    """ROME's edits of ``cases`` written again with ``C`` estimated from each number of
    tokens in ``moments`` (:func:`iclr25.editing.second_moments`): ``v*`` and ``k*`` do
    not depend on ``C``, so each is reused from ``rome_edit`` and only the rank-one update
    changes. The records of :func:`iclr25.editing.run_cases` per token count (no
    fluency)."""

    def editor(C: torch.Tensor) -> Callable[[editing.Request], editing.Edit]:
        def fn(request: editing.Request) -> editing.Edit:
            info = rome_edit(request).info
            return editing.rome_update(lm, request, layer, C, info["v_star"], info["k_star"])

        return fn

    editors = {n: editor(editing.regularised(C)) for n, C in sorted(moments.items())}
    runs, _ = editing.run_cases(lm, cases, editors, n_tokens=0, progress=False)
    return {n: [r for r in runs if r["method"] == n] for n in editors}


def sweep_ks(k_max: int) -> list[int]:
    """1, 2, 5, 10, 20, 50, ... up to ``k_max``."""
    ks, base = [], 1
    while base <= k_max:
        ks += [m * base for m in (1, 2, 5) if m * base <= k_max]
        base *= 10
    return ks


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------

METHOD_COLOURS = {"ROME": "#1f77b4", "FiNE": "#d62728"}


def tracing_figure(effects: np.ndarray, layer: int, n_facts: int, window: int) -> go.Figure:
    """Causal tracing's indirect effect per layer, with ROME's chosen layer marked."""
    import plotly.graph_objects as go

    fig = go.Figure(go.Bar(x=list(range(len(effects))), y=effects, name="indirect effect"))
    fig.add_vline(x=layer, line_dash="dot", annotation_text=f"ROME edits layer {layer}")
    fig.update_layout(
        title=f"Causal tracing over {n_facts} facts: restoring the MLPs of {window} "
        "layers around each layer at the subject's last token",
        xaxis_title="layer (centre of the restored window)",
        yaxis_title="P(object) restored - corrupted",
    )
    return fig


def comparison_figure(
    results: dict[str, dict[str, float]], metrics: Sequence[str], n_cases: int
) -> go.Figure:
    """Each method's mean score per metric (:func:`iclr25.editing.summary`), side by side."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for method, scores in results.items():
        fig.add_bar(
            x=list(metrics),
            y=[scores[m] for m in metrics],
            name=method,
            marker_color=METHOD_COLOURS.get(method),
            text=[f"{scores[m]:.2f}" for m in metrics],
        )
    fig.update_layout(
        title=f"ROME vs FiNE on SmolLM2-135M, {n_cases} edits (higher is better)",
        yaxis_range=[0, 1.05],
        barmode="group",
    )
    return fig


def neuron_layers_figure(
    neuron_layers: Sequence[int], n_layers: int, rome_layer: int, frozen_last: int, n_edits: int
) -> go.Figure:
    """Histogram of the layers of FiNE's edited neurons, beside ROME's layer and the
    frozen last layers."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Histogram(
            x=list(neuron_layers),
            name="FiNE neurons",
            xbins=dict(start=-0.5, end=n_layers - 0.5, size=1),
        )
    )
    fig.add_vline(x=rome_layer, line_dash="dot", annotation_text=f"ROME's layer {rome_layer}")
    fig.add_vrect(
        x0=n_layers - frozen_last - 0.5,
        x1=n_layers - 0.5,
        fillcolor="grey",
        opacity=0.2,
        annotation_text="frozen",
    )
    fig.update_layout(
        title=f"Layers of FiNE's {len(neuron_layers)} edited neurons over {n_edits} edits",
        xaxis_title="layer",
        yaxis_title="neurons",
        xaxis_range=[-0.5, n_layers - 0.5],
    )
    return fig


def _mean_sweep_figure(
    sweep: dict[int, list[dict[str, Any]]], metrics: Sequence[str], title: str, xlabel: str
) -> go.Figure:
    """The mean of each metric over the records at each swept value, on a log x-axis;
    ``title`` is completed with the number of edits."""
    xs = sorted(sweep)
    fig = core.plot(
        xs,
        {m: [np.nanmean([r[m] for r in sweep[x]]) for x in xs] for m in metrics},
        title=f"{title}, mean over {len(sweep[xs[0]])} edits",
        xlabel=xlabel,
        log_x=True,
        mode="lines+markers",
    )
    return fig.update_layout(yaxis_range=[0, 1.05])


def sweep_figure(sweep: dict[int, list[dict[str, Any]]], metrics: Sequence[str]) -> go.Figure:
    """The mean of each metric over the swept edits against the number of neurons ``k``;
    ``sweep[k]`` holds the records of :func:`iclr25.editing.run_cases`."""
    return _mean_sweep_figure(sweep, metrics, "FiNE with k neurons", "k (neurons edited)")


def edits_figure(records: Sequence[dict[str, Any]], metrics: Sequence[str], k: int) -> go.Figure:
    """Each edit's scores with ``k`` neurons, one group of bars per metric."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for r in records:
        fig.add_bar(x=list(metrics), y=[r[m] for m in metrics], name=r["case"])
    fig.update_layout(
        title=f"FiNE with k = {k} neurons: each edit's scores",
        yaxis_range=[0, 1.05],
        barmode="group",
    )
    return fig


def c_sweep_figure(by_size: dict[int, list[dict[str, Any]]], metrics: Sequence[str]) -> go.Figure:
    """ROME's mean score per metric against the number of tokens ``C`` is estimated from
    (:func:`c_sweep`)."""
    return _mean_sweep_figure(
        by_size,
        metrics,
        "ROME with C from n tokens",
        "tokens the key second moment C is estimated from",
    )
