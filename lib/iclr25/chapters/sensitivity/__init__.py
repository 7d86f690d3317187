"""Transformers learn low-sensitivity functions.

Vasudeva et al. (ICLR 2025). The *sensitivity* of a classifier f at an input x is
the chance that its prediction changes when one of the input's tokens is perturbed:
pick a token position i uniformly, add Gaussian noise to that token only,

    x~ = x + e_i (x) eta,   eta ~ N(0, sigma^2 I),
    S_sigma(f) = E_x E_i E_eta [ argmax f(x~) != argmax f(x) ],

estimated by averaging the flips over a data set and ``repeats`` independent draws
of (i, eta). A token is an image patch (the ViT's input token; for the MLP, CNN and
ConvMixer the same pixels) or a word embedding. Every model here is reached
through one *token interface*: a function from a token tensor (batch, tokens,
features) to logits, so one :func:`sensitivity` serves all architectures.

The paper's findings, and what this package provides for each:

* transformers are less sensitive than MLPs, CNNs, ConvMixers and LSTMs at matched
  training accuracy (:func:`sensitivity`, :func:`sensitivity_curve`,
  :class:`ConvMixer`, :class:`SequenceClassifier`, and :func:`train_to_accuracy`,
  which trains every model to one target accuracy);
* low sensitivity goes with robustness to corruptions (:func:`corrupt`) and with
  flat minima (:func:`sharpness`, the official code's mean change of the logits
  under Gaussian weight noise);
* a sensitivity regulariser, loss = (1 - p) CE + p MSE(f(x~), f(x)), lowers
  sensitivity and improves robustness (:func:`regularised_loss`, :func:`fit`);
* on modular addition, training-set sensitivity falls before the test accuracy
  jumps (grokking): :func:`grok`, with the official run (:data:`GROK_PAPER`) cached
  once built and a compressed one for a cold build (:func:`grok_settings`).

The models are torch layers (``nn.TransformerEncoder``, ``nn.LSTM``,
``nn.MultiheadAttention``) and the image models of :mod:`iclr25.vision`; the
loop that trains to a target accuracy is written here (:func:`train_to_accuracy`, an
epoch at a time with :func:`iclr25.core.train_epoch`), because :func:`iclr25.core.train`
runs a fixed number of epochs. The sensitivity estimate, the
regulariser and the sharpness measure are written here: they are a few lines each,
and no library computes them (captum's ``sensitivity_max`` measures how much an
*attribution* moves under input noise, not how often a prediction flips).

Files: ``method.py`` holds the token interface, the sensitivity estimate, the regulariser,
sharpness, the training to a target accuracy, the corruptions, the permutation test and
the grids built from the parameters (:func:`sigma_grid`, :func:`reg_strengths`);
``models.py`` the ConvMixer, the sequence classifiers and the synthetic language task;
``grokking.py`` the modular-addition run; ``figures.py`` the figure builders. This file
holds the chapter's parameters and its claims.
"""

from __future__ import annotations

from iclr25.chapters.sensitivity.figures import (
    grokking_figure,
    reg_figure,
    robustness_figure,
)
from iclr25.chapters.sensitivity.grokking import (
    GROK_PAPER,
    OneLayerTransformer,
    first_epoch,
    grok,
    grok_cached,
    grok_settings,
    modular_addition,
)
from iclr25.chapters.sensitivity.method import (
    CORRUPTIONS,
    Forward,
    accuracy,
    corrupt,
    fit,
    image_forward,
    patchify,
    perturb_one_token,
    perturb_tokens,
    reg_strengths,
    regularised_loss,
    sensitivity,
    sensitivity_curve,
    sharpness,
    sigma_grid,
    spearman_p_value,
    train_to_accuracy,
    unpatchify,
)
from iclr25.chapters.sensitivity.models import (
    IMAGE_ARCHS,
    SEQUENCE_ARCHS,
    ConvMixer,
    SequenceClassifier,
    build_image_model,
    sentiment_task,
)
from iclr25.core import Bound, ClaimSpec, Gap, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------


PARAMETERS = {
    "dataset": Param(
        "digits16",
        "image set of iclr25.vision",
        choices=("digits", "digits16", "noisy_digits", "shapes"),
    ),
    "width": Param(
        32, "hidden width / channels / token width of the image models", low=4, high=512
    ),
    "target_acc": Param(
        0.99,
        "training accuracy every model is trained to (matched accuracy by design)",
        low=0.5,
        high=1.0,
    ),
    "max_epochs": Param(60, "epoch cap of each image model", low=1, high=1000),
    "sigma_min": Param(
        0.025,
        "smallest noise std on pixels in [0, 1] (official default: 0.05 here)",
        low=1e-4,
        high=100.0,
    ),
    "sigma_max": Param(
        1.6, "largest noise std; the grid doubles from sigma_min up to it", low=1e-4, high=100.0
    ),
    "repeats": Param(20, "noise draws per input in every sensitivity estimate", low=1, high=100),
    "n_sens": Param(
        256, "training inputs on which each sensitivity is estimated", low=10, high=100000
    ),
    "reg_p": Param(
        0.5,
        "weight p of the sensitivity regulariser (paper: 0.5); the ViT family uses 0, p/2, p, 3p/2",
        low=0.02,
        high=0.66,
    ),
    "sigma_reg": Param(
        0.5,
        "noise std on one patch inside the regulariser (official: 1 on [-1, 1] pixels)",
        low=0.0,
        high=10.0,
    ),
    "vit_seeds": Param(3, "seeds per regulariser weight in the ViT family", low=1, high=10),
    "n_text": Param(
        2000, "sequences of the synthetic language task (80% train)", low=100, high=100000
    ),
    "max_epochs_text": Param(60, "epoch cap of each language model", low=1, high=1000),
    "grok_setting": Param(
        "auto",
        "grokking run: 'paper' (p = 113, lr 1e-3, 17k epochs; cached once built), 'quick' "
        "(the three grok parameters below), 'auto' (paper if cached, else quick)",
        choices=("auto", "paper", "quick"),
    ),
    "modulus": Param(53, "modulus p of the quick grokking run", low=5, high=200),
    "grok_epochs": Param(3000, "full-batch epochs of the quick grokking run", low=10, high=100000),
    "grok_lr": Param(0.01, "AdamW learning rate of the quick grokking run", low=1e-5, high=1.0),
    "seed": Param(0, "seed of data, initialisation and noise", low=0),
    "device": Param(
        "auto",
        "device of training and grokking ('auto': a GPU when one exists)",
        choices=("auto", "cpu", "cuda"),
    ),
}

SMOKE = {
    "dataset": "digits",
    "width": 8,
    "target_acc": 0.6,
    "max_epochs": 2,
    "sigma_min": 0.4,
    "repeats": 2,
    "n_sens": 64,
    "vit_seeds": 1,
    "n_text": 200,
    "max_epochs_text": 1,
    "grok_setting": "quick",
    "modulus": 7,
    "grok_epochs": 40,
}

# ---------------------------------------------------------------------------------
# The claims: one registry, fixed before the run. The notebook passes only the
# evidence.
# ---------------------------------------------------------------------------------

MATCHED = 0.05
"""Training accuracies within 5 points count as matched (every model is trained to the
same target accuracy, so this only guards against a model stopped by the epoch cap)."""

CLAIMS: dict[str, ClaimSpec] = {
    # the transformer's sensitivity (mean over the sigma grid) minus the lowest of the
    # other architectures': negative; and the training accuracies matched
    "vision_lowest": ClaimSpec(
        "At matched training accuracy, the ViT has the lowest sensitivity of the four "
        "image models (mean over the sigma grid)",
        paper="ViT below MLP, CNN (ResNet, DenseNet) and ConvMixer on CIFAR-10, SVHN, ImageNet",
        rule={"ViT - lowest other": Bound(lt=0), "train-acc spread": Bound(le=MATCHED)},
        control="the least sensitive of the MLP, CNN and ConvMixer, trained to the same accuracy",
    ),
    # change of the ViT's mean sensitivity and of its mean corrupted accuracy (each
    # averaged over the seeds) when it is trained with the regulariser at weight reg_p:
    # the first negative, the second positive
    "regulariser": ClaimSpec(
        "The regulariser (p = reg_p) lowers the ViT's sensitivity and raises its mean "
        "corrupted accuracy (means over vit_seeds seeds)",
        paper="lower sensitivity and higher accuracy on CIFAR-10-C / SVHN corruptions with p = 0.5",
        rule={"change in mean S": Bound(lt=0), "change in corrupted acc": Bound(gt=0)},
        control="the ViTs trained without the regulariser (p = 0), same seeds",
    ),
    # One-sided p-value of Spearman's rho over the ViT family (regulariser weights x
    # seeds, 12 ViTs in the book), in the paper's direction, against no association
    # (spearman_p_value): below the conventional 5%. With 12 models that needs about
    # |rho| >= 0.5.
    "robustness_correlates": ClaimSpec(
        "Lower sensitivity goes with higher accuracy under corruptions (a negative "
        "Spearman rho over the ViT family, one-sided p < 0.05)",
        paper="less sensitive models are more robust on CIFAR-10-C and ImageNet-C",
        rule=Bound(lt=0.05),
        control="no association: Spearman's rho over shuffled pairings (permutation test)",
    ),
    "sharpness_correlates": ClaimSpec(
        "Lower sensitivity goes with flatter minima (a positive Spearman rho between "
        "sensitivity and sharpness over the ViT family, one-sided p < 0.05)",
        paper="less sensitive models sit in flatter minima (CIFAR-10, SVHN)",
        rule=Bound(lt=0.05),
        control="no association: Spearman's rho over shuffled pairings (permutation test)",
    ),
    # as for vision_lowest: the transformer's mean sensitivity minus the lowest of the
    # other architectures', negative, at matched training accuracy
    "language_lowest": ClaimSpec(
        "At matched training accuracy, the transformer has the lowest sensitivity on "
        "the language task (mean over the sigma grid)",
        paper="RoBERTa / GPT-2 below LSTM on MRPC, QQP, IMDB and others",
        rule={"transformer - lowest other": Bound(lt=0), "train-acc spread": Bound(le=MATCHED)},
        control="the less sensitive of the LSTM and the MLP, trained to the same accuracy "
        "on the same embeddings",
    ),
    # epochs by which the sensitivity drop precedes the test-accuracy jump (NaN, which
    # never holds, when either event does not happen)
    "grokking_drop_first": ClaimSpec(
        "On modular addition the training-set sensitivity drops before the test accuracy "
        "jumps (the grokking run shown, p = its modulus)",
        paper="sensitivity falls ahead of the test-accuracy rise (p = 113, about 17k epochs)",
        rule=Bound(gt=0),
        control="the epoch of the test-accuracy jump in the same run (no control run)",
        gap=Gap(
            "Declared for the quick grokking run, which a build without the cached paper "
            "run shows (a cold build, as CI's), with modulus 53 instead of 113 and a "
            "learning rate ten "
            "times the paper's, because the paper's 17,000 epochs at p = 113 take about "
            "half an hour on one CPU core. Grokking time scales roughly with 1 / (learning "
            "rate x weight decay) while memorisation stays fast, so the compressed run puts "
            "memorisation and generalisation a few hundred epochs apart instead of "
            "thousands: the sensitivity's fall overlaps the test-accuracy rise, and a fall "
            "to half the peak of a curve smoothed over five logged points (100 epochs) is "
            "likely to come after the jump. The paper's run separates the phases: "
            "-p grok_setting=paper (built once, cached, minutes on a GPU). There the "
            "declaration does not apply: a run of the paper setting that holds shows as "
            "'holds, gap declared'."
        ),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against."""
