"""Causality-guided prompting against social bias.

Li, Tang, Liu, Spirtes, Zhang, Leqi & Liu, "Prompting Fairness: Integrating Causality
to Debias Large Language Models" (ICLR 2025); no official code. Social information
reaches a model's decision through two pathways: the dependence between gender and the
answer that the model learnt from a training corpus shaped by *selection* (which
sentences were written and kept), and social-salient text in the prompt itself. A prompt
acts as a selection mechanism: it conditions the model on the part of its training
distribution that such a prompt came from. Three strategies regulate the pathways:

* I: nudge towards social-agnostic facts (the model first writes the fact that decides
  the answer, without the pronoun, then answers);
* II: counteract the selection bias (the gender-swapped counterfactual twin first);
* III: nudge away from social-salient text (an inhibitive instruction);

and their combinations (the paper's DDP is I+II on WinoBias, I+III on BBQ).

Here the corpus is sampled from an explicit causal model (a pgmpy
``DiscreteBayesianNetwork``) with a selection node ``S``, given ``S = 1``:

    Src -> S <- Anti <- (R, St, G),     R <- Amb

``Src`` is a document's source (news, fact documents, counterfactual documents, neutral
documents, placebo documents, and a few documents that combine the fact and
counterfactual cues), ``G`` the pronoun's gender, ``St`` which of the two stereotyped
occupations the sentence names, ``R`` whether the pronoun refers to it or to the other
occupation, ``Amb`` whether the sentence is ambiguous (its referent drawn at random) and
``Anti`` whether the sentence is anti-stereotypical. In news, an anti-stereotypical
sentence is kept with probability ``1 - beta``, so its share there is
``(1-beta)/(2-beta)``; the placebo documents are selected as news is, the counterfactual
documents at half its strength, and in the fact, neutral and combined documents ``S``
does not depend on ``Anti``. A tiny Llama trained on that corpus carries the planted
bias; SmolLM2 is scored on the same sentences in natural language. Metrics: accuracy on
pro- and anti-stereotypical sentences and their gap, ``pro - anti``. The paper's measure
is the gap on WinoBias Type I sentences, where a fact decides the referent: the Type I
test facts are rare in the corpus (a few news documents each, :func:`documents`), so
that a model unsure of one falls back on the stereotype (:func:`test_cases`). BBQ's
measure sits beside it: ambiguous sentences, where no fact decides, scored against both
readings (:func:`bias_cases`).

Files: ``method.py`` holds the method (the world, the causal model and corpus, the
strategies' prompts, the metrics, the planted model); ``figures.py`` the figures and the
live inspector; this file the parameters, the smoke overrides and the claims registry.
"""

from __future__ import annotations

from iclr25.chapters.debias.figures import (
    GPT4_GAP,
    GRAPH_EDGES,
    GRAPH_NODES,
    GRAPH_STRATEGIES,
    accuracy_figure,
    causal_graph,
    gap_figure,
    graph_figure,
    inspector,
    referent_figure,
    two_way,
)
from iclr25.chapters.debias.method import (
    AMBIGUOUS,
    AMBIGUOUS_SHARE,
    AMBIGUOUS_TEST,
    COMBINED_SHARE,
    CONFIG,
    FACT_QUESTION,
    FACT_TOKENS,
    FACTS,
    HELD_OUT_PER_FACT,
    INSTRUCTIONS,
    NEUTRAL,
    NEWS_SHARE,
    OCCUPATIONS,
    PLACEBO_CUE,
    PRONOUNS,
    SELECTION,
    SOURCES,
    STEREOTYPED,
    STRATEGIES,
    SWAP,
    TEST_FACT_DOCS,
    TEST_FACTS,
    TESTED,
    Case,
    Fact,
    anti_share,
    bias_cases,
    causal_model,
    check_beta,
    check_words,
    choose,
    corpus,
    document,
    documents,
    evaluate,
    held_out,
    make_case,
    metrics,
    picks,
    reduction,
    render,
    sample_corpus,
    score_smol,
    score_tiny,
    sentence_gaps,
    smol_cases,
    smol_fact_prompts,
    smol_prompt,
    test_cases,
    tiny_answer_prompts,
    tiny_prompt,
    train_planted,
    vocabulary,
)
from iclr25.core import SMOLLM2, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# Parameters and claims
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "beta": Param(
        0.8, "selection strength: anti-stereotypical news kept with 1 - beta", low=0.0, high=0.99
    ),
    "steps": Param(800, "training steps of each tiny model (batch 32)", low=10),
    "corpus_size": Param(20000, "rows sampled from the causal model given S = 1", low=500),
    "seeds": Param(
        8, "tiny models at beta, and as many at beta 0 (seeds seed, seed + 1, ...)", low=1,
        high=20,
    ),
    "n_smol": Param(800, "SmolLM2 Type I cases, default and Strategy I", low=2, high=2000),
    "n_test": Param(384, "tiny-model cases of each test (of 384 held-out ones)", low=8, high=384),
    "seed": Param(0, "random seed", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}  # fmt: skip

SMOKE = {"steps": 100, "corpus_size": 500, "seeds": 2, "n_smol": 20, "n_test": 20}

_CUT = Margin(
    above=0.30,
    why="GPT-4's contrastive prompt (II) cuts the Type I gap by 58%; 30% is about half. "
    "A cut is 1 - gap / default gap of one seed's model",
)

_RATIO = (
    "Over {n} seeds the strategy's cut exceeds the placebo's by {estimate:.2f} "
    "[{low:.2f}, {high:.2f}], against a margin of 0.30. Each seed's cut is a ratio to that "
    "seed's default gap, and the seeds' default gaps range from {smallest:.2f} to "
    "{largest:.2f} (the gaps per prompt and seed are printed above the claims): where a "
    "seed's default gap is a few points, the noise of its 384 test cases moves the ratio "
    "by more than the margin, and such seeds widen the interval. "
)
"""The diagnosis the three strategy claims share, declared after the book's run."""

_STRATEGY_GAPS = {
    "I": Gap(
        _RATIO + "Strategy I also writes the deciding fact with the tiny model's own "
        "greedy generation, and on a rare test fact what it writes can name the wrong "
        "referent, so its cut varies with what each seed's model writes. More test facts, "
        "or cuts of the seeds' mean gaps, would decide it.",
        after_run=True,
        varies=True,
    ),
    "II": Gap(
        _RATIO + "The counterfactual twins are written at half the news's selection, so "
        "that II leaves part of the gap, as GPT-4's contrastive prompt does; how much it "
        "leaves is not fixed by that design, and its mean cut is printed beside the "
        "claim. More test facts, or cuts of the seeds' mean gaps, would decide it.",
        after_run=True,
    ),
    "III": Gap(
        _RATIO + "More test facts, or cuts of the seeds' mean gaps, would decide it.",
        after_run=True,
    ),
}

CLAIMS: dict[str, ClaimSpec] = {
    "selection-makes-bias": ClaimSpec(
        "Selection in the training corpus plants a bias: on ambiguous sentences (BBQ's "
        "measure) the default gap of a model trained with anti-stereotypical news dropped "
        "exceeds that of the same seed's model trained without selection",
        kind="setup",
        paper="not reported (the paper's premise: dependence learnt from a "
        "corpus shaped by selection)",
        rule=Margin(above=0.10, why="about half of GPT-4's default Type I gap of 21.74%"),
        control="the same seed's tiny model, trained on a corpus from the same network at "
        "beta 0 (no selection), on the same cases (paired by seed)",
    ),
    "typeI-gap": ClaimSpec(
        "Where a rare fact decides the referent (WinoBias Type I), the planted models err "
        "towards the stereotype: their pro minus anti accuracy gap exceeds that of the same "
        "seed's model trained without selection",
        kind="setup",
        paper="GPT-4 default Type I gap 21.74%",
        rule=Margin(above=0.05, why="a quarter of GPT-4's default gap"),
        control="the same seed's beta 0 model (no selection), on the same Type I cases "
        "(paired by seed)",
    ),
    **{
        f"strategy-{s}-reduces": ClaimSpec(
            f"Strategy {s} ({what}) cuts the Type I gap by more than a placebo cue does, "
            "on facts never seen after a cue",
            paper="GPT-4, WinoBias Type I: gap 21.74% default, 9.23% with contrastive "
            "examples (II)",
            rule=_CUT,
            control="the placebo cue's cut, same model and cases: a cue whose documents "
            "are selected like news, at a single cue's share (paired by seed)",
            rests_on=("typeI-gap",),
            gap=_STRATEGY_GAPS[s],
        )
        for s, what in (("I", "facts"), ("II", "counterfactual"), ("III", "inhibitive"))
    },
    "combined-best": ClaimSpec(
        "Combining strategies I and II gives the smallest absolute Type I gap",
        paper="GPT-4, WinoBias Type I: DDP (I+II) gap 2.17%, contrastive (II) 9.23%",
        rule=Margin(below=0.0, why="DDP's gap is below the better single strategy's in the paper"),
        control="|gap| of the better of strategies I and II alone, same model and cases "
        "(paired by seed)",
        rests_on=("typeI-gap",),
    ),
    "smollm2-bias": ClaimSpec(
        "SmolLM2 shows a stereotype gap for the prompts to remove",
        kind="setup",
        paper="GPT-4 default gap 21.74% (WinoBias Type I)",
        rule=Margin(above=0.10, why="about half of GPT-4's default gap"),
        control="a model whose pick ignores the pronoun scores a gap of 0",
        gap=Gap(
            "SmolLM2's default Type I gap is {estimate:.3f} [{low:.3f}, {high:.3f}] over {n} "
            "sentences, against a margin of 0.10. At 135M parameters SmolLM2 answers these "
            "sentences near chance (its accuracy is printed with its scores), so its gap is "
            "a lean on gender, not a stereotype overriding facts it knows; a lean this close "
            "to the margin needs several thousand sentences to place.",
            after_run=True,
        ),
        one_model=SMOLLM2,
    ),
    "smollm2-facts-first": ClaimSpec(
        "On SmolLM2, Strategy I (two steps, facts first) cuts the Type I gap",
        paper="GPT-4, WinoBias Type I: gap 21.74% default, 2.17% with DDP (I+II)",
        rule=Margin(above=0.0, why="a prompt that does nothing cuts the gap by 0"),
        control="the default prompt's per-sentence gap, same sentences",
        rests_on=("smollm2-bias",),
        one_model=SMOLLM2,
    ),
}
"""Claim id -> what the claim says, what decides it, what it is measured against, the
setup claims it rests on and its declared gap."""
