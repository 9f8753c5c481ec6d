"""BTSVC with more than two classes: one-versus-one models and their coupling,
against direct binary fits and the coupling functions; threads, storage,
retraining, resume and the decision-function shapes."""

import numpy as np
import pytest
from reference import three_blobs

from bsvm_scale import BayesianSVC
from bsvm_scale.inference.coupling import (couple_product, couple_wu_lin_weng, ovo_pairs,
                                           ovo_votes, pairwise_matrix)
from bsvm_scale.inference.objective_trig import TrigObjective
from bsvm_scale.models.multiclass import binary_pairs
from bsvm_scale.storage import load_model, save_model

FAST = {"n_starts": 1, "optimizer_options": {"maxiter": 4}}


def _three(n_per=30, seed=1):
    return three_blobs(n_per, seed)


@pytest.fixture(scope="module")
def ovo():
    X, y = _three()
    return X, y, BayesianSVC(multi_class="ovo", n_jobs=1, **FAST).fit(X, y)


def test_each_pairwise_model_is_the_binary_fit_on_the_pairs_cases(ovo):
    X, y, m = ovo
    assert len(m.estimators_) == 3 and ovo_pairs(3) == [(0, 1), (0, 2), (1, 2)]
    Xt = X[::7] + 0.1
    for (i, j), est, sup in zip(ovo_pairs(3), m.estimators_, m.support_):
        rows = (y == m.classes_[i]) | (y == m.classes_[j])
        direct = BayesianSVC(n_jobs=1, **FAST).fit(X[rows], y[rows] == m.classes_[i])
        np.testing.assert_array_equal(direct.theta_, est.theta_)
        np.testing.assert_array_equal(direct.predict_proba(Xt), est.predict_proba(Xt))
        assert set(y[sup]) <= {m.classes_[i], m.classes_[j]}  # rows of the X given to fit


@pytest.mark.parametrize("coupling, couple", [("product", couple_product),
                                              ("wu_lin_weng", couple_wu_lin_weng)])
def test_probabilities_are_the_coupled_pairwise_probabilities(ovo, coupling, couple):
    X, y, m = ovo
    m = BayesianSVC(**{**m.get_params(), "coupling": coupling}).fit(X, y)
    Xt = np.random.default_rng(5).normal(1.0, 1.5, (25, 2))
    r = np.column_stack([e.predict_proba(Xt)[:, 1] for e in m.estimators_])
    P = m.predict_proba(Xt)
    np.testing.assert_allclose(P, couple(pairwise_matrix(r, 3)), rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    assert list(m.predict(Xt)) == list(m.classes_[np.argmax(P, axis=1)])


def test_decision_function_shapes_follow_scikit_learns_svc(ovo):
    X, y, m = ovo
    mu, sd = m.latent_moments(X[:10])
    assert mu.shape == sd.shape == (10, 3)
    np.testing.assert_allclose(m.decision_function(X[:10]), ovo_votes(mu, 3))
    m2 = BayesianSVC(**{**m.get_params(), "decision_function_shape": "ovo"})
    m2.__dict__.update({k: v for k, v in m.__dict__.items() if k.endswith("_")})
    mu2, sd2 = m2.decision_function(X[:10], return_std=True)
    np.testing.assert_array_equal(mu2, mu)
    np.testing.assert_array_equal(mu[:, 0], m.estimators_[0].decision_function(X[:10]))
    with pytest.raises(ValueError, match="decision_function_shape='ovo'"):
        m.decision_function(X[:10], return_std=True)


def test_two_classes_give_the_binary_model_whatever_multi_class_says():
    X, y = _three()
    keep = y != "c"
    a = BayesianSVC(multi_class="ovr", n_jobs=1, **FAST).fit(X[keep], y[keep])
    b = BayesianSVC(multi_class="ovo", n_jobs=1, **FAST).fit(X[keep], y[keep])
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    assert not hasattr(b, "estimators_")


def test_pairwise_models_on_threads_are_those_of_one_thread():
    X, y = _three(seed=2)
    fits = [BayesianSVC(multi_class="ovo", n_jobs=k, **FAST).fit(X, y) for k in (1, 2)]
    np.testing.assert_array_equal(fits[0].log_evidence_, fits[1].log_evidence_)
    np.testing.assert_array_equal(fits[0].predict_proba(X), fits[1].predict_proba(X))


def test_a_model_file_keeps_the_pairwise_models(ovo, tmp_path):
    X, y, m = ovo
    save_model(m, tmp_path / "ovo.h5")
    back = load_model(tmp_path / "ovo.h5")
    assert back.multi_class == "ovo" and back.coupling == "product"
    np.testing.assert_array_equal(back.predict_proba(X), m.predict_proba(X))
    np.testing.assert_array_equal(back.decision_function(X), m.decision_function(X))


def test_a_retraining_starts_each_pair_from_its_earlier_model(ovo):
    X, y, m = ovo
    ids = np.arange(y.size)
    first = BayesianSVC(multi_class="ovo", n_jobs=1, **FAST).fit(X, y, case_ids=ids)
    for est, sup in zip(first.estimators_, first.support_):
        np.testing.assert_array_equal(est.support_case_ids_, ids[sup])
    again = BayesianSVC(multi_class="ovo", n_jobs=1, warm_start_from=first,
                        optimizer_options={"maxiter": 4}).fit(X, y, case_ids=ids)
    cold = BayesianSVC(multi_class="ovo", n_jobs=1, warm_start_from=first,
                       optimizer_options={"maxiter": 4}).fit(X, y)  # no case ids: no carried alpha
    for a, b, c in zip(first.estimators_, again.estimators_, cold.estimators_):
        np.testing.assert_array_equal(b.starts_[0]["theta0"], a.theta_)
        smo = [e.starts_[0]["trajectory"][0]["info"]["smo_iter"] for e in (b, c)]
        assert smo[0] < smo[1]  # the pair's SMO began at its earlier alpha
    with pytest.raises(ValueError, match="multi_class='ovo', this one 'ovr'"):
        BayesianSVC(warm_start_from=first, multi_class="ovr", **FAST).fit(X, y, case_ids=ids)


def test_resume_takes_one_entry_per_pair():
    X, y = _three()
    with pytest.raises(ValueError, match=r"multi_class='ovo' init must be a list of 3 entries"):
        BayesianSVC(multi_class="ovo", **FAST).fit(X, y, init=[None, None])
    X4 = np.r_[X, X[:30] + [5, 5]]
    y4 = np.r_[y, np.full(30, "d")]
    calls = []
    BayesianSVC(multi_class="ovo", n_jobs=2, **FAST).fit(
        X4, y4, callback=lambda k, rec, state: calls.append(k[0]), init=[None] * 6)
    assert calls == sorted(calls) and set(calls) == set(range(6))


def test_an_unknown_multi_class_or_coupling_is_an_error_naming_the_parameter():
    X, y = _three()
    with pytest.raises(ValueError, match="multi_class"):
        BayesianSVC(multi_class="pairs").fit(X, y)
    with pytest.raises(ValueError, match="coupling"):
        BayesianSVC(coupling="libsvm").fit(X, y)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_an_ard_model_of_a_table_retrains_on_the_same_columns(multi_class):
    pd = pytest.importorskip("pandas")
    X, y = _three()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "colour": np.where(X[:, 0] > 1, "red", "blue")})
    kw = dict(ard=True, multi_class=multi_class, n_jobs=1, **FAST)
    first = BayesianSVC(**kw).fit(frame, y)
    assert first.ard_groups_ is not None
    again = BayesianSVC(warm_start_from=first, **kw).fit(frame, y)
    for a, b in zip(first.estimators_, again.estimators_):
        np.testing.assert_array_equal(b.starts_[0]["theta0"], a.theta_)


def test_a_refit_on_an_array_drops_the_tables_groups():
    pd = pytest.importorskip("pandas")
    X, y = _three()
    frame = pd.DataFrame({"a": X[:, 0], "b": X[:, 1],
                          "colour": np.where(X[:, 0] > 1, "red", "blue")})
    m = BayesianSVC(ard=True, n_jobs=1, **FAST).fit(frame, y)
    assert m.ard_groups_ is not None
    m.fit(X, y)
    assert getattr(m, "ard_groups_", None) is None


@pytest.fixture(scope="module")
def shared():
    X, y = _three(seed=3)
    return X, y, BayesianSVC(shared_kernel=True, n_jobs=1, n_starts=1).fit(X, y)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_a_shared_kernel_is_the_best_point_of_the_summed_evidence(multi_class):
    X, y = _three(seed=3)
    m = BayesianSVC(shared_kernel=True, multi_class=multi_class, n_jobs=1, n_starts=1).fit(X, y)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)  # standardised once, on all cases
    theta = m.estimators_[0].theta_
    for (i, j), est, lev in zip(binary_pairs(3, multi_class), m.estimators_, m.log_evidence_):
        np.testing.assert_array_equal(est.theta_, theta)
        rows = np.flatnonzero((y == m.classes_[i]) | (y == m.classes_[j])) if j is not None \
            else np.arange(y.size)
        yb = np.where(y[rows] == m.classes_[i], 1.0, -1.0)
        ev = TrigObjective(Xs[rows], yb, False, tol=1e-9).evaluate(theta)
        assert -ev.value == pytest.approx(lev, abs=2e-3)
    trajectory = m.estimators_[0].starts_[0]["trajectory"]  # the one search's, summed
    assert -m.log_evidence_.sum() == pytest.approx(min(r["fun"] for r in trajectory), abs=1e-9)


def test_a_shared_kernel_model_on_threads_is_that_of_one_thread(shared):
    X, y, m = shared
    two = BayesianSVC(**{**m.get_params(), "n_jobs": 2}).fit(X, y)
    np.testing.assert_array_equal(two.log_evidence_, m.log_evidence_)
    np.testing.assert_array_equal(two.predict_proba(X), m.predict_proba(X))


def test_a_shared_kernel_model_file_round_trips(shared, tmp_path):
    X, y, m = shared
    save_model(m, tmp_path / "shared.h5")
    back = load_model(tmp_path / "shared.h5")
    assert back.shared_kernel is True
    np.testing.assert_array_equal(back.predict_proba(X), m.predict_proba(X))


def test_a_shared_kernel_search_resumes_exactly():
    X, y = _three(seed=4)
    kw = dict(shared_kernel=True, n_jobs=1, n_starts=1)
    seen = []
    whole = BayesianSVC(**kw).fit(X, y, callback=lambda k, rec, st: seen.append((k, rec, st)))
    assert {k for k, _, _ in seen} == {0}
    funs = [r["fun"] for _, r, _ in seen]
    worse = [k for k in range(2, len(funs) - 1) if funs[k] > min(funs[:k])]
    cut = worse[0] + 1 if worse else 3  # a state whose last solution is not its best's
    theta0 = whole.estimators_[0].starts_[0]["theta0"]
    init = {"theta": theta0, "state": seen[cut - 1][2],
            "evaluations": [r for _, r, _ in seen[:cut]]}
    again = BayesianSVC(**kw).fit(X, y, init=init)
    np.testing.assert_array_equal(again.log_evidence_, whole.log_evidence_)
    np.testing.assert_array_equal(again.predict_proba(X), whole.predict_proba(X))


def test_a_shared_kernel_retraining_starts_from_the_earlier_optimum_and_alphas(shared):
    X, y, first = shared
    ids = np.arange(y.size)
    first = BayesianSVC(**first.get_params()).fit(X, y, case_ids=ids)
    kw = dict(shared_kernel=True, n_jobs=1, warm_start_from=first,
              optimizer_options={"maxiter": 3})
    again = BayesianSVC(**kw).fit(X, y, case_ids=ids)
    cold = BayesianSVC(**kw).fit(X, y)
    np.testing.assert_array_equal(again.estimators_[0].starts_[0]["theta0"],
                                  first.estimators_[0].theta_)
    smo = [e.estimators_[0].starts_[0]["trajectory"][0]["info"]["smo_iter"] for e in (again, cold)]
    assert smo[0] < smo[1]
    separate = BayesianSVC(n_jobs=1, **FAST).fit(X, y)
    with pytest.raises(ValueError, match="same shared_kernel"):
        BayesianSVC(shared_kernel=True, warm_start_from=separate, **FAST).fit(X, y)


def test_two_classes_ignore_shared_kernel():
    X, y = _three()
    keep = y != "c"
    a = BayesianSVC(n_jobs=1, **FAST).fit(X[keep], y[keep])
    b = BayesianSVC(shared_kernel=True, n_jobs=1, **FAST).fit(X[keep], y[keep])
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_at_given_hyperparameters_a_shared_fit_is_each_parts_evaluation_and_weights_repeat():
    X, y = _three(seed=5)
    fixed = dict(shared_kernel=True, optimize=False, kappa0=5.0, kappa=0.4, kappa_b=50.0,
                 n_jobs=1)
    m = BayesianSVC(**fixed).fit(X, y)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    for (i, j), est, lev in zip(binary_pairs(3, "ovo"), m.estimators_, m.log_evidence_):
        assert est.hyperparameters_ == {"kappa0": 5.0, "kappa": 0.4, "kappa_b": 50.0}
        rows = np.flatnonzero((y == m.classes_[i]) | (y == m.classes_[j]))
        yb = np.where(y[rows] == m.classes_[i], 1.0, -1.0)
        ev = TrigObjective(Xs[rows], yb, False).evaluate(np.log([5.0, 0.4, 50.0]))
        assert -ev.value == pytest.approx(lev, abs=1e-3)
    w = np.where(np.arange(y.size) % 4 == 0, 2.0, 1.0)  # weight 2: the case twice
    rep = np.r_[np.arange(y.size), np.flatnonzero(w == 2.0)]
    a = BayesianSVC(**fixed, tol=1e-9).fit(X, y, sample_weight=w)
    b = BayesianSVC(**fixed, tol=1e-9).fit(X[rep], y[rep])
    np.testing.assert_allclose(a.log_evidence_, b.log_evidence_, rtol=1e-6)
    np.testing.assert_allclose(a.predict_proba(X), b.predict_proba(X), atol=1e-6)


def test_a_shared_ard_search_continues_from_the_shared_isotropic_optimum():
    X, y = _three(seed=6)
    X = np.c_[X, np.random.default_rng(0).standard_normal(y.size)]  # an irrelevant input
    m = BayesianSVC(shared_kernel=True, ard=True, n_jobs=2, **FAST).fit(X, y)
    kappa = m.estimators_[0].hyperparameters_["kappa"]
    assert kappa.shape == (3,)
    for est in m.estimators_:
        np.testing.assert_array_equal(est.hyperparameters_["kappa"], kappa)
    rec = m.estimators_[0].starts_[0]
    iso = rec["isotropic"]["theta"]  # the ARD run began at the isotropic optimum
    np.testing.assert_allclose(rec["theta0"], [iso[0], iso[1], iso[1], iso[1], iso[2]])


def test_separate_searches_retrained_from_a_shared_model_begin_without_its_hessian(shared):
    from bsvm_scale.models.multiclass import binary_problems, retrain_starts

    X, y, m = shared
    separate = BayesianSVC(n_jobs=1)
    problems = binary_problems(y, m.classes_, "ovo")
    starts = retrain_starts(separate, m, m.classes_, None, problems)
    assert all(r.hessian is None for r in starts)  # the sum's curvature is not a pair's
    same = retrain_starts(BayesianSVC(shared_kernel=True), m, m.classes_, None, problems)
    assert all(r.hessian is not None for r in same)


@pytest.mark.parametrize("multi_class", ["ovo", "ovr"])
def test_binary_models_fitted_alone_assemble_into_the_fitted_model(multi_class):
    from bsvm_scale.models.multiclass import assemble, fit_one_binary

    X, y = _three(seed=7)
    ids = np.arange(y.size) * 3
    w = np.where(np.arange(y.size) % 5 == 0, 2.0, 1.0)
    kw = dict(multi_class=multi_class, class_weight={"a": 1.5}, n_jobs=1, **FAST)
    whole = BayesianSVC(**kw).fit(X, y, sample_weight=w, case_ids=ids)
    parts = [fit_one_binary(BayesianSVC(**kw), X, y, b, sample_weight=w, case_ids=ids)
             for b in range(3)]
    made = assemble(BayesianSVC(**kw), X, y, parts, sample_weight=w, case_ids=ids)
    np.testing.assert_array_equal(made.log_evidence_, whole.log_evidence_)
    np.testing.assert_array_equal(made.predict_proba(X), whole.predict_proba(X))
    for a, b in zip(made.support_case_ids_, whole.support_case_ids_):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(ValueError, match="index must be one of the 3"):
        fit_one_binary(BayesianSVC(**kw), X, y, 3)
    with pytest.raises(ValueError, match="estimators must hold the 3"):
        assemble(BayesianSVC(**kw), X, y, parts[:2])
