"""Slow, obvious dense NumPy references shared by the test suite.

Everything here forms full matrices on purpose and is meant for small problems
only (a few hundred points). The compiled code in :mod:`bsvm_scale` is tested
against these functions.

Covariance (thesis eq. 4.3, ARD form 4.42)::

    Cov(x, x') = kappa0 * exp(-1/2 * sum_l w_l (x_l - x'_l)^2) + kappa_b

with ``w_l = kappa`` (isotropic, ``kappa`` a scalar) or ``w_l = kappa_l``
(ARD, ``kappa`` an array of length d). Log-parameter layout:
``[ln kappa0, ln kappa, ln kappa_b]`` or
``[ln kappa0, ln kappa_1, ..., ln kappa_d, ln kappa_b]``.

Only add functions to this module; other test files rely on the existing ones.
"""

import numpy as np


def ref_weights(kappa, d):
    """Per-input weights: ``kappa`` repeated ``d`` times, or the ARD array."""
    k = np.asarray(kappa, dtype=np.float64)
    if k.ndim == 0:
        return np.full(d, float(k))
    if k.shape != (d,):
        raise ValueError(f"ARD kappa has shape {k.shape}, expected ({d},)")
    return k


def dense_sqdist_per_input(X, Z):
    """List over inputs ``l`` of the matrices ``(X[a, l] - Z[b, l])^2``."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    Z = np.atleast_2d(np.asarray(Z, dtype=np.float64))
    return [(X[:, l][:, None] - Z[:, l][None, :]) ** 2 for l in range(X.shape[1])]


def dense_wsqdist(X, Z, kappa):
    """Weighted squared distances ``sum_l w_l (X[a, l] - Z[b, l])^2``."""
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    w = ref_weights(kappa, X.shape[1])
    D = np.zeros((X.shape[0], np.atleast_2d(Z).shape[0]))
    for l, sq in enumerate(dense_sqdist_per_input(X, Z)):
        D += w[l] * sq
    return D


def dense_cov(X, Z, kappa0, kappa, kappa_b):
    """Dense covariance block ``Cov(X[a], Z[b])`` (eq. 4.3 / 4.42)."""
    return kappa0 * np.exp(-0.5 * dense_wsqdist(X, Z, kappa)) + kappa_b


def params_from_theta(theta, ard):
    """``(kappa0, kappa, kappa_b)`` from a log-parameter vector."""
    theta = np.asarray(theta, dtype=np.float64)
    kappa = np.exp(theta[1:-1]) if ard else float(np.exp(theta[1]))
    return float(np.exp(theta[0])), kappa, float(np.exp(theta[-1]))


def theta_from_params(kappa0, kappa, kappa_b):
    """Log-parameter vector ``[ln kappa0, ln kappa(_l), ln kappa_b]``."""
    return np.concatenate(([np.log(kappa0)], np.log(np.atleast_1d(np.asarray(kappa, float))),
                           [np.log(kappa_b)]))


def dense_cov_theta(X, Z, theta, ard):
    """:func:`dense_cov` with log parameters."""
    return dense_cov(X, Z, *params_from_theta(theta, ard))


def dense_dcov(X, kappa0, kappa, kappa_b):
    """Dense derivatives ``dSigma/d theta_p`` of the covariance of ``X`` with
    itself, one ``n x n`` matrix per log hyperparameter (layout of theta)::

        d/d ln kappa0  = kappa0 K
        d/d ln kappa_l = -1/2 kappa_l (x_l - x'_l)^2 kappa0 K      (ARD)
        d/d ln kappa   = -1/2 kappa ||x - x'||^2 kappa0 K           (isotropic)
        d/d ln kappa_b = kappa_b (matrix of ones)
    """
    X = np.atleast_2d(np.asarray(X, dtype=np.float64))
    n, d = X.shape
    w = ref_weights(kappa, d)
    sq = dense_sqdist_per_input(X, X)
    K = kappa0 * np.exp(-0.5 * sum(w[l] * sq[l] for l in range(d)))
    out = [K]
    if np.ndim(kappa) == 0:
        out.append(-0.5 * float(kappa) * sum(sq) * K)
    else:
        out.extend(-0.5 * w[l] * sq[l] * K for l in range(d))
    out.append(np.full((n, n), float(kappa_b)))
    return out


def dense_dcov_fd(X, theta, ard, h=1e-5):
    """Central finite differences of :func:`dense_cov_theta` in log space."""
    theta = np.asarray(theta, dtype=np.float64)
    out = []
    for p in range(theta.size):
        tp = theta.copy()
        tm = theta.copy()
        tp[p] += h
        tm[p] -= h
        out.append((dense_cov_theta(X, X, tp, ard) - dense_cov_theta(X, X, tm, ard)) / (2 * h))
    return out


# ---------------------------------------------------------------------------
# data shared by several test modules
# ---------------------------------------------------------------------------
def sinc_data(n, seed, noise=0.2):
    """``n`` cases of ``y = sin(x) / x + N(0, noise^2)`` on ``x ~ U(-10, 10)``
    (the thesis's sinc example, 4.4.1)."""
    rng = np.random.default_rng(seed)
    X = rng.uniform(-10, 10, (n, 1))
    return X, np.sinc(X[:, 0] / np.pi) + noise * rng.standard_normal(n)


# ---------------------------------------------------------------------------
# BSVR (thesis chapter 4) with case weights w_i: the loss term of case i is
# C w_i SILF(y_i - f_i), the dual box C_i = C w_i (w_i = 1: the thesis' problem)
# ---------------------------------------------------------------------------
def silf_dual_objective(nu, S, y, C, epsilon, beta, weights=None):
    """The dual (4.25) in ``nu = alpha - alpha*`` with per-case ``C_i = C w_i``::

        1/2 nu^T S nu - y^T nu + (1 - beta) eps |nu|_1 + sum_i beta eps / C_i nu_i^2

    (a case of weight 0 must have ``nu_i = 0``; its term is 0)."""
    w = np.ones(len(y)) if weights is None else np.asarray(weights, dtype=np.float64)
    Ci = C * w
    quad = np.divide(beta * epsilon, Ci, out=np.zeros_like(Ci), where=Ci > 0)
    return (0.5 * nu @ S @ nu - y @ nu + (1 - beta) * epsilon * np.abs(nu).sum()
            + np.sum(quad * nu**2))


def silf_dual_qp(S, y, C, epsilon, beta, weights=None):
    """The dual (4.25) with boxes ``0 <= alpha_i, alpha*_i <= C w_i`` solved by
    a general-purpose solver (scipy's SLSQP) over the split ``(alpha,
    alpha*)``, where the objective is a smooth convex quadratic with Hessian
    ``[[S + 2D, -S], [-S, S + 2D]]``, ``D = diag(beta eps / C_i)``. Returns
    ``nu = alpha - alpha*`` (accurate to about 1e-5 of the box; L-BFGS-B
    stalls far earlier along the stiff direction of a large ``kappa_b``)."""
    from scipy.optimize import Bounds, minimize

    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    Ci = C * w
    quad = np.divide(beta * epsilon, Ci, out=np.zeros_like(Ci), where=Ci > 0)
    eps1 = (1 - beta) * epsilon
    D = np.diag(2 * quad)
    H = np.block([[S + D, -S], [-S, S + D]])
    c = np.concatenate((eps1 - y, eps1 + y))
    res = minimize(lambda z: (0.5 * z @ H @ z + c @ z, H @ z + c), np.zeros(2 * n), jac=True,
                   method="SLSQP", bounds=Bounds(np.zeros(2 * n), np.concatenate((Ci, Ci))),
                   options={"ftol": 1e-16, "maxiter": 2000})
    return res.x[:n] - res.x[n:]


def silf_map_primal(S, y, C, epsilon, beta, weights=None):
    """``argmin_f C sum_i w_i SILF(y_i - f_i) + 1/2 f^T S^-1 f`` (4.10 with case
    weights) by L-BFGS-B in the whitened ``f = L z``."""
    from scipy.optimize import minimize

    from bsvm_scale.inference import losses

    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    L = np.linalg.cholesky(S + 1e-12 * np.eye(n))

    def obj(z):
        f = L @ z
        r = y - f
        val = C * np.sum(w * losses.silf(r, epsilon, beta)) + 0.5 * z @ z
        grad = -C * (L.T @ (w * losses.silf_grad(r, epsilon, beta))) + z
        return val, grad

    res = minimize(obj, np.zeros(n), jac=True, method="L-BFGS-B",
                   options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16, "maxcor": 50})
    return L @ res.x


def silf_log_normalizer_quad(C, epsilon, beta):
    """``ln Z_S = ln int exp(-C SILF(t)) dt`` (2.32) by quadrature."""
    from scipy.integrate import quad

    from bsvm_scale.inference import losses

    def dens(t):
        return np.exp(-C * losses.silf(t, epsilon, beta))

    pts = [0.0, (1 - beta) * epsilon, (1 + beta) * epsilon]
    total = sum(quad(dens, a, b, epsabs=0, epsrel=1e-13)[0] for a, b in zip(pts[:-1], pts[1:]))
    total += quad(dens, pts[-1], np.inf, epsabs=0, epsrel=1e-13)[0]
    return float(np.log(2 * total))


def silf_laplace_evidence_dense(S, y, f, off, C, epsilon, beta, weights=None):
    """``-ln P(D|theta)`` of the weighted likelihood ``prod_i P(y_i|f_i)^{w_i}``
    by the Laplace approximation (4.35)-(4.37) with full ``n x n`` matrices::

        C sum_i w_i SILF(y_i - f_i) + 1/2 f^T S^-1 f + 1/2 ln|I + S diag(w C Lambda)|
        + (sum_i w_i) ln Z_S

    with ``Lambda_i = 1 / (2 beta eps)`` on the off-bound cases ``off`` (a
    boolean mask), 0 elsewhere; ``Z_S`` by quadrature."""
    from bsvm_scale.inference import losses

    n = len(y)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    lam = np.where(off, C * w / (2 * beta * epsilon), 0.0)
    _, logdet = np.linalg.slogdet(np.eye(n) + S * lam[None, :])
    return (C * np.sum(w * losses.silf(y - f, epsilon, beta)) + 0.5 * f @ np.linalg.solve(S, f)
            + 0.5 * logdet + w.sum() * silf_log_normalizer_quad(C, epsilon, beta))


def silf_kkt_violation(nu, g, C, epsilon, beta, weights=None):
    """Per-case violation of the optimality conditions (4.31) of the dual with
    boxes ``C_i = C w_i``, ``g = Q nu - y``: the amount the stopping rule
    (4.33) measures (0 for a case of weight 0, which cannot move)."""
    w = np.ones(len(nu)) if weights is None else np.asarray(weights, dtype=np.float64)
    Ci = C * w
    eps1 = (1 - beta) * epsilon
    v = np.zeros_like(nu)
    zero = (nu == 0) & (Ci > 0)
    v[zero] = np.maximum(0, np.abs(g[zero]) - eps1)
    up = (nu >= Ci) & (Ci > 0)
    v[up] = np.maximum(0, g[up] + eps1)
    lo = (nu <= -Ci) & (Ci > 0)
    v[lo] = np.maximum(0, eps1 - g[lo])
    pos = (nu > 0) & (nu < Ci)
    v[pos] = np.abs(g[pos] + eps1)
    neg = (nu < 0) & (nu > -Ci)
    v[neg] = np.abs(g[neg] - eps1)
    return v


# BTSVC with case weights (thesis 5.21-5.42)
# ---------------------------------------------------------------------------
def _trig_phi(a):
    """``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)`` of (5.29) and its
    first two derivatives."""
    t = 2.0 * a / np.pi
    return (4.0 / np.pi * a * np.arctan(t) - np.log1p(t * t), 4.0 / np.pi * np.arctan(t),
            8.0 / (np.pi ** 2 + 4.0 * a * a))


def trig_weighted_dual(alpha, y, S, w):
    """Value and gradient of the weighted BTSVC dual::

        1/2 v^T S v - sum alpha + sum_i w_i phi(alpha_i / w_i),   v = y alpha,

    (5.29) with the perspective of ``phi``; a case with ``w_i = 0`` must have
    ``alpha_i = 0`` and adds nothing (its gradient has no ``phi'`` term)."""
    on = w > 0
    a = np.where(on, alpha / np.where(on, w, 1.0), 0.0)
    phi, dphi, _ = _trig_phi(a)
    v = y * alpha
    Sv = S @ v
    val = 0.5 * v @ Sv - alpha.sum() + np.sum(np.where(on, w * phi, 0.0))
    return val, y * Sv - 1.0 + np.where(on, dphi, 0.0)


def trig_weighted_violation(alpha, y, S, w):
    """KKT violation (5.30)/(5.31) of every case (0 for a case of weight 0)."""
    _, g = trig_weighted_dual(alpha, y, S, w)
    viol = np.where(alpha > 0, np.abs(g), np.maximum(0.0, -g))
    return np.where(w > 0, viol, 0.0)


def trig_weighted_dual_solve(y, S, w, n_newton=100):
    """A general-purpose solve of :func:`trig_weighted_dual`: SciPy's
    L-BFGS-B (bounds ``alpha >= 0``, ``alpha = 0`` where ``w = 0``), finished
    by a dense projected Newton method to full accuracy."""
    from scipy.optimize import minimize

    n = y.size
    on = w > 0
    bounds = [(0.0, None) if o else (0.0, 0.0) for o in on]
    res = minimize(trig_weighted_dual, np.zeros(n), args=(y, S, w), jac=True, method="L-BFGS-B",
                   bounds=bounds, options={"ftol": 1e-15, "gtol": 1e-12, "maxiter": 5000,
                                           "maxcor": 30})
    a = res.x.copy()
    Q = (y[:, None] * y[None, :]) * S
    for _ in range(n_newton):
        val, g = trig_weighted_dual(a, y, S, w)
        free = on & ((a > 1e-14) | (g < 0))
        a[~free] = 0.0
        if np.max(np.where(free, np.abs(g), 0.0)) < 1e-13:
            break
        u = a[free] / w[free]
        H = Q[np.ix_(free, free)] + np.diag(_trig_phi(u)[2] / w[free])
        p = np.zeros(n)
        p[free] = -np.linalg.solve(H, g[free])
        t = 1.0
        while t > 1e-12:
            cand = np.maximum(a + t * p, 0.0)
            if trig_weighted_dual(cand, y, S, w)[0] <= val:
                break
            t *= 0.5
        a = cand
    return a


def trig_loss_terms(z):
    """Trigonometric loss (5.7), ``-dl/dz`` and ``d2l/dz2`` (5.9)/(5.10) of the
    margin ``z = y f > -1`` (all 0 for ``z >= 1``)."""
    inside = z < 1.0
    c = np.cos(np.pi / 4 * (1.0 - np.minimum(z, 1.0)))
    loss = np.where(inside, -2.0 * np.log(c), 0.0)
    slope = np.where(inside, np.pi / 2 * np.tan(np.pi / 4 * (1.0 - np.minimum(z, 1.0))), 0.0)
    curv = np.where(inside, np.pi ** 2 / 8 / c ** 2, 0.0)
    return loss, slope, curv


def trig_weighted_loss_terms(f, y, w):
    """``w l``, ``w l'`` and ``w l''`` of every case (:func:`trig_loss_terms`);
    a case of weight 0 has none, wherever its ``f``."""
    loss, slope, curv = trig_loss_terms(np.where(w > 0, y * f, 1.0))
    return w * loss, w * slope, w * curv


def trig_weighted_primal_v(f, y, w):
    """``v = -d/df sum_i w_i l(y_i f_i) = w y l'``: at the minimiser of the
    weighted primal ``1/2 f^T S^-1 f + sum_i w_i l(y_i f_i)``, ``f = S v``."""
    return y * trig_weighted_loss_terms(f, y, w)[1]


def trig_weighted_laplace_neg_log_evidence(f, y, S, w):
    """``-ln`` of the Laplace evidence ``exp(-S(f)) |I + S Lambda|^(-1/2)``
    over all ``n`` cases at ``f = f_MP``, ``S(f) = 1/2 f^T S^-1 f + sum_i w_i
    l(y_i f_i)`` and ``Lambda = diag(w_i l''(y_i f_i))`` (5.33)-(5.35)."""
    loss, _, curv = trig_weighted_loss_terms(f, y, w)
    sign, logdet = np.linalg.slogdet(np.eye(f.size) + S * curv[None, :])
    assert sign > 0
    return 0.5 * f @ np.linalg.solve(S, f) + np.sum(loss) + 0.5 * logdet


def trig_predictive_moments(S_tM, s_tt, S_M, v_M, lam_M):
    """Predictive mean and variance (5.41): ``k_M^T v_M`` and ``Cov(x, x) -
    k_M^T (Lambda_M^-1 + Sigma_M)^-1 k_M`` (dense)."""
    A = np.linalg.inv(np.diag(1.0 / lam_M) + S_M)
    return S_tM @ v_M, s_tt - np.einsum("ij,jk,ik->i", S_tM, A, S_tM)


def three_blobs(n_per=30, seed=1):
    """Three Gaussian classes ``"a"``, ``"b"``, ``"c"`` in two inputs
    (centres (0, 0), (2.5, 0), (0, 2.5), sd 0.9), ``n_per`` cases each: the
    multi-class tests' data."""
    rng = np.random.default_rng(seed)
    centers = np.array([[0, 0], [2.5, 0], [0, 2.5]])
    y = np.repeat(np.array(["a", "b", "c"]), n_per)
    X = centers[np.repeat([0, 1, 2], n_per)] + 0.9 * rng.standard_normal((3 * n_per, 2))
    return X, y


# ---------------------------------------------------------------------------
# Small data sets of the low-rank MAP tests (map_lowrank, map_factor)
# ---------------------------------------------------------------------------
def c2_standardised(n, seed=0):
    """``n`` C2 cases (two overlapping Gaussian classes in 2-D), inputs
    standardised, labels in ``{-1, +1}``."""
    from bsvm_scale.datasets import synthetic

    d = synthetic.gauss2d(n, seed=seed)
    X = (d.X - d.X.mean(0)) / d.X.std(0)
    return np.ascontiguousarray(X), np.where(d.y > 0, 1.0, -1.0)


def sinc_silf_narrow(n, seed=0):
    """``n`` cases of ``sinc(x)`` (numpy's ``sin(pi x) / (pi x)``) on ``x ~
    U(-3, 3)`` with SILF noise (C = 10, epsilon = 0.1, beta = 0.3)."""
    from bsvm_scale.inference import losses

    rng = np.random.default_rng(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    y = np.sinc(X[:, 0]) + losses.silf_sample(10.0, 0.1, 0.3, n, random_state=seed + 1)
    return X, y
