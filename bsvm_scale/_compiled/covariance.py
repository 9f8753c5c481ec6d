"""Numba kernels for the Gaussian covariance function.

Covariance (thesis eq. 4.3, ARD form 4.42)::

    Cov(x, x') = kappa0 * exp(-1/2 * sum_l w_l (x_l - x'_l)^2) + kappa_b

where ``w_l = kappa`` for every input in the isotropic case (4.3) and
``w_l = kappa_l`` with automatic relevance determination (4.42).

Everything here is a flat function over contiguous float64 arrays and scalars;
the Python layer (:mod:`bsvm_scale.inference.covariance`) validates once and calls in.
No function allocates an ``n x n`` array: rows, chunks of cross-covariance and
contractions over a subset of points are all that exist.

Derivatives with respect to log hyperparameters, used by the evidence
gradients (4.39)-(4.41), (5.36), (5.37)::

    dCov/d ln kappa0  = kappa0 * K(x, x')
    dCov/d ln kappa_l = -1/2 * kappa_l (x_l - x'_l)^2 * kappa0 * K(x, x')
    dCov/d ln kappa_b = kappa_b

The isotropic derivative d/d ln kappa is the sum of the ARD derivatives.
The layout of a gradient vector is ``[ln kappa0, ln w_1 .. ln w_d, ln kappa_b]``.
"""

import numpy as np
from numba import njit, prange


@njit(cache=True, inline="always")
def _wsqdist(A, i, B, j, w):
    """Weighted squared distance sum_l w_l (A[i,l] - B[j,l])^2."""
    s = 0.0
    for l in range(A.shape[1]):
        t = A[i, l] - B[j, l]
        s += w[l] * t * t
    return s


@njit(cache=True, parallel=True)
def cov_row(X, i, w, kappa0, kappa_b, out):
    """Row ``i`` of the covariance against all training points (into ``out``)."""
    n = X.shape[0]
    for j in prange(n):
        out[j] = kappa0 * np.exp(-0.5 * _wsqdist(X, i, X, j, w)) + kappa_b


@njit(cache=True)
def cov_row_serial(X, i, w, kappa0, kappa_b, out):
    """Serial version of :func:`cov_row` (used on small problems and in workers
    restricted to one thread)."""
    n = X.shape[0]
    for j in range(n):
        out[j] = kappa0 * np.exp(-0.5 * _wsqdist(X, i, X, j, w)) + kappa_b


@njit(cache=True)
def cov_diag(n, kappa0, kappa_b):
    """Diagonal of the covariance: kappa0 + kappa_b for every point."""
    return np.full(n, kappa0 + kappa_b)


@njit(cache=True, parallel=True)
def cov_cross(A, B, w, kappa0, kappa_b, out):
    """Cross-covariance block ``out[a, b] = Cov(A[a], B[b])``."""
    for a in prange(A.shape[0]):
        for b in range(B.shape[0]):
            out[a, b] = kappa0 * np.exp(-0.5 * _wsqdist(A, a, B, b, w)) + kappa_b


@njit(cache=True, parallel=True)
def cov_cross_matvec(A, B, w, kappa0, kappa_b, v):
    """``sum_b Cov(A[a], B[b]) v[b]`` for every row ``a`` of ``A`` without
    storing the block (prediction means)."""
    out = np.empty(A.shape[0])
    for a in prange(A.shape[0]):
        s = 0.0
        for b in range(B.shape[0]):
            s += (kappa0 * np.exp(-0.5 * _wsqdist(A, a, B, b, w)) + kappa_b) * v[b]
        out[a] = s
    return out


@njit(cache=True, parallel=True)
def cov_subset(X, idx, w, kappa0, kappa_b):
    """Sub-matrix ``Sigma_M`` of the covariance over the points ``idx`` (m x m)."""
    m = idx.shape[0]
    out = np.empty((m, m))
    for a in prange(m):
        ia = idx[a]
        for b in range(m):
            out[a, b] = kappa0 * np.exp(-0.5 * _wsqdist(X, ia, X, idx[b], w)) + kappa_b
    return out


@njit(cache=True, inline="always")
def _add_dcov(X, ia, ib, w, kappa0, c, out, a):
    """``out[a, p] += c * dCov(x_ia, x_ib)/d ln theta_p`` for ``ln kappa0`` and
    every ``ln w_l`` (the ``ln kappa_b`` column is left to the caller)."""
    kk = kappa0 * np.exp(-0.5 * _wsqdist(X, ia, X, ib, w))
    out[a, 0] += c * kk
    for l in range(X.shape[1]):
        t = X[ia, l] - X[ib, l]
        out[a, 1 + l] -= 0.5 * w[l] * t * t * kk * c


@njit(cache=True, parallel=True)
def trace_dcov(X, idx, A, w, kappa0, kappa_b):
    """``trace(A dSigma_M/d ln theta)`` for every log hyperparameter.

    ``A`` is an m x m matrix over the points ``idx`` (symmetry not assumed);
    ``trace(A dS)`` equals ``sum_ab A[a, b] dS[b, a]``. Returns an array of
    length ``d + 2`` laid out as ``[ln kappa0, ln w_1..ln w_d, ln kappa_b]``.
    """
    m = idx.shape[0]
    d = X.shape[1]
    part = np.zeros((m, d + 2))
    for a in prange(m):
        ia = idx[a]
        for b in range(m):
            s_ab = A[a, b]
            if s_ab == 0.0:
                continue
            _add_dcov(X, ia, idx[b], w, kappa0, s_ab, part, a)
            part[a, d + 1] += s_ab * kappa_b
    return part.sum(axis=0)


@njit(cache=True, inline="always")
def _trace_dcov_row(X, idx, A, w, kappa0, kappa_b, a, part):
    """Row ``a`` of :func:`trace_dcov_lower`: pairs ``(a, b)``, ``b <= a``."""
    ia = idx[a]
    d = X.shape[1]
    for b in range(a + 1):
        s_ab = A[a, b] if b == a else 2.0 * A[a, b]
        if s_ab == 0.0:
            continue
        _add_dcov(X, ia, idx[b], w, kappa0, s_ab, part, a)
        part[a, d + 1] += s_ab * kappa_b


@njit(cache=True, parallel=True)
def trace_dcov_lower(X, idx, A, w, kappa0, kappa_b):
    """:func:`trace_dcov` for a symmetric ``A`` given by its lower triangle.

    Only ``A[a, b]`` with ``b <= a`` is read (the strict upper triangle may
    hold anything), so ``A`` can share its memory with a Cholesky factor
    or LAPACK's triangular inverse; each pair is visited once (half the
    exponentials). Rows ``a`` and ``m - 1 - a`` go to the same thread so
    the triangular work is balanced.
    """
    m = idx.shape[0]
    d = X.shape[1]
    part = np.zeros((m, d + 2))
    for k in prange((m + 1) // 2):
        _trace_dcov_row(X, idx, A, w, kappa0, kappa_b, k, part)
        if m - 1 - k != k:
            _trace_dcov_row(X, idx, A, w, kappa0, kappa_b, m - 1 - k, part)
    return part.sum(axis=0)


@njit(cache=True, parallel=True)
def quad_dcov(X, idx, v, w, kappa0, kappa_b):
    """``v^T (dSigma_S/d ln theta) v`` over the points ``idx`` for every log
    hyperparameter, in O(s^2 d) time and O(s d) memory.

    Symmetry halves the work: each unordered pair is visited once. Layout as
    in :func:`trace_dcov`.
    """
    s = idx.shape[0]
    d = X.shape[1]
    part = np.zeros((s, d + 2))
    vsum = 0.0
    for a in range(s):
        vsum += v[a]
    for a in prange(s):
        ia = idx[a]
        va = v[a]
        if va == 0.0:
            continue
        part[a, 0] += va * va * kappa0  # diagonal pair (distance 0)
        for b in range(a + 1, s):
            vb = v[b]
            if vb == 0.0:
                continue
            ib = idx[b]
            c = 2.0 * va * vb
            kk = kappa0 * np.exp(-0.5 * _wsqdist(X, ia, X, ib, w))
            part[a, 0] += c * kk
            for l in range(d):
                t = X[ia, l] - X[ib, l]
                part[a, 1 + l] -= 0.5 * w[l] * t * t * kk * c
    out = part.sum(axis=0)
    out[d + 1] = kappa_b * vsum * vsum
    return out


@njit(cache=True, parallel=True)
def dcov_matvec(X, idx, v, w, kappa0, kappa_b):
    """``(dSigma_M/d ln theta) v`` for every log hyperparameter.

    Returns an ``m x (d + 2)`` array whose column ``p`` is the product of the
    derivative of ``Sigma_M`` with respect to parameter ``p`` (layout as in
    :func:`trace_dcov`) and ``v``. Used by the implicit term of the BTSVC
    evidence gradient (E.15, E.16).
    """
    m = idx.shape[0]
    d = X.shape[1]
    out = np.zeros((m, d + 2))
    vsum = 0.0
    for b in range(m):
        vsum += v[b]
    for a in prange(m):
        ia = idx[a]
        for b in range(m):
            vb = v[b]
            if vb == 0.0:
                continue
            _add_dcov(X, ia, idx[b], w, kappa0, vb, out, a)
        out[a, d + 1] = kappa_b * vsum
    return out
