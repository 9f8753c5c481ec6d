"""MAP solutions from the pivoted-Cholesky factor (bsvm_scale.inference.map_factor),
against dense references: the bound on f, the gradient contractions, the
routes' stopping rules and the objectives that use them."""

import numpy as np
import pytest

from bsvm_scale._compiled.smo_silf import silf_params
from bsvm_scale.inference import map_lowrank
from bsvm_scale.inference.covariance import GaussianCovariance
from bsvm_scale.inference.map_factor import (FactorCovariance, residual_bound, sample_check,
                                             silf_route, trig_route)
from bsvm_scale.inference.map_lowrank import factor_with_residual, silf_start, trig_start
from bsvm_scale.inference.objective_silf import SilfObjective
from bsvm_scale.inference.objective_trig import TrigObjective

from reference import (c2_standardised, dense_cov, dense_dcov, silf_kkt_violation,
                       sinc_silf_narrow, trig_weighted_violation)


_c2, _sinc = c2_standardised, sinc_silf_narrow


def _cov_ard(d, groups=None):
    kappa = np.linspace(0.3, 1.2, d if groups is None else int(max(groups)) + 1)
    return GaussianCovariance(2.0, kappa, 3.0, groups)


@pytest.mark.parametrize("max_rank", [5, 20, 400])
def test_residual_bound_bounds_the_factor_error_in_f(max_rank):
    X, _ = _c2(300, seed=1)
    cov = GaussianCovariance(3.0, 0.7, 5.0)
    G, resid, _ = factor_with_residual(cov, X, max_rank)
    S = dense_cov(X, X, 3.0, 0.7, 5.0)
    np.testing.assert_allclose(resid, np.diag(S - G @ G.T), atol=1e-9)
    rng = np.random.default_rng(2)
    for _ in range(5):
        v = rng.normal(size=300) * (rng.uniform(size=300) < 0.6)
        err = np.abs(S @ v - G @ (G.T @ v)).max()
        assert err <= residual_bound(resid, v) + 1e-9
    if max_rank == 400:  # at rounding level the bound is far below any solver tolerance
        assert residual_bound(resid, v) < 1e-6


@pytest.mark.parametrize("kind", ["isotropic", "ard", "tied"])
def test_factor_contractions_match_the_dense_derivatives(kind):
    X, _ = _c2(250, seed=3)
    X = np.ascontiguousarray(np.column_stack([X, X[:, :1] * 0.5 + 0.3]))  # 3 inputs
    if kind == "isotropic":
        cov = GaussianCovariance(2.0, 0.8, 3.0)
    else:
        cov = _cov_ard(3, None if kind == "ard" else np.array([0, 1, 0]))
    G, resid, _ = factor_with_residual(cov, X, 400)
    fc = FactorCovariance(cov, X, G, resid)
    rng = np.random.default_rng(4)
    idx = np.sort(rng.choice(250, 180, replace=False))
    p, v = rng.normal(size=180), rng.normal(size=180)
    got = fc.bilinear_grad(X, idx, p, v)
    np.testing.assert_allclose(got, cov.bilinear_grad(X, idx, p, v), rtol=1e-7, atol=1e-7)
    # the dense reference, entry by entry, in the full layout
    w = cov.weights(3)
    dS = dense_dcov(X[idx], cov.kappa0, w, cov.kappa_b)
    full = fc.bilinear_full(idx, p, v)
    want = np.array([p @ D @ v for D in dS])
    np.testing.assert_allclose(full, want, rtol=1e-7, atol=1e-7)
    assert np.all(np.abs(full - want) <= fc.error + 1e-9)


def test_a_truncated_factor_reports_an_error_bound_that_holds():
    X, _ = _c2(200, seed=5)
    cov = GaussianCovariance(2.0, 3.0, 1.0)
    G, resid, exact = factor_with_residual(cov, X, 8)
    assert not exact
    fc = FactorCovariance(cov, X, G, resid)
    rng = np.random.default_rng(6)
    p, v = rng.normal(size=200), rng.normal(size=200)
    idx = np.arange(200)
    full = fc.bilinear_full(idx, p, v)
    want = np.array([p @ D @ v for D in dense_dcov(X, 2.0, np.full(2, 3.0), 1.0)])
    assert np.max(np.abs(full - want)) > 1e-6  # the factor is not exact here ...
    assert np.all(np.abs(full - want) <= fc.error + 1e-9)  # ... and the bound says how much


@pytest.mark.parametrize("weighted", [False, True])
def test_silf_route_meets_the_stopping_rule_with_the_exact_covariance(weighted):
    X, y = _sinc(500, seed=7)
    C, eps, beta = 10.0, 0.1, 0.3
    w = None
    if weighted:
        w = np.random.default_rng(8).uniform(0.0, 3.0, 500)
        w[::11] = 0.0
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    st = silf_start(cov, X, y, C, eps, beta, max_rank=400, weights=w)
    par = silf_params(C, eps, beta, cov.kappa_b, 500, w)
    route = silf_route(st, y, par, 1e-6)
    assert route is not None and route.bound < 1e-8
    S = dense_cov(X, X, 1.0, 2.0, 1.0)
    nu = route.dual
    np.testing.assert_allclose(route.f, S @ nu, atol=route.bound + 1e-10)
    g = S @ nu - y + par.dadd * nu
    assert silf_kkt_violation(nu, g, C, eps, beta, w).max() <= 1e-6
    # the same solution as the SMO to its tolerance
    obj = SilfObjective(X, y, 1.0, beta, False, 1e-9, 64.0, 10**7, sample_weight=w)
    obj.lowrank_ok = False  # SMO only
    nu_smo, f_smo, *_ = obj.solve(C, eps, cov)
    np.testing.assert_allclose(route.f, f_smo, atol=1e-6)


def test_routes_decline_when_the_factor_cannot_certify():
    X, y = _sinc(300, seed=9)
    C, eps, beta = 10.0, 0.1, 0.3
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    par = silf_params(C, eps, beta, cov.kappa_b, 300)
    st = silf_start(cov, X, y, C, eps, beta, max_rank=3)  # truncated
    assert silf_route(st, y, par, 1e-3) is None
    assert silf_route(None, y, par, 1e-3) is None
    st = silf_start(cov, X, y, C, eps, beta, max_rank=300)
    assert silf_route(st, y, par, 0.0) is None  # nothing is exact to zero tolerance


@pytest.mark.parametrize("weighted", [False, True])
def test_trig_route_meets_the_stopping_rule_with_the_exact_covariance(weighted):
    X, y = _c2(400, seed=10)
    w = np.ones(400)
    if weighted:
        w = np.random.default_rng(11).uniform(0.0, 3.0, 400)
        w[::7] = 0.0
    cov = GaussianCovariance(3.0, 0.5, 10.0)
    st = trig_start(cov, X, y, max_rank=400, weights=w)
    route = trig_route(st, y, w, 1e-6)
    assert route is not None
    S = dense_cov(X, X, 3.0, 0.5, 10.0)
    assert trig_weighted_violation(route.dual, y, S, w).max() <= 1e-6
    np.testing.assert_allclose(route.f, S @ (y * route.dual), atol=route.bound + 1e-10)
    assert trig_route(trig_start(cov, X, y, max_rank=4, weights=w), y, w, 1e-3) is None


def test_an_exact_factor_at_the_budget_is_continued_to_rounding_level(monkeypatch):
    X, _ = _c2(2000, seed=16)
    cov = GaussianCovariance(1.0, 1.2, 60.0)
    G, resid, exact = factor_with_residual(cov, X, 160)  # exact (tr E <= 1e-8 n) at 160
    assert exact and 160 < G.shape[1] < 320
    assert resid.max() <= 1e-13 * 61.0  # rounding level
    monkeypatch.setattr(map_lowrank, "ROUTE_MAX_RANK", 160)
    G2, resid2, _ = factor_with_residual(cov, X, 160)
    assert G2.shape[1] == 160 and resid2.max() > resid.max()
    _, _, exact3 = factor_with_residual(GaussianCovariance(1.0, 30.0, 1.0), X, 160)
    assert not exact3  # a truncated factor is not continued


def test_sample_check_is_the_largest_error_on_its_cases():
    X, y = _sinc(300, seed=12)
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    v = np.random.default_rng(13).normal(size=300) * (np.arange(300) % 3 == 0)
    S = dense_cov(X, X, 1.0, 2.0, 1.0)
    f = S @ v
    assert sample_check(cov, X, v, f) < 1e-10
    f[150] += 0.5
    assert sample_check(cov, X, v, f, n_check=300) == pytest.approx(0.5, abs=1e-9)


def test_newton_leaves_f_consistent_with_its_dual():
    X, y = _c2(600, seed=14)
    cov = GaussianCovariance(3.0, 0.5, 10.0)
    st = trig_start(cov, X, y, max_rank=400)
    f_hat = st.G @ (st.G.T @ (y * st.dual))
    assert np.abs(f_hat - st.f).max() <= map_lowrank.NEWTON_F_TOL


def _objective_pair(kind, monkeypatch):
    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 100)
    if kind == "silf":
        X, y = _sinc(600, seed=15)
        make = lambda tol=1e-3: SilfObjective(X, y, None, 0.3, False, tol, 64.0,  # noqa: E731
                                              10**7)
        theta = np.array([np.log(10.0), np.log(0.1), 0.0, np.log(2.0), 0.0])
    else:
        X, y = _c2(600, seed=15)
        make = lambda tol=1e-3: TrigObjective(X, y, False, tol=tol)  # noqa: E731
        theta = np.log([3.0, 0.5, 10.0])
    return make, theta


@pytest.mark.parametrize("kind", ["silf", "trig"])
def test_objectives_take_the_route_and_agree_with_the_smo(kind, monkeypatch):
    make, theta = _objective_pair(kind, monkeypatch)
    routed = make()
    v1, g1, info = routed(theta)
    assert info["smo_start"].startswith("factor") and info["smo_iter"] == 0
    assert 0.0 <= info["map_bound"] < 1e-6
    smo = make(1e-10)
    smo.lowrank_ok = False  # the SMO from zero (to a tight tolerance), exact f, all pairs
    v2, g2, info2 = smo(theta)
    assert info2["smo_start"] == "zero"
    np.testing.assert_allclose(v1, v2, rtol=1e-6, atol=1e-4)
    np.testing.assert_allclose(g1, g2, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("kind", ["silf", "trig"])
def test_route_gradients_match_central_differences(kind, monkeypatch):
    make, theta = _objective_pair(kind, monkeypatch)
    obj = make()
    _, g, info = obj(theta)
    assert info["smo_start"].startswith("factor")
    h = 1e-5
    for k in range(theta.size):
        e = np.zeros_like(theta)
        e[k] = h
        fd = (make()(theta + e)[0] - make()(theta - e)[0]) / (2 * h)
        assert g[k] == pytest.approx(fd, rel=2e-3, abs=2e-3), k
