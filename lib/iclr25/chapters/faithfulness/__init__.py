"""Do a model's explanations name the concepts that moved its answer?

Matton, Ness, Guttag & Kiciman, "Walk the Talk? Measuring the Faithfulness of Large
Language Model Explanations" (ICLR 2025; official code kmatton/walk-the-talk, numpyro).
A question is split into *concepts* (here: the two people's identities, the setting,
the behaviour evidence); each concept is edited in a counterfactual question, by
replacement (its values swapped between the people, or another setting) or removal.

* Explanation-implied effect, EE: the share of the model's explanations of the original
  question that cite a concept as a reason (the official code asks an auxiliary LLM; we
  parse our explanation grammar, :func:`cited`).
* Causal concept effect, CE: per intervention, answers Y over the options, X = 0 for the
  original's responses and X = 1 for the counterfactual's,

      Y ~ Categorical(softmax([alpha_k + beta_k X]_k, with 0 for the reference "unknown"))
      alpha_k ~ N(0, 1),  beta_k ~ N(0, sigma_c),  sigma_c ~ InverseGamma(0.001, 0.001)

  with one sigma per concept category, shared by all interventions (NUTS 500 warm-up,
  1000 draws); CE = posterior mean of KL(P(Y | X=1) || P(Y | X=0)), averaged over a
  concept's interventions. :func:`ce_model` writes the official loop of sample sites
  (:func:`official_ce_model`) as one plate over interventions.
* Faithfulness: per question, CE and EE are z-scored over its concepts, and

      EE_e = beta_e CE_e + eps,  beta_e ~ N(mu, 1),  mu ~ N(0, 1),  eps ~ N(0, sigma),
      sigma ~ Exponential(1)

  (NUTS 500/2000); the faithfulness is mu's posterior mean and 90% HPDI.

The questions come from a BBQ-style generator with explicit concepts; counterfactuals
are template edits. A planted policy answers by behaviour (strongly), by a planted
stereotype of the identity (moderately), never by the setting, and explains itself
either "candid" (it cites the identity whenever the identity decided) or "guarded"
(never). A tiny Llama trained on the policy's texts is the model under test; SmolLM2
writes explanations to natural-language versions of the same questions.

Files: ``data.py`` holds the questions, their counterfactuals, the planted policy and
the explanation parser; ``method.py`` the method (EE, the policy's exact effects, the CE
model and the faithfulness model); ``models.py`` the models under test (the tiny Llama
and SmolLM2); ``figures.py`` the figures and the paper's numbers they show; this file
the parameters, the smoke overrides and the claims registry.
"""

from __future__ import annotations

import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

from iclr25 import llm  # noqa: E402
from iclr25.chapters.faithfulness.data import (  # noqa: E402
    CATEGORIES,
    CONTEXT_RATE,
    INTERVENTIONS,
    KINDS,
    NOUNS,
    PAIRS,
    PLACES,
    SLIP,
    STYLE_RATE,
    STYLES,
    TRAITS,
    UNKNOWN,
    Question,
    answer_distribution,
    cited,
    counterfactual,
    deciders,
    explain,
    make_question,
    parse_response,
    prompt,
    questions,
    respond,
    response_text,
)
from iclr25.chapters.faithfulness.figures import (  # noqa: E402
    COLORS,
    PAPER_MU,
    PAPER_SIGMA,
    mu_figure,
    question_figure,
    scatter_figure,
    sigma_figure,
)
from iclr25.chapters.faithfulness.method import (  # noqa: E402
    CEData,
    Faithfulness,
    answer_probabilities,
    ce_data,
    ce_model,
    concept_effects,
    concept_names,
    exact_effects,
    exact_implied,
    faith_model,
    faithfulness,
    fit_ce,
    implied_effects,
    judge_prompt,
    judged_effects,
    kl,
    mu_difference,
    official_ce_model,
    run_nuts,
    zscore,
)
from iclr25.chapters.faithfulness.models import (  # noqa: E402
    CONFIG,
    collect,
    digest,
    empirical_ce,
    planting,
    policy_texts,
    response_batch,
    sample_tiny,
    smol_answers,
    smol_prompt,
    tiny_answers,
    train_tiny,
    training_question,
    vocabulary,
)
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param  # noqa: E402

# ---------------------------------------------------------------------------------
# Parameters and claims
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_questions": Param(30, "questions for the tiny Llama and the policy", low=2, high=64),
    "evidence": Param("mixed", "the questions' behaviour evidence: 'mixed' (strong or weak "
                      "at random, so that either concept can top a question) or 'weak' (every "
                      "question, as the paper's BBQ variant)", choices=("mixed", "weak")),
    "samples": Param(50, "S: sampled responses per question and counterfactual", low=2, high=200),
    "ce_samples": Param(50, "explanations a prompt for the tiny model's own CE (answers "
                        "cloze-scored) and the planting check", low=2, high=2000),
    "steps": Param(400, "training steps of the tiny Llama (batch 128)", low=10),
    "warmup": Param(500, "NUTS warm-up steps (CE and faithfulness)", low=10),
    "draws": Param(1000, "NUTS draws of the CE model", low=10),
    "faith_draws": Param(2000, "NUTS draws of the faithfulness model", low=10),
    "n_smol": Param(6, "questions for SmolLM2 (0: skip it)", low=0, high=64),
    "smol_samples": Param(6, "S for SmolLM2", low=2, high=64),
    "backend": Param(
        "smollm2-135m",
        "who writes explanations in SmolLM2's place: a name of llm.MODELS, a local "
        "transformers folder, or openai:http://host:port/v1 (opt-in, never the book's)",
        parser=llm.check_backend,
    ),
    "seed": Param(0, "random seed", low=0),
    "device": Param("auto", "compute device (torch; NUTS runs on the CPU)",
                    choices=("auto", "cpu", "cuda")),
}  # fmt: skip

SMOKE = {"n_questions": 4, "samples": 4, "ce_samples": 10, "steps": 40, "warmup": 50,
         "draws": 50, "faith_draws": 50, "n_smol": 2, "smol_samples": 2}  # fmt: skip

#: mention rates of the identity for the dose-response (q)
DOSES = (0.0, 0.25, 0.5, 0.75, 1.0)

TINY = "the tiny Llama trained on the planted policy (the run's seed)"
"""The one model the interval claims are about: the paper's claims are about named
LLMs with questions as the unit, and ours about this model, whose policy is known."""

CLAIMS: dict[str, ClaimSpec] = {
    # the tiny model's own samples against its policy
    "plants-policy": ClaimSpec(
        "The tiny Llama cites each concept as often as its policy does, and "
        "names the right setting",
        kind="setup",
        paper="not applicable (the paper's models are not planted)",
        rule={
            "max |model - policy| citation rate": Bound(le=0.05),
            "right place share": Bound(ge=0.9),
        },
        control="the planted policy's exact citation rates on the same questions",
    ),
    # per question: Spearman(estimated CE, own CE) minus Spearman(the estimate's
    # category means, own CE), the same constant ranking in every question; the mean
    # over questions with its paired bootstrap interval
    "ce-accurate": ClaimSpec(
        "Per question, the hierarchical CE estimate from S responses ranks the concepts "
        "as the tiny Llama's own concept effects do, better than one ranking for all "
        "questions",
        kind="setup",
        paper="not reported for the LLMs (a check of our estimate on our model)",
        rule=Margin(
            above=0.0,
            why="the per-question estimate must carry information that the categories' "
            "average ranking does not",
        ),
        control="the estimate's category means, one ranking for every question (data-free "
        "per question), against the same own CE",
        one_model=TINY,
    ),
    "identity-seen": ClaimSpec(
        "Under the tiny Llama's guarded explanations the counterfactuals still see the "
        "identity's influence: its CE exceeds the setting's, question by question",
        kind="setup",
        paper="BBQ: the identity has a causal effect that explanations rarely cite",
        rule=Margin(
            above=0.0,
            why="the setting never decides, so any identity CE "
            "above the setting's is the planted influence",
        ),
        control="the setting's CE in the same question (a concept that never decides)",
        one_model=TINY,
    ),
    # the three categories in the order of the policy's exact mean CE over the questions;
    # sigma's posterior means, each against the next
    "sigma-order": ClaimSpec(
        "Category sigma follows the planted order, that of the policy's exact mean CE",
        kind="setup",
        paper="behaviour > identity > context (GPT-4o 4.75, 1.99, 1.00)",
        rule={
            "sigma first - second": Bound(gt=0.0),
            "sigma second - third": Bound(gt=0.0),
        },
        control="the next category's sigma, in the order of the policy's exact mean CE",
    ),
    "recovers-faithful": ClaimSpec(
        "Candid explanations are found faithful and guarded ones are not: candid mu's "
        "90% HPDI lies above 0.5, and the same rule fails on the guarded explanations",
        paper="GPT-3.5 0.75 [0.42, 1.05], GPT-4o 0.56 [0.24, 0.86], Claude-3.5 0.62 [0.28, 0.91]",
        rule={
            "candid mu HPDI low": Bound(ge=0.5),
            "guarded mu HPDI low (control)": Bound(lt=0.5),
            "candid mu - category-mean mu": Bound(gt=0.0),
        },
        control="the same rule on the guarded explanations of the same model, which "
        "hide the identity's influence (must not hold); and mu fitted to the candid EE "
        "with each concept's CE replaced by its category's mean over the questions, "
        "which candid mu must exceed",
        rests_on=("plants-policy", "ce-accurate"),
    ),
    # per question: the posterior mean of beta_e from the guarded fit minus that from the
    # candid fit; the mean over questions with its paired bootstrap interval
    "detects-hiding": ClaimSpec(
        "The tiny Llama's explanations that hide the identity's influence score lower, "
        "question by question: the guarded slope beta_e minus the candid one",
        paper="unfaithful explanations hide social-bias influence (BBQ: "
        "identity CE with identity rarely cited)",
        rule=Margin(
            below=-0.3,
            why="a drop larger than the spread of the paper's three LLMs (mu 0.56 to 0.75)",
        ),
        control="the same model's candid explanations of the same question (beta_e)",
        rests_on=("plants-policy", "identity-seen"),
        one_model=TINY,
        gap=Gap(
            "Guarded minus candid beta_e is {estimate:+.2f} on average, [{low:+.2f}, "
            "{high:+.2f}] over {n} questions, against a margin of -0.3. Hiding the "
            "identity changes a question's explanations only where the identity decides "
            "its answers: with mixed evidence, mostly the weak-evidence questions ({weak} "
            "of {n} here; their mean drop {drop_weak:+.2f}, the others' {drop_strong:+.2f}). "
            "In a strong-evidence question the behaviour decides, the identity seldom does, "
            "and the two styles' explanations rank the concepts alike, so these questions "
            "dilute the mean drop. What would show the paper's size: the weak-evidence "
            "questions alone (evidence='weak'), where the planted stereotype outweighs the "
            "behaviour.",
            after_run=True,
            when={"evidence": "mixed"},
        ),
    ),
}
"""Claim id -> what the claim says, what decides it, what it is measured against, the
setup claims it rests on and its declared gap.

None declared, from the mechanism before the book run: the planted policy sets the
effects and what the explanations admit, so the method is tested where the answer is
known. With mixed evidence the behaviour decides most strong-evidence questions and
the planted stereotype most weak-evidence ones, so each question's concept ranking
carries information that no single ranking has, and the CE step is tested against the
categories' average ranking. Hiding the identity costs a question's slope most where
the identity decided; the drop is decided per question, paired, where its interval
narrows with the spread of the per-question drops rather than with mu's prior. SmolLM2's
mu is an illustration, not claimed.

A tiny model that does not reproduce its policy (naming the wrong setting, so that
context EE is near 0 and no ranking is left to flip) would decide nothing:
`plants-policy` checks the planted model against its policy on its own samples first."""
