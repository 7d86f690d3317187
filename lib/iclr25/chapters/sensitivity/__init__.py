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
  jumps (grokking): :func:`grok`, with the official run (:data:`GROK_PAPER`) on request
  and a shorter one, on more of the pairs of a smaller modulus, for the book
  (:func:`grok_settings`).

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
the noise grid built from the parameters (:func:`sigma_grid`);
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
    GENERALISED,
    GROK_PAPER,
    OneLayerTransformer,
    first_epoch,
    grok,
    grok_settings,
    grokking_events,
    modular_addition,
    smoothed,
)
from iclr25.chapters.sensitivity.method import (
    CORRUPTIONS,
    SCATTERED_PIXELS,
    Forward,
    accuracy,
    corrupt,
    fit,
    image_forward,
    patchify,
    perturb_one_token,
    perturb_scattered_pixels,
    perturb_tokens,
    regularised_loss,
    scattered_sensitivity,
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
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------


PARAMETERS = {
    "dataset": Param(
        "noisy_digits",
        "image set of iclr25.vision",
        choices=("digits", "digits16", "noisy_digits", "shapes"),
    ),
    "n_images": Param(
        1800,
        "images drawn for noisy_digits and shapes, split 60/20/20 (digits and digits16 "
        "split their fixed 1,797)",
        low=10,
        high=100000,
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
    "max_epochs": Param(
        200,
        "epoch cap of each image model: training stops at target_acc, so the cap only "
        "ends a model that never reaches it",
        low=1,
        high=1000,
    ),
    "seeds": Param(
        5,
        "training runs (seeds of initialisation and batch order) per architecture, of "
        "the regularised ViT and of grokking",
        low=1,
        high=10,
    ),
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
    "reg_p": Param(0.5, "weight p of the sensitivity regulariser (paper: 0.5)", low=0.02, high=1.0),
    "sigma_reg": Param(
        0.5,
        "noise std on one patch inside the regulariser (official: 1 on [-1, 1] pixels)",
        low=0.0,
        high=10.0,
    ),
    "n_text": Param(
        2000, "sequences of the synthetic language task (80% train)", low=100, high=100000
    ),
    "max_epochs_text": Param(60, "epoch cap of each language model", low=1, high=1000),
    "grok_setting": Param(
        "book",
        "grokking run: 'book' (the four grok parameters below) or 'paper' (p = 113, 30% "
        "of the pairs, 17k epochs: about half an hour of CPU, cached once built)",
        choices=("book", "paper"),
    ),
    "modulus": Param(53, "modulus p of the book's grokking run", low=5, high=200),
    "grok_fraction": Param(
        0.5, "share of the pairs the book's grokking run trains on", low=0.05, high=0.95
    ),
    "grok_epochs": Param(
        17000,
        "most full-batch epochs of the book's grokking run (the paper's: 17,000)",
        low=10,
        high=100000,
    ),
    "grok_lr": Param(
        1e-3, "AdamW learning rate of the book's grokking run (official: 1e-3)", low=1e-5, high=1.0
    ),
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
    "seeds": 2,
    "sigma_min": 0.4,
    "repeats": 2,
    "n_sens": 64,
    "n_text": 200,
    "max_epochs_text": 1,
    "modulus": 7,
    "grok_epochs": 40,
}

# ---------------------------------------------------------------------------------
# The claims: one registry, fixed before the run. The notebook passes only the
# evidence.
# ---------------------------------------------------------------------------------

AHEAD = "the sign of the difference: the paper states an ordering, not its size"
"""Why a margin of 0: the paper's claims here are orderings and directions."""

FOUR_ARCHITECTURES = (
    "Over {n} runs the mean rho is {estimate:.2f} [{low:.2f}, {high:.2f}]. A run has four "
    "architectures, so its rho takes one of eleven values, in steps of 0.2, and two "
    "architectures that swap places between runs move it by 0.2 or more; the four also "
    "differ in more than their sensitivity, in everything their designs build in. The "
    "paper reads the association off many trained models of each dataset. What would "
    "decide it: more architectures in a run, or several widths of each, so that rho "
    "rests on more than four points."
)
"""Why a correlation over the four architectures of a run is expected to miss, declared
before the book run from the pilots at seeds 1000 and 1010 (sharpness_correlates held at
the book's seed, and its gap went)."""

CLAIMS: dict[str, ClaimSpec] = {
    # The lowest final training accuracy over every image model (each architecture and
    # seed, and the regularised ViTs) minus target_acc: at least 0. Training stops at
    # the first epoch that reaches the target, so a miss means the epoch cap stopped a
    # model short of it.
    "images_matched": ClaimSpec(
        "Every image model (each architecture and seed, with and without the "
        "regulariser) reaches the target training accuracy within its epoch cap",
        kind="setup",
        rule=Bound(ge=0),
        control="the target training accuracy target_acc, which a model stopped by the "
        "epoch cap falls short of",
    ),
    # Paired by run: the ViT's mean sensitivity (over the sigma grid) minus the lowest
    # of the MLP's, CNN's and ConvMixer's of the same run; the 95% t interval over runs
    # below 0.
    "vision_lowest": ClaimSpec(
        "At matched training accuracy, the ViT is less sensitive than the least "
        "sensitive of the MLP, CNN and ConvMixer (mean over the sigma grid, paired by run)",
        paper="ViT below MLP, CNN (ResNet, DenseNet) and ConvMixer on CIFAR-10, SVHN, ImageNet",
        rule=Margin(below=0, why=AHEAD),
        control="the least sensitive of the MLP, CNN and ConvMixer of the same run, "
        "trained to the same accuracy",
        rests_on=("images_matched",),
    ),
    # Paired by run: the regularised ViT's mean sensitivity (over the sigma grid) as the
    # official code estimates it, noise on 16 pixels scattered over the image
    # (scattered_sensitivity), minus the plain ViT's; below 0. The regulariser noises
    # one patch, so this is a noise it never trained against (the one-patch sensitivity
    # it trains down is printed beside, not claimed).
    "regulariser_lowers_sensitivity": ClaimSpec(
        "The regulariser (p = reg_p), trained with noise on one patch, lowers the ViT's "
        "sensitivity to noise on 16 scattered pixels, the official code's estimate "
        "(paired by run)",
        paper="lower sensitivity with p = 0.5 on CIFAR-10 and SVHN",
        rule=Margin(below=0, why=AHEAD),
        control="the ViT of the same run trained without the regulariser (p = 0)",
        rests_on=("images_matched",),
    ),
    # Paired by run: the regularised ViT's mean test accuracy under the corruptions
    # that are not noise (blur and shift) minus the plain ViT's; above 0. The noise
    # corruption is the regulariser's own invariance: printed beside, not claimed.
    "regulariser_robust": ClaimSpec(
        "The regulariser (p = reg_p) raises the ViT's mean accuracy under the corruptions "
        "it does not train against, blur and shift (paired by run)",
        paper="higher accuracy on CIFAR-10-C / SVHN corruptions with p = 0.5",
        rule=Margin(above=0, why=AHEAD),
        control="the ViT of the same run trained without the regulariser (p = 0)",
        rests_on=("images_matched",),
    ),
    # In each run, Spearman's rho over the four unregularised architectures between
    # mean sensitivity and mean corrupted accuracy (all three corruptions: nothing in
    # their training asks for noise invariance); the mean over runs with its t
    # interval, below 0. The architecture is the unit, the run its replicate.
    "robustness_correlates": ClaimSpec(
        "Across the four architectures, lower sensitivity goes with higher accuracy "
        "under corruptions (Spearman rho over the architectures of one run, negative "
        "over runs)",
        paper="less sensitive models are more robust on CIFAR-10-C and ImageNet-C",
        rule=Margin(below=0, why=AHEAD),
        control="no association: rho 0, which the interval over runs must exclude",
        rests_on=("images_matched",),
        gap=Gap(FOUR_ARCHITECTURES),
    ),
    # As robustness_correlates, between mean sensitivity and sharpness (rho above 0).
    "sharpness_correlates": ClaimSpec(
        "Across the four architectures, lower sensitivity goes with flatter minima "
        "(Spearman rho with sharpness over the architectures of one run, positive over "
        "runs)",
        paper="less sensitive models sit in flatter minima (CIFAR-10, SVHN)",
        rule=Margin(above=0, why=AHEAD),
        control="no association: rho 0, which the interval over runs must exclude",
        rests_on=("images_matched",),
    ),
    # As images_matched, over the language models of every architecture and seed.
    "text_matched": ClaimSpec(
        "Every language model (each architecture and seed) reaches the target training "
        "accuracy within its epoch cap",
        kind="setup",
        rule=Bound(ge=0),
        control="the target training accuracy target_acc, which a model stopped by the "
        "epoch cap falls short of",
    ),
    # As vision_lowest, on the language task: the transformer's mean sensitivity minus
    # the lower of the LSTM's and the MLP's of the same run; below 0.
    "language_lowest": ClaimSpec(
        "At matched training accuracy, the transformer is less sensitive than the less "
        "sensitive of the LSTM and the MLP on the language task (paired by run)",
        paper="RoBERTa / GPT-2 below LSTM on MRPC, QQP, IMDB and others",
        rule=Margin(below=0, why=AHEAD),
        control="the less sensitive of the LSTM and the MLP of the same run, trained to "
        "the same accuracy on the same embeddings",
        rests_on=("text_matched",),
        gap=Gap(
            "The transformer's sensitivity minus the less sensitive of the LSTM and the "
            "MLP is {estimate:.4f} [{low:.4f}, {high:.4f}] over {n} runs: the interval "
            "straddles 0, because in some runs, each its own draw of the text task and "
            "its embeddings, the MLP is the less sensitive model. The paper's language "
            "models are pretrained transformers on natural text; ours are trained from "
            "scratch on a short synthetic task, where a small MLP can be as insensitive. "
            "What would decide it: more runs, or longer natural texts.",
            after_run=True,
        ),
    ),
    # Every run memorises and then generalises late: over the runs, the lowest final
    # test accuracy at least 0.9, and the lowest ratio of the test-accuracy jump's epoch
    # to the epoch at which the training accuracy first reaches 0.99 at least 2.
    "grokking_groks": ClaimSpec(
        "Every grokking run groks: it memorises the training pairs, and its test accuracy "
        "rises only after at least as many epochs again",
        kind="setup",
        rule={"final test acc": Bound(ge=0.9), "jump / memorised epoch": Bound(ge=2)},
        control="a run that generalises as it memorises (ratio near 1) or not at all",
    ),
    # Epochs by which the sensitivity drop precedes the test-accuracy jump, paired by
    # run: the jump's epoch minus the drop's (a drop not seen by the end of a run is
    # counted at the end; a run without a jump makes the estimate NaN).
    "grokking_drop_first": ClaimSpec(
        "On modular addition the training-set sensitivity drops before the test accuracy "
        "jumps (paired by grokking run, p = its modulus)",
        paper="sensitivity falls ahead of the test-accuracy rise (p = 113, about 17k epochs)",
        rule=Margin(above=0, why=AHEAD),
        control="the epoch of the test-accuracy jump in the same run",
        rests_on=("grokking_groks",),
        gap=Gap(
            "Over {n} grokking runs the sensitivity drop leads the test-accuracy jump by "
            "{estimate:.0f} epochs on average, [{low:.0f}, {high:.0f}]: the interval "
            "contains 0. The lead varies between runs by more than its mean, and where "
            "the smoothed sensitivity is higher at the jump than when the model memorised "
            "(the table of the three moments gives both, run by run), the solution that "
            "generalises is itself the more sensitive one and the drop can only follow "
            "the jump. The paper's figure is one run at p = 113. What would decide it: "
            "more runs, or the paper's run (grok_setting='paper') at several seeds.",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against."""
