"""Pieces shared by the public estimators: input standardisation, start
points, and checks of hyperparameter arguments.

Inputs are standardised internally with training statistics (mean and
standard deviation per column; a constant column keeps scale 1), as the thesis
does for every experiment; targets are used as given. Hyperparameters such as
``kappa`` therefore refer to standardised inputs.
"""

from __future__ import annotations

import numpy as np

from .validation import check_beta, check_positive  # re-exported: one implementation

__all__ = ["Standardizer", "standardizer_for", "check_positive", "check_beta", "resolve_rng",
           "BinaryClassifierMixin"]


class Standardizer:
    """Column-wise standardisation with training statistics."""

    def __init__(self, mean, scale):
        self.mean = np.ascontiguousarray(mean, dtype=np.float64)
        self.scale = np.ascontiguousarray(scale, dtype=np.float64)

    @classmethod
    def fit(cls, X, sample_weight=None, fixed=None):
        """Mean and standard deviation of every column of ``X``; with case
        weights ``sample_weight`` (finite, ``>= 0``, not all zero) the
        weighted ones, ``sum_i w_i x_i / sum_i w_i`` and the square root of
        ``sum_i w_i (x_i - mean)^2 / sum_i w_i``: those of the data set with
        case ``i`` repeated ``w_i`` times for integer weights (cases of
        weight 0 do not count); equal weights (e.g. all ones) give the
        unweighted statistics exactly. A column with a finite entry in
        ``fixed`` keeps mean 0 and that scale instead (the coded columns of a
        table, :func:`standardizer_for`)."""
        w = sample_weight
        if w is not None and not np.all(w == w[0]):
            mean = np.average(X, axis=0, weights=w)
            scale = np.sqrt(np.average((X - mean) ** 2, axis=0, weights=w))
        else:
            mean = X.mean(axis=0)
            scale = X.std(axis=0)
        scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
        if fixed is not None:
            keep = np.isfinite(fixed)
            mean[keep] = 0.0
            scale[keep] = fixed[keep]
        return cls(mean, scale)

    def transform(self, X):
        return np.ascontiguousarray((X - self.mean) / self.scale)


def standardizer_for(est, X, sample_weight=None):
    """The input standardisation of ``est`` on its training design matrix
    ``X`` (weighted by ``sample_weight``): every column standardised, except
    the coded columns of a model fitted on a table, which keep the fixed
    scales of its coding (:attr:`bsvm_scale.tables.TableEncoder.kernel_scales`)."""
    encoder = getattr(est, "encoder_", None)
    return Standardizer.fit(X, sample_weight, None if encoder is None else encoder.kernel_scales)


def resolve_rng(random_state):
    """numpy Generator from None, an int seed or a Generator/RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    return np.random.default_rng(random_state)


class BinaryClassifierMixin:
    """Prediction and scikit-learn tags of the binary-only classifiers.

    Put before ``ClassifierMixin`` in the bases. Such a classifier refuses
    more than two classes in ``fit``; the ``multi_class=False`` tag makes
    scikit-learn's estimator checks use binary problems for it.
    """

    def predict(self, X):
        """Labels ``classes_[f(x) > 0]`` (``f`` from ``decision_function``).

        Parameters
        ----------
        X : array-like of shape (m, d)

        Returns
        -------
        ndarray of shape (m,)
        """
        f = self.decision_function(X)  # first: NotFittedError before any use of classes_
        return self.classes_[(f > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = False
        return tags
