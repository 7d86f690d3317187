"""Input-space mode connectivity.

Vrabel, Shem-Ur, Oz & Krueger (ICLR 2025). Mode connectivity, found in the weights of
deep networks, is asked of their *inputs*: are two inputs A and C that a model puts in
one class (loss minimisers for it) joined by a path along which the loss stays low?

The linear path x(t) = (1 - t) A + t C, t in [0, 1], gives the cross-entropy (CE) of
the class at every point. Its *barrier* is the largest loss on the path; its *gap* is
that maximum minus the larger of the two endpoint losses (how far the path climbs
above where it starts and ends). The paper's bypass (after Fort & Jastrzebski, 2019):
take the barrier point B and optimise it into B' by Adam on

    CE(B') + 0.1 mean((B' - B)^2) + 1e-8 TV(B' - B),

with the gradient made orthogonal to C - A before each step, g <- g - (g.v / v.v) v,
v = C - A; then A -> B' -> C is the new path, and the worst of its segments can be
bypassed again (a round). For untrained models the official code optimises the
barrier point freely (Adam on CE alone, ``optimize_point``), from synthetic inputs
made by feature visualisation (FVO: Adam on CE from small Gaussian noise). Targeted
adversarial examples are made from an image of another class by Adam on CE + 0.1 MSE
+ 1e-8 TV towards the class, stopped once their CE falls below the real image's; the
barrier between a real image and such an example is compared with the barriers
between two real images of the class from the same one, after dropping, per class,
the two pairs whose endpoint losses differ most (the official ``postprocess_barriers``).
The connectivity sections run on a small CNN of generated shapes, whose straight lines
climb; the adversarial section on an accurate CNN of the digits, whose real images of a
class sit in one low-loss region, as the paper's ImageNet images do for GoogLeNet.

Everything here works on batches: the optimisers are elementwise (Adam keeps one pair
of moments per pixel), and the summed loss of a batch gives each input the gradient
of its own loss, so optimising n inputs together is n independent official runs.
Written after the official code (JVrabel/input_space_mode_connectivity, ``utils.py``
and ``sec4_*.py``); the ROC AUC is scikit-learn's ``roc_auc_score``.

Files: ``method.py`` holds the checks of what is asked, the losses along linear paths,
the optimisers of inputs, the rounds of bypasses and the statistics; ``data.py`` the
data set, its classifier and the pairs; ``figures.py`` the figure builders. This file
holds the chapter's parameters, smoke overrides, thresholds and claims.
"""

from __future__ import annotations

import math

from iclr25.chapters.modeconn.data import (
    class_pairs,
    interpolated_pairs,
    load_model,
    other_class_sources,
)
from iclr25.chapters.modeconn.figures import (
    KIND_COLORS,
    ROUND_NAMES,
    SET_COLORS,
    barriers_figure,
    explorer_figure,
    paths_figure,
    rounds_figure,
    sensitivity_figure,
)
from iclr25.chapters.modeconn.method import (
    Barrier,
    Bypass,
    Comparison,
    Route,
    adversarial,
    as_batch,
    barrier,
    bypass,
    compare_barriers,
    connect,
    cross_entropy,
    detection_auc,
    drop_mismatched,
    feature_visualization,
    linear_path,
    optimize_point,
    pair_class,
    path_losses,
    project_out,
    total_variation,
)
from iclr25.core import ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "dataset": Param(
        "shapes", "image set of the connectivity model", choices=("shapes", "noisy_digits")
    ),
    "arch": Param("cnn", "classifier", choices=("cnn", "mlp")),
    "n": Param(4000, "images drawn (60/20/20 train/validation/test)", low=200, high=100000),
    "width": Param(16, "CNN channels of the first block, or MLP hidden units", low=2, high=512),
    "epochs": Param(12, "training epochs (the last tenth at lr / 10)", low=1, high=200),
    "pairs": Param(84, "same-class pairs of correct test images", low=2, high=2000),
    "untrained_pairs": Param(3, "FVO pairs per class for the untrained model", low=1, high=100),
    "adv_dataset": Param(
        "digits16",
        "image set of the accurate model",
        choices=("digits16", "noisy_digits", "shapes"),
    ),
    "adv_arch": Param("cnn", "accurate model's classifier", choices=("cnn", "mlp")),
    "adv_width": Param(16, "accurate model's width", low=2, high=512),
    "adv_epochs": Param(30, "accurate model's training epochs", low=1, high=400),
    "adv_pairs": Param(
        70, "within-class pairs of the accurate model (official 7 per class)", low=2, high=2000
    ),
    "path_steps": Param(
        250, "points on each linear segment (official 250 for statistics)", low=2, high=5000
    ),
    "rounds": Param(3, "bypass rounds at most, per pair", low=0, high=8),
    "bypass_steps": Param(300, "Adam steps of each bypass (official 1,024)", low=1, high=10000),
    "attack_steps": Param(512, "Adam steps of each attack (official 512)", low=1, high=10000),
    "fvo_steps": Param(
        1000, "Adam steps of FVO and free optimisation (official 8,192 / 4,096)", low=1, high=20000
    ),
    "fvo_target": Param(5e-3, "CE at which FVO stops (official 5e-4)", low=1e-6, high=1.0),
    "mse": Param(0.1, "weight of the MSE term in bypass and attack", low=0.0, high=100.0),
    "seed": Param(0, "seed of the data, the models and the pairs", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {
    "n": 600,
    "epochs": 2,
    "width": 4,
    "pairs": 6,
    "untrained_pairs": 1,
    "adv_epochs": 2,
    "adv_width": 4,
    "adv_pairs": 10,
    "path_steps": 20,
    "rounds": 1,
    "bypass_steps": 20,
    "attack_steps": 40,
    "fvo_steps": 20,
}
"""Overrides that run the chapter in seconds (the notebook test)."""

CONNECTED_GAP = 0.1
"""A path is connected when its gap (max minus the larger endpoint loss) is at most this."""

UNTRAINED_FACTOR = 2.0
"""An untrained model's path counts as low when its max loss is at most this many times
the larger endpoint loss (the claims take log10 of the ratio)."""

LOG_FACTOR = math.log10(UNTRAINED_FACTOR)

# ---------------------------------------------------------------------------------
# The claims: rules fixed before the run, and the gaps expected
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # mean straight-line gap of the real pairs of the shapes model
    "straight_barriers": ClaimSpec(
        "Straight lines between same-class pairs of correct test images climb: their "
        "mean gap exceeds the connection tolerance 0.1",
        kind="setup",
        rule=Margin(
            above=CONNECTED_GAP,
            why="the tolerance below which a path counts as connected: lines already "
            "connected would leave the bypass nothing to remove",
        ),
        control="a path that does not climb (gap 0)",
    ),
    # share of pairs with gap <= 0.1 after <= `rounds` rounds
    "connected_trained": ClaimSpec(
        "Same-class pairs of correct test images are connected: gap <= 0.1 after at most "
        "`rounds` bypass rounds, for more than 90% of pairs",
        paper="Figs. 1-3: after one bypass round the path A -> B' -> C stays near the "
        "endpoints' loss for real, interpolated and synthetic ImageNet pairs (GoogLeNet, "
        "ResNet-18, ViT); no share of pairs is reported",
        rule=Margin(
            above=0.9, why="nearly all pairs: the paper finds no pair it could not connect"
        ),
        control="the straight line's share on the same pairs (no bypass)",
        rests_on=("straight_barriers",),
    ),
    # mean largest pixel change of the first-round bypasses that connect their pair
    "nearly_linear": ClaimSpec(
        "B' is nearly indistinguishable from B: the largest pixel change max |B' - B| of "
        "a first-round bypass that connects its pair is below 5% of the image's largest "
        "pixel, on average",
        paper="Fig. 1: B' is nearly indistinguishable from B; the largest pixel of B' - B "
        "is 1-5% of the image's largest pixel",
        rule=Margin(below=0.05, why="the paper's Fig. 1: 1-5% of the largest pixel"),
        control="only bypasses that connect their pair in one round count (a bypass that "
        "does not move leaves the barrier, and none to measure)",
        rests_on=("straight_barriers",),
        gap=Gap(
            "Our images have 256 pixels, not 150,528, so a bypass that must lower the "
            "loss by as much spreads its change over far fewer pixels; and the official "
            "step size (Adam lr 0.005, which moves each pixel by about lr per step "
            "whatever its gradient) is kept in pixels of range 1, against normalised "
            "ImageNet units of range about 4.5, so each of the 300 steps moves a pixel "
            "about four times further relative to its range. The bypass's change is small "
            "overall (its detour ||B' - B|| / ||C - A|| is printed beside the claim) but "
            "concentrated on few pixels. What would show it: images of ImageNet's size, or "
            "a step scaled to the pixel range."
        ),
    ),
    # mean log10(primary max / larger endpoint) of the untrained model's FVO pairs
    "untrained_barriers": ClaimSpec(
        "In the untrained model, straight lines between FVO inputs of one class climb "
        "above twice the larger endpoint loss (mean log10 of the ratio above log10 2)",
        kind="setup",
        rule=Margin(
            above=LOG_FACTOR,
            why="twice the endpoint loss, the level the two-round path must stay under",
        ),
        control="a path that does not climb (ratio 1, log 0)",
    ),
    # mean log10(two-round max / larger endpoint)
    "untrained_connected": ClaimSpec(
        "Untrained models are connected too: after two rounds of free optimisation the "
        "path's max loss is below twice the larger endpoint loss (mean log10 of the ratio "
        "below log10 2)",
        paper="Fig. 7: untrained ResNet-18, FVO inputs of a CIFAR-10 class; the primary "
        "barrier falls after one round and the two-round path stays at the endpoints' "
        "loss (the official plot's secondary axis spans 0.0005-0.005)",
        rule=Margin(
            below=LOG_FACTOR,
            why="a path at most twice its endpoints' loss, an order of magnitude under the "
            "straight line's",
        ),
        control="the straight line between the same FVO inputs (untrained_barriers)",
        rests_on=("untrained_barriers",),
    ),
    # mean within-class gap of the accurate model's kept pairs
    "accurate_within_low": ClaimSpec(
        "The accurate model's within-class straight lines stay flat: mean gap of the "
        "kept within-class pairs below the connection tolerance 0.1",
        kind="setup",
        rule=Margin(
            below=CONNECTED_GAP,
            why="the paper's regime: real images of a class sit in one wide low-loss region",
        ),
        control="the shapes model's within-class lines (straight_barriers), which climb",
    ),
    # paired mean of (adversarial gap - within gap), pairs sharing A
    "adversarial_higher": ClaimSpec(
        "Barriers between a real image and an adversarial example of its class exceed "
        "within-class barriers from the same image: paired mean gap difference above 0",
        paper="Fig. 6: over 1,000 ImageNet classes (GoogLeNet, 7 pairs per class less the "
        "2 most mismatched), the real-to-adversarial boxes of barrier max and gap lie above "
        "the within-class ones; no effect size is reported",
        rule=Margin(above=0.0, why="the paper reports no effect size, only higher barriers"),
        control="within-class pairs (A, C) of real test images from the same A (the 2 "
        "most mismatched pairs per class dropped from both sets)",
        rests_on=("accurate_within_low",),
    ),
}
"""Claim id -> the claim, its rule, its control, the setup claims it rests on and its
declared gap."""
