"""Interventions on a language model through pyvene, for the MCQA chapter.

* activation patching -- :func:`collect`, :func:`patch` and :func:`patch_sweep` replace
  the residual stream, the attention output, the MLP output or single heads of a *base*
  run, at chosen positions and layers, by their values in a *source* run;
* vocabulary projection ("logit lens") -- :func:`project` and :func:`vocab_projection`
  apply the final norm and the unembedding, ``W_U · norm(x)``, to any layer's residual
  stream, attention or MLP output, or to one head's contribution ``W_O^h z^h``.

Interchange interventions (patching) go through pyvene (Wu et al., 2024). Its
components name the same places as :mod:`iclr25.llm`'s sites: pyvene's ``residual`` of
layer ``l`` (the layer's output) is ``("resid", l + 1)``, ``attention`` and ``mlp`` are
``attn`` and ``mlp``. pyvene and nnsight both run on these models with transformers 5;
pyvene is used because an interchange intervention between a base and a source input is
its basic primitive, declared as data (component, layer, unit ``pos`` or ``h.pos``,
locations), because the same library does the distributed alignment search of the
HyperDAS chapter, and because nnsight needs one trace per run here (values patched
across two invokes of one trace came back stale). Written by hand, because no library
does it: the prefix cache that lets a sweep recompute only the positions from the first
patched one onward.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from iclr25.llm import LM, Batch, chunks, encode, load_pyvene

#: The components an intervention or a projection can address, and pyvene's names for them.
COMPONENTS: dict[str, str] = {
    "residual": "block_output",  # the residual stream after layer l
    "attention": "attention_output",  # the attention block's output (after W_O)
    "mlp": "mlp_output",  # the MLP block's output
    "head": "head_attention_value_output",  # one head's z^h, the input of W_O
}

# ---------------------------------------------------------------------------------
# Interventions (pyvene)
# ---------------------------------------------------------------------------------


def _check_component(component: str) -> str:
    if component not in COMPONENTS:
        raise ValueError(f"unknown component {component!r}; accepted: {', '.join(COMPONENTS)}")
    return component


def _columns(batch: Batch, positions: Sequence[int]) -> list[int]:
    """Columns of ``positions`` (counted from the end: ``-1`` is the last token)."""
    shortest = int(batch.lengths.min())
    for p in positions:
        if not -shortest <= p <= -1:
            raise ValueError(
                f"position {p} is out of range; positions count back from the last "
                f"token, -1, to -{shortest}, the shortest prompt's first token"
            )
    return [batch.input_ids.shape[1] + p for p in positions]


def _site(component: str, layer: int, units: int, kind: Any) -> dict[str, Any]:
    """One pyvene intervention: ``units`` positions, or heads for the ``head`` component."""
    return {
        "layer": layer,
        "component": COMPONENTS[component],
        "unit": "h.pos" if component == "head" else "pos",
        "max_number_of_units": units,
        "intervention_type": kind,
    }


def _where(component: str, columns: list[list[int]], heads: list[list[int]] | None) -> list:
    """pyvene's locations for one intervention: columns per example (and heads per example)."""
    return [heads, columns] if component == "head" else columns


def _collect(
    lm: LM,
    batch: Batch,
    component: str,
    layers: Sequence[int],
    columns: list[int],
    heads: Sequence[int] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Activations at ``columns``, ``[layer, batch, column, d_model]`` (for heads
    ``[layer, batch, head, column, d_head]``), and the run's last-position logits."""
    pv = load_pyvene()
    heads = list(range(lm.n_heads)) if component == "head" and heads is None else heads
    units = len(heads) if component == "head" else len(columns)
    n = batch.input_ids.shape[0]
    model = pv.IntervenableModel(
        [_site(component, layer, units, pv.CollectIntervention) for layer in layers], lm.model
    )
    where = _where(component, [columns] * n, [list(heads)] * n if heads is not None else None)
    (_, found), out = model(
        {**batch.inputs(), "logits_to_keep": 1}, unit_locations={"base": [where] * len(layers)}
    )
    return torch.stack(found), out.logits[:, -1]


def _check_pairs(base: Batch, source: Batch) -> None:
    if base.input_ids.shape != source.input_ids.shape or not torch.equal(
        base.lengths, source.lengths
    ):
        raise ValueError(
            "each base prompt and its source prompt must have the same number of "
            "tokens, so that positions correspond"
        )


@torch.inference_mode()
def collect(
    lm: LM,
    prompts: Sequence[str],
    component: str,
    *,
    layers: Sequence[int] | None = None,
    positions: Sequence[int] = (-1,),
    batch_size: int = 16,
) -> torch.Tensor:
    """``component``'s activations at ``positions`` (from the end) in ``layers`` (default all):
    ``[layer, prompt, position, d_model]``, or ``[layer, prompt, head, position, d_head]``."""
    _check_component(component)
    layers = [lm.check_layer(l) for l in (range(lm.n_layers) if layers is None else layers)]
    parts = []
    for part in chunks(len(prompts), batch_size):
        batch = encode(lm, prompts[part])
        parts.append(_collect(lm, batch, component, layers, _columns(batch, positions))[0].cpu())
    return torch.cat(parts, 1)


@torch.inference_mode()
def patch(
    lm: LM,
    base_prompts: Sequence[str],
    source_prompts: Sequence[str],
    sites: Sequence[tuple[str, int] | tuple[str, int, int]],
    *,
    positions: Sequence[int] = (-1,),
) -> torch.Tensor:
    """Next-token logits of the base prompts with every site patched from its source prompt.

    A site is ``(component, layer)`` or ``("head", layer, head)``; each is replaced at
    ``positions`` (counted from the end) by its value in the source run, all at once.
    Returns ``[len(base_prompts), vocabulary]``.
    """
    pv = load_pyvene()
    base, source = encode(lm, base_prompts), encode(lm, source_prompts)
    _check_pairs(base, source)
    columns = _columns(base, positions)
    groups: dict[tuple[str, int], list[int]] = {}
    for site in sites:
        component, layer = _check_component(site[0]), lm.check_layer(site[1])
        if (component == "head") != (len(site) == 3):
            raise ValueError(
                f"site {site!r}: a head site is ('head', layer, head); others (component, layer)"
            )
        groups.setdefault((component, layer), []).extend(
            [lm.check_head(site[2])] if len(site) == 3 else []
        )
    n = base.input_ids.shape[0]
    reps, configs, where = [], [], []
    for (component, layer), heads in groups.items():
        heads = sorted(set(heads)) if component == "head" else None
        reps.append(_collect(lm, source, component, [layer], columns, heads)[0][0])
        configs.append(
            _site(component, layer, len(heads) if heads else len(columns), pv.VanillaIntervention)
        )
        where.append(_where(component, [columns] * n, [heads] * n if heads else None))
    model = pv.IntervenableModel(configs, lm.model)
    _, out = model(
        {**base.inputs(), "logits_to_keep": 1},
        unit_locations={"sources->base": (None, where)},
        source_representations=reps,
    )
    return out.logits[:, -1].float().cpu()


@dataclass
class Sweep:
    """One patching sweep: the log-probabilities of ``tokens`` after patching each cell.

    ``patched[row, column, prompt, token]``: rows are layers; columns are positions
    (counted from the end) or, for heads, head indices. ``base`` and ``source`` are the
    unpatched runs, ``[prompt, token]``.
    """

    component: str
    layers: list[int]
    columns: list[int]
    tokens: list[int]
    patched: torch.Tensor
    base: torch.Tensor
    source: torch.Tensor


@torch.inference_mode()
def patch_sweep(
    lm: LM,
    base_prompts: Sequence[str],
    source_prompts: Sequence[str],
    component: str,
    tokens: Sequence[int],
    *,
    positions: Sequence[int] = (-1,),
    layers: Sequence[int] | None = None,
    max_batch: int = 512,
) -> Sweep:
    """Patch one cell at a time, from each source prompt into its base prompt.

    For ``residual``, ``attention`` and ``mlp`` a cell is (layer, position); for ``head``
    it is (layer, head), patched at all ``positions`` together. Everything before the
    first patched position is the same in every patched run, so it is run once and its
    keys and values reused; the cells of one layer are run together as one batch (of at
    most ``max_batch`` prompts).
    """
    pv = load_pyvene()
    _check_component(component)
    layers = [lm.check_layer(l) for l in (range(lm.n_layers) if layers is None else layers)]
    base, source = encode(lm, base_prompts), encode(lm, source_prompts)
    _check_pairs(base, source)
    columns, tokens = _columns(base, positions), list(tokens)
    n, start = base.input_ids.shape[0], min(columns)

    def logprobs(logits: torch.Tensor) -> torch.Tensor:
        return logits[:, -1].float().log_softmax(-1)[:, tokens].cpu()

    def prefix_cache(m: int) -> Any:
        """The kept keys and values, repeated for ``m`` runs of each prompt."""
        if prefix is None:
            return None
        cache = copy.deepcopy(prefix)
        cache.batch_repeat_interleave(m)
        return cache

    reps, source_logits = _collect(
        lm, source, component, layers, columns
    )  # [layer, n, (head,) column, d]
    prefix = None
    if start:  # the columns before the first patched one: run once, keys and values kept
        prefix = lm.model(
            input_ids=base.input_ids[:, :start],
            position_ids=base.position_ids[:, :start],
            attention_mask=base.attention_mask[:, :start],
            use_cache=True,
            logits_to_keep=1,
        ).cache
    base_logits = lm.model(**base.inputs(start), cache=prefix_cache(1), logits_to_keep=1).logits
    reference = [logprobs(base_logits), logprobs(source_logits[:, None])]
    cells = list(range(lm.n_heads)) if component == "head" else list(range(len(columns)))
    patched = torch.empty(len(layers), len(cells), n, len(tokens))
    for row, layer in enumerate(layers):
        model = pv.IntervenableModel([_site(component, layer, 1, pv.VanillaIntervention)], lm.model)
        for part in chunks(len(cells), max(1, max_batch // n)):
            chosen = cells[part]
            m = len(chosen)  # every prompt is repeated once per chosen cell (prompt-major order)
            if component == "head":
                rep = reps[row][:, chosen].reshape(n * m, 1, len(columns), -1)
                where = _where(
                    component,
                    [[c - start for c in columns]] * (n * m),
                    [[h] for _ in range(n) for h in chosen],
                )
            else:
                rep = reps[row][:, chosen].reshape(n * m, 1, -1)
                where = _where(
                    component, [[columns[c] - start] for _ in range(n) for c in chosen], None
                )
            _, out = model(
                {
                    **base.repeat_interleave(m).inputs(start),
                    "cache": prefix_cache(m),
                    "logits_to_keep": 1,
                },
                unit_locations={"sources->base": (None, [where])},
                source_representations=[rep],
            )
            patched[row, part] = logprobs(out.logits).view(n, m, -1).transpose(0, 1)
    return Sweep(
        component,
        layers,
        cells if component == "head" else list(positions),
        tokens,
        patched,
        *reference,
    )


# ---------------------------------------------------------------------------------
# Vocabulary projection
# ---------------------------------------------------------------------------------


def project(lm: LM, x: torch.Tensor) -> torch.Tensor:
    """Logit lens: ``W_U · norm(x)`` with the model's final norm and unembedding."""
    return lm.model.lm_head(lm.model.model.norm(x))


def head_contributions(lm: LM, layer: int, z: torch.Tensor) -> torch.Tensor:
    """What each head adds to the residual stream, ``W_O[:, h] z^h``: ``z`` is
    ``[..., head, d_head]`` (the input of W_O, split by head), the result
    ``[..., head, d_model]``."""
    w_o = lm.model.model.layers[
        lm.check_layer(layer)
    ].self_attn.o_proj.weight  # [d_model, heads * d_head]
    return torch.einsum("...hd,mhd->...hm", z, w_o.view(lm.d_model, lm.n_heads, -1))


@torch.inference_mode()
def vocab_projection(
    lm: LM,
    prompts: Sequence[str],
    component: str,
    tokens: Sequence[int],
    *,
    position: int = -1,
    layers: Sequence[int] | None = None,
    batch_size: int = 16,
) -> torch.Tensor:
    """Log-probabilities of ``tokens`` when each layer's ``component`` at ``position`` is
    projected to the vocabulary (softmax over the whole vocabulary).

    Returns ``[layer, prompt, token]``, or ``[layer, prompt, head, token]`` for heads. The
    residual stream of the last layer projects to exactly the model's own output.
    """
    layers = [lm.check_layer(l) for l in (range(lm.n_layers) if layers is None else layers)]
    acts = collect(
        lm, prompts, component, layers=layers, positions=(position,), batch_size=batch_size
    )
    out = []
    for row, layer in enumerate(layers):
        x = acts[row].to(lm.device)
        x = head_contributions(lm, layer, x[:, :, 0]) if component == "head" else x[:, 0]
        out.append(project(lm, x).float().log_softmax(-1)[..., list(tokens)].cpu())
    return torch.stack(out)
