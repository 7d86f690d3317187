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
# # AI2TALE: which sentence makes an email phishing?
#
# A phishing detector that says "phishing" is more useful when it also says
# *why*: which sentence plays on urgency, authority or greed. Real mail comes
# with a label for the whole email at most, never with the guilty sentence
# marked. Can a model trained from email labels alone learn to point at that
# sentence? {cite:p}`nguyen2025ai2tale` train a selector that keeps one
# sentence per email and a predictor that must get the label right from that
# sentence alone; an information-bottleneck prior keeps the selection small.
# They score the selection by the label it still supports (Label-Accuracy) and
# by whether it carries a cognitive cue (Cognitive-True-Positive, a keyword
# test), and report gains of 1.5-3.5 points over baselines on seven email
# datasets. Real emails cannot tell whether the keyword test finds the guilty
# sentence; here the emails are generated with the cue sentences planted, so
# we can check the selection against the truth as well.

# %% tags=["parameters"]
n_emails = 2400
max_sentences = 40
max_tokens = 16
embedding = 32
filters = 64
epochs = 10
batch_size = 128
lr = 0.001
tau = 0.5
k = 2
sigma = 0.3
label_noise = 0.05
seeds = 5
seed = 0
device = "auto"

# %%
import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
from tqdm.auto import tqdm

from iclr25 import core
from iclr25.chapters import ai2tale
from iclr25.core import stats

p = core.chapter("ai2tale", globals())
ai2tale.check_settings(p.k, p.tau, p.sigma, p.max_sentences, "ai2tale")

# %% [markdown]
# ## The emails
#
# The paper uses seven real email corpora; we generate ours, so that each
# phishing email's guilty sentences are known. An email has 30-40
# sentences: a greeting, a body of everyday sentences (meetings, invoices,
# links, sums, dates) and *decoys* (everyday sentences that use cue words:
# "the deadline for the budget review is friday"), and a sign-off.
#
# Cues come in two families, each in three strengths: the sender's
# *authority* ("this message comes from the finance department" is weak,
# "this is the fraud department of the bank, and the matter is urgent" is
# strong) and a *request* to the reader ("please confirm the details below"
# is weak, "reply with your password and wire 450 dollars today" is
# strong). An email is phishing when it holds one cue of each family, in
# two different sentences, whose strengths sum to 4 or more. Benign mail
# holds no cue, one family alone at any strength (a real director writes,
# a real colleague asks for a file), or a weak pair. Every cue sentence
# therefore occurs in benign mail too, and the label lies in the pair: the
# selector keeps $k = 2$ sentences. Half of the cue templates avoid the
# keyword list, 5% of the training and validation labels are flipped, and
# the test emails use their own templates, rewordings of the training ones
# in the training words.
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/corpus.py
# :pyobject: make_email
# ```

# %%
corpus = ai2tale.make_corpus(
    p.n_emails,
    p.seed,
    p.max_sentences,
    noise=p.label_noise,
    shares=ai2tale.SHARES,
)
vocab = ai2tale.build_vocab(corpus["train"])
train, val, test = (
    ai2tale.encode(corpus[s], vocab, p.max_sentences, p.max_tokens)
    for s in ("train", "validation", "test")
)
phishing = [e for e in corpus["test"] if e.true_label == 1]

# %%
print(
    f"{len(train)} training, {len(val)} validation and {len(test)} test "
    f"emails, vocabulary {len(vocab)} words"
)
print(
    f"flipped training labels: "
    f"{(train.labels != train.true_labels).float().mean():.3f}"
)
benign = next(e for e in corpus["test"] if e.true_label == 0 and any(e.cue))
for email in (phishing[0], benign):
    kind = "phishing" if email.true_label else "benign"
    print(f"\n--- a {kind} test email (cue strength in [], ~ decoy) ---")
    for s, st, decoy in zip(email.sentences, email.strength, email.decoy):
        print((f"[{st}] " if st else "~   " if decoy else "    ") + s)

# %% [markdown]
# Does one sentence decide? A property of the generator, checked before any
# model is trained: a bag-of-words logistic regression reads each email's
# planted cues (both, or the strongest alone) and predicts the label; the
# setup claim asks that the pair be worth more than 5 points over the
# single sentence, room above the paper's margins for a selector that
# keeps both, over `seeds` corpora generated at seeds `seed`, `seed + 1`,
# and so on (the models below train on the first).
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/corpus.py
# :pyobject: reader_accuracies
# ```

# %%
SEEDS = list(range(p.seed, p.seed + p.seeds))
readers = pd.DataFrame([
    {n: a.mean() for n, a in ai2tale.reader_accuracies(c, s).items()}
    for s, c in ((s, corpus if s == p.seed else ai2tale.make_corpus(
        p.n_emails, s, p.max_sentences, noise=p.label_noise,
        shares=ai2tale.SHARES)) for s in SEEDS)], index=SEEDS)
print(
    f"accuracy from the strongest cue alone {readers['one'].mean():.3f}, "
    f"from both cues {readers['two'].mean():.3f} (means over corpora)"
)
core.claim(
    "pair_needed",
    estimate=stats.paired_runs(readers["two"], readers["one"]),
    measured=f"both cues minus the strongest alone, {p.seeds} corpora",
);
# %% [markdown]
# ## The method
#
# Each sentence $x_i$ is encoded to a vector $e_i$ (word embedding, dropout,
# a width-3 convolution with ReLU, max-pooled over the words). A selector MLP
# gives it a probability $p_i$ of being selected. To train through the
# discrete choice, the official code relaxes it with Gumbel noise, using $p_i$
# and $1 - p_i$ directly as logits:
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/method.py
# :pyobject: sample_concrete
# ```
#
# The predictor reads $\sum_i z_i e_i$. At test time the $k = 2$ sentences
# with the largest $p_i$ are kept, skipping empty (padding) slots, and the
# label is predicted from them alone:
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/method.py
# :pyobject: topk_mask
# ```
#
# The information bottleneck asks the selection to carry little about the
# email beyond the label. The paper bounds that term with a Gaussian prior of
# scale $\sigma$ on the selected sentences' features, which gives a penalty on
# $p_i$ weighted by each sentence's squared mean feature:
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/method.py
# :pyobject: prior_term
# ```
#
# As in the official code, the predictor is trained on the relaxed $z$ over
# all of an email's sentences and tested on the two sentences selected.
#
# Every batch takes two steps: (1) the selector frozen, the encoder and
# predictor learn from *random* relaxed masks (so that they can read any
# sentence before the selector commits); (2) everything learns on the
# cross-entropy plus $\lambda$ times the prior.
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/method.py
# :pyobject: train_step
# ```
#
# The baselines share the encoder and predictor: **L2X** {cite:p}`chen2018l2x` (a Gumbel-softmax
# top-k selector, no random-mask step, no prior), **attention** pooling
# (trained on the softmax-weighted sum, selects the largest weights) and
# **random** selection (a predictor trained on, and tested with, random
# sentences). A bag-of-words logistic regression on whole emails is the
# accuracy reference.
#
# ## The measures
#
# Label-Accuracy is the accuracy of the prediction from the selected
# sentences. The Cognitive-True-Positive (CTP) is, over phishing test
# emails, the share of selected sentences that hold a keyword of some
# category after stop-word removal and stemming. Cue-Hit, which the paper
# could not measure, is the mean share of a phishing test email's planted
# cues that its selection holds.
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/measures.py
# :pyobject: keyword_counts
# ```

# %% [markdown]
# ## Training and model selection
#
# As in the official code, every model keeps the epoch with the best
# validation Label-Accuracy. The prior's weight $\lambda$ is chosen on
# validation too: at the first seed AI2TALE is trained at every $\lambda$ of
# the sweep, and the $\lambda > 0$ with the best validation accuracy is
# AI2TALE's for the other seeds and for the ablation (step (2) alone).
# Every arm trains at each of the `seeds` seeds: AI2TALE, $\lambda = 0$,
# the ablation, L2X, attention and random selection.

# %%
ARCH = dict(embedding=p.embedding, filters=p.filters, k=p.k, tau=p.tau)
KEY = dict(
    n=p.n_emails,
    seed=p.seed,
    s=p.max_sentences,
    t=p.max_tokens,
    noise=p.label_noise,
    shares=ai2tale.SHARES,
)
DATASETS = {"pair": (train, val, test, len(vocab), ARCH, KEY)}


# %%
def fit(method, s, lam_run=0.0, step=True, regime="pair"):
    """Train (or load) one model at training seed ``s`` on the corpus of
    ``regime``; its test results."""
    tr, va, te, size, arch, key = DATASETS[regime]
    recipe = ai2tale.Recipe(
        epochs=p.epochs,
        batch_size=p.batch_size,
        lr=p.lr,
        sigma=p.sigma,
        lam=lam_run,
        random_mask_step=step,
        seed=s,
    )
    model, curve, val_curve = ai2tale.train_cached(
        method, tr, size, arch, recipe, key, va
    )
    return model, curve, val_curve, ai2tale.evaluate(model, te, seed=s)


# %%
runs = {}
for x in tqdm(ai2tale.LAMBDAS, desc="lambda sweep"):
    runs[f"lambda={x:g}", p.seed] = fit("ai2tale", p.seed, x)
best_val = {x: max(runs[f"lambda={x:g}", p.seed][2]) for x in ai2tale.LAMBDAS}
LAM = max((x for x in ai2tale.LAMBDAS if x > 0), key=best_val.get)
print(
    "best validation accuracy per lambda:",
    {x: round(v, 3) for x, v in best_val.items()},
    f"-> lambda {LAM:g}",
)
MAIN, ABLATED = f"lambda={LAM:g}", "no step (1)"

# %%
jobs = [(MAIN, "ai2tale", s, LAM) for s in SEEDS[1:]]
jobs += [("lambda=0", "ai2tale", s, 0.0) for s in SEEDS[1:]]
jobs += [(m, m, s, 0.0) for m in ("l2x", "attention", "random")
         for s in SEEDS]
for name, method, s, lam in tqdm(jobs, desc="models"):
    runs[name, s] = fit(method, s, lam)
for s in SEEDS:
    runs[ABLATED, s] = fit("ai2tale", s, LAM, step=False)
results = {key: r[3] for key, r in runs.items()}
models = {key: r[0] for key, r in runs.items()}

# %% [markdown]
# The mean training cross-entropy per epoch (first seed) shows whether each
# model learnt at all (with 5% flipped labels, about 0.2 is the floor); the
# validation accuracy per epoch, which picks the epoch kept, is beside it.

# %%
first = {name: r for (name, s), r in runs.items() if s == p.seed}
x_epochs = np.arange(1, p.epochs + 1)
core.plot(
    x_epochs,
    {n: r[1] for n, r in first.items()},
    title="Training cross-entropy (step 2)",
    xlabel="epoch",
    ylabel="mean cross-entropy",
    height=340,
).show()
core.plot(
    x_epochs,
    {n: r[2] for n, r in first.items()},
    title="Validation Label-Accuracy",
    xlabel="epoch",
    ylabel="accuracy",
    height=340,
).show()

# %% [markdown]
# ## AI2TALE against the baselines
#
# The three metrics per method (averaged over its seeds), with F1, the
# false-positive and false-negative rates, the share of phishing emails
# whose two cues are both kept, and the whole-email bag of words.

# %%
SCALARS = ["accuracy", "f1", "fpr", "fnr", "ctp", "cue_hit"]
NAMES = sorted({name for name, _ in results}, key=list(first).index)
seeds_of = {n: [s for m, s in results if m == n] for n in NAMES}
is_phish = test.true_labels.numpy() == 1
table = pd.DataFrame(
    {
        name: {
            m: np.mean([results[name, s][m] for s in seeds_of[name]])
            for m in SCALARS
        }
        | {
            "both cues": np.mean(
                [
                    (results[name, s]["hit"][is_phish] == 1).mean()
                    for s in seeds_of[name]
                ]
            ),
            "seeds": len(seeds_of[name]),
        }
        for name in NAMES
    }
).T

# %%
bow = ai2tale.bag_of_words_accuracy(corpus["train"], corpus["test"], p.seed)
table.loc["bag of words", "accuracy"] = bow
COMPARED = {
    "AI2TALE": MAIN,
    "L2X": "l2x",
    "attention": "attention",
    "random": "random",
}
shown = {
    label: table.loc[name].dropna().to_dict()
    for label, name in COMPARED.items()
}
shown["bag of words"] = {"accuracy": bow}
ai2tale.metrics_figure(shown, "The metrics per method, test emails").show()
table.round(3).astype({"seeds": "Int64"})  # bag of words: no seeds

# %% [markdown]
# The headline averages Label-Accuracy and CTP, so it rests on a second
# setup claim: does the keyword test credit the planted cues? On the
# sentences the four methods select in phishing test emails (all seeds),
# CTP is the share holding a keyword, and it moves with the share of
# selected cues by Youden's $J$ = P(keyword | cue) - P(keyword | other
# sentence). $J$ is computed at each training seed, and its interval is a
# t interval over the seeds.


# %%
def keyword_table(seed):
    """(holds a keyword, is a planted cue) of every selected sentence of a
    phishing test email, over every compared method at training seed
    ``seed``."""
    rows = []
    for (name, s), r in results.items():
        if name not in COMPARED.values() or s != seed:
            continue
        for i in np.flatnonzero(is_phish):
            for j in np.flatnonzero(r["mask"][i]):
                rows.append(
                    (
                        ai2tale.is_cognitive(test.texts[i][j]),
                        bool(test.cues[i, j]),
                    )
                )
    return np.array(rows)


# %%
kws = {s: keyword_table(s) for s in SEEDS}
kw = np.concatenate(list(kws.values()))
tp = stats.share(int(kw[kw[:, 1], 0].sum()), int(kw[:, 1].sum()))
fp = stats.share(int(kw[~kw[:, 1], 0].sum()), int((~kw[:, 1]).sum()))
print(
    f"keyword in {tp} of selected cues, in {fp} of other selected sentences"
    " (all seeds)"
)
youden = [k[k[:, 1], 0].mean() - k[~k[:, 1], 0].mean() for k in kws.values()]
core.claim(
    "ctp_tracks_truth",
    estimate=stats.over_runs(youden, items=len(kw)),
    measured=f"Youden's J of the keyword test, {p.seeds} seeds",
);

# %% [markdown]
# Does AI2TALE point at the cues better than the selectors it is compared
# with? Cue-Hit against the better of L2X and attention, paired by training
# seed and phishing test email: a two-stage bootstrap draws the seeds, then
# the emails within each (random selection's Cue-Hit is printed beside).


# %%
def paired(a, b, key, rows=slice(None)):
    """Per seed, ``key`` of arm a minus arm b on each test email in
    ``rows``: the runs of a two-stage bootstrap."""
    return [results[a, s][key][rows] - results[b, s][key][rows]
            for s in SEEDS]


best = max(("l2x", "attention"), key=lambda n: table.loc[n, "cue_hit"])
print({n: round(table.loc[n, "cue_hit"], 3)
       for n in (MAIN, "l2x", "attention", "random")})
core.claim(
    "localises",
    estimate=stats.two_stage(paired(MAIN, best, "hit", is_phish)),
    measured=f"AI2TALE's Cue-Hit minus {best}'s, {p.seeds} seeds",
);

# %% [markdown]
# The paper's headline: AI2TALE beats the baselines on the mean of
# Label-Accuracy and CTP. Per test email the score is half its correctness
# plus, on phishing emails, half its CTP share divided by the phishing
# share; its mean is the headline. The claim compares AI2TALE with the
# strongest baseline, paired by training seed and email.


# %%
def headline(r, phish):
    """Per test email of one run ``r``: (correct + CTP share / phishing
    share on phishing emails) / 2."""
    return (r["correct"] + r["keyword_share"] * phish / phish.mean()) / 2


scores = {label: [headline(results[n, s], is_phish) for s in SEEDS]
          for label, n in COMPARED.items()}
print({label: round(float(np.mean(v)), 3) for label, v in scores.items()})
rival = max(["L2X", "attention", "random"], key=lambda m: np.mean(scores[m]))
core.claim(
    "beats_baselines",
    estimate=stats.two_stage([a - b for a, b in zip(scores["AI2TALE"],
                                                     scores[rival])]),
    measured=f"AI2TALE minus {rival}, {p.seeds} seeds",
);

# %% [markdown]
# Where the headline's two halves come from: AI2TALE's predictor learns from
# relaxed masks that keep some 15-20 of an email's 30-40 sentences
# (SampleConcrete keeps a sentence with probability between 0.27 and 0.73
# whatever its $p_i$, and step (1) keeps half at random), and it is tested
# on the sum of the two sentences it selects. L2X's concrete top-k trains
# its predictor on about $k$ sentences, attention on a weighted mean of
# them, closer to what they read at test. A predictor that meets at test
# a sum far smaller than in training can call every email one class; the
# false-positive rate (benign test emails called phishing) and the share of
# phishing emails whose two cues are both selected, per method:

# %%
for label, name in COMPARED.items():
    print(
        f"{label:>9}: false-positive rate {table.loc[name, 'fpr']:.2f}, "
        f"both cues selected {table.loc[name, 'both cues']:.2f}"
    )

# %% [markdown]
# ## The paper's regime: one sufficient cue, $k = 1$
#
# Is the headline's outcome the two-cue design or the official relaxation?
# A second corpus follows the paper's regime: a phishing email holds one
# strong cue of either family, which decides its label alone, and benign
# mail holds decoys but no cue. AI2TALE (at the chosen $\lambda$), L2X and
# attention select $k = 1$ sentence and train at every seed. If AI2TALE
# leads here, the two-cue design is what it misses; if not, the relaxation
# is. A report, not a claim: the headline score, AI2TALE minus the better
# baseline, paired by seed and email.

# %%
single = ai2tale.make_corpus(p.n_emails, p.seed, p.max_sentences,
                             noise=p.label_noise, shares=ai2tale.SHARES,
                             regime="single")
vocab1 = ai2tale.build_vocab(single["train"])
DATASETS["single"] = (
    *(ai2tale.encode(single[part], vocab1, p.max_sentences, p.max_tokens)
      for part in ("train", "validation", "test")),
    len(vocab1), {**ARCH, "k": 1}, {**KEY, "regime": "single"})
phish1 = DATASETS["single"][2].true_labels.numpy() == 1
one_cue = {m: [headline(fit(m, s, LAM if m == "ai2tale" else 0.0,
                            regime="single")[3], phish1) for s in SEEDS]
           for m in ("ai2tale", "l2x", "attention")}
rival1 = max(("l2x", "attention"), key=lambda m: np.mean(one_cue[m]))
lead = stats.two_stage([a - b for a, b in zip(one_cue["ai2tale"],
                                               one_cue[rival1])])
print({m: round(float(np.mean(v)), 3) for m, v in one_cue.items()})
print(f"single cue, k = 1: AI2TALE minus {rival1}: {lead}")

# %% [markdown]
# ## What the selectors pick
#
# Each bar is a sentence of one phishing test email, its length the selection
# score ($p_i$ for AI2TALE, the logit for L2X); red marks the selected
# sentences, `*` a planted cue and `(k)` a sentence holding a keyword.


# %%
def show_email(i, name):
    r = results[name, p.seed]
    return ai2tale.email_figure(
        test.texts[i],
        r["scores"][i],
        r["mask"][i],
        test.cues[i],
        title=f"{name}: test email {i} (label {int(test.true_labels[i])},"
        f" predicted {r['pred'][i]})",
    )


FIRST = int(np.flatnonzero(is_phish)[0])
for name in (MAIN, "lambda=0", "l2x"):
    show_email(FIRST, name).show()

# %% [markdown]
# ## The prior's weight
#
# The sweep $\lambda \in \{0, 10^{-3}, 10^{-2}, 10^{-1}\}$ at the first
# seed shows the three metrics as the prior's weight grows; the slider
# picks $\lambda$ (the grey bars are $\lambda = 0$).

# %%
SWEEP = list(ai2tale.LAMBDAS)
sweep = {
    x: {m: results[f"lambda={x:g}", p.seed][m] for m in ai2tale.METRIC_NAMES}
    for x in SWEEP
}


def sweep_figure(lam_value):
    names = list(ai2tale.METRIC_NAMES.values())
    fig = go.Figure()
    for x, color in ((0.0, "#bbbbbb"), (lam_value, "#1f77b4")):
        fig.add_bar(
            x=names, y=list(sweep[x].values()), name=f"lambda = {x:g}",
            marker_color=color,
        )  # fmt: skip
    fig.update_layout(
        title=f"AI2TALE at lambda = {lam_value:g}", barmode="group",
        yaxis=dict(range=[0, 1.05]), height=360,
    )  # fmt: skip
    return fig


# %%
core.explore(sweep_figure, SWEEP, "lambda", active=SWEEP.index(LAM));
# %% [markdown]
# The claim "the prior helps": Cue-Hit at the chosen $\lambda$ against
# $\lambda = 0$, paired by training seed and phishing test email. Beside it,
# the official $\lambda = 0.1$ at the first seed: its headline score (the
# mean of Label-Accuracy and CTP, as below) against the chosen $\lambda$'s.

# %%
core.claim(
    "prior_helps",
    estimate=stats.two_stage(paired(MAIN, "lambda=0", "hit", is_phish)),
    measured=f"Cue-Hit at lambda {LAM:g} minus at 0, {p.seeds} seeds",
)
official = {x: headline(results[f"lambda={x:g}", p.seed], is_phish).mean()
            for x in (0.1, LAM)}
print(f"headline score at the first seed: official lambda 0.1 "
      f"{official[0.1]:.3f}, chosen lambda {LAM:g} {official[LAM]:.3f}")
# %% [markdown]
# ## Dropping the random-mask step
#
# Step (1) trains the encoder and predictor on random sentence subsets. The
# ablation trains AI2TALE with step (2) alone at the chosen $\lambda$, at
# every seed. The claim: dropping step (1) costs more than one point of
# Label-Accuracy, paired by training seed and test email.

# %%
print(table.loc[[MAIN, ABLATED], ["accuracy", "ctp", "cue_hit"]].round(3))
core.claim(
    "random_mask_step",
    estimate=stats.two_stage(paired(MAIN, ABLATED, "correct")),
    measured=f"Label-Accuracy with step (1) minus without, {p.seeds} seeds",
);
# %% [markdown]
# ## Your own email
#
# With a running kernel, type an email into the box (sentences end with `.`,
# `!`, `?` or a line break), or pick a test email to fill it, and see each
# sentence's $p_i$ under AI2TALE at the chosen $\lambda$ and the sentences
# it selects. On the static page,
# the slider runs over ten test emails.

# %%
LIVE = models[MAIN, p.seed]


def email_view(item):
    if isinstance(item, str):
        data = ai2tale.encode(
            [ai2tale.text_email(item)], vocab, p.max_sentences, p.max_tokens
        )
        i, title = 0, "your email"
    else:
        data, i, title = test, int(item), f"test email {item}"
    scores, mask, logits = LIVE(data.tokens[i : i + 1])
    verdict = ["benign", "phishing"][int(logits.argmax())]
    return ai2tale.email_figure(
        data.texts[i],
        scores[0].detach().numpy(),
        mask[0].numpy(),
        data.cues[i],
        title=f"{title}: predicted {verdict}",
    )


# %%
box = widgets.Textarea(
    value="\n".join(phishing[0].sentences),
    continuous_update=False,
    layout={"width": "90%"},
)
pick = widgets.Dropdown(
    options=[(f"test email {i}", i) for i in range(20)],
    value=None,
    description="or pick",
)
pick.observe(
    lambda c: setattr(
        box, "value", "\n".join(s for s in test.texts[c["new"]] if s)
    ),
    names="value",
)
core.explore(
    email_view, list(range(10)), "test email", live=box, pickers=[pick]
);
# %% [markdown]
# ## Claims

# %%
core.claims_table();

# %% [markdown]
# **Reading the claims.** The claims on trained models are paired by
# training seed and test email, with a two-stage bootstrap over the seeds and
# the emails within them; the keyword test's $J$ takes a t interval over the
# seeds, and the corpus's setup claim a t interval over generated corpora.

# %% [markdown]
# Why the generator does not hand AI2TALE the answer: the label rule is a
# conjunction of two weak cues, which every selector sees alike, and
# nothing in it is shaped after AI2TALE's prior or its two-step training.
# What it does make easy is finding the cue sentences at all: they are few,
# and their words (ceo, password, wire) are rare among the everyday ones.
# The model starts from Keras' initialisers (`keras_init`), as the official
# model does: torch's defaults make the encoder's features far larger, and
# the prior, which weighs their square, far stronger.

# %% [markdown]
# ## What differs from the paper
#
# * **Data.** The paper uses seven real email corpora; ours are generated
#   from templates: two cue families in three strengths whose pair decides
#   the label, decoys, off-list cues, 5% flipped training labels and
#   disjoint train/test templates. That is what makes Cue-Hit possible, and
#   what makes the vocabulary small (about two hundred words) and the
#   phrasing repetitive. The selector keeps $k = 2$ sentences (the paper:
#   $k = 1$), since the label needs two; the single-cue corpus, a report,
#   is the paper's regime with $k = 1$.
# * **Scale.** 2,400 emails (1,200 train, 300 validation, 900 test) of 30-40
#   sentences of at most 16 tokens, embedding 32 and 64 filters, instead of
#   100 sentences of 50 tokens, embedding 150 and 250 filters.
# * **Seeds.** Every arm trains at five seeds (the paper does not say how
#   many); the $\lambda$ sweep runs at the first only.
# * **Training and selection.** The official loop (two steps a batch, Adam
#   1e-3 with per-tensor clipnorm 1, 10 epochs, batch 128), ported from
#   TensorFlow to torch. We keep the epoch with the best validation
#   accuracy, as the official code does, on a validation split of its own
#   (the official code selects on half of its test split); $\lambda$ is
#   chosen on the same validation split. At inference our top-k skips
#   empty sentence slots for the prediction as well as for the selection
#   (the official code skips them for the selection only).
# * **Keywords.** The official keyword lists (`kwords_stem.json`) ship with
#   the authors' data download, not the repository; ours are written from the
#   paper's seven categories, and the cue templates were written with them
#   in view (half hold a keyword, half avoid the lists). Stop words are
#   scikit-learn's list (nltk's is a download), the stemmer nltk's Snowball;
#   the official "English words" filter is dropped (all our sentences are
#   English).
# * **Baselines.** L2X, attention pooling and random selection share the
#   encoder and predictor; the paper compares more intrinsic explainers.
#
# ## Going further
#
# A scale closer to the paper's (a GPU helps little: the models are small):
#
# ```bash
# python -m iclr25 run ai2tale -p n_emails=20000 -p max_sentences=60 \
#     -p embedding=150 -p filters=250
# ```
#
# Other priors: `-p sigma=1.0`. Trained models are cached by configuration
# (`ICLR25_CACHE`), so a rerun only trains what changed.
