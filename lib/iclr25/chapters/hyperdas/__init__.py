"""HyperDAS: a hypernetwork that locates and learns concept features (Sun et al., ICLR 2025).

RAVEL-style interchange data. An *instruction* ``"e to e' A"`` names a base entity ``e``, a
source entity ``e'`` and an attribute ``A``. A *cause* example runs a base prompt asking for
``A(e)`` and must answer ``A(e')`` once the feature of ``A`` is taken from the source run (a
prompt about ``e'``, any template); an *isolation* example asks the base prompt for another
attribute ``B`` and must still answer ``B(e)``. Scores: cause and isolation accuracy, and
disentangle, their mean.

* **DAS** (distributed alignment search): one learned rank-``k`` orthonormal subspace ``R``
  at one (layer, position), ``h <- h + R R^T (h_src - h)``, trained per attribute by
  cross-entropy on the label; pyvene's ``LowRankRotatedSpaceIntervention``.
* **HyperDAS** (the official ``ReflectSelect``): a hypernetwork made of copies of the
  target's embedding and first ``N`` layers, each with cross-attention (rotary positions
  on q and k) to the unit-normalised base and source states of every target layer, reads
  the instruction. From its last token's state ``z``:

  - *bidding*: for base position ``j`` and source position ``i`` the key is
    ``k(combine[h_base_j ; h_src_i])``, and a null key ``k(h_base_j)`` stands for "keep
    the base"; query and keys take rotary positions;
    ``w_ij = softmax_i(q . key_ij)`` over the sources and the null, scores averaged
    over heads; masked base positions (after the entity, padding) take the null with weight 1;
    ``mix_j = sum_i w_ij h_src_i + w_null,j h_base_j``;
  - *subspace*: ``R = (I - 2 r r^T) W``, ``W`` a learned orthonormal ``d x k`` basis and ``r``
    the normalised ``MLP(RMSNorm(z))``: a Householder reflection per instruction;
  - intervention ``h_j <- h_j + R R^T (mix_j - h_j)`` at every base position of the site
    ``("resid", l)``, a contextual layer.

  Loss: label cross-entropy weighted 3.5 (cause) / 0.5 (isolation) plus
  ``lambda(t) sum_i max(0, sum_j w_ij - 1)`` (no source token spent on more than one base
  position), ``lambda = linspace(0.15, 1.5)`` over training with its first half zeroed.
  AdamW for the hypernetwork (the official 4e-5 for a 4,096-wide model; scaled to width
  here), 1e-3 for the rotation. At inference: *soft* uses
  ``w``; ``bidding_argmax`` (one-to-one, null floored at 0.1) and ``column_argmax``
  one-hot; ``groundtruth`` the oracle entity-to-entity weights; ``noop`` all on the null.

Files:

* ``data.py`` -- the tiny world of cities, the RAVEL-style examples, prompts as padded
  batches with their entity columns, and the scores;
* ``target.py`` -- the tiny target model, its known facts, and reading and writing the
  residual stream through ``llm``'s ``("resid", l)`` sites;
* ``das.py`` -- DAS with pyvene, the baseline, at one site and over the (layer,
  position) grid;
* ``method.py`` -- HyperDAS: the ``ReflectSelect`` hypernetwork, its intervention, its
  training and its evaluation;
* ``runs.py`` -- the chapter's runs, cached, and DAS on SmolLM2;
* ``figures.py`` -- the figures and the live widget.
"""

from iclr25 import llm
from iclr25.chapters.hyperdas.das import (
    TOL,
    WINDOW,
    _module,
    converged,
    das_grid,
    das_layer,
    das_logits,
    das_model,
)
from iclr25.chapters.hyperdas.data import (
    CITY_NAMES,
    INSTRUCTION_WORDS,
    POSITIONS,
    SCORES,
    TEMPLATES,
    TEST_TEMPLATE,
    VALUES,
    Example,
    Side,
    World,
    check_attribute,
    columns,
    encode,
    label_id,
    make_examples,
    mismatched,
    pair,
    scores,
    side,
    tiny_world,
    tokens,
    vocabulary,
    weighted_ce,
    world_texts,
)
from iclr25.chapters.hyperdas.figures import (
    PAPER_DISENTANGLE,
    bidding_view,
    bids_figure,
    compare_figure,
    example_tokens,
    grid_figure,
    instruction_picker,
    null_figure,
)
from iclr25.chapters.hyperdas.method import (
    BIDDING_THRESHOLD,
    MODES,
    CrossAttention,
    HyperLayer,
    HyperOutput,
    ReflectSelect,
    answers,
    bidding_argmax,
    evaluate_hyperdas,
    hard,
    hyper_forward,
    hyper_net,
    initial_net,
    interchange,
    key_positions,
    optimiser,
    oracle,
    penalty_weight,
    rotate,
    select,
    sparsity_penalty,
    swap_logits,
    temperature,
    train_hyperdas,
    unit,
)
from iclr25.chapters.hyperdas.runs import (
    CODE,
    SMOL_ATTRIBUTES,
    SMOL_BATCH,
    SMOL_K,
    SMOL_STEPS,
    edit_layer,
    parse_layers,
    parse_site,
    run_das_grid,
    run_hyperdas,
    run_smol,
    smol_das,
    smol_world,
    split,
)
from iclr25.chapters.hyperdas.target import (
    check_layer,
    hidden,
    known,
    run_with,
    stacked,
    train_target,
)
from iclr25.core import ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------


PARAMETERS = {
    "n_cities": Param(160, "cities in the tiny world (single-token names)", low=8, high=160),
    "target_layers": Param(6, "layers of the tiny target", low=2, high=12),
    "target_steps": Param(1200, "training steps of the tiny target", low=20),
    "target_lr": Param(3e-3, "learning rate of the tiny target", low=1e-5, high=0.1),
    "k": Param(8, "subspace rank k (DAS and HyperDAS), at most d_model 64", low=1, high=64),
    "das_layers": Param(
        "0,1,2,4", "layers whose input stream DAS searches (comma-separated)", parser=parse_layers
    ),
    "das_steps": Param(
        200, "DAS's most steps per site (it stops once its training loss has converged)", low=1
    ),
    "das_lr": Param(1e-2, "DAS learning rate", low=1e-5, high=1.0),
    "n_train": Param(4000, "training examples (train cities, train templates)", low=16),
    "n_test": Param(480, "test examples (held-out cities and templates)", low=12),
    "hyper_layer": Param(
        "auto",
        "layer whose input stream HyperDAS edits: 'auto', the layer of das_layers (not the "
        "embeddings) whose entity-token DAS disentangles best on the training cities, or a "
        "layer number from 1",
        parser=parse_site,
    ),
    "hyper_layers": Param(2, "target layers copied into the hypernetwork", low=1, high=12),
    "hyper_steps": Param(2000, "HyperDAS training steps (the branch starts at half)", low=2),
    "hyper_lr": Param(
        2.5e-3,
        "hypernetwork learning rate: the official 4e-5 at width 4,096, scaled to width 64 "
        "(AdamW, clip 4)",
        low=1e-7,
    ),
    "rotate_lr": Param(1e-3, "learning rate of the rotation (official 1e-3)", low=1e-7),
    "hyper_seeds": Param(5, "HyperDAS training seeds, over which its claims are decided", low=2),
    "tau_start": Param(1.0, "bidding softmax temperature at the start (official: 1)", low=1e-3),
    "tau_end": Param(1.0, "bidding softmax temperature at the end (official: 1)", low=1e-3),
    "das_batch": Param(32, "DAS batch per site", low=2),
    "batch": Param(32, "HyperDAS batch size", low=2),
    "smol": Param(False, "run the SmolLM2 DAS experiment (off in the book: CPU budget)"),
    "smol_layers": Param(
        "4,12", "SmolLM2 layers for DAS (comma-separated, 0..29)", parser=parse_layers
    ),
    "smol_attribute": Param("capital", "SmolLM2 attribute for DAS", choices=SMOL_ATTRIBUTES),
    "seed": Param(0, "random seed", low=0),
    "device": Param("cpu", "compute device (CPU only: the book's budget)", choices=("cpu",)),
}


SMOKE = {
    "n_cities": 8,
    "target_layers": 3,
    "target_steps": 100,
    "das_layers": "0,2",
    "das_steps": 2,
    "n_train": 64,
    "n_test": 24,
    "hyper_steps": 20,
    "hyper_seeds": 2,
    "smol": False,
}

# ---------------------------------------------------------------------------------
# The claims
# ---------------------------------------------------------------------------------

TARGET = "the tiny target trained on the run's world (its seed), with DAS fitted once"
"""The one model the site's setup claims are about: their unit is the test example."""

CLAIMS: dict[str, ClaimSpec] = {
    # the best and the median (layer, position) of the grid, both ranked by DAS's cause
    # on the training cities: cause hit at the best minus at the median, paired over the
    # test cause examples
    "search-matters": ClaimSpec(
        "DAS works at few sites: at the best site, ranked on the training cities, DAS moves "
        "the answer in at least 50 more test cause examples in 100 than at the median site",
        kind="setup",
        paper="DAS accuracy varies strongly with the layer (layer vs accuracy plot)",
        rule=Margin(
            above=0.5,
            why="half the cause examples, the bound this claim had as a point; the paper's "
            "layer plot shows DAS varying strongly with the layer",
        ),
        control="DAS at the median site of the layer x position grid, ranked on the "
        "training cities, on the same test cause examples",
        one_model=TARGET,
    ),
    # at the edited site (the entity token of the layer chosen on training cities):
    # DAS's disentangle minus the no-op's, paired over the test examples
    "das-at-site": ClaimSpec(
        "At the site HyperDAS edits, DAS disentangles better than the no-op",
        kind="setup",
        paper="HyperDAS and MDAS are compared layer by layer on Llama3-8B; both work at "
        "the layers whose entity tokens carry the attribute",
        rule=Margin(
            above=0.05,
            why="a gain of 0.05 disentangle, 5 points of the 38 by which the paper's soft "
            "HyperDAS clears the no-op's 50",
        ),
        control="the no-op: the same test examples, nothing edited",
        one_model=TARGET,
        gap=Gap(
            "DAS at layer {site}'s entity token disentangles {estimate:.3f} [{low:.3f}, "
            "{high:.3f}] above the no-op over the {n} test examples, against a margin of "
            "0.05. This target's entity token carries the attribute at the embeddings and "
            "little above them: on the training cities, entity-token DAS disentangles "
            "{entity_fit} at layers {layers}, so the rule's best layer above the "
            "embeddings is one where the attribute has already left the entity token. "
            "What would show the claim: a target whose entity token keeps the attribute "
            "above the embeddings.",
            after_run=True,
            varies=True,
        ),
    ),
    # the full state of the base entity token replaced by the source entity token's, at
    # the edited layer: cause accuracy minus the no-op's (0), over the cause examples
    "swap-at-site": ClaimSpec(
        "At the site HyperDAS edits, swapping the whole entity state moves the answer to "
        "the source city's in most cause examples",
        kind="setup",
        paper="HyperDAS's groundtruth selection: the base entity takes the source entity",
        rule=Margin(above=0.5, why="most cause examples; the no-op moves none"),
        control="the no-op's cause accuracy on the same examples (0: a cause label is "
        "never the base's answer)",
        one_model=TARGET,
        gap=Gap(
            "The whole-state swap at layer {site}'s entity token moves the answer to the source"
            " city's value in {estimate:.2f} [{low:.2f}, {high:.2f}] of the {n} cause examples,"
            " against a margin of 0.5. The stream entering a layer above the embeddings has "
            "already been read by the tokens after the entity: the layers below let each later "
            "token attend to the entity, so the prompt's last token, from which the answer is "
            "read, keeps what it took from the base city at the layers below, whatever the "
            "entity token holds from then on. The site rule of the paper looks at the entity "
            "token alone, and so does the official suffix mask, which lets HyperDAS edit only "
            "the tokens up to the entity. What would show it: a target whose later tokens read "
            "the entity at the edited layer or above, as a deep model's do at its middle "
            "layers.",
            after_run=True,
        ),
    ),
    # per training seed: soft HyperDAS minus the no-op, disentangle; mean over seeds
    "beats-noop": ClaimSpec(
        "Soft HyperDAS disentangles better than the no-op intervention",
        kind="setup",
        paper="soft HyperDAS disentangle 88.4 on RAVEL, far above the 50 of an edit "
        "that changes nothing",
        rule=Margin(
            above=0.05,
            why="a gain of 0.05 disentangle, 5 points of the 38 by which the paper's "
            "soft HyperDAS clears the no-op's 50",
        ),
        control="the no-op: the same test examples with every weight on the null, "
        "paired by training seed",
        rests_on=("das-at-site", "swap-at-site"),
    ),
    # per training seed: bidding_argmax HyperDAS minus DAS at its best position of the
    # edited layer (chosen on training cities), disentangle; mean over seeds
    "hyperdas-matches": ClaimSpec(
        "HyperDAS (bidding_argmax) disentangles within 0.10 of DAS at the same layer",
        paper="RAVEL, Llama3-8B, soft HyperDAS over five domains: cause "
        "81.5, isolation 95.2, disentangle 88.4 (City 71.1 / 89.9); "
        "MDAS City-Country 80.8 / 66.5 / 73.7",
        rule=Margin(
            above=-0.10,
            why="the paper has HyperDAS above DAS; 0.10 disentangle is the tolerance a "
            "scaled-down replica is given",
        ),
        control="DAS at its best position of the edited layer, chosen by disentangle on "
        "the training cities, on the same test examples",
        rests_on=("search-matters", "beats-noop"),
    ),
    # per training seed: the share of test examples whose bidding_argmax at the base
    # entity picks the source entity, trained minus untrained; mean over seeds
    "hyperdas-locates": ClaimSpec(
        "Training teaches the bidding to locate: bidding_argmax at the base entity picks "
        "the source entity in at least 30 more test examples in 100 than before training",
        paper="the bidding concentrates on the entity's tokens (the paper's "
        "bidding heatmaps); a share is not reported",
        rule=Margin(
            above=0.30,
            why="a third of the examples newly located; the paper reports no share",
        ),
        control="the same hypernetwork at its initialisation (same seed): its share, "
        "from the structure of the states alone",
        rests_on=("beats-noop",),
    ),
    # per training seed: mean over examples of (argmax - noop) - 0.5 (soft - noop)
    "hard-vs-soft": ClaimSpec(
        "bidding_argmax keeps more than half of soft bidding's gain over the no-op (disentangle)",
        paper="inference soft and bidding-argmax; soft disentangle 88.4 "
        "on RAVEL, the argmax score not in the results we read",
        rule=Margin(
            above=0.0,
            why="half of soft's gain kept; a bidding that collapsed to the null keeps none",
        ),
        control="soft bidding of the same trained hypernetwork, both measured from the "
        "no-op, paired by training seed",
        rests_on=("beats-noop",),
    ),
    # per training seed, cause examples whose source prompt is about a third city e''
    # while the instruction names e': the share answering A(e'') minus the share
    # answering A(e'); mean over seeds
    "no-injection": ClaimSpec(
        "HyperDAS carries the source run's feature, not the instruction's: when the "
        "source prompt is about another city than the one the instruction names, the "
        "answer follows the source prompt",
        paper="the paper reviews the design decisions that keep HyperDAS from injecting "
        "information the target's source run does not carry",
        rule=Margin(above=0.0, why="the sign: which city the edit takes its value from"),
        control="the share answering the instruction's city's value, on the same examples "
        "(a network that read the answer from its instruction scores there)",
        rests_on=("beats-noop",),
    ),
    # source tokens with weight > 0.1: without the penalty minus with it, over seeds
    "sparsity": ClaimSpec(
        "Without the penalty more source tokens get weight above 0.1",
        paper="the penalty keeps the selection sparse; a count is not "
        "reported in the results we read",
        rule=Margin(
            above=0.1,
            why="a tenth of a token per example; a bidding that gave up counts 0 in both",
        ),
        control="the run with the penalty, from whose half-way state the branch without "
        "it starts, paired over training seeds",
        gap=Gap(
            "Without the penalty the hypernetworks give weight above 0.1 to {without:.2f} "
            "source tokens per test example, with it to {penalised:.2f}: {estimate:.2f} "
            "[{low:.2f}, {high:.2f}] over {n} seeds. The penalty, sum_i max(0, sum_j w_ij - "
            "1), caps how much of one source token is spent across the base positions; it "
            "never pushes a token's total below 0.1, and the count measures how many source "
            "tokens are used at all. Without it a network may spend one source token on "
            "several base positions, which uses fewer tokens, not more. What would show "
            "the paper's point: a measure of how many base positions one source token "
            "feeds, which is what the penalty acts on.",
            after_run=True,
        ),
    ),
}
"""Claim id -> what the claim says, what decides it, what it is measured against, the
setup claims it rests on and its declared gap."""
