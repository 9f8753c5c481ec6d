"""What the relevance vector machines share (Bishop 7.2; Tipping 2001; Tipping &
Faul 2003): the candidate basis, the sequential step, parameters and prediction.

RVR is in :mod:`bsvm_scale.baselines.rvm`, RVC in :mod:`bsvm_scale.baselines.rvc`.

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

import numpy as np
from sklearn.base import BaseEstimator, clone

from .._util.base import standardizer_for
from .._util.threads import blas_threads
from .._util.validation import POSITIVE, POSITIVE_INT, check_predict_X
from ..inference.covariance import GaussianCovariance

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


class _ActiveSet:
    """The active basis functions of the sequential algorithm.

    Parameters
    ----------
    basis : _Basis
        The candidates.
    j0 : int
        The first active candidate.
    alpha0 : float
        Its prior precision.
    gram : bool
        Also keep ``Phi^T phi_j`` of every active ``j`` (RVR's ``S_i, Q_i``).

    Attributes
    ----------
    index, alpha, cols : list
        Active candidates, their ``alpha`` and their columns ``phi_j``.
    gram : list or None
        ``Phi^T phi_j`` per active candidate.
    """

    def __init__(self, basis, j0, alpha0, gram):
        self.basis = basis
        self.index = [j0]
        self.alpha = [float(alpha0)]
        self.cols = [basis.column(j0)]
        self.gram = [basis.rmatvec(self.cols[0])] if gram else None
        self.alpha_full = np.full(basis.n_cand, np.inf)
        self.mask = np.zeros(basis.n_cand, dtype=bool)

    def step(self, S, Q, S_ref, tol, tol_evidence):
        """:func:`_sequential_step` and :func:`_converged` at ``S, Q``.

        Returns
        -------
        dL, alpha_new : ndarray
            Evidence change and new ``alpha`` of every candidate's best action.
        converged : bool
        """
        self.alpha_full[:] = np.inf
        self.alpha_full[self.index] = np.asarray(self.alpha)
        self.mask[:] = False
        self.mask[self.index] = True
        dL, alpha_new = _sequential_step(S, Q, self.mask, self.alpha_full, len(self.index) > 1,
                                         S_ref)
        return dL, alpha_new, _converged(dL, alpha_new, self.mask, self.alpha_full, tol,
                                         tol_evidence)

    def apply(self, dL, alpha_new):
        """Perform the action with the largest evidence change.

        Returns
        -------
        (str, int) or None
            ``("add", -1)``, ``("update", k)`` or ``("delete", k)`` with the
            position ``k`` in the active lists; None when no action has a
            finite evidence change.
        """
        j = int(np.argmax(dL))
        if not np.isfinite(dL[j]):
            return None
        if not self.mask[j]:
            self.index.append(j)
            self.alpha.append(float(alpha_new[j]))
            self.cols.append(self.basis.column(j))
            if self.gram is not None:
                self.gram.append(self.basis.rmatvec(self.cols[-1]))
            return "add", -1
        k = self.index.index(j)
        if np.isfinite(alpha_new[j]):
            self.alpha[k] = float(alpha_new[j])
            return "update", k
        del self.index[k], self.alpha[k], self.cols[k]
        if self.gram is not None:
            del self.gram[k]
        return "delete", k


class _RVMBase(BaseEstimator):
    """Parameters, fitting frame and prediction helpers shared by RVR and RVC."""

    _parameter_constraints = {"kappa": [POSITIVE, None], "kappa_grid": ["array-like", None],
                              "bias": ["boolean"], "max_iter": [POSITIVE_INT],
                              "tol": [POSITIVE], "tol_evidence": [POSITIVE],
                              "cache_mb": [POSITIVE]}

    def fit(self, X, y):
        """Validate the parameters and run the sequential algorithm (at every
        ``kappa_grid`` width, keeping the highest evidence).

        BLAS is limited to one thread during the fit: the sequential steps are
        many small or memory-bound products for which thread start-up costs
        more than it saves.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Targets (RVR) or two distinct labels (RVC).

        Returns
        -------
        self
        """
        self._validate_params()
        with blas_threads(True):
            return self._fit_best_kappa(X, y)

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

    def _kappa(self, d):
        """The kernel width: ``kappa``, default ``1 / d``."""
        return 1.0 / d if self.kappa is None else float(self.kappa)

    def _basis(self, X, kappa):
        """Input standardisation and the candidate basis on the standardised inputs."""
        std = standardizer_for(self, X)
        return std, _Basis(std.transform(X), kappa, bool(self.bias), float(self.cache_mb))

    def _set_fitted(self, std, act, posterior, fit_info):
        """Fitted attributes: the active basis with its posterior
        ``(alpha, mean, covariance)``, and ``fit_info`` = ``(log evidence,
        steps, converged, kappa)``."""
        lml, it, converged, kappa = fit_info
        self._store_basis(act.index, act.basis, *posterior)
        self.log_marginal_likelihood_ = float(lml)
        self.n_iter_ = int(it)
        self.converged_ = bool(converged)
        self.kappa_ = kappa
        self.design_stored_ = act.basis.stored
        self.x_mean_, self.x_scale_ = std.mean, std.scale

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
        self.X_relevance_ = basis.X[rv]
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
