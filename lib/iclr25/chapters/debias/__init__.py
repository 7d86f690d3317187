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
documents, and a few documents that combine the fact and counterfactual cues), ``G`` the
pronoun's gender, ``St`` which of the two stereotyped occupations the sentence names,
``R`` whether the pronoun refers to it or to the other occupation, ``Amb`` whether the
sentence is ambiguous (its referent drawn at random) and ``Anti`` whether the sentence
is anti-stereotypical. In news, an anti-stereotypical sentence is kept with probability
``1 - beta``, so its share there is ``(1 - beta) / (2 - beta)``; in the other sources
``S`` does not depend on ``Anti`` (``S`` independent of ``G``). A tiny Llama trained on
that corpus carries the planted bias; SmolLM2 is scored on the same sentences in
natural language. Metrics: accuracy on pro- and anti-stereotypical sentences and their
gap, ``pro - anti``. The paper's measure is the gap on WinoBias Type I sentences, where
a fact decides the referent: the Type I test facts are rare in the corpus (a few news
documents each, :func:`documents`), so that a model unsure of one falls back on the
stereotype (:func:`test_cases`). BBQ's measure sits beside it: ambiguous sentences,
where no fact decides, scored against both readings (:func:`bias_cases`).

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
    PRONOUNS,
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
from iclr25.core import SMOLLM2, Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# Parameters and claims
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "beta": Param(
        0.8, "selection strength: anti-stereotypical news kept with 1 - beta", low=0.0, high=0.99
    ),
    "steps": Param(800, "training steps of each tiny model (batch 32)", low=10),
    "corpus_size": Param(20000, "rows sampled from the causal model given S = 1", low=500),
    "seeds": Param(3, "tiny models at beta (seeds seed, seed + 1, ...)", low=1, high=10),
    "n_smol": Param(800, "SmolLM2 Type I cases, default and Strategy I", low=2, high=2000),
    "n_test": Param(384, "tiny-model cases of each test (of 384 held-out ones)", low=8, high=384),
    "seed": Param(0, "random seed", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}  # fmt: skip

SMOKE = {"steps": 100, "corpus_size": 500, "seeds": 2, "n_smol": 20, "n_test": 20}

_CUT = Margin(
    above=0.30,
    why="GPT-4's contrastive prompt (II) cuts the Type I gap by 58%; 30% is about half",
)

_GAPS = {
    "I": Gap(
        "Strategy I's cut per seed is {cuts}: over {n} seeds its interval is about as wide "
        "as the 30% margin. The tiny model writes the deciding fact "
        "itself, and the fact it writes names an occupation (the fact documents restate "
        '"<referent> <reason>"); on a rare test fact it often writes a wrong or malformed one '
        '(e.g. "nurse was shy mechanic"), and its answer follows what it wrote. The written '
        "fact is then the decision, not a social-agnostic fact that could inform it. More "
        "seeds, or facts written without the referent, would decide it.",
        after_run=True,
        varies=True,
    ),
    "III": Gap(
        "Strategy III's cut per seed is {cuts}: over {n} seeds its interval is about as "
        'wide as the 30% margin. The inhibitive cue ("no gender :") opens training '
        "documents of a kind of their own; how strongly the model's answers follow it, "
        "on facts never seen after a cue, differs from seed to seed. More seeds would "
        "decide it.",
        after_run=True,
        varies=True,
    ),
}

CLAIMS: dict[str, ClaimSpec] = {
    "selection-makes-bias": ClaimSpec(
        "Selection in the training corpus plants a bias: on ambiguous sentences (BBQ's "
        "measure) the default gap is large when anti-stereotypical news is dropped, "
        "absent without selection",
        kind="setup",
        paper="not reported (the paper's premise: dependence learnt from a "
        "corpus shaped by selection)",
        rule={
            "gap at beta 0.8": Bound(ge=0.10),
            "gap at beta 0": Bound(ge=-0.03, le=0.03),
        },
        control="a tiny model trained on a corpus from the same network at beta 0 (no selection)",
    ),
    "typeI-gap": ClaimSpec(
        "Where a rare fact decides the referent (WinoBias Type I), the planted model "
        "errs towards the stereotype: pro minus anti accuracy is positive",
        kind="setup",
        paper="GPT-4 default Type I gap 21.74%",
        rule=Margin(above=0.05, why="a quarter of GPT-4's default gap"),
        control="a model without the bias scores a gap of 0 (pro and anti balanced)",
    ),
    **{
        f"strategy-{s}-reduces": ClaimSpec(
            f"Strategy {s} ({what}) cuts the Type I gap, on facts never seen after a cue",
            paper="GPT-4, WinoBias Type I: gap 21.74% default, 9.23% with contrastive "
            "examples (II)",
            rule=_CUT,
            control="the default prompt's gap, same model and cases (a prompt that does "
            "nothing cuts 0%)",
            rests_on=("typeI-gap",),
            gap=_GAPS.get(s),
        )
        for s, what in (("I", "facts"), ("II", "counterfactual"), ("III", "inhibitive"))
    },
    "combined-best": ClaimSpec(
        "Combining strategies I and II gives the smallest absolute Type I gap",
        paper="GPT-4, WinoBias Type I: DDP (I+II) gap 2.17%, contrastive (II) 9.23%",
        rule=Margin(below=0.0, why="DDP's gap is below the better single strategy's in the paper"),
        control="|gap| of the better of strategies I and II alone, same model and cases",
        rests_on=("typeI-gap",),
        gap=Gap(
            "Strategy II alone already takes the Type I gap to within noise of 0 on every "
            "seed, and I+II overshoots to an anti-stereotypical gap on one (the gap figure "
            "shows each prompt's gap per seed): with |gap| at the floor for both, "
            "the difference of their absolute gaps sits within a few points of 0 and three "
            "seeds cannot separate them. The strategies cut the gap mostly by lowering "
            "pro-stereotypical accuracy rather than by raising anti-stereotypical accuracy "
            "(the seed-0 Type I figure shows both per prompt), so a smaller gap here is partly a "
            "less confident reader.",
            after_run=True,
        ),
    ),
    "accuracy-kept": ClaimSpec(
        "Prompting with I+II raises Type I accuracy over the default prompt",
        paper="not reported in what we could read (the abstract and method "
        "notes); the paper debiases 'even with only black-box access'",
        rule=Margin(above=0.0, why="a prompt that does nothing changes accuracy by 0"),
        control="the default prompt's accuracy on the same Type I cases",
        rests_on=("typeI-gap",),
        gap=Gap(
            "On the Type I test, I+II lowers accuracy on average over the seeds, with an "
            "interval that reaches a little above 0. The cue prompts condition the model on "
            "cue documents, where the rare test facts never appear; it loses part of what the "
            "three news documents taught it about each (its pro-stereotypical accuracy falls "
            "in the seed-0 Type I figure) without gaining on anti-stereotypical sentences. The "
            "paper's models gain accuracy because what they know of a fact "
            "survives the debiasing prompt; at four sightings of a fact, the tiny model's "
            "knowledge does not survive a change of context.",
            after_run=True,
        ),
    ),
    "smollm2-bias": ClaimSpec(
        "SmolLM2 shows a stereotype gap for the prompts to remove",
        kind="setup",
        paper="GPT-4 default gap 21.74% (WinoBias Type I)",
        rule=Margin(above=0.10, why="about half of GPT-4's default gap"),
        control="a model whose pick ignores the pronoun scores a gap of 0",
        gap=Gap(
            "SmolLM2's default Type I gap lies above 0, but its interval straddles the 0.10 "
            "margin. At 135M parameters SmolLM2 answers these sentences near chance (its "
            "accuracy is printed with its scores), so its gap is a lean on gender, not a "
            "stereotype overriding facts it knows; 800 cases cannot place that lean against "
            "a margin that close to it.",
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
