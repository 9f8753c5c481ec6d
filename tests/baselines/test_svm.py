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
    """The numbers stored from the code before case weights (commit 765b418;
    recorded again when the covariance's exponential became
    ``bsvm_scale._compiled.fastexp``): SMO iterations, support sets, dual
    coefficients, bias and decision values must agree to the last bit (with and without shrinking; TSVC; the Gao et
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


# ---------------------------------------------------------------------------
# case and class weights
# ---------------------------------------------------------------------------
def case_weights(n, seed, big=100.0):
    """Non-integer weights in [0.2, 3], a tenth of them 0 and three of them ``big``."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 3.0, n)
    w[rng.choice(n, n // 10, replace=False)] = 0.0
    w[rng.choice(np.flatnonzero(w > 0), 3, replace=False)] = big
    return w


def full_dual(m, n, rows=None):
    """The dual coefficients of all ``n`` cases (``rows`` maps the model's indices)."""
    out = np.zeros(n)
    out[m.support_ if rows is None else rows[m.support_]] = m.dual_coef_[0]
    return out


def imbalanced_classes(n, seed, frac=0.05):
    """``frac`` of the cases positive (label 1, else 0), shifted by 1.5 in x_0."""
    rng = np.random.default_rng(seed)
    n_pos = int(round(frac * n))
    X = rng.normal(size=(n, 2))
    y = np.zeros(n, dtype=int)
    y[:n_pos] = 1
    X[:n_pos, 0] += 1.5
    perm = rng.permutation(n)
    return X[perm], y[perm]


# LIBSVM keeps kernel values in single precision (its Qfloat cache), so its
# duals carry errors of ~1e-6 relative to the largest box whatever tol is (its
# KKT conditions hold to ~1e-6 in double precision, ours to ~1e-10: see the
# dense KKT checks); the two agree at that level. scikit-learn
# drops the cases of weight 0 before calling LIBSVM, so its support_ indexes
# the remaining cases: mapped back through ``rows``.
def _assert_like_libsvm(ours, ref, w, X, C):
    n = w.shape[0]
    rows = np.flatnonzero(w > 0)
    np.testing.assert_array_equal(np.sort(ours.support_), np.sort(rows[ref.support_]))
    a, b = full_dual(ours, n), full_dual(ref, n, rows)
    np.testing.assert_allclose(a, b, rtol=0, atol=1e-5 * C * w.max())
    np.testing.assert_allclose(ours.intercept_, ref.intercept_, rtol=0, atol=2e-6)
    if hasattr(ours, "decision_function"):
        np.testing.assert_allclose(ours.decision_function(X), ref.decision_function(X), atol=2e-5)
    else:
        np.testing.assert_allclose(ours.predict(X), ref.predict(X), atol=2e-5)
    assert np.all(w[ours.support_] > 0)       # a case of weight 0 is never a support vector


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("seed", [0, 1])
def test_weighted_svr_matches_libsvm(seed, shrinking):
    X, y = sinc2d_data(150, seed)
    w = case_weights(150, seed)
    C = 3.0
    ours = SVR(C=C, epsilon=0.05, kappa=1.0, tol=1e-10, shrinking=shrinking).fit(X, y, w)
    ref = sksvm.SVR(C=C, epsilon=0.05, gamma=0.5, tol=1e-10).fit(X, y, sample_weight=w)
    _assert_like_libsvm(ours, ref, w, X, C)
    # the box of case i is C w_i, and several cases sit at their own bound
    beta = full_dual(ours, 150)
    assert np.all(np.abs(beta) <= C * w * (1 + 1e-12))
    assert np.sum((np.abs(beta) == C * w) & (w > 0)) >= 5


@pytest.mark.parametrize("shrinking", [True, False])
@pytest.mark.parametrize("class_weight", [None, "balanced", {1.0: 3.0}, {-1.0: 0.25, 1.0: 2.0}],
                         ids=["none", "balanced", "dict1", "dict2"])
def test_weighted_svc_matches_libsvm(class_weight, shrinking):
    X, y = gauss_classes(150, 3)
    w = case_weights(150, 3)
    C = 2.0
    ours = SVC(C=C, kappa=1.0, tol=1e-10, shrinking=shrinking, class_weight=class_weight)
    ours.fit(X, y, w)
    ref = sksvm.SVC(C=C, gamma=0.5, tol=1e-10, class_weight=class_weight).fit(X, y, sample_weight=w)
    np.testing.assert_array_equal(ours.class_weight_, ref.class_weight_)
    _assert_like_libsvm(ours, ref, w * ours.class_weight_[(y > 0).astype(int)], X, C)
    assert list(ours.n_support_) == list(ref.n_support_)


@pytest.mark.parametrize("shrinking", [True, False])
def test_balanced_class_weight_on_rare_positives_matches_libsvm(shrinking):
    X, y = imbalanced_classes(300, 5, frac=0.05)
    C = 1.0
    plain = SVC(C=C, kappa=1.0, tol=1e-10, shrinking=shrinking).fit(X, y)
    ours = SVC(C=C, kappa=1.0, tol=1e-10, shrinking=shrinking, class_weight="balanced").fit(X, y)
    ref = sksvm.SVC(C=C, gamma=0.5, tol=1e-10, class_weight="balanced").fit(X, y)
    np.testing.assert_allclose(ours.class_weight_, [300 / (2 * 285), 300 / (2 * 15)], rtol=1e-15)
    np.testing.assert_array_equal(ours.class_weight_, ref.class_weight_)
    _assert_like_libsvm(ours, ref, ours.class_weight_[y], X, C)
    s = np.where(y == 1, 1.0, -1.0)
    _dense_kkt_svc(X, s, 1.0, ours.alpha_, ours.intercept_[0], C * ours.class_weight_[y], 1e-8)
    # the point of the weights: the rare class is no longer ignored
    assert np.sum(plain.predict(X) == 1) < np.sum(ours.predict(X) == 1)
    recall = np.mean(ours.predict(X)[y == 1] == 1)
    assert recall > np.mean(plain.predict(X)[y == 1] == 1)


def _dense_kkt_svc(X, s, kappa, alpha, b, Cw, atol):
    f = gram(X, X, kappa) @ (s * alpha) + b
    margin = s * f
    free = (alpha > 0) & (alpha < Cw)
    assert np.all(np.abs(margin[free] - 1) < atol)
    assert np.all(margin[(alpha == 0) & (Cw > 0)] > 1 - atol)
    assert np.all(margin[(alpha >= Cw) & (Cw > 0)] < 1 + atol)
    assert abs(np.sum(s * alpha)) < atol


def test_weighted_svc_and_svr_kkt_dense():
    """KKT of the weighted duals in plain NumPy: 0 <= alpha_i <= C w_i, the
    conditions (C.13) with the per-case bound; weight-0 cases have alpha 0."""
    X, y = gauss_classes(120, 9)
    w = case_weights(120, 9, big=30.0)
    C, kappa = 1.5, 0.8
    m = SVC(C=C, kappa=kappa, tol=1e-10).fit(X, y, w)
    s = np.where(y == m.classes_[1], 1.0, -1.0)
    assert np.all(m.alpha_[w == 0] == 0) and np.all(m.alpha_ <= C * w)
    _dense_kkt_svc(X, s, kappa, m.alpha_, m.intercept_[0], C * w, 1e-7)
    Xr, yr = sinc2d_data(120, 9)
    r = SVR(C=C, epsilon=0.1, kappa=kappa, tol=1e-10).fit(Xr, yr, w)
    beta = full_dual(r, 120)
    res = yr - (gram(Xr, Xr, kappa) @ beta + r.intercept_[0])
    Cw = C * w
    free = (np.abs(beta) > 0) & (np.abs(beta) < Cw)
    assert free.sum() > 3 and np.all(beta[w == 0] == 0)
    assert np.all(np.abs(np.abs(res[free]) - 0.1) < 1e-7)
    assert np.all(np.abs(res[(beta == 0) & (w > 0)]) <= 0.1 + 1e-7)
    assert np.all(np.abs(res[(np.abs(beta) >= Cw) & (w > 0)]) >= 0.1 - 1e-7)
    assert abs(beta.sum()) < 1e-9 * C * w.max()


@pytest.mark.parametrize("Est,kw", [(SVR, dict(C=4.0, epsilon=0.05)), (SVC, dict(C=4.0)),
                                    (TSVC, dict(kappa0=4.0)), (SVC, dict(C=4.0, shrinking=False))],
                         ids=["svr", "svc", "tsvc", "svc-noshrink"])
def test_integer_weights_equal_repeated_cases(Est, kw):
    """Weight k == the case repeated k times (0: removed), for the decision
    function; the TSVC dual is strictly convex, so there even the duals agree
    (the copies share alpha_i / k each)."""
    rng = np.random.default_rng(17)
    if Est is SVR:
        X, y = sinc2d_data(90, 17)
    else:
        X, y = gauss_classes(90, 17)
    k = rng.integers(0, 4, 90)
    a = Est(kappa=0.7, tol=1e-11, **kw).fit(X, y, k)
    b = Est(kappa=0.7, tol=1e-11, **kw).fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    Xt = np.random.default_rng(18).uniform(-3, 3, (60, 2))
    fa = a.predict(Xt) if Est is SVR else a.decision_function(Xt)
    fb = b.predict(Xt) if Est is SVR else b.decision_function(Xt)
    np.testing.assert_allclose(fa, fb, rtol=0, atol=1e-7)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=1e-7)
    if Est is TSVC:
        owner = np.repeat(np.arange(90), k)
        summed = np.bincount(owner, weights=full_dual(b, owner.size), minlength=90)
        np.testing.assert_allclose(full_dual(a, 90), summed, rtol=0, atol=1e-7)


@pytest.mark.parametrize("Est,kw", [(SVR, dict(C=2.0)), (SVC, dict(C=2.0)),
                                    (TSVC, dict(kappa0=2.0))], ids=["svr", "svc", "tsvc"])
def test_zero_weights_remove_cases_and_keep_row_indices(Est, kw):
    X, y = (sinc2d_data(80, 4) if Est is SVR else gauss_classes(80, 4))
    w = np.random.default_rng(4).uniform(0.5, 2.0, 80)
    w[::5] = 0.0
    keep = w > 0
    a = Est(tol=1e-11, **kw).fit(X, y, w)
    b = Est(tol=1e-11, **kw).fit(X[keep], y[keep], w[keep])
    rows = np.flatnonzero(keep)
    np.testing.assert_array_equal(a.support_, rows[b.support_])
    np.testing.assert_allclose(a.dual_coef_, b.dual_coef_, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=0, atol=1e-9)
    np.testing.assert_array_equal(a.support_vectors_, X[a.support_])


@pytest.mark.parametrize("Est,kw", [(SVR, dict(C=3.0)), (SVC, dict(C=3.0)),
                                    (SVC, dict(C=3.0, shrinking=False)), (TSVC, dict(kappa0=3.0))],
                         ids=["svr", "svc", "svc-noshrink", "tsvc"])
def test_unit_weights_give_the_unweighted_fit_exactly(Est, kw):
    X, y = (sinc2d_data(70, 6) if Est is SVR else gauss_classes(70, 6))
    base = Est(tol=1e-9, **kw).fit(X, y)
    fits = [Est(tol=1e-9, **kw).fit(X, y, np.ones(70)), Est(tol=1e-9, **kw).fit(X, y, [1] * 70)]
    if Est is not SVR:
        fits.append(Est(tol=1e-9, class_weight={-1.0: 1.0, 1.0: 1.0}, **kw).fit(X, y))
        fits.append(Est(tol=1e-9, class_weight={1: 1}, **kw).fit(X, y, np.ones(70)))
    for m in fits:
        assert m.n_iter_ == base.n_iter_
        np.testing.assert_array_equal(m.support_, base.support_)
        np.testing.assert_array_equal(m.dual_coef_, base.dual_coef_)
        np.testing.assert_array_equal(m.intercept_, base.intercept_)


def test_uniform_weights_scale_C_for_svc_and_kappa0_for_tsvc():
    """All weights c: SVC(C) is SVC(c C); for TSVC, c sum l_t + 1/2 ||w||^2 is
    c (sum l_t + 1/2 ||f||^2 under the kernel c kappa0 k), so TSVC(kappa0)
    weighted c has the decision function of TSVC(c kappa0) and alpha = c alpha'."""
    X, y = gauss_classes(80, 12)
    for c in (0.3, 2.5):
        a = SVC(C=1.2, kappa=0.9, tol=1e-11).fit(X, y, np.full(80, c))
        b = SVC(C=1.2 * c, kappa=0.9, tol=1e-11).fit(X, y)
        np.testing.assert_allclose(a.decision_function(X), b.decision_function(X), atol=1e-8)
        t = TSVC(kappa0=1.5, kappa=0.9, tol=1e-11).fit(X, y, np.full(80, c))
        u = TSVC(kappa0=1.5 * c, kappa=0.9, tol=1e-11).fit(X, y)
        np.testing.assert_allclose(t.decision_function(X), u.decision_function(X), atol=1e-8)
        np.testing.assert_allclose(t.alpha_, c * u.alpha_, rtol=0, atol=1e-8 * max(1.0, c))


def tsvc_weighted_objective(K, s, w):
    """The weighted dual of TSVC: (H.4) with sum_i w_i phi(alpha_i / w_i)."""
    Q = (s[:, None] * s[None, :]) * K
    pos = w > 0

    def obj(a):
        u = 2 * a[pos] / (np.pi * w[pos])
        phi = w[pos] * (4 / np.pi * (a[pos] / w[pos]) * np.arctan(u) - np.log1p(u * u))
        return 0.5 * a @ Q @ a - a.sum() + phi.sum()

    def jac(a):
        g = Q @ a - 1
        g[pos] += 4 / np.pi * np.arctan(2 * a[pos] / (np.pi * w[pos]))
        return g

    return obj, jac


@pytest.mark.parametrize("n,seed,kappa0,kappa", [(50, 1, 2.0, 0.7), (70, 2, 0.5, 2.0)])
def test_weighted_tsvc_matches_general_solver(n, seed, kappa0, kappa):
    X, y = gauss_classes(n, seed)
    w = case_weights(n, seed, big=20.0)
    w[:3] = 1e-3                                     # tiny weights too
    m = TSVC(kappa0=kappa0, kappa=kappa, tol=1e-10).fit(X, y, w)
    s = np.where(y == m.classes_[1], 1.0, -1.0)
    K = gram(X, X, kappa, kappa0)
    obj, jac = tsvc_weighted_objective(K, s, w)
    # the objective's gradient, checked by central differences
    a0 = np.random.default_rng(seed).uniform(0.1, 2.0, n)
    h = 1e-6
    fd = np.array([(obj(a0 + h * e) - obj(a0 - h * e)) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(jac(a0), fd, rtol=1e-6, atol=1e-6)
    res = minimize(obj, np.zeros(n), jac=jac, method="SLSQP",
                   bounds=[(0, None if wi > 0 else 0.0) for wi in w],
                   constraints=[{"type": "eq", "fun": lambda a: a @ s, "jac": lambda a: s}],
                   options={"ftol": 1e-15, "maxiter": 3000})
    assert res.success
    np.testing.assert_allclose(m.alpha_, res.x, atol=2e-5 * max(1.0, w.max() / 10))
    assert obj(m.alpha_) <= obj(res.x) + 1e-8
    assert np.all(m.alpha_[w == 0] == 0)
    # KKT: G_i + b y_i = 0 on SVs, >= 0 off them (weight-0 cases excluded)
    r = jac(m.alpha_) + m.intercept_[0] * s
    sv = m.alpha_ > 0
    assert np.max(np.abs(r[sv])) < 1e-6
    assert np.min(r[(~sv) & (w > 0)], initial=0.0) > -1e-6
    f = K @ (s * m.alpha_) + m.intercept_[0]
    np.testing.assert_allclose(m.decision_function(X), f, atol=1e-10)
    assert np.all(s[w > 0] * f[w > 0] > -1)          # the loss' domain, y f > -1


BAD_WEIGHTS = {
    "negative": (lambda n: np.r_[-1.0, np.ones(n - 1)], "non-negative"),
    "nan": (lambda n: np.r_[np.nan, np.ones(n - 1)], "NaN or infinite"),
    "inf": (lambda n: np.r_[np.inf, np.ones(n - 1)], "NaN or infinite"),
    "all-zero": (lambda n: np.zeros(n), "zero for every case"),
    "short": (lambda n: np.ones(n - 1), "shape"),
    "2d": (lambda n: np.ones((n, 1)), "shape"),
    "text": (lambda n: ["a"] * n, "numeric"),
}


@pytest.mark.parametrize("case", sorted(BAD_WEIGHTS))
@pytest.mark.parametrize("Est", [SVR, SVC, TSVC])
def test_bad_sample_weight_raises_naming_it(Est, case):
    X, y = gauss_classes(20, 0)
    make, fragment = BAD_WEIGHTS[case]
    with pytest.raises(ValueError, match=f"{Est.__name__}: sample_weight.*{fragment}"):
        Est().fit(X, y, make(20))


@pytest.mark.parametrize("Est", [SVC, TSVC])
def test_bad_class_weight_raises_naming_it(Est):
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = gauss_classes(20, 0)
    with pytest.raises(ValueError, match=r"class_weight has the key 7, which is not a class of y"):
        Est(class_weight={7: 2.0}).fit(X, y)
    labels = np.where(y > 0, "yes", "no")
    with pytest.raises(ValueError,
                       match=r"'maybe', which is not a class of y \(classes \['no', 'yes'\]\)"):
        Est(class_weight={"yes": 2.0, "maybe": 1.0}).fit(X, labels)
    for bad in (-1.0, np.nan, "x", True):
        with pytest.raises(ValueError, match=r"class_weight\['yes'\] = .*finite numbers >= 0"):
            Est(class_weight={"yes": bad}).fit(X, labels)
    with pytest.raises(InvalidParameterError, match="'class_weight' parameter"):
        Est(class_weight="auto").fit(X, y)
    # weights that leave one class: sample weights or class weights of 0
    with pytest.raises(ValueError, match="zero for every case of class 'no'"):
        Est().fit(X, labels, (labels == "yes").astype(float))
    with pytest.raises(ValueError, match="zero for every case of class 'yes'"):
        Est(class_weight={"yes": 0}).fit(X, labels)
    # a dict keyed by numbers finds labels of another numeric type
    m = Est(class_weight={1: 2.0}).fit(X, y)
    np.testing.assert_array_equal(m.class_weight_, [1.0, 2.0])


def test_sample_weight_not_modified_and_lists_accepted():
    X, y = gauss_classes(40, 2)
    w = np.linspace(0.5, 2.0, 40)
    w0 = w.copy()
    a = SVC(class_weight="balanced").fit(X, y, w)
    np.testing.assert_array_equal(w, w0)
    b = SVC(class_weight="balanced").fit(X, y, list(w))
    np.testing.assert_array_equal(a.dual_coef_, b.dual_coef_)


@pytest.mark.parametrize("make", [
    lambda: (SVR(C=3.0, epsilon=0.05, error_bars=True), "reg", True),
    lambda: (SVC(C=2.0, class_weight={1: 4.0, -1: 0.5}), "cls", True),
    lambda: (SVC(C=2.0, class_weight={"b": 3.0}), "str", True),
    lambda: (TSVC(kappa0=2.0, class_weight="balanced"), "cls", True),
    lambda: (TSVC(kappa0=2.0), "cls", False),
], ids=["svr", "svc-dict", "svc-strkeys", "tsvc-balanced", "tsvc-classweight-only"])
def test_weighted_models_round_trip(make, tmp_path):
    from bsvm_scale.storage import load_model, save_model

    model, kind, weighted = make()
    rng = np.random.default_rng(5)
    X = rng.normal(size=(40, 2))
    if kind == "reg":
        y = np.sin(X[:, 0]) + 0.1 * rng.normal(size=40)
    else:
        y = np.where(X[:, 0] + 0.3 * rng.normal(size=40) > 0, 1, -1)
        if kind == "str":
            y = np.where(y > 0, "b", "a")
    w = rng.uniform(0.0, 3.0, 40) if weighted else None
    model.fit(X, y, w)
    save_model(model, tmp_path / "m.h5")
    loaded = load_model(tmp_path / "m.h5")
    assert repr(loaded.get_params()) == repr(model.get_params())
    Xt = rng.normal(size=(15, 2))
    np.testing.assert_array_equal(loaded.predict(Xt), model.predict(Xt))
    if kind == "reg":
        np.testing.assert_array_equal(loaded.predict(Xt, return_std=True)[1],
                                      model.predict(Xt, return_std=True)[1])
        assert loaded.log_evidence() == model.log_evidence()
    else:
        np.testing.assert_array_equal(loaded.decision_function(Xt), model.decision_function(Xt))
        np.testing.assert_array_equal(loaded.class_weight_, model.class_weight_)


def test_model_file_without_class_weight_loads(tmp_path):
    """A file written before class_weight existed (no such parameter) loads as
    class_weight=None and predicts as before."""
    import h5py

    from bsvm_scale.storage import load_model, save_model

    X, y = gauss_classes(40, 1)
    model = SVC(C=2.0).fit(X, y)
    del model.class_weight_              # not set by the code before weights
    path = tmp_path / "old.h5"
    save_model(model, path)
    with h5py.File(path, "r+") as f:
        pg = f["params"]
        entries = json.loads(pg.attrs["scalars"])
        assert ["class_weight", "none", None] in entries
        pg.attrs["scalars"] = json.dumps([e for e in entries if e[0] != "class_weight"])
    loaded = load_model(path)
    assert loaded.class_weight is None and not hasattr(loaded, "class_weight_")
    np.testing.assert_array_equal(loaded.decision_function(X), model.decision_function(X))


# ---------------------------------------------------------------------------
# Gao et al. (2002) with case weights
# ---------------------------------------------------------------------------
def dense_gao_weighted(X, y, beta, b, C, eps, kappa, w, C_eval=None):
    """Weighted evidence (16) and C update (17) in plain NumPy: likelihood
    prod_i p(y_i | f_i)^{w_i}, C_i = C w_i. ``C_eval`` evaluates the evidence
    at another C for the same solution and sets (for finite differences)."""
    K = gram(X, X, kappa)
    res = y - (K @ beta + b)
    ab = np.abs(beta)
    Ci = C * w
    M = (ab > 0) & (ab < Ci)
    B = (ab > 0) & (ab >= Ci)
    loss = np.maximum(np.abs(res) - eps, 0)
    _, logdet = np.linalg.slogdet(2 * np.pi * K[np.ix_(M, M)])
    Ce = C if C_eval is None else C_eval
    Cie = Ce * w
    ev = (-0.5 * beta @ K @ beta - 0.5 * logdet + w.sum() * np.log(0.5 * Ce / (eps * Ce + 1))
          - np.sum(Cie[B] * loss[B]) + np.sum(np.log(Cie[M] / (ab[M] * (Cie[M] - ab[M])))))
    W = w.sum()
    C_new = (W + M.sum()) / (np.sum(w[B] * loss[B]) + np.sum(w[M] / (Ci[M] - ab[M]))
                             + W * eps / (eps * C + 1))
    return ev, C_new, M, K


def test_weighted_gao_evidence_update_and_error_bars_match_dense():
    X, y = sinc_data(90, 23, noise=0.3)
    w = case_weights(90, 23, big=6.0)
    C, eps, kappa = 2.0, 0.2, 0.6
    m = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-11, error_bars=True).fit(X, y, w)
    beta = full_dual(m, 90)
    ev, C_new, M, K = dense_gao_weighted(X, y, beta, m.intercept_[0], C, eps, kappa, w)
    assert M.sum() > 3 and np.sum((np.abs(beta) >= C * w) & (w > 0)) > 3
    assert np.any(M & (w != 1.0))
    np.testing.assert_array_equal(np.flatnonzero(M), m.margin_support_)
    np.testing.assert_allclose(m.log_evidence_, ev, rtol=1e-9)
    np.testing.assert_allclose(m._C_update(), C_new, rtol=1e-10)
    # (17) is the fixed point of d(16)/dC = 0 with the solution held: the
    # derivative, by central differences, is (W + |X_M|)/C - denominator
    h = 1e-6 * C
    d_ev = (dense_gao_weighted(X, y, beta, m.intercept_[0], C, eps, kappa, w, C + h)[0]
            - dense_gao_weighted(X, y, beta, m.intercept_[0], C, eps, kappa, w, C - h)[0]) / (2 * h)
    top = w.sum() + M.sum()
    np.testing.assert_allclose(top / (top / C - d_ev), m._C_update(), rtol=1e-6)
    # error bars: sigma_KM^2 over the weighted X_M, noise of a weight-1 case
    Xt = np.linspace(-12, 12, 25)[:, None]
    km = gram(X[M], Xt, kappa)
    var_f = 1.0 - np.sum(km * np.linalg.solve(K[np.ix_(M, M)], km), axis=0)
    np.testing.assert_allclose(m.predict(Xt, return_std=True)[1],
                               np.sqrt(var_f + epsilon_noise_variance(C, eps)), rtol=1e-7)


def test_weighted_evidence_equals_evidence_of_repeated_data():
    """Integer weights on cases that are not marginal vectors: (16) of the
    repeated data set, evaluated literally, equals the weighted (16); so do
    the C update (17) and the error bars."""
    X, y = sinc_data(70, 24, noise=0.3)
    C, eps, kappa = 2.0, 0.2, 0.6
    base = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-11).fit(X, y)
    beta = full_dual(base, 70)
    r = np.abs(base._residual)
    inside = np.flatnonzero((beta == 0) & (r < eps / 2))[:4]           # well inside the tube
    outside = np.flatnonzero((np.abs(beta) >= C) & (r > eps + 0.25))[:3]   # well outside
    assert inside.size == 4 and outside.size == 3
    k = np.ones(70, dtype=int)
    k[inside] = [2, 3, 2, 3]
    k[outside] = 2
    a = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-11).fit(X, y, k)
    assert not np.any(np.isin(np.r_[inside, outside], a.margin_support_))
    b = SVR(C=C, epsilon=eps, kappa=kappa, tol=1e-11).fit(np.repeat(X, k, axis=0), np.repeat(y, k))
    assert b.margin_support_.size == a.margin_support_.size > 0
    np.testing.assert_allclose(a.log_evidence(), b.log_evidence(), rtol=1e-8)
    np.testing.assert_allclose(a._C_update(), b._C_update(), rtol=1e-8)
    Xt = np.linspace(-10, 10, 15)[:, None]
    np.testing.assert_allclose(a.predict(Xt, return_std=True)[1],
                               b.predict(Xt, return_std=True)[1], rtol=1e-7)
    # and the weights matter: without them the evidence differs
    assert abs(base.log_evidence() - a.log_evidence()) > 1.0


def test_reestimate_C_with_weights():
    X, y = sinc_data(80, 25, noise=0.5)
    w = case_weights(80, 25, big=4.0)
    m = SVR(C=10.0, epsilon=0.3, kappa=0.6, tol=1e-9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        m.reestimate_C(X, y, w, rtol=1e-2, max_iter=40)
    chk = SVR(C=m.C_path_[0], epsilon=0.3, kappa=0.6, tol=1e-9).fit(X, y, w)
    np.testing.assert_allclose(chk._C_update(), m.C_path_[1], rtol=1e-6)
    # the final model is the weighted fit at the selected C
    final = SVR(C=m.C, epsilon=0.3, kappa=0.6, tol=1e-9).fit(X, y, w)
    np.testing.assert_array_equal(m.dual_coef_, final.dual_coef_)
    assert m.log_evidence_ == final.log_evidence()


def test_svr_file_without_case_weights_still_gives_the_evidence(tmp_path):
    """An SVR saved before case weights (no ``_w_fit``) reads as unit weights."""
    import h5py

    from bsvm_scale.storage import load_model, save_model

    X, y = sinc_data(60, 26, noise=0.3)
    model = SVR(C=2.0, epsilon=0.2, kappa=0.6).fit(X, y)
    path = tmp_path / "old.h5"
    save_model(model, path)
    with h5py.File(path, "r+") as f:
        ag = f["attributes"]
        del ag["_w_fit"]
        ag.attrs["scalars"] = json.dumps([e for e in json.loads(ag.attrs["scalars"])
                                          if e[0] != "_w_fit"])
    loaded = load_model(path)
    assert not hasattr(loaded, "_w_fit")
    assert loaded.log_evidence() == model.log_evidence()
    np.testing.assert_array_equal(loaded.margin_support_, model.margin_support_)
    assert loaded._C_update() == model._C_update()
