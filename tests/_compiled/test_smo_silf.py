"""The BSVR SMO (4.25) and evidence (4.38)-(4.41) against independent dense
references: a general-purpose solver of the primal (4.10), a dense Laplace
evidence with quadrature for Z_S, central finite differences."""

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.optimize import minimize

from bsvm_scale.inference import losses
from bsvm_scale.inference.objective_silf import SilfObjective
from bsvm_scale.inference.covariance import GaussianCovariance

from reference import dense_cov


def _data(n, d=1, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    f = np.sinc(2 * X[:, 0]) + (0.3 * X[:, 1] if d > 1 else 0.0)
    y = f + losses.silf_sample(10.0, 0.1, 0.3, n, random_state=seed + 1)
    return np.ascontiguousarray(X), np.ascontiguousarray(y)


def _theta(C, eps, kappa, kappa_b):
    return np.concatenate(([np.log(C), np.log(eps)], np.log(np.atleast_1d(kappa)),
                           [np.log(kappa_b)]))


def _problem(X, y, beta, ard=False, tol=1e-7, kappa0=None):
    k0 = float(np.var(y)) if kappa0 is None else kappa0
    return SilfObjective(X, y, k0, beta, ard, tol, 64.0, 10**7)


def _primal_reference(X, y, k0, kappa, kb, C, eps, beta):
    """min_f C sum l(y - f) + f^T Sigma^-1 f / 2, whitened f = L z (4.10)."""
    S = dense_cov(X, X, k0, kappa, kb)
    L = np.linalg.cholesky(S + 1e-12 * np.eye(len(y)))

    def obj(z):
        f = L @ z
        r = y - f
        val = C * losses.silf(r, eps, beta).sum() + 0.5 * z @ z
        grad = -C * (L.T @ losses.silf_grad(r, eps, beta)) + z
        return val, grad

    res = minimize(obj, np.zeros(len(y)), jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16, "maxcor": 50})
    return L @ res.x


@pytest.mark.parametrize("kb,beta,C", [(1.0, 0.3, 10.0), (100.0, 0.3, 10.0), (100.0, 0.05, 3.0)])
def test_smo_matches_dense_primal(kb, beta, C):
    X, y = _data(150, seed=3)
    eps, kappa = 0.1, 4.0
    p = _problem(X, y, beta)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, GaussianCovariance(p.kappa0, kappa, kb))
    assert vmax <= 1e-7
    f_ref = _primal_reference(X, y, p.kappa0, kappa, kb, C, eps, beta)
    np.testing.assert_allclose(f, f_ref, atol=1e-6)
    # f is Sigma~ nu + b (4.12, 4.26) with b = kappa_b sum(nu) up to the tolerance
    S0 = dense_cov(X, X, p.kappa0, kappa, 0.0)
    np.testing.assert_allclose(S0 @ nu + bias, f, atol=1e-9)
    assert abs(bias - kb * nu.sum()) <= 1e-3


def _kkt_violation(nu, g, C, eps1):
    v = np.zeros_like(nu)
    zero = nu == 0
    v[zero] = np.maximum(0, np.abs(g[zero]) - eps1)
    up = nu >= C
    v[up] = np.maximum(0, g[up] + eps1)
    lo = nu <= -C
    v[lo] = np.maximum(0, eps1 - g[lo])
    pos = (nu > 0) & (nu < C)
    v[pos] = np.abs(g[pos] + eps1)
    neg = (nu < 0) & (nu > -C)
    v[neg] = np.abs(g[neg] - eps1)
    return v


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_kkt_conditions_hold_to_tau(tol):
    X, y = _data(200, d=2, seed=5)
    C, eps, beta, kb = 5.0, 0.1, 0.3, 100.0
    p = _problem(X, y, beta, tol=tol)
    cov = GaussianCovariance(p.kappa0, 1.5, kb)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, cov)
    assert np.all(np.abs(nu) <= C)
    S = dense_cov(X, X, p.kappa0, 1.5, 0.0)
    g = S @ nu + bias + (2 * beta * eps / C) * nu - y
    assert _kkt_violation(nu, g, C, (1 - beta) * eps).max() <= tol * 1.0001
    # the five index sets of (4.32) partition the points
    I0a = (nu > 0) & (nu < C)
    I0b = (nu < 0) & (nu > -C)
    I1, I2, I3 = nu == 0, nu == -C, nu == C
    assert np.all(I0a.astype(int) + I0b + I1 + I2 + I3 == 1)


@pytest.mark.parametrize("C", np.geomspace(0.03, 0.09, 7))
@pytest.mark.parametrize("tol", [2e-3, 1e-6])
def test_root_on_a_jump_of_theta(C, tol):
    """No free point at the optimum: four targets inside the tube at 0 and one
    outlier at the bound C (nearly diagonal kernel). P'(s) jumps at s = C,
    so psi changes sign there without passing near 0: regula falsi closes in
    from both sides and left remnants of ~1e-10 on free points, each a KKT
    violation of ~0.04 (a CPU-dependent failure before the interval test and
    the landing step). The solution is nu = (0, 0, 0, 0, C) in closed form
    (for C < 0.07; above, the four inliers turn free), checked here and
    against the dense primal."""
    X = np.arange(5.0)[:, None]
    y = np.array([0.0, 0.0, 0.0, 0.0, 1.0])
    eps, beta, kappa, kb = 0.1, 0.3, 20.0, 1.0
    p = _problem(X, y, beta, tol=tol, kappa0=1.0)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, GaussianCovariance(1.0, kappa, kb))
    assert vmax <= tol
    S = dense_cov(X, X, 1.0, kappa, 0.0)
    g = S @ nu + bias + (2 * beta * eps / C) * nu - y
    assert _kkt_violation(nu, g, C, (1 - beta) * eps).max() <= tol * 1.0001
    if C < 0.07:
        np.testing.assert_array_equal(nu, [0.0, 0.0, 0.0, 0.0, C])
    f_ref = _primal_reference(X, y, 1.0, kappa, kb, C, eps, beta)
    np.testing.assert_allclose(f, f_ref, atol=max(10 * tol, 1e-6))


def test_warm_start_equals_cold_start():
    X, y = _data(120, seed=7)
    p = _problem(X, y, 0.3)
    p.solve(10.0, 0.1, GaussianCovariance(p.kappa0, 2.0, 50.0))
    _, f_warm, _, it_warm, _, _ = p.solve(12.0, 0.08, GaussianCovariance(p.kappa0, 2.5, 80.0))
    q = _problem(X, y, 0.3)
    _, f_cold, _, it_cold, _, _ = q.solve(12.0, 0.08, GaussianCovariance(q.kappa0, 2.5, 80.0))
    np.testing.assert_allclose(f_warm, f_cold, atol=1e-7)


def _log_zs_quadrature(C, eps, beta):
    def dens(t):
        return np.exp(-C * losses.silf(t, eps, beta))
    pts = [0.0, (1 - beta) * eps, (1 + beta) * eps]
    total = sum(quad(dens, a, b, epsabs=0, epsrel=1e-13)[0] for a, b in zip(pts[:-1], pts[1:]))
    total += quad(dens, pts[-1], np.inf, epsabs=0, epsrel=1e-13)[0]
    return np.log(2 * total)


def test_evidence_equals_dense_laplace_computation():
    X, y = _data(100, d=2, seed=9)
    C, eps, beta, kappa, kb = 8.0, 0.12, 0.3, np.array([1.0, 0.3]), 30.0
    p = _problem(X, y, beta, ard=True)
    value, _, info = p(_theta(C, eps, kappa, kb))
    nu = p.last.dual
    C, eps = p.last.detail.C, p.last.detail.epsilon  # exactly the values used (exp(ln C) may differ from C)
    S = dense_cov(X, X, p.kappa0, kappa, kb)
    f = S @ nu
    M = (np.abs(nu) > 0) & (np.abs(nu) < C)
    Lam = np.where(M, 1.0 / (2 * beta * eps), 0.0)
    # (4.37): exp(-S(f_MP)) |I + C Sigma Lambda|^-1/2 Z_S^-n with the full n x n matrices
    S_f = C * losses.silf(y - f, eps, beta).sum() + 0.5 * f @ np.linalg.solve(S, f)
    _, logdet = np.linalg.slogdet(np.eye(len(y)) + C * S * Lam[None, :])
    ref = S_f + 0.5 * logdet + len(y) * _log_zs_quadrature(C, eps, beta)
    assert value == pytest.approx(ref, rel=1e-8, abs=1e-6)
    assert info["n_off_bound"] == M.sum()


@pytest.mark.parametrize("ard", [False, True])
def test_evidence_gradient_matches_finite_differences(ard):
    X, y = _data(80, d=2, seed=11)
    beta = 0.3
    kappa = np.array([1.2, 0.4]) if ard else 0.8
    theta = _theta(6.0, 0.1, kappa, 20.0)
    p = _problem(X, y, beta, ard=ard, tol=1e-9)
    value, grad, info = p(theta)
    off0 = p.last.detail.evidence.off_bound.copy()
    h = 1e-5
    for k in range(theta.size):
        tp, tm = theta.copy(), theta.copy()
        tp[k] += h
        tm[k] -= h
        vp, _, _ = p(tp)
        assert np.array_equal(p.last.detail.evidence.off_bound, off0), "SV set changed inside the FD step"
        vm, _, _ = p(tm)
        assert np.array_equal(p.last.detail.evidence.off_bound, off0), "SV set changed inside the FD step"
        fd = (vp - vm) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-4, abs=1e-6 * max(1.0, abs(value))), k


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_evidence_gradient_with_inferred_kappa0_matches_finite_differences(method):
    """``kappa0`` in ``theta`` (``kappa0="evidence"``): ``[ln C, ln eps, ln kappa0,
    ln kappa_l, ln kappa_b]``, each entry against central differences, on
    the dense and the matrix-free path; the other entries equal those of
    the fixed-kappa0 problem at the same point."""
    from bsvm_scale.inference.evidence_lowrank import EvidenceSettings

    X, y = _data(80, d=2, seed=11)
    k0 = 2.5
    theta = np.insert(_theta(6.0, 0.1, np.array([1.2, 0.4]), 20.0), 2, np.log(k0))
    p = SilfObjective(X, y, None, 0.3, True, 1e-9, 64.0, 10**7, EvidenceSettings(method, 1e-6))
    value, grad, _ = p(theta)
    assert grad.shape == theta.shape and p.last.detail.covariance.kappa0 == pytest.approx(k0)
    fixed = SilfObjective(X, y, p.last.detail.covariance.kappa0, 0.3, True, 1e-9, 64.0, 10**7,
                     EvidenceSettings(method, 1e-6))
    v_fixed, g_fixed, _ = fixed(np.delete(theta, 2))
    assert v_fixed == pytest.approx(value, rel=1e-12)
    np.testing.assert_allclose(np.delete(grad, 2), g_fixed, rtol=1e-10, atol=1e-12)
    off0 = p.last.detail.evidence.off_bound.copy()
    h = 1e-5
    for k in range(theta.size):
        vals = []
        for sgn in (1, -1):
            t = theta.copy()
            t[k] += sgn * h
            vals.append(p(t)[0])
            assert np.array_equal(p.last.detail.evidence.off_bound, off0), "SV set changed inside the FD step"
        fd = (vals[0] - vals[1]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-4, abs=1e-6 * max(1.0, abs(value))), k


def test_tiny_cache_and_partial_rows_give_the_same_solution():
    # a two-row cache forces evictions and, once shrinking leaves few points
    # active, the uncached partial rows of fetch_row
    X, y = _data(400, d=2, seed=13)
    cov = None
    sols = []
    for cache_mb in (64.0, 1e-6):
        p = SilfObjective(X, y, float(np.var(y)), 0.1, False, 1e-6, cache_mb, 10**7)
        cov = GaussianCovariance(p.kappa0, 2.0, 10.0)
        nu, f, bias, n_iter, vmax, _ = p.solve(10.0, 0.05, cov)
        assert vmax <= 1e-6
        sols.append(f)
        if cache_mb < 1:
            assert p.cache.n_slots == 2 and p.cache.stats["evictions"] > 0
    np.testing.assert_allclose(sols[0], sols[1], atol=1e-5)


@pytest.mark.parametrize("cache_mb", [64.0, 1e-6])
def test_gradient_stays_exact_through_shrinking_and_warm_starts(cache_mb):
    # after each solve f = Sigma nu must hold to rounding for every point,
    # including the shrunk ones rebuilt from G_bar; the sequence moves C (the
    # bound SVs keep their bound), the kernel width and kappa_b
    X, y = _data(1500, d=2, seed=17)
    p = SilfObjective(X, y, float(np.var(y)), 0.05, False, 1e-5, cache_mb, 10**7)
    for C, eps, kappa, kb in [(3.0, 0.02, 2.0, 10.0), (4.5, 0.03, 2.5, 10.0),
                              (2.0, 0.05, 1.5, 50.0)]:
        cov = GaussianCovariance(p.kappa0, kappa, kb)
        nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, cov)
        assert vmax <= 1e-5
        assert np.count_nonzero(np.abs(nu) >= C) > 100  # many bound SVs in G_bar
        f_dense = dense_cov(X, X, p.kappa0, kappa, kb) @ nu
        np.testing.assert_allclose(f, f_dense, atol=1e-9 * np.abs(f_dense).max() + 1e-10)


@pytest.mark.parametrize("start", ["zero", "all_upper", "random_bounds"])
def test_tiny_kappa_b_from_any_warm_start_reaches_the_dense_optimum(start):
    # kappa_b = 1e-4 makes the first secant slope guess tiny; an uncapped step
    # on sum(nu) used to push every point to a bound and stall there
    X, y = _data(150, seed=21)
    C, eps, kappa, kb, beta = 5.0, 0.1, 4.0, 1e-4, 0.3
    p = _problem(X, y, beta)
    rng = np.random.default_rng(0)
    nu0 = {"zero": np.zeros(150), "all_upper": np.full(150, C),
           "random_bounds": C * rng.choice([-1.0, 0.0, 1.0], size=150)}[start]
    p.reset(nu0)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, GaussianCovariance(p.kappa0, kappa, kb))
    assert vmax <= 1e-7
    f_ref = _primal_reference(X, y, p.kappa0, kappa, kb, C, eps, beta)
    np.testing.assert_allclose(f, f_ref, atol=1e-6)


def test_shrink_never_readmits_a_shrunk_point():
    # a shrunk point's gradient is stale: a later shrink must not judge it on
    # that value and bring it back without a reconstruction
    from bsvm_scale._compiled.silf_inner import shrink
    from bsvm_scale._compiled.smo_silf import SilfDual, silf_params

    C, eps1 = 1.0, 0.1
    nu = np.array([0.5, 0.0, 0.0, C])
    g = np.array([-0.1, 0.0, 0.0, -0.5])   # point 2 (shrunk) looks violating
    active = np.array([0, 1, 3, -1])       # point 2 is not active
    dual = SilfDual(np.zeros(4), nu, g, np.zeros(4))
    kept = shrink(dual, silf_params(C, eps1, 0.0, 0.0, 4), -0.2, 0.2, active[:3])
    assert 2 not in active[:kept]
    assert set(active[:kept]) == {0, 1}    # 3 sits firmly at its bound


@pytest.mark.parametrize("ard", [False, True])
def test_gradient_quadratic_term_from_the_start_pass(ard):
    """``start_dual_quad`` gives the same ``g`` and ``G_bar`` bits as
    ``start_dual`` and ``nu^T dSigma~ nu`` from the same kernel values;
    ``quad_after_smo`` moves it to a changed ``nu``. Both against the dense
    derivative matrices of tests/reference.py, and the direct contraction."""
    from bsvm_scale._compiled.silf_start import quad_after_smo, start_dual, start_dual_quad
    from bsvm_scale._compiled.smo_silf import silf_params
    from reference import dense_dcov

    X, y = _data(150, d=2, seed=21)
    rng = np.random.default_rng(3)
    cov = GaussianCovariance(2.0, np.array([0.7, 0.3]) if ard else 0.5, 0.0)
    kern = cov.kernel(X)
    par = silf_params(1.5, 0.1, 0.3, 4.0, 150)
    nu0 = np.where(rng.random(150) < 0.6, rng.uniform(-1.5, 1.5, 150), 0.0)
    nu0[:10] = 1.5  # at the bound
    plain = start_dual(kern, y, nu0.copy(), par)
    dual, q0, kept = start_dual_quad(kern, y, nu0.copy(), par)
    assert np.array_equal(dual.g, plain.g) and np.array_equal(dual.gbar, plain.gbar)
    np.testing.assert_array_equal(kept, nu0)
    D = dense_dcov(X, 2.0, cov.kappa, 0.0)  # one n x n matrix per entry of cov.theta
    ref0 = np.array([nu0 @ Dp @ nu0 for Dp in D])
    np.testing.assert_allclose(cov._collapse(q0)[:-1], ref0[:-1], rtol=1e-11, atol=1e-9)
    nu = nu0.copy()
    nu[[20, 40, 77]] = [0.3, 0.0, -0.2]  # what an SMO might change
    q = quad_after_smo(kern, q0, nu0, nu)
    ref = np.array([nu @ Dp @ nu for Dp in D])
    np.testing.assert_allclose(cov._collapse(q)[:-1], ref[:-1], rtol=1e-10, atol=1e-9)
    direct = GaussianCovariance(2.0, cov.kappa, 0.0).quad_grad(X, np.flatnonzero(nu), nu[nu != 0])
    np.testing.assert_allclose(cov._collapse(q)[:-1], direct[:-1], rtol=1e-10)
    assert quad_after_smo(kern, q0, nu0, nu0) is not None
    assert quad_after_smo(kern, q0, nu0, -nu0) is None  # everything changed: contract directly


# -- case weights: boxes C_i = C w_i and diagonal terms 2 beta eps / C_i ---------------------
def _weights(n, seed, zeros=True):
    """Non-integer weights in [0.2, 3], one tiny and one large, and (``zeros``)
    an eighth of the cases at weight 0."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.2, 3.0, n)
    w[:2] = [1e-3, 8.0]
    if zeros:
        w[rng.choice(np.arange(2, n), n // 8, replace=False)] = 0.0
    return w


def _wproblem(X, y, beta, w, tol=1e-9, kappa0=None, cache_mb=64.0, method="dense"):
    from bsvm_scale.inference.evidence_lowrank import EvidenceSettings

    k0 = float(np.var(y)) if kappa0 is None else kappa0
    return SilfObjective(X, y, k0, beta, False, tol, cache_mb, 10**7,
                    EvidenceSettings(method, 1e-8), sample_weight=w)


@pytest.mark.parametrize("kb,beta,C", [(1.0, 0.3, 10.0), (100.0, 0.3, 3.0), (20.0, 0.05, 30.0)])
def test_weighted_smo_matches_a_general_purpose_qp_solver(kb, beta, C):
    """The SMO of (4.25) with per-case boxes against SLSQP on the split dual
    (reference.silf_dual_qp): the same solution and objective; the stopping
    rule (4.33) with per-case C_i holds; and the dual solution is the MAP of
    the weighted primal C sum w_i l(y_i - f_i) + f^T Sigma^-1 f / 2."""
    from reference import silf_dual_objective, silf_dual_qp, silf_kkt_violation, silf_map_primal

    X, y = _data(40, seed=31)
    w = _weights(40, seed=32)
    eps, kappa = 0.1, 3.0
    p = _wproblem(X, y, beta, w)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, GaussianCovariance(p.kappa0, kappa, kb))
    S = dense_cov(X, X, p.kappa0, kappa, kb)
    nu_ref = silf_dual_qp(S, y, C, eps, beta, w)
    np.testing.assert_allclose(nu, nu_ref, atol=2e-5 * C)
    obj, obj_ref = (silf_dual_objective(v, S, y, C, eps, beta, w) for v in (nu, nu_ref))
    assert obj == pytest.approx(obj_ref, rel=1e-10)
    # the box and the stopping rule (4.33) with C_i = C w_i, on the dense gradient
    assert np.all(np.abs(nu) <= C * w) and np.all(nu[w == 0] == 0.0)
    assert vmax <= 1e-9
    g = S @ nu + np.divide(2 * beta * eps, C * w, out=np.zeros(40), where=w > 0) * nu - y
    assert silf_kkt_violation(nu, g, C, eps, beta, w).max() <= 1e-9 * 1.0001
    # the cases of each kind are there: on a box, off-bound, outside the tube, and weight 0
    box = C * w
    assert np.any(np.abs(nu) == box) and np.any((np.abs(nu) > 0) & (np.abs(nu) < box))
    assert np.any((nu == 0) & (w > 0))
    np.testing.assert_allclose(f, S @ nu, atol=1e-9)
    np.testing.assert_allclose(f, silf_map_primal(S, y, C, eps, beta, w), atol=1e-6)


@pytest.mark.parametrize("tol", [1e-3, 1e-6])
def test_kkt_conditions_with_per_case_boxes_hold_to_tau(tol):
    from reference import silf_kkt_violation

    X, y = _data(300, d=2, seed=33)
    w = _weights(300, seed=34)
    C, eps, beta, kb = 5.0, 0.1, 0.3, 100.0
    p = _wproblem(X, y, beta, w, tol=tol)
    nu, f, bias, n_iter, vmax, _ = p.solve(C, eps, GaussianCovariance(p.kappa0, 1.5, kb))
    box = C * w
    assert np.all(np.abs(nu) <= box) and np.all(nu[w == 0] == 0.0) and vmax <= tol
    S = dense_cov(X, X, p.kappa0, 1.5, 0.0)
    g = S @ nu + bias + np.divide(2 * beta * eps, box, out=np.zeros(300), where=w > 0) * nu - y
    assert silf_kkt_violation(nu, g, C, eps, beta, w).max() <= tol * 1.0001
    # the index sets (4.32) partition the cases; a case of weight 0 is in I_1
    I0a, I0b = (nu > 0) & (nu < box), (nu < 0) & (nu > -box)
    I1, I2, I3 = nu == 0, (nu == -box) & (w > 0), (nu == box) & (w > 0)
    assert np.all(I0a.astype(int) + I0b + I1 + I2 + I3 == 1)
    assert I2.sum() + I3.sum() > 10 and I0a.sum() + I0b.sum() > 10


@pytest.mark.parametrize("cache_mb", [64.0, 1e-6])
def test_unit_weights_give_the_unweighted_iterates_bit_for_bit(cache_mb):
    """Weights of 1 take the per-case code path with values equal to the
    shared ones, so every solve of a warm-started sequence (shrinking, G_bar
    reconstruction, partial rows with a two-row cache) and every evidence
    value and gradient are the same bits."""
    X, y = _data(1500, d=2, seed=17)
    runs = []
    for w in (None, np.ones(1500)):
        p = SilfObjective(X, y, float(np.var(y)), 0.05, False, 1e-5, cache_mb, 10**7,
                     sample_weight=w)
        out = []
        for theta in ([np.log(3.0), np.log(0.02), np.log(2.0), np.log(10.0)],
                      [np.log(4.5), np.log(0.03), np.log(2.5), np.log(10.0)],
                      [np.log(2.0), np.log(0.05), np.log(1.5), np.log(50.0)]):
            value, grad, info = p(np.array(theta))
            out.append((value, grad.copy(), p.last.dual.copy(), p.last.f.copy(), info["smo_iter"]))
        runs.append(out)
    for a, b in zip(*runs):
        assert a[0] == b[0] and a[4] == b[4]
        for x, z in zip(a[1:4], b[1:4]):
            np.testing.assert_array_equal(x, z)


def test_zero_weights_are_cases_left_out():
    """Cases of weight 0 keep ``nu_i = 0`` and change nothing: the solution on
    the other cases, the evidence and its gradient equal those of the data
    without them; ``f`` at the left-out cases is the MAP function there."""
    X, y = _data(200, d=2, seed=35)
    w = _weights(200, seed=36)
    keep = w > 0
    theta = np.array([np.log(6.0), np.log(0.1), np.log(1.2), np.log(20.0)])
    full = _wproblem(X, y, 0.3, w, tol=1e-11, kappa0=1.3)
    part = _wproblem(np.ascontiguousarray(X[keep]), y[keep], 0.3, w[keep], tol=1e-11,
                     kappa0=1.3)
    v_full, g_full, _ = full(theta)
    v_part, g_part, _ = part(theta)
    nu = full.last.dual
    assert np.all(nu[~keep] == 0.0)
    np.testing.assert_allclose(nu[keep], part.last.dual, atol=1e-9)
    np.testing.assert_allclose(full.last.f[keep], part.last.f, atol=1e-9)
    S_out = dense_cov(X[~keep], X[keep], 1.3, 1.2, 20.0)
    np.testing.assert_allclose(full.last.f[~keep], S_out @ part.last.dual, atol=1e-9)
    assert v_full == pytest.approx(v_part, rel=1e-10)
    np.testing.assert_allclose(g_full, g_part, rtol=1e-8, atol=1e-9)


def test_integer_weights_give_the_solution_of_repeated_cases():
    """Case ``i`` with weight ``k`` is ``k`` copies of it: the MAP function at
    the training inputs is the same, and the copies' dual values add up to
    the weighted case's (they share it equally when it is off the bound)."""
    X, y = _data(60, d=2, seed=37)
    w = np.random.default_rng(38).integers(0, 4, 60).astype(float)
    rep = np.repeat(np.arange(60), w.astype(int))
    C, eps, beta, cov = 4.0, 0.1, 0.3, GaussianCovariance(1.1, 0.8, 5.0)
    pw = _wproblem(X, y, beta, w, tol=1e-11, kappa0=1.1)
    pr = _problem(np.ascontiguousarray(X[rep]), y[rep], beta, tol=1e-11, kappa0=1.1)
    nu_w, f_w, *_ = pw.solve(C, eps, cov)
    nu_r, f_r, *_ = pr.solve(C, eps, cov)
    np.testing.assert_allclose(f_w[rep], f_r, atol=1e-9)
    np.testing.assert_allclose(np.bincount(rep, nu_r, minlength=60), nu_w, atol=1e-9)
    assert np.all(nu_w[w == 0] == 0.0)


def test_weighted_warm_start_moves_bound_cases_to_the_new_boxes():
    """``_warm_start`` clips the previous ``nu`` to the new boxes ``C w_i`` and
    keeps the cases that sat on their box on the moved box; the warm solve
    ends where a cold one does."""
    X, y = _data(120, seed=39)
    w = _weights(120, seed=40)
    p = _wproblem(X, y, 0.3, w, tol=1e-9)
    nu1, *_ = p.solve(10.0, 0.1, GaussianCovariance(p.kappa0, 2.0, 50.0))
    on = (np.abs(nu1) >= 10.0 * w) & (w > 0)
    assert on.sum() > 5
    for C2 in (6.0, 14.0):
        nu0 = p._warm_start(C2)
        np.testing.assert_array_equal(nu0[on], np.sign(nu1[on]) * C2 * w[on])
        np.testing.assert_array_equal(nu0[~on], np.clip(nu1[~on], -C2 * w[~on], C2 * w[~on]))
    _, f_warm, *_ = p.solve(12.0, 0.08, GaussianCovariance(p.kappa0, 2.5, 80.0))
    q = _wproblem(X, y, 0.3, w, tol=1e-9)
    _, f_cold, *_ = q.solve(12.0, 0.08, GaussianCovariance(q.kappa0, 2.5, 80.0))
    np.testing.assert_allclose(f_warm, f_cold, atol=1e-7)


def test_silf_params_per_case_constants():
    from bsvm_scale._compiled.smo_silf import silf_params

    w = np.array([1.0, 0.0, 2.5, 1e-3])
    par = silf_params(4.0, 0.2, 0.3, 7.0, 4, w)
    np.testing.assert_array_equal(par.box, 4.0 * w)
    np.testing.assert_allclose(par.dadd, [0.03, 0.0, 0.012, 30.0], rtol=1e-15)
    assert par.s_max == 4.0 * w.sum() and par.eps1 == pytest.approx(0.14)
    plain, ones = silf_params(4.0, 0.2, 0.3, 7.0, 4), silf_params(4.0, 0.2, 0.3, 7.0, 4, np.ones(4))
    assert np.all(ones.box == plain.box) and np.all(ones.dadd == plain.dadd)
    assert (ones.C, ones.eps1, ones.kappa_b, ones.s_max) == (plain.C, plain.eps1, plain.kappa_b,
                                                            plain.s_max)
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        silf_params(4.0, 0.2, 0.3, 7.0, 4, np.ones(3))
