"""Numba kernels of the matrix-free evidence (:mod:`bsvm_scale.inference.evidence_lowrank`).

Problem. For an SV block ``M`` with inputs ``X_M`` (m x d), the Gaussian
covariance ``Sigma_M`` (4.3)/(4.42) and positive weights ``lam`` (the loss
curvature ``Lambda_M`` of (5.10) for BTSVC, the constant ``C / (2 beta eps)``
for BSVR), the evidence needs ``ln |I + K~|`` with ``K~ = Lambda^1/2 Sigma_M
Lambda^1/2`` and traces against ``dSigma/d ln theta_p`` (4.39)-(4.42),
(5.36)-(5.37). These kernels give the two ingredients that never form an
``m x m`` array:

* :func:`pivoted_cholesky` -- the greedy (largest residual diagonal) partial
  Cholesky factorisation of ``K~``, reading one covariance row per pivot;
  after ``r`` pivots ``K~ = G G^T + E`` with ``E`` positive semi-definite and
  ``tr E`` the sum of the residual diagonal, which bounds what the rank-``r``
  factor leaves out (``0 <= ln|I + K~| - ln|I + G G^T| <= tr E``).
* :func:`dcov_contract` -- ``sum_ab W[a, b] dCov(A_a, B_b)/d ln theta_p``
  for every log hyperparameter ``p`` over a cross block, computing the
  covariance on the fly (O(|A| |B| d) time, O(|A| d) memory).

Derivative layout ``[ln kappa0, ln w_1 .. ln w_d, ln kappa_b]`` as in
:mod:`bsvm_scale._compiled.covariance`.
"""

from __future__ import annotations

import numpy as np
from numba import prange

from . import jit
from .covariance import _ROW_CHUNK, _add_dcov_row, _cov_row_part, _head_sum


@jit()
def _argmax_sum(resid):
    """Index of the largest entry of ``resid`` and the sum of all entries."""
    best = 0
    total = 0.0
    for a in range(resid.shape[0]):
        total += resid[a]
        if resid[a] > resid[best]:
            best = a
    return best, total


@jit(parallel=True)
def _pivot_column(kern, sl, G, j, i, resid):
    """Column ``j`` of ``G`` for pivot ``i``; updates the residual diagonal."""
    m = kern.X.shape[0]
    col = np.empty(m)  # the covariance column of the pivot (a row, by symmetry)
    for c in prange((m + _ROW_CHUNK - 1) // _ROW_CHUNK):
        _cov_row_part(kern, i, c * _ROW_CHUNK, min(m, (c + 1) * _ROW_CHUNK), col)
    sq = np.sqrt(resid[i])
    for a in prange(m):
        s = col[a] * sl[a] * sl[i]
        for l in range(j):
            s -= G[a, l] * G[i, l]
        g = s / sq
        G[a, j] = g
        r = resid[a] - g * g
        resid[a] = r if r > 0.0 else 0.0
    resid[i] = 0.0


@jit()
def pivoted_cholesky(kern, sl, G, tol, floor):
    """Greedy partial Cholesky of ``K~ = diag(sl) Sigma diag(sl)`` into ``G``.

    Parameters
    ----------
    kern : Kernel
        Covariance (4.3)/(4.42) over the ``m`` inputs of the block.
    sl : (m,) the weights ``Lambda^1/2``.
    G : (m, r_max) C-ordered output; column ``j`` is the ``j``-th factor column.
    tol : stop once the residual trace ``tr E`` is at most ``tol``.
    floor : stop once the largest residual diagonal entry is at most ``floor``
        (the remaining directions are at rounding level).

    Returns
    -------
    rank : number of columns filled.
    piv : (r_max,) pivot indices (first ``rank`` valid).
    resid : (m,) residual diagonal ``diag E``.
    """
    m = kern.X.shape[0]
    resid = np.empty(m)
    for a in range(m):
        resid[a] = sl[a] * sl[a] * (kern.kappa0 + kern.kappa_b)
    piv = np.full(G.shape[1], -1, dtype=np.int64)
    rank = pivoted_cholesky_from(kern, sl, G, 0, G.shape[1], piv, resid, tol, floor)
    return rank, piv, resid


@jit()
def pivoted_cholesky_from(kern, sl, G, j0, j1, piv, resid, tol, floor):
    """Continue :func:`pivoted_cholesky` from its first ``j0`` columns (in
    ``G``, ``piv`` and the residual ``resid``, all updated in place) up to
    ``j1 <= G.shape[1]`` columns; returns the rank. The columns are those one
    call with a budget of ``j1`` would have made."""
    rank = j0
    for j in range(j0, j1):
        i, total = _argmax_sum(resid)
        if total <= tol or resid[i] <= floor:
            break
        piv[j] = i
        _pivot_column(kern, sl, G, j, i, resid)
        rank = j + 1
    return rank


@jit(parallel=True)
def dcov_contract(kern, B, W):
    """``sum_ab W[a, b] dCov(A_a, B_b)/d ln theta_p`` for every ``p``, with
    ``A = kern.X``.

    ``W`` is ``|A| x |B|``; returns a vector of length ``d + 2`` laid out as
    ``[ln kappa0, ln w_1 .. ln w_d, ln kappa_b]``.
    """
    A, nb = kern.X, B.shape[0]
    Bt = np.ascontiguousarray(B.T)
    part = np.zeros((A.shape[0], A.shape[1] + 2))
    for a in prange(A.shape[0]):
        _add_dcov_row(A, a, Bt, kern.w, kern.kappa0, W[a], np.empty(nb), part, a, 0, nb)
        part[a, -1] = kern.kappa_b * _head_sum(W[a], nb)
    return part.sum(axis=0)
