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
epochs = 20
sigma_max = 2.0
reg_p = 0.5
sigma_reg = 1.0
n_text = 2000
epochs_text = 10
modulus = 53
grok_epochs = 3000
grok_lr = 0.01
repeats = 5
seed = 0
device = "cpu"

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
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
# :pyobject: perturb_one_token
# ```
#
# and the sensitivity is the chance that the prediction changes,
# $S_\sigma(f) = \mathbb E_x\, \mathbb E_{i,\eta}\, [\arg\max f(\tilde x) \ne \arg\max f(x)]$,
# averaged over the training set and `repeats` draws per input (the paper uses 5):
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
# :pyobject: sensitivity
# ```

# %%
SIGMAS = [p.sigma_max / 8, p.sigma_max / 4, p.sigma_max / 2, p.sigma_max]
PATCH = 4
data = vision.load(p.dataset, p.seed)
train_tokens = sensitivity.patchify(data.train.x, PATCH)
print(f"{p.dataset}: {len(data.train)} training images of shape "
      f"{data.shape}, {train_tokens.shape[1]} patch tokens of "
      f"{train_tokens.shape[2]} pixels each")

# %% [markdown]
# ## Vision: ViT, MLP, CNN and ConvMixer
#
# The paper trains ViTs, ResNets, DenseNets, ConvMixers and MLPs on CIFAR-10, SVHN
# and ImageNet. Here the images come from `iclr25.vision` (by default scikit-learn's
# digits upsampled to 16x16, 60/20/20 train/validation/test), and four small models of
# the same width are trained with Adam and cross-entropy for the same number of
# epochs: the ViT, MLP and CNN of `iclr25.vision` and a ConvMixer (patch embedding,
# then residual depthwise and pointwise convolutions):
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
# :pyobject: ConvMixer
# ```
#
# The comparison is meant at matched accuracy: the models should fit the training
# set about equally well, so that a difference in sensitivity is a difference in
# *which* function they learned. The table shows how close they come.

# %%
ARCHS = {"vit": "ViT", "mlp": "MLP", "cnn": "CNN", "convmixer": "ConvMixer"}
COLORS = dict(zip([*ARCHS.values(), "Transformer", "LSTM"],
                  qualitative.Plotly))
REG_PS = sorted({0.0, p.reg_p / 2, p.reg_p})


def train_image(arch, reg=0.0):
    """One image model, trained (or loaded from the cache) with regulariser
    weight reg."""
    return sensitivity.fit(
        f"image-{arch}", {"arch": arch, "width": p.width, "data": data.spec},
        lambda: sensitivity.build_image_model(arch, data, p.width,
                                              patch=PATCH),
        lambda m: sensitivity.image_forward(m, data.shape, PATCH),
        train_tokens, data.train.y, epochs=p.epochs, p=reg,
        sigma_reg=p.sigma_reg, seed=p.seed)


def vit_name(reg):
    """The table row of the ViT trained with regulariser weight reg."""
    return "ViT" if reg == 0 else f"ViT, p = {reg:g}"


models = {ARCHS[a]: train_image(a) for a in ARCHS}
models.update({vit_name(r): train_image("vit", r) for r in REG_PS if r > 0})

# %% [markdown]
# Each model's accuracy, clean and under three corruptions of the test set, its
# sensitivity over the $\sigma$ grid, and its sharpness:

# %%
CORRUPTIONS = {"noise": 0.3, "blur": 1.0, "shift": 1}
corrupted = {k: sensitivity.corrupt(data.test.x, k, s, seed=p.seed)
             for k, s in CORRUPTIONS.items()}
test_tokens = sensitivity.patchify(data.test.x, PATCH)
rows = {}
for name, model in models.items():
    forward = sensitivity.image_forward(model, data.shape, PATCH)
    curve = sensitivity.sensitivity_curve(forward, train_tokens, SIGMAS,
                                          repeats=p.repeats, seed=p.seed)
    rows[name] = {
        "train acc": sensitivity.accuracy(forward, train_tokens,
                                          data.train.y),
        "test acc": sensitivity.accuracy(forward, test_tokens, data.test.y),
        **{f"S({s:g})": v for s, v in zip(SIGMAS, curve)},
        "mean S": curve.mean(),
        **{f"{k} acc": sensitivity.accuracy(model, x, data.test.y)
           for k, x in corrupted.items()},
        "sharpness": sensitivity.sharpness(model, lambda m: m(data.train.x),
                                           seed=p.seed),
    }
table = pd.DataFrame(rows).T
table["corrupted acc"] = table[[f"{k} acc" for k in CORRUPTIONS]].mean(axis=1)
table.round(3)

# %% [markdown]
# Accuracies are fractions; $S(\sigma)$ is the sensitivity on the training set at
# noise std $\sigma$ (pixels lie in $[0, 1]$, a patch has 16 of them); "mean S"
# averages it over the $\sigma$ grid. The corrupted accuracies are on the test set
# with Gaussian pixel noise (std 0.3), a Gaussian blur (std 1 pixel) and a one-pixel
# shift. *Sharpness* is the official code's flatness measure: the mean L1 change of
# the logits on the training set when every weight gets $\mathcal N(0, 0.05^2)$ noise
# (five draws).
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
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
          xlabel="noise std sigma",
          ylabel="sensitivity (fraction of flips)", log_x=True,
          mode="lines+markers", colors=COLORS, height=380).show()

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
    "At matched training accuracy, the ViT has the lowest sensitivity of the "
    "four image models (mean over the sigma grid)",
    kind="paper",
    paper="ViT below MLP, CNN (ResNet, DenseNet) and ConvMixer on CIFAR-10, "
          "SVHN, ImageNet",
    value={"ViT - lowest other": vit_mean - min(others.values()),
           "train-acc spread": acc_spread},
    measured=f"ViT {vit_mean:.3f}; "
             + ", ".join(f"{n} {v:.3f}" for n, v in others.items())
             + f"; train-accuracy spread {100 * acc_spread:.1f} points",
);

# %% [markdown]
# ### Robustness and flatness
#
# Does lower sensitivity go with better accuracy under corruptions, and with flatter
# minima? Each point is one trained model (the four architectures and the
# regularised ViTs). With this few points a rank correlation is only indicative.

# %%
names = list(table.index)
rho_robust = spearmanr(table.loc[names, "mean S"],
                       table.loc[names, "corrupted acc"]).statistic
rho_sharp = spearmanr(table.loc[names, "mean S"],
                      table.loc[names, "sharpness"]).statistic
sensitivity.robustness_figure(
    table.loc[names], [COLORS.get(n, COLORS["ViT"]) for n in names],
    rho_robust, rho_sharp).show()
print(f"Spearman rho(sensitivity, corrupted accuracy) = {rho_robust:+.2f} "
      "(paper: negative); "
      f"rho(sensitivity, sharpness) = {rho_sharp:+.2f} (paper: positive)")

# %% [markdown]
# The two correlations, each decided by a one-sided permutation test:

# %%
most_robust = table.loc[names, "corrupted acc"].idxmax()
p_robust = sensitivity.spearman_p_value(
    table.loc[names, "mean S"], table.loc[names, "corrupted acc"], "less")
core.claim(
    "robustness_correlates",
    "Lower sensitivity goes with higher accuracy under corruptions (a "
    "negative Spearman rho over the trained image models, one-sided "
    "p < 0.05)",
    kind="paper",
    paper="less sensitive models are more robust on CIFAR-10-C and "
          "ImageNet-C",
    value=p_robust,
    measured=f"rho = {rho_robust:+.2f} over {len(names)} models, p = "
             f"{p_robust:.2f}; most robust: {most_robust} "
             f"(mean S {table.loc[most_robust, 'mean S']:.3f})",
);

# %%
p_sharp = sensitivity.spearman_p_value(
    table.loc[names, "mean S"], table.loc[names, "sharpness"], "greater")
core.claim(
    "sharpness_correlates",
    "Lower sensitivity goes with flatter minima (a positive Spearman rho "
    "between sensitivity and sharpness over the trained image models, "
    "one-sided p < 0.05)",
    kind="paper",
    paper="less sensitive models sit in flatter minima (CIFAR-10, SVHN)",
    value=p_sharp,
    measured=f"rho = {rho_sharp:+.2f} over {len(names)} models, "
             f"p = {p_sharp:.2f}",
);

# %% [markdown]
# ## The sensitivity regulariser
#
# If low sensitivity helps, it can be asked for. The paper trains with
#
# $$\mathcal L = (1-p)\,\mathrm{CE}(f(x), y) + p\,\mathrm{MSE}\big(f(\tilde x), f(x)\big),$$
#
# $\tilde x$ with one patch noised (std `sigma_reg`, 1 in the paper), $p = 0.5$:
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
# :pyobject: regularised_loss
# ```
#
# Move $p$ to see the ViT's sensitivity curve and its accuracy under each corruption
# next to the unregularised ViT ($p = 0$).

# %%
def reg_figure(reg):
    """The ViT trained with weight reg against the plain ViT."""
    return sensitivity.reg_figure(
        table.loc[vit_name(0.0)], table.loc[vit_name(reg)], reg, SIGMAS,
        CORRUPTIONS, COLORS["ViT"])


core.explore(reg_figure, REG_PS, "p", active=REG_PS.index(p.reg_p));

# %%
plain, reg = table.loc["ViT"], table.loc[vit_name(p.reg_p)]
core.claim(
    "regulariser",
    f"The regulariser (p = {p.reg_p:g}) lowers the ViT's sensitivity and "
    "raises its mean corrupted accuracy",
    kind="paper",
    paper="lower sensitivity and higher accuracy on CIFAR-10-C / SVHN "
          "corruptions with p = 0.5",
    value={"change in mean S": reg["mean S"] - plain["mean S"],
           "change in corrupted acc":
               reg["corrupted acc"] - plain["corrupted acc"]},
    measured=f"mean S {plain['mean S']:.3f} -> {reg['mean S']:.3f}; "
             f"corrupted accuracy {plain['corrupted acc']:.3f} -> "
             f"{reg['corrupted acc']:.3f}; clean test "
             f"{plain['test acc']:.3f} -> {reg['test acc']:.3f}",
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

# %%
ids, labels = sensitivity.sentiment_task(p.n_text, seed=p.seed)
embeddings = torch.randn(32, 16,
                         generator=torch.Generator().manual_seed(p.seed))
cut = int(0.8 * p.n_text)
text_train, text_test = embeddings[ids[:cut]], embeddings[ids[cut:]]
TEXT = {"transformer": "Transformer", "lstm": "LSTM", "mlp": "MLP"}
text_rows = {}
for arch, name in TEXT.items():
    model = sensitivity.fit(
        f"text-{arch}", {"arch": arch, "n": p.n_text},
        lambda: sensitivity.SequenceClassifier(arch, embeddings, ids.shape[1],
                                               2),
        lambda m: m.from_embeddings, text_train, labels[:cut],
        epochs=p.epochs_text, seed=p.seed)
    forward = model.from_embeddings
    curve = sensitivity.sensitivity_curve(forward, text_train, SIGMAS,
                                          repeats=p.repeats, seed=p.seed)
    text_rows[name] = {
        "train acc": sensitivity.accuracy(forward, text_train, labels[:cut]),
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
          xlabel="noise std sigma", ylabel="sensitivity", log_x=True,
          mode="lines+markers", colors=COLORS, height=360).show()
text_table.round(3)

# %%
t_mean = text_table.loc["Transformer", "mean S"]
t_others = {n: text_table.loc[n, "mean S"] for n in text_table.index
            if n != "Transformer"}
t_spread = text_table["train acc"].max() - text_table["train acc"].min()
core.claim(
    "language_lowest",
    "At matched training accuracy, the transformer has the lowest "
    "sensitivity on the language task (mean over the sigma grid)",
    kind="paper",
    paper="RoBERTa / GPT-2 below LSTM on MRPC, QQP, IMDB and others",
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
# *groks*. The paper tracks the training-set sensitivity (noise on the embedding of
# $a$ or $b$, std 0.1): it rises while the model memorises and falls before the test
# accuracy jumps. The paper uses $p = 113$ and about 17,000 epochs at learning rate
# $10^{-3}$; to fit two CPU cores we take a smaller $p$ and a larger learning rate
# (grokking time scales roughly with $1/(\text{learning rate} \times \text{weight decay})$).
# The run is cached: it trains once, the first time the chapter runs.
#
# ```{literalinclude} ../lib/iclr25/chapters/sensitivity.py
# :pyobject: grok
# ```

# %%
log = {k: v.numpy() for k, v in sensitivity.grok(
    modulus=p.modulus, epochs=p.grok_epochs, lr=p.grok_lr,
    seed=p.seed).items()}
smooth = pd.Series(log["sensitivity"]).rolling(
    5, center=True, min_periods=1).mean().to_numpy()
peak_at = int(log["epoch"][np.argmax(smooth)])
drop = sensitivity.first_epoch(log["epoch"], smooth, smooth.max() / 2,
                               below=True, after=peak_at)
jump = sensitivity.first_epoch(log["epoch"], log["test_acc"], 0.5,
                               below=False)
sensitivity.grokking_figure(
    log, smooth, {"sensitivity drop": drop, "test-accuracy jump": jump},
    p.modulus, (COLORS["ViT"], COLORS["CNN"])).show()
print(f"sensitivity peak at epoch {peak_at}, drop at {drop}, "
      f"test-accuracy jump at {jump}")

# %% [markdown]
# The dashed lines mark the two events, defined before the run: the *jump* is the
# first logged epoch with test accuracy at least 0.5; the *drop* is the first epoch
# after the peak of the smoothed sensitivity (a centred mean over 5 logged points)
# where it is back below half that peak. The claim compares them. At the book's
# compressed schedule we expect it to miss, a gap declared before the run: with a
# learning rate ten times the paper's, memorisation and generalisation are only a few
# hundred epochs apart, so the sensitivity's fall overlaps the test-accuracy rise and
# reaches half its peak only after it. The paper's schedule ("Going further")
# separates the two.

# %%
both = drop is not None and jump is not None
core.claim(
    "grokking_drop_first",
    "On modular addition the training-set sensitivity drops before the test "
    "accuracy jumps",
    kind="paper",
    paper="sensitivity falls ahead of the test-accuracy rise "
          "(p = 113, about 17k epochs)",
    value=jump - drop if both else float("nan"),
    measured=f"sensitivity peak at epoch {peak_at}, drop at {drop}, "
             f"jump at {jump}"
             + (f": the drop leads by {jump - drop:+d} epochs" if both
                else f" (within {p.grok_epochs} epochs)"),
);

# %% [markdown]
# ## Claims
#
# The bounds (`BOUNDS` in the module), fixed before the run: "lowest" is a strict
# inequality on the sensitivity averaged over the $\sigma$ grid, with training
# accuracies within 5 points counting as matched; a correlation needs a Spearman
# $\rho$ in the paper's direction that a one-sided permutation test finds significant
# at 5% (`spearman_p_value`): the paper states a direction, not a strength, and the
# conventional level decides whether our models show one. With six models that needs
# $|\rho| \ge 0.83$, a bar that six models of different architectures and sizes are
# unlikely to clear, so both correlation claims are declared known gaps (`KNOWN_GAPS`),
# with what would show them. The regulariser must lower the average sensitivity *and*
# raise the mean accuracy over the three corruptions; the grokking events are the
# thresholds named above, and the grokking claim is a declared gap at the book's
# compressed schedule. Every claim here is of kind `paper`: a finding the paper reports.

# %%
core.claims_table();

# %% [markdown]
# ## What differs from the paper
#
# The paper's models are ResNets, ViTs and pretrained language models trained for
# hours on CIFAR, ImageNet and GLUE; ours are a few thousand parameters trained for
# seconds on 16x16 digits and a synthetic text task, and the sensitivity estimates
# come from a thousand-odd inputs and `repeats` draws, so differences of a point or
# two are within the noise. The sensitivity curves cross: at small $\sigma$ the
# ordering can differ from that at large $\sigma$, which is why the claims use the
# average over the grid. Correlations with robustness and sharpness over a handful
# of models are indicative only.
#
# ## Going further
#
# Larger images and models, longer training, and the paper's grokking setting:
#
# ```bash
# python -m iclr25 run sensitivity -p dataset=noisy_digits -p width=64 -p epochs=40
# python -m iclr25 run sensitivity -p modulus=113 -p grok_lr=0.001 -p grok_epochs=20000
# ```
#
# Trained models and the grokking run are cached by configuration (`ICLR25_CACHE`).
