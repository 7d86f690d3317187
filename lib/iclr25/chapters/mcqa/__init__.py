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
official repository, shipped in this package); a small world-knowledge set (capital
cities) stands in for MMLU.

Models come from :mod:`iclr25.llm`; activation patching and vocabulary projection,
through pyvene, are this chapter's own.

Files:

* ``task.py`` -- the Colors and capital-city items (the Memory Colors objects,
  ``memory_colors.csv`` beside it), the questions and the prompt formats;
* ``method.py`` -- enumerated and cloze scoring, the paper's metrics (separation, the
  normalised effect), the patching sweeps, and the tiny transformer and its training;
* ``interventions.py`` -- activation patching (:func:`patch`, :func:`patch_sweep`) and
  vocabulary projection (:func:`vocab_projection`), through pyvene;
* ``figures.py`` -- the figures and the patching explorer's control.
"""

from iclr25.chapters.mcqa.figures import (
    accuracy_figure,
    heads_figure,
    layers_figure,
    patching_explorer,
    patching_figure,
    separation_figure,
    training_figure,
)
from iclr25.chapters.mcqa.interventions import (
    COMPONENTS,
    Sweep,
    collect,
    head_contributions,
    patch,
    patch_sweep,
    project,
    vocab_projection,
)
from iclr25.chapters.mcqa.method import (
    CRITERION,
    HELD_OUT,
    LETTERS_SHARE,
    OTHER_SHARE,
    OTHER_SYMBOLS,
    HeadShare,
    Patching,
    TinyTraining,
    accuracy,
    answered_pairs,
    answers,
    cached_run,
    cloze_scores,
    full_effect,
    head_share,
    item_logit_difference,
    item_separation,
    lettered_scores,
    logit_difference,
    normalised_effect,
    pair_effects,
    patching,
    patching_pairs,
    post_solve_steps,
    projection_accuracy,
    separation,
    symbol_roles,
    symbol_tokens,
    tiny_corpus,
    tiny_vocabulary,
    train_tiny,
    transition,
    trend,
)
from iclr25.chapters.mcqa.task import (
    CAPITAL_OF,
    CAPITALS,
    COLORS,
    N_SHOTS,
    OBJECTS,
    SYMBOLS,
    TEMPLATES,
    Item,
    Question,
    capital_question,
    capitals_items,
    cloze,
    colour_question,
    colours_items,
    instruction,
    lettered,
    memory_colors,
    prompt,
)
from iclr25.core import SMOLLM2, Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_items": Param(
        32, "Colors and capital-city items scored on SmolLM2", low=4, high=len(CAPITALS)
    ),
    "template": Param("official", "SmolLM2's prompt for projection", choices=TEMPLATES),
    "tiny_layers": Param(8, "layers of the tiny transformer", low=2, high=16),
    "tiny_d_model": Param(64, "width of the tiny transformer (4 heads)", low=16, high=512),
    "tiny_max_steps": Param(4000, "most training steps to reach the criterion", low=10),
    "tiny_every": Param(50, "steps between validation checks", low=1, high=1000),
    "tiny_after": Param(4, "checkpoints after the task is solved, tiny_every apart", low=2),
    "tiny_batch": Param(8, "3-shot prompts per training step", low=1, high=512),
    "tiny_lr": Param(0.001, "AdamW learning rate", low=1e-5, high=0.1),
    "tiny_weight_decay": Param(0.1, "AdamW weight decay (Olmo's)", low=0.0, high=1.0),
    "tiny_warmup": Param(100, "steps of linear learning-rate warm-up", low=0, high=10000),
    "tiny_seeds": Param(3, "tiny models trained (seeds seed, seed + 1, ...)", low=1, high=10),
    "n_eval": Param(200, "held-out Colors prompts the tiny model is scored on", low=8, high=5000),
    "n_tiny_pairs": Param(
        64, "patching pairs for the tiny model (half select heads)", low=4, high=5000
    ),
    "seed": Param(0, "random seed (data, initialisation, pairs)", low=0),
    "device": Param("auto", "torch device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n_items": 6,
    "tiny_d_model": 32,
    "tiny_max_steps": 40,
    "tiny_warmup": 5,
    "tiny_every": 10,
    "tiny_after": 2,
    "tiny_seeds": 2,
    "n_eval": 8,
    "n_tiny_pairs": 8,
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

# ---------------------------------------------------------------------------------
# The chapter's claims: the numbers that decide them, fixed before the run
# ---------------------------------------------------------------------------------

COLORS_OPTIONS = 2
"""The official Colors task's options per question."""

SHOT_ANSWERS = (0, 1, 1)
"""The official order of the shots' answer letters (``--icl_labels ABB``)."""

TRANSITION = (0.1, 0.9)
"""The residual stream's patching effect rises from below the first to above the second
over the layers that select the symbol (the paper's reading of its residual traces)."""

READABLE = 0.9
"""Accuracy at which the symbol counts as readable in vocabulary space."""

LAST_LAYERS = 2
"""SmolLM2's output, for the no-separation claim: its last two layers, fixed in advance."""

TINY_OF_THE_SEED = "the tiny transformer of the chapter's seed"
"""The one trained model whose mechanism the tiny claims describe, as the paper's
describe Olmo-7B's: their items are its prompts and pairs."""

_LEARNED_PAPER = "the paper analyses models that perform well on formatted MCQA"
_LEARNED_RULE = Margin(above=0.9, why="the paper's models answer nearly every Colors item")
"""What both setup claims on the tiny models ask, of one model or of the worst seed's."""

_SLOW_CLIMB = (
    "Weight decay 0.1 at a constant rate pulls the weights back while one training prompt "
    "in twenty asks for other labels and one in four opens with letters, so a model "
    "leaves its plateau (a loss near ln 4) late and climbs slowly: whether it crosses the "
    "criterion within {steps:,} steps, the most the cold budget of the chapter allows, "
    "turns on the seed and the rounding. The criterion, checked on {n_val} validation "
    "prompts, can pass a model a little short of it. What would settle it: the same recipe "
    "trained longer (-p tiny_max_steps=8000 -p tiny_after=20), or a decaying learning rate "
    "as Olmo's."
)

CLAIMS: dict[str, ClaimSpec] = {
    # SmolLM2 copies the stated colour when no symbol is involved (cloze, two options).
    "smollm2-answerable": ClaimSpec(
        "SmolLM2 has the answer of the Colors items: scored as cloze it picks the "
        "colour the prompt states",
        kind="setup",
        paper="the Colors task states the answer in the context, so a model that fails "
        "it has not learned the format",
        rule=Margin(above=0.8, why="near the ceiling a copying task allows; chance is 0.5"),
        control="chance (0.5, two options)",
        one_model=SMOLLM2,
    ),
    # Its A/B/C/D accuracy in the official template and protocol (two options, shots ABB).
    "smollm2-format": ClaimSpec(
        "A model can have the answer (cloze) and still fail formatted MCQA: SmolLM2's "
        "lettered accuracy on the same items stays near chance",
        paper="a synthetic task with the answer in the context disentangles "
        "sources of error and pinpoints whether a model has learned "
        "formatted MCQA",
        rule=Margin(
            below=0.75, why="halfway from chance (0.5) to the items the model answers as cloze"
        ),
        control="chance (0.5, two options), and the same items scored as cloze",
        rests_on=("smollm2-answerable",),
        one_model=SMOLLM2,
    ),
    # Per item, its separation of the correct symbol (nats), averaged over its last two layers.
    "smollm2-no-separation": ClaimSpec(
        "A model that fails formatted MCQA does not separate the answer symbols "
        "in vocabulary space at its output",
        paper="poorly performing models cannot separate the answer symbols in vocabulary space",
        rule=Margin(below=0.5, why="0.5 nats, odds of 1.6 to 1 for the correct symbol"),
        control="no separation (0 nats): the symbols' probabilities equal",
        rests_on=("smollm2-answerable",),
        one_model=SMOLLM2,
    ),
    # The tiny model at seed `seed`, which the single-model claims study, learned the task:
    # its A/B/C/D accuracy on the evaluation prompts.
    "tiny-learned": ClaimSpec(
        "The tiny transformer of the chapter's seed, studied below, has learned formatted "
        "MCQA: the claims on it study a model that succeeds",
        kind="setup",
        paper=_LEARNED_PAPER,
        rule=_LEARNED_RULE,
        control="chance (0.25)",
        gap=Gap(
            "The model at seed {seed} {training}; it answers {estimate:.0%} of the {n} "
            "evaluation prompts in A/B/C/D, an interval [{low:.2f}, {high:.2f}] against the "
            "0.9 it must clear (its answers in Q/Z/R/X on the held-out objects are measured "
            "by tiny-formats). " + _SLOW_CLIMB,
            after_run=True,
            varies=True,
        ),
        one_model=TINY_OF_THE_SEED,
    ),
    # Every tiny model (each seed) learned the task: the worst seed's A/B/C/D accuracy. The
    # claims over seeds rest on it.
    "tiny-learned-seeds": ClaimSpec(
        "Every tiny transformer, at each seed, has learned formatted MCQA: the claims over "
        "seeds study models that succeed",
        kind="setup",
        paper=_LEARNED_PAPER,
        rule=_LEARNED_RULE,
        control="chance (0.25); the worst of the seeds",
        gap=Gap(
            "The worst seed's model (seed {seed}) {training}; it answers {estimate:.0%} of "
            "the {n} evaluation prompts in A/B/C/D, an interval [{low:.2f}, {high:.2f}] "
            "against the 0.9 it must clear. " + _SLOW_CLIMB,
            after_run=True,
        ),
    ),
    # Seed 0 answers in Q/Z/R/X on objects never shown with those labels.
    "tiny-formats": ClaimSpec(
        "A model that has learned formatted MCQA answers with symbols it knows but "
        "rarely saw as labels, on objects it never saw with them",
        paper="models adjust to alternative symbols (Q/Z/R/X), some after first promoting A/B/C/D",
        rule=Margin(above=0.5, why="twice chance (0.25)"),
        control="chance (0.25)",
        rests_on=("tiny-learned",),
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
            "Where tiny-learned holds, the model puts Q/Z/R/X ahead from its first layer on "
            "({measured}): it never passes through A/B/C/D. One training prompt in twenty "
            "asks for these labels, and a small model may learn to read the prompt's own "
            "symbols directly; Olmo-7B saw A/B/C/D as answer labels far more often than "
            "any other symbols, a default to switch away from that ours may lack.",
            after_run=True,
        ),
    ),
    # Residual-stream patching at the last position, each seed: the layers over which the
    # effect rises from < 0.1 to > 0.9, at most ceil(layers / 4) of them (NaN fails).
    "tiny-localisation": ClaimSpec(
        "Selecting the answer symbol is causally attributed to a few layers: the "
        "residual stream's patching effect rises from near 0 to near 1 within them",
        paper="the residual stream's effect rises from 0 to 1 over 1-3 layers (of 32 in Olmo-7B)",
        rule=Bound(le=1),
        control="the unpatched base prompt (effect 0) against the source prompt (1)",
        rests_on=("tiny-learned-seeds",),
        gap=Gap(
            "Where tiny-learned-seeds holds, the residual stream's effect rises over more layers "
            "than the rule allows ({measured}): the selection is spread over the middle "
            "of the model rather than done in one or two of its layers, as in Olmo-7B.",
            after_run=True,
        ),
    ),
    # Seed 0: in the transition layers, attention's effect minus the MLPs', per pair.
    "tiny-attention-not-mlp": ClaimSpec(
        "In the tiny transformer of the chapter's seed, the choice in the selecting layers "
        "is written by attention, not the MLPs",
        paper="patching those layers' attention moves the prediction; their MLPs matter less",
        rule=Margin(above=0.1, why="a tenth of the source prompt's own effect"),
        control="the same layers' MLPs, patched on the same pairs",
        rests_on=("tiny-learned",),
        one_model=TINY_OF_THE_SEED,
    ),
    # Seed 0: the transition's layers are neither the first nor the last.
    "tiny-middle-layers": ClaimSpec(
        "The layers that select the symbol are middle layers",
        paper="the selecting layers sit in the middle (layer 24 of 32 in "
        "Olmo-7B); later layers amplify the selected symbol",
        rule={"transition found": Bound(ge=1), "of its layers first or last": Bound(le=0)},
        control="the unpatched base prompt (effect 0) against the source prompt (1)",
        rests_on=("tiny-learned",),
    ),
    # Each seed: the top two heads, chosen on one half of the pairs, against all heads
    # on the other half; the mean of their shares over the seeds.
    "tiny-sparse-heads": ClaimSpec(
        "The symbol-promoting effect is carried by a sparse set of attention heads",
        paper="a sparse set of heads with unique roles (a few of the 1,024 in Olmo-7B)",
        rule=Margin(above=0.5, why="two heads of 32 carry most of all heads' effect"),
        control="all heads of all layers patched together, on held-out pairs",
        rests_on=("tiny-learned-seeds",),
    ),
    # Seed 0: the correct symbol is readable (ranked first for 90% of prompts) no earlier
    # than the transition's first layer; the last layer separates it at least as much as
    # the transition's last.
    "tiny-projection": ClaimSpec(
        "The answer symbol becomes predictable in vocabulary space from the "
        "selecting layers on, and the last layer keeps or raises its lead",
        paper="the predicted symbol's probability in vocabulary space rises from "
        "the selecting layers on, and subsequent layers increase it",
        rule={
            "first readable - first selecting layer": Bound(ge=0),
            "separation: last layer - last selecting layer": Bound(ge=0),
        },
        control="the selecting layers, from residual patching",
        rests_on=("tiny-learned",),
    ),
    # Seed 0: per validation prompt, the logit difference at the last checkpoint minus
    # at the solving one (nats), paired.
    "tiny-logit-difference-grows": ClaimSpec(
        "In the tiny transformer of the chapter's seed, the logit difference between answer "
        "symbols keeps growing over training",
        paper="logit differences between answer choice tokens continue to grow "
        "over training (Olmo-7B checkpoints)",
        rule=Margin(above=0.0, why="the paper reports the direction of the growth, not a size"),
        control="the same prompts at the solving checkpoint",
        rests_on=("tiny-learned",),
        one_model=TINY_OF_THE_SEED,
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against,
the gap declared before the run, and the one after it."""
