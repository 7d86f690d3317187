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
between two real images of the class, after dropping, per class, the two pairs whose
endpoint losses differ most (the official ``postprocess_barriers``).

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
    Route,
    adversarial,
    as_batch,
    barrier,
    bypass,
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
from iclr25.core import Bound, ClaimSpec, Gap, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "dataset": Param("shapes", "image set", choices=("shapes", "noisy_digits")),
    "arch": Param("cnn", "classifier", choices=("cnn", "mlp")),
    "n": Param(4000, "images drawn (60/20/20 train/validation/test)", low=200, high=100000),
    "width": Param(16, "CNN channels of the first block, or MLP hidden units", low=2, high=512),
    "epochs": Param(12, "training epochs (the last tenth at lr / 10)", low=1, high=200),
    "pairs": Param(40, "same-class pairs of correct test images", low=2, high=2000),
    "path_steps": Param(
        250, "points on each linear segment (official 250 for statistics)", low=2, high=5000
    ),
    "rounds": Param(3, "bypass rounds at most, per pair", low=0, high=8),
    "bypass_steps": Param(300, "Adam steps of each bypass (official 1,024)", low=1, high=10000),
    "attack_steps": Param(300, "Adam steps of each attack (official 512)", low=1, high=10000),
    "fvo_steps": Param(
        1000, "Adam steps of FVO and free optimisation (official 8,192 / 4,096)", low=1, high=20000
    ),
    "fvo_target": Param(5e-3, "CE at which FVO stops (official 5e-4)", low=1e-6, high=1.0),
    "mse": Param(0.1, "weight of the MSE term in bypass and attack", low=0.0, high=100.0),
    "seed": Param(0, "seed of the data, the model and the pairs", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {
    "n": 600,
    "epochs": 2,
    "width": 4,
    "pairs": 4,
    "path_steps": 20,
    "rounds": 1,
    "bypass_steps": 20,
    "attack_steps": 20,
    "fvo_steps": 20,
}
"""Overrides that run the chapter in seconds (the notebook test)."""

CONNECTED_GAP = 0.1
"""A path is connected when its gap (max minus the larger endpoint loss) is at most this."""

UNTRAINED_SLACK = 0.05
"""An untrained model's two-round path counts as connected when its max loss is at
most this above the larger endpoint loss."""

# ---------------------------------------------------------------------------------
# The claims: bounds fixed before the run (issue #26), and the gaps expected
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # share of same-class pairs of correct test images with gap <= 0.1 after <= 3 rounds
    "connected_trained": ClaimSpec(
        "Same-class pairs of correct test images are connected: gap <= 0.1 after at most "
        "`rounds` bypass rounds, for >= 90% of pairs",
        paper="Figs. 1-3: after one bypass round the path A -> B' -> C stays near the "
        "endpoints' loss for real, interpolated and synthetic ImageNet pairs (GoogLeNet, "
        "ResNet-18, ViT); no share of pairs is reported",
        rule=Bound(ge=0.9),
        control="each pair's larger endpoint loss, a fixed threshold (no control run; the "
        "straight line's share is shown beside it)",
    ),
    # median ||B' - B|| / ||C - A|| over the first-round bypasses
    "nearly_linear": ClaimSpec(
        "The path is nearly linear: median detour ||B' - B|| / ||C - A|| of the "
        "first-round bypasses <= 0.5",
        paper="Fig. 1: B' is nearly indistinguishable from B; the largest pixel of B' - B "
        "is 1-5% of the image's largest pixel; the ratio ||B' - B|| / ||C - A|| itself is "
        "not reported",
        rule=Bound(le=0.5),
        control="a fixed threshold on the segment's length ||C - A|| (no control run)",
    ),
    # classes (of 5) whose two-round path in the untrained model has max <= endpoint + 0.05
    "untrained_connected": ClaimSpec(
        "Untrained models are connected too: after two free rounds the path's max loss is "
        "within 0.05 of the larger endpoint loss, for >= 4 of 5 classes",
        paper="Fig. 7: untrained ResNet-18, FVO inputs of a CIFAR-10 class; the primary "
        "barrier falls after one round and the two-round path stays low (the official "
        "plot's secondary axis spans 0.0005-0.005)",
        rule=Bound(ge=4),
        control="each path's larger endpoint loss, a fixed threshold (no control run)",
    ),
    # median gap, real-to-adversarial minus within class; ROC AUC of the gap as detector
    "adversarial_higher": ClaimSpec(
        "Barriers between a real image and an adversarial example of its class exceed "
        "within-class barriers: higher median gap, gap AUC >= 0.6",
        paper="Fig. 6: over 1,000 ImageNet classes (GoogLeNet, 7 pairs per class less the "
        "2 most mismatched), the real-to-adversarial boxes of barrier max and gap lie above "
        "the within-class ones; no AUC is reported (none in the official code)",
        rule={"median gap difference": Bound(gt=0), "AUC": Bound(ge=0.6)},
        control="within-class pairs of real test images from the same A (the 2 most "
        "mismatched pairs per class dropped from both sets)",
        gap=Gap(
            "A pilot (shapes, small CNN at 84% accuracy) found within-class "
            "barriers higher than real-to-adversarial ones (median gap 0.69 against 0.21, "
            "AUC 0.41), the reverse of the paper. Our real images are 16x16 with pixel noise "
            "and a distractor stroke, and the model is unsure of many correct ones, so two "
            "real images of a class often differ in ways the model reads as another class "
            "halfway along the line (a square and a disc a few pixels apart), which gives "
            "large within-class barriers. The attack stops as soon as the adversarial "
            "example's loss falls below the real image's, and starts from a nearby image: on "
            "a 256-pixel input a few hundred Adam steps of 0.005 reach it with a small, "
            "smooth change, so the line to it meets little resistance. The paper's effect "
            "rests on GoogLeNet's ImageNet images, where real images of a class sit in wide, "
            "well-separated regions and adversarial examples in thin pockets. What would "
            "show it: a large, accurate model on natural images, or at least a model whose "
            "correct test images have near-zero loss (more data and training), with attacks "
            "of the paper's length."
        ),
    ),
}
"""Claim id -> the claim, its rule (issue #26), its control and declared gap."""
