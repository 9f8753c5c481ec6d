"""Tests of the matrix-free evidence engine (:mod:`bsvm_scale.inference.evidence_lowrank`,
:mod:`bsvm_scale._compiled.lowrank`) and of ``evidence_method`` on both
Bayesian estimators.

References: dense NumPy (``tests/reference.py``), the dense evidence path of
each model, and central finite differences.
"""

import warnings

import h5py
import numpy as np
import pytest

from bsvm_scale import BayesianSVC, BayesianSVR
from bsvm_scale._compiled import lowrank as lk
from bsvm_scale._util.base import Standardizer
from bsvm_scale.models.btsvc import solve_dual
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from bsvm_scale.datasets import synthetic
from bsvm_scale.inference.evidence_lowrank import (AUTO_DENSE_MAX, DEFAULT_TOL, BlockEvidence,
                                                   EvidenceBudgetError, LowRankPredictor,
                                                   factorize, lanczos_quadratures, pcg,
                                                   plan_block)
from bsvm_scale.inference.evidence_trig import neg_log_evidence
from bsvm_scale.storage import load_model, save_model

from reference import dense_cov, dense_dcov


def _block(seed=0, m=60, d=3, ard=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    kappa = rng.uniform(0.2, 1.0, d) if ard else 0.4
    cov = GaussianCovariance(2.0, kappa, 3.0)
    sl = np.sqrt(rng.uniform(1.2, 6.0, m))
    return X, cov, sl


def _dense_B(X, cov, sl):
    Kt = sl[:, None] * dense_cov(X, X, cov.kappa0, cov.kappa, cov.kappa_b) * sl[None, :]
    return np.eye(X.shape[0]) + Kt, Kt


def ref_pivoted_cholesky(K, r):
    """Greedy pivoted Cholesky written out with dense NumPy."""
    n = K.shape[0]
    G = np.zeros((n, r))
    resid = np.diag(K).copy()
    piv = []
    for j in range(r):
        i = int(np.argmax(resid))
        piv.append(i)
        G[:, j] = (K[:, i] - G[:, :j] @ G[i, :j]) / np.sqrt(resid[i])
        resid = np.maximum(resid - G[:, j] ** 2, 0.0)
        resid[i] = 0.0
    return G, np.array(piv), resid


# -- compiled kernels ----------------------------------------------------------------
def test_pivoted_cholesky_matches_dense_reference():
    X, cov, sl = _block()
    _, Kt = _dense_B(X, cov, sl)
    G = np.zeros((X.shape[0], 12))
    rank, piv, resid = lk.pivoted_cholesky(cov.kernel(X), sl, G, 0.0, 0.0, 0)
    Gr, pr, rr = ref_pivoted_cholesky(Kt, 12)
    assert rank == 12
    np.testing.assert_array_equal(piv, pr)
    np.testing.assert_allclose(G, Gr, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(resid, rr, atol=1e-9)
    E = Kt - G @ G.T
    np.testing.assert_allclose(np.diag(E), resid, atol=1e-9)
    assert np.linalg.eigvalsh(E).min() > -1e-8          # E is positive semi-definite


def test_pivoted_cholesky_stops_at_tolerance():
    X, cov, sl = _block(m=80, d=2)
    G = np.zeros((80, 80))
    rank, _, resid = lk.pivoted_cholesky(cov.kernel(X), sl, G, 1e-3, 0.0, 0)
    assert 0 < rank < 80 and resid.sum() <= 1e-3
    G2 = np.zeros((80, 80))
    rank2, _, resid2 = lk.pivoted_cholesky(cov.kernel(X), sl, G2, 1e-3, 0.0, 0)
    assert rank2 == rank and np.array_equal(G, G2)   # deterministic


def test_an_extended_factor_is_the_factor_made_to_the_tighter_tolerance():
    """The prediction factor continues the evidence factor: same pivots, the
    same triangles and predictive variance as a factor made from scratch to
    the tighter tolerance (up to rounding in the kept columns ``R L_C^T``)."""
    X, cov, sl = _block(seed=7, m=300, d=3, ard=True)
    first = factorize(cov, X, sl, tol=1e-1)
    fresh = factorize(cov, X, sl, tol=1e-5)
    ext = first.extended(cov, X, 2e-5)
    assert 0 < first.rank < ext.rank
    np.testing.assert_array_equal(ext.pivots, fresh.pivots)
    assert ext.bound == pytest.approx(fresh.bound, rel=1e-8)
    np.testing.assert_allclose(ext.L_C, fresh.L_C, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(ext.L_S, fresh.L_S, rtol=1e-9, atol=1e-9)
    Xt = np.random.default_rng(8).normal(size=(50, 3))
    np.testing.assert_allclose(ext.predictor().variance(cov, Xt),
                               fresh.predictor().variance(cov, Xt), rtol=1e-9, atol=1e-12)
    capped = first.extended(cov, X, 2e-5, max_rank=first.rank - 1)  # below its own rank
    np.testing.assert_array_equal(capped.pivots, fresh.pivots[:first.rank - 1])


def test_the_evidence_factor_grows_past_its_first_stages_only_where_the_bound_is_near(
        monkeypatch):
    """Past ``first_rank`` the factor goes on only when the residual trace's
    decay predicts the tolerance within the cap: then it meets it, with the
    columns of one factor to that tolerance and no stochastic correction;
    where the decay is slow it stops at ``first_rank`` and the correction
    runs, as before."""
    import bsvm_scale.inference.evidence_lowrank as el

    monkeypatch.setattr(el, "MAX_RANK", 24)
    X, _, sl = _block(seed=4, m=400, d=2)
    smooth = GaussianCovariance(2.0, 1.0, 3.0)        # 87 columns meet the tolerance
    E = BlockEvidence(smooth, X, sl, tol=1e-3, max_rank=200, n_probes=4)
    ref = factorize(smooth, X, sl, 1e-3)             # one factor, no rank cap
    assert 24 < E.rank == ref.rank <= 200 and E.probes == 0 and E.F.bound <= 2e-3
    np.testing.assert_array_equal(E.F.pivots, ref.pivots)
    B, _ = _dense_B(X, smooth, sl)
    assert 0.0 <= np.linalg.slogdet(B)[1] - E.logdet <= E.F.bound + 1e-9
    rough = GaussianCovariance(2.0, 20.0, 3.0)        # 354 columns would: slow decay
    E = BlockEvidence(rough, X, sl, tol=1e-3, max_rank=200, n_probes=4)
    assert E.rank == 24 and E.probes == 4
    plan = el.growth_plan(1.0, 24, 200)
    assert plan(12, np.full(4, 100.0)) == 24          # the two first stages
    # tr E 400 -> 40 over 12 columns: 1.0 is 12 ln(40) / ln(10) = 19.2 columns on, x 1.2
    assert plan(24, np.full(4, 10.0)) == 48
    assert plan(48, np.full(4, 0.2)) is None          # met
    far = el.growth_plan(1e-20, 24, 200)
    far(12, np.full(4, 100.0))
    assert far(24, np.full(4, 10.0)) is None          # predicted beyond the cap


@pytest.mark.parametrize("ard", [False, True])
def test_dcov_contract_matches_dense_derivatives(ard):
    X, cov, _ = _block(seed=3, m=50, d=3, ard=ard)
    A, B = X[:30], X[30:]
    rng = np.random.default_rng(1)
    W = rng.normal(size=(30, 20))
    g = lk.dcov_contract(cov.kernel(A), np.ascontiguousarray(B), W)
    dS = dense_dcov(X, cov.kappa0, np.asarray(cov.kappa) if ard else np.ones(3) * cov.kappa,
                    cov.kappa_b)                      # full ARD layout either way
    ref = np.array([np.sum(W * D[:30, 30:]) for D in dS])
    if not ard:  # an isotropic kernel gives d/d ln kappa in the first weight column
        assert np.all(g[2:-1] == 0.0)
        ref = np.concatenate(([ref[0], ref[1:-1].sum()], np.zeros(2), [ref[-1]]))
    np.testing.assert_allclose(g, ref, rtol=1e-10, atol=1e-10)


# -- the factor ----------------------------------------------------------------------
@pytest.mark.parametrize("tol", [1.0, 1e-2, 1e-4])
def test_factor_log_determinant_is_bracketed_by_its_bound(tol):
    X, cov, sl = _block(m=120, d=2)
    B, _ = _dense_B(X, cov, sl)
    exact = np.linalg.slogdet(B)[1]
    F = factorize(cov, X, sl, tol)
    assert F.bound <= 2 * tol + 1e-12
    assert -1e-9 <= exact - F.logdet <= F.bound + 1e-9


def test_full_rank_factor_is_exact():
    X, cov, sl = _block(m=40, d=3, ard=True)
    B, _ = _dense_B(X, cov, sl)
    F = factorize(cov, X, sl, 0.0)
    Binv = np.linalg.inv(B)
    assert F.rank == 40
    np.testing.assert_allclose(F.logdet, np.linalg.slogdet(B)[1], rtol=1e-10)
    np.testing.assert_allclose(F.diag_inv(), np.diag(Binv), atol=1e-9)
    b = np.arange(40.0)
    np.testing.assert_allclose(F.solve(b), Binv @ b, atol=1e-8)
    # d ln|B| = tr(B^-1 dK~) with Lambda fixed: the dense trace
    dS = dense_dcov(X, cov.kappa0, cov.kappa, cov.kappa_b)
    ref = np.array([np.trace(Binv @ (sl[:, None] * D * sl[None, :])) for D in dS])
    np.testing.assert_allclose(F.dlogdet(cov, X), ref, rtol=1e-7, atol=1e-8)


def test_factor_gradient_matches_finite_differences_with_pivots_fixed():
    """Rank-limited ln|P| is differentiated exactly: central differences of
    ln|P| at the same pivots (the greedy order does not change for h=1e-6)."""
    X, cov, sl = _block(m=90, d=2)
    F = factorize(cov, X, sl, 0.0, max_rank=15)
    g = F.dlogdet(cov, X)
    h = 1e-6
    for p in range(cov.theta.size):
        vals = []
        for s in (1, -1):
            th = cov.theta.copy()
            th[p] += s * h
            Fp = factorize(GaussianCovariance.from_theta(th, False), X, sl, 0.0, max_rank=15)
            assert np.array_equal(Fp.pivots, F.pivots)
            vals.append(Fp.logdet)
        np.testing.assert_allclose(g[p], (vals[0] - vals[1]) / (2 * h), rtol=1e-5, atol=1e-6)


def test_lanczos_quadrature_of_cg_is_the_log_quadratic_form():
    rng = np.random.default_rng(2)
    Q, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    lam = np.linspace(1.0, 50.0, 30)
    B = (Q * lam) @ Q.T
    Z = rng.normal(size=(30, 3))
    X, al, be, it, rel = pcg(lambda V: B @ V, lambda V: V, Z, rtol=1e-12, maxiter=60)
    np.testing.assert_allclose(X, np.linalg.solve(B, Z), atol=1e-8)
    logB = (Q * np.log(lam)) @ Q.T
    ref = np.einsum("ij,ij->j", Z, logB @ Z) / np.einsum("ij,ij->j", Z, Z)
    np.testing.assert_allclose(lanczos_quadratures(al, be), ref, rtol=1e-8)


def test_stochastic_correction_is_deterministic_and_within_its_error():
    X, cov, sl = _block(m=300, d=4, seed=5)
    B, _ = _dense_B(X, cov, sl)
    exact = np.linalg.slogdet(B)[1]
    E1 = BlockEvidence(cov, X, sl, tol=1e-6, max_rank=60)
    E2 = BlockEvidence(cov, X, sl, tol=1e-6, max_rank=60)
    assert E1.probes > 0 and E1.rank == 60
    assert E1.logdet == E2.logdet and np.array_equal(E1.dlogdet(), E2.dlogdet())
    assert abs(E1.logdet - exact) < 4 * E1.error + 1e-6
    # the correction improves on the factor alone
    assert abs(E1.logdet - exact) < exact - E1.F.logdet
    Binv = np.linalg.inv(B)
    dS = dense_dcov(X, cov.kappa0, cov.kappa, cov.kappa_b)
    ref = np.array([np.trace(Binv @ (sl[:, None] * D * sl[None, :])) for D in dS])
    ref = np.array([ref[0], ref[1:-1].sum(), ref[-1]])
    np.testing.assert_allclose(E1.dlogdet(), ref, rtol=0.03)
    # the factor alone is far off: the correction is what brings it there
    assert np.max(np.abs(E1.F.dlogdet(cov, X) - ref) / np.abs(ref)) > 0.1
    b = np.linspace(-1, 1, 300)
    np.testing.assert_allclose(E1.solve(b), Binv @ b, atol=1e-5)


# -- BTSVC: matrix-free against dense ------------------------------------------------
def _trig_problem(name, n, theta, tol=1e-3):
    d = getattr(synthetic, name)(n, seed=1)
    X = Standardizer.fit(d.X).transform(d.X)
    y = np.where(d.y == d.y.max(), 1.0, -1.0)
    cov = GaussianCovariance.from_theta(theta, False)
    sol = solve_dual(RowCache(X, cov, 256), y, tol=tol)
    return X, y, cov, sol


@pytest.mark.parametrize("name,n,theta", [
    ("gauss2d", 4000, np.log([10.0, 0.5, 100.0])),
    ("gauss2d", 4000, np.log([3.0, 0.25, 10.0])),
    ("twonorm", 2000, np.log([3.0, 0.025, 10.0])),
    ("ringnorm", 2000, np.log([3.0, 0.025, 10.0])),
])
@pytest.mark.parametrize("tol, grad_rtol", [(0.01, 0.01), (DEFAULT_TOL, 0.05)])
def test_btsvc_matrix_free_evidence_matches_dense(name, n, theta, tol, grad_rtol):
    """The value within the reported bound (at most ``tol``); the gradient, the exact
    derivative of the factor's value, within 1 % of the dense one at 0.01 nats and
    5 % at the default 0.05 (2.4 % at most measured)."""
    X, y, cov, sol = _trig_problem(name, n, theta)
    vd, gd, _ = neg_log_evidence(cov, X, y, sol["alpha"])
    vm, gm, info = neg_log_evidence(cov, X, y, sol["alpha"], method="matrix_free", f=sol["f"],
                                    tol=tol)
    assert info["method"] == "matrix_free" and info["error"] <= tol + 1e-12
    assert abs(vm - vd) <= max(1e-3 * abs(vd), 0.5)
    assert -1e-9 <= vd - vm <= info["error"] + 1e-9          # the bound holds
    assert np.linalg.norm(gm - gd) <= grad_rtol * np.linalg.norm(gd)


def test_btsvc_matrix_free_gradient_matches_finite_differences():
    """Both paths against central differences of their own value (the SV set
    held fixed, a tight SMO tolerance)."""
    X, y, cov, sol = _trig_problem("gauss2d", 1000, np.log([3.0, 0.25, 10.0]), tol=1e-10)
    sv = sol["alpha"] > 0
    for method in ("dense", "matrix_free"):
        _, g, _ = neg_log_evidence(cov, X, y, sol["alpha"], method=method, f=sol["f"],
                                   tol=1e-4)
        h = 1e-5
        for p in range(3):
            vals = []
            for s in (1, -1):
                th = cov.theta.copy()
                th[p] += s * h
                c = GaussianCovariance.from_theta(th, False)
                so = solve_dual(RowCache(X, c, 256), y, sol["alpha"], tol=1e-10)
                assert np.array_equal(so["alpha"] > 0, sv)
                vals.append(neg_log_evidence(c, X, y, so["alpha"], need_grad=False,
                                             method=method, f=so["f"], tol=1e-4)[0])
            fd = (vals[0] - vals[1]) / (2 * h)
            assert abs(g[p] - fd) <= 0.01 * max(1.0, abs(fd)), (method, p, g[p], fd)


# -- estimators --------------------------------------------------------------------
def _fixed_svc(method, X, y, **kw):
    return BayesianSVC(evidence_method=method, optimize=False, kappa0=3.0, kappa=0.3,
                       kappa_b=10.0, **kw).fit(X, y)


def test_btsvc_predictive_sd_matches_dense_and_ignores_batch_size():
    d = synthetic.gauss2d(3000, seed=1)
    Xt = synthetic.gauss2d(2000, seed=2).X
    dense = _fixed_svc("dense", d.X, d.y)
    mf = _fixed_svc("matrix_free", d.X, d.y)
    assert dense.evidence_method_ == "dense" and mf.evidence_method_ == "matrix_free"
    assert not hasattr(mf, "cholesky_") and mf.predictor_["X_S"].shape[0] < 200
    mu1, sd1 = dense.decision_function(Xt, return_std=True)
    mu2, sd2 = mf.decision_function(Xt, return_std=True)
    np.testing.assert_allclose(mu2, mu1, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(sd2, sd1, rtol=1e-3)
    np.testing.assert_allclose(mf.predict_proba(Xt), dense.predict_proba(Xt), atol=1e-3)
    assert abs(mf.log_evidence_ - dense.log_evidence_) <= mf.evidence_error_ + 1e-9
    # every test point is computed on its own: batch size changes nothing
    pred = LowRankPredictor.from_dict(mf.predictor_)
    cov = mf._covariance()
    Xs = np.ascontiguousarray((Xt - mf.x_mean_) / mf.x_scale_)
    v_big = pred.variance(cov, Xs)
    v_small = pred.variance(cov, Xs, chunk_bytes=8 * 3 * pred.X_S.shape[0] * 7)
    assert np.array_equal(v_big, v_small)
    parts = np.concatenate([mf.decision_function(Xt[s:s + 333], return_std=True)[1]
                            for s in range(0, 2000, 333)])
    assert np.array_equal(parts, sd2)


def test_btsvc_matrix_free_fit_is_repeatable_and_close_to_dense():
    d = synthetic.gauss2d(1500, seed=3)
    te = synthetic.gauss2d(4000, seed=4)
    a = BayesianSVC(evidence_method="matrix_free", n_starts=1).fit(d.X, d.y)
    b = BayesianSVC(evidence_method="matrix_free", n_starts=1).fit(d.X, d.y)
    dense = BayesianSVC(evidence_method="dense", n_starts=1).fit(d.X, d.y)
    assert np.array_equal(a.theta_, b.theta_) and a.log_evidence_ == b.log_evidence_
    assert abs(a.log_evidence_ - dense.log_evidence_) < 1.0
    err_a = np.mean(a.predict(te.X) != te.y)
    err_d = np.mean(dense.predict(te.X) != te.y)
    assert abs(err_a - err_d) < 0.01
    assert all("error" in r["info"] for r in a.starts_[0]["trajectory"])


def test_btsvc_matrix_free_resume_replays_exactly():
    d = synthetic.gauss2d(800, seed=5)
    recs = []
    full = BayesianSVC(evidence_method="matrix_free", n_starts=1).fit(
        d.X, d.y, callback=lambda k, rec, state: recs.append((rec, state)))
    cut = len(recs) // 2
    theta0 = full.starts_[0]["theta0"]
    resumed = BayesianSVC(evidence_method="matrix_free", n_starts=1).fit(
        d.X, d.y, init={"theta": theta0, "state": recs[cut - 1][1],
                        "evaluations": [r for r, _ in recs[:cut]]})
    assert np.array_equal(resumed.theta_, full.theta_)
    assert resumed.log_evidence_ == full.log_evidence_


def test_matrix_free_model_file_round_trip_holds_no_m_by_m_array(tmp_path):
    d = synthetic.gauss2d(2500, seed=6)
    mf = _fixed_svc("matrix_free", d.X, d.y)
    path = tmp_path / "m.h5"
    save_model(mf, path)
    m = mf.support_.size
    with h5py.File(path, "r") as f:
        shapes = []
        f.visititems(lambda name, obj: shapes.append(obj.shape)
                     if isinstance(obj, h5py.Dataset) else None)
    assert all(not (len(s) == 2 and s[0] >= m and s[1] >= m) for s in shapes)
    back = load_model(path)
    Xt = synthetic.gauss2d(300, seed=7).X
    assert np.array_equal(back.predict_proba(Xt), mf.predict_proba(Xt))


# -- BSVR ------------------------------------------------------------------------------
def test_bsvr_matrix_free_matches_dense_at_beta_03():
    d = synthetic.sinc_silf(3000, seed=1)
    Xt = synthetic.sinc_silf(1000, seed=2).X
    kw = dict(beta=0.3, optimize=False, C=10.0, epsilon=0.1, kappa=1.0, kappa_b=10.0)
    dense = BayesianSVR(evidence_method="dense", **kw).fit(d.X, d.y)
    mf = BayesianSVR(evidence_method="matrix_free", **kw).fit(d.X, d.y)
    assert mf.evidence_method_ == "matrix_free" and mf.off_bound_.size > 300
    assert abs(mf.log_evidence_ - dense.log_evidence_) <= mf.evidence_error_ + 1e-9
    m1, s1 = dense.predict(Xt, return_std=True)
    m2, s2 = mf.predict(Xt, return_std=True)
    np.testing.assert_array_equal(m1, m2)
    np.testing.assert_allclose(s2, s1, rtol=1e-3)


def test_bsvr_matrix_free_gradient_matches_dense():
    from bsvm_scale.inference.objective_silf import SilfObjective
    from bsvm_scale.inference.evidence_lowrank import EvidenceSettings
    d = synthetic.sinc_silf(2500, seed=1)
    X = np.ascontiguousarray(Standardizer.fit(d.X).transform(d.X))
    theta = np.log([10.0, 0.1, 1.0, 10.0])
    out = {}
    for method in ("dense", "matrix_free"):
        prob = SilfObjective(X, d.y, 1.0, 0.3, False, 1e-3, 256.0, 10**6,
                        EvidenceSettings(method, 1e-3))
        out[method] = prob(theta)
    (vd, gd, _), (vm, gm, info) = out["dense"], out["matrix_free"]
    assert info["method"] == "matrix_free"
    assert abs(vm - vd) <= 0.01
    assert np.linalg.norm(gm - gd) <= 0.01 * np.linalg.norm(gd)


# -- choice of method and budget ---------------------------------------------------------
def test_plan_block_auto_dense_then_matrix_free_and_budget_errors():
    assert plan_block("auto", 100, 1024) == ("dense", None)
    method, r = plan_block("auto", AUTO_DENSE_MAX + 1, 1024)
    assert method == "matrix_free" and 16 <= r <= AUTO_DENSE_MAX + 1
    assert plan_block("auto", 3000, 10)[0] == "matrix_free"       # dense does not fit
    with pytest.raises(EvidenceBudgetError, match="evidence_mb"):
        plan_block("dense", 3000, 10)
    with pytest.raises(EvidenceBudgetError, match="raise evidence_mb"):
        plan_block("matrix_free", 10**6, 10)


@pytest.mark.parametrize("est", [BayesianSVC, BayesianSVR])
@pytest.mark.parametrize("kw,match", [({"evidence_method": "lanczos"}, "evidence_method"),
                                      ({"evidence_tol": 0.0}, "evidence_tol"),
                                      ({"evidence_mb": -1}, "evidence_mb")])
def test_bad_evidence_settings_are_named(est, kw, match):
    X, y = synthetic.gauss2d(40, seed=0).X, synthetic.gauss2d(40, seed=0).y
    with pytest.raises(ValueError, match=match):
        est(**kw).fit(X, y)


def test_final_fit_that_cannot_fit_names_the_parameter():
    d = synthetic.gauss2d(600, seed=1)
    with pytest.raises(EvidenceBudgetError, match="evidence_mb"):
        _fixed_svc("dense", d.X, d.y, evidence_mb=0.5)


def test_search_rejects_blocks_over_budget_and_says_why():
    d = synthetic.gauss2d(400, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(FloatingPointError, match="evidence_mb"):
            BayesianSVC(evidence_method="dense", evidence_mb=0.01, n_starts=1).fit(d.X, d.y)


def test_prediction_factor_takes_more_pivots_than_the_evidence_factor(monkeypatch):
    """With the evidence rank capped (stochastic correction), the factor kept
    for prediction still takes every pivot the budget allows, so the
    predictive sd stays within 1e-3 of the dense one (twonorm, 20 inputs)."""
    import bsvm_scale.inference.evidence_lowrank as el
    monkeypatch.setattr(el, "MAX_RANK", 40)
    d = synthetic.twonorm(1500, seed=1)
    Xt = synthetic.twonorm(500, seed=2).X
    kw = dict(optimize=False, kappa0=5.0, kappa=0.015, kappa_b=0.1)
    dense = BayesianSVC(evidence_method="dense", **kw).fit(d.X, d.y)
    mf = BayesianSVC(evidence_method="matrix_free", **kw).fit(d.X, d.y)
    assert mf.predictor_["X_S"].shape[0] > 40
    assert abs(mf.log_evidence_ - dense.log_evidence_) < 4 * mf.evidence_error_ + 0.05
    s1 = dense.decision_function(Xt, return_std=True)[1]
    s2 = mf.decision_function(Xt, return_std=True)[1]
    np.testing.assert_allclose(s2, s1, rtol=1e-3)
