"""Numba kernels for the Gaussian covariance function.

Covariance (thesis eq. 4.3, ARD form 4.42)::

    Cov(x, x') = kappa0 * exp(-1/2 * sum_l w_l (x_l - x'_l)^2) + kappa_b

where ``w_l = kappa`` for every input in the isotropic case (4.3) and
``w_l = kappa_l`` with automatic relevance determination (4.42).

Everything here is a flat function over a :class:`Kernel` (the training
inputs and the covariance hyperparameters), contiguous float64 arrays and
scalars; the Python layer (:mod:`bsvm_scale.inference.covariance`) validates
once, builds the :class:`Kernel` and calls in. Cross-covariances take the
first set of inputs from the :class:`Kernel` and the second as an array.
No function allocates an ``n x n`` array: rows, chunks of cross-covariance and
contractions over a subset of points are all that exist.

Derivatives with respect to log hyperparameters, used by the evidence
gradients (4.39)-(4.41), (5.36), (5.37)::

    dCov/d ln kappa0  = kappa0 * K(x, x')
    dCov/d ln kappa_l = -1/2 * kappa_l (x_l - x'_l)^2 * kappa0 * K(x, x')
    dCov/d ln kappa_b = kappa_b

The isotropic derivative d/d ln kappa is the sum of the ARD derivatives,
``-1/2 kappa ||x - x'||^2 kappa0 K(x, x')``. The layout of a gradient vector is
``[ln kappa0, ln w_1 .. ln w_d, ln kappa_b]``; for an isotropic :class:`Kernel`
(``iso``) the contractions put that whole derivative in the ``ln w_1`` column
and leave the other ``d - 1`` at zero: one pass over a block of distances
instead of ``d`` (the caller sums the ``d`` columns either way).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import prange

from . import jit
from .fastexp import exp_neg

#: entries per parallel chunk of a row (:func:`cov_row`)
_ROW_CHUNK = 4096


class Kernel(NamedTuple):
    """The Gaussian covariance (4.3)/(4.42) over a set of inputs, as the
    compiled code takes it (build one with :func:`make_kernel`)."""

    #: (n, d) C-contiguous float64 inputs; rows ``Cov(X[i], .)`` are over these
    X: np.ndarray
    #: (d,) float64 weights ``w_l`` (``kappa`` repeated, or ``kappa_l``)
    w: np.ndarray
    #: signal variance ``kappa0``
    kappa0: float
    #: bias variance ``kappa_b`` (0 gives the covariance without its bias term)
    kappa_b: float
    #: (d, n) C-contiguous copy of ``X.T``: a row's distances vectorise over it
    Xt: np.ndarray
    #: isotropic (4.3): derivative contractions give ``d/d ln kappa`` in one column
    iso: bool


def make_kernel(X, w, kappa0, kappa_b, iso=False):
    """:class:`Kernel` over contiguous float64 ``X`` (its transpose is copied
    once); ``iso=True`` for the isotropic covariance, whose derivative
    contractions put ``d/d ln kappa`` in the first weight column."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    return Kernel(X, np.ascontiguousarray(w, dtype=np.float64), float(kappa0),
                  float(kappa_b), np.ascontiguousarray(X.T), bool(iso))


@jit(inline="always")
def _wsqdist(A, i, B, j, w):
    """Weighted squared distance sum_l w_l (A[i,l] - B[j,l])^2."""
    s = 0.0
    for l in range(A.shape[1]):
        t = A[i, l] - B[j, l]
        s += w[l] * t * t
    return s


@jit(inline="always")
def _cov_from_sqdist(acc, kappa0, kappa_b, j0, j1):
    """``acc[b] <- kappa0 exp(-acc[b] / 2) + kappa_b`` for ``j0 <= b < j1``:
    every covariance value of this module is made here, from
    :func:`_wsqdist_row`'s distances (one loop the compiler vectorises;
    :mod:`bsvm_scale._compiled.fastexp`)."""
    for j in range(j0, j1):
        acc[j] = kappa0 * exp_neg(-0.5 * acc[j]) + kappa_b


@jit(inline="always")
def _cov_row_part(kern, i, j0, j1, out):
    """``out[j] = Cov(X[i], X[j])`` for ``j0 <= j < j1``."""
    _wsqdist_row(kern.X, i, kern.Xt, kern.w, out, j0, j1)
    _cov_from_sqdist(out, kern.kappa0, kern.kappa_b, j0, j1)


@jit(parallel=True)
def cov_row(kern, i, out):
    """Row ``i`` of the covariance against all inputs of ``kern`` (into ``out``),
    in parallel chunks (the same bits as :func:`cov_row_serial`)."""
    n = kern.X.shape[0]
    for c in prange((n + _ROW_CHUNK - 1) // _ROW_CHUNK):
        _cov_row_part(kern, i, c * _ROW_CHUNK, min(n, (c + 1) * _ROW_CHUNK), out)


@jit()
def cov_row_serial(kern, i, out):
    """Serial version of :func:`cov_row` (the rows of the SMO's cache)."""
    _cov_row_part(kern, i, 0, kern.X.shape[0], out)


@jit(inline="always")
def _gather_t(X, idx):
    """``X[idx].T``, C-contiguous (d x len(idx))."""
    Xt = np.empty((X.shape[1], idx.shape[0]))
    for l in range(X.shape[1]):
        for a in range(idx.shape[0]):
            Xt[l, a] = X[idx[a], l]
    return Xt


@jit(inline="always")
def _kk_row(A, a, Bt, w, kappa0, kk, sq, j0, j1, iso):
    """``kk[b] = kappa0 exp(-d_ab / 2)`` for ``j0 <= b < j1``; with ``iso`` the
    distances ``d_ab`` are kept in ``sq`` too (the same bits in ``kk`` either way)."""
    if iso:
        _wsqdist_row(A, a, Bt, w, sq, j0, j1)
        for b in range(j0, j1):
            kk[b] = sq[b]
    else:
        _wsqdist_row(A, a, Bt, w, kk, j0, j1)
    _cov_from_sqdist(kk, kappa0, 0.0, j0, j1)


@jit(inline="always")
def _add_dcov_row(A, a, Bt, w, kappa0, coef, scratch, part, r, j0, j1, iso):
    """``part[r, p] += sum_b coef[b] dCov(A[a], B[b])/d ln theta_p`` over the
    columns ``j0 <= b < j1`` of ``Bt = B.T``, for ``ln kappa0`` and every ``ln
    w_l`` (the ``ln kappa_b`` column is left to the caller; with ``iso`` the
    ``ln kappa`` derivative goes to column 1). ``scratch`` is ``(2, nb)``. Each
    entry of ``part`` sums over ``b`` in order."""
    kk, sq = scratch[0], scratch[1]
    _kk_row(A, a, Bt, w, kappa0, kk, sq, j0, j1, iso)
    _add_dcov_from(A, a, Bt, w, coef, kk, sq, part, r, j0, j1, iso)


@jit(inline="always")
def _add_dcov_from(A, a, Bt, w, coef, kk, sq, part, r, j0, j1, iso):
    """:func:`_add_dcov_row` from the values ``kk[b] = kappa0 exp(-d_ab / 2)``
    of row ``a`` already computed (and, with ``iso``, their distances ``sq``)."""
    if iso:
        s, s1 = part[r, 0], 0.0
        for b in range(j0, j1):
            c = coef[b] * kk[b]
            s += c
            s1 += c * sq[b]
        part[r, 0] = s
        part[r, 1] -= 0.5 * s1
        return
    s = part[r, 0]
    for b in range(j0, j1):
        s += coef[b] * kk[b]
    part[r, 0] = s
    for l in range(Bt.shape[0]):
        x, wl, s = A[a, l], w[l], part[r, 1 + l]
        for b in range(j0, j1):
            t = x - Bt[l, b]
            s -= 0.5 * wl * t * t * kk[b] * coef[b]
        part[r, 1 + l] = s


@jit()
def cov_diag(n, kappa0, kappa_b):
    """Diagonal of the covariance: kappa0 + kappa_b for every point."""
    return np.full(n, kappa0 + kappa_b)


@jit(inline="always")
def _wsqdist_row(A, a, Bt, w, acc, j0, j1):
    """``acc[b] = sum_l w_l (A[a,l] - B[b,l])^2`` for ``j0 <= b < j1``, from
    ``Bt = B.T`` (d x nb, C-contiguous): the same operations in the same order as
    :func:`_wsqdist` for each pair (so the same bits), with the inner loop
    running over ``b`` so that it vectorises. Callers pass a range from 0, or
    slices where the range would start inside the row (measured faster there)."""
    for b in range(j0, j1):
        acc[b] = 0.0
    for l in range(Bt.shape[0]):
        x, wl = A[a, l], w[l]
        for b in range(j0, j1):
            t = x - Bt[l, b]
            acc[b] += wl * t * t


@jit(parallel=True)
def cov_cross(kern, B, out):
    """Cross-covariance block ``out[a, b] = Cov(kern.X[a], B[b])``."""
    A, w, kappa0, kappa_b = kern.X, kern.w, kern.kappa0, kern.kappa_b
    Bt = np.ascontiguousarray(B.T)
    for a in prange(A.shape[0]):
        row = out[a]
        _wsqdist_row(A, a, Bt, w, row, 0, B.shape[0])
        _cov_from_sqdist(row, kappa0, kappa_b, 0, B.shape[0])


@jit()
def cov_cross_matvec(kern, B, v):
    """``sum_b Cov(kern.X[a], B[b]) v[b]`` for every input ``a`` of ``kern``
    without storing the block (prediction means)."""
    return cov_cross_matvec_block(kern, B, v, np.empty(0, dtype=np.int64), 0.0,
                                  np.empty((kern.X.shape[0], 0)))


@jit(parallel=True)
def cov_cross_matvec_block(kern, B, v, cols, add, block):
    """:func:`cov_cross_matvec` (the same bits) and, from the same kernel
    values, ``block[a, j] = Cov(kern.X[a], B[cols[j]]) + add``: the prediction
    mean over every support vector and the cross-covariance (with the bias
    ``add``) over the off-bound ones that the predictive variance (4.46) needs,
    each kernel value computed once."""
    A, w, kappa0, kappa_b = kern.X, kern.w, kern.kappa0, kern.kappa_b
    Bt = np.ascontiguousarray(B.T)
    out = np.empty(A.shape[0])
    for a in prange(A.shape[0]):
        acc = np.empty(B.shape[0])
        _wsqdist_row(A, a, Bt, w, acc, 0, B.shape[0])
        _cov_from_sqdist(acc, kappa0, kappa_b, 0, B.shape[0])
        s = 0.0
        for b in range(B.shape[0]):
            s += acc[b] * v[b]
        out[a] = s
        for j in range(cols.shape[0]):
            block[a, j] = acc[cols[j]] + add
    return out


@jit(parallel=True)
def cov_cross_matvec_dcov(kern, B, v, nu, rows, part):
    """:func:`cov_cross_matvec` (the same bits) and, from the same kernel
    values, the rows of ``nu^T (dSigma/d ln theta) v``: for every input ``a``
    with ``rows[a] >= 0``, ``part[rows[a], p] += nu[a] * sum_b v[b]
    dCov(x_a, B[b])/d ln theta_p`` for ``ln kappa0`` and every ``ln w_l``
    (the ``ln kappa_b`` column is left to the caller). Each row sums over
    ``b`` in order."""
    A, w, kappa0, kappa_b, iso = kern.X, kern.w, kern.kappa0, kern.kappa_b, kern.iso
    Bt = np.ascontiguousarray(B.T)
    out = np.empty(A.shape[0])
    nb = B.shape[0]
    for a in prange(A.shape[0]):
        keep = iso and rows[a] >= 0  # the distances serve only a gradient row
        acc, sq = np.empty(nb), np.empty(nb if keep else 0)
        _kk_row(A, a, Bt, w, kappa0, acc, sq, 0, nb, keep)
        s = 0.0
        for b in range(nb):
            s += (acc[b] + kappa_b) * v[b]
        out[a] = s
        if rows[a] >= 0:
            _add_dcov_from(A, a, Bt, w, nu[a] * v, acc, sq, part, rows[a], 0, nb, iso)
    return out


@jit(parallel=True)
def dcov_rows(kern, rows, cols, v):
    """``sum_b v[b] dCov(x_rows[a], x_cols[b])/d ln theta_p`` for every row
    ``a`` (``len(rows) x (d + 2)``; the ``ln kappa_b`` column is left 0)."""
    out = np.zeros((rows.shape[0], kern.X.shape[1] + 2))
    Bt = _gather_t(kern.X, cols)
    for a in prange(rows.shape[0]):
        _add_dcov_row(kern.X, rows[a], Bt, kern.w, kern.kappa0, v, np.empty((2, cols.shape[0])),
                      out, a, 0, v.shape[0], kern.iso)
    return out


@jit(parallel=True)
def cov_subset(kern, idx):
    """Sub-matrix ``Sigma_M`` of the covariance over the points ``idx`` (m x m)."""
    m = idx.shape[0]
    Xt = _gather_t(kern.X, idx)
    out = np.empty((m, m))
    for a in prange(m):
        row = out[a]
        _wsqdist_row(kern.X, idx[a], Xt, kern.w, row, 0, m)
        _cov_from_sqdist(row, kern.kappa0, kern.kappa_b, 0, m)
    return out


@jit(inline="always")
def _head_sum(v, k):
    """``v[0] + ... + v[k-1]`` summed in index order (the same bits every run)."""
    total = 0.0
    for a in range(k):
        total += v[a]
    return total


@jit(parallel=True)
def trace_dcov(kern, idx, A):
    """``trace(A dSigma_M/d ln theta)`` for every log hyperparameter.

    ``A`` is an m x m matrix over the points ``idx`` (symmetry not assumed);
    ``trace(A dS)`` equals ``sum_ab A[a, b] dS[b, a]``. Returns an array of
    length ``d + 2`` laid out as ``[ln kappa0, ln w_1..ln w_d, ln kappa_b]``.
    """
    m = idx.shape[0]
    d = kern.X.shape[1]
    Xt = _gather_t(kern.X, idx)
    part = np.zeros((m, d + 2))
    for a in prange(m):
        _add_dcov_row(kern.X, idx[a], Xt, kern.w, kern.kappa0, A[a], np.empty((2, m)), part, a,
                      0, m, kern.iso)
        part[a, d + 1] = kern.kappa_b * _head_sum(A[a], m)
    return part.sum(axis=0)


@jit(inline="always")
def _trace_dcov_row(kern, idx, Xt, A, a, coef, acc, part):
    """Row ``a`` of :func:`trace_dcov_lower`: pairs ``(a, b)``, ``b <= a``
    (``coef`` scratch of at least ``a + 1`` entries, ``acc`` of ``2`` rows of as many)."""
    for b in range(a):
        coef[b] = 2.0 * A[a, b]
    coef[a] = A[a, a]
    _add_dcov_row(kern.X, idx[a], Xt, kern.w, kern.kappa0, coef, acc, part, a, 0, a + 1,
                  kern.iso)
    part[a, -1] = kern.kappa_b * _head_sum(coef, a + 1)


@jit(parallel=True)
def trace_dcov_lower(kern, idx, A):
    """:func:`trace_dcov` for a symmetric ``A`` given by its lower triangle.

    Only ``A[a, b]`` with ``b <= a`` is read (the strict upper triangle may
    hold anything), so ``A`` can share its memory with a Cholesky factor
    or LAPACK's triangular inverse; each pair is visited once (half the
    exponentials). Rows ``a`` and ``m - 1 - a`` go to the same thread so
    the triangular work is balanced.
    """
    m = idx.shape[0]
    Xt = _gather_t(kern.X, idx)
    part = np.zeros((m, kern.X.shape[1] + 2))
    for k in prange((m + 1) // 2):
        coef, acc = np.empty(m), np.empty((2, m))
        _trace_dcov_row(kern, idx, Xt, A, k, coef, acc, part)
        if m - 1 - k != k:
            _trace_dcov_row(kern, idx, Xt, A, m - 1 - k, coef, acc, part)
    return part.sum(axis=0)


@jit(parallel=True)
def quad_dcov(kern, idx, v):
    """``v^T (dSigma_S/d ln theta) v`` over the points ``idx`` for every log
    hyperparameter, in O(s^2 d) time and O(s d) memory.

    Symmetry halves the work: each unordered pair is visited once. Layout as
    in :func:`trace_dcov`.
    """
    s = idx.shape[0]
    Xt = _gather_t(kern.X, idx)
    part = np.zeros((s, kern.X.shape[1] + 2))
    for a in prange(s):
        va = v[a]
        if va == 0.0:
            continue
        part[a, 0] += va * va * kern.kappa0  # diagonal pair (distance 0)
        k = s - a - 1  # the pairs (a, b > a), as slices (a range from a + 1 is slower)
        _add_dcov_row(kern.X, idx[a], Xt[:, a + 1:], kern.w, kern.kappa0, 2.0 * va * v[a + 1:],
                      np.empty((2, k)), part, a, 0, k, kern.iso)
    out = part.sum(axis=0)
    vsum = _head_sum(v, s)
    out[-1] = kern.kappa_b * vsum * vsum
    return out


@jit()
def dcov_matvec(kern, idx, v):
    """``(dSigma_M/d ln theta) v`` for every log hyperparameter.

    Returns an ``m x (d + 2)`` array whose column ``p`` is the product of the
    derivative of ``Sigma_M`` with respect to parameter ``p`` (layout as in
    :func:`trace_dcov`) and ``v``: :func:`dcov_rows` over ``idx`` with the
    ``ln kappa_b`` column. Used by the implicit term of the BTSVC evidence
    gradient (E.15, E.16).
    """
    out = dcov_rows(kern, idx, idx, v)
    out[:, -1] = kern.kappa_b * _head_sum(v, idx.shape[0])
    return out


@jit(parallel=True)
def bilinear_dcov(kern, idx, p, v):
    """``p^T (dSigma_M/d ln theta) v`` for every log hyperparameter over the
    points ``idx`` (layout as in :func:`trace_dcov`), in O(m^2 d) time and
    O(m d) memory.

    ``dSigma`` is symmetric, so each unordered pair ``a < b`` is visited
    once with the weight ``p_a v_b + p_b v_a``; the distances from row ``a``
    to the rows after it are computed in one vectorised pass
    (:func:`_bilinear_row`), and rows ``k`` and ``m - 1 - k`` share an
    iteration so that every iteration has the same work. The evidence
    gradient of BTSVC (5.36) takes it with ``p = v + u``.
    """
    X, w, kappa0, kappa_b = kern.X, kern.w, kern.kappa0, kern.kappa_b
    m, d = idx.shape[0], X.shape[1]
    Xt = _gather_t(X, idx)
    part = np.zeros((m, d + 2))
    for k in prange((m + 1) // 2):
        acc = np.empty((2, m))
        _bilinear_row(X, idx, Xt, w, kappa0, p, v, k, acc, part, kern.iso)
        if m - 1 - k != k:
            _bilinear_row(X, idx, Xt, w, kappa0, p, v, m - 1 - k, acc, part, kern.iso)
    out = part.sum(axis=0)
    out[-1] = kappa_b * _head_sum(p, m) * _head_sum(v, m)
    return out


@jit(inline="always")
def _bilinear_row(X, idx, Xt, w, kappa0, p, v, a, scratch, part, iso):
    """Row ``a``'s share of :func:`bilinear_dcov`: its diagonal pair and every
    pair ``(a, b)`` with ``b > a``, into ``part[a]`` (``scratch`` is ``(2, m)``;
    with ``iso`` the ``ln kappa`` derivative goes to column 1)."""
    m, d = Xt.shape[1], Xt.shape[0]
    acc, sq = scratch[0], scratch[1]
    part[a, 0] += p[a] * v[a] * kappa0  # distance 0
    _kk_row(X, idx[a], Xt[:, a + 1:], w, kappa0, acc[a + 1:], sq[a + 1:], 0, m - a - 1, iso)
    pa, va, s = p[a], v[a], 0.0
    for b in range(a + 1, m):  # acc[b] becomes the pair's weighted kernel value
        acc[b] = acc[b] * (pa * v[b] + p[b] * va)
        s += acc[b]
    part[a, 0] += s
    if iso:
        s = 0.0
        for b in range(a + 1, m):
            s += acc[b] * sq[b]
        part[a, 1] -= 0.5 * s
        return
    for l in range(d):
        x, sl = X[idx[a], l], 0.0
        for b in range(a + 1, m):
            t = x - Xt[l, b]
            sl += t * t * acc[b]
        part[a, 1 + l] -= 0.5 * w[l] * sl
