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
n_emails = 3000
max_sentences = 12
max_tokens = 16
embedding = 32
filters = 64
epochs = 10
batch_size = 128
lr = 0.001
tau = 0.5
k = 1
sigma = 0.3
lam = 0.1
lam_ablation = 0.001
label_noise = 0.05
seeds = 1
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

p = core.chapter("ai2tale", globals())
ai2tale.check_settings(p.k, p.tau, p.sigma, p.max_sentences, "ai2tale")

# %% [markdown]
# ## The emails
#
# The paper uses seven real email corpora; we generate ours, so that each
# phishing email's guilty sentences are known. An email has 4-15 sentences: a
# greeting, a body of everyday sentences (meetings, invoices, links, sums,
# dates) and a sign-off. A phishing email carries one or two *cue* sentences
# from the paper's seven cognitive categories (scarcity, consistency,
# reciprocity, authority, social proof, liking, security). Three things make
# the task harder than spotting a word:
#
# * benign emails carry *decoys*, sentences that use cue words legitimately
#   ("the deadline for the budget review is friday", "the office is closed for
#   the bank holiday");
# * two of the five cue templates of each category avoid the keyword list
#   ("respond before midnight or you lose access for good");
# * 5% of the training labels are flipped, and every template belongs to the
#   training or the test split, so a test email is built from sentences the
#   model never saw (rewordings of the training ones, in the training words:
#   the model meets no word it has no embedding for).
#
# What keeps the task fair to a method that reads one sentence: a cue asks
# the reader for something ("reset your password at ...", "tell us where to
# send it") or threatens the reader, while a decoy states a fact about an
# event or other people and asks nothing ("the ceo will present the annual
# results at the town hall"). Read alone, a sentence of a benign email reads
# benign, as in real mail. (The chapter's earlier corpus broke both rules:
# its decoys asked the reader to confirm and verify, and its test templates
# were full of words never seen in training; see the Claims section.)
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/corpus.py
# :pyobject: make_email
# ```

# %%
corpus = ai2tale.make_corpus(p.n_emails, p.seed, p.max_sentences,
                             noise=p.label_noise)
vocab = ai2tale.build_vocab(corpus["train"])
train = ai2tale.encode(corpus["train"], vocab, p.max_sentences, p.max_tokens)
test = ai2tale.encode(corpus["test"], vocab, p.max_sentences, p.max_tokens)
phishing = [e for e in corpus["test"] if e.true_label == 1]
off_list = np.mean([all(j in ai2tale.OFF_LIST for kind, _, j in e.templates
                        if kind == "cue") for e in phishing])
print(f"{len(train)} training and {len(test)} test emails, "
      f"vocabulary {len(vocab)} words")
print(f"flipped training labels: "
      f"{(train.labels != train.true_labels).float().mean():.3f}")
print(f"test phishing emails whose cues all avoid the keyword list: "
      f"{off_list:.2f}")
benign = next(e for e in corpus["test"] if e.true_label == 0)
for email in (phishing[0], benign):
    kind = "phishing" if email.true_label else "benign"
    print(f"\n--- a {kind} test email (* cue, ~ decoy) ---")
    for s, cue, decoy in zip(email.sentences, email.cue, email.decoy):
        print(("* " if cue else "~ " if decoy else "  ") + s)

# %% [markdown]
# Is one sentence enough to tell a cue from the rest? A property of the data,
# checked before any model is trained: a bag-of-words logistic regression
# trained on single sentences of the training templates (cue or not),
# tested on sentences of the test templates.
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/corpus.py
# :pyobject: one_sentence_separability
# ```

# %%
sep = ai2tale.one_sentence_separability(p.seed)
print(f"held-out cues read as cues: {sep['cues']:.3f}; held-out decoys read "
      f"as not-cues: {sep['decoys']:.3f}; other held-out sentences: "
      f"{sep['others']:.3f}")

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
# The predictor reads $\sum_i z_i e_i$. At test time the $k = 1$ sentence with
# the largest $p_i$ is kept, skipping empty (padding) slots, and the label is
# predicted from it alone:
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
# all of an email's sentences and tested on the one sentence selected; the
# corpus is built so that this one sentence can carry the label.
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
# The baselines share the encoder and predictor: **L2X** (a Gumbel-softmax
# top-k selector, no random-mask step, no prior), **attention** pooling
# (trained on the softmax-weighted sum, selects the largest weight) and
# **random** selection (a predictor trained on, and tested with, a random
# sentence). A bag-of-words logistic regression on whole emails is the
# accuracy reference (a "ceiling" on real mail; here it need not be
# one: it weighs every sentence, decoys' cue words included, while the
# selectors read the one sentence that decides).
#
# ## The measures
#
# Label-Accuracy is the accuracy of the prediction from the selected sentence.
# The Cognitive-True-Positive (CTP) is, over phishing test emails, the share
# of selected sentences that hold a keyword of some category after stop-word
# removal and stemming. Cue-Hit, which the paper could not measure, is the
# share of phishing test emails whose selection is a planted cue.
#
# ```{literalinclude} ../lib/iclr25/chapters/ai2tale/measures.py
# :pyobject: keyword_counts
# ```

# %%
SWEEP = sorted({*ai2tale.LAMBDAS, p.lam, p.lam_ablation})
MAIN, ABLATED = f"lambda={p.lam:g}", "no step (1)"
RUNS = {f"lambda={x:g}": ("ai2tale", x, True) for x in SWEEP}
RUNS[ABLATED] = ("ai2tale", p.lam_ablation, False)
RUNS |= {m: (m, 0.0, True) for m in ["l2x", "attention", "random"]}
ARCH = dict(embedding=p.embedding, filters=p.filters, k=p.k, tau=p.tau)
KEY = dict(n=p.n_emails, seed=p.seed, s=p.max_sentences,
           t=p.max_tokens, noise=p.label_noise)
SEEDS = range(p.seed, p.seed + p.seeds)


def fit(name, s):
    """Train (or load) run ``name`` with training seed ``s``."""
    method, lam_run, step = RUNS[name]
    recipe = ai2tale.Recipe(
        epochs=p.epochs, batch_size=p.batch_size, lr=p.lr, sigma=p.sigma,
        lam=lam_run, random_mask_step=step, seed=s)
    return ai2tale.train_cached(method, train, len(vocab), ARCH, recipe, KEY)


models, curves, results = {}, {}, {}
for name, s in tqdm([(n, s) for n in RUNS for s in SEEDS], desc="models"):
    models[name, s], curves[name, s] = fit(name, s)
    results[name, s] = ai2tale.evaluate(models[name, s], test, seed=s)

# %% [markdown]
# Every model was trained for the same number of epochs on the same emails;
# the mean training cross-entropy per epoch (first seed) shows whether it
# learnt at all. With 5% flipped labels, about 0.2 is the floor.

# %%
fig = core.plot(np.arange(1, p.epochs + 1),
                {name: curves[name, p.seed] for name in RUNS},
                title="Training cross-entropy (step 2)", xlabel="epoch",
                ylabel="mean cross-entropy", height=360)
fig.show()

# %% [markdown]
# ## AI2TALE against the baselines
#
# The three metrics per method (averaged over seeds), at the paper's settings
# ($\sigma = 0.3$, $\lambda = 0.1$, $\tau = 0.5$, $k = 1$), with F1, the
# false-positive and false-negative rates, and the whole-email bag of words.

# %%
SCALARS = ["accuracy", "f1", "fpr", "fnr", "ctp", "cue_hit"]
table = pd.DataFrame({
    name: {m: np.mean([results[name, s][m] for s in SEEDS]) for m in SCALARS}
    for name in RUNS}).T
bow = np.mean([
    ai2tale.bag_of_words_accuracy(corpus["train"], corpus["test"], s)
    for s in SEEDS])
table.loc["bag of words", "accuracy"] = bow
COMPARED = {"AI2TALE": MAIN, "L2X": "l2x", "attention": "attention",
            "random": "random"}
shown = {label: table.loc[name].dropna().to_dict()
         for label, name in COMPARED.items()}
shown["bag of words"] = {"accuracy": bow}
ai2tale.metrics_figure(shown, "The metrics per method, test emails").show()
table.round(3)

# %% [markdown]
# The headline below averages Label-Accuracy and CTP, so it rests on a setup
# claim, recorded first: does the paper's keyword measure rank the methods as
# the truth does? The bound: Kendall's $\tau \ge 0.6$ between the CTP and
# the Cue-Hit of the four methods (with four methods, at most one pair in the
# wrong order). It is tau-b, which counts only the pairs both measures order:
# where several methods tie on Cue-Hit (all at its ceiling, say), the claim
# says little more than that the two measures agree on which method is worst.
# Read the scatter beside it; where the two measures part ways email by email
# is shown below the selectors' picks.

# %%
ctp = [table.loc[name, "ctp"] for name in COMPARED.values()]
hit = [table.loc[name, "cue_hit"] for name in COMPARED.values()]
fig = go.Figure(go.Scatter(x=ctp, y=hit, mode="markers+text",
                           text=list(COMPARED), textposition="top center"))
fig.update_layout(title="CTP against Cue-Hit", xaxis_title="CTP",
                  yaxis_title="Cue-Hit", height=380)
fig.show()
tau_ranks = ai2tale.kendall_tau(ctp, hit)
core.claim("ctp_tracks_truth", value=tau_ranks,
           measured=f"Kendall tau-b {tau_ranks:.2f}");

# %% [markdown]
# The paper's headline: AI2TALE beats the baselines on the mean of
# Label-Accuracy and CTP. The bound, fixed beforehand: at least one point
# above every baseline (L2X, attention, random). Were CTP not to rank the
# methods as Cue-Hit does, its half of the mean would not measure the
# selection, and the claim would be inconclusive.

# %%
def headline(name):
    return (table.loc[name, "accuracy"] + table.loc[name, "ctp"]) / 2


margins = {label: headline(MAIN) - headline(name)
           for label, name in COMPARED.items() if label != "AI2TALE"}
core.claim(
    "beats_baselines",
    value=list(margins.values()),
    measured="AI2TALE minus " + ", ".join(
        f"{k_}: {100 * v:+.1f}" for k_, v in margins.items()) + " points",
);

# %% [markdown]
# ## What the selectors pick
#
# Each bar is a sentence of one phishing test email, its length the selection
# score ($p_i$ for AI2TALE, the logit for L2X); red is the selected sentence,
# `*` marks a planted cue and `(k)` a sentence holding a keyword.

# %%
def show_email(i, name):
    r = results[name, p.seed]
    return ai2tale.email_figure(
        test.texts[i], r["scores"][i], r["mask"][i], test.cues[i],
        title=f"{name}: test email {i} (label {int(test.true_labels[i])},"
              f" predicted {r['pred'][i]})")


FIRST = int(np.flatnonzero(test.true_labels.numpy() == 1)[0])
for name in (MAIN, f"lambda={p.lam_ablation:g}", "l2x"):
    show_email(FIRST, name).show()

# %% [markdown]
# ## Where CTP and Cue-Hit disagree
#
# CTP credits any selected sentence that holds a keyword; Cue-Hit only a
# planted cue. They part ways on a cue that avoids the keyword list (a hit for
# Cue-Hit only) and on an everyday sentence that holds a keyword by chance
# ("lunch is free for every attendee": a hit for CTP only). For each method,
# the phishing test emails by what the selected sentence is:

# %%
def agreement(name):
    r = results[name, p.seed]
    rows = []
    for i in np.flatnonzero(test.true_labels.numpy() == 1):
        j = int(np.flatnonzero(r["mask"][i])[0])
        rows.append((ai2tale.is_cognitive(test.texts[i][j]),
                     bool(test.cues[i, j])))
    counts = pd.Series(rows).value_counts(normalize=True)
    return {f"keyword {'yes' if kw else 'no'}, cue {'yes' if c else 'no'}":
            counts.get((kw, c), 0.0) for kw in (True, False)
            for c in (True, False)}


pd.DataFrame({label: agreement(name)
              for label, name in COMPARED.items()}).T.round(3)

# %% [markdown]
# ## The prior's weight
#
# A prior that weighs too much collapses the selector to no sentence at
# all, and at the paper's $\lambda = 0.1$ it can. The sweep $\lambda \in \{0, 10^{-3}, 10^{-2},
# 10^{-1}\}$ shows the three metrics as the prior's weight grows; the slider
# picks $\lambda$ (the grey bars are $\lambda = 0$).

# %%
def sweep_figure(lam_value):
    row = table.loc[f"lambda={lam_value:g}"]
    base = table.loc["lambda=0"]
    names = list(ai2tale.METRIC_NAMES.values())
    fig = go.Figure()
    fig.add_bar(x=names, y=[base[m] for m in ai2tale.METRIC_NAMES],
                name="lambda = 0", marker_color="#bbbbbb")
    fig.add_bar(x=names, y=[row[m] for m in ai2tale.METRIC_NAMES],
                name=f"lambda = {lam_value:g}", marker_color="#1f77b4")
    fig.update_layout(title=f"AI2TALE at lambda = {lam_value:g}",
                      barmode="group", yaxis=dict(range=[0, 1.05]),
                      height=360)
    return fig


core.explore(sweep_figure, SWEEP, "lambda", active=SWEEP.index(p.lam));

# %% [markdown]
# How the prior acts on the selection: for each $\lambda$, the largest $p_i$
# over the test sentences, and the share of test emails whose selected
# sentence is the first or the last one kept (the greeting or the sign-off,
# the shortest sentences, with the smallest features). A selector pushed to
# $p_i \approx 0$ everywhere ranks the sentences by the prior's penalty
# alone, which is smallest where the features are.

# %%
valid = test.valid.numpy()
for x in SWEEP:
    r = results[f"lambda={x:g}", p.seed]
    where = r["mask"].argmax(1)
    edge = np.mean((where == 0) | (where == valid.sum(1) - 1))
    print(f"lambda {x:<6g} largest p {r['scores'][valid].max():.3f}, "
          f"greeting or sign-off selected in {edge:.0%} of emails")

# %% [markdown]
# The bound for "the prior helps": the best $\lambda > 0$ of the sweep at
# least 2 points above $\lambda = 0$ in Cue-Hit.

# %%
sweep_hit = {x: table.loc[f"lambda={x:g}", "cue_hit"] for x in SWEEP}
best = max((x for x in SWEEP if x > 0), key=sweep_hit.get)
gain = sweep_hit[best] - sweep_hit[0.0]
core.claim(
    "prior_helps",
    value=gain,
    measured=f"Cue-Hit {sweep_hit[best]:.3f} at lambda {best:g} against "
             f"{sweep_hit[0.0]:.3f} at lambda 0 ({100 * gain:+.1f} points)",
);

# %% [markdown]
# ## Dropping the random-mask step
#
# Step (1) trains the encoder and predictor on random sentence subsets. The
# ablation trains AI2TALE with step (2) alone at $\lambda$ = `lam_ablation`
# (the sweep's smallest $\lambda > 0$; at the larger ones the selector can
# collapse, and both variants would read nothing). The bound: dropping
# step (1) costs at least one point of Label-Accuracy.

# %%
WITH = f"lambda={p.lam_ablation:g}"
print(table.loc[[WITH, ABLATED], ["accuracy", "ctp", "cue_hit"]].round(3))
cost = table.loc[WITH, "accuracy"] - table.loc[ABLATED, "accuracy"]
core.claim(
    "random_mask_step",
    value=cost,
    measured=f"Label-Accuracy {table.loc[WITH, 'accuracy']:.3f} with step "
             f"(1), {table.loc[ABLATED, 'accuracy']:.3f} without "
             f"({100 * cost:+.1f} points)",
);

# %% [markdown]
# ## Your own email
#
# With a running kernel, type an email into the box (sentences end with `.`,
# `!`, `?` or a line break), or pick a test email to fill it, and see each sentence's $p_i$ under AI2TALE at
# $\lambda$ = `lam_ablation` and the sentence it selects. On the static page,
# the slider runs over ten test emails.

# %%
LIVE = models[WITH, p.seed]


def email_view(item):
    if isinstance(item, str):
        data = ai2tale.encode([ai2tale.text_email(item)], vocab,
                              p.max_sentences, p.max_tokens)
        i, title = 0, "your email"
    else:
        data, i, title = test, int(item), f"test email {item}"
    scores, mask, logits = LIVE(data.tokens[i : i + 1])
    verdict = ["benign", "phishing"][int(logits.argmax())]
    return ai2tale.email_figure(
        data.texts[i], scores[0].detach().numpy(), mask[0].numpy(),
        data.cues[i], title=f"{title}: predicted {verdict}")


box = widgets.Textarea(value="\n".join(phishing[0].sentences),
                       continuous_update=False, layout={"width": "90%"})
pick = widgets.Dropdown(options=[(f"test email {i}", i) for i in range(20)],
                        value=None, description="or pick")
pick.observe(lambda c: setattr(box, "value", "\n".join(
    s for s in test.texts[c["new"]] if s)), names="value")
core.explore(email_view, list(range(10)), "test email", live=box,
             pickers=[pick]);

# %% [markdown]
# ## Claims
#
# Each claim is of kind `paper` (the paper makes it) or `setup` (whether the
# paper's measure can be trusted on our data; the headline rests on it). The
# bounds, in the chapter's CLAIMS registry, were fixed before the run, and so
# were the gaps expected at our scale, each with its diagnosis.
#
# Two choices of the design matter for reading them. The model starts from
# Keras' initialisers (`keras_init`), as the official model does: torch's
# defaults make the encoder's features about 30 times larger, so the prior,
# which weighs their square, would be about a thousand times stronger and
# collapse the selector at every $\lambda > 0$. And the test templates use
# training words only, with one sentence that separates held-out cues from
# decoys (both checked by the unit tests): a word absent from training maps
# to one "unknown" embedding that training never updates, which the neural
# predictors would read as phishing. Where one sentence decides the label,
# every selector that finds the cue reaches the same ceiling, which leaves
# AI2TALE no systematic margin over L2X and attention, and step (1) and the
# prior nothing to add.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# * **Data.** The paper uses seven real email corpora; ours are generated
#   from templates with planted cues, decoys, off-list cues, 5% flipped
#   training labels and disjoint train/test templates. That is what makes
#   Cue-Hit possible, and what makes the vocabulary small (a few hundred
#   words) and the phrasing repetitive. Cues ask the reader for something
#   and decoys do not, and test templates reuse training words, so a single
#   sentence carries the label more cleanly than in real mail: the methods
#   meet a ceiling that the paper's datasets do not have.
# * **Scale.** 3,000 emails of at most 12 sentences of 16 tokens, embedding
#   32 and 64 filters, instead of 100 sentences of 50 tokens, embedding 150
#   and 250 filters; one seed in book mode. Longer emails are truncated (the
#   count is printed); the generator keeps every cue within the first 12
#   sentences.
# * **Training.** The official loop (two steps a batch, Adam 1e-3 with
#   per-tensor clipnorm 1, 10 epochs, batch 128), ported from TensorFlow to
#   torch. We keep the last epoch's model; the official code keeps the epoch
#   with the best accuracy on half of its test split. At inference our top-k
#   skips empty sentence slots for the prediction as well as for the
#   selection (the official code skips them for the selection only).
# * **Keywords.** The official keyword lists (`kwords_stem.json`) ship with
#   the authors' data download, not the repository; ours are written from the
#   paper's seven categories. Stop words are scikit-learn's list (nltk's is a
#   download), the stemmer nltk's Snowball; the official "English words"
#   filter is dropped (all our sentences are English).
# * **Baselines.** L2X, attention pooling and random selection share the
#   encoder and predictor; the paper compares more intrinsic explainers.
#
# ## Going further
#
# Three seeds, and a scale closer to the paper's
# (a GPU helps little: the models are small):
#
# ```bash
# python -m iclr25 run ai2tale -p seeds=3
# python -m iclr25 run ai2tale -p n_emails=20000 -p max_sentences=30 \
#     -p embedding=150 -p filters=250 -p seeds=3
# ```
#
# Other priors: `-p sigma=1.0`, or the prior's weight at the paper's setting
# `-p lam=0.01`. Trained models are cached by configuration
# (`ICLR25_CACHE`), so a rerun only trains what changed.
