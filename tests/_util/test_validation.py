"""Bad input gives a clear error from every estimator (bsvm_scale._util.validation).

Each case is run against all nine estimators; the expected message
fragments are scikit-learn's conventional wording, for inputs and for
hyperparameters (``InvalidParameterError`` from the estimators'
``_parameter_constraints``: the parameter, the estimator, the allowed values
and the value received).
"""

import re
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.exceptions import NotFittedError

from fast_estimators import all_estimators, classifiers, name, regressors

RNG = np.random.default_rng(8)
X = RNG.normal(size=(30, 3))
Y_REG = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=30)
Y_CLS = np.where(X[:, 0] + 0.3 * RNG.normal(size=30) > 0, 1, 0)
XT = RNG.normal(size=(7, 3))


def _target(est):
    return Y_CLS if is_classifier(est) else Y_REG


def _fit(est, X_, y_):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(X_, y_)


def _with(X_, i, j, value):
    X_ = X_.copy()
    X_[i, j] = value
    return X_


BAD_X = {
    "nan": (_with(X, 4, 1, np.nan), "Input X contains NaN"),
    "inf": (_with(X, 4, 1, np.inf), "Input X contains infinity"),
    "1d": (X[:, 0], "Expected 2D array"),
    "3d": (X[:, :, None], "Found array with dim 3"),
    "empty": (X[:0], "0 sample"),
    "no_features": (X[:, :0], "0 feature"),
    "complex": (X + 1j, "Complex data not supported"),
    "strings": (X.astype(str).astype(object) + "a", "could not convert"),
}


@pytest.mark.parametrize("case", sorted(BAD_X))
@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_bad_X_in_fit(est, case):
    Xb, msg = BAD_X[case]
    y = _target(est)[: Xb.shape[0]]
    with pytest.raises(ValueError, match=msg):
        _fit(est, Xb, y)


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_mismatched_lengths(est):
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        _fit(est, X, _target(est)[:-1])


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_single_sample(est):
    with pytest.raises(ValueError, match="1 sample"):
        _fit(est, X[:1], _target(est)[:1])


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_y_two_dimensional_with_several_columns(est):
    y = np.column_stack((_target(est), _target(est)))
    with pytest.raises(ValueError, match="y"):
        _fit(est, X, y)


@pytest.mark.parametrize("est", regressors(), ids=name)
@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_regression_target(est, value):
    y = Y_REG.copy()
    y[3] = value
    with pytest.raises(ValueError, match="Input y contains"):
        _fit(est, X, y)


@pytest.mark.parametrize("est", classifiers(), ids=name)
def test_one_class_only(est):
    with pytest.raises(ValueError, match="only one class"):
        _fit(est, X, np.ones(30, dtype=int))


@pytest.mark.parametrize("est", classifiers(), ids=name)
def test_continuous_labels_refused(est):
    with pytest.raises(ValueError, match="Unknown label type"):
        _fit(est, X, Y_REG)


@pytest.mark.parametrize("est", [c for c in classifiers() if name(c) != "BayesianSVC"], ids=name)
def test_binary_only_classifiers_refuse_three_classes(est):
    with pytest.raises(ValueError, match="Only binary classification is supported"):
        _fit(est, X, np.arange(30) % 3)


@pytest.mark.parametrize("est", classifiers(), ids=name)
def test_string_labels_map_like_integer_codes(est):
    """Labels 'no'/'yes' give exactly the predictions of codes 0/1, mapped back."""
    labels = np.array(["no", "yes"])[Y_CLS]
    by_code = _fit(est, X, Y_CLS).predict(XT)
    by_label = _fit(clone(est), X, labels)
    assert list(by_label.classes_) == ["no", "yes"]
    np.testing.assert_array_equal(by_label.predict(XT), labels_of(by_code))


def labels_of(codes):
    return np.array(["no", "yes"])[codes]


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_constant_feature_is_harmless(est):
    """A constant input column neither produces NaN nor changes predictions,
    whatever its value (standardisation must not divide by its zero spread)."""
    y = _target(est)
    preds = []
    for c in (0.0, 1e6):
        Xc = np.column_stack((X, np.full(30, c)))
        Xtc = np.column_stack((XT, np.full(7, c)))
        preds.append(np.asarray(_fit(clone(est), Xc, y).predict(Xtc)))
    if preds[0].dtype.kind == "f":
        assert np.all(np.isfinite(preds[0]))
        np.testing.assert_allclose(preds[0], preds[1], rtol=1e-6, atol=1e-8)
    else:
        np.testing.assert_array_equal(preds[0], preds[1])


@pytest.mark.parametrize("est", [r for r in regressors() if name(r) != "BayesianSVR"], ids=name)
def test_constant_target_predicts_the_constant(est):
    y = np.full(30, 3.5)
    pred = _fit(est, X, y).predict(XT)
    assert np.all(np.isfinite(pred))
    np.testing.assert_allclose(pred, 3.5, rtol=0.05)


def test_constant_target_bsvr_needs_kappa0():
    """BSVR's kappa0 = var(y) (fixed, or the start and box of the inferred
    default) is 0 for a constant target: refused with the fix named; an
    explicit kappa0 fits and predicts the constant."""
    from bsvm_scale import BayesianSVR

    y = np.full(30, 3.5)
    with pytest.raises(ValueError, match="y is constant.*kappa0"):
        BayesianSVR(optimize=False).fit(X, y)
    with pytest.raises(ValueError, match="y is constant.*kappa0"):
        BayesianSVR(optimize=False, kappa0="variance").fit(X, y)
    m = BayesianSVR(optimize=False, kappa0=1.0, C=10.0, epsilon=0.1, kappa=0.5,
                    kappa_b=100.0).fit(X, y)
    np.testing.assert_allclose(m.predict(XT), 3.5, atol=0.2)


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_predict_checks_n_features_and_finiteness(est):
    m = _fit(est, X, _target(est))
    with pytest.raises(ValueError, match="X has 2 features, but .* is expecting 3"):
        m.predict(XT[:, :2])
    with pytest.raises(ValueError, match="Input X contains NaN"):
        m.predict(_with(XT, 0, 0, np.nan))


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_predict_before_fit(est):
    with pytest.raises(NotFittedError):
        est.predict(XT)


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_unknown_hyperparameter_name(est):
    with pytest.raises(ValueError, match="Invalid parameter 'kapa'"):
        est.set_params(kapa=1.0)


POSITIVE = ("C", "kappa", "kappa0", "kappa_b", "sigma2", "tol", "cache_mb")


def _hyper_cases():
    for est in all_estimators():
        params = est.get_params()
        for p in POSITIVE:
            if p in params:
                for bad in (0.0, -1.0, np.nan):
                    yield est, p, bad
        if "epsilon" in params:
            yield est, "epsilon", -0.1
        if name(est) == "BayesianSVR":
            for bad in (0.0, -0.5, 1.5, np.nan):
                yield est, "beta", bad
        if name(est) == "RVR":
            for bad in (0.0, -2.0):
                yield est, "beta", bad


@pytest.mark.parametrize("est,param,bad", list(_hyper_cases()),
                         ids=lambda v: name(v) if hasattr(v, "fit") else repr(v))
def test_bad_hyperparameter_named_in_error(est, param, bad):
    est = clone(est).set_params(**{param: bad})
    if "optimize" in est.get_params():
        est.set_params(optimize=False)
    with pytest.raises(ValueError, match=rf"^The '{param}' parameter of {name(est)} must be "
                                         rf".* Got {re.escape(repr(bad))} instead\.$"):
        _fit(est, X, _target(est))


def _integer_cases():
    for est in all_estimators():
        for param, bad in (("n_starts", 0), ("n_starts", 1.5), ("max_iter", 0)):
            if param in est.get_params() and name(est) not in ("SVR", "SVC", "TSVC"):
                yield est, param, bad


@pytest.mark.parametrize("est,param,bad", list(_integer_cases()),
                         ids=lambda v: name(v) if hasattr(v, "fit") else repr(v))
def test_bad_integer_settings(est, param, bad):
    est = clone(est).set_params(**{param: bad})
    with pytest.raises(ValueError, match=rf"^The '{param}' parameter of {name(est)} must be an "
                                         r"int in the range \[1, inf\)"):
        _fit(est, X, _target(est))


@pytest.mark.parametrize("value, ok", [(1, True), (np.int64(3), True), (True, False),
                                       (np.bool_(True), False), (0, False), (1.0, False)])
def test_integer_parameters_refuse_booleans(value, ok):
    """``n_starts=True`` is a mistake, not 1 (Python counts bools as integers)."""
    from bsvm_scale._util.validation import POSITIVE_INT

    assert POSITIVE_INT.is_satisfied_by(value) is ok


def test_an_estimator_names_a_boolean_count():
    from sklearn.utils._param_validation import InvalidParameterError

    from bsvm_scale import BayesianSVR

    X = np.linspace(-1.0, 1.0, 20)[:, None]
    with pytest.raises(InvalidParameterError, match="'n_starts'.*Got True"):
        BayesianSVR(n_starts=True).fit(X, X[:, 0])


# ---------------------------------------------------------------------------
# check_sample_weight (the shared case-weight checker)
# ---------------------------------------------------------------------------
class _Est:
    pass


@pytest.mark.parametrize("value", [[1, 2, 3], np.array([0.5, 0.0, 2.0]), (1, 1, 1),
                                   np.array([True, False, True]),
                                   np.array([1, 2, 3], dtype=object)])
def test_check_sample_weight_accepts(value):
    from bsvm_scale._util.validation import check_sample_weight

    w = check_sample_weight(_Est(), value, 3)
    assert w.dtype == np.float64 and w.shape == (3,) and w.flags.c_contiguous
    np.testing.assert_array_equal(w, np.asarray(value, dtype=float))
    assert check_sample_weight(_Est(), None, 3) is None


def test_check_sample_weight_copies():
    from bsvm_scale._util.validation import check_sample_weight

    v = np.array([1.0, 2.0, 3.0])
    w = check_sample_weight(_Est(), v, 3)
    w[0] = 7.0
    assert v[0] == 1.0


@pytest.mark.parametrize("value,fragment", [
    ([1.0, 2.0], r"shape \(2,\) but X has 3 rows"),
    (np.ones((3, 1)), r"shape \(3, 1\)"),
    (2.0, r"shape \(\)"),
    ([1.0, np.nan, 1.0], "NaN or infinite"),
    ([1.0, np.inf, 1.0], "NaN or infinite"),
    ([1.0, -0.5, 1.0], r"non-negative; sample_weight\[1\] = -0.5"),
    ([0, 0, 0], "zero for every case"),
    (["a", "b", "c"], "must be numeric"),
    (["1", "2", "3"], "must be numeric"),
    ([1j, 1, 1], "must be numeric"),
    (np.array([1, "x", 2], dtype=object), "must be numeric"),
])
def test_check_sample_weight_refuses(value, fragment):
    from bsvm_scale._util.validation import check_sample_weight

    with pytest.raises(ValueError, match=r"_Est: sample_weight .*") as info:
        check_sample_weight(_Est(), value, 3)
    assert re.search(fragment, str(info.value)), str(info.value)
    assert "Pass sample_weight as a 1-D array of 3" in str(info.value)
