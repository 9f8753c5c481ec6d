"""Tests of the exact Gaussian-process baselines (bsvm_scale.baselines.gp)."""

import warnings

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as Const

from bsvm_scale._util.base import Standardizer
from bsvm_scale.inference.covariance import GaussianCovariance
from bsvm_scale.baselines.gpc import GPC
from bsvm_scale.baselines.gp import GPR


def _standardised(X):
    """Inputs already standardised, so GPR's internal standardisation is the identity."""
    return Standardizer.fit(X).transform(X)


@pytest.fixture(scope="module")
def reg_data():
    rng = np.random.default_rng(0)
    X = _standardised(rng.normal(size=(50, 3)))
    y = np.sin(2.0 * X[:, 0]) + 0.3 * X[:, 1] + 0.1 * rng.normal(size=50)
    return X, y


@pytest.fixture(scope="module")
def cls_data():
    rng = np.random.default_rng(1)
    X = _standardised(rng.normal(size=(40, 2)))
    y = (X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=40) > 0).astype(int)
    return X, y


def _sk_kernel(kappa0, kappa, kappa_b, sigma2=None):
    k = Const(kappa0, "fixed") * RBF(1.0 / np.sqrt(kappa), "fixed") + Const(kappa_b, "fixed")
    return k if sigma2 is None else k + WhiteKernel(sigma2, "fixed")


HYPER = [(1.5, 0.7, 0.3, 0.05, False), (0.8, np.array([0.5, 1.3, 0.2]), 2.0, 0.2, True)]


# ---------------------------------------------------------------------------
# GPR
# ---------------------------------------------------------------------------
@pytest.mark.parametrize("kappa0,kappa,kappa_b,sigma2,ard", HYPER)
def test_gpr_evidence_and_predictions_match_sklearn(reg_data, kappa0, kappa, kappa_b, sigma2, ard):
    X, y = reg_data
    m = GPR(kappa0=kappa0, kappa=kappa, kappa_b=kappa_b, sigma2=sigma2, ard=ard,
            optimize=False).fit(X, y)
    sk = GaussianProcessRegressor(_sk_kernel(kappa0, kappa, kappa_b, sigma2), optimizer=None,
                                  alpha=0.0, normalize_y=False).fit(X, y)
    assert m.log_marginal_likelihood_ == pytest.approx(sk.log_marginal_likelihood_value_,
                                                       abs=1e-6)
    assert m.log_marginal_likelihood() == pytest.approx(m.log_marginal_likelihood_, abs=1e-10)

    Xt = np.random.default_rng(5).normal(size=(9, 3))
    mu, sd_y = m.predict(Xt, return_std=True, include_noise=True)
    mu_sk, sd_sk = sk.predict(Xt, return_std=True)      # WhiteKernel: std of y
    np.testing.assert_allclose(mu, mu_sk, atol=1e-8)
    np.testing.assert_allclose(sd_y, sd_sk, atol=1e-8)
    _, sd_f = m.predict(Xt, return_std=True)
    np.testing.assert_allclose(sd_f ** 2, sd_sk ** 2 - sigma2, atol=1e-8)
    np.testing.assert_allclose(m.predict(Xt), mu, atol=1e-12)


@pytest.mark.parametrize("ard", [False, True])
def test_gpr_gradient_matches_finite_differences(reg_data, ard):
    X, y = reg_data
    m = GPR(kappa0=1.2, kappa=0.6, kappa_b=0.4, sigma2=0.08, ard=ard, optimize=False).fit(X, y)
    theta = m.theta_
    _, grad = m.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-5
    fd = np.array([(m.log_marginal_likelihood(theta + h * e) - m.log_marginal_likelihood(theta - h * e))
                   / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-6)


def test_gpr_evidence_maximisation(reg_data):
    X, y = reg_data
    start = GPR(ard=True, optimize=False).fit(X, y)
    m = GPR(ard=True, n_starts=2, random_state=0).fit(X, y)
    assert len(m.starts_) == 2
    funs = [s["neg_log_evidence"] for s in m.starts_]
    assert m.best_start_ == int(np.argmin(funs))
    assert m.log_marginal_likelihood_ == pytest.approx(-funs[m.best_start_], abs=1e-8)
    assert m.log_marginal_likelihood_ > start.log_marginal_likelihood_
    # gradient (nearly) vanishes at an interior optimum
    _, g = m.log_marginal_likelihood(eval_gradient=True)
    lo, hi = np.log(1e-5), np.log(1e5)
    interior = (m.theta_ > lo + 1e-3) & (m.theta_ < hi - 1e-3)
    assert np.max(np.abs(g[interior])) < 1e-2
    rec = m.starts_[0]
    assert len(rec["trajectory"]) == rec["n_eval"] >= 1
    assert all(r["theta"].shape == m.theta_.shape for r in rec["trajectory"])
    # the irrelevant third input gets a smaller relevance weight than the first
    assert m.kappa_[2] < m.kappa_[0]
    assert np.sqrt(np.mean((m.predict(X) - y) ** 2)) < 0.2


def test_gpr_fitted_state_is_plain(reg_data):
    X, y = reg_data
    m = GPR(n_starts=1, options={"maxiter": 5}, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.fit(X, y)
    plain = (np.ndarray, float, int, str, bool, dict, list, np.floating, np.integer)
    for name, value in vars(m).items():
        if name.endswith("_") and not name.startswith("_"):
            assert isinstance(value, plain), name
            if isinstance(value, list):
                for rec in value:
                    assert all(isinstance(v, plain) for v in rec.values()), name


def test_gpr_center_y_and_offset(reg_data):
    X, y = reg_data
    m = GPR(optimize=False, center_y=True).fit(X, y + 100.0)
    ref = GPR(optimize=False).fit(X, y)
    assert m.y_mean_ == pytest.approx(y.mean() + 100.0)
    np.testing.assert_allclose(m.predict(X[:5]) - 100.0,
                               GPR(optimize=False, center_y=True).fit(X, y).predict(X[:5]),
                               atol=1e-8)
    assert ref.y_mean_ == 0.0


def test_gpr_normalize_y_matches_sklearn_and_is_scale_free(reg_data, tmp_path):
    """normalize_y: scikit-learn's predictions at equal hyperparameters; the
    evidence is the standardised one minus n ln sd(y) (raw target scale); and
    a rescaled, shifted target gives the rescaled, shifted fit."""
    X, y = reg_data
    y = 30.0 * y + 200.0
    kw = dict(kappa0=1.2, kappa=0.6, kappa_b=0.2, sigma2=0.07)
    m = GPR(optimize=False, normalize_y=True, **kw).fit(X, y)
    sk = GaussianProcessRegressor(_sk_kernel(1.2, 0.6, 0.2, 0.07), optimizer=None, alpha=0.0,
                                  normalize_y=True).fit(X, y)
    Xt = X[:7] + 0.1
    mean, std = m.predict(Xt, return_std=True, include_noise=True)
    sk_mean, sk_std = sk.predict(Xt, return_std=True)
    np.testing.assert_allclose(mean, sk_mean, rtol=1e-9)
    np.testing.assert_allclose(std, sk_std, rtol=1e-8)
    assert m.y_scale_ == pytest.approx(np.std(y)) and m.y_mean_ == pytest.approx(np.mean(y))
    jac = y.size * np.log(np.std(y))
    assert m.log_marginal_likelihood_ == pytest.approx(sk.log_marginal_likelihood_value_ - jac,
                                                       abs=1e-6)
    assert m.log_marginal_likelihood() == pytest.approx(m.log_marginal_likelihood_, abs=1e-10)
    # the evidence of the raw targets is a proper density of y: a change of units moves
    # it by exactly -n ln(factor), and the optimised fit is equivariant
    a = GPR(normalize_y=True, n_starts=1, random_state=0).fit(X, y)
    b = GPR(normalize_y=True, n_starts=1, random_state=0).fit(X, 1e-3 * y - 7.0)
    np.testing.assert_allclose(a.theta_, b.theta_, atol=1e-6)
    assert b.log_marginal_likelihood_ == pytest.approx(
        a.log_marginal_likelihood_ - y.size * np.log(1e-3), abs=1e-6)
    np.testing.assert_allclose(1e-3 * a.predict(Xt) - 7.0, b.predict(Xt), rtol=1e-6, atol=1e-9)
    # the optimiser's records are on the same (raw) scale as the reported evidence
    assert -a.starts_[a.best_start_]["neg_log_evidence"] == pytest.approx(a.log_marginal_likelihood_, abs=1e-8)
    # and a saved model predicts and reports the same after loading
    from bsvm_scale.storage import load_model, save_model

    save_model(a, tmp_path / "gpr.h5")
    c = load_model(tmp_path / "gpr.h5")
    assert c.normalize_y and c.y_scale_ == a.y_scale_
    np.testing.assert_array_equal(c.predict(Xt, return_std=True)[1], a.predict(Xt, return_std=True)[1])
    assert c.log_marginal_likelihood() == pytest.approx(a.log_marginal_likelihood_, abs=1e-9)
    with pytest.raises(ValueError, match="normalize_y"):
        GPR(normalize_y=True).fit(X, np.full(y.size, 3.0))


def test_gpr_convergence_warning(reg_data):
    X, y = reg_data
    with pytest.warns(ConvergenceWarning):
        GPR(n_starts=1, options={"maxiter": 1}).fit(X, y)


def test_gpr_memory_guard():
    X = np.zeros((3000, 2))
    X[:, 0] = np.arange(3000)
    with pytest.raises(ValueError, match=r"n=3000.*max_memory_mb"):
        GPR(max_memory_mb=10).fit(X, np.zeros(3000))


@pytest.mark.parametrize("est", [GPR(optimize=False), GPC(optimize=False)])
def test_bad_input(est, cls_data):
    X, y = cls_data
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        est.fit(Xn, y)
    with pytest.raises(ValueError, match="y"):
        est.fit(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        est.fit(X, np.where(np.arange(len(y)) == 3, np.nan, y.astype(float)))


def test_gpc_needs_two_classes(cls_data):
    X, _ = cls_data
    with pytest.raises(ValueError, match="y.*two classes"):
        GPC(optimize=False).fit(X, np.ones(len(X)))


# ---------------------------------------------------------------------------
# GPC
# ---------------------------------------------------------------------------
def _brute_force_laplace(K, t):
    """Laplace evidence (Bishop 6.90) from a generic optimiser and dense algebra."""
    Ki = np.linalg.inv(K)

    def neg_psi(a):
        return 0.5 * a @ Ki @ a - np.sum(t * a - np.logaddexp(0.0, a))

    res = minimize(neg_psi, np.zeros(len(t)), jac=lambda a: Ki @ a - (t - expit(a)),
                   method="BFGS", options={"gtol": 1e-11, "maxiter": 10000})
    a = res.x
    p = expit(a)
    n = len(t)
    psi = -neg_psi(a) - 0.5 * n * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(K)[1]
    return a, psi - 0.5 * np.linalg.slogdet(np.diag(p * (1 - p)) + Ki)[1] + 0.5 * n * np.log(2 * np.pi)


def test_gpc_mode_and_evidence_brute_force():
    rng = np.random.default_rng(3)
    X = _standardised(rng.normal(size=(8, 2)))
    t = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    m = GPC(kappa0=2.0, kappa=0.7, kappa_b=0.5, optimize=False).fit(X, t)
    K = GaussianCovariance(2.0, 0.7, 0.5).subset(X, np.arange(8))
    # fixed point of the mode (6.84): a* = C_N (t - sigma(a*))
    np.testing.assert_allclose(m.f_mode_, K @ (t - expit(m.f_mode_)), atol=1e-9)
    a_bf, lml_bf = _brute_force_laplace(K, t.astype(float))
    np.testing.assert_allclose(m.f_mode_, a_bf, atol=1e-5)
    assert m.log_marginal_likelihood_ == pytest.approx(lml_bf, abs=1e-7)


@pytest.mark.parametrize("ard", [False, True])
def test_gpc_gradient_matches_finite_differences(cls_data, ard):
    X, y = cls_data
    m = GPC(kappa0=2.0, kappa=0.5, kappa_b=0.4, ard=ard, optimize=False).fit(X, y)
    theta = m.theta_
    _, grad = m.log_marginal_likelihood(theta, eval_gradient=True)
    h = 1e-5
    fd = np.array([(m.log_marginal_likelihood(theta + h * e) - m.log_marginal_likelihood(theta - h * e))
                   / (2 * h) for e in np.eye(theta.size)])
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


def test_gpc_matches_sklearn(cls_data):
    X, y = cls_data
    m = GPC(kappa0=2.0, kappa=0.5, kappa_b=0.4, optimize=False).fit(X, y)
    sk = GaussianProcessClassifier(_sk_kernel(2.0, 0.5, 0.4), optimizer=None).fit(X, y)
    assert m.log_marginal_likelihood_ == pytest.approx(sk.log_marginal_likelihood_value_,
                                                       abs=1e-6)
    Xt = np.random.default_rng(7).normal(size=(25, 2))
    np.testing.assert_allclose(m.predict_proba(Xt), sk.predict_proba(Xt), atol=2e-3)
    np.testing.assert_array_equal(m.predict(Xt), sk.predict(Xt))
    probit = GPC(kappa0=2.0, kappa=0.5, kappa_b=0.4, optimize=False,
                 predict_method="probit").fit(X, y)
    np.testing.assert_allclose(probit.predict_proba(Xt), m.predict_proba(Xt), atol=2e-2)


def test_gpc_fit_separable_labels():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(60, 2))
    labels = np.where(X[:, 0] - X[:, 1] > 0, "pos", "neg")
    m = GPC(n_starts=2, random_state=0).fit(X, labels)
    assert list(m.classes_) == ["neg", "pos"]
    assert np.mean(m.predict(X) == labels) > 0.95
    start = GPC(optimize=False).fit(X, labels)
    assert m.log_marginal_likelihood_ >= start.log_marginal_likelihood_
    proba = m.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    f, s = m.decision_function(X[:5], return_std=True)
    assert np.all(s > 0) and f.shape == (5,)
