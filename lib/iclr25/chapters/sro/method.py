"""SRO's method: oblivious sketches, penalties and their proximal operators, the FISTA
solver, SRO, Iterative SRO and IHS, synthetic sparse regression problems and the fitted
contraction factor (the package docstring gives the paper and its equations)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
from scipy.sparse.linalg import LinearOperator

from iclr25.core.stats import Estimate

# ---------------------------------------------------------------------------
# Oblivious sketches. Each returns S @ A for a random m x n matrix S, scaled so
# that E[S^T S] = I_n: then E[||S A b||^2] = ||A b||^2 for every b.
# ---------------------------------------------------------------------------


def gaussian_sketch(A: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """S A with S_ij ~ N(0, 1/m) i.i.d.  Cost O(m n d)."""
    S = rng.standard_normal((m, A.shape[0])) / np.sqrt(m)
    return S @ A


def count_sketch(A: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """S A for the sparse embedding (CountSketch) of Clarkson & Woodruff.

    Column i of S has a single nonzero, a random sign at a random row h(i), so
    row k of S A is the signed sum of the rows of A hashed to k. Applying S
    costs O(nnz(A)). (S^T S)_ii = 1 exactly and off-diagonal entries have mean
    zero, so no rescaling is needed.
    """
    n = A.shape[0]
    rows = rng.integers(m, size=n)
    signs = rng.choice([-1.0, 1.0], size=n)
    S = scipy.sparse.csr_matrix((signs, (rows, np.arange(n))), shape=(m, n))
    return np.asarray(S @ A)


def fwht(A: np.ndarray, radix: int = 16) -> np.ndarray:
    """Unnormalised fast Walsh-Hadamard transform H A along axis 0.

    H is the Sylvester Hadamard matrix, H_2k = [[H_k, H_k], [H_k, -H_k]], so
    H_n = H_2 (x) H_2 (x) ... (x) H_2 (Kronecker powers; n must be a power of
    two) and the factors can be applied one at a time. The textbook butterfly
    applies one H_2 per pass over the data, log2(n) passes; here each pass
    applies a whole radix x radix block H_radix to every group of rows `radix`
    apart at stride h, as one batched matrix product, so 16 memory-bound passes
    become 4 BLAS calls for n = 2^16. Cost O(n d radix log_radix n).
    """
    n = A.shape[0]
    out = np.array(A, dtype=float).reshape(n, -1)
    cols = out.shape[1]
    h = 1
    while h < n:
        k = min(radix, n // h)
        blocks = out.reshape(n // (k * h), k, h * cols)  # row index = (block, j, r), j in [0, k)
        out = np.matmul(scipy.linalg.hadamard(k).astype(float), blocks).reshape(n, cols)
        h *= k
    return out.reshape(A.shape)


def srht(A: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """S A for the subsampled randomized Hadamard transform.

    S = sqrt(n_pad / m) R (H / sqrt(n_pad)) D: random signs D, zero padding of
    the rows to n_pad = 2^ceil(log2 n), the orthonormal Hadamard transform and
    m rows R sampled uniformly without replacement. The two square roots cancel
    to a single 1/sqrt(m) on the unnormalised transform.
    """
    n = A.shape[0]
    n_pad = 1 << (n - 1).bit_length()
    if m > n_pad:
        raise ValueError(f"srht keeps at most {n_pad} rows for n = {n}, got m = {m}")
    signed = np.zeros((n_pad,) + A.shape[1:])
    signed[:n] = rng.choice([-1.0, 1.0], size=n).reshape((n,) + (1,) * (A.ndim - 1)) * A
    rows = rng.choice(n_pad, size=m, replace=False)
    return fwht(signed)[rows] / np.sqrt(m)


SKETCHES: dict[str, Callable[[np.ndarray, int, np.random.Generator], np.ndarray]] = {
    "gaussian": gaussian_sketch,
    "count": count_sketch,
    "srht": srht,
}


def sketch(kind: str, A: np.ndarray, m: int, rng: np.random.Generator) -> np.ndarray:
    """P A for the oblivious sketch ``kind`` with m rows."""
    if kind not in SKETCHES:
        raise ValueError(f"unknown sketch kind {kind!r}; accepted kinds: {', '.join(SKETCHES)}")
    return SKETCHES[kind](A, m, rng)


def sketch_matrix(kind: str, n: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """The explicit m x n sketching matrix S, computed as S I_n (for tests)."""
    return sketch(kind, np.eye(n), m, rng)


# ---------------------------------------------------------------------------
# Penalties h(b) = sum_j p_lam(b_j) and their proximal operators
#     prox_{t p}(z) = argmin_x (1/2)(x - z)^2 + t p_lam(x),
# where t is the step size of the proximal gradient method.
# ---------------------------------------------------------------------------

SCAD_A = 3.7
"""SCAD's concavity parameter a, the value Fan & Li (2001) recommend."""
MCP_GAMMA = 3.0
"""MCP's concavity parameter gamma (Zhang, 2010)."""


def soft_threshold(z: np.ndarray, tau: float) -> np.ndarray:
    """sign(z) max(|z| - tau, 0)."""
    return np.sign(z) * np.maximum(np.abs(z) - tau, 0.0)


def l1_penalty(x: np.ndarray, lam: float) -> np.ndarray:
    """p_lam(x) = lam |x|, elementwise."""
    return lam * np.abs(x)


def prox_l1(z: np.ndarray, lam: float, t: float = 1.0) -> np.ndarray:
    """Soft thresholding at t lam."""
    return soft_threshold(z, t * lam)


def scad_penalty(x: np.ndarray, lam: float, a: float = SCAD_A) -> np.ndarray:
    """SCAD, elementwise: lam|x| up to lam, a quadratic spline up to a lam, then constant."""
    x = np.abs(x)
    middle = (2 * a * lam * x - x**2 - lam**2) / (2 * (a - 1))
    return np.where(x <= lam, lam * x, np.where(x <= a * lam, middle, lam**2 * (a + 1) / 2))


def prox_scad(z: np.ndarray, lam: float, t: float = 1.0, a: float = SCAD_A) -> np.ndarray:
    """Proximal operator of t * SCAD, the three-piece closed form.

        |z| <= (1 + t) lam:        soft_threshold(z, t lam)
        (1 + t) lam < |z| <= a lam: sign(z) ((a - 1)|z| - t a lam) / (a - 1 - t)
        |z| > a lam:               z

    SCAD is (1/(a-1))-weakly convex, so the scalar problem is strongly convex
    and this is its unique minimiser exactly when a > 1 + t. With t = 1 it is
    Fan & Li's thresholding rule. Smaller a or larger steps are refused.
    """
    if a <= 1 + t:
        raise ValueError(f"prox_scad needs a > 1 + t, got a={a}, t={t}; use a smaller step")
    x = np.abs(z)
    middle = ((a - 1) * x - t * a * lam) / (a - 1 - t)
    shrunk = np.where(
        x <= (1 + t) * lam, np.maximum(x - t * lam, 0.0), np.where(x <= a * lam, middle, x)
    )
    return np.sign(z) * shrunk


def mcp_penalty(x: np.ndarray, lam: float, gamma: float = MCP_GAMMA) -> np.ndarray:
    """MCP, elementwise: lam|x| - x^2/(2 gamma) up to gamma lam, then gamma lam^2 / 2."""
    x = np.abs(x)
    return np.where(x <= gamma * lam, lam * x - x**2 / (2 * gamma), gamma * lam**2 / 2)


def prox_mcp(z: np.ndarray, lam: float, t: float = 1.0, gamma: float = MCP_GAMMA) -> np.ndarray:
    """Proximal operator of t * MCP ("firm thresholding"):

        |z| <= gamma lam:  soft_threshold(z, t lam) / (1 - t / gamma)
        |z| >  gamma lam:  z

    Unique minimiser when gamma > t (MCP is (1/gamma)-weakly convex).
    """
    if gamma <= t:
        raise ValueError(f"prox_mcp needs gamma > t, got gamma={gamma}, t={t}; use a smaller step")
    return np.where(np.abs(z) <= gamma * lam, soft_threshold(z, t * lam) / (1 - t / gamma), z)


@dataclass(frozen=True)
class Penalty:
    """A separable penalty h(b) = sum_j p_lam(b_j): p elementwise and the prox of t p."""

    p: Callable[[np.ndarray, float], np.ndarray]
    prox: Callable[[np.ndarray, float, float], np.ndarray]


PENALTIES: dict[str, Penalty] = {
    "l1": Penalty(l1_penalty, prox_l1),
    "scad": Penalty(scad_penalty, prox_scad),
    "mcp": Penalty(mcp_penalty, prox_mcp),
}


def weak_convexity(penalty: str) -> float:
    """mu such that p_lam(x) + mu x^2 / 2 is convex: 0 for l1, 1/(a-1) for SCAD, 1/gamma for MCP.

    (1/2) b^T H b - g^T b + h(b) is then strongly convex whenever lambda_min(H) > mu: it
    has a single stationary point, its global minimiser, whatever the start.
    """
    get_penalty(penalty)
    return {"l1": 0.0, "scad": 1.0 / (SCAD_A - 1.0), "mcp": 1.0 / MCP_GAMMA}[penalty]


def get_penalty(name: str) -> Penalty:
    """The Penalty called ``name``, with a clear error for unknown names."""
    if name not in PENALTIES:
        raise ValueError(f"unknown penalty {name!r}; accepted penalties: {', '.join(PENALTIES)}")
    return PENALTIES[name]


# ---------------------------------------------------------------------------
# The solver for all subproblems: min_b (1/2) b^T H b - g^T b + h(b).
# ---------------------------------------------------------------------------


def largest_eigenvalue(H: np.ndarray | LinearOperator) -> float:
    """L = lambda_max(H), the Lipschitz constant of the gradient H b - g.

    A matrix is decomposed (LAPACK); an operator that is only applied (see
    :func:`sketched_gram`) gets Lanczos iterations (ARPACK), a few dozen products.
    """
    if isinstance(H, LinearOperator):  # a fixed start vector: the same L at every call
        top = scipy.sparse.linalg.eigsh(
            H, k=1, which="LA", v0=np.ones(H.shape[0]), return_eigenvectors=False
        )
        return float(top[0])
    return float(scipy.linalg.eigh(H, eigvals_only=True, subset_by_index=[H.shape[0] - 1] * 2)[0])


def smallest_eigenvalue(H: np.ndarray) -> float:
    """lambda_min(H), the curvature of the quadratic term in its flattest direction."""
    return float(scipy.linalg.eigh(H, eigvals_only=True, subset_by_index=[0, 0])[0])


def sketched_gram(PX: np.ndarray, n: int) -> np.ndarray | LinearOperator:
    """H = (P X)^T (P X) / n, the quadratic term of SRO's objective.

    With d <= m the d x d matrix is formed once (O(m d^2)) and each product costs d^2.
    With d > m, Table 1's regime, it is never formed: the operator applies P X and its
    transpose, 2 m d per product, and the memory stays that of P X.
    """
    m, d = PX.shape
    if d <= m:
        return PX.T @ PX / n
    return LinearOperator((d, d), matvec=lambda b: PX.T @ (PX @ b) / n, dtype=PX.dtype)


def factored_gram(U: np.ndarray, W: np.ndarray) -> LinearOperator:
    """X^T X / n for X = U W (n x r times r x d), applied as W^T ((U^T U / n) (W b)).

    For the reference solution of a wide low-rank problem: 2 r d per product, where
    X itself would cost 2 n d and the formed matrix d^2 memory.
    """
    gram = U.T @ U / U.shape[0]
    return LinearOperator(
        (W.shape[1], W.shape[1]), matvec=lambda b: W.T @ (gram @ (W @ b)), dtype=float
    )


def fista(
    H: np.ndarray | LinearOperator,
    g: np.ndarray,
    lam: float,
    penalty: str = "l1",
    b0: np.ndarray | None = None,
    *,
    step: float | None = None,
    tol: float = 1e-10,
    max_iter: int = 5_000,
) -> np.ndarray:
    """Minimise F(b) = (1/2) b^T H b - g^T b + h(b) by accelerated proximal gradient:

        b_k = prox_{t h}(z_k - t (H z_k - g)),    t = 1 / lambda_max(H),
        z_{k+1} = b_k + (theta_k - 1) / theta_{k+1} (b_k - b_{k-1})   (FISTA).

    Momentum is monotone: a step that raises F is thrown away and the momentum
    restarts from b_{k-1} (the function-value restart of O'Donoghue & Candes,
    2015). A plain proximal gradient step with t = 1/L never raises F, so F
    decreases at every accepted step for convex (l1) and nonconvex (SCAD, MCP)
    penalties alike, and the iterates settle at a stationary point; restarts
    also make FISTA converge linearly on locally strongly convex problems.
    H b is carried along, so one product with H per iteration gives both the
    objective and, by linearity, the gradient at z. Stops when ||b_k - b_{k-1}||
    <= tol max(1, ||b_k||), or after max_iter iterations: subproblems whose
    solution has more nonzeros than rank(H), as with a sketch too small to
    contract, converge slowly, and the cap bounds their cost. ``b0`` warm-starts
    the iterates.
    """
    pen = get_penalty(penalty)
    t = 1.0 / largest_eigenvalue(H) if step is None else step

    def F(b: np.ndarray, Hb: np.ndarray) -> float:
        return 0.5 * float(b @ Hb) - float(g @ b) + float(pen.p(b, lam).sum())

    b = np.zeros_like(g) if b0 is None else np.array(b0, dtype=float)
    Hb = H @ b
    F_b = F(b, Hb)
    z, Hz, theta = b, Hb, 1.0
    for _ in range(max_iter):
        b_next = pen.prox(z - t * (Hz - g), lam, t)
        Hb_next = H @ b_next
        F_next = F(b_next, Hb_next)
        if F_next > F_b and theta > 1.0:  # momentum overshot: restart from b
            z, Hz, theta = b, Hb, 1.0
            continue
        theta_next = (1 + np.sqrt(1 + 4 * theta**2)) / 2
        momentum = (theta - 1) / theta_next
        z, Hz = b_next + momentum * (b_next - b), Hb_next + momentum * (Hb_next - Hb)
        change = np.linalg.norm(b_next - b)
        b, Hb, F_b, theta = b_next, Hb_next, F_next, theta_next
        if change <= tol * max(1.0, np.linalg.norm(b)):
            break
    return b


# ---------------------------------------------------------------------------
# The full problem, SRO and Iterative SRO.
# ---------------------------------------------------------------------------


def full_solution(
    X: np.ndarray,
    y: np.ndarray,
    lam: float,
    penalty: str,
    *,
    tol: float = 1e-10,
    H: np.ndarray | LinearOperator | None = None,
) -> np.ndarray:
    """b_full = argmin (1/2n)||y - X b||^2 + h(b) with H = X^T X / n, g = X^T y / n.

    Forming X^T X costs O(n d^2): the term sketching avoids. ``H`` passes it in
    when it is already known (several responses y for one design), or as an operator
    (:func:`factored_gram`) when d is too large to form it. For penalty
    "l1" this is scikit-learn's ``Lasso(alpha=lam, fit_intercept=False)``
    objective. SCAD and MCP objectives have many stationary points; as is usual
    for these penalties (Fan, Xue & Zou, 2014), their solver starts from the
    Lasso solution rather than from zero.
    """
    n = X.shape[0]
    H = X.T @ X / n if H is None else H
    g = X.T @ y / n
    b0 = None if penalty == "l1" else fista(H, g, lam, "l1", tol=tol)
    return fista(H, g, lam, penalty, b0, tol=tol)


def sro(
    X: np.ndarray, y: np.ndarray, lam: float, penalty: str, PX: np.ndarray, *, tol: float = 1e-10
) -> np.ndarray:
    """SRO: argmin_b (1/2n)||P X b||^2 - (1/n)<X^T y, b> + h(b), given PX = P X.

    Only the quadratic term is sketched: H = (P X)^T (P X) / n costs O(m d^2)
    once the sketch is drawn, while the linear term X^T y / n stays exact.
    """
    n = X.shape[0]
    return fista(sketched_gram(PX, n), X.T @ y / n, lam, penalty, tol=tol)


def sro_step(
    X: np.ndarray,
    y: np.ndarray,
    lam: float,
    penalty: str,
    H: np.ndarray | LinearOperator,
    b_prev: np.ndarray,
    *,
    step: float,
    tol: float = 1e-10,
) -> np.ndarray:
    """One Iterative SRO step from b_prev, with H = (P X)^T (P X) / n:

        argmin_b (1/2n)||P X (b - b_prev)||^2 + (1/n)<X^T (X b_prev - y), b> + h(b)
      = argmin_b (1/2) b^T H b - g^T b + h(b),   g = H b_prev - X^T (X b_prev - y) / n.

    The exact gradient X^T (X b_prev - y) / n costs O(n d); the rest is a
    warm-started solve in d dimensions.
    """
    g = H @ b_prev - X.T @ (X @ b_prev - y) / X.shape[0]
    return fista(H, g, lam, penalty, b_prev, step=step, tol=tol)


def iterative_sro(
    X: np.ndarray,
    y: np.ndarray,
    lam: float,
    penalty: str,
    PX: np.ndarray,
    n_iter: int,
    *,
    tol: float = 1e-10,
    b0: np.ndarray | None = None,
    until: Callable[[np.ndarray], bool] | None = None,
) -> np.ndarray:
    """Iterative SRO with one sketch PX = P X; returns b_0, b_1, ..., b_T as rows.

    H = (P X)^T (P X) / n (:func:`sketched_gram`) and the step 1 / lambda_max(H) are
    computed once and reused by every step. From the default b_0 = 0, b_1 is the SRO
    solution; ``b0`` starts elsewhere (the nonconvex penalties start from a Lasso
    estimate, as their full solution does). ``until(b_t)`` true ends the iteration
    early, at T = t.
    """
    H = sketched_gram(PX, X.shape[0])
    step = 1.0 / largest_eigenvalue(H)
    iterates = [np.zeros(X.shape[1]) if b0 is None else np.asarray(b0, dtype=float)]
    for _ in range(n_iter):
        iterates.append(sro_step(X, y, lam, penalty, H, iterates[-1], step=step, tol=tol))
        if until is not None and until(iterates[-1]):
            break
    return np.array(iterates)


def ihs(
    X: np.ndarray,
    y: np.ndarray,
    lam: float,
    penalty: str,
    kind: str,
    m: int,
    n_iter: int,
    rng: np.random.Generator,
    *,
    tol: float = 1e-10,
    until: Callable[[np.ndarray], bool] | None = None,
) -> np.ndarray:
    """Iterative Hessian Sketch (Pilanci & Wainwright, 2016), the paper's baseline.

    The same step as Iterative SRO, but every step draws a fresh P, so every
    step pays for the sketch, H and lambda_max(H) again. Returns b_0 = 0, ..., b_T;
    ``until`` as in :func:`iterative_sro`.
    """
    iterates = [np.zeros(X.shape[1])]
    for _ in range(n_iter):
        H = sketched_gram(sketch(kind, X, m, rng), X.shape[0])
        step = 1.0 / largest_eigenvalue(H)
        iterates.append(sro_step(X, y, lam, penalty, H, iterates[-1], step=step, tol=tol))
        if until is not None and until(iterates[-1]):
            break
    return np.array(iterates)


# ---------------------------------------------------------------------------
# Synthetic sparse regression.
# ---------------------------------------------------------------------------


class Problem(NamedTuple):
    """y = X beta + noise, with s-sparse beta, and X = U W with U n x r, W r x d."""

    X: np.ndarray
    y: np.ndarray
    beta: np.ndarray
    U: np.ndarray
    W: np.ndarray


def make_problem(
    n: int, d: int, s: int, rank: int, noise: float, rng: np.random.Generator
) -> Problem:
    """A sparse regression problem whose design has rank(X) = min(rank, d) << n.

    The theory needs rank(X) << n; sketches then need m of the order of
    rank(X), not n. If rank >= d, X has i.i.d. N(0, 1) entries: full column
    rank d, which is << n when n >> d (then U = X and W = I). If rank < d,
    X = U W with U (n x rank) ~ N(0, 1) and W = V^T, V (d x rank) ~ N(0, 1/rank).
    Then X^T X / n ~ V V^T, and ||V^T b||^2 ~ ||b||^2 for every s-sparse b once
    rank >~ s log(d / s) (V^T is a compressed-sensing matrix): the sparse beta
    stays identifiable although X has a (d - rank)-dimensional null space. beta
    has s entries +-1 at random positions; the noise is N(0, noise^2).
    """
    if rank >= d:
        U, W = rng.standard_normal((n, d)), np.eye(d)
        X = U
    else:
        U = rng.standard_normal((n, rank))
        W = (rng.standard_normal((d, rank)) / np.sqrt(rank)).T
        X = U @ W
    beta = np.zeros(d)
    beta[rng.choice(d, size=s, replace=False)] = rng.choice([-1.0, 1.0], size=s)
    y = X @ beta + noise * rng.standard_normal(n)
    return Problem(X, y, beta, U, W)


def sketch_factored(
    kind: str, U: np.ndarray, W: np.ndarray, m: int, rng: np.random.Generator
) -> np.ndarray:
    """P X for X = U W, computed as (P U) W: the same matrix, since P is linear.

    Sketching the n x r factor costs r / d of sketching X for the Gaussian and
    the SRHT. Only for experiments that draw many sketches of one known design;
    the timed solvers sketch X itself, as a user without the factors would.
    """
    return sketch(kind, U, m, rng) @ W


def theory_lambda(n: int, d: int, noise: float, scale: float) -> float:
    """lam = scale * noise * sqrt(log d / n), the order the minimax rate needs."""
    return scale * noise * np.sqrt(np.log(d) / n)


def sketched_noise(y: np.ndarray, m: int, noise: float) -> float:
    """sigma_SRO = sqrt(noise^2 + (n / m) ||y||^2 / n): the noise level SRO's gradient sees.

    At beta* the gradient of SRO's objective is

        (P X)^T P X beta* / n - X^T y / n
          = -X^T eps / n + ((P X)^T P X - X^T X) beta* / n.

    The first term has coordinates of standard deviation noise / sqrt(n); for a
    sketch with E[P^T P] = I and m rows, the second has about ||X beta*|| / sqrt(n m)
    = sqrt((n / m) ||X beta*||^2 / n) / sqrt(n). ||y||^2 / n = ||X beta*||^2 / n +
    noise^2 (up to the noise's fluctuation) stands in for the unknown ||X beta*||^2 / n,
    which makes sigma_SRO slightly larger than the sum of the two.
    """
    n = y.shape[0]
    return float(np.sqrt(noise**2 + (n / m) * float(y @ y) / n))


# ---------------------------------------------------------------------------
# Measuring convergence: the per-step contraction factor.
# ---------------------------------------------------------------------------

FLOOR = 1e-8
"""Relative errors at or below this are at the solver's precision (its subproblems stop
at a relative change of 1e-10): fits of the convergence leave them out."""


class LogLinearFit(NamedTuple):
    """log10(error) ~ slope t + intercept over the steps above the floor."""

    slope: float
    intercept: float
    r2: float
    factor: float
    """10^slope: the error is multiplied by this at every step."""


def log_linear_fit(errors: np.ndarray, floor: float = FLOOR) -> LogLinearFit:
    """Least-squares line through log10(errors[t - 1]) against t = 1, 2, ...

    Only the errors above ``floor`` enter: below it the solver's tolerance, not
    the iteration, sets them. A geometric sequence c q^t gives factor q and
    R^2 = 1 exactly. Needs at least two errors above the floor.
    """
    errors = np.asarray(errors, dtype=float)
    t = np.arange(1, errors.size + 1)
    keep = errors > floor
    if keep.sum() < 2:
        raise ValueError(f"a fit needs two errors above {floor:g}, got {int(keep.sum())}")
    logs = np.log10(errors[keep])
    slope, intercept = np.polyfit(t[keep], logs, 1)
    residual = np.sum((logs - (slope * t[keep] + intercept)) ** 2)
    spread = np.sum((logs - logs.mean()) ** 2)
    r2 = 1.0 - residual / spread if spread > 0 else 1.0
    return LogLinearFit(float(slope), float(intercept), float(r2), float(10**slope))


def contraction_factor(errors: np.ndarray, floor: float = FLOOR) -> float:
    """The fitted per-step factor by which Iterative SRO shrinks its error."""
    return log_linear_fit(errors, floor).factor


# ---------------------------------------------------------------------------
# Measuring rates: log-log slopes per draw, and their distance from a rate.
# ---------------------------------------------------------------------------


def loglog_slopes(xs: list[int], ys: np.ndarray) -> np.ndarray:
    """Least-squares slope of log ys[:, r] against log xs, one per column r.

    ``ys`` has one row per x and one column per draw. An error falling as n^(-1/2)
    gives the slope -1/2 against n; a factor falling as sqrt(rank / m), -1/2 against m.
    """
    ys = np.asarray(ys, dtype=float)
    if ys.ndim != 2 or ys.shape[0] != len(xs) or len(xs) < 2:
        raise ValueError(
            f"loglog_slopes needs one row per x (>= 2 of them), got shape {ys.shape} "
            f"for {len(xs)} values of x"
        )
    return np.polyfit(np.log(xs), np.log(ys), 1)[0]


def band_distance(estimate: Estimate, centre: float) -> Estimate:
    """|mean - centre| with the interval of that distance implied by the mean's interval.

    The upper end is the farthest end of [low, high] from the centre; the lower end the
    nearest one, or 0 if the interval contains the centre. A margin ``below=w`` on it
    holds when the whole interval lies within centre +- w, and is contradicted when it
    lies wholly outside: an equivalence test of the two one-sided kind.
    """
    ends = np.abs(np.array([estimate.low, estimate.high]) - centre)
    inside = estimate.low <= centre <= estimate.high
    return Estimate(
        abs(estimate.value - centre),
        0.0 if inside else float(ends.min()),
        float(ends.max()),
        estimate.n,
        f"distance from {centre:g}, {estimate.method}",
        estimate.unit,
        estimate.items,
    )
