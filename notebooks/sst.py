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
# code does and with a variant of ours, and runs SIS {cite:p}`carter2019sis`, an Anchors-style search {cite:p}`ribeiro2018anchors` and
# gradient/IG top-k on normally trained twins, on 16x16 digits (256 pixels).
# First it checks that SST's explanations are there at all: a sufficiency claim
# met by an empty subset says nothing about explanations.

# %% tags=["parameters"]
tabular = "none"
width = 128
epochs = 40
lr = 0.002
batch_size = 64
tau = 0.5
gamma = 1.0
n_gammas = 7
min_faithfulness = 0.95
seeds = 3
noise_eps = 0.5
attack_eps = 0.1
pgd_steps = 10
draws = 16
precision = 0.95
anchor_patch = 2
n_explain = 50
seed = 0
device = "auto"

# %%
import time

import ipywidgets as widgets
import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch

from iclr25 import core, vision
from iclr25 import tabular as tables  # `tabular` names a parameter
from iclr25.chapters import sst
from iclr25.core import stats

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
# pass treats it as $s$. Both are trained for every notion; the official SST at
# $\gamma$ = `gamma`, as a check of its masks, and SST-ST, on which the paper's
# claims are tested, at a $\gamma$ chosen per notion on the validation split.
# Training is early stopped on the validation loss (patience 5 epochs), as in the
# official code; the probabilistic fill draws one noise image per batch, as the
# official MNIST training does.

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
# For each data set: a normally trained model per training seed, the official SST
# for each notion, and SST-ST for each notion and each $\gamma$ of the grid
# $0.5 \cdot 2^k$ (every trained model is cached).

# %%
start = time.perf_counter()
GAMMAS = [0.5 * 2.0**k for k in range(p.n_gammas)]
SEEDS = [p.seed + s for s in range(p.seeds)]


def normal_model(d, s):
    train = vision.TrainConfig(epochs=p.epochs, batch_size=p.batch_size,
                               lr=p.lr, seed=s)
    return vision.train(DATA[d], model_config(DATA[d]), train,
                        progress=False).model


# %%
normal = {(d, s): normal_model(d, s) for d in DATA for s in SEEDS}
official = {(d, k): sst.train_sst(data, model_config(data),
                                  sst_config(notion, "SST"))
            for d, data in DATA.items() for k, notion in NOTIONS.items()}
grid = {(d, k, g): sst.train_sst(data, model_config(data),
                                 sst_config(notion, "SST-ST", gamma=g))
        for d, data in DATA.items() for k, notion in NOTIONS.items()
        for g in GAMMAS}
print(f"trained (or loaded) {len(normal) + len(official) + len(grid)} "
      f"models in {time.perf_counter() - start:.1f} s")

# %% [markdown]
# ## Choosing $\gamma$ on validation
#
# The paper tunes $\gamma$; here, for each notion, SST-ST takes the $\gamma$ of
# the grid whose explanations of the validation split are smallest among those
# whose validation faithfulness reaches `min_faithfulness` (the most faithful
# $\gamma$ when none does):
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/evaluation.py
# :pyobject: choose_gamma
# ```


# %%
def scores(net, split, notion):
    """Size and faithfulness of SST's explanations of a split."""
    r = sst.explain_sst(net, split.x, p.tau, notion,
                        torch.Generator().manual_seed(p.seed))
    return r.size, r.faithfulness


# %%
validation = {key: scores(net, DATA[key[0]].val, NOTIONS[key[1]])
              for key, net in grid.items()}
chosen = {(d, k): sst.choose_gamma(
    {g: validation[d, k, g] for g in GAMMAS}, p.min_faithfulness)
    for d in DATA for k in NOTIONS}
pd.DataFrame(
    {(d, k, g): dict(size=100 * sz, faithfulness=100 * f,
                     chosen="*" * (g == chosen[d, k]))
     for (d, k, g), (sz, f) in validation.items()}).T.rename_axis(
    ["data", "notion", "gamma"])

# %% [markdown]
# The chosen SST-ST of each notion is trained again at the other seeds, for the
# accuracy claims:

# %%
nets = {}
for d, data in DATA.items():
    for k, notion in NOTIONS.items():
        nets[d, k, "SST"] = official[d, k]
        nets[d, k, "SST-ST"] = grid[d, k, chosen[d, k]]
digits = DATA["digits16"]
reseeded = {(k, s): sst.train_sst(
    digits, model_config(digits),
    sst_config(notion, "SST-ST", gamma=chosen["digits16", k], seed=s))
    for k, notion in NOTIONS.items() for s in SEEDS}
print("chosen gammas: " + ", ".join(
    f"{d} {k} {g:g}" for (d, k), g in chosen.items()))

# %% [markdown]
# ## Are the explanations there?
#
# An empty explanation can be sufficient. Under the probabilistic notion the
# official noise only brightens the complement, which cannot erase a stroke, and
# under the robust notion the attack is bounded by `attack_eps`: an SST model
# trained on the fill learns to resist it, and then the empty subset keeps its
# prediction. Where that happens, "smaller" is the size of an empty subset and the
# faithfulness is the model's robustness to the fill over the whole image, not a
# property of an explanation. So each notion's claims rest on a setup claim: for
# most test digits the mask is non-empty *and needed*, the empty subset (the whole
# image filled) not keeping the prediction.
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/evaluation.py
# :pyobject: needed
# ```

# %%
NEEDED = {}
for (d, k, v), net in nets.items():
    if d == "digits16":
        _, masks = net.explain(digits.test.x, p.tau)
        NEEDED[k, v] = sst.needed(net, digits.test.x, p.tau, NOTIONS[k],
                                  torch.Generator().manual_seed(p.seed))
        empty = (~masks).flatten(1).all(1).float().mean()
        size = 100 * masks.float().mean()
        print(f"{v:>6}, {k:>13}: mean size {size:5.1f}%,"
              f" empty for {100 * empty:3.0f}%, needed for "
              f"{100 * NEEDED[k, v].float().mean():3.0f}% of the test digits")


# %%
def needed_share(k, v):
    return stats.share(int(NEEDED[k, v].sum()), len(NEEDED[k, v]))


worst = min(NOTIONS, key=lambda k: needed_share(k, "SST").value)
lowest = needed_share(worst, "SST")
core.claim("explains_official", estimate=lowest,
           measured=f"needed for {100 * lowest.value:.0f}% of the test "
                    f"digits (lowest: {worst})")
for k in NOTIONS:
    core.claim(f"explains_{k}_st", estimate=needed_share(k, "SST-ST"))

# %% [markdown]
# A notion whose setup claim misses leaves its paper claims below inconclusive,
# whatever their numbers. The lines above show the two ways a notion can miss: a
# mask that is empty (the official SST, whose explanation head learns from the
# size term alone), or a model that keeps its prediction when the whole image is
# filled, for which the empty subset is already sufficient and a comparison of
# sizes or faithfulness measures the model's robustness to the fill rather than
# its explanations. The chosen $\gamma$ of each notion is in the validation
# table above: where every $\gamma$ of the grid gives an empty mask, none can
# make the explanation needed.

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
    twin = normal[d, p.seed]
    found = {("baseline", "SIS"): (twin, sst.posthoc_explainer(
        twin, "SIS", NOTIONS["baseline"], generator))}
    for k, notion in NOTIONS.items():
        for v in STRAIGHT:
            found[k, v] = (nets[d, k, v],
                           sst.sst_explainer(nets[d, k, v], p.tau))
        for m in ("Anchors", "IG", "gradient"):
            found[k, m] = (twin, sst.posthoc_explainer(
                twin, m, notion, generator, p.anchor_patch))
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
        results[d, k, "SIS"] = sst.judge(normal[d, p.seed], x,
                                         found["baseline/SIS"],
                                         NOTIONS[k], generator)

# %%
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
# those of Anchors, IG and the gradient search, and more faithful than SIS's. The
# claims are made for SST-ST on the 16x16 digits. Size: per explained input, the
# size of the explanation of the baseline with the smallest mean size minus
# SST-ST's, with a paired interval over the inputs. Faithfulness: per input,
# whether SST-ST's prediction survived a fresh fill minus whether SIS's did.
# Under the zero baseline SIS is faithful by construction (100%), so there the
# claim is SST-ST's faithfulness on the whole test split, at least 95%.


# %%
def summary(d, k):
    return ", ".join(
        f"{m} {100 * results[d, k, m].size:.1f}% "
        f"({100 * results[d, k, m].faithfulness:.0f}%)" for m in sst.METHODS)


# %%
for k in NOTIONS:
    ours = results["digits16", k, "SST-ST"]
    rival = min(("Anchors", "IG", "gradient"),
                key=lambda m: results["digits16", k, m].size)
    core.claim(
        f"smaller_{k}_st",
        estimate=stats.paired_difference(
            results["digits16", k, rival].sizes, ours.sizes),
        measured=f"against {rival}; " + summary("digits16", k)
        + " (size, faithfulness)")
    if k != "baseline":
        sis = results["digits16", k, "SIS"]
        core.claim(f"faithful_{k}_st", estimate=stats.paired_difference(
            ours.kept.float(), sis.kept.float()))

# %%
whole = sst.explain_sst(nets["digits16", "baseline", "SST-ST"],
                        digits.test.x, p.tau, NOTIONS["baseline"],
                        torch.Generator().manual_seed(p.seed))
core.claim("faithful_baseline_st", estimate=stats.share(
    int(whole.kept.sum()), len(whole.kept)),
    quote=dict(kept=int(whole.kept.sum()), validation=validation[
        "digits16", "baseline", chosen["digits16", "baseline"]][1]));
# %% [markdown]
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
# Test accuracy of SST-ST, at each notion's chosen $\gamma$, against the normally
# trained model of the same seed, on the whole test split, over the training
# seeds. The claim allows SST-ST to lose at most 3 points, per notion, on the
# 16x16 digits, with an interval paired over the seeds.

# %%
acc = {s: sst.accuracy(normal["digits16", s], digits.test) for s in SEEDS}
acc_sst = {key: sst.accuracy(net, digits.test)
           for key, net in reseeded.items()}
pd.DataFrame({k: [100 * (acc_sst[k, s] - acc[s]) for s in SEEDS]
              for k in NOTIONS}, index=pd.Index(SEEDS, name="seed")).round(2)

# %% [markdown]
# The table gives SST-ST's accuracy minus the normal model's, in points, per
# seed; the normal models' accuracies are printed below.

# %%
print("normal models: " + ", ".join(f"{100 * acc[s]:.1f}%" for s in SEEDS))
for k in NOTIONS:
    core.claim(f"accuracy_kept_{k}_st", estimate=stats.paired_difference(
        [acc_sst[k, s] for s in SEEDS], [acc[s] for s in SEEDS]))

# %% [markdown]
# ## How $\gamma$ trades size against faithfulness and accuracy
#
# SST-ST on the 16x16 digits with the baseline fill, for every $\gamma$ of the
# grid and every training seed, each measured on the whole test split. That a
# larger $\gamma$ gives smaller explanations is what $\gamma$ is for (it weights
# the size term). The paper's claim is the price: faithfulness and accuracy fall
# as $\gamma$ grows. Per seed, the least-squares slope of each (in points) on
# $\log_2 \gamma$; the claims take the mean slope over the seeds, with its
# interval (with one grid for every seed, the slope of the pooled points).
#
# ```{literalinclude} ../lib/iclr25/chapters/sst/evaluation.py
# :pyobject: slope
# ```

# %%
baseline = NOTIONS["baseline"]
sweep = {}
for s in SEEDS:
    for g in GAMMAS:
        net = sst.train_sst(digits, model_config(digits),
                            sst_config(baseline, "SST-ST", gamma=g, seed=s))
        r = sst.explain_sst(net, digits.test.x, p.tau, baseline,
                            torch.Generator().manual_seed(p.seed))
        sweep[s, g] = dict(size=100 * r.size,
                           faithfulness=100 * r.faithfulness,
                           accuracy=100 * sst.accuracy(net, digits.test))

# %%
LINES = {"size": "black", "faithfulness": sst.COLORS["SIS"],
         "accuracy": sst.COLORS["Anchors"]}
fig = core.plot(
    GAMMAS, {name: [np.mean([sweep[s, g][name] for s in SEEDS])
                    for g in GAMMAS] for name in LINES},
    title=f"SST-ST on the 16x16 digits, baseline fill, tau = {p.tau:g}, "
          f"mean of {len(SEEDS)} seeds",
    xlabel="gamma (log)", ylabel="%", log_x=True, mode="lines+markers",
    colors=LINES, height=400)
fig.update_yaxes(range=[0, 102]).show()

# %%
def gamma_slope(name):
    """The mean over seeds of the slope of ``name`` on log2 gamma."""
    return stats.mean([
        sst.slope(np.log2(GAMMAS), [sweep[s, g][name] for g in GAMMAS])
        for s in SEEDS])


per_gamma = [np.mean([sweep[s, g]["accuracy"] for s in SEEDS])
             for g in GAMMAS]
for name in ("faithfulness", "accuracy"):
    slope = gamma_slope(name)
    core.claim(
        f"gamma_{name}_st", estimate=slope,
        measured=f"{slope} points per doubling",
        # the accuracy claim's declared gap quotes the accuracies it spans
        quote=None if name != "accuracy" else dict(
            smallest=GAMMAS[0], largest=GAMMAS[-1],
            lowest=min(per_gamma), highest=max(per_gamma),
            normal=100 * np.mean(list(acc.values())),
            digits=len(digits.test.y),
            one_digit=100 / len(digits.test.y)))

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
            sst.explain_posthoc(normal["digits16", p.seed], x, m, notion,
                                gen, p.anchor_patch)
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

# %%
core.claims_table();

# %% [markdown]
# **What the claims say.** At the book's defaults only one notion of
# sufficiency reaches the paper's regime on our digits. Under baseline
# sufficiency SST-ST's explanations are needed, its accuracy is kept and its
# faithfulness falls as gamma grows; but it is not smaller than the smallest
# post-hoc explanation (`smaller_baseline_st`), not within five points of
# SIS's faithfulness (`faithful_baseline_st`), not ten times faster than
# Anchors (`faster`), and its accuracy shows no trend in gamma
# (`gamma_accuracy_st`). The official hard-mask SST does not explain
# (`explains_official`), and under probabilistic and robust sufficiency the
# empty subset already suffices for many digits (`explains_probabilistic_st`,
# `explains_robust_st`), so the claims resting on them are inconclusive:
# `smaller_probabilistic_st`, `faithful_probabilistic_st`,
# `accuracy_kept_probabilistic_st`, `smaller_robust_st`, `faithful_robust_st`
# and `accuracy_kept_robust_st`. At our scale the paper's headline, smaller
# and more faithful explanations at no cost in accuracy, is not reproduced.

# %% [markdown]
# **How the claims are decided.** Each claim is of kind `paper` (the paper makes
# it) or `setup` (a check that our experiment can test the paper at all: here,
# that the explanations of a notion are there and needed). The rules, in the
# module's CLAIMS registry (`sst.CLAIMS`), were fixed before running: each
# estimate has a 95% interval (over the explained inputs, the test digits or the
# training seeds) and a margin; a paper claim whose setup claim missed is
# inconclusive. The official SST is checked by a setup claim only, a documented
# negative result; the paper claims are tested on SST-ST. A claim expected to miss
# at our scale is declared, with its diagnosis, in the registry before the run.
# The paper reports its comparisons on MNIST, CIFAR-10 and ImageNet images and on
# text; its exact table entries are not quoted here.

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
# of pixels. The official hard mask is checked but carries no paper claim;
# SST-ST, the straight-through variant on which the claims are tested, is ours,
# with $\gamma$ chosen per notion on the validation split by our rule (the
# smallest explanations at least `min_faithfulness` faithful). The comparisons
# with the post-hoc searches are made at the book's seed, on `n_explain` test
# inputs; the accuracy and $\gamma$ claims over `seeds` training seeds on one
# data split. The probabilistic fill is the official one-sided uniform noise
# of width `noise_eps` (the official code uses one `epsilon` for the noise and the
# attack; its values for the paper's runs are not in the released code). The
# robust fill is a real 10-step PGD of radius `attack_eps` on the predicted
# class, a departure in the paper's favour: the released attack computes each
# step's ascent but then projects the *previous* iterate, so it never applies a
# step, and its "robust" fill is the uniform random start within $\epsilon$ (it
# also targets the label, where ours targets the prediction). The baselines are our own
# implementations: the Anchors-style search is greedy (beam width one) over 2x2
# superpixels under our fills rather than Anchors' bandit over its own sampler, and
# "GS" is stood in for by the gradient and IG top-$k$ searches. A scikit-learn
# table can be run beside the digits (`-p tabular=breast_cancer`); its results are
# shown but not claimed, as the paper has no tabular experiments.
#
# ## Going further
#
# Longer training, more inputs explained, larger searches and more seeds:
#
# ```
# python -m iclr25 run sst -p epochs=100 -p n_explain=200 -p pgd_steps=20 -p draws=64 -p seeds=5
# ```
#
# a stricter validation floor for $\gamma$ and a wider attack, against which an
# adversarially trained model may no longer keep its prediction with nothing
# fixed (`-p min_faithfulness=0.98 -p attack_eps=0.3`), and a table beside the digits with `-p tabular=wine`. The widget's live control
# explains any of the test digits; a reader can swap the MLP for the vision
# substrate's CNN (`vision.ModelConfig("cnn", ...)`) in `model_config`.
