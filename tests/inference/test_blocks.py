"""Tests of the SV block type (:mod:`bsvm_scale.inference.blocks`): the route
``"auto"`` takes between ``AUTO_FACTOR_MIN`` and ``AUTO_DENSE_MAX`` cases (a
factor when it meets the tolerance alone, else the dense block), against the
dense block as reference, and through both estimators' evidences."""

import numpy as np
import pytest

from bsvm_scale import BayesianSVC, BayesianSVR
from bsvm_scale.datasets import synthetic
from bsvm_scale.inference import evidence_lowrank as el
from bsvm_scale.inference.blocks import DenseBlock, LowRankBlock, make_block
from bsvm_scale.inference.covariance import GaussianCovariance


def _cases(m, d, kappa, seed=0):
    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(m, d)))
    lam = rng.uniform(0.5, 3.0, m)
    return X, GaussianCovariance(1.5, kappa, 2.0), np.arange(m), lam


def test_plan_tries_the_factor_only_between_the_two_sizes():
    assert el.plan_block("auto", el.AUTO_FACTOR_MIN, 1024) == ("dense", None)
    m = el.AUTO_FACTOR_MIN + 1
    assert el.plan_block("auto", m, 1024) == (el.FACTOR_OR_DENSE, int(el.AUTO_FACTOR_RATIO * m))
    method, r = el.plan_block("auto", el.AUTO_DENSE_MAX, 1024)
    assert method == el.FACTOR_OR_DENSE and r == int(el.AUTO_FACTOR_RATIO * el.AUTO_DENSE_MAX)
    assert el.plan_block("auto", el.AUTO_DENSE_MAX + 1, 1024)[0] == "matrix_free"
    assert el.plan_block("dense", m, 1024) == ("dense", None)       # asked for: never a factor
    assert el.plan_block("auto", m, 10)[0] == "matrix_free"          # dense does not fit


def test_a_smooth_block_takes_the_factor_within_the_tolerance():
    X, cov, idx, lam = _cases(600, 2, 0.05)
    tol = 0.01
    block = make_block(el.FACTOR_OR_DENSE, cov, X, idx, lam, tol=tol, max_rank=120)
    dense = make_block("dense", cov, X, idx, lam)
    assert isinstance(block, LowRankBlock) and block.info()["probes"] == 0
    assert block.rank <= 120 and block.error <= 2 * tol
    assert 0.0 <= dense.logdet - block.logdet <= block.error + 1e-9
    # A = Lambda^1/2 B^-1 Lambda^1/2 and ||B^-1 - P^-1|| <= ||E|| <= tr E = block.error
    bound = lam.max() * block.error
    w = np.random.default_rng(1).normal(size=idx.size)
    assert np.linalg.norm(block.A_matvec(w) - dense.A_matvec(w)) <= bound * np.linalg.norm(w)
    assert np.max(np.abs(block.diag_A() - dense.diag_A())) <= bound
    dense.prepare_gradient(False)
    g, gd = block.trace_grad(), dense.trace_grad()
    assert np.linalg.norm(g - gd) <= 1e-2 * np.linalg.norm(gd)


def test_a_rough_block_falls_back_to_the_dense_factor_bit_for_bit():
    X, cov, idx, lam = _cases(600, 8, 2.0)
    block = make_block(el.FACTOR_OR_DENSE, cov, X, idx, lam, tol=0.01, max_rank=120)
    dense = make_block("dense", cov, X, idx, lam)
    assert isinstance(block, DenseBlock)
    assert block.logdet == dense.logdet
    np.testing.assert_array_equal(block.L, dense.L)


def test_the_failed_attempt_stops_early_when_the_trace_decays_too_slowly(monkeypatch):
    calls = []
    real = el.staged_factor

    def spy(cov, X, sl, width, first, next_stop, tol=0.0):
        out = real(cov, X, sl, width, first, next_stop, tol)
        calls.append(out[0].shape[1])
        return out

    monkeypatch.setattr(el, "staged_factor", spy)
    X, cov, idx, lam = _cases(1500, 8, 2.0)
    make_block(el.FACTOR_OR_DENSE, cov, X, idx, lam, tol=0.01, max_rank=300)
    assert calls == [el.AUTO_FACTOR_FIRST]   # not the 300 columns it was allowed


@pytest.mark.parametrize("model", ["bsvr", "btsvc"])
def test_estimators_between_the_sizes_match_the_dense_evidence(model):
    if model == "bsvr":
        d = synthetic.sinc_silf(2400, seed=3)
        kw = dict(optimize=False, beta=1.0, C=10.0, epsilon=0.5, kappa=1.0, kappa_b=10.0)
        est = BayesianSVR
    else:
        d = synthetic.gauss2d(3200, seed=3)
        kw = dict(optimize=False, kappa0=0.05, kappa=0.5, kappa_b=1.0)
        est = BayesianSVC
    auto = est(**kw).fit(d.X, d.y)
    dense = est(evidence_method="dense", **kw).fit(d.X, d.y)
    m = auto.off_bound_.size if model == "bsvr" else auto.support_.size
    assert el.AUTO_FACTOR_MIN < m <= el.AUTO_DENSE_MAX
    assert auto.evidence_method_ == "matrix_free" and dense.evidence_method_ == "dense"
    assert abs(auto.log_evidence_ - dense.log_evidence_) <= el.DEFAULT_TOL  # the bound


@pytest.mark.parametrize("d,kappa", [(2, 0.05), (8, 2.0)])
def test_the_route_is_a_function_of_its_inputs(d, kappa):
    """Resume and replay need the same block, value and gradient bit for bit
    from the same hyperparameters and cases, whichever way the route went."""
    X, cov, idx, lam = _cases(600, d, kappa)
    a, b = (make_block(el.FACTOR_OR_DENSE, cov, X, idx, lam, tol=0.01, max_rank=120)
            for _ in range(2))
    assert type(a) is type(b) and a.logdet == b.logdet
    for blk in (a, b):
        blk.prepare_gradient(False)
    np.testing.assert_array_equal(a.trace_grad(), b.trace_grad())
    w = np.linspace(-1.0, 1.0, idx.size)
    np.testing.assert_array_equal(a.A_matvec(w), b.A_matvec(w))
