"""Tests of the two-stage CV grid search (bsvm_scale.baselines.model_selection)."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from bsvm_scale.baselines.model_selection import (C1_BOX, R2_BOX, _pick_best, grid_search_cv,
                                                  log_grid)
from bsvm_scale.baselines.svm import SVC, SVR, TSVC
from reference import sinc_data


def c1_data(seed, n_per=15):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-2, 1, n_per), rng.normal(2, 1, n_per)][:, None]
    y = np.r_[np.ones(n_per), -np.ones(n_per)]
    return X, y


def test_grid_shapes_defaults_and_refit():
    X, y = sinc_data(60, 0)
    est = SVR(epsilon=0.1, tol=1e-3)
    res = grid_search_cv(est, X, y, coarse_points=3, fine_points=3, cv=3)
    t = res.table
    assert len(t["score"]) == 9 + 9
    assert np.all(t["stage"][:9] == 0) and np.all(t["stage"][9:] == 1)
    np.testing.assert_allclose(np.unique(t["log10_C"][:9]), log_grid(*R2_BOX[0], 3))
    np.testing.assert_allclose(np.unique(t["log10_kappa"][:9]), log_grid(*R2_BOX[1], 3))
    fine_c = np.unique(np.round(t["log10_C"][9:], 12))
    np.testing.assert_allclose(np.diff(fine_c), 0.1)
    # the fine grid is centred on the best coarse point
    k = _pick_best(t["log10_C"][:9], t["log10_kappa"][:9], t["score"][:9], t["n_sv"][:9])
    assert np.isclose(np.median(t["log10_C"][9:]), t["log10_C"][k])
    assert np.isclose(np.median(t["log10_kappa"][9:]), t["log10_kappa"][k])
    # best params belong to the fine stage and are the minimum of it
    fine_scores = t["score"][9:]
    assert res.best_score == pytest.approx(fine_scores.min())
    assert res.best_estimator.C == pytest.approx(res.best_params["C"])
    assert res.best_estimator.kappa == pytest.approx(res.best_params["kappa"])
    assert res.best_estimator.epsilon == 0.1
    assert res.scoring == "mse" and res.n_folds == 3


def test_score_is_pooled_cv_loss():
    X, y = sinc_data(40, 1)
    res = grid_search_cv(SVR(), X, y, log10_C=(0.0, 1.0), log10_kappa=(-1.0, 0.0),
                         coarse_points=2, fine_points=0, cv=4, random_state=3)
    # recompute one grid point by hand
    C, kappa = 10 ** res.table["log10_C"][1], 10 ** res.table["log10_kappa"][1]
    sse, nsv = 0.0, 0
    for tr, te in KFold(4, shuffle=True, random_state=3).split(X):
        m = SVR(C=C, kappa=kappa).fit(X[tr], y[tr])
        sse += np.sum((m.predict(X[te]) - y[te]) ** 2)
        nsv += len(m.support_)
    assert res.table["score"][1] == pytest.approx(sse / len(y))
    assert res.table["n_sv"][1] == pytest.approx(nsv / 4)


def test_loo_classification_ties_go_to_fewer_svs():
    X, y = c1_data(2)
    res = grid_search_cv(SVC(), X, y, coarse_points=4, fine_points=3, cv="loo")
    assert res.n_folds == len(y) and res.scoring == "error_rate"
    np.testing.assert_allclose(np.unique(res.table["log10_C"][:16]), log_grid(*C1_BOX[0], 4))
    fine = res.table["stage"] == 1
    s, nsv = res.table["score"][fine], res.table["n_sv"][fine]
    best = s.min()
    # among the tied best points the chosen one has the fewest SVs
    assert res.best_score == best
    assert res.best_n_sv == nsv[s == best].min()
    # error rates are multiples of 1/n
    assert np.allclose(res.table["score"] * len(y), np.round(res.table["score"] * len(y)))


def test_pick_best_tie_rules():
    lx = np.array([0.0, 1.0, 2.0, 0.5])
    ly = np.array([0.0, 0.0, 0.0, -1.0])
    score = np.array([0.1, 0.1, 0.2, 0.1])
    nsv = np.array([5.0, 3.0, 1.0, 3.0])
    assert _pick_best(lx, ly, score, nsv) == 3        # fewest SVs, then smaller C
    assert _pick_best(lx, ly, np.array([0.1, 0.1, 0.05, 0.1]), nsv) == 2


def test_tsvc_params_option():
    X, y = c1_data(3, 10)
    res = grid_search_cv(TSVC(), X, y, params=("kappa0", "kappa"), log10_C=(-1, 1),
                         log10_kappa=(-1, 0), coarse_points=2, fine_points=0, cv=2)
    assert set(res.best_params) == {"kappa0", "kappa"}


@pytest.mark.parametrize("kw,name", [
    (dict(cv=1), "cv"), (dict(cv="bogus"), "cv"), (dict(log10_C=(2, 1)), "log10_C"),
    (dict(log10_kappa=(0, np.inf)), "log10_kappa"), (dict(coarse_points=0), "coarse_points"),
    (dict(fine_step=0.0), "fine_step"), (dict(params=("C", "gamma")), "params"),
])
def test_bad_arguments(kw, name):
    X, y = sinc_data(20, 4)
    with pytest.raises(ValueError, match=name):
        grid_search_cv(SVR(), X, y, **kw)


def test_dask_matches_serial():
    distributed = pytest.importorskip("distributed")
    X, y = c1_data(5, 12)
    kw = dict(coarse_points=3, fine_points=3, cv=3, log10_C=(0, 2), log10_kappa=(-2, 0))
    serial = grid_search_cv(SVC(), X, y, **kw)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        par = grid_search_cv(SVC(), X, y, client=client, **kw)
    assert par.best_params == serial.best_params
    for key in serial.table:
        np.testing.assert_array_equal(par.table[key], serial.table[key])
    np.testing.assert_array_equal(par.best_estimator.decision_function(X),
                                  serial.best_estimator.decision_function(X))


# ---------------------------------------------------------------------------
# case weights
# ---------------------------------------------------------------------------
def test_weighted_score_and_refit_by_hand():
    """sample_weight[train] goes to each fold's fit, sample_weight[test]
    weights the held-out losses, the refit gets all weights."""
    X, y = sinc_data(40, 1)
    w = np.random.default_rng(7).uniform(0.0, 3.0, 40)
    w[::7] = 0.0
    res = grid_search_cv(SVR(tol=1e-8), X, y, log10_C=(0.0, 1.0), log10_kappa=(-1.0, 0.0),
                         coarse_points=2, fine_points=0, cv=4, random_state=3, sample_weight=w)
    unweighted = grid_search_cv(SVR(tol=1e-8), X, y, log10_C=(0.0, 1.0), log10_kappa=(-1.0, 0.0),
                                coarse_points=2, fine_points=0, cv=4, random_state=3)
    for g in range(4):
        C, kappa = 10 ** res.table["log10_C"][g], 10 ** res.table["log10_kappa"][g]
        sse, nsv = 0.0, 0
        for tr, te in KFold(4, shuffle=True, random_state=3).split(X):
            m = SVR(C=C, kappa=kappa, tol=1e-8).fit(X[tr], y[tr], w[tr])
            sse += np.sum(w[te] * (m.predict(X[te]) - y[te]) ** 2)
            nsv += len(m.support_)
        assert res.table["score"][g] == pytest.approx(sse / w.sum(), rel=1e-12)
        assert res.table["n_sv"][g] == pytest.approx(nsv / 4)
    assert not np.allclose(res.table["score"], unweighted.table["score"])
    best = SVR(tol=1e-8, **res.best_params).fit(X, y, w)
    np.testing.assert_array_equal(res.best_estimator.dual_coef_, best.dual_coef_)
    np.testing.assert_array_equal(res.best_estimator.support_, best.support_)


def test_weighted_error_rate_with_class_weight():
    X, y = c1_data(6, 12)
    w = np.r_[np.full(12, 2.0), np.full(12, 0.5)]
    res = grid_search_cv(SVC(class_weight={1.0: 2.0}), X, y, coarse_points=2, fine_points=0,
                         cv=3, log10_C=(0, 1), log10_kappa=(-1, 0), sample_weight=w)
    from sklearn.model_selection import StratifiedKFold

    C, kappa = 10 ** res.table["log10_C"][0], 10 ** res.table["log10_kappa"][0]
    wrong = 0.0
    for tr, te in StratifiedKFold(3, shuffle=True, random_state=0).split(X, y):
        m = SVC(C=C, kappa=kappa, class_weight={1.0: 2.0}).fit(X[tr], y[tr], w[tr])
        wrong += np.sum(w[te] * (m.predict(X[te]) != y[te]))
    assert res.table["score"][0] == pytest.approx(wrong / w.sum())
    assert res.best_estimator.class_weight == {1.0: 2.0}


def test_unit_weights_give_the_unweighted_search():
    X, y = c1_data(8, 10)
    kw = dict(coarse_points=2, fine_points=2, cv=3, log10_C=(0, 1), log10_kappa=(-1, 0),
              params=("kappa0", "kappa"))
    a = grid_search_cv(TSVC(), X, y, **kw)
    b = grid_search_cv(TSVC(), X, y, sample_weight=np.ones(len(y)), **kw)
    assert a.best_params == b.best_params
    np.testing.assert_array_equal(a.table["score"], b.table["score"])
    np.testing.assert_array_equal(a.best_estimator.dual_coef_, b.best_estimator.dual_coef_)


def test_bad_sample_weight_in_grid_search():
    X, y = sinc_data(20, 4)
    with pytest.raises(ValueError, match="sample_weight.*non-negative"):
        grid_search_cv(SVR(), X, y, sample_weight=-np.ones(20))
    with pytest.raises(ValueError, match="sample_weight has shape"):
        grid_search_cv(SVR(), X, y, sample_weight=np.ones(3))

    from sklearn.base import BaseEstimator, RegressorMixin

    class NoWeights(RegressorMixin, BaseEstimator):
        def __init__(self, C=1.0, kappa=1.0):
            self.C, self.kappa = C, kappa

        def fit(self, X, y):
            return self

    with pytest.raises(ValueError, match="NoWeights.fit takes no sample_weight"):
        grid_search_cv(NoWeights(), X, y, sample_weight=np.ones(20))


def test_dask_matches_serial_with_weights():
    distributed = pytest.importorskip("distributed")
    X, y = c1_data(5, 12)
    w = np.linspace(0.2, 2.0, len(y))
    kw = dict(coarse_points=2, fine_points=2, cv=3, log10_C=(0, 2), log10_kappa=(-2, 0),
              sample_weight=w)
    serial = grid_search_cv(SVC(), X, y, **kw)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        par = grid_search_cv(SVC(), X, y, client=client, **kw)
    for key in serial.table:
        np.testing.assert_array_equal(par.table[key], serial.table[key])
