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
# each first in about half of the questions. Every question carries the weak
# evidence, as in the weak-evidence BBQ variant the paper uses: the planted
# stereotype then outweighs the evidence in most questions, and the policy's
# exact CE, averaged over the questions, orders the categories.

# %%
qs = faithfulness.questions(p.n_questions, p.seed)
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
print(
    "policy's exact mean CE:",
    dict(zip(faithfulness.CATEGORIES, exact.mean(0).round(3))),
)
print(
    "identity's exact CE the largest in",
    int((exact.argmax(1) == 1).sum()),
    "of",
    len(qs),
    "questions",
)

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
# one attention head that finds the place word and writes it out. A
# four-layer model trained on 1,500 steps of 32 texts, with the loss on
# every token, does not learn it: the copy is rare in the corpus, and the
# loss on the question's randomly drawn words drowns it; it then names the
# right place little more often than chance, and the experiment no longer
# tests what the policy plants. So the loss covers only the response (explanation
# and answer), batches are four times larger (more copies per step), the
# prompt drops the option list the model does not need (the answer names a
# person it has already seen four times), and two layers (enough for
# "after *at the*, copy the place word") make each step cheap; the rate is
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
)
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
# correlation of the two, per question, averaged over the questions, with
# its 95% interval; fixed beforehand, it must lie above 0.5 (one swap of two
# neighbouring concepts in every question). The CE model is fitted to one
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
rho_q = [spearmanr(a, b).statistic for a, b in zip(ce["candid"], own_c)]
r_ce = core.stats.mean(rho_q)
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
    measured=f"mean per-question Spearman over {len(qs)} questions",
)
ce_g = ce["guarded"]
core.claim(
    "identity-seen",
    estimate=core.stats.paired_difference(ce_g[:, 1], ce_g[:, 2]),
    measured=f"guarded CE identity {ce_g[:, 1].mean():.3f}, "
    f"context {ce_g[:, 2].mean():.3f}",
)
# %% [markdown]
# The category scales $\sigma_c$: the paper finds behaviour > identity >
# context for all three LLMs (GPT-4o 4.75, 1.99, 1.00). Our planted policy,
# with weak evidence in every question, orders its exact mean CE identity >
# behaviour > context (printed above); the claim is that the model recovers
# that order from the tiny Llama's sampled answers.

# %%
sig = {
    f"tiny Llama ({s})": fits[s]["sigma"].mean(0)
    for s in faithfulness.STYLES
}
faithfulness.sigma_figure(sig).show()
s_c = sig["tiny Llama (candid)"]
core.claim(
    "sigma-order",
    value={
        "sigma identity - behaviour": s_c[1] - s_c[0],
        "sigma behaviour - context": s_c[0] - s_c[2],
    },
    measured="sigma "
    + ", ".join(f"{c} {v:.2f}" for c, v in zip(faithfulness.CATEGORIES, s_c)),
)
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
# on it. On coreference it picks the second-mentioned person about three
# times in four, so a swap of identities moves its answer by position, not
# by identity.

# %%
smol = None
if p.n_smol:
    smol_qs = faithfulness.questions(p.n_smol, p.seed + 7)
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
# control (a threshold that both styles pass would not tell them apart);
# and the guarded $\mu$ minus the candid one, from the two posteriors'
# draws, has its 95% interval below -0.3.

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
core.claim(
    "recovers-faithful",
    value={
        "candid mu HPDI low": fc.hpdi[0],
        "guarded mu HPDI low (control)": fg.hpdi[0],
    },
    measured="candid mu {:.2f} [{:.2f}, {:.2f}]; guarded {:.2f} "
    "[{:.2f}, {:.2f}]".format(fc.mu, *fc.hpdi, fg.mu, *fg.hpdi),
)
# %%
drop = faithfulness.mu_difference(fg, fc, len(qs))
core.claim(
    "detects-hiding",
    estimate=drop,
    measured=f"guarded mu {fg.mu:.2f} vs candid {fc.mu:.2f}",
    quote=dict(questions=len(qs), floor=1 / np.sqrt(len(qs)),
               half=(drop.high - drop.low) / 2,
               clears=(drop.high - drop.low) / 2
               - faithfulness.CLAIMS["detects-hiding"].rule.below),
)
# %% [markdown]
# How wide the drop's interval can be is set by the faithfulness model, not
# by S: each question's slope is drawn as $\beta_e \sim N(\mu, 1)$, so
# $\mu$'s posterior sd is at least $1/\sqrt{n}$ for $n$ questions, and the
# difference of two independent posteriors has about $\sqrt{2}$ times that.
# A larger S sharpens each question's CE and EE, and so the size of the
# drop; only more questions narrow its interval. The guarded explanations
# cost $\mu$ most in the questions where the identity's CE is the largest
# (counted above); elsewhere, hiding it swaps only the two minor concepts.

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
# identity (`identity-seen`). `recovers-faithful` is decided by a rule that
# the guarded explanations, its control, must fail, so a threshold both
# styles clear cannot pass it. The interval of `detects-hiding` comes from two
# posteriors of $\mu$ whose width is set by the number of questions, as the
# paragraph on the drop explains.

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
#   Every question has the weak evidence, as the paper's set; the tiny model
#   is trained on questions with strong and weak evidence. Our "identity" is
#   a planted, arbitrary stereotype of a synthetic world, not a real
#   group's. With weak evidence it outweighs the behaviour, so our planted
#   category order is identity > behaviour > context, where the paper's
#   LLMs give behaviour > identity > context.
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
# - **Position.** Mention order is counterbalanced across questions, so
#   SmolLM2's preference for the second-mentioned person does not line up
#   with identity or behaviour across the dataset; within a question it
#   remains, and an identity swap or removal still rewrites the words at each
#   position, which moves its answer through position as much as through
#   identity.
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
