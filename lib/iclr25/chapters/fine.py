"""FiNE: fine-grained neuron-level knowledge editing.

Pan, Wang, Cao, Shi, Yang, Li & Wang, "Precise Localization of Memories: A Fine-grained
Neuron-level Knowledge Editing Technique for LLMs" (ICLR 2025). Locate-then-edit methods
such as ROME pick a whole MLP layer by causal tracing and rewrite it for the subject;
the edit then follows the *subject* everywhere, and other relations of the same subject
come out with the new object too (poor locality). FiNE instead edits a handful of
feed-forward neurons chosen for the fact being recalled:

* **Locate.** For the prompt's predicted token ``t``, neuron ``i`` of layer ``l``
  contributes ``c_{l,i} = a_{l,i} * (W_down[l][i,:] . W_U[:,t])`` to its logit:
  ``a_{l,i}`` is the neuron's activation at the last token and ``W_down[l][i,:]`` its
  value vector. The top-``k`` neurons by ``c`` over all layers but the last few are edited.
* **Edit.** Each chosen neuron's value vector gets a learned update ``delta_{l,i}``
  (the layer's output becomes ``... + a_{l,i} delta_{l,i}``), minimising
  ``-log P(new | prompt)`` ``+ alpha KL`` (the model's next-token distributions along the
  prompt prefix, kept as they were) ``+ beta`` repetition penalty
  (``-log(1 - P(new | prompt + new))``, so the new object is not repeated)
  ``+ gamma sum |delta|^2``, with Adam, stopping early once ``P(new | prompt)`` reaches a
  threshold. The updates are then written into the rows of ``W_down``.

The paper's settings for Llama-2 are 5 neurons, the last 3 layers frozen, 50 epochs,
learning rate 5e-3, alpha 1, beta 10, gamma 0.1 and early stop at 0.9. Our reading of
the KL term (along the rewrite prompt's own prefix) and of the repetition penalty is
stated above. Facts, metrics, ROME and the editor live in :mod:`iclr25.editing`. FiNE
is written here from the paper: its authors' code is a fork of EasyEdit, which pins
transformers 4 and fetches data at run time.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from iclr25 import core, editing, llm
from iclr25.core import Bound, Param

if TYPE_CHECKING:
    import plotly.graph_objects as go


def neuron_activations(lm: llm.LM, prompt: str) -> torch.Tensor:
    """Every MLP neuron's activation ``a_{l,i}`` (the input of ``W_down``) at the prompt's
    last token: ``[layer, d_mlp]``."""
    sites = [("neurons", l) for l in range(lm.n_layers)]
    seen = llm.read(lm, llm.encode(lm, [prompt]), sites)
    return torch.stack([seen[s][0, -1] for s in sites])


@torch.no_grad()
def contributions(lm: llm.LM, prompt: str, token: int) -> torch.Tensor:
    """``c_{l,i} = a_{l,i} * (W_down[l][i,:] . W_U[:,t])``: each neuron's contribution to
    token ``t``'s logit at the prompt's last position, ``[layer, d_mlp]``."""
    a = neuron_activations(lm, prompt)
    w_u = lm.model.lm_head.weight[token]  # [d_model]
    return torch.stack([a[l] * (llm.down_proj(lm, l).weight.T @ w_u) for l in range(lm.n_layers)])


def locate(
    lm: llm.LM, prompt: str, k: int, frozen_last: int = 3
) -> tuple[list[tuple[int, int]], int]:
    """The top-``k`` neurons ``(layer, index)`` by contribution to the predicted token,
    over all layers but the last ``frozen_last``; and that token."""
    if not 1 <= k:
        raise ValueError(f"k is {k}; FiNE edits at least one neuron")
    token = int(llm.next_token_logits(lm, [prompt])[0].argmax())
    scores = contributions(lm, prompt, token)[: lm.n_layers - frozen_last]
    top = scores.flatten().topk(k).indices
    return [(int(i) // scores.shape[1], int(i) % scores.shape[1]) for i in top], token


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
    """FiNE's edit: locate ``k`` neurons, learn their value-vector updates, return the edit."""
    start = time.perf_counter()
    neurons, token = locate(lm, request.prompt, k, frozen_last)
    layers = sorted({l for l, _ in neurons})
    index = {l: [i for m, i in neurons if m == l] for l in layers}
    deltas = {l: torch.zeros(len(index[l]), lm.d_model, requires_grad=True) for l in layers}
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
            return out + seen["neurons", layer][..., index[layer]] @ deltas[layer]

        return fn

    opt = torch.optim.Adam(list(deltas.values()), lr=lr)
    epoch = 0
    for epoch in range(1, epochs + 1):
        with (
            llm.reading(lm, [("neurons", l) for l in layers]) as seen,
            llm.writing(lm, {("mlp", l): add(l) for l in layers}),
            llm.frozen(lm),
        ):
            logp = llm.logits_at(lm, batch, [0] * len(cells), cells, resume).log_softmax(-1)
        kl_part, target_part, after = logp[: len(prefix)], logp[len(prefix) : -1], logp[-1]
        nll = -target_part[torch.arange(len(target)), target].sum()
        if float(torch.exp(-nll.detach())) >= early_stop:
            break
        kl = (
            torch.nn.functional.kl_div(kl_part, reference, log_target=True, reduction="batchmean")
            if prefix
            else torch.zeros(())
        )
        repeat = -torch.log1p(-after[target[0]].exp().clamp(max=1 - 1e-6))
        l2 = sum(d.pow(2).sum() for d in deltas.values())
        loss = nll / len(target) + alpha * kl + beta * repeat + gamma * l2
        opt.zero_grad()
        loss.backward()
        opt.step()
    changes = [editing.Change(l, deltas[l].detach().T.clone(), index[l]) for l in layers]
    return editing.Edit(
        "FiNE",
        request,
        changes,
        time.perf_counter() - start,
        {"neurons": neurons, "steps": epoch, "token": token},
    )


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_edits": Param(20, "facts edited by each method (the paper: thousands)", low=1, high=200),
    "n_neighbours": Param(3, "neighbourhood and distract prompts per edit", low=1, high=10),
    "k": Param(5, "FiNE: neurons edited", low=1, high=200),
    "epochs": Param(50, "FiNE: most optimisation steps", low=1, high=1000),
    "lr": Param(0.005, "FiNE: Adam learning rate (the paper's, for Llama-2)", low=1e-5, high=1.0),
    "frozen_last": Param(3, "FiNE: last layers never edited", low=0, high=20),
    "rome_steps": Param(20, "ROME: most optimisation steps for v*", low=1, high=200),
    "n_trace": Param(4, "facts causal tracing averages over to pick ROME's layer", low=1, high=100),
    "n_timed": Param(
        5, "edits per method timed afresh, in alternation (all are kept)", low=1, high=200
    ),
    "n_sweep": Param(1, "edits the neuron-count sweep repeats", low=1, high=100),
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
    "n_timed": 1,
    "n_sweep": 1,
    "k_max": 2,
    "gen_tokens": 6,
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

# ---------------------------------------------------------------------------------
# The chapter's claims: the numbers that decide them, fixed before the run
# ---------------------------------------------------------------------------------

BOUNDS = {
    # Both methods edit the rewrite prompt (efficacy at least 0.9, FiNE's early-stop
    # probability) and differ by at most 0.1.
    "efficacy-comparable": {
        "ROME": Bound(ge=0.9),
        "FiNE": Bound(ge=0.9),
        "|FiNE - ROME|": Bound(le=0.1),
    },
    # FiNE's paraphrase accuracy at most 0.1 below ROME's.
    "generalisation-comparable": Bound(ge=-0.1),
    # FiNE's mean locality (neighbourhood, relation, distract) minus ROME's.
    "locality-better": Bound(gt=0),
    # FiNE's lead on relation specificity minus its largest lead on the other two.
    "relation-gap-largest": Bound(gt=0),
    # FiNE's median wall time per edit over ROME's, the two timed in alternation.
    "faster": Bound(lt=1),
}

KNOWN_GAPS: dict[str, str] = {}


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


def sweep_figure(sweep: dict[int, list[dict[str, Any]]], metrics: Sequence[str]) -> go.Figure:
    """The mean of each metric over the swept edits against the number of neurons ``k``;
    ``sweep[k]`` holds the records of :func:`iclr25.editing.run_cases`."""
    ks = sorted(sweep)
    fig = core.plot(
        ks,
        {m: [np.nanmean([r[m] for r in sweep[k]]) for k in ks] for m in metrics},
        title=f"FiNE with k neurons, mean over {len(sweep[ks[0]])} edits",
        xlabel="k (neurons edited)",
        log_x=True,
        mode="lines+markers",
    )
    return fig.update_layout(yaxis_range=[0, 1.05])


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
