"""Unit tests of iclr25.chapters.enumerative: the DVV recursion, DRA, conformal coverage,
the model, the Virasoro residuals of predictions and the probes."""

from fractions import Fraction
from itertools import combinations_with_replacement
from math import factorial

import numpy as np
import pytest
import torch

from iclr25.chapters import enumerative as en
from iclr25.core.claims import check_registry

# --- exact numbers ------------------------------------------------------------------

# Witten (1991) and the standard tables: <tau_d1 ... tau_dn>_g
KNOWN = [
    (0, (0, 0, 0), Fraction(1)),
    (0, (1, 0, 0, 0), Fraction(1)),
    (0, (2, 0, 0, 0, 0), Fraction(1)),
    (0, (1, 1, 0, 0, 0), Fraction(2)),
    (0, (1, 1, 1, 0, 0, 0), Fraction(6)),
    (1, (1,), Fraction(1, 24)),
    (1, (1, 1), Fraction(1, 24)),
    (1, (2, 0), Fraction(1, 24)),
    (1, (1, 1, 1), Fraction(1, 12)),
    (1, (2, 1, 0), Fraction(1, 12)),
    (1, (3, 0, 0), Fraction(1, 24)),
    (2, (4,), Fraction(1, 1152)),
    (2, (3, 2), Fraction(29, 5760)),
    (2, (2, 2, 2), Fraction(7, 240)),
    (3, (7,), Fraction(1, 82944)),
    (3, (6, 2), Fraction(77, 414720)),
    (3, (5, 3), Fraction(503, 1451520)),
    (3, (4, 4), Fraction(607, 1451520)),
]


@pytest.mark.parametrize("g, ds, value", KNOWN)
def test_recursion_gives_the_known_values(g, ds, value):
    assert en.correlator(g, ds) == value
    assert en.correlator(g, ds[::-1]) == value  # symmetric in the points


def test_one_point_numbers_are_one_over_24_to_the_g_g_factorial():
    for g in range(1, 9):
        assert en.correlator(g, (3 * g - 2,)) == Fraction(1, 24**g * factorial(g))


def test_genus_zero_is_the_multinomial():
    # <tau_d1 ... tau_dn>_0 = (n - 3)! / prod d_i!
    for n in range(3, 8):
        for ds in en.partitions(n - 3, n):
            expected = Fraction(factorial(n - 3), int(np.prod([factorial(d) for d in ds])))
            assert en.correlator(0, ds) == expected


def _stable_cases(g_max=4, n_max=5):
    for g in range(g_max + 1):
        for n in range(1, n_max + 1):
            if en.is_stable(g, n):
                yield from ((g, ds) for ds in en.partitions(3 * g - 3 + n, n))


def test_every_virasoro_constraint_gives_the_same_number():
    # the recursion removes the smallest d_i; removing any other point must agree
    for g, ds in _stable_cases():
        if (g, ds) in {(0, (0, 0, 0)), (1, (1,))}:
            continue
        value = en.correlator(g, ds)
        for i in range(len(ds)):
            assert en.dvv(g, ds, i) == value, (g, ds, i)


def test_string_and_dilaton_equations():
    for g, ds in _stable_cases(g_max=4, n_max=5):
        n = len(ds)
        # string: <tau_0 tau_D>_g = sum_j <tau_D with d_j - 1>_g
        string = sum(
            (en.correlator(g, ds[:j] + (d - 1,) + ds[j + 1 :]) for j, d in enumerate(ds) if d > 0),
            Fraction(0),
        )
        assert en.correlator(g, (0,) + ds) == string
        # dilaton: <tau_1 tau_D>_g = (2g - 2 + n) <tau_D>_g
        assert en.correlator(g, (1,) + ds) == (2 * g - 2 + n) * en.correlator(g, ds)


def test_dimension_constraint_and_bad_input():
    assert en.correlator(2, (3, 3)) == 0  # sum d = 6 != 3g - 3 + n = 5
    assert en.correlator(0, (0, 0)) == 0  # unstable
    with pytest.raises(ValueError, match="g >= 0 and integers d_i >= 0"):
        en.correlator(-1, (0,))
    with pytest.raises(ValueError, match="g >= 0 and integers d_i >= 0"):
        en.correlator(1, (-1, 2))


def test_generate_counts_every_partition():
    rows = en.generate(3, 4)
    assert len(rows["g"]) == sum(1 for _ in _stable_cases(3, 4))
    assert all(Fraction(e) > 0 for e in rows["exact"])
    np.testing.assert_allclose(
        np.exp(rows["log_value"]), [float(Fraction(e)) for e in rows["exact"]], rtol=1e-12
    )
    combos = set(combinations_with_replacement(range(6), 3))
    assert {tuple(sorted(d)) for g, d in zip(rows["g"], rows["d"]) if g == 1 and len(d) == 3} == {
        c for c in combos if sum(c) == 3
    }


def test_asymptotic_is_exact_for_one_point_and_approached_as_g_grows():
    rows = en.generate(9, 2)
    data = en.Dataset.from_rows(rows, 2)
    ratio = data.log_value - en.asymptotic_terms(data).sum(axis=1)
    np.testing.assert_allclose(ratio[(data.n == 1) & (data.g >= 1)], 0.0, atol=1e-9)
    two = data.n == 2
    spread = [np.abs(ratio[two & (data.g == g)]).max() for g in (3, 6, 9)]
    assert spread[0] > spread[1] > spread[2]


# --- activations --------------------------------------------------------------------


def test_dra_is_the_official_training_scripts_formula():
    # model/TR_ABCD2seq.py: x + a sin^2(a x) / b + c cos(b x) + d tanh(b x)
    torch.manual_seed(0)
    act = en.DRA()
    x = torch.linspace(-5, 5, 101)
    a, b, c, d = act.a, act.b, act.c, act.d
    expected = x + a * torch.sin(a * x) ** 2 / b + c * torch.cos(b * x) + d * torch.tanh(b * x)
    torch.testing.assert_close(act(x), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("a", [0.0, 1e-30, -1e-8, 2.0])
def test_dra_output_and_gradients_are_finite_for_any_a_and_large_inputs(a):
    act = en.DRA()
    with torch.no_grad():
        act.a.fill_(a)
        act.b.fill_(0.5)
    assert torch.isfinite(act(torch.tensor([-1e30, -1e10, 1e10, 1e30]))).all()
    x = torch.tensor([-1e6, -3.0, 0.0, 3.0, 1e6], requires_grad=True)
    act(x).sum().backward()
    assert torch.isfinite(x.grad).all()
    for p in act.parameters():
        assert torch.isfinite(p.grad).all()


def test_snake_never_divides_by_a():
    # a -> 0: sin^2(a x)/a -> 0, without dividing
    torch.testing.assert_close(
        en.sin2_over(torch.tensor(0.0), torch.tensor([1.0, 5.0])), torch.zeros(2)
    )
    torch.testing.assert_close(
        en.sin2_over(torch.tensor(0.3), torch.tensor([2.0])),
        torch.sin(torch.tensor([0.6])) ** 2 / 0.3,
    )


def test_unknown_activation_is_refused():
    with pytest.raises(
        ValueError, match="unknown activation 'tanh'; accepted: dra, relu, gelu, snake"
    ):
        en.activation("tanh")


# --- conformal prediction -----------------------------------------------------------


def test_conformal_coverage_on_exchangeable_data():
    # heteroscedastic noise whose scale grows with n; calibration and test exchangeable
    rng = np.random.default_rng(0)
    confidence, draws = 0.9, 20
    covered = {"window": [], "global": []}
    for _ in range(draws):
        n_cal, n_test = rng.integers(1, 8, 3000), rng.integers(1, 8, 3000)
        res_cal, res_test = n_cal * rng.standard_normal(3000), n_test * rng.standard_normal(3000)
        for name, w in [("window", 0), ("global", None)]:
            q = en.conformal_halfwidths(res_cal, n_cal, n_test, confidence, w)
            cov = en.coverage_by_n(res_test, np.zeros(3000), q, n_test)
            covered[name].append(cov.coverage)
    window, glob = np.mean(covered["window"], axis=0), np.mean(covered["global"], axis=0)
    # per-n calibration is valid for every n; the global quantile only on average
    assert np.all(np.abs(window - confidence) < 0.02)
    assert glob[0] > 0.97 and glob[-1] < 0.85


def test_conformal_quantile_is_the_finite_sample_order_statistic():
    for m, rank in [(18, 18), (28, 27)]:  # ceil(0.9 (m + 1))-th smallest of 1..m
        q = en.conformal_halfwidths(np.arange(1.0, m + 1), np.ones(m), np.ones(1), 0.9, None)
        assert q[0] == rank
    q = en.conformal_halfwidths(np.ones(5), np.ones(5), np.ones(1), 0.9, 0)  # too few points
    assert np.isinf(q[0])


def test_conformal_rejects_bad_arguments():
    with pytest.raises(ValueError, match="confidence must lie in"):
        en.conformal_halfwidths(np.ones(3), np.ones(3), np.ones(1), 1.5, None)
    with pytest.raises(ValueError, match="window must be >= 0"):
        en.conformal_halfwidths(np.ones(3), np.ones(3), np.ones(1), 0.9, -1)


# --- the model ----------------------------------------------------------------------


def test_transformer_ignores_padding_and_learns():
    rows = en.generate(4, 4)
    data = en.Dataset.from_rows(rows, 4)
    model, history = en.fit(
        "dra", data, width=8, layers=1, epochs=60, batch_size=32, lr=0.003, seed=0
    )
    assert history[-1] < 0.5 * history[0]
    assert en.r2(data.log_value, en.predict(model, data)) > 0.9
    # the same rows padded to more columns give the same predictions
    wider = en.Dataset.from_rows(rows, 6)
    np.testing.assert_allclose(en.predict(model, data), en.predict(model, wider), atol=1e-5)
    assert en.represent(model, data).shape == (len(data), 16)


def test_width_must_be_a_multiple_of_heads():
    with pytest.raises(ValueError, match="multiple of heads"):
        en.IntersectionTransformer("relu", width=10)


def test_parameters_schema_is_consistent():
    assert {"seed", "device"} <= set(en.PARAMETERS)
    for name, value in en.SMOKE.items():
        en.PARAMETERS[name].check(name, value)


def test_claims_registry_declares_its_gaps_on_its_claims():
    check_registry("enumerative", en.CLAIMS)
    assert [cid for cid, spec in en.CLAIMS.items() if spec.gap] == [
        "fits-training-genera",
        "ood-accuracy",
        "dra-ood",
        "virasoro",
        "virasoro-asymptotic",
        "virasoro-dra",
    ]
    # the setup claim is the ReLU networks' fit: DRA's failed seeds count in DRA's claims
    assert "ReLU" in en.CLAIMS["fits-training-genera"].statement


def test_fit_clips_as_the_official_summed_loss_and_uses_dropout():
    # the official loss sums |error| in nats over a batch: B y_std times ours
    assert en.clip_threshold(64, 5.0) == pytest.approx(10.0 / 320)
    model = en.IntersectionTransformer("relu", width=8)
    assert {m.p for m in model.modules() if isinstance(m, torch.nn.Dropout)} == {en.DROPOUT}
    data = en.Dataset.from_rows(en.generate(2, 3), 3)
    with pytest.raises(ValueError, match="batch_size=64 training rows"):
        en.fit("relu", data, width=8, layers=1, epochs=1, batch_size=64, lr=1e-3, seed=0)


def test_figures_build_from_small_input():
    import pandas as pd

    names, colors = {"relu": "ReLU", "gelu": "GELU"}, {"relu": "red", "gelu": "blue"}
    columns = ["R2 test (ID)", "R2 OOD", "MAE OOD"]
    mean = pd.DataFrame([[0.9, 0.7, 1.0], [0.8, 0.6, 2.0]], index=["ReLU", "GELU"], columns=columns)
    sd = pd.DataFrame([[0.01, 0.02, 0.1], [np.nan] * 3], index=["ReLU", "GELU"], columns=columns)
    fig = en.learning_figure({"relu": [1.0, 0.5], "gelu": [2.0, 1.0]}, mean, sd, names, colors)
    assert [t.type for t in fig.data] == ["scatter", "scatter", "bar", "bar", "bar"]
    assert list(fig.data[0].x) == [1, 2] and fig.data[1].name == "GELU"
    assert fig.layout.yaxis.type == "log" and fig.layout.yaxis2.range[0] == pytest.approx(0.55)
    assert list(fig.data[4].y) == [1.0, 2.0] and list(fig.data[4].error_y.array) == [0.1, 0.0]

    n, y = np.array([1, 1, 2, 2]), np.zeros(4)
    coverage = {
        w: en.coverage_by_n(y, y + 0.5, np.full(4, q), n) for w, q in [(1, 1.0), (None, 0.1)]
    }
    fig = en.coverage_figure(coverage, 1, 0.9, np.array([0.1, 0.1]))
    assert [t.name for t in fig.data] == [
        "window w = 1",
        "window w = 1",
        "global quantile",
        "global quantile",
        "nominal - tolerance",
    ]
    assert list(fig.data[0].y) == [1.0, 1.0] and list(fig.data[2].y) == [0.0, 0.0]
    assert fig.layout.title.text.startswith("Conformal intervals at 90%: sliding window w = 1")

    ns = np.array([2, 3])
    fig = en.virasoro_figure(
        {"DRA": (ns, np.array([0.1, 0.2])), "ReLU": (ns, np.array([0.3, 0.4]))},
        {"DRA": "blue"},
        {"ridge": (ns, np.array([1.0, 1.0])), "asymptotic": (ns, np.array([0.5, 0.5]))},
        "L_1",
    )
    assert [t.type for t in fig.data] == ["bar", "bar", "scatter", "scatter"]
    assert fig.data[0].marker.color == "blue" and list(fig.data[2].y) == [1.0, 1.0]
    assert "L_1" in fig.layout.title.text

    r2 = {"trained DRA network": np.array([0.9, np.nan]), "inputs (control)": np.array([-0.2, 0.5])}
    fig = en.probe_figure(r2, ["a", "b"], "ID test")
    assert [t.name for t in fig.data] == list(r2) and fig.layout.yaxis.range[0] == pytest.approx(
        -0.2
    )
    assert fig.data[1].marker.color == "#ff7f0e"


# --- the Virasoro constraints in predictions ----------------------------------------


def test_virasoro_equations_of_genus_one_by_hand():
    data = en.Dataset.from_rows(en.generate(1, 3), 3)
    one = data.subset(np.flatnonzero(data.g == 1))
    eqs = en.virasoro_equations(one)
    # string: (2,0)->(1); (2,1,0)->(1,1)+(2,0); (3,0,0)->(2,0)
    # dilaton: (1,1)->1*(1); (2,1,0)->2*(2,0); (1,1,1)->2*(1,1); <tau_1>_1 is the base case
    parts = [tuple(int(v) for v in d if v >= 0) for d in one.d]
    found = set()
    for e, (kind, lhs) in enumerate(zip(eqs.kind, eqs.lhs)):
        terms = eqs.term_eq == e
        rhs = sorted(
            (parts[r], round(float(np.exp(c)))) for r, c in zip(eqs.row[terms], eqs.log_coef[terms])
        )
        found.add((kind, parts[lhs], tuple(rhs)))
    assert found == {
        ("string", (2, 0), (((1,), 1),)),
        ("string", (2, 1, 0), (((1, 1), 1), ((2, 0), 1))),
        ("string", (3, 0, 0), (((2, 0), 1),)),
        ("dilaton", (1, 1), (((1,), 1),)),
        ("dilaton", (2, 1, 0), (((2, 0), 2),)),
        ("dilaton", (1, 1, 1), (((1, 1), 2),)),
    }


def test_virasoro_residuals_are_zero_on_exact_numbers():
    data = en.Dataset.from_rows(en.generate(6, 5), 5)
    eqs = en.virasoro_equations(data)
    assert {"string", "dilaton"} <= set(eqs.kind) and len(eqs.lhs) > 500
    np.testing.assert_allclose(en.virasoro_residuals(eqs, data.log_value), 0.0, atol=1e-10)
    # on a held-out genus alone, too: both sides have the same genus
    top = data.subset(np.flatnonzero(data.g == 6))
    top_eqs = en.virasoro_equations(top)
    assert len(top_eqs.lhs) > 100
    np.testing.assert_allclose(en.virasoro_residuals(top_eqs, top.log_value), 0.0, atol=1e-10)
    # an error common to one genus cancels; an error on one row does not
    np.testing.assert_allclose(en.virasoro_residuals(top_eqs, top.log_value + 2.5), 0.0, atol=1e-10)
    bumped = top.log_value.copy()
    bumped[top_eqs.lhs[0]] += 0.3
    residual = en.virasoro_residuals(top_eqs, bumped)
    assert residual[0] == pytest.approx(0.3) and np.abs(residual).max() == pytest.approx(0.3)


def test_l1_equations_of_genus_one_by_hand():
    # 15 <tau_2 tau_0>_1 = (2*0+1)(2*0+3) <tau_1>_1 + 1/2 <tau_0^3>_0 + products; the
    # products <tau_0 tau_I>_{g1} <tau_0 tau_J>_{g2}, I u J = {0}, have a factor with
    # two points at genus 0 (unstable), so they vanish: 15 (1/24) = 3/24 + 1/2.
    data = en.Dataset.from_rows(en.generate(1, 3), 3)
    eqs = en.l1_equations(data, [1])
    parts = [(int(g), tuple(int(v) for v in d if v >= 0)) for g, d in zip(data.g, data.d)]
    found = {}
    for e, lhs in enumerate(eqs.lhs):
        terms = eqs.term_eq == e
        found[parts[lhs]] = sorted(
            (parts[r], parts[q] if q >= 0 else None, round(float(np.exp(c)) * 30))
            for r, q, c in zip(eqs.row[terms], eqs.partner[terms], eqs.log_coef[terms])
        )
    # coefficients times 30: 1/30 -> 1, 3/15 -> 6
    assert found[1, (2, 0)] == [((0, (0, 0, 0)), None, 1), ((1, (1,)), None, 6)]
    assert set(eqs.kind) == {"L_1"} and set(data.g[eqs.lhs]) == {1}


def test_l1_residuals_are_zero_on_exact_numbers_and_see_a_genus_offset():
    data = en.Dataset.from_rows(en.generate(6, 5), 5)
    eqs = en.l1_equations(data, range(7))
    assert len(eqs.lhs) > 100 and (eqs.partner >= 0).any()
    # every L_1 equation the exact numbers give holds to rounding: the formula is right
    np.testing.assert_allclose(en.virasoro_residuals(eqs, data.log_value), 0.0, atol=1e-10)
    # above genus 0 its left sides have n < n_max: the genus g - 1 term has one point more
    assert data.n[eqs.lhs][data.g[eqs.lhs] > 0].max() == 4
    # an error common to one genus does not cancel, unlike string and dilaton
    top = en.l1_equations(data, [6])
    shifted = data.log_value + 0.5 * (data.g == 6)
    assert np.abs(en.virasoro_residuals(top, shifted)).min() > 0.01


def test_mean_by():
    keys, means = en.mean_by(np.array([1.0, 3.0, 5.0]), np.array([2, 2, 7]))
    assert list(keys) == [2, 7] and list(means) == [2.0, 5.0]


# --- probing ------------------------------------------------------------------------


def test_control_probe_sees_no_hidden_state():
    rows = en.generate(4, 4)
    data = en.Dataset.from_rows(rows, 4)
    features = en.input_features(data)
    assert features.shape == (len(data), 8 + 3 * 4)  # INPUT_FEATURES
    # a function of (g, n, d) alone: the target (or anything else) never enters
    scrambled = en.Dataset(
        data.g, data.n, data.d, np.random.default_rng(0).permutation(data.log_value)
    )
    np.testing.assert_array_equal(en.input_features(scrambled), features)
    # row by row: each row's features depend on that row's inputs only
    order = np.random.default_rng(1).permutation(len(data))
    np.testing.assert_array_equal(en.input_features(data.subset(order)), features[order])
    # the inputs themselves are there, and the padding reads as 0 with a flag
    np.testing.assert_array_equal(features[:, 0], data.g)
    np.testing.assert_array_equal(features[:, 1], data.n)
    np.testing.assert_array_equal(features[:, 8:12], np.maximum(data.d, 0))
    np.testing.assert_array_equal(features[:, 16:20], data.d >= 0)
    assert np.array_equal(features[:, 6], (data.d == 0).sum(axis=1))


def test_probe_targets_and_log_ratio():
    data = en.Dataset.from_rows(en.generate(5, 3), 3)
    targets = en.probe_targets(data)
    assert targets.shape == (len(data), len(en.PROBE_TARGETS)) == (len(data), 4)
    np.testing.assert_allclose(targets[:, :3].sum(axis=1) + targets[:, 3], data.log_value)
    one_point = (data.n == 1) & (data.g >= 1)
    np.testing.assert_allclose(targets[one_point, 3], 0.0, atol=1e-9)  # exact for n = 1


def test_ridge_baseline_reads_the_inputs_only():
    data = en.Dataset.from_rows(en.generate(5, 4), 4)
    ridge = en.ridge_baseline(data)
    fitted = ridge(data)
    assert en.r2(data.log_value, fitted) > 0.9
    # a function of (g, n, d) alone: the targets of the rows it predicts never enter
    scrambled = en.Dataset(data.g, data.n, data.d, np.zeros(len(data)))
    np.testing.assert_allclose(ridge(scrambled), fitted)
    # a target linear in the features is recovered
    linear = en.Dataset(data.g, data.n, data.d, 2.0 * data.g - data.n + 1.0)
    np.testing.assert_allclose(en.ridge_baseline(linear)(linear), linear.log_value, atol=0.05)


def test_probe_r2_reads_a_linear_target_and_not_noise():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((400, 5))
    y = np.column_stack([x @ np.arange(1.0, 6.0), rng.standard_normal(400)])
    scores = en.probe_r2(x[:300], y[:300], x[300:], y[300:])
    assert scores[0] > 0.99 and scores[1] < 0.1


# --- conformal widths ---------------------------------------------------------------


def test_width_tracking():
    n = np.repeat([1, 2, 3, 4], [5, 50, 50, 50])
    errors = np.abs(np.random.default_rng(0).standard_normal(len(n))) * n
    rho, used, width, needed = en.width_tracking(0.5 * n.astype(float), errors, n, 0.9, 10)
    assert list(used) == [2, 3, 4] and rho == pytest.approx(1.0)
    np.testing.assert_allclose(width, [2.0, 3.0, 4.0])
    rho, *_ = en.width_tracking(np.full(len(n), 1.0), errors, n, 0.9, 10)
    assert np.isnan(rho)  # one global width has no ranking to follow
