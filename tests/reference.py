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
