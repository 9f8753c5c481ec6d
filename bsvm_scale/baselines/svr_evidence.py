"""The evidence and error bars of the classical epsilon-SVR (Gao et al. 2002).

:class:`GaoEvidence` gives :class:`~bsvm_scale.baselines.svm.SVR` (with
``error_bars=True``) the approximate log evidence of eq. (16), the
re-estimation of ``C`` by eq. (17) and the factor of the kernel block of the
marginal support vectors ``X_M`` that the error bars of eq. (22) use;
:func:`epsilon_noise_variance` is the noise variance of eq. (29). The
formulas are in ``../shared/spec/gao2002_svr_error_bars.md``; with case
weights ``w`` (``C_i = C w_i``) the derivation on the weighted likelihood
replaces ``n`` by ``sum_i w_i`` and ``C`` by ``C_i`` case by case.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.linalg import cho_factor
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from .._util.validation import check_positive, check_positive_int
from ..inference.covariance import GaussianCovariance

__all__ = ["GaoEvidence", "epsilon_noise_variance", "KAPPA_B_NONE"]

KAPPA_B_NONE = 0.0  # the classical kernel has no bias term


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


class GaoEvidence:
    """The evidence of a fitted epsilon-SVR (a mixin of :class:`SVR`: it reads
    the fitted ``_beta``, ``_Kbeta``, ``_residual``, ``_C_fit``, ``_eps_fit``,
    ``_kappa``, ``_X_fit`` and ``_chol``)."""

    def _weights(self):
        """Case weights of the fit (ones for a model saved before weights existed)."""
        w = getattr(self, "_w_fit", None)
        return np.ones(self._beta.shape[0]) if w is None else w

    def _sets(self):
        """``X_M`` (off-bound SVs, ``0 < |beta_i| < C_i``) and ``X_C`` (on-bound
        SVs, ``|beta_i| = C_i > 0``) with ``C_i = C w_i``; cases of weight 0
        (``beta_i = 0``) are in neither."""
        C = self._C_fit * self._weights()
        ab = np.abs(self._beta)
        margin = np.flatnonzero((ab > 0.0) & (ab < C))   # X_M (off-bound SVs)
        bound = np.flatnonzero((ab >= C) & (ab > 0.0))   # X_C (on-bound SVs)
        return margin, bound

    @property
    def margin_support_(self):
        """Indices of the marginal (off-bound) support vectors ``X_M``, ``0 < |beta_i| < C_i``."""
        check_is_fitted(self, "dual_coef_")
        return self._sets()[0]

    def log_evidence(self):
        """Approximate log evidence, Gao et al. (2002) eq. (16).

        ``ln P(D) = -1/2 beta^T K beta - 1/2 ln det(2 pi K_{X_M}) + n ln G(C, eps)
        - C sum_{X_C} L_eps(y_i - f(x_i)) + sum_{X_M} ln(C / (|beta_i| (C - |beta_i|)))``
        with ``G(C, eps) = C / (2 (eps C + 1))``, ``X_M`` the off-bound and
        ``X_C`` the on-bound support vectors of the fitted model.

        With case weights ``w`` (``C_i = C w_i``) the same derivation on the
        weighted likelihood gives ``n -> sum_i w_i``, ``C L_eps -> C_i L_eps``
        on ``X_C`` and ``C -> C_i`` in the ``X_M`` term (see the class notes).

        Returns
        -------
        float
        """
        check_is_fitted(self, "dual_coef_")
        C, eps, w = self._C_fit, self._eps_fit, self._weights()
        margin, bound = self._sets()
        quad = float(self._beta @ self._Kbeta)
        logdet = 0.0
        if margin.size:
            L = self._factor_margin()
            logdet = 2.0 * float(np.sum(np.log(np.diag(L[0])))) + margin.size * math.log(2 * math.pi)
        lnG = math.log(0.5 * C / (eps * C + 1.0))
        loss_c = float(np.sum(w[bound] * np.maximum(np.abs(self._residual[bound]) - eps, 0.0)))
        ab = np.abs(self._beta[margin])
        Cm = C * w[margin]
        occ = float(np.sum(np.log(Cm / (ab * (Cm - ab)))))
        val = -0.5 * quad - 0.5 * logdet + float(np.sum(w)) * lnG - C * loss_c + occ
        self.log_evidence_ = val
        return val

    def _C_update(self):
        """Right-hand side of Gao et al. (2002) eq. (17) at the fitted model;
        with case weights ``(W + |X_M|) / (sum_{X_C} w_i L_eps + sum_{X_M}
        w_i / (C_i - |beta_i|) + W eps / (eps C + 1))``, ``W = sum_i w_i``."""
        C, eps, w = self._C_fit, self._eps_fit, self._weights()
        W = float(np.sum(w))
        margin, bound = self._sets()
        loss_c = float(np.sum(w[bound] * np.maximum(np.abs(self._residual[bound]) - eps, 0.0)))
        ab = np.abs(self._beta[margin])
        wm = w[margin]
        den = loss_c + float(np.sum(wm / (C * wm - ab))) + W * eps / (eps * C + 1.0)
        return (W + margin.size) / den

    def reestimate_C(self, X, y, sample_weight=None, *, rtol=1e-2, max_iter=30):
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

        Parameters
        ----------
        X, y
            Training data, as for :meth:`fit`.
        sample_weight : array-like of shape (n,), optional
            Case weights passed to every :meth:`fit`; the update is then the
            weighted form of (17) (:meth:`log_evidence`).
        rtol : float, default=1e-2
            Relative change of ``C`` at which the iteration stops.
        max_iter : int, default=30
            Largest number of training runs before giving up.

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
            self.fit(X, y, sample_weight)
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
            self.fit(X, y, sample_weight)
            path.append(C)
            evid.append(self.log_evidence())
        else:
            self._keep_best_C(X, y, sample_weight, path, evid, max_iter)
        self.C_path_ = np.array(path)
        self.log_evidence_path_ = np.array(evid)
        return self

    def _keep_best_C(self, X, y, sample_weight, path, evid, max_iter):
        """An iteration that did not settle: warn and refit at the visited ``C``
        with the largest evidence."""
        warnings.warn(f"SVR.reestimate_C: C did not settle within {max_iter} steps "
                      f"(last values {path[-3:]}); keeping the visited C with the largest "
                      "evidence.", ConvergenceWarning, stacklevel=3)
        k = int(np.argmax(evid))
        self.C = path[k]
        if path[k] != self._C_fit:
            self.fit(X, y, sample_weight)
            self.log_evidence()

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
