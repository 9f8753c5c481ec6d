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

from ..tables.frame import fit_encoder, is_table, transform_for
from ..tables.schema import describe_rows, is_missing

__all__ = ["check_regression_data", "check_classification_data", "check_predict_X",
           "design_width", "record_table",
           "check_positive", "check_positive_int", "check_beta", "check_nonconstant",
           "warn_target_offset", "store_params", "check_sample_weight", "class_weights", "POSITIVE", "NON_NEGATIVE",
           "POSITIVE_INT",
           "NON_NEGATIVE_INT", "N_JOBS", "SEED", "IntegerInterval"]

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
    X : array-like of shape (n, d), or a table
        Training inputs; dense, finite, real. A table (pandas DataFrame, dict
        of columns, :class:`~bsvm_scale.tables.Table`, or
        :class:`~bsvm_scale.tables.EncodedTable`) is coded by a
        :class:`~bsvm_scale.tables.TableEncoder` fitted on it, kept as
        ``est.encoder_``; ``feature_names_in_`` then holds its input columns
        and ``n_features_in_`` their number (the design matrix returned has
        ``encoder_.n_outputs`` columns).
    y : array-like of shape (n,)
        Real, finite targets.
    min_samples : int, default=2
        Smallest accepted ``n``.

    Returns
    -------
    X : ndarray of shape (n, d), C-contiguous float64
    y : ndarray of shape (n,), float64
    """
    X, encoder = _design_for_fit(est, X)
    X, y = _validate(est, X, _labels(y, "y"), y_numeric=True, ensure_min_samples=min_samples)
    record_table(est, encoder)
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
    X, encoder = _design_for_fit(est, X)
    X, y = _validate(est, X, _labels(y, "y"), ensure_min_samples=min_samples)
    record_table(est, encoder)
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
    encoder = getattr(est, "encoder_", None)
    if encoder is None:
        if is_table(X) and not _numeric_frame(X):
            raise ValueError(f"{type(est).__name__} was fitted on a numeric array, so X must "
                             "be numeric too; fit the model on a table (pandas DataFrame or "
                             "bsvm_scale.tables.Table) to predict from text columns.")
        return _validate(est, X, reset=False)
    if not is_table(X):
        X = np.asarray(X)
        if X.ndim == 2 and X.dtype.kind in "fiub" and X.shape[1] == encoder.n_outputs:
            return _validate_design(X)  # already coded (a data set imported from a table)
    return _validate_design(transform_for(encoder, X, "X"))


def design_width(est):
    """Columns of the design matrix a fitted ``est`` works on: the coded width
    of a model fitted on a table, else ``n_features_in_``."""
    encoder = getattr(est, "encoder_", None)
    return int(encoder.n_outputs) if encoder is not None else int(est.n_features_in_)


def _numeric_frame(X):
    """True for a DataFrame or dict whose columns are all numbers (scikit-learn
    validates those itself)."""
    from ..tables.frame import Table, EncodedTable, table_columns

    if isinstance(X, (Table, EncodedTable)):
        return False
    try:
        return all(v.dtype.kind in "fiub" for v in table_columns(X).values())
    except ValueError:
        return False


def _design_for_fit(est, X):
    """``(design matrix, encoder)`` of a table, or ``(X, None)`` of an array
    (a stale ``encoder_`` of an earlier fit is removed)."""
    if not is_table(X):
        est.__dict__.pop("encoder_", None)
        return X, None
    encoder, design = fit_encoder(X, "X")
    return design, encoder


def record_table(est, encoder):
    """Keep the coding of a table on the fitted estimator (scikit-learn's
    ``feature_names_in_`` and ``n_features_in_`` describe the table's columns)."""
    if encoder is None:
        return
    est.encoder_ = encoder
    est.feature_names_in_ = np.asarray(encoder.input_names, dtype=object)
    est.n_features_in_ = len(encoder.input_names)


def _validate_design(X):
    from sklearn.utils import check_array

    return check_array(X, dtype=np.float64, order="C")


def _labels(y, name):
    """``y`` with missing labels refused (naming their rows); pandas objects
    become arrays."""
    if isinstance(y, str) or y is None:
        return y
    arr = np.asarray(y.to_numpy() if hasattr(y, "to_numpy") else y)
    if arr.dtype.kind == "O" and arr.ndim == 1:
        gaps = np.array([is_missing(v) for v in arr.tolist()], dtype=bool)
        if gaps.any():
            raise ValueError(f"{name} has missing values in {describe_rows(np.flatnonzero(gaps))}"
                             f"; every case needs a target: drop those rows or fill them in.")
        if all(isinstance(v, str) for v in arr.tolist()):
            arr = arr.astype(str)
    return arr


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


# ---------------------------------------------------------------------------
# case weights (one shared checker; self-contained block)
# ---------------------------------------------------------------------------
def check_sample_weight(est, sample_weight, n):
    """Validate the case weights passed to ``est.fit``.

    A case weight multiplies that case's term of the loss (scikit-learn's and
    LIBSVM's convention): a weight of 0 removes the case, an integer weight
    ``k`` acts as ``k`` copies of it.

    Parameters
    ----------
    est : BaseEstimator
        The estimator being fitted (named in the messages).
    sample_weight : array-like of shape (n,) or None
        Finite, non-negative real numbers, not all zero.
    n : int
        Number of training cases.

    Returns
    -------
    ndarray of shape (n,), float64, or None
        A new contiguous array (the caller's object is never modified);
        ``None`` when ``sample_weight`` is None.

    Raises
    ------
    ValueError
        Naming ``sample_weight``: not numeric (text, objects, complex), not of
        shape ``(n,)``, NaN or infinite, negative, or all zero.
    """
    if sample_weight is None:
        return None
    name = type(est).__name__
    fix = f"Pass sample_weight as a 1-D array of {n} finite numbers >= 0, not all zero, or None."
    arr = np.asarray(sample_weight)
    if arr.dtype.kind not in "biuf":
        try:
            if arr.dtype.kind != "O":
                raise TypeError
            arr = arr.astype(np.float64)
        except (TypeError, ValueError):
            first = arr.ravel()[:3].tolist()
            raise ValueError(f"{name}: sample_weight must be numeric; got values of dtype "
                             f"{arr.dtype} (first values {first!r}). {fix}") from None
    if arr.shape != (n,):
        raise ValueError(f"{name}: sample_weight has shape {arr.shape} but X has {n} rows; "
                         f"one weight per case is needed. {fix}")
    w = np.array(arr, dtype=np.float64, order="C", copy=True)
    bad = ~np.isfinite(w)
    if np.any(bad):
        raise ValueError(f"{name}: sample_weight contains NaN or infinite values (first at "
                         f"index {int(np.flatnonzero(bad)[0])}). {fix}")
    if np.any(w < 0):
        i = int(np.flatnonzero(w < 0)[0])
        raise ValueError(f"{name}: sample_weight must be non-negative; sample_weight[{i}] = "
                         f"{float(w[i])!r}. {fix}")
    if not np.any(w > 0):
        raise ValueError(f"{name}: sample_weight is zero for every case (all weights are zero), "
                         f"so nothing is left to fit. {fix}")
    return w


def class_weights(est, classes, codes):
    """Weight of each class of ``classes`` (``class_weight_``) from ``est.class_weight``.

    ``None``: ones; ``"balanced"``: ``n / (n_classes * count(class))`` (as
    :func:`sklearn.utils.class_weight.compute_class_weight`, from the counts
    of ``y``, not from ``sample_weight``); a dict ``{label: weight}``: the
    weights of the labels named (finite, >= 0), 1 for the others.
    """
    cw = est.class_weight
    k = classes.shape[0]
    if cw is None:
        return np.ones(k)
    if isinstance(cw, str):   # "balanced" (the only string the constraints allow)
        return codes.shape[0] / (k * np.bincount(codes, minlength=k).astype(np.float64))
    name = type(est).__name__
    known = classes.tolist()
    out = np.ones(k)
    for key, value in cw.items():
        if key not in known:
            raise ValueError(f"{name}: class_weight has the key {key!r}, which is not a class "
                             f"of y (classes {known!r}); use labels of y as keys.")
        number = isinstance(value, (int, float, np.integer, np.floating))
        if isinstance(value, bool) or not number or not (np.isfinite(value) and value >= 0):
            raise ValueError(f"{name}: class_weight[{key!r}] = {value!r}; class weights must be "
                             "finite numbers >= 0.")
        out[known.index(key)] = float(value)
    return out
