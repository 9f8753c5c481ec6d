"""Laplace Gaussian-process classification (GPC), the classification baseline.

Logistic likelihood, Laplace approximation of the posterior over the latent
values (Bishop 6.4.5-6.4.6; Rasmussen & Williams 2006, algorithms 3.1, 3.2,
5.1); evidence (6.90) with gradient (6.91)-(6.94) including the implicit
dependence of the mode on the hyperparameters. The optimisation vector is
``[ln kappa0, ln kappa | ln kappa_1..ln kappa_d, ln kappa_b]``; the covariance,
memory budget and start points are shared with GPR (:mod:`bsvm_scale.baselines.gp`).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack, solve_triangular
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import check_is_fitted

from .._util.base import BinaryClassifierMixin, standardizer_for
from .._util.validation import (NON_NEGATIVE, POSITIVE_INT, check_classification_data,
                                check_predict_X, store_params)
from ..inference.covariance import GaussianCovariance
from ._gp_common import (GP_CONSTRAINTS, PRED_CHUNK_BYTES, check_memory, cholesky_b,
                         initial_covariance, log_bounds, maximize_evidence, set_hyperparameters)

__all__ = ["GPC"]

_GH_X, _GH_W = np.polynomial.hermite_e.hermegauss(64)
_GH_W = _GH_W / _GH_W.sum()


def _logistic_gaussian(mu, var, method):
    """``int sigma(f) N(f | mu, var) df``.

    ``method='quadrature'``: 64-point Gauss-Hermite rule (accurate to ~1e-7
    for the variances met in practice); ``'probit'``: the probit
    approximation ``sigma(mu / sqrt(1 + pi var / 8))`` (Bishop 4.153-4.155).
    """
    if method == "probit":
        return expit(mu / np.sqrt(1.0 + np.pi * var / 8.0))
    f = mu[:, None] + np.sqrt(var)[:, None] * _GH_X[None, :]
    return expit(f) @ _GH_W


class GPC(BinaryClassifierMixin, ClassifierMixin, BaseEstimator):
    """Binary Gaussian-process classification with the Laplace approximation.

    Latent ``f ~ GP(0, Cov)`` (covariance 4.3 / 4.42), likelihood
    ``p(t = 1 | f) = sigma(f)`` (logistic, Bishop 6.79). The posterior over
    the training latents is approximated by a Gaussian at its mode (Bishop
    6.80-6.86), found by Newton's method in the numerically stable form of
    Rasmussen & Williams, algorithm 3.1, with step halving. The approximate
    log evidence (6.90) is maximised with its exact gradient (6.91)-(6.94;
    R&W algorithm 5.1), which includes the implicit dependence of the mode on
    the hyperparameters.

    Parameters
    ----------
    kappa0, kappa, kappa_b, ard, optimize, n_starts, bounds, options, random_state
        As for :class:`GPR` (no noise variance: the likelihood is logistic).
        Default ``kappa_b`` is 1.
    max_newton_iter : int, default=100
        Limit of Newton iterations for the mode.
    newton_tol : float, default=1e-10
        Newton stops when the gain of ``Psi`` (6.80) falls below this.
    predict_method : {'quadrature', 'probit'}, default='quadrature'
        How ``int sigma(f) q(f) df`` (6.76) is computed: Gauss-Hermite
        quadrature or the probit approximation (4.153).
    max_memory_mb : float, default=4096
        Budget for the dense ``n x n`` matrices of an evidence-gradient
        evaluation (counted as four: covariance, Cholesky factor of ``B``,
        ``R`` and one work matrix; ``32 n^2`` bytes); a larger problem raises
        ``ValueError`` before allocation.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
    theta_ : ndarray
        Fitted log hyperparameters ``[ln kappa0, ln kappa.., ln kappa_b]``.
    kappa0_, kappa_, kappa_b_ : fitted hyperparameters.
    log_marginal_likelihood_ : float
        Laplace log evidence (6.90) at ``theta_``.
    f_mode_ : ndarray of shape (n,)
        Posterior mode of the training latents ``a_N^*``.
    grad_loglik_ : ndarray of shape (n,)
        ``t - sigma(f_mode_)`` (weights of the predictive mean, 6.87).
    W_sqrt_ : ndarray of shape (n,)
        ``sqrt(sigma(1 - sigma))`` at the mode.
    L_ : ndarray of shape (n, n)
        Lower Cholesky factor of ``B = I + W^1/2 Sigma W^1/2`` (F-ordered).
    X_train_, x_mean_, x_scale_, starts_, best_start_, n_newton_iter_,
    memory_estimate_mb_, n_features_in_
        As for :class:`GPR`.
    """

    _parameter_constraints = {**GP_CONSTRAINTS, "max_newton_iter": [POSITIVE_INT],
                              "newton_tol": [NON_NEGATIVE],
                              "predict_method": [StrOptions({"quadrature", "probit"})]}

    def __init__(self, *, kappa0=1.0, kappa=None, kappa_b=1.0, ard=False, optimize=True,
                 n_starts=3, bounds=(1e-5, 1e5), options=None, max_newton_iter=100,
                 newton_tol=1e-10, predict_method="quadrature", max_memory_mb=4096.0,
                 random_state=None):
        store_params(self, locals())

    # -- Laplace machinery ----------------------------------------------
    def _mode(self, K, t):
        """Posterior mode of the latents (Bishop 6.83; R&W algorithm 3.1).

        Returns ``(f, a, psi, n_iter)`` with ``f = K a`` and
        ``psi = -1/2 a^T f + ln p(t | f)`` (6.80 without its constants).
        """
        n = t.shape[0]
        f = np.zeros(n)
        a = np.zeros(n)

        def psi_of(a_, f_):
            return -0.5 * a_ @ f_ + float(np.sum(t * f_ + log_expit(-f_)))

        psi = psi_of(a, f)
        it = 0
        for it in range(1, int(self.max_newton_iter) + 1):
            pi = expit(f)
            w = pi * (1.0 - pi)
            sw = np.sqrt(w)
            L = cholesky_b(K, sw)
            if L is None:  # B = I + W^1/2 K W^1/2 has eigenvalues >= 1: only NaNs get here
                raise np.linalg.LinAlgError("B = I + W^1/2 K W^1/2 is not positive definite")
            b = w * f + (t - pi)
            v = solve_triangular(L, sw * (K @ b), lower=True, check_finite=False)
            a_new = b - sw * solve_triangular(L, v, lower=True, trans="T", check_finite=False)
            # step halving on Psi (the full Newton step is tried first)
            da = a_new - a
            step = 1.0
            while True:
                a_try = a + step * da
                f_try = K @ a_try
                psi_try = psi_of(a_try, f_try)
                if psi_try >= psi - 1e-12 * abs(psi) or step < 1e-6:
                    break
                step *= 0.5
            gain = psi_try - psi
            a, f, psi = a_try, f_try, psi_try
            if abs(gain) < self.newton_tol:
                break
        return f, a, psi, it

    def _laplace(self, theta, X, t, gradient):
        """Laplace log evidence (6.90) and its gradient (R&W algorithm 5.1)."""
        n = X.shape[0]
        idx = np.arange(n)
        cov = GaussianCovariance.from_theta(theta, ard=bool(self.ard))
        K = cov.subset(X, idx)
        f, a, psi, n_it = self._mode(K, t)
        pi = expit(f)
        w = pi * (1.0 - pi)
        sw = np.sqrt(w)
        L = cholesky_b(K, sw)
        if L is None:
            return -np.inf, np.full(theta.shape, np.nan), {}
        lml = psi - float(np.sum(np.log(np.diag(L))))
        state = {"f": f, "a": a, "sw": sw, "L": L, "cov": cov, "n_newton_iter": n_it}
        if not gradient:
            return lml, None, state
        # R = W^1/2 L^-T L^-1 W^1/2 = W^1/2 B^-1 W^1/2 = (W^-1 + K)^-1; B^-1 from
        # the factor (LAPACK dpotri, n^3 / 3 flops against n^3 for L^-T L^-1)
        R, info = lapack.dpotri(L, lower=1)
        if info != 0:
            return -np.inf, np.full(theta.shape, np.nan), {}
        R += np.tril(R, -1).T  # mirror: the upper triangle is L's, i.e. zero
        R *= sw[:, None]
        R *= sw[None, :]
        C = solve_triangular(L, sw[:, None] * K, lower=True, check_finite=False,
                             overwrite_b=True)
        # (6.92): d lml / d f_n = -1/2 [(K^-1 + W)^-1]_nn * sigma_n (1 - sigma_n)(1 - 2 sigma_n)
        diag_post = np.diag(K) - np.einsum("ij,ij->j", C, C)
        del C
        s2 = -0.5 * diag_post * w * (1.0 - 2.0 * pi)
        dlp = t - pi
        # explicit terms (6.91): 1/2 a^T dK a - 1/2 tr(R dK)
        s1 = 0.5 * cov.quad_grad(X, idx, a) - 0.5 * cov.trace_grad(X, idx, R)
        # implicit terms (6.92)-(6.94): s2^T (I - K R) dK dlp
        b = cov.matvec_grad(X, idx, dlp)            # n x p, columns dK_p dlp
        s3 = b - K @ (R @ b)
        grad = s1 + s2 @ s3
        return lml, grad, state

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """Laplace approximation of the log evidence (Bishop 6.90).

        Parameters
        ----------
        theta : array-like, optional
            Log hyperparameters ``[ln kappa0, ln kappa.., ln kappa_b]``;
            default :attr:`theta_`.
        eval_gradient : bool, default=False
            Also return the gradient (6.91)-(6.94).
        """
        check_is_fitted(self, "theta_")
        theta = self.theta_ if theta is None else np.asarray(theta, dtype=float)
        if theta.shape != self.theta_.shape:
            raise ValueError(f"theta must have shape {self.theta_.shape}; got {theta.shape}.")
        lml, grad, _ = self._laplace(theta, self.X_train_, self._t, eval_gradient)
        return (lml, grad) if eval_gradient else lml

    # -- fit -------------------------------------------------------------
    def fit(self, X, y):
        """Maximise the Laplace evidence and store the posterior at the optimum.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,), two distinct labels

        Returns
        -------
        self
        """
        self._validate_params()
        X, y, classes, codes = check_classification_data(self, X, y, binary_only=True)
        n, d = X.shape
        need = check_memory(n, 4, float(self.max_memory_mb), "GPC")
        t = (codes == 1).astype(np.float64)
        cov0 = initial_covariance(self.kappa0, self.kappa, self.kappa_b, bool(self.ard), d)
        theta0 = cov0.theta
        bounds = log_bounds(self.bounds, theta0.size)
        std = standardizer_for(self, X)
        Xs = std.transform(X)

        def log_evidence(theta):
            lml, grad, st = self._laplace(theta, Xs, t, True)
            return lml, grad, {"n_newton_iter": st.get("n_newton_iter", -1)}

        theta, best, starts = maximize_evidence(self, log_evidence, theta0, bounds, "GPC")
        self._set_fitted(theta, Xs, t)
        self.classes_ = classes
        self.x_mean_, self.x_scale_ = std.mean, std.scale
        self.starts_ = starts
        self.best_start_ = int(best)
        self.memory_estimate_mb_ = float(need)
        return self

    def _set_fitted(self, theta, Xs, t):
        """The Laplace posterior at ``theta`` as fitted attributes."""
        lml, _, st = self._laplace(theta, Xs, t, False)
        if not np.isfinite(lml):
            raise np.linalg.LinAlgError("GPC: the Laplace approximation failed at the fitted "
                                        "hyperparameters.")
        set_hyperparameters(self, theta, st["cov"])
        self.log_marginal_likelihood_ = float(lml)
        self.f_mode_ = st["f"]
        self.grad_loglik_ = t - expit(st["f"])
        self.W_sqrt_ = st["sw"]
        self.L_ = np.asfortranarray(st["L"])
        self.n_newton_iter_ = int(st["n_newton_iter"])
        self.X_train_ = Xs
        self._t = t

    def get_covariance(self):
        """The fitted :class:`GaussianCovariance` (rebuilt from ``theta_``)."""
        check_is_fitted(self, "theta_")
        return GaussianCovariance.from_theta(self.theta_, ard=bool(self.ard))

    # -- prediction ------------------------------------------------------
    def decision_function(self, X, return_std=False):
        """Posterior mean of the latent ``f(x)`` (Bishop 6.87) and optionally
        its standard deviation (6.88, R&W algorithm 3.2).

        Positive values favour ``classes_[1]``.
        """
        X = check_predict_X(self, X, "L_")
        Xs = np.ascontiguousarray((X - self.x_mean_) / self.x_scale_)
        cov = self.get_covariance()
        mean = cov.cross_matvec(Xs, self.X_train_, self.grad_loglik_)
        if not return_std:
            return mean
        var = np.empty(X.shape[0])
        prior = cov.kappa0 + cov.kappa_b
        for start, stop, block in cov.iter_cross(Xs, self.X_train_, PRED_CHUNK_BYTES):
            v = solve_triangular(self.L_, self.W_sqrt_[:, None] * block.T, lower=True,
                                 check_finite=False)
            var[start:stop] = prior - np.einsum("ij,ij->j", v, v)
        np.maximum(var, 0.0, out=var)
        return mean, np.sqrt(var)

    def predict_proba(self, X):
        """Class probabilities ``[p(classes_[0]), p(classes_[1])]`` from the
        logistic-Gaussian integral (6.76) of the latent predictive (6.87-6.88)."""
        mean, std = self.decision_function(X, return_std=True)
        p1 = _logistic_gaussian(mean, std**2, self.predict_method)
        return np.column_stack((1.0 - p1, p1))
