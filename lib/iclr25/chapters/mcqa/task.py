"""The MCQA chapter's task: the Colors and capital-city items, their questions and the
prompt formats (lettered in the official or the bare template, and cloze)."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np

from iclr25 import editing

COLORS = (
    "red",
    "orange",
    "yellow",
    "green",
    "blue",
    "purple",
    "pink",
    "brown",
    "black",
    "white",
    "grey",
)

MEMORY_COLORS = "memory_colors.csv"
"""The paper's 108 Colors objects: ``data/memory_colors.csv`` of the official repository
(allenai/understanding_mcqa, Apache License 2.0), extracted there from the appendix table
of Norlund, Hagstrom & Johansson (2021), shipped unchanged beside this module."""


def memory_colors() -> tuple[tuple[str, str, str], ...]:
    """``(noun, verb, colour)`` of each Memory Colors row, as the official code builds them:
    the descriptor and the item (``"the inside of a pineapple"``), ``are`` for plurals."""
    text = resources.files("iclr25.chapters.mcqa").joinpath(MEMORY_COLORS).read_text()
    rows = [[cell.strip() for cell in row] for row in csv.reader(io.StringIO(text)) if row]
    header = rows[0]
    objects = []
    for row in rows[1:]:
        record = dict(zip(header, row))
        noun = f"{record['Descriptor']} {record['Item']}".strip()
        objects.append((noun, "are" if record["Plural"] else "is", record["Color"]))
    return tuple(objects)


#: (noun, verb, its typical colour): the Colors task's 108 objects (Memory Colors).
OBJECTS: tuple[tuple[str, str, str], ...] = memory_colors()

#: Capital cities: those of the editing chapters' facts (:data:`iclr25.editing.COUNTRIES`),
#: and of two countries those leave out.
CAPITAL_OF = {row[0]: row[1] for row in editing.COUNTRIES} | {
    "Ireland": "Dublin",
    "Belgium": "Brussels",
}

#: (country, capital): a small world-knowledge set, the stand-in for MMLU.
CAPITALS: tuple[tuple[str, str], ...] = tuple(
    (c, CAPITAL_OF[c])
    for c in (
        "France",
        "Germany",
        "Italy",
        "Spain",
        "Japan",
        "China",
        "Russia",
        "Egypt",
        "Greece",
        "the United Kingdom",
        "Ireland",
        "Portugal",
        "Austria",
        "Poland",
        "Hungary",
        "Sweden",
        "Norway",
        "Finland",
        "Denmark",
        "the Netherlands",
        "Belgium",
        "Kenya",
        "Argentina",
        "Peru",
        "Cuba",
        "Mexico",
        "Canada",
        "India",
        "Thailand",
        "South Korea",
        "Vietnam",
        "Indonesia",
        "Iran",
        "Iraq",
        "Colombia",
        "Venezuela",
        "the Czech Republic",
        "Romania",
        "the Philippines",
        "Saudi Arabia",
    )
)

#: Symbol sets: the usual letters and the paper's unusual alternative.
SYMBOLS = ("ABCD", "QZRX")
N_SHOTS = 3


# ---------------------------------------------------------------------------------
# Questions and prompts
# ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Question:
    """A question, its options and the index of the correct one."""

    text: str
    options: tuple[str, ...]
    answer: int

    def moved(self, slot: int) -> Question:
        """The same question with the correct option swapped into ``slot``."""
        options = list(self.options)
        options[slot], options[self.answer] = options[self.answer], options[slot]
        return replace(self, options=tuple(options), answer=slot)


@dataclass(frozen=True)
class Item:
    """A test item: solved in-context examples (the shots) and the query."""

    shots: tuple[Question, ...]
    query: Question

    def moved(self, slot: int) -> Item:
        return replace(self, query=self.query.moved(slot))


def _options(
    correct: str, pool: Sequence[str], rng: np.random.Generator, n_options: int
) -> tuple[tuple[str, ...], int]:
    """``correct`` among ``n_options - 1`` distinct others from ``pool``, at a random slot."""
    options = [
        str(c) for c in rng.choice([c for c in pool if c != correct], n_options - 1, replace=False)
    ]
    answer = int(rng.integers(n_options))
    options.insert(answer, correct)
    return tuple(options), answer


def colour_question(
    noun: str, verb: str, colour: str, rng: np.random.Generator, n_options: int = 4
) -> Question:
    """``"Bananas are yellow. What color are bananas?"`` with the colour among random others."""
    text = f"{noun[0].upper() + noun[1:]} {verb} {colour}. What color {verb} {noun}?"
    return Question(text, *_options(colour, COLORS, rng, n_options))


def capital_question(
    country: str, capital: str, rng: np.random.Generator, n_options: int = 4
) -> Question:
    """``"What is the capital of France?"`` with three other capitals as distractors."""
    return Question(
        f"What is the capital of {country}?",
        *_options(capital, [c for _, c in CAPITALS], rng, n_options),
    )


def colours_items(
    n: int,
    rng: np.random.Generator,
    *,
    typical: bool = True,
    n_options: int = 4,
    shot_answers: Sequence[int] | None = None,
    objects: Sequence[int] | None = None,
) -> list[Item]:
    """``n`` Colors items; the stated colour is the object's typical one, or random.

    Each query's three shots are other objects. With ``typical=False`` every colour is
    drawn at random, so that nothing but the context tells the answer (the corpus of
    the tiny model, which knows no world). ``shot_answers`` fixes the slot of each
    shot's answer (the official ``--icl_labels``, e.g. ``(0, 1, 1)`` for ABB);
    ``objects`` limits queries and shots to those indices of :data:`OBJECTS`.
    """
    pool = list(range(len(OBJECTS))) if objects is None else [int(k) for k in objects]
    if shot_answers is not None and len(shot_answers) != N_SHOTS:
        raise ValueError(f"shot_answers has {len(shot_answers)} slots; accepted: {N_SHOTS}")

    def question(k: int, slot: int | None = None) -> Question:
        noun, verb, colour = OBJECTS[k]
        colour = colour if typical else str(rng.choice(COLORS))
        q = colour_question(noun, verb, colour, rng, n_options)
        return q if slot is None else q.moved(slot)

    slots = list(shot_answers) if shot_answers is not None else [None] * N_SHOTS
    items = []
    for k in rng.permutation(pool)[:n] if typical else rng.choice(pool, size=n):
        others = rng.choice([j for j in pool if j != k], N_SHOTS, replace=False)
        shots = tuple(question(int(j), s) for j, s in zip(others, slots))
        items.append(Item(shots, question(int(k))))
    return items


def capitals_items(n: int, rng: np.random.Generator) -> list[Item]:
    """``n`` capital-city items, each with three other countries as shots."""
    items = []
    for k in rng.permutation(len(CAPITALS))[:n]:
        others = rng.choice([j for j in range(len(CAPITALS)) if j != k], N_SHOTS, replace=False)
        items.append(
            Item(
                tuple(capital_question(*CAPITALS[j], rng) for j in others),
                capital_question(*CAPITALS[k], rng),
            )
        )
    return items


TEMPLATES = ("official", "bare")
"""The official code's prompt (an instruction, then ``Phrase:``, ``Choices:`` and ``The
correct answer is:``) and our earlier bare one (the question, the options, ``Answer:``)."""


def instruction(symbols: str = "ABCD") -> str:
    """The official prompt's first line, for any number of symbols."""
    listed = ", ".join(symbols[:-1]) + f" or {symbols[-1]}"
    return f"For each of the following phrases, select the best completion ({listed})."


def lettered(
    q: Question, symbols: str = "ABCD", solved: bool = False, template: str = "bare"
) -> str:
    """A formatted MCQA block: one ``symbol: option`` line per option, then the cue.

    ``"bare"``: the question, the options, ``Answer:``. ``"official"``: ``Phrase:`` and
    the question, ``Choices:``, the options, ``The correct answer is:``.
    """
    options = [f"{s}: {o}" for s, o in zip(symbols, q.options)]
    if template == "official":
        lines = [f"Phrase: {q.text}", "Choices:", *options, "The correct answer is:"]
    elif template == "bare":
        lines = [q.text, *options, "Answer:"]
    else:
        raise ValueError(f"unknown template {template!r}; accepted: {', '.join(TEMPLATES)}")
    return "\n".join(lines) + (f" {symbols[q.answer]}" if solved else "")


def cloze(q: Question, solved: bool = False) -> str:
    """The cloze layout: the question, then the answer's text."""
    return q.text + (f" {q.options[q.answer]}" if solved else "")


def prompt(item: Item, fmt: str = "ABCD", template: str = "bare") -> str:
    """The 3-shot prompt of ``item`` in a symbol format (``"ABCD"``...) or ``"cloze"``;
    the official template opens with its instruction line."""

    def show(q: Question, solved: bool) -> str:
        return cloze(q, solved) if fmt == "cloze" else lettered(q, fmt, solved, template)

    blocks = [*(show(q, True) for q in item.shots), show(item.query, False)]
    if fmt != "cloze" and template == "official":
        blocks.insert(0, instruction(fmt))
    return "\n\n".join(blocks)
