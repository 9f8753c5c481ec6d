"""Tests of the Numba SMO solver for the BTSVC dual (thesis 5.29-5.31).

The reference is an independent dense solver written here: SciPy's L-BFGS-B
on the dual with the dense covariance matrix, finished by a dense projected
Newton method (L-BFGS-B alone stalls on the ill-conditioned duals that a
large ``kappa_b`` produces).
"""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

import reference
from bsvm_scale._compiled import smo_trig as smo
from bsvm_scale.models.btsvc import solve_dual
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache


# -- dense references ---------------------------------------------------------------
def dense_cov(X, kappa0, kappa, kappa_b):
    D = ((X[:, None, :] - X[None, :, :]) ** 2 * np.broadcast_to(kappa, (X.shape[1],))).sum(-1)
    return kappa0 * np.exp(-0.5 * D) + kappa_b


def dense_dual(alpha, y, S):
    """Value and gradient of (5.29) with a dense covariance ``S``."""
    v = y * alpha
    t = 2.0 * alpha / np.pi
    Sv = S @ v
    val = 0.5 * v @ Sv - alpha.sum() + np.sum(4 / np.pi * alpha * np.arctan(t) - np.log1p(t * t))
    grad = y * Sv - 1.0 + 4 / np.pi * np.arctan(t)
    return val, grad


def dense_violation(alpha, y, S):
    _, g = dense_dual(alpha, y, S)
    return np.where(alpha > 0, np.abs(g), np.maximum(0.0, -g))


def dense_reference_solve(y, S, n_newton=100):
    """L-BFGS-B on (5.29), then dense projected Newton to full accuracy."""
    n = y.size
    res = minimize(dense_dual, np.zeros(n), args=(y, S), jac=True, method="L-BFGS-B",
                   bounds=[(0.0, None)] * n,
                   options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 3000, "maxcor": 30})
    a = res.x.copy()
    Q = (y[:, None] * y[None, :]) * S
    for _ in range(n_newton):
        val, g = dense_dual(a, y, S)
        free = (a > 1e-14) | (g < 0)
        a[~free] = 0.0
        if np.max(np.where(free, np.abs(g), 0.0)) < 1e-13:
            break
        H = Q[np.ix_(free, free)] + np.diag(8.0 / (np.pi ** 2 + 4 * a[free] ** 2))
        p = np.zeros(n)
        p[free] = -np.linalg.solve(H, g[free])
        t = 1.0
        while t > 1e-12:
            cand = np.maximum(a + t * p, 0.0)
            if dense_dual(cand, y, S)[0] <= val:
                break
            t *= 0.5
        a = cand
    return a


# -- data ---------------------------------------------------------------------------
def overlapping_data(n=160, seed=0):
    """Strongly overlapping classes plus near-duplicate points, some of them
    with the opposite label (noisy labels)."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-0.4, 1.0, (n // 2, 2)), rng.normal(0.4, 1.0, (n // 2, 2))]
    y = np.r_[-np.ones(n // 2), np.ones(n // 2)]
    dup = rng.choice(n, 8, replace=False)
    Xd = X[dup] + 1e-9 * rng.standard_normal((8, 2))
    yd = y[dup].copy()
    yd[:4] *= -1.0  # same input, opposite label
    return np.r_[X, Xd, X[dup[:2]]], np.r_[y, yd, y[dup[:2]]]


def _solve(X, y, cov, tau, alpha0=None, cache_mb=64.0):
    cache = RowCache(X, cov, cache_mb)
    return solve_dual(cache, y, alpha0, tau, 10 ** 6)


@pytest.mark.parametrize("hyp", [(10.0, 0.5, 100.0), (1.0, 2.0, 0.1), (100.0, 5.0, 1.0)])
def test_smo_matches_dense_solver(hyp):
    X, y = overlapping_data()
    cov = GaussianCovariance(*hyp)
    S = dense_cov(X, *hyp)
    sol = _solve(X, y, cov, 1e-8)
    assert sol["status"] == 0
    a_ref = dense_reference_solve(y, S)
    f_ref = S @ (y * a_ref)
    assert np.max(np.abs(sol["f"] - f_ref)) < 1e-6
    # f returned is Sigma v of the returned alpha
    np.testing.assert_allclose(sol["f"], S @ (y * sol["alpha"]), atol=1e-9)
    # the SMO solution is at least as good as the reference
    assert dense_dual(sol["alpha"], y, S)[0] <= dense_dual(a_ref, y, S)[0] + 1e-9
    # y f > -1 always (the dual keeps alpha finite)
    assert np.all(y * sol["f"] > -1.0)


@pytest.mark.parametrize("tau", [1e-3, 1e-6])
def test_kkt_stopping_rule_holds(tau):
    X, y = overlapping_data(seed=3)
    hyp = (10.0, 0.5, 100.0)
    sol = _solve(X, y, GaussianCovariance(*hyp), tau)
    assert sol["status"] == 0 and sol["max_violation"] <= tau
    viol = dense_violation(sol["alpha"], y, dense_cov(X, *hyp))
    assert viol.max() <= tau * (1 + 1e-6) + 1e-10
    # (5.31) in the thesis' form: beta_up >= -tau and beta_low <= tau
    S = dense_cov(X, *hyp)
    a = sol["alpha"]
    F = -(S @ (y * a)) + y - 4 / np.pi * np.arctan(2 * y * a / np.pi)
    up = (a > 0) | (y < 0)
    low = (a > 0) | (y > 0)
    assert F[up].min() >= -tau - 1e-10 and F[low].max() <= tau + 1e-10


def test_warm_start_and_tiny_cache_give_same_solution():
    X, y = overlapping_data(seed=5)
    first = _solve(X, y, GaussianCovariance(10.0, 0.5, 100.0), 1e-9)
    cov2 = GaussianCovariance(3.0, 1.5, 10.0)
    cold = _solve(X, y, cov2, 1e-9)
    warm = _solve(X, y, cov2, 1e-9, alpha0=first["alpha"], cache_mb=1e-6)  # 2 rows only
    assert warm["status"] == 0
    np.testing.assert_allclose(warm["f"], cold["f"], atol=1e-7)


def test_iteration_limit_is_reported():
    X, y = overlapping_data(seed=7)
    cache = RowCache(X, GaussianCovariance(10.0, 0.5, 100.0), 16)
    sol = solve_dual(cache, y, None, 1e-10, 3)
    assert sol["status"] == 1 and sol["n_iter"] == 3 and sol["max_violation"] > 1e-10


@pytest.mark.parametrize("w", [1.0, 0.3, 7.0])
def test_dual_term_derivatives(w):
    """``w phi(a / w)``: its derivatives by central differences, and the
    perspective of ``phi`` (the unweighted term at ``w = 1``)."""
    a = np.array([0.0, 1e-3, 0.5, 3.0, 40.0])
    h = 1e-6
    for x in a[1:]:
        num = (smo.dual_term(x + h, w) - smo.dual_term(x - h, w)) / (2 * h)
        assert abs(num - smo.dual_term_grad(x, w)) < 1e-7 * max(1.0, w)
        num2 = (smo.dual_term_grad(x + h, w) - smo.dual_term_grad(x - h, w)) / (2 * h)
        assert abs(num2 - smo.dual_term_hess(x, w)) < 1e-6
        assert smo.dual_term(x, w) == pytest.approx(w * smo.dual_term(x / w, 1.0), rel=1e-14)
        assert smo.dual_term_hess(x, w) == pytest.approx(smo.dual_term_hess(x / w, 1.0) / w,
                                                         rel=1e-14)
    assert smo.dual_term(0.0, w) == 0.0 and smo.dual_term_grad(1e12, w) < 2.0


def _pair_kkt(ai, aj, gi, gj, kii, kjj, kij, di, dj, wi=1.0, wj=1.0):
    Gi = gi + kii * di + kij * dj + smo.dual_term_grad(ai + di, wi) - smo.dual_term_grad(ai, wi)
    Gj = gj + kij * di + kjj * dj + smo.dual_term_grad(aj + dj, wj) - smo.dual_term_grad(aj, wj)
    vi = abs(Gi) if ai + di > 0 else max(0.0, -Gi)
    vj = abs(Gj) if aj + dj > 0 else max(0.0, -Gj)
    return max(vi, vj)


_WEIGHT = st.one_of(st.just(1.0), st.floats(0.05, 20.0))


@settings(max_examples=200, deadline=None)
@given(ai=st.one_of(st.just(0.0), st.floats(0.0, 50.0)),
       aj=st.one_of(st.just(0.0), st.floats(0.0, 50.0)),
       gi=st.floats(-5.0, 5.0), gj=st.floats(-5.0, 5.0),
       k=st.floats(1e-3, 200.0), rho=st.floats(-1.0, 1.0), r=st.floats(0.1, 10.0),
       wi=_WEIGHT, wj=_WEIGHT)
def test_pair_subproblem_reaches_its_kkt_point(ai, aj, gi, gj, k, rho, r, wi, wj):
    kii, kjj = k, k * r
    kij = rho * np.sqrt(kii * kjj)  # includes singular (duplicate-point) blocks
    if rho < 0.0 and kii * kjj - kij * kij <= 1e-12 * kii * kjj:
        # (numerically) rho = -1, e.g. -1 + 1e-16 (a case hypothesis found):
        # the quadratic is flat along (1, s), s = -kii/kij > 0, where the pair
        # objective's slope tends to the value below (phi' -> 2); in a dual
        # such a block comes from coinciding inputs, whose f agree, and the
        # slope is (y_i f_i + 1) + s (y_j f_j + 1) = 2 > 0 (with y f = g + 1 -
        # phi'); other (g_i, g_j) have no minimiser
        s = -kii / kij
        assume(gi - smo.dual_term_grad(ai, wi) + 2.0
               + s * (gj - smo.dual_term_grad(aj, wj) + 2.0) > 1e-3)
    di, dj = smo.solve_pair(smo.Pair(ai, aj, gi, gj, kii, kjj, kij, wi, wj), 1e-12)
    assert ai + di >= 0.0 and aj + dj >= 0.0
    assert _pair_kkt(ai, aj, gi, gj, kii, kjj, kij, di, dj, wi, wj) < 1e-8 * (1 + k * (1 + r))


@settings(max_examples=200, deadline=None)
@given(a=st.one_of(st.just(0.0), st.floats(0.0, 100.0)), g=st.floats(-5.0, 5.0),
       k=st.floats(1e-4, 500.0), w=_WEIGHT)
def test_single_subproblem_is_exact(a, g, k, w):
    d = smo.solve_single(a, g, k, w, 1e-13)
    G = g + k * d + smo.dual_term_grad(a + d, w) - smo.dual_term_grad(a, w)
    assert a + d >= 0.0
    if a + d > 0:
        assert abs(G) < 1e-9 * (1 + k)
    else:
        assert G >= -1e-12


# -- shrinking -------------------------------------------------------------------------
def test_shrunk_solve_meets_kkt_on_every_case_and_matches_the_full_solve():
    """Warm start from other hyperparameters: cases left out of the working
    problem must be re-checked (some become SVs) and the result must satisfy
    (5.31) everywhere, as the solve without shrinking does."""
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(-1.5, 1.0, (300, 2)), rng.normal(1.5, 1.0, (300, 2))]
    y = np.r_[-np.ones(300), np.ones(300)]
    start = _solve(X, y, GaussianCovariance(1.0, 0.3, 1.0), 1e-8)["alpha"]
    cov = GaussianCovariance(30.0, 2.0, 1.0)
    S = dense_cov(X, 30.0, 2.0, 1.0)
    shrunk = solve_dual(RowCache(X, cov, 64.0), y, start, 1e-8, 10 ** 6, shrink=True)
    full = solve_dual(RowCache(X, cov, 64.0), y, start, 1e-8, 10 ** 6, shrink=False)
    assert shrunk["status"] == 0 and shrunk["n_active"] < 600
    assert dense_violation(shrunk["alpha"], y, S).max() <= 1e-8 * (1 + 1e-6)
    np.testing.assert_allclose(shrunk["f"], S @ (y * shrunk["alpha"]), atol=1e-8)
    np.testing.assert_allclose(shrunk["f"], full["f"], atol=1e-6)
    # cases that were out of the first working problem and are SVs now
    g0 = y * (S @ (y * start)) - 1.0
    out0 = (start == 0) & (g0 >= 0.25)
    assert np.any(out0 & (shrunk["alpha"] > 0))


def test_cold_solve_shrinks_after_its_first_pass_and_meets_kkt_everywhere():
    rng = np.random.default_rng(3)
    X = np.r_[rng.normal(-1.5, 1.0, (500, 2)), rng.normal(1.5, 1.0, (500, 2))]
    y = np.r_[-np.ones(500), np.ones(500)]
    cov = GaussianCovariance(10.0, 1.0, 1.0)
    S = dense_cov(X, 10.0, 1.0, 1.0)
    sol = solve_dual(RowCache(X, cov, 64.0), y, None, 1e-8, 10 ** 6)
    assert sol["status"] == 0 and sol["n_active"] < 1000
    assert dense_violation(sol["alpha"], y, S).max() <= 1e-8 * (1 + 1e-6)
    np.testing.assert_allclose(sol["f"], S @ (y * sol["alpha"]), atol=1e-8)


def test_parallel_chunks_give_the_serial_iterates():
    """The partner search and the fused update + violation scan reduce their
    chunks in index order: 1, 2 or 7 chunks give the same iterates bit for bit,
    and the same as the serial scans (select_partner, max_violation)."""
    X, y = overlapping_data(n=300, seed=2)
    cov = GaussianCovariance(10.0, 1.0, 5.0)
    rng = np.random.default_rng(0)
    weights = rng.choice([0.0, 0.5, 1.0, 3.0], y.size)
    weights[5] = 2.0  # the variable whose partner is searched below (never of weight 0)
    for w in (np.ones(y.size), weights):
        outs = []
        for chunks in (1, 2, 7):
            cache = RowCache(X, cov, 64.0)
            dual = smo.TrigDual(y, w, np.zeros(y.size), np.empty(y.size))
            smo.gradient_from_f(dual, np.zeros(y.size))
            it, vmax, status = smo.smo_loop(cache.kernel, cache.state, dual, 1e-8, 10 ** 6,
                                            chunks)
            assert status == 0
            outs.append((dual.alpha, dual.g, it))
        for alpha, g, it in outs[1:]:
            assert np.array_equal(alpha, outs[0][0]) and np.array_equal(g, outs[0][1])
            assert it == outs[0][2]
    # the chunked searches pick what the serial ones pick
    a = np.where((rng.random(y.size) < 0.5) | (weights == 0), 0.0, rng.random(y.size))
    gg = rng.normal(size=y.size)
    row = cov.row(X, 5)
    for w in (np.ones(y.size), np.where(weights == 0, 0.0, weights + 0.1)):
        dual = smo.TrigDual(y, w, a, gg)
        for chunks in (1, 3, 8):
            assert smo.select_partner_parallel(5, dual, row, 15.0, chunks) == \
                smo.select_partner(5, dual, row, 15.0)
            g1, g2 = gg.copy(), gg.copy()
            k, v = smo.update_and_violation(dual._replace(g=g1), row, 0.3, row, -0.1, chunks)
            smo.update_gradient(g2, y, row, 0.3, row, -0.1)
            assert np.array_equal(g1, g2) and (k, v) == smo.max_violation(dual._replace(g=g2))


# -- case weights ------------------------------------------------------------------------
def _weighted_problem(seed=0, n=160):
    """:func:`overlapping_data` with weights in ``[0.2, 4]`` and ten cases of weight 0."""
    X, y = overlapping_data(n=n, seed=seed)
    rng = np.random.default_rng(seed + 10)
    w = rng.uniform(0.2, 4.0, y.size)
    w[rng.choice(y.size, 10, replace=False)] = 0.0
    return X, y, w


@pytest.mark.parametrize("hyp", [(10.0, 0.5, 100.0), (1.0, 2.0, 0.1), (100.0, 5.0, 1.0)])
def test_weighted_smo_matches_a_general_purpose_solver(hyp):
    """The weighted dual (perspective ``w phi(alpha / w)``) solved by the SMO
    and by L-BFGS-B + dense Newton on the dense dual: same solution and
    objective, (5.31) on every case, and ``f`` is the minimiser of the
    weighted primal ``1/2 f^T Sigma^-1 f + sum_i w_i l(y_i f_i)``."""
    X, y, w = _weighted_problem()
    S = dense_cov(X, *hyp)
    sol = solve_dual(RowCache(X, GaussianCovariance(*hyp), 64.0), y, None, 1e-8, 10 ** 6,
                     weights=w)
    assert sol["status"] == 0 and sol["max_violation"] <= 1e-8
    a_ref = reference.trig_weighted_dual_solve(y, S, w)
    assert np.max(np.abs(sol["f"] - S @ (y * a_ref))) < 1e-6
    np.testing.assert_allclose(sol["f"], S @ (y * sol["alpha"]), atol=1e-9)
    val = reference.trig_weighted_dual(sol["alpha"], y, S, w)[0]
    val_ref = reference.trig_weighted_dual(a_ref, y, S, w)[0]
    assert val <= val_ref + 1e-9 and val == pytest.approx(val_ref, rel=1e-9, abs=1e-9)
    assert reference.trig_weighted_violation(sol["alpha"], y, S, w).max() <= 1e-8 * (1 + 1e-6)
    assert np.all(sol["alpha"][w == 0] == 0.0) and np.any(sol["alpha"][w > 0] > 0)
    # alpha_i = w_i l'(xi_i) (the primal's stationarity, f = Sigma v with v = w y l')
    np.testing.assert_allclose(y * sol["alpha"], reference.trig_weighted_primal_v(sol["f"], y, w),
                               rtol=1e-6, atol=1e-7)
    assert np.all(y[w > 0] * sol["f"][w > 0] > -1.0)


def test_integer_weights_are_duplicated_cases():
    """Weight ``k`` = ``k`` copies: the same ``f`` at every input, and the
    copies' ``v = y alpha`` add up to the weighted case's."""
    X, y = overlapping_data(n=100, seed=4)
    k = np.random.default_rng(1).integers(1, 4, y.size)
    cov = GaussianCovariance(10.0, 0.5, 5.0)
    weighted = solve_dual(RowCache(X, cov, 64.0), y, None, 1e-12, 10 ** 7,
                          weights=k.astype(float))
    Xd, yd = np.repeat(X, k, axis=0), np.repeat(y, k)
    dup = solve_dual(RowCache(Xd, cov, 64.0), yd, None, 1e-12, 10 ** 7)
    assert weighted["status"] == 0 and dup["status"] == 0
    first = np.r_[0, np.cumsum(k)[:-1]]
    np.testing.assert_allclose(weighted["f"], dup["f"][first], rtol=0, atol=1e-9)
    v_dup = np.add.reduceat(yd * dup["alpha"], first)
    np.testing.assert_allclose(y * weighted["alpha"], v_dup, rtol=0, atol=1e-9)


def test_zero_weight_is_a_removed_case_also_from_a_warm_start():
    X, y, w = _weighted_problem(seed=6)
    cov = GaussianCovariance(3.0, 1.0, 10.0)
    on = w > 0
    alpha0 = np.full(y.size, 0.7)  # a warm start that is infeasible where w = 0
    sol = solve_dual(RowCache(X, cov, 64.0), y, alpha0, 1e-11, 10 ** 7, weights=w)
    sub = solve_dual(RowCache(X[on], cov, 64.0), y[on], None, 1e-11, 10 ** 7, weights=w[on])
    assert sol["status"] == 0 and np.all(sol["alpha"][~on] == 0.0)
    np.testing.assert_allclose(sol["f"][on], sub["f"], rtol=0, atol=1e-9)
    np.testing.assert_allclose(sol["f"], dense_cov(X, 3.0, 1.0, 10.0) @ (y * sol["alpha"]),
                               atol=1e-9)


def test_all_ones_weights_are_the_unweighted_solve_bit_for_bit():
    X, y = overlapping_data(seed=8)
    cov = GaussianCovariance(10.0, 0.5, 100.0)
    a = solve_dual(RowCache(X, cov, 64.0), y, None, 1e-8, 10 ** 6)
    b = solve_dual(RowCache(X, cov, 64.0), y, None, 1e-8, 10 ** 6, weights=np.ones(y.size))
    assert np.array_equal(a["alpha"], b["alpha"]) and np.array_equal(a["f"], b["f"])
    assert a["n_iter"] == b["n_iter"]
