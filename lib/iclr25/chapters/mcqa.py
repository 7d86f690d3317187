"""How transformer language models answer formatted multiple-choice questions.

Wiegreffe, Tafjord, Belinkov, Hajishirzi & Sabharwal, "Answer, Assemble, Ace:
Understanding How LMs Answer Multiple Choice Questions" (ICLR 2025). A formatted
multiple-choice question lists options after symbols and asks for the symbol:

    Bananas are yellow. What color are bananas?
    A: green
    B: yellow
    C: red
    D: blue
    Answer: B

The paper's synthetic *Colors* task states the answer in the context, so a model that
fails it has not learned to bind an answer to its symbol, whatever it knows. Prompts are
3-shot: three solved questions, then the query. Accuracy is *enumerated* scoring, the
answer symbol with the highest score at the last position; *cloze* scoring instead
scores each option's text as a continuation of the question. Two tools localise the
mechanism:

* vocabulary projection: the final norm and unembedding applied to the hidden state of
  each layer (and to each attention or MLP output and head) at the last position, to
  read when the answer symbol becomes predictable;
* activation patching between two prompts whose correct symbols differ (the same
  question with the options reordered): a hidden state of the *source* prompt replaces
  the base prompt's, and the effect is how far the prediction moves to the source's
  symbol, as the normalised logit difference

      LD = log p(source symbol) - log p(base symbol),
      effect = (LD_patched - LD_base) / (LD_source - LD_base),

  averaged over pairs before dividing; 0 is no effect, 1 moves the prediction fully.

The paper's findings, tested here on SmolLM2-135M and on a tiny transformer trained on
the 3-shot task: prediction of the answer symbol is causally attributed to a few middle
layers' attention and a sparse set of heads; models that fail formatted MCQA do not
separate the answer symbols in vocabulary space; logit differences between the answer
symbols keep growing over training. The 108 objects are the paper's (Memory Colors, from the
official repository, shipped beside this module); a small world-knowledge set (capital
cities) stands in for MMLU.

Models, patching and projection come from :mod:`iclr25.llm` (pyvene underneath); this
module holds the task, the prompts and the paper's metrics.
"""

from __future__ import annotations

import csv
import hashlib
import io
import string
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from importlib import resources
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch

from iclr25 import core, editing, llm
from iclr25.core import Bound, ClaimSpec, Gap, Param

T = TypeVar("T")

if TYPE_CHECKING:
    import ipywidgets as widgets
    import plotly.graph_objects as go

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

MEMORY_COLORS = "mcqa_memory_colors.csv"
"""The paper's 108 Colors objects: ``data/memory_colors.csv`` of the official repository
(allenai/understanding_mcqa, Apache License 2.0), extracted there from the appendix table
of Norlund, Hagstrom & Johansson (2021), shipped unchanged beside this module."""


def memory_colors() -> tuple[tuple[str, str, str], ...]:
    """``(noun, verb, colour)`` of each Memory Colors row, as the official code builds them:
    the descriptor and the item (``"the inside of a pineapple"``), ``are`` for plurals."""
    text = resources.files("iclr25.chapters").joinpath(MEMORY_COLORS).read_text()
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


def colours_items(n: int, rng: np.random.Generator, *, typical: bool = True) -> list[Item]:
    """``n`` Colors items; the stated colour is the object's typical one, or random.

    Each query's three shots are other objects. With ``typical=False`` every colour is
    drawn at random, so that nothing but the context tells the answer (the corpus of
    the tiny model, which knows no world).
    """

    def question(k: int) -> Question:
        noun, verb, colour = OBJECTS[k]
        return colour_question(noun, verb, colour if typical else str(rng.choice(COLORS)), rng)

    items = []
    for k in rng.permutation(len(OBJECTS))[:n] if typical else rng.integers(len(OBJECTS), size=n):
        others = rng.choice([j for j in range(len(OBJECTS)) if j != k], N_SHOTS, replace=False)
        items.append(Item(tuple(question(j) for j in others), question(int(k))))
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


# ---------------------------------------------------------------------------------
# Scores and the paper's metrics
# ---------------------------------------------------------------------------------


def symbol_tokens(lm: llm.LM, symbols: str) -> list[int]:
    """The token of each answer symbol as the model would write it after ``Answer:``."""
    return [lm.token_id(" " + s) for s in symbols]


def answers(items: Sequence[Item]) -> np.ndarray:
    return np.array([item.query.answer for item in items])


def lettered_scores(
    lm: llm.LM, items: Sequence[Item], symbols: str = "ABCD", template: str = "bare"
) -> torch.Tensor:
    """Enumerated scoring: the next-token logits of the answer symbols, ``[item, symbol]``
    (cached for a pretrained model, :func:`cached_run`)."""
    texts = [prompt(item, symbols, template) for item in items]
    tokens = symbol_tokens(lm, symbols)
    if lm.tiny:
        return llm.next_token_logits(lm, texts)[:, tokens]
    return cached_run(
        "scores", lm, texts, lambda: llm.next_token_logits(lm, texts)[:, tokens], symbols=symbols
    )


def cloze_scores(lm: llm.LM, items: Sequence[Item]) -> torch.Tensor:
    """Cloze scoring: ``log P(option text | question)``, ``[item, option]`` (cached for a
    pretrained model, :func:`cached_run`)."""
    texts = [prompt(item, "cloze") for item in items]
    options = [[" " + o for o in item.query.options] for item in items]

    def run() -> torch.Tensor:
        return llm.score_continuations(lm, texts, options)

    if lm.tiny:
        return run()
    return cached_run("cloze", lm, texts + [o for row in options for o in row], run)


def accuracy(scores: torch.Tensor, items: Sequence[Item]) -> float:
    """The share of items whose correct option has the highest score."""
    return float((scores.argmax(-1).numpy() == answers(items)).mean())


def logit_difference(scores: torch.Tensor, items: Sequence[Item]) -> float:
    """Mean over items of the correct symbol's score minus the mean of the others'."""
    correct = scores[torch.arange(len(items)), answers(items)]
    others = (scores.sum(-1) - correct) / (scores.shape[-1] - 1)
    return float((correct - others).mean())


def separation(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """Per layer, how far vocabulary space separates the correct symbol from the others:
    ``logit_difference`` of a projection ``[layer, item, symbol]`` (nats)."""
    return np.array([logit_difference(layer, items) for layer in logprobs])


def projection_accuracy(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """Per layer, the share of items whose projection ranks the correct symbol first."""
    return np.array([accuracy(layer, items) for layer in logprobs])


def item_separation(logprobs: torch.Tensor, items: Sequence[Item]) -> np.ndarray:
    """``[layer, item]``: the correct symbol's log-probability minus the mean of the others'."""
    rows = torch.arange(len(items))
    correct = logprobs[:, rows, answers(items)]
    others = (logprobs.sum(-1) - correct) / (logprobs.shape[-1] - 1)
    return (correct - others).numpy()


def patching_pairs(items: Sequence[Item], rng: np.random.Generator) -> list[tuple[Item, Item]]:
    """(base, source) pairs: the same item with the correct option moved to another slot,
    so the two prompts differ only in the order of the options and their correct symbols differ."""
    pairs = []
    for item in items:
        slot = (item.query.answer + int(rng.integers(1, len(item.query.options)))) % len(
            item.query.options
        )
        pairs.append((item, item.moved(slot)))
    return pairs


def _ld(logprobs: torch.Tensor, pairs: Sequence[tuple[Item, Item]]) -> torch.Tensor:
    """``log p(source symbol) - log p(base symbol)`` per pair; ``logprobs[..., pair, symbol]``."""
    rows = torch.arange(len(pairs))
    base = torch.tensor([b.query.answer for b, _ in pairs])
    source = torch.tensor([s.query.answer for _, s in pairs])
    return logprobs[..., rows, source] - logprobs[..., rows, base]


def normalised_effect(
    patched: torch.Tensor,
    base: torch.Tensor,
    source: torch.Tensor,
    pairs: Sequence[tuple[Item, Item]],
) -> np.ndarray:
    """``(LD_patched - LD_base) / (LD_source - LD_base)``, each averaged over the pairs.

    ``patched`` is ``[..., pair, symbol]``; 0 means the patch changed nothing, 1 that it
    moved the prediction as far as the source prompt itself does.
    """
    ld_base, ld_source = _ld(base, pairs).mean(), _ld(source, pairs).mean()
    return ((_ld(patched, pairs).mean(-1) - ld_base) / (ld_source - ld_base)).numpy()


def full_effect(sweep: llm.Sweep, pairs: Sequence[tuple[Item, Item]]) -> float:
    """``LD_source - LD_base`` (nats): how far the source prompt itself moves the prediction."""
    return float(_ld(sweep.source, pairs).mean() - _ld(sweep.base, pairs).mean())


def symbol_roles(logprobs: torch.Tensor, pairs: Sequence[tuple[Item, Item]]) -> dict[str, float]:
    """Mean probability of the base's symbol, the source's symbol and the other symbols."""
    p = logprobs.exp()
    rows = torch.arange(len(pairs))
    base = p[rows, [b.query.answer for b, _ in pairs]]
    source = p[rows, [s.query.answer for _, s in pairs]]
    return {
        "base answer": float(base.mean()),
        "source answer": float(source.mean()),
        "other symbols": float((p.sum(-1) - base - source).mean()),
    }


# ---------------------------------------------------------------------------------
# Patching sweeps and the patching explorer
# ---------------------------------------------------------------------------------


@dataclass
class Patching:
    """A patching sweep of one model's component over (base, source) pairs."""

    model: str
    sweep: llm.Sweep
    pairs: list[tuple[Item, Item]]
    columns: list[str]  # what each column is: a position's token, or a head
    normalise: bool = True  # False: show the raw change of LD (nats), see ``shown``

    @property
    def effect(self) -> np.ndarray:
        """Normalised effect of each cell, ``[layer, column]``."""
        return normalised_effect(self.sweep.patched, self.sweep.base, self.sweep.source, self.pairs)

    @property
    def raw(self) -> np.ndarray:
        """``LD_patched - LD_base`` of each cell (nats), averaged over the pairs: the change
        before dividing by the full effect, readable when that is close to 0."""
        return (
            _ld(self.sweep.patched, self.pairs).mean(-1) - _ld(self.sweep.base, self.pairs).mean()
        ).numpy()

    @property
    def shown(self) -> np.ndarray:
        """What the figure draws: the normalised effect, or the raw change of LD."""
        return self.effect if self.normalise else self.raw

    @property
    def full(self) -> float:
        return full_effect(self.sweep, self.pairs)

    def distributions(self, row: int, column: int) -> dict[str, dict[str, float]]:
        """Symbol probabilities before (base run), after (patched) and in the source run."""
        return {
            "before (base)": symbol_roles(self.sweep.base, self.pairs),
            "after (patched)": symbol_roles(self.sweep.patched[row, column], self.pairs),
            "source": symbol_roles(self.sweep.source, self.pairs),
        }


def cached_run(name: str, lm: llm.LM, texts: Sequence[str], run: Callable[[], T], **extra) -> T:
    """``run()``, cached (:func:`iclr25.core.cached`) under the model's name, the SHA-256
    of the prompts ``texts`` and ``extra``: SmolLM2's scores, projections and patching
    sweeps, which the same prompts give again on a second run."""
    digest = hashlib.sha256("\x00".join(texts).encode()).hexdigest()
    config = {"model": lm.name, "texts": digest, **extra, "torch": torch.__version__}
    return core.cached(f"mcqa-{name}", config, run)


def patching(
    lm: llm.LM,
    pairs: Sequence[tuple[Item, Item]],
    component: str,
    *,
    symbols: str = "ABCD",
    positions: Sequence[int] = (-1,),
    template: str = "bare",
    normalise: bool = True,
) -> Patching:
    """Patch ``component`` cell by cell from each source prompt into its base prompt.

    A pretrained model's sweep is cached (:func:`cached_run`); a tiny model's is not."""
    base = [prompt(b, symbols, template) for b, _ in pairs]
    source = [prompt(s, symbols, template) for _, s in pairs]

    def sweep_of() -> llm.Sweep:
        return llm.patch_sweep(
            lm, base, source, component, symbol_tokens(lm, symbols), positions=positions
        )

    if lm.tiny:
        sweep = sweep_of()
    else:
        extra = {"component": component, "symbols": symbols, "positions": list(positions)}
        sweep = llm.Sweep(
            **cached_run("patching", lm, base + source, lambda: asdict(sweep_of()), **extra)
        )
    if component == "head":
        columns = [f"head {h}" for h in sweep.columns]
    else:
        ids = lm.tokens(base[0])
        columns = [f"{p} {lm.tokenizer.decode([ids[p]])!r}" for p in sweep.columns]
    return Patching(lm.name, sweep, list(pairs), columns, normalise)


def patching_figure(
    results: dict[str, Patching], key: str, cell: tuple[int, int] | None = None
) -> go.Figure:
    """Heatmap of a sweep's normalised effect and, for one cell (default: the strongest),
    the symbol probabilities before and after patching it."""
    from plotly.subplots import make_subplots

    result = results[key]
    effect = result.shown
    what = "normalised effect" if result.normalise else "change of LD (nats)"
    scale = 1.0 if result.normalise else max(float(np.nanmax(np.abs(effect))), 1e-6)
    row, column = cell if cell is not None else np.unravel_index(np.nanargmax(effect), effect.shape)
    layers = result.sweep.layers
    text = [
        [
            f"layer {layers[r]}, {result.columns[c]}<br>{what} {effect[r, c]:.2f}<br>"
            + "<br>".join(
                f"{run}: " + ", ".join(f"{role} {p:.2f}" for role, p in roles.items())
                for run, roles in result.distributions(r, c).items()
            )
            for c in range(effect.shape[1])
        ]
        for r in range(effect.shape[0])
    ]
    fig = make_subplots(
        2,
        1,
        row_heights=[0.58, 0.42],
        vertical_spacing=0.2,
        subplot_titles=(
            f"{what} of patching one cell (x: position and its token, or head)",
            "symbol probabilities at the marked cell",
        ),
    )
    fig.add_heatmap(
        z=effect,
        x=result.columns,
        y=layers,
        zmin=-scale,
        zmax=scale,
        colorscale="RdBu_r",
        text=text,
        hoverinfo="text",
        colorbar=dict(len=0.55, y=1, yanchor="top"),
        row=1,
        col=1,
    )
    fig.add_scatter(
        x=[result.columns[column]],
        y=[layers[row]],
        mode="markers",
        showlegend=False,
        marker=dict(symbol="square-open", size=16, color="black", line_width=2),
        hoverinfo="skip",
        row=1,
        col=1,
    )
    for run, roles in result.distributions(row, column).items():
        fig.add_bar(x=list(roles), y=list(roles.values()), name=run, row=2, col=1)
    fig.update_layout(
        title=f"{key} (full effect {result.full:.2f} nats); marked: layer "
        f"{layers[row]}, {result.columns[column]}",
        barmode="group",
        height=760,
        legend=dict(x=1.02, y=0.3),
    )
    fig.update_yaxes(title_text="layer", row=1, col=1)
    fig.update_yaxes(title_text="mean probability", range=[0, 1], row=2, col=1)
    return fig


def patching_explorer(results: dict[str, Patching]) -> widgets.VBox:
    """The live control of the patching explorer: a model and component, and a cell.

    Its ``value`` is ``(key, row, column)``; :func:`patching_figure` draws it.
    """
    import ipywidgets as widgets
    import traitlets

    class Explorer(widgets.VBox):
        value = traitlets.Any()

    keys = list(results)
    view = widgets.Dropdown(
        options=keys, description="model / component", style={"description_width": "initial"}
    )
    row = widgets.IntSlider(description="layer row", min=0, continuous_update=False)
    column = widgets.IntSlider(description="column", min=0, continuous_update=False)
    explorer = Explorer([view, row, column])

    def update(_: object = None) -> None:
        shape = results[view.value].effect.shape
        row.max, column.max = shape[0] - 1, shape[1] - 1
        explorer.value = (view.value, row.value, column.value)

    for control in (view, row, column):
        control.observe(update, names="value")
    update()
    return explorer


# ---------------------------------------------------------------------------------
# The tiny transformer
# ---------------------------------------------------------------------------------

HELD_OUT = SYMBOLS[1]
"""Q/Z/R/X never occur in the training corpus: scoring them tests generalisation."""

CRITERION = 0.95
"""Training stops searching once A/B/C/D accuracy on held-out validation prompts reaches
this; the step it took is reported."""


def tiny_vocabulary() -> list[str]:
    """Every word a bare Colors prompt can hold, with every capital letter as a symbol."""
    template = [
        f"{noun[0].upper() + noun[1:]} {verb} . What color {verb} {noun} ? : Answer"
        for noun, verb, _ in OBJECTS
    ]
    return llm.words([*template, " ".join(COLORS), " ".join(string.ascii_uppercase)])


def tiny_corpus(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` solved Colors prompts (bare template) with random colours, in A/B/C/D only
    (Q/Z/R/X are held out); each keeps 0 to 3 of its shots (uniformly), so that short
    prompts teach the binding of a symbol to its option without the distraction of
    earlier questions, and long ones its use in the 3-shot prompt."""
    texts = []
    for item in colours_items(n, rng, typical=False):
        item = replace(item, shots=item.shots[: int(rng.integers(N_SHOTS + 1))])
        texts.append(f"{prompt(item)} {SYMBOLS[0][item.query.answer]}")
    return texts


def post_solve_steps(solved: int, every: int, n: int) -> list[int]:
    """Log-spaced checkpoints after the solving step: ``solved + every * 2**k``, k < n."""
    return [solved + every * 2**k for k in range(n)]


@dataclass
class TinyTraining:
    """A tiny model trained to the criterion: validation curves and the final model."""

    lm: llm.LM
    steps: list[int]  # the evaluated steps (every ``every`` steps, then log-spaced)
    accuracy: dict[str, list[float]]  # validation accuracy per symbol set, per step
    logit_difference: list[float]  # validation logit difference (A/B/C/D), per step
    loss: list[float]  # mean training loss between evaluations
    solved: int | None  # the first step with validation accuracy >= CRITERION
    after: list[int]  # the log-spaced steps after ``solved``


def train_tiny(
    *,
    layers: int,
    d_model: int,
    max_steps: int,
    every: int,
    after: int,
    batch_size: int,
    lr: float,
    warmup: int,
    seed: int,
    n_val: int = 64,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> TinyTraining:
    """Train the tiny transformer on :func:`tiny_corpus` until A/B/C/D accuracy on ``n_val``
    held-out validation prompts reaches :data:`CRITERION` (checked every ``every`` steps, at
    most ``max_steps``), then on to ``after`` log-spaced checkpoints
    (:func:`post_solve_steps`). AdamW without weight decay, the rate rising linearly over
    ``warmup`` steps and then constant, gradients clipped to norm 1; one CPU thread, so
    a seed gives the same model on a machine.
    Cached (:func:`iclr25.core.cached`)."""
    config = llm.TinyConfig(
        n_layers=layers, n_heads=4, d_model=d_model, d_mlp=4 * d_model, context=160
    )
    key = {
        "config": config.__dict__,
        "corpus": ["mcqa.tiny_corpus", OBJECTS, COLORS, N_SHOTS, HELD_OUT, 3],
        "train": [max_steps, every, after, batch_size, lr, warmup, 1.0, seed, n_val, CRITERION],
        "torch": torch.__version__,
        "version": 4,
    }

    def build() -> dict:
        from tqdm.auto import tqdm

        lm = llm.tiny_model(tiny_vocabulary(), config, seed=seed, name="mcqa-tiny")
        lm.model.to(device)
        data, held_out = np.random.default_rng(seed), np.random.default_rng([seed, 1])
        validation = colours_items(n_val, held_out, typical=False)
        cue = lm.tokens("Answer:")  # the loss is on the answer symbols only
        optimiser = torch.optim.AdamW(lm.model.parameters(), lr=lr, weight_decay=0.0)
        schedule = torch.optim.lr_scheduler.LambdaLR(
            optimiser, lambda k: min(1.0, (k + 1) / max(warmup, 1))
        )
        record: dict = {"steps": [], "ABCD": [], "QZRX": [], "ld": [], "loss": []}
        stops, solved, step, loss = list(range(every, max_steps + 1, every)), None, 0, np.nan
        bar = tqdm(total=max_steps, desc="training mcqa-tiny", disable=not progress)
        with core.threads(1):
            while True:
                with torch.no_grad():  # validation (train_epoch leaves eval mode)
                    for symbols in SYMBOLS:
                        scores = lettered_scores(lm, validation, symbols)
                        record[symbols].append(accuracy(scores, validation))
                        if symbols == "ABCD":
                            record["ld"].append(logit_difference(scores, validation))
                record["steps"].append(step)
                record["loss"].append(float(loss))
                if solved is None and record["ABCD"][-1] >= CRITERION:
                    solved, stops = step, post_solve_steps(step, every, after)
                    bar.total = stops[-1]
                if not stops:
                    break
                n, step = stops[0] - step, stops.pop(0)
                loss = core.train_epoch(
                    lm.model,
                    optimiser,
                    lambda n=n: (llm.encode(lm, tiny_corpus(data, batch_size)) for _ in range(n)),
                    lambda model, batch: llm.cue_loss(model, batch, cue),
                    clip=1.0,
                    schedule=schedule,
                )
                bar.update(n)
        bar.close()
        state = {k: v.detach().cpu().clone() for k, v in lm.model.state_dict().items()}
        return {"state": state, "record": record, "solved": -1 if solved is None else solved}

    stored = core.cached("mcqa-tiny", key, build)
    lm = llm.tiny_model(tiny_vocabulary(), config, seed=seed, name="mcqa-tiny")
    lm.model.load_state_dict(stored["state"])
    lm = llm.LM(lm.name, lm.model.to(device).eval(), lm.tokenizer, tiny=True)
    record, solved = stored["record"], int(stored["solved"])
    return TinyTraining(
        lm,
        list(record["steps"]),
        {s: list(record[s]) for s in SYMBOLS},
        list(record["ld"]),
        list(record["loss"]),
        None if solved < 0 else solved,
        [] if solved < 0 else post_solve_steps(solved, every, after),
    )


def trend(steps: Sequence[int], values: Sequence[float]) -> tuple[float, float]:
    """Kendall's tau of ``values`` against ``steps`` and its one-sided p-value (a rising
    trend): a test of the trend that one inversion does not overturn."""
    from scipy.stats import kendalltau

    if len(values) < 3:
        return float("nan"), float("nan")
    result = kendalltau(steps, values, alternative="greater")
    return float(result.statistic), float(result.pvalue)


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_items": Param(
        32, "Colors and capital-city items scored on SmolLM2", low=4, high=len(CAPITALS)
    ),
    "template": Param(
        "official", "SmolLM2's prompt for projection and patching", choices=TEMPLATES
    ),
    "n_pairs": Param(6, "patching pairs for SmolLM2", low=2, high=len(OBJECTS)),
    "smol_positions": Param(2, "last positions of the prompt patched in SmolLM2", low=1, high=24),
    "tiny_layers": Param(8, "layers of the tiny transformer", low=2, high=16),
    "tiny_d_model": Param(64, "width of the tiny transformer (4 heads)", low=16, high=512),
    "tiny_max_steps": Param(4000, "most training steps to reach the criterion", low=10),
    "tiny_every": Param(50, "steps between validation checks", low=1, high=1000),
    "tiny_after": Param(5, "log-spaced checkpoints after the task is solved", low=2, high=12),
    "tiny_batch": Param(8, "3-shot prompts per training step", low=1, high=512),
    "tiny_lr": Param(0.001, "AdamW learning rate (no weight decay)", low=1e-5, high=0.1),
    "tiny_warmup": Param(100, "steps of linear learning-rate warm-up", low=0, high=10000),
    "n_eval": Param(200, "held-out Colors prompts the tiny model is scored on", low=8, high=5000),
    "n_tiny_pairs": Param(
        64, "patching pairs for the tiny model (half select heads)", low=4, high=5000
    ),
    "seed": Param(0, "random seed (data, initialisation, pairs)", low=0),
    "device": Param("auto", "torch device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n_items": 6,
    "n_pairs": 2,
    "smol_positions": 2,
    "tiny_d_model": 32,
    "tiny_max_steps": 40,
    "tiny_warmup": 5,
    "tiny_every": 10,
    "tiny_after": 2,
    "n_eval": 8,
    "n_tiny_pairs": 4,
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

# ---------------------------------------------------------------------------------
# The chapter's claims: the numbers that decide them, fixed before the run
# ---------------------------------------------------------------------------------

SELECTING_EFFECT = 0.5
"""A layer selects the symbol if patching its attention moves the prediction by at
least this share of the source prompt's own effect."""

READABLE = 0.9
"""Accuracy at which the symbol counts as readable in vocabulary space."""

LAST_LAYERS = 2
"""SmolLM2's output, for the no-separation claim: its last two layers."""

CLAIMS: dict[str, ClaimSpec] = {
    # SmolLM2 has the answer (cloze) but fails the format (chance is 0.25) in the
    # official template; the bare template is reported beside it.
    "smollm2-format": ClaimSpec(
        "A model can have the answer (cloze) and still fail formatted MCQA; the "
        "Colors task, whose answer is in the context, exposes it",
        paper="a synthetic task with the answer in the context disentangles "
        "sources of error and pinpoints whether a model has learned "
        "formatted MCQA",
        rule={
            "Colors cloze": Bound(ge=0.9),
            "Colors A/B/C/D, official template": Bound(le=0.4),
        },
        control="the same items scored as cloze (no symbols), and chance (0.25)",
    ),
    # Its separation of the correct symbol (nats) at the output: each of its last layers.
    "smollm2-no-separation": ClaimSpec(
        "A model that fails formatted MCQA does not separate the answer symbols "
        "in vocabulary space at its output",
        paper="poorly performing models cannot separate the answer symbols in vocabulary space",
        rule=Bound(lt=0.5),
        control="a fixed threshold of 0.5 nats (no control run)",
    ),
    # The tiny model learned the task: A/B/C/D accuracy on held-out prompts.
    "tiny-learned": ClaimSpec(
        "The tiny transformer has learned formatted MCQA: the claims below study "
        "a model that succeeds",
        kind="setup",
        paper="the paper analyses models that perform well on formatted MCQA",
        rule=Bound(ge=0.9),
        control="a fixed threshold of 0.9 (chance is 0.25)",
    ),
    # It answers with the held-out symbols Q/Z/R/X well above chance (0.25).
    "tiny-formats": ClaimSpec(
        "A model that has learned formatted MCQA answers with symbols it never saw in training",
        paper="models adjust to alternative symbols (Q/Z/R/X), some after first promoting A/B/C/D",
        rule=Bound(ge=0.5),
        control="a fixed threshold of 0.5 (chance is 0.25; no control run)",
        rests_on=("tiny-learned",),
        gap=Gap(
            "Trained from scratch, the tiny model meets Q/Z/R/X only at test time: their "
            "rows of the embedding and the unembedding are the random vectors they "
            "started as (a token that is never an input gets no gradient as one, and as "
            "an output only the softmax's push down), so nothing ties them to the option "
            "they label. Answering in them needs a mechanism that copies whichever symbol "
            "precedes the chosen option, and in our study before this run none formed on "
            "two cores: with other letters in one training prompt in five and every "
            "letter a frozen random vector shared by the embedding and the unembedding "
            "(so that a copy would carry over), the model did not learn to answer in the "
            "other letters within 4,000 steps after solving A/B/C/D (seeds 0 and 1), and "
            "with those letters from the start it stayed at chance even on A/B/C/D for "
            "3,000 steps. What would show it: a pretrained model that reads Q/Z/R/X as "
            "ordinary letters (Olmo-7B in the paper), or a copy mechanism trained far "
            "longer than a CPU budget allows.",
        ),
    ),
    # On Q/Z/R/X prompts, some layer before the output puts more probability on A/B/C/D
    # than on Q/Z/R/X, and the output puts more on Q/Z/R/X (log-ratio, nats).
    "tiny-promote-then-switch": ClaimSpec(
        "On prompts with other symbols, the model first promotes A/B/C/D, then "
        "switches to the prompt's symbols",
        paper="Olmo-7B first promotes A/B/C/D, then the Q/Z/R/X of the prompt",
        rule={
            "layers before the output where A/B/C/D lead": Bound(ge=1),
            "log P(Q/Z/R/X) - log P(A/B/C/D) at the output": Bound(gt=0),
        },
        control="the prompt's own symbols' probability, layer by layer",
        rests_on=("tiny-learned",),
        gap=Gap(
            "It needs the model to answer in Q/Z/R/X at the output (the tiny-formats "
            "gap): a model that has only ever answered in A/B/C/D can promote them in its "
            "middle layers, the first half of the paper's finding, but has no mechanism "
            "to switch to the held-out letters. What would show it: as for tiny-formats, "
            "a pretrained model that succeeds at the Q/Z/R/X format.",
        ),
    ),
    # From the paper's 1-3 layers of about 30: at least one and at most a quarter of the
    # layers (rounded up) have an attention effect of 0.5 or more; no MLP reaches 0.5.
    "tiny-localisation": ClaimSpec(
        "Selecting the answer symbol is causally attributed to a few layers, "
        "specifically their attention",
        paper="1-3 layers' attention (of 32 in Olmo-7B); patching MLPs matters less",
        rule={
            "selecting layers": Bound(ge=1),
            "selecting layers / ceil(layers / 4)": Bound(le=1),
            "largest MLP effect": Bound(lt=0.5),
        },
        control="the unpatched base prompt (effect 0) against the source prompt (1)",
        rests_on=("tiny-learned",),
        gap=Gap(
            "The three claims need a layer whose attention alone carries at least half of "
            "the effect of the swap. In Olmo-7B, pretrained on trillions of tokens with "
            "weight decay, a few of 32 layers do. Our tiny model trains without weight "
            "decay (asked for the logit-difference study) and stops a few hundred steps "
            "after it solves the task; we think nothing then pushes it to concentrate the "
            "mechanism, so heads in several layers each carry part of the selection and "
            "patching one layer moves only its part. Our earlier design (always three "
            "shots, Q/Z/R/X in one training prompt in five, weight decay 0.01, a fixed "
            "2,000 steps) had one selecting layer at seed 0; which of these differences "
            "matters we have not separated. What would show it: these claims over a sweep "
            "of seeds, for a model trained with weight decay and far past its criterion "
            "(a GPU run), or a pretrained model that succeeds at the format.",
            after_run=True,
        ),
    ),
    # Some layer selects, and none of those that do is the first or the last.
    "tiny-middle-layers": ClaimSpec(
        "The layers that select the symbol are middle layers",
        paper="the selecting layers sit in the middle (layer 24 of 32 in "
        "Olmo-7B); later layers amplify the selected symbol",
        rule={"selecting layers": Bound(ge=1), "of them first or last": Bound(le=0)},
        control="the unpatched base prompt (effect 0) against the source prompt (1)",
        rests_on=("tiny-learned",),
        gap=Gap(
            "The three claims need a layer whose attention alone carries at least half of "
            "the effect of the swap. In Olmo-7B, pretrained on trillions of tokens with "
            "weight decay, a few of 32 layers do. Our tiny model trains without weight "
            "decay (asked for the logit-difference study) and stops a few hundred steps "
            "after it solves the task; we think nothing then pushes it to concentrate the "
            "mechanism, so heads in several layers each carry part of the selection and "
            "patching one layer moves only its part. Our earlier design (always three "
            "shots, Q/Z/R/X in one training prompt in five, weight decay 0.01, a fixed "
            "2,000 steps) had one selecting layer at seed 0; which of these differences "
            "matters we have not separated. What would show it: these claims over a sweep "
            "of seeds, for a model trained with weight decay and far past its criterion "
            "(a GPU run), or a pretrained model that succeeds at the format.",
            after_run=True,
        ),
    ),
    # The top two heads, chosen on one half of the pairs, carry at least half of all heads'
    # effect on the other half.
    "tiny-sparse-heads": ClaimSpec(
        "The symbol-promoting effect is carried by a sparse set of attention heads",
        paper="a sparse set of heads with unique roles (a few of the 1,024 in Olmo-7B)",
        rule=Bound(ge=0.5),
        control="all heads of all layers patched together, on held-out pairs",
        rests_on=("tiny-learned",),
    ),
    # The correct symbol is readable (ranked first for 90% of prompts) no earlier than the
    # first selecting layer, and the last layer separates it at least as much as that one.
    "tiny-projection": ClaimSpec(
        "The answer symbol becomes predictable in vocabulary space from the "
        "selecting layer on, and the last layer keeps or raises its lead",
        paper="the predicted symbol's probability in vocabulary space rises from "
        "the selecting layers on, and subsequent layers increase it",
        rule={
            "first readable - first selecting layer": Bound(ge=0),
            "separation: last layer - first selecting layer": Bound(ge=0),
        },
        control="the first selecting layer, from patching (no control run)",
        rests_on=("tiny-learned",),
        gap=Gap(
            "The three claims need a layer whose attention alone carries at least half of "
            "the effect of the swap. In Olmo-7B, pretrained on trillions of tokens with "
            "weight decay, a few of 32 layers do. Our tiny model trains without weight "
            "decay (asked for the logit-difference study) and stops a few hundred steps "
            "after it solves the task; we think nothing then pushes it to concentrate the "
            "mechanism, so heads in several layers each carry part of the selection and "
            "patching one layer moves only its part. Our earlier design (always three "
            "shots, Q/Z/R/X in one training prompt in five, weight decay 0.01, a fixed "
            "2,000 steps) had one selecting layer at seed 0; which of these differences "
            "matters we have not separated. What would show it: these claims over a sweep "
            "of seeds, for a model trained with weight decay and far past its criterion "
            "(a GPU run), or a pretrained model that succeeds at the format.",
            after_run=True,
        ),
    ),
    # A rising trend of the logit difference over the log-spaced checkpoints from the
    # solving step on: Kendall's tau against the step, one-sided p-value (NaN fails).
    "tiny-logit-difference-grows": ClaimSpec(
        "The logit difference between answer symbols keeps growing over training",
        paper="logit differences between answer choice tokens continue to grow "
        "over training (Olmo-7B checkpoints)",
        rule=Bound(le=0.05),
        control="no trend (Kendall's test against the step, one-sided)",
        rests_on=("tiny-learned",),
        gap=Gap(
            "Kendall's test on six checkpoints has little power: a one-sided p of at most "
            "0.05 allows at most two of the 15 pairs out of order (tau of at least 0.73), "
            "and at a constant learning rate the logit difference moves up and down "
            "between nearby checkpoints with the noise of the last steps. The paper "
            "follows Olmo-7B over its whole pretraining, orders of magnitude more steps. "
            "What would show it: more log-spaced checkpoints (tiny_after of 8 or more, "
            "longer than our budget), or a decaying learning rate.",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against,
and the gaps declared for the tiny model's claims (two before the run, four after)."""


# ---------------------------------------------------------------------------------
# Figures
# ---------------------------------------------------------------------------------


def accuracy_figure(accuracy: dict[tuple[str, str], float], title: str) -> go.Figure:
    """Accuracy per (task, format), grouped by task, with chance (4 options) marked."""
    import plotly.graph_objects as go

    fig = go.Figure()
    for task in dict.fromkeys(t for t, _ in accuracy):
        fmts = [f for t, f in accuracy if t == task]
        fig.add_bar(
            x=fmts,
            y=[accuracy[task, f] for f in fmts],
            name=task,
            text=[f"{accuracy[task, f]:.2f}" for f in fmts],
        )
    fig.add_hline(y=0.25, line_dash="dot", annotation_text="chance (4 options)")
    fig.update_layout(title=title, yaxis_title="accuracy", yaxis_range=[0, 1.05], barmode="group")
    return fig


def separation_figure(
    lines: dict[str, np.ndarray], shares: dict[str, np.ndarray], title: str
) -> go.Figure:
    """Per layer, separations (nats, left axis) and probabilities or accuracies (right
    axis, dotted and dashed)."""
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for name, y in lines.items():
        fig.add_scatter(x=list(range(len(y))), y=y, name=name, mode="lines+markers")
    for (name, y), dash in zip(shares.items(), ("dot", "dash", "dashdot")):
        fig.add_scatter(x=list(range(len(y))), y=y, name=name, line_dash=dash, secondary_y=True)
    fig.update_layout(title=title, xaxis_title="layer", xaxis_dtick=1)
    fig.update_yaxes(title_text="separation (nats)", secondary_y=False)
    fig.update_yaxes(title_text="probability / accuracy", range=[0, 1], secondary_y=True)
    return fig


def training_figure(
    steps: Sequence[int],
    lines: dict[str, Sequence[float]],
    right: dict[str, tuple[Sequence[int], Sequence[float]]],
    title: str,
    left_title: str,
    right_title: str,
    left_range: list[float] | None = None,
) -> go.Figure:
    """Curves over training: ``lines`` at ``steps`` on the left axis, ``right`` (each with
    its own steps) dotted on the right axis."""
    from plotly.subplots import make_subplots

    fig = make_subplots(specs=[[{"secondary_y": True}]])
    for name, y in lines.items():
        fig.add_scatter(x=list(steps), y=list(y), name=name, mode="lines+markers")
    for name, (x, y) in right.items():
        fig.add_scatter(x=list(x), y=list(y), name=name, line_dash="dot", secondary_y=True)
    fig.update_layout(title=title, xaxis_title="training step")
    fig.update_yaxes(title_text=left_title, range=left_range, secondary_y=False)
    fig.update_yaxes(title_text=right_title, secondary_y=True)
    return fig


def heads_figure(z: np.ndarray, title: str, **colours: float) -> go.Figure:
    """A ``[layer, head]`` heatmap (red positive, blue negative)."""
    import plotly.graph_objects as go

    fig = go.Figure(
        go.Heatmap(
            z=z,
            x=[f"head {h}" for h in range(z.shape[1])],
            y=list(range(z.shape[0])),
            colorscale="RdBu_r",
            **colours,
        )
    )
    fig.update_layout(title=title, yaxis_title="layer")
    return fig


def layers_figure(effects: dict[str, np.ndarray], title: str) -> go.Figure:
    """The normalised effect of patching each layer, one line per component."""
    n_layers = len(next(iter(effects.values())))
    fig = core.plot(
        list(range(n_layers)),
        effects,
        title=title,
        xlabel="layer",
        ylabel="normalised effect",
        mode="lines+markers",
    )
    return fig.update_layout(xaxis_dtick=1, yaxis_range=[-0.1, 1.1])
