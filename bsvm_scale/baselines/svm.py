"""Classical support vector machines: the baselines of the thesis experiments.

* :class:`SVR` -- epsilon-insensitive support vector regression with bias
  (thesis Appendix B.2 with ``beta -> 0``, dual (B.30)/(C.19)), optionally
  with the probabilistic reading of Gao et al. (2002): evidence (their
  eq. 16), re-estimation of ``C`` (17) and error bars (22), (29), (30).
* :class:`SVC` -- L1 soft-margin (hinge loss) classifier with bias (B.16 with
  ``epsilon = 0``).
* :class:`TSVC` -- trigonometric-loss classifier with bias (Appendix H,
  dual H.4).

All three use the Gaussian kernel ``K(x, x') = exp(-kappa/2 ||x - x'||^2)``,
i.e. ``gamma = kappa / 2`` in LIBSVM / scikit-learn terms (TSVC multiplies it
by ``kappa0``), and are trained by the Numba SMO of
:mod:`bsvm_scale._compiled.smo_classic` with LIBSVM-style second-order working-set
selection and optional shrinking. Kernel rows are served by
:class:`bsvm_scale.inference.covariance.RowCache` with the budget ``cache_mb``.

Unlike the Bayesian models, inputs are used as given by default (so that the
solutions agree with LIBSVM); ``standardize=True`` standardises them with
training statistics first, in which case ``kappa`` refers to standardised
inputs and ``support_vectors_`` are stored standardised.

The kernel rows come from :class:`~bsvm_scale.inference.covariance.GaussianCovariance`
with ``kappa0 = 1`` (``kappa0`` for TSVC) and ``kappa_b = 0`` (no bias term in
the kernel; the bias ``b`` is a free parameter of the dual).
"""

from __future__ import annotations

import math
import warnings
from numbers import Integral

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from .._compiled import smo_classic as _smo
from .._util.base import BinaryClassifierMixin, Standardizer
from .._util.validation import (NON_NEGATIVE, POSITIVE, check_classification_data,
                                check_positive, check_positive_int, check_predict_X,
                                check_regression_data, store_params)
from ..inference.covariance import GaussianCovariance, RowCache

__all__ = ["SVR", "SVC", "TSVC", "epsilon_noise_variance"]

KAPPA_B_NONE = 0.0  # the classical kernel has no bias term


# ---------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------
#: parameter constraints every SVM shares (scikit-learn's ``_parameter_constraints``)
_COMMON_CONSTRAINTS = {"kappa": [POSITIVE], "tol": [POSITIVE], "cache_mb": [POSITIVE],
                       "max_iter": [Interval(Integral, -1, None, closed="left")],
                       "standardize": ["boolean"]}


def _check_common(est):
    """Validate the parameters of ``est`` against its ``_parameter_constraints``.

    Returns
    -------
    kappa, tol, cache_mb : float
    max_iter : int
        -1 means no limit (see :func:`_effective_max_iter`).
    """
    est._validate_params()
    return float(est.kappa), float(est.tol), float(est.cache_mb), int(est.max_iter)


def _effective_max_iter(max_iter, n_vars):
    # "no limit" still gets a generous cap, as LIBSVM does
    return max(10_000_000, 100 * n_vars) if max_iter < 0 else max_iter


def _prepare_X(est, X, fit):
    """Standardise validated inputs (fit: also store the statistics)."""
    if fit:
        est.standardizer_ = Standardizer.fit(X) if est.standardize else None
    else:
        X = check_predict_X(est, X, "dual_coef_")
    if est.standardizer_ is not None:
        X = est.standardizer_.transform(X)
    return X


def _binary_classes(est, X, y):
    """Validated ``X``, the two ``classes_`` and labels as -1/+1."""
    X, _, classes, codes = check_classification_data(est, X, y, binary_only=True)
    return X, classes, np.where(codes == 1, 1.0, -1.0)


def _decision(est, X):
    X = _prepare_X(est, X, fit=False)
    out = np.empty(X.shape[0])
    w = np.full(X.shape[1], est._kappa)
    _smo.decision_values(X, est.support_vectors_, w, est._kernel_scale,
                         0.0, np.ascontiguousarray(est.dual_coef_[0]), float(est.intercept_[0]), out)
    return out


def _warn_max_iter(cls_name, n_iter, gap, tol):
    warnings.warn(f"{cls_name}: SMO stopped at max_iter={n_iter} with violation {gap:.3g} "
                  f"> tol={tol:g}; the solution is not optimal. Increase max_iter.",
                  ConvergenceWarning, stacklevel=3)


def epsilon_noise_variance(C, epsilon):
    """Variance of the epsilon-insensitive noise model (Gao et al. 2002, eq. 29).

    The noise density ``p(e) proportional to exp(-C L_eps(e))`` has variance
    ``2/C^2 + eps^2 (eps C + 3) / (3 (eps C + 1))``.

    Parameters
    ----------
    C : float
        Regularisation parameter (inverse noise scale), > 0.
    epsilon : float
        Width of the insensitive zone, >= 0.

    Returns
    -------
    float
        ``sigma^2_{C(eps)}`` of eq. (30).
    """
    C = float(C)
    e = float(epsilon)
    return 2.0 / C**2 + e * e * (e * C + 3.0) / (3.0 * (e * C + 1.0))


# ---------------------------------------------------------------------------
# SVR
# ---------------------------------------------------------------------------
class SVR(RegressorMixin, BaseEstimator):
    """Epsilon-insensitive support vector regression with a Gaussian kernel.

    Solves the dual of ``min 1/2 ||w||^2 + C sum_i L_eps(y_i - f(x_i))`` with
    ``f(x) = <w, phi(x)> + b`` (thesis B.1 with the epsilon-insensitive loss;
    dual B.30/C.19 at ``beta = 0``) by SMO with two thresholds (Appendix C.3)
    and second-order working-set selection.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, > 0.
    epsilon : float, default=0.1
        Half-width of the insensitive zone, >= 0.
    kappa : float, default=1.0
        Inverse squared length scale of ``K = exp(-kappa/2 ||x - x'||^2)``
        (``gamma = kappa/2`` in scikit-learn).
    tol : float, default=1e-3
        Stopping tolerance ``tau`` of (C.18): ``b_low - b_up < tau``.
    max_iter : int, default=-1
        Maximum number of SMO pair updates; -1 means
        ``max(10^7, 100 * 2n)``. Hitting it raises a
        :class:`~sklearn.exceptions.ConvergenceWarning`.
    cache_mb : float, default=256.0
        Kernel-row cache budget in MiB.
    shrinking : bool, default=True
        Use the shrinking heuristic.
    standardize : bool, default=False
        Standardise the inputs with training statistics (off to match
        LIBSVM).
    error_bars : bool, default=False
        After fitting, also compute the Gao et al. (2002) quantities:
        :attr:`log_evidence_` (eq. 16), :attr:`noise_var_` (eq. 29) and the
        factor used by ``predict(X, return_std=True)`` (eqs. 22, 30). These
        are otherwise computed on first use.

    Attributes
    ----------
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors (``alpha_i != alpha_i^*``).
    support_vectors_ : ndarray of shape (n_SV, d)
    dual_coef_ : ndarray of shape (1, n_SV)
        ``beta_i = alpha_i - alpha_i^*``.
    intercept_ : ndarray of shape (1,)
        Bias ``b``.
    n_iter_ : int
        SMO pair updates.
    n_support_ : int
    log_evidence_ : float
        Only with ``error_bars=True`` (or after :meth:`log_evidence`).
    noise_var_ : float
        Epsilon-insensitive noise variance (29) at the fitted ``C``,
        ``epsilon``.

    Notes
    -----
    The probabilistic reading treats the kernel ``K`` as the Gaussian-process
    prior covariance of the function and the bias ``b`` as a fixed offset
    (a point estimate; it carries no prior variance), as in Gao et al. whose
    model has no bias.
    """

    _kernel_scale = 1.0
    _parameter_constraints = {**_COMMON_CONSTRAINTS, "C": [POSITIVE], "epsilon": [NON_NEGATIVE],
                              "shrinking": ["boolean"], "error_bars": ["boolean"]}

    def __init__(self, *, C=1.0, epsilon=0.1, kappa=1.0, tol=1e-3, max_iter=-1,
                 cache_mb=256.0, shrinking=True, standardize=False,
                 error_bars=False):
        store_params(self, locals())

    def fit(self, X, y):
        """Train on ``X`` (n, d) and targets ``y`` (n,)."""
        kappa, tol, cache_mb, mi = _check_common(self)
        C, eps = float(self.C), float(self.epsilon)
        X, y = check_regression_data(self, X, y)
        X = _prepare_X(self, X, fit=True)
        n = X.shape[0]
        self._kappa = kappa
        cache = RowCache(X, GaussianCovariance(1.0, kappa, KAPPA_B_NONE), cache_mb)
        s = np.concatenate((np.ones(n), -np.ones(n)))
        p = np.concatenate((eps - y, eps + y))
        U = np.full(2 * n, C)
        alpha = np.zeros(2 * n)
        G = np.empty(2 * n)
        it, status, gap = _smo.smo_qp(cache.kernel, cache.state, _smo.QPDual(s, p, U, alpha, G),
                                      tol, _effective_max_iter(mi, 2 * n), bool(self.shrinking))
        if status == _smo.STATUS_MAX_ITER:
            _warn_max_iter("SVR", it, gap, tol)
        b = _smo.bias(G, alpha, s, U)
        beta = alpha[:n] - alpha[n:]
        sv = np.flatnonzero(beta != 0.0)
        self.support_ = sv
        self.support_vectors_ = np.ascontiguousarray(X[sv])
        self.dual_coef_ = beta[sv][None, :].copy()
        self.intercept_ = np.array([b])
        self.n_iter_ = int(it)
        self.n_support_ = int(sv.shape[0])
        self.cache_stats_ = cache.stats
        # quantities of the probabilistic reading (Gao et al. 2002)
        self._beta = beta
        self._Kbeta = G[:n] - eps + y            # (K beta)_i from the gradient
        self._residual = y - self._Kbeta - b     # y_i - f(x_i)
        self._C_fit = C
        self._eps_fit = eps
        self._X_fit = X
        self._chol = None
        self.noise_var_ = epsilon_noise_variance(C, eps)
        if self.error_bars:
            self.log_evidence_ = self.log_evidence()
            self._factor_margin()
        return self

    # -- Gao et al. (2002) -------------------------------------------------
    def _sets(self):
        C = self._C_fit
        ab = np.abs(self._beta)
        margin = np.flatnonzero((ab > 0.0) & (ab < C))   # X_M (off-bound SVs)
        bound = np.flatnonzero(ab >= C)                  # X_C (on-bound SVs)
        return margin, bound

    @property
    def margin_support_(self):
        """Indices of the marginal (off-bound) support vectors ``X_M``, ``0 < |beta_i| < C``."""
        check_is_fitted(self, "dual_coef_")
        return self._sets()[0]

    def log_evidence(self):
        """Approximate log evidence, Gao et al. (2002) eq. (16).

        ``ln P(D) = -1/2 beta^T K beta - 1/2 ln det(2 pi K_{X_M}) + n ln G(C, eps)
        - C sum_{X_C} L_eps(y_i - f(x_i)) + sum_{X_M} ln(C / (|beta_i| (C - |beta_i|)))``
        with ``G(C, eps) = C / (2 (eps C + 1))``, ``X_M`` the off-bound and
        ``X_C`` the on-bound support vectors of the fitted model.

        Returns
        -------
        float
        """
        check_is_fitted(self, "dual_coef_")
        C, eps = self._C_fit, self._eps_fit
        n = self._beta.shape[0]
        margin, bound = self._sets()
        quad = float(self._beta @ self._Kbeta)
        logdet = 0.0
        if margin.size:
            L = self._factor_margin()
            logdet = 2.0 * float(np.sum(np.log(np.diag(L[0])))) + margin.size * math.log(2 * math.pi)
        lnG = math.log(0.5 * C / (eps * C + 1.0))
        loss_c = float(np.sum(np.maximum(np.abs(self._residual[bound]) - eps, 0.0)))
        ab = np.abs(self._beta[margin])
        occ = float(np.sum(np.log(C / (ab * (C - ab)))))
        val = -0.5 * quad - 0.5 * logdet + n * lnG - C * loss_c + occ
        self.log_evidence_ = val
        return val

    def _C_update(self):
        """Right-hand side of Gao et al. (2002) eq. (17) at the fitted model."""
        C, eps = self._C_fit, self._eps_fit
        n = self._beta.shape[0]
        margin, bound = self._sets()
        loss_c = float(np.sum(np.maximum(np.abs(self._residual[bound]) - eps, 0.0)))
        ab = np.abs(self._beta[margin])
        den = loss_c + float(np.sum(1.0 / (C - ab))) + n * eps / (eps * C + 1.0)
        return (n + margin.size) / den

    def reestimate_C(self, X, y, *, rtol=1e-2, max_iter=30):
        """Iterative re-estimation of ``C`` by Gao et al. (2002) eq. (17).

        Starting from ``self.C``, alternate SVR training with
        ``C_new = (n + |X_M|) / (sum_{X_C} L_eps(y_i - f(x_i))
        + sum_{X_M} 1/(C - |beta_i|) + n eps / (eps C + 1))`` until
        ``|C_new - C| <= rtol * C``. The fixed point is a stationary point
        of (16) for a fixed SV partition; the iteration is not globally
        stable (Gao et al.), so when it has not converged after ``max_iter``
        steps a :class:`~sklearn.exceptions.ConvergenceWarning` is raised and
        the visited ``C`` with the largest evidence is kept.

        Sets ``self.C`` to the selected value (this method re-estimates the
        parameter in place), refits, and records ``C_path_`` and
        ``log_evidence_path_`` (one entry per training run).

        Returns
        -------
        self
        """
        rtol = float(check_positive("rtol", rtol))
        check_positive_int("max_iter", max_iter)
        C = float(check_positive("C", self.C))
        path, evid = [], []
        converged = False
        for _ in range(int(max_iter)):
            self.C = C
            self.fit(X, y)
            path.append(C)
            evid.append(self.log_evidence())
            C_new = self._C_update()
            if abs(C_new - C) <= rtol * C:
                C = C_new
                converged = True
                break
            C = C_new
        if converged:
            self.C = C
            self.fit(X, y)
            path.append(C)
            evid.append(self.log_evidence())
        else:
            warnings.warn(f"SVR.reestimate_C: C did not settle within {max_iter} steps "
                          f"(last values {path[-3:]}); keeping the visited C with the largest "
                          "evidence.", ConvergenceWarning, stacklevel=2)
            k = int(np.argmax(evid))
            if path[k] != self._C_fit:
                self.C = path[k]
                self.fit(X, y)
                self.log_evidence()
            else:
                self.C = path[k]
        self.C_path_ = np.array(path)
        self.log_evidence_path_ = np.array(evid)
        return self

    def _factor_margin(self):
        if self._chol is None:
            margin = self._sets()[0]
            if margin.size == 0:
                self._chol = (np.zeros((0, 0)), True)
                self._XM = self._X_fit[:0]
                return self._chol
            Xm = np.ascontiguousarray(self._X_fit[margin])
            K = GaussianCovariance(1.0, self._kappa, KAPPA_B_NONE).subset(Xm, np.arange(margin.size))
            jitter = 0.0
            while True:
                try:
                    self._chol = cho_factor(K + jitter * np.eye(K.shape[0]), lower=True)
                    break
                except np.linalg.LinAlgError:
                    jitter = 1e-12 if jitter == 0.0 else 10.0 * jitter
                    if jitter > 1e-4:
                        raise
            self._XM = Xm
            self.margin_jitter_ = jitter
        return self._chol

    def predict(self, X, return_std=False):
        """Predictions ``f(x)``; with ``return_std=True`` also the error bars.

        The predictive standard deviation is ``sqrt(sigma_KM^2(z) + sigma_C^2)``
        with ``sigma_KM^2(z) = K(z,z) - k_M(z)^T K_{X_M}^{-1} k_M(z)`` over the
        marginal (off-bound) SVs (Gao et al. 2002, eq. 22) and the
        epsilon-insensitive noise variance ``sigma_C^2`` of eq. (29), summed
        as in eq. (30).

        Returns
        -------
        mean : ndarray of shape (m,)
        std : ndarray of shape (m,), only with ``return_std=True``
        """
        f = _decision(self, X)     # f(x) = sum_i beta_i K(x_i, x) + b
        if not return_std:
            return f
        return f, np.sqrt(self.function_variance(X) + self.noise_var_)

    def function_variance(self, X):
        """``sigma_KM^2(z)`` of Gao et al. (2002) eq. (22) for every row of ``X``."""
        check_is_fitted(self, "dual_coef_")
        Xt = _prepare_X(self, X, fit=False)
        chol = self._factor_margin()
        var = np.ones(Xt.shape[0])
        if self._XM.shape[0] == 0:
            return var
        cov = GaussianCovariance(1.0, self._kappa, KAPPA_B_NONE)
        for start, stop, block in cov.iter_cross(Xt, self._XM):
            sol = cho_solve(chol, block.T)
            var[start:stop] -= np.einsum("mi,mi->i", block.T, sol)
        return np.maximum(var, 0.0)


# ---------------------------------------------------------------------------
# SVC and TSVC
# ---------------------------------------------------------------------------
class _BinarySVM(BinaryClassifierMixin, ClassifierMixin, BaseEstimator):
    """Fit and decision function shared by :class:`SVC` and :class:`TSVC`:
    the dual problem itself is the subclass' ``_solve``."""

    _kernel_scale = 1.0

    def _amplitude(self):
        """Amplitude of the kernel (1, or TSVC's ``kappa0``)."""
        return 1.0

    def fit(self, X, y):
        """Train on ``X`` (n, d) and binary labels ``y`` (n,)."""
        kappa, tol, cache_mb, mi = _check_common(self)
        X, self.classes_, s = _binary_classes(self, X, y)
        X = _prepare_X(self, X, fit=True)
        self._kappa = kappa
        self._kernel_scale = self._amplitude()
        cache = RowCache(X, GaussianCovariance(self._kernel_scale, kappa, KAPPA_B_NONE), cache_mb)
        alpha, b, it = self._solve(cache, s, tol, mi)
        sv = np.flatnonzero(alpha > 0.0)
        self.alpha_ = alpha
        self.support_ = sv
        self.support_vectors_ = np.ascontiguousarray(X[sv])
        self.dual_coef_ = (s[sv] * alpha[sv])[None, :]
        self.intercept_ = np.array([b])
        self.n_iter_ = int(it)
        self.n_support_ = np.array([np.sum(s[sv] < 0), np.sum(s[sv] > 0)])
        return self

    def decision_function(self, X):
        """``f(x) = sum_i y_i alpha_i K(x_i, x) + b``; positive means ``classes_[1]``."""
        return _decision(self, X)


class SVC(_BinarySVM):
    """Soft-margin (hinge loss) support vector classifier with a Gaussian kernel.

    Solves (B.16) with ``epsilon = 0`` (L1 soft margin): ``min 1/2 sum_ij
    alpha_i y_i alpha_j y_j K_ij - sum_i alpha_i`` subject to
    ``0 <= alpha_i <= C`` and ``sum_i y_i alpha_i = 0``, by SMO
    (Appendix C.1, C.2) with second-order working-set selection.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, > 0.
    kappa : float, default=1.0
        ``K = exp(-kappa/2 ||x - x'||^2)`` (``gamma = kappa/2``).
    tol, max_iter, cache_mb, shrinking, standardize
        As in :class:`SVR`.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``decision_function > 0`` predicts ``classes_[1]``.
    support_, support_vectors_, n_iter_
    dual_coef_ : ndarray of shape (1, n_SV)
        ``y_i alpha_i`` with ``y_i = +1`` for ``classes_[1]``.
    intercept_ : ndarray of shape (1,)
    n_support_ : ndarray of shape (2,)
        Support vectors per class.
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS, "C": [POSITIVE], "shrinking": ["boolean"]}

    def __init__(self, *, C=1.0, kappa=1.0, tol=1e-3, max_iter=-1, cache_mb=256.0,
                 shrinking=True, standardize=False):
        store_params(self, locals())

    def _solve(self, cache, s, tol, mi):
        """The L1 soft-margin dual by SMO; ``alpha``, the bias and the iterations."""
        n = s.shape[0]
        p = -np.ones(n)
        U = np.full(n, float(self.C))
        alpha = np.zeros(n)
        G = np.empty(n)
        it, status, gap = _smo.smo_qp(cache.kernel, cache.state, _smo.QPDual(s, p, U, alpha, G),
                                      tol, _effective_max_iter(mi, n), bool(self.shrinking))
        if status == _smo.STATUS_MAX_ITER:
            _warn_max_iter("SVC", it, gap, tol)
        b = _smo.bias(G, alpha, s, U)
        self.cache_stats_ = cache.stats
        return alpha, b, it


class TSVC(_BinarySVM):
    """Trigonometric support vector classifier with bias (thesis Appendix H).

    Minimises ``sum_i l_t(y_i f(x_i)) + 1/2 ||w||^2`` (H.1) with the
    trigonometric loss ``l_t`` (5.7) and ``f(x) = <w, phi(x)> + b`` through
    the dual (H.4)::

        min 1/2 sum_ij y_i alpha_i y_j alpha_j K_ij - sum_i alpha_i
            + sum_i [4/pi alpha_i arctan(2 alpha_i/pi) - ln(1 + (2 alpha_i/pi)^2)]
        s.t. sum_i y_i alpha_i = 0, alpha_i >= 0

    with ``K = kappa0 exp(-kappa/2 ||x - x'||^2)``. The pair sub-problem has
    no closed form; it is solved by safeguarded Newton iterations along the
    feasible line (Appendix G). ``kappa0`` plays the role of the
    regularisation parameter (section 5.3.1).

    Parameters
    ----------
    kappa0 : float, default=1.0
        Kernel amplitude, > 0.
    kappa : float, default=1.0
        Inverse squared length scale.
    tol : float, default=1e-3
        Stopping tolerance of the two-threshold test (5.31) with bias.
    max_iter, cache_mb, standardize
        As in :class:`SVC` (no shrinking: every variable is unbounded above).

    Attributes
    ----------
    classes_, support_, support_vectors_, dual_coef_, intercept_, n_iter_,
    n_support_, alpha_
        As in :class:`SVC`.
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS, "kappa0": [POSITIVE]}

    def __init__(self, *, kappa0=1.0, kappa=1.0, tol=1e-3, max_iter=-1, cache_mb=256.0,
                 standardize=False):
        store_params(self, locals())

    def _amplitude(self):
        return float(self.kappa0)

    def _solve(self, cache, s, tol, mi):
        """The trigonometric dual (H.4) by SMO; ``alpha``, the bias and the iterations."""
        n = s.shape[0]
        alpha = np.zeros(n)
        Kv = np.empty(n)
        it, status, gap, G = _smo.smo_trig(cache.kernel, cache.state, s, alpha, Kv, tol,
                                           _effective_max_iter(mi, n))
        if status == _smo.STATUS_MAX_ITER:
            _warn_max_iter("TSVC", it, gap, tol)
        b = _smo.bias(G, alpha, s, np.full(n, np.inf))
        return alpha, b, it
