"""AI2TALE: weakly supervised phishing-sentence localisation (Nguyen et al., ICLR 2025).

An email is a sequence of sentences x_1..x_S. An encoder maps each sentence to a
vector e_i (embedding, dropout, Conv1D with ReLU, max-pool over the tokens). A selector
(an MLP ending in a sigmoid) gives every sentence a probability p_i of being the one
that makes the email phishing. In training the selection is relaxed as in the official
``SampleConcrete`` layer, with p_i and 1 - p_i used as logits:

    z_i = e^((g_a + p_i) / tau) / (e^((g_a + p_i) / tau) + e^((g_b + 1 - p_i) / tau)),

g_a, g_b standard Gumbel noise, tau = 0.5; at inference the k sentences with the
largest p_i are kept (hard top-k). The predictor reads sum_i z_i e_i (dense 250, ReLU,
softmax over two labels). Every batch takes two steps (official ``ai2tale.py``):

1. selector frozen; encoder and predictor on a relaxed random mask: r_i ~ Bern(0.5),
   then a relaxed Bernoulli sample with logit r_i and temperature 0.5 in place of z;
2. everything, on the loss CE + lambda * mean_batch [ sum_i p_i (mean_d e_id)^2 /
   (2 sigma^2) + S (log sigma + sigma^2 / 2) ], the second term the information
   bottleneck's prior (S sentence slots).

The metrics follow the official ``ai2tale_measures.py``: Label-Accuracy (with F1, FPR,
FNR) of the prediction made from the selected sentences alone, and the
Cognitive-True-Positive (CTP): over phishing test emails, the share of selected non-empty
sentences that hold a keyword of one of seven cognitive categories after lower-casing,
stop-word removal and Snowball stemming. The official keyword file
(``phishingdata/kwords_stem.json``) ships only in the authors' download, not in the
repository, so the lists here are our own, written from the paper's seven categories.
Stop words are scikit-learn's list (nltk's needs a download); the stemmer is nltk's
Snowball. Cue-Hit, which real data cannot give, is the share of phishing emails whose
selection holds a planted cue.

The data are generated (:func:`make_corpus`): emails of 4-15 sentences from
slot-filled templates, phishing ones carrying 1-2 cue sentences, benign ones decoys that
use cue words legitimately; some cues avoid the keyword list, 5% of the training labels
are flipped, and every template belongs to the training or to the test split, not both.
Cues ask the reader for something (act, reply, pay, send details, follow a link) or
threaten the reader; decoys and the everyday sentences state facts about events and
other people and ask the reader for nothing, so that one sentence read alone can tell a
cue from a decoy, as one sentence of a real benign email reads benign. The test
templates reword the training ones with training words only: the predictor meets no word
whose embedding it never trained (:func:`one_sentence_separability` checks the first
property with a bag-of-words reader, the tests both). The official training, kept here,
trains the predictor on relaxed masks over all sentences and tests it on the one sentence
selected; the corpus lets that sentence carry the label.
Baselines: L2X (a concrete top-k selector, no random-mask step, no prior), attention
pooling (select by weight), random selection, and a bag-of-words logistic regression on
whole emails (scikit-learn) as the accuracy reference.

Files: ``measures.py`` holds the keyword lists and the measures (CTP, Cue-Hit, the label
metrics); ``corpus.py`` the generated corpus and its encoding as token tensors;
``method.py`` the model, its training and evaluation, and the baselines; ``figures.py``
the figure builders. This file holds the chapter's parameters and its claims.
"""

from __future__ import annotations

from iclr25.chapters.ai2tale.corpus import (
    CUES,
    DECOYS,
    FILLERS,
    GREETINGS,
    OFF_LIST,
    SIGNOFFS,
    UNK,
    build_vocab,
    encode,
    make_corpus,
    one_sentence_separability,
    split_text,
    template_sentences,
    template_split,
    text_email,
)
from iclr25.chapters.ai2tale.figures import METRIC_NAMES, email_figure, metrics_figure
from iclr25.chapters.ai2tale.measures import (
    CATEGORIES,
    cognitive_true_positive,
    cue_hit,
    is_cognitive,
    kendall_tau,
    keyword_counts,
    label_metrics,
    words,
)
from iclr25.chapters.ai2tale.method import (
    METHODS,
    Localiser,
    Recipe,
    bag_of_words_accuracy,
    check_settings,
    evaluate,
    gumbel,
    prior_term,
    relaxed_random_mask,
    sample_concrete,
    topk_mask,
    train_cached,
    train_step,
)
from iclr25.core import Bound, ClaimSpec, Gap, Param

# ---------------------------------------------------------------------------------
# Parameters
# ---------------------------------------------------------------------------------

PARAMETERS = {
    "n_emails": Param(3000, "generated emails (70% train, 30% test)", low=40, high=200000),
    "max_sentences": Param(12, "sentences kept per email (paper: 100)", low=4, high=100),
    "max_tokens": Param(16, "tokens kept per sentence (paper: 50)", low=4, high=50),
    "embedding": Param(32, "word-embedding width (paper: 150)", low=4, high=512),
    "filters": Param(64, "Conv1D filters (paper: 250)", low=4, high=512),
    "epochs": Param(10, "training epochs (paper: 10)", low=1, high=200),
    "batch_size": Param(128, "minibatch size (paper: 128)", low=8, high=4096),
    "lr": Param(1e-3, "Adam learning rate (paper: 1e-3, clipnorm 1)", low=1e-5, high=0.1),
    "tau": Param(0.5, "temperature of the relaxed selection (paper: 0.5)", low=1e-3, high=10.0),
    "k": Param(1, "sentences selected per email (paper: 1)", low=1, high=100),
    "sigma": Param(0.3, "prior's sigma (paper: 0.3)", low=1e-3, high=10.0),
    "lam": Param(0.1, "prior's weight lambda at the paper's settings (0.1)", low=0.0, high=10.0),
    "lam_ablation": Param(
        1e-3, "lambda of the step-(1) ablation (the sweep's smallest > 0)", low=0.0, high=10.0
    ),
    "label_noise": Param(0.05, "share of flipped training labels", low=0.0, high=0.4),
    "seeds": Param(1, "training seeds per model (full run: 3)", low=1, high=10),
    "seed": Param(0, "seed of the corpus and of the first training run", low=0),
    "device": Param(
        "auto",
        "compute device (the models are small: trained on the CPU)",
        choices=("auto", "cpu", "cuda"),
    ),  # fmt: skip
}
SMOKE = {"n_emails": 200, "epochs": 1}

LAMBDAS = (0.0, 1e-3, 1e-2, 1e-1)
"""The sweep of the prior's weight (the sensitivity section)."""

# ---------------------------------------------------------------------------------
# Claims: bounds fixed by the issue, gaps declared before the book-mode run
# ---------------------------------------------------------------------------------

CLAIMS: dict[str, ClaimSpec] = {
    # Gaps written before the first book run of the redesigned corpus (third book run in
    # all). The first two runs used the earlier corpus, whose test templates brought
    # words never seen in training (see make_corpus); beats_baselines and
    # random_mask_step missed there.
    # Kendall tau-b between the CTP and the Cue-Hit of AI2TALE, L2X, attention, random
    "ctp_tracks_truth": ClaimSpec(
        "CTP and Cue-Hit rank AI2TALE, L2X, attention and random alike (Kendall tau >= 0.6)",
        kind="setup",
        paper="no ground truth in the paper's datasets: CTP is its proxy",
        rule=Bound(ge=0.6),
        control="Cue-Hit's ranking of the same four methods (the planted cues)",
    ),
    # AI2TALE's mean of Label-Accuracy and CTP minus each baseline's (L2X, attention,
    # random), at sigma 0.3, lambda 0.1: at least one point (0.01) above every one
    "beats_baselines": ClaimSpec(
        "At the paper's settings, AI2TALE's mean of Label-Accuracy and CTP is at "
        "least 1 point above every baseline's",
        paper="1.5 to 3.5 points above the baselines on average in "
        "Label-Accuracy and CTP, seven email datasets (abstract)",
        rule=Bound(ge=0.01),
        control="L2X, attention pooling and random selection (same encoder and predictor)",
        rests_on=("ctp_tracks_truth",),
        gap=Gap(
            "On this corpus one sentence decides the label, by design: the test templates use "
            "only training words, and a bag-of-words reader of single sentences trained on the "
            "training templates tells held-out cues from decoys and from everyday sentences "
            "(one_sentence_separability, a unit test run before any model was trained). Every "
            "selector that learns to find a cue then feeds its predictor the sentence that "
            "decides the label, and all of them reach the same ceiling, as L2X and attention did "
            "in a pilot on an easy corpus (Label-Accuracy 1.0). What is left between "
            "them is which of two cues they keep where an email has two (CTP), a matter of "
            "test-set noise rather than a systematic point. The paper's margins come from real "
            "emails of up to 100 sentences, where cues are graded, several sentences carry part "
            "of the evidence and the kept sentence changes what the label can be read from. What "
            "would show it: the paper's seven datasets, or a generated corpus whose cues are "
            "only weakly separable one sentence at a time."
        ),
    ),
    # Cue-Hit of the best lambda > 0 of the sweep minus that of lambda = 0
    "prior_helps": ClaimSpec(
        "The best lambda > 0 beats lambda = 0 in Cue-Hit by at least 2 points",
        paper="the prior term is part of the method (official default lambda "
        "0.1, sigma 0.3); the paper's ablation tables were not retrieved",
        rule=Bound(ge=0.02),
        control="AI2TALE at lambda = 0 (no prior term)",
        gap=Gap(
            "With k = 1 and a hard top-1 at inference, only the order of the p_i decides the "
            "selection, and the prior is a pressure towards small p where features are large: "
            "the sparsity it buys is what the top-1 already enforces. Of the sweep's lambdas > 0, "
            "a pilot saw the selector collapse at 0.01 and 0.1 (Cue-Hit 0), leaving "
            "1e-3, whose pressure is a thousandth of the CE's scale; the pilot's lambda <= 1e-3 "
            "models reached the corpus's ceiling, as did lambda = 0. A 2-point gain needs the "
            "prior to change which sentence ranks first in more than 2% of phishing emails. "
            "On the redesigned corpus, where one sentence decides the label (see "
            "beats_baselines), lambda = 0 already finds the cue wherever a selector can, which "
            "leaves no room for the gain. "
            "What would show it: the paper's emails of up to 100 sentences, where many candidate "
            "sentences compete and a pressure towards few informative ones can reorder them, "
            "with lambda and sigma tuned per dataset."
        ),
    ),
    # Label-Accuracy with step (1) minus without it, at lam_ablation
    "random_mask_step": ClaimSpec(
        "Dropping step (1), the random-mask training, costs at least 1 point of Label-Accuracy",
        paper="step (1) is part of the official training loop; the paper's "
        "ablation tables were not retrieved",
        rule=Bound(ge=0.01),
        control="AI2TALE trained without step (1), at lam_ablation",
        gap=Gap(
            "Step (1) trains the encoder and predictor on relaxed random masks that keep about "
            "half of the sentences. Step (2)'s masks are nearly as random: the official "
            "SampleConcrete uses p and 1 - p themselves as logits, at temperature 0.5, so a "
            "sentence's z exceeds 0.5 with probability sigmoid(2p - 1), between 0.27 and 0.73 "
            "whatever p is. Without step (1) the predictor still learns from near-random "
            "subsets; and on a corpus where one sentence decides the label (see "
            "beats_baselines), both variants find the cue and read it, so they reach the same "
            "ceiling. What would show it: emails long enough that the predictor, trained on "
            "step (2)'s subsets alone, meets sentence mixtures it cannot yet read when the "
            "selector starts to commit (the paper's 100-sentence emails), or a sharper "
            "relaxation (logits log p) under which step (2)'s masks follow the selector."
        ),
    ),
}
"""Claim id -> what the claim says, what decides it (the issue's bounds), what it is
measured against, and the gaps declared before the book-mode run."""
