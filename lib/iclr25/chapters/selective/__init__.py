"""Label smoothing degrades selective classification; logit normalisation fixes it.

Xia, Laurent, Franchi & Bouganis (ICLR 2025). A selective classifier predicts
argmax_k z_k for logits z and abstains when a confidence score s(z) falls below a
threshold. Sorting the test set by s from most to least confident, accepting the top
fraction c (the *coverage*) gives the *risk* r(c), the error rate among the accepted;
the area under the risk-coverage curve (AURC) scores the ranking, lower is better.
The usual score is the maximum softmax probability (MSP), max_k softmax(z)_k.

Label smoothing (LS) trains against targets (1 - alpha) y + alpha / K instead of the
one-hot y, so the gradient of the loss with respect to the logits is

    dL/dz = pi - ((1 - alpha) y + alpha / K),   pi = softmax(z).

Averaged over the label, the max logit gets the cross-entropy gradient plus
alpha (P(correct | x) - 1 / K): LS pushes the max logit down *more* where the
prediction is likely correct, which squeezes confident-correct and uncertain-wrong
predictions together and worsens the MSP ranking. The post-hoc fix scores with the
max of the p-norm-normalised logits, max_k z_k / ||z||_p, with p chosen on
validation AURC. As in the official search, the logits are centred (their mean over
the classes subtracted) before the norm is taken.

What is here: the risk-coverage curve and AURC as the paper's code computes them, the
excess AURC over the oracle (E-AURC) and the AUROC of correct against wrong, the MSP
and normalised-logit scores, the choice of p, the LS targets and logit gradient, the
max-logit suppression on matched inputs, cross-fitted against a retrained CE model
(binned by the confidence of the other runs' CE models), the official training recipe
(SGD, lr 0.1, momentum 0.9, weight decay 5e-4, the rate divided by 10 at 1/3 and 2/3 of
the epochs) and the plateau of the training loss that the convergence check reads.

AURC is written by hand, following the official code's ``risk_coverage_curve``
(ENSTA-U2IS-AI/Label-smoothing-Selective-classification-Code): torch-uncertainty's
``AURC`` (0.13) cannot be imported without Lightning and torchmetrics (its package
``__init__`` imports a Lightning CLI), takes probabilities rather than an arbitrary
score, and discretises differently (no zero-coverage point, rescaled by
1 / (1 - 1/N)). Tied scores are ranked in expectation over a random tie order
(the official code breaks ties arbitrarily), so a constant score gives a flat
curve at the error rate.

Files: ``method.py`` holds the method (the risk-coverage curve and its areas, the
confidence scores, the LS targets and gradient, the evaluation of one model, the
max-logit suppression and its cross-fitted drops, the training recipe and the loss
plateau); ``figures.py`` the figure builders; this ``__init__`` the chapter's parameters
and its claims registry.
"""

from __future__ import annotations

from dataclasses import replace

from iclr25.chapters.selective.figures import (
    COLORS,
    alpha_figure,
    curves_figure,
    suppression_figure,
)
from iclr25.chapters.selective.method import (
    P_GRID,
    Evaluation,
    Recipe,
    RiskCoverage,
    Suppression,
    aurc,
    auroc,
    centred,
    choose_p,
    cross_fitted_drops,
    e_aurc,
    evaluate,
    loss_change,
    ls_logit_gradient,
    ls_targets,
    max_logit_pull,
    msp,
    normalised_max_logit,
    oracle_aurc,
    risk_coverage,
    suppression_by_confidence,
)
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n": Param(30000, "images in the generated dataset (split 60/20/20)", low=100, high=200000),
    "dataset": Param("noisy_digits", "generated image set", choices=("noisy_digits", "shapes")),
    "arch": Param("mlp", "architecture", choices=("mlp", "cnn", "vit")),
    "width": Param(
        256, "hidden units (MLP), first-block channels (CNN) or token width (ViT)", low=4, high=4096
    ),
    "epochs": Param(60, "SGD epochs (lr / 10 at 1/3 and 2/3 of them)", low=2, high=500),
    "seeds": Param(
        10,
        "training runs, each on its own draw of the dataset (CE and LS of a run share "
        "its seed; 3 or more, for the mechanism's reference)",
        low=3,
        high=20,
    ),
    "cnn_seeds": Param(
        5,
        "runs of the second architecture, the CNN, at alpha = 0.2 (the first draws)",
        low=2,
        high=20,
    ),
    "cnn_epochs": Param(30, "SGD epochs of the CNN, the same recipe", low=2, high=500),
    "lr": Param(
        0.1, "SGD learning rate (momentum 0.9), as the official recipe", low=1e-5, high=1.0
    ),
    "weight_decay": Param(5e-4, "SGD weight decay (L2), as the official recipe", low=0.0, high=0.1),
    "batch_size": Param(128, "minibatch size", low=1, high=8192),
    "bins": Param(5, "bins of CE confidence for the max-logit suppression", low=2, high=50),
    "seed": Param(0, "seed of the first run (its dataset and its training)", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {"n": 600, "seeds": 3, "epochs": 2, "width": 16, "cnn_seeds": 2, "cnn_epochs": 2}

ALPHAS = (0.2, 0.4)
"""The label-smoothing alphas trained beside CE: the official ones (0.2 in the CIFAR-10
configs, 0.4 in the tabular notebooks)."""

CNN = {"width": 16, "depth": 3}
"""The second architecture: three convolution blocks of 16, 32 and 64 channels, the
widths of ResNet-20's three stages (the official CIFAR-10 model), without its residual
connections (``vision.ModelConfig``)."""

CNN_ALPHA = 0.2
"""The CNN's LS alpha: that of the official CIFAR-10 ResNet-20 config."""

RETRAINED = 1_000_000
"""The mechanism's control retrains CE on run s's data from seed s + RETRAINED: another
initialisation and batch order, no smoothing."""

PLATEAU_EPOCHS = 10
"""The window of the plateau check: the training loss's change over the last ten epochs
(the last sixth of the default 60, all at the final rate)."""

# ---------------------------------------------------------------------------------
# The chapter's claims: one registry, fixed before the run. Every paper claim is a
# mean over seeds of a seed-paired difference (CE and LS of one seed share the
# initialisation and the batch order), with its 95% interval. The notebook passes
# only the evidence.
# ---------------------------------------------------------------------------------

CE_CONTROL = "the CE model (alpha = 0) of the same seed: same initialisation and batch order"
"""What the LS models are measured against."""

ANY_RISE = Margin(
    above=0.0,
    why="the paper's direction; its official bank-marketing MLP loses 0.48 AURC points "
    "at alpha = 0.4, and no smaller effect is reported",
)

CONVERGED = "converged"
CONVERGED_CNN = "converged_cnn"


PER_ALPHA: dict[str, tuple[str, str, Margin]] = {
    # AURC(LS) - AURC(CE) by MSP, seed-paired
    "ls_worse_aurc": (
        "LS (alpha = ALPHA) raises the AURC of the MSP ranking",
        "AURC(LS) > AURC(CE) in every setting (official bank-marketing MLP: 1.63% "
        "CE, 2.11% LS 0.4)",
        ANY_RISE,
    ),
    # E-AURC(LS) - E-AURC(CE) by MSP, seed-paired: the ranking alone is worse
    "ls_worse_eaurc": (
        "LS (alpha = ALPHA) raises the E-AURC of the MSP ranking (its AURC above the "
        "oracle's at the same accuracy)",
        "LS degrades the uncertainty rank ordering of correct vs incorrect "
        "predictions (E-AURC not reported)",
        ANY_RISE,
    ),
    # AUROC(CE) - AUROC(LS) by MSP, correct vs wrong, seed-paired
    "ls_worse_auroc": (
        "LS (alpha = ALPHA) lowers the AUROC of the MSP separating correct from wrong predictions",
        "LS degrades the uncertainty rank ordering of correct vs incorrect "
        "predictions (AUROC figures not retrieved)",
        Margin(above=0.0, why="the paper's direction; no AUROC effect size is reported"),
    ),
}
"""The claims made at each official alpha against the CE model of the same seed:
id prefix -> (statement, with ALPHA for the alpha; the paper's figure; the rule)."""


CONVERGED_CHECK = ClaimSpec(
    "Every model (CE, LS and the retrained CE, every run) has converged: it classifies "
    "at least 99.5% of its training images correctly, and its training loss moved by at "
    "most 0.01 over the last ten epochs",
    kind="setup",
    rule={"training accuracy": Bound(ge=0.995), "loss change": Bound(le=0.01)},
    control="a model short of convergence: an untrained one classifies about 10% "
    "of the digits, and one still learning has a falling loss",
)
"""The setup claim that the models fit their training set and stopped learning; the
CNN's is the same check of its own models."""


CLAIMS: dict[str, ClaimSpec] = {
    # every model fits its training set and its loss has stopped falling
    CONVERGED: CONVERGED_CHECK,
    # the claims of PER_ALPHA at each official alpha: "ls_worse_aurc_0.2", ...
    **{
        f"{prefix}_{alpha:g}": ClaimSpec(
            statement.replace("ALPHA", f"{alpha:g}"),
            paper=paper,
            rule=rule,
            control=CE_CONTROL,
            rests_on=(CONVERGED,),
        )
        for alpha in ALPHAS
        for prefix, (statement, paper, rule) in PER_ALPHA.items()
    },
    # AURC(LS 0.4) - AURC(LS 0.2), seed-paired
    "grows_with_alpha": ClaimSpec(
        "The AURC grows with alpha: LS at alpha = 0.4 has a higher AURC than at 0.2",
        paper="the degradation increases with alpha",
        rule=ANY_RISE,
        control="the LS model at alpha = 0.2 of the same seed",
        rests_on=(CONVERGED,),
    ),
    # the same check for the CNN's models
    CONVERGED_CNN: replace(
        CONVERGED_CHECK,
        statement="Every CNN model (CE and LS, every run) has converged, by the same check",
    ),
    # AURC(LS 0.2) - AURC(CE) by MSP, the CNN, seed-paired
    "ls_worse_aurc_cnn": ClaimSpec(
        "On a second architecture, the CNN, LS (alpha = 0.2) raises the AURC of the MSP "
        "ranking too",
        paper="LS degrades SC consistently across architectures (ResNet-20 on CIFAR-10 "
        "with alpha = 0.2 among them)",
        rule=ANY_RISE,
        control="the CNN trained with CE (alpha = 0) on the same run's data, from the "
        "same initialisation and batch order",
        rests_on=(CONVERGED_CNN,),
        gap=Gap(
            "On the CNN, LS at alpha = 0.2 changes the AURC by {estimate:+.2f} points "
            "[{low:+.2f}, {high:+.2f}] over {n} seed-paired runs, against 0. The CNN is "
            "trained in fewer runs than the MLP, and its runs' differences spread widely "
            "around an effect of this size. What would show the claim: the CNN at as many "
            "runs as the MLP.",
            after_run=True,
            varies=True,
        ),
    ),
    # the drop of LS/CE (least minus most confident bin) minus a retrained CE's drop,
    # binned by the other runs' CE confidence (cross_fitted_drops), run-paired
    "suppresses_correct_more": ClaimSpec(
        "On the same inputs, binned by the confidence of the other runs' CE models, LS "
        "(alpha = 0.4) shrinks the centred max logit more where the prediction is likely "
        "right than where it is not, by more than a CE model retrained on the same data "
        "differs so: the drop of the LS/CE ratio from the least to the most confident "
        "bin, minus that drop with the retrained CE model in LS's place",
        paper="LS regularises the max logit more when the prediction is likely correct "
        "(each model's max logit against its own MSP)",
        rule=Margin(
            above=0.0,
            why="the paper's direction; a retrained CE model, which has no smoothing, is "
            "the null, and LS doing nothing gives zero",
        ),
        control="a CE model retrained on the run's data from another seed, in LS's "
        "place, against the same CE model, binned by the same reference (the regression "
        "to the mean that binning brings)",
        rests_on=(CONVERGED,),
    ),
    # E-AURC won back by normalising LS 0.4, minus half what LS 0.4 lost to CE
    "normalisation_recovers": ClaimSpec(
        "Normalising the logits of LS models (alpha = 0.4) wins back more than half the "
        "E-AURC that LS lost to CE: E(LS) - E(LS, normalised) - (E(LS) - E(CE)) / 2 > 0",
        paper="logit normalisation recovers most of the SC performance lost to LS",
        rule=Margin(
            above=0.0,
            why="the paper's 'most': more than half; a normalisation that does nothing "
            "gives minus half the loss",
        ),
        control="the same LS models ranked by MSP, against the E-AURC they lost to the "
        "CE model of the same seed",
        rests_on=(CONVERGED,),
        gap=Gap(
            "Over the runs, LS (alpha = 0.4) lost {lost:+.2f} E-AURC points to CE on "
            "average and normalising won back {won:+.2f}, and the interval, {measured}, "
            "does not clear the margin of one half. Each run has its own draw of the "
            "data, and what LS loses ranges from {lost_min:+.2f} to {lost_max:+.2f} "
            "points between runs. The paper's 'most' is read "
            "off ImageNet and CIFAR models that lose points, not tenths of a point; at "
            "our scale more runs would be needed to tell more than half from half.",
        ),
    ),
    # per seed, min(gain of LS 0.4, gain of LS 0.4 - gain of CE), AURC gains
    "normalisation_little_for_ce": ClaimSpec(
        "Normalisation helps LS models (alpha = 0.4), and helps them more than CE "
        "models: per seed, the smaller of LS's AURC gain and its excess over CE's gain",
        paper="logit normalisation helps LS models, and CE models much less (figures not "
        "retrieved)",
        rule=Margin(
            above=0.0,
            why="the paper's direction: both parts positive; a normalisation that "
            "helps neither, or both alike, gives zero or less",
        ),
        control="the LS model ranked by MSP, and the same normalisation's AURC gain on "
        "the CE model of the same seed",
        rests_on=(CONVERGED,),
        gap=Gap(
            "Normalising lowered the AURC of the LS models by {ls_gain:+.2f} points on "
            "average, from {ls_min:+.2f} to {ls_max:+.2f} between runs, and raised the CE "
            "models' in {ce_worse} of {runs} runs; where it worsens CE the claim's measure "
            "is LS's own gain, whose interval, {measured}, reaches 0. That gain is "
            "hundredths of a point beside the tenths LS loses, and each run's own draw of "
            "the data spreads it across zero; more runs, or LS's larger losses at the "
            "paper's scale, would decide it.",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against."""
