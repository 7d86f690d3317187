"""Unit tests of the debias chapter's method: the causal model with a selection node,
the corpus, the prompts, the metrics and the figures."""

import numpy as np
import pytest

from iclr25 import core
from iclr25.chapters import debias


@pytest.mark.parametrize("beta", [0.0, 0.5, 0.8])
def test_anti_share_under_selection_by_exact_inference(beta):
    assert debias.anti_share(beta) == pytest.approx((1 - beta) / (2 - beta), abs=1e-9)


def test_anti_share_under_selection_by_rejection_sampling():
    beta = 0.8
    rows = debias.sample_corpus(beta, 6000, seed=1)
    news = [r for r in rows if r["Src"] == "news"]
    share = np.mean([r["Anti"] == "yes" for r in news])
    se = np.sqrt(share * (1 - share) / len(news))
    assert abs(share - (1 - beta) / (2 - beta)) < 4 * se
    assert np.mean([r["Src"] == "news" for r in rows]) == pytest.approx(0.85, abs=0.02)


def test_each_source_is_selected_at_its_strength():
    beta, rows = 0.8, debias.sample_corpus(0.8, 12000, seed=2)
    for source, strength in (("placebo", 1.0), ("counterfactual", 0.5)):
        kept = [r["Anti"] == "yes" for r in rows if r["Src"] == source]
        expected = (1 - strength * beta) / (2 - strength * beta)
        assert abs(np.mean(kept) - expected) < 4 * np.sqrt(0.25 / len(kept)), source
    singles = [np.mean([r["Src"] == s for r in rows]) for s in debias.SOURCES[1:5]]
    assert np.allclose(singles, 0.13 / 4, atol=0.01)


def test_cue_sources_have_selection_independent_of_gender():
    rows = debias.sample_corpus(0.8, 6000, seed=2)
    for source in ("fact", "neutral", "fact+counterfactual"):
        kept = [r for r in rows if r["Src"] == source]
        anti = np.mean([r["Anti"] == "yes" for r in kept])
        assert abs(anti - 0.5) < 4 * np.sqrt(0.25 / len(kept)), source
        for g in debias.PRONOUNS:  # the referent does not depend on the gender
            refers = [r["R"] == "yes" for r in kept if r["G"] == g]
            assert abs(np.mean(refers) - 0.5) < 4 * np.sqrt(0.25 / len(refers))


def test_anti_node_is_the_case_definition():
    net = debias.causal_model(0.8)
    cpd = net.get_cpds("Anti")
    for r in ("no", "yes"):
        for st, (occ, _) in enumerate(debias.STEREOTYPED):
            for g in debias.PRONOUNS:
                case = debias.make_case(st, "farmer", debias.AMBIGUOUS[0], g, True, r == "yes")
                value = cpd.get_value(Anti="yes", R=r, St=occ, G=g)
                assert value == (0.0 if case.pro else 1.0)


def test_rendered_documents_follow_the_row_and_keep_the_test_out_of_cues():
    rng = np.random.default_rng(0)
    rows = debias.sample_corpus(0.5, 600, seed=3)
    held = {(f.reason, o) for f in debias.TESTED for o in debias.held_out(f)}
    test_reasons = {f.reason for f in debias.TESTED}
    for row in rows:
        doc = debias.render(row, rng)
        assert f" {row['G']} " in doc and row["St"] in doc
        assert not any(r in doc and f" {o} " in doc for r, o in held)
        if row["Src"] != "news":
            assert not any(f" {r} " in doc for r in test_reasons)
        answer = doc.split("who : ")[1].split(" ")[0]
        assert (answer == row["St"]) == (row["R"] == "yes")


def test_test_cases_are_balanced_and_unseen_pairs():
    cases = debias.test_cases()
    assert len(cases) == 384 and sum(c.pro for c in cases) == 192
    some = debias.test_cases(20)
    assert len(some) == 20 and sum(c.pro for c in some) == 10
    case = debias.make_case(0, "farmer", debias.FACTS[16], "she", True, False)
    assert case.answer == "farmer" and not case.pro  # she, but the farmer was late
    assert case.twin() == "the nurse scolded the farmer because he was late ."


def test_bias_cases_score_both_readings_of_unseen_ambiguous_pairs():
    cases = debias.bias_cases()
    assert len(cases) == 384 and sum(c.pro for c in cases) == 192
    for pro, anti in zip(cases[::2], cases[1::2]):
        assert pro.sentence() == anti.sentence() and pro.pro and not anti.pro
        assert pro.fact in debias.TESTED and pro.fact.role == "either"
        assert {pro.first, pro.second} - {pro.stereotyped} <= set(debias.held_out(pro.fact))
        # the pro reading is the one the pronoun's stereotyped gender points to
        she_nurse = pro.pronoun == dict(debias.STEREOTYPED)[pro.stereotyped]
        assert (pro.answer == pro.stereotyped) == she_nurse
    # a model that follows the stereotype: gap 1; one that ignores the pronoun: gap 0
    follow = [c.answer if c.pro else next(o for o in c.options if o != c.answer) for c in cases]
    assert debias.metrics(cases, follow)["gap"] == 1.0
    first = [c.first for c in cases]
    assert debias.metrics(cases, first)["gap"] == 0.0
    some = debias.bias_cases(20)
    assert len(some) == 20 and sum(c.pro for c in some) == 10


def test_gap_on_hand_made_predictions():
    nurse = [debias.make_case(0, "farmer", debias.FACTS[i], g, True, False)
             for i in (0, 16) for g in debias.PRONOUNS]  # fmt: skip
    # a model that always follows the stereotype: right on pro, wrong on anti
    stereo = [c.stereotyped if c.pronoun == "she" else "farmer" for c in nurse]
    m = debias.metrics(nurse, stereo)
    assert m == {"pro": 1.0, "anti": 0.0, "accuracy": 0.5, "gap": 1.0}
    m = debias.metrics(nurse, [c.answer for c in nurse])
    assert m["gap"] == 0.0 and m["accuracy"] == 1.0
    with pytest.raises(ValueError, match="both pro- and anti"):
        debias.metrics(nurse[:1], [nurse[0].answer])


def test_reduction_of_the_gap():
    per = {"default": {"gap": 0.4}, "I": {"gap": 0.1}, "II": {"gap": -0.1}}
    assert debias.reduction(per, "I") == pytest.approx(0.75)
    assert debias.reduction(per, "II") == pytest.approx(1.25)
    per["default"]["gap"] = 0.0  # nothing to cut: undefined, and NaN never holds a bound
    assert np.isnan(debias.reduction(per, "I"))


def test_prompts_of_each_strategy():
    case = debias.test_cases()[0]
    assert debias.tiny_prompt(case, "default") == case.sentence() + " who :"
    assert debias.tiny_prompt(case, "I").startswith("facts : ")
    assert debias.tiny_prompt(case, "I").endswith("fact :")
    assert debias.tiny_prompt(case, "II").startswith("twin : " + case.twin())
    assert debias.tiny_prompt(case, "I+III") == f"no gender : facts : {case.sentence()} fact :"
    assert debias.tiny_prompt(case, "I+II").startswith("facts : twin : ")
    assert debias.tiny_prompt(case, "placebo") == f"memo : {case.sentence()} who :"
    assert debias.document(case, "placebo").startswith(debias.tiny_prompt(case, "placebo"))
    for s in debias.STRATEGIES:
        assert case.sentence()[:-2].capitalize() in debias.smol_prompt(case, s)
    assert debias.INSTRUCTIONS["III"] in debias.smol_prompt(case, "I+III")
    with pytest.raises(ValueError, match="unknown strategy 'IV'"):
        debias.tiny_prompt(case, "IV")


def test_tiny_model_trains_and_scores_every_strategy(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path))
    lm = debias.train_planted(0.8, steps=4, corpus_size=100, seed=0, progress=False)
    cases = debias.test_cases(4)
    for s in debias.STRATEGIES:
        assert debias.score_tiny(lm, cases, s).shape == (4, 2)
    with pytest.raises(ValueError, match=r"does not know the word\(s\) \['doctor'\]"):
        debias.check_words(lm, "the doctor")


def test_bad_beta_is_one_clear_error():
    for beta in (-0.1, 1.0, 1.5):
        with pytest.raises(core.ParameterError, match=r"beta must be in \[0, 1\)"):
            debias.causal_model(beta)
    with pytest.raises(core.ParameterError, match="accepted"):
        core.validate(debias.PARAMETERS, {"beta": 1.0})


def test_figures():
    assert {n for n in debias.causal_graph().nodes} == set(debias.GRAPH_NODES)
    fig = debias.graph_figure()
    assert len(fig.layout.annotations) >= len(debias.GRAPH_EDGES)
    per = {s: {"pro": 0.9, "anti": 0.6, "gap": 0.3, "accuracy": 0.75} for s in debias.STRATEGIES}
    fig = debias.gap_figure({"tiny": per})
    assert [b.name for b in fig.data] == ["tiny", "GPT-4, WinoBias Type I (paper)"]
    assert fig.data[0].y[0] == pytest.approx(30)
    assert len(debias.accuracy_figure(per, "t").data) == 2
    case = debias.test_cases()[0]
    fig = debias.referent_figure({"m": debias.two_way(np.array([0.0, 0.0]))}, case, "I")
    assert fig.data[0].y[0] == pytest.approx(0.5)
    box = debias.inspector()
    assert box.value[1] == "default" and box.value[0].fact.role != "either"
    box.children[3].value = debias.AMBIGUOUS[0]  # the fact menu offers ambiguous facts
    case = box.value[0]
    assert case.fact == debias.AMBIGUOUS[0]
    fig = debias.referent_figure({"m": [0.5, 0.5]}, case, "default")
    assert "ambiguous: no referent is right" in fig.layout.title.text


def test_documents_hold_each_type_i_test_fact_in_a_few_news_documents():
    docs = debias.documents(0.8, 2000, seed=4)
    assert len(docs) == 2000
    for i in debias.TEST_FACTS:
        f = debias.FACTS[i]
        holding = [d for d in docs if f" {f.verb} " in d and f" {f.reason} " in d]
        assert len(holding) == debias.TEST_FACT_DOCS
        for d in holding:  # news, and the fact's role decides the answer
            assert d.split(" who : ")[0].count(" . ") == 0
            words = d.split()
            answer = words[words.index("who") + 2]
            assert answer == (words[1] if f.role == "first" else words[4])
    combined = [d for d in docs if d.startswith("facts : twin : ")]
    assert 0 < len(combined) < 0.05 * len(docs)


def test_sentence_gaps_average_to_the_gap():
    cases = debias.smol_cases(40, np.random.default_rng(5))
    rng = np.random.default_rng(6)
    picked = [c.options[rng.integers(2)] for c in cases]
    gaps = debias.sentence_gaps(cases, picked)
    assert len(gaps) == 20
    assert gaps.mean() == pytest.approx(debias.metrics(cases, picked)["gap"])
    with pytest.raises(ValueError, match="pairs"):
        debias.sentence_gaps(cases[1:], picked[1:])
