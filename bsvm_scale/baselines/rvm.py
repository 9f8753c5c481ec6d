"""Relevance vector machines (Bishop 7.2; Tipping 2001; Tipping & Faul 2003).

Both models are linear in a fixed set of candidate basis functions: a bias
``phi_0(x) = 1`` (optional) and one Gaussian kernel per training point,

    phi_j(x) = exp(-kappa/2 * ||x - x_j||^2),

on inputs standardised with training statistics. Every weight has its own
prior precision ``alpha_i`` (the ARD prior, Bishop 7.80); maximising the
evidence drives most ``alpha_i`` to infinity, pruning their basis functions.
The survivors' centres are the *relevance vectors*.

Training uses the fast sequential marginal-likelihood algorithm of Tipping &
Faul (2003), Bishop 7.2.2: the log evidence splits as
``L(alpha) = L(alpha_{-i}) + lambda(alpha_i)`` (7.96) with

    lambda(alpha_i) = 1/2 [ln alpha_i - ln(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)]   (7.97)

in terms of the *sparsity* ``s_i`` (7.98) and *quality* ``q_i`` (7.99) of each
candidate. ``lambda`` has its maximum at ``alpha_i = s_i^2 / (q_i^2 - s_i)``
(7.101) if ``q_i^2 > s_i`` and at infinity otherwise. ``s_i, q_i`` come from
``S_i, Q_i`` (7.102)-(7.107), which involve only the active basis functions.
Each iteration evaluates the exact evidence change ``lambda(new) - lambda(old)``
of adding, re-estimating or deleting every candidate, and performs the best
action (the greedy choice of Tipping & Faul). Only the ``M x M`` posterior
covariance over the ``M`` active functions is ever factorised; no ``n x n``
matrix is inverted.

Memory and time: the products ``Phi^T v`` over all ``n + 1`` candidates are
computed from a stored ``n x (n + 1)`` design matrix when it fits in
``cache_mb`` (BLAS, ``O(n M)`` time per product), otherwise on the fly by the
Numba kernels of :mod:`bsvm_scale.inference.covariance` (``O(n^2 d)`` per product,
``O(n M)`` memory). RVR needs one such product per added basis function; RVC
needs ``M + 2`` per iteration because its weights ``B`` change.

RVC (Bishop 7.2.3) uses the logistic likelihood with a Laplace approximation:
for the current ``alpha`` the weight mode is found by Newton/IRLS (7.110,
7.111), and the problem is then a Gaussian regression with targets
``t_hat`` (7.117) and noise precision matrix ``B``, to which the same
sequential step applies; at the mode ``Q_i = phi_i^T (t - y)``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, clone
from sklearn.exceptions import ConvergenceWarning

from .._util.base import BinaryClassifierMixin, Standardizer
from .._util.threads import blas_threads
from .._util.validation import (check_classification_data, check_positive, check_positive_int,
                                check_predict_X, check_regression_data)
from ..inference.covariance import GaussianCovariance

__all__ = ["RVR", "RVC"]

_LOG_2PI = float(np.log(2.0 * np.pi))
_TINY_B = 1e-300          # GaussianCovariance needs kappa_b > 0; this adds nothing
_COLLINEAR = 1e-6     # relative residual below which a candidate counts as collinear


# ---------------------------------------------------------------------------
# candidate basis functions
# ---------------------------------------------------------------------------
class _Basis:
    """The candidate basis functions evaluated on the training inputs.

    Candidate ``0`` is the bias (when ``bias``); candidate ``j + off`` is the
    Gaussian kernel centred on training point ``j``. ``Phi`` denotes the
    ``n x n_cand`` design matrix (Bishop 7.78), stored only if it fits in
    ``cache_mb``.
    """

    def __init__(self, X, kappa, bias, cache_mb):
        self.X = X
        self.n = X.shape[0]
        self.off = 1 if bias else 0
        self.n_cand = self.n + self.off
        self.kern = GaussianCovariance(1.0, kappa, _TINY_B)
        self.kern2 = GaussianCovariance(1.0, 2.0 * kappa, _TINY_B)   # phi_j(x)^2
        self.Phi = None
        self.scale = np.ones(self.n_cand)
        if 8.0 * self.n * self.n_cand <= cache_mb * 2**20:
            Phi = np.empty((self.n, self.n_cand), order="F")   # contiguous columns
            if bias:
                Phi[:, 0] = 1.0
            for start, stop, block in self.kern.iter_cross(X, X):
                Phi[start:stop, self.off:] = block
            self.Phi = Phi
        # every candidate is scaled to unit norm on the training set (a
        # reparametrisation w_i -> w_i * scale_i, alpha_i -> alpha_i / scale_i^2
        # that leaves the evidence unchanged and conditions Sigma much better)
        scale = np.sqrt(self.weighted_sq_norms(np.ones(self.n)))
        self.scale = np.where(scale > 0, scale, 1.0)
        if self.Phi is not None:
            self.Phi /= self.scale[None, :]

    @property
    def stored(self):
        return self.Phi is not None

    def column(self, j):
        """``phi_j`` over the training inputs."""
        if self.Phi is not None:
            return self.Phi[:, j].copy()
        if j < self.off:
            return np.ones(self.n) / self.scale[j]
        return self.kern.row(self.X, j - self.off) / self.scale[j]

    def rmatvec(self, v):
        """``Phi^T v`` over all candidates."""
        if self.Phi is not None:
            return self.Phi.T @ v
        out = np.empty(self.n_cand)
        if self.off:
            out[0] = v.sum()
        out[self.off:] = self.kern.cross_matvec(self.X, self.X, np.ascontiguousarray(v))
        return out / self.scale

    def rmatmat(self, V):
        """``Phi^T V`` for an ``n x k`` matrix ``V``."""
        if self.Phi is not None:
            return self.Phi.T @ V
        return np.column_stack([self.rmatvec(V[:, k]) for k in range(V.shape[1])])

    def products(self, V, w):
        """``(Phi^T V, weighted_sq_norms(w))``."""
        if self.Phi is None:
            return self.rmatmat(V), self.weighted_sq_norms(w)
        return self.Phi.T @ V, self.weighted_sq_norms(w)

    def weighted_sq_norms(self, w):
        """``sum_n w_n phi_i(x_n)^2`` for every candidate ``i``."""
        if self.Phi is not None:
            return np.einsum("ni,ni,n->i", self.Phi, self.Phi, w, optimize=False)
        out = np.empty(self.n_cand)
        if self.off:
            out[0] = w.sum()
        out[self.off:] = self.kern2.cross_matvec(self.X, self.X, np.ascontiguousarray(w))
        return out / self.scale**2


def _design(Xq, centres, has_bias, kappa):
    """Design matrix of query points against the active basis
    (bias column first when present)."""
    cols = []
    if has_bias:
        cols.append(np.ones((Xq.shape[0], 1)))
    if centres.shape[0]:
        cols.append(GaussianCovariance(1.0, kappa, _TINY_B).cross(Xq, centres))
    return np.hstack(cols) if cols else np.zeros((Xq.shape[0], 0))


def _lam(alpha, s, q):
    """``lambda(alpha)`` of Bishop 7.97 (0 at alpha = inf)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return 0.5 * (np.log(alpha) - np.log(alpha + s) + q * q / (alpha + s))


def _sequential_step(S, Q, active_mask, alpha_full, can_delete, S_ref):
    """Evidence change of every candidate's best action (Tipping & Faul 2003).

    Parameters
    ----------
    S, Q : ndarray of shape (n_cand,)
        ``S_i = phi_i^T C^{-1} phi_i`` (7.103) and ``Q_i = phi_i^T C^{-1} t`` (7.102).
    active_mask : bool ndarray
    alpha_full : ndarray, ``inf`` for inactive candidates.
    can_delete : bool
        False when only one basis function is left.
    S_ref : ndarray
        ``S_i`` with no active basis function; an inactive candidate whose
        ``S_i`` is below ``_COLLINEAR * S_ref_i`` is numerically in the span of the
        active set and is not added.

    Returns
    -------
    dL : ndarray
        Exact change of the log evidence of the best action per candidate
        (``-inf`` when no action applies).
    alpha_new : ndarray
        The new ``alpha`` (``inf`` means delete / stay out).
    """
    collinear = ~active_mask & ~(S > _COLLINEAR * S_ref)
    S = np.maximum(S, 1e-300)
    alpha_a = np.where(active_mask, alpha_full, 1.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        denom = np.where(active_mask, alpha_a - S, 1.0)
        s = np.where(active_mask, alpha_a * S / denom, S)         # (7.105)
        q = np.where(active_mask, alpha_a * Q / denom, Q)         # (7.104)
        theta = q * q - s
    relevant = (theta > 0) & np.isfinite(theta) & (s > 0) & ~collinear
    alpha_new = np.full(S.shape, np.inf)
    alpha_new[relevant] = s[relevant] ** 2 / theta[relevant]  # (7.101)
    dL = np.full(S.shape, -np.inf)
    lam_old = np.zeros(S.shape)
    lam_old[active_mask] = _lam(alpha_a[active_mask], s[active_mask], q[active_mask])
    add = relevant & ~active_mask
    dL[add] = _lam(alpha_new[add], s[add], q[add])
    re = relevant & active_mask
    dL[re] = _lam(alpha_new[re], s[re], q[re]) - lam_old[re]
    if can_delete:
        dele = ~relevant & active_mask
        dL[dele] = -lam_old[dele]
    dL[~np.isfinite(dL)] = -np.inf
    return dL, alpha_new


def _converged(dL, alpha_new, active_mask, alpha_full, tol, tol_evidence):
    """Tipping & Faul's criterion: no addition or deletion is warranted and
    every re-estimation changes ``ln alpha`` by less than ``tol``; or no
    single action would raise the log evidence by ``tol_evidence`` or more
    (stops the slow creep of re-estimations among strongly correlated basis
    functions)."""
    if not np.any(dL >= tol_evidence):
        return True
    add = np.isfinite(alpha_new) & ~active_mask & (dL > 0)
    dele = ~np.isfinite(alpha_new) & active_mask & np.isfinite(dL) & (dL > 0)
    if np.any(add) or np.any(dele):
        return False
    act = active_mask & np.isfinite(alpha_new)
    if not np.any(act):
        return True
    with np.errstate(divide="ignore", invalid="ignore"):
        change = np.abs(np.log(alpha_new[act]) - np.log(alpha_full[act]))
    return bool(np.all(change < tol))


def _choose_first(PhiT_t, sq_norms):
    """Start with the candidate most aligned with the targets."""
    score = PhiT_t ** 2 / np.maximum(sq_norms, 1e-300)
    return int(np.argmax(score))


def _spd_inverse(H, model):
    """Inverse and log-determinant of a small symmetric positive-definite matrix.

    NumPy's LAPACK is used on purpose: mixing tiny SciPy LAPACK calls with
    NumPy BLAS calls makes the two OpenBLAS thread pools contend, which costs
    milliseconds per call. A vanishing jitter is added only if the Cholesky
    factorisation fails.
    """
    H = 0.5 * (H + H.T)
    m = H.shape[0]
    jitter = 0.0
    for _ in range(8):
        try:
            L = np.linalg.cholesky(H + jitter * np.eye(m) if jitter else H)
            break
        except np.linalg.LinAlgError:
            jitter = max(jitter * 10.0, 1e-10 * np.trace(H) / m)
    else:
        raise np.linalg.LinAlgError(f"{model}: posterior precision is not positive definite.")
    Linv = np.linalg.inv(L)
    return Linv.T @ Linv, 2.0 * float(np.sum(np.log(np.diag(L))))


class _RVMBase(BaseEstimator):
    """Parameters and prediction helpers shared by RVR and RVC."""

    def _fit_best_kappa(self, X, y):
        """Fit at ``kappa`` or, with ``kappa_grid``, at every candidate width,
        keeping the fit with the highest log evidence (7.85 / 7.114).

        The kernel width is a hyperparameter of the prior like ``alpha``; its
        evidence over a grid chooses it without cross-validation.
        """
        if self.kappa_grid is None:
            self._fit(X, y)
            self.kappa_grid_log_evidence_ = np.empty(0)
            return self
        grid = np.asarray(self.kappa_grid, dtype=float)
        if grid.ndim != 1 or grid.size == 0 or not np.all(np.isfinite(grid) & (grid > 0)):
            raise ValueError(f"kappa_grid must be a non-empty 1-D sequence of positive "
                             f"widths; got {self.kappa_grid!r}.")
        best, evidence = None, np.empty(grid.size)
        for i, k in enumerate(grid):
            m = clone(self).set_params(kappa=float(k), kappa_grid=None)._fit(X, y)
            evidence[i] = m.log_marginal_likelihood_
            if np.isfinite(evidence[i]) and (best is None
                                             or evidence[i] > best.log_marginal_likelihood_):
                best = m
        if best is None:
            raise FloatingPointError(f"no width of kappa_grid={list(grid)} gave a finite log "
                                     "evidence; check the data for constant or extreme values.")
        params = self.get_params()
        for name, value in vars(best).items():
            if name not in params:
                setattr(self, name, value)
        self.kappa_grid_log_evidence_ = evidence
        return self

    def _validate_params(self, d):
        kappa = 1.0 / d if self.kappa is None else check_positive("kappa", self.kappa)
        if np.ndim(kappa) != 0:
            raise ValueError("kappa must be a positive scalar.")
        check_positive("cache_mb", self.cache_mb)
        check_positive("tol", self.tol)
        check_positive("tol_evidence", self.tol_evidence)
        check_positive_int("max_iter", self.max_iter)
        return float(kappa)

    def _store_basis(self, active, basis, alpha, mean, Sigma):
        """Order the active set as [bias, relevance vectors by index] and store."""
        off = basis.off
        order = np.argsort(active, kind="stable")
        active = np.asarray(active)[order]
        sc = basis.scale[active]            # undo the unit-norm scaling of the basis
        self.alpha_ = np.asarray(alpha)[order] * sc**2
        self.mean_ = np.asarray(mean)[order] / sc
        self.covariance_ = np.asarray(Sigma)[np.ix_(order, order)] / np.outer(sc, sc)
        self.basis_index_ = active - off                  # -1 for the bias
        has_bias = bool(off and active.size and active[0] == 0)
        self.has_bias_ = has_bias
        rv = self.basis_index_[self.basis_index_ >= 0]
        self.relevance_vectors_ = rv
        self.X_relevance_ = self._Xs[rv]
        self.intercept_ = float(self.mean_[0]) if has_bias else 0.0
        self.coef_ = self.mean_[1:] if has_bias else self.mean_.copy()
        self.n_relevance_vectors_ = int(rv.shape[0])

    def _latent(self, X, return_std):
        X = check_predict_X(self, X, "mean_")
        Xs = np.ascontiguousarray((X - self.x_mean_) / self.x_scale_)
        P = _design(Xs, self.X_relevance_, self.has_bias_, self.kappa_)
        mean = P @ self.mean_
        if not return_std:
            return mean, None
        var = np.einsum("ij,jk,ik->i", P, self.covariance_, P)
        return mean, np.maximum(var, 0.0)


# ---------------------------------------------------------------------------
# RVR
# ---------------------------------------------------------------------------
class RVR(RegressorMixin, _RVMBase):
    """Relevance vector regression (Bishop 7.2.1) trained by the fast
    sequential algorithm (Bishop 7.2.2; Tipping & Faul 2003).

    Model ``t = sum_i w_i phi_i(x) + e`` with ``e ~ N(0, 1/beta)`` (7.76-7.78),
    prior ``w_i ~ N(0, 1/alpha_i)`` (7.80). ``alpha`` and ``beta`` maximise
    the evidence (7.85).

    Parameters
    ----------
    kappa : float, optional
        Width of the Gaussian basis functions ``exp(-kappa/2 ||x - x_n||^2)``
        on standardised inputs; default ``1 / d``. Not optimised (see
        ``kappa_grid``).
    kappa_grid : sequence of float, optional
        Candidate widths: the model is fitted at each and the one with the
        highest log evidence is kept (``kappa`` is then ignored); the
        evidences are in ``kappa_grid_log_evidence_``. This chooses the width
        by the evidence, as ``alpha`` and ``beta`` are, instead of by
        cross-validation.
    bias : bool, default=True
        Include the constant basis function.
    beta : float, optional
        Initial noise precision; default ``1 / (0.01 var(t))`` (noise standard
        deviation 10% of the target's).
    update_beta : bool, default=True
        Re-estimate ``beta`` by (7.88); otherwise it stays at its initial value.
    beta_every : int, default=0
        ``beta`` is re-estimated whenever the ``alpha`` updates have converged
        for the current ``beta`` (and, if ``beta_every > 0``, also every
        ``beta_every`` steps); the fit ends when ``alpha`` has converged and
        ``beta`` no longer moves. Frequent early re-estimation tends to
        collapse onto an all-noise local optimum when the first few basis
        functions explain little.
    max_iter : int, default=2000
        Limit of sequential steps (ConvergenceWarning when reached).
    tol : float, default=1e-6
        Convergence when no candidate should be added or deleted and every
        ``ln alpha_i`` (and ``ln beta``) changes by less than ``tol`` ...
    tol_evidence : float, default=1e-4
        ... or when no single add/re-estimate/delete step would raise the log
        evidence by ``tol_evidence`` nats or more.
    cache_mb : float, default=1024
        Memory budget for storing the full ``n x (n + 1)`` design matrix;
        larger problems compute ``Phi^T v`` on the fly in ``O(n^2 d)``.

    Attributes
    ----------
    relevance_vectors_ : ndarray of int
        Indices (into the training set) of the relevance vectors.
    X_relevance_ : ndarray of shape (M_rv, d)
        Standardised relevance vectors.
    basis_index_ : ndarray of int
        Active basis functions in storage order: -1 for the bias, else the
        training index of the kernel centre.
    alpha_ : ndarray
        Prior precisions of the active basis functions (order of ``basis_index_``).
    mean_, covariance_ : ndarray
        Posterior mean (7.82) and covariance (7.83) of the active weights.
    coef_, intercept_ : ndarray, float
        ``mean_`` split into the relevance-vector weights and the bias weight.
    beta_ : float
        Noise precision; ``noise_variance_ = 1 / beta_``.
    log_marginal_likelihood_ : float
        Log evidence (7.85) at the final ``alpha_``, ``beta_``.
    n_iter_ : int
    kappa_ : float
        The width used (the evidence's choice with ``kappa_grid``).
    kappa_grid_log_evidence_ : ndarray
        Log evidence at each ``kappa_grid`` width (empty without a grid).
    x_mean_, x_scale_, n_features_in_
    """

    def __init__(self, *, kappa=None, kappa_grid=None, bias=True, beta=None, update_beta=True,
                 beta_every=0, max_iter=2000, tol=1e-6, tol_evidence=1e-4, cache_mb=1024.0):
        self.kappa = kappa
        self.kappa_grid = kappa_grid
        self.bias = bias
        self.beta = beta
        self.update_beta = update_beta
        self.beta_every = beta_every
        self.max_iter = max_iter
        self.tol = tol
        self.tol_evidence = tol_evidence
        self.cache_mb = cache_mb

    def fit(self, X, y):
        """Run the sequential sparse Bayesian learning algorithm.

        BLAS is limited to one thread during the fit: the sequential steps are
        many small or memory-bound products for which thread start-up costs
        more than it saves.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        with blas_threads(True):
            return self._fit_best_kappa(X, y)

    def _fit(self, X, y):
        X, t = check_regression_data(self, X, y)
        n, d = X.shape
        kappa = self._validate_params(d)
        std = Standardizer.fit(X)
        Xs = std.transform(X)
        basis = _Basis(Xs, kappa, bool(self.bias), float(self.cache_mb))

        var_t = float(np.var(t))
        if self.beta is None:
            beta = 1.0 / max(0.01 * var_t, 1e-12)
        else:
            beta = check_positive("beta", self.beta)
        sq = basis.weighted_sq_norms(np.ones(n))              # phi_i^T phi_i
        PhiT_t = basis.rmatvec(t)                             # phi_i^T t
        tt = float(t @ t)

        j0 = _choose_first(PhiT_t, sq)
        gain = PhiT_t[j0] ** 2 / sq[j0] - 1.0 / beta
        a0 = sq[j0] / gain if gain > 0 else sq[j0] / max(PhiT_t[j0] ** 2 / sq[j0], 1e-12)
        active = [j0]
        alpha = [float(a0)]
        cols = [basis.column(j0)]
        gcols = [basis.rmatvec(cols[0])]                      # Phi^T phi_j

        alpha_full = np.full(basis.n_cand, np.inf)
        active_mask = np.zeros(basis.n_cand, dtype=bool)
        converged = False
        beta_due = False
        beta_moved = True
        it = 0
        for it in range(1, int(self.max_iter) + 1):
            G = np.column_stack(gcols)                         # n_cand x M
            Pm = np.column_stack(cols)
            a = np.asarray(alpha)
            Sigma, mean, _ = self._posterior(G[active], a, beta, PhiT_t[active])
            if beta_due:
                # (7.88), then the posterior at the new beta
                resid = t - Pm @ mean
                gamma = 1.0 - a * np.diag(Sigma)
                beta_new = max(n - gamma.sum(), 1e-6) / max(float(resid @ resid), 1e-300)
                beta_new = float(np.clip(beta_new, 1e-12, 1e12))
                beta_moved = abs(np.log(beta_new) - np.log(beta)) >= self.tol
                beta = beta_new
                Sigma, mean, _ = self._posterior(G[active], a, beta, PhiT_t[active])
                beta_due = False
            # S_i, Q_i (7.106), (7.107) for every candidate
            GS = G @ Sigma
            S = beta * sq - beta ** 2 * np.einsum("ij,ij->i", GS, G)
            Q = beta * PhiT_t - beta * (G @ mean)
            alpha_full[:] = np.inf
            alpha_full[active] = a
            active_mask[:] = False
            active_mask[active] = True
            dL, alpha_new = _sequential_step(S, Q, active_mask, alpha_full, len(active) > 1,
                                             beta * sq)
            if _converged(dL, alpha_new, active_mask, alpha_full, self.tol,
                          float(self.tol_evidence)):
                # alpha is optimal for this beta: re-estimate beta, stop when it stays put
                if not self.update_beta or not beta_moved:
                    converged = True
                    break
                beta_due = True
                continue
            if self.update_beta and self.beta_every and it % int(self.beta_every) == 0:
                beta_due = True
            j = int(np.argmax(dL))
            if not np.isfinite(dL[j]):
                converged = True
                break
            if active_mask[j]:
                k = active.index(j)
                if np.isfinite(alpha_new[j]):
                    alpha[k] = float(alpha_new[j])
                else:
                    del active[k], alpha[k], cols[k], gcols[k]
            else:
                active.append(j)
                alpha.append(float(alpha_new[j]))
                col = basis.column(j)
                cols.append(col)
                gcols.append(basis.rmatvec(col))
        if not converged:
            hint = ("" if self.beta_every or not self.update_beta else
                    " beta is only re-estimated once alpha has converged: when the noise "
                    "precision starts far from its optimum (default 1 / (0.01 var(t))) the "
                    "algorithm keeps adding basis functions; set beta_every=10 to "
                    "re-estimate it every 10 steps.")
            warnings.warn(f"RVR: the sequential algorithm did not converge in max_iter="
                          f"{self.max_iter} steps.{hint}", ConvergenceWarning, stacklevel=2)

        G = np.column_stack(gcols)
        a = np.asarray(alpha)
        Sigma, mean, logdet_H = self._posterior(G[active], a, beta, PhiT_t[active])
        Pm = np.column_stack(cols)
        resid = t - Pm @ mean
        # (7.85) via |C| = beta^-n |A|^-1 |A + beta Phi^T Phi| and
        # t^T C^-1 t = beta ||t - Phi m||^2 + m^T A m
        lml = -0.5 * (n * _LOG_2PI - n * np.log(beta) - np.sum(np.log(a)) + logdet_H
                      + beta * float(resid @ resid) + float(mean @ (a * mean)))

        self._Xs = Xs
        self._store_basis(active, basis, a, mean, Sigma)
        del self._Xs
        self.beta_ = float(beta)
        self.noise_variance_ = 1.0 / float(beta)
        self.log_marginal_likelihood_ = float(lml)
        self.n_iter_ = int(it)
        self.converged_ = bool(converged)
        self.kappa_ = kappa
        self.design_stored_ = basis.stored
        self.x_mean_, self.x_scale_ = std.mean, std.scale
        self.n_features_in_ = d
        return self

    @staticmethod
    def _posterior(PhiTPhi, alpha, beta, PhiT_t):
        """``Sigma = (A + beta Phi^T Phi)^-1`` (7.83), ``m = beta Sigma Phi^T t``
        (7.82) and ``ln|A + beta Phi^T Phi|`` over the active set."""
        H = beta * PhiTPhi + np.diag(alpha)
        Sigma, logdet = _spd_inverse(H, "RVR")
        mean = beta * (Sigma @ PhiT_t)
        return Sigma, mean, logdet

    def predict(self, X, return_std=False, include_noise=False):
        """Predictive mean ``m^T phi(x)`` (7.90) and optionally standard deviation.

        Parameters
        ----------
        X : array-like of shape (m, d)
        return_std : bool, default=False
        include_noise : bool, default=False
            If True the standard deviation of ``t`` (7.91, adds ``1/beta_``),
            otherwise of ``y(x)`` (``phi^T Sigma phi`` only).
        """
        mean, var = self._latent(X, return_std)
        if not return_std:
            return mean
        if include_noise:
            var = var + self.noise_variance_
        return mean, np.sqrt(var)


# ---------------------------------------------------------------------------
# RVC
# ---------------------------------------------------------------------------
class RVC(BinaryClassifierMixin, ClassifierMixin, _RVMBase):
    """Binary relevance vector classification (Bishop 7.2.3) trained by the
    fast sequential algorithm with a Laplace/IRLS inner loop.

    ``p(t = 1 | x) = sigma(w^T phi(x))`` (7.108), ARD prior (7.80). For fixed
    ``alpha`` the weight mode ``w*`` (7.112) is found by Newton/IRLS on
    (7.109)-(7.111); the Laplace approximation (7.113)-(7.114) turns the
    problem into a Gaussian one with targets ``t_hat`` (7.117) and noise
    precision ``B``, on which one sequential step is made.

    Parameters
    ----------
    kappa, bias, max_iter, tol, tol_evidence, cache_mb
        As for :class:`RVR`.
    max_irls_iter : int, default=50
        Limit of Newton steps of the inner loop.
    moderated : bool, default=True
        ``predict_proba`` integrates the weight uncertainty with the probit
        approximation ``sigma(mu / sqrt(1 + pi s^2 / 8))`` (Bishop 4.153-4.155);
        otherwise ``sigma(mu)`` at the mode (Tipping 2001).

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    relevance_vectors_, X_relevance_, basis_index_, alpha_, coef_, intercept_, n_iter_,
    kappa_, kappa_grid_log_evidence_
        As for :class:`RVR` (``kappa`` and ``kappa_grid`` too).
    mean_ : ndarray
        Posterior mode ``w*`` (7.112) of the active weights.
    covariance_ : ndarray
        Laplace covariance (7.113).
    log_marginal_likelihood_ : float
        Laplace approximation of the log evidence (7.114).
    """

    def __init__(self, *, kappa=None, kappa_grid=None, bias=True, max_iter=2000, tol=1e-6,
                 tol_evidence=1e-4, max_irls_iter=50, moderated=True, cache_mb=1024.0):
        self.kappa = kappa
        self.kappa_grid = kappa_grid
        self.bias = bias
        self.max_iter = max_iter
        self.tol = tol
        self.tol_evidence = tol_evidence
        self.max_irls_iter = max_irls_iter
        self.moderated = moderated
        self.cache_mb = cache_mb

    def _irls(self, Pm, alpha, t, w):
        """Mode of (7.109) by Newton's method with step halving.

        Returns ``w, y, Sigma, logdet_H, loglik``.
        """
        def objective(w_):
            a_ = Pm @ w_
            ll = float(np.sum(t * a_ + log_expit(-a_)))
            return ll - 0.5 * float(w_ @ (alpha * w_)), ll

        obj, ll = objective(w)
        for _ in range(int(self.max_irls_iter)):
            y = expit(Pm @ w)
            b = y * (1.0 - y)
            g = Pm.T @ (t - y) - alpha * w                   # (7.110)
            H = Pm.T @ (b[:, None] * Pm) + np.diag(alpha)    # -(7.111)
            dw = np.linalg.solve(H, g)
            step = 1.0
            while True:
                w_try = w + step * dw
                obj_try, ll_try = objective(w_try)
                if obj_try >= obj - 1e-12 * abs(obj) or step < 1e-8:
                    break
                step *= 0.5
            w, obj, ll = w_try, obj_try, ll_try
            if np.max(np.abs(step * dw)) < 1e-10 * (1.0 + np.max(np.abs(w))):
                break
        y = expit(Pm @ w)
        b = y * (1.0 - y)
        H = Pm.T @ (b[:, None] * Pm) + np.diag(alpha)
        Sigma, logdet = _spd_inverse(H, "RVC")
        return w, y, Sigma, logdet, ll

    def fit(self, X, y):
        """Run the sequential algorithm with a Laplace inner loop (BLAS limited
        to one thread, as for :meth:`RVR.fit`).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two distinct labels

        Returns
        -------
        self
        """
        with blas_threads(True):
            return self._fit_best_kappa(X, y)

    def _fit(self, X, y):
        X, y, classes, codes = check_classification_data(self, X, y, binary_only=True)
        n, d = X.shape
        kappa = self._validate_params(d)
        t = (codes == 1).astype(np.float64)
        std = Standardizer.fit(X)
        Xs = std.transform(X)
        basis = _Basis(Xs, kappa, bool(self.bias), float(self.cache_mb))

        # start from the candidate best aligned with the centred targets
        tc = t - t.mean()
        j0 = 0 if self.bias else _choose_first(basis.rmatvec(tc),
                                               basis.weighted_sq_norms(np.ones(n)))
        active = [j0]
        alpha = [1.0]
        cols = [basis.column(j0)]
        w = np.zeros(1)

        alpha_full = np.full(basis.n_cand, np.inf)
        active_mask = np.zeros(basis.n_cand, dtype=bool)
        converged = False
        it = 0
        for it in range(1, int(self.max_iter) + 1):
            Pm = np.column_stack(cols)
            a = np.asarray(alpha)
            w, yhat, Sigma, _, _ = self._irls(Pm, a, t, w)
            b = yhat * (1.0 - yhat)
            # Phi^T [B Phi_M, t - y] and phi_i^T B phi_i in one pass over Phi
            GQ, wsq = basis.products(np.column_stack((b[:, None] * Pm, t - yhat)), b)
            G, Q = GQ[:, :-1], GQ[:, -1]
            S = wsq - np.einsum("ij,ij->i", G @ Sigma, G)   # (7.103) with noise precision B
            alpha_full[:] = np.inf
            alpha_full[active] = a
            active_mask[:] = False
            active_mask[active] = True
            dL, alpha_new = _sequential_step(S, Q, active_mask, alpha_full, len(active) > 1,
                                             wsq)
            if _converged(dL, alpha_new, active_mask, alpha_full, self.tol,
                          float(self.tol_evidence)):
                converged = True
                break
            j = int(np.argmax(dL))
            if not np.isfinite(dL[j]):
                converged = True
                break
            if active_mask[j]:
                k = active.index(j)
                if np.isfinite(alpha_new[j]):
                    alpha[k] = float(alpha_new[j])
                else:
                    del active[k], alpha[k], cols[k]
                    w = np.delete(w, k)
            else:
                active.append(j)
                alpha.append(float(alpha_new[j]))
                cols.append(basis.column(j))
                w = np.append(w, 0.0)
        if not converged:
            warnings.warn(f"RVC: the sequential algorithm did not converge in max_iter="
                          f"{self.max_iter} steps.", ConvergenceWarning, stacklevel=2)

        Pm = np.column_stack(cols)
        a = np.asarray(alpha)
        w, yhat, Sigma, logdet_H, ll = self._irls(Pm, a, t, w)
        # (7.114): ln p(t|w*) + ln p(w*|alpha) + M/2 ln 2pi + 1/2 ln|Sigma|
        lml = ll - 0.5 * float(w @ (a * w)) + 0.5 * float(np.sum(np.log(a))) - 0.5 * logdet_H

        self.classes_ = classes
        self._Xs = Xs
        self._store_basis(active, basis, a, w, Sigma)
        del self._Xs
        self.log_marginal_likelihood_ = float(lml)
        self.n_iter_ = int(it)
        self.converged_ = bool(converged)
        self.kappa_ = kappa
        self.design_stored_ = basis.stored
        self.x_mean_, self.x_scale_ = std.mean, std.scale
        self.n_features_in_ = d
        return self

    def decision_function(self, X, return_std=False):
        """Mean ``w*^T phi(x)`` of the latent activation and optionally its
        standard deviation ``sqrt(phi^T Sigma phi)``. Positive favours ``classes_[1]``."""
        mean, var = self._latent(X, return_std)
        return (mean, np.sqrt(var)) if return_std else mean

    def predict_proba(self, X):
        """``[p(classes_[0] | x), p(classes_[1] | x)]``."""
        mean, var = self._latent(X, bool(self.moderated))
        if self.moderated:
            mean = mean / np.sqrt(1.0 + np.pi * var / 8.0)
        p1 = expit(mean)
        return np.column_stack((1.0 - p1, p1))
