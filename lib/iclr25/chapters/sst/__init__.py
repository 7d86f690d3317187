"""Sufficient subset training (Bassan, Eliav and Gur, ICLR 2025) and post-hoc baselines.

A *sufficient reason* for a prediction f(x) = c is a subset S of the input features
such that fixing x_S and filling the complement S-bar keeps the prediction. Three
notions of sufficiency fill the complement differently:

* ``"baseline"`` -- a fixed baseline value (zeros): z = x_S, 0_{S-bar};
* ``"probabilistic"`` -- random values: z_{S-bar} = clip(x_{S-bar} + eps * U(0, 1)), the
  one-sided uniform noise of the official code, sufficient when the prediction survives
  the draws;
* ``"robust"`` -- the worst case: a PGD attack within the L-inf ball of radius eps on
  the complement, sufficient when the prediction survives the attack.

SST trains a network with a prediction head and an explanation head (one sigmoid
score s_i per feature); the explanation is the set {i : s_i >= tau}, read off in the
same forward pass as the prediction. The loss is

    L = CE(f(x), y) + CE(f(z), argmax f(x)) + gamma * mean_i s_i,

z being x with the complement of the explanation filled by the chosen notion (in
training, one noise draw per batch, shared by its inputs, as the official MNIST code
draws it). The mask is a hard threshold and, as in the official code (IBM/SAX), no
gradient flows through it: the explanation head feels only the size term. That is the
default (``straight_through=False``); ``straight_through=True`` passes the faithfulness
gradient to the scores with a straight-through estimator, our variant.

The post-hoc baselines explain a normally trained model of the same architecture. SIS
(Carter et al., 2019: backward selection, then the smallest sufficient suffix of the
removal order) searches under its own fill, the zero baseline, whatever notion it is
then judged by. The Anchors-style greedy search (superpixels added by precision under
the fill until it reaches the target) and gradient/IG top-k grown until sufficient
(attributions from captum) search under the notion's own fill and stop at a subset
that passes its check, so they are faithful by construction up to the randomness of a
fresh fill.

Written here: the fills, the PGD attack restricted to the complement, and the three
searches. alibi's and anchor-exp's Anchors sample their own perturbations (superpixels,
training-set rows) and SIS ships no maintained package, so none of them can search
under the fills above; the PGD is six lines and must leave the explanation's features
untouched, which torchattacks-style attacks do not do.

Files: ``method.py`` holds the notions of sufficiency, the fills, the PGD attack on the
complement and the sufficiency check, then the SST network, its loss and its training;
``baselines.py`` the post-hoc searches (SIS, Anchors-style, IG and gradient top-k);
``evaluation.py`` the explainers, their timed comparison and scoring, whether SST's
explanations are needed, the choice of gamma on validation, accuracy, the slope over
gamma and tables as the models' inputs; ``figures.py`` the figure builders.
This file holds the chapter's parameters, smoke overrides and claims.
"""

from __future__ import annotations

from iclr25.chapters.sst.baselines import (
    SIS_FILL,
    anchors,
    attribution_topk,
    posthoc,
    sis,
    smallest_sufficient_prefix,
    superpixels,
)
from iclr25.chapters.sst.evaluation import (
    Explained,
    Explainer,
    Validated,
    accuracy,
    as_images,
    choose_gamma,
    compare,
    explain_posthoc,
    explain_sst,
    judge,
    needed,
    posthoc_explainer,
    slope,
    sst_explainer,
)
from iclr25.chapters.sst.figures import (
    BY_CONSTRUCTION,
    COLORS,
    explanations_figure,
    size_faithfulness_figure,
)
from iclr25.chapters.sst.method import (
    BASELINES,
    METHODS,
    NOTIONS,
    VARIANT_NAMES,
    Notion,
    Outcome,
    SSTConfig,
    SSTNet,
    check_tau,
    explanation_mask,
    fill,
    outcomes,
    pgd_complement,
    sst_loss,
    sufficient,
    survives,
    train_sst,
)
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

TABULAR = ("breast_cancer", "wine")
"""The scikit-learn tables the chapter can run beside the digits."""

PARAMETERS = {
    "tabular": Param(
        "none",
        "scikit-learn table run beside the 16x16 digits (none: the digits alone)",
        choices=("none", *TABULAR),
    ),
    "width": Param(128, "hidden units of the MLP (two hidden layers)", low=4, high=4096),
    "epochs": Param(40, "training epochs, normal and SST models alike", low=1, high=1000),
    "lr": Param(0.002, "Adam learning rate", low=1e-5, high=1.0),
    "batch_size": Param(64, "minibatch size", low=1, high=8192),
    "tau": Param(0.5, "threshold on the explanation scores", low=0.01, high=0.99),
    "gamma": Param(
        1.0,
        "weight of the size term of the official SST (SST-ST's is chosen on validation)",
        low=0.0,
        high=100.0,
    ),
    "n_gammas": Param(
        7,
        "gammas 0.5 * 2^k, k < n_gammas: SST-ST's validation grid and the trade-off sweep",
        low=2,
        high=9,
    ),
    "min_faithfulness": Param(
        0.95,
        "validation faithfulness SST-ST must reach at a gamma for it to be chosen",
        low=0.5,
        high=1.0,
    ),
    "runs": Param(
        5,
        "independent runs (seed, seed + 1, ...), each with its own data split, normal "
        "model, SST models and explained inputs: the claims' intervals are over them",
        low=2,
        high=10,
    ),
    "accuracy_runs": Param(
        10,
        "runs of the accuracy claims (the first `runs` of them are the runs above; "
        "the others train the normal model and SST-ST only)",
        low=2,
        high=20,
    ),
    "noise_eps": Param(
        0.5, "width of the one-sided uniform noise of the probabilistic fill", low=0.001, high=1.0
    ),
    "attack_eps": Param(
        0.3, "radius of the PGD attack of the robust fill (MNIST's usual 0.3)", low=0.001, high=1.0
    ),
    "pgd_steps": Param(10, "PGD steps of the robust fill", low=1, high=200),
    "draws": Param(16, "random fills per probabilistic sufficiency check", low=1, high=1000),
    "precision": Param(0.95, "share of draws a probabilistic check needs", low=0.5, high=1.0),
    "anchor_patch": Param(
        2, "side of the Anchors search's square superpixels, in pixels", choices=(1, 2, 4)
    ),
    "n_explain": Param(20, "test inputs of each run explained by every method", low=2, high=10000),
    "seed": Param(0, "seed of the data splits, the models and the fills", low=0),
    "device": Param(
        "auto",
        "compute device (the chapter runs on the CPU: the models are tiny)",
        choices=("auto", "cpu"),
    ),
}

SMOKE = {
    "width": 16,
    "epochs": 2,
    "n_explain": 2,
    "pgd_steps": 2,
    "draws": 4,
    "n_gammas": 2,
    "runs": 2,
    "accuracy_runs": 2,
    "anchor_patch": 4,
}

# ---------------------------------------------------------------------------------
# The chapter's claims: one registry, fixed before the run, with the gaps expected
# at our scale
# ---------------------------------------------------------------------------------

_EMPTY_MASK = (
    "In the official code no gradient passes the hard threshold, so the explanation head "
    "learns from the size term alone, whose gradient with respect to every score is "
    "positive. Adam takes steps of about lr whatever the gradient's scale, so the "
    "explainer's weights and bias fall at the same rate for every gamma > 0 and every "
    "score drops below tau within the first epochs: the explanations are empty. What "
    "would show SST's claims: a gradient path from the faithfulness term to the scores "
    "(the straight-through variant, on which the paper claims are made), or whatever "
    "setting lets the official runs keep non-empty masks, which the released code does "
    "not show."
)

_NEEDED_CONTROL = "the empty subset: the whole input filled by the notion, same model"

_SMALLER_PAPER = (
    "smaller subsets than Anchors and GS, more faithful than SIS's, for each sufficiency "
    "notion (MNIST, CIFAR-10, ImageNet; Fig. 1 and the image tables)"
)
"""The paper's figure for the smaller_* and faithful_* claims."""

_SMALLER_CONTROL = (
    "the post-hoc search (Anchors, IG or gradient) with the smallest mean size on the "
    "run's normally trained twin, same test inputs"
)

_ACCURACY_PAPER = "comparable predictive performance (small drops on MNIST, CIFAR-10, ImageNet)"

_ACCURACY_CONTROL = "the normally trained model of the same architecture and run, its test split"

_GAMMA_PAPER = (
    "a larger cardinality coefficient buys smaller explanations with lower faithfulness "
    "and accuracy"
)

CLAIMS: dict[str, ClaimSpec] = {
    # per run: the share of its test digits whose official-SST mask is non-empty and
    # needed, under the notion whose mean share over the runs is smallest; the mean over
    # the runs with its t interval: a documented negative result
    "explains_official": ClaimSpec(
        "the official SST (hard mask, no gradient through it) explains: for most test "
        "digits, under every notion, its mask is non-empty and the empty subset does not "
        "keep the prediction",
        kind="setup",
        rule=Margin(above=0.5, why="most explanations carry the prediction"),
        control=_NEEDED_CONTROL,
        gap=Gap(_EMPTY_MASK),
    ),
    # per run: the share of its test digits whose SST-ST mask (at the notion's chosen
    # gamma) is non-empty and needed under the notion; the mean over the runs with its
    # t interval. The paper claims of the notion rest on it: an SST-ST that did nothing
    # (an empty mask, or a model whose empty subset is already sufficient) misses it,
    # and leaves them inconclusive
    "explains_baseline_st": ClaimSpec(
        "baseline sufficiency: for most test digits SST-ST's mask is non-empty and the "
        "empty subset (a blank image) does not keep the prediction",
        kind="setup",
        rule=Margin(above=0.5, why="most explanations carry the prediction"),
        control=_NEEDED_CONTROL,
    ),
    "explains_probabilistic_st": ClaimSpec(
        "probabilistic sufficiency: for most test digits SST-ST's mask is non-empty and "
        "the empty subset (the whole image under the noise) does not keep the prediction",
        kind="setup",
        rule=Margin(above=0.5, why="most explanations carry the prediction"),
        control=_NEEDED_CONTROL,
        gap=Gap(
            "The official noise is one-sided: it adds eps * U(0, 1) to every free pixel, "
            "which brightens the background but cannot erase a stroke. A model trained "
            "with the faithfulness term on that fill learns to keep its prediction under "
            "noise over the whole image, so the empty subset is sufficient for almost "
            "every digit, the faithfulness term no longer asks for any feature, and the "
            "size term empties the mask ({measured}). What would show the claim: a fill "
            "that can erase what the mask leaves out, such as noise over the whole "
            "feature range or samples from the data, on which a digit's strokes matter."
        ),
    ),
    "explains_robust_st": ClaimSpec(
        "robust sufficiency: for most test digits SST-ST's mask is non-empty and the "
        "empty subset (the whole image under the attack) does not keep the prediction",
        kind="setup",
        rule=Margin(above=0.5, why="most explanations carry the prediction"),
        control=_NEEDED_CONTROL,
    ),
    # per run: the mean over its explained test inputs of the size of the search with
    # the smallest mean size over all runs minus SST-ST's; the mean over the runs with
    # its t interval
    "smaller_baseline_st": ClaimSpec(
        "baseline sufficiency: SST-ST's explanations are smaller than those of the "
        "smallest of Anchors, IG and gradient",
        paper=_SMALLER_PAPER,
        rule=Margin(above=0.0, why="any size saved; the paper reports no effect size"),
        control=_SMALLER_CONTROL,
        rests_on=("explains_baseline_st",),
        gap=Gap(
            "The 16x16 digits are scikit-learn's 8x8 digits upsampled, on a black "
            "background. Under the zero baseline a normally trained MLP classifies a "
            "blank image with one or two bright blocks as a confident digit, so the "
            "searches stop after a few pixels, each on its own input ({measured}). "
            "SST-ST's size is set by the size term against the faithfulness term over "
            "the whole training set, one gamma for every input, chosen on validation "
            "for faithfulness of at least min_faithfulness; the larger gammas that "
            "shrink it further lose faithfulness. What would show the claim: natural "
            "images whose zero-filled "
            "versions do not classify from a few pixels (MNIST, CIFAR-10)."
        ),
    ),
    "smaller_probabilistic_st": ClaimSpec(
        "probabilistic sufficiency: SST-ST's explanations are smaller than those of the "
        "smallest of Anchors, IG and gradient",
        paper=_SMALLER_PAPER,
        rule=Margin(above=0.0, why="any size saved; the paper reports no effect size"),
        control=_SMALLER_CONTROL,
        rests_on=("explains_probabilistic_st",),
    ),
    # per run: the mean over its explained test inputs of whether SST-ST's prediction
    # survived a fresh fill minus whether SIS's did; the mean over the runs with its t
    # interval
    "faithful_probabilistic_st": ClaimSpec(
        "probabilistic sufficiency: SST-ST's explanations are more faithful than SIS's",
        paper=_SMALLER_PAPER,
        rule=Margin(above=0.0, why="any gain; the paper reports no effect size"),
        control="SIS on the run's normally trained twin, same test inputs, judged by the same fill",
        rests_on=("explains_probabilistic_st",),
    ),
    "smaller_robust_st": ClaimSpec(
        "robust sufficiency: SST-ST's explanations are smaller than those of the smallest "
        "of Anchors, IG and gradient",
        paper=_SMALLER_PAPER,
        rule=Margin(above=0.0, why="any size saved; the paper reports no effect size"),
        control=_SMALLER_CONTROL,
        rests_on=("explains_robust_st",),
    ),
    "faithful_robust_st": ClaimSpec(
        "robust sufficiency: SST-ST's explanations are more faithful than SIS's",
        paper=_SMALLER_PAPER,
        rule=Margin(above=0.0, why="any gain; the paper reports no effect size"),
        control="SIS on the run's normally trained twin, same test inputs, judged by the same fill",
        rests_on=("explains_robust_st",),
    ),
    # at the book's seed, each baseline's median process-CPU time per explanation over
    # SST's, for every notion: an order of magnitude (wall time is reported beside: on a
    # shared machine it also counts the waits for a core)
    "faster": ClaimSpec(
        "SST explains at least 10 times faster than every post-hoc baseline (one forward pass)",
        paper="SST explains in the forward pass; the post-hoc searches take orders of "
        "magnitude longer",
        rule=Bound(ge=10),
        control="each post-hoc search's median CPU time, timed in alternation with SST "
        "on one thread",
        gap=Gap(
            "SST's explanation is one forward pass, fixed torch overhead for a 256-input "
            "MLP ({measured}). A post-hoc search that stops early costs a "
            "handful of such calls: under the zero baseline one 2x2 superpixel often "
            "suffices (see smaller_baseline_st), so the Anchors-style search makes three "
            "batched calls (the prediction, the empty anchor, one batch of 64 candidates), "
            "a few times one forward pass rather than ten. The paper's orders of magnitude "
            "come from images of thousands to hundreds of thousands of features and "
            "ResNets, where every candidate batch is large and a search takes many steps. "
            "What would show it: the paper's image sizes (MNIST, CIFAR-10, with a GPU)."
        ),
    ),
    # per run (accuracy_runs of them): SST-ST's test accuracy minus the normal model's
    # of the same run; the mean over the runs with the paired t interval. A
    # non-inferiority margin, which an SST-ST that learned no explanation would pass:
    # each rests on its notion's explains_*_st, which such a model misses, so the pair
    # asks for explanations at little cost
    "accuracy_kept_baseline_st": ClaimSpec(
        "baseline sufficiency: SST-ST's test accuracy is within 3 points of the normally "
        "trained model's",
        paper=_ACCURACY_PAPER,
        rule=Margin(above=-0.03, why="a loss of at most 3 points, a small drop"),
        control=_ACCURACY_CONTROL,
        rests_on=("explains_baseline_st",),
    ),
    "accuracy_kept_probabilistic_st": ClaimSpec(
        "probabilistic sufficiency: SST-ST's test accuracy is within 3 points of the "
        "normally trained model's",
        paper=_ACCURACY_PAPER,
        rule=Margin(above=-0.03, why="a loss of at most 3 points, a small drop"),
        control=_ACCURACY_CONTROL,
        rests_on=("explains_probabilistic_st",),
    ),
    "accuracy_kept_robust_st": ClaimSpec(
        "robust sufficiency: SST-ST's test accuracy is within 3 points of the normally "
        "trained model's",
        paper=_ACCURACY_PAPER,
        rule=Margin(above=-0.03, why="a loss of at most 3 points, a small drop"),
        control=_ACCURACY_CONTROL,
        rests_on=("explains_robust_st",),
        gap=Gap(
            "Training on the robust fill is adversarial training at radius attack_eps "
            "with the faithfulness term on top, and at the gamma chosen on validation at "
            "the book's seed it can collapse in another run: the classifier settles on "
            "one class for every input, whose filled inputs then keep the prediction, "
            "so the loss has a minimum there. One such run among the others moves the "
            "mean by several points and widens the t interval past the margin "
            "({measured}). What would show the claim: a gamma chosen in each run on its "
            "own validation split, or a training that cannot settle on one class.",
            varies=True,
        ),
    ),
    # per run: the least-squares slope of test faithfulness (points) on log2 gamma over
    # the grid, baseline fill; the mean over the runs with its t interval
    "gamma_faithfulness_st": ClaimSpec(
        "SST-ST, baseline fill: faithfulness falls as gamma grows",
        paper=_GAMMA_PAPER,
        rule=Margin(below=0.0, why="any fall; the paper gives no slope"),
        control="no trend: a slope of 0 points per doubling of gamma",
        rests_on=("explains_baseline_st",),
    ),
    # as gamma_faithfulness_st, for test accuracy
    "gamma_accuracy_st": ClaimSpec(
        "SST-ST, baseline fill: accuracy falls as gamma grows",
        paper=_GAMMA_PAPER,
        rule=Margin(below=0.0, why="any fall; the paper gives no slope"),
        control="no trend: a slope of 0 points per doubling of gamma",
        rests_on=("explains_baseline_st",),
        gap=Gap(
            "The mean slope of accuracy is a fraction of a point per doubling of gamma "
            "({measured}), and the runs' slopes, each on its own split of a few hundred "
            "test digits, spread across zero: the size term acts on the explanation "
            "head, the prediction's cross-entropy keeps the backbone, and on the "
            "upsampled 8x8 digits a mask of a few pixels still carries the class, so the "
            "faithfulness term costs the classifier little at any gamma of the grid. "
            "What would show it: more runs and larger test splits, or images that need "
            "more of their pixels (MNIST, CIFAR-10 as in the paper).",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against."""
