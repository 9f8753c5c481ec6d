"""Tests of the BTSVC evidence (5.35)-(5.37) with case weights
(:mod:`bsvm_scale.inference.evidence_trig`, through
:class:`~bsvm_scale.inference.objective_trig.TrigObjective`), dense and
matrix-free.

References: the dense Laplace evidence over all ``n`` cases of the weighted
problem (``tests/reference.py``), the same problem with every case repeated
``k`` times, and central finite differences. (The unweighted evidence is
tested in ``tests/models/test_btsvc.py`` and
``tests/inference/test_evidence_lowrank.py``.)
"""

import numpy as np
import pytest

import reference
from bsvm_scale.inference.covariance import GaussianCovariance
from bsvm_scale.inference.evidence_lowrank import EvidenceSettings
from bsvm_scale.inference.evidence_trig import neg_log_evidence
from bsvm_scale.inference.objective_trig import TrigObjective


def _data(n=90, d=2, seed=4, shift=0.7):
    rng = np.random.default_rng(seed)
    X = np.r_[rng.normal(-shift, 1, (n // 2, d)), rng.normal(shift, 1, (n // 2, d))]
    y = np.r_[-np.ones(n // 2), np.ones(n // 2)]
    return X, y


def _weights(n, seed=0, zeros=5):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.3, 3.0, n)
    w[rng.choice(n, zeros, replace=False)] = 0.0
    return w


def _settings(method):
    """Dense, or matrix-free with a tolerance at which the factor is complete."""
    return EvidenceSettings(method, 1e-10)


@pytest.mark.parametrize("hyp", [(3.0, 0.4, 2.0), (10.0, 1.0, 0.5)])
def test_weighted_evidence_equals_the_dense_laplace_evidence(hyp):
    X, y = _data()
    w = _weights(y.size)
    theta = GaussianCovariance(*hyp).theta
    S = reference.dense_cov(X, X, *hyp)
    for method in ("dense", "matrix_free"):
        obj = TrigObjective(X, y, ard=False, tol=1e-12, weights=w, evidence=_settings(method))
        value, _, info = obj(theta)
        assert info["method"] == method
        f = S @ (y * obj.alpha)
        # f_MP is the stationary point of 1/2 f^T Sigma^-1 f + sum w l(y f)
        np.testing.assert_allclose(S @ reference.trig_weighted_primal_v(f, y, w), f, atol=1e-8)
        ref = reference.trig_weighted_laplace_neg_log_evidence(f, y, S, w)
        assert abs(value - ref) < 1e-7 * max(1.0, abs(ref)), method
        assert info["n_sv"] == int(np.sum((y * f < 1.0) & (w > 0)))
    # the weights matter: the unweighted evidence is another number
    assert abs(TrigObjective(X, y, ard=False, tol=1e-12)(theta)[0] - value) > 0.1


def _fd_check(obj, theta, h=1e-5):
    value, grad, _ = obj(theta)
    sv = np.flatnonzero(obj.alpha > 0)
    fd = np.empty_like(theta)
    for p in range(theta.size):
        e = np.zeros_like(theta)
        e[p] = h
        vals = []
        for s in (1.0, -1.0):
            vals.append(obj(theta + s * e)[0])
            assert np.array_equal(np.flatnonzero(obj.alpha > 0), sv)
        fd[p] = (vals[0] - vals[1]) / (2 * h)
    np.testing.assert_allclose(grad, fd, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
@pytest.mark.parametrize("ard,theta", [(False, np.log([3.0, 0.4, 2.0])),
                                       (True, np.log([3.0, 0.3, 0.5, 0.8, 2.0]))])
def test_weighted_evidence_gradient_matches_finite_differences(method, ard, theta):
    X, y = _data(n=120, d=3, seed=1, shift=1.0)
    obj = TrigObjective(X, y, ard=ard, tol=1e-12, weights=_weights(y.size, seed=2),
                            evidence=_settings(method))
    _fd_check(obj, theta)


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_integer_weights_give_the_evidence_of_duplicated_cases(method):
    """``k_i`` copies of case ``i`` (0 copies: the case left out) and weight
    ``k_i``: the same MAP function and the same evidence and gradient, with no
    constant between them (Sylvester's determinant identity, see
    :mod:`bsvm_scale.inference.evidence_trig`)."""
    X, y = _data(n=80, seed=7, shift=0.5)
    k = np.random.default_rng(3).integers(0, 4, y.size)
    theta = np.log([5.0, 0.7, 3.0])
    weighted = TrigObjective(X, y, ard=False, tol=1e-12, weights=k.astype(float),
                                 evidence=_settings(method))
    dup = TrigObjective(np.repeat(X, k, axis=0), np.repeat(y, k), ard=False, tol=1e-12,
                            evidence=_settings(method))
    vw, gw, iw = weighted(theta)
    vd, gd, idup = dup(theta)
    assert iw["method"] == idup["method"] == method
    assert abs(vw - vd) < 1e-8 * max(1.0, abs(vd))
    np.testing.assert_allclose(gw, gd, rtol=1e-7, atol=1e-9)
    # and the function values agree at every input
    cov = GaussianCovariance.from_theta(theta, False)
    f_w = cov.cross_matvec(X, X, y * weighted.alpha)
    f_d = cov.cross_matvec(X, np.repeat(X, k, axis=0), np.repeat(y, k) * dup.alpha)
    np.testing.assert_allclose(f_w, f_d, rtol=0, atol=1e-9)


def test_all_ones_weights_are_the_unweighted_evidence_bit_for_bit():
    X, y = _data(seed=5)
    obj = TrigObjective(X, y, ard=False, tol=1e-8)
    theta = np.log([3.0, 0.4, 2.0])
    obj(theta)
    alpha, f = obj.alpha, GaussianCovariance.from_theta(theta, False).cross_matvec(
        X, X, y * obj.alpha)
    cov = GaussianCovariance.from_theta(theta, False)
    for method in ("dense", "matrix_free"):
        a = neg_log_evidence(cov, X, y, alpha, method=method, f=f, keep_factor=True)
        b = neg_log_evidence(cov, X, y, alpha, method=method, f=f, keep_factor=True,
                             weights=np.ones(y.size))
        assert a[0] == b[0] and np.array_equal(a[1], b[1])


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_tied_ard_evidence_gradient_matches_finite_differences(method):
    """Tied ARD (a table's one-hot columns share one ``kappa``): the gradient
    of (5.35) over ``[ln kappa0, ln kappa_g.., ln kappa_b]`` against central
    differences, and the value is the untied value at the repeated weights."""
    X, y = _data(n=120, d=2, seed=3, shift=0.8)
    cat = np.random.default_rng(5).integers(0, 3, y.size)
    X = np.column_stack([X, np.eye(3)[cat] / np.sqrt(2.0)])
    groups = np.array([0, 1, 2, 2, 2])
    theta = np.log([3.0, 0.4, 0.7, 1.3, 2.0])
    tied = TrigObjective(X, y, ard=True, tol=1e-12, evidence=_settings(method),
                             groups=groups)
    untied = TrigObjective(X, y, ard=True, tol=1e-12, evidence=_settings(method))
    expanded = np.log([3.0, 0.4, 0.7, 1.3, 1.3, 1.3, 2.0])
    assert tied(theta)[0] == pytest.approx(untied(expanded)[0], rel=1e-10)
    _fd_check(tied, theta)
