"""Repeated cases fitted as one weighted case (:mod:`bsvm_scale.models.merge`).

References: the fit of the deduplicated data with the counts as case weights
(the same problem, so the same bits), and the plain problem with every copy
solved on its own (merging switched off), equal up to the SMO tolerance.
"""

import numpy as np
import pytest

import bsvm_scale.models.btsvc as btsvc_module
from bsvm_scale import BayesianSVC
from bsvm_scale.models.merge import merge_dual, merge_duplicates, merge_fit_inputs
from bsvm_scale.optimization.objective import Warm
from bsvm_scale.optimization.search import Retrain


def _repeated(n=120, seed=0):
    """Rounded inputs (many repeats), labels from a noisy rule, then about
    half of the rows repeated once more, in a shuffled order."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, 2)) * 2.0) / 2.0
    y = (X[:, 0] + 0.5 * X[:, 1] + rng.normal(0, 0.7, n) > 0).astype(int)
    extra = rng.choice(n, n // 2)
    X, y = np.r_[X, X[extra]], np.r_[y, y[extra]]
    order = rng.permutation(y.size)
    return X[order], y[order]


def test_groups_are_same_inputs_and_label_in_order_of_first_occurrence():
    X = np.array([[1.0, 0.0], [2.0, 0.0], [1.0, 0.0], [1.0, 0.0], [3.0, 1.0], [2.0, 0.0]])
    y = np.array([1.0, -1.0, 1.0, -1.0, 1.0, -1.0])
    m = merge_duplicates(X, y, np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    np.testing.assert_array_equal(m.rows, [0, 1, 3, 4])     # row 3: same inputs, other label
    np.testing.assert_array_equal(m.inverse, [0, 1, 0, 2, 3, 1])
    np.testing.assert_array_equal(m.weights, [4.0, 8.0, 4.0, 5.0])
    np.testing.assert_array_equal(m.X, X[[0, 1, 3, 4]])
    np.testing.assert_array_equal(m.y, y[[0, 1, 3, 4]])
    np.testing.assert_array_equal(merge_dual(np.arange(6.0), m), [2.0, 6.0, 3.0, 4.0])
    assert merge_duplicates(X[[0, 1, 3, 4]], y[[0, 1, 3, 4]]) is None  # nothing repeats
    assert merge_duplicates(X[:1], y[:1]) is None


def test_fit_inputs_carry_warm_starts_and_case_ids_to_the_merged_cases():
    X = np.array([[0.0], [1.0], [0.0]])
    y = np.array([1.0, -1.0, 1.0])
    retrain = Retrain(np.zeros(3), Warm(np.array([0.2, 0.5, 0.3])), None)
    merged, (Xm, ym, w, ids, init, rt) = merge_fit_inputs(
        X, y, None, np.array([7, 8, 9]), {"theta": np.zeros(3), "alpha": np.ones(3)}, retrain)
    np.testing.assert_array_equal(w, [2.0, 1.0])
    np.testing.assert_array_equal(ids, [7, 8])
    np.testing.assert_array_equal(init["alpha"], [2.0, 1.0])
    np.testing.assert_allclose(rt.warm.dual, [0.5, 0.5])
    assert merge_fit_inputs(X[:2], y[:2])[0] is None


def test_repeated_cases_give_the_fit_of_the_deduplicated_data_with_counts_as_weights():
    X, y = _repeated()
    kw = dict(optimize=False, kappa0=2.0, kappa=0.5, kappa_b=1.0)
    rep = BayesianSVC(**kw).fit(X, y)
    m = merge_duplicates(X, np.where(y == 1, 1.0, -1.0))
    assert m is not None and m.rows.size < y.size
    ded = BayesianSVC(**kw).fit(X[m.rows], y[m.rows], sample_weight=m.weights)
    assert rep.log_evidence_ == ded.log_evidence_
    np.testing.assert_array_equal(rep.dual_coef_, ded.dual_coef_)
    np.testing.assert_array_equal(rep.support_, m.rows[ded.support_])  # rows of X
    np.testing.assert_array_equal(rep.support_vectors_, ded.support_vectors_)
    Xt = np.random.default_rng(5).normal(size=(50, 2))
    np.testing.assert_array_equal(rep.predict_proba(Xt), ded.predict_proba(Xt))


@pytest.mark.parametrize("optimize", [False, True])
def test_merged_fit_equals_the_plain_problem_up_to_the_smo_tolerance(monkeypatch, optimize):
    """Every copy its own case (merging off) gives the same MAP function and,
    at the same hyperparameters, the same evidence: no constant between them."""
    X, y = _repeated(seed=1)
    kw = dict(optimize=False, kappa0=2.0, kappa=0.5, kappa_b=1.0) if not optimize else \
        dict(n_starts=1, random_state=0)
    merged = BayesianSVC(tol=1e-6, **kw).fit(X, y)
    monkeypatch.setattr(btsvc_module, "merge_fit_inputs", lambda X, y, w, ids, init, rt:
                        (None, (X, y, w, ids, init, rt)))
    plain = BayesianSVC(tol=1e-6, **kw).fit(X, y)
    assert plain.support_.size > merged.support_.size
    Xt = np.random.default_rng(6).normal(size=(60, 2))
    if optimize:  # searches agree up to the SMO tolerance: hyperparameters close
        np.testing.assert_allclose(merged.theta_, plain.theta_, atol=1e-2)
        np.testing.assert_allclose(merged.log_evidence_, plain.log_evidence_, atol=1e-3)
        np.testing.assert_allclose(merged.predict_proba(Xt), plain.predict_proba(Xt), atol=1e-3)
        return
    np.testing.assert_allclose(merged.log_evidence_, plain.log_evidence_, rtol=0, atol=1e-5)
    np.testing.assert_allclose(merged.decision_function(Xt, return_std=True),
                               plain.decision_function(Xt, return_std=True), atol=1e-6)


def test_multiclass_models_are_those_of_the_deduplicated_data_with_counts_as_weights():
    X, y = _repeated(n=150, seed=2)
    y = np.where(X[:, 1] > 0.6, 2, y)
    kw = dict(optimize=False, kappa0=2.0, kappa=0.5, kappa_b=1.0)
    rep = BayesianSVC(**kw).fit(X, y)
    m = merge_duplicates(X, y.astype(float))
    ded = BayesianSVC(**kw).fit(X[m.rows], y[m.rows], sample_weight=m.weights)
    for a, b in zip(rep.support_, ded.support_):
        np.testing.assert_array_equal(a, m.rows[b])          # rows of the X given to fit
    np.testing.assert_array_equal(rep.log_evidence_, ded.log_evidence_)
    Xt = np.random.default_rng(7).normal(size=(40, 2))
    np.testing.assert_array_equal(rep.predict_proba(Xt), ded.predict_proba(Xt))


def _repeated_regression(n=120, seed=3):
    """Rounded inputs and targets (many repeated rows), then about a third of
    the rows repeated once more, shuffled."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-2, 2, (n, 2)) * 2.0) / 2.0
    y = np.round(np.sinc(X[:, 0]) + 0.3 * X[:, 1] + rng.normal(0, 0.2, n), 1)
    extra = rng.choice(n, n // 3)
    X, y = np.r_[X, X[extra]], np.r_[y, y[extra]]
    order = rng.permutation(y.size)
    return X[order], y[order]


def test_bsvr_merged_fit_equals_the_plain_problem_up_to_the_smo_tolerance(monkeypatch):
    """BSVR at given hyperparameters: the repeated cases as one weighted case
    give the MAP function, the evidence and the error bars of the copies
    solved one by one; indices refer to rows of the ``X`` given to fit."""
    import bsvm_scale.models.bsvr as bsvr_module
    from bsvm_scale import BayesianSVR

    X, y = _repeated_regression()
    kw = dict(optimize=False, C=3.0, epsilon=0.1, beta=0.3, kappa=0.8, kappa_b=1.0, tol=1e-7)
    merged = BayesianSVR(**kw).fit(X, y)
    monkeypatch.setattr(bsvr_module, "merge_fit_inputs", lambda X, y, w, ids, start, rt:
                        (None, (X, y, w, ids, start, rt)))
    plain = BayesianSVR(**kw).fit(X, y)
    assert plain.support_.size > merged.support_.size
    for name in ("support_", "off_bound_", "on_bound_"):
        rows = getattr(merged, name)
        assert set(rows) <= set(getattr(plain, name))           # first rows of their groups
    np.testing.assert_allclose(merged.log_evidence_, plain.log_evidence_, rtol=0, atol=1e-5)
    Xt = np.random.default_rng(8).uniform(-2, 2, (60, 2))
    np.testing.assert_allclose(merged.predict(Xt, return_std=True),
                               plain.predict(Xt, return_std=True), atol=1e-5)
