"""Input and hyperparameter validation shared by every estimator.

All public estimators validate their arguments here, on top of
:func:`sklearn.utils.validation.validate_data`, so that bad input gives the
same scikit-learn-conventional error everywhere (``ValueError`` naming the
argument, ``NotFittedError`` before ``fit``) and never reaches a compiled
kernel. ``X`` arrives in the solvers as a finite, C-contiguous float64 matrix
with at least ``min_samples`` rows and at least one column.

Constructor parameters are declared per estimator in scikit-learn's
``_parameter_constraints`` (:mod:`sklearn.utils._param_validation`) and
checked by ``self._validate_params()`` at the start of ``fit``; the
constraints used by several estimators are defined here (:data:`POSITIVE`,
:data:`NON_NEGATIVE`, :data:`POSITIVE_INT`, :data:`SEED`). A bad value raises
``InvalidParameterError`` (a ``ValueError``) naming the parameter, the
estimator, the allowed values and the value received.
"""

from __future__ import annotations

import numbers
import warnings

import numpy as np
from sklearn.utils._param_validation import Interval
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

__all__ = ["check_regression_data", "check_classification_data", "check_predict_X",
           "check_positive", "check_positive_int", "check_beta", "check_nonconstant",
           "warn_target_offset", "store_params", "POSITIVE", "NON_NEGATIVE", "POSITIVE_INT",
           "NON_NEGATIVE_INT", "N_JOBS", "SEED", "IntegerInterval", "check_sample_weight"]

#: a finite number > 0 (NaN and infinity are refused)
POSITIVE = Interval(numbers.Real, 0, None, closed="neither")
#: a finite number >= 0
NON_NEGATIVE = Interval(numbers.Real, 0, None, closed="left")
class IntegerInterval(Interval):
    """An :class:`~sklearn.utils._param_validation.Interval` of integers that
    refuses booleans (``True`` is an ``Integral`` to Python, but
    ``n_starts=True`` is a mistake, not 1)."""

    def __init__(self, left, right, *, closed):
        super().__init__(numbers.Integral, left, right, closed=closed)

    def is_satisfied_by(self, val):
        return not isinstance(val, (bool, np.bool_)) and super().is_satisfied_by(val)


#: an integer >= 1
POSITIVE_INT = IntegerInterval(1, None, closed="left")
#: an integer >= 0
NON_NEGATIVE_INT = IntegerInterval(0, None, closed="left")
#: a number of threads in scikit-learn's convention: >= 1, or -1, -2, ... (all
#: processors, all but one, ...); 0 means nothing
N_JOBS = [IntegerInterval(1, None, closed="left"), IntegerInterval(None, -1, closed="right"),
          None]
#: a seed: None, an int in [0, 2**32 - 1], a RandomState or a Generator
SEED = ["random_state", np.random.Generator]


def store_params(est, params):
    """Set every constructor argument of ``est`` as an attribute, unchanged.

    scikit-learn's convention: ``__init__`` stores its keyword arguments and
    validates nothing (validation happens in ``fit``). Call it as
    ``store_params(self, locals())`` first thing in ``__init__``.

    Parameters
    ----------
    est : BaseEstimator
        The estimator being constructed.
    params : dict
        ``locals()`` of its ``__init__``; ``self`` and ``__class__`` are skipped.
    """
    for name, value in params.items():
        if name not in ("self", "__class__"):
            setattr(est, name, value)


def check_regression_data(est, X, y, min_samples=2):
    """Validate training data of a regressor and record ``n_features_in_``.

    Parameters
    ----------
    est : BaseEstimator
        The estimator being fitted (named in the messages).
    X : array-like of shape (n, d)
        Training inputs; dense, finite, real.
    y : array-like of shape (n,)
        Real, finite targets.
    min_samples : int, default=2
        Smallest accepted ``n``.

    Returns
    -------
    X : ndarray of shape (n, d), C-contiguous float64
    y : ndarray of shape (n,), float64
    """
    X, y = _validate(est, X, y, y_numeric=True, ensure_min_samples=min_samples)
    return X, np.ascontiguousarray(y, dtype=np.float64)


def check_classification_data(est, X, y, binary_only=False, min_samples=2):
    """Validate training data of a classifier and encode its labels.

    Labels may be of any type ``numpy.unique`` can sort (strings, integers,
    booleans); continuous or multi-output targets are refused with
    scikit-learn's "Unknown label type" error.

    Parameters
    ----------
    est, X, min_samples
        As for :func:`check_regression_data`.
    y : array-like of shape (n,)
        Class labels, at least two distinct ones.
    binary_only : bool, default=False
        Refuse more than two classes.

    Returns
    -------
    X : ndarray of shape (n, d), C-contiguous float64
    y : ndarray of shape (n,), the labels as given
    classes : ndarray, the sorted distinct labels
    codes : ndarray of shape (n,), int64 index of each label in ``classes``
    """
    X, y = _validate(est, X, y, ensure_min_samples=min_samples)
    check_classification_targets(y)
    classes, codes = np.unique(y, return_inverse=True)
    name = type(est).__name__
    if classes.shape[0] < 2:
        raise ValueError(f"y has only one class ({classes[0]!r}) but {name} needs samples of "
                         "at least two classes; pass training data with two or more labels.")
    if binary_only and classes.shape[0] > 2:
        raise ValueError(f"Only binary classification is supported by {name}; y has "
                         f"{classes.shape[0]} classes ({classes[:5].tolist()!r}). Pass exactly two "
                         "labels or wrap the estimator in sklearn.multiclass.OneVsRestClassifier.")
    return X, y, classes, codes.astype(np.int64).ravel()


def check_predict_X(est, X, attribute=None):
    """Validate inputs at prediction time against the fitted ``n_features_in_``.

    Parameters
    ----------
    est : BaseEstimator
        A fitted estimator; ``NotFittedError`` otherwise.
    X : array-like of shape (m, d)
        Inputs with the same number of features as in ``fit``.
    attribute : str, optional
        Fitted attribute whose presence marks the estimator as fitted.

    Returns
    -------
    ndarray of shape (m, d), C-contiguous float64
    """
    check_is_fitted(est, attribute)
    return _validate(est, X, reset=False)


def _validate(est, X, y="no_validation", **kwargs):
    """``validate_data`` to C-contiguous float64, naming ``X`` and ``y`` in
    the messages about shapes (scikit-learn's do not)."""
    try:
        return validate_data(est, X, y, dtype=np.float64, order="C", **kwargs)
    except ValueError as exc:
        text = str(exc)
        if text.startswith(("Expected 2D array", "Found array with dim")):
            raise ValueError(f"X must be a 2-D array (n_samples, n_features). {text}") from None
        if "inconsistent numbers of samples" in text:
            raise ValueError(f"X and y must have the same number of samples (one target per "
                             f"row of X). {text}") from None
        raise


def check_positive(name, value, allow_none=False):
    """``value`` as a positive finite float (or array of them).

    Parameters
    ----------
    name : str
        Argument name used in the error message.
    value : float or array-like
        Value to check.
    allow_none : bool, default=False
        Pass ``None`` through unchanged.

    Returns
    -------
    float, ndarray or None
    """
    if value is None and allow_none:
        return None
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        arr = np.array([np.nan])
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}. "
                         f"Pass a number > 0 for {name}.")
    return float(arr) if arr.ndim == 0 else arr


def check_positive_int(name, value, allow_none=False):
    """``value`` as a positive ``int`` (booleans refused).

    Parameters
    ----------
    name : str
        Argument name used in the error message.
    value : int
        Value to check.
    allow_none : bool, default=False
        Pass ``None`` through unchanged.

    Returns
    -------
    int or None
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer; got {value!r}. "
                         f"Pass an int >= 1 for {name}.")
    return int(value)


def check_beta(beta):
    """``beta`` of the soft insensitive loss as a float in (0, 1].

    Parameters
    ----------
    beta : float
        Value to check.

    Returns
    -------
    float
    """
    try:
        b = float(beta)
    except (TypeError, ValueError):
        b = np.nan
    if not (0.0 < b <= 1.0):
        raise ValueError(f"beta must lie in (0, 1]; got {beta!r}. Pass a float with "
                         "0 < beta <= 1 (or None for the size-dependent default).")
    return b


def check_nonconstant(y, name, why):
    """Refuse a constant target vector ``y`` with the reason ``why``.

    Parameters
    ----------
    y : ndarray of shape (n,)
        Targets.
    name : str
        Estimator name for the message.
    why : str
        What a constant target breaks, and the fix.
    """
    if np.ptp(y) == 0.0:
        raise ValueError(f"y is constant (every target equals {y[0]!r}); {name}: {why}")


def warn_target_offset(y, bias_sd, name, fix):
    """Warn when the mean of ``y`` lies far outside the bias prior.

    A model that uses targets as given explains their mean by the bias
    term; a mean more than 5 prior standard deviations of that term from 0
    is fitted badly (the evidence is dominated by the offset).

    Parameters
    ----------
    y : ndarray of shape (n,)
        Targets.
    bias_sd : float
        Largest prior standard deviation of the bias the model allows.
    name : str
        Estimator name for the message.
    fix : str
        How to avoid the problem.
    """
    mean = float(np.mean(y))
    if abs(mean) > 5.0 * bias_sd:
        warnings.warn(f"y has mean {mean:.4g}, {abs(mean) / bias_sd:.3g} times the largest prior "
                      f"standard deviation {bias_sd:.3g} of the {name} bias; the fit will be "
                      f"poor. {fix}", RuntimeWarning, stacklevel=3)


# -- case weights (sample_weight) ------------------------------------------------------
def check_sample_weight(est, sample_weight, n):
    """``sample_weight`` of ``fit`` as a contiguous float64 array of ``n`` weights.

    A case weight multiplies that case's loss in the MAP problem and its
    likelihood term in the evidence (scikit-learn's and LIBSVM's convention).

    Parameters
    ----------
    est : BaseEstimator
        The estimator being fitted (named in the messages).
    sample_weight : array-like of shape (n,) or None
        Finite, non-negative numbers, not all zero.
    n : int
        Number of training cases.

    Returns
    -------
    ndarray of shape (n,) or None
        None when ``sample_weight`` is None.

    Raises
    ------
    ValueError
        Naming ``sample_weight``: text or other non-numeric values, another
        shape than ``(n,)``, NaN or infinite values, negative values, or
        every weight zero.
    """
    if sample_weight is None:
        return None
    name = type(est).__name__
    raw = np.asarray(sample_weight)
    if raw.dtype.kind not in "biuf":
        try:
            raw = raw.astype(np.float64) if raw.dtype.kind == "O" else None
        except (TypeError, ValueError):
            raw = None
        if raw is None:
            raise ValueError(f"sample_weight of {name} must hold numbers; got values of dtype "
                             f"{np.asarray(sample_weight).dtype} (e.g. text). Pass one "
                             "non-negative number per training case.")
    w = np.ascontiguousarray(raw, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"sample_weight of {name} must have shape ({n},), one weight per "
                         f"training case; got shape {w.shape}.")
    bad = np.flatnonzero(~np.isfinite(w))
    if bad.size:
        raise ValueError(f"sample_weight of {name} must be finite; got {w[bad[0]]!r} at case "
                         f"{bad[0]} ({bad.size} non-finite). Pass finite weights >= 0.")
    bad = np.flatnonzero(w < 0)
    if bad.size:
        raise ValueError(f"sample_weight of {name} must be non-negative; got {w[bad[0]]!r} at "
                         f"case {bad[0]} ({bad.size} negative). Pass weights >= 0 (0 leaves a "
                         "case out).")
    if not np.any(w > 0):
        raise ValueError(f"sample_weight of {name} is zero for every case, which leaves nothing "
                         "to fit; give at least one case a positive weight.")
    return w
