"""Dense linear algebra of the evidences: Cholesky factors with jitter, the
inverse from a factor, triangular solves whose every column does not
depend on its neighbours, and products with a triangle's inverse (the
low-rank factor's ``m x r`` arrays: one triangular multiply where a chain of
triangular solves would take one pass each).

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

import warnings

import numpy as np

from scipy.linalg import blas, lapack, solve_triangular
from scipy.linalg.lapack import dpotrf

from .._compiled.dense import zero_upper

__all__ = ["COLUMN_BLOCK", "solve_lower_columns", "chol_with_jitter", "stable_cholesky",
           "inverse_lower", "inverse_triangle", "times_lower"]

#: relative jitters tried by :func:`chol_with_jitter` (after none)
_JITTERS = (1e-10, 1e-8, 1e-6, 1e-4, 1e-2)
#: relative jitters tried by :func:`stable_cholesky`
_STABLE_JITTERS = (0.0, 1e-10, 1e-8, 1e-6, 1e-4, 1e-2)

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


def chol_with_jitter(make_B):
    """Lower Cholesky factor of the symmetric matrix returned by ``make_B()``.

    ``B`` (C-contiguous) is factorised in place by LAPACK's ``dpotrf`` and
    returned as ``L``: no second ``m x m`` array is ever allocated. If the
    factorisation fails, ``B`` is rebuilt and increasing jitter
    ``eps * mean(diag B)`` is added to its diagonal; the jitter used (0.0
    normally) is returned and a :class:`RuntimeWarning` is issued, so that it
    is never silent.

    Returns
    -------
    L : ndarray
        Lower-triangular factor (the memory of ``B``, C-contiguous, upper
        triangle zero).
    jitter : float
        Absolute jitter added to the diagonal.
    """
    for eps in (0.0, *_JITTERS):
        B = np.ascontiguousarray(make_B())
        scale = float(np.mean(np.diag(B))) if B.size else 1.0
        if not np.isfinite(scale) or not np.all(np.isfinite(np.diag(B))):
            raise np.linalg.LinAlgError("the SV covariance block contains non-finite values.")
        if eps:
            B[np.diag_indices_from(B)] += eps * scale
        # B.T is F-ordered: its upper factor U (B = U^T U) overwrites it, so the
        # C-ordered B holds L = U^T in its lower triangle
        _, info = dpotrf(B.T, lower=0, clean=0, overwrite_a=1)
        if info != 0:
            del B
            continue
        L = B
        zero_upper(L)
        if eps:
            warnings.warn(f"Cholesky of the BTSVC evidence matrix needed jitter "
                          f"{eps * scale:.3g} on the diagonal.", RuntimeWarning, stacklevel=3)
        return L, eps * scale
    raise np.linalg.LinAlgError("Cholesky failed even with jitter 1e-2 * mean(diag).")


def inverse_lower(L, overwrite=False):
    """Lower triangle of ``A^-1`` from the C-ordered lower Cholesky factor ``L``
    of ``A`` (LAPACK ``dpotri``, a third of the work of solving ``L L^T X = I``).

    ``L.T`` is the F-ordered upper factor; ``dpotri`` replaces it by the upper
    triangle of ``A^-1``, which is the lower triangle of the C-ordered result.
    The strict upper triangle keeps what ``L`` had there (zeros from
    ``np.linalg.cholesky``): read the result with ``lower=True``
    (:meth:`~bsvm_scale.inference.covariance.GaussianCovariance.trace_grad`).
    ``overwrite=True`` works in the memory of ``L``.
    """
    if L.shape[0] == 0:
        return np.zeros((0, 0))
    inv, info = lapack.dpotri(L.T, lower=0, overwrite_c=int(overwrite))
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri failed with info={info}.")
    return inv.T


def inverse_triangle(L):
    """``L^-1`` of a nonsingular lower triangle ``L`` (LAPACK ``dtrtri``),
    C-ordered, zero above the diagonal."""
    if L.shape[0] == 0:
        return np.zeros((0, 0))
    inv, info = lapack.dtrtri(np.asfortranarray(L), lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dtrtri failed with info={info}: the triangle is "
                                    "singular.")
    return np.ascontiguousarray(np.tril(inv))


def times_lower(Y, N, alpha=1.0, trans=False, overwrite=False):
    """``alpha Y N`` (``trans=True``: ``alpha Y N^T``) for a C-ordered ``k x r``
    array ``Y`` and a lower triangle ``N`` (``r x r``).

    One triangular multiply (BLAS ``dtrmm``) on the F-ordered ``Y^T``, ``k r^2``
    operations, where a triangular solve with ``Y`` would take the same and two
    of them twice; ``overwrite=True`` works in the memory of ``Y``. Returns a
    C-ordered array.
    """
    if Y.shape[1] == 0:
        return Y if overwrite else Y.copy()
    # (Y N)^T = N^T Y^T and (Y N^T)^T = N Y^T; Y^T is the F-ordered view of Y
    return blas.dtrmm(float(alpha), N, Y.T, side=0, lower=1, trans_a=int(not trans),
                      overwrite_b=int(overwrite)).T


def stable_cholesky(A):
    """Lower Cholesky factor of ``A``, adding diagonal jitter if needed.

    Returns ``(L, jitter)``; ``jitter`` is the relative amount added to the
    diagonal (0.0 when none was needed). Raises ``np.linalg.LinAlgError`` if
    even the largest jitter fails.
    """
    if A.shape[0] == 0:
        return np.zeros((0, 0)), 0.0
    scale = float(np.mean(np.diag(A)))
    for jit in _STABLE_JITTERS:
        try:
            L = np.linalg.cholesky(A + (jit * scale) * np.eye(A.shape[0]) if jit else A)
            return L, jit
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError(
        f"Sigma_M + (2 beta eps / C) I ({A.shape[0]} x {A.shape[0]}) is not positive "
        f"definite even with relative jitter {_STABLE_JITTERS[-1]}."
    )
