"""Backends: one interface to a local model or an OpenAI-compatible endpoint, for the
chapters that need only a model's choices and answers (debias, faithfulness)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from iclr25.llm.models import LM, MODELS, _quiet, load_model
from iclr25.llm.scoring import generate, sample, score_continuations

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
