"""Unit tests of iclr25.chapters.sro: sketches, proximal operators, the solver, SRO and
Iterative SRO."""

import numpy as np
import pytest
import scipy.linalg
from scipy.sparse.linalg import LinearOperator
from sklearn.linear_model import Lasso

from iclr25.chapters import sro
from iclr25.core import ParameterError, check_bound
from iclr25.core.claims import check_registry
from iclr25.core.stats import Estimate

GRID = np.linspace(-8, 8, 320_001)  # spacing 5e-5


def objective(H, g, lam, penalty, b):
    """(1/2) b^T H b - g^T b + h(b)."""
    return 0.5 * b @ H @ b - g @ b + sro.PENALTIES[penalty].p(b, lam).sum()


def brute_force_prox(penalty, z, lam, t):
    """argmin_x (1/2)(x - z)^2 + t p_lam(x) over GRID, for each z."""
    values = 0.5 * (GRID[None, :] - z[:, None]) ** 2 + t * sro.PENALTIES[penalty].p(
        GRID[None, :], lam
    )
    return GRID[values.argmin(axis=1)]


# --- proximal operators -------------------------------------------------------------


@pytest.mark.parametrize("penalty", ["l1", "scad", "mcp"])
@pytest.mark.parametrize("lam, t", [(1.0, 1.0), (0.7, 0.4), (0.5, 1.5)])
def test_prox_is_the_minimiser_of_the_scalar_problem(penalty, lam, t):
    z = np.linspace(-6, 6, 97)
    np.testing.assert_allclose(
        sro.PENALTIES[penalty].prox(z, lam, t), brute_force_prox(penalty, z, lam, t), atol=1e-4
    )


def test_prox_closed_forms_at_known_points():
    # soft thresholding
    np.testing.assert_allclose(sro.prox_l1(np.array([3.0, -0.5, -2.0]), 1.0, 0.5), [2.5, 0.0, -1.5])
    # SCAD with t = 1 is Fan & Li's rule: soft thresholding up to 2 lam,
    # ((a - 1) z - a lam) / (a - 2) up to a lam, the identity beyond
    a, lam = 3.7, 1.0
    z = np.array([0.5, 1.5, 3.0, 5.0])
    expected = [0.0, 0.5, ((a - 1) * 3.0 - a * lam) / (a - 2), 5.0]
    np.testing.assert_allclose(sro.prox_scad(z, lam, 1.0, a), expected)
    # MCP with gamma = 3, t = 1: soft thresholding scaled by 1 / (1 - 1/gamma) up to gamma lam,
    # the identity beyond
    np.testing.assert_allclose(
        sro.prox_mcp(np.array([0.8, -2.0, 4.0]), 1.0, 1.0, 3.0), [0.0, -1.5, 4.0]
    )


def test_prox_refuses_steps_that_make_the_scalar_problem_nonconvex():
    with pytest.raises(ValueError, match="a > 1 \\+ t"):
        sro.prox_scad(np.ones(3), 1.0, t=3.0, a=3.7)
    with pytest.raises(ValueError, match="gamma > t"):
        sro.prox_mcp(np.ones(3), 1.0, t=3.0, gamma=3.0)


def test_penalties_are_continuous_at_their_knots():
    lam, a, gamma = 0.8, sro.SCAD_A, sro.MCP_GAMMA
    for knot in (lam, a * lam):
        left, right = sro.scad_penalty(np.array([knot - 1e-9, knot + 1e-9]), lam)
        assert abs(left - right) < 1e-8
    left, right = sro.mcp_penalty(np.array([gamma * lam - 1e-9, gamma * lam + 1e-9]), lam)
    assert abs(left - right) < 1e-8


# --- sketches -----------------------------------------------------------------------


@pytest.mark.parametrize("radix", [2, 4, 16])
def test_fwht_is_the_sylvester_hadamard_matrix(radix):
    A = np.random.default_rng(0).standard_normal((512, 3))  # 512 = 16^2 * 2: a short last pass
    np.testing.assert_allclose(sro.fwht(A, radix), scipy.linalg.hadamard(512) @ A, atol=1e-10)


@pytest.mark.parametrize("kind", ["gaussian", "count", "srht"])
def test_sketch_of_a_matrix_is_the_sketch_matrix_times_it(kind):
    A = np.random.default_rng(1).standard_normal((20, 4))
    SA = sro.sketch(kind, A, 6, np.random.default_rng(7))
    S = sro.sketch_matrix(kind, 20, 6, np.random.default_rng(7))
    assert S.shape == (6, 20)
    np.testing.assert_allclose(SA, S @ A, atol=1e-12)


@pytest.mark.parametrize("kind", ["gaussian", "count", "srht"])
def test_sketches_are_isotropic_on_average(kind):
    # Every entry of S^T S has variance at most about 2/m; with 3000 draws the mean of
    # each of the 144 entries has standard deviation <= sqrt(2/5/3000) = 0.012, so 0.07
    # is about six standard deviations.
    rng = np.random.default_rng(2)
    n, m, draws = 12, 5, 3000
    mean = sum(S.T @ S for S in (sro.sketch_matrix(kind, n, m, rng) for _ in range(draws))) / draws
    assert np.abs(mean - np.eye(n)).max() < 0.07


def test_count_sketch_has_one_signed_entry_per_column():
    S = sro.sketch_matrix("count", 50, 7, np.random.default_rng(3))
    assert np.all((S != 0).sum(axis=0) == 1)
    assert set(np.unique(S[S != 0])) <= {-1.0, 1.0}


def test_srht_with_every_row_kept_is_orthogonal():
    S = sro.sketch_matrix("srht", 16, 16, np.random.default_rng(4))
    np.testing.assert_allclose(S.T @ S, np.eye(16), atol=1e-12)


def test_a_large_sketch_embeds_a_subspace():
    U, _ = np.linalg.qr(np.random.default_rng(5).standard_normal((4000, 5)))
    for kind in sro.SKETCHES:
        singular = np.linalg.svd(
            sro.sketch(kind, U, 800, np.random.default_rng(6)), compute_uv=False
        )
        assert 0.8 < singular.min() and singular.max() < 1.2, kind


def test_unknown_sketch_kind_and_penalty_are_refused_in_one_line():
    X = np.ones((8, 2))
    with pytest.raises(
        ValueError, match="unknown sketch kind 'fourier'; accepted kinds: gaussian, count, srht"
    ):
        sro.sketch("fourier", X, 4, np.random.default_rng(0))
    with pytest.raises(ValueError, match="unknown penalty 'l0'; accepted penalties: l1, scad, mcp"):
        sro.full_solution(X, np.ones(8), 0.1, "l0")


# --- the solver, SRO and Iterative SRO ----------------------------------------------


@pytest.fixture(scope="module")
def problem():
    X, y, beta, _, _ = sro.make_problem(3000, 60, 4, 25, 0.5, np.random.default_rng(8))
    return X, y, beta, 0.02


def test_make_problem_has_the_asked_rank_and_sparsity(problem):
    X, y, beta, _ = problem
    assert np.linalg.matrix_rank(X) == 25
    assert np.count_nonzero(beta) == 4 and set(np.abs(beta[beta != 0])) == {1.0}
    full_rank = sro.make_problem(200, 10, 2, 10, 0.1, np.random.default_rng(0)).X
    assert np.linalg.matrix_rank(full_rank) == 10


def test_fista_solution_satisfies_the_lasso_kkt_conditions(problem):
    X, y, _, lam = problem
    n = X.shape[0]
    H, g = X.T @ X / n, X.T @ y / n
    b = sro.fista(H, g, lam, "l1", tol=1e-12)
    grad = H @ b - g
    active = b != 0
    assert active.any() and not active.all()
    np.testing.assert_allclose(grad[active], -lam * np.sign(b[active]), atol=1e-7)
    assert np.all(np.abs(grad[~active]) <= lam + 1e-7)


@pytest.mark.parametrize("penalty", ["scad", "mcp"])
def test_proximal_gradient_stops_at_a_stationary_point(penalty, problem):
    X, y, _, lam = problem
    n = X.shape[0]
    H, g = X.T @ X / n, X.T @ y / n
    b = sro.fista(H, g, lam, penalty, tol=1e-12)
    t = 1.0 / sro.largest_eigenvalue(H)
    np.testing.assert_allclose(
        sro.PENALTIES[penalty].prox(b - t * (H @ b - g), lam, t), b, atol=1e-9
    )
    # ... and a better one than SRO's starting point b = 0 and the Lasso's solution
    lasso = sro.fista(H, g, lam, "l1", tol=1e-12)
    for other in (np.zeros_like(b), lasso):
        assert objective(H, g, lam, penalty, b) < objective(H, g, lam, penalty, other)


def test_full_solution_is_scikit_learns_lasso(problem):
    X, y, _, lam = problem
    reference = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y).coef_
    np.testing.assert_allclose(sro.full_solution(X, y, lam, "l1", tol=1e-12), reference, atol=1e-7)


@pytest.mark.parametrize("kind", ["gaussian", "count", "srht"])
def test_iterative_sro_converges_to_scikit_learns_lasso(kind, problem):
    X, y, _, lam = problem
    reference = Lasso(alpha=lam, fit_intercept=False, tol=1e-12, max_iter=100_000).fit(X, y).coef_
    PX = sro.sketch(kind, X, 500, np.random.default_rng(9))
    iterates = sro.iterative_sro(X, y, lam, "l1", PX, 15)
    errors = np.linalg.norm(iterates[1:] - reference, axis=1) / np.linalg.norm(reference)
    assert errors[-1] < 1e-6
    assert errors[-1] < 1e-3 * errors[0]  # the error contracts by orders of magnitude


def test_first_iterate_is_sro_and_ihs_also_converges(problem):
    X, y, _, lam = problem
    PX = sro.sketch("count", X, 500, np.random.default_rng(10))
    iterates = sro.iterative_sro(X, y, lam, "l1", PX, 3)
    np.testing.assert_allclose(iterates[0], 0.0)
    np.testing.assert_allclose(iterates[1], sro.sro(X, y, lam, "l1", PX), atol=1e-9)
    ihs = sro.ihs(X, y, lam, "l1", "count", 500, 15, np.random.default_rng(10))
    full = sro.full_solution(X, y, lam, "l1", tol=1e-12)
    assert np.linalg.norm(ihs[-1] - full) < 1e-6 * np.linalg.norm(full)


def test_wide_problems_apply_the_sketched_gram_without_forming_it():
    # d > m: the operator through P X gives the dense matrix's products, iterates and
    # reference solution, and the iterations stop as soon as `until` says so
    X, y, beta, U, W = sro.make_problem(400, 300, 4, 10, 0.5, np.random.default_rng(3))
    PX = sro.sketch("count", X, 100, np.random.default_rng(4))
    H = sro.sketched_gram(PX, 400)
    assert isinstance(H, LinearOperator)
    dense = PX.T @ PX / 400
    b = np.random.default_rng(5).standard_normal(300)
    np.testing.assert_allclose(H @ b, dense @ b, atol=1e-10)
    assert sro.largest_eigenvalue(H) == pytest.approx(sro.largest_eigenvalue(dense), rel=1e-8)
    assert isinstance(sro.sketched_gram(PX[:, :50], 400), np.ndarray)  # d <= m: formed
    np.testing.assert_allclose(sro.factored_gram(U, W) @ b, X.T @ (X @ b) / 400, atol=1e-10)
    lam = 0.05
    full = sro.full_solution(X, y, lam, "l1", tol=1e-12)
    by_factors = sro.full_solution(X, y, lam, "l1", tol=1e-12, H=sro.factored_gram(U, W))
    np.testing.assert_allclose(by_factors, full, atol=1e-6)
    step = 1 / sro.largest_eigenvalue(dense)
    through_dense = sro.sro_step(X, y, lam, "l1", dense, np.zeros(300), step=step)
    first = sro.iterative_sro(X, y, lam, "l1", PX, 1)[1]
    # both stop on FISTA's step-change test, not at the exact minimiser, so they agree
    # to the solver's accuracy (as the factored reference above), not to rounding
    np.testing.assert_allclose(first, through_dense, atol=1e-6)

    def close(b):
        return np.linalg.norm(b - full) <= 0.1 * np.linalg.norm(full)

    short = sro.iterative_sro(X, y, lam, "l1", PX, 50, until=close)
    assert close(short[-1]) and not any(close(b) for b in short[:-1])
    short = sro.ihs(X, y, lam, "l1", "count", 100, 50, np.random.default_rng(6), until=close)
    assert close(short[-1]) and not any(close(b) for b in short[:-1])


@pytest.mark.parametrize("penalty", ["scad", "mcp"])
def test_iterative_sro_reaches_the_full_nonconvex_solution(penalty, problem):
    X, y, _, lam = problem
    PX = sro.sketch("count", X, 500, np.random.default_rng(11))
    iterates = sro.iterative_sro(X, y, lam, penalty, PX, 15)
    full = sro.full_solution(X, y, lam, penalty, tol=1e-12)
    assert np.linalg.norm(iterates[-1] - full) < 1e-6 * np.linalg.norm(full)


def test_parameters_schema_is_consistent():
    assert {"seed", "device"} <= set(sro.PARAMETERS)
    assert set(sro.SMOKE) <= set(sro.PARAMETERS)
    for name, value in sro.SMOKE.items():
        sro.PARAMETERS[name].check(name, value)


def test_new_parameters_refuse_bad_values_in_one_line():
    with pytest.raises(ParameterError, match="draws"):
        sro.PARAMETERS["draws"].check("draws", 1)
    with pytest.raises(ParameterError, match="rate_ratio"):
        sro.PARAMETERS["rate_ratio"].check("rate_ratio", 1)


def test_claim_rules_and_declared_gaps():
    check_registry("sro", sro.CLAIMS)
    gaps = {cid for cid, spec in sro.CLAIMS.items() if spec.gap is not None}
    assert gaps == {"faster-than-ihs"}
    assert sro.CLAIMS["faster-than-ihs"].rests_on == ("wide-reached",)
    assert check_bound(sro.CLAIMS["wide-reached"].rule, {"worst error / target": 1.0})
    assert not check_bound(sro.CLAIMS["wide-reached"].rule, {"worst error / target": 1.1})
    # the rate claims need the whole interval of the mean slope within -1/2 +- 1/4
    band = sro.CLAIMS["rate-sro-scad"].rule
    inside = sro.band_distance(Estimate(-0.55, -0.7, -0.4, 10, "test"), -0.5)
    straddles = sro.band_distance(Estimate(-0.3, -0.45, -0.15, 10, "test"), -0.5)
    outside = sro.band_distance(Estimate(0.1, -0.05, 0.3, 10, "test"), -0.5)
    assert band.decide(inside.low, inside.high) == "holds"
    assert band.decide(straddles.low, straddles.high) == "inconclusive"
    assert band.decide(outside.low, outside.high) == "contradicted"
    for cid in ("rate-sro-scad", "rate-sro-mcp", "rate-iterative-sro"):
        assert sro.CLAIMS[cid].rests_on == ("regime",)
    regime = sro.CLAIMS["regime"].rule
    assert check_bound(regime, {"rank / d": 1.0, "curvature margin": 0.1})
    assert not check_bound(regime, {"rank / d": 0.5, "curvature margin": 0.1})
    assert not check_bound(regime, {"curvature margin": -0.01, "rank / d": 1.0})
    # a contraction factor that does not fall with m is not a holding sketch-size claim
    size = sro.CLAIMS["sketch-size"].rule
    assert size.decide(-0.8, -0.4) == "holds" and size.decide(-0.3, 0.1) == "inconclusive"


def test_band_distance_is_the_distance_of_the_interval_from_the_centre():
    d = sro.band_distance(Estimate(-0.4, -0.6, -0.3, 5, "test"), -0.5)
    assert d.value == pytest.approx(0.1) and d.low == 0.0 and d.high == pytest.approx(0.2)
    d = sro.band_distance(Estimate(0.0, -0.2, 0.1, 5, "test"), -0.5)
    assert d.low == pytest.approx(0.3) and d.high == pytest.approx(0.6) and d.n == 5


def test_loglog_slopes_recover_powers_per_column():
    ns = [100, 200, 400, 800]
    errors = np.array([[3.0 * n**-0.5, 2.0 * n**0.25] for n in ns])
    np.testing.assert_allclose(sro.loglog_slopes(ns, errors), [-0.5, 0.25])
    with pytest.raises(ValueError, match="one row per x"):
        sro.loglog_slopes(ns, errors[:3])


def test_weak_convexity_gives_a_unique_minimiser_whatever_the_start():
    assert sro.weak_convexity("l1") == 0.0
    assert sro.weak_convexity("scad") == pytest.approx(1 / (sro.SCAD_A - 1))
    assert sro.weak_convexity("mcp") == pytest.approx(1 / sro.MCP_GAMMA)
    with pytest.raises(ValueError, match="accepted penalties"):
        sro.weak_convexity("l0")
    # a full-rank design whose curvature exceeds mu: every start ends at one point
    X, y, _, _, _ = sro.make_problem(2000, 20, 3, 20, 0.5, np.random.default_rng(20))
    H, g = X.T @ X / 2000, X.T @ y / 2000
    assert sro.smallest_eigenvalue(H) > max(map(sro.weak_convexity, ("scad", "mcp")))
    np.testing.assert_allclose(sro.smallest_eigenvalue(H), np.linalg.eigvalsh(H)[0])
    for penalty in ("scad", "mcp"):
        ends = [
            sro.fista(H, g, 0.05, penalty, b0, tol=1e-13)
            for b0 in (None, np.full(20, 3.0), np.random.default_rng(21).normal(size=20))
        ]
        for b in ends[1:]:
            np.testing.assert_allclose(b, ends[0], atol=1e-8)


# --- the low-rank factors, warm starts and the contraction-factor fit ---------------


def test_problem_factors_multiply_to_the_design():
    X, _, _, U, W = sro.make_problem(300, 40, 3, 7, 0.1, np.random.default_rng(12))
    assert U.shape == (300, 7) and W.shape == (7, 40)
    np.testing.assert_allclose(U @ W, X)
    X, _, _, U, W = sro.make_problem(100, 8, 2, 8, 0.1, np.random.default_rng(12))
    np.testing.assert_allclose(U @ W, X)


@pytest.mark.parametrize("kind", ["gaussian", "count", "srht"])
def test_sketch_of_the_factor_is_the_sketch_of_the_design(kind):
    X, _, _, U, W = sro.make_problem(500, 30, 3, 6, 0.1, np.random.default_rng(13))
    np.testing.assert_allclose(
        sro.sketch_factored(kind, U, W, 40, np.random.default_rng(14)),
        sro.sketch(kind, X, 40, np.random.default_rng(14)),
        atol=1e-10,
    )


def test_full_solution_with_a_given_gram_matrix_is_the_same(problem):
    X, y, _, lam = problem
    H = X.T @ X / X.shape[0]
    for penalty in ("l1", "mcp"):
        np.testing.assert_allclose(
            sro.full_solution(X, y, lam, penalty, H=H), sro.full_solution(X, y, lam, penalty)
        )


def test_iterative_sro_started_at_the_solution_stays_there(problem):
    X, y, _, lam = problem
    full = sro.full_solution(X, y, lam, "l1", tol=1e-12)
    PX = sro.sketch("count", X, 300, np.random.default_rng(15))
    iterates = sro.iterative_sro(X, y, lam, "l1", PX, 3, b0=full)
    np.testing.assert_allclose(iterates[0], full)
    assert np.linalg.norm(iterates[-1] - full) < 1e-7 * np.linalg.norm(full)


def test_log_linear_fit_recovers_a_geometric_sequence():
    errors = 0.5 * 0.3 ** np.arange(1, 9)
    fit = sro.log_linear_fit(errors)
    assert fit.factor == pytest.approx(0.3) and fit.r2 == pytest.approx(1.0)
    assert fit.intercept == pytest.approx(np.log10(0.5))
    assert sro.contraction_factor(errors) == pytest.approx(0.3)


def test_contraction_fit_leaves_out_the_errors_at_the_floor():
    # 0.1^t reaches the floor 1e-8 at t = 8; the flat tail must not bend the fit
    errors = np.maximum(0.1 ** np.arange(1, 13), 1e-9)
    assert sro.contraction_factor(errors) == pytest.approx(0.1)
    assert sro.contraction_factor(errors, floor=1e-12) > 0.1  # with the tail, flatter
    with pytest.raises(ValueError, match="two errors above"):
        sro.contraction_factor(np.array([1e-3, 1e-9, 1e-10]), floor=1e-8)


def test_contraction_factor_of_iterative_sro_falls_with_the_sketch_size(problem):
    X, y, _, lam = problem
    full = sro.full_solution(X, y, lam, "l1", tol=1e-12)
    rng = np.random.default_rng(16)

    def mean_factor(m):
        return np.mean(
            [
                sro.contraction_factor(
                    np.linalg.norm(
                        sro.iterative_sro(X, y, lam, "l1", sro.sketch("gaussian", X, m, rng), 8)[1:]
                        - full,
                        axis=1,
                    )
                    / np.linalg.norm(full)
                )
                for _ in range(3)
            ]
        )

    small, large = mean_factor(150), mean_factor(1200)
    assert 0 < large < 0.5 * small < 0.5


def test_factor_figure_shows_means_and_draws():
    factors = {"gaussian": np.array([[0.4, 0.6], [0.2, 0.3]]), "count": np.ones((2, 2))}
    fig = sro.factor_figure([100, 200], factors, rank=10)
    assert len(fig.data) == 4
    mean, draws = fig.data[0], fig.data[1]
    np.testing.assert_allclose(mean.y, [0.5, 0.25])
    np.testing.assert_allclose(mean.error_y.array, [0.1, 0.05])
    np.testing.assert_allclose(draws.y, [0.4, 0.6, 0.2, 0.3])
    np.testing.assert_allclose(draws.x, [100, 100, 200, 200])


def test_sketched_noise_is_the_spread_of_sros_gradient_at_beta_star():
    # over many CountSketches the coordinates of SRO's gradient at beta* spread as
    # sigma_SRO / sqrt(n): the noise term and the sketch's error term together
    rng = np.random.default_rng(5)
    n, d, m, noise = 4000, 20, 500, 1.0
    X = rng.standard_normal((n, d))
    beta = np.zeros(d)
    beta[:3] = 1.0
    y = X @ beta + noise * rng.standard_normal(n)
    gradients = []
    for _ in range(200):
        PX = sro.sketch("count", X, m, rng)
        gradients.append(PX.T @ PX @ beta / n - X.T @ y / n)
    spread = np.std(np.asarray(gradients)[:, 3:])  # the coordinates off the support
    sigma = sro.sketched_noise(y, m, noise)
    assert np.sqrt(n) * spread == pytest.approx(sigma, rel=0.15)
    assert sigma > np.sqrt(noise**2 + (n / m) * 3.0) * 0.95  # ||X beta||^2 / n = 3


def test_rate_in_d_holds_below_a_quarter_and_fails_a_dense_slope():
    rule = sro.CLAIMS["rate-in-d"].rule
    assert sro.CLAIMS["rate-in-d"].rests_on == ("regime",)
    assert rule.decide(-0.05, 0.15) == "holds"
    assert rule.decide(0.4, 0.6) == "contradicted"  # sqrt(d): the unpenalised control
    assert sro.CLAIMS["relative-error"].rule is sro.CLAIMS["sketch-size"].rule


def test_error_figure_shows_mean_errors_with_their_spread():
    errors = np.array([[[1.0, 3.0], [2.0, 2.0]]])  # [estimator, x, draw]
    slopes = {"sro": np.array([0.1, 0.3])}
    fig = sro.error_figure([10, 20], errors, ["sro"], slopes, "d")
    np.testing.assert_allclose(fig.data[0].y, [2.0, 2.0])
    np.testing.assert_allclose(fig.data[0].error_y.array, [1.0, 0.0])
    assert "0.20" in fig.data[0].name
