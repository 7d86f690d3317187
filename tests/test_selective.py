"""iclr25.chapters.selective: AURC, E-AURC and AUROC against hand computations, the
scores, label smoothing, the matched-input suppression and the official recipe."""

import itertools

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from iclr25 import vision
from iclr25.chapters import selective
from iclr25.core import Margin
from iclr25.core.claims import check_registry


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "cache"))


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


def test_e_aurc_is_zero_for_a_perfect_ranking_at_any_accuracy():
    for n_wrong in (0, 1, 5, 9):
        correct = np.arange(10) >= n_wrong
        assert selective.e_aurc(correct.astype(float), correct) == pytest.approx(0.0, abs=1e-12)
    # the hand example of test_aurc_matches_a_hand_computation: one error among four,
    # ranked third; the oracle ranks it last (risk 0, 0, 0, 0, 1/4: area 1/32)
    scores, correct = [0.9, 0.8, 0.7, 0.6], [True, True, False, True]
    assert selective.oracle_aurc(0.25, 4) == pytest.approx(1 / 32)
    assert selective.e_aurc(scores, correct) == pytest.approx(11 / 96 - 1 / 32)


def test_e_aurc_separates_ranking_from_accuracy():
    # a random score: AURC about the error rate, E-AURC about error rate minus oracle;
    # two perfect rankings at different accuracies differ in AURC, not in E-AURC
    rng = np.random.default_rng(3)
    few, many = np.arange(1000) >= 50, np.arange(1000) >= 300
    assert selective.aurc(few.astype(float), few) < selective.aurc(many.astype(float), many)
    assert selective.e_aurc(few.astype(float), few) == pytest.approx(0.0, abs=1e-12)
    assert selective.e_aurc(many.astype(float), many) == pytest.approx(0.0, abs=1e-12)
    assert selective.e_aurc(rng.random(1000), many) > 0.1


def test_auroc_matches_a_hand_computation_and_counts_ties_half():
    # correct scored 0.9, 0.5; wrong scored 0.7, 0.1: pairs (c > w): 0.9>0.7, 0.9>0.1,
    # 0.5>0.1 -> 3 of 4
    scores, correct = [0.9, 0.7, 0.5, 0.1], [True, False, True, False]
    assert selective.auroc(scores, correct) == pytest.approx(3 / 4)
    assert selective.auroc([1.0, 1.0], [True, False]) == pytest.approx(0.5)
    assert selective.auroc(np.array(correct, float), correct) == pytest.approx(1.0)
    assert np.isnan(selective.auroc([0.3, 0.4], [True, True]))
    with pytest.raises(ValueError, match="two 1-d arrays of one length"):
        selective.auroc([0.1, 0.2], [True])


def test_normalised_max_logit_is_invariant_to_positive_scaling():
    logits = torch.randn(50, 7)
    for p in selective.P_GRID:
        for centre in (True, False):
            base = selective.normalised_max_logit(logits, p, centre)
            for scale in (1e-3, 0.5, 3.0, 1e4):
                scaled = selective.normalised_max_logit(scale * logits, p, centre)
                assert torch.allclose(scaled, base)
    # the softmax confidence is not: scaling logits changes the MSP
    assert not torch.allclose(selective.msp(3 * logits), selective.msp(logits))


def test_centred_normalisation_ignores_a_shift_of_the_logits():
    logits = torch.randn(40, 5, dtype=torch.double)
    shift = 10 * torch.randn(40, 1, dtype=torch.double)  # one constant per example
    for p in (1, 2, 5):
        base = selective.normalised_max_logit(logits, p)
        assert torch.allclose(selective.normalised_max_logit(logits + shift, p), base)
        # the uncentred score is not shift-invariant...
        raw = selective.normalised_max_logit(logits + shift, p, centre=False)
        assert not torch.allclose(raw, selective.normalised_max_logit(logits, p, centre=False))
        # ...and for logits that already have zero mean the two agree
        zero_mean = logits - logits.mean(-1, keepdim=True)
        assert torch.allclose(
            selective.normalised_max_logit(zero_mean, p, centre=False),
            selective.normalised_max_logit(zero_mean, p),
        )
    # by hand: z = (3, 1, 2) -> u = (1, -1, 0), ||u||_2 = sqrt(2), ||u||_1 = 2
    z = torch.tensor([[3.0, 1.0, 2.0]])
    assert float(selective.normalised_max_logit(z, 2)) == pytest.approx(1 / np.sqrt(2))
    assert float(selective.normalised_max_logit(z, 1)) == pytest.approx(0.5)
    assert torch.allclose(selective.centred(z), torch.tensor([[1.0, -1.0, 0.0]]).double())
    # all logits equal: no direction, the lowest score (0), not NaN
    assert float(selective.normalised_max_logit(torch.full((1, 4), 2.5), 3)) == 0.0


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


def test_registry_claims_each_official_alpha_on_converged_models():
    check_registry("selective", selective.CLAIMS)
    assert selective.ALPHAS == (0.2, 0.4)
    for prefix in ("ls_worse_aurc", "ls_worse_eaurc", "ls_worse_auroc"):
        for alpha in selective.ALPHAS:
            spec = selective.CLAIMS[f"{prefix}_{alpha:g}"]
            assert f"alpha = {alpha:g}" in spec.statement and "ALPHA" not in spec.statement
    setup = [cid for cid, spec in selective.CLAIMS.items() if spec.kind == "setup"]
    assert setup == ["converged", "converged_cnn"]
    paper = {cid: spec for cid, spec in selective.CLAIMS.items() if spec.kind == "paper"}
    assert paper.pop("ls_worse_aurc_cnn").rests_on == ("converged_cnn",)
    assert f"alpha = {selective.CNN_ALPHA:g}" in selective.CLAIMS["ls_worse_aurc_cnn"].statement
    paper = list(paper.values())
    assert all(spec.rests_on == ("converged",) for spec in paper)
    assert all(isinstance(spec.rule, Margin) for spec in paper)
    assert all(len(spec.gap.diagnosis) > 100 for spec in paper if spec.gap is not None)


def test_loss_change_reads_the_last_window_of_epochs():
    losses = [2.0, 1.0, 0.5, 0.45, 0.46]
    assert selective.loss_change(losses, 2) == pytest.approx(0.04)
    assert selective.loss_change(losses, 1) == pytest.approx(0.01)
    assert selective.loss_change(losses, 10) == pytest.approx(1.54)  # from the first epoch
    with pytest.raises(ValueError, match="two or more epochs"):
        selective.loss_change([1.0], 1)


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
    fig = selective.curves_figure(pairs, points=101)
    assert [t.name for t in fig.data] == ["CE", "LS", "LS, normalised"] * 2
    assert [t.showlegend for t in fig.data] == [True] * 3 + [False] * 3
    assert len(fig.data[0].x) == 101 and fig.data[0].x[-1] == 1.0  # ends at full coverage
    ls = pairs["digits, cnn"][1]
    assert fig.data[5].y[-1] == pytest.approx(100 * ls.curve_norm.risk[-1])
    assert fig.data[5].xaxis == "x2" and fig.data[0].line.color == selective.COLORS["CE"]
    assert [a.text for a in fig.layout.annotations] == list(pairs)


def test_evaluation_reports_ranking_metrics_beside_aurc():
    result = evaluation(4)
    assert result.eaurc_msp == pytest.approx(
        result.aurc_msp - selective.oracle_aurc(1 - result.accuracy, len(result.correct))
    )
    assert result.auroc_msp == pytest.approx(selective.auroc(result.msp, result.correct))
    assert result.eaurc_norm <= result.aurc_norm and 0 <= result.auroc_norm <= 1
    summary = result.summary()
    assert summary["eaurc_norm"] == result.eaurc_norm and summary["p"] == result.p
    assert set(summary) >= {"accuracy", "aurc_msp", "eaurc_msp", "auroc_msp", "auroc_norm"}


def test_suppression_compares_the_same_inputs_binned_by_ce_confidence():
    from dataclasses import replace

    base = evaluation(5, n=10)
    confidence = np.linspace(0.2, 0.95, 10)
    ce_margin = np.arange(1.0, 11.0)
    # LS keeps the max logit of the five least confident inputs, halves the others
    factor = np.r_[np.ones(5), np.full(5, 0.5)]
    order = np.random.default_rng(0).permutation(10)  # the inputs in any order
    ce = replace(
        base, msp=confidence[order], margin=ce_margin[order], correct=(confidence > 0.5)[order]
    )
    ls = replace(base, msp=np.full(10, 0.5), margin=(ce_margin * factor)[order])
    curve = selective.suppression_by_confidence(ce, ls, bins=2)
    np.testing.assert_allclose(curve.ratio, [1.0, 0.5])
    np.testing.assert_allclose(curve.confidence, [confidence[:5].mean(), confidence[5:].mean()])
    np.testing.assert_allclose(curve.ce_accuracy, [0.2, 1.0])
    with pytest.raises(ValueError, match="two evaluations of one test set"):
        selective.suppression_by_confidence(ce, evaluation(6, n=20), bins=2)


def test_cross_fitted_drops_cancel_regression_to_the_mean():
    """Retrained CE models that differ by noise only: binned by each model's own MSP, a
    second one shows a drop (regression to the mean); binned by the other runs, the
    drop of LS doing nothing equals the control's on average, and a real suppression of
    the confident inputs shows above it."""
    from dataclasses import replace

    rng = np.random.default_rng(0)
    n, runs = 4000, 6
    truth = rng.uniform(0, 1, n)  # how likely each input is to be right

    def model(suppress):  # the MSP grows with the model's own (noisy) max logit
        margin = 2 + 3 * truth + rng.normal(0, 1, n)
        return replace(
            evaluation(7, n=n),
            msp=1 / (1 + np.exp(3.5 - margin)),
            margin=margin * (1 - suppress * truth),
            correct=rng.uniform(0, 1, n) < truth,
        )

    ce = [model(0.0) for _ in range(runs)]
    own = selective.suppression_by_confidence(ce[0], ce[1], bins=5)
    assert own.ratio[0] - own.ratio[-1] > 0.05  # a retrained CE "suppresses": the bias
    reference = [np.mean([m.msp for m in ce[:i] + ce[i + 1 :]], axis=0) for i in range(runs)]
    control = [model(0.0) for _ in range(runs)]
    noop, drop = selective.cross_fitted_drops(
        ce, [model(0.0) for _ in range(runs)], control, reference
    )
    assert abs(np.mean(noop - drop)) < 0.03
    ls, drop = selective.cross_fitted_drops(
        ce, [model(0.3) for _ in range(runs)], control, reference
    )
    assert np.mean(ls - drop) > 0.1 and (ls > drop).all()
    with pytest.raises(ValueError, match="at least 2 runs"):
        selective.cross_fitted_drops(ce[:2], ce[:2], control[:1], reference[:2])


def test_recipe_steps_at_a_third_and_two_thirds_like_the_official_configs():
    assert selective.Recipe(epochs=75).steps() == [25, 50]  # the official CIFAR milestones
    assert selective.Recipe(epochs=18).steps() == [6, 12]
    assert selective.Recipe(epochs=1).steps() == []
    config = selective.Recipe(epochs=9, seed=2).config(0.1)
    assert (config.optimizer, config.lr, config.weight_decay, config.batch_size) == (
        "sgd",
        0.1,
        5e-4,
        128,
    )
    assert (config.milestones, config.label_smoothing, config.seed) == ((3, 6), 0.1, 2)


def test_train_is_deterministic_cached_and_shares_the_initialisation(tmp_path, monkeypatch):
    data = vision.load("shapes", 0, 60)
    model = vision.ModelConfig.for_data("mlp", data, width=8)
    recipe = selective.Recipe(epochs=6, batch_size=12, seed=3)
    net, losses = vision.train(data, model, recipe.config(0.0), progress=False)
    assert len(losses) == 6 and losses[-1] < losses[0]
    assert not net.training
    monkeypatch.setenv("ICLR25_CACHE", str(tmp_path / "fresh"))  # retrain from scratch
    again, losses_again = vision.train(data, model, recipe.config(0.0), progress=False)
    assert losses_again == pytest.approx(losses)
    for a, b in zip(net.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)
    # a negligible rate leaves the initialisation: the same for CE and LS of one seed
    still = selective.Recipe(epochs=1, lr=1e-9, seed=3)
    ce, _ = vision.train(data, model, still.config(0.0), progress=False)
    ls, _ = vision.train(data, model, still.config(0.3), progress=False)
    for a, b in zip(ce.state_dict().values(), ls.state_dict().values()):
        assert torch.allclose(a, b, atol=1e-6)


def test_alpha_figure_draws_both_scores_with_error_bars_per_setting():
    series = {
        "shapes, mlp": {
            "MSP": ([0.02, 0.03], [0.001, 0.002]),
            "normalised": ([0.02, 0.02], [0, 0]),
        },
        "digits, cnn": {"MSP": ([0.05, 0.06], [0.0, 0.01]), "normalised": ([0.05, 0.04], [0, 0])},
    }
    fig = selective.alpha_figure([0.0, 0.3], series, "E-AURC")
    assert [t.name for t in fig.data] == ["MSP", "normalised"] * 2
    assert [t.showlegend for t in fig.data] == [True, True, False, False]
    assert list(fig.data[0].x) == [0.0, 0.3]
    assert list(fig.data[0].y) == pytest.approx([2.0, 3.0])
    assert list(fig.data[0].error_y.array) == pytest.approx([0.1, 0.2])
    assert fig.data[3].xaxis == "x2" and list(fig.data[3].y) == pytest.approx([5.0, 4.0])
    assert [a.text for a in fig.layout.annotations] == list(series)
    assert fig.layout.yaxis.title.text == "E-AURC (%)"


def test_suppression_figure_draws_one_line_per_setting_against_ce_confidence():
    curve = selective.Suppression(np.array([0.3, 0.9]), np.array([0.4, 0.95]), np.array([0.8, 0.4]))
    fig = selective.suppression_figure({"a": (curve, [0.05, 0.02]), "b": (curve, [0, 0])})
    assert [t.name for t in fig.data] == ["a", "b"]
    assert list(fig.data[0].x) == pytest.approx([0.3, 0.9])
    assert list(fig.data[0].y) == pytest.approx([0.8, 0.4])
    assert list(fig.data[0].error_y.array) == pytest.approx([0.05, 0.02])
    assert list(fig.data[0].customdata) == pytest.approx([40.0, 95.0])  # CE accuracy (%)
    assert fig.layout.shapes[0].y0 == 1
