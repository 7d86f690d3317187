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

The claims on trained models are decided over independent training runs: run k
draws its data, trains its models and draws its pairs at seed + k. The bypass keeps
the official 1,024 Adam steps, with its step scaled from normalised ImageNet units to
our pixel range (0.005 x 0.226, about 0.0011).

Files: ``method.py`` holds the checks of what is asked, the losses along linear paths,
the optimisers of inputs, the rounds of bypasses and the statistics; ``data.py`` the
data set, its classifier and the pairs; ``runs.py`` one run of each experiment, cached;
``figures.py`` the figure builders. This file holds the chapter's parameters, smoke
overrides, thresholds and claims.
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
from iclr25.chapters.modeconn.runs import (
    adversarial_run,
    attack_pairs,
    barrier_sets,
    connectivity_run,
    real_pairs,
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
    "runs": Param(5, "independent training runs (seed, seed + 1, ...)", low=1, high=50),
    "pairs": Param(84, "same-class pairs of correct test images per run", low=2, high=2000),
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
        70,
        "within-class pairs of the accurate model per run (official 7 per class)",
        low=2,
        high=2000,
    ),
    "path_steps": Param(
        250, "points on each linear segment (official 250 for statistics)", low=2, high=5000
    ),
    "rounds": Param(3, "bypass rounds at most, per pair", low=1, high=8),
    "bypass_steps": Param(1024, "Adam steps of each bypass (official 1,024)", low=1, high=10000),
    "bypass_lr": Param(
        0.0011,
        "Adam step of the bypass (official 0.005 in normalised ImageNet units, of which "
        "our pixel range is about 0.226)",
        low=1e-6,
        high=1.0,
    ),
    "attack_steps": Param(512, "Adam steps of each attack (official 512)", low=1, high=10000),
    "fvo_steps": Param(
        1000, "Adam steps of FVO and free optimisation (official 8,192 / 4,096)", low=1, high=20000
    ),
    "fvo_target": Param(5e-3, "CE at which FVO stops (official 5e-4)", low=1e-6, high=1.0),
    "mse": Param(0.1, "weight of the MSE term in bypass and attack", low=0.0, high=100.0),
    "seed": Param(0, "seed of run 0's data, models and pairs (run k: seed + k)", low=0),
    "device": Param("auto", "compute device", choices=("auto", "cpu", "cuda")),
}
"""The chapter's parameters: the notebook's parameters cell repeats these defaults."""

SMOKE = {
    "n": 600,
    "epochs": 2,
    "width": 4,
    "runs": 2,
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
the larger endpoint loss (a fact the page prints, not a claim: see the untrained
section)."""

NEARLY_LINEAR_PIXEL = 0.05
"""A bypass is nearly linear when its largest pixel change max |B' - B| is below this
share of the image's largest pixel (the paper's Fig. 1: 1-5%)."""

_OVER_RUNS = "the mean over runs, each run its own data, model and pairs"

# ---------------------------------------------------------------------------------
# The claims: rules fixed before the run, and the gaps expected
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # per run, the share of real pairs whose straight line has gap > 0.1; mean over runs
    "straight_barriers": ClaimSpec(
        "Straight lines between same-class pairs of correct test images climb: more than "
        "half of the pairs have a gap above the connection tolerance 0.1 "
        f"({_OVER_RUNS})",
        kind="setup",
        rule=Margin(
            above=0.5,
            why="most pairs climb, so the bypass claims below rest on most pairs, not on a "
            "few tall barriers",
        ),
        control="a path that does not climb (share 0)",
    ),
    # per run, the share of the climbing pairs (straight gap > 0.1) with gap <= 0.1
    # after at most `rounds` rounds; mean over runs
    "connected_trained": ClaimSpec(
        "Same-class pairs whose straight line climbs are connected: gap <= 0.1 after at "
        f"most `rounds` bypass rounds, for more than 90% of them ({_OVER_RUNS})",
        paper="Figs. 1-3: after one bypass round the path A -> B' -> C stays near the "
        "endpoints' loss for real, interpolated and synthetic ImageNet pairs (GoogLeNet, "
        "ResNet-18, ViT); no share of pairs is reported",
        rule=Margin(
            above=0.9, why="nearly all pairs: the paper finds no pair it could not connect"
        ),
        control="the straight line on the same pairs, none of which it connects (they "
        "are chosen for climbing): a bypass that did nothing scores 0",
        rests_on=("straight_barriers",),
    ),
    # per run, the share of the climbing pairs that the first-round bypass connects
    # with max |B' - B| / max |B| < 0.05; mean over runs (the same bypasses as above)
    "nearly_linear": ClaimSpec(
        "One bypass connects a climbing pair with a nearly indistinguishable B': for more "
        "than half of the climbing pairs the first-round bypass leaves gap <= 0.1 while "
        "changing no pixel by 5% of the image's largest pixel or more "
        f"({_OVER_RUNS}; the bypasses of connected_trained)",
        paper="Fig. 1: B' is nearly indistinguishable from B; the largest pixel of B' - B "
        "is 1-5% of the image's largest pixel, and the path A -> B' -> C is connected",
        rule=Margin(
            above=0.5,
            why="the paper's Fig. 1 shows one pair as typical of trained models: a typical "
            "pair is one of the majority",
        ),
        control="the straight line (no bypass), which connects none of the climbing "
        "pairs; and a bypass that connects by moving pixels far, which fails the 5%",
        rests_on=("straight_barriers",),
        gap=Gap(
            "Our images have 256 pixels, not 150,528, so a bypass that must lower the "
            "loss by as much concentrates its change on far fewer pixels: even at the "
            "paper's step relative to the pixel range, the first-round bypasses move "
            "their largest pixel by {pixel:.0%} of the image's largest pixel (median), "
            "while their whole move is small beside the segment (detour "
            "||B' - B|| / ||C - A||, median {detour:.2f}). The official bypass also "
            "runs all its steps, lowering the loss after the barrier is gone. What "
            "would show it: images of ImageNet's size."
        ),
    ),
    # per run, the mean within-class gap of the accurate model's kept pairs
    "accurate_within_low": ClaimSpec(
        "The accurate model's within-class straight lines stay flat: mean gap of the "
        f"kept within-class pairs below the connection tolerance 0.1 ({_OVER_RUNS})",
        kind="setup",
        rule=Margin(
            below=CONNECTED_GAP,
            why="the paper's regime: real images of a class sit in one wide low-loss region",
        ),
        control="the shapes model's within-class lines (straight_barriers), which climb",
    ),
    # per run, the median over kept pairs of (adversarial gap - within gap) from the
    # same A; mean over runs
    "adversarial_higher": ClaimSpec(
        "Barriers between a real image and an adversarial example of its class exceed "
        "within-class barriers from the same image: the median over pairs of the gap "
        f"difference is above 0 ({_OVER_RUNS})",
        paper="Fig. 6: over 1,000 ImageNet classes (GoogLeNet, 7 pairs per class less the "
        "2 most mismatched), the real-to-adversarial boxes of barrier max and gap lie above "
        "the within-class ones; no effect size is reported",
        rule=Margin(
            above=0.0,
            why="the paper reports no effect size, only higher boxes: a median, not a mean "
            "that a few tall barriers can carry",
        ),
        control="within-class pairs (A, C) of real test images from the same A (the 2 "
        "most mismatched pairs per class dropped from both sets)",
        rests_on=("accurate_within_low",),
        gap=Gap(
            "The median gap difference is positive in {positive} of {runs} runs, from "
            "{smallest:.5f} to {largest:.5f}, but these are thousandths of a CE unit: the "
            "attack stops at A's own loss, which the accurate model puts near zero, so "
            "both sets' barriers are tiny, and their spread over {runs} runs lets the t "
            "interval, {measured}, reach 0. More runs, or a model whose correct images "
            "sit at a higher loss, would decide it; the gap's AUC, which does not depend "
            "on that scale, is decided beside it (adversarial_detected).",
            after_run=True,
            varies=True,
        ),
    ),
    # per run, the ROC AUC of the gap calling real-to-adversarial pairs (positives)
    # against within-class pairs; mean over runs (the barrier max's AUC is printed)
    "adversarial_detected": ClaimSpec(
        "The barrier gap detects adversarial examples: its ROC AUC, real-to-adversarial "
        f"pairs against within-class pairs, is above chance 0.5 ({_OVER_RUNS})",
        paper="Abstract and Fig. 6: barriers show 'potential for adversarial detection'; "
        "the figure gives boxplots of barrier max and gap, no detector",
        rule=Margin(above=0.5, why="chance: a score that does not separate the sets has AUC 0.5"),
        control="an attack that does nothing (a real image of the class as A') leaves "
        "the two sets alike, AUC 0.5",
        rests_on=("accurate_within_low",),
    ),
}
"""Claim id -> the claim, its rule, its control, the setup claims it rests on and its
declared gap."""
