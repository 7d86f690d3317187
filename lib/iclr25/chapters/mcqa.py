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
symbols keep growing over training. The object list is ours (the paper's 108 objects
from the Memory Colors dataset are not available offline), and so is a small
world-knowledge set (capital cities) standing in for MMLU.

Models, patching and projection come from :mod:`iclr25.llm` (pyvene underneath); this
module holds the task, the prompts and the paper's metrics.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import torch

from iclr25 import core, editing, llm
from iclr25.core import Bound, Param

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

#: (noun, verb, its typical colour): the Colors task's objects (our own list).
OBJECTS: tuple[tuple[str, str, str], ...] = (
    ("bananas", "are", "yellow"),
    ("lemons", "are", "yellow"),
    ("sunflowers", "are", "yellow"),
    ("canaries", "are", "yellow"),
    ("butter", "is", "yellow"),
    ("corn", "is", "yellow"),
    ("tomatoes", "are", "red"),
    ("strawberries", "are", "red"),
    ("cherries", "are", "red"),
    ("blood", "is", "red"),
    ("rubies", "are", "red"),
    ("ladybugs", "are", "red"),
    ("grass", "is", "green"),
    ("lettuce", "is", "green"),
    ("cucumbers", "are", "green"),
    ("frogs", "are", "green"),
    ("broccoli", "is", "green"),
    ("limes", "are", "green"),
    ("emeralds", "are", "green"),
    ("leaves", "are", "green"),
    ("the sky", "is", "blue"),
    ("the ocean", "is", "blue"),
    ("sapphires", "are", "blue"),
    ("blueberries", "are", "blue"),
    ("snow", "is", "white"),
    ("milk", "is", "white"),
    ("clouds", "are", "white"),
    ("chalk", "is", "white"),
    ("salt", "is", "white"),
    ("swans", "are", "white"),
    ("coal", "is", "black"),
    ("crows", "are", "black"),
    ("ink", "is", "black"),
    ("tar", "is", "black"),
    ("ravens", "are", "black"),
    ("carrots", "are", "orange"),
    ("pumpkins", "are", "orange"),
    ("tangerines", "are", "orange"),
    ("oranges", "are", "orange"),
    ("chocolate", "is", "brown"),
    ("coffee", "is", "brown"),
    ("cinnamon", "is", "brown"),
    ("acorns", "are", "brown"),
    ("bears", "are", "brown"),
    ("flamingos", "are", "pink"),
    ("piglets", "are", "pink"),
    ("bubblegum", "is", "pink"),
    ("eggplants", "are", "purple"),
    ("lavender", "is", "purple"),
    ("amethysts", "are", "purple"),
    ("plums", "are", "purple"),
    ("elephants", "are", "grey"),
    ("ash", "is", "grey"),
    ("concrete", "is", "grey"),
    ("pebbles", "are", "grey"),
    ("mice", "are", "grey"),
)

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


def lettered(q: Question, symbols: str = "ABCD", solved: bool = False) -> str:
    """The formatted MCQA layout: the question, one ``symbol: option`` line each, ``Answer:``."""
    lines = [q.text, *(f"{s}: {o}" for s, o in zip(symbols, q.options)), "Answer:"]
    return "\n".join(lines) + (f" {symbols[q.answer]}" if solved else "")


def cloze(q: Question, solved: bool = False) -> str:
    """The cloze layout: the question, then the answer's text."""
    return q.text + (f" {q.options[q.answer]}" if solved else "")


def prompt(item: Item, fmt: str = "ABCD") -> str:
    """The 3-shot prompt of ``item`` in a symbol format (``"ABCD"``...) or ``"cloze"``."""

    def show(q: Question, solved: bool) -> str:
        return cloze(q, solved) if fmt == "cloze" else lettered(q, fmt, solved)

    return "\n\n".join([*(show(q, True) for q in item.shots), show(item.query, False)])


# ---------------------------------------------------------------------------------
# Scores and the paper's metrics
# ---------------------------------------------------------------------------------


def symbol_tokens(lm: llm.LM, symbols: str) -> list[int]:
    """The token of each answer symbol as the model would write it after ``Answer:``."""
    return [lm.token_id(" " + s) for s in symbols]


def answers(items: Sequence[Item]) -> np.ndarray:
    return np.array([item.query.answer for item in items])


def lettered_scores(lm: llm.LM, items: Sequence[Item], symbols: str = "ABCD") -> torch.Tensor:
    """Enumerated scoring: the next-token logits of the answer symbols, ``[item, symbol]``."""
    logits = llm.next_token_logits(lm, [prompt(item, symbols) for item in items])
    return logits[:, symbol_tokens(lm, symbols)]


def cloze_scores(lm: llm.LM, items: Sequence[Item]) -> torch.Tensor:
    """Cloze scoring: ``log P(option text | question)``, ``[item, option]``."""
    return llm.score_continuations(
        lm,
        [prompt(item, "cloze") for item in items],
        [[" " + o for o in item.query.options] for item in items],
    )


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

    @property
    def effect(self) -> np.ndarray:
        """Normalised effect of each cell, ``[layer, column]``."""
        return normalised_effect(self.sweep.patched, self.sweep.base, self.sweep.source, self.pairs)

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


def patching(
    lm: llm.LM,
    pairs: Sequence[tuple[Item, Item]],
    component: str,
    *,
    symbols: str = "ABCD",
    positions: Sequence[int] = (-1,),
) -> Patching:
    """Patch ``component`` cell by cell from each source prompt into its base prompt."""
    base = [prompt(b, symbols) for b, _ in pairs]
    sweep = llm.patch_sweep(
        lm,
        base,
        [prompt(s, symbols) for _, s in pairs],
        component,
        symbol_tokens(lm, symbols),
        positions=positions,
    )
    if component == "head":
        columns = [f"head {h}" for h in sweep.columns]
    else:
        ids = lm.tokens(base[0])
        columns = [f"{p} {lm.tokenizer.decode([ids[p]])!r}" for p in sweep.columns]
    return Patching(lm.name, sweep, list(pairs), columns)


def patching_figure(
    results: dict[str, Patching], key: str, cell: tuple[int, int] | None = None
) -> go.Figure:
    """Heatmap of a sweep's normalised effect and, for one cell (default: the strongest),
    the symbol probabilities before and after patching it."""
    from plotly.subplots import make_subplots

    result = results[key]
    effect = result.effect
    row, column = cell if cell is not None else np.unravel_index(np.nanargmax(effect), effect.shape)
    layers = result.sweep.layers
    text = [
        [
            f"layer {layers[r]}, {result.columns[c]}<br>effect {effect[r, c]:.2f}<br>"
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
            "normalised effect of patching one cell (x: position and its token, or head)",
            "symbol probabilities at the marked cell",
        ),
    )
    fig.add_heatmap(
        z=effect,
        x=result.columns,
        y=layers,
        zmin=-1,
        zmax=1,
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

ALTERNATIVE_SHARE = 0.1
"""Share of training prompts in Q/Z/R/X; the others are in A/B/C/D. Unusual symbols are
rare in a real corpus too."""


def tiny_vocabulary() -> list[str]:
    """Every word a Colors prompt can hold, in either symbol set."""
    template = [
        f"{noun[0].upper() + noun[1:]} {verb} . What color {verb} {noun} ? : Answer"
        for noun, verb, _ in OBJECTS
    ]
    return llm.words([*template, " ".join(COLORS), " ".join("".join(SYMBOLS))])


def tiny_corpus(rng: np.random.Generator, n: int) -> list[str]:
    """``n`` solved 3-shot Colors prompts with random colours, mostly in A/B/C/D."""
    texts = []
    for item in colours_items(n, rng, typical=False):
        symbols = SYMBOLS[1] if rng.random() < ALTERNATIVE_SHARE else SYMBOLS[0]
        texts.append(f"{prompt(item, symbols)} {symbols[item.query.answer]}")
    return texts


def train_tiny(
    *,
    layers: int,
    d_model: int,
    steps: int,
    checkpoints: int,
    batch_size: int,
    lr: float,
    seed: int,
    threads: int = 1,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> llm.TinyRun:
    """Train the chapter's tiny transformer on :func:`tiny_corpus` (cached, see
    :func:`iclr25.llm.train_tiny`); the loss is on the symbol after each ``Answer:``.
    One CPU thread, as the book runs two chapters at a time on two cores."""
    corpus = {
        "generator": "mcqa.tiny_corpus",
        "objects": len(OBJECTS),
        "colors": len(COLORS),
        "shots": N_SHOTS,
        "symbols": SYMBOLS,
        "alternative_share": ALTERNATIVE_SHARE,
        "version": 1,
    }
    config = llm.TinyConfig(
        n_layers=layers, n_heads=4, d_model=d_model, d_mlp=4 * d_model, context=128
    )
    return llm.train_tiny(
        "mcqa-tiny",
        tiny_vocabulary(),
        tiny_corpus,
        data=corpus,
        config=config,
        steps=steps,
        checkpoints=checkpoints,
        batch_size=batch_size,
        lr=lr,
        loss_after="Answer:",
        seed=seed,
        threads=threads,
        device=device,
        progress=progress,
    )


# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_items": Param(
        32, "Colors and capital-city items scored on SmolLM2", low=4, high=len(CAPITALS)
    ),
    "n_pairs": Param(6, "patching pairs for SmolLM2", low=2, high=len(OBJECTS)),
    "smol_positions": Param(2, "last positions of the prompt patched in SmolLM2", low=1, high=24),
    "tiny_layers": Param(8, "layers of the tiny transformer", low=2, high=16),
    "tiny_d_model": Param(64, "width of the tiny transformer (4 heads)", low=16, high=512),
    "tiny_steps": Param(2000, "training steps (a multiple of tiny_checkpoints)", low=10),
    "tiny_checkpoints": Param(10, "checkpoints kept along training", low=2, high=100),
    "tiny_batch": Param(8, "3-shot prompts per training step", low=1, high=512),
    "tiny_lr": Param(0.001, "AdamW learning rate", low=1e-5, high=0.1),
    "n_eval": Param(200, "held-out Colors prompts the tiny model is scored on", low=8, high=5000),
    "n_tiny_pairs": Param(64, "patching pairs for the tiny model", low=2, high=5000),
    "seed": Param(0, "random seed (data, initialisation, pairs)", low=0),
    "device": Param("auto", "torch device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n_items": 6,
    "n_pairs": 2,
    "smol_positions": 2,
    "tiny_d_model": 32,
    "tiny_steps": 40,
    "tiny_checkpoints": 4,
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
"""Accuracy at which the symbol counts as readable in vocabulary space, and at which
a checkpoint counts as having solved the task."""

BOUNDS = {
    # SmolLM2 has the answer (cloze) but fails the format (chance is 0.25).
    "smollm2-format": {"Colors cloze": Bound(ge=0.9), "Colors A/B/C/D": Bound(le=0.4)},
    # Its separation of the correct symbol (nats), at every layer.
    "smollm2-no-separation": Bound(lt=0.5),
    # The tiny model learned the task: A/B/C/D accuracy on held-out prompts.
    "tiny-learned": Bound(ge=0.9),
    # From the paper's 1-3 layers of about 30: at least one and at most a quarter of the
    # layers (rounded up) have an attention effect of 0.5 or more; no MLP reaches 0.5.
    "tiny-localisation": {
        "selecting layers": Bound(ge=1),
        "selecting layers / ceil(layers / 4)": Bound(le=1),
        "largest MLP effect": Bound(lt=0.5),
    },
    # Some layer selects, and none of those that do is the first or the last.
    "tiny-middle-layers": {"selecting layers": Bound(ge=1), "of them first or last": Bound(le=0)},
    # The top two heads carry at least half of all heads' effect.
    "tiny-sparse-heads": Bound(ge=0.5),
    # The correct symbol is readable (ranked first for 90% of prompts) no earlier than the
    # first selecting layer, and each layer from there on does not lower its separation.
    "tiny-projection": {
        "first readable - first selecting layer": Bound(ge=0),
        "change of separation from the selecting layer on": Bound(ge=0),
    },
    # Spearman's rho of step and logit difference over the checkpoints from the first with
    # accuracy 0.9 on (NaN, failing, with fewer than three). A rank correlation of exactly
    # 0.8 comes back as 0.7999...: the bound allows for that rounding.
    "tiny-logit-difference-grows": Bound(ge=0.8 - 1e-12),
}

KNOWN_GAPS = {
    "smollm2-no-separation": (
        "SmolLM2-135M-Instruct is not the uniformly failing model the paper describes: it has"
        " learned from the shots that a symbol comes next, and in its late middle layers the "
        "projection ranks the correct symbol first more often than chance, a partial binding "
        "that its last layers erase before the output. The bound asks for no separation at "
        "every layer, so that partial binding misses it, while the output, where SmolLM2 "
        "fails, agrees with the paper. A model that fails the format at every depth (the "
        "paper's poorly performing checkpoints, or a base model of this size never tuned on "
        "instructions) would test the claim as stated."
    ),
}


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
