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
    areas = {order: selective.aurc(np.array(order, float), correct)
             for order in itertools.permutations(range(6))}
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
        selective.aurc(selective.normalised_max_logit(logits, 2), correct))


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
        assert torch.allclose(targets[torch.arange(4), labels],
                              torch.full((4,), 1 - alpha + alpha / 4, dtype=torch.double))
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
        selective.aurc(selective.normalised_max_logit(test, result.p), correct))


def test_bounds_name_every_declared_gap():
    assert set(selective.KNOWN_GAPS) <= set(selective.BOUNDS)
