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
documents), ``G`` the pronoun's gender, ``St`` which of the two stereotyped occupations
the sentence names, ``R`` whether the pronoun refers to it or to the other occupation,
``Amb`` whether the sentence is ambiguous (its referent drawn at random) and ``Anti``
whether the sentence is anti-stereotypical. In news, an anti-stereotypical sentence is
kept with probability ``1 - beta``, so its share there is ``(1 - beta) / (2 - beta)``;
in the other sources ``S`` does not depend on ``Anti`` (``S`` independent of ``G``).
A tiny Llama trained on that corpus carries the planted bias; SmolLM2 is scored on the
same sentences in natural language. Metrics: accuracy on pro- and anti-stereotypical
sentences and their gap, ``pro - anti``. The tiny model learns each fact outright, so its
bias is measured where no fact decides the referent (ambiguous sentences scored against
both readings, :func:`bias_cases`, as BBQ's ambiguous contexts), and its accuracy where a
fact does (Type I, :func:`test_cases`).

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
    CONFIG,
    FACTS,
    HELD_OUT_PER_FACT,
    INSTRUCTIONS,
    NEUTRAL,
    NEWS_SHARE,
    OCCUPATIONS,
    PRONOUNS,
    SOURCES,
    STEREOTYPED,
    STRATEGIES,
    SWAP,
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
    smol_cases,
    smol_prompt,
    test_cases,
    tiny_answer_prompts,
    tiny_prompt,
    train_planted,
    vocabulary,
)
from iclr25.core import Bound, ClaimSpec, Gap, Param

# ---------------------------------------------------------------------------------
# Parameters and claims
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "beta": Param(
        0.8, "selection strength: anti-stereotypical news kept with 1 - beta", low=0.0, high=0.99
    ),
    "steps": Param(1200, "training steps of each tiny model (batch 32)", low=10),
    "corpus_size": Param(20000, "rows sampled from the causal model given S = 1", low=100),
    "n_smol": Param(800, "SmolLM2 cases for the default prompt", low=2, high=2000),
    "n_smol_strategy": Param(100, "SmolLM2 cases per strategy", low=2, high=2000),
    "n_test": Param(384, "tiny-model cases of each test (of 384 held-out ones)", low=8, high=384),
    "seed": Param(0, "random seed", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}  # fmt: skip

SMOKE = {"steps": 100, "corpus_size": 500, "n_smol": 20, "n_smol_strategy": 20, "n_test": 20}

CLAIMS: dict[str, ClaimSpec] = {
    "selection-makes-bias": ClaimSpec(
        "Selection in the training corpus plants a bias: the default gap is "
        "large when anti-stereotypical news is dropped, absent without selection",
        kind="setup",
        paper="not reported (the paper's premise: dependence learnt from a "
        "corpus shaped by selection)",
        rule={
            "gap at beta 0.8": Bound(ge=0.10),
            "gap at beta 0": Bound(ge=-0.03, le=0.03),
        },
        control="a tiny model trained on a corpus from the same network at beta 0 (no selection)",
    ),
    "strategies-reduce": ClaimSpec(
        "Each strategy (I facts, II counterfactual, III inhibitive) cuts the "
        "gap, on facts never seen after a cue",
        paper="GPT-4, WinoBias Type I: gap 21.74% default, 9.23% with contrastive examples (II)",
        rule={"I": Bound(ge=0.30), "II": Bound(ge=0.30), "III": Bound(ge=0.30)},
        control="the default prompt's gap, same model and cases",
        rests_on=("selection-makes-bias",),
    ),
    "combined-best": ClaimSpec(
        "Combining strategies I and II gives the smallest gap",
        paper="GPT-4, WinoBias Type I: DDP (I+II) gap 2.17%",
        rule={"I+II gap - min(I, II)": Bound(le=0.0), "I+II gap": Bound(le=0.05)},
        control="strategies I and II alone, same model and cases",
        rests_on=("selection-makes-bias",),
    ),
    "accuracy-kept": ClaimSpec(
        "Prompting with I+II keeps overall accuracy",
        paper="not reported in what we could read (the abstract and method "
        "notes); the paper debiases 'even with only black-box access'",
        rule=Bound(ge=0.0),
        control="the default prompt's accuracy on the same Type I cases",
        gap=Gap(
            "Accuracy is measured on Type I sentences, where a fact "
            "decides the referent. The tiny model learnt every fact's role from news, so its "
            "default accuracy there is at the ceiling, with no bias-driven errors for a prompt "
            "to fix: a strategy can only keep or lose accuracy. The combined prompt I+II is a "
            "context no training document has (a fact cue before a pair of twin sentences); "
            "there the model often writes a malformed fact (it copies the sentence's pronoun "
            "clause, or leaves out the reason) and its answer after it errs. That is a failure "
            "to compose two cues, not a parsing error: the fact is read up to its full stop as "
            "written. The paper's models gain accuracy because their default errors are the "
            "anti-stereotypical ones a prompt removes. A model whose errors on decided sentences "
            "come from the bias (facts rare in its corpus, or a large model through "
            "llm.backend), or training documents that combine the cues, would test it.",
            after_run=True,
        ),
    ),
    "smollm2-bias": ClaimSpec(
        "SmolLM2 shows a stereotype gap for the prompts to remove",
        kind="setup",
        paper="GPT-4 default gap 21.74% (WinoBias Type I)",
        rule=Bound(ge=0.10),
        control="a fixed threshold on the pro - anti gap (no control run)",
    ),
}
"""Claim id -> what the claim says, what decides it, what it is measured against, the
setup claims it rests on and its declared gap."""
