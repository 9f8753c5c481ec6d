"""Direct tests of the weighted pieces of the classical SMO
(bsvm_scale._compiled.smo_classic): the weighted trigonometric dual term
``w phi(a / w)`` and its derivatives (central differences), and the
:class:`TsvcDual` driver with case weights of 0. The solvers as a whole are
tested through SVR / SVC / TSVC in tests/baselines/test_svm.py."""

import numpy as np
import pytest

from bsvm_scale._compiled import smo_classic as smo
from bsvm_scale._compiled import smo_tsvc
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache


def phi(a):
    """(H.4) term in plain NumPy."""
    u = 2 * a / np.pi
    return 4 / np.pi * a * np.arctan(u) - np.log1p(u * u)


@pytest.mark.parametrize("w", [1e-3, 0.2, 1.0, 3.0, 250.0])
@pytest.mark.parametrize("a", [0.0, 1e-4, 0.3, 2.0, 40.0])
def test_weighted_trig_term_and_derivatives(a, w):
    assert smo_tsvc.trig_phi_w(a, w) == pytest.approx(w * phi(a / w), rel=1e-13, abs=1e-300)
    h = 1e-6 * max(w, a, 1e-3)
    if a - h >= 0:
        fd1 = (smo_tsvc.trig_phi_w(a + h, w) - smo_tsvc.trig_phi_w(a - h, w)) / (2 * h)
        fd2 = (smo_tsvc.trig_dphi_w(a + h, w) - smo_tsvc.trig_dphi_w(a - h, w)) / (2 * h)
        assert smo_tsvc.trig_dphi_w(a, w) == pytest.approx(fd1, rel=1e-6, abs=1e-9)
        assert smo_tsvc.trig_d2phi_w(a, w) == pytest.approx(fd2, rel=1e-6, abs=1e-9)
    assert smo_tsvc.trig_d2phi_w(a, w) == pytest.approx(8 * w / (np.pi**2 * w**2 + 4 * a * a), rel=1e-14)


def test_weighted_trig_term_reduces_exactly_at_unit_weight():
    for a in (0.0, 1e-8, 0.5, 3.0, 1e3):
        assert smo_tsvc.trig_dphi_w(a, 1.0) == smo_tsvc.trig_dphi(a)
        assert smo_tsvc.trig_d2phi_w(a, 1.0) == smo_tsvc.trig_d2phi(a)
        assert smo_tsvc.trig_phi_w(a, 1.0) == smo_tsvc.trig_phi(a)


def test_weighted_trig_term_is_the_split_over_copies():
    """k copies sharing alpha equally: k phi(alpha / k) is the weight-k term."""
    for k in (2, 3, 7):
        for a in (0.1, 1.0, 9.0):
            assert smo_tsvc.trig_phi_w(a, float(k)) == pytest.approx(k * smo_tsvc.trig_phi(a / k), rel=1e-14)


def test_weight_zero_fixes_the_variable():
    assert smo_tsvc.trig_phi_w(0.0, 0.0) == 0.0
    assert smo_tsvc.trig_phi_w(0.5, 0.0) == np.inf
    assert smo_tsvc.trig_dphi_w(0.0, 0.0) == 0.0 and smo_tsvc.trig_d2phi_w(0.0, 0.0) == 0.0
    np.testing.assert_array_equal(smo_tsvc.trig_bounds(np.array([0.0, 1.0, 2.5])), [0.0, np.inf, np.inf])


def test_smo_tsvc_with_zero_weights():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 2))
    s = np.where(X[:, 0] + 0.3 * rng.normal(size=30) > 0, 1.0, -1.0)
    w = rng.uniform(0.5, 2.0, 30)
    w[::4] = 0.0
    cache = RowCache(X, GaussianCovariance(1.5, 0.8, 0.0), 1.0)
    alpha, Kv = np.zeros(30), np.empty(30)
    it, status, gap, G = smo_tsvc.smo_tsvc(cache.kernel, cache.state, smo_tsvc.TsvcDual(s, w, alpha, Kv),
                                      1e-10, 100000)
    assert status == smo.STATUS_OK and gap < 1e-10 and it > 0
    assert np.all(alpha[w == 0] == 0) and np.sum(alpha > 0) > 5
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    K = 1.5 * np.exp(-0.4 * D)
    np.testing.assert_allclose(Kv, K @ (s * alpha), atol=1e-12)
    # gradient of the weighted dual, G_t = s_t Kv_t - 1 + phi'(alpha_t / w_t) (0 for w_t = 0)
    ratio = alpha / np.where(w > 0, w, 1.0)
    grad = s * Kv - 1 + np.where(w > 0, 4 / np.pi * np.arctan(2 * ratio / np.pi), 0.0)
    np.testing.assert_allclose(G, grad, atol=1e-12)
    b = smo.bias(G, alpha, s, smo_tsvc.trig_bounds(w))
    r = G + b * s                                             # KKT of the weighted dual
    assert np.max(np.abs(r[alpha > 0])) < 1e-9
    assert np.min(r[(alpha == 0) & (w > 0)], initial=0.0) > -1e-9
    assert abs(np.sum(s * alpha)) < 1e-12
