"""The HyperDAS chapter's data: a tiny world of invented cities with three attributes,
RAVEL-style interchange examples, their prompts as padded batches, and the scores."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr25 import llm

# ---------------------------------------------------------------------------------
# The tiny world: cities and three independent attributes
# ---------------------------------------------------------------------------------

CITY_NAMES = tuple(
    a + b
    for a, b in itertools.product(
        ("bal", "cor", "dun", "fel", "gar", "hol", "kir", "lom")
        + ("mar", "nes", "pol", "ril", "sav", "tor", "vel", "zan"),
        ("ava", "eno", "ith", "ora", "usk", "wyn", "ame", "ide", "olt", "ury"),
    )
)  # 160 invented names, each one token of the word-level tokenizer
VALUES = {
    "country": ("Arvia", "Belmor", "Cantra", "Dovel", "Esmark", "Fiora", "Galdra", "Hestia"),
    "language": ("Arvish", "Belmic", "Cantic", "Dovian", "Esmic", "Fioran"),
    "climate": ("arid", "humid", "alpine", "polar", "mild"),
}
TEMPLATES = {
    "country": ("{} is a city in", "the city {} is part of", "travellers to {} arrive in"),
    "language": ("people in {} speak", "the language of {} is", "in {} everyone talks in"),
    "climate": ("the climate of {} is", "{} has weather that is", "a year in {} feels"),
}
TEST_TEMPLATE = 2  # the last template of each attribute is held out for testing
INSTRUCTION_WORDS = {"country": "city", "language": "language", "climate": "climate"}
"""The word naming each attribute in an instruction: a word of its own templates, so
that the hypernetwork, copied from the target, reads only tokens the target learnt."""


@dataclass(frozen=True)
class World:
    """Entities with attribute values, cloze templates ``{}`` for the entity."""

    entities: tuple[str, ...]
    values: dict[str, tuple[str, ...]]  # attribute -> the value of each entity
    templates: dict[str, tuple[str, ...]]

    @property
    def attributes(self) -> tuple[str, ...]:
        return tuple(self.templates)

    def value(self, attribute: str, entity: str) -> str:
        return self.values[check_attribute(self, attribute)][self.entities.index(entity)]


def check_attribute(world: World, attribute: str) -> str:
    if attribute not in world.templates:
        raise ValueError(
            f"unknown attribute {attribute!r}; accepted: {', '.join(world.attributes)}"
        )
    return attribute


def tiny_world(n_cities: int, seed: int) -> World:
    """``n_cities`` invented cities, each with an independent random country, language
    and climate (every value used when there are enough cities)."""
    rng = np.random.default_rng(seed)
    cities = tuple(CITY_NAMES[:n_cities])
    values = {
        a: tuple(opts[i] for i in rng.permutation(np.arange(n_cities) % len(opts)))
        for a, opts in VALUES.items()
    }
    return World(cities, values, TEMPLATES)


def world_texts(world: World) -> list[str]:
    """Every fact of the world in every template: the tiny target's corpus."""
    return [
        t.format(e) + " " + world.value(a, e)
        for a, ts in world.templates.items()
        for t in ts
        for e in world.entities
    ]


def vocabulary(world: World) -> list[str]:
    """The corpus's words: the instructions are made of them too."""
    return llm.words(world_texts(world))


# ---------------------------------------------------------------------------------
# RAVEL-style examples
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Example:
    """One interchange example: the base prompt about ``base`` (asking ``asked``), the source
    prompt about ``source``, the intervened attribute and the expected answer. The
    instruction names ``named``, the source unless set otherwise (:func:`mismatched`)."""

    attribute: str
    asked: str
    base: str
    source: str
    base_prompt: str
    source_prompt: str
    label: str
    named: str = ""

    @property
    def cause(self) -> bool:
        return self.asked == self.attribute

    @property
    def instruction(self) -> str:
        """``"e to e' A"`` in words the target knows (:data:`INSTRUCTION_WORDS`)."""
        word = INSTRUCTION_WORDS.get(self.attribute, self.attribute)
        return f"{self.base} to {self.named or self.source} {word}"


def make_examples(
    world: World,
    entities: Sequence[str],
    templates: Sequence[int],
    n: int,
    rng: np.random.Generator,
    *,
    attributes: Sequence[str] | None = None,
    known: set[tuple[str, int, str]] | None = None,
) -> list[Example]:
    """``n`` examples, half cause and half isolation, as the official generator: cause,
    base template for ``A`` about ``e``, source any template about ``e'``, ``A(e) != A(e')``,
    label ``A(e')``; isolation, base template for ``B != A``, ``B(e) != B(e')`` (so that an
    intervention that leaks ``B`` is seen), label ``B(e)``."""
    attributes = list(attributes or world.attributes)
    out: list[Example] = []
    for _ in range(200 * n):
        if len(out) == n:
            break
        a = attributes[rng.integers(len(attributes))]
        cause = len(out) % 2 == 0
        asked = a if cause else rng.choice([b for b in world.attributes if b != a])
        e, e2 = rng.choice(list(entities), 2, replace=False)
        if world.value(asked, e) == world.value(asked, e2):
            continue
        ti = templates[rng.integers(len(templates))]
        base_t = world.templates[asked][ti]
        if known is not None and not {(asked, ti, e), (asked, ti, e2 if cause else e)} <= known:
            continue
        src_a = world.attributes[rng.integers(len(world.attributes))]
        src_t = world.templates[src_a][templates[rng.integers(len(templates))]]
        label = world.value(asked, e2 if cause else e)
        out.append(Example(a, asked, e, e2, base_t.format(e), src_t.format(e2), label))
    if len(out) < n:
        raise ValueError(f"only {len(out)} of {n} examples could be made from these facts")
    return out


def mismatched(
    world: World,
    examples: Sequence[Example],
    rng: np.random.Generator,
    *,
    known: set[tuple[str, int, str]] | None = None,
) -> list[Example]:
    """The injection test: each cause example with its source prompt moved to a third
    city ``e''`` of the world, whose value of the attribute differs from both
    ``A(e)`` and ``A(e')``, while the instruction still names ``e'``. Label ``A(e'')``:
    the value the source run carries; ``A(e')`` is the instruction's. With ``known``,
    ``e''`` is a city whose value the target gives at the held-out template."""
    out = []
    for x in (x for x in examples if x.cause):
        taken = {world.value(x.attribute, x.base), world.value(x.attribute, x.source)}
        pool = [
            c
            for c in world.entities
            if world.value(x.attribute, c) not in taken
            and (known is None or (x.attribute, TEST_TEMPLATE, c) in known)
        ]
        if not pool:
            continue
        c = str(pool[rng.integers(len(pool))])
        out.append(
            Example(
                x.attribute, x.asked, x.base, c, x.base_prompt,
                x.source_prompt.replace(x.source, c), world.value(x.attribute, c), x.source,
            )
        )  # fmt: skip
    if not out:
        raise ValueError("no cause example has a third city with another value to move to")
    return out


# ---------------------------------------------------------------------------------
# Prompts as padded batches, with entity columns and suffix masks
# ---------------------------------------------------------------------------------


@dataclass
class Side:
    """The base or source prompts of a batch: left-padded, the entity's last token's column,
    and the official suffix mask (tokens up to the entity, padding excluded)."""

    batch: llm.Batch
    entity: torch.Tensor  # [n] column of the entity's last token
    mask: torch.Tensor  # [n, width] bool


def tokens(lm: llm.LM, text: str) -> list[int]:
    """``lm.tokens(text)``, memoised on the model (training re-encodes the same prompts)."""
    memo = lm.__dict__.setdefault("_token_memo", {})
    if text not in memo:
        memo[text] = lm.tokens(text)
    return memo[text]


def encode(lm: llm.LM, prompts: Sequence[str]) -> llm.Batch:
    """:func:`iclr25.llm.encode` (left padding, positions from each prompt's start), with
    memoised tokens."""
    rows = [tokens(lm, p) for p in prompts]
    width = max(map(len, rows))
    pad = lm.tokenizer.pad_token_id if lm.tokenizer.pad_token_id is not None else 0
    ids = torch.tensor([[pad] * (width - len(r)) + r for r in rows])
    mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in rows])
    positions = (mask.cumsum(1) - 1).clamp(min=0)
    return llm.Batch(ids.to(lm.device), mask.to(lm.device), positions.to(lm.device))


def side(lm: llm.LM, prompts: Sequence[str], entities: Sequence[str]) -> Side:
    """Encode ``prompts``; each must contain its entity (else one clear error)."""
    batch = encode(lm, prompts)
    width = batch.input_ids.shape[1]
    cols = []
    for prompt, e in zip(prompts, entities):
        if e not in prompt:
            raise ValueError(f"the entity {e!r} does not occur in the prompt {prompt!r}")
        suffix = prompt[prompt.index(e) + len(e) :]
        cols.append(width - len(tokens(lm, suffix) if suffix.strip() else []) - 1)
    entity = torch.tensor(cols, device=lm.device)
    ar = torch.arange(width, device=lm.device)
    mask = (ar[None] <= entity[:, None]) & batch.attention_mask.bool()
    return Side(batch, entity, mask)


def pair(lm: llm.LM, examples: Sequence[Example]) -> tuple[Side, Side, torch.Tensor]:
    """Base side, source side and label token ids of ``examples``."""
    base = side(lm, [x.base_prompt for x in examples], [x.base for x in examples])
    src = side(lm, [x.source_prompt for x in examples], [x.source for x in examples])
    labels = torch.tensor([label_id(lm, x.label) for x in examples], device=lm.device)
    return base, src, labels


def label_id(lm: llm.LM, label: str) -> int:
    """The label's first token (the official scores compare up to three)."""
    return tokens(lm, " " + label)[0]


POSITIONS = ("entity", "after", "last")
"""DAS positions: the entity's last token, the token after it, the prompt's last token."""


def columns(s: Side, position: str) -> torch.Tensor:
    if position not in POSITIONS:
        raise ValueError(f"unknown position {position!r}; accepted: {', '.join(POSITIONS)}")
    width = s.batch.input_ids.shape[1]
    if position == "entity":
        return s.entity
    if position == "after":
        return (s.entity + 1).clamp(max=width - 1)
    return torch.full_like(s.entity, width - 1)


# ---------------------------------------------------------------------------------
# Scores
# ---------------------------------------------------------------------------------


def weighted_ce(logits: torch.Tensor, labels: torch.Tensor, cause: torch.Tensor) -> torch.Tensor:
    """Label cross-entropy, cause examples weighted 3.5 and isolation 0.5 (official)."""
    w = torch.where(cause, 3.5, 0.5)
    ce = nn.functional.cross_entropy(logits.float(), labels, reduction="none")
    return (w * ce).sum() / w.sum()


def scores(logits: torch.Tensor, labels: torch.Tensor, cause: torch.Tensor) -> dict[str, float]:
    """Cause, isolation and disentangle (their mean) accuracy."""
    hit = (logits.argmax(-1) == labels).float()
    c, i = float(hit[cause].mean()), float(hit[~cause].mean())
    return {"cause": c, "isolation": i, "disentangle": (c + i) / 2}


SCORES = ("cause", "isolation", "disentangle")
