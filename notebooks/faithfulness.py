# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Do explanations walk the talk?
#
# A language model asked a question that invites a social stereotype answers,
# and explains its answer. The explanation names some facts of the question as
# its reasons. Were those the facts that actually moved the answer? An
# explanation that cites the evidence while the answer in fact followed the
# people's identities is *unfaithful*, and hides the bias that decided.
# {cite:p}`matton2025faithfulness` measure it: the concepts an explanation
# implies mattered (the *explanation-implied effect*, EE) are compared with
# those that do matter, estimated by editing each concept in counterfactual
# questions and watching the answers move (the *causal concept effect*, CE).
#
# We build BBQ-style questions {cite:p}`parrish2022bbq` with explicit concepts, a planted policy whose
# explanations are honest ("candid") or hide the identity's influence
# ("guarded"), a tiny Llama trained on its texts, and SmolLM2 {cite:p}`allal2025smollm2`; then we run the
# paper's two hierarchical Bayesian models, in numpyro as the official code.

# %% tags=["parameters"]
n_questions = 30
evidence = "mixed"
samples = 50
ce_samples = 50
steps = 400
warmup = 500
draws = 1000
faith_draws = 2000
n_smol = 6
smol_samples = 6
backend = "smollm2-135m"
seed = 0
device = "auto"

# %%
import time

import ipywidgets as widgets
import numpy as np
import plotly.graph_objects as go
from scipy.stats import spearmanr

from iclr25 import core, llm
from iclr25.chapters import faithfulness

p = core.chapter("faithfulness", globals())
started = time.perf_counter(), time.process_time()

# %% [markdown]
# ## The method
#
# **Questions and concepts.** A question names two people by their identity,
# a setting, and behaviour evidence about one of them, and asks who showed a
# trait; the options are the two people (in order of mention) and "unknown".
# Its three concepts are *identity*, *context* and *behaviour*. Each concept is
# edited twice: replaced (its values swapped between the people, or another
# setting) and removed. The paper asks an auxiliary LLM for the concepts and
# the edits; here they are template edits:
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/data.py
# :pyobject: counterfactual
# ```
#
# **The planted policy.** The behaviour decides with the evidence's strength,
# else the identity with the planted stereotype's strength, else the answer is
# "unknown"; the setting never decides.
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/data.py
# :pyobject: deciders
# ```
#
# **EE** is the share of the original question's explanations that cite a
# concept as a reason. The paper's judge is an LLM with a prompt that tells a
# reason from a mere mention ("although it refers to the individuals by their
# races..."); ours is a parser of our explanation grammar that draws the same
# line:
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/data.py
# :pyobject: cited
# ```
#
# **CE.** For each intervention, the answers to the original ($X = 0$) and the
# counterfactual ($X = 1$) follow a multinomial logit with "unknown" as the
# reference class; the effects' prior scale $\sigma_c$ is shared by every
# intervention of a category. The official code writes one block of sample
# sites per intervention (`official_ce_model` in `method.py`); we write the
# same model with one plate, which a test checks has the same log density:
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/method.py
# :pyobject: ce_model
# ```
#
# CE is the posterior mean of $\mathrm{KL}(P(Y \mid X{=}1) \,\|\, P(Y \mid
# X{=}0))$, averaged over a concept's two interventions.
#
# **Faithfulness.** Within each question, CE and EE are z-scored over its
# concepts; then $\widetilde{EE} = \beta_e \widetilde{CE} + \varepsilon$ with
# $\beta_e \sim N(\mu, 1)$: $\mu$ is the dataset's faithfulness, 1 when
# explanations rank concepts as their effects do, 0 when unrelated.
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/method.py
# :pyobject: faith_model
# ```

# %% [markdown]
# ## Questions and their counterfactuals
#
# Mention order is counterbalanced: the stereotyped person and the culprit are
# each first in about half of the questions. With `evidence="mixed"` each
# question carries the strong or the weak behaviour evidence at random: the
# policy lets strong evidence decide most answers (`deciders` above), while weak
# evidence competes with the planted stereotype, so which concept matters most
# can change from question to question (counted below; `evidence="weak"` gives every
# question the weak evidence, as the paper's BBQ variant). The policy's exact
# CE, averaged over the questions, orders the categories.

# %%
qs = faithfulness.questions(p.n_questions, p.seed, evidence=p.evidence)
q0 = qs[0]
print("original:", q0.text(), "\n")
for concept, kind in faithfulness.INTERVENTIONS:
    cf = faithfulness.counterfactual(q0, concept, kind)
    print(f"{concept} {kind}: {cf.text()}")
print("\npolicy P(answer):", faithfulness.answer_distribution(q0).round(3))
print(
    "stereotyped first in",
    sum(q.stereotyped == 0 for q in qs),
    "of",
    len(qs),
    "questions;",
    "culprit first in",
    sum(q.culprit == 0 for q in qs),
)

# %%
exact = np.array([faithfulness.exact_effects(q) for q in qs])
print("policy's exact mean CE: " + ", ".join(
    f"{c} {v:.3f}" for c, v in zip(faithfulness.CATEGORIES, exact.mean(0))))
tops = np.bincount(exact.argmax(1), minlength=3)
print("exact CE the largest in " + ", ".join(
    f"{c}: {k}" for c, k in zip(faithfulness.CATEGORIES, tops))
    + f" of {len(qs)} questions")

# %% [markdown]
# ## The model under test: a tiny Llama
#
# A two-layer Llama is trained on the policy's texts (question, style cue,
# explanation, answer), in both styles and with questions in every state of
# intervention; the same answers follow under both styles, only what the
# explanation admits differs. We then sample S responses a question and
# counterfactual under each style.
#
# To cite the setting, the model must *copy* a word it saw once in the
# question ("met at the bank") into its explanation ("it was at the bank"):
# one attention head that finds the place word and writes it out. The copy
# is rare in the corpus, so the loss covers only the response (explanation
# and answer), where the question's randomly drawn words cannot drown it;
# batches of 128 texts carry many copies a step; the prompt drops the option
# list (the answer names a person the model has already seen); two layers
# are enough for "after *at the*, copy the place word"; and the rate is
# divided by 10 for the last fifth of the steps.
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/models.py
# :pyobject: train_tiny
# ```

# %%
with core.threads(1):
    lm = faithfulness.train_tiny(steps=p.steps, seed=p.seed, progress=False)
    tiny = {
        style: faithfulness.collect(
            qs, faithfulness.tiny_answers(lm, style, p.seed), p.samples
        )
        for style in faithfulness.STYLES
    }
for style, (expl, orig, _) in tiny.items():
    named = np.mean([y >= 0 for ys in orig for y in ys])
    print(f"{style}: {named:.0%} of answers name an option; e.g.")
    for e, y in zip(expl[0][:3], orig[0][:3]):
        print(f"   {e!r} -> {q0.options[y] if y >= 0 else '?'}")

# %% [markdown]
# ### Does the tiny model reproduce its policy?
#
# Only if it does can the chapter test the paper's method: the claims below
# ask whether the method finds what the policy planted. We draw
# `ce_samples` explanations of each original question in each style and
# compare the parser's citation rates with the policy's exact rates on the
# same questions. The bound, fixed before the run: every rate
# within 0.05 of the policy's (about three binomial standard errors at 800
# explanations a style), and at least 90% of the explanations that name a
# setting name the question's own.

# %%
with core.threads(1):
    own, own_expl = faithfulness.empirical_ce(
        lm, qs, p.ce_samples, p.seed + 1
    )
plant = faithfulness.planting(
    qs, {s: own_expl[s] for s in faithfulness.STYLES}
)

# %%
fig = go.Figure()
for who, rates in (
    ("tiny Llama", plant["rates"]),
    ("policy", plant["policy"]),
):
    fig.add_bar(
        name=who,
        y=[rates[s][c] for s in faithfulness.STYLES for c in range(3)],
        x=[
            [s for s in faithfulness.STYLES for _ in range(3)],
            list(faithfulness.CATEGORIES) * 2,
        ],
    )
fig.update_layout(
    barmode="group",
    yaxis_title="citation rate (EE)",
    title="Citation rates: the tiny Llama vs its policy",
)
fig.show()
print(
    f"{plant['named']} explanations name a setting; "
    f"{plant['right place']:.0%} of them the question's own"
)

# %%
core.claim(
    "plants-policy",
    value={
        "max |model - policy| citation rate": plant["max gap"],
        "right place share": plant["right place"],
    },
    measured=f"largest gap {plant['max gap']:.3f}; right place "
    f"{plant['right place']:.0%} of {plant['named']}",
);
# %% [markdown]
# ## Causal concept effects
#
# The CE model is fitted to each style's responses (NUTS, 500 warm-up steps,
# 1,000 draws, as the official code). Is the Bayesian estimate from S
# responses close to the tiny model's own effect? That one is measured
# from `ce_samples` fresh explanations a prompt, each followed by the
# model's exact (cloze) probabilities of the three answers, averaged: the
# answer's own sampling noise is gone, so 50 explanations do the work of
# many more sampled answers. What the faithfulness model uses is each
# question's ranking of its three concepts, so the check is the Spearman
# correlation of the two, per question, set against the correlation that one
# ranking for every question reaches (the estimate's category means, which
# know nothing of the question). Fixed beforehand: the difference, paired per
# question, must lie above 0, so the estimate must rank each question better
# than the categories' average does. The CE model is fitted to one
# row per distinct (intervention, X, answer) with its count as a weight: the
# same likelihood as one row per response, and far fewer rows.

# %%
fits, ce, data = {}, {}, {}
for style, (_, orig, counter) in tiny.items():
    data[style] = faithfulness.ce_data(orig, counter)
    fits[style] = faithfulness.fit_ce(
        data[style], warmup=p.warmup, draws=p.draws, seed=p.seed
    )
    ce[style] = faithfulness.concept_effects(
        fits[style]["kl"], data[style], len(qs)
    )

# %%
est = fits["candid"]["kl"].mean(0)
own_c = own.reshape(
    len(qs), len(faithfulness.CATEGORIES), len(faithfulness.KINDS)
).mean(2)
shared = ce["candid"].mean(0)  # one ranking for every question


def rank_agreement(estimate, truth):
    """Spearman's rho; 0 where either side has no spread (no ranking)."""
    return np.nan_to_num(spearmanr(estimate, truth).statistic)


rho_q = np.array([rank_agreement(a, b) for a, b in zip(ce["candid"], own_c)])
rho_0 = np.array([rank_agreement(shared, b) for b in own_c])
r_ce = core.stats.paired_difference(rho_q, rho_0)

# %%
fig = go.Figure(
    go.Scatter(
        x=own,
        y=est,
        mode="markers",
        text=[f"{c} {k}" for _ in qs for c, k in faithfulness.INTERVENTIONS],
    )
)
fig.update_layout(
    title=f"Estimated CE (S = {p.samples}) vs the tiny model's own "
    f"({p.ce_samples} explanations, cloze)",
    xaxis_title="KL from samples",
    yaxis_title="posterior mean KL",
)
fig.show()

# %%
core.claim(
    "ce-accurate",
    estimate=r_ce,
    measured=f"mean per-question Spearman {rho_q.mean():.2f}, one ranking "
    f"for all {rho_0.mean():.2f}, over {len(qs)} questions",
);
ce_g = ce["guarded"]
core.claim(
    "identity-seen",
    estimate=core.stats.paired_difference(ce_g[:, 1], ce_g[:, 2]),
    measured=f"guarded CE identity {ce_g[:, 1].mean():.3f}, "
    f"context {ce_g[:, 2].mean():.3f}",
);
# %% [markdown]
# The category scales $\sigma_c$: the paper finds behaviour > identity >
# context for all three LLMs (GPT-4o 4.75, 1.99, 1.00). Our planted order is
# that of the policy's exact mean CE over the questions (printed above); the
# claim is that the CE model recovers it from the tiny Llama's sampled
# answers.

# %%
sig = {
    f"tiny Llama ({s})": fits[s]["sigma"].mean(0)
    for s in faithfulness.STYLES
}
faithfulness.sigma_figure(sig).show()
s_c = sig["tiny Llama (candid)"]
planted = np.argsort(-exact.mean(0))  # the policy's order, largest first
core.claim(
    "sigma-order",
    value={
        "sigma first - second": s_c[planted[0]] - s_c[planted[1]],
        "sigma second - third": s_c[planted[1]] - s_c[planted[2]],
    },
    measured="planted order "
    + " > ".join(faithfulness.CATEGORIES[i] for i in planted)
    + "; sigma "
    + ", ".join(f"{c} {v:.2f}" for c, v in zip(faithfulness.CATEGORIES, s_c)),
);
# %% [markdown]
# ## SmolLM2
#
# SmolLM2 writes a one-sentence explanation (sampled, temperature 0.7) to a
# natural-language version of each question; its answer is the option with
# the highest cloze score after "Answer:". Its EE comes from the same parser.
# The `backend` parameter puts another model in its place (`llm.backend`:
# a local transformers folder, or an OpenAI-compatible endpoint whose
# answer is the option its text names).
#
# This part is an illustration, not evidence: SmolLM2's $\mu$ rests on
# `n_smol` questions at S = `smol_samples` (the counts are printed below),
# too few for an interval that could decide a claim, and no claim is made
# on it.

# %%
smol = None
if p.n_smol:
    smol_qs = faithfulness.questions(p.n_smol, p.seed + 7,
                                     evidence=p.evidence)
    with core.threads(1):
        big = llm.backend(p.backend, device=p.torch_device)
        smol = faithfulness.collect(
            smol_qs, faithfulness.smol_answers(big, p.seed), p.smol_samples
        )
    data["smol"] = faithfulness.ce_data(smol[1], smol[2])
    fits["smol"] = faithfulness.fit_ce(
        data["smol"], warmup=p.warmup, draws=p.draws, seed=p.seed
    )
    ce["smol"] = faithfulness.concept_effects(
        fits["smol"]["kl"], data["smol"], len(smol_qs)
    )
    for e in smol[0][0][:3]:
        print(repr(e), faithfulness.cited(e, smol_qs[0]))
    print(
        f"SmolLM2 (illustration): {len(smol_qs)} questions, "
        f"S = {p.smol_samples}"
    )

# %% [markdown]
# ## Faithfulness
#
# EE from the original questions' explanations, then the faithfulness model
# (NUTS 500/2000). Rules, fixed beforehand: the candid model's 90% HPDI of
# $\mu$ lies above 0.5 and the same rule fails on the guarded model, its
# control (a threshold that both styles pass would not tell them apart); and
# candid $\mu$ exceeds the $\mu$ of the same explanations fitted against one
# CE ranking for every question (the category means), so the per-question CE
# must matter. Hiding is decided question by question: each question's
# posterior slope $\beta_e$ under the guarded explanations minus under the
# candid ones, paired, with its 95% interval below -0.3.

# %%
ee = {
    s: np.array(
        [faithfulness.implied_effects(e, q) for e, q in zip(tiny[s][0], qs)]
    )
    for s in faithfulness.STYLES
}
if smol is not None:
    ee["smol"] = np.array(
        [faithfulness.implied_effects(e, q) for e, q in zip(smol[0], smol_qs)]
    )
faith = {
    k: faithfulness.faithfulness(
        ce[k], ee[k], warmup=p.warmup, draws=p.faith_draws, seed=p.seed
    )
    for k in ee
}

# %%
names = {
    "candid": "tiny candid",
    "guarded": "tiny guarded",
    "smol": "SmolLM2",
}
faithfulness.scatter_figure({names[k]: f for k, f in faith.items()}).show()
for k, f in faith.items():
    print(
        f"{names[k]}: mu {f.mu:.2f} [{f.hpdi[0]:.2f}, {f.hpdi[1]:.2f}],"
        f" mean per-question Pearson {f.pearson:.2f}"
    )

# %%
faithfulness.mu_figure({names[k]: f for k, f in faith.items()}).show()
fc, fg = faith["candid"], faith["guarded"]
f_shared = faithfulness.faithfulness(
    np.tile(shared, (len(qs), 1)), ee["candid"], warmup=p.warmup,
    draws=p.faith_draws, seed=p.seed
)
print(f"candid EE against one CE ranking for every question: mu "
      f"{f_shared.mu:.2f} [{f_shared.hpdi[0]:.2f}, {f_shared.hpdi[1]:.2f}]")

# %%
core.claim(
    "recovers-faithful",
    value={
        "candid mu HPDI low": fc.hpdi[0],
        "guarded mu HPDI low (control)": fg.hpdi[0],
        "candid mu - category-mean mu": fc.mu - f_shared.mu,
    },
    measured="candid mu {:.2f} [{:.2f}, {:.2f}]; guarded {:.2f} "
    "[{:.2f}, {:.2f}]; category-mean CE {:.2f}".format(
        fc.mu, *fc.hpdi, fg.mu, *fg.hpdi, f_shared.mu),
);
# %%
drop = core.stats.paired_difference(fg.beta, fc.beta)
mu_drop = faithfulness.mu_difference(fg, fc, len(qs))
weak_q, per_q = np.array([not q.strong for q in qs]), fg.beta - fc.beta
by_evidence = {k: per_q[m].mean() if m.any() else np.nan
               for k, m in (("weak", weak_q), ("strong", ~weak_q))}
counts = {"weak": int(weak_q.sum()), "strong": int((~weak_q).sum())}
print("mean drop of beta_e: " + ", ".join(
    f"{k}-evidence questions {v:+.2f} ({counts[k]})"
    for k, v in by_evidence.items()))
core.claim(
    "detects-hiding",
    estimate=drop,
    measured=f"mean beta_e guarded {fg.beta.mean():.2f} vs candid "
    f"{fc.beta.mean():.2f}; dataset-level mu difference {mu_drop}",
    quote=dict(weak=counts["weak"], drop_weak=by_evidence["weak"],
               drop_strong=by_evidence["strong"]),
);
# %% [markdown]
# The dataset-level difference of $\mu$ (printed beside the claim) is a
# report: each question's slope is drawn as $\beta_e \sim N(\mu, 1)$, so
# $\mu$'s posterior sd is at least $1/\sqrt{n}$ for $n$ questions whatever S,
# and two independent posteriors give the difference about $\sqrt{2}$ times
# that. Paired by question, the slopes' differences carry their own spread
# instead. Hiding the identity costs a question's slope most where the
# identity's CE is the largest (counted above); elsewhere it swaps only the
# two minor concepts.

# %% [markdown]
# ## Dose-response on the policy
#
# The policy itself, with the identity cited at rate $q$ when it decided:
# its exact CE (the same answers at every $q$) and EE sampled from S
# explanations a question. This shows how the regression reads the mention
# rate; it is not a claim (exact effects on the policy itself: a unit test
# checks that $\mu$ rises with $q$).

# %%
dose = {}
for q_id in faithfulness.DOSES:
    rng = np.random.default_rng(p.seed)
    expl = [
        [faithfulness.respond(q, q_id, rng)[0] for _ in range(p.samples)]
        for q in qs
    ]
    ee_q = np.array(
        [faithfulness.implied_effects(e, q) for e, q in zip(expl, qs)]
    )
    dose[q_id] = faithfulness.faithfulness(
        exact, ee_q, warmup=p.warmup, draws=p.faith_draws, seed=p.seed
    )
mus = [dose[d].mu for d in faithfulness.DOSES]

# %%
fig = core.plot(
    faithfulness.DOSES,
    {"mu": mus},
    mode="lines+markers",
    title="Policy faithfulness against the identity-mention rate",
    xlabel="q (identity cited when it decided)",
    ylabel="mu",
)
fig.add_scatter(
    x=list(faithfulness.DOSES),
    y=[dose[d].hpdi[1] for d in faithfulness.DOSES],
    line_dash="dot",
    name="90% HPDI",
)
fig.add_scatter(
    x=list(faithfulness.DOSES),
    y=[dose[d].hpdi[0] for d in faithfulness.DOSES],
    line_dash="dot",
    name="90% HPDI (low)",
)
fig.show()
print(
    "mu at q = "
    + ", ".join(f"{d}: {m:.2f}" for d, m in zip(faithfulness.DOSES, mus))
)

# %% [markdown]
# ## Sensitivity: the scatter as the mention rate moves
#
# Move $q$: at 0 the identity points (red) drop to the bottom of each
# question's EE although their CE is unchanged; at 1 they rise to where CE
# puts them.


# %%
def scatter_at(q_id):
    f = dose[q_id]
    return faithfulness.scatter_figure({f"policy, q = {q_id}": f})


core.explore(
    scatter_at, list(faithfulness.DOSES), "q",
    active=len(faithfulness.DOSES) - 1,
)

# %% [markdown]
# ## Inspect a question
#
# Pick a question and a concept: the question, its counterfactuals for that
# concept written out, the tiny model's posterior answer distributions
# (candid responses) for the original and all six counterfactuals, and sample
# explanations with the concepts they cite. The static twin is a slider over
# the questions, with the identity's counterfactuals.


# %%
def inspect(choice):
    e, concept = choice
    draws_ = fits["candid"]
    units = np.flatnonzero(data["candid"].question == e)
    p1 = {
        iv: draws_["p1"][u]
        for iv, u in zip(faithfulness.INTERVENTIONS, units)
    }
    p0 = draws_["p0"][units].mean(0)
    return faithfulness.question_figure(
        qs[e], p0, p1, tiny["candid"][0][e], concept
    )


pairs = [(e, c) for e in range(len(qs)) for c in faithfulness.CATEGORIES]
pick = widgets.Dropdown(
    options=[(f"question {e}: {c}", (e, c)) for e, c in pairs],
    description="question",
)
core.explore(
    inspect, [(e, "identity") for e in range(len(qs))], "question", live=pick
)

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** The method can only be tested on a model that
# reproduces the policy it was meant to plant: `plants-policy` checks that
# first, on the model's own samples against the policy, and the paper claims
# rest on it, as they rest on the CE estimate ranking each question's
# concepts (`ce-accurate`) and on the counterfactuals seeing the hidden
# identity (`identity-seen`). `ce-accurate` sets the estimate against one
# ranking for every question, which a data-free estimate would reach.
# `recovers-faithful` is decided by a rule that the guarded explanations, its
# control, must fail, so a threshold both styles clear cannot pass it, and
# its candid $\mu$ must beat the category-mean CE's. `detects-hiding` pairs
# the two styles question by question.

# %% tags=["hide-input"]
wall = time.perf_counter() - started[0]
cpu = time.process_time() - started[1]
print(f"chapter body: {wall:.0f} s wall, {cpu:.0f} s CPU (this process)")

# %% [markdown]
# ## What differs from the paper
#
# - **Data.** The paper uses 30 BBQ questions (29 analysed, the
#   weak-evidence variant) and MedQA; its concepts, values and
#   counterfactuals are written by GPT-4o, 3 to 5 concepts a question. Ours
#   are 30 questions from a generator with exactly three known concepts,
#   one a category, and template edits, so every counterfactual is exactly
#   the intended edit (the paper drops a question whose edits were wrong).
#   The paper's BBQ set has the weak evidence in every question; ours has
#   strong or weak evidence at random (`evidence="mixed"`), so that the
#   concept that matters most changes from question to question and the
#   per-question CE carries information that one ranking for all questions
#   lacks (`evidence="weak"` gives the paper's variant, where the planted
#   stereotype can outweigh the weak behaviour evidence). The tiny model is
#   trained on questions with both. Our "identity" is a planted, arbitrary
#   stereotype of a synthetic world, not a real group's; the planted
#   category order is that of the policy's exact mean CE.
# - **MedQA is not run.** The paper's second dataset, where explanations
#   make misleading claims about which evidence mattered, needs medical
#   questions with concepts and counterfactual edits; no such set ships
#   with the book, and a generated one would test our generator rather than
#   the paper's finding.
# - **Models.** The paper evaluates GPT-3.5, GPT-4o and Claude-3.5 with 50
#   chain-of-thought samples; we evaluate a tiny Llama trained on a policy
#   whose faithfulness we set (S = 50, as the paper) and SmolLM2-135M (6
#   questions, S = 6). SmolLM2 is an illustration only: a claim on it would
#   need S of 20 or more on at least 20 questions, about 2,800 sampled
#   explanations, which do not fit the book's cold CPU budget beside the
#   tiny model. The tiny model's own CE, the check of the estimate, comes
#   from 50 explanations a prompt with cloze-scored answers (200 would be
#   tighter). The dose-response uses the policy's exact CE, not the candid
#   CE, and is a figure (its monotonicity is a unit test), not a claim.
#   The planted policy lets the chapter test the *method*: whether it finds
#   faithful explanations faithful, and hidden influence hidden.
# - **The judge.** The paper's EE comes from an LLM that reads each
#   explanation with the concept list; ours is a parser of our explanation
#   grammar, which SmolLM2 does not follow: its EE is a keyword reading, one
#   more reason its $\mu$ is reported only.
# - **Position.** Mention order is counterbalanced across questions, so a
#   model's preference for the first- or the second-mentioned person does
#   not line up with identity or behaviour across the dataset; within a
#   question it remains, and an identity swap or removal still rewrites the
#   words at each position, which can move such a model's answer through
#   position as much as through identity.
# - **Computation.** The CE model is the official one with one plate over
#   interventions instead of a Python loop of sample sites, and one weighted
#   row per distinct (intervention, X, answer) instead of one per response
#   (the same log density, which a test checks); a question whose CE or EE
#   has no spread gets z-scores 0 (the official code would divide by
#   zero).
#
# ## Going further
#
# SmolLM2 at the paper's scale (30 questions, 50 samples), which could
# carry a claim:
#
# ```
# python -m iclr25 run faithfulness -p n_smol=30 -p smol_samples=50
# ```
#
# A larger model can stand in for SmolLM2 through the `backend` parameter
# (`llm.backend`): a local transformers folder, or an OpenAI-compatible
# endpoint, never called by the book:
#
# ```
# python -m iclr25 run faithfulness -p backend=openai:http://host:8000/v1
# ```
#
# A model can also replace our parser as the judge of what an explanation
# cites, as the paper's LLM judge does:
# `faithfulness.judged_effects(llm.backend(spec), explanations, question)` asks it, for
# each concept, whether the explanation implies that the concept mattered,
# one YES or NO a line (our wording of the official
# `implied_concepts_prompt.txt`):
#
# ```{literalinclude} ../lib/iclr25/chapters/faithfulness/method.py
# :pyobject: judge_prompt
# ```
