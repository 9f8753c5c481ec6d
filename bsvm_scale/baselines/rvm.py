"""Relevance vector regression (Bishop 7.2.1; Tipping 2001; Tipping & Faul 2003).

The model, the candidate basis and the fast sequential marginal-likelihood
algorithm are described in :mod:`bsvm_scale.baselines._rvm_common`; the
classifier RVC is in :mod:`bsvm_scale.baselines.rvc` (importable from here as
well).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.base import RegressorMixin
from sklearn.exceptions import ConvergenceWarning

from .._util.validation import NON_NEGATIVE_INT, POSITIVE, check_regression_data, store_params
from ._rvm_common import _LOG_2PI, _ActiveSet, _choose_first, _RVMBase, _spd_inverse
from .rvc import RVC

__all__ = ["RVR", "RVC"]


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

    _parameter_constraints = {**_RVMBase._parameter_constraints, "beta": [POSITIVE, None],
                              "update_beta": ["boolean"], "beta_every": [NON_NEGATIVE_INT]}

    def __init__(self, *, kappa=None, kappa_grid=None, bias=True, beta=None, update_beta=True,
                 beta_every=0, max_iter=2000, tol=1e-6, tol_evidence=1e-4, cache_mb=1024.0):
        store_params(self, locals())

    def _fit(self, X, y):
        """One fit at the width ``kappa`` (the parameters are validated)."""
        X, t = check_regression_data(self, X, y)
        kappa = self._kappa(X.shape[1])
        std, basis = self._basis(X, kappa)
        if self.beta is None:  # noise standard deviation 10% of the target's
            beta = 1.0 / max(0.01 * float(np.var(t)), 1e-12)
        else:
            beta = float(self.beta)
        sq = basis.weighted_sq_norms(np.ones(t.shape[0]))    # phi_i^T phi_i
        PhiT_t = basis.rmatvec(t)                             # phi_i^T t
        j0 = _choose_first(PhiT_t, sq)
        gain = PhiT_t[j0] ** 2 / sq[j0] - 1.0 / beta
        a0 = sq[j0] / gain if gain > 0 else sq[j0] / max(PhiT_t[j0] ** 2 / sq[j0], 1e-12)
        act = _ActiveSet(basis, j0, a0, gram=True)
        beta, it, converged = self._iterate(act, t, sq, PhiT_t, beta)
        if not converged:
            self._warn_not_converged()
        a = np.asarray(act.alpha)
        Sigma, mean, logdet_H = self._posterior(np.column_stack(act.gram)[act.index], a, beta,
                                                PhiT_t[act.index])
        resid = t - np.column_stack(act.cols) @ mean
        n = t.shape[0]
        # (7.85) via |C| = beta^-n |A|^-1 |A + beta Phi^T Phi| and
        # t^T C^-1 t = beta ||t - Phi m||^2 + m^T A m
        lml = -0.5 * (n * _LOG_2PI - n * np.log(beta) - np.sum(np.log(a)) + logdet_H
                      + beta * float(resid @ resid) + float(mean @ (a * mean)))
        self._set_fitted(std, act, (a, mean, Sigma), (lml, it, converged, kappa))
        self.beta_ = float(beta)
        self.noise_variance_ = 1.0 / float(beta)
        return self

    def _iterate(self, act, t, sq, PhiT_t, beta):
        """Sequential steps from ``act`` until convergence or ``max_iter``.

        ``alpha`` is updated one candidate a step; ``beta`` by (7.88)
        whenever ``alpha`` has converged for it (and every ``beta_every``
        steps); the fit ends when ``alpha`` has converged and ``beta`` no
        longer moves by ``tol`` in log units.

        Returns
        -------
        beta : float
        n_iter : int
        converged : bool
        """
        beta_due, beta_moved, it = False, True, 0
        for it in range(1, int(self.max_iter) + 1):
            G = np.column_stack(act.gram)                      # n_cand x M
            a = np.asarray(act.alpha)
            Sigma, mean, _ = self._posterior(G[act.index], a, beta, PhiT_t[act.index])
            if beta_due:  # (7.88), then the posterior at the new beta
                beta, beta_moved = self._new_beta(act, a, Sigma, mean, t, beta)
                Sigma, mean, _ = self._posterior(G[act.index], a, beta, PhiT_t[act.index])
                beta_due = False
            # S_i, Q_i (7.106), (7.107) for every candidate
            GS = G @ Sigma
            S = beta * sq - beta ** 2 * np.einsum("ij,ij->i", GS, G)
            Q = beta * PhiT_t - beta * (G @ mean)
            dL, alpha_new, done = act.step(S, Q, beta * sq, self.tol, float(self.tol_evidence))
            if done:  # alpha is optimal for this beta: re-estimate beta, stop when it stays put
                if not self.update_beta or not beta_moved:
                    return beta, it, True
                beta_due = True
                continue
            if self.update_beta and self.beta_every and it % int(self.beta_every) == 0:
                beta_due = True
            if act.apply(dL, alpha_new) is None:
                return beta, it, True
        return beta, it, False

    def _new_beta(self, act, a, Sigma, mean, t, beta):
        """The noise precision re-estimated by (7.88), and whether it moved
        by ``tol`` or more in log units."""
        resid = t - np.column_stack(act.cols) @ mean
        gamma = 1.0 - a * np.diag(Sigma)
        beta_new = max(t.shape[0] - gamma.sum(), 1e-6) / max(float(resid @ resid), 1e-300)
        beta_new = float(np.clip(beta_new, 1e-12, 1e12))
        return beta_new, abs(np.log(beta_new) - np.log(beta)) >= self.tol

    def _warn_not_converged(self):
        hint = ("" if self.beta_every or not self.update_beta else
                " beta is only re-estimated once alpha has converged: when the noise "
                "precision starts far from its optimum (default 1 / (0.01 var(t))) the "
                "algorithm keeps adding basis functions; set beta_every=10 to "
                "re-estimate it every 10 steps.")
        warnings.warn(f"RVR: the sequential algorithm did not converge in max_iter="
                      f"{self.max_iter} steps.{hint}", ConvergenceWarning, stacklevel=5)

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


