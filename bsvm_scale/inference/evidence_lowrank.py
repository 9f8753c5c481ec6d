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
replaces ``K~`` by the rank-``r`` factor ``G`` of a greedy pivoted Cholesky
factorisation (:func:`bsvm_scale._compiled.lowrank.pivoted_cholesky`) with
pivot set ``S``: ``K~ = G G^T + E`` with ``G G^T = K~_MS K~_SS^-1 K~_SM``
(Nystrom over the pivots) and ``E`` positive semi-definite. With ``P = I + G
G^T`` and ``C = I + G^T G = L_C L_C^T`` (matrix determinant lemma and
Woodbury; ``C`` has eigenvalues >= 1, so nothing ill-conditioned is
factorised)::

    ln|P|   = ln|C|
    P^-1 x  = x - R R^T x,            R = G L_C^-T   (m x r)
    diag P^-1 = 1 - rowsum(R o R)

and ``0 <= ln|B| - ln|P| <= tr E`` (``B = P + E``, ``P >= I``), so ``tr E``
(the residual diagonal's sum, known from the factorisation) bounds the error
of the log determinant; the factorisation runs until ``tr E <= 2 tol`` (an
error of at most ``tol`` nats in ``-ln evidence``, which carries ``1/2
ln|B|``) or until its rank reaches the memory budget. Everything is
deterministic: the same inputs give the same value and gradient bit for bit.

The trace terms are the exact derivative of ``ln|P|`` with ``Lambda`` and the
pivots held fixed (``K~_SS = L_S L_S^T``, ``dK~ = Lambda^1/2 dSigma
Lambda^1/2``)::

    d ln|P| / d ln theta_p = 2 tr(G C^-1 L_S^-1 dK~_SM)
                             - tr(L_S^-T (I - C^-1) L_S^-1 dK~_SS)

contracted on the fly by :func:`bsvm_scale._compiled.lowrank.dcov_contract`
(O(m r d) time), so the value and the gradient are consistent with each
other. Memory: ``O(m r)``; no ``m x m`` array exists.

The predictive variance of ``f`` at a test point (4.46)/(5.41),
``Cov(x, x) - k~^T B^-1 k~`` with ``k~ = Lambda^1/2 k_M(x)``, is evaluated
through the same factor: with ``k~`` replaced by its projection ``G L_S^-1
a~`` on the pivots (``a~ = Lambda_S^1/2 k_S(x)``) and ``G^T P^-1 G = I -
C^-1``::

    a = L_S^-1 a~,    sigma^2(x) = Cov(x, x) - ||a||^2 + ||L_C^-1 a||^2

which needs only the ``r`` pivot inputs and two ``r x r`` triangles
(:class:`LowRankPredictor`), O(r d + r^2) per test point whatever ``m``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from .linalg import inverse_triangle, solve_lower_columns, times_lower
from .pivoted import growing_factor, pivoted_factor, staged_factor

from .._compiled import lowrank as _lk

__all__ = ["LowRankFactor", "LowRankPredictor", "pivoted_factor", "staged_factor", "growing_factor",
           "growth_plan", "growth_cap", "BlockEvidence", "Correction", "factorize",
           "max_rank_for", "plan_block", "EvidenceSettings", "FACTOR_OR_DENSE", "check_method",
           "EvidenceBudgetError", "DEFAULT_TOL"]

#: default bound (nats) on the error of -ln evidence left by the factor: a
#: Bayes factor of 1.05, below every threshold the search decides by (0.1 nat
#: stalls, 1-nat gains of the full-data phase; docs/design/matrix_free_evidence.md,
#: "The default tolerance")
DEFAULT_TOL = 0.05
#: the factor kept for prediction is computed to this fraction of the
#: evidence tolerance (1e-4 nats at the default): its projection error drives the
#: relative error of the predictive standard deviation, which stays of the order
#: of the factor's own tolerance (docs/design/matrix_free_evidence.md, "The factor
#: kept for prediction")
PREDICT_TOL_RATIO = 2e-3
#: arrays of m x r float64 alive at once (the factor, and one temporary of
#: the gradient or a trimmed copy of the pivot buffer)
_ARRAYS = 2


def max_rank_for(m, budget_bytes):
    """Largest rank whose ``m x r`` arrays fit in ``budget_bytes``."""
    return int(budget_bytes // (8 * _ARRAYS * max(int(m), 1)))


def _right_solve(L, Y, trans="T"):
    """``Y L^-1`` (``trans="T"``) or ``Y L^-T`` (``"N"``) for a C-ordered
    ``k x r`` array ``Y``, in its memory (LAPACK works on the F-ordered
    ``Y^T``)."""
    out = solve_triangular(L, Y.T, lower=True, trans=trans, overwrite_b=True,
                           check_finite=False)
    return out.T


def growth_plan(target, first, cap):
    """``next_stop`` of :func:`staged_factor` for the evidence factor: a
    stage at ``first // 2`` columns, one at ``first``, then, while ``tr E >
    target``, on to the rank at which ``ln tr E``, extrapolated linearly in
    the rank from the last two stages, reaches ``target`` (with
    :data:`GROWTH_MARGIN`) -- if that rank is at most ``cap``."""
    seen = []

    def next_stop(rank, resid):
        seen.append((rank, float(resid.sum())))
        if rank < first:
            return first
        (r1, t1), (r2, t2) = seen[-2], seen[-1]
        if t2 <= target or t1 <= t2 or r2 >= cap:
            return None
        need = r2 + (r2 - r1) * np.log(t2 / target) / np.log(t1 / t2)
        if need > cap:
            return None
        return int(np.ceil(r2 + GROWTH_MARGIN * (need - r2)))

    return next_stop


class LowRankFactor:
    """Rank-``r`` factor of ``B = I + Lambda^1/2 Sigma_M Lambda^1/2``.

    The pivoted Cholesky factor ``G`` (m x r) gives ``P = I + G G^T`` with
    ``G G^T = K~_MS K~_SS^-1 K~_SM`` (the Nystrom form over the pivots
    ``S``) and ``K~_SS = L_S L_S^T`` (``L_S``: the rows of ``G`` at the
    pivots). Everything is computed through the well-conditioned ``C = I +
    G^T G = L_C L_C^T`` (eigenvalues >= 1), never through ``K_SS^-1`` alone:
    ``ln|P| = ln|C|`` and ``P^-1 = I - R R^T`` with ``R = G L_C^-T``.

    Attributes
    ----------
    rank : int
    pivots : ndarray of shape (rank,)
        Positions (within the block) of the pivot cases ``S``.
    X_S, sl_S : ndarray
        Pivot inputs and their weights ``Lambda_S^1/2``.
    L_S, L_C : ndarray of shape (rank, rank)
        Lower triangles with ``K~_SS = L_S L_S^T`` and ``C = L_C L_C^T``.
    R : ndarray of shape (m, rank)
        ``G L_C^-T`` (formed in the memory of ``G``).
    logdet : float
        ``ln |P|`` (a lower bound of ``ln |B|``).
    bound : float
        ``tr E``: ``ln|B| - ln|P|`` lies in ``[0, bound]``.
    """

    def __init__(self, cov, XM, sl, tol=2 * DEFAULT_TOL, max_rank=None, first_rank=None,
                 start=None):
        XM = np.ascontiguousarray(XM, dtype=np.float64)
        self.sl = np.ascontiguousarray(sl, dtype=np.float64)
        if start is not None or first_rank is None or max_rank is None or first_rank >= max_rank:
            G, piv, resid = pivoted_factor(cov, XM, self.sl, tol, max_rank, start)
        else:  # beyond first_rank only where the trace's decay says tol is near
            G, piv, resid = staged_factor(cov, XM, self.sl, max_rank, max(1, first_rank // 2),
                                          growth_plan(tol, first_rank, max_rank), tol)
            G = np.ascontiguousarray(G)
        self.rank = G.shape[1]
        self.pivots = piv
        self.resid = resid
        self.bound = float(resid.sum())
        self.X_S = np.ascontiguousarray(XM[self.pivots])
        self.sl_S = self.sl[self.pivots].copy()
        self.L_S = np.tril(G[self.pivots])
        C = G.T @ G
        C[np.diag_indices_from(C)] += 1.0
        self.L_C = np.linalg.cholesky(C)
        self._iC = inverse_triangle(self.L_C)
        # R = G L_C^-T, in the memory of G (one triangular product; O(r^3) for the inverse)
        self.R = times_lower(G, self._iC, trans=True, overwrite=True)
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(self.L_C))))

    def diag_inv(self):
        """``diag P^-1`` (the diagonal of ``B^-1`` up to the factor's error)."""
        return 1.0 - np.einsum("ij,ij->i", self.R, self.R)

    def solve(self, x):
        """``P^-1 x``."""
        return x - self.R @ (self.R.T @ x)

    def _contract(self, cov, XM, W, V):
        """``sum W o dSigma_MS - sum V o dSigma_SS`` with ``W`` (m x r,
        C-ordered, scaled in place) and ``V`` given in the weighted (``K~``)
        space; full ARD layout."""
        kern = cov.kernel(XM)
        W *= self.sl[:, None]
        W *= self.sl_S[None, :]
        V = np.ascontiguousarray(V * self.sl_S[:, None] * self.sl_S[None, :])
        g = _lk.dcov_contract(kern, self.X_S, W)
        return g - _lk.dcov_contract(cov.kernel(self.X_S), self.X_S, V)

    def dlogdet(self, cov, XM):
        """``d ln|P| / d ln theta_p`` with ``Lambda`` and the pivots fixed
        (layout of ``cov.theta``)::

            d ln|P| = 2 tr(G C^-1 L_S^-1 dK~_SM) - tr(L_S^-T (I - C^-1) L_S^-1 dK~_SS)
        """
        if self.rank == 0:
            return np.zeros(cov.theta.shape[0])
        # W = 2 G C^-1 L_S^-1 = 2 R (L_C^-1 L_S^-1): one m x r array, one triangular product
        W = times_lower(self.R, times_lower(self._iC, inverse_triangle(self.L_S)), 2.0)
        eye = np.eye(self.rank)
        Mi = eye - cho_solve((self.L_C, True), eye)
        V = _right_solve(self.L_S, solve_triangular(self.L_S, Mi, lower=True, trans="T",
                                                    check_finite=False))
        return cov._collapse(self._contract(cov, XM, W, V))

    def bilinear(self, cov, XM, A):
        """``sum_k A[:, k]^T (dP/d ln theta_p) A[:, k]`` (full ARD layout)."""
        if self.rank == 0:
            return np.zeros(XM.shape[1] + 2)
        # G^T A = L_C R^T A
        a = solve_triangular(self.L_S, self.L_C @ (self.R.T @ A), lower=True, trans="T",
                             check_finite=False)
        return self._contract(cov, XM, 2.0 * A @ a.T, a @ a.T)

    def sample(self, rng, n_probes):
        """``n_probes`` columns ``z ~ N(0, P)``: ``eps1 + G eps2`` with ``G = R L_C^T``."""
        e1 = rng.standard_normal((self.R.shape[0], n_probes))
        e2 = rng.standard_normal((self.rank, n_probes))
        return e1 + self.R @ (self.L_C.T @ e2)

    def predictor(self):
        """The O(r^2) part of the factor that prediction needs."""
        return LowRankPredictor(self.X_S, self.sl_S, self.L_S, self.L_C)

    def extended(self, cov, XM, tol, max_rank=None):
        """This factor continued to ``tr E <= tol`` (or ``max_rank``
        columns) on the same block ``XM`` at the same ``cov``: its columns
        ``G = R L_C^T`` and pivots are kept, so only the new columns are
        computed. Up to rounding in the kept columns, the factor
        :func:`pivoted_factor` would make from scratch."""
        if max_rank is not None and self.rank > max_rank:
            return LowRankFactor(cov, XM, self.sl, tol, max_rank)
        G = self.R @ self.L_C.T
        return LowRankFactor(cov, XM, self.sl, tol, max_rank, start=(G, self.pivots, self.resid))


class LowRankPredictor:
    """Latent predictive variance from the pivots of a factor::

        a = L_S^-1 (Lambda_S^1/2 k_S(x)),   sigma^2 = Cov(x, x) - ||a||^2 + ||L_C^-1 a||^2

    (``Cov(x,x) - ||a||^2`` is the Nystrom residual of ``x``; see the module
    docstring)."""

    def __init__(self, X_S, sl_S, L_S, L_C):
        self.X_S = np.ascontiguousarray(X_S, dtype=np.float64)
        self.sl_S = np.ascontiguousarray(sl_S, dtype=np.float64)
        self.L_S = np.ascontiguousarray(L_S, dtype=np.float64)
        self.L_C = np.ascontiguousarray(L_C, dtype=np.float64)

    def as_dict(self):
        """Plain arrays (HDF5-storable); :meth:`from_dict` inverts it."""
        return {"X_S": self.X_S, "sl_S": self.sl_S, "L_S": self.L_S, "L_C": self.L_C}

    @classmethod
    def from_dict(cls, d):
        return cls(d["X_S"], d["sl_S"], d["L_S"], d["L_C"])

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
            Ks *= self.sl_S[:, None]
            a = solve_lower_columns(self.L_S, Ks)
            b = solve_lower_columns(self.L_C, a)
            var[s:e] -= np.einsum("ij,ij->j", a, a) - np.einsum("ij,ij->j", b, b)
        return np.maximum(var, 0.0)


def factorize(cov, XM, sl, tol=DEFAULT_TOL, max_rank=None, first_rank=None):
    """:class:`LowRankFactor` of ``I + diag(sl) Sigma_M diag(sl)`` whose log
    determinant is within ``2 tol`` of the exact one (``tol`` nats of ``-ln
    evidence``) unless ``max_rank`` stops it first (then ``bound`` says how
    far). With ``first_rank < max_rank`` the factor goes past ``first_rank``
    columns only as far as :func:`growth_plan` predicts ``2 tol`` is reached."""
    return LowRankFactor(cov, XM, sl, 2.0 * float(tol), max_rank, first_rank)


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
    kern = cov.kernel(XM)
    rows = max(1, int(chunk_bytes // (8 * max(m, 1))))
    g = np.zeros(XM.shape[1] + 2)
    for s in range(0, m, rows):
        e = min(m, s + rows)
        S = np.ascontiguousarray(U[s:e] @ V.T)
        g += _lk.dcov_contract(cov.kernel(kern.X[s:e]), kern.X, S)
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
        Z = F.sample(np.random.default_rng(seed), n_probes)
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

    def __init__(self, cov, XM, sl, tol=DEFAULT_TOL, max_rank=None, n_probes=N_PROBES,
                 first_rank=None):
        self.cov = cov
        self.XM = np.ascontiguousarray(XM, dtype=np.float64)
        first = MAX_RANK if first_rank is None else first_rank
        self.F = factorize(cov, self.XM, sl, tol, max_rank, first_rank=first)
        self.rank = self.F.rank
        self.corr = None
        self.logdet = self.F.logdet
        self.error = self.F.bound
        self.probes = 0
        self.cg_iter = 0
        #: the factor alone meets the tolerance (no stochastic correction needed)
        self.within_tol = self.F.bound <= 2.0 * float(tol)
        if not self.within_tol and n_probes > 0:
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
                "probes": self.probes, "cg_iter": self.cg_iter,
                "cg_residual": 0.0 if self.corr is None else self.corr.rel_res}


# -- choice of method and memory budget ---------------------------------------------
#: evidence methods accepted by the Bayesian estimators
METHODS = ("auto", "dense", "matrix_free")
#: "auto" factorises the block densely up to this many cases (below it the
#: dense Cholesky is both exact and faster than a factor of nearly full rank)
AUTO_DENSE_MAX = 5000
#: ... but above this many it first tries a factor of at most
#: ``AUTO_FACTOR_RATIO m`` columns without stochastic correction (route
#: :data:`FACTOR_OR_DENSE`): a smooth kernel's block often meets the tolerance
#: at a small fraction of full rank, and the factor costs ``O(m r^2)`` against
#: the dense ``O(m^3)``; where the decay of its residual trace says the
#: tolerance is out of reach, it stops after :data:`AUTO_FACTOR_FIRST` columns
#: and the block is factorised densely (docs/design/matrix_free_evidence.md,
#: "Dense or factor from 2,000 to 5,000 cases")
AUTO_FACTOR_MIN = 2000
AUTO_FACTOR_RATIO = 0.35
AUTO_FACTOR_FIRST = 256
#: the plan's name for that route
FACTOR_OR_DENSE = "factor_or_dense"
#: smallest useful rank of a matrix-free factor
MIN_RANK = 16
#: rank of the evidence factor's first stages: building it costs O(m r^2),
#: one CG step of the correction O(m^2 (d + probes)); beyond about a thousand
#: pivots the factor costs more than the CG steps it saves ...
MAX_RANK = 1024
#: ... but not more than the whole correction, which takes about nine passes
#: over the m x m covariance (CG for the probes and for one solve, and the
#: gradient's contraction): the factor grows past MAX_RANK, when its residual
#: trace is predicted to meet the tolerance, up to ``sqrt(MAX_RANK^2 +
#: GROWTH_PER_CASE m)`` columns (:func:`growth_cap`; on 19,200 SVs of 17 inputs
#: the correction took 32 s, the factor 8 s at 1,024 columns and 27 s at 2,048)
GROWTH_PER_CASE = 250
#: the columns added beyond the last stage are those extrapolated times this
GROWTH_MARGIN = 1.2
#: largest rank of the factor kept for prediction (built once per fit): the
#: predictive variance has no stochastic correction, so it takes every pivot
#: the memory budget allows up to this many (O(m r^2) once, O(r^2) a test point)
PREDICT_MAX_RANK = 4096


class EvidenceSettings(NamedTuple):
    """The estimators' ``evidence_method``, ``evidence_tol``, ``evidence_mb``."""

    method: str = "auto"
    tol: float = DEFAULT_TOL
    budget_mb: float = 1024.0

    def plan(self, m, dense_arrays=1):
        """:func:`plan_block` for a block of ``m`` cases."""
        return plan_block(self.method, m, self.budget_mb, dense_arrays)

    def predict_rank(self, m):
        """Rank cap of the factor kept for prediction."""
        return max(1, min(m, max_rank_for(m, self.budget_mb * 2**20), PREDICT_MAX_RANK))


def growth_cap(m):
    """Largest rank of the evidence factor of ``m`` SVs (before the memory
    budget): :data:`MAX_RANK`, grown by :data:`GROWTH_PER_CASE`."""
    return int(np.sqrt(MAX_RANK ** 2 + GROWTH_PER_CASE * m))


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
    (method, max_rank) : ("dense", None), ("matrix_free", int) or (FACTOR_OR_DENSE, int)
        :data:`FACTOR_OR_DENSE` (``"auto"`` between :data:`AUTO_FACTOR_MIN`
        and :data:`AUTO_DENSE_MAX` cases): a factor of at most ``max_rank``
        columns if it meets the tolerance alone, else the dense block
        (:func:`bsvm_scale.inference.blocks.make_block`).

    Raises
    ------
    EvidenceBudgetError
        The block does not fit ``budget_mb`` with the method asked for; the
        message names the parameter that would make it fit.
    """
    budget = float(budget_mb) * 2**20
    dense_bytes = 8.0 * dense_arrays * m * m
    if method == "auto" and AUTO_FACTOR_MIN < m <= AUTO_DENSE_MAX and dense_bytes <= budget:
        return FACTOR_OR_DENSE, min(int(AUTO_FACTOR_RATIO * m), max_rank_for(m, budget))
    if method == "dense" or (method == "auto" and m <= AUTO_DENSE_MAX and dense_bytes <= budget):
        if dense_bytes > budget:
            raise EvidenceBudgetError(
                f"the dense evidence of {m} support vectors needs {dense_bytes / 2**20:.0f} MiB, "
                f"above evidence_mb={budget_mb:g}; use evidence_method='matrix_free' (or "
                f"'auto'), or raise evidence_mb to at least {np.ceil(dense_bytes / 2**20):.0f}.")
        return "dense", None
    r = min(m, max_rank_for(m, budget), growth_cap(m))
    if r < min(MIN_RANK, m):
        need = 8.0 * _ARRAYS * m * min(MIN_RANK, m) / 2**20
        raise EvidenceBudgetError(
            f"the matrix-free evidence of {m} support vectors needs at least {need:.0f} MiB "
            f"for a rank-{MIN_RANK} factor, above evidence_mb={budget_mb:g}; raise evidence_mb.")
    return "matrix_free", r
