"""Tests of the classical SVMs (bsvm_scale.baselines.svm): agreement with LIBSVM
(scikit-learn), the trigonometric SVC against a dense solver, and the Gao et
al. (2002) evidence / C re-estimation / error bars against dense NumPy."""

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn import svm as sksvm
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning

from bsvm_scale.baselines.svm import SVC, SVR, TSVC, epsilon_noise_variance
from reference import sinc_data


# ---------------------------------------------------------------------------
# data
# ---------------------------------------------------------------------------
def sinc2d_data(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, (n, 2))
    r = np.linalg.norm(X, axis=1) * 2
    y = np.sinc(r / np.pi) + 0.1 * rng.standard_normal(n)
    return X, y


def gauss_classes(n, seed, shift=1.0):
    rng = np.random.default_rng(seed)
    Xp = rng.normal([-shift, 0.0], [1.0, np.sqrt(2.0)], (n // 2, 2))
    Xn = rng.normal([shift, 0.0], [np.sqrt(2.0), 1.0], (n - n // 2, 2))
    X = np.vstack([Xp, Xn])
    y = np.r_[np.ones(n // 2), -np.ones(n - n // 2)]
    perm = rng.permutation(n)
    return X[perm], y[perm]


def gram(A, B, kappa, kappa0=1.0):
    d = ((A[:, None, :] - B[None, :, :]) ** 2).sum(-1)
    return kappa0 * np.exp(-0.5 * kappa * d)


# ---------------------------------------------------------------------------
# unweighted fits are bit-for-bit those of the code before case weights
# ---------------------------------------------------------------------------
REFERENCE = json.loads((Path(__file__).parent / "svm_unweighted_reference.json").read_text())


def _hexes(values):
    return [float(v).hex() for v in np.ravel(values)]


def _summary(m, Xt):
    out = m.decision_function(Xt) if hasattr(m, "decision_function") else m.predict(Xt)
    return dict(n_iter=int(m.n_iter_), support=m.support_.tolist(), dual=_hexes(m.dual_coef_),
                b=float(m.intercept_[0]).hex(), f=_hexes(out))


def test_unweighted_fits_unchanged():
    """The numbers stored from the code before case weights (commit 765b418):
    SMO iterations, support sets, dual coefficients, bias and decision values
    must agree to the last bit (with and without shrinking; TSVC; the Gao et
    al. evidence, C update and error bars)."""
    X, y = sinc_data(50, 31, noise=0.2)
    Xt = np.linspace(-9, 9, 5)[:, None]
    for shrinking in (True, False):
        m = SVR(C=10.0, epsilon=0.05, kappa=0.8, tol=1e-8, shrinking=shrinking).fit(X, y)
        assert _summary(m, Xt) == REFERENCE[f"svr-{shrinking}"]
    m = SVR(C=2.0, epsilon=0.2, kappa=0.6, tol=1e-10, error_bars=True).fit(X, y)
    gao = dict(ev=float(m.log_evidence_).hex(), cu=float(m._C_update()).hex(),
               std=_hexes(m.predict(Xt, return_std=True)[1]))
    assert gao == REFERENCE["svr-gao"]
    Xc, yc = gauss_classes(60, 32)
    Xct = np.array([[-2.0, 0.0], [-0.5, 1.0], [0.0, 0.0], [0.7, -1.0], [2.0, 2.0]])
    for shrinking in (True, False):
        m = SVC(C=5.0, kappa=0.7, tol=1e-8, shrinking=shrinking).fit(Xc, yc)
        assert _summary(m, Xct) == REFERENCE[f"svc-{shrinking}"]
    m = TSVC(kappa0=3.0, kappa=0.7, tol=1e-9).fit(Xc, yc)
    assert _summary(m, Xct) == REFERENCE["tsvc"]


# ---------------------------------------------------------------------------
# agreement with LIBSVM
# ---------------------------------------------------------------------------
SVR_CASES = [
    ("sinc1d", sinc_data, 300, 1, dict(C=10.0, epsilon=0.1, kappa=0.5)),
    ("sinc1d-smallC", sinc_data, 250, 2, dict(C=0.5, epsilon=0.05, kappa=2.0)),
    ("sinc2d", sinc2d_data, 400, 3, dict(C=3.0, epsilon=0.05, kappa=1.0)),
]


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("name,make,n,seed,params", SVR_CASES, ids=[c[0] for c in SVR_CASES])
def test_svr_matches_libsvm(name, make, n, seed, params, shrinking):
    X, y = make(n, seed)
    ours = SVR(tol=1e-6, shrinking=shrinking, **params).fit(X, y)
    ref = sksvm.SVR(C=params["C"], epsilon=params["epsilon"], gamma=params["kappa"] / 2,
                    tol=1e-6).fit(X, y)
    Xt, _ = make(200, seed + 100)
    np.testing.assert_allclose(ours.predict(Xt), ref.predict(Xt), atol=1e-3)
    np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=1e-3)
    assert np.array_equal(np.sort(ours.support_), np.sort(ref.support_))
    # (the duals themselves are ill-determined for nearby 1-D inputs; the
    # decision function and the support set are what must agree)
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, atol=1e-3)
    assert ours.n_iter_ > 0


SVC_CASES = [
    ("overlap", 400, 4, dict(C=3.0, kappa=1.0)),
    ("overlap-bigC", 300, 5, dict(C=100.0, kappa=0.2)),
    ("overlap-smallC", 500, 6, dict(C=0.3, kappa=4.0)),
]


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("name,n,seed,params", SVC_CASES, ids=[c[0] for c in SVC_CASES])
def test_svc_matches_libsvm(name, n, seed, params, shrinking):
    X, y = gauss_classes(n, seed)
    ours = SVC(tol=1e-6, shrinking=shrinking, **params).fit(X, y)
    ref = sksvm.SVC(C=params["C"], gamma=params["kappa"] / 2, tol=1e-6).fit(X, y)
    Xt, _ = gauss_classes(200, seed + 100)
    np.testing.assert_allclose(ours.decision_function(Xt), ref.decision_function(Xt), atol=1e-3)
    assert np.array_equal(np.sort(ours.support_), np.sort(ref.support_))
    assert np.array_equal(ours.predict(Xt), ref.predict(Xt)) or \
        np.all(np.abs(ref.decision_function(Xt)[ours.predict(Xt) != ref.predict(Xt)]) < 1e-3)
    assert list(ours.n_support_) == list(ref.n_support_)
    np.testing.assert_array_equal(ours.classes_, ref.classes_)


def test_svc_string_labels_and_dual_feasibility():
    X, y = gauss_classes(120, 7)
    labels = np.where(y > 0, "pos", "neg")
    m = SVC(C=2.0, kappa=0.5, tol=1e-8).fit(X, labels)
    assert list(m.classes_) == ["neg", "pos"]
    s = np.where(labels == "pos", 1.0, -1.0)
    assert abs(np.sum(s * m.alpha_)) < 1e-8           # (B.10)
    assert np.all((m.alpha_ >= 0) & (m.alpha_ <= 2.0))
    assert set(np.unique(m.predict(X))) <= {"neg", "pos"}


def test_svm_kkt_conditions_svc():
    X, y = gauss_classes(150, 8)
    C, kappa, tol = 1.5, 0.8, 1e-8
    m = SVC(C=C, kappa=kappa, tol=tol).fit(X, y)
    s = np.where(y == m.classes_[1], 1.0, -1.0)
    f = m.decision_function(X)
    margin = s * f
    a = m.alpha_
    free = (a > 0) & (a < C)
    assert np.all(np.abs(margin[free] - 1) < 1e-6)
    assert np.all(margin[a == 0] > 1 - 1e-6)
    assert np.all(margin[a == C] < 1 + 1e-6)


def test_standardize_flag_changes_only_input_scaling():
    X, y = sinc_data(120, 9)
    Xs = (X - X.mean(0)) / X.std(0)
    a = SVR(C=5, kappa=1.0, tol=1e-8, standardize=True).fit(X, y)
    b = SVR(C=5, kappa=1.0, tol=1e-8).fit(Xs, y)
    Xt, _ = sinc_data(50, 10)
    np.testing.assert_allclose(a.predict(Xt), b.predict((Xt - X.mean(0)) / X.std(0)), atol=1e-10)


def test_small_cache_same_solution():
    X, y = gauss_classes(300, 11)
    big = SVC(C=3, kappa=1.0, tol=1e-6).fit(X, y)
    tiny = SVC(C=3, kappa=1.0, tol=1e-6, cache_mb=0.005).fit(X, y)   # two rows
    assert tiny.cache_stats_["slots"] == 2
    np.testing.assert_allclose(big.decision_function(X), tiny.decision_function(X), atol=1e-9)


def test_max_iter_warns():
    X, y = sinc_data(200, 12)
    with pytest.warns(ConvergenceWarning):
        m = SVR(C=10, kappa=0.5, max_iter=5).fit(X, y)
    assert m.n_iter_ == 5
    # even when stopped early (shrinking on) the full gradient is rebuilt
    X2, y2 = sinc_data(300, 13)
    with pytest.warns(ConvergenceWarning):
        m2 = SVR(C=10, kappa=0.5, max_iter=1500, shrinking=True).fit(X2, y2)
    beta = np.zeros(300)
    beta[m2.support_] = m2.dual_coef_[0]
    np.testing.assert_allclose(m2._Kbeta, gram(X2, X2, 0.5) @ beta, atol=1e-9)


@pytest.mark.parametrize("Est,bad", [
    (SVR, dict(C=0.0)), (SVR, dict(C=-1.0)), (SVR, dict(epsilon=-0.1)), (SVR, dict(kappa=0.0)),
    (SVR, dict(tol=0.0)), (SVR, dict(cache_mb=-1.0)), (SVR, dict(max_iter=1.5)),
    (SVC, dict(C=np.nan)), (SVC, dict(kappa=-2.0)), (TSVC, dict(kappa0=0.0)),
])
def test_bad_parameters_raise_value_error_naming_argument(Est, bad):
    X, y = gauss_classes(20, 0)
    name = next(iter(bad))
    with pytest.raises(ValueError, match=name):
        Est(**bad).fit(X, y)


def test_bad_inputs():
    X, y = gauss_classes(20, 0)
    with pytest.raises(ValueError, match="X"):
        SVC().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="y"):
        SVC().fit(X, y[:-1])
    with pytest.raises(ValueError, match="y"):
        SVC().fit(X, np.arange(20) % 3)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    with pytest.raises(ValueError, match="X"):
        SVR().fit(Xn, y)
    m = SVC().fit(X, y)
    with pytest.raises(ValueError, match="X"):
        m.predict(np.ones((3, 5)))


def test_sklearn_clone_and_params():
    m = SVR(C=3.0, epsilon=0.2, kappa=0.1)
    c = clone(m)
    assert c.get_params()["C"] == 3.0 and c.get_params()["kappa"] == 0.1


# ---------------------------------------------------------------------------
# TSVC (Appendix H)
# ---------------------------------------------------------------------------
def tsvc_dense_objective(K, y):
    Q = (y[:, None] * y[None, :]) * K

    def obj(a):
        u = 2 * a / np.pi
        return 0.5 * a @ Q @ a - a.sum() + np.sum(4 / np.pi * a * np.arctan(u) - np.log1p(u * u))

    def jac(a):
        return Q @ a - 1 + 4 / np.pi * np.arctan(2 * a / np.pi)

    return obj, jac


@pytest.mark.parametrize("n,seed,kappa0,kappa", [(60, 1, 2.0, 0.7), (90, 2, 0.5, 2.0), (40, 3, 10.0, 0.2)])
def test_tsvc_matches_dense_solver(n, seed, kappa0, kappa):
    X, y = gauss_classes(n, seed)
    m = TSVC(kappa0=kappa0, kappa=kappa, tol=1e-9).fit(X, y)
    s = np.where(y == m.classes_[1], 1.0, -1.0)
    K = gram(X, X, kappa, kappa0)
    obj, jac = tsvc_dense_objective(K, s)
    res = minimize(obj, np.zeros(n), jac=jac, method="SLSQP", bounds=[(0, None)] * n,
                   constraints=[{"type": "eq", "fun": lambda a: a @ s, "jac": lambda a: s}],
                   options={"ftol": 1e-15, "maxiter": 3000})
    assert res.success
    np.testing.assert_allclose(m.alpha_, res.x, atol=1e-5)
    assert obj(m.alpha_) <= obj(res.x) + 1e-8
    # KKT of (H.4): G_i + b y_i = 0 on SVs, >= 0 off them; sum y alpha = 0
    r = jac(m.alpha_) + m.intercept_[0] * s
    sv = m.alpha_ > 0
    assert np.max(np.abs(r[sv])) < 1e-6
    if np.any(~sv):
        assert np.min(r[~sv]) > -1e-6
    assert abs(np.sum(s * m.alpha_)) < 1e-10
    f = K @ (s * m.alpha_) + m.intercept_[0]
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-10)
    # the implicit primal constraint xi < 2, i.e. y f > -1 (5.7)
    assert np.all(s * f > -1)


# ---------------------------------------------------------------------------
# Gao et al. (2002)
# ---------------------------------------------------------------------------
def dense_gao(X, y, beta, b, C, eps, kappa):
    """Evidence (16), C update (17) from a solution, in plain NumPy."""
    n = len(y)
    K = gram(X, X, kappa)
    f = K @ beta + b
    res = y - f
    ab = np.abs(beta)
    M = (ab > 0) & (ab < C)
    Cset = ab >= C
    loss = np.maximum(np.abs(res) - eps, 0)
    quad = beta @ K @ beta
    _, logdet = np.linalg.slogdet(2 * np.pi * K[np.ix_(M, M)])
    lnG = np.log(0.5 * C / (eps * C + 1))
    ev = (-0.5 * quad - 0.5 * logdet + n * lnG - C * loss[Cset].sum()
          + np.sum(np.log(C / (ab[M] * (C - ab[M])))))
    C_new = (n + M.sum()) / (loss[Cset].sum() + np.sum(1 / (C - ab[M])) + n * eps / (eps * C + 1))
    return ev, C_new, M, K


def test_gao_evidence_and_error_bars_match_dense():
    X, y = sinc_data(80, 21, noise=0.3)
    C, eps, kappa = 2.0, 0.2, 0.6
    m = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-10, error_bars=True).fit(X, y)
    beta = np.zeros(len(y))
    beta[m.support_] = m.dual_coef_[0]
    ev, C_new, M, K = dense_gao(X, y, beta, m.intercept_[0], C, eps, kappa)
    assert M.sum() > 3 and np.sum(np.abs(beta) >= C) > 0
    np.testing.assert_array_equal(np.flatnonzero(M), m.margin_support_)
    np.testing.assert_allclose(m.log_evidence_, ev, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(m._C_update(), C_new, rtol=1e-10)
    # error bars (22), (29), (30)
    Xt = np.linspace(-12, 12, 37)[:, None]
    km = gram(X[M], Xt, kappa)
    var_f = 1.0 - np.sum(km * np.linalg.solve(K[np.ix_(M, M)], km), axis=0)
    noise = 2 / C**2 + eps**2 * (eps * C + 3) / (3 * (eps * C + 1))
    mean, std = m.predict(Xt, return_std=True)
    np.testing.assert_allclose(std, np.sqrt(var_f + noise), rtol=1e-7)
    np.testing.assert_allclose(mean, gram(Xt, X, kappa) @ beta + m.intercept_[0], atol=1e-10)
    assert m.noise_var_ == pytest.approx(noise)
    assert epsilon_noise_variance(C, eps) == pytest.approx(noise)
    # far from the data only the prior variance and the noise remain
    far = m.predict(np.array([[1e3]]), return_std=True)[1]
    assert far[0] == pytest.approx(np.sqrt(1 + noise))
    # error bars are smallest near the marginal vectors
    assert np.all(std >= np.sqrt(noise) - 1e-12)


def test_gao_noise_variance_by_quadrature():
    from scipy.integrate import quad
    for C, eps in [(2.0, 0.4), (10.0, 0.05), (0.5, 1.0)]:
        Z = 2 * (eps + 1 / C)   # normaliser of exp(-C L_eps(e))
        v = 2 * (quad(lambda e: e * e, 0, eps)[0]
                 + quad(lambda e: e * e * np.exp(-C * (e - eps)), eps, np.inf)[0]) / Z
        assert epsilon_noise_variance(C, eps) == pytest.approx(v, rel=1e-8)


def test_reestimate_C_reaches_fixed_point_of_eq17():
    X, y = sinc_data(100, 22, noise=0.5)
    m = SVR(C=10.0, epsilon=0.3, kappa=0.6, tol=1e-8)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.reestimate_C(X, y, rtol=1e-2, max_iter=40)
    assert m.C_path_[0] == 10.0
    assert len(m.C_path_) == len(m.log_evidence_path_) >= 2
    assert m.C == m.C_path_[-1] or m.C in m.C_path_
    # each step of the path applied (17) to the previous fit
    chk = SVR(C=m.C_path_[0], epsilon=0.3, kappa=0.6, tol=1e-8).fit(X, y)
    np.testing.assert_allclose(chk._C_update(), m.C_path_[1], rtol=1e-6)
    # the final model is fitted at the selected C
    assert m._C_fit == m.C
    assert np.isfinite(m.log_evidence_)


# ---------------------------------------------------------------------------
# property: the SVR solution satisfies the KKT conditions (C.13)
# ---------------------------------------------------------------------------
from hypothesis import given, settings, strategies as st  # noqa: E402


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), logC=st.floats(-1, 2), eps=st.floats(0.0, 0.5),
       logk=st.floats(-1.5, 1), n=st.integers(5, 60), shrinking=st.booleans())
def test_svr_kkt_property(seed, logC, eps, logk, n, shrinking):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.sin(X[:, 0]) + 0.3 * rng.standard_normal(n)
    C, kappa = 10 ** logC, 10 ** logk
    m = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-7, shrinking=shrinking).fit(X, y)
    beta = np.zeros(n)
    beta[m.support_] = m.dual_coef_[0]
    assert abs(beta.sum()) < 1e-9 * max(1.0, C)                       # (B.24)
    assert np.all(np.abs(beta) <= C * (1 + 1e-12))
    r = y - (gram(X, X, kappa) @ beta + m.intercept_[0])               # y - f
    tol = 1e-5
    free = (np.abs(beta) > 0) & (np.abs(beta) < C)
    assert np.all(np.abs(np.abs(r[free]) - eps) < tol)                 # cases 4, 5
    assert np.all(np.abs(r[beta == 0]) <= eps + tol)                   # case 1
    assert np.all(np.abs(r[np.abs(beta) >= C]) >= eps - tol)           # cases 2, 3
    big = (beta != 0) & (np.abs(r) > tol)
    assert np.all(np.sign(r[big]) == np.sign(beta[big]))                # beta_i > 0 iff above the tube
