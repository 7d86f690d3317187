"""FiNE: fine-grained neuron-level knowledge editing.

Pan, Wang, Cao, Shi, Yang, Li & Wang, "Precise Localization of Memories: A Fine-grained
Neuron-level Knowledge Editing Technique for LLMs" (ICLR 2025). Locate-then-edit methods
such as ROME pick a whole MLP layer by causal tracing and rewrite it for the subject;
the edit then follows the *subject* everywhere, and other relations of the same subject
come out with the new object too (poor locality). FiNE instead edits a handful of
feed-forward neurons chosen for the fact being recalled:

* **Locate.** The prompt is followed by the new object (teacher forcing). For each of
  the object's tokens, at the position that predicts it, neuron ``i`` of layer ``l``
  contributes ``c_{l,i} = a_{l,i} * (W_down[l][i,:] . W_U[:,t])`` to the logit of the
  token ``t`` the unedited model predicts there: ``a_{l,i}`` is the neuron's activation
  and ``W_down[l][i,:]`` its value vector. The top-``k`` neurons by ``c`` over all layers
  but the last few are edited, ``k`` per token of the object.
* **Edit.** Each chosen neuron's value vector gets a learned update ``delta``
  (the layer's output becomes ``... + a_{l,i} delta``), minimising the largest
  ``-log P(token | prompt, earlier tokens)`` over the object's tokens ``+ alpha KL``
  (the unedited model's next-token distributions along the prompt prefix against the
  edited ones) ``+ beta`` times the largest ``-log(1 - P(t | prompt + object))`` over the
  object's tokens ``t`` (so the new object is not repeated) ``+ gamma ||delta||`` (the L2
  norm of all updates, not squared), with Adam, stopping early once the least probable
  token of the object reaches a threshold. The updates are then written into the rows
  of ``W_down`` (a neuron chosen for two tokens gets both updates, which add).

The paper's settings for Llama-2 are 5 neurons, the last 3 layers frozen, 50 epochs,
learning rate 5e-3, alpha 1, beta 10, gamma 0.1 and early stop at 0.9. These details
follow the authors' code (``easyeditor/models/fine`` in their repository, a fork of
EasyEdit), read and re-implemented here: it pins transformers 4 and fetches data at run
time. Facts, metrics, ROME, FiNE itself and the editor live in :mod:`iclr25.editing`
(``editing/fine_method.py``: each neuron's activation and contribution to a token's
logit, the neurons located per token of the new object, the random neurons of the
authors' control, FiNE's loss and the edit), because the SADR chapter's editor runs
FiNE too.

Files: ``method.py`` holds the paper's comparison with ROME beyond the two editors: the
edits timed in alternation and reused, the scores paired by edit for the bootstrap, the
unedited model's efficacy, the neuron counts of the sweep, ROME rewritten with ``C``
from fewer tokens, and ROME made again with its departures from ROME's code undone.
``figures.py`` draws causal tracing, the two methods side by side, the layers of FiNE's
neurons, the sweeps and the departures' effects. This file holds the
chapter's parameters and its claims.
"""

from __future__ import annotations

from iclr25.chapters.fine.figures import (
    METHOD_COLOURS,
    c_sweep_figure,
    comparison_figure,
    departures_figure,
    edits_figure,
    neuron_layers_figure,
    sweep_figure,
    tracing_figure,
)
from iclr25.chapters.fine.method import (
    DEPARTURES,
    c_sweep,
    paired,
    reusing,
    rome_departures,
    sweep_ks,
    timed_edits,
    unedited_efficacy,
)
from iclr25.core import SMOLLM2, Bound, ClaimSpec, Gap, Margin, Param

# ---------------------------------------------------------------------------------
# The chapter's parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_edits": Param(30, "facts edited by each method (the paper: thousands)", low=1, high=200),
    "n_neighbours": Param(3, "neighbourhood and distract prompts per edit", low=1, high=10),
    "k": Param(5, "FiNE: neurons edited per target token", low=1, high=200),
    "epochs": Param(50, "FiNE: most optimisation steps", low=1, high=1000),
    "lr": Param(0.005, "FiNE: Adam learning rate (the paper's, for Llama-2)", low=1e-5, high=1.0),
    "frozen_last": Param(3, "FiNE: last layers never edited", low=0, high=20),
    "rome_steps": Param(20, "ROME: most optimisation steps for v*", low=1, high=200),
    "n_trace": Param(4, "facts causal tracing averages over to pick ROME's layer", low=1, high=100),
    "c_texts": Param(
        512,
        "ROME: texts of 128 tokens the model samples for C (512: 58,000 tokens)",
        low=1,
        high=10_000,
    ),
    "n_timed": Param(
        3, "edits per method timed afresh, in alternation (all are kept)", low=1, high=200
    ),
    "n_random": Param(
        30, "edits also made on random neurons of FiNE's layers (the control)", low=1, high=200
    ),
    "n_departures": Param(
        0,
        "edits ROME makes again with its v* optimised as ROME's code does "
        "(0: the report on ROME's departures from its code is off)",
        low=0,
        high=200,
    ),
    "n_sweep": Param(5, "edits the neuron-count sweep repeats", low=1, high=100),
    "k_max": Param(
        10, "largest neuron count of the sweep (1, 2, 5, 10, 20, 50, ...)", low=1, high=1000
    ),
    "gen_tokens": Param(10, "generated tokens per prompt for fluency", low=4, high=200),
    "seed": Param(0, "random seed (edits drawn, noise of causal tracing)", low=0),
    "device": Param("auto", "torch device", choices=("auto", "cpu", "cuda")),
}

SMOKE = {
    "n_edits": 2,
    "n_neighbours": 1,
    "epochs": 5,
    "rome_steps": 3,
    "n_trace": 1,
    "c_texts": 8,
    "n_timed": 1,
    "n_random": 1,
    "n_departures": 1,
    "n_sweep": 1,
    "k_max": 2,
    "gen_tokens": 6,
}
"""Overrides that run the whole chapter in seconds (the notebook test)."""

#: The token counts at which ROME's C is also kept (2,000 is about the sample the
#: chapter used before), and those the sample-size figure rewrites ROME's edits with.
C_SIZES = (2_000, 5_000, 15_000)
C_SWEPT = (2_000, 15_000)

# ---------------------------------------------------------------------------------
# The chapter's claims: the numbers that decide them, fixed before the run
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # Setup: the 95% bootstrap interval over the edits of ROME's efficacy (the share of
    # the new object's tokens it predicts on the rewrite prompt) above 0.8. FiNE's is
    # at least its early-stop probability by construction (printed as a fact).
    "edits-made": ClaimSpec(
        "Both editors make the edit: ROME's efficacy over the edits is above 0.8 (95% interval)",
        kind="setup",
        rule=Margin(
            above=0.8,
            why="most of the new object written on the rewrite prompt; over 30 edits "
            "its lower end asks about as much of the mean as a point bound of 0.9",
        ),
        control="the unedited model's efficacy on the same new objects",
        gap=Gap(
            "The interval's lower end does not clear the margin: ROME's efficacy is "
            "{estimate:.3f} [{low:.3g}, {high:.3g}] over {n} edits (the unedited model's "
            "{unedited:.2f}), against a margin of 0.8. Per-edit efficacy is a share of "
            "one to three tokens, so the bootstrap moves in coarse steps; more edits "
            "would decide the regime",
            after_run=True,
        ),
        one_model=SMOLLM2,
    ),
    # The 95% paired bootstrap interval over the edits of FiNE's paraphrase accuracy
    # minus ROME's above -0.1 (non-inferiority).
    "generalisation-comparable": ClaimSpec(
        "FiNE's edits carry over to paraphrases about as well as ROME's: FiNE - ROME "
        "above -0.1 (95% interval)",
        paper="comparable generalisation to ROME and MEMIT",
        rule=Margin(
            above=-0.1,
            why="'comparable': at most a tenth of the paraphrase tokens behind ROME",
        ),
        control="ROME's generalisation on the same edits, paired by edit",
        rests_on=("edits-made",),
        one_model=SMOLLM2,
    ),
    # Each locality score on its own: the 95% paired bootstrap interval over the edits
    # of FiNE's score minus ROME's.
    "neighbourhood-better": ClaimSpec(
        "FiNE leaves other subjects of the edited relation unchanged more often than "
        "ROME (95% interval above 0)",
        paper="higher locality than ROME and MEMIT on every KnowEdit dataset",
        rule=Margin(
            above=0,
            why="FiNE ahead at all: the claim is the sign of the difference, not its size",
        ),
        control="ROME's edits of the same facts, paired by edit",
        rests_on=("edits-made",),
        gap=Gap(
            "expected miss (mechanism): FiNE's neurons are chosen for the answer token "
            "at the last position and most sit in late layers, where a value vector "
            "can write that answer for other subjects of the same relation; ROME's "
            "update is keyed on the subject's representation. The paper's models are "
            "50 times larger, with proportionally fewer neurons per edit"
        ),
        one_model=SMOLLM2,
    ),
    "relation-better": ClaimSpec(
        "FiNE keeps the subject's other relations better than ROME (95% interval above 0)",
        paper="FiNE's Figure 1: ROME and MEMIT 'perform poorly in locality "
        "testing when changing the relation' (over-editing and unchanging "
        "rates; its numbers not retrieved here)",
        rule=Margin(
            above=0,
            why="FiNE ahead at all: the claim is the sign of the difference, not its size",
        ),
        control="ROME's edits of the same facts, paired by edit",
        rests_on=("edits-made",),
        one_model=SMOLLM2,
    ),
    "distract-better": ClaimSpec(
        "FiNE keeps neighbours' answers after the edited sentence better than ROME "
        "(95% interval above 0)",
        paper="higher locality than ROME and MEMIT on every KnowEdit dataset",
        rule=Margin(
            above=0,
            why="FiNE ahead at all: the claim is the sign of the difference, not its size",
        ),
        control="ROME's edits of the same facts, paired by edit",
        rests_on=("edits-made",),
        gap=Gap(
            "expected miss (mechanism): a distract prompt is the edited sentence followed "
            "by a neighbour's prompt of the same relation, so the late-layer neurons "
            "that can write the new answer for other subjects meet it here too"
        ),
        one_model=SMOLLM2,
    ),
    # The authors' random-neuron ablation: the 95% paired bootstrap interval over the
    # edits of FiNE's efficacy minus that of the same update on as many random neurons
    # in the same layers.
    "located-beats-random": ClaimSpec(
        "FiNE's located neurons make the edit more often than as many random neurons "
        "in the same layers, trained the same way (95% interval above 0)",
        paper="precise localisation is what makes the edit: the authors' ablation "
        "with randomly selected neurons (their code's 'random' setting; its numbers "
        "not retrieved here)",
        rule=Margin(
            above=0,
            why="located neurons ahead at all: the claim is the sign of the difference",
        ),
        control="FiNE's update on random neurons of the same layers, paired by edit",
        rests_on=("edits-made",),
        one_model=SMOLLM2,
    ),
    # FiNE's median wall and CPU time per edit over ROME's, the two timed in alternation.
    "faster": ClaimSpec(
        "FiNE edits faster than ROME",
        paper="FiNE's editing time is below ROME's and MEMIT's",
        rule={"wall": Bound(lt=1), "CPU": Bound(lt=1)},
        control="ROME's time per edit, timed in alternation with FiNE's",
        rests_on=("edits-made",),
    ),
}
"""Claim id -> what the claim says, what decides it and what it is measured against,
and the gaps expected at this scale."""
