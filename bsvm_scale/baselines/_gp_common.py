"""Helpers shared by the exact GP baselines (GPR and GPC): parameter
constraints, memory check, initial covariance, log-space bounds and starts,
the evidence maximisation, dense Cholesky factors."""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import lapack
from sklearn.exceptions import ConvergenceWarning

from .._compiled.dense import zero_upper
from .._util.base import resolve_rng
from .._util.validation import POSITIVE, POSITIVE_INT, SEED, check_positive, check_positive_int
from ..inference.covariance import GaussianCovariance
from ..optimization.driver import run_start
from ..optimization.records import start_record
from ..optimization.starts import best_start

#: bytes of one block of test-by-training covariance in prediction
PRED_CHUNK_BYTES = 32 * 2**20

#: scikit-learn ``_parameter_constraints`` of the parameters GPR and GPC share
#: (an array ``kappa`` against ``ard`` and the inputs, and ``bounds`` as
#: ``0 < low < high``, are checked in ``fit``)
GP_CONSTRAINTS = {"kappa0": [POSITIVE], "kappa": [POSITIVE, "array-like", None],
                  "kappa_b": [POSITIVE], "ard": ["boolean"], "optimize": ["boolean"],
                  "n_starts": [POSITIVE_INT], "bounds": ["array-like"], "options": [dict, None],
                  "max_memory_mb": [POSITIVE], "random_state": SEED}


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
    """The covariance at the initial hyperparameters (scalars checked by
    :data:`GP_CONSTRAINTS`); ``kappa`` defaults to ``1 / d``, an array
    ``kappa`` needs ``ard=True`` and one positive entry per input."""
    k = 1.0 / d if kappa is None else check_positive("kappa", kappa)
    if np.ndim(k) == 1:
        if len(k) != d:
            raise ValueError(f"kappa has {len(k)} entries but X has {d} features; pass one "
                             "kappa_l per input (or a float).")
        if not ard:
            raise ValueError(f"an array kappa ({kappa!r}) requires ard=True; pass a float or "
                             "set ard=True.")
    elif ard:
        k = np.full(d, float(k))
    return GaussianCovariance(float(kappa0), k, float(kappa_b))


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


def maximize_evidence(est, log_evidence, theta0, bounds, model, shift=0.0):
    """Evidence maximisation of a GP baseline (``est.optimize``) from
    ``est.n_starts`` starts (:func:`start_points`), the best start kept.

    Parameters
    ----------
    est : GPR or GPC
        Reads ``optimize``, ``n_starts``, ``options`` and ``random_state``.
    log_evidence : callable
        ``log_evidence(theta) -> (ln evidence, gradient, info)``.
    theta0 : ndarray
        The first start (the initial hyperparameters, log space).
    bounds : list of (float, float)
        Box of every log hyperparameter.
    model : str
        Name in the iteration-limit warning.
    shift : float, default=0.0
        Added to every value of the start records (see :func:`start_record`).

    Returns
    -------
    theta : ndarray
        The best optimum, or ``theta0`` itself with ``optimize=False``.
    best : int
        Index of its start.
    starts : list of dict
        One record per start (empty with ``optimize=False``).
    """
    if not est.optimize:
        return theta0, 0, []
    rng = resolve_rng(est.random_state)

    def objective(theta):
        lml, grad, info = log_evidence(np.asarray(theta, dtype=float))
        return -lml, -grad, info

    results = [run_start(objective, t0, bounds, est.options)
               for t0 in start_points(theta0, bounds, est.n_starts, rng)]
    best = best_start(results)
    warn_iteration_limit(results, model)
    theta = np.asarray(results[best].theta, dtype=float)
    return theta, best, [start_record(r, shift=shift) for r in results]


def set_hyperparameters(est, theta, cov):
    """The fitted ``theta_``, ``kappa0_``, ``kappa_`` (a copy of an array)
    and ``kappa_b_`` of a GP baseline."""
    est.theta_ = theta.copy()
    est.kappa0_ = cov.kappa0
    est.kappa_ = cov.kappa if np.isscalar(cov.kappa) else np.asarray(cov.kappa).copy()
    est.kappa_b_ = cov.kappa_b


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
