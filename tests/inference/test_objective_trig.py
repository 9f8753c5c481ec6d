"""The shrinking solve of the BTSVC dual (objective_trig): the left-out cases'
gradient updated by the cases a round moved equals the gradient rebuilt over
every SV, on both routes (few moved, more moved than SVs)."""

import numpy as np
import pytest

from bsvm_scale._compiled.smo_trig import TrigDual
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from bsvm_scale.inference.objective_trig import _gradient_pass, _recheck_left_out, solve_dual


def _problem(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 2))
    y = np.where(X[:, 0] + 0.7 * rng.standard_normal(n) > 0, 1.0, -1.0)
    return X, y


@pytest.mark.parametrize("n_moved", [3, 250])
def test_the_left_out_gradient_update_equals_the_rebuilt_gradient(n_moved):
    X, y = _problem()
    cov = GaussianCovariance(3.0, 0.8, 2.0)
    cache = RowCache(X, cov, 16.0)
    base = solve_dual(cache, y, None, 1e-6)["alpha"]
    w = np.ones(y.size)
    idx = np.flatnonzero((base > 0) | (np.arange(y.size) % 3 == 0))  # the working problem
    alpha = base.copy()
    g = _gradient_pass(cov, X, y, alpha, np.arange(y.size), w)
    before = alpha[idx].copy()
    rng = np.random.default_rng(1)
    moved = rng.choice(idx.size, size=min(n_moved, idx.size), replace=False)
    alpha[idx[moved]] = np.maximum(alpha[idx[moved]] + rng.normal(0, 0.3, moved.size), 0.0)
    dual = TrigDual(y, w, alpha, g)
    violated = _recheck_left_out(cache, dual, idx, 1e-6, before)
    out = np.setdiff1d(np.arange(y.size), idx)
    ref = _gradient_pass(cov, X, y, alpha, out, w)
    np.testing.assert_allclose(g[out], ref, rtol=1e-12, atol=1e-12)
    assert violated == bool(np.any(ref < -1e-6))


def test_a_shrunk_solve_satisfies_the_kkt_conditions_on_every_case():
    X, y = _problem(n=2000, seed=2)
    cov = GaussianCovariance(10.0, 1.0, 5.0)
    sol = solve_dual(RowCache(X, cov, 16.0), y, None, 1e-6)
    full = solve_dual(RowCache(X, cov, 16.0), y, None, 1e-6, shrink=False)
    g = _gradient_pass(cov, X, y, sol["alpha"], np.arange(y.size), np.ones(y.size))
    assert np.all(g[sol["alpha"] == 0.0] >= -1e-6)  # (5.31) at alpha = 0
    np.testing.assert_allclose(sol["f"], full["f"], atol=1e-4)
