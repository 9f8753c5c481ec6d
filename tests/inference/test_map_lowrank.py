"""Low-rank Newton starts of the MAP solves (bsvm_scale.inference.map_lowrank)."""

import numpy as np
import pytest
from scipy.optimize import minimize

from bsvm_scale.inference import losses, map_lowrank
from bsvm_scale.inference.objective_silf import SilfObjective
from bsvm_scale.models.btsvc import TrigObjective, solve_dual
from bsvm_scale.datasets import synthetic
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from bsvm_scale.inference.map_lowrank import (choose_start, low_rank_factor, newton,
                                              silf_start, trig_start)

from reference import c2_standardised, dense_cov, sinc_silf_narrow


_c2, _sinc = c2_standardised, sinc_silf_narrow


def test_factor_reproduces_the_covariance_when_exact():
    X, _ = _c2(300)
    cov = GaussianCovariance(10.0, 0.5, 100.0)
    G, trace, exact = low_rank_factor(cov, X, max_rank=300)
    assert exact and trace <= map_lowrank.TRACE_TOL * 300
    S = dense_cov(X, X, 10.0, 0.5, 100.0)
    assert np.abs(S - G @ G.T).max() <= np.sqrt(trace) + 1e-9
    # a rank budget that stops the factor first is reported as not exact
    _, trace_small, exact_small = low_rank_factor(cov, X, max_rank=3)
    assert not exact_small and trace_small > trace


def test_newton_matches_a_general_solver_on_the_low_rank_primal():
    X, y = _c2(200, seed=1)
    cov = GaussianCovariance(3.0, 1.0, 1.0)
    G, _, _ = low_rank_factor(cov, X, max_rank=12)

    def loss(f, order):
        z = y * f
        if order == 0:
            return float(np.sum(losses.trig_loss(z)))
        return y * losses.trig_loss_grad(z) if order == 1 else losses.trig_loss_hess(z)

    f, it = newton(G, loss)
    assert 0 < it < map_lowrank.NEWTON_MAX_ITER

    def primal(w):
        v = 0.5 * w @ w + loss(G @ w, 0)
        return (v, w + G.T @ loss(G @ w, 1)) if np.isfinite(v) else (1e300, np.zeros_like(w))

    ref = minimize(primal, np.zeros(G.shape[1]), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    np.testing.assert_allclose(f, G @ ref.x, atol=1e-5)
    # Newton's point is at least as good as the general solver's
    w = np.linalg.lstsq(G, f, rcond=None)[0]
    assert primal(w)[0] <= ref.fun + 1e-9


def test_trig_start_with_an_exact_factor_is_the_dual_solution():
    X, y = _c2(400, seed=2)
    cov = GaussianCovariance(10.0, 0.5, 100.0)
    st = trig_start(cov, X, y, max_rank=400)
    assert st.exact
    ref = solve_dual(RowCache(X, cov, 64.0), y, tol=1e-10)
    np.testing.assert_allclose(st.f, ref["f"], atol=1e-4)
    # the SMO from the start has next to nothing left to do
    warm = solve_dual(RowCache(X, cov, 64.0), y, st.dual, tol=1e-3)
    cold = solve_dual(RowCache(X, cov, 64.0), y, tol=1e-3)
    assert warm["status"] == 0 and warm["n_iter"] <= cold["n_iter"] // 20


def test_weighted_trig_start_with_an_exact_factor_is_the_weighted_dual_solution():
    """Case weights (some 0): the start is the minimiser of the weighted
    primal, ``alpha = w l'`` (0 where ``w = 0``, whatever ``f`` is there), and
    the SMO from it has next to nothing left to do; all-ones weights are the
    unweighted start bit for bit."""
    X, y = _c2(400, seed=2)
    w = np.random.default_rng(5).uniform(0.2, 5.0, y.size)
    w[::17] = 0.0
    cov = GaussianCovariance(10.0, 0.5, 100.0)
    st = trig_start(cov, X, y, max_rank=400, weights=w)
    assert st.exact and np.all(st.dual[w == 0] == 0.0) and np.all(np.isfinite(st.dual))
    ref = solve_dual(RowCache(X, cov, 64.0), y, tol=1e-10, weights=w)
    np.testing.assert_allclose(st.f, ref["f"], atol=1e-4)
    warm = solve_dual(RowCache(X, cov, 64.0), y, st.dual, tol=1e-3, weights=w)
    cold = solve_dual(RowCache(X, cov, 64.0), y, tol=1e-3, weights=w)
    assert warm["status"] == 0 and warm["n_iter"] <= cold["n_iter"] // 20
    a, b = trig_start(cov, X, y, max_rank=400), trig_start(cov, X, y, 400, weights=np.ones(400))
    assert np.array_equal(a.dual, b.dual) and np.array_equal(a.f, b.f)


def test_trig_start_with_a_truncated_factor_is_finished_by_smo():
    d = synthetic.ringnorm(1500, seed=3)
    X = np.ascontiguousarray((d.X - d.X.mean(0)) / d.X.std(0))
    y = np.where(d.y > 0, 1.0, -1.0)
    cov = GaussianCovariance(5.0, 0.02, 100.0)
    st = trig_start(cov, X, y, max_rank=32)
    assert not st.exact
    assert trig_start(cov, X, y, max_rank=32, require_exact=True) is None
    assert np.all(np.isfinite(st.dual)) and np.all(st.dual >= 0) and np.all(y * st.f > -1)
    warm = solve_dual(RowCache(X, cov, 64.0), y, st.dual, tol=1e-8)
    cold = solve_dual(RowCache(X, cov, 64.0), y, tol=1e-8)
    assert warm["status"] == 0 and warm["max_violation"] <= 1e-8
    np.testing.assert_allclose(warm["f"], cold["f"], atol=1e-6)


def test_silf_start_with_an_exact_factor_is_the_bsvr_dual_solution(monkeypatch):
    monkeypatch.setattr(map_lowrank, "TRACE_TOL", 1e-14)  # the factor to rounding level
    X, y = _sinc(400, seed=4)
    C, eps, beta = 10.0, 0.1, 0.3
    p = SilfObjective(X, y, 1.0, beta, False, 1e-9, 64.0, 10**7)
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    st = silf_start(cov, X, y, C, eps, beta, max_rank=400)
    assert st.exact and np.all(np.abs(st.dual) <= C)
    nu, f, *_ = p.solve(C, eps, cov)
    np.testing.assert_allclose(st.f, f, atol=1e-6)
    np.testing.assert_allclose(st.dual, nu, atol=1e-4 * C)


@pytest.mark.parametrize("integer", [False, True])
def test_weighted_silf_start_with_an_exact_factor_is_the_weighted_dual_solution(monkeypatch,
                                                                              integer):
    """With case weights the low-rank Newton start minimises ``C sum w_i
    SILF(y_i - f_i)`` and its dual ``nu_i = C w_i SILF'`` lies in the boxes
    ``[-C w_i, C w_i]`` (0 for weight 0): the SMO solution of the weighted
    dual, and for integer weights the start of the repeated cases."""
    monkeypatch.setattr(map_lowrank, "TRACE_TOL", 1e-14)
    X, y = _sinc(300, seed=6)
    rng = np.random.default_rng(7)
    w = rng.integers(0, 4, 300).astype(float) if integer else rng.uniform(0.0, 3.0, 300)
    w[:20] = 0.0
    C, eps, beta = 10.0, 0.1, 0.3
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    st = silf_start(cov, X, y, C, eps, beta, max_rank=300, weights=w)
    assert st.exact and np.all(np.abs(st.dual) <= C * w) and np.all(st.dual[:20] == 0.0)
    p = SilfObjective(X, y, 1.0, beta, False, 1e-9, 64.0, 10**7, sample_weight=w)
    nu, f, *_ = p.solve(C, eps, cov)
    np.testing.assert_allclose(st.f, f, atol=1e-6)
    np.testing.assert_allclose(st.dual, nu, atol=1e-4 * C)
    if integer:
        rep = np.repeat(np.arange(300), w.astype(int))
        st_rep = silf_start(cov, np.ascontiguousarray(X[rep]), y[rep], C, eps, beta,
                            max_rank=300)
        np.testing.assert_allclose(st_rep.f, st.f[rep], atol=1e-6)


def test_unit_weights_give_the_unweighted_silf_start():
    X, y = _sinc(200, seed=8)
    cov = GaussianCovariance(1.0, 2.0, 1.0)
    a = silf_start(cov, X, y, 5.0, 0.1, 0.3, max_rank=50)
    b = silf_start(cov, X, y, 5.0, 0.1, 0.3, max_rank=50, weights=np.ones(200))
    np.testing.assert_array_equal(a.f, b.f)
    np.testing.assert_array_equal(a.dual, b.dual)


def test_starts_are_deterministic():
    X, y = _c2(3000, seed=5)
    cov = GaussianCovariance(10.0, 0.5, 100.0)
    a, b = trig_start(cov, X, y), trig_start(cov, X, y)
    assert np.array_equal(a.dual, b.dual) and a.rank == b.rank


def test_choose_start_rules(monkeypatch):
    calls = []

    def low_rank(exact_result):
        def make(max_rank, require_exact):
            calls.append((max_rank, require_exact))
            if require_exact and not exact_result:
                return None
            return map_lowrank.LowRankStart(np.full(5, 7.0), np.zeros(5), 3, 0.0, exact_result, 2)
        return make

    warm = np.ones(5)
    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 10)
    assert choose_start(low_rank(True), warm, False) == (warm, "warm", None) and not calls
    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 5)
    dual, how, exact = choose_start(low_rank(True), np.zeros(5), True)
    assert how == "lowrank3" and dual[0] == 7.0 and exact
    assert calls[-1] == (map_lowrank.MAX_RANK, True)
    dual, how, exact = choose_start(low_rank(False), warm, False)
    assert how == "warm" and dual is warm and exact is False
    assert choose_start(low_rank(False), np.zeros(5), True)[1:] == ("zero", False)
    assert choose_start(low_rank(True), warm, False)[1] == "lowrank3"


def test_a_near_exact_factor_is_not_a_start_but_is_tried_again(monkeypatch):
    from bsvm_scale.inference.map_lowrank import next_start

    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 1)
    near = lambda r, ex: map_lowrank.LowRankStart(None, None, 5, 1.0, False, 0)  # noqa: E731
    warm = np.ones(4)
    assert choose_start(near, warm, False) == (warm, "warm", None)
    assert next_start(near, warm, False, False, True) == (warm, "warm", True)
    # ... unless the caller has Newton's method for stiff problems
    assert next_start(near, warm, False, False, True, retry_near=False) == (warm, "warm", False)
    X, y = _c2(400, seed=3)
    cov = GaussianCovariance(3.0, 2.0, 10.0)
    monkeypatch.setattr(map_lowrank, "ROUTE_MAX_RANK", 8)
    monkeypatch.setattr(map_lowrank, "NEAR_TOL", 1.0)  # everything counts as near here
    st = trig_start(cov, X, y, max_rank=4, require_exact=True)
    assert st is not None and not st.exact and st.dual is None and st.rank == 8
    monkeypatch.setattr(map_lowrank, "NEAR_TOL", 0.0)
    assert trig_start(cov, X, y, max_rank=4, require_exact=True) is None


def test_bsvr_stops_trying_near_exact_factors_where_newton_can_solve(monkeypatch):
    """With every row in its row cache BSVR's objective has Newton's method for
    the stiff problems, so a near-exact factor that is not exact ends the
    attempts as a truncated one does; with a smaller cache it is tried again."""
    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 100)
    monkeypatch.setattr(map_lowrank, "NEAR_TOL", 1.0)  # every factor near exact ...
    monkeypatch.setattr(map_lowrank, "ROUTE_MAX_RANK", 8)  # ... and not exact at 8 columns
    rng = np.random.default_rng(5)
    X = rng.uniform(-2, 2, (300, 3))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(300)
    theta = np.log([1.0, 0.1, 0.5, 10.0])
    for cache_mb, retried in ((64.0, False), (0.2, True)):
        obj = SilfObjective(X, y, None, 0.3, False, 1e-3, cache_mb, 10**6)
        assert (obj.cache.n_slots >= 300) is not retried
        obj(theta)
        assert obj.lowrank_ok is retried


def test_objective_stops_trying_after_a_truncated_factor(monkeypatch):
    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 100)
    monkeypatch.setattr(map_lowrank, "MAX_RANK", 4)  # every factor truncated
    X, y = _c2(400, seed=8)
    obj = TrigObjective(X, y, False)
    theta = np.log([10.0, 0.5, 100.0])
    assert obj(theta)[2]["smo_start"] == "zero" and not obj.lowrank_ok
    assert obj.get_state()["lowrank_ok"] is False
    assert obj(theta + 0.1)[2]["smo_start"] == "warm"


@pytest.mark.parametrize("route", [False, True])
def test_objective_uses_the_start_and_restore_pins_the_solution(monkeypatch, route):
    """A start the SMO finished is pinned by :meth:`restore`; a solution taken
    from the factor (no SMO) is made again by the factor; either way the
    evidence at the best point is reproduced bit for bit."""
    from bsvm_scale.inference import objective_trig

    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 100)
    if not route:
        monkeypatch.setattr(objective_trig, "trig_route", lambda *a: None)
    X, y = _c2(600, seed=6)
    obj = TrigObjective(X, y, False)
    theta = np.log([10.0, 0.5, 100.0])
    v1, _, info = obj(theta)
    assert info["smo_start"].startswith("factor" if route else "lowrank")
    obj(theta + 0.1)
    state = obj.get_state()
    assert obj.restore(theta) is not None
    v2, _, info2 = obj(theta)
    assert v2 == v1 and info2["smo_iter"] == 0
    assert info2["smo_start"] == (info["smo_start"] if route else "restored")
    resumed = TrigObjective(X, y, False)  # the same from a checkpoint's state
    resumed.set_state(state)
    assert resumed.restore(theta) is not None and resumed(theta)[0] == v1


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_the_final_evaluation_at_the_best_point_makes_no_solve(monkeypatch, method):
    """``final`` at the best point takes the best evaluation's own ``alpha``
    and ``f``: no SMO pass, the best evaluation's value, and bit for bit the
    same from a checkpoint's state; a state without ``f`` (older code)
    re-solves from the best ``alpha``."""
    from bsvm_scale.inference import evidence_trig
    from bsvm_scale.inference.evidence_lowrank import EvidenceSettings

    X, y = _c2(600, seed=6)
    theta = np.log([10.0, 0.5, 100.0])

    def fresh():
        return TrigObjective(X, y, False, evidence=EvidenceSettings(method=method))

    obj = fresh()
    values = [obj(theta)[0], obj(theta + 0.2)[0], obj(theta - 0.2)[0]]
    best, state = obj.best, obj.get_state()
    assert best.value == min(values)
    solve = obj.solve
    monkeypatch.setattr(obj, "solve", lambda *a: pytest.fail("final made a MAP solve"))
    if method == "matrix_free":  # the best evaluation's block is used as it is
        with monkeypatch.context() as mp:
            mp.setattr(evidence_trig, "make_block", lambda *a, **k: pytest.fail("a new block"))
            ev = obj.final(best.theta)
    else:
        ev = obj.final(best.theta)
    assert ev.value == best.value and ev.info["smo_iter"] == 0
    key = "chol" if method == "dense" else "predictor"
    assert key in ev.info
    resumed = fresh()  # no block in a state: made again from alpha and f
    resumed.set_state(state)
    monkeypatch.setattr(resumed, "solve", lambda *a: pytest.fail("final made a MAP solve"))
    again = resumed.final(best.theta)
    assert again.value == ev.value
    np.testing.assert_array_equal(again.dual, ev.dual)
    if method == "matrix_free":
        np.testing.assert_array_equal(again.info["predictor"].L_C, ev.info["predictor"].L_C)
    old = fresh()  # a checkpoint of code that kept no f
    old.set_state({k: v for k, v in state.items()
                   if k not in ("best_f", "best_start", "best_violation", "best_map_bound")})
    calls = []
    monkeypatch.setattr(old, "solve", lambda *a: calls.append(1) or solve.__func__(old, *a))
    assert old.final(best.theta).value == pytest.approx(ev.value, abs=1e-6) and calls


@pytest.mark.parametrize("model", ["svc", "svc_weighted", "svr"])
def test_fits_with_low_rank_starts_resume_exactly(monkeypatch, model):
    from bsvm_scale import BayesianSVC, BayesianSVR

    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 100)
    fit_kw = {}
    if model.startswith("svc"):
        X, y = _c2(700, seed=7)
        est = BayesianSVC(n_starts=1)
        if model == "svc_weighted":  # case weights, some 0, and class weights
            w = np.random.default_rng(7).uniform(0.0, 3.0, y.size)
            w[::9] = 0.0
            est.set_params(class_weight={1.0: 1.5})
            fit_kw = {"sample_weight": w}
    else:
        X, y = _sinc(700, seed=7)
        est = BayesianSVR(n_starts=1)
    recs = []
    full = est.fit(X, y, callback=lambda k, rec, state: recs.append((rec, state)), **fit_kw)
    starts = [r[0]["info"].get("smo_start", "") for r in recs]
    assert any(s.startswith("factor") for s in starts)  # solutions from the factor
    theta_full, ev_full = full.theta_.copy(), full.log_evidence_
    cut = len(recs) // 2
    resumed = est.fit(X, y, init={"theta": full.starts_[0]["theta0"], "state": recs[cut - 1][1],
                                  "evaluations": [r for r, _ in recs[:cut]]}, **fit_kw)
    assert np.array_equal(resumed.theta_, theta_full)
    assert resumed.log_evidence_ == ev_full


def test_next_start_policy(monkeypatch):
    from bsvm_scale.inference.map_lowrank import next_start

    monkeypatch.setattr(map_lowrank, "LOWRANK_MIN_N", 1)
    warm = np.ones(4)

    def exact(max_rank, require_exact):
        return map_lowrank.LowRankStart(np.full(4, 2.0), np.zeros(4), 5, 0.0, True, 1)

    def truncated(max_rank, require_exact):
        return None

    assert next_start(exact, warm, False, True, True) == (warm, "restored", True)
    assert next_start(exact, warm, False, False, False) == (warm, "warm", False)
    assert next_start(exact, np.zeros(4), True, False, False)[1:] == ("zero", False)
    dual, how, ok = next_start(exact, warm, False, False, True)
    assert how == "lowrank5" and dual[0] == 2.0 and ok
    assert next_start(truncated, warm, False, False, True)[1:] == ("warm", False)
