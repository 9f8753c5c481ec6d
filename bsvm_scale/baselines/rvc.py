"""Relevance vector classification (Bishop 7.2.3; Tipping 2001; Tipping & Faul 2003).

The logistic likelihood with a Laplace approximation: for the current
``alpha`` the weight mode is found by Newton/IRLS (7.110, 7.111), and the
problem is then a Gaussian regression with targets ``t_hat`` (7.117) and
noise precision matrix ``B``, to which the sequential step of
:mod:`bsvm_scale.baselines._rvm_common` applies; at the mode ``Q_i = phi_i^T
(t - y)``.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.special import expit, log_expit
from sklearn.base import ClassifierMixin
from sklearn.exceptions import ConvergenceWarning

from .._util.base import BinaryClassifierMixin
from .._util.validation import POSITIVE_INT, check_classification_data, store_params
from ._rvm_common import _ActiveSet, _choose_first, _RVMBase, _spd_inverse

__all__ = ["RVC"]


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
    kappa, kappa_grid, bias, max_iter, tol, tol_evidence, cache_mb
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

    _parameter_constraints = {**_RVMBase._parameter_constraints,
                              "max_irls_iter": [POSITIVE_INT], "moderated": ["boolean"]}

    def __init__(self, *, kappa=None, kappa_grid=None, bias=True, max_iter=2000, tol=1e-6,
                 tol_evidence=1e-4, max_irls_iter=50, moderated=True, cache_mb=1024.0):
        store_params(self, locals())

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

    def _fit(self, X, y):
        """One fit at the width ``kappa`` (the parameters are validated)."""
        X, y, classes, codes = check_classification_data(self, X, y, binary_only=True)
        kappa = self._kappa(X.shape[1])
        t = (codes == 1).astype(np.float64)
        std, basis = self._basis(X, kappa)
        # start from the bias, or the candidate best aligned with the centred targets
        tc = t - t.mean()
        j0 = 0 if self.bias else _choose_first(basis.rmatvec(tc),
                                               basis.weighted_sq_norms(np.ones(t.shape[0])))
        act = _ActiveSet(basis, j0, 1.0, gram=False)
        w, it, converged = self._iterate(act, t)
        if not converged:
            warnings.warn(f"RVC: the sequential algorithm did not converge in max_iter="
                          f"{self.max_iter} steps.", ConvergenceWarning, stacklevel=4)
        a = np.asarray(act.alpha)
        w, yhat, Sigma, logdet_H, ll = self._irls(np.column_stack(act.cols), a, t, w)
        # (7.114): ln p(t|w*) + ln p(w*|alpha) + M/2 ln 2pi + 1/2 ln|Sigma|
        lml = ll - 0.5 * float(w @ (a * w)) + 0.5 * float(np.sum(np.log(a))) - 0.5 * logdet_H
        self._set_fitted(std, act, (a, w, Sigma), (lml, it, converged, kappa))
        self.classes_ = classes
        return self

    def _iterate(self, act, t):
        """Sequential steps from ``act``, each at the weight mode (IRLS) of
        the current ``alpha``, until convergence or ``max_iter``.

        Returns
        -------
        w : ndarray
            The last weight mode (the start of the final IRLS).
        n_iter : int
        converged : bool
        """
        w = np.zeros(1)
        it = 0
        for it in range(1, int(self.max_iter) + 1):
            Pm = np.column_stack(act.cols)
            w, yhat, Sigma, _, _ = self._irls(Pm, np.asarray(act.alpha), t, w)
            b = yhat * (1.0 - yhat)
            # Phi^T [B Phi_M, t - y] and phi_i^T B phi_i in one pass over Phi
            GQ, wsq = act.basis.products(np.column_stack((b[:, None] * Pm, t - yhat)), b)
            G, Q = GQ[:, :-1], GQ[:, -1]
            S = wsq - np.einsum("ij,ij->i", G @ Sigma, G)   # (7.103) with noise precision B
            dL, alpha_new, done = act.step(S, Q, wsq, self.tol, float(self.tol_evidence))
            action = None if done else act.apply(dL, alpha_new)
            if action is None:
                return w, it, True
            if action[0] == "delete":
                w = np.delete(w, action[1])
            elif action[0] == "add":
                w = np.append(w, 0.0)
        return w, it, False

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
