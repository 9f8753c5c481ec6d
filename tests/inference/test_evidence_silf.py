"""The dense pieces of the BSVR evidence (``inference/evidence_silf``) against NumPy."""

import numpy as np
import pytest

from bsvm_scale.inference.evidence_silf import inverse_lower, stable_cholesky


@pytest.mark.parametrize("m", [1, 2, 7, 60])
@pytest.mark.parametrize("overwrite", [False, True])
def test_inverse_lower_is_the_lower_triangle_of_the_inverse(m, overwrite):
    rng = np.random.default_rng(m)
    G = rng.normal(size=(m, m))
    A = G @ G.T + m * np.eye(m)
    L, jitter = stable_cholesky(A)
    assert jitter == 0.0
    kept = L.copy()
    inv = inverse_lower(L, overwrite=overwrite)
    lower = np.tril_indices(m)
    np.testing.assert_allclose(inv[lower], np.linalg.inv(A)[lower], rtol=1e-10, atol=1e-14)
    if not overwrite:
        np.testing.assert_array_equal(L, kept)  # the factor stays usable for predictions


def test_inverse_lower_of_an_empty_block():
    assert inverse_lower(np.zeros((0, 0))).shape == (0, 0)


# -- the evidence with case weights (module docstring of inference/evidence_silf) -------------
from bsvm_scale.inference import losses  # noqa: E402
from bsvm_scale.inference.evidence_lowrank import EvidenceSettings  # noqa: E402
from bsvm_scale.inference.objective_silf import SilfObjective  # noqa: E402

from reference import dense_cov, silf_laplace_evidence_dense  # noqa: E402


def _data(n, d=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-2, 2, size=(n, d))
    y = np.sinc(2 * X[:, 0]) + 0.3 * X[:, 1] + losses.silf_sample(10.0, 0.1, 0.3, n,
                                                                  random_state=seed + 1)
    return np.ascontiguousarray(X), y


def _weights(n, seed):
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.3, 3.0, n)
    w[rng.choice(n, n // 8, replace=False)] = 0.0
    return w


def _problem(X, y, w, method="dense", ard=True, kappa0=1.4, tol=1e-10):
    return SilfObjective(X, y, kappa0, 0.3, ard, tol, 64.0, 10**7, EvidenceSettings(method, 1e-9),
                    sample_weight=w)


def _theta(C, eps, kappa, kappa_b, kappa0=None):
    k0 = [] if kappa0 is None else [np.log(kappa0)]
    return np.concatenate(([np.log(C), np.log(eps)], k0, np.log(np.atleast_1d(kappa)),
                           [np.log(kappa_b)]))


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_weighted_evidence_equals_the_dense_laplace_computation(method):
    """(4.38) with case weights against the Laplace approximation of
    ``prod_i P(y_i|f_i)^{w_i}`` with full n x n matrices and Z_S by quadrature."""
    X, y = _data(100, seed=9)
    w = _weights(100, seed=10)
    kappa, kb = np.array([1.0, 0.3]), 30.0
    p = _problem(X, y, w, method)
    value, _, info = p(_theta(8.0, 0.12, kappa, kb))
    C, eps, nu = p.last.detail.C, p.last.detail.epsilon, p.last.dual
    S = dense_cov(X, X, 1.4, kappa, kb)
    off = (np.abs(nu) > 0) & (np.abs(nu) < C * w)
    assert 5 < off.sum() < 90 and info["n_off_bound"] == off.sum()
    ref = silf_laplace_evidence_dense(S, y, S @ nu, off, C, eps, 0.3, w)
    assert value == pytest.approx(ref, rel=1e-9, abs=1e-7)


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
@pytest.mark.parametrize("case", ["isotropic", "ard", "kappa0"])
def test_weighted_evidence_gradient_matches_finite_differences(method, case):
    """Every entry of the gradient of the weighted (4.38) against central
    differences: isotropic, ARD (4.42) and ``kappa0="evidence"`` (``ln kappa0``
    in theta), dense and matrix-free."""
    X, y = _data(80, seed=11)
    w = _weights(80, seed=12)
    ard = case != "isotropic"
    kappa = np.array([1.2, 0.4]) if ard else 0.8
    theta = _theta(6.0, 0.1, kappa, 20.0, 2.5 if case == "kappa0" else None)
    p = _problem(X, y, w, method, ard=ard, kappa0=None if case == "kappa0" else 1.4)
    _check_central_differences(p, theta)


def _check_central_differences(p, theta, h=1e-5):
    """Every entry of the gradient of ``p`` at ``theta`` against central
    differences, the off-bound set unchanged inside every step."""
    value, grad, _ = p(theta)
    assert grad.shape == theta.shape
    off0 = p.last.detail.evidence.off_bound.copy()
    for k in range(theta.size):
        vals = []
        for sgn in (1, -1):
            t = theta.copy()
            t[k] += sgn * h
            vals.append(p(t)[0])
            assert np.array_equal(p.last.detail.evidence.off_bound, off0), "SV set changed inside the FD step"
        fd = (vals[0] - vals[1]) / (2 * h)
        assert grad[k] == pytest.approx(fd, rel=1e-4, abs=1e-6 * max(1.0, abs(value))), k


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_integer_weights_give_the_evidence_of_repeated_cases(method):
    """Weight ``k`` equals ``k`` copies of the case: the same evidence value and
    gradient (no constant between them: Sylvester's identity, module
    docstring), at the same hyperparameters."""
    X, y = _data(70, seed=13)
    w = np.random.default_rng(14).integers(0, 4, 70).astype(float)
    rep = np.repeat(np.arange(70), w.astype(int))
    theta = _theta(5.0, 0.1, np.array([0.9, 0.5]), 8.0)
    v_w, g_w, i_w = _problem(X, y, w, method)(theta)
    v_r, g_r, i_r = _problem(np.ascontiguousarray(X[rep]), y[rep], None, method)(theta)
    assert i_w["n_off_bound"] > 5
    assert v_w == pytest.approx(v_r, rel=1e-10, abs=1e-9)
    np.testing.assert_allclose(g_w, g_r, rtol=1e-7, atol=1e-8)


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_unit_weights_give_the_unweighted_evidence_bit_for_bit(method):
    from bsvm_scale.inference.evidence_silf import prediction_factor

    X, y = _data(150, seed=15)
    theta = _theta(6.0, 0.08, np.array([1.5, 0.6]), 12.0)
    out = []
    for w in (None, np.ones(150)):
        p = _problem(X, y, w, method, tol=1e-6)
        value, grad, _ = p(theta)
        ev = p.last.detail.evidence
        extra = ev.L if method == "dense" else \
            prediction_factor(ev, p.evidence).L_C
        out.append((value, grad, extra))
    assert out[0][0] == out[1][0]
    np.testing.assert_array_equal(out[0][1], out[1][1])
    np.testing.assert_array_equal(out[0][2], out[1][2])


@pytest.mark.parametrize("method", ["dense", "matrix_free"])
def test_tied_ard_evidence_gradient_matches_finite_differences(method):
    """Tied ARD (a table's one-hot columns share one ``kappa``): every entry
    of the gradient of (4.38) over ``[ln C, ln eps, ln kappa_g.., ln kappa_b]``
    against central differences, and the value equals the untied ARD value
    at the repeated weights."""
    rng = np.random.default_rng(21)
    X, y = _data(90, seed=21)
    cat = rng.integers(0, 3, 90)
    X = np.ascontiguousarray(np.column_stack([X, np.eye(3)[cat] / np.sqrt(2.0)]))
    y = y + 0.5 * (cat == 1)
    groups = np.array([0, 1, 2, 2, 2])
    p = SilfObjective(X, y, 1.4, 0.3, True, 1e-10, 64.0, 10**7, EvidenceSettings(method, 1e-9),
                 groups=groups)
    theta = _theta(6.0, 0.1, np.array([1.1, 0.5, 0.8]), 20.0)
    untied = SilfObjective(X, y, 1.4, 0.3, True, 1e-10, 64.0, 10**7, EvidenceSettings(method, 1e-9))
    assert untied(_theta(6.0, 0.1, np.array([1.1, 0.5, 0.8, 0.8, 0.8]), 20.0))[0] == \
        pytest.approx(p(theta)[0], rel=1e-10)
    _check_central_differences(p, theta)


def test_the_final_evaluation_continues_the_best_evaluations_factor(monkeypatch):
    """A matrix-free search keeps the evidence result of its best point: the
    final evaluation there makes no new block, and gives bit for bit what a
    checkpoint's state (which does not hold it) makes again from ``nu`` and ``f``."""
    from bsvm_scale.inference import evidence_silf

    X, y = _data(150, seed=15)
    theta = _theta(6.0, 0.08, np.array([1.5, 0.6]), 12.0)
    p = _problem(X, y, None, "matrix_free", tol=1e-6)
    values = [p(theta)[0], p(theta + 0.1)[0], p(theta - 0.1)[0]]
    best, state = p.best, p.get_state()
    assert best.value == min(values) and p.best_evidence is not None
    assert "best_evidence" not in state
    with monkeypatch.context() as mp:
        mp.setattr(evidence_silf, "make_block", lambda *a, **k: pytest.fail("a new block"))
        kept = p.final(best.theta)
    again = _problem(X, y, None, "matrix_free", tol=1e-6)
    again.set_state(state)
    made = again.final(best.theta)
    assert kept.value == made.value == best.value and kept.grad is None
    settings = p.evidence
    a = evidence_silf.prediction_factor(kept.detail.evidence, settings)
    b = evidence_silf.prediction_factor(made.detail.evidence, settings)
    np.testing.assert_array_equal(a.L_C, b.L_C)
    np.testing.assert_array_equal(a.X_S, b.X_S)
