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
# # Label smoothing and selective classification
#
# A classifier that may abstain should abstain on the inputs it would get wrong. It
# ranks its predictions by a confidence score and rejects the least confident; how
# good that ranking is decides how safe it is to deploy. Label smoothing (LS) is a
# standard trick that usually improves accuracy. Does it also keep the ranking good?
# {cite:p}`xia2025selective` find that it does not: across tasks and architectures LS
# makes the model worse at knowing when it is wrong, they explain why from the
# gradient LS puts on the logits, and they undo most of the damage after training by
# normalising the logits. This chapter reproduces the three steps on small image
# classifiers trained here.

# %% tags=["parameters"]
n = 8000
alpha_max = 0.3
n_alphas = 3
seeds = 3
arch_b = "cnn"
epochs_mlp = 40
epochs_b = 18
width_mlp = 128
width_b = 8
lr = 0.1
weight_decay = 0.0005
batch_size = 128
bins = 5
seed = 0
device = "auto"

# %%
import numpy as np
import pandas as pd
from plotly.subplots import make_subplots
from scipy.stats import spearmanr
from tqdm.auto import tqdm

from iclr25 import core, vision
from iclr25.chapters import selective

p = core.chapter("selective", globals())

# %% [markdown]
# ## Selective classification and its metric
#
# The classifier predicts $\hat y = \arg\max_k z_k$ from its logits $z$ and accepts the
# prediction when a score $s(z)$ clears a threshold. Accepting the fraction $c$ of the
# test set with the highest scores (the *coverage*) leaves a *risk* $r(c)$, the error
# rate among the accepted. The risk-coverage curve runs from the most confident
# prediction alone to the whole test set, where the risk is the error rate, and the
# area under it (AURC) is the paper's metric: lower is better, and it only depends on
# how the score *ranks* the predictions. We compute it as the paper's code does: the
# $N$ test points sorted by decreasing score, $r(k/N)$ the error rate of the first $k$,
# $r(0) = 0$, and the trapezoidal rule.
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: risk_coverage
# ```
#
# The AURC mixes two things: how many errors there are and how well the score ranks
# them. A model with fewer errors gets a lower AURC at the same ranking quality. The
# paper's point is about the ranking, so we report two ranking-only measures beside it:
# the *excess* AURC (E-AURC), the AURC minus that of the oracle that ranks every error
# below every correct prediction at the same error rate, and the AUROC of the score
# separating correct from wrong predictions (higher is better).
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: e_aurc
# ```
#
# The usual score is the maximum softmax probability (MSP),
# $s(z) = \max_k \operatorname{softmax}(z)_k$.
#
# ## Why label smoothing would hurt: the paper's account
#
# LS trains against the targets $(1-\alpha)\,y + \alpha/K$ instead of the one-hot $y$
# ($K$ classes). The gradient of the loss with respect to the logits is then
#
# $$\frac{\partial L}{\partial z} = \pi - \Big((1-\alpha)\,y + \frac{\alpha}{K}\Big), \qquad \pi = \operatorname{softmax}(z),$$
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: ls_logit_gradient
# ```
#
# For the max logit $z_{\max}$, averaged over the label $y$ of an input $x$, this is the
# cross-entropy gradient $\pi_{\max} - P(\text{correct}\mid x)$ plus
# $\alpha\,(P(\text{correct}\mid x) - 1/K)$. The extra term pushes the max logit down,
# and it pushes *harder* where the prediction is likely to be right. Confident correct
# predictions are pulled back towards the uncertain ones, so the confidence ranks
# correct and wrong predictions less well. The fix removes the logit magnitude, which
# LS has distorted, and keeps the direction: the score is the max of the
# $p$-normalised logits, $\max_k u_k / \|u\|_p$, where $u = z - \bar z$ are the logits
# centred on their mean over the classes (as in the official search; the softmax
# ignores that shift), with $p \in \{1, \dots, 10\}$ chosen on validation AURC.
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: normalised_max_logit
# ```

# %%
ALPHAS = [round(p.alpha_max * k / p.n_alphas, 4)
          for k in range(1, p.n_alphas + 1)]
share = np.linspace(0, 1, 101)
fig = core.plot(
    share, {f"alpha = {alpha:g}": selective.max_logit_pull(share, alpha, 10)
            for alpha in ALPHAS},
    title="Extra push LS puts on the max logit (K = 10 classes)",
    xlabel="P(correct | x)", ylabel="alpha (P(correct | x) - 1/K)",
    height=360)
fig.add_hline(y=0, line_color="gray", line_width=1)
fig.show()

# %% [markdown]
# ## Data and models
#
# The paper trains ResNets, DenseNets and ViTs on CIFAR and ImageNet for tens of
# epochs. Here two image sets are drawn offline by `iclr25.vision` (16x16 pixels,
# 60/20/20 train/validation/test, fixed by the seed), and two small architectures are
# trained on each in seconds:
#
# * **shapes**: six shapes (disc, ring, square, frame, triangle, cross), rotated,
#   scaled and moved, with pixel noise and a distractor stroke. Small shapes on a
#   coarse grid are genuinely ambiguous, so the best model still errs;
# * **noisy digits**: scikit-learn's 8x8 digits rescaled, shifted by up to a pixel,
#   with noise and a distractor; the digits of the three splits are disjoint.
#
# The architectures are an MLP and, by default, a small CNN (convolution, batch norm,
# ReLU and pooling blocks, then a hidden layer); `arch_b="vit"` swaps in a small vision
# transformer. Every model is trained with the official recipe: SGD with learning rate
# 0.1, momentum 0.9 and weight decay $5 \times 10^{-4}$, batch 128, the rate divided by
# ten at 1/3 and at 2/3 of the epochs (the official CIFAR runs step at epochs 25 and 50
# of 75), the last iterate kept. Each model is trained with cross-entropy (CE,
# $\alpha = 0$) and with LS at each $\alpha$, from the same initialisation and batch
# order for a given seed.
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: Recipe
# ```

# %%
DATASETS = {"shapes": vision.load("shapes", p.seed, p.n),
            "noisy digits": vision.load("noisy_digits", p.seed, p.n)}
ARCHS = {"mlp": dict(width=p.width_mlp, epochs=p.epochs_mlp),
         p.arch_b: dict(width=p.width_b, epochs=p.epochs_b)}
SETTINGS = [(d, a) for d in DATASETS for a in ARCHS]

vision.image_grid(
    [data.train.x[k, 0] for data in DATASETS.values() for k in range(8)],
    rows=2, cols=8,
    titles=[f"{d}: {data.classes[int(data.train.y[k])]}"
            for d, data in DATASETS.items() for k in range(8)],
    title="Training images", height=330, margin=dict(t=70, b=10)).show()

# %%
runs = [(d, a, alpha, s) for d, a in SETTINGS for alpha in [0.0, *ALPHAS]
        for s in range(p.seed, p.seed + p.seeds)]
results, losses = {}, {}
for d, a, alpha, s in tqdm(runs, desc="training"):
    data = DATASETS[d]
    model = vision.ModelConfig.for_data(a, data, width=ARCHS[a]["width"])
    recipe = selective.Recipe(
        epochs=ARCHS[a]["epochs"], lr=p.lr, weight_decay=p.weight_decay,
        batch_size=p.batch_size, seed=s)
    net, losses[d, a, alpha, s] = vision.train(
        data, model, recipe.config(alpha), device=p.torch_device,
        progress=False)
    results[d, a, alpha, s] = selective.evaluate(
        vision.logits(net, data.val.x), data.val.y,
        vision.logits(net, data.test.x), data.test.y)

# %% [markdown]
# The mean training loss of each epoch, first seed, for CE and the largest $\alpha$
# (LS's loss cannot fall below the entropy of its smoothed targets). The two drops of
# the learning rate show as steps; the last third of the epochs settles the iterate.

# %%
ALPHA = ALPHAS[-1]
fig = make_subplots(rows=1, cols=2, subplot_titles=["CE", f"LS {ALPHA:g}"])
for col, alpha in enumerate([0.0, ALPHA], start=1):
    for d, a in SETTINGS:
        curve = losses[d, a, alpha, p.seed]
        fig.add_scatter(x=np.arange(1, len(curve) + 1), y=curve,
                        name=f"{d}, {a}", legendgroup=f"{d}, {a}",
                        showlegend=col == 1, row=1, col=col)
fig.update_xaxes(title_text="epoch")
fig.update_yaxes(title_text="training loss", col=1)
fig.update_layout(height=340, title="Training loss, SGD with two steps")
fig.show()

# %%
rows = [dict(dataset=d, arch=a, alpha=alpha, seed=s, **r.summary())
        for (d, a, alpha, s), r in results.items()]
frame = pd.DataFrame(rows)
groups = frame.groupby(["dataset", "arch", "alpha"], sort=False)
table = groups.mean(numeric_only=True).drop(columns="seed")
spread = groups.std(numeric_only=True).drop(columns="seed").fillna(0.0)
PERCENT = ["accuracy", "aurc_msp", "aurc_norm", "eaurc_msp", "eaurc_norm",
           "auroc_msp", "auroc_norm"]
(100 * table[PERCENT]).join(table["p"]).round(2)

# %% [markdown]
# The table gives, in percent and averaged over seeds, test accuracy and, by MSP and
# by the normalised max logit (with the $p$ chosen on validation), AURC, E-AURC (lower
# is better) and AUROC (higher is better).
#
# ## Does LS make the confidence ranking worse?
#
# The paper's main plot: AURC against $\alpha$ ($\alpha = 0$ is CE), by MSP and by the
# normalised max logit, mean and standard deviation over seeds.

# %%
def metric_figure(metric, column):
    """``column`` (by MSP and normalised) against alpha, every setting."""
    series = {f"{d}, {a}": {
        score: ([table.loc[(d, a, al), f"{column}_{key}"] for al in ALL],
                [spread.loc[(d, a, al), f"{column}_{key}"] for al in ALL])
        for score, key in [("MSP", "msp"), ("normalised", "norm")]}
        for d, a in SETTINGS}
    return selective.alpha_figure(ALL, series, metric)


ALL = [0.0, *ALPHAS]
metric_figure("AURC", "aurc").show()

# %% [markdown]
# The same for the E-AURC, the part of the AURC due to the ranking alone:

# %%
metric_figure("E-AURC", "eaurc").show()

# %% [markdown]
# The risk-coverage curves of the CE model and of the model with the largest $\alpha$,
# both ranked by MSP, and of the LS model ranked by the normalised max logit (first
# seed). Each curve ends at its model's error rate (full coverage). Where the LS curve
# runs above the CE curve at low coverage, more of the predictions LS is most sure
# of are wrong: the ranking, not the accuracy, is worse there.

# %%
def curves_figure(alpha):
    """Risk-coverage curves of CE and LS(alpha), first seed, every setting."""
    return selective.curves_figure(
        {f"{d}, {a}": (results[d, a, 0.0, p.seed],
                       results[d, a, alpha, p.seed]) for d, a in SETTINGS},
        alpha)


curves_figure(ALPHA).show()

# %%
ce_mean = {(d, a): table.loc[(d, a, 0.0)] for d, a in SETTINGS}


def ls_minus_ce(column):
    """LS minus CE in ``column`` (means over seeds), each (setting, alpha)."""
    return {(d, a, alpha): table.loc[(d, a, alpha), column]
            - ce_mean[d, a][column] for d, a in SETTINGS for alpha in ALPHAS}


change = {c: ls_minus_ce(c)
          for c in ["aurc_msp", "eaurc_msp", "auroc_msp", "accuracy"]}
print("LS minus CE, by MSP, in percentage points:")
print(" " * 27 + "AURC  E-AURC   AUROC  accuracy")
for key in change["accuracy"]:
    cells = "".join(f"{100 * change[c][key]:+8.2f}" for c in change)
    print(f"{key[0]:>12}, {key[1]}, alpha {key[2]:<5g}{cells}")

N_TEST = len(DATASETS["shapes"].test)
typical = float(np.mean([r.accuracy for r in results.values()]))
standard_error = 100 * np.sqrt(typical * (1 - typical) / N_TEST)
print(f"one model's accuracy on {N_TEST} test images has a standard error "
      f"of about {standard_error:.1f} points")

# %% [markdown]
# The claims: LS worsens the AURC, and, with the accuracy taken out, the ranking
# itself (E-AURC up, AUROC down), everywhere; and it keeps the accuracy.

# %%
def span(changes, sign=1):
    """The smallest and largest of a dict of changes, in percentage points."""
    values = [100 * sign * v for v in changes.values()]
    return f"{min(values):+.2f} to {max(values):+.2f} points"


core.claim(
    "ls_worse_aurc",
    value=list(change["aurc_msp"].values()),
    measured=f"AURC(LS) - AURC(CE) over {len(change['aurc_msp'])} "
             f"(setting, alpha) pairs: {span(change['aurc_msp'])}",
);

# %%
core.claim(
    "ls_worse_eaurc",
    value=list(change["eaurc_msp"].values()),
    measured=f"E-AURC(LS) - E-AURC(CE): {span(change['eaurc_msp'])}",
);
core.claim(
    "ls_worse_auroc",
    value=[-v for v in change["auroc_msp"].values()],
    measured=f"AUROC(CE) - AUROC(LS): {span(change['auroc_msp'], -1)}",
);

# %%
core.claim(
    "accuracy_kept",
    value=list(change["accuracy"].values()),
    measured=f"accuracy(LS) - accuracy(CE): {span(change['accuracy'])}",
);

# %% [markdown]
# Does the damage grow with $\alpha$? For each setting, the rank correlation
# (Spearman) between $\alpha$ (CE counts as $\alpha = 0$) and the mean AURC, the
# paper's plot above.

# %%
trend = {(d, a): spearmanr(ALL, [
    table.loc[(d, a, alpha), "aurc_msp"] for alpha in ALL
]).statistic for d, a in SETTINGS}
for (d, a), rho in trend.items():
    print(f"{d:>12}, {a}: Spearman rho(alpha, AURC) = {rho:+.2f}")
core.claim(
    "grows_with_alpha",
    value=list(trend.values()),
    measured=", ".join(f"{d} {a}: {rho:+.2f}"
                       for (d, a), rho in trend.items()),
);

# %% [markdown]
# ## The mechanism in the logits
#
# The gradient argument predicts that LS lowers the max logit more where the
# prediction is likely to be right. To test it on the *same* inputs, we take each test
# image's max logit under the CE model and under LS at the largest $\alpha$ (centred:
# minus the mean logit, the part the softmax sees), and bin the images by the CE
# model's confidence, its MSP, which tracks how likely the prediction is to be right
# (the hover shows the CE accuracy of each bin). In each bin, the ratio of LS's median
# to CE's: below one, LS has lowered the max logit; the account predicts the ratio
# falls as the CE confidence rises. Means over seeds, error bars one standard
# deviation.
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: suppression_by_confidence
# ```

# %%
def mean_suppression(d, a):
    """LS(ALPHA) against CE on the same inputs: the mean over seeds of the
    per-bin results, and the standard deviation of the ratio."""
    curves = [selective.suppression_by_confidence(
        results[d, a, 0.0, s], results[d, a, ALPHA, s], p.bins)
        for s in range(p.seed, p.seed + p.seeds)]
    mean = selective.Suppression(*(np.mean(f, axis=0) for f in zip(*curves)))
    return mean, np.std([c.ratio for c in curves], axis=0)


SUPPRESSION = {f"{d}, {a}": mean_suppression(d, a) for d, a in SETTINGS}
selective.suppression_figure(SUPPRESSION, ALPHA).show()

# %%
drop = {name: c.ratio[0] - c.ratio[-1]
        for name, (c, _) in SUPPRESSION.items()}
core.claim(
    "suppresses_correct_more",
    value=list(drop.values()),
    measured=f"LS {ALPHA:g}/CE, least vs most confident bin: " + ", ".join(
        f"{name} {c.ratio[0]:.2f} vs {c.ratio[-1]:.2f}"
        for name, (c, _) in SUPPRESSION.items()),
);

# %% [markdown]
# ## The fix: normalised logits
#
# For each trained model, $p$ is chosen from $\{1, \dots, 10\}$ on the validation
# split (never the test split) and the test predictions are ranked by the centred
# normalised max logit $\max_k u_k / \|u\|_p$.
#
# ```{literalinclude} ../lib/iclr25/chapters/selective/method.py
# :pyobject: choose_p
# ```
#
# Normalising changes the ranking, never the predictions, so it can win back the part
# of LS's damage that is due to the ranking (the E-AURC), not a change of accuracy. The
# share it wins back, pooled over the (setting, $\alpha$) pairs where LS raised the
# E-AURC:
# $\sum (\text{E}_{LS} - \text{E}_{LS, norm}) / \sum (\text{E}_{LS} - \text{E}_{CE})$,
# with $\text{E}$ the E-AURC (by MSP unless marked). "Most" means more than half.

# %%
lost_rank = change["eaurc_msp"]
won_back = {key: table.loc[key, "eaurc_msp"] - table.loc[key, "eaurc_norm"]
            for key in lost_rank}
losing = [key for key, gap in lost_rank.items() if gap > 0]  # to close
lost = sum(lost_rank[key] for key in losing)
recovered = (sum(won_back[key] for key in losing) / lost if losing
             else float("nan"))
for key in lost_rank:
    print(f"{key[0]:>12}, {key[1]}, alpha {key[2]:g}: E-AURC lost "
          f"{100 * lost_rank[key]:+.2f}, won back {100 * won_back[key]:+.2f} "
          f"points (p = {table.loc[key, 'p']:.1f})")
core.claim(
    "normalisation_recovers",
    value=recovered,
    measured=(f"{100 * recovered:.0f}% of {100 * lost:.2f} points lost, over "
              f"the {len(losing)} (setting, alpha) pairs where LS lost E-AURC"
              if losing else "LS lost no E-AURC: nothing to win back"),
);

# %% [markdown]
# The paper also finds that normalisation does little for a model trained with plain
# cross-entropy: CE does not suppress the max logit of its confident predictions, so
# there is little to undo. The AURC gained by normalising, CE against LS at the
# largest $\alpha$ (the same for E-AURC, as the accuracy does not move). The claim
# compares the two gains; it does not ask the gain for CE to be near zero, so a
# normalisation that *hurts* CE models more than LS models also passes it: the last
# line printed says which way CE went.

# %%
gain = {(d, a): [table.loc[(d, a, al), "aurc_msp"]
                 - table.loc[(d, a, al), "aurc_norm"] for al in (0.0, ALPHA)]
        for d, a in SETTINGS}
for (d, a), (ce, ls) in gain.items():
    print(f"{d:>12}, {a}: normalising gains {100 * ce:+.2f} points for CE, "
          f"{100 * ls:+.2f} for LS {ALPHA:g}")
worse = sum(ce < 0 for ce, _ in gain.values())
print(f"normalising raises (worsens) the AURC of CE models in {worse} of "
      f"{len(gain)} settings")
core.claim(
    "normalisation_little_for_ce",
    value=[ls - ce for ce, ls in gain.values()],
    measured=f"AURC gain, CE vs LS {ALPHA:g}: " + ", ".join(
        f"{d} {a}: CE {100 * ce:+.2f} vs LS {100 * ls:+.2f}"
        for (d, a), (ce, ls) in gain.items()),
);

# %% [markdown]
# ## How the results move with $\alpha$
#
# Move $\alpha$ to compare, in every setting, the AURC of CE and of LS at that
# $\alpha$, by MSP and normalised, and the accuracy of both (means over seeds). On the
# static page the slider under the figure switches between the trained values of
# $\alpha$.

# %%
LABELS = {f"{d}<br>{a}": (d, a) for d, a in SETTINGS}
FLOOR = max(0, 100 * table["accuracy"].min() - 5)


def sensitivity_figure(alpha):
    """AURC and accuracy of CE and of LS(alpha), by setting."""
    return selective.sensitivity_figure(
        {label: ce_mean[s] for label, s in LABELS.items()},
        {label: table.loc[(*s, alpha)] for label, s in LABELS.items()},
        alpha, accuracy_floor=FLOOR)


core.explore(sensitivity_figure, ALPHAS, "alpha", active=len(ALPHAS) - 1);

# %% [markdown]
# ## Claims
#
# Each claim is of kind `paper` (the paper makes it; its figure is quoted) or
# `setup` (a check that our experiment can test the paper at all). The rules, in
# the module's CLAIMS registry, were fixed before running: strict inequalities for
# the direction of each effect, 1 percentage point for "keeps accuracy", half the
# lost E-AURC for "most of the gap". A claim expected to miss at our scale is
# declared, with its diagnosis, in the module's CLAIMS registry, also before the
# run; the four whose diagnosis opens "Declared after a book run had missed this
# claim" missed in the first run of this redesigned chapter and were declared
# after it. The paper's own figures come from ImageNet, CIFAR, Cityscapes and IMDB
# models; the only exact numbers quoted here are those printed by the official
# code's bank-marketing MLP notebook.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# * **Scale.** The paper trains ResNets, DenseNets and ViTs on CIFAR, ImageNet,
#   Cityscapes and IMDB; we train an MLP and a small CNN on two generated 16x16 image
#   sets, with 1,600 test and 1,600 validation images and `seeds` seeds.
# * **Training.** The recipe is the official one (SGD, learning rate 0.1, momentum 0.9,
#   weight decay $5 \times 10^{-4}$, batch 128, the rate divided by ten at 1/3 and 2/3
#   of the epochs), scaled down in length: 40 epochs for the MLP and 18 for the CNN
#   instead of 75, which keeps the chapter within its two-minute budget. The training
#   losses above still fall a little in the last third, the CE models' most: trained
#   longer, a CE model would fit its training set more closely and grow more
#   confident, as the paper's models do. There is no data
#   augmentation (the official CIFAR runs crop and flip; our images are drawn with
#   random shifts and rotations already).
# * **Accuracy.** The paper's premise is that LS keeps or slightly improves accuracy,
#   as for its large models, so that a worse AURC means a worse ranking. Our small
#   models move by a point or two: shapes are ambiguous by construction, and the noisy
#   digits draw on only 1,078 distinct training digits, which a model can over-fit and
#   where LS acts as a regulariser. The AURC then moves with the error rate as well as
#   the ranking, which is why E-AURC and AUROC stand beside it.
# * **Normalisation.** The logits are centred before the norm in both the search for
#   $p$ and the test, as in the official search on ImageNet (whose final test cell
#   normalises uncentred logits); $p \in \{1, \dots, 10\}$ as in that search.
#   "Recovers most" is measured on the E-AURC, the part of the loss a re-ranking can
#   undo.
# * **Mechanism.** The paper plots the max logit given the MSP for correct and wrong
#   predictions of each model; we compare the two models on the same inputs, binned by
#   the CE model's confidence, with the max logit centred.
#
# ## Going further
#
# More seeds, more data and training closer to the official 75 epochs, or the vision
# transformer (a GPU helps: `-p device=cuda`):
#
# ```bash
# python -m iclr25 run selective -p seeds=5 -p n=30000 -p epochs_mlp=75 -p epochs_b=75
# python -m iclr25 run selective -p arch_b=vit -p width_b=32 -p epochs_b=60
# ```
#
# Trained models are cached by configuration (`ICLR25_CACHE`), so a rerun only trains
# what changed.
