"""The greedy pivoted-Cholesky factor of a covariance block, made in stages.

For inputs ``X`` (m rows), weights ``sl`` and the Gaussian covariance (4.3)/(4.42),
the factor ``G`` (m x r) of ``K~ = diag(sl) Sigma diag(sl)`` with ``K~ = G G^T + E``,
``E`` positive semi-definite, and its residual diagonal ``diag E``, whose sum bounds
what the factor leaves out. The columns come from
:func:`bsvm_scale._compiled.lowrank.pivoted_cholesky_from`, which continues a factor
exactly, so a factor made in stages (budgets that grow while a caller's rule says so)
has the columns of one call with the last budget. The matrix-free evidence
(:mod:`bsvm_scale.inference.evidence_lowrank`) and the MAP route through the factor
(:mod:`bsvm_scale.inference.map_lowrank`) build their factors here.
"""

from __future__ import annotations

import numpy as np

from .._compiled import lowrank as _lk

__all__ = ["FIRST_CAPACITY", "PANEL", "pivoted_factor", "panel_width", "rounding_floor",
           "staged_factor", "growing_factor"]

#: columns of a factor's array before it first doubles (:func:`staged_factor`)
FIRST_CAPACITY = 64
#: candidates of one panel of the compiled factorisation, and the memory its
#: ``m x c`` array may take (:mod:`bsvm_scale._compiled.lowrank`)
PANEL = 64
PANEL_BYTES = 64 * 2**20


def panel_width(m):
    """Candidates per panel for a block of ``m`` points: :data:`PANEL`, fewer
    where ``m x PANEL`` numbers would pass :data:`PANEL_BYTES` (0 below 8:
    one column at a time). The factor does not depend on it."""
    c = int(min(PANEL, PANEL_BYTES // (8 * max(int(m), 1))))
    return c if c >= 8 else 0


def pivoted_factor(cov, X, sl, tol, max_rank=None, start=None):
    """Greedy pivoted Cholesky factor of ``diag(sl) Sigma diag(sl)`` over the
    rows of ``X``: ``(G, pivots, resid)`` with ``G`` of shape ``(m, rank)``
    (C-ordered), stopped once ``tr E = sum(resid) <= tol``, at ``max_rank``
    columns, or when the largest residual is at rounding level. ``start``:
    the ``(G, pivots, resid)`` of a factor of the same matrix to continue
    (:func:`staged_factor`)."""
    m = X.shape[0]
    r_max = m if max_rank is None else int(min(m, max(1, max_rank)))
    G, piv, resid = staged_factor(cov, X, sl, r_max, r_max, lambda rank, resid: None, tol,
                                  start)
    return np.ascontiguousarray(G), piv, resid


def rounding_floor(cov, sl):
    """The residual diagonal entry below which :func:`pivoted_factor` stops:
    ``1e-13`` of the largest diagonal entry (rounding level)."""
    return 1e-13 * float(np.max(sl) ** 2) * (cov.kappa0 + cov.kappa_b) if sl.size else 0.0


def staged_factor(cov, X, sl, width, first, next_stop, tol=0.0, start=None):
    """Pivoted-Cholesky factor over the rows of ``X`` made in stages: up to
    ``first`` columns, then, after every stage that used its whole budget,
    up to ``next_stop(rank, resid)`` columns (None: stop), never past
    ``width``. Every stage also stops at ``tr E <= tol`` or at rounding
    level. Returns ``(G, piv, resid)`` with ``G`` a view of the first
    ``rank`` columns of one array (rows C-contiguous). The columns are those of
    :func:`pivoted_factor` with the budget the last stage had.

    The array starts :data:`FIRST_CAPACITY` columns wide and doubles when a
    stage needs more (its filled columns copied): its memory follows the rank
    reached, not ``width`` (a row-major array of ``width`` columns is resident
    in full once one column is written, with NumPy's huge pages).

    ``start``: ``(G0, piv0, resid0)``, the first columns of this factor (at
    most ``width``), its pivots and residual diagonal; the factor continues
    from them instead of from column 0."""
    m = X.shape[0]
    width = int(min(m, width))
    r0 = 0 if start is None else start[0].shape[1]
    G = np.zeros((m, int(min(width, max(FIRST_CAPACITY, r0)))))
    piv = np.full(width, -1, dtype=np.int64)
    resid = np.empty(m)
    resid[:] = sl * sl * (cov.kappa0 + cov.kappa_b)
    kern, floor = cov.kernel(X), rounding_floor(cov, sl)
    rank, stop = 0 if start is None else _seed(G, piv, resid, start, width), int(min(width, first))
    while stop is not None and stop > rank:
        G, rank = _factor_stage(kern, sl, G, rank, stop, piv, resid, float(tol), floor, width)
        if rank < stop:
            break
        stop = next_stop(rank, resid)
        stop = None if stop is None else int(min(width, stop))
    return G[:, :rank], piv[:rank].copy(), resid


def _factor_stage(kern, sl, G, rank, stop, piv, resid, tol, floor, width):
    """One stage of :func:`staged_factor`, from ``rank`` to ``stop`` columns
    (fewer at the tolerance or rounding level), doubling ``G`` as it fills;
    returns ``(G, rank)``."""
    while rank < stop:
        if rank == G.shape[1]:
            wider = np.zeros((G.shape[0], int(min(width, 2 * G.shape[1]))))
            wider[:, :rank] = G[:, :rank]
            G = wider
        part = min(stop, G.shape[1])
        rank_after = _lk.pivoted_cholesky_from(kern, sl, G, rank, part, piv, resid, tol, floor,
                                                panel_width(G.shape[0]))
        if rank_after < part:
            return G, rank_after
        rank = rank_after
    return G, rank


def _seed(G, piv, resid, start, width):
    """Copy a factor's first columns ``start = (G0, piv0, resid0)`` into the
    arrays of :func:`staged_factor`; returns their number."""
    G0, piv0, resid0 = start
    r = G0.shape[1]
    if r > width:
        raise ValueError(f"start: the factor to continue has {r} columns, more than the "
                         f"{width} allowed; pass a larger max_rank.")
    G[:, :r] = G0
    piv[:r] = piv0
    resid[:] = resid0
    return r


def growing_factor(cov, X, sl, budgets, keep_going):
    """:func:`staged_factor` through the increasing ``budgets``, on to the
    next while ``keep_going(resid)`` says so (run to rounding level)."""
    later = iter(budgets[1:])
    return staged_factor(cov, X, sl, budgets[-1], budgets[0],
                         lambda rank, resid: next(later, None) if keep_going(resid) else None)
