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
max-logit suppression on matched inputs, and the official training recipe (SGD, lr 0.1,
momentum 0.9, weight decay 5e-4, the rate divided by 10 at 1/3 and 2/3 of the epochs).

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
max-logit suppression and the training recipe); ``figures.py`` the figure builders;
this ``__init__`` the chapter's parameters and its claims registry.
"""

from __future__ import annotations

from iclr25.chapters.selective.figures import (
    COLORS,
    alpha_figure,
    curves_figure,
    sensitivity_figure,
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
    e_aurc,
    evaluate,
    ls_logit_gradient,
    ls_targets,
    max_logit_pull,
    msp,
    normalised_max_logit,
    oracle_aurc,
    risk_coverage,
    suppression_by_confidence,
)
from iclr25.core import Bound, ClaimSpec, Gap, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n": Param(8000, "images per generated dataset (split 60/20/20)", low=100, high=200000),
    "alpha_max": Param(0.3, "largest label-smoothing alpha", low=0.01, high=0.9),
    "n_alphas": Param(3, "alphas alpha_max * k / n_alphas, k = 1..n_alphas", low=1, high=10),
    "seeds": Param(3, "training seeds per configuration", low=1, high=20),
    "arch_b": Param("cnn", "second architecture, beside the MLP", choices=("cnn", "vit")),
    "epochs_mlp": Param(40, "SGD epochs of the MLP (lr / 10 at 1/3 and 2/3)", low=1, high=500),
    "epochs_b": Param(18, "SGD epochs of the second architecture (likewise)", low=1, high=500),
    "width_mlp": Param(128, "hidden units of the MLP", low=2, high=4096),
    "width_b": Param(8, "first-block channels (CNN) or token width (ViT)", low=4, high=1024),
    "lr": Param(
        0.1, "SGD learning rate (momentum 0.9), as the official recipe", low=1e-5, high=1.0
    ),
    "weight_decay": Param(5e-4, "SGD weight decay (L2), as the official recipe", low=0.0, high=0.1),
    "batch_size": Param(128, "minibatch size", low=1, high=8192),
    "bins": Param(5, "bins of CE confidence for the max-logit suppression", low=2, high=50),
    "seed": Param(0, "seed of the datasets and of the first training run", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n": 600,
    "seeds": 1,
    "n_alphas": 1,
    "epochs_mlp": 2,
    "epochs_b": 1,
    "width_mlp": 16,
    "width_b": 4,
}

# ---------------------------------------------------------------------------------
# The chapter's claims: one registry, fixed before the run, with the gaps expected at
# our scale. The notebook passes only the evidence.
# ---------------------------------------------------------------------------------

_ACCURACY_MOVES = (
    "The AURC counts errors as well as their ranking: at a given ranking quality it "
    "grows with the error rate. In the paper's models LS keeps accuracy within a fraction "
    "of a point, so a worse AURC means a worse ranking. Our small models move by one or "
    "two points of accuracy when LS is switched on: the noisy digits draw on about a "
    "thousand distinct training digits, which a model over-fits, and LS then acts as a "
    "regulariser that can raise accuracy; the small models on the ambiguous shapes can "
    "lose accuracy to LS instead. Either way the AURC of a (setting, alpha) pair can "
    "follow the accuracy change rather than the ranking, in either direction, and a "
    "claim on every pair fails where it does. E-AURC and AUROC (the claims beside this "
    "one) take the accuracy out. What would show the AURC claim: models whose accuracy LS "
    "leaves unchanged, i.e. larger data sets (more distinct base images) and models "
    "trained to convergence at high accuracy, over more seeds."
)

_SMALL_ALPHA = (
    "Each claim asks for a worse ranking on every one of twelve "
    "(setting, alpha) pairs, the smallest alpha = 0.1 included, where the paper's own "
    "degradation is smallest (it grows with alpha). There LS changes our small models' "
    "ranking by a fraction of a point, and 1,600 test images and three seeds measure a "
    "difference in E-AURC or AUROC to about that precision, so one of the small-alpha "
    "pairs lands on the wrong side by chance. What would show it: more seeds and test "
    "points at the smallest alpha, or larger models where LS's effect is larger."
)

CE_CONTROL = "the CE models (alpha = 0) of the same setting and seeds"
"""What the LS models are measured against in the claims on every (setting, alpha)."""

CLAIMS: dict[str, ClaimSpec] = {
    # AURC(LS) - AURC(CE) by MSP, each (setting, alpha): LS must raise it everywhere
    "ls_worse_aurc": ClaimSpec(
        "LS raises the AURC of the MSP ranking, for every alpha and setting tried",
        paper="AURC(LS) > AURC(CE) in every setting (official bank-marketing MLP: 1.63% "
        "CE, 2.11% LS 0.4)",
        rule=Bound(gt=0),
        control=CE_CONTROL,
        gap=Gap(_ACCURACY_MOVES),
    ),
    # E-AURC(LS) - E-AURC(CE) by MSP, each (setting, alpha): the ranking alone is worse
    "ls_worse_eaurc": ClaimSpec(
        "LS raises the E-AURC of the MSP ranking (its AURC above the oracle's at the same "
        "accuracy), for every alpha and setting tried",
        paper="LS degrades the uncertainty rank ordering of correct vs incorrect "
        "predictions (E-AURC not reported)",
        rule=Bound(gt=0),
        control=CE_CONTROL,
        gap=Gap(_SMALL_ALPHA, after_run=True),
    ),
    # AUROC(CE) - AUROC(LS) by MSP, correct vs wrong, each (setting, alpha)
    "ls_worse_auroc": ClaimSpec(
        "LS lowers the AUROC of the MSP separating correct from wrong predictions, for "
        "every alpha and setting tried",
        paper="LS degrades the uncertainty rank ordering of correct vs incorrect "
        "predictions (AUROC figures not retrieved)",
        rule=Bound(gt=0),
        control=CE_CONTROL,
        gap=Gap(_SMALL_ALPHA, after_run=True),
    ),
    # accuracy(LS) - accuracy(CE), each (setting, alpha): at most 1 point lost
    "accuracy_kept": ClaimSpec(
        "LS keeps accuracy: within 1 percentage point of CE or better, for every alpha and setting",
        paper="LS keeps or improves accuracy (bank marketing: 90.1% CE, 90.8% LS)",
        rule=Bound(ge=-0.01),
        control=CE_CONTROL,
        gap=Gap(
            "Each model's accuracy is measured on 1,600 test images (a sampling standard "
            "error of about one point) and varies from seed to seed by a similar amount, "
            "and our three seeds leave a change of one point in accuracy within the noise: "
            "a bound of at most one point lost, required on every one of twelve (setting, "
            "alpha) pairs, fails by chance on some pair even for a true change of zero. Our "
            "small models also sit where LS can cost accuracy: the shapes are ambiguous by "
            "construction, and a model of limited capacity gives up some fit to the "
            "smoothed targets. What would show it: larger test sets and more seeds, and "
            "models large enough to fit the data, where LS is known to keep accuracy."
        ),
    ),
    # Spearman rho(alpha, mean AURC), each setting: an upward trend (null value 0)
    "grows_with_alpha": ClaimSpec(
        "The AURC grows with alpha: positive rank correlation in every setting",
        paper="the degradation increases with alpha",
        rule=Bound(gt=0),
        control="no trend (rho = 0), a fixed threshold (no control run); CE counts as alpha = 0",
        gap=Gap(_ACCURACY_MOVES),
    ),
    # LS/CE centred max logit on the same inputs, least minus most CE-confident bin
    "suppresses_correct_more": ClaimSpec(
        "On the same inputs, LS (alpha = alpha_max) shrinks the max logit more where CE "
        "is confident (likely right) than where it is unsure",
        paper="LS regularises the max logit more when the prediction is likely correct",
        rule=Bound(gt=0),
        control="the CE models' centred max logits on the same test inputs, same seeds",
        gap=Gap(
            "The paper's mechanism needs CE's confident logits to keep "
            "growing: cross-entropy drives the loss of easy, correct examples towards zero "
            "by raising their max logit without bound, while LS caps it where the smoothed "
            "target is met, so the gap between CE and LS is largest where CE is confident. "
            "Our models train for 18 to 40 epochs with weight decay 5e-4, short of "
            "convergence (their losses still fall in the last third of the schedule), so "
            "CE's confident logits have not pulled away from the rest, and LS's cap acts on "
            "them almost as a uniform temperature. What would show it: models trained to "
            "convergence, as the official recipe's 75 epochs and more on CIFAR-10, or "
            "longer training here.",
            after_run=True,
        ),
    ),
    # share of the E-AURC lost to LS that normalisation wins back: "most" is over half
    "normalisation_recovers": ClaimSpec(
        "Normalising the logits wins back most (> 50%) of the ranking (E-AURC) lost to LS",
        paper="logit normalisation recovers most of the SC performance lost to LS",
        rule=Bound(gt=0.5),
        control="the same LS models ranked by MSP, against the E-AURC they lost to CE",
        gap=Gap(
            "Normalising by the p-norm of the centred logits wins back what LS "
            "lost only when LS shrank confident predictions more than the others (the "
            "mechanism claim above): dividing by the norm undoes a scale that differs "
            "between inputs. In models trained short of convergence, where LS acts nearly "
            "as a uniform temperature (see suppresses_correct_more), there is no "
            "input-dependent shrinkage to undo, and dividing by the norm throws away the "
            "logit magnitude, which still ranks predictions; with 6 or 10 classes the "
            "centred logits have few components, so a large p gains little over the "
            "maximum. What would show it: the converged models the mechanism needs, and "
            "the paper's 100 to 1,000 classes.",
            after_run=True,
        ),
    ),
    # AURC gain of normalising, LS (largest alpha) minus CE, each setting
    "normalisation_little_for_ce": ClaimSpec(
        "Normalisation helps CE less than LS: it lowers the AURC of CE models less than "
        "that of LS models (alpha = alpha_max), in every setting",
        paper="logit normalisation helps LS models, and CE models much less (figures not "
        "retrieved)",
        rule=Bound(gt=0),
        control="the same normalisation's AURC gain on the CE models of the same setting",
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against."""
