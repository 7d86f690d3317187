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
    Patching,
    TinyTraining,
    accuracy,
    answers,
    cached_run,
    cloze_scores,
    full_effect,
    item_separation,
    lettered_scores,
    logit_difference,
    normalised_effect,
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
from iclr25.core import Bound, ClaimSpec, Gap, Param

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

ONE_LAYER_GAP = Gap(
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
)
"""The gap the three claims that need one selecting layer share."""

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
        gap=ONE_LAYER_GAP,
    ),
    # Some layer selects, and none of those that do is the first or the last.
    "tiny-middle-layers": ClaimSpec(
        "The layers that select the symbol are middle layers",
        paper="the selecting layers sit in the middle (layer 24 of 32 in "
        "Olmo-7B); later layers amplify the selected symbol",
        rule={"selecting layers": Bound(ge=1), "of them first or last": Bound(le=0)},
        control="the unpatched base prompt (effect 0) against the source prompt (1)",
        rests_on=("tiny-learned",),
        gap=ONE_LAYER_GAP,
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
        gap=ONE_LAYER_GAP,
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
