"""Newton's method for the BSVR dual (4.25) (bsvm_scale.inference.map_newton)
against a general-purpose QP solver (SLSQP on the split dual), the SMO run to
its end, and dense products; on stiff problems (large kappa0, long length
scales) where the SMO needs thousands of pair steps."""

import numpy as np
import pytest

from bsvm_scale._compiled.row_cache import rows_block, rows_matvec
from bsvm_scale._compiled.silf_start import start_dual
from bsvm_scale._compiled.smo_silf import silf_params, smo_silf
from bsvm_scale.inference import map_newton
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from bsvm_scale.inference.losses import silf_sample
from bsvm_scale.inference.map_newton import products, silf_newton, smo_newton

from reference import dense_cov, silf_dual_objective, silf_dual_qp, silf_kkt_violation


def _stiff(n, seed=0, d=2):
    """Inputs on a long length scale relative to their range (what the
    evidence picks on Friedman #1 with kappa0 inferred)."""
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.uniform(-1.5, 1.5, size=(n, d)))
    y = 2.0 * X[:, 0] + np.sin(2 * X[:, 1]) + silf_sample(10.0, 0.2, 0.3, n,
                                                           random_state=seed + 1)
    return X, np.ascontiguousarray(y)


def _setup(X, y, kappa0, kappa, kappa_b, C, eps, beta, weights=None, cache_mb=64.0):
    cov = GaussianCovariance(kappa0, kappa, 0.0)
    cache = RowCache(X, cov, cache_mb)
    par = silf_params(C, eps, beta, kappa_b, X.shape[0], weights)
    return cache, par


def _smo(cache, y, par, tol, nu=None):
    dual = start_dual(cache.kernel, y, np.zeros(y.size) if nu is None else nu.copy(), par)
    _, n_iter, vmax = smo_silf(cache.kernel, cache.state, dual, par, tol, 10**8, 0.0)
    return dual.nu, n_iter, vmax


def _violation(nu, X, y, kappa0, kappa, kappa_b, C, eps, beta, w):
    S = dense_cov(X, X, kappa0, kappa, kappa_b)
    dadd = np.divide(2 * beta * eps, C * w, out=np.zeros(y.size), where=w > 0)
    return silf_kkt_violation(nu, S @ nu + dadd * nu - y, C, eps, beta, w).max(), S


@pytest.mark.parametrize("kappa0,beta,C", [(3000.0, 0.1, 2.0), (50.0, 0.3, 10.0)])
def test_newton_matches_a_general_purpose_qp_solver(kappa0, beta, C):
    """From zero, Newton reaches the QP optimum (solution and objective), with
    case weights (per-case boxes, zeros), at large and at moderate kappa0."""
    X, y = _stiff(40, seed=3)
    rng = np.random.default_rng(4)
    w = rng.uniform(0.3, 2.0, 40)
    w[::9] = 0.0
    eps, kappa, kb = 0.2, 0.05, 1.0
    cache, par = _setup(X, y, kappa0, kappa, kb, C, eps, beta, w)
    res = silf_newton(products(cache.kernel, kb, cache), y, np.zeros(40), par.box, par.dadd,
                      eps, beta)
    assert res is not None and res.n_iter >= 1
    S = dense_cov(X, X, kappa0, kappa, kb)
    nu_ref = silf_dual_qp(S, y, C, eps, beta, w)
    obj, obj_ref = (silf_dual_objective(v, S, y, C, eps, beta, w) for v in (res.nu, nu_ref))
    assert obj <= obj_ref + 1e-9 * abs(obj_ref)
    np.testing.assert_allclose(res.nu, nu_ref, atol=1e-4 * C)
    vmax, _ = _violation(res.nu, X, y, kappa0, kappa, kb, C, eps, beta, w)
    assert vmax <= 1e-7
    assert np.all(res.nu[w == 0] == 0.0) and np.all(np.abs(res.nu) <= C * w)


def test_newton_on_a_stiff_problem_agrees_with_the_smo_in_few_iterations():
    """kappa0 = 10^4 on a long length scale: the SMO needs thousands of pair
    steps, Newton a few dozen iterations; both meet (4.33) and give the same
    dual objective (the problem is strictly convex: the same solution)."""
    X, y = _stiff(400, seed=5)
    kappa0, kappa, kb, C, eps, beta = 1e4, 0.02, 1.0, 2.0, 0.2, 0.1
    cache, par = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    nu_smo, n_smo, v_smo = _smo(cache, y, par, 1e-6)
    res = silf_newton(products(cache.kernel, kb, cache), y, np.zeros(400), par.box, par.dadd,
                      eps, beta)
    assert res is not None
    assert n_smo > 20 * res.n_iter  # what the solver is for
    w = np.ones(400)
    vmax, S = _violation(res.nu, X, y, kappa0, kappa, kb, C, eps, beta, w)
    assert vmax <= 1e-6
    obj, obj_smo = (silf_dual_objective(v, S, y, C, eps, beta, w) for v in (res.nu, nu_smo))
    assert obj <= obj_smo + 1e-9 * abs(obj_smo)
    np.testing.assert_allclose(res.nu, nu_smo, atol=1e-3)


def test_smo_then_newton_meets_the_stopping_rule_exactly(monkeypatch):
    """smo_newton hands over after NEWTON_AFTER n SMO iterations; the
    violation it reports is measured exactly (it is the SMO's), and the
    answer is the plain SMO's to the tolerance."""
    X, y = _stiff(300, seed=7)
    kappa0, kappa, kb, C, eps, beta = 5e3, 0.03, 2.0, 3.0, 0.2, 0.1
    monkeypatch.setattr(map_newton, "NEWTON_AFTER", 1)
    cache, par = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    out = smo_newton(cache, y, np.zeros(300), par, eps, beta, 1e-6, 10**8, 0.0)
    assert out.n_newton >= 1 and out.violation <= 1e-6
    w = np.ones(300)
    vmax, S = _violation(out.dual.nu, X, y, kappa0, kappa, kb, C, eps, beta, w)
    assert vmax <= 1e-6 * 1.0001
    cache2, _ = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    nu_smo, _, _ = _smo(cache2, y, par, 1e-6)
    np.testing.assert_allclose(out.dual.nu, nu_smo, atol=1e-3)
    # g = Q nu - y on return, as after the SMO alone
    dadd = 2 * beta * eps / C
    np.testing.assert_allclose(out.dual.g, S @ out.dual.nu + dadd * out.dual.nu - y, atol=1e-7)


def test_newton_needs_every_row_in_the_cache(monkeypatch):
    """With a row cache smaller than the matrix a Newton iteration would
    compute n kernel values per support vector: the SMO solves alone."""
    X, y = _stiff(300, seed=7)
    kappa0, kappa, kb, C, eps, beta = 5e3, 0.03, 2.0, 3.0, 0.2, 0.1
    monkeypatch.setattr(map_newton, "NEWTON_AFTER", 1)
    cache, par = _setup(X, y, kappa0, kappa, kb, C, eps, beta, cache_mb=0.2)
    assert cache.n_slots < 300
    out = smo_newton(cache, y, np.zeros(300), par, eps, beta, 1e-6, 10**8, 0.0)
    assert out.n_newton == 0 and out.violation <= 1e-6


def test_an_easy_problem_never_reaches_newton():
    """Below the hand-over the result is the SMO's, bit for bit."""
    X, y = _stiff(200, seed=9)
    kappa0, kappa, kb, C, eps, beta = 2.0, 1.0, 1.0, 1.0, 0.2, 0.3
    cache, par = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    out = smo_newton(cache, y, np.zeros(200), par, eps, beta, 1e-3, 10**8, 0.0)
    cache2, _ = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    nu_smo, n_smo, _ = _smo(cache2, y, par, 1e-3)
    assert out.n_newton == 0 and out.n_iter == n_smo
    assert np.array_equal(out.dual.nu, nu_smo)


def test_a_zone_too_large_gives_up(monkeypatch):
    X, y = _stiff(100, seed=11)
    cache, par = _setup(X, y, 1e3, 0.05, 1.0, 2.0, 0.2, 0.1)
    monkeypatch.setattr(map_newton, "MAX_ZONE", 0)
    monkeypatch.setattr(map_newton, "_partition_step", lambda prod, a, f, *rest: (a, f))
    res = silf_newton(products(cache.kernel, 1.0, cache), y, np.zeros(100) + 0.5, par.box,
                      par.dadd, 0.2, 0.1)
    assert res is None


@pytest.mark.parametrize("cache_mb", [64.0, 0.01])
def test_products_against_the_dense_covariance(cache_mb):
    X, y = _stiff(120, seed=13, d=3)
    kappa0, kappa, kb = 7.0, np.array([0.5, 1.0, 2.0]), 0.3
    cache = RowCache(X, GaussianCovariance(kappa0, kappa, 0.0), cache_mb)
    prod = products(cache.kernel, kb, cache)
    S = dense_cov(X, X, kappa0, kappa, kb)
    idx = np.array([5, 0, 77, 119, 3])
    coef = np.array([1.0, -2.0, 0.5, 3.0, -0.25])
    np.testing.assert_allclose(prod.full(idx, coef), S[:, idx] @ coef, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(prod.block(idx), S[np.ix_(idx, idx)], rtol=1e-12)
    assert np.array_equal(prod.full(np.array([], dtype=np.int64), np.array([])), np.zeros(120))
    out = rows_matvec(cache.kernel, cache.state, idx, coef)
    np.testing.assert_allclose(out, (S - kb)[:, idx] @ coef, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(rows_block(cache.kernel, cache.state, idx),
                               (S - kb)[np.ix_(idx, idx)], rtol=1e-12)


def _objective_at(monkeypatch, after, X, y, theta):
    from bsvm_scale.inference.objective_silf import SilfObjective

    monkeypatch.setattr(map_newton, "NEWTON_AFTER", after)
    P = SilfObjective(X, y, None, 0.1, False, 1e-8, 64.0, 10**8)
    return P, P.evaluate(theta)


def test_the_evidence_and_its_gradient_do_not_depend_on_the_solver(monkeypatch):
    """At a stiff point of an inferred-kappa0 search the evaluation through
    Newton equals the SMO's (value and every gradient entry, (4.38)-(4.41)),
    and the hand-over rule of the next solve is part of the search state."""
    X, y = _stiff(300, seed=17)
    theta = np.array([np.log(2.0), np.log(0.2), np.log(3e3), np.log(0.03), np.log(1.0)])
    _, smo = _objective_at(monkeypatch, 10**6, X, y, theta)
    P, newton = _objective_at(monkeypatch, 1, X, y, theta)
    assert smo.info["newton_iter"] == 0 and newton.info["newton_iter"] > 0
    assert newton.value == pytest.approx(smo.value, rel=1e-8, abs=1e-8)
    np.testing.assert_allclose(newton.grad, smo.grad, rtol=1e-6, atol=1e-6)
    assert P.get_state()["n_newton"] == newton.info["newton_iter"]


def test_an_inferred_kappa0_fit_through_newton_resumes_exactly():
    """A fit whose solves go through Newton (kappa0 inferred on a linear
    trend), resumed from the checkpoint of half its evaluations, ends where
    the uninterrupted fit did, bit for bit."""
    from bsvm_scale import BayesianSVR

    rng = np.random.default_rng(3)
    X = rng.uniform(-2, 2, (300, 2))
    y = 3 * X[:, 0] + np.sin(2 * X[:, 1]) + 0.3 * rng.standard_normal(300)
    est = BayesianSVR(n_starts=1, init_subsample=None, kappa0="evidence")
    recs = []
    full = est.fit(X, y, callback=lambda k, rec, st: recs.append((rec, st)))
    newton = [r["info"].get("newton_iter", 0) for r, _ in recs]
    cut = len(recs) // 2
    assert sum(newton[:cut]) > 0 and sum(newton[cut:]) > 0
    resumed = est.fit(X, y, init={"theta": full.starts_[0]["theta0"],
                                  "state": recs[cut - 1][1],
                                  "evaluations": [r for r, _ in recs[:cut]]})
    np.testing.assert_array_equal(resumed.theta_, full.theta_)
    assert resumed.log_evidence_ == full.log_evidence_


def test_a_held_solve_keeps_every_case_in_its_interval():
    """_held_solve against the plain solve it refines: cases the plain solve
    pushes past their bound or through zero are held at that end, and the
    others solve the system with the held values on the right-hand side."""
    rng = np.random.default_rng(21)
    A = rng.standard_normal((30, 30))
    S = A @ A.T + 1e-3 * np.eye(30)
    dadd = np.full(30, 0.5)
    s = np.where(rng.random(30) < 0.5, -1.0, 1.0)
    box = np.full(30, 1.5)
    rhs = 3.0 * rng.standard_normal(30)
    plain = np.linalg.solve(S + np.diag(dadd), rhs)
    assert np.any(np.abs(plain) > box) and np.any(plain * s < 0)  # something to hold
    x = map_newton._held_solve(S.copy(), dadd, rhs, s, box)
    held = (x == 0.0) | (np.abs(x) == box)
    K, H = np.flatnonzero(~held), np.flatnonzero(held)
    assert H.size > 0 and K.size > 0
    assert np.all(x[K] * s[K] > 0) and np.all(np.abs(x[K]) < box[K])
    assert np.all((x[H] == 0.0) | (x[H] == s[H] * box[H]))
    lhs = (S + np.diag(dadd))[np.ix_(K, K)] @ x[K]
    np.testing.assert_allclose(lhs, rhs[K] - S[np.ix_(K, H)] @ x[H], rtol=1e-10, atol=1e-10)
    # nothing to hold: the plain solve
    s_all, big = np.sign(plain), np.full(30, 1e3)
    np.testing.assert_allclose(map_newton._held_solve(S.copy(), dadd, rhs, s_all, big), plain,
                               rtol=1e-12)


def _warm_problem():
    """A stiff problem solved at one kappa, and the same data at a kappa 10 %
    larger: the warm start of the next solve in a search."""
    X, y = _stiff(400, seed=23)
    kappa0, kb, C, eps, beta = 1e4, 1.0, 2.0, 0.2, 0.1
    cache, par = _setup(X, y, kappa0, 0.02, kb, C, eps, beta)
    nu_prev, _, _ = _smo(cache, y, par, 1e-8)
    cache2, _ = _setup(X, y, kappa0, 0.022, kb, C, eps, beta)
    return X, y, (kappa0, 0.022, kb, C, eps, beta), cache2, par, nu_prev


def test_holding_cases_in_the_first_step_saves_newton_iterations(monkeypatch):
    """From the previous solution at new hyperparameters, a first step whose
    clipped cases move f by the large eigenvalues of Sigma leaves Newton to
    crawl zone by zone; holding them first lands next to the optimum."""
    X, y, hyp, cache, par, nu_prev = _warm_problem()
    kappa0, kappa, kb, C, eps, beta = hyp
    prod = products(cache.kernel, kb, cache)
    held = silf_newton(prod, y, nu_prev, par.box, par.dadd, eps, beta)
    monkeypatch.setattr(map_newton, "HOLD_ROUNDS", 1)
    clipped = silf_newton(prod, y, nu_prev, par.box, par.dadd, eps, beta)
    assert held is not None and clipped is not None
    assert held.n_iter < clipped.n_iter
    for res in (held, clipped):
        vmax, _ = _violation(res.nu, X, y, kappa0, kappa, kb, C, eps, beta, np.ones(y.size))
        assert vmax <= 1e-7


def test_a_stiff_solve_goes_straight_to_newton():
    """After a solve that needed Newton, the next begins with Newton at its
    warm start (no SMO pass before it); the answer meets (4.33) and is the
    SMO's. Without every row in the cache the SMO solves alone."""
    X, y, hyp, cache, par, nu_prev = _warm_problem()
    kappa0, kappa, kb, C, eps, beta = hyp
    out = smo_newton(cache, y, nu_prev.copy(), par, eps, beta, 1e-6, 10**8, 0.0, stiff=True)
    assert out.n_newton >= 1 and out.violation <= 1e-6
    cache_smo, _ = _setup(X, y, kappa0, kappa, kb, C, eps, beta)
    nu_smo, n_smo, _ = _smo(cache_smo, y, par, 1e-6, nu_prev)
    assert out.n_iter < n_smo / 20
    np.testing.assert_allclose(out.dual.nu, nu_smo, atol=1e-3)
    small, _ = _setup(X, y, kappa0, kappa, kb, C, eps, beta, cache_mb=0.2)
    alone = smo_newton(small, y, nu_prev.copy(), par, eps, beta, 1e-6, 10**8, 0.0, stiff=True)
    assert alone.n_newton == 0 and alone.violation <= 1e-6


def test_silf_newton_checks_the_loss_shape_once():
    """Checked at entry (the products are never reached), so that the inner
    loops can use the unchecked derivative."""
    with pytest.raises(ValueError, match="beta=1.5"):
        silf_newton(None, np.zeros(3), np.zeros(3), 1.0, 0.1, 0.2, 1.5)
    with pytest.raises(ValueError, match="epsilon=0.0"):
        silf_newton(None, np.zeros(3), np.zeros(3), 1.0, 0.1, 0.0, 0.5)
