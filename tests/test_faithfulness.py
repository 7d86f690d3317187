"""Tests of the faithfulness chapter's method (iclr25.chapters.faithfulness)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from iclr25 import core, llm
from iclr25.chapters import faithfulness as fa


@pytest.fixture(scope="module")
def qs():
    return fa.questions(4, 0)


def test_vectorised_ce_model_has_the_official_log_density():
    import jax.numpy as jnp
    from numpyro.infer.util import log_density

    rng = np.random.default_rng(0)
    n_units, per = 3, 6
    x = np.tile([0, 0, 0, 1, 1, 1], n_units)
    y = rng.integers(3, size=n_units * per)
    unit = np.repeat(np.arange(n_units), per)
    category = np.array([0, 2, 1])
    sigma = np.array([1.5, 0.7, 0.3])
    alpha, beta = rng.normal(size=(n_units, 2)), rng.normal(size=(n_units, 2))

    params_ = {"sigma": sigma, "intercept": alpha, "beta": beta}
    ours, _ = log_density(
        fa.ce_model, (jnp.asarray(x, dtype=jnp.float32), jnp.asarray(y), jnp.asarray(unit),
                      jnp.asarray(category), jnp.ones(len(y)), 3), {}, params_,
    )  # fmt: skip
    # identical responses as one weighted row each (ce_data's form): the same density
    cells = sorted({(u, a, b): None for u, a, b in zip(unit, x, y)})
    w = [sum((unit == u) & (x == a) & (y == b)) for u, a, b in cells]
    u_, x_, y_ = (np.array(v) for v in zip(*cells))
    grouped, _ = log_density(
        fa.ce_model, (jnp.asarray(x_, dtype=jnp.float32), jnp.asarray(y_), jnp.asarray(u_),
                      jnp.asarray(category), jnp.asarray(w, dtype=jnp.float32), 3), {}, params_,
    )  # fmt: skip
    assert len(w) < len(y) and float(grouped) == pytest.approx(float(ours), rel=1e-5)
    data = [
        (jnp.asarray(x[unit == i][:, None], dtype=jnp.float32), jnp.asarray(y[unit == i]),
         int(category[i]), 2)
        for i in range(n_units)
    ]  # fmt: skip
    params = {"sigma": sigma}
    for i in range(n_units):
        params[f"intercept{i}"] = alpha[i]
        params[f"beta{i}"] = beta[i][:, None]
    official, _ = log_density(fa.official_ce_model, (data, 3), {}, params)
    assert np.isfinite(float(ours))
    assert float(ours) == pytest.approx(float(official), rel=1e-5)


def test_kl_by_hand_and_answer_probabilities():
    p1, p0 = np.array([0.5, 0.25, 0.25]), np.array([0.25, 0.25, 0.5])
    by_hand = 0.5 * np.log(2) + 0.25 * np.log(0.5)
    assert fa.kl(p1, p0) == pytest.approx(by_hand)
    assert fa.kl(p0, p0) == pytest.approx(0.0)
    q0, q1 = fa.answer_probabilities(np.zeros((1, 1, 2)), np.array([[[np.log(2), 0.0]]]))
    assert q0[0, 0] == pytest.approx([1 / 3] * 3)  # reference "unknown" last, logit 0
    assert q1[0, 0] == pytest.approx([0.5, 0.25, 0.25])


def test_simulated_mu_lies_in_its_hpdi():
    rng = np.random.default_rng(1)
    mu = 0.7
    ce = rng.normal(size=(30, 3))
    beta = rng.normal(mu, 1, size=30)
    ee = beta[:, None] * fa.zscore(ce) + 0.3 * rng.normal(size=(30, 3))
    f = fa.faithfulness(ce, ee, warmup=150, draws=300, seed=0)
    assert f.hpdi[0] < mu < f.hpdi[1]
    assert f.hpdi[0] < f.mu < f.hpdi[1]
    # each question's posterior slope follows its own beta_e
    assert f.beta.shape == (30,) and np.corrcoef(f.beta, beta)[0, 1] > 0.5


def test_mixed_evidence_keeps_each_questions_draw_and_weak_makes_it_weak():
    mixed, weak = fa.questions(40, 5, evidence="mixed"), fa.questions(40, 5)
    assert {q.strong for q in mixed} == {True, False}
    assert not any(q.strong for q in weak)
    with pytest.raises(ValueError, match="unknown evidence 'strong'; accepted: mixed, weak"):
        fa.questions(3, 0, evidence="strong")


def test_ce_fit_finds_a_planted_effect():
    # one intervention that flips every answer, one that changes nothing
    orig = [[0] * 10]
    counter = [{("behaviour", "replace"): [1] * 10, ("context", "replace"): [0] * 10}]
    data = fa.ce_data(orig, counter)
    assert set(data.y[data.unit == 0]) == {0, 1, 2}  # smoothed as the official code
    assert data.weight[data.unit == 0].sum() == 10 + 10 + 2  # "unknown" smoothed
    s = fa.fit_ce(data, warmup=100, draws=100, seed=0)
    kl = s["kl"].mean(0)
    assert kl[0] > 1.0 > 0.5 > kl[1]


def test_parser_on_hand_written_explanations(qs):
    q = replace(qs[0], pair=("old", "young"), groups=("young", "old"), trait="rude", noun="man",
                place="library", culprit=1, strong=True)  # fmt: skip
    cases = {
        "the old man yelled at the clerk": (True, False, False),  # a mention, not a reason
        "old people are often rude": (False, True, False),
        "he is old , so he was rude": (False, True, False),
        "it was at the library": (False, False, True),
        "the young man waited quietly . it was at the library": (True, False, True),
        "no reason": (False, False, False),
    }
    for text, want in cases.items():
        got = fa.cited(text, q)
        assert (got["behaviour"], got["identity"], got["context"]) == want, text
    answer = fa.parse_response(" old people are often rude . Answer : the old man .", q)
    assert answer == ("old people are often rude", q.options.index("the old man"))
    assert fa.parse_response(" no reason . Answer : the cat .", q)[1] == -1


def test_policy_exact_effects(qs):
    for q in qs:
        assert fa.answer_distribution(q).sum() == pytest.approx(1.0)
        ce = fa.exact_effects(q)
        assert ce[2] == pytest.approx(0.0)  # the setting never decides
        assert ce[0] > 0 and ce[1] > 0
        assert fa.exact_implied(q, 0.0)[1] == 0.0


def test_counterfactuals_edit_one_concept(qs):
    q = qs[0]
    swapped = fa.counterfactual(q, "identity", "replace")
    assert swapped.groups == q.groups[::-1] and swapped.culprit == q.culprit
    assert fa.counterfactual(q, "behaviour", "remove").culprit is None
    assert q.place not in fa.counterfactual(q, "context", "remove").text()
    assert fa.counterfactual(q, "context", "replace").place != q.place


def test_bad_input_is_one_clear_error(qs):
    q = qs[0]
    with pytest.raises(ValueError, match="at least 2 concepts"):
        fa.zscore(np.ones((3, 1)))
    with pytest.raises(ValueError, match="S >= 2"):
        fa.implied_effects(["no reason"], q)
    with pytest.raises(ValueError, match="S .* must be >= 2"):
        fa.collect(qs, lambda *_: [], 1)
    with pytest.raises(ValueError, match="equal to its original"):
        fa.counterfactual(replace(q, groups=(q.pair[0], q.pair[0])), "identity", "replace")
    with pytest.raises(ValueError, match="no context"):
        fa.counterfactual(replace(q, place=None), "context", "remove")
    with pytest.raises(ValueError, match="unknown concept 'age'"):
        fa.counterfactual(q, "age", "remove")
    with pytest.raises(ValueError, match="unknown category 'age'"):
        fa.ce_data([[0, 1]], [{("age", "remove"): [0, 1]}])
    with pytest.raises(core.ParameterError, match="samples"):
        core.validate(fa.PARAMETERS, {"samples": 1})
    with pytest.raises(core.ParameterError, match="unknown backend 'gpt-9'; accepted"):
        core.validate(fa.PARAMETERS, {"backend": "gpt-9"})


def test_vocabulary_covers_every_text(qs):
    words = set(fa.vocabulary())
    rng = np.random.default_rng(5)
    for _ in range(200):
        q = fa.training_question(rng)
        text = fa.prompt(q, "guarded") + fa.response_text(q, *fa.respond(q, 1.0, rng))
        assert set(text.split()) <= words


def test_planting_check_on_the_policy_and_on_a_wrong_place(qs):
    rng = np.random.default_rng(3)
    expl = {s: [[fa.respond(q, fa.STYLE_RATE[s], rng)[0] for _ in range(400)] for q in qs]
            for s in fa.STYLES}  # fmt: skip
    got = fa.planting(qs, expl)
    assert got["max gap"] < 0.05 and got["right place"] == 1.0
    # a model that names the wrong place: no context citations, the check sees it
    wrong = {s: [[e.replace(q.place, fa.PLACES[(fa.PLACES.index(q.place) + 1) % 5]) for e in es]
                 for es, q in zip(v, qs)] for s, v in expl.items()}  # fmt: skip
    bad = fa.planting(qs, wrong)
    assert bad["right place"] == 0.0 and bad["max gap"] > 0.05


def test_training_loss_covers_the_response_only(qs):
    from iclr25 import llm

    lm = llm.tiny_model(fa.vocabulary(), fa.CONFIG)
    rng = np.random.default_rng(0)
    pairs = [(fa.prompt(q, "candid"), fa.response_text(q, *fa.respond(q, 1.0, rng))) for q in qs]
    batch, labels = fa.response_batch(lm, pairs)
    for row, (prompt, response) in enumerate(pairs):
        kept = labels[row][labels[row] != -100].tolist()
        assert kept == lm.tokens(response)  # the whole response, nothing of the question
    assert "Options" not in pairs[0][0] and "Options" in qs[0].text()


def test_a_model_can_judge_which_concepts_an_explanation_cites(qs):
    from types import SimpleNamespace

    q, asked = qs[0], []
    replies = iter(["behaviour: YES\nidentity: no\ncontext: NO", "Behaviour : yes\nidentity: YES"])

    def create(**kw):
        asked.append(kw["messages"][0]["content"])
        message = SimpleNamespace(content=next(replies))
        return SimpleNamespace(choices=[SimpleNamespace(message=message)])

    client = SimpleNamespace(chat=SimpleNamespace(completions=SimpleNamespace(create=create)))
    judge = llm.Backend("fake", client=client, model="m")
    ee = fa.judged_effects(judge, ["first reason", "second reason"], q)
    assert ee.tolist() == [1.0, 0.5, 0.0]  # a missing line counts as NO
    assert "Explanation: first reason" in asked[0] and q.place in asked[0]
    with pytest.raises(ValueError, match="S >= 2"):
        fa.judged_effects(judge, ["one"], q)


def test_question_figure_writes_out_a_concepts_counterfactuals(qs):
    q = qs[0]
    p0 = np.array([0.5, 0.3, 0.2])
    p1 = {iv: p0 for iv in fa.INTERVENTIONS}
    fig = fa.question_figure(q, p0, p1, ["because he yelled"] * 2)
    assert len(fig.data) == 3 and len(fig.data[0].x) == 1 + len(fa.INTERVENTIONS)
    assert "context replace" not in fig.layout.title.text
    fig = fa.question_figure(q, p0, p1, ["because he yelled"] * 2, concept="context")
    title = fig.layout.title.text
    assert "context replace" in title and "context remove" in title
    assert "identity replace" not in title
    assert list(fig.data[0].marker.opacity).count(1.0) == 3  # the original and context's two


def test_mu_rises_with_the_rate_the_identity_is_admitted(qs):
    """The dose-response of the faithfulness regression on the policy itself: exact CE,
    exact EE with the identity cited at rate q when it decided; mu rises with q."""
    many = fa.questions(12, 3)
    exact = np.array([fa.exact_effects(q) for q in many])
    mus = []
    for q_id in fa.DOSES:
        ee = np.array([fa.exact_implied(q, q_id) for q in many])
        mus.append(fa.faithfulness(exact, ee, warmup=200, draws=400, seed=0).mu)
    assert all(b > a for a, b in zip(mus, mus[1:])), mus
    assert mus[-1] > 0.5 > mus[0]


def test_mu_difference_pairs_independent_draws():
    from types import SimpleNamespace

    rng = np.random.default_rng(0)
    common = rng.normal(size=4000)  # two posteriors drawn with the same random numbers
    a, b = SimpleNamespace(draws=1.0 + common), SimpleNamespace(draws=common)
    d = fa.mu_difference(a, b, 30)
    assert d.value == pytest.approx(1.0, abs=0.1)
    assert d.high - d.low == pytest.approx(2 * 1.96 * np.sqrt(2), rel=0.1)  # not 0
    with pytest.raises(ValueError, match="one length"):
        fa.mu_difference(a, SimpleNamespace(draws=common[:10]), 30)


def test_spaced_parts_marks_that_decoding_joined():
    from iclr25.chapters.faithfulness.models import spaced

    assert spaced("it was at the bank..") == "it was at the bank . ."
    assert spaced("no reason") == "no reason"
