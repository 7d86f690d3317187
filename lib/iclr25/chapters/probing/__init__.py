"""How to probe: the probe's training decides post-hoc attributions.

Gairola, Boehle, Locatello & Schiele (ICLR 2025). A frozen backbone f (here a small
CNN ending in global average pooling) is read by a *probe* g, and the attribution
maps of g(f(x)) are evaluated on the grid pointing game (GridPG). The paper finds
that how g is trained matters more than how f was pre-trained:

* the loss: binary cross-entropy (BCE),
  -sum_k [t_k log s(z_k) + (1 - t_k) log(1 - s(z_k))], s the sigmoid, on the official
  targets t_k = 1 for the true class and 1/K for the K - 1 others, instead of
  softmax cross-entropy (CE), -log softmax(z)_y. Softmax is invariant to a shift
  shared by all logits, so a CE logit may carry evidence of every class; BCE makes
  each logit answer "is class k present?" on its own;
* the probe: linear (with and without bias), ReLU MLPs, and B-cos MLPs whose layers
  compute |cos(x, w)| (w . x) with unit-norm rows w (B = 2) and a max-out of two.

GridPG: images that every probe classifies correctly, the most confident first, are
tiled into a 3x3 (or 2x2) grid of distinct classes. For the class of each cell, the
attribution map (summed over channels, smoothed, negatives set to zero) should put its
mass in that cell; the score is the cell's share of the positive attribution (1 is
perfect, 1/9 is chance on a 3x3 grid). The smoothing follows the official script: a small average
pool for every map, a wide Gaussian blur for Input x Gradient.

Attributions come from captum 0.9: InputXGradient, IntegratedGradients,
GuidedBackprop, LayerGradCam (last convolution, bilinear upsampling), LRP (epsilon
rules; not for B-cos probes) and Lime (4x4-pixel patches, ridge surrogate as in the
lime package); for B-cos probes also the contribution map W(x) x, the input times the
gradient with the B-cos layers' dynamic scales detached (the official "explanation
mode"). Pre-training (supervised CE, SimCLR), probes and the GridPG metric
are written here, following the official code (sidgairo18/how-to-probe).

The experiment is repeated in independent runs, each with its own draw of the data,
its own backbones, probes and grids; every claim is decided over runs.

Files: ``method.py`` holds the names of the methods, probes, losses and paradigms, the
backbone, the probes, their loss and training (cached), and the backbones'
pre-training; ``evaluation.py`` the grid pointing game, the attributions it scores
(cached), and one run's summaries of them; ``runs.py`` one independent run, data to
GridPG, over which the claims are decided; ``figures.py`` the figure builders. This
file holds the chapter's parameters, smoke overrides and claims.
"""

from __future__ import annotations

from iclr25.chapters.probing.evaluation import (
    COSTLY,
    SMOOTHING,
    FeatureCache,
    attribute,
    confident_pool,
    evaluate_probe,
    gridpg,
    make_grid,
    per_grid,
    sample_grids,
    score_probes,
    smooth,
    summarise,
    summarise_runs,
    swap_contrast,
)
from iclr25.chapters.probing.figures import (
    heatmaps_figure,
    maps_figure,
    mixing_figure,
)
from iclr25.chapters.probing.method import (
    BCOS,
    LOSSES,
    METHOD_NAMES,
    METHODS,
    PARADIGMS,
    PROBES,
    Backbone,
    BcosLinear,
    BcosMLP,
    Probed,
    augment,
    confidence,
    feature_scale,
    fit_probes,
    loss_weight,
    make_probe,
    methods_for,
    nt_xent,
    parse_methods,
    pooled,
    pretrain,
    probe_loss,
    receptive_field,
    train_probe,
)
from iclr25.chapters.probing.runs import CONFIDENT, Run, one_run
from iclr25.core import ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# Parameters and claims
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "dataset": Param(
        "noisy_digits", "image set of the backbones", choices=("noisy_digits", "shapes")
    ),
    "n": Param(6000, "images drawn (60/20/20 train/validation/test)", low=300),
    "width": Param(16, "channels of the first conv block (doubled per block)", low=2, high=64),
    "pools": Param(
        1, "max-pools in the backbone (receptive field 12 px for 1, 18 px for 2)", choices=(1, 2)
    ),
    "epochs_sup": Param(15, "epochs of supervised pre-training", low=1),
    "epochs_simclr": Param(20, "epochs of SimCLR pre-training", low=1),
    "temperature": Param(0.5, "NT-Xent temperature", low=0.01, high=10.0),
    "probe_iter": Param(
        1000, "most L-BFGS iterations per probe (stops earlier when converged)", low=25
    ),
    "probe_width": Param(32, "hidden units of the MLP probes", low=2),
    "runs": Param(5, "independent runs (data, backbones, probes, grids), the claims' units", low=1),
    "grids": Param(20, "GridPG grids per run", low=2),
    "costly_grids": Param(5, "grids for IntGrad and LIME (the first run's first)", low=1),
    "grid_size": Param(3, "grid of grid_size x grid_size images", choices=(2, 3)),
    "per_class": Param(20, "confident test images kept per class", low=1),
    "ig_steps": Param(16, "integration steps of IntGrad", low=2),
    "lime_samples": Param(100, "perturbations per LIME map", low=10),
    "methods": Param(
        ",".join(METHODS), "attribution methods, comma-separated", parser=parse_methods
    ),
    "seed": Param(0, "random seed", low=0),
    "device": Param(
        "auto",
        "compute device (the models are tiny: everything runs on the CPU)",
        choices=("auto", "cpu"),
    ),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {
    "n": 1000,
    "epochs_sup": 4,
    "epochs_simclr": 2,
    "grid_size": 2,
    "probe_iter": 50,
    "runs": 2,
    "grids": 4,
    "costly_grids": 2,
    "per_class": 5,
    "ig_steps": 4,
    "lime_samples": 20,
    "methods": "ixg,gradcam",
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

_ANY_GAIN = "the paper gives its GridPG in bar charts, no effect size in numbers: any gain"
_BCOS_GAP = Gap(
    "The paper's B-cos MLP probes help on 2048-dimensional ImageNet features, where "
    "class evidence is entangled and a linear probe leans on features shared by many of "
    "1,000 classes. Our 64 pooled features over ten digits are close to linearly "
    "separable, and global pooling makes a linear probe exactly additive over a grid's "
    "cells, the best case for GridPG; a nonlinear probe read at the average of nine "
    "cells' features mixes them instead. What would show it: many classes and "
    "ImageNet-scale features, where linear probes confuse classes."
)
_LOSS_GAP = Gap(
    "The paper's mechanism is softmax's shift invariance: with 1,000 ImageNet classes "
    "sharing textures and parts, a CE logit can rise with evidence common to many "
    "classes, which lights up a grid's other cells, and BCE, whose off-class targets "
    "are 1/K = 0.001 there, removes that evidence. With ten digit classes the official "
    "off-class target is 0.1, and a linear probe on 64 pooled features has little "
    "shared evidence to remove: the gain, {estimate}, is small next to how much it "
    "varies between runs, each with its own backbone. What would show it: many classes "
    "sharing evidence, and more runs."
)

CLAIMS: dict[str, ClaimSpec] = {
    # per run: |acc(linear CE on supervised) - acc(linear CE on SimCLR)|, in points
    "backbones_matched": ClaimSpec(
        "The two pre-training schemes give backbones of matched quality: the linear CE "
        "probe's test accuracy on SimCLR features is within 3 points of that on "
        "supervised features",
        kind="setup",
        rule=Margin(below=3, why="the paper's backbones are all strong ImageNet models"),
        control="the supervised backbone's linear CE probe, in the same run",
    ),
    # per run: GradCAM GridPG of the supervised backbone's linear CE probe
    "maps_localise": ClaimSpec(
        "Attribution maps can single out a grid's cell: GradCAM of the linear CE probe "
        "on the supervised backbone scores well above chance",
        kind="setup",
        rule=Margin(above=1 / 3, why="three times chance, 1/9 on a 3x3 grid"),
        control="chance, the GridPG of a map spread evenly over the grid (1/9)",
    ),
    # GridPG(linear BCE) - GridPG(linear CE), over IxG, GuidedBP, GradCAM, LRP
    "bce_beats_ce_supervised": ClaimSpec(
        "On the supervised backbone, the linear BCE probe's maps localise better than the "
        "linear CE probe's (grid-paired, averaged over IxG, GuidedBP, GradCAM and LRP)",
        paper="BCE linear probes raise GridPG over CE for most attribution methods and "
        "pre-training schemes (bar charts; numbers not retrieved)",
        rule=Margin(above=0.0, why=_ANY_GAIN),
        control="the linear CE probe on the same backbone and grids, in the same run",
        rests_on=("maps_localise",),
        gap=_LOSS_GAP,
    ),
    "bce_beats_ce_simclr": ClaimSpec(
        "On the SimCLR backbone, the linear BCE probe's maps localise better than the "
        "linear CE probe's (grid-paired, averaged over IxG, GuidedBP, GradCAM and LRP)",
        paper="BCE linear probes raise GridPG over CE for most attribution methods and "
        "pre-training schemes (bar charts; numbers not retrieved)",
        rule=Margin(above=0.0, why=_ANY_GAIN),
        control="the linear CE probe on the same backbone and grids, in the same run",
        rests_on=("maps_localise", "backbones_matched"),
        gap=_LOSS_GAP,
    ),
    # GridPG(B-cos MLP BCE) - GridPG(linear BCE), over IxG, GuidedBP, GradCAM
    "bcos_mlp_supervised": ClaimSpec(
        "On the supervised backbone, the B-cos MLP BCE probe's maps localise better than "
        "the linear BCE probe's (grid-paired, averaged over IxG, GuidedBP and GradCAM)",
        paper="B-cos MLP probes improve GridPG further over linear BCE probes, for most "
        "methods (figures; numbers not retrieved)",
        rule=Margin(above=0.0, why=_ANY_GAIN),
        control="the linear BCE probe on the same backbone and grids, in the same run",
        rests_on=("maps_localise",),
        gap=_BCOS_GAP,
    ),
    "bcos_mlp_simclr": ClaimSpec(
        "On the SimCLR backbone, the B-cos MLP BCE probe's maps localise better than "
        "the linear BCE probe's (grid-paired, averaged over IxG, GuidedBP and GradCAM)",
        paper="B-cos MLP probes improve GridPG further over linear BCE probes, for most "
        "methods (figures; numbers not retrieved)",
        rule=Margin(above=0.0, why=_ANY_GAIN),
        control="the linear BCE probe on the same backbone and grids, in the same run",
        rests_on=("maps_localise",),
        gap=_BCOS_GAP,
    ),
    # per run: mean |effect| of the 10 loss swaps minus that of the 10 backbone swaps
    "probe_over_pretraining": ClaimSpec(
        "Changing the probe's loss moves GridPG more than changing the backbone's "
        "pre-training: the mean size of the 10 single CE -> BCE swaps exceeds that of "
        "the 10 single SimCLR -> supervised swaps (IxG, GuidedBP, GradCAM, LRP)",
        paper="the probe's training matters more than the pre-training scheme (abstract; "
        "figures, numbers not retrieved)",
        rule=Margin(above=0.0, why="the paper's comparison is an ordering, with no size"),
        control="the same number of single swaps of the backbone's pre-training, on the "
        "same grids and methods, in the same run",
        rests_on=("maps_localise", "backbones_matched"),
        gap=Gap(
            "The paper's ordering rests on a change of loss that moves GridPG a lot on "
            "ImageNet, where BCE removes the evidence that 1,000 classes share. Here the "
            "loss swap moves it little (see the bce_beats_ce claims), while two "
            "backbones trained by different objectives, even of matched accuracy, place "
            "their evidence differently whatever the probe: a loss swap moved GridPG by "
            "{loss_swap} on average over runs, a backbone swap by {backbone_swap}. What "
            "would show it: many classes sharing evidence, at ImageNet scale."
        ),
    ),
}
"""Claim id -> the claim, its rule, its control and declared gap, fixed before the run."""
