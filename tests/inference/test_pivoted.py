"""Tests of the staged pivoted-Cholesky factor (bsvm_scale.inference.pivoted):
stages and growing arrays give the columns of one call."""

import numpy as np

from bsvm_scale._compiled import lowrank as lk
from bsvm_scale.inference import pivoted as pv

from bsvm_scale.inference.covariance import GaussianCovariance

from test_evidence_lowrank import _block


def test_a_growing_factor_is_the_factor_with_the_budget_of_its_last_stage():
    X, cov, sl = _block(m=120, d=2)
    G, piv, resid = pv.growing_factor(cov, X, sl, [7, 14, 28, 56], lambda r: True)
    Gs, ps, rs = pv.pivoted_factor(cov, X, sl, 0.0, 56)
    np.testing.assert_array_equal(piv, ps)
    np.testing.assert_array_equal(G, Gs)
    np.testing.assert_array_equal(resid, rs)
    G, piv, resid = pv.growing_factor(cov, X, sl, [7, 14, 28, 56], lambda r: False)
    np.testing.assert_array_equal(G, pv.pivoted_factor(cov, X, sl, 0.0, 7)[0])  # one stage


def test_a_factor_array_grows_with_its_rank_not_with_its_budget():
    """The array behind a factor starts FIRST_CAPACITY columns wide and doubles
    as it fills; the columns equal those of one pivoted-Cholesky call into an
    array as wide as the budget."""
    X, cov, sl = _block(m=400, d=3)
    for budget in (20, 150, 400):
        G, piv, resid = pv.pivoted_factor(cov, X, sl, 0.0, budget)
        wide = np.zeros((400, budget))
        rank, piv1, resid1 = lk.pivoted_cholesky(cov.kernel(X), sl, wide, 0.0,
                                                 pv.rounding_floor(cov, sl), 0)
        assert G.shape[1] == rank
        np.testing.assert_array_equal(G, wide[:, :rank])
        np.testing.assert_array_equal(piv, piv1[:rank])
        np.testing.assert_array_equal(resid, resid1)
        held = G.base.shape[1] if G.base is not None else G.shape[1]
        assert held <= max(pv.FIRST_CAPACITY, 2 * rank)  # not the budget's width
    # a wide budget met early (the tolerance) holds FIRST_CAPACITY columns, not 400
    G, _, resid = pv.staged_factor(cov, X, sl, 400, 400, lambda rank, res: None, 0.05 * 400)
    assert 0 < G.shape[1] < pv.FIRST_CAPACITY and resid.sum() <= 0.05 * 400
    assert G.base is not None and G.base.shape[1] == pv.FIRST_CAPACITY


def test_panels_give_the_factor_of_one_column_at_a_time_to_the_last_bit():
    """Past PANEL_FROM columns the factor is made in panels of candidates; the
    pivots are still the greedy ones and every column the same sum in the same
    order, also with many misses (narrow panels), ties (equal weights,
    repeated rows) and a tolerance that stops inside a panel."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 4))
    X = np.vstack([X, X[:60]])                       # repeated rows
    cov = GaussianCovariance(1.5, 0.05, 0.7)         # wide: a slow spectrum
    kern = cov.kernel(X)
    floor = 1e-13 * (cov.kappa0 + cov.kappa_b)
    for sl in (np.ones(X.shape[0]), np.sqrt(rng.uniform(1.0, 3.0, X.shape[0]))):
        for tol in (0.0, 1e-6):
            one = np.zeros((X.shape[0], 220))
            r1, p1, e1 = lk.pivoted_cholesky(kern, sl, one, tol, floor, 0)
            assert r1 > lk.PANEL_FROM + 40
            for width in (2, 3, 8, 64):
                G = np.zeros_like(one)
                r, p, e = lk.pivoted_cholesky(kern, sl, G, tol, floor, width)
                assert r == r1
                np.testing.assert_array_equal(p, p1)
                np.testing.assert_array_equal(G, one)
                np.testing.assert_array_equal(e, e1)


def test_panel_width_follows_the_memory_cap():
    assert pv.panel_width(1000) == pv.PANEL
    assert pv.panel_width(pv.PANEL_BYTES // (8 * 10)) == 10
    assert pv.panel_width(pv.PANEL_BYTES // (8 * 7)) == 0    # too narrow: one at a time
