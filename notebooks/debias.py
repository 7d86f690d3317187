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
# # Prompting a language model out of a social bias
#
# Ask a language model who "she" is in *the nurse scolded the farmer because she was
# late*, and it may answer from the occupation's gender stereotype instead of from the
# fact that decides it. Where does that dependence come from, and can a prompt alone,
# with no access to the weights, undo it? {cite:p}`li2025debias` read the problem
# causally. Social information reaches the decision along two pathways: a dependence
# the model learnt from a training corpus shaped by *selection* (which sentences got
# written and kept), and social-salient text in the prompt itself. A prompt is then a
# selection mechanism of its own: it conditions the model on the kind of document
# such a prompt came from. Three strategies follow: (I) nudge the model towards the
# social-agnostic facts, (II) counteract the selection bias with a counterfactual,
# (III) nudge it away from social-salient text; combined, they work best (GPT-4 on
# WinoBias {cite:p}`zhao2018winobias`: a pro − anti accuracy gap of 21.74% with the default prompt, 2.17% with
# I+II).
#
# A small real model cannot show what the paper shows: SmolLM2-135M {cite:p}`allal2025smollm2` rarely
# resolves WinoBias-style pronouns from the facts, so a prompt has no knowledge
# to bring out (its lean on gender is measured below). This chapter *plants*
# a bias instead: it samples a corpus from
# an explicit causal model with a selection node, trains a tiny Llama on it, and
# tests the strategies on sentences whose facts the prompts' cues never came with.
# The bias is measured as the paper measures it, the pro − anti accuracy gap on
# WinoBias Type I sentences, whose facts are rare in the corpus; beside it, on
# sentences where no fact decides the referent, as in the ambiguous contexts of
# BBQ {cite:p}`parrish2022bbq`.

# %% tags=["parameters"]
beta = 0.8
steps = 800
corpus_size = 20000
seeds = 8
n_smol = 800
n_test = 384
seed = 0
device = "auto"

# %%
import time

import numpy as np

from iclr25 import core, llm
from iclr25.chapters import debias

p = core.chapter("debias", globals())

# %% [markdown]
# ## The causal model and its selection node
#
# Each sentence names two occupations, one of the two with a stereotyped gender
# (*nurse*, *mechanic*) and one of 18 without, and a pronoun of gender $G$. A fact, a
# verb and a reason (24 of them), fixes who the pronoun refers to (WinoBias Type I);
# 20% of sentences are ambiguous, their referent drawn at random. $R$ says whether
# the pronoun refers to the stereotyped occupation; a sentence is
# *anti-stereotypical* when the stereotype would pick the wrong referent. Every
# document comes from a source $\mathrm{Src}$, each with its own selection $S$:
#
# * **news** (85% of the corpus): an anti-stereotypical sentence, ambiguous ones
#   included, is kept with probability $1 - \beta$;
# * **fact documents**: a cue, the sentence, the deciding fact restated without the
#   pronoun, the answer;
# * **counterfactual documents**: the gender-swapped twin, then the sentence (same
#   answer); a twin is written under the same selection as news, at half its
#   strength (an anti-stereotypical one kept with probability $1 - \beta/2$);
# * **neutral documents**: an inhibitive cue, then the sentence;
# * **placebo documents**: a cue of their own (`memo :`), then the sentence,
#   selected exactly as news is; they are the control for every cue;
# * **combined documents** (2% of the corpus): the fact cue and the twin
#   together, as a prompt with I+II has them.
#
# The four single cues share the rest of the corpus equally. In the fact, neutral
# and combined documents $S$ does not depend on the sentence, so $S \perp G$. The
# corpus is pgmpy's rejection sample of the network given $S = 1$:
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: causal_model
# ```

# %%
debias.graph_figure().show()
exact = debias.anti_share(p.beta)
rows = debias.corpus(p.beta, p.corpus_size, p.seed)
news = [r for r in rows if r["Src"] == "news"]
print(
    f"anti-stereotypical share of news given S = 1 at beta {p.beta}: "
    f"(1 - beta)/(2 - beta) = {(1 - p.beta) / (2 - p.beta):.4f}, "
    f"VariableElimination {exact:.4f}, "
    f"rejection sample {np.mean([r['Anti'] == 'yes' for r in news]):.4f} "
    f"({len(news)} of {len(rows)} rows are news); at beta 0, where nothing "
    f"is selected, it is {debias.anti_share(0.0):.4f}"
)

# %% [markdown]
# A row of the network becomes a document: the order of the occupations, the fact
# (of the role that makes $R$ true, or one of eight ambiguous ones) and the other
# occupation are drawn when the document is written, once for the whole corpus.
# Eight Type I facts (four of each role) are rare: each appears in
# `TEST_FACT_DOCS` = 3 news documents only, so that training sees each about
# four times, and a model unsure of one can fall back on the stereotype. Four
# ambiguous facts appear in news only, never after a cue. Each tested fact never
# meets six of the neutral occupations. Two tests use those unseen
# occupation × fact pairs:
#
# * the **Type I test** (the paper's measure): sentences whose rare fact decides
#   the referent (WinoBias Type I); the gap is pro − anti accuracy;
# * the **bias test** (BBQ's ambiguous contexts): no fact decides, so a model
#   can only follow the dependence it learnt; each sentence is scored against
#   both readings, the one the stereotype picks (pro) and the other (anti), so
#   that the gap pro − anti is $2s - 1$ for a model that follows the stereotype
#   at rate $s$, and 0 for one whose pick ignores the pronoun.
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: documents
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: document
# ```

# %%
rng = np.random.default_rng(p.seed)
for source in debias.SOURCES:
    row = next(r for r in rows if r["Src"] == source)
    print(f"{source:>15}: {debias.render(row, rng)}")
cases = debias.bias_cases(p.n_test)
decided = debias.test_cases(p.n_test)
print(
    f"\nbias test: {len(cases)} cases ({sum(c.pro for c in cases)} pro), "
    f"e.g. {cases[0].sentence()}; Type I test: {len(decided)} cases "
    f"({sum(c.pro for c in decided)} pro); vocabulary of "
    f"{len(debias.vocabulary())} words"
)

# %% [markdown]
# ## The strategies as prompts
#
# Default: the sentence, then `who :`. **I** starts with the fact cue; the model
# writes the fact (greedy, up to the full stop), then is asked. **II** shows the
# gender-swapped twin first. **III** starts with the inhibitive cue. I+II puts
# two cues together as the combined documents do; I+III, as no training
# document does.
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: tiny_prompt
# ```
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: tiny_answer_prompts
# ```
#
# The answer is the occupation with the higher cloze log-probability after
# `who :`; the metrics are the accuracy on pro- and on anti-stereotypical cases and
# their gap:
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: metrics
# ```
#
# and the bias test scores each ambiguous sentence against both readings:
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: bias_cases
# ```
#
# ## The planted bias
#
# Tiny Llamas (4 layers, $d = 64$) are trained on corpora from the same network:
# `seeds` of them at $\beta$ = `beta` (each seed its own corpus and training), and
# as many controls at $\beta = 0$, where nothing is selected, one for each seed
# (its corpus drawn and its model trained with that seed).
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: train_planted
# ```

# %%
start = time.perf_counter()
runs = range(p.seed, p.seed + p.seeds)
with core.threads(1):
    models = {
        (b, s): debias.train_planted(
            b, steps=p.steps, seed=s, corpus_size=p.corpus_size
        )
        for b in (p.beta, 0.0)
        for s in runs
    }
    ambiguous = {
        k: debias.evaluate(lm, cases, ["default"], debias.score_tiny)
        for k, lm in models.items()
    }
    typeI = {
        s: debias.evaluate(
            models[p.beta, s], decided, debias.STRATEGIES, debias.score_tiny
        )
        for s in runs
    }
    unselected = {
        s: debias.evaluate(models[0.0, s], decided, ["default"],
                           debias.score_tiny)
        for s in runs
    }

# %%
planted = models[p.beta, p.seed]
print(
    f"{len(models)} tiny models trained (or read from the cache) and "
    f"scored in {time.perf_counter() - start:.1f} s"
)
fact_prompt = debias.tiny_prompt(decided[0], "I")
print(fact_prompt, "->", llm.generate(planted, [fact_prompt], 5)[0])

# %% [markdown]
# The rules, fixed beforehand (the chapter's CLAIMS registry): each seed's
# planted model against the same seed's $\beta = 0$ model, with the default
# prompt, paired over the `seeds` seeds. On the ambiguous sentences the gap
# must exceed the control's by more than 0.10 (95% interval); on the Type I
# test, the paper's measure, by more than 0.05.

# %%
bias_gap = {
    b: np.array([ambiguous[b, s]["default"]["gap"] for s in runs])
    for b in (p.beta, 0.0)
}
print("ambiguous gap per seed:",
      {b: g.round(3).tolist() for b, g in bias_gap.items()})
core.claim(
    "selection-makes-bias",
    estimate=core.stats.paired_runs(
        bias_gap[p.beta], bias_gap[0.0], items=len(cases)
    ),
    measured=f"ambiguous gap at beta {p.beta} minus beta 0, means "
    f"{bias_gap[p.beta].mean():.3f} and {bias_gap[0.0].mean():.3f}",
);

# %%
gap = {
    st: np.array([typeI[s][st]["gap"] for s in runs])
    for st in debias.STRATEGIES
}
unselected_gap = np.array([unselected[s]["default"]["gap"] for s in runs])
debias.accuracy_figure(
    typeI[p.seed], f"Tiny Llama, beta {p.beta}, seed {p.seed}: Type I test"
).show()
print(
    "Type I gap per prompt and seed:",
    {st: g.round(3).tolist() for st, g in gap.items()},
    "\nat beta 0, default prompt:", unselected_gap.round(3).tolist(),
)
core.claim(
    "typeI-gap",
    estimate=core.stats.paired_runs(
        gap["default"], unselected_gap, items=len(decided)
    ),
    measured=f"default Type I gap at beta {p.beta} minus beta 0, means "
    f"{gap['default'].mean():.3f} and {unselected_gap.mean():.3f}",
);
# %% [markdown]
# ## Do the strategies remove it?
#
# On the Type I test, whose facts were never seen after a cue, each of I, II
# and III should cut the default gap by 30% more than the placebo cue does. A
# cue on its own can move the answers: the prompt is off the news the model
# mostly read, and the test facts never came after any cue. The placebo's
# documents are selected as news is, so its cut is what a cue does without
# counteracting selection. The cut of a prompt is
# $1 - \mathrm{gap}_s / \mathrm{gap}_\mathrm{default}$ on one seed's model; the
# rule is on the strategy's cut minus the placebo's, paired by seed, its 95%
# interval over the seeds above 0.30.

# %%
cut = {st: 1 - gap[st] / gap["default"] for st in debias.STRATEGIES}
print("cut per prompt and seed:",
      {st: c.round(2).tolist() for st, c in cut.items()})
for st in ("I", "II", "III"):
    beyond = core.stats.paired_runs(
        cut[st], cut["placebo"], items=len(decided)
    )
    core.claim(
        f"strategy-{st}-reduces",
        estimate=beyond,
        measured=f"{st}'s cut minus the placebo's, mean cuts "
        f"{cut[st].mean():.2f} and {cut['placebo'].mean():.2f}",
        quote=dict(smallest=gap["default"].min(),
                   largest=gap["default"].max()),
    )

# %% [markdown]
# The combination I+II is seen in 2% of the training documents, with none of
# the test facts. The rule: per seed, the absolute gap of I+II minus the
# smaller absolute gap of I and II, its interval over the seeds below 0.
# Beside it, the run prints what each prompt does to Type I accuracy (the
# paper reports no accuracy for WinoBias, so no claim rests on it).

# %%
best = np.minimum(abs(gap["I"]), abs(gap["II"]))
edge = core.stats.paired_runs(abs(gap["I+II"]), best, items=len(decided))
core.claim(
    "combined-best",
    estimate=edge,
    measured="|I+II| - min(|I|, |II|), mean |gap| "
    f"{abs(gap['I+II']).mean():.3f} and {best.mean():.3f}",
)
acc = {
    st: np.array([typeI[s][st]["accuracy"] for s in runs])
    for st in debias.STRATEGIES
}
for st in ("placebo", "II", "I+II"):
    moved = core.stats.paired_runs(acc[st], acc["default"])
    print(f"Type I accuracy, {st} minus default: {moved}")
# %% [markdown]
# ## SmolLM2 with the strategies in words
#
# The same kind of sentence, in natural language, for SmolLM2-135M-Instruct:
# the two occupations are scored as continuations of `refers to the`. This
# section is an illustration on one real model, not a test of the paper's
# claims: its two claims are about SmolLM2 alone, with sentences as the unit.
# Strategy I runs as the paper runs it, in two steps, facts first: SmolLM2
# writes the facts of the sentence leaving gender aside, then is asked with
# its facts before the question. Scores are cached.
#
# ```{literalinclude} ../lib/iclr25/chapters/debias/method.py
# :pyobject: smol_fact_prompts
# ```

# %%
start = time.perf_counter()
smol = llm.load_model("smollm2-135m", p.torch_device)
smol_cases = debias.smol_cases(p.n_smol, rng)
with core.threads(1):
    smol_scores = {
        st: debias.score_smol(smol, smol_cases, st) for st in ("default", "I")
    }

# %%
smol_per = {
    st: debias.metrics(smol_cases, debias.picks(smol_cases, sc))
    for st, sc in smol_scores.items()
}
per_sentence = {
    st: debias.sentence_gaps(smol_cases, debias.picks(smol_cases, sc))
    for st, sc in smol_scores.items()
}
print(
    f"SmolLM2 scored in {time.perf_counter() - start:.1f} s on "
    f"{len(smol_cases)} cases:",
    {
        st: {k: round(v, 3) for k, v in m.items()}
        for st, m in smol_per.items()
    },
)
print(
    "Strategy I, step 2:\n"
    + debias.smol_fact_prompts(smol, smol_cases[:1])[0]
)

# %% [markdown]
# The rules: SmolLM2's default gap, its interval over the `n_smol` / 2
# sentences (each with both pronouns) above 0.10; and the per-sentence gap
# of the default prompt minus Strategy I's, its interval above 0.

# %%
debias.accuracy_figure(
    smol_per, f"SmolLM2, {len(smol_cases)} cases per prompt"
).show()
bias = core.stats.mean(per_sentence["default"])
core.claim(
    "smollm2-bias",
    estimate=bias,
    measured="default gap over sentences, accuracy "
    f"{smol_per['default']['accuracy']:.3f}",
)
facts_cut = core.stats.paired_difference(
    per_sentence["default"], per_sentence["I"]
)
core.claim(
    "smollm2-facts-first",
    estimate=facts_cut,
    measured="per-sentence gap, default minus I",
);
# %% [markdown]
# ## All prompts, the planted models and GPT-4
#
# The Type I gap per prompt for each planted model and SmolLM2, beside
# GPT-4's on WinoBias Type I as the paper reports it (default, contrastive
# examples beside II, DDP beside I+II).

# %%
debias.gap_figure(
    {f"tiny, beta {p.beta}, seed {s}": typeI[s] for s in runs}
    | {"SmolLM2": smol_per}
).show()

# %% [markdown]
# ## A black-box backend (opt-in)
#
# The paper needs only black-box access. `llm.backend` gives one interface to
# SmolLM2, a local transformers folder, or an OpenAI-compatible server: a local
# model scores the options, an endpoint writes an answer and the option it names
# first is taken. The book never calls out; a reader runs, for instance,
#
# ```python
# model = llm.backend("openai:http://localhost:8000/v1")
# prompts = [debias.smol_prompt(c, "I+II") for c in smol_cases]
# model.choose(prompts, [c.options for c in smol_cases])
# ```
#
# ```{literalinclude} ../lib/iclr25/llm/backends.py
# :pyobject: backend
# ```
#
# ## Inspect a sentence
#
# Pick the occupations, the fact (a Type I fact, or an ambiguous one, where the
# bias is measured), the pronoun and the strategy: the bars show each
# referent's probability (the two options renormalised) under the planted model
# and SmolLM2. On the static page, the slider moves over the strategies and shows
# the planted model's pro/anti accuracy.


# %% tags=["hide-input"]
def show(value):
    if isinstance(value, str):
        return debias.accuracy_figure(
            {value: typeI[p.seed][value]},
            f"Tiny Llama, beta {p.beta}: Type I accuracy with {value}",
        )
    case, strategy = value
    probs = {
        f"tiny, beta {p.beta}": debias.two_way(
            debias.score_tiny(planted, [case], strategy)
        )[0],
        "SmolLM2": debias.two_way(
            llm.score_continuations(
                smol,
                [debias.smol_prompt(case, strategy)],
                [[f" {o}" for o in case.options]],
            ).numpy()
        )[0],
    }
    return debias.referent_figure(probs, case, strategy)


core.explore(
    show, list(debias.STRATEGIES), "strategy", live=debias.inspector()
)

# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** Two setup claims read the regime: each sets the
# planted models against the same seeds' $\beta = 0$ models,
# `selection-makes-bias` on BBQ's ambiguous measure and `typeI-gap` on the
# paper's measure, on which the tiny-model paper claims rest. Their intervals
# are over the `seeds` models, each strategy's paired with the placebo cue's
# cut on the same model. The SmolLM2 claims are about that one model, with
# its sentences as the unit: an illustration on a real model, which answers
# these sentences near chance, not a test of the paper's claims.
# `smollm2-bias` is the setup claim for SmolLM2, on which
# `smollm2-facts-first` rests.

# %% [markdown]
# ## What differs from the paper
#
# * **Models.** The paper prompts GPT-3.5, GPT-4 and other large models through
#   their APIs. Ours are tiny Llamas trained here, whose bias we planted and
#   therefore know (`seeds` of them, and as many trained without selection; the
#   intervals of the tiny-model claims are over these seeds), and SmolLM2-135M,
#   an illustration (its accuracy on these sentences is printed above).
#   SmolLM2 is scored on `n_smol` Type I cases with the default prompt and
#   with Strategy I; the other strategies appear for SmolLM2 only in the
#   inspector, to keep the chapter within its CPU budget. An endpoint can be
#   plugged in through `llm.backend`, never by the book itself.
# * **Data.** WinoBias and BBQ are replaced by sentences of the same shape (Type I:
#   a fact decides the referent; 20% ambiguous) generated from an explicit causal
#   model, with 20 occupations of which two are stereotyped. The corpus, not the
#   world, carries the stereotype, through the selection node.
# * **Where the bias is measured.** The paper measures GPT-4's gap on WinoBias
#   Type I, where its knowledge of the facts is imperfect and the stereotype
#   fills the gaps. Here the Type I test facts are made rare (three news
#   documents each, about four sightings in training) to give the tiny model
#   that imperfect knowledge; the frequency is set by the design, not by the
#   world. BBQ's measure sits beside it on ambiguous sentences, scored against
#   both readings; BBQ's third answer, "unknown", is not offered, and DDP on BBQ
#   (I+III) is shown, not claimed.
# * **Strategies.** For the tiny model a strategy is a cue it met in training
#   documents of one source (facts, counterfactual twins, inhibitive cue, and
#   2% of documents with the fact cue and the twin together), not an
#   instruction it reads: a prompt selects which part of the training
#   distribution the model conditions on, which is the paper's reading of
#   prompting made literal. How strongly each source is selected is our
#   design: the counterfactual twins at half the news's strength, so that II
#   leaves part of the gap as GPT-4's contrastive prompt does. The placebo cue
#   has no counterpart in the paper; it is the control that a cue alone
#   cannot pass. Strategy I writes the fact with the tiny model's own
#   greedy generation, and the fact it writes names the referent, so it is the
#   decision as much as a social-agnostic fact. For SmolLM2, Strategy I runs in
#   two steps (eight greedy tokens of facts, then the question), in our wording
#   of the paper's instructions.
# * **Metrics.** Accuracy on pro- and anti-stereotypical sentences and their gap,
#   as the paper's WinoBias results; on the bias test the gap equals BBQ's bias
#   score without the "unknown" answer.
#
# ## Going further
#
# A longer training, a stronger selection, more SmolLM2 cases (with more steps
# the rare test facts are seen more often, and the Type I regime moves):
#
# ```
# python -m iclr25 run debias -p steps=2000 -p corpus_size=50000 \
#     -p beta=0.9 -p seeds=12 -p n_smol=2000
# ```
#
# and a larger model through `llm.backend` (a local transformers folder, or an
# OpenAI-compatible server started by the reader) to test what SmolLM2 cannot.
