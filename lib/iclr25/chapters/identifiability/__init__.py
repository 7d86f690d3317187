"""Is mechanistic interpretability identifiable? (Méloux, Portet, Maniu and Peyrard, ICLR 2025)

Tiny MLPs (2 inputs, two hidden layers of ``width`` LeakyReLU neurons, one linear output
per gate) are trained with MSE to compute one Boolean gate of two inputs, or several
at once, and every candidate explanation of each network is enumerated, by the paper's two
strategies:

* **where-then-what** -- every neuron subset (a *circuit*: at least one neuron per hidden
  layer and not all of them, with ``min_sparsity`` at widths 4 and 5, the others
  zero-ablated, as the official code's candidates) whose output, rounded, has
  accuracy above 0.99 on the validation inputs; then, for each such circuit, every
  *interpretation*: one activation threshold per circuit neuron, turning it into a Boolean
  function of the inputs, such that each neuron's value is a function of its parents'
  values (a consistent mapping of neurons to logic gates);
* **what-then-where** -- every candidate algorithm (a tree of two-input AND/OR gates with
  negations, up to a depth, that computes the target) and every *location* of it: a
  disjoint group of neurons of one layer for each intermediate variable, such that every
  single-variable interchange intervention, over all ordered (base, source) pairs of the
  four inputs, gives the algorithm's answer (interchange intervention accuracy, IIA, 1).
  Locations are kept when minimal under inclusion, as in the official code.

A network trained on several gates is explained one output at a time, as the official code
does (``separate_into_k_mlps``): the shared hidden layers with one gate's output neuron
(:func:`split_heads`) are a single-gate network to which both strategies apply. A circuit
of the whole network must replicate every output (:func:`joint_circuits`).

Written by hand, for speed and exhaustiveness: the networks of one width are trained as one
batch of weight tensors (AdamW is elementwise, so this is the same as training them one
by one), every circuit of a network is evaluated in one batched forward pass, and every
(neuron group, base, source) interchange intervention in another. pyvene intervenes on one
model through hooks; an exhaustive search over tens of thousands of tiny interventions is
faster as tensor arithmetic. Interpretations are counted exactly without listing them: the
consistency test is a bit operation on truth tables (see :func:`separations`).

Differences from the official code (MelouxM/MI-identifiability), also listed in the
chapter: circuits are neuron subsets (the official code also enumerates edge subsets,
which :func:`edge_circuits` does for widths up to 3);
our candidate algorithms are distinct up to negated variables and swapped operands, with
negated inputs folded into the gates, and their IIA uses all 16 ordered (base, source)
pairs (:func:`official_algorithms` and :func:`official_alignment` count as the official
code does: one candidate per AND/OR tree, negated inputs located as variables of their own,
six pairs); and an interpretation is one threshold per neuron (the official count also
multiplies by every filling of parent patterns that never occur).

Files: ``networks.py`` holds the Boolean task (truth tables, noisy data) and the batched
MLPs with their training; ``method.py`` the two strategies (circuits and their
interpretations; candidate algorithms, interchange interventions and minimal locations)
and their application to every network (:func:`explain`, :func:`explain_outputs`);
``official.py`` the official code's conventions (edge circuits, its candidate algorithms
and its six-pair alignment count); ``figures.py`` the figure builders. This file holds the
chapter's parameters and its claims.
"""

from __future__ import annotations

from iclr25.chapters.identifiability.figures import (
    circuit_labels,
    conventions_figure,
    count_histograms,
    draw_network,
    explanations_figure,
    growth_figure,
    location_labels,
    multi_gate_figure,
)
from iclr25.chapters.identifiability.method import (
    BASES,
    MIN_SPARSITY,
    SOURCES,
    Algorithm,
    Explanations,
    Ref,
    candidate_algorithms,
    circuit_accuracy,
    circuit_activations,
    circuit_candidates,
    count_interpretations,
    explain,
    explain_outputs,
    first_interpretation,
    high_level_outputs,
    interchange_accuracy,
    interpretations,
    joint_circuits,
    least_supported,
    log_slope,
    minimal_locations,
    neuron_circuits,
    neuron_groups,
    patched_outputs,
    share_of,
    split_heads,
    task_name,
    threshold_truth_tables,
)
from iclr25.chapters.identifiability.networks import (
    AND_LIKE,
    GATES,
    INPUT_A,
    INPUT_B,
    INPUTS,
    NAMES,
    PAIRS,
    SEPARATIONS,
    TRUTH_TABLES,
    Networks,
    TrainConfig,
    Trained,
    bits,
    boolean_data,
    forward,
    init_networks,
    parse_gates,
    parse_multi_gates,
    separations,
    train_cached,
    train_networks,
)
from iclr25.chapters.identifiability.official import (
    OFFICIAL_PAIRS,
    Skeleton,
    _edge_circuit_accuracy_direct,
    edge_circuit_accuracy,
    edge_circuits,
    edge_covers,
    official_algorithms,
    official_alignment,
)
from iclr25.core import Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "gate": Param("XOR", "the Boolean function of the main experiment", choices=tuple(GATES)),
    "width": Param(
        3, "neurons per hidden layer (two hidden layers) in the main experiment", low=2, high=5
    ),
    "seeds": Param(
        100, "networks trained for the main experiment (one seed each)", low=1, high=1000
    ),
    "sweep_seeds": Param(20, "networks per width in the width sweep", low=1, high=500),
    "max_width": Param(5, "the width sweep runs over 2..max_width", low=2, high=5),
    "variant_seeds": Param(30, "networks per training variant and per other gate", low=1, high=500),
    "multi_gates": Param(
        "XOR,AND,OR",
        "gates of the multi-gate experiment, comma-separated (at "
        "least two of " + ", ".join(GATES) + "); networks learn the first 1, 2, ... "
        "of them at once",
        parser=parse_multi_gates,
    ),
    "multi_seeds": Param(30, "networks per task in the multi-gate experiment", low=1, high=500),
    "n_train": Param(
        4000,
        "training samples per network (the official 1,000 x 4 corners)",
        low=100,
        high=100000,
    ),
    "n_val": Param(
        200,
        "validation samples (convergence and circuit accuracy; official 50 x 4)",
        low=20,
        high=100000,
    ),
    "noise_std": Param(
        0.0,
        "std of the Gaussian noise on the inputs (0: the official basic setup)",
        low=0.0,
        high=0.4,
    ),
    "noise_repeats": Param(
        100,
        "with noise_std > 0: passes over the drawn training corners an epoch, each with "
        "fresh noise (official 1,000; validation repeats each corner 50 times)",
        low=1,
        high=1000,
    ),
    "lr": Param(0.001, "AdamW learning rate (the official default)", low=1e-5, high=1.0),
    "batch_size": Param(100, "minibatch size", low=1, high=10000),
    "max_epochs": Param(
        1000,
        "epochs after which a network that has not reached the loss target is dropped",
        low=1,
        high=10000,
    ),
    "patience": Param(
        3, "epochs without a lower mean loss after which training stops", low=1, high=10000
    ),
    "loss_target": Param(
        0.01, "training stops once an epoch's mean MSE is below this", low=1e-5, high=0.25
    ),
    "algo_depth": Param(3, "largest depth of the candidate algorithms (gate trees)", low=1, high=3),
    "seed": Param(0, "first seed; networks use seed, seed + 1, ...", low=0),
    "device": Param("auto", "compute device for training", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "seeds": 8,
    "sweep_seeds": 4,
    "max_width": 3,
    "variant_seeds": 4,
    "multi_seeds": 4,
    "max_epochs": 100,
    "n_val": 100,
    "algo_depth": 2,
    "noise_repeats": 5,
}

MOST_NETWORKS = Margin(above=0.5, why="the paper's 'in most networks': more than half")
"""The rule of the share claims: the share's 95% Wilson interval over the networks above
1/2."""

BASIC = ("networks_learn",)
"""The setup claim every paper claim rests on."""

CLAIMS: dict[str, ClaimSpec] = {
    "networks_learn": ClaimSpec(
        "Under the official basic setup (clean inputs, lr 0.001, early stopping) most XOR "
        "networks of width 3 reach the loss target and classify every validation input",
        kind="setup",
        rule=MOST_NETWORKS,
        control="a fixed threshold, half the trained networks",
    ),
    # share of the networks that learned the task showing each kind of non-uniqueness,
    # with its Wilson interval over the networks: "in most networks" is more than half
    "circuits_not_unique": ClaimSpec(
        "More than one circuit (the official candidates: neuron subsets, the full network "
        "excluded) replicates the network's behaviour, in most networks",
        paper="multiple circuits with perfect accuracy in most of 100 XOR networks (MLP 2-3-3-1)",
        rule=MOST_NETWORKS,
        control="a network with one circuit or none: a share of one half or less",
        rests_on=BASIC,
    ),
    # official conventions: official_algorithms, IIA on the official six pairs
    "algorithms_not_unique": ClaimSpec(
        "More than one official candidate algorithm aligns with the network (IIA 1 on the "
        "official six pairs), in most networks",
        paper="several algorithms perfectly aligned; in Fig. 2 both depth-2 XOR algorithms align",
        rule=MOST_NETWORKS,
        control="a network with one aligned candidate or none: a share of one half or less",
        rests_on=BASIC,
        gap=Gap(
            "Under the official conventions XOR's two depth-2 candidates, ¬(A*B)*(A+B) and "
            "¬((A*B)+¬(A+B)), locate the same two variables (AND and OR) up to negation, so "
            "a network aligns with both or with neither, and the official count exceeds one "
            "mostly in networks that found that OR/AND mechanism. A network that computes "
            "XOR as (A and not B) or (not A and B) aligns with no depth-2 candidate (the "
            "official code must locate a negated input as a variable of its own) and only "
            "with depth-3 trees, possibly one of them. At width 3 training lands on either "
            "mechanism about equally often, so the share is expected near one half, where "
            "the interval over about 85 networks cannot clear the bound; more networks "
            "would narrow the interval without moving the share. The share measures which "
            "mechanism training found more than whether algorithms are identifiable; wider "
            "networks (-p width=4), with room for both mechanisms at once, would test the "
            "paper's figure."
        ),
    ),
    "locations_not_unique": ClaimSpec(
        "An official candidate algorithm has more than one minimal location (IIA 1 on the "
        "official six pairs), in most networks",
        paper="one algorithm aligned with several neuron subsets",
        rule=MOST_NETWORKS,
        control="every aligned candidate located once or not at all: a share of one half or less",
        rests_on=BASIC,
        gap=Gap(
            "A candidate has two minimal locations when a layer can hold one of its "
            "variables in two disjoint minimal ways, or the variable in either layer. With "
            "three neurons per layer the commonest aligned candidates (two variables, AND "
            "and OR) leave little room for that, and about half of the clean-trained XOR "
            "networks are expected to have it; near one half, about 85 networks cannot "
            "decide the share. Wider layers "
            "have room for redundant copies of a variable: the width sweep's location counts "
            "(-p width=4 or 5 for the claim itself) would show the paper's figure."
        ),
    ),
    # the least-squares slope of log10 of the mean valid-circuit count against the width,
    # with a bootstrap interval that resamples each width's networks
    "grows_with_width": ClaimSpec(
        "The number of valid circuits grows exponentially with the width: log10 of the "
        "mean count rises with each added neuron per layer (the least-squares slope over "
        "widths 2 to max_width)",
        paper="exponential growth with hidden width 2 to 5 (log-scale figure)",
        rule=Margin(
            above=0.0,
            why="any growth: the figure gives no rate, and identifiable networks, one "
            "circuit each at every width, would keep the count flat",
        ),
        control="a fixed number of valid circuits at every width: a slope of 0",
        rests_on=BASIC,
    ),
    # the variant with the lowest Wilson bound of its share with more than one circuit
    "persists_across_variants": ClaimSpec(
        "More than one valid circuit in most networks, under every training variant and gate",
        paper="non-identifiability persists under noise, skew, stopping loss and other gates",
        rule=MOST_NETWORKS,
        control="one half of the networks of the least supported variant",
        rests_on=BASIC,
        gap=Gap(
            "Decided on the least supported of seven variants, each of about 25 networks "
            "that learned the task: a share must reach about 0.7 before its Wilson interval "
            "clears one half, and XOR networks of width 3 have more than one circuit in "
            "about 0.7 of cases (the baseline itself sits there). Noisy training (std 0.1) "
            "is expected lowest, near one half: a circuit must then be right on 99% of "
            "noisy validation inputs, and ablating a neuron narrows the margin that noise "
            "crosses. The simpler gates (AND, OR, IMP) are non-unique in nearly every "
            "network. The official 100 networks per variant (-p variant_seeds=100) would "
            "narrow each interval; the noisy variant may still sit near one half."
        ),
    ),
    # the task with the lowest Wilson bound of its share of networks in which every
    # gate's own network (the shared hidden layers with that gate's output) has more than
    # one circuit: the official per-gate count
    "several_gates_not_unique": ClaimSpec(
        "Trained on several gates at once, each gate's own network still has more than one "
        "circuit, for every gate, in most networks of every task (the official per-gate "
        "count)",
        paper="non-identifiability persists for networks computing several gates at once "
        "(official code, --n-gates; counted per gate)",
        rule=MOST_NETWORKS,
        control="one half of the networks of the least supported task",
        rests_on=BASIC,
        gap=Gap(
            "Decided on the least supported task ({measured}), where every gate's own "
            "network must have more than one circuit at once. With multi_seeds networks "
            "per task a share must lie well above one half before its Wilson interval "
            "clears it, and the interval of the least supported task reaches down to "
            "{low:.2f}. The official code trains 100 networks per task (-p "
            "multi_seeds=100), which would narrow every interval.",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it (fixed before the run) and what it is
measured against; a gap declared after the run that missed it says so."""
