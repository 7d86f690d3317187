"""Named sites: reading and writing a model's insides with plain torch hooks, partial
forward passes, and the pyvene loader (see :mod:`iclr25.llm`)."""

from __future__ import annotations

import contextlib
import io
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from iclr25.llm.models import LM, Batch

# ---------------------------------------------------------------------------------
# Named sites: reading and writing a model's insides
# ---------------------------------------------------------------------------------

#: The named sites of a Llama-style model, ``(kind, layer)``. Decoder layer ``l`` computes
#: ``h_{l+1} = r + MLP(norm(r))`` with ``r = h_l + Attn(norm(h_l))``.
SITES: dict[str, str] = {
    "resid": "h_l, the residual stream entering layer l (leaving layer l-1; h_0 is the "
    "token embedding, h_{n_layers} the last layer's output, before the final norm)",
    "attn": "Attn(norm(h_l)), layer l's attention output (after W_O), before it is added",
    "mlp": "MLP(norm(r)), layer l's MLP output (= W_down's output), before it is added",
    "neurons": "act(W_gate x) * (W_up x), layer l's MLP hidden activations, the input of "
    "W_down: [..., d_mlp]",
    "attn_weights": "layer l's attention probabilities [batch, head, query, key], before "
    "they weight the values (the pass runs with :func:`sited_attention` while a block "
    "reads or writes them)",
}


class Site(NamedTuple):
    """One named site, ``(kind, layer)``, e.g. ``Site("mlp", 3)``; see :data:`SITES`.
    A plain tuple ``("mlp", 3)`` is equal to it, and names the same entry of a dict."""

    kind: str
    layer: int

    def checked(self, lm: LM) -> Site:
        """The site, if ``lm`` has it (``resid`` runs to ``n_layers``, the others to
        ``n_layers - 1``); a one-line error otherwise."""
        if self.kind not in SITES:
            raise ValueError(f"unknown site kind {self.kind!r}; accepted: {', '.join(SITES)}")
        top = lm.n_layers if self.kind == "resid" else lm.n_layers - 1
        if not 0 <= self.layer <= top:
            raise ValueError(
                f"layer {self.layer} is out of range for {self.kind!r}; "
                f"{lm.name} has {self.kind} sites 0..{top}"
            )
        return self


def as_site(lm: LM, site: Sequence[Any]) -> Site:
    """``(kind, layer)`` as a checked :class:`Site` of ``lm``."""
    if isinstance(site, str) or len(site) != 2:
        raise ValueError(f"a site is (kind, layer), e.g. ('mlp', 3); got {site!r}")
    return Site(*site).checked(lm)


class Stop(Exception):
    """Raised by a hook to end the forward pass; :func:`hooks` ends it quietly."""


@contextlib.contextmanager
def hooks(
    *pairs: tuple[torch.nn.Module, Callable], pre: bool = False, with_kwargs: bool = False
) -> Iterator[None]:
    """Torch hooks ``(module, fn)`` inside the block only, removed on exit (also on an
    exception): forward hooks ``fn(module, args, output)``, or forward pre-hooks
    ``fn(module, args)`` if ``pre`` (``fn(module, args, kwargs)`` with ``with_kwargs``).
    A :class:`Stop` raised by a hook ends the forward pass and the block."""
    handles = [
        m.register_forward_pre_hook(fn, with_kwargs=with_kwargs)
        if pre
        else m.register_forward_hook(fn, with_kwargs=with_kwargs)
        for m, fn in pairs
    ]
    try:
        yield
    except Stop:
        pass
    finally:
        for h in handles:
            h.remove()


def down_proj(lm: LM, layer: int) -> torch.nn.Linear:
    """The MLP's down projection ``W_down`` of ``layer``: weight ``[d_model, d_mlp]``, so
    neuron ``i``'s value vector is column ``i`` (row ``i`` in the ``x W`` notation)."""
    return lm.model.model.layers[lm.check_layer(layer)].mlp.down_proj


@contextlib.contextmanager
def frozen(lm: LM) -> Iterator[None]:
    """No gradients for the model's own weights inside the block: an optimisation of a few
    vectors of its own then does not pay for every weight's gradient."""
    flags = [p.requires_grad for p in lm.model.parameters()]
    lm.model.requires_grad_(False)
    try:
        yield
    finally:
        for p, flag in zip(lm.model.parameters(), flags):
            p.requires_grad_(flag)


def _input(args: tuple, kwargs: dict[str, Any]) -> torch.Tensor:
    return args[0] if args else kwargs["hidden_states"]


def _hook(
    lm: LM, site: Site, fn: Callable[[torch.Tensor], torch.Tensor | None]
) -> tuple[torch.nn.Module, Callable, bool]:
    """The torch hook that hands ``site``'s value to ``fn`` and, if ``fn`` returns a tensor,
    puts it in the value's place: ``(module, hook, pre)``, pre-hooks taking kwargs."""
    kind, layer = site
    block = lm.model.model.layers[min(layer, lm.n_layers - 1)]
    if kind in ("resid", "neurons"):  # the input of a module
        module = (
            block.mlp.down_proj
            if kind == "neurons"
            else block
            if layer < lm.n_layers
            else lm.model.model.norm
        )

        def pre(_: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> Any:
            new = fn(_input(args, kwargs))
            if new is None:
                return None
            return ((new, *args[1:]), kwargs) if args else (args, {**kwargs, "hidden_states": new})

        return module, pre, True
    attn = kind == "attn"  # attention returns (output, weights)

    def post(_: torch.nn.Module, __: tuple, out: Any) -> Any:
        new = fn(out[0] if attn else out)
        return out if new is None else (new, *out[1:]) if attn else new

    return (block.self_attn if attn else block.mlp), post, False


# ---------------------------------------------------------------------------------
# Attention weights: an attention function registered with transformers
# ---------------------------------------------------------------------------------

#: The name :func:`sited_attention` is registered under (transformers'
#: ``AttentionInterface``); the model runs with it while a block reads or writes
#: ``attn_weights`` sites.
SITED_ATTENTION = "iclr25_sites"

#: Each attention module's functions of its weights, hung there by :func:`_hooked`.
_WEIGHT_FNS: weakref.WeakKeyDictionary[torch.nn.Module, list[Callable]] = (
    weakref.WeakKeyDictionary()
)


def sited_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Eager attention, ``A = softmax(q k^T * scaling + mask)``, output ``A v``, with the
    weights ``A`` ``[batch, head, query, key]`` handed to the functions a reading or
    writing block hung on ``module``; one that returns a tensor puts it in ``A``'s place.
    A missing mask means a causal one (the form sdpa's masks may take)."""
    from transformers.models.llama.modeling_llama import repeat_kv

    groups = query.shape[1] // key.shape[1]
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scores = query @ key.transpose(2, 3) * scaling
    if attention_mask is None:
        q, k = scores.shape[-2:]
        attention_mask = torch.ones(q, k, dtype=torch.bool, device=scores.device).tril(k - q)
    mask = attention_mask[..., : key.shape[-2]]
    if mask.dtype == torch.bool:
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
    else:
        scores = scores + mask
    weights = scores.softmax(-1, dtype=torch.float32).to(query.dtype)
    weights = torch.nn.functional.dropout(weights, dropout, training=module.training)
    for fn in _WEIGHT_FNS.get(module, ()):
        new = fn(weights)
        weights = weights if new is None else new.to(weights)
    return (weights @ value).transpose(1, 2).contiguous(), weights


def _register_sited_attention() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, eager_mask

    AttentionInterface.register(SITED_ATTENTION, sited_attention)
    AttentionMaskInterface.register(SITED_ATTENTION, eager_mask)


@contextlib.contextmanager
def _weights_hooked(module: torch.nn.Module, fn: Callable) -> Iterator[None]:
    _WEIGHT_FNS.setdefault(module, []).append(fn)
    try:
        yield
    finally:
        _WEIGHT_FNS[module].remove(fn)
        if not _WEIGHT_FNS[module]:
            del _WEIGHT_FNS[module]


@contextlib.contextmanager
def _hooked(
    lm: LM, fns: Mapping[Site, Callable[[torch.Tensor], torch.Tensor | None]]
) -> Iterator[None]:
    """``fn`` of each site hooked in for the block; :func:`sited_attention` if any site is
    an ``attn_weights`` one."""
    config = lm.model.config
    attention = config._attn_implementation
    if any(s.kind == "attn_weights" for s in fns):
        _register_sited_attention()
        config._attn_implementation = SITED_ATTENTION
    try:
        with contextlib.ExitStack() as stack:
            for site, fn in fns.items():
                if site.kind == "attn_weights":
                    block = lm.model.model.layers[site.layer]
                    stack.enter_context(_weights_hooked(block.self_attn, fn))
                    continue
                module, hook, pre = _hook(lm, site, fn)
                stack.enter_context(hooks((module, hook), pre=pre, with_kwargs=pre))
            yield
    except Stop:  # raised by a weights function (torch hooks catch their own)
        pass
    finally:
        config._attn_implementation = attention


@contextlib.contextmanager
def reading(
    lm: LM, sites: Iterable[Sequence[Any]], *, stop: bool = False
) -> Iterator[dict[Site, torch.Tensor]]:
    """Read ``sites`` in the forward passes run inside the block::

        with llm.reading(lm, [("mlp", 2), ("resid", 3)]) as seen:
            lm.model(**batch.inputs())
        seen["mlp", 2]  # [batch, column, d_model]

    ``seen[site]`` is the site's value as computed (not detached; the last pass's if
    several run). With ``stop``, the pass ends once every site has been read (the layers
    above are not computed): the forward pass must then be the block's last statement.
    The hooks are removed on leaving the block, also on an exception.
    """
    wanted = {as_site(lm, s) for s in sites}
    seen: dict[Site, torch.Tensor] = {}

    def keep(site: Site) -> Callable[[torch.Tensor], None]:
        def fn(value: torch.Tensor) -> None:
            seen[site] = value
            if stop and len(seen) == len(wanted):
                raise Stop

        return fn

    with _hooked(lm, {s: keep(s) for s in wanted}):
        yield seen


@contextlib.contextmanager
def writing(
    lm: LM, edits: Mapping[Sequence[Any], Callable[[torch.Tensor], torch.Tensor]]
) -> Iterator[None]:
    """Replace each site's value ``x`` by ``fn(x)`` in the forward passes run inside the
    block, e.g. ``{("mlp", 2): lambda x: 0 * x}`` ablates layer 2's MLP. The hooks are
    removed on leaving the block, also on an exception."""
    checked = {as_site(lm, s): fn for s, fn in edits.items()}
    with _hooked(lm, checked):
        yield


@torch.no_grad()
def read(lm: LM, batch: Batch, sites: Iterable[Sequence[Any]]) -> dict[Site, torch.Tensor]:
    """The values of ``sites`` for ``batch``, without gradients; the pass stops once the
    last of them is read."""
    with reading(lm, sites, stop=True) as seen:
        lm.model.model(**batch.inputs(), use_cache=False)
    return seen


# ---------------------------------------------------------------------------------
# Partial forward passes
# ---------------------------------------------------------------------------------
@dataclass
class LayerInput:
    """What decoder layer ``layer`` receives for a batch: the residual stream and the
    keyword arguments every layer gets (causal mask, rotary embeddings, positions)."""

    layer: int
    hidden: torch.Tensor
    kwargs: dict[str, Any]


@torch.no_grad()
def layer_input(lm: LM, batch: Batch, layer: int) -> LayerInput:
    """Run ``batch`` up to decoder layer ``layer`` and stop there (the layers above are
    not computed)."""
    found: dict[str, Any] = {}

    def grab(_: torch.nn.Module, args: tuple, kwargs: dict[str, Any]) -> None:
        found["hidden"] = _input(args, kwargs)
        found["kwargs"] = {k: v for k, v in kwargs.items() if k != "hidden_states"}
        raise Stop

    block = lm.model.model.layers[lm.check_layer(layer)]
    with hooks((block, grab), pre=True, with_kwargs=True):
        lm.model.model(**batch.inputs(), use_cache=False)
    return LayerInput(layer, found["hidden"], found["kwargs"])


def final_hidden(lm: LM, batch: Batch, start: LayerInput | None = None) -> torch.Tensor:
    """The final normed hidden states ``[prompt, column, d_model]``: a full forward pass,
    or only the layers from ``start.layer`` on, run from ``start`` -- the same result
    while the layers below are unchanged, and cheaper when an optimisation changes only
    an upper layer (a weight-bound small model costs per layer, not per token)."""
    if start is None:
        return lm.model.model(**batch.inputs(), use_cache=False).last_hidden_state
    hidden = start.hidden
    for block in lm.model.model.layers[start.layer :]:
        hidden = block(hidden, **start.kwargs)
    return lm.model.model.norm(hidden)


def logits_at(
    lm: LM,
    batch: Batch,
    rows: Sequence[int],
    columns: Sequence[int],
    start: LayerInput | None = None,
) -> torch.Tensor:
    """The logits at the given ``(row, column)`` cells only, ``[cell, vocabulary]``: the
    unembedding is the costliest layer of a small model, so it is applied where needed."""
    return lm.model.lm_head(final_hidden(lm, batch, start)[list(rows), list(columns)])


# ---------------------------------------------------------------------------------
# pyvene: interventions declared as data (mcqa's patching, hyperdas's DAS)
# ---------------------------------------------------------------------------------


def load_pyvene() -> Any:
    """The ``pyvene`` module, imported quietly."""
    with contextlib.redirect_stdout(
        io.StringIO()
    ):  # it prints a note about its optional nnsight backend
        import pyvene
    return pyvene
