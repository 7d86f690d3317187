"""iclr25.chapters.selective: AURC against hand computations, the scores, and label smoothing."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr25.chapters import selective


def test_aurc_matches_a_hand_computation():
    # ranked: correct, correct, wrong, correct -> risk 0, 0, 1/3, 1/4 at coverage 1/4 .. 1
    scores = [0.9, 0.8, 0.7, 0.6]
    correct = [True, True, False, True]
    curve = selective.risk_coverage(scores, correct)
    np.testing.assert_allclose(curve.coverage, [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_allclose(curve.risk, [0, 0, 0, 1 / 3, 1 / 4])
    # trapezoids of width 1/4: (0 + 0 + 1/3 + (1/3 + 1/4)) / 2 / 4 = 11/96
    assert selective.aurc(scores, correct) == pytest.approx(11 / 96)
    # the order of the inputs does not matter, only the scores
    assert selective.aurc(scores[::-1], correct[::-1]) == pytest.approx(11 / 96)


def test_perfect_ranking_gives_the_minimum_over_all_rankings():
    correct = np.array([True, False, True, True, False, True])
    areas = {
        order: selective.aurc(np.array(order, float), correct)
        for order in itertools.permutations(range(6))
    }
    perfect = selective.aurc(correct.astype(float), correct)  # errors scored lowest
    assert perfect == pytest.approx(min(areas.values()))
    assert perfect == pytest.approx(selective.oracle_aurc(2 / 6, 6))
    worst = selective.aurc((~correct).astype(float), correct)
    assert worst == pytest.approx(max(areas.values())) and worst > perfect


def test_random_and_constant_rankings_give_the_error_rate():
    rng = np.random.default_rng(0)
    n, error_rate = 4000, 0.3
    correct = rng.random(n) > error_rate
    err = 1 - correct.mean()
    # a constant score ranks nothing: the risk is the error rate at every coverage,
    # and the trapezoid from r(0) = 0 takes off half a step
    assert selective.aurc(np.zeros(n), correct) == pytest.approx(err * (1 - 1 / (2 * n)))
    random_areas = [selective.aurc(rng.random(n), correct) for _ in range(20)]
    assert np.mean(random_areas) == pytest.approx(err, abs=0.01)


def test_ties_are_ranked_in_expectation():
    # one tie of a correct and a wrong prediction: risk at coverage 1/2 is 1/2 either way
    curve = selective.risk_coverage([1.0, 1.0], [True, False])
    np.testing.assert_allclose(curve.risk, [0, 0.5, 0.5])


def test_aurc_refuses_mismatched_inputs():
    with pytest.raises(ValueError, match="two 1-d arrays of one length"):
        selective.aurc([0.1, 0.2], [True])


def test_normalised_max_logit_is_invariant_to_positive_scaling():
    logits = torch.randn(50, 7)
    for p in selective.P_GRID:
        base = selective.normalised_max_logit(logits, p)
        for scale in (1e-3, 0.5, 3.0, 1e4):
            assert torch.allclose(selective.normalised_max_logit(scale * logits, p), base)
    # the softmax confidence is not: scaling logits changes the MSP
    assert not torch.allclose(selective.msp(3 * logits), selective.msp(logits))


def test_choose_p_picks_the_validation_minimum():
    torch.manual_seed(0)
    logits, labels = torch.randn(300, 5), torch.randint(0, 5, (300,))
    best, scores = selective.choose_p(logits, labels)
    assert set(scores) == set(selective.P_GRID)
    assert scores[best] == min(scores.values())
    correct = logits.argmax(-1) == labels
    assert scores[2] == pytest.approx(
        selective.aurc(selective.normalised_max_logit(logits, 2), correct)
    )


def test_msp_does_not_saturate_in_float32():
    logits = torch.tensor([[40.0, 0.0], [30.0, 0.0]])  # both round to 1.0 in float32
    assert float(logits.softmax(-1).amax(-1)[0]) == float(logits.softmax(-1).amax(-1)[1])
    confidence = selective.msp(logits)
    assert confidence[0] > confidence[1]


def test_ls_targets_sum_to_one_and_match_torch_label_smoothing():
    labels = torch.tensor([0, 3, 2, 3])
    for alpha in (0.0, 0.1, 0.4, 1.0):
        targets = selective.ls_targets(labels, 4, alpha)
        assert torch.allclose(targets.sum(-1), torch.ones(4, dtype=torch.double))
        assert torch.all(targets >= 0)
        assert torch.allclose(
            targets[torch.arange(4), labels],
            torch.full((4,), 1 - alpha + alpha / 4, dtype=torch.double),
        )
    logits = torch.randn(4, 4, dtype=torch.double)
    ours = -(selective.ls_targets(labels, 4, 0.2) * logits.log_softmax(-1)).sum(-1).mean()
    assert torch.allclose(ours, F.cross_entropy(logits, labels, label_smoothing=0.2))
    with pytest.raises(ValueError, match="alpha must be in"):
        selective.ls_targets(labels, 4, 1.5)


def test_ls_logit_gradient_is_the_autograd_gradient():
    logits = torch.randn(6, 5, dtype=torch.double, requires_grad=True)
    labels = torch.randint(0, 5, (6,))
    F.cross_entropy(logits, labels, label_smoothing=0.3, reduction="sum").backward()
    assert torch.allclose(selective.ls_logit_gradient(logits.detach(), labels, 0.3), logits.grad)


def test_max_logit_pull_grows_with_the_probability_of_being_right():
    pull = selective.max_logit_pull(np.array([0.1, 0.5, 0.9]), 0.2, 10)
    np.testing.assert_allclose(pull, 0.2 * (np.array([0.1, 0.5, 0.9]) - 0.1))
    assert np.all(np.diff(pull) > 0)


def test_evaluate_chooses_p_on_validation_and_scores_the_test_split():
    torch.manual_seed(1)
    val, test = torch.randn(200, 4), torch.randn(150, 4)
    yv, yt = torch.randint(0, 4, (200,)), torch.randint(0, 4, (150,))
    result = selective.evaluate(val, yv, test, yt)
    assert result.p == selective.choose_p(val, yv)[0]
    correct = (test.argmax(-1) == yt).numpy()
    assert result.accuracy == pytest.approx(correct.mean())
    assert result.aurc_msp == pytest.approx(selective.aurc(selective.msp(test), correct))
    assert result.aurc_norm == pytest.approx(
        selective.aurc(selective.normalised_max_logit(test, result.p), correct)
    )


def test_bounds_name_every_declared_gap():
    assert set(selective.KNOWN_GAPS) <= set(selective.BOUNDS)


def evaluation(seed: int, n: int = 1000) -> selective.Evaluation:
    torch.manual_seed(seed)
    return selective.evaluate(
        torch.randn(50, 3), torch.randint(0, 3, (50,)), torch.randn(n, 3), torch.randint(0, 3, (n,))
    )


def test_curves_figure_draws_three_thinned_curves_per_setting():
    pairs = {
        "shapes, mlp": (evaluation(0), evaluation(1)),
        "digits, cnn": (evaluation(2), evaluation(3)),
    }
    fig = selective.curves_figure(pairs, 0.3, points=101)
    assert [t.name for t in fig.data] == ["CE", "LS", "LS, normalised"] * 2
    assert [t.showlegend for t in fig.data] == [True] * 3 + [False] * 3
    assert len(fig.data[0].x) == 101 and fig.data[0].x[-1] == 1.0  # ends at full coverage
    ls = pairs["digits, cnn"][1]
    assert fig.data[5].y[-1] == pytest.approx(100 * ls.curve_norm.risk[-1])
    assert fig.data[5].xaxis == "x2" and fig.data[0].line.color == selective.COLORS["CE"]
    assert [a.text for a in fig.layout.annotations] == list(pairs)
    assert "alpha = 0.3" in fig.layout.title.text


def test_sensitivity_figure_bars_aurc_and_accuracy_by_setting():
    ce = {
        "a": {"accuracy": 0.9, "aurc_msp": 0.02, "aurc_norm": 0.025},
        "b": {"accuracy": 0.8, "aurc_msp": 0.05, "aurc_norm": 0.04},
    }
    ls = {
        "a": {"accuracy": 0.91, "aurc_msp": 0.03, "aurc_norm": 0.02},
        "b": {"accuracy": 0.79, "aurc_msp": 0.06, "aurc_norm": 0.045},
    }
    fig = selective.sensitivity_figure(ce, ls, 0.2, accuracy_floor=70)
    assert [t.name for t in fig.data] == ["CE", "LS 0.2", "LS 0.2, normalised", "CE", "LS 0.2"]
    assert list(fig.data[0].x) == ["a", "b"]
    assert list(fig.data[2].y) == pytest.approx([2.0, 4.5])
    assert list(fig.data[4].y) == pytest.approx([91.0, 79.0]) and fig.data[4].xaxis == "x2"
    assert tuple(fig.layout.yaxis2.range) == (70, 100) and fig.layout.barmode == "group"
