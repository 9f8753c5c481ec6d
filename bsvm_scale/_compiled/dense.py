"""Compiled dense helpers for factorised covariance matrices.

Flat Numba functions over one F-ordered square matrix: zeroing the strict upper
triangle left by LAPACK's ``dpotrf`` (the GP baselines and the dense BTSVC
evidence factor), and turning the lower triangle of ``K^{-1}`` from ``dpotri``
into the gradient matrix ``W = alpha alpha^T - K^{-1}`` of the GP evidence
(Rasmussen & Williams 2006, eq. 5.9) with doubled off-diagonal entries.
"""

from __future__ import annotations

from numba import prange

from . import jit

__all__ = ["zero_upper", "gradient_matrix_inplace"]


@jit(parallel=True)
def zero_upper(c):
    """Zero the strict upper triangle of an F-ordered square matrix."""
    n = c.shape[0]
    for j in prange(n):
        for i in range(j):
            c[i, j] = 0.0


@jit(parallel=True)
def gradient_matrix_inplace(c, alpha):
    """Turn the lower triangle of ``K^{-1}`` (F-ordered, from ``dpotri``) into
    the lower triangle of ``W = alpha alpha^T - K^{-1}`` with doubled
    off-diagonal entries and a zero upper triangle, so that
    ``sum_ab c[a, b] dS[a, b] = trace(W dS)`` for every symmetric ``dS``."""
    n = c.shape[0]
    for j in prange(n):
        for i in range(j):
            c[i, j] = 0.0
        c[j, j] = alpha[j] * alpha[j] - c[j, j]
        for i in range(j + 1, n):
            c[i, j] = 2.0 * (alpha[i] * alpha[j] - c[i, j])
