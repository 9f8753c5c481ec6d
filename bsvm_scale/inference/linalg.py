"""Triangular solves whose every column does not depend on its neighbours.

BLAS solves the right-hand sides of ``L X = K`` in panels of a few columns and
a remainder panel another way, so the last bits of a column's solution depend
on how many columns are solved together. Predictions solve one column per
test point, in chunks whose size depends on memory budgets and on how a caller
batches its rows; :func:`solve_lower_columns` solves in blocks of exactly
:data:`COLUMN_BLOCK` columns (the last one padded with copies of its last
column), so that a test point's predictive variance is the same bit for bit
whatever the chunk it came in.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["COLUMN_BLOCK", "solve_lower_columns"]

#: columns per triangular solve (a multiple of every BLAS panel width)
COLUMN_BLOCK = 64


def solve_lower_columns(L, K):
    """``L^-1 K`` for a lower-triangular ``L`` (m x m) and ``K`` (m x t), solved
    in blocks of :data:`COLUMN_BLOCK` columns; float64, C-contiguous."""
    m, t = K.shape
    out = np.empty((m, t))
    for s in range(0, t, COLUMN_BLOCK):
        e = min(t, s + COLUMN_BLOCK)
        block = K[:, s:e]
        if e - s < COLUMN_BLOCK:
            block = np.concatenate([block, np.repeat(block[:, -1:], COLUMN_BLOCK - (e - s),
                                                     axis=1)], axis=1)
        out[:, s:e] = solve_triangular(L, block, lower=True, check_finite=False)[:, :e - s]
    return out
