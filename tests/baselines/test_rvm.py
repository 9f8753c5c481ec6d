"""Tests of the relevance vector machines (bsvm_scale.baselines.rvm)."""

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import expit

from bsvm_scale._util.base import Standardizer
from bsvm_scale.baselines.rvm import RVC, RVR


def _std(X):
    return Standardizer.fit(X).transform(X)


def _design(Xs, centres, has_bias, kappa):
    """Independent construction of the design matrix (Bishop 7.78)."""
    d2 = ((Xs[:, None, :] - centres[None, :, :]) ** 2).sum(-1)
    K = np.exp(-0.5 * kappa * d2)
    return np.hstack([np.ones((len(Xs), 1)), K]) if has_bias else K


def _dense_evidence(P, alpha, beta, t):
    """Bishop 7.85-7.86 with an explicit N x N covariance."""
    n = len(t)
    C = np.eye(n) / beta + P @ np.diag(1.0 / alpha) @ P.T
    return -0.5 * (n * np.log(2 * np.pi) + np.linalg.slogdet(C)[1] + t @ np.linalg.solve(C, t))


def _slow_rvr(Xs, t, kappa, beta, max_iter=20000, prune=1e9):
    """The obvious re-estimation (Bishop 7.87-7.89) over all N + 1 basis functions."""
    n = len(t)
    P = _design(Xs, Xs, True, kappa)
    idx = np.arange(n + 1)
    alpha = np.ones(n + 1)
    for _ in range(max_iter):
        Pm = P[:, idx]
        Sigma = np.linalg.inv(np.diag(alpha) + beta * Pm.T @ Pm)
        m = beta * Sigma @ Pm.T @ t
        gamma = 1.0 - alpha * np.diag(Sigma)
        new = gamma / m ** 2
        beta = (n - gamma.sum()) / np.sum((t - Pm @ m) ** 2)
        change = np.max(np.abs(np.log(new) - np.log(alpha)))
        keep = new < prune
        idx, alpha = idx[keep], new[keep]
        if change < 1e-7 and keep.all():
            break
    return _dense_evidence(P[:, idx], alpha, beta, t), idx


@pytest.fixture(scope="module")
def centre_data():
    """Targets built from three kernel centres plus small noise."""
    rng = np.random.default_rng(0)
    X = _std(rng.uniform(-3, 3, size=(150, 2)))
    kappa = 2.0
    centres = [5, 60, 120]
    t = _design(X, X[centres], False, kappa) @ np.array([1.0, -0.8, 0.6])
    return X, t + 0.05 * rng.normal(size=150), centres, kappa


def test_rvr_evidence_equals_dense_formula(sinc80):
    x, t = sinc80
    m = RVR(kappa=10.0).fit(x, t)
    assert m.converged_
    Xs = (x - m.x_mean_) / m.x_scale_
    P = _design(Xs, m.X_relevance_, m.has_bias_, m.kappa_)
    assert m.log_marginal_likelihood_ == pytest.approx(
        _dense_evidence(P, m.alpha_, m.beta_, t), abs=1e-6)
    # posterior (7.82), (7.83) with the final hyperparameters
    Sigma = np.linalg.inv(np.diag(m.alpha_) + m.beta_ * P.T @ P)
    np.testing.assert_allclose(m.covariance_, Sigma, rtol=1e-6, atol=1e-10)
    np.testing.assert_allclose(m.mean_, m.beta_ * Sigma @ P.T @ t, rtol=1e-6, atol=1e-8)
    # predictive variance (7.91)
    xt = np.linspace(-9, 9, 5)[:, None]
    Pt = _design((xt - m.x_mean_) / m.x_scale_, m.X_relevance_, m.has_bias_, m.kappa_)
    mu, sd = m.predict(xt, return_std=True, include_noise=True)
    np.testing.assert_allclose(mu, Pt @ m.mean_, atol=1e-10)
    np.testing.assert_allclose(sd ** 2, 1 / m.beta_ + np.einsum("ij,jk,ik->i", Pt, Sigma, Pt),
                               rtol=1e-6)


def test_rvr_fast_reaches_slow_reestimation_evidence(sinc80):
    x, t = sinc80
    kappa = 10.0
    m = RVR(kappa=kappa).fit(x, t)
    Xs = (x - m.x_mean_) / m.x_scale_
    slow, idx = _slow_rvr(Xs, t, kappa, beta=1.0 / (0.01 * t.var()))
    assert m.log_marginal_likelihood_ >= slow - 1e-3
    # both are sparse, with similar numbers of basis functions
    assert len(m.alpha_) <= 2 * len(idx) + 2
    assert np.sqrt(np.mean((m.predict(x) - np.sinc(x[:, 0] / np.pi)) ** 2)) < 0.08


@pytest.mark.parametrize("kappa", [10.0, 30.0])
def test_rvr_result_is_coordinatewise_optimal(sinc80, kappa):
    """Dense check of the end point: with C (7.86) built explicitly, no single
    alpha_i (added, re-estimated or deleted, Bishop 7.97-7.101) raises the
    evidence by more than a tiny amount."""
    x, t = sinc80
    m = RVR(kappa=kappa).fit(x, t)
    Xs = (x - m.x_mean_) / m.x_scale_
    P_all = _design(Xs, Xs, True, kappa)                 # column 0 = bias
    P = _design(Xs, m.X_relevance_, m.has_bias_, kappa)
    C = np.eye(len(t)) / m.beta_ + P @ np.diag(1.0 / m.alpha_) @ P.T
    Cinv_P = np.linalg.solve(C, P_all)
    S = np.einsum("ni,ni->i", P_all, Cinv_P)
    Q = Cinv_P.T @ t
    alpha = np.full(P_all.shape[1], np.inf)
    alpha[m.basis_index_ + 1] = m.alpha_
    act = np.isfinite(alpha)
    s, q = S.copy(), Q.copy()
    s[act] = alpha[act] * S[act] / (alpha[act] - S[act])
    q[act] = alpha[act] * Q[act] / (alpha[act] - S[act])

    def lam(a, s_, q_):
        return 0.5 * (np.log(a) - np.log(a + s_) + q_ ** 2 / (a + s_))

    best = np.where(q ** 2 > s, lam(s ** 2 / np.maximum(q ** 2 - s, 1e-300), s, q), 0.0)
    current = np.where(act, lam(np.where(act, alpha, 1.0), s, q), 0.0)
    assert np.all(best - current < 1e-3)
    assert m.log_marginal_likelihood_ == pytest.approx(_dense_evidence(P, m.alpha_, m.beta_, t),
                                                       abs=1e-6)


def test_rvr_prunes_to_generating_centres(centre_data):
    X, t, centres, kappa = centre_data
    m = RVR(kappa=kappa).fit(X, t)
    assert len(m.alpha_) <= 8                       # of 151 candidates
    # every generating centre has a relevance vector next to it
    for c in centres:
        assert np.min(np.linalg.norm(m.X_relevance_ - X[c], axis=1)) < 0.35
    assert m.noise_variance_ == pytest.approx(0.05 ** 2, rel=0.5)
    assert np.sqrt(np.mean((m.predict(X) - t) ** 2)) < 0.08


def test_rvr_pure_noise_targets_are_pruned(centre_data):
    X, _, _, kappa = centre_data
    t = np.random.default_rng(9).normal(size=len(X))
    m = RVR(kappa=kappa).fit(X, t)
    assert len(m.alpha_) <= 5
    assert m.noise_variance_ == pytest.approx(1.0, rel=0.4)


def test_rvr_stored_and_streamed_design_agree(centre_data):
    X, t, _, kappa = centre_data
    a = RVR(kappa=kappa).fit(X, t)
    b = RVR(kappa=kappa, cache_mb=1e-3).fit(X, t)
    assert a.design_stored_ and not b.design_stored_
    np.testing.assert_array_equal(a.basis_index_, b.basis_index_)
    assert a.log_marginal_likelihood_ == pytest.approx(b.log_marginal_likelihood_, abs=1e-6)
    np.testing.assert_allclose(a.predict(X[:10]), b.predict(X[:10]), atol=1e-6)


def _circle(n, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    return X, np.where((X ** 2).sum(1) < 1.4, "in", "out")


def test_rvc_separable_accuracy_and_sparsity():
    X, y = _circle(300, 2)
    m = RVC().fit(X, y)
    Xt, yt = _circle(300, 3)
    assert list(m.classes_) == ["in", "out"]
    assert np.mean(m.predict(X) == y) > 0.97
    assert np.mean(m.predict(Xt) == yt) > 0.93
    assert m.n_relevance_vectors_ <= 20
    p = m.predict_proba(Xt)
    np.testing.assert_allclose(p.sum(1), 1.0)
    assert np.all((p >= 0) & (p <= 1))
    f, s = m.decision_function(Xt[:4], return_std=True)
    assert np.all(s > 0)
    # moderation only shrinks probabilities towards 1/2
    raw = RVC(moderated=False).fit(X, y).predict_proba(Xt)[:, 1]
    assert np.all(np.abs(p[:, 1] - 0.5) <= np.abs(raw - 0.5) + 1e-12)


def test_rvc_laplace_evidence_independent():
    X, y = _circle(120, 4)
    m = RVC(kappa=1.0).fit(X, y)
    t = (y == m.classes_[1]).astype(float)
    Xs = (X - m.x_mean_) / m.x_scale_
    P = _design(Xs, m.X_relevance_, m.has_bias_, m.kappa_)
    a = m.alpha_

    def neg_log_post(w):                       # -(7.109)
        z = P @ w
        return -np.sum(t * z - np.logaddexp(0, z)) + 0.5 * w @ (a * w)

    res = minimize(neg_log_post, np.zeros(len(a)), method="BFGS",
                   jac=lambda w: -(P.T @ (t - expit(P @ w))) + a * w, options={"gtol": 1e-10})
    np.testing.assert_allclose(m.mean_, res.x, rtol=1e-4, atol=1e-5)
    yv = expit(P @ res.x)
    H = P.T @ np.diag(yv * (1 - yv)) @ P + np.diag(a)
    # (7.114): ln p(t|w*) + ln p(w*|alpha) + M/2 ln 2 pi - 1/2 ln|H|
    lml = (-neg_log_post(res.x) + 0.5 * np.sum(np.log(a)) - 0.5 * len(a) * np.log(2 * np.pi)
           + 0.5 * len(a) * np.log(2 * np.pi) - 0.5 * np.linalg.slogdet(H)[1])
    assert m.log_marginal_likelihood_ == pytest.approx(lml, abs=1e-6)
    np.testing.assert_allclose(m.covariance_, np.linalg.inv(H), rtol=1e-5, atol=1e-9)


@pytest.mark.parametrize("est", [RVR(), RVC()])
def test_rvm_bad_input(est):
    X, y = _circle(30, 5)
    yy = (y == "in").astype(float)
    Xn = X.copy()
    Xn[2, 1] = np.inf
    with pytest.raises(ValueError, match="X"):
        est.fit(Xn, yy)
    with pytest.raises(ValueError, match="y"):
        est.fit(X, yy[:-2])
    yn = yy.copy()
    yn[0] = np.nan
    with pytest.raises(ValueError, match="y"):
        est.fit(X, yn)


def test_rvc_one_class_rejected():
    X, _ = _circle(30, 6)
    with pytest.raises(ValueError, match="y.*two classes"):
        RVC().fit(X, np.zeros(30))


def test_rvm_fitted_state_is_plain(centre_data):
    X, t, _, kappa = centre_data
    plain = (np.ndarray, float, int, str, bool, np.floating, np.integer)
    for m in (RVR(kappa=kappa).fit(X, t), RVC(kappa=kappa).fit(X, t > 0)):
        for name, value in vars(m).items():
            if name.endswith("_") and not name.startswith("_"):
                assert isinstance(value, plain), name


@pytest.mark.parametrize("est, data", [(RVR, "sinc"), (RVC, "circle")])
def test_kappa_grid_keeps_the_highest_evidence_fit(est, data, sinc80, tmp_path):
    """With kappa_grid the fitted model is exactly the single-width fit at the
    grid's evidence maximum, and every grid evidence is that width's own."""
    X, y = sinc80 if data == "sinc" else _circle(120, 8)
    grid = [0.3, 3.0, 30.0]
    singles = [est(kappa=k).fit(X, y) for k in grid]
    ev = np.array([m.log_marginal_likelihood_ for m in singles])
    m = est(kappa=99.0, kappa_grid=grid).fit(X, y)
    np.testing.assert_array_equal(m.kappa_grid_log_evidence_, ev)
    best = singles[int(np.argmax(ev))]
    assert m.kappa_ == best.kappa_ == grid[int(np.argmax(ev))]
    assert len(set(np.round(ev, 6))) == 3  # the grid matters on these data
    np.testing.assert_array_equal(m.mean_, best.mean_)
    Xt = X[:7] + 0.1
    np.testing.assert_array_equal(m.predict(Xt), best.predict(Xt))
    assert m.get_params()["kappa"] == 99.0 and m.get_params()["kappa_grid"] == grid
    assert est().fit(X, y).kappa_grid_log_evidence_.shape == (0,)
    # stored and loaded with its grid and the grid's evidences
    from bsvm_scale.storage import load_model, save_model
    path = tmp_path / "m.h5"
    save_model(m, path)
    back = load_model(path)
    assert back.get_params()["kappa_grid"] == grid
    np.testing.assert_array_equal(back.kappa_grid_log_evidence_, ev)
    np.testing.assert_array_equal(back.predict(Xt), best.predict(Xt))


@pytest.mark.parametrize("bad", [[], [1.0, -2.0], [[1.0]], [np.nan]])
def test_bad_kappa_grid_is_refused(bad, sinc80):
    x, t = sinc80
    with pytest.raises(ValueError, match="kappa_grid must be a non-empty 1-D sequence"):
        RVR(kappa_grid=bad).fit(x, t)


def test_rvr_iteration_limit_warning_names_the_remedy(sinc80):
    """Stopped by max_iter with beta re-estimated only at alpha's convergence:
    the warning says so and names beta_every; with beta_every set it does not
    suggest it again."""
    from sklearn.exceptions import ConvergenceWarning

    X, t = sinc80
    with pytest.warns(ConvergenceWarning, match="set beta_every=10"):
        RVR(max_iter=3).fit(X, t)
    with pytest.warns(ConvergenceWarning) as rec:
        RVR(max_iter=3, beta_every=2).fit(X, t)
    assert all("beta_every" not in str(w.message) for w in rec)
