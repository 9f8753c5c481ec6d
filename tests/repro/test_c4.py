"""C4's table of binary classifiers, for one-versus-rest and one-versus-one models."""

import warnings

import numpy as np
import pytest

from bsvm_scale import BayesianSVC
from repro.c4 import _binary_rows


@pytest.mark.parametrize("multi_class, names", [
    ("ovr", ["a vs rest", "b vs rest", "c vs rest"]),
    ("ovo", ["a vs b", "a vs c", "b vs c"])])
def test_each_binary_classifier_is_scored_on_its_own_problem(multi_class, names):
    rng = np.random.default_rng(0)
    y = np.repeat(np.array(["a", "b", "c"]), 30)
    X = np.array([[0, 0], [3, 0], [0, 3]])[np.repeat([0, 1, 2], 30)] + rng.normal(size=(90, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = BayesianSVC(n_starts=1, multi_class=multi_class,
                        optimizer_options={"maxiter": 3}).fit(X, y)
    rows = _binary_rows(m, X, y)
    assert [r[0] for r in rows] == names
    mu = m.latent_moments(X)[0]
    for k, (name, row) in enumerate(zip(names, rows)):
        first, second = name.split(" vs ")
        cases = np.ones(90, bool) if second == "rest" else (y == first) | (y == second)
        assert row[5] == np.mean((mu[cases, k] > 0) != (y[cases] == first))
        assert row[1] == len(m.estimators_[k].support_)
