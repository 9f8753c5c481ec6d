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
  Column ``j`` for pivot ``i`` is ``(K~[:, i] - G[:, :j] G[i, :j]^T) /
  sqrt(E_ii)``: one pass over the ``m x j`` array per column, so a factor of
  rank ``r`` reads ``m r^2 / 2`` numbers from memory. Past
  :data:`PANEL_FROM` columns the factor is made in panels
  (:func:`_panel_pivots`): the ``c`` points of largest residual are taken as
  candidates, and the part ``K~[:, q] - G[:, :j0] G[q, :j0]^T`` of all their
  columns is made in one pass over ``G`` (:func:`_panel_columns`); the greedy
  pivots that follow are taken from the panel while they are candidates, each
  finishing its column with the panel's own columns (:func:`_finish_column`).
  The first pivot that is not a candidate starts the next panel. The pivots
  are the greedy ones and every column is summed in the same order as one
  column at a time, so the factor is the same to the last bit.
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


@jit(inline="always")
def _scaled_column_part(kern, sl, i, j0, j1, out):
    """``out[a] = K~[a, i] = sl_a Cov(X[a], X[i]) sl_i`` for ``j0 <= a < j1``."""
    _cov_row_part(kern, i, j0, j1, out)
    for a in range(j0, j1):
        out[a] = out[a] * sl[a] * sl[i]


@jit()
def _pivot_column(kern, sl, G, j, i, resid):
    """Column ``j`` of ``G`` for pivot ``i``; updates the residual diagonal."""
    col = np.empty(kern.X.shape[0])  # the pivot's column of K~ (a row, by symmetry)
    _scaled_column(kern, sl, i, col)
    _finish_column(col, G, 0, j, i, resid)


@jit(parallel=True)
def _scaled_column(kern, sl, i, col):
    """Column ``i`` of ``K~`` into ``col``, in parallel chunks."""
    m = col.shape[0]
    for c in prange((m + _ROW_CHUNK - 1) // _ROW_CHUNK):
        _scaled_column_part(kern, sl, i, c * _ROW_CHUNK, min(m, (c + 1) * _ROW_CHUNK), col)


@jit(parallel=True)
def _finish_column(part, G, j0, j, i, resid):
    """Column ``j`` of ``G`` for pivot ``i`` from ``part[a] = K~[a, i] -
    sum_{l < j0} G[a, l] G[i, l]``: the remaining terms ``l = j0 .. j-1``
    subtracted in order, divided by ``sqrt(E_ii)``; updates the residual
    diagonal."""
    sq = np.sqrt(resid[i])
    for a in prange(G.shape[0]):
        s = part[a]
        for l in range(j0, j):
            s -= G[a, l] * G[i, l]
        g = s / sq
        G[a, j] = g
        r = resid[a] - g * g
        resid[a] = r if r > 0.0 else 0.0
    resid[i] = 0.0


#: columns made one at a time before the factor goes on in panels, and after
#: a panel that did not pay (:func:`pivoted_cholesky_from`)
PANEL_FROM = 64
PANEL_BACKOFF = 32


@jit()
def pivoted_cholesky(kern, sl, G, tol, floor, panel):
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
    panel : candidates per panel (module docstring); below 2, one column at a
        time throughout. The factor is the same either way.

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
    rank = pivoted_cholesky_from(kern, sl, G, 0, G.shape[1], piv, resid, tol, floor, panel)
    return rank, piv, resid


@jit()
def pivoted_cholesky_from(kern, sl, G, j0, j1, piv, resid, tol, floor, panel):
    """Continue :func:`pivoted_cholesky` from its first ``j0`` columns (in
    ``G``, ``piv`` and the residual ``resid``, all updated in place) up to
    ``j1 <= G.shape[1]`` columns; returns the rank. The columns are those one
    call with a budget of ``j1`` would have made (``panel``: as there).

    A panel whose candidates gave fewer than a quarter of its width in pivots
    did not pay for its columns (the largest residuals sat together, as on
    inputs of low dimension): the next :data:`PANEL_BACKOFF` columns, twice
    as many after each such panel, are made one at a time."""
    m = resid.shape[0]
    width = min(panel, m) if panel >= 2 else 0
    P = np.empty((m, width))
    pos = np.full(m if width else 0, -1, dtype=np.int64)
    rank, next_panel, backoff = j0, max(j0, PANEL_FROM), PANEL_BACKOFF
    while rank < j1:
        i, total = _argmax_sum(resid)
        if total <= tol or resid[i] <= floor:
            break
        if width and rank >= next_panel:
            done = _panel_pivots(kern, sl, G, rank, j1, piv, resid, tol, floor, P, pos)
            if 4 * (done - rank) < width:
                next_panel, backoff = done + backoff, 2 * backoff
            else:
                backoff = PANEL_BACKOFF
            if done > rank:
                rank = done
                continue
        piv[rank] = i
        _pivot_column(kern, sl, G, rank, i, resid)
        rank += 1
    return rank


@jit()
def _top(resid, c):
    """The ``c`` indices of largest ``resid``, ties to the lower index (so the
    first is :func:`_argmax_sum`'s)."""
    return np.argsort(-resid, kind="mergesort")[:c]


@jit()
def _panel_pivots(kern, sl, G, j0, j1, piv, resid, tol, floor, P, pos):
    """Greedy pivots from column ``j0`` on, while each is one of the panel's
    candidates (the ``P.shape[1]`` points of largest residual at ``j0``);
    returns the rank reached. ``pos`` (all -1 on entry and on return) maps a
    point to its candidate slot."""
    cand = _top(resid, P.shape[1])
    _panel_columns(kern, sl, G, j0, cand, P)
    for q in range(cand.shape[0]):
        pos[cand[q]] = q
    rank = j0
    while rank < j1:
        i, total = _argmax_sum(resid)
        if total <= tol or resid[i] <= floor or pos[i] < 0:
            break
        piv[rank] = i
        _finish_column(P[:, pos[i]], G, j0, rank, i, resid)
        pos[i] = -1
        rank += 1
    for q in range(cand.shape[0]):
        pos[cand[q]] = -1
    return rank


@jit(parallel=True)
def _panel_columns(kern, sl, G, j0, cand, P):
    """``P[:, q] = K~[:, cand_q] - G[:, :j0] G[cand_q, :j0]^T``, each entry
    summed over ``l = 0 .. j0-1`` in order (as :func:`_pivot_column` sums),
    with one pass over ``G``."""
    m, c = G.shape[0], cand.shape[0]
    Gc = np.empty((j0, c))  # the candidates' rows of G, transposed
    for q in range(c):
        for l in range(j0):
            Gc[l, q] = G[cand[q], l]
    for q in prange(c):
        col = np.empty(m)
        _scaled_column_part(kern, sl, cand[q], 0, m, col)
        P[:, q] = col
    for a in prange(m):
        acc = P[a, :c].copy()
        for l in range(j0):
            g = G[a, l]
            for q in range(c):
                acc[q] -= g * Gc[l, q]
        P[a, :c] = acc


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
        _add_dcov_row(A, a, Bt, kern.w, kern.kappa0, W[a], np.empty((2, nb)), part, a, 0, nb,
                      kern.iso)
        part[a, -1] = kern.kappa_b * _head_sum(W[a], nb)
    return part.sum(axis=0)
