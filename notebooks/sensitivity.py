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
# # Transformers learn low-sensitivity functions
#
# Transformers beat MLPs, CNNs and LSTMs on many tasks and are often more robust.
# What do they prefer to learn? {cite:p}`vasudeva2025sensitivity` answer with one
# number that makes sense for images and text alike: the *sensitivity* of a model,
# how often its prediction flips when a single input token (an image patch, a word)
# is hit by random noise. Transformers, they find, learn less sensitive functions
# than the other architectures; lower sensitivity goes with robustness and flatter
# minima; penalising sensitivity makes a model more robust; and on modular
# addition, the training-set sensitivity falls *before* the test accuracy jumps, a
# progress measure for grokking. This chapter measures all four on small models
# trained here.

# %% tags=["parameters"]
dataset = "digits16"
width = 32
target_acc = 0.99
max_epochs = 60
sigma_min = 0.025
sigma_max = 1.6
repeats = 20
n_sens = 256
reg_p = 0.5
sigma_reg = 0.5
vit_seeds = 3
n_text = 2000
max_epochs_text = 60
grok_setting = "auto"
modulus = 53
grok_epochs = 3000
grok_lr = 0.01
seed = 0
device = "auto"

# %%
import numpy as np
import pandas as pd
import torch
from plotly.colors import qualitative
from plotly.subplots import make_subplots
from scipy.stats import spearmanr

from iclr25 import core, vision
from iclr25.chapters import sensitivity

p = core.chapter("sensitivity", globals())

# %% [markdown]
# ## Sensitivity through one token interface
#
# Every model is seen as a function from a sequence of $T$ tokens to logits. For a
# vision transformer the tokens are its non-overlapping image patches; for the MLP,
# the CNN and the ConvMixer we cut the image into the same patches and reassemble it
# before the model reads it, so "one token" means the same pixels for all four. For
# text the tokens are word embeddings. A perturbation picks one position $i$ uniformly
# and adds Gaussian noise to that token only,
#
# $$\tilde x = x + e_i \otimes \eta, \qquad \eta \sim \mathcal N(0, \sigma^2 I),$$
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/method.py
# :pyobject: perturb_one_token
# ```
#
# and the sensitivity is the chance that the prediction changes,
# $S_\sigma(f) = \mathbb E_x\, \mathbb E_{i,\eta}\, [\arg\max f(\tilde x) \ne \arg\max f(x)]$,
# averaged over training inputs and `repeats` draws per input (the paper uses 5;
# we take 20, because at the paper's small noise flips are rare):
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/method.py
# :pyobject: sensitivity
# ```
#
# **The noise scale.** Our pixels lie in $[0, 1]$. The official code normalises
# CIFAR pixels to $[-1, 1]$ (mean 0.5, std 0.5 per channel) and adds noise of std
# 0.1 in those units (its `var` argument multiplies a standard normal, so it is a
# standard deviation), which is $\sigma = 0.05$ here. Our grid doubles from
# `sigma_min` = 0.025, half the official default, up to 1.6, where a patch is
# drowned. (The official estimate scatters its 16 noised pixels over the image; we
# noise one 4x4 patch, the ViT's token, as the paper's definition does.)

# %%
SIGMAS = sensitivity.sigma_grid(p.sigma_min, p.sigma_max)
PATCH = 4
data = vision.load(p.dataset, p.seed)
train_tokens = sensitivity.patchify(data.train.x, PATCH)
sens_tokens = train_tokens[:p.n_sens]
print(f"{p.dataset}: {len(data.train)} training images of shape "
      f"{data.shape}, {train_tokens.shape[1]} patch tokens of "
      f"{train_tokens.shape[2]} pixels each; sensitivity on the first "
      f"{len(sens_tokens)}; sigma grid {SIGMAS}")

# %% [markdown]
# ## Vision: ViT, MLP, CNN and ConvMixer
#
# The paper trains ViTs, ResNets, DenseNets, ConvMixers and MLPs on CIFAR-10, SVHN
# and ImageNet. Here the images come from `iclr25.vision` (by default scikit-learn's
# digits upsampled to 16x16, 60/20/20 train/validation/test), and four small models of
# the same width are trained with Adam and cross-entropy: the ViT, MLP and CNN of
# `iclr25.vision` and a ConvMixer (patch embedding, then residual depthwise and
# pointwise convolutions):
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/models.py
# :pyobject: ConvMixer
# ```
#
# The comparison is meant at matched accuracy: the models should fit the training
# set equally well, so that a difference in sensitivity is a difference in *which*
# function they learned. So every model is trained until its training accuracy
# reaches `target_acc` (99%), checked after every epoch, with an epoch cap:
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/method.py
# :pyobject: train_to_accuracy
# ```
#
# Besides the four architectures we train a *family* of ViTs for the correlations
# below: the sensitivity regulariser (next sections) at four weights
# $p \in \{0, p_0/2, p_0, 3p_0/2\}$ ($p_0$ = `reg_p`), each from `vit_seeds` seeds.

# %%
ARCHS = {"vit": "ViT", "mlp": "MLP", "cnn": "CNN", "convmixer": "ConvMixer"}
COLORS = dict(zip([*ARCHS.values(), "Transformer", "LSTM"],
                  qualitative.Plotly))
REG_PS = sensitivity.reg_strengths(p.reg_p)


def train_image(arch, reg=0.0, seed=p.seed):
    """One image model trained to the target accuracy (or loaded from the
    cache): the model and its training accuracy after each epoch."""
    return sensitivity.fit(
        f"image-{arch}", {"arch": arch, "width": p.width, "data": data.spec},
        lambda: sensitivity.build_image_model(arch, data, p.width,
                                              patch=PATCH),
        lambda m: sensitivity.image_forward(m, data.shape, PATCH),
        train_tokens, data.train.y, target_acc=p.target_acc,
        max_epochs=p.max_epochs, p=reg, sigma_reg=p.sigma_reg, seed=seed,
        device=p.device)


models = {ARCHS[a]: train_image(a) for a in ARCHS}
family = {(r, k): models["ViT"] if (r, k) == (0.0, 0)
          else train_image("vit", r, p.seed + k)
          for r in REG_PS for k in range(p.vit_seeds)}

# %% [markdown]
# Each model's epochs and accuracy, clean and under three corruptions of the test
# set, its sensitivity over the $\sigma$ grid, and its sharpness:

# %%
CORRUPTIONS = {"noise": 0.3, "blur": 1.0, "shift": 1}
corrupted = {k: sensitivity.corrupt(data.test.x, k, s, seed=p.seed)
             for k, s in CORRUPTIONS.items()}
test_tokens = sensitivity.patchify(data.test.x, PATCH)


def measure(model, history):
    """The table row of one trained image model."""
    forward = sensitivity.image_forward(model, data.shape, PATCH)
    curve = sensitivity.sensitivity_curve(forward, sens_tokens, SIGMAS,
                                          repeats=p.repeats, seed=p.seed)
    return {
        "epochs": len(history), "train acc": history[-1],
        "test acc": sensitivity.accuracy(forward, test_tokens, data.test.y),
        **{f"S({s:g})": v for s, v in zip(SIGMAS, curve)},
        "mean S": curve.mean(),
        **{f"{k} acc": sensitivity.accuracy(model, x, data.test.y)
           for k, x in corrupted.items()},
        "sharpness": sensitivity.sharpness(model, lambda m: m(data.train.x),
                                           seed=p.seed)}


# %%
def frame(rows):
    """The table of the rows (name -> measure), with the mean corrupted
    accuracy."""
    out = pd.DataFrame(rows).T
    out["corrupted acc"] = out[[f"{k} acc" for k in CORRUPTIONS]].mean(axis=1)
    return out


table = frame({name: measure(*fitted) for name, fitted in models.items()})
table.round(3)

# %% [markdown]
# Accuracies are fractions; $S(\sigma)$ is the sensitivity on the first `n_sens`
# training images at noise std $\sigma$ (pixels in $[0, 1]$, a patch has 16 of
# them; $\sigma = 0.05$ is the official default); "mean S" averages it over the
# $\sigma$ grid. The corrupted accuracies are on the test set with Gaussian pixel
# noise (std 0.3), a Gaussian blur (std 1 pixel) and a one-pixel shift. *Sharpness*
# is the official code's flatness measure: the mean L1 change of the logits on the
# training set when every weight gets $\mathcal N(0, 0.05^2)$ noise (five draws).
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/method.py
# :pyobject: sharpness
# ```
#
# ### Sensitivity over the noise level

# %%
BASE = list(ARCHS.values())
core.plot(SIGMAS, {name: [table.loc[name, f"S({s:g})"] for s in SIGMAS]
                   for name in BASE},
          title=f"Sensitivity to noise on one patch ({p.dataset}, "
                "training set)",
          xlabel="noise std sigma (official default 0.05)",
          ylabel="sensitivity (fraction of flips)", log_x=True,
          mode="lines+markers", colors=COLORS, height=380).show()
if 0.05 in SIGMAS:
    print("at the official default sigma = 0.05: " + ", ".join(
        f"{n} {table.loc[n, 'S(0.05)']:.4f}" for n in BASE))

# %% [markdown]
# Move $\sigma$ to compare the four models at one noise level (the static page's
# slider switches between the values of the grid).

# %%
def sigma_figure(sigma):
    """Sensitivity and test accuracy of the four image models at noise std
    sigma."""
    fig = make_subplots(rows=1, cols=2,
                        subplot_titles=[f"sensitivity at sigma = {sigma:g}",
                                        "test accuracy"])
    fig.add_bar(x=BASE, y=[table.loc[n, f"S({sigma:g})"] for n in BASE],
                marker_color=[COLORS[n] for n in BASE], showlegend=False,
                row=1, col=1)
    fig.add_bar(x=BASE, y=[table.loc[n, "test acc"] for n in BASE],
                marker_color=[COLORS[n] for n in BASE], showlegend=False,
                row=1, col=2)
    fig.update_yaxes(
        range=[0, max(0.05, 1.1 * table[[f"S({s:g})" for s in SIGMAS]]
                      .values.max())],
        row=1, col=1)
    fig.update_yaxes(range=[0, 1], row=1, col=2)
    fig.update_layout(title=f"Image models at sigma = {sigma:g}", height=360)
    return fig


core.explore(sigma_figure, SIGMAS, "sigma", active=len(SIGMAS) - 1);

# %%
vit_mean = table.loc["ViT", "mean S"]
others = {n: table.loc[n, "mean S"] for n in BASE if n != "ViT"}
acc_spread = (table.loc[BASE, "train acc"].max()
              - table.loc[BASE, "train acc"].min())
core.claim(
    "vision_lowest",
    value={"ViT - lowest other": vit_mean - min(others.values()),
           "train-acc spread": acc_spread},
    measured=f"ViT {vit_mean:.3f}; "
             + ", ".join(f"{n} {v:.3f}" for n, v in others.items())
             + f"; train accuracy {table.loc[BASE, 'train acc'].min():.3f}"
             f" to {table.loc[BASE, 'train acc'].max():.3f}",
);

# %% [markdown]
# ## The sensitivity regulariser
#
# If low sensitivity helps, it can be asked for. The paper trains with
#
# $$\mathcal L = (1-p)\,\mathrm{CE}(f(x), y) + p\,\mathrm{MSE}\big(f(\tilde x), f(x)\big),$$
#
# $\tilde x$ with one patch noised, $p = 0.5$. The official noise std is 1 on
# $[-1, 1]$ pixels, so `sigma_reg` = 0.5 here:
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/method.py
# :pyobject: regularised_loss
# ```
#
# The ViT family measured, and averaged over its seeds per weight $p$:

# %%
vits = frame({f"ViT p={r:g} s{k}": measure(*family[r, k])
              for r, k in family})
vits["p"] = [r for r, _ in family]
by_p = vits.drop(columns="p").groupby(vits["p"]).mean()
by_p[["epochs", "train acc", "test acc", "mean S", "corrupted acc",
      "sharpness"]].round(3)

# %% [markdown]
# Move $p$ to see the ViT's sensitivity curve and its accuracy under each corruption
# (means over the seeds) next to the unregularised ViT ($p = 0$).

# %%
def reg_figure(reg):
    """The ViTs trained with weight reg against the plain ViTs."""
    return sensitivity.reg_figure(by_p.loc[0.0], by_p.loc[reg], reg, SIGMAS,
                                  CORRUPTIONS, COLORS["ViT"])


core.explore(reg_figure, REG_PS[1:], "p", active=REG_PS.index(p.reg_p) - 1);

# %%
plain, reg = by_p.loc[0.0], by_p.loc[p.reg_p]
core.claim(
    "regulariser",
    value={"change in mean S": reg["mean S"] - plain["mean S"],
           "change in corrupted acc":
               reg["corrupted acc"] - plain["corrupted acc"]},
    measured=f"p = {p.reg_p:g}, {p.vit_seeds} seeds: mean S "
             f"{plain['mean S']:.3f} -> {reg['mean S']:.3f}; "
             f"corrupted accuracy {plain['corrupted acc']:.3f} -> "
             f"{reg['corrupted acc']:.3f}; clean test "
             f"{plain['test acc']:.3f} -> {reg['test acc']:.3f}",
);

# %% [markdown]
# ### Robustness and flatness
#
# Does lower sensitivity go with better accuracy under corruptions, and with flatter
# minima? Models of different architectures also differ in size and in everything
# else, so the correlations are taken within the ViT family: one architecture, the
# regulariser weight and the seed varying, every model at the same training
# accuracy. Each point is one ViT.

# %%
rho_robust = spearmanr(vits["mean S"], vits["corrupted acc"]).statistic
rho_sharp = spearmanr(vits["mean S"], vits["sharpness"]).statistic
sensitivity.robustness_figure(vits, rho_robust, rho_sharp).show()
print(f"Spearman rho(sensitivity, corrupted accuracy) = {rho_robust:+.2f} "
      "(paper: negative); "
      f"rho(sensitivity, sharpness) = {rho_sharp:+.2f} (paper: positive)")

# %% [markdown]
# The two correlations, each decided by a one-sided permutation test:

# %%
p_robust = sensitivity.spearman_p_value(vits["mean S"],
                                        vits["corrupted acc"], "less")
core.claim(
    "robustness_correlates",
    value=p_robust,
    measured=f"rho = {rho_robust:+.2f} over {len(vits)} ViTs, "
             f"p = {p_robust:.3f}",
);

# %%
p_sharp = sensitivity.spearman_p_value(vits["mean S"], vits["sharpness"],
                                       "greater")
core.claim(
    "sharpness_correlates",
    value=p_sharp,
    measured=f"rho = {rho_sharp:+.2f} over {len(vits)} ViTs, "
             f"p = {p_sharp:.3f}",
);

# %% [markdown]
# ## Language: a transformer, an LSTM and an MLP over embeddings
#
# The paper compares RoBERTa, GPT-2 and LSTMs on GLUE tasks and IMDB. Here the text
# is synthetic, with a planted rule: sequences of 16 words over a vocabulary of 32,
# of which 8 are "positive" and 8 "negative"; the label says whether a sequence holds
# more positive than negative words (like bag-of-words sentiment). All three models
# read the same fixed random word embeddings (dimension 16), so noise of a given
# $\sigma$ is the same perturbation for each: a two-block transformer, a
# bidirectional LSTM (both mean-pooled) and an MLP on the concatenated embeddings.
# Each is trained to the same target training accuracy.

# %%
ids, labels = sensitivity.sentiment_task(p.n_text, seed=p.seed)
embeddings = torch.randn(32, 16,
                         generator=torch.Generator().manual_seed(p.seed))
cut = int(0.8 * p.n_text)
text_train, text_test = embeddings[ids[:cut]], embeddings[ids[cut:]]
TEXT = {"transformer": "Transformer", "lstm": "LSTM", "mlp": "MLP"}
text_rows = {}
for arch, name in TEXT.items():
    model, history = sensitivity.fit(
        f"text-{arch}", {"arch": arch, "n": p.n_text},
        lambda: sensitivity.SequenceClassifier(arch, embeddings, ids.shape[1],
                                               2),
        lambda m: m.from_embeddings, text_train, labels[:cut],
        target_acc=p.target_acc, max_epochs=p.max_epochs_text, seed=p.seed,
        device=p.device)
    forward = model.from_embeddings
    curve = sensitivity.sensitivity_curve(forward, text_train[:p.n_sens],
                                          SIGMAS, repeats=p.repeats,
                                          seed=p.seed)
    text_rows[name] = {
        "epochs": len(history), "train acc": history[-1],
        "test acc": sensitivity.accuracy(forward, text_test, labels[cut:]),
        **{f"S({s:g})": v for s, v in zip(SIGMAS, curve)},
        "mean S": curve.mean()}
text_table = pd.DataFrame(text_rows).T

# %% [markdown]
# The three models' sensitivity curves and accuracies:

# %%
core.plot(SIGMAS, {name: [text_table.loc[name, f"S({s:g})"] for s in SIGMAS]
                   for name in text_table.index},
          title="Sensitivity to noise on one word embedding (training set)",
          xlabel="noise std sigma (embeddings have std 1)",
          ylabel="sensitivity", log_x=True,
          mode="lines+markers", colors=COLORS, height=360).show()
text_table.round(3)

# %%
t_mean = text_table.loc["Transformer", "mean S"]
t_others = {n: text_table.loc[n, "mean S"] for n in text_table.index
            if n != "Transformer"}
t_spread = text_table["train acc"].max() - text_table["train acc"].min()
core.claim(
    "language_lowest",
    value={"transformer - lowest other": t_mean - min(t_others.values()),
           "train-acc spread": t_spread},
    measured=f"Transformer {t_mean:.3f}; "
             + ", ".join(f"{n} {v:.3f}" for n, v in t_others.items())
             + f"; train-accuracy spread {100 * t_spread:.1f} points",
);

# %% [markdown]
# ## Sensitivity as a progress measure for grokking
#
# A one-layer transformer learns $a + b \bmod p$ from the sequences "a b =", 30% of all
# pairs for training, full batch, AdamW with weight decay 1.0. It memorises the
# training set quickly and generalises to the other 70% only much later: it
# *groks*. The paper tracks the training-set sensitivity (as in the official code,
# noise of std 0.1 on the embeddings of $a$ and $b$ together): it rises while the
# model memorises and falls before the test accuracy jumps.
#
# Two runs are on offer (`grok_setting`). The *paper* run follows the official
# notebook: $p = 113$, learning rate $10^{-3}$, 17,000 epochs. It takes about half an
# hour on one CPU core (a minute or two on a GPU, where `device="auto"` puts it),
# so it is built only when asked (`-p grok_setting=paper`) and cached. The *quick*
# run compresses the schedule to fit the book's budget: a smaller $p$ and a ten times
# larger learning rate (grokking time scales roughly with
# $1/(\text{learning rate} \times \text{weight decay})$). By default (`auto`) the
# chapter shows the paper run when it is cached and the quick run otherwise; the
# line under the figure says which ran.
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity/grokking.py
# :pyobject: grok
# ```

# %%
QUICK = {"modulus": p.modulus, "epochs": p.grok_epochs, "lr": p.grok_lr,
         "every": 20}
grok_run, grok_args = sensitivity.grok_settings(p.grok_setting, QUICK)
log = {k: v.numpy() for k, v in sensitivity.grok(
    **grok_args, seed=p.seed, device=p.device).items()}
smooth = pd.Series(log["sensitivity"]).rolling(
    5, center=True, min_periods=1).mean().to_numpy()
peak_at = int(log["epoch"][np.argmax(smooth)])
drop = sensitivity.first_epoch(log["epoch"], smooth, smooth.max() / 2,
                               below=True, after=peak_at)
jump = sensitivity.first_epoch(log["epoch"], log["test_acc"], 0.5,
                               below=False)
sensitivity.grokking_figure(
    log, smooth, {"sensitivity drop": drop, "test-accuracy jump": jump},
    grok_args["modulus"], (COLORS["ViT"], COLORS["CNN"])).show()
print(f"grokking run shown: {grok_run} (p = {grok_args['modulus']}, "
      f"learning rate {grok_args['lr']:g}, {grok_args['epochs']} epochs)")
print(f"sensitivity peak at epoch {peak_at}, drop at {drop}, "
      f"test-accuracy jump at {jump}")

# %% [markdown]
# The dashed lines mark the two events, defined before the run: the *jump* is the
# first logged epoch with test accuracy at least 0.5; the *drop* is the first logged
# epoch after the peak of the smoothed sensitivity (a centred mean over 5 logged
# points) where it is back below half that peak. The claim compares them. For the
# quick run we expect it to miss, a gap declared before the run: with a learning
# rate ten times the paper's, memorisation and generalisation are only a few hundred
# epochs apart, so the sensitivity's fall overlaps the test-accuracy rise and
# reaches half its peak only after it. The paper run separates the two (where it
# runs, the claim shows "holds, gap declared": the declaration is the quick run's).

# %%
both = drop is not None and jump is not None
core.claim(
    "grokking_drop_first",
    value=jump - drop if both else float("nan"),
    measured=f"{grok_run} run, p = {grok_args['modulus']}: sensitivity peak "
             f"at epoch {peak_at}, drop at {drop}, jump at {jump}"
             + (f": the drop leads by {jump - drop:+d} epochs" if both
                else f" (within {grok_args['epochs']} epochs)"),
);

# %% [markdown]
# ## Claims
#
# The rules (in the package's CLAIMS registry), fixed before the run: "lowest" is a
# strict inequality on the sensitivity averaged over the $\sigma$ grid, with training
# accuracies within 5 points counting as matched (every model is trained to the same
# target, so this only catches a model stopped by the epoch cap); a correlation needs
# a Spearman $\rho$ in the paper's direction that a one-sided permutation test finds
# significant at 5% (`spearman_p_value`) over the ViT family: the paper states a
# direction, not a strength, and the conventional level decides whether our models
# show one (with 12 ViTs, about $|\rho| \ge 0.5$). The regulariser must lower the
# seed-averaged sensitivity *and* raise the mean accuracy over the three
# corruptions; the grokking events are the thresholds named above.
#
# One claim is declared a known gap (in the package's CLAIMS registry, with its
# diagnosis) before the run: the grokking claim of the quick run. Two more were
# declared before the first run of this redesigned chapter and held in it, so their
# declarations were removed: the robustness correlation (we expected the
# regulariser's effect on our small corrupted test set to be of the order of the
# seed-to-seed spread) and the language comparison (we expected the transformer and
# the MLP, which both represent the task's additive rule, to be about equally
# insensitive). Every claim here is of kind `paper`: a finding the paper reports.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# The paper's models are ResNets, ViTs and pretrained language models trained for
# hours on CIFAR, ImageNet and GLUE; ours are a few thousand parameters trained for
# seconds on 16x16 digits and a synthetic text task, and each sensitivity is
# estimated on `n_sens` training inputs with `repeats` draws, so differences of a
# point or two are within the noise. At the official $\sigma = 0.05$ our small
# models flip a few times in a thousand draws at most (the line under the
# sensitivity figure), too rarely to order them; and the curves cross, so the
# ordering at small $\sigma$ can differ from that at large $\sigma$. That is why the
# claims use the average over the grid. The architecture comparison rests on one
# model per architecture; the correlations on a family of 12 ViTs, not on models
# of many architectures and training recipes. Our grokking transformer has
# residual connections (the official one has none) and logs the sensitivity every
# 20 (quick) or 50 (paper) epochs with 5 draws, where the official notebook logs one
# draw every epoch.
#
# ## Going further
#
# Larger images and models, more seeds, and the paper's grokking run:
#
# ```bash
# python -m iclr25 run sensitivity -p dataset=noisy_digits -p width=64 \
#     -p vit_seeds=5
# python -m iclr25 run sensitivity -p grok_setting=paper
# ```
#
# Trained models and both grokking runs are cached by configuration
# (`ICLR25_CACHE`), whatever device trained them.
