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

Case and class weights
----------------------
``fit(X, y, sample_weight=w)`` multiplies the loss term of case ``i`` by
``w_i`` (and, for :class:`SVC` and :class:`TSVC`, by ``class_weight[y_i]``),
as LIBSVM does: the SVC and SVR duals get the per-case box
``0 <= alpha_i <= C_i = C w_i``, the TSVC dual the per-case term
``w_i phi(alpha_i / w_i)`` (:mod:`bsvm_scale._compiled.smo_classic`). An
integer weight ``k`` gives the solution of the data set with the case
repeated ``k`` times; a weight of 0 removes the case from the problem (its
variable is fixed at 0, so it is never a support vector), while ``support_``
keeps indexing the rows of the ``X`` given to ``fit``. Without weights the
solvers run exactly as before (bit for bit).
"""

from __future__ import annotations

import warnings
from numbers import Integral

import numpy as np
from scipy.linalg import cho_solve
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from .._compiled import smo_classic as _smo
from .._compiled import smo_tsvc as _tsvc
from .._util.base import BinaryClassifierMixin, standardizer_for
from .._util.validation import (NON_NEGATIVE, POSITIVE, check_classification_data,
                                check_predict_X, check_regression_data, check_sample_weight,
                                class_weights, store_params)
from ..inference.covariance import GaussianCovariance, RowCache
from .svr_evidence import KAPPA_B_NONE, GaoEvidence, epsilon_noise_variance

__all__ = ["SVR", "SVC", "TSVC", "epsilon_noise_variance"]



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
        est.standardizer_ = standardizer_for(est, X) if est.standardize else None
    else:
        X = check_predict_X(est, X, "dual_coef_")
    if est.standardizer_ is not None:
        X = est.standardizer_.transform(X)
    return X


def _binary_classes(est, X, y):
    """Validated ``X``, the two ``classes_``, labels as -1/+1 and the class codes."""
    X, _, classes, codes = check_classification_data(est, X, y, binary_only=True)
    return X, classes, np.where(codes == 1, 1.0, -1.0), codes


def _case_weights(est, sample_weight, n, classes=None, codes=None):
    """Effective case weights ``sample_weight_i * class_weight[y_i]``.

    Validates ``sample_weight`` (:func:`check_sample_weight`) and, for a
    classifier (``classes`` given), ``class_weight`` (setting
    ``est.class_weight_``). Returns ``None`` when neither is given, so that
    the unweighted solver path is taken unchanged. A classifier whose weights
    vanish on every case of one class is refused (one class left to fit).
    """
    sw = check_sample_weight(est, sample_weight, n)
    if classes is None:
        return sw
    cw = class_weights(est, classes, codes)
    est.class_weight_ = cw
    if est.class_weight is None:
        w = sw
    else:
        w = cw[codes] if sw is None else sw * cw[codes]
    if w is not None:
        for c, label in enumerate(classes.tolist()):
            if not np.any(w[codes == c] > 0):
                raise ValueError(
                    f"{type(est).__name__}: the case weights (sample_weight times class_weight) "
                    f"are zero for every case of class {label!r}, which leaves one class "
                    "to fit. Give some cases of each class a positive weight.")
    return w


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


# ---------------------------------------------------------------------------
# SVR
# ---------------------------------------------------------------------------
class SVR(GaoEvidence, RegressorMixin, BaseEstimator):
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

    *Case weights in the probabilistic reading.* With ``sample_weight`` the
    likelihood (Gao et al. eq. 3) becomes ``prod_i p(y_i | f_i)^{w_i} =
    prod_i G(C, eps)^{w_i} exp(-C_i L_eps(y_i - f_i))``, ``C_i = C w_i``.
    Repeating the derivation of (16) on it, the linear term of a marginal
    vector has the one-sided slopes 0 and ``C_i``, so (16) becomes
    ``-1/2 beta^T K beta - 1/2 ln det(2 pi K_{X_M}) + (sum_i w_i) ln G(C, eps)
    - sum_{X_C} C_i L_eps(y_i - f(x_i)) + sum_{X_M} ln(C_i / (|beta_i|
    (C_i - |beta_i|)))`` with ``X_M``: ``0 < |beta_i| < C_i`` and ``X_C``:
    ``|beta_i| = C_i > 0``; (17) becomes ``C_new = (W + |X_M|) /
    (sum_{X_C} w_i L_eps + sum_{X_M} w_i / (C_i - |beta_i|) + W eps /
    (eps C + 1))`` with ``W = sum_i w_i``. For integer weights the weighted
    likelihood is exactly that of the data set with case ``i`` repeated
    ``w_i`` times (the prior gives the copies one function value), so the
    MAP function, the evidence and the error bars are those of the repeated
    data; (16) evaluated literally on the repeated data agrees whenever no
    repeated case is a marginal vector (a repeated marginal case makes
    ``K_{X_M}`` singular there and splits ``beta_i`` among its copies
    arbitrarily; the weighted form is the well-defined one). For other
    weights ``prod_i p^{w_i}`` is a tempered likelihood and the "evidence" is
    the log normaliser of the weighted posterior: it ranks ``C`` (and
    ``epsilon``, ``kappa``) for fixed weights but is not the probability of a
    data set. A case of weight 0 is absent from every sum. The error bars
    use the weighted ``X_M``; ``noise_var_`` (29) is that of a new case of
    weight 1.
    """

    _kernel_scale = 1.0
    _parameter_constraints = {**_COMMON_CONSTRAINTS, "C": [POSITIVE], "epsilon": [NON_NEGATIVE],
                              "shrinking": ["boolean"], "error_bars": ["boolean"]}

    def __init__(self, *, C=1.0, epsilon=0.1, kappa=1.0, tol=1e-3, max_iter=-1,
                 cache_mb=256.0, shrinking=True, standardize=False,
                 error_bars=False):
        store_params(self, locals())

    def fit(self, X, y, sample_weight=None):
        """Train on ``X`` (n, d) and targets ``y`` (n,).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
        sample_weight : array-like of shape (n,), optional
            Case weights (finite, >= 0, not all zero). Case ``i`` enters the
            primal as ``C w_i L_eps(y_i - f(x_i))``, i.e. the dual box becomes
            ``0 <= alpha_i, alpha_i^* <= C w_i`` (LIBSVM's convention); an
            integer weight acts as that many copies of the case and a weight
            of 0 removes it. The probabilistic reading (evidence, ``C``
            re-estimation, error bars) uses the weighted likelihood
            ``prod_i p(y_i | f_i)^{w_i}`` (see the class notes).

        Returns
        -------
        self
        """
        kappa, tol, cache_mb, mi = _check_common(self)
        C, eps = float(self.C), float(self.epsilon)
        X, y = check_regression_data(self, X, y)
        n = X.shape[0]
        w = _case_weights(self, sample_weight, n)
        X = _prepare_X(self, X, fit=True)
        self._kappa = kappa
        cache = RowCache(X, GaussianCovariance(1.0, kappa, KAPPA_B_NONE), cache_mb)
        it, b, beta, G = self._solve(cache, y, C, eps, w, tol, mi)
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
        self._w_fit = np.ones(n) if w is None else w   # case weights of the likelihood
        self._eps_fit = eps
        self._X_fit = X
        self._chol = None
        self.noise_var_ = epsilon_noise_variance(C, eps)
        if self.error_bars:
            self.log_evidence_ = self.log_evidence()
            self._factor_margin()
        return self

    def _solve(self, cache, y, C, eps, w, tol, mi):
        """The dual of (C.19) with ``2 n`` variables (``alpha``, ``alpha^*``):
        ``(iterations, bias, beta = alpha - alpha^*, gradient)``."""
        n = y.shape[0]
        s = np.concatenate((np.ones(n), -np.ones(n)))
        p = np.concatenate((eps - y, eps + y))
        U = np.full(2 * n, C) if w is None else np.concatenate((C * w, C * w))
        alpha = np.zeros(2 * n)
        G = np.empty(2 * n)
        it, status, gap = _smo.smo_qp(cache.kernel, cache.state, _smo.QPDual(s, p, U, alpha, G),
                                      tol, _effective_max_iter(mi, 2 * n), bool(self.shrinking))
        if status == _smo.STATUS_MAX_ITER:
            _warn_max_iter("SVR", it, gap, tol)
        return it, _smo.bias(G, alpha, s, U), alpha[:n] - alpha[n:], G

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

    def fit(self, X, y, sample_weight=None):
        """Train on ``X`` (n, d) and binary labels ``y`` (n,).

        Parameters
        ----------
        X : array-like of shape (n, d)
        y : array-like of shape (n,)
            Two distinct labels.
        sample_weight : array-like of shape (n,), optional
            Case weights (finite, >= 0, not all zero), multiplied by
            ``class_weight[y_i]``: the loss term of case ``i`` is multiplied
            by ``w_i = sample_weight_i * class_weight[y_i]`` (see the class
            docstring for what this does to the dual). An integer weight acts
            as that many copies of the case; a weight of 0 removes it (it is
            never a support vector). Both classes need a case of positive
            weight.

        Returns
        -------
        self
        """
        kappa, tol, cache_mb, mi = _check_common(self)
        X, self.classes_, s, codes = _binary_classes(self, X, y)
        w = _case_weights(self, sample_weight, X.shape[0], self.classes_, codes)
        X = _prepare_X(self, X, fit=True)
        self._kappa = kappa
        self._kernel_scale = self._amplitude()
        cache = RowCache(X, GaussianCovariance(self._kernel_scale, kappa, KAPPA_B_NONE), cache_mb)
        alpha, b, it = self._solve(cache, s, tol, mi, w)
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

    With case weights ``w_i`` (``sample_weight`` times ``class_weight``)
    the primal is ``1/2 ||w||^2 + C sum_i w_i max(0, 1 - y_i f(x_i))`` and
    the box becomes ``0 <= alpha_i <= C_i = C w_i`` (LIBSVM's convention,
    with which the solution agrees).

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, > 0.
    kappa : float, default=1.0
        ``K = exp(-kappa/2 ||x - x'||^2)`` (``gamma = kappa/2``).
    tol, max_iter, cache_mb, shrinking, standardize
        As in :class:`SVR`.
    class_weight : dict, "balanced" or None, default=None
        Weight of each class, multiplying the case weights: ``{label:
        weight}`` (finite, >= 0; labels not named get 1; a key that is not a
        label of ``y`` is an error), ``"balanced"`` for
        ``n / (2 * count(label))`` (counted in ``y``, as scikit-learn does),
        or None for 1.

    Attributes
    ----------
    classes_ : ndarray of shape (2,)
        ``decision_function > 0`` predicts ``classes_[1]``.
    class_weight_ : ndarray of shape (2,)
        Weight of each class of ``classes_`` used in the fit.
    support_, support_vectors_, n_iter_
    dual_coef_ : ndarray of shape (1, n_SV)
        ``y_i alpha_i`` with ``y_i = +1`` for ``classes_[1]``.
    intercept_ : ndarray of shape (1,)
    n_support_ : ndarray of shape (2,)
        Support vectors per class.
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS, "C": [POSITIVE], "shrinking": ["boolean"],
                              "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, *, C=1.0, kappa=1.0, tol=1e-3, max_iter=-1, cache_mb=256.0,
                 shrinking=True, standardize=False, class_weight=None):
        store_params(self, locals())

    def _solve(self, cache, s, tol, mi, w):
        """The L1 soft-margin dual by SMO (box ``C w_i``; ``C`` when ``w`` is
        None); ``alpha``, the bias and the iterations."""
        n = s.shape[0]
        p = -np.ones(n)
        U = np.full(n, float(self.C)) if w is None else float(self.C) * w
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

    With case weights ``w_i`` (``sample_weight`` times ``class_weight``) the
    primal is ``sum_i w_i l_t(y_i f(x_i)) + 1/2 ||w||^2``. The conjugate of
    ``w_i l_t`` is the perspective ``w_i phi(alpha_i / w_i)`` of the term
    ``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)`` of (H.4), so the
    dual becomes::

        min 1/2 sum_ij y_i alpha_i y_j alpha_j K_ij - sum_i alpha_i
            + sum_i w_i phi(alpha_i / w_i)
        s.t. sum_i y_i alpha_i = 0, alpha_i >= 0

    (at the optimum ``phi'(alpha_i / w_i) = 1 - y_i f(x_i)`` on the support
    vectors, as in the unweighted case with ``alpha_i / w_i`` in place of
    ``alpha_i``). A case of weight 0 is left out (``alpha_i = 0``): the
    limit ``w -> 0`` would instead keep the hard constraint
    ``y_i f(x_i) > -1`` of the trigonometric loss.

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
    class_weight : dict, "balanced" or None, default=None
        Weight of each class, multiplying the case weights, as in
        :class:`SVC`.

    Attributes
    ----------
    classes_, class_weight_, support_, support_vectors_, dual_coef_,
    intercept_, n_iter_, n_support_, alpha_
        As in :class:`SVC`.
    """

    _parameter_constraints = {**_COMMON_CONSTRAINTS, "kappa0": [POSITIVE],
                              "class_weight": [dict, StrOptions({"balanced"}), None]}

    def __init__(self, *, kappa0=1.0, kappa=1.0, tol=1e-3, max_iter=-1, cache_mb=256.0,
                 standardize=False, class_weight=None):
        store_params(self, locals())

    def _amplitude(self):
        return float(self.kappa0)

    def _solve(self, cache, s, tol, mi, w):
        """The trigonometric dual (H.4) with case weights ``w`` (None: all 1)
        by SMO; ``alpha``, the bias and the iterations."""
        n = s.shape[0]
        w = np.ones(n) if w is None else w
        alpha = np.zeros(n)
        Kv = np.empty(n)
        it, status, gap, G = _tsvc.smo_tsvc(cache.kernel, cache.state,
                                           _tsvc.TsvcDual(s, w, alpha, Kv), tol,
                                           _effective_max_iter(mi, n))
        if status == _smo.STATUS_MAX_ITER:
            _warn_max_iter("TSVC", it, gap, tol)
        b = _smo.bias(G, alpha, s, _tsvc.trig_bounds(w))
        return alpha, b, it
