"""Tests of the BTSVC evidence (5.35)-(5.37), prediction (5.41)-(5.42) and the
public estimator :class:`bsvm_scale.BayesianSVC`.

Dense references (full ``n x n`` matrices, small ``n``) are written here,
independently of the package code.
"""

import warnings

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.stats import norm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

import reference
from bsvm_scale import BayesianSVC
from bsvm_scale.models.btsvc import TrigObjective, trig_class_probability
from bsvm_scale.inference.covariance import GaussianCovariance


# -- dense references ---------------------------------------------------------------
def dense_cov(X, Z, kappa0, kappa, kappa_b):
    w = np.broadcast_to(np.asarray(kappa, dtype=float), (X.shape[1],))
    D = (((X[:, None, :] - Z[None, :, :]) ** 2) * w).sum(-1)
    return kappa0 * np.exp(-0.5 * D) + kappa_b


def trig_loss_dense(z):
    """(5.7) of z = y f (z > -1)."""
    return np.where(z >= 1.0, 0.0, -2.0 * np.log(np.cos(np.pi / 4 * (1.0 - np.minimum(z, 1.0)))))


def trig_v_dense(f, y):
    """v = -d loss / d f (from 5.9)."""
    z = y * f
    return np.where(z >= 1.0, 0.0, y * np.pi / 2 * np.tan(np.pi / 4 * (1.0 - np.minimum(z, 1.0))))


def trig_lambda_dense(f, y):
    """Second derivative (5.10)."""
    z = y * f
    c = np.cos(np.pi / 4 * (1.0 - np.minimum(z, 1.0)))
    return np.where(z >= 1.0, 0.0, np.pi ** 2 / 8 / c ** 2)


def dense_laplace_neg_log_evidence(f, y, S):
    """-ln of the Laplace evidence exp(-S(f_MP)) |I + Sigma Lambda|^(-1/2) over
    all n points, with S(f) = 1/2 f^T Sigma^-1 f + sum loss (5.18)."""
    quad_term = 0.5 * f @ np.linalg.solve(S, f)
    lam = trig_lambda_dense(f, y)
    sign, logdet = np.linalg.slogdet(np.eye(len(f)) + S * lam[None, :])
    assert sign > 0
    return quad_term + trig_loss_dense(y * f).sum() + 0.5 * logdet


def blobs(n=120, d=3, seed=1, shift=1.0):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-shift, 1, (n // 2, d)), rng.normal(shift, 1, (n // 2, d))]
    y = np.r_[-np.ones(n // 2), np.ones(n // 2)]
    return X, y


# -- evidence -------------------------------------------------------------------------
@pytest.mark.parametrize("hyp", [(3.0, 0.4, 2.0), (10.0, 1.0, 0.5)])
def test_evidence_equals_dense_laplace(hyp):
    X, y = blobs(n=70, d=2, seed=4, shift=0.7)
    obj = TrigObjective(X, y, ard=False, tol=1e-12)
    theta = GaussianCovariance(*hyp).theta
    value, grad, info = obj(theta)
    S = dense_cov(X, X, *hyp)
    alpha = obj.alpha
    f = S @ (y * alpha)
    # f_MP is a stationary point of S(f) (5.18): f = Sigma v(f) with v from (5.9)
    np.testing.assert_allclose(S @ trig_v_dense(f, y), f, atol=1e-8)
    ref = dense_laplace_neg_log_evidence(f, y, S)
    assert abs(value - ref) < 1e-7 * max(1.0, abs(ref))
    assert info["n_sv"] == int(np.sum(y * f < 1.0))


def _fd_check(ard, theta):
    X, y = blobs()
    obj = TrigObjective(X, y, ard=ard, tol=1e-12)
    value, grad, info = obj(theta)
    sv = np.flatnonzero(obj.alpha > 0)
    h = 1e-5
    fd = np.empty_like(theta)
    for p in range(theta.size):
        e = np.zeros_like(theta)
        e[p] = h
        vp = obj(theta + e)[0]
        assert np.array_equal(np.flatnonzero(obj.alpha > 0), sv)
        vm = obj(theta - e)[0]
        assert np.array_equal(np.flatnonzero(obj.alpha > 0), sv)
        fd[p] = (vp - vm) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_evidence_gradient_matches_finite_differences_isotropic():
    _fd_check(False, np.log([3.0, 0.4, 2.0]))


def test_evidence_gradient_matches_finite_differences_ard():
    _fd_check(True, np.log([3.0, 0.3, 0.5, 0.8, 2.0]))


# -- (5.42) ---------------------------------------------------------------------------
def _lik(f, y):
    z = y * f
    return np.where(z >= 1, 1.0, np.where(z <= -1, 0.0,
                                          np.cos(np.pi / 4 * (1 - np.clip(z, -1, 1))) ** 2))


def _quad_prob(y, mu, sd):
    """Brute-force (5.42): adaptive quadrature of likelihood x Gaussian over the
    three pieces of the real line (limited to mu +- 40 sd)."""
    g = lambda t: _lik(t, y) * norm.pdf(t, mu, sd)  # noqa: E731
    lo, hi = mu - 40 * sd, mu + 40 * sd
    total = 0.0
    for a, b in [(lo, -1.0), (-1.0, 1.0), (1.0, hi)]:
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            continue
        pts = [mu] if a < mu < b else None
        total += quad(g, a, b, epsabs=1e-14, epsrel=1e-12, limit=400, points=pts)[0]
    return total


def test_class_probability_matches_quadrature():
    mus = np.array([-3.0, -1.0, -0.3, 0.0, 0.2, 0.999, 1.5, 4.0, 0.5, -0.5, 0.7])
    sds = np.array([0.5, 0.01, 1.0, 2.0, 1e-3, 0.3, 5.0, 0.2, 30.0, 1e-4, 0.05])
    p = trig_class_probability(mus, sds)
    for m, s, pp in zip(mus, sds, p):
        assert abs(pp - _quad_prob(1.0, m, s)) < 1e-9
        assert abs((1.0 - pp) - _quad_prob(-1.0, m, s)) < 1e-9
    # symmetry P(+1 | mu) = P(-1 | -mu) and P = 1/2 at mu = 0
    np.testing.assert_allclose(trig_class_probability(-mus, sds), 1.0 - p, atol=1e-12)
    assert trig_class_probability(0.0, 3.0)[0] == pytest.approx(0.5, abs=1e-14)


def test_class_probability_matches_monte_carlo():
    rng = np.random.default_rng(0)
    n = 400_000
    for m, s in [(0.4, 0.8), (-1.2, 0.5), (0.1, 3.0)]:
        f = rng.normal(m, s, n)
        lik = _lik(f, 1.0)
        se = lik.std() / np.sqrt(n)
        assert abs(trig_class_probability(m, s)[0] - lik.mean()) < 4.5 * se


# -- estimator ------------------------------------------------------------------------
def _gauss2d(n, rng):
    y = np.where(rng.random(n) < 0.5, 1, -1)
    X = np.where((y > 0)[:, None],
                 np.array([-2.0, 0.0]) + np.sqrt([1.0, 2.0]) * rng.standard_normal((n, 2)),
                 np.array([2.0, 0.0]) + np.sqrt([2.0, 1.0]) * rng.standard_normal((n, 2)))
    return X, y


def _gauss2d_bayes(X):
    lp = norm.logpdf(X[:, 0], -2, 1.0) + norm.logpdf(X[:, 1], 0, np.sqrt(2.0))
    ln = norm.logpdf(X[:, 0], 2, np.sqrt(2.0)) + norm.logpdf(X[:, 1], 0, 1.0)
    return np.where(lp > ln, 1, -1)


@pytest.mark.slow
def test_c2_error_close_to_bayes_optimal():
    rng = np.random.default_rng(2024)
    X, y = _gauss2d(1000, rng)
    Xt, yt = _gauss2d(20000, rng)
    clf = BayesianSVC(n_starts=1, random_state=0).fit(X, y)
    err = np.mean(clf.predict(Xt) != yt)
    bayes = np.mean(_gauss2d_bayes(Xt) != yt)
    assert err - bayes < 0.01
    P = clf.predict_proba(Xt)
    assert np.all(P.sum(axis=1) == 1.0)
    assert np.isfinite(clf.log_evidence_) and len(clf.support_) < 1000
    mu, sd = clf.decision_function(Xt[:5], return_std=True)
    assert mu.shape == sd.shape == (5,) and np.all(sd > 0)


@pytest.mark.slow
@pytest.mark.parametrize("multi_class, n_models", [("ovr", 10), ("ovo", 45)])
def test_digits_error_below_five_percent(multi_class, n_models):
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    X, y = load_digits(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
    # CI time budget: a stratified 60% subsample of the standard training split
    # (the full split is reported by the benchmark script); the test split is whole.
    Xtr, _, ytr, _ = train_test_split(Xtr, ytr, train_size=0.6, random_state=0, stratify=ytr)
    clf = BayesianSVC(n_starts=1, optimizer_options={"maxiter": 15}, multi_class=multi_class)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        clf.fit(Xtr, ytr)
    assert len(clf.estimators_) == n_models
    err = np.mean(clf.predict(Xte) != yte)
    assert err < 0.05, err
    P = clf.predict_proba(Xte)
    np.testing.assert_allclose(P.sum(axis=1), 1.0, rtol=1e-12)
    assert np.array_equal(clf.classes_[P.argmax(axis=1)], clf.predict(Xte))
    hyps = clf.hyperparameters_
    assert len(hyps) == n_models and len({round(h["kappa0"], 6) for h in hyps}) > 1


def test_fixed_hyperparameters_and_fitted_state():
    X, y = blobs(n=80, d=2, seed=3)
    labels = np.where(y > 0, "yes", "no")
    clf = BayesianSVC(optimize=False, kappa0=10.0, kappa=0.5, kappa_b=100.0).fit(X, labels)
    assert clf.hyperparameters_ == {"kappa0": 10.0, "kappa": 0.5, "kappa_b": 100.0}
    assert list(clf.classes_) == ["no", "yes"] and clf.n_opt_iter_ == 0 and clf.n_iter_ > 0
    # the stored evidence is the evidence at those hyperparameters
    Xs = (X - clf.x_mean_) / clf.x_scale_
    obj = TrigObjective(Xs, y, ard=False, tol=1e-3)
    assert clf.log_evidence_ == pytest.approx(-obj(clf.theta_)[0], rel=1e-6)
    # predictions: mean from the SVs, class from its sign
    mu, sd = clf.decision_function(X, return_std=True)
    S = dense_cov(Xs, clf.support_vectors_, 10.0, 0.5, 100.0)
    np.testing.assert_allclose(mu, S @ clf.dual_coef_, rtol=1e-10, atol=1e-10)
    np.testing.assert_array_equal(clf.predict(X), np.where(mu >= 0, "yes", "no"))
    # sigma_t^2 = Cov(x,x) - k^T (Lambda^-1 + Sigma_M)^-1 k, dense
    Sm = dense_cov(clf.support_vectors_, clf.support_vectors_, 10.0, 0.5, 100.0)
    f_sv = Sm @ clf.dual_coef_
    lam = trig_lambda_dense(f_sv, np.sign(clf.dual_coef_))
    var = 110.0 - np.einsum("ij,ij->i", S, np.linalg.solve(np.diag(1 / lam) + Sm, S.T).T)
    np.testing.assert_allclose(sd ** 2, var, rtol=1e-8, atol=1e-8)
    # fitted state is plain data (HDF5-storable)
    for name, val in vars(clf).items():
        if name.endswith("_") and not name.startswith("_"):
            assert isinstance(val, (np.ndarray, float, int, str, dict, list)), name


def test_optimization_records_and_starts():
    X, y = blobs(n=100, d=2, seed=8, shift=0.8)
    clf = BayesianSVC(starts=[{"kappa0": 10.0}, {"kappa0": 1.0, "kappa_b": 10.0}]).fit(X, y)
    assert len(clf.starts_) == 2
    funs = [s["neg_log_evidence"] for s in clf.starts_]
    assert clf.best_start_ == int(np.argmin(funs))
    assert clf.log_evidence_ == pytest.approx(-min(funs), rel=1e-6, abs=1e-6)
    rec = clf.starts_[1]
    assert np.allclose(rec["theta0"], np.log([1.0, 0.5, 10.0]))
    assert all({"theta", "fun", "grad_norm"} <= set(r) and {"n_sv", "smo_iter"} <= set(r["info"])
               for r in rec["trajectory"])
    # the optimum does not have a worse evidence than the start
    assert rec["neg_log_evidence"] <= rec["trajectory"][0]["fun"] + 1e-9


def test_ard_fit_ranks_relevant_inputs():
    rng = np.random.default_rng(5)
    X = rng.standard_normal((150, 3))
    y = np.where(X[:, 0] + 0.3 * rng.standard_normal(150) > 0, 1, -1)
    clf = BayesianSVC(ard=True, n_starts=1).fit(X, y)
    k = clf.hyperparameters_["kappa"]
    assert k.shape == (3,) and k[0] > k[1] and k[0] > k[2]


@pytest.mark.parametrize("mode,runs", [("isotropic", 2), ("continuation", 1), ("start", 1)])
def test_ard_search_from_the_isotropic_optimum_is_never_below_it(mode, runs):
    """ARD contains the isotropic model: begun at the isotropic optimum (every
    kappa_l equal to its kappa, SMO warm start from its solution) and keeping
    its best point, the search cannot end below the isotropic evidence."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((160, 4))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.6 * rng.standard_normal(160) > 0, 1, -1)
    iso = BayesianSVC(n_starts=1).fit(X, y)
    ard = BayesianSVC(ard=True, ard_init=mode, n_starts=1).fit(X, y)
    assert len(ard.starts_) == runs
    if mode == "start":
        assert "isotropic" not in ard.starts_[0]
        return
    cont = ard.starts_[-1]
    assert cont["isotropic"]["neg_log_evidence"] == pytest.approx(-iso.log_evidence_, abs=1e-9)
    first = cont["trajectory"][0]
    np.testing.assert_array_equal(first["theta"][1:-1], np.full(4, iso.theta_[1]))
    # the same point, the MAP solution re-solved (warm) to the SMO tolerance
    assert first["fun"] == pytest.approx(-iso.log_evidence_, abs=1e-3)
    assert ard.log_evidence_ >= iso.log_evidence_ - 1e-3
    assert ard.log_evidence_ == pytest.approx(-min(r["neg_log_evidence"] for r in ard.starts_))


@pytest.mark.parametrize("ard", [True, False])
def test_threads_do_not_change_the_fit(ard):
    """Two starts on two threads (``n_jobs``): their isotropic first stage
    (ARD) or their optimiser runs (isotropic) give the fit of one thread."""
    rng = np.random.default_rng(8)
    X = rng.standard_normal((160, 4))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.6 * rng.standard_normal(160) > 0, 1, -1)
    fits = [BayesianSVC(ard=ard, n_starts=2, n_jobs=k).fit(X, y) for k in (1, 2)]
    assert fits[0].log_evidence_ == fits[1].log_evidence_
    np.testing.assert_array_equal(fits[0].theta_, fits[1].theta_)
    assert [r["neg_log_evidence"] for r in fits[0].starts_] == \
        [r["neg_log_evidence"] for r in fits[1].starts_]
    assert fits[0].best_start_ == fits[1].best_start_


def test_convergence_warnings():
    X, y = blobs(n=60, d=2, seed=2)
    with pytest.warns(ConvergenceWarning, match="SMO"):
        BayesianSVC(optimize=False, max_iter=2).fit(X, y)
    with pytest.warns(ConvergenceWarning, match="iteration limit"):
        BayesianSVC(n_starts=1, optimizer_options={"maxiter": 1}).fit(X, y)


def test_bad_input():
    X, y = blobs(n=40, d=2)
    with pytest.raises(ValueError, match="y"):
        BayesianSVC().fit(X, np.ones(40))
    Xn = X.copy()
    Xn[3, 1] = np.nan
    with pytest.raises(ValueError, match="X"):
        BayesianSVC().fit(Xn, y)
    clf = BayesianSVC(optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="X has 3 features"):
        clf.predict(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="X"):
        clf.predict_proba(np.full((2, 2), np.inf))
    with pytest.raises(ValueError, match="kappa0"):
        BayesianSVC(optimize=False, kappa0=-1.0).fit(X, y)
    with pytest.raises(ValueError, match="starts"):
        BayesianSVC(starts=[{"C": 1.0}]).fit(X, y)


def test_sklearn_conventions_and_small_multiclass():
    clf = BayesianSVC(tol=1e-2, optimize=False, multi_class="ovr")
    assert clone(clf).get_params()["tol"] == 1e-2
    rng = np.random.default_rng(0)
    centers = np.array([[0, 0], [3, 0], [0, 3]])
    y = np.repeat([0, 1, 2], 30)
    X = centers[y] + 0.7 * rng.standard_normal((90, 2))
    clf.fit(X, y)
    P = clf.predict_proba(X)
    assert P.shape == (90, 3)
    assert np.mean(clf.predict(X) == y) > 0.9
    mu, sd = clf.decision_function(X, return_std=True)
    assert mu.shape == sd.shape == (90, 3)


def test_one_versus_rest_models_on_threads_are_those_of_one_thread():
    """Without a callback the binary models of a 3-class fit run on ``n_jobs``
    threads, in ``classes_`` order and equal to the serial fit; with a
    callback the classes run one after the other (calls in class order)."""
    rng = np.random.default_rng(1)
    centers = np.array([[0, 0], [2.5, 0], [0, 2.5]])
    y = np.repeat([0, 1, 2], 40)
    X = centers[y] + 0.8 * rng.standard_normal((120, 2))
    fits = [BayesianSVC(n_starts=2, n_jobs=k, multi_class="ovr").fit(X, y) for k in (1, 2)]
    np.testing.assert_array_equal(fits[0].log_evidence_, fits[1].log_evidence_)
    for a, b in zip(fits[0].estimators_, fits[1].estimators_):
        np.testing.assert_array_equal(a.theta_, b.theta_)
        assert a.n_jobs is None and b.n_jobs is None  # one thread inside each
    calls = []
    BayesianSVC(n_starts=1, n_jobs=2, optimizer_options={"maxiter": 2}).fit(
        X, y, callback=lambda k, rec, state: calls.append(k[0]))
    assert calls == sorted(calls) and set(calls) == {0, 1, 2}


def test_cholesky_jitter_fallback_is_reported():
    from bsvm_scale.inference.linalg import chol_with_jitter
    B0 = np.array([[1.0, 1.0], [1.0, 1.0 - 1e-7]])  # slightly indefinite
    with pytest.warns(RuntimeWarning, match="jitter"):
        L, jitter = chol_with_jitter(lambda: B0.copy())
    assert jitter > 0
    np.testing.assert_allclose(L @ L.T, B0 + jitter * np.eye(2), atol=1e-12)
    L, jitter = chol_with_jitter(lambda: np.eye(3) * 2.0)
    assert jitter == 0.0 and np.allclose(L, np.sqrt(2.0) * np.eye(3))


def test_coarse_to_fine_starts_end_at_a_full_data_optimum():
    X, y = blobs(n=700, d=2, seed=4, shift=0.8)
    m = BayesianSVC(init_subsample=250).fit(X, y)
    assert len(m.starts_) == 2 and m.best_start_ == 0
    rec, other = m.starts_
    sub = rec["subsample"]
    assert sub["n_samples"] == 250 and len(sub["trajectory"]) > 1
    assert other["trajectory"] == [] and len(other["subsample"]["trajectory"]) > 1
    assert sub["neg_log_evidence"] <= other["subsample"]["neg_log_evidence"]
    # the full-data phase starts at the subsample optimum ...
    np.testing.assert_allclose(rec["theta0"], sub["theta"])
    first = rec["trajectory"][0]
    np.testing.assert_allclose(first["theta"], sub["theta"])
    # ... warm-started from the subsample MAP solution (fewer SMO iterations
    # than a cold solve at the same point) ...
    cold = TrigObjective((X - m.x_mean_) / m.x_scale_,
                             np.where(y == m.classes_[1], 1.0, -1.0), False)
    assert first["info"]["smo_iter"] < cold.solve(sub["theta"])[1]["n_iter"]
    # ... and ends no worse than it began
    assert -m.log_evidence_ <= first["fun"] + 1e-9
    # the fitted state belongs to the full data
    assert m.support_.max() >= 250 and -m.log_evidence_ == pytest.approx(
        min(r["fun"] for r in rec["trajectory"]), abs=1e-6)
    # repeatable with random_state=None (fixed subsample seed)
    np.testing.assert_array_equal(BayesianSVC(init_subsample=250).fit(X, y).theta_, m.theta_)
    # no worse than optimising every start on the full data (1% of ln evidence)
    direct = BayesianSVC(init_subsample=None).fit(X, y)
    assert "subsample" not in direct.starts_[0]
    assert m.log_evidence_ >= direct.log_evidence_ - 0.01 * abs(direct.log_evidence_)
    # below the threshold the phase is skipped
    assert "subsample" not in BayesianSVC(n_starts=1, init_subsample=350).fit(X, y).starts_[0]


def test_start_points_are_the_ones_fit_starts_from():
    X, y = blobs(n=80, d=3, seed=6)
    est = BayesianSVC(n_starts=3, optimizer_options={"maxiter": 2})
    pts = est.start_points(X, y)
    np.testing.assert_allclose(pts[0], np.log([10.0, 1.0 / 3, 100.0]))
    m = est.fit(X, y)
    for p, rec in zip(pts, m.starts_):
        np.testing.assert_array_equal(p, rec["theta0"])
    with pytest.raises(ValueError, match="2-D"):
        est.start_points(np.ones(5))


def test_search_options_by_phase_with_the_users_over_them():
    """Full-data searches take the piecewise defaults (stall in nats, a slope
    trial); the subsample phase keeps the generic stall rule; the user's
    options win over both."""
    from bsvm_scale.optimization.driver import DEFAULT_OPTIONS, PIECEWISE_OPTIONS
    from bsvm_scale.optimization.starts import COARSE_OPTIONS

    from bsvm_scale.models.search_hooks import TrigSearch

    def options(est, phase=None):
        return TrigSearch(est, [(0, 1)] * 3, 10, False, None).options(phase)

    est = BayesianSVC(optimizer_options={"maxiter": 7, "slope_radius": 0.3})
    full, coarse = options(est), options(est, COARSE_OPTIONS)
    assert full == {**PIECEWISE_OPTIONS, "maxiter": 7, "slope_radius": 0.3}
    assert (full["stall_atol"], full["slope_rounds"]) == (0.1, 1)
    assert (coarse["stall_atol"], coarse["slope_rounds"], coarse["maxiter"]) == (0.0, 0, 7)
    assert {k: coarse[k] for k in DEFAULT_OPTIONS} == {**DEFAULT_OPTIONS, "maxiter": 7}
    mine = options(BayesianSVC(optimizer_options={"slope_rounds": 2}), COARSE_OPTIONS)
    assert mine["slope_rounds"] == 2


# -- case and class weights -----------------------------------------------------------------
FIXED = dict(optimize=False, kappa0=5.0, kappa=0.7, kappa_b=3.0, tol=1e-12)


def _weighted_data(n=80, seed=0, shift=0.6):
    """Two overlapping classes (labels 0/1) and integer weights 0..3."""
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-shift, 1, (n // 2, 2)), rng.normal(shift, 1, (n // 2, 2))]
    y = np.r_[np.zeros(n // 2, int), np.ones(n // 2, int)]
    return X, y, rng.integers(0, 4, n)


def _evidence_of(model, X, y, w, ard=False):
    """``-ln evidence`` of the weighted problem at ``model.theta_`` (cold SMO)."""
    Xs = (X - model.x_mean_) / model.x_scale_
    yb = np.where(y == model.classes_[1], 1.0, -1.0)
    return TrigObjective(Xs, yb, ard=ard, tol=1e-12, weights=w)(model.theta_)[0]


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_integer_sample_weights_are_repeated_cases(method):
    """At fixed hyperparameters, weight ``k`` (0 included) and ``k`` copies of
    the case give the same standardisation, MAP function, predictive moments
    (5.41), probabilities (5.42) and evidence (no constant between them)."""
    X, y, k = _weighted_data()
    kw = dict(FIXED, evidence_method=method, evidence_tol=1e-10)
    a = BayesianSVC(**kw).fit(X, y, sample_weight=k)
    b = BayesianSVC(**kw).fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    assert a.evidence_method_ == b.evidence_method_ == method
    np.testing.assert_allclose(a.x_mean_, b.x_mean_, rtol=1e-13)
    np.testing.assert_allclose(a.x_scale_, b.x_scale_, rtol=1e-13)
    Xt = np.r_[X, np.random.default_rng(1).normal(size=(40, 2))]
    mu_a, sd_a = a.decision_function(Xt, return_std=True)
    mu_b, sd_b = b.decision_function(Xt, return_std=True)
    np.testing.assert_allclose(mu_a, mu_b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sd_a, sd_b, rtol=0, atol=1e-10)
    np.testing.assert_allclose(a.predict_proba(Xt), b.predict_proba(Xt), rtol=0, atol=1e-10)
    assert a.log_evidence_ == pytest.approx(b.log_evidence_, rel=1e-11, abs=1e-10)
    # support_ indexes the rows given to fit; cases of weight 0 are never SVs
    assert np.all(k[a.support_] > 0)
    np.testing.assert_allclose(np.bincount(np.repeat(np.arange(y.size), k)[b.support_],
                                           weights=b.dual_coef_, minlength=y.size)[a.support_],
                               a.dual_coef_, rtol=0, atol=1e-10)


def test_weighted_predictive_moments_match_the_dense_reference():
    """(5.41) with the SV block's Lambda = w l'' (real-valued weights)."""
    X, y, _ = _weighted_data(seed=3)
    w = np.random.default_rng(4).uniform(0.1, 5.0, y.size)
    m = BayesianSVC(**FIXED).fit(X, y, sample_weight=w)
    # the weighted standardisation
    np.testing.assert_allclose(m.x_mean_, np.average(X, axis=0, weights=w), rtol=1e-13)
    Xs = (X - m.x_mean_) / m.x_scale_
    Xt = np.random.default_rng(5).normal(size=(30, 2))
    Xts = (Xt - m.x_mean_) / m.x_scale_
    S = dense_cov(Xs, Xs, 5.0, 0.7, 3.0)
    yb = np.where(y == 1, 1.0, -1.0)
    f = S[:, m.support_] @ m.dual_coef_
    np.testing.assert_allclose(f, S @ reference.trig_weighted_primal_v(f, yb, w), atol=1e-9)
    lam = reference.trig_weighted_loss_terms(f, yb, w)[2][m.support_]
    mu, var = reference.trig_predictive_moments(
        dense_cov(Xts, Xs[m.support_], 5.0, 0.7, 3.0), 8.0, S[np.ix_(m.support_, m.support_)],
        m.dual_coef_, lam)
    mu_m, sd_m = m.decision_function(Xt, return_std=True)
    np.testing.assert_allclose(mu_m, mu, rtol=0, atol=1e-10)
    np.testing.assert_allclose(sd_m ** 2, var, rtol=1e-9, atol=1e-10)
    ref = reference.trig_weighted_laplace_neg_log_evidence(f, yb, S, w)
    assert -m.log_evidence_ == pytest.approx(ref, rel=1e-9)


def test_all_ones_weights_are_the_unweighted_fit_bit_for_bit():
    X, y = blobs(n=120, d=2, seed=3, shift=0.8)
    kw = dict(n_starts=2, init_subsample=50)
    plain = BayesianSVC(**kw).fit(X, y)
    for fit_kw, params in (({"sample_weight": np.ones(y.size)}, {}),
                           ({}, {"class_weight": {-1.0: 1.0, 1.0: 1.0}}),
                           ({"sample_weight": np.full(y.size, 1)}, {"class_weight": {1.0: 1}})):
        m = BayesianSVC(**kw, **params).fit(X, y, **fit_kw)
        assert m.log_evidence_ == plain.log_evidence_
        np.testing.assert_array_equal(m.theta_, plain.theta_)
        np.testing.assert_array_equal(m.dual_coef_, plain.dual_coef_)
        np.testing.assert_array_equal(m.predict_proba(X), plain.predict_proba(X))
    np.testing.assert_array_equal(plain.class_weight_, [1.0, 1.0])


def test_zero_weight_is_a_removed_case():
    X, y, k = _weighted_data(seed=6)
    w = np.where(k == 0, 0.0, 1.5)
    a = BayesianSVC(**FIXED).fit(X, y, sample_weight=w)
    on = w > 0
    b = BayesianSVC(**FIXED).fit(X[on], y[on], sample_weight=w[on])
    np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-10)
    np.testing.assert_array_equal(X[a.support_], X[on][b.support_])


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_balanced_class_weight_is_the_equivalent_sample_weight():
    """About 5% positives: ``class_weight="balanced"`` is the sample weight
    ``n / (2 count(y_i))`` (the same fit, search included), and it moves the
    MAP solution towards the rare class."""
    rng = np.random.default_rng(7)
    n, n_pos = 200, 10
    X = np.r_[rng.normal(0.0, 1.0, (n - n_pos, 2)), rng.normal(1.2, 1.0, (n_pos, 2))]
    y = np.r_[np.full(n - n_pos, "neg"), np.full(n_pos, "pos")]
    kw = dict(n_starts=1, optimizer_options={"maxiter": 4})
    bal = BayesianSVC(class_weight="balanced", **kw).fit(X, y)
    counts = np.where(y == "pos", n_pos, n - n_pos)
    sw = BayesianSVC(**kw).fit(X, y, sample_weight=n / (2 * counts))
    np.testing.assert_array_equal(bal.class_weight_, [n / (2 * (n - n_pos)), n / (2 * n_pos)])
    np.testing.assert_array_equal(bal.theta_, sw.theta_)
    np.testing.assert_array_equal(bal.dual_coef_, sw.dual_coef_)
    assert bal.log_evidence_ == sw.log_evidence_
    # the same, at fixed hyperparameters, against the unweighted MAP solution
    fixed = dict(optimize=False, kappa0=5.0, kappa=0.5, kappa_b=3.0)
    plain = BayesianSVC(**fixed).fit(X, y)
    bal = BayesianSVC(class_weight="balanced", **fixed).fit(X, y)
    sw = BayesianSVC(**fixed).fit(X, y, sample_weight=n / (2 * counts))
    np.testing.assert_array_equal(bal.decision_function(X), sw.decision_function(X))
    assert np.sum(bal.predict(X) == "pos") > np.sum(plain.predict(X) == "pos")
    # a dict and a sample weight multiply
    cw = BayesianSVC(class_weight={"pos": 4.0}, **fixed).fit(X, y, sample_weight=counts / 100)
    ref = BayesianSVC(**fixed).fit(X, y, sample_weight=counts / 100 * np.where(y == "pos", 4, 1))
    np.testing.assert_array_equal(cw.decision_function(X), ref.decision_function(X))


def test_bad_weights_are_named():
    X, y, _ = _weighted_data(n=40)
    est = BayesianSVC(optimize=False)
    for bad, match in ((np.ones(39), "shape"), (np.ones((40, 1)), "shape"),
                       (np.r_[np.nan, np.ones(39)], "finite"), (np.r_[-1.0, np.ones(39)],
                                                                 "non-negative"),
                       (np.zeros(40), "zero for every case"), (np.array(["a"] * 40), "numbers")):
        with pytest.raises(ValueError, match=f"sample_weight.*{match}"):
            est.fit(X, y, sample_weight=bad)
    with pytest.raises(ValueError, match=r"class_weight has the key 2, which is not a class of y"):
        BayesianSVC(optimize=False, class_weight={1: 2.0, 2: 1.0}).fit(X, y)
    with pytest.raises(ValueError, match=r"class_weight\[1\] = .*finite numbers >= 0"):
        BayesianSVC(optimize=False, class_weight={1: -2.0}).fit(X, y)
    with pytest.raises(ValueError, match="class_weight"):
        BayesianSVC(optimize=False, class_weight="uniform").fit(X, y)
    with pytest.raises(ValueError, match="sample_weight times class_weight is zero"):
        BayesianSVC(optimize=False, class_weight={0: 0.0}).fit(X, y, sample_weight=(y == 0))


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_one_versus_rest_models_take_the_weights_of_the_original_labels():
    """Three classes: every binary model is fitted with ``sample_weight_i *
    class_weight[y_i]`` of the three-class labels (``"balanced"`` counts the
    three classes), and has no class weights of its own."""
    rng = np.random.default_rng(1)
    y = np.repeat([0, 1, 2], [20, 30, 40])
    X = np.array([[0, 0], [2.5, 0], [0, 2.5]])[y] + 0.8 * rng.standard_normal((90, 2))
    sw = rng.uniform(0.5, 2.0, 90)
    fixed = dict(optimize=False, kappa0=5.0, kappa=0.5, kappa_b=3.0)
    for cw, per_class in (({0: 3.0, 2: 0.5}, np.array([3.0, 1.0, 0.5])),
                          ("balanced", 90 / (3 * np.array([20.0, 30.0, 40.0])))):
        m = BayesianSVC(class_weight=cw, multi_class="ovr", **fixed).fit(X, y, sample_weight=sw)
        np.testing.assert_allclose(m.class_weight_, per_class, rtol=1e-15)
        assert len(m.estimators_) == 3
        for c, e in enumerate(m.estimators_):
            assert e.class_weight is None
            ref = BayesianSVC(**fixed).fit(X, (y == c).astype(int),
                                           sample_weight=sw * m.class_weight_[y])
            np.testing.assert_array_equal(e.dual_coef_, ref.dual_coef_)
            assert e.log_evidence_ == ref.log_evidence_
    # with the evidence search, the fit works and predicts the classes
    m = BayesianSVC(class_weight="balanced", n_starts=1,
                    optimizer_options={"maxiter": 3}).fit(X, y, sample_weight=sw)
    assert np.mean(m.predict(X) == y) > 0.85 and m.predict_proba(X).shape == (90, 3)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_ard_isotropic_stage_and_subsample_phase_take_the_weights():
    """The isotropic first stage of ARD is the weighted isotropic fit (class
    weights included), and the subsample phase evaluates the weighted
    evidence of its cases."""
    from bsvm_scale.optimization.starts import subsample_indices

    rng = np.random.default_rng(8)
    X = rng.standard_normal((160, 3))
    y = np.where(X[:, 0] - 0.5 * X[:, 1] + 0.6 * rng.standard_normal(160) > 0.8, 1, -1)
    sw = rng.uniform(0.2, 3.0, 160)
    kw = dict(n_starts=1, tol=1e-10, optimizer_options={"maxiter": 5})
    iso = BayesianSVC(class_weight="balanced", **kw).fit(X, y, sample_weight=sw)
    ard = BayesianSVC(ard=True, class_weight="balanced", **kw).fit(X, y, sample_weight=sw)
    cont = ard.starts_[-1]["isotropic"]
    assert cont["neg_log_evidence"] == -iso.log_evidence_
    w = sw * iso.class_weight_[(y > 0).astype(int)]
    assert -iso.log_evidence_ == pytest.approx(_evidence_of(iso, X, y, w), abs=1e-8)
    # subsample phase: the record's optimum is the weighted evidence of the subsample
    sub = BayesianSVC(init_subsample=60, **kw).fit(X, y, sample_weight=sw)
    rec = sub.starts_[0]["subsample"]
    idx = subsample_indices(160, 60, None)
    Xs = (X - sub.x_mean_) / sub.x_scale_
    obj = TrigObjective(Xs[idx], np.where(y[idx] > 0, 1.0, -1.0), False, tol=1e-12,
                            weights=sw[idx])
    assert rec["neg_log_evidence"] == pytest.approx(obj(rec["theta"])[0], abs=1e-7)
    plain = TrigObjective(Xs[idx], np.where(y[idx] > 0, 1.0, -1.0), False, tol=1e-12)
    assert abs(plain(rec["theta"])[0] - rec["neg_log_evidence"]) > 0.1
    assert -sub.log_evidence_ == pytest.approx(_evidence_of(sub, X, y, sw), abs=1e-7)


def test_weighted_fit_resumes_exactly_and_retrains_from_an_earlier_fit(tmp_path):
    from bsvm_scale.storage import load_model, save_model

    X, y = blobs(n=140, d=2, seed=9, shift=0.7)
    y = y.astype(int)  # a model file keeps dict keys that are str or int
    w = np.random.default_rng(2).uniform(0.0, 3.0, y.size)
    w[:5] = 0.0
    recs = []
    kw = dict(n_starts=1, class_weight={1: 2.0})
    full = BayesianSVC(**kw).fit(X, y, sample_weight=w,
                                 callback=lambda k, rec, state: recs.append((rec, state)))
    cut = len(recs) // 2
    resumed = BayesianSVC(**kw).fit(
        X, y, sample_weight=w, init={"theta": full.starts_[0]["theta0"],
                                     "state": recs[cut - 1][1],
                                     "evaluations": [r for r, _ in recs[:cut]]})
    np.testing.assert_array_equal(resumed.theta_, full.theta_)
    assert resumed.log_evidence_ == full.log_evidence_
    np.testing.assert_array_equal(resumed.dual_coef_, full.dual_coef_)
    # save / load keeps the weights' effect and the parameters
    save_model(full, tmp_path / "w.h5")
    back = load_model(tmp_path / "w.h5")
    assert back.class_weight == {1: 2.0}
    np.testing.assert_array_equal(back.class_weight_, full.class_weight_)
    np.testing.assert_array_equal(back.predict_proba(X), full.predict_proba(X))
    # retraining on shifted data with other weights, from the saved model and case ids
    ids = np.arange(1000, 1000 + y.size)
    first = BayesianSVC(**kw).fit(X[:120], y[:120], sample_weight=w[:120], case_ids=ids[:120])
    w2 = w[20:].copy()
    w2[first.support_[first.support_ >= 20][:3] - 20] = 0.0  # earlier SVs now of weight 0
    save_model(first, tmp_path / "first.h5")
    warm = BayesianSVC(warm_start_from=str(tmp_path / "first.h5"), **kw).fit(
        X[20:], y[20:], sample_weight=w2, case_ids=ids[20:])
    assert warm.starts_[0]["theta0"] == pytest.approx(first.theta_)
    assert np.all(w2[warm.support_] > 0)
    ww = w2 * np.where(y[20:] > 0, 2.0, 1.0)
    assert -warm.log_evidence_ == pytest.approx(_evidence_of(warm, X[20:], y[20:], ww),
                                                abs=1e-2)


def test_class_weight_dicts_with_string_and_int_labels_survive_a_model_file(tmp_path):
    from bsvm_scale.storage import load_model, save_model

    X, y, _ = _weighted_data(n=60)
    for labels, cw in ((y, {1: 3.0}), (np.where(y > 0, "yes", "no"), {"no": 0.5, "yes": 2})):
        m = BayesianSVC(class_weight=cw, **FIXED).fit(X, labels)
        save_model(m, tmp_path / "m.h5")
        back = load_model(tmp_path / "m.h5")
        assert back.class_weight == cw
        np.testing.assert_array_equal(back.predict_proba(X), m.predict_proba(X))
        np.testing.assert_array_equal(back.class_weight_, m.class_weight_)


def test_model_files_from_before_class_weight_load_unweighted(tmp_path, monkeypatch):
    """A file written before ``class_weight`` existed (no such parameter, no
    ``class_weight_``) loads with ``class_weight=None``, how it was fitted."""
    import copy
    import json

    import h5py

    from bsvm_scale.storage import load_model, save_model

    X, y, _ = _weighted_data(n=60)
    model = BayesianSVC(**FIXED).fit(X, y)
    names = [k for k in BayesianSVC._get_param_names() if k != "class_weight"]
    monkeypatch.setattr(BayesianSVC, "get_params",
                        lambda self, deep=True: {k: getattr(self, k) for k in names})
    old = copy.copy(model)
    del old.class_weight, old.class_weight_
    path = save_model(old, tmp_path / "old.h5")
    monkeypatch.undo()
    with h5py.File(path, "r") as f:
        assert "class_weight" not in json.loads(f.attrs["params_json"])
    back = load_model(path)
    assert back.class_weight is None and not hasattr(back, "class_weight_")
    np.testing.assert_array_equal(back.predict_proba(X), model.predict_proba(X))
