"""iclr25.chapters.ai2tale: the generated corpus and its ground truth, the relaxed
selection, top-k over padding, the prior term and CTP against hand computations."""

import math

import numpy as np
import pytest
import torch

from iclr25.chapters import ai2tale
from iclr25.core import ParameterError


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "cache"))


@pytest.fixture(scope="module")
def corpus():
    return ai2tale.make_corpus(600, seed=3, max_sentences=40, shares=(0.125, 0.375))


def test_ground_truth_points_at_the_planted_cues_and_the_label_needs_a_pair(corpus):
    for email in corpus["train"] + corpus["validation"] + corpus["test"]:
        kinds = [t[0] for t in email.templates]
        assert kinds[0] == "greeting" and kinds[-1] == "signoff"
        assert list(email.cue) == [k == "cue" for k in kinds]
        assert 30 <= len(email.sentences) <= 40
        assert not any(email.cue[40:])
        found = {fam: 0 for fam in ai2tale.FAMILIES}
        for text, (kind, family, j), strength in zip(
            email.sentences, email.templates, email.strength
        ):
            if kind != "cue":
                assert strength == 0
                continue
            found[family] = strength
            template = ai2tale.CUES[family][strength - 1][j]
            fixed = [w for w in ai2tale.words(template) if w.isalpha()]
            assert set(fixed) - {"name", "org", "sum", "date", "link"} <= set(ai2tale.words(text))
        assert sum(email.cue) == sum(v > 0 for v in found.values())  # different sentences
        assert ai2tale.is_phishing(found["authority"], found["request"]) == email.true_label


def test_every_cue_occurs_in_benign_mail(corpus):
    benign = [e for e in corpus["train"] if e.true_label == 0]
    alone = {fam: set() for fam in ai2tale.FAMILIES}
    for e in benign:
        families = [t[1] for t in e.templates if t[0] == "cue"]
        if len(families) == 1:
            alone[families[0]] |= {s for s in e.strength if s}
    assert alone == {fam: {1, 2, 3} for fam in ai2tale.FAMILIES}
    assert all(not ai2tale.is_phishing(a, r) for a, r in ai2tale.BENIGN_PAIRS)
    assert all(ai2tale.is_phishing(a, r) for a, r in ai2tale.PHISHING_PAIRS)


def test_labels_noisy_outside_the_test_split_only(corpus):
    train = corpus["train"] + corpus["validation"]
    flipped = np.mean([e.label != e.true_label for e in train])
    assert 0.01 < flipped < 0.1
    assert all(e.label == e.true_label for e in corpus["test"])


def test_template_splits_are_disjoint(corpus):
    used = {split: {t for e in emails for t in e.templates} for split, emails in corpus.items()}
    assert not used["train"] & used["test"] and not used["validation"] & used["test"]
    # both splits use cues of both kinds: with keywords and off the keyword list
    for split in used:
        indices = {j for k, _, j in used[split] if k == "cue"}
        assert indices & set(ai2tale.OFF_LIST) and indices - set(ai2tale.OFF_LIST)


def test_off_list_cues_hold_no_keyword_and_the_others_do():
    slots = dict(name="alice", org="globex", sum="120 dollars", date="monday",
                 link="globex-docs.com/view")  # fmt: skip
    for family in ai2tale.FAMILIES:
        for templates in ai2tale.CUES[family]:
            for j, t in enumerate(templates):
                assert ai2tale.is_cognitive(t.format(**slots)) == (j not in ai2tale.OFF_LIST), t
    assert all(ai2tale.is_cognitive(t.format(**slots)) for t in ai2tale.DECOYS)


SLOTS = {"name", "org", "sum", "date", "link"}


def _templates():
    """(kind, index, template) of every template."""
    pools = {"greeting": ai2tale.GREETINGS, "signoff": ai2tale.SIGNOFFS,
             "filler": ai2tale.FILLERS, "decoy": ai2tale.DECOYS}  # fmt: skip
    out = [(k, j, t) for k, pool in pools.items() for j, t in enumerate(pool)]
    cues = [("cue", j, t) for fam in ai2tale.FAMILIES for level in ai2tale.CUES[fam]
            for j, t in enumerate(level)]  # fmt: skip
    return out + cues


def test_test_templates_use_training_words_only():
    # no test sentence holds a word whose embedding training never saw (slots are shared)
    train = set()
    for kind, j, t in _templates():
        if ai2tale.template_split(kind, j) == "train":
            train |= set(ai2tale.words(t)) - SLOTS
    for kind, j, t in _templates():
        if ai2tale.template_split(kind, j) == "test":
            assert set(ai2tale.words(t)) - SLOTS <= train, t
    corpus = ai2tale.make_corpus(300, seed=1, max_sentences=40)
    vocab = ai2tale.build_vocab(corpus["train"])
    data = ai2tale.encode(corpus["test"], vocab, 40, 16, verbose=False)
    assert not (data.tokens == ai2tale.UNK).any()


def test_one_sentence_does_not_decide_the_label(corpus):
    # a property of the data, decided before any model is trained
    readers = ai2tale.reader_accuracies(corpus, seed=0)
    assert readers["one"].shape == readers["two"].shape == (len(corpus["test"]),)
    assert readers["two"].mean() > readers["one"].mean() + 0.05, readers


def test_sample_concrete_matches_the_formula_and_stays_inside_0_1():
    p = torch.tensor([[0.1, 0.5, 0.9]])
    g_a, g_b = torch.tensor([[0.3, -1.0, 2.0]]), torch.tensor([[0.0, 0.5, -0.2]])
    tau = 0.5
    z = ai2tale.sample_concrete(p, tau, g_a, g_b)
    num = torch.exp((g_a + p) / tau)
    expected = num / (num + torch.exp((g_b + 1 - p) / tau))
    torch.testing.assert_close(z, expected)
    torch.manual_seed(0)
    p = torch.rand(200, 12)
    z = ai2tale.sample_concrete(p, tau, ai2tale.gumbel(p.shape), ai2tale.gumbel(p.shape))
    assert (z > 0).all() and (z < 1).all()
    # larger p, larger samples on average
    hi = ai2tale.sample_concrete(torch.full((4000,), 0.9), tau, ai2tale.gumbel((4000,)),
                                 ai2tale.gumbel((4000,)))  # fmt: skip
    lo = ai2tale.sample_concrete(torch.full((4000,), 0.1), tau, ai2tale.gumbel((4000,)),
                                 ai2tale.gumbel((4000,)))  # fmt: skip
    assert hi.mean() > lo.mean() + 0.2
    m = ai2tale.relaxed_random_mask((100, 12))
    assert (m > 0).all() and (m < 1).all()


def test_topk_skips_padding():
    scores = torch.tensor([[0.1, 0.9, 0.8, 0.95], [0.5, 0.2, 0.3, 0.1]])
    valid = torch.tensor([[True, False, True, False], [True, True, True, True]])
    mask = ai2tale.topk_mask(scores, 1, valid)
    assert mask.tolist() == [[False, False, True, False], [True, False, False, False]]
    mask = ai2tale.topk_mask(scores, 3, valid)  # fewer valid sentences than k: all of them
    assert mask.tolist() == [[True, False, True, False], [True, True, True, False]]


def test_prior_term_matches_a_hand_computation():
    p = torch.tensor([[0.5, 1.0]])
    e = torch.tensor([[[1.0, 3.0], [0.0, 4.0]]])  # means 2 and 2
    sigma = 0.5
    hand = (0.5 * 4 + 1.0 * 4) / (2 * 0.25) + 2 * (math.log(0.5) + 0.125)
    assert float(ai2tale.prior_term(p, e, sigma)[0]) == pytest.approx(hand)


def test_ctp_and_cue_hit_match_hand_computations():
    assert ai2tale.keyword_counts("Please VERIFY your accounts now")["security"] == 2
    # stop words never count, stems do: "limited" -> "limit"
    assert not ai2tale.is_cognitive("now again only")
    assert ai2tale.is_cognitive("a limited edition")
    selected = [
        ["your account is locked.", "see you soon."],  # phishing: 1 of 2
        ["the picnic photos are out.", "  "],  # phishing: 0 of 1 (blank skipped)
        ["urgent bank notice."],  # benign: ignored
    ]
    assert ai2tale.cognitive_true_positive(selected, [1, 1, 0]) == pytest.approx(1 / 3)
    masks = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 0]], bool)
    cues = np.array([[1, 0, 1], [1, 0, 0], [1, 0, 0]], bool)
    assert ai2tale.cue_hit(masks, cues, [1, 1, 0]) == pytest.approx(0.25)  # (1/2 + 0) / 2
    m = ai2tale.label_metrics([0, 0, 1, 1], [0, 1, 1, 0])
    assert m == {"accuracy": 0.5, "f1": 0.5, "fpr": 0.5, "fnr": 0.5}


def test_bad_input_gives_one_line_errors(capsys):
    for args in [(0, 0.5, 0.3, 12, "ai2tale"), (13, 0.5, 0.3, 12, "ai2tale"),
                 (1, 0.0, 0.3, 12, "ai2tale"), (1, 0.5, -1.0, 12, "ai2tale"),
                 (1, 0.5, 0.3, 12, "lime")]:  # fmt: skip
        with pytest.raises(ParameterError, match="accepted"):
            ai2tale.check_settings(*args)
    with pytest.raises(ParameterError, match="empty"):
        ai2tale.split_text("  \n ... ")
    with pytest.raises(ValueError, match="unknown method 'lime'; accepted: ai2tale"):
        ai2tale.Localiser("lime", 10, embedding=4, filters=4)
    email = ai2tale.text_email(". ".join(f"sentence number {i}" for i in range(20)) + ".")
    data = ai2tale.encode([email], {"<pad>": 0, "<unk>": 1}, 12, 16)
    assert "truncated 1 of 1 emails to 12 sentences" in capsys.readouterr().out
    assert data.valid.sum() == 12 and data.tokens.shape == (1, 12, 16)


def test_every_method_trains_selects_k_sentences_and_is_cached(corpus):
    vocab = ai2tale.build_vocab(corpus["train"])
    train = ai2tale.encode(corpus["train"][:120], vocab, 40, 16, verbose=False)
    val = ai2tale.encode(corpus["validation"][:40], vocab, 40, 16, verbose=False)
    test = ai2tale.encode(corpus["test"][:60], vocab, 40, 16, verbose=False)
    arch = dict(embedding=8, filters=8, k=2)
    recipe = ai2tale.Recipe(epochs=2, batch_size=64)
    models = {}
    for method in ai2tale.METHODS:
        model, curve, val_curve = ai2tale.train_cached(
            method, train, len(vocab), arch, recipe, {"n": 1}, val
        )
        result = ai2tale.evaluate(model, test)
        assert len(curve) == len(val_curve) == 2 and (result["mask"].sum(1) == 2).all()
        assert (result["mask"] <= test.valid.numpy()).all()
        assert 0 <= result["ctp"] <= 1 and 0 <= result["cue_hit"] <= 1
        assert result["correct"].mean() == pytest.approx(result["accuracy"])
        models[method] = model
    again, _, _ = ai2tale.train_cached("ai2tale", train, len(vocab), arch, recipe, {"n": 1}, val)
    with torch.no_grad():
        torch.testing.assert_close(again(test.tokens)[0], models["ai2tale"](test.tokens)[0])


def test_step_one_leaves_the_selector_untouched(corpus):
    vocab = ai2tale.build_vocab(corpus["train"])
    data = ai2tale.encode(corpus["train"][:64], vocab, 40, 16, verbose=False)
    torch.manual_seed(0)
    model = ai2tale.Localiser("ai2tale", len(vocab), embedding=8, filters=8)
    before = [q.clone() for q in model.selector.parameters()]
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    # the optimiser steps once only, after step (1)
    recipe = ai2tale.Recipe(lam=0.1)
    opt_step = opt.step
    calls = []

    def first_step_only():
        calls.append(1)
        if len(calls) == 1:
            opt_step()

    opt.step = first_step_only
    encoder_before = model.encoder.conv.weight.clone()
    ai2tale.train_step(model, opt, data.tokens, data.labels, recipe)
    assert len(calls) == 2
    for q, b in zip(model.selector.parameters(), before):
        torch.testing.assert_close(q, b)
    assert not torch.equal(model.encoder.conv.weight, encoder_before)


def test_figures_build():
    fig = ai2tale.metrics_figure(
        {"ai2tale": {"accuracy": 0.9, "ctp": 0.5, "cue_hit": 0.7}, "bow": {"accuracy": 0.95}},
        "metrics",
    )
    assert len(fig.data) == 3 and list(fig.data[1].x) == ["ai2tale"]
    fig = ai2tale.email_figure(["hi alice,", "verify your account now."], [0.2, 0.8],
                               [False, True], [False, True], "one email")  # fmt: skip
    assert fig.data[0].y[1].startswith("2. * verify") and fig.data[0].y[1].endswith("(k)")
    assert fig.data[0].marker.color[1] == "#d62728"


def test_single_cue_regime_has_one_strong_cue_per_phishing_email():
    corpus = ai2tale.make_corpus(120, 0, 40, noise=0.0, regime="single")
    for email in corpus["train"] + corpus["test"]:
        cues = [s for s in email.strength if s]
        assert cues == ([3] if email.true_label else [])
    with pytest.raises(ParameterError, match="accepted: pair, single"):
        ai2tale.make_corpus(10, 0, 40, regime="triple")
