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
# # Sufficient subset training
#
# Which few pixels of an image were enough for the model's answer? A *sufficient
# reason* is such a subset: fix those features, change everything else, and the
# prediction stays. Post-hoc methods search for small sufficient subsets of a
# trained model one input at a time, which is slow and, being greedy, often stops
# at large subsets. {cite:p}`bassan2025sst` instead train the model to output a
# sufficient subset with every prediction, in the same forward pass (*sufficient
# subset training*, SST). Are its explanations smaller than those of Anchors and
# the gradient searches, more faithful than those of SIS, and much faster, and
# what does it cost in accuracy? This chapter trains SST models, as the official
# code does and with a variant of ours, and runs SIS, an Anchors-style search and
# gradient/IG top-k on normally trained twins, on 16x16 digits (256 pixels).

# %% tags=["parameters"]
tabular = "none"
width = 128
epochs = 40
lr = 0.002
batch_size = 64
tau = 0.5
gamma = 1.0
noise_eps = 0.5
attack_eps = 0.1
pgd_steps = 10
draws = 16
precision = 0.95
anchor_patch = 2
n_explain = 50
n_gammas = 5
seed = 0
device = "auto"

# %%
import time

import ipywidgets as widgets
import pandas as pd
import plotly.graph_objects as go
import torch

from iclr25 import core, vision
from iclr25 import tabular as tables  # `tabular` names a parameter
from iclr25.chapters import sst

p = core.chapter("sst", globals())
# tiny models: one thread is as fast, and timings do not fight other processes
torch.set_num_threads(1)

# %% [markdown]
# ## Three notions of sufficiency
#
# Write $x_S$ for the features of $x$ in the subset $S$ and $\bar S$ for the rest. $S$
# is sufficient for the prediction $c = f(x)$ when $f(z) = c$ for every completion $z$
# that agrees with $x$ on $S$; what "every completion" means is the choice of
# a *fill* of $\bar S$:
#
# * **baseline**: $\bar S$ is set to a fixed baseline, here zeros (the background of
#   the digits);
# * **probabilistic**: $\bar S$ gets the official code's one-sided uniform noise,
#   $z_{\bar S} = \mathrm{clip}(x_{\bar S} + \epsilon\, U(0, 1))$, and the prediction
#   must survive the draws (in a search, a share `precision` of `draws` of them);
# * **robust**: $\bar S$ is chosen by an adversary, a PGD attack within the
#   $L_\infty$ ball of radius $\epsilon$ that tries to change the prediction.
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/method.py
# :pyobject: fill
# ```
#
# The attack moves only the free features and projects back onto the ball, the
# feature range and $x_S$ after every step:
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/method.py
# :pyobject: pgd_complement
# ```
#
# The measures are those of the paper: the **size** of an explanation (the share of
# the features it keeps), its **faithfulness** (the share of inputs whose prediction
# survives one fresh fill of the complement: a new noise draw, a new attack from a new
# random start) and the **time** per explanation.
#
# ## Sufficient subset training
#
# The network has two heads on one backbone: logits for the prediction and one
# sigmoid score $s_i$ per input feature. The explanation is $S = \{i : s_i \ge \tau\}$,
# read off in the forward pass that makes the prediction.
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/method.py
# :pyobject: SSTNet
# ```
#
# Training minimises the paper's three terms: cross-entropy of the prediction, a
# *faithfulness* cross-entropy that asks the filled input $z$ to keep the predicted
# class, and a *cardinality* term $\gamma \cdot \operatorname{mean}_i s_i$ that shrinks
# the explanation:
#
# $$L = \mathrm{CE}(f(x), y) + \mathrm{CE}\big(f(z), \arg\max f(x)\big) + \gamma\,\frac{\|s\|_1}{n}.$$
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/method.py
# :pyobject: sst_loss
# ```
#
# The threshold is a step function, and the official code lets no gradient through
# it: the explanation head learns only from the cardinality term, which pushes every
# score down. That is the chapter's default, **SST**. With Adam, whose step does not
# depend on the gradient's scale, that push is the same whatever $\gamma$, and we
# expect the mask to empty (it is measured below). We therefore also train
# **SST-ST**, our variant, which passes the faithfulness gradient to the scores with
# a straight-through estimator: the forward pass uses the hard mask, the backward
# pass treats it as $s$. Both are trained for every notion, and every claim below is
# made for both. Training is early stopped on the validation loss (patience 5
# epochs), as in the official code; the probabilistic fill draws one noise image per
# batch, as the official MNIST training does.

# %% [markdown]
# The data: scikit-learn's 1,797 digits, upsampled from 8x8 to 16x16 pixels
# (`vision.load("digits16")`), and, when `tabular` names one, a scikit-learn table
# whose rows the models read as 1 x 1 x d images. Every model, normal or SST, is the
# same MLP.

# %%
DATA = {"digits16": vision.load("digits16", p.seed)}
if p.tabular != "none":
    DATA[p.tabular] = sst.as_images(tables.load(p.tabular, p.seed))
NOTIONS = {
    "baseline": sst.Notion("baseline"),
    "probabilistic": sst.Notion("probabilistic", eps=p.noise_eps,
                                draws=p.draws, precision=p.precision),
    "robust": sst.Notion("robust", eps=p.attack_eps, steps=p.pgd_steps)}
STRAIGHT = {"SST": False, "SST-ST": True}  # variant -> straight-through

# %%
def model_config(data):
    """The architecture every model shares: an MLP with two hidden layers."""
    return vision.ModelConfig.for_data("mlp", data, width=p.width, depth=2)


def sst_config(notion, variant, **changes):
    settings = dict(tau=p.tau, gamma=p.gamma, notion=notion, epochs=p.epochs,
                    batch_size=p.batch_size, lr=p.lr, seed=p.seed,
                    straight_through=STRAIGHT[variant])
    return sst.SSTConfig(**{**settings, **changes})


for d, data in DATA.items():
    print(f"{d}: {data.shape[-1] * data.shape[-2]} features, "
          f"{len(data.train)} training and {len(data.test)} test inputs, "
          f"{data.n_classes} classes")

# %% [markdown]
# For each data set: a normally trained model, and both SST variants for each
# notion (every trained model is cached).

# %%
start = time.perf_counter()
train = vision.TrainConfig(epochs=p.epochs, batch_size=p.batch_size,
                           lr=p.lr, seed=p.seed)
normal = {d: vision.train(data, model_config(data), train,
                          progress=False).model
          for d, data in DATA.items()}
nets = {(d, k, v): sst.train_sst(data, model_config(data),
                                 sst_config(notion, v))
        for d, data in DATA.items() for k, notion in NOTIONS.items()
        for v in STRAIGHT}
print(f"trained (or loaded) {len(normal) + len(nets)} models in "
      f"{time.perf_counter() - start:.1f} s")

# %% [markdown]
# How full are the masks of the two variants on the test digits?

# %%
digits = DATA["digits16"]
for (d, k, v), net in nets.items():
    if d == "digits16":
        _, masks = net.explain(digits.test.x, p.tau)
        empty = (~masks).all(dim=(1, 2, 3)).float().mean()
        size = 100 * masks.float().mean()
        print(f"{v:>6}, {k:>13}: mean size {size:5.1f}%, empty for "
              f"{100 * empty:3.0f}% of the test digits")

# %% [markdown]
# ## The post-hoc baselines
#
# Each baseline explains the predictions of a normally trained model of the same
# architecture (the MLP without the explanation head, trained on cross-entropy alone),
# on the same test inputs.
#
# **SIS** (sufficient input subsets) removes features one at a time, each time the one
# whose removal hurts the predicted class least, and returns the smallest sufficient
# set of the last-removed features. It searches under its own fill, the zero
# baseline, and is then judged under each notion, as the paper judges it:
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/baselines.py
# :pyobject: sis
# ```
#
# **Anchors-style greedy search** grows the subset from nothing, adding the
# superpixel (a 2x2 block by default, `anchor_patch`; Anchors segments images into
# superpixels) whose subset keeps the prediction under the most fills, until it is
# sufficient (the Anchors algorithm with beam width one, under our fills rather than
# its own sampler):
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/baselines.py
# :pyobject: anchors
# ```
#
# **Gradient and IG top-k** rank the features by an attribution from captum
# (integrated gradients from a zero baseline, or the absolute input gradient) and
# return the shortest sufficient top-$k$:
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/baselines.py
# :pyobject: smallest_sufficient_prefix
# ```
#
# Anchors, IG and gradient search under the notion's own fill and end with its
# check, so their faithfulness is high *by construction*: only the randomness of
# a fresh noise draw or attack can break it. Against them the comparison is one of
# size. SIS's subsets are sufficient under the zero baseline by construction, and
# the paper's comparison with SIS is one of faithfulness under the other notions.
#
# Every method is timed on one CPU thread, one input at a time, the prediction
# included (for SST the one forward pass is all there is). The methods take
# turns: the first input is explained by each method, then the second, and so
# on (`core.alternate`), so a load that comes and goes on the machine falls on
# all of them alike; each method's time is the median over the inputs, in
# wall-clock and in process-CPU seconds. SIS, whose search does not depend on the
# notion, runs once per input.
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/evaluation.py
# :pyobject: compare
# ```

# %%
def explainers_for(d, x, generator):
    """Every method's explainer of data set d, keyed by (notion, method)."""
    found = {("baseline", "SIS"): (normal[d], sst.posthoc_explainer(
        normal[d], "SIS", NOTIONS["baseline"], generator))}
    for k, notion in NOTIONS.items():
        for v in STRAIGHT:
            found[k, v] = (nets[d, k, v],
                           sst.sst_explainer(nets[d, k, v], p.tau))
        for m in ("Anchors", "IG", "gradient"):
            found[k, m] = (normal[d], sst.posthoc_explainer(
                normal[d], m, notion, generator, p.anchor_patch))
    return found

# %% [markdown]
# Explain, time and judge (SIS's subsets are judged under every notion):

# %%
results = {}
for d, data in DATA.items():
    x = data.test.x[:p.n_explain]
    generator = torch.Generator().manual_seed(p.seed)
    named = {f"{k}/{m}": e
             for (k, m), e in explainers_for(d, x, generator).items()}
    with core.threads(1):
        found = sst.compare(named, x, {n: NOTIONS[n.split("/")[0]]
                                       for n in named}, generator)
    for name, r in found.items():
        k, m = name.split("/")
        results[d, k, m] = r
    for k in ("probabilistic", "robust"):
        results[d, k, "SIS"] = sst.judge(normal[d], x, found["baseline/SIS"],
                                         NOTIONS[k], generator)

table = pd.DataFrame([dict(data=d, notion=k, method=m, size=100 * r.size,
                           faithfulness=100 * r.faithfulness,
                           ms=1000 * r.seconds, cpu_ms=1000 * r.cpu_seconds)
                      for (d, k, m), r in results.items()])
table = table.set_index(["data", "notion", "method"]).sort_index()
table.round(3)

# %% [markdown]
# The table gives, for the first `n_explain` test inputs, the mean explanation size
# (% of the features), the faithfulness (%) and the median milliseconds per
# explanation, wall-clock (`ms`) and process CPU (`cpu_ms`); SIS's time is that of
# its one search. The figure puts each method at its size and faithfulness: the
# best corner is the top left.

# %% tags=["hide-input"]
sst.size_faithfulness_figure(
    {(d, k, m): results[d, k, m]
     for d in DATA for k in NOTIONS for m in sst.METHODS}).show()

# %% [markdown]
# ## Smaller than Anchors and the gradient searches, more faithful than SIS?
#
# As the paper states it, for each notion: SST's explanations are smaller than
# those of Anchors, IG and the gradient search, and more faithful than SIS's. Under
# the zero baseline SIS is faithful by construction, so there the claim asks SST to
# be at most 5 points less faithful (one input of the default 50 is 2 points). The
# value has two parts: each of the three baselines' mean size minus SST's, and
# SST's faithfulness minus SIS's. The claims are made on the 16x16 digits, for
# each variant (ids ending `_st` for SST-ST); the bounds were fixed before running.

# %%
def summary(d, k):
    return ", ".join(
        f"{m} {100 * results[d, k, m].size:.1f}% "
        f"({100 * results[d, k, m].faithfulness:.0f}%)" for m in sst.METHODS)


for suffix, v in zip(sst.VARIANTS, sst.VARIANT_NAMES):
    for k in NOTIONS:
        ours = results["digits16", k, v]
        core.claim(
            f"smaller_{k}{suffix}",
            value={"size": [results["digits16", k, m].size - ours.size
                            for m in ("Anchors", "IG", "gradient")],
                   "faithfulness": ours.faithfulness
                   - results["digits16", k, "SIS"].faithfulness},
            measured=summary("digits16", k) + " (size, faithfulness)")

# %% [markdown]
# Read these claims beside the mask sizes printed after training. An empty
# explanation can be sufficient: under the probabilistic notion the official noise
# only brightens the complement, which cannot erase a stroke, and under the
# robust notion the attack is bounded by `attack_eps`; an SST model trained on
# the fill learns to resist it, and then the empty set keeps its prediction. Where
# a variant's masks are empty, "smaller" is the size of an empty subset and the
# faithfulness is the model's robustness to the fill over the whole image. The
# official variant's masks empty whatever the notion (its explanation head learns
# from the size term alone); under the zero baseline an empty explanation is a
# blank image, which keeps almost no prediction.
#
# ## One forward pass against a search
#
# The ratio of each baseline's median wall-clock time per explanation to
# SST's, measured in this run on one thread with the methods in alternation.
# The claim is an order of magnitude (a ratio of at least 10) against every
# baseline, for every notion, on the 16x16 digits. The CPU-time ratios are
# reported beside the wall-clock ones.

# %%
fig = go.Figure()
for m in sst.METHODS:
    fig.add_bar(x=[f"{d}<br>{k}" for d in DATA for k in NOTIONS],
                y=[1000 * results[d, "baseline" if m == "SIS" else k,
                                  m].seconds
                   for d in DATA for k in NOTIONS],
                name=m, marker_color=sst.COLORS[m])
fig.update_yaxes(type="log", title_text="median ms per explanation (log)")
fig.update_layout(barmode="group", height=400,
                  title="Time per explanation, one CPU thread")
fig.show()

# %% [markdown]
# The ratios to SST's time, input by input medians, wall-clock and CPU:

# %%
KEYS = [("digits16", k, m) for k in NOTIONS for m in sst.BASELINES]
SST_OF = {key: results[key[:2] + ("SST",)] for key in KEYS}
ratios = {key: results[key].seconds / SST_OF[key].seconds for key in KEYS}
cpu_ratios = {key: results[key].cpu_seconds
              / max(SST_OF[key].cpu_seconds, 1e-9) for key in KEYS}
slowest = min(ratios, key=ratios.get)
core.claim(
    "faster",
    value=list(ratios.values()),
    measured=f"wall-time ratios {min(ratios.values()):.0f}x to "
             f"{max(ratios.values()):.0f}x (CPU time "
             f"{min(cpu_ratios.values()):.0f}x to "
             f"{max(cpu_ratios.values()):.0f}x); smallest: {slowest[2]}, "
             f"{slowest[1]} ({1000 * results[slowest].seconds:.2f} ms vs "
             f"{1000 * SST_OF[slowest].seconds:.3f} ms wall)",
);

# %% [markdown]
# ## What SST costs in accuracy
#
# Test accuracy of the SST models against the normally trained ones, on the whole
# test split. The claim allows SST to lose at most 3 points, for every notion, on
# the 16x16 digits, for each variant.

# %%
acc = {d: sst.accuracy(normal[d], data.test) for d, data in DATA.items()}
changes = {key: sst.accuracy(net, DATA[key[0]].test) - acc[key[0]]
           for key, net in nets.items()}
for (d, k, v), change in changes.items():
    print(f"{d:>14}, {k:>13}, {v:>6}: SST {100 * (acc[d] + change):.1f}%"
          f" vs normal {100 * acc[d]:.1f}%")
for suffix, v in zip(sst.VARIANTS, sst.VARIANT_NAMES):
    ours = {k: changes["digits16", k, v] for k in NOTIONS}
    worst = min(ours, key=ours.get)
    core.claim(
        f"accuracy_kept{suffix}",
        value=list(ours.values()),
        measured=f"change {100 * min(ours.values()):+.1f} to "
                 f"{100 * max(ours.values()):+.1f} points (worst: {worst})")

# %% [markdown]
# ## How $\gamma$ trades size against faithfulness and accuracy
#
# SST models on the 16x16 digits with the baseline fill, for $\gamma$ around the
# default, each measured on the whole test split, for both variants. That a larger
# $\gamma$ gives smaller explanations is what $\gamma$ is for (it weights the size
# term). The paper's claim is the price: faithfulness and accuracy fall as $\gamma$
# grows, measured by the Spearman rank correlation of each with $\gamma$ (0 when
# a measure does not move at all). Move the
# slider to switch variants.

# %%
GAMMAS = [p.gamma * 2.0 ** (k - p.n_gammas // 2) for k in range(p.n_gammas)]
baseline = NOTIONS["baseline"]
sweep = {}
for v in STRAIGHT:
    for g in GAMMAS:
        net = sst.train_sst(digits, model_config(digits),
                            sst_config(baseline, v, gamma=g))
        r = sst.explain_sst(net, digits.test.x, p.tau, baseline,
                            torch.Generator().manual_seed(p.seed))
        sweep[v, g] = dict(size=100 * r.size,
                           faithfulness=100 * r.faithfulness,
                           accuracy=100 * sst.accuracy(net, digits.test))

# %%
LINES = {"size": "black", "faithfulness": sst.COLORS["SIS"],
         "accuracy": sst.COLORS["Anchors"]}


def sweep_figure(v):
    fig = core.plot(
        GAMMAS, {name: [sweep[v, g][name] for g in GAMMAS] for name in LINES},
        title=f"{v} on the 16x16 digits, baseline fill, tau = {p.tau:g}",
        xlabel="gamma (log)", ylabel="%", log_x=True, mode="lines+markers",
        colors=LINES, height=400)
    fig.for_each_trace(lambda tr: tr.update(hovertemplate=(
        f"gamma %{{x:g}}: {tr.name} %{{y:.2f}}%<extra></extra>")))
    return fig.update_yaxes(range=[0, 102])


core.explore(sweep_figure, list(STRAIGHT), "variant");

# %%
for suffix, v in zip(sst.VARIANTS, sst.VARIANT_NAMES):
    rho = {name: sst.trend(GAMMAS, [sweep[v, g][name] for g in GAMMAS])
           for name in ("faithfulness", "accuracy")}
    core.claim(
        f"gamma_tradeoff{suffix}",
        value=rho,
        measured=f"Spearman rho over {len(GAMMAS)} gammas: faithfulness "
                 f"{rho['faithfulness']:+.2f}, accuracy "
                 f"{rho['accuracy']:+.2f}; sizes " + ", ".join(
                     f"{sweep[v, g]['size']:.1f}%" for g in GAMMAS))

# %% [markdown]
# ## The explanations, side by side
#
# A test digit, its prediction, and each method's subset under each notion: kept
# pixels in colour, the rest grey. Each title gives the subset's size and whether the
# prediction survived one fresh fill (✓ or ✗). In a live notebook the control picks
# any test image; on the static page the slider moves over the first examples.

# %%
explained = {}  # test digit -> {(notion, method): its explanation}


def explain_one(i):
    """Every method's explanation of test digit i, under every notion."""
    if i not in explained:
        x = digits.test.x[i:i + 1]
        gen = torch.Generator().manual_seed(p.seed + i)
        explained[i] = {
            (k, m): sst.explain_sst(nets["digits16", k, m], x, p.tau,
                                    notion, gen)
            if m in STRAIGHT else
            sst.explain_posthoc(normal["digits16"], x, m, notion, gen,
                                p.anchor_patch)
            for k, notion in NOTIONS.items() for m in sst.METHODS}
    return explained[i]

# %% [markdown]
# The figure for one test digit, and the control over the test digits:

# %%
def pictures(i):
    found = explain_one(i)
    says = {m: int(found["baseline", m].predicted[0]) for m in ("SIS", "SST")}
    return sst.explanations_figure(
        digits.test.x[i, 0], found,
        f"Test digit {i}: label {int(digits.test.y[i])}, normal model "
        f"predicts {says['SIS']}, SST predicts {says['SST']}")


EXAMPLES = list(range(min(p.n_explain, 4)))
core.explore(pictures, EXAMPLES, "test image",
             live=widgets.IntSlider(value=0, min=0, max=len(digits.test) - 1,
                                    description="test image",
                                    continuous_update=False));

# %% [markdown]
# ## Claims
#
# Each claim is of kind `paper` (the paper makes it) or `setup` (a check that
# our experiment can test the paper at all). The rules, in the module's CLAIMS
# registry (`sst.CLAIMS`), were fixed before running: strict "smaller" against
# Anchors, IG and gradient, SST more faithful than SIS (within 5 points under
# the zero baseline, where SIS is faithful by construction), a wall-time ratio
# of 10 (methods timed in alternation), an accuracy loss of at most 3 points,
# and negative rank correlations of faithfulness and accuracy with $\gamma$.
# Every claim is made for the official SST and for our straight-through SST-ST
# (ids ending `_st`). A claim expected to miss at our scale is declared, with
# its diagnosis, in the module's CLAIMS registry, also before the run, but for
# `gamma_tradeoff_st`, which missed in the first run of this redesigned
# chapter and was declared after it (its diagnosis says so). The paper reports
# its comparisons on MNIST, CIFAR-10 and ImageNet images and on text; its
# exact table entries are not quoted here.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# The paper trains an MLP on MNIST (784 pixels) and ResNets on CIFAR-10 and
# ImageNet. Here every model is a two-layer MLP trained in seconds on
# scikit-learn's 1,797 digits, *upsampled* bilinearly from 8x8 to 16x16 (256
# pixels; no 16x16 digit set such as USPS ships offline, and nothing is
# downloaded), so neighbouring pixels are strongly correlated and the images carry
# no more detail than 64 pixels do. Each method explains the first `n_explain`
# test inputs. On such small inputs a post-hoc search is cheap (a few dozen model
# calls), so the speed gap is narrower than on images with hundreds of thousands
# of pixels. The official hard mask is the default; SST-ST, the straight-through
# variant, is ours. The probabilistic fill is the official one-sided uniform noise
# of width `noise_eps` (the official code uses one `epsilon` for the noise and the
# attack; its values for the paper's runs are not in the released code), the
# robust fill a 10-step PGD of radius `attack_eps`, which attacks the predicted
# class where the official code attacks the label. The baselines are our own
# implementations: the Anchors-style search is greedy (beam width one) over 2x2
# superpixels under our fills rather than Anchors' bandit over its own sampler, and
# "GS" is stood in for by the gradient and IG top-$k$ searches. A scikit-learn
# table can be run beside the digits (`-p tabular=breast_cancer`); its results are
# shown but not claimed, as the paper has no tabular experiments.
#
# ## Going further
#
# Longer training, more inputs explained and larger searches:
#
# ```
# python -m iclr25 run sst -p epochs=100 -p n_explain=200 -p pgd_steps=20 -p draws=64 -p n_gammas=7
# ```
#
# and a table beside the digits with `-p tabular=wine`. The widget's live control
# explains any of the test digits; a reader can swap the MLP for the vision
# substrate's CNN (`vision.ModelConfig("cnn", ...)`) in `model_config`.
