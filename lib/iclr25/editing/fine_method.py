"""FiNE (Pan et al., 2025): neuron activations and contributions, the neurons located
per target token, the random neurons of the authors' control, FiNE's loss and the edit.
The FiNE chapter's package docstring gives the paper and its equations; the SADR
chapter's live editor runs it too, which is why it lives here."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np
import torch

from iclr25 import llm
from iclr25.editing.edits import Change, Edit
from iclr25.editing.evaluation import probe_batch
from iclr25.editing.facts import Request


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
    batch, columns, _ = probe_batch(lm, [(prompt, target)])
    with torch.no_grad():
        predicted = llm.logits_at(lm, batch, [0] * n, columns[0]).argmax(-1).tolist()
    a = neuron_activations(lm, prompt, target)  # [n, layer, d_mlp]
    neurons = []
    for j, token in enumerate(predicted):
        scores = contributions(a[j], lm, token)[: lm.n_layers - frozen_last]
        top = scores.flatten().topk(k).indices
        neurons.append([(int(i) // scores.shape[1], int(i) % scores.shape[1]) for i in top])
    return neurons, predicted


def random_neurons(
    per_token: Sequence[Sequence[tuple[int, int]]], d_mlp: int, rng: np.random.Generator
) -> list[list[tuple[int, int]]]:
    """The control of the authors' ablation (``random`` in their ``execute_fine``): as
    many neurons per target token as ``per_token`` holds, each in the same layer as the
    located one, its index drawn uniformly from the layer's ``d_mlp``."""
    return [[(l, int(rng.integers(d_mlp))) for l, _ in token] for token in per_token]


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
    request: Request,
    *,
    k: int = 5,
    epochs: int = 50,
    lr: float = 5e-3,
    alpha: float = 1.0,
    beta: float = 10.0,
    gamma: float = 0.1,
    early_stop: float = 0.9,
    frozen_last: int = 3,
    random: np.random.Generator | None = None,
) -> Edit:
    """FiNE's edit: locate ``k`` neurons per target token, learn their value-vector
    updates (Adam on :func:`fine_loss`, stopping once every target token's probability
    exceeds ``early_stop``), return the edit. With a generator ``random``, the located
    neurons are swapped for :func:`random_neurons` in the same layers (the control)."""
    start = time.perf_counter()
    per_token, predicted = locate(lm, request.prompt, request.target, k, frozen_last)
    if random is not None:
        d_mlp = llm.down_proj(lm, 0).weight.shape[1]
        per_token = random_neurons(per_token, d_mlp, random)
    neurons = [n for token in per_token for n in token]  # a neuron may appear twice
    layers = sorted({l for l, _ in neurons})
    slots = {l: [j for j, (m, _) in enumerate(neurons) if m == l] for l in layers}
    index = {l: [neurons[j][1] for j in slots[l]] for l in layers}
    deltas = torch.zeros(len(neurons), lm.d_model, requires_grad=True)  # one per slot
    target = lm.tokens(request.target)
    batch, columns, _ = probe_batch(lm, [(request.prompt, request.target)])
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
        changes.append(Change(l, delta, columns_l))
    return Edit(
        "FiNE" if random is None else "random",
        request,
        changes,
        time.perf_counter() - start,
        {"neurons": neurons, "per_token": k, "steps": epoch, "predicted": predicted},
    )
