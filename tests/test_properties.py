"""Property-based tests (hypothesis): fit/predict on random small data sets
and HDF5 round trips of data sets and models.

Examples are few (``max_examples``) and deadlines off: each example fits
a model, and the suite must stay fast on two cores.
"""

import warnings

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from sklearn.base import clone, is_classifier

from bsvm_scale import GPC, GPR, RVC, RVR, SVC, SVR, TSVC, BayesianSVC, BayesianSVR
from bsvm_scale.datasets import Dataset, read_dataset, write_dataset
from bsvm_scale.storage import load_model, save_model

FAST = [
    BayesianSVR(optimize=False, C=2.0, epsilon=0.1, kappa=1.0, kappa_b=10.0),
    BayesianSVC(optimize=False),
    SVR(), SVC(), TSVC(),
    GPR(optimize=False), GPC(optimize=False), RVR(max_iter=30), RVC(max_iter=30),
]
SETTINGS = settings(max_examples=8, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture,
                                           HealthCheck.too_slow])


@st.composite
def problems(draw):
    """(X, y_real, y_label, Xt): 4-20 points in 1-3 dims on scales 1e-3..1e3."""
    n = draw(st.integers(4, 20))
    d = draw(st.integers(1, 3))
    scale = draw(st.sampled_from([1e-3, 1.0, 1e3]))
    elems = st.floats(-1.0, 1.0, allow_nan=False, allow_subnormal=False)
    X = draw(arrays(np.float64, (n, d), elements=elems)) * scale
    y = draw(arrays(np.float64, n, elements=st.floats(-10, 10, allow_subnormal=False)))
    lab = np.arange(n) % 2                      # both classes always present
    lab = draw(st.permutations(lab.tolist()))
    Xt = draw(arrays(np.float64, (3, d), elements=elems)) * scale
    return X, y, np.asarray(lab), Xt


def _fit(est, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return clone(est).fit(X, y)


def _constant_target_refused(est, y):
    return type(est).__name__ == "BayesianSVR" and np.ptp(y) == 0


@SETTINGS
@given(problems())
def test_fit_predict_finite_on_random_data(prob):
    """Every estimator fits any small finite data set (constant y excepted for
    BSVR, which says so) and predicts finite values, labels among classes_,
    probabilities in [0, 1] summing to 1 and non-negative standard deviations."""
    X, y, lab, Xt = prob
    for est in FAST:
        target = lab if is_classifier(est) else y
        if _constant_target_refused(est, target):
            continue
        m = _fit(est, X, target)
        pred = m.predict(Xt)
        assert pred.shape == (3,)
        if is_classifier(est):
            assert set(pred.tolist()) <= set(m.classes_.tolist())
            if hasattr(m, "predict_proba"):
                P = m.predict_proba(Xt)
                assert np.all((P >= 0) & (P <= 1))
                np.testing.assert_allclose(P.sum(axis=1), 1.0, atol=1e-9)
        else:
            assert np.all(np.isfinite(pred)), type(est).__name__
            if type(est).__name__ != "SVR":
                std = m.predict(Xt, return_std=True)[1]
                assert np.all(np.isfinite(std) & (std >= 0)), type(est).__name__


names = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"),
                min_size=1, max_size=12)


@SETTINGS
@given(problems(), names, st.lists(names, min_size=3, max_size=3),
       st.sampled_from([None, "gzip"]))
def test_dataset_round_trip_is_exact(tmp_path_factory, prob, name, feats, compression):
    X, y, _, _ = prob
    ds = Dataset(X=X, y=y, name=name, task="regression", feature_names=feats[: X.shape[1]],
                 provenance={"note": name}, description=name)
    path = tmp_path_factory.mktemp("ds") / "d.h5"
    write_dataset(ds, path, compression=compression)
    back = read_dataset(path)
    assert back.X.tobytes() == ds.X.tobytes() and back.y.tobytes() == ds.y.tobytes()
    assert (back.name, back.feature_names, back.provenance, back.description) == \
        (ds.name, ds.feature_names, ds.provenance, ds.description)


@SETTINGS
@given(problems(), st.sampled_from(range(len(FAST))))
def test_model_round_trip_predicts_bitwise(tmp_path_factory, prob, which):
    X, y, lab, Xt = prob
    est = FAST[which]
    target = lab if is_classifier(est) else y
    if _constant_target_refused(est, target):
        return
    m = _fit(est, X, target)
    path = tmp_path_factory.mktemp("model") / "m.h5"
    save_model(m, path)
    back = load_model(path)
    assert type(back) is type(m)
    np.testing.assert_array_equal(back.predict(Xt), m.predict(Xt))
    if hasattr(m, "predict_proba"):
        np.testing.assert_array_equal(back.predict_proba(Xt), m.predict_proba(Xt))
