"""scikit-learn models as external references in pipelines.

Four model kinds run scikit-learn's own implementations in the same pipeline
(same data, partitions and metrics) as the project's models:

* ``sk_svr`` / ``sk_svc``: LIBSVM through :class:`sklearn.svm.SVR` /
  :class:`sklearn.svm.SVC`, parametrised like the project's SVMs (``C``,
  ``epsilon``, ``kappa`` with ``gamma = kappa / 2``), so the same CV grids
  apply; ``sk_svc`` with ``probability=True`` fits Platt's sigmoid on
  cross-validated decision values (``predict_proba``).
* ``sk_gpr`` / ``sk_gpc``: :class:`sklearn.gaussian_process.GaussianProcessRegressor`
  (``kappa0 * RBF + kappa_b + noise``) and ``GaussianProcessClassifier``
  (Laplace, logistic link), with evidence maximisation by scikit-learn's
  L-BFGS-B and ``n_restarts`` random restarts.

Inputs are standardised with training statistics (as the Bayesian SVMs do).
Models of these kinds are stored in the run as an HDF5 file of their
parameters and fitted hyperparameters (:func:`model_bytes`), never pickled;
they cannot be reloaded with :func:`bsvm_scale.storage.load_model`.
"""

from __future__ import annotations

import json
import os
import tempfile

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.metaestimators import available_if

from ..._util.validation import NON_NEGATIVE, NON_NEGATIVE_INT, POSITIVE, store_params
from ..spec.kinds import EXTERNAL_KINDS

__all__ = ["SkSVR", "SkSVC", "SkGPR", "SkGPC", "EXTERNAL_KINDS", "model_bytes", "without_platt"]

#: pipeline kind -> class name in this module


class _Standardised(BaseEstimator):
    """Base: standardise X with training statistics, then fit ``self.model_``."""

    def _scale(self, X, fit=False):
        X = np.asarray(X, dtype=float)
        if fit:
            self.scaler_ = StandardScaler().fit(X)
        return self.scaler_.transform(X)

    def fit(self, X, y):
        """Validate the parameters (``_parameter_constraints``), then fit the
        scikit-learn model on standardised ``X`` and ``y``."""
        self._validate_params()
        self._fit_model(self._scale(X, fit=True), y)
        self._after_fit()
        return self

    def _fit_model(self, Xs, y):
        self.model_ = self._build(Xs.shape[1]).fit(Xs, y)

    def _after_fit(self):
        pass


class SkSVR(RegressorMixin, _Standardised):
    """LIBSVM epsilon-SVR (scikit-learn) with ``gamma = kappa / 2``.

    Parameters
    ----------
    C, epsilon : float, default=1.0 and 0.1
        The regularisation parameter (> 0) and the half-width of the
        insensitive zone (>= 0), as for :class:`~bsvm_scale.baselines.svm.SVR`.
    kappa : float, default=1.0
        Gaussian kernel ``exp(-kappa/2 ||x - x'||^2)`` on standardised inputs.
    tol : float, default=1e-3
        LIBSVM's stopping tolerance.
    """

    _parameter_constraints = {"C": [POSITIVE], "epsilon": [NON_NEGATIVE], "kappa": [POSITIVE],
                              "tol": [POSITIVE]}

    def __init__(self, *, C=1.0, epsilon=0.1, kappa=1.0, tol=1e-3):
        store_params(self, locals())

    def _build(self, d):
        from sklearn.svm import SVR

        return SVR(C=float(self.C), epsilon=float(self.epsilon), gamma=float(self.kappa) / 2.0,
                   tol=float(self.tol))

    def _after_fit(self):
        self.support_ = self.model_.support_
        self.hyperparameters_ = {"C": float(self.C), "epsilon": float(self.epsilon),
                                 "kappa": float(self.kappa)}

    def predict(self, X):
        """Predicted targets."""
        return self.model_.predict(self._scale(X))


class SkSVC(ClassifierMixin, _Standardised):
    """LIBSVM C-SVC (scikit-learn) with ``gamma = kappa / 2``.

    Parameters
    ----------
    C, kappa, tol
        As for :class:`SkSVR`.
    probability : bool, default=False
        Fit Platt's sigmoid on 5-fold cross-validated decision values and
        provide ``predict_proba``: LIBSVM's ``-b 1`` procedure, run through
        ``CalibratedClassifierCV(SVC(), method="sigmoid", ensemble=False)``
        because ``SVC(probability=True)`` is deprecated from scikit-learn 1.9
        (removed in 1.11). ``predict`` and ``support_`` stay those of the SVC
        fitted on all the training data, as without probabilities. The folds
        are stratified, so with fewer than 5 cases in a class there are as many
        folds as that class has cases (``platt_folds_``); with a single case in
        a class no fold split keeps both classes in training, and the sigmoid
        is fitted to the full-data SVC's own decision values (``platt_folds_ =
        1``; LIBSVM fills such folds with constant decision values instead).
    random_state : int, default=0
        Seed of the stratified folds of the sigmoid's CV.
    """

    _parameter_constraints = {"C": [POSITIVE], "kappa": [POSITIVE], "probability": ["boolean"],
                              "tol": [POSITIVE], "random_state": ["random_state"]}

    def __init__(self, *, C=1.0, kappa=1.0, probability=False, tol=1e-3, random_state=0):
        store_params(self, locals())

    def _build(self, d):
        from sklearn.svm import SVC

        return SVC(C=float(self.C), gamma=float(self.kappa) / 2.0, tol=float(self.tol),
                   random_state=self.random_state)

    def _fit_model(self, Xs, y):
        """The SVC on standardised ``Xs``; with ``probability``, also the sigmoid."""
        if not self.probability:
            return super()._fit_model(Xs, y)
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.model_selection import StratifiedKFold

        svc = self._build(Xs.shape[1])
        self.platt_folds_ = int(min(5, np.unique(y, return_counts=True)[1].min()))
        if self.platt_folds_ >= 2:
            folds = StratifiedKFold(self.platt_folds_, shuffle=True,
                                    random_state=self.random_state)
            self.platt_ = CalibratedClassifierCV(svc, method="sigmoid", cv=folds, ensemble=False)
            self.platt_.fit(Xs, y)
            self.model_ = self.platt_.calibrated_classifiers_[0].estimator
        else:  # one split whose both sides are all cases: the frozen SVC's own values
            from sklearn.frozen import FrozenEstimator  # scikit-learn >= 1.6

            self.model_ = svc.fit(Xs, y)
            every = np.arange(len(y))
            self.platt_ = CalibratedClassifierCV(FrozenEstimator(self.model_), method="sigmoid",
                                                 cv=[(every, every)]).fit(Xs, y)

    def _after_fit(self):
        self.support_ = self.model_.support_
        self.classes_ = self.model_.classes_
        self.hyperparameters_ = {"C": float(self.C), "kappa": float(self.kappa)}

    def predict(self, X):
        """Predicted class labels."""
        return self.model_.predict(self._scale(X))

    @available_if(lambda self: bool(self.probability))
    def predict_proba(self, X):
        """Platt-sigmoid class probabilities (only with ``probability=True``)."""
        return self.platt_.predict_proba(self._scale(X))


def _gp_kernel(d, ard, noise, length_scale=1.0):
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    ls = np.full(d, length_scale) if ard else length_scale
    k = ConstantKernel(1.0, (1e-3, 1e4)) * RBF(ls, (1e-3, 1e4)) + ConstantKernel(1.0, (1e-6, 1e4))
    return k + WhiteKernel(0.1, (1e-6, 1e2)) if noise else k


def _kernel_values(kernel):
    """``kappa0``, ``kappa`` (``1 / length_scale**2``), ``kappa_b`` (and noise) of a fitted kernel."""
    p = kernel.get_params()
    if "k1__k1__k1__constant_value" in p:  # with a WhiteKernel
        k0, ls, kb = p["k1__k1__k1__constant_value"], p["k1__k1__k2__length_scale"], \
            p["k1__k2__constant_value"]
        out = {"sigma2": float(p["k2__noise_level"])}
    else:
        k0, ls, kb = p["k1__k1__constant_value"], p["k1__k2__length_scale"], p["k2__constant_value"]
        out = {}
    kappa = 1.0 / np.asarray(ls, dtype=float) ** 2
    out.update(kappa0=float(k0), kappa=kappa if kappa.ndim else float(kappa), kappa_b=float(kb))
    return out


class _SkGP(_Standardised):
    """Base of the scikit-learn GP references: ``kappa0 * RBF + kappa_b`` (+ noise).

    Parameters
    ----------
    ard : bool, default=False
        One length scale per input.
    n_restarts : int, default=0
        Random restarts of scikit-learn's L-BFGS-B beyond the first.
    random_state : int, default=0
        Seed of scikit-learn's restarts.
    length_scale : float or "sqrt(d)", default=1.0
        Starting RBF length scale on the standardised inputs; ``"sqrt(d)"``
        is ``kappa = 1 / d``, the start of the project's GP and BTSVC.
    """

    _noise = False
    _parameter_constraints = {"ard": ["boolean"], "n_restarts": [NON_NEGATIVE_INT],
                              "random_state": ["random_state"],
                              "length_scale": [POSITIVE, StrOptions({"sqrt(d)"})]}

    def __init__(self, *, ard=False, n_restarts=0, random_state=0, length_scale=1.0):
        store_params(self, locals())

    def _length_scale(self, d):
        if isinstance(self.length_scale, str):  # "sqrt(d)" (the constraint allows no other)
            return float(np.sqrt(d))
        return float(self.length_scale)

    def _build(self, d):
        return self._gp_class()(_gp_kernel(d, bool(self.ard), self._noise, self._length_scale(d)),
                                n_restarts_optimizer=int(self.n_restarts),
                                random_state=self.random_state)

    def _after_fit(self):
        self.log_marginal_likelihood_ = float(self.model_.log_marginal_likelihood_value_)
        two_class = getattr(self.model_, "classes_", np.zeros(2)).size == 2
        self.hyperparameters_ = _kernel_values(self.model_.kernel_) if two_class else {}


class SkGPR(RegressorMixin, _SkGP):
    """scikit-learn ``GaussianProcessRegressor`` with the thesis' covariance plus noise.

    Parameters
    ----------
    ard, n_restarts, random_state, length_scale
        As for :class:`_SkGP`.
    normalize_y : bool, default=False
        scikit-learn's standardisation of the targets (its evidence is then
        that of the standardised targets).
    """

    _noise = True
    _parameter_constraints = {**_SkGP._parameter_constraints, "normalize_y": ["boolean"]}

    def __init__(self, *, ard=False, n_restarts=0, random_state=0, length_scale=1.0,
                 normalize_y=False):
        store_params(self, locals())

    @staticmethod
    def _gp_class():
        from sklearn.gaussian_process import GaussianProcessRegressor

        return GaussianProcessRegressor

    def _build(self, d):
        gp = super()._build(d)
        gp.set_params(normalize_y=bool(self.normalize_y))
        return gp

    def fit(self, X, y):
        """Fit on standardised ``X`` (and, with ``normalize_y``, standardised ``y``).

        ``log_marginal_likelihood_`` is the evidence of the given targets (as
        :class:`~bsvm_scale.baselines.gp.GPR` reports it): scikit-learn's value minus
        ``n ln y_scale_`` with ``normalize_y``.
        """
        y = np.asarray(y, dtype=float)
        sd = float(np.std(y))
        self.y_scale_ = sd if self.normalize_y and sd > 0.0 else 1.0  # as scikit-learn
        super().fit(X, y)
        self.log_marginal_likelihood_ -= y.size * np.log(self.y_scale_)
        if self.normalize_y:
            self.hyperparameters_["y_scale"] = self.y_scale_
        return self

    def predict(self, X, return_std=False, include_noise=False):
        """Predictive mean (and sd of f, or of y with ``include_noise``)."""
        if not return_std:
            return self.model_.predict(self._scale(X))
        mean, std = self.model_.predict(self._scale(X), return_std=True)
        if include_noise:  # scikit-learn's sd already includes the WhiteKernel noise
            return mean, std
        noise = self.hyperparameters_["sigma2"] * self.y_scale_ ** 2
        return mean, np.sqrt(np.maximum(std ** 2 - noise, 0.0))


class SkGPC(ClassifierMixin, _SkGP):
    """scikit-learn ``GaussianProcessClassifier`` (Laplace, logistic link; parameters as
    :class:`_SkGP`)."""

    @staticmethod
    def _gp_class():
        from sklearn.gaussian_process import GaussianProcessClassifier

        return GaussianProcessClassifier

    def _after_fit(self):
        super()._after_fit()
        self.classes_ = self.model_.classes_

    def predict(self, X):
        """Predicted class labels."""
        return self.model_.predict(self._scale(X))

    def predict_proba(self, X):
        """Class probabilities, columns in ``classes_`` order."""
        return self.model_.predict_proba(self._scale(X))


def without_platt(estimator):
    """The CV template of ``estimator`` without Platt's sigmoid.

    Fitting the sigmoid costs an internal 5-fold CV per fit, which a grid
    search does not need (it scores error rates); the chosen model is refitted
    with the sigmoid.

    Parameters
    ----------
    estimator : estimator
        Any estimator; only a ``probability=True`` parameter is changed.

    Returns
    -------
    template : estimator
        A clone with ``probability=False``, or ``estimator`` itself.
    platt : bool
        Whether the best model must be refitted with ``probability=True``.
    """
    from sklearn.base import clone

    if not estimator.get_params().get("probability", False):
        return estimator, False
    return clone(estimator).set_params(probability=False), True


def model_bytes(model, kind):
    """An HDF5 record (bytes) of an external model: kind, parameters, hyperparameters.

    Parameters
    ----------
    model : SkSVR, SkSVC, SkGPR or SkGPC
        A fitted model.
    kind : str
        Its pipeline kind (``sk_svr`` ...).

    Returns
    -------
    bytes
        The file's content; attributes ``library``, ``kind='external_model'``,
        ``model_kind``, ``params`` and ``hyperparameters`` (JSON).
    """
    import h5py

    hyp = {k: np.asarray(v).tolist() for k, v in getattr(model, "hyperparameters_", {}).items()}
    fd, tmp = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    try:
        with h5py.File(tmp, "w") as f:
            f.attrs.update(library="bsvm_scale", kind="external_model", model_kind=kind,
                           params=json.dumps(model.get_params()), hyperparameters=json.dumps(hyp))
        with open(tmp, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(tmp)
