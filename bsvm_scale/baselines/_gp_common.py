"""Helpers shared by the exact GP baselines (GPR and GPC): memory check,
initial covariance, log-space bounds and starts, dense Cholesky factors."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning

from .._compiled.dense import zero_upper
from .._util.validation import check_positive, check_positive_int
from ..inference.covariance import GaussianCovariance

#: bytes of one block of test-by-training covariance in prediction
PRED_CHUNK_BYTES = 32 * 2**20


def check_memory(n, n_matrices, max_memory_mb, model):
    """Refuse a fit whose dense ``n x n`` matrices exceed ``max_memory_mb``."""
    need_mb = n_matrices * 8.0 * n * n / 2**20
    if need_mb > max_memory_mb:
        raise ValueError(
            f"{model} with n={n} training samples needs about {need_mb:.0f} MiB for its "
            f"{n_matrices} dense n x n float64 matrices (exact GP: O(n^2) memory, O(n^3) time), "
            f"which exceeds max_memory_mb={max_memory_mb:g}. Raise max_memory_mb or subsample "
            "the data.")
    return need_mb


def initial_covariance(kappa0, kappa, kappa_b, ard, d):
    k0 = check_positive("kappa0", kappa0)
    kb = check_positive("kappa_b", kappa_b)
    k = 1.0 / d if kappa is None else check_positive("kappa", kappa)
    if np.ndim(k) == 1:
        if len(k) != d:
            raise ValueError(f"kappa has {len(k)} entries but X has {d} features.")
        if not ard:
            raise ValueError("an array kappa requires ard=True.")
    elif ard:
        k = np.full(d, float(k))
    if np.ndim(k0) != 0 or np.ndim(kb) != 0:
        raise ValueError("kappa0 and kappa_b must be scalars.")
    return GaussianCovariance(k0, k, kb)


def log_bounds(bounds, size):
    lo, hi = (float(b) for b in bounds)
    if not (0.0 < lo < hi and np.isfinite(hi)):
        raise ValueError(f"bounds must be (low, high) with 0 < low < high < inf; got {bounds!r}.")
    return [(np.log(lo), np.log(hi))] * size


def start_points(theta0, bounds, n_starts, rng, spread=3.0):
    """The first start is ``theta0``; the others are uniform in
    ``theta0 +- spread`` (log space), clipped to the box."""
    n_starts = check_positive_int("n_starts", n_starts)
    lo = np.array([b[0] for b in bounds])
    hi = np.array([b[1] for b in bounds])
    pts = [np.clip(theta0, lo, hi)]
    for _ in range(n_starts - 1):
        pts.append(np.clip(theta0 + rng.uniform(-spread, spread, size=theta0.shape), lo, hi))
    return pts


def warn_iteration_limit(results, model):
    hit = [i for i, r in enumerate(results) if r.hit_limit]
    if hit:
        warnings.warn(f"{model}: the evidence search stopped at its iteration/evaluation "
                      f"limit in start(s) {hit}; the evidence may not be maximised. Increase options['maxiter'].",
                      ConvergenceWarning, stacklevel=3)


def cholesky_inplace(F):
    """Lower Cholesky factor of the symmetric F-ordered matrix ``F``, in place.

    Only the lower triangle of the result is meaningful. Returns ``None`` when
    the matrix is not numerically positive definite.
    """
    c, info = lapack.dpotrf(F, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        return None
    return c


def cholesky_b(K, sw):
    """Lower Cholesky factor of ``B = I + W^1/2 K W^1/2`` (R&W 3.26), with a
    zero upper triangle; ``None`` when LAPACK finds it not positive definite."""
    # symmetric, so the transpose of the C-ordered product is B in F order (no copy)
    B = (sw[:, None] * K * sw[None, :]).T
    B[np.diag_indices_from(B)] += 1.0
    c = cholesky_inplace(B)
    if c is None:
        return None
    zero_upper(c)
    return c
