"""Matrix-free evidence engine: a pivoted-Cholesky (Nystrom) factor of the
SV block with a bound on what it leaves out.

Both Bayesian models need, over their support-vector block ``M`` (m cases),
the log determinant of ``B = I + K~`` with ``K~ = Lambda^1/2 Sigma_M
Lambda^1/2``, traces ``tr(A dSigma_M/d ln theta_p)`` with ``A = (Lambda^-1 +
Sigma_M)^-1 = Lambda^1/2 B^-1 Lambda^1/2``, the diagonal of ``A`` and
products ``A x``:

* BTSVC (5.35)-(5.37): ``Lambda_M`` is the curvature (5.10) of the
  trigonometric loss at ``f_MP``;
* BSVR (4.38)-(4.42): ``Lambda = C / (2 beta eps)`` on every off-bound SV,
  ``ln|I + C/(2 beta eps) Sigma_M| = ln|B|`` and ``(Sigma_M + 2 beta eps/C
  I)^-1 = A``.

The dense path factorises ``B`` (O(m^3) time, 8 m^2 bytes). This module
replaces ``K~`` by the rank-``r`` factor of a greedy pivoted Cholesky
factorisation (:func:`bsvm_scale._lowrank_kernels.pivoted_cholesky`) with
pivot set ``S``: ``K~ = Q~ K_SS^-1 Q~^T + E`` where ``Q~ = Lambda^1/2
Sigma_MS`` and ``E`` is positive semi-definite. With ``P = I + Q~ K_SS^-1
Q~^T`` and ``W = K_SS + Q~^T Q~ = L_W L_W^T`` (matrix determinant lemma and
Woodbury)::

    ln|P|   = ln|W| - ln|K_SS|
    P^-1 x  = x - R R^T x,            R = Q~ L_W^-T   (m x r)
    diag P^-1 = 1 - rowsum(R o R)

and ``0 <= ln|B| - ln|P| <= tr E`` (``B = P + E``, ``P >= I``), so ``tr E``
(the residual diagonal's sum, known from the factorisation) bounds the error
of the log determinant; the factorisation runs until ``tr E <= 2 tol`` (an
error of at most ``tol`` nats in ``-ln evidence``, which carries ``1/2
ln|B|``) or until its rank reaches the memory budget. Everything is
deterministic: the same inputs give the same value and gradient bit for bit.

The trace terms are the exact derivative of ``ln|P|`` with ``Lambda`` and the
pivots held fixed::

    d ln|P| / d ln theta_p = 2 tr(W^-1 Q~^T Lambda^1/2 dSigma_MS)
                             - tr((K_SS^-1 - W^-1) dSigma_SS)

contracted on the fly by :func:`bsvm_scale._lowrank_kernels.dcov_contract`
(O(m r d) time), so the value and the gradient are consistent with each
other. Memory: ``O(m r)``; no ``m x m`` array exists.

The predictive variance of ``f`` at a test point (4.46)/(5.41),
``Cov(x, x) - k~^T B^-1 k~`` with ``k~ = Lambda^1/2 k_M(x)``, is evaluated
through the same factor: with ``k~`` replaced by its projection on the
pivots, ``k~^T P^-1 k~ = k_S^T (K_SS^-1 - W^-1) k_S``, so

    sigma^2(x) = Cov(x, x) - ||L_K^-1 k_S||^2 + ||L_W^-1 k_S||^2

which needs only the ``r`` pivot inputs and two ``r x r`` triangles
(:class:`LowRankPredictor`), O(r d + r^2) per test point whatever ``m``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from . import _lowrank_kernels as _lk

__all__ = ["LowRankFactor", "LowRankPredictor", "BlockEvidence", "Correction", "factorize",
           "max_rank_for", "plan_block", "EvidenceSettings", "check_method", "EvidenceBudgetError", "DEFAULT_TOL"]

#: default bound (nats) on the error of -ln evidence left by the factor
DEFAULT_TOL = 0.05
#: the factor kept for prediction is computed to this fraction of the
#: evidence tolerance (its projection error drives that of the predictive
#: standard deviation: 1e-4 nats gave 8e-5 relative on the 2-D C2 data)
PREDICT_TOL_RATIO = 2e-3
#: arrays of m x r float64 alive at once (pivot buffer, then Q~ and R)
_ARRAYS = 3
#: relative diagonal jitter tried on K_SS / W when a Cholesky fails
_JITTERS = (0.0, 1e-12, 1e-10, 1e-8, 1e-6)


def max_rank_for(m, budget_bytes):
    """Largest rank whose ``m x r`` arrays fit in ``budget_bytes``."""
    return int(budget_bytes // (8 * _ARRAYS * max(int(m), 1)))


def _chol(A, what):
    """Lower Cholesky factor of ``A`` with relative jitter if needed."""
    scale = float(np.mean(np.diag(A))) if A.shape[0] else 1.0
    for eps in _JITTERS:
        try:
            return np.linalg.cholesky(A + (eps * scale) * np.eye(A.shape[0]) if eps else A)
        except np.linalg.LinAlgError:
            continue
    raise np.linalg.LinAlgError(f"the {what} matrix ({A.shape[0]} x {A.shape[0]}) of the "
                                "low-rank evidence is not positive definite.")


class LowRankFactor:
    """Rank-``r`` factor of ``B = I + Lambda^1/2 Sigma_M Lambda^1/2``.

    Attributes
    ----------
    rank : int
    pivots : ndarray of shape (rank,)
        Positions (within the block) of the pivot cases ``S``.
    X_S : ndarray of shape (rank, d)
    L_K, L_W : ndarray of shape (rank, rank)
        Lower Cholesky factors of ``K_SS`` and ``W = K_SS + Q~^T Q~``.
    R : ndarray of shape (m, rank)
        ``Q~ L_W^-T``.
    logdet : float
        ``ln |P|`` (a lower bound of ``ln |B|``).
    bound : float
        ``tr E``: ``ln|B| - ln|P|`` lies in ``[0, bound]``.
    """

    def __init__(self, cov, XM, sl, tol=2 * DEFAULT_TOL, max_rank=None):
        XM = np.ascontiguousarray(XM, dtype=np.float64)
        self.sl = np.ascontiguousarray(sl, dtype=np.float64)
        m = XM.shape[0]
        r_max = m if max_rank is None else int(min(m, max(1, max_rank)))
        w = cov.weights(XM.shape[1])
        G = np.empty((m, r_max))
        floor = 1e-13 * float(np.max(self.sl) ** 2) * (cov.kappa0 + cov.kappa_b) if m else 0.0
        rank, piv, resid = _lk.pivoted_cholesky(XM, self.sl, w, cov.kappa0, cov.kappa_b, G,
                                                float(tol), floor)
        del G
        self.rank = int(rank)
        self.pivots = piv[:rank].copy()
        self.bound = float(resid.sum())
        self.X_S = np.ascontiguousarray(XM[self.pivots])
        self.L_K = _chol(cov.cross(self.X_S, self.X_S), "K_SS")
        Qt = cov.cross(XM, self.X_S)
        Qt *= self.sl[:, None]
        self.L_W = _chol(cov.cross(self.X_S, self.X_S) + Qt.T @ Qt, "W")
        # R = Q~ L_W^-T, formed in the memory of Q~
        self.R = solve_triangular(self.L_W, Qt.T, lower=True, check_finite=False).T
        del Qt
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(self.L_W))) -
                                  np.sum(np.log(np.diag(self.L_K))))

    def diag_inv(self):
        """``diag P^-1`` (the diagonal of ``B^-1`` up to the factor's error)."""
        return 1.0 - np.einsum("ij,ij->i", self.R, self.R)

    def solve(self, x):
        """``P^-1 x``."""
        return x - self.R @ (self.R.T @ x)

    def dlogdet(self, cov, XM):
        """``d ln|P| / d ln theta_p`` with ``Lambda`` and the pivots fixed
        (layout of ``cov.theta``; the full ARD layout is collapsed for an
        isotropic covariance)."""
        w = cov.weights(XM.shape[1])
        # Q~ W^-1 = R L_W^-1
        QW = solve_triangular(self.L_W, self.R.T, lower=True, trans="T", check_finite=False).T
        QW *= 2.0 * self.sl[:, None]
        g = _lk.dcov_contract(np.ascontiguousarray(XM), self.X_S, np.ascontiguousarray(QW),
                              w, cov.kappa0, cov.kappa_b)
        del QW
        eye = np.eye(self.rank)
        D = cho_solve((self.L_K, True), eye) - cho_solve((self.L_W, True), eye)
        g -= _lk.dcov_contract(self.X_S, self.X_S, np.ascontiguousarray(D), w,
                               cov.kappa0, cov.kappa_b)
        return cov._collapse(g)

    def bilinear(self, cov, XM, Pz):
        """``sum_k Pz[:, k]^T (dP/d ln theta_p) Pz[:, k]`` (full ARD layout)."""
        w = cov.weights(XM.shape[1])
        a = cho_solve((self.L_K, True), self.L_W @ (self.R.T @ Pz))   # K^-1 Q~^T p
        W = 2.0 * (self.sl[:, None] * Pz) @ a.T
        g = _lk.dcov_contract(np.ascontiguousarray(XM), self.X_S, np.ascontiguousarray(W), w,
                              cov.kappa0, cov.kappa_b)
        g -= _lk.dcov_contract(self.X_S, self.X_S, np.ascontiguousarray(a @ a.T), w,
                               cov.kappa0, cov.kappa_b)
        return g

    def predictor(self):
        """The O(r^2) part of the factor that prediction needs."""
        return LowRankPredictor(self.X_S, self.L_K, self.L_W)

    @property
    def nbytes(self):
        return self.R.nbytes + self.L_K.nbytes + self.L_W.nbytes + self.X_S.nbytes


class LowRankPredictor:
    """Predictive variance ``Cov(x,x) - ||L_K^-1 k_S||^2 + ||L_W^-1 k_S||^2``
    (see the module docstring) from the pivot inputs and two triangles."""

    def __init__(self, X_S, L_K, L_W):
        self.X_S = np.ascontiguousarray(X_S, dtype=np.float64)
        self.L_K = np.ascontiguousarray(L_K, dtype=np.float64)
        self.L_W = np.ascontiguousarray(L_W, dtype=np.float64)

    def variance(self, cov, Xt, chunk_bytes=32 * 2**20):
        """Latent predictive variance at the rows of ``Xt`` (chunked; every
        test point is computed on its own, so the result does not depend on
        the chunk size)."""
        nt, r = Xt.shape[0], self.X_S.shape[0]
        var = np.full(nt, cov.kappa0 + cov.kappa_b)
        if r == 0:
            return var
        rows = max(1, int(chunk_bytes // (8 * 3 * r)))
        for s in range(0, nt, rows):
            e = min(nt, s + rows)
            Ks = cov.cross(self.X_S, Xt[s:e])                  # r x t
            a = solve_triangular(self.L_K, Ks, lower=True, check_finite=False)
            b = solve_triangular(self.L_W, Ks, lower=True, check_finite=False)
            var[s:e] -= np.einsum("ij,ij->j", a, a) - np.einsum("ij,ij->j", b, b)
        return np.maximum(var, 0.0)


def factorize(cov, XM, sl, tol=DEFAULT_TOL, max_rank=None):
    """:class:`LowRankFactor` of ``I + diag(sl) Sigma_M diag(sl)`` whose log
    determinant is within ``2 tol`` of the exact one (``tol`` nats of ``-ln
    evidence``) unless ``max_rank`` stops it first (then ``bound`` says how
    far)."""
    return LowRankFactor(cov, XM, sl, 2.0 * float(tol), max_rank)


# -- stochastic correction for a factor stopped by its rank budget ------------------
#: probes of the stochastic correction and the seed that fixes them
N_PROBES = 16
PROBE_SEED = 20031
#: relative residual at which the preconditioned CG stops, and its iteration cap
CG_RTOL = 1e-6
CG_MAXITER = 400


def block_matvec(cov, XM, V, chunk_bytes=64 * 2**20):
    """``Sigma_M V`` for an ``m x t`` block ``V``, row tiles of the covariance
    computed from the inputs (at most ``chunk_bytes`` each) and multiplied by
    BLAS: O(m^2 (d + t)) time, never an ``m x m`` array."""
    out = np.empty_like(V)
    for s, e, K in cov.iter_cross(XM, XM, chunk_bytes):
        out[s:e] = K @ V
    return out


def dcov_bilinear(cov, XM, U, V, chunk_bytes=64 * 2**20):
    """``sum_k U[:, k]^T (dSigma_M/d ln theta_p) V[:, k]`` for every ``p``
    (full ARD layout), in row tiles of ``U V^T``."""
    m = XM.shape[0]
    w = cov.weights(XM.shape[1])
    rows = max(1, int(chunk_bytes // (8 * max(m, 1))))
    g = np.zeros(XM.shape[1] + 2)
    for s in range(0, m, rows):
        e = min(m, s + rows)
        S = np.ascontiguousarray(U[s:e] @ V.T)
        g += _lk.dcov_contract(XM[s:e], XM, S, w, cov.kappa0, cov.kappa_b)
    return g


def pcg(apply_B, apply_Pinv, Z, rtol=CG_RTOL, maxiter=CG_MAXITER):
    """Preconditioned conjugate gradients on the columns of ``Z`` at once.

    Returns ``(X, alphas, betas, n_iter, rel_res)`` with the CG step lengths
    and direction weights of every column (``alphas``/``betas`` of shape
    ``(n_iter, t)``), which define the Lanczos tridiagonal matrix of the
    preconditioned operator (:func:`lanczos_quadratures`).
    """
    X = np.zeros_like(Z)
    Rr = Z.copy()
    Zp = apply_Pinv(Rr)
    D = Zp.copy()
    rz = np.einsum("ij,ij->j", Rr, Zp)
    norm0 = np.sqrt(np.einsum("ij,ij->j", Rr, Rr))
    norm0[norm0 == 0.0] = 1.0
    alphas, betas = [], []
    done = np.zeros(Z.shape[1], dtype=bool)
    rel = np.ones(Z.shape[1])
    for _ in range(maxiter):
        BD = apply_B(D)
        dBd = np.einsum("ij,ij->j", D, BD)
        a = np.where(done, 0.0, rz / np.where(dBd > 0.0, dBd, 1.0))
        X += D * a
        Rr -= BD * a
        Zp = apply_Pinv(Rr)
        rz_new = np.einsum("ij,ij->j", Rr, Zp)
        b = np.where(done, 0.0, rz_new / np.where(rz > 0.0, rz, 1.0))
        alphas.append(a)
        betas.append(b)
        rel = np.sqrt(np.einsum("ij,ij->j", Rr, Rr)) / norm0
        done = done | (rel <= rtol)
        if np.all(done):
            break
        D = Zp + D * b
        rz = rz_new
    return X, np.array(alphas), np.array(betas), len(alphas), rel


def lanczos_quadratures(alphas, betas):
    """``e1^T ln(T) e1`` for the Lanczos matrix ``T`` of every CG column
    (stochastic Lanczos quadrature; Ubaru, Chen & Saad 2017)."""
    out = np.zeros(alphas.shape[1])
    for k in range(alphas.shape[1]):
        a = alphas[:, k]
        j = int(np.count_nonzero(a))
        if j == 0:
            continue
        a, b = a[:j], betas[:j, k]
        diag = 1.0 / a
        diag[1:] += b[:-1] / a[:-1]
        off = np.sqrt(np.maximum(b[:-1], 0.0)) / a[:-1]
        T = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
        vals, vecs = np.linalg.eigh(T)
        out[k] = float(np.sum(vecs[0] ** 2 * np.log(np.maximum(vals, 1e-300))))
    return out


class Correction:
    """Stochastic estimates of what a rank-limited factor leaves out.

    With ``t`` probes ``z ~ N(0, P)`` (fixed seed) and ``x = B^-1 z`` by
    preconditioned CG, ``p = P^-1 z``:

    * ``ln|B| - ln|P| = E[z^T P^-1 z e1^T ln(T) e1]`` (Lanczos quadrature of
      the preconditioned operator, whose start vector ``P^-1/2 z`` is
      standard normal);
    * ``tr(B^-1 dK~) - d ln|P| = E[p^T dK~ x - p^T dP p]``;
    * ``diag(B^-1 - P^-1) = E[p o (x - p)]``.

    Attributes ``logdet``, ``logdet_se`` (standard error), ``diag``
    (length m), ``n_iter``, ``rel_res``; :meth:`grad` gives the gradient
    correction.
    """

    def __init__(self, cov, XM, F, n_probes=N_PROBES, seed=PROBE_SEED):
        m, r = XM.shape[0], F.rank
        rng = np.random.default_rng(seed)
        e1 = rng.standard_normal((m, n_probes))
        e2 = rng.standard_normal((r, n_probes))
        # z = eps1 + Q~ L_K^-T eps2 with Q~ = R L_W^T
        lk = solve_triangular(F.L_K, e2, lower=True, trans="T", check_finite=False)
        Z = e1 + F.R @ (F.L_W.T @ lk)
        sl = F.sl[:, None]
        self._apply_B = lambda V: V + sl * block_matvec(cov, XM, sl * V)
        X, alphas, betas, self.n_iter, rel = pcg(self._apply_B, F.solve, Z)
        self.rel_res = float(np.max(rel))
        Pz = F.solve(Z)
        quad = lanczos_quadratures(alphas, betas) * np.einsum("ij,ij->j", Z, Pz)
        self.logdet = float(np.mean(quad))
        self.logdet_se = float(np.std(quad, ddof=1) / np.sqrt(n_probes)) if n_probes > 1 else 0.0
        self.diag = np.mean(Pz * (X - Pz), axis=1)
        self._X, self._Pz = X, Pz

    def grad(self, cov, XM, F):
        """Estimate of ``tr(B^-1 dK~) - d ln|P|`` (layout of ``cov.theta``)."""
        t = self._X.shape[1]
        sl = F.sl[:, None]
        g = dcov_bilinear(cov, XM, sl * self._Pz, sl * self._X)
        g -= F.bilinear(cov, XM, self._Pz)
        return cov._collapse(g / t)

    def solve(self, F, b):
        """``B^-1 b`` by preconditioned CG (one column)."""
        x, *_ = pcg(self._apply_B, F.solve, b[:, None])
        return x[:, 0]


class BlockEvidence:
    """``ln|B|``, ``diag B^-1``, ``B^-1 b`` and ``d ln|B|`` for one SV block:
    the rank-limited factor alone when its bound meets the tolerance,
    factor plus :class:`Correction` (the factor as preconditioner) when the
    rank budget stopped it first.

    Attributes
    ----------
    logdet : float
    error : float
        Error estimate of ``ln|B|``: the bound ``tr E`` of the factor alone,
        else the standard error of the stochastic correction.
    rank : int
    probes : int
        0 when the factor met the tolerance.
    cg_iter : int
    """

    def __init__(self, cov, XM, sl, tol=DEFAULT_TOL, max_rank=None, n_probes=N_PROBES):
        self.cov = cov
        self.XM = np.ascontiguousarray(XM, dtype=np.float64)
        self.F = factorize(cov, self.XM, sl, tol, max_rank)
        self.rank = self.F.rank
        self.corr = None
        self.logdet = self.F.logdet
        self.error = self.F.bound
        self.probes = 0
        self.cg_iter = 0
        if self.F.bound > 2.0 * float(tol) and n_probes > 0:
            self.corr = Correction(cov, self.XM, self.F, n_probes)
            self.logdet += self.corr.logdet
            self.error = self.corr.logdet_se
            self.probes = int(n_probes)
            self.cg_iter = int(self.corr.n_iter)

    def diag_inv(self):
        """Diagonal of ``B^-1``."""
        d = self.F.diag_inv()
        return d if self.corr is None else d + self.corr.diag

    def solve(self, b):
        """``B^-1 b`` (``P^-1 b`` when the factor alone is used)."""
        return self.F.solve(b) if self.corr is None else self.corr.solve(self.F, b)

    def dlogdet(self):
        """``d ln|B| / d ln theta_p`` with ``Lambda`` fixed, i.e. ``tr(A dSigma_p)``."""
        g = self.F.dlogdet(self.cov, self.XM)
        return g if self.corr is None else g + self.corr.grad(self.cov, self.XM, self.F)

    def info(self):
        """Diagnostics for the evidence ``info`` dict (error in nats of
        ``-ln evidence``, which carries ``1/2 ln|B|``)."""
        return {"method": "matrix_free", "rank": int(self.rank), "error": 0.5 * self.error,
                "probes": self.probes, "cg_iter": self.cg_iter}


# -- choice of method and memory budget ---------------------------------------------
#: evidence methods accepted by the Bayesian estimators
METHODS = ("auto", "dense", "matrix_free")
#: "auto" factorises the block densely up to this many cases (below it the
#: dense Cholesky is both exact and faster than a factor of nearly full rank)
AUTO_DENSE_MAX = 5000
#: smallest useful rank of a matrix-free factor
MIN_RANK = 16


class EvidenceSettings(NamedTuple):
    """The estimators' ``evidence_method``, ``evidence_tol``, ``evidence_mb``."""

    method: str = "auto"
    tol: float = DEFAULT_TOL
    budget_mb: float = 1024.0

    def plan(self, m, dense_arrays=1):
        """:func:`plan_block` for a block of ``m`` cases."""
        return plan_block(self.method, m, self.budget_mb, dense_arrays)


class EvidenceBudgetError(MemoryError, ValueError):
    """The evidence arrays of an SV block do not fit the memory budget."""


def check_method(method, tol, budget_mb):
    """Validate ``evidence_method``, ``evidence_tol`` and ``evidence_mb``."""
    if method not in METHODS:
        raise ValueError(f"evidence_method must be one of {METHODS}; got {method!r}.")
    for name, value in (("evidence_tol", tol), ("evidence_mb", budget_mb)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
                or not np.isfinite(value) or value <= 0:
            raise ValueError(f"{name} must be a positive number; got {value!r}.")


def plan_block(method, m, budget_mb, dense_arrays=1):
    """Method and rank cap for an SV block of ``m`` cases.

    Parameters
    ----------
    method : {"auto", "dense", "matrix_free"}
    m : int
        Cases in the block.
    budget_mb : float
        Memory budget of the evidence arrays in MiB (``evidence_mb``).
    dense_arrays : int
        ``m x m`` arrays the dense path of the model holds at once.

    Returns
    -------
    (method, max_rank) : ("dense", None) or ("matrix_free", int)

    Raises
    ------
    EvidenceBudgetError
        The block does not fit ``budget_mb`` with the method asked for; the
        message names the parameter that would make it fit.
    """
    budget = float(budget_mb) * 2**20
    dense_bytes = 8.0 * dense_arrays * m * m
    if method == "dense" or (method == "auto" and m <= AUTO_DENSE_MAX and dense_bytes <= budget):
        if dense_bytes > budget:
            raise EvidenceBudgetError(
                f"the dense evidence of {m} support vectors needs {dense_bytes / 2**20:.0f} MiB, "
                f"above evidence_mb={budget_mb:g}; use evidence_method='matrix_free' (or "
                f"'auto'), or raise evidence_mb to at least {np.ceil(dense_bytes / 2**20):.0f}.")
        return "dense", None
    r = min(m, max_rank_for(m, budget))
    if r < min(MIN_RANK, m):
        need = 8.0 * _ARRAYS * m * min(MIN_RANK, m) / 2**20
        raise EvidenceBudgetError(
            f"the matrix-free evidence of {m} support vectors needs at least {need:.0f} MiB "
            f"for a rank-{MIN_RANK} factor, above evidence_mb={budget_mb:g}; raise evidence_mb.")
    return "matrix_free", r
