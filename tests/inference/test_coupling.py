"""Pairwise coupling against slow references: a general-purpose solver for
Wu-Lin-Weng method 2, explicit loops for the product rule, scikit-learn's
vote rule for the one-versus-rest shaped decision function."""

import numpy as np
import pytest
from scipy.optimize import minimize
from sklearn.utils.multiclass import _ovr_decision_function

from bsvm_scale.inference.coupling import (MIN_PROB, couple_product, couple_wu_lin_weng,
                                           ovo_pairs, ovo_votes, pairwise_matrix)


def _random_r(n, k, seed):
    rng = np.random.default_rng(seed)
    return rng.uniform(0.02, 0.98, (n, len(ovo_pairs(k))))


def _wlw_reference(R):
    """Method 2 by SLSQP: min sum_i sum_{j!=i} (r_ji p_i - r_ij p_j)^2, sum p = 1."""
    k = R.shape[0]

    def f(p):
        return sum((R[j, i] * p[i] - R[i, j] * p[j]) ** 2
                   for i in range(k) for j in range(k) if j != i)

    res = minimize(f, np.full(k, 1.0 / k), method="SLSQP",
                   constraints=[{"type": "eq", "fun": lambda p: p.sum() - 1.0}],
                   options={"ftol": 1e-15, "maxiter": 500})
    return res.x


def _product_reference(R):
    k = R.shape[0]
    p = np.array([np.prod([R[i, j] for j in range(k) if j != i]) for i in range(k)])
    return p / p.sum()


def test_pairs_follow_the_one_versus_one_order_of_scikit_learn():
    assert ovo_pairs(4) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_the_pairwise_matrix_holds_each_probability_and_its_complement():
    r = _random_r(3, 4, 0)
    R = pairwise_matrix(r, 4)
    for m, (i, j) in enumerate(ovo_pairs(4)):
        np.testing.assert_allclose(R[:, i, j], r[:, m])
        np.testing.assert_allclose(R[:, j, i], 1 - r[:, m])
    assert np.all(np.diagonal(R, axis1=1, axis2=2) == 0)
    assert pairwise_matrix(np.array([[0.0, 1.0, 0.5]]), 3).min() == 0.0  # diagonal
    assert pairwise_matrix(np.array([[0.0, 1.0, 0.5]]), 3)[0, 0, 1] == MIN_PROB


def test_a_wrong_number_of_pairs_is_an_error_naming_the_shape():
    with pytest.raises(ValueError, match=r"shape \(n, 6\) for 4 classes"):
        pairwise_matrix(np.zeros((2, 5)), 4)


@pytest.mark.parametrize("k", [3, 5])
def test_wu_lin_weng_matches_a_general_purpose_solver(k):
    R = pairwise_matrix(_random_r(4, k, k), k)
    P = couple_wu_lin_weng(R)
    for row, Rn in zip(P, R):
        np.testing.assert_allclose(row, _wlw_reference(Rn), atol=1e-6)


def test_wu_lin_weng_recovers_consistent_pairwise_probabilities():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    r = np.array([[p[i] / (p[i] + p[j]) for i, j in ovo_pairs(4)]])
    np.testing.assert_allclose(couple_wu_lin_weng(pairwise_matrix(r, 4))[0], p, atol=1e-12)


@pytest.mark.parametrize("k", [3, 6])
def test_product_matches_explicit_loops(k):
    R = pairwise_matrix(_random_r(5, k, 10 + k), k)
    P = couple_product(R)
    for row, Rn in zip(P, R):
        np.testing.assert_allclose(row, _product_reference(Rn), rtol=1e-12)


@pytest.mark.parametrize("couple", [couple_product, couple_wu_lin_weng])
def test_coupled_probabilities_are_a_distribution_and_symmetric_in_the_classes(couple):
    k = 5
    r = _random_r(7, k, 3)
    P = couple(pairwise_matrix(r, k))
    assert np.all(P >= 0) and np.allclose(P.sum(axis=1), 1.0)
    # relabelling the classes permutes the columns
    perm = np.array([3, 0, 4, 1, 2])
    R = pairwise_matrix(r, k)
    Rp = R[:, perm][:, :, perm]
    np.testing.assert_allclose(couple(Rp), P[:, perm], atol=1e-10)


def test_product_survives_extreme_pairwise_probabilities():
    r = np.array([[1e-300, 1.0, 0.5]])
    P = couple_product(pairwise_matrix(r, 3))
    assert np.all(np.isfinite(P)) and np.isclose(P.sum(), 1.0)


def test_ovr_shaped_votes_equal_scikit_learns_rule():
    rng = np.random.default_rng(1)
    dec = rng.normal(size=(9, 10))
    np.testing.assert_allclose(ovo_votes(dec, 5), _ovr_decision_function(dec < 0, -dec, 5))
