"""Exact Gaussian-process baselines: regression (GPR) and Laplace classification (GPC).

GPR and the helpers both share live here; GPC in :mod:`bsvm_scale.baselines.gpc`
(re-exported from this module).

These are the reference models the Bayesian SVMs are compared against. Both
use the project's Gaussian covariance (thesis eq. 4.3, ARD form 4.42)::

    Cov(x, x') = kappa0 * exp(-1/2 * sum_l kappa_l (x_l - x'_l)^2) + kappa_b

from :class:`bsvm_scale.inference.covariance.GaussianCovariance`, on inputs standardised
with training statistics (:class:`bsvm_scale._util.base.Standardizer`).

Cost, stated plainly: both models are *exact* and work with dense ``n x n``
matrices, i.e. ``O(n^3)`` time per evidence evaluation and ``O(n^2)``
memory. Each estimator has a ``max_memory_mb`` budget; a fit whose dense
matrices would exceed it is refused with a ``ValueError`` before anything
large is allocated.

GPR (Bishop 6.4.2-6.4.4; thesis 3.2.2, 3.2.3, 3.2.5.1)
    ``y = f(x) + noise``, ``noise ~ N(0, sigma2)``. With
    ``K = Sigma + sigma2 I`` the log evidence is (Bishop 6.69)::

        ln p(y | theta) = -1/2 y^T K^{-1} y - 1/2 ln|K| - n/2 ln(2 pi)

    and its gradient (Bishop 6.70)::

        d ln p / d theta_p = 1/2 trace((alpha alpha^T - K^{-1}) dK/d theta_p),
        alpha = K^{-1} y.

    Predictions are (thesis 3.57, Bishop 6.66-6.67) ``mean = k^T alpha``,
    ``var = c - k^T K^{-1} k``.

GPC (Bishop 6.4.5-6.4.6; Rasmussen & Williams 2006, algorithms 3.1, 3.2, 5.1)
    Logistic likelihood, Laplace approximation of the posterior over the
    latent values; evidence (6.90) with gradient (6.91)-(6.94) including the
    implicit dependence of the mode on the hyperparameters.

Hyperparameters live in log space. The optimisation vector of GPR is
``[ln kappa0, ln kappa | ln kappa_1..ln kappa_d, ln kappa_b, ln sigma2]``; GPC
has the same layout without ``ln sigma2``. Evidence maximisation uses
:func:`bsvm_scale.optimization.driver.run_start` (trust region, several starts, best kept).
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import lapack, solve_triangular
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._util.base import standardizer_for
from .._compiled.dense import gradient_matrix_inplace, zero_upper
from ._gp_common import (GP_CONSTRAINTS, PRED_CHUNK_BYTES, check_memory, cholesky_inplace,
                         initial_covariance, log_bounds, maximize_evidence, set_hyperparameters)
from .._util.validation import (POSITIVE, check_predict_X, check_regression_data, store_params,
                                warn_target_offset)
from ..inference.covariance import GaussianCovariance

__all__ = ["GPR"]

_LOG_2PI = float(np.log(2.0 * np.pi))


# ---------------------------------------------------------------------------
# GPR
# ---------------------------------------------------------------------------
class GPR(RegressorMixin, BaseEstimator):
    """Exact Gaussian-process regression with the project's Gaussian covariance.

    The model is ``y = f(x) + e`` with ``f ~ GP(0, Cov)`` (thesis 3.54,
    covariance 4.3 / ARD 4.42) and ``e ~ N(0, sigma2)``. The hyperparameters
    ``(kappa0, kappa, kappa_b, sigma2)`` are set by maximising the log
    evidence (Bishop 6.69) with its analytic gradient (Bishop 6.70) by
    The trust-region search of :mod:`bsvm_scale.optimization.driver` in log space from
    several starting points (thesis 3.2.5.1).

    Parameters
    ----------
    kappa0 : float, default=1.0
        Initial signal variance.
    kappa : float or array of shape (d,), optional
        Initial inverse squared length scale on standardised inputs; default
        ``1 / d``. An array requires ``ard=True``.
    kappa_b : float, default=1.0
        Initial bias variance.
    sigma2 : float, default=0.1
        Initial noise variance.
    ard : bool, default=False
        One ``kappa_l`` per input (automatic relevance determination, 4.42).
    optimize : bool, default=True
        If False, the initial hyperparameters are used as given.
    n_starts : int, default=3
        Number of optimiser starts. The first start is the initial
        hyperparameters; the others are drawn uniformly within +-3 of them in
        log space (clipped to ``bounds``). The start with the highest evidence
        is kept.
    bounds : (float, float), default=(1e-5, 1e5)
        Box prior applied to every hyperparameter (natural scale).
    options : dict, optional
        Options of :func:`bsvm_scale.optimization.driver.run_start` (:class:`bsvm_scale.optimization.driver.Options`).
    center_y : bool, default=False
        If True the training mean of ``y`` is subtracted before fitting and
        added back to predictions. By default targets are used as given; the
        constant offset is then modelled by the ``kappa_b`` term.
    normalize_y : bool, default=False
        If True ``y`` is standardised with its training mean and standard
        deviation (as scikit-learn's ``normalize_y``), so that the default
        start ``kappa0 = 1, sigma2 = 0.1`` suits targets of any scale. The
        hyperparameters (``theta_``, ``kappa0_``, ``sigma2_``, ...) are then
        in standardised target units; predictions, their standard deviations
        and the log evidence are on the original scale (the evidence of the
        standardised targets minus ``n ln y_scale_``, the Jacobian of the
        rescaling; scikit-learn reports the standardised value), and so are
        the ``fun`` values in ``starts_``.
    max_memory_mb : float, default=4096
        Budget for the dense ``n x n`` matrix of the fit (one float64 matrix,
        ``8 n^2`` bytes, overwritten in place by its Cholesky factor and
        inverse); a larger problem raises ``ValueError`` before allocation.
    random_state : None, int or Generator
        Seed of the random starting points.

    Attributes
    ----------
    kappa0_, kappa_, kappa_b_, sigma2_ : float (``kappa_`` an array with ARD)
        Fitted hyperparameters.
    theta_ : ndarray
        Fitted log hyperparameters ``[ln kappa0, ln kappa.., ln kappa_b, ln sigma2]``.
    log_marginal_likelihood_ : float
        Log evidence (6.69) at ``theta_``.
    alpha_ : ndarray of shape (n,)
        ``K^{-1} (y - y_mean_)``, the weights of the predictive mean.
    L_ : ndarray of shape (n, n)
        Lower Cholesky factor of ``K = Sigma + sigma2 I`` (F-ordered).
    X_train_ : ndarray of shape (n, d)
        Standardised training inputs.
    x_mean_, x_scale_ : ndarray of shape (d,)
        Input standardisation statistics.
    y_mean_ : float
        Subtracted target mean (0 unless ``center_y`` or ``normalize_y``).
    y_scale_ : float
        Target scale divided out (1 unless ``normalize_y``).
    starts_ : list of dict
        Every optimiser start, in the layout of
        :func:`bsvm_scale.optimization.records.start_record` (``neg_log_evidence`` and
        the trajectory values are those of the given targets).
    best_start_ : int
        Index of the kept start.
    memory_estimate_mb_ : float
        The dense-matrix memory estimate checked against ``max_memory_mb``.
    n_features_in_ : int
    """

    _parameter_constraints = {**GP_CONSTRAINTS, "sigma2": [POSITIVE], "center_y": ["boolean"],
                              "normalize_y": ["boolean"]}

    def __init__(self, *, kappa0=1.0, kappa=None, kappa_b=1.0, sigma2=0.1, ard=False,
                 optimize=True, n_starts=3, bounds=(1e-5, 1e5), options=None,
                 center_y=False, normalize_y=False, max_memory_mb=4096.0, random_state=None):
        store_params(self, locals())

    # -- evidence ------------------------------------------------------
    def _evidence(self, theta, X, y, gradient):
        """Log evidence (6.69) and, optionally, its gradient (6.70).

        Uses one dense ``n x n`` array: the covariance, overwritten by its
        Cholesky factor and then by ``alpha alpha^T - K^{-1}``.
        """
        n = X.shape[0]
        cov = GaussianCovariance.from_theta(theta[:-1], ard=bool(self.ard))
        sigma2 = float(np.exp(theta[-1]))
        S = cov.subset(X, np.arange(n))          # C-ordered, symmetric
        F = S.T                                   # F-ordered view of the same memory
        F[np.diag_indices(n)] += sigma2
        c = cholesky_inplace(F)
        if c is None:
            return -np.inf, np.full(theta.shape, np.nan)
        alpha, info = lapack.dpotrs(c, y, lower=1)
        logdet = 2.0 * np.sum(np.log(np.diag(c)))
        lml = -0.5 * float(y @ alpha) - 0.5 * logdet - 0.5 * n * _LOG_2PI
        if not gradient:
            return lml, None
        c, info = lapack.dpotri(c, lower=1, overwrite_c=1)
        if info != 0:
            return -np.inf, np.full(theta.shape, np.nan)
        gradient_matrix_inplace(c, alpha)
        # diag(c) now holds alpha_j^2 - (K^{-1})_jj
        noise_term = 0.5 * sigma2 * float(np.sum(np.diag(c)))
        # c.T is C-contiguous; sum_ab c.T[a,b] dS[b,a] = trace(W dS) for symmetric dS
        g_cov = 0.5 * cov.trace_grad(X, np.arange(n), c.T)
        return lml, np.concatenate((g_cov, [noise_term]))

    def log_marginal_likelihood(self, theta=None, eval_gradient=False):
        """Log evidence ``ln p(y | theta)`` (Bishop 6.69) on the training data.

        Parameters
        ----------
        theta : array-like, optional
            Log hyperparameters ``[ln kappa0, ln kappa.., ln kappa_b, ln sigma2]``;
            default :attr:`theta_`.
        eval_gradient : bool, default=False
            Also return the gradient with respect to ``theta`` (6.70).

        Returns
        -------
        float, or (float, ndarray)
        """
        check_is_fitted(self, "theta_")
        theta = self.theta_ if theta is None else np.asarray(theta, dtype=float)
        if theta.shape != self.theta_.shape:
            raise ValueError(f"theta must have shape {self.theta_.shape}; got {theta.shape}.")
        y = self._y_train
        lml, grad = self._evidence(theta, self.X_train_, y, eval_gradient)
        lml -= y.size * np.log(getattr(self, "y_scale_", 1.0))  # scale of the given targets
        return (lml, grad) if eval_gradient else lml

    # -- fit -------------------------------------------------------------
    def fit(self, X, y):
        """Maximise the evidence and factorise ``K`` at the optimum.

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)

        Returns
        -------
        self
        """
        self._validate_params()
        X, y = check_regression_data(self, X, y)
        n, d = X.shape
        for attr in ("L_", "alpha_"):
            if hasattr(self, attr):
                delattr(self, attr)
        need = check_memory(n, 1, float(self.max_memory_mb), "GPR")
        cov0 = initial_covariance(self.kappa0, self.kappa, self.kappa_b, bool(self.ard), d)
        theta0 = np.concatenate((cov0.theta, [np.log(float(self.sigma2))]))
        bounds = log_bounds(self.bounds, theta0.size)
        std = standardizer_for(self, X)
        Xs = std.transform(X)
        y_mean, y_scale = self._target_scale(y, cov0, bounds)
        yc = np.ascontiguousarray((y - y_mean) / y_scale)
        # optimised on the standardised targets (scale-free); the records hold
        # the evidence of the given targets (see normalize_y)
        theta, best, starts = maximize_evidence(
            self, lambda theta: (*self._evidence(theta, Xs, yc, True), {}), theta0, bounds,
            "GPR", shift=n * np.log(y_scale))
        self.y_scale_ = y_scale
        self._set_fitted(theta, Xs, yc)
        self.starts_ = starts
        self.best_start_ = int(best)
        self.x_mean_, self.x_scale_ = std.mean, std.scale
        self.y_mean_ = y_mean
        self.memory_estimate_mb_ = float(need)
        return self

    def _target_scale(self, y, cov0, bounds):
        """Mean and scale divided out of the targets (``center_y``,
        ``normalize_y``); without either, a warning when the bias prior
        cannot explain the mean of ``y``."""
        normalize = bool(self.normalize_y)
        y_mean = float(y.mean()) if self.center_y or normalize else 0.0
        y_scale = float(y.std()) if normalize else 1.0
        if normalize and not y_scale > 0.0:
            raise ValueError("normalize_y=True needs targets that vary; y is constant "
                             f"({y[0]!r}). Pass normalize_y=False.")
        if not (self.center_y or normalize):
            kb_max = cov0.kappa_b if not self.optimize else np.exp(bounds[-2][1])
            warn_target_offset(y, np.sqrt(kb_max), "GPR", "Pass center_y=True.")
        return y_mean, y_scale

    def _set_fitted(self, theta, Xs, yc):
        n = Xs.shape[0]
        cov = GaussianCovariance.from_theta(theta[:-1], ard=bool(self.ard))
        sigma2 = float(np.exp(theta[-1]))
        F = cov.subset(Xs, np.arange(n)).T
        F[np.diag_indices(n)] += sigma2
        c = cholesky_inplace(F)
        if c is None:
            raise np.linalg.LinAlgError(
                "GPR: Sigma + sigma2 I is not positive definite at the fitted hyperparameters "
                f"(sigma2={sigma2:.3g}); raise the lower bound of sigma2.")
        zero_upper(c)
        alpha, _ = lapack.dpotrs(c, yc, lower=1)
        self.L_ = c
        self.alpha_ = alpha
        set_hyperparameters(self, theta, cov)
        self.sigma2_ = sigma2
        self.X_train_ = Xs
        self._y_train = yc
        self.log_marginal_likelihood_ = float(
            -0.5 * yc @ alpha - np.sum(np.log(np.diag(c))) - 0.5 * n * _LOG_2PI
            - n * np.log(self.y_scale_))

    def get_covariance(self):
        """The fitted :class:`GaussianCovariance` (rebuilt from ``theta_``)."""
        check_is_fitted(self, "theta_")
        return GaussianCovariance.from_theta(self.theta_[:-1], ard=bool(self.ard))

    # -- prediction ------------------------------------------------------
    def predict(self, X, return_std=False, include_noise=False):
        """Predictive mean (thesis 3.57) and optionally standard deviation.

        Parameters
        ----------
        X : array-like of shape (m, d)
        return_std : bool, default=False
            Also return the predictive standard deviation.
        include_noise : bool, default=False
            Standard deviation of ``y`` (adds ``sigma2_``) instead of ``f``.

        Returns
        -------
        mean : ndarray of shape (m,)
        std : ndarray of shape (m,), if ``return_std``
        """
        X = check_predict_X(self, X, "L_")
        Xs = (X - self.x_mean_) / self.x_scale_
        Xs = np.ascontiguousarray(Xs)
        cov = self.get_covariance()
        scale = getattr(self, "y_scale_", 1.0)  # models saved before normalize_y existed
        mean = cov.cross_matvec(Xs, self.X_train_, self.alpha_) * scale + self.y_mean_
        if not return_std:
            return mean
        var = np.empty(X.shape[0])
        prior = cov.kappa0 + cov.kappa_b
        for start, stop, block in cov.iter_cross(Xs, self.X_train_, PRED_CHUNK_BYTES):
            v = solve_triangular(self.L_, block.T, lower=True, check_finite=False)
            var[start:stop] = prior - np.einsum("ij,ij->j", v, v)
        np.maximum(var, 0.0, out=var)
        if include_noise:
            var += self.sigma2_
        return mean, np.sqrt(var) * scale


