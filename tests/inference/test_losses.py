"""Tests for bsvm_scale.inference.losses against independent references.

References are built here from first principles: the piecewise loss (2.28)
written out again, adaptive quadrature (scipy.integrate.quad) split at the
zone boundaries, central finite differences and an independent Huber loss.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import integrate, stats

from bsvm_scale.inference import losses as L

# --------------------------------------------------------------------------
# independent references
# --------------------------------------------------------------------------


def ref_silf_scalar(d, eps, beta):
    """SILF (2.28) for one residual, written case by case."""
    if d < -(1 + beta) * eps:
        return -d - eps
    if d <= -(1 - beta) * eps:
        return (d + (1 - beta) * eps) ** 2 / (4 * beta * eps)
    if d < (1 - beta) * eps:
        return 0.0
    if d <= (1 + beta) * eps:
        return (d - (1 - beta) * eps) ** 2 / (4 * beta * eps)
    return d - eps


def ref_huber(d, eps):
    """Huber's loss with threshold 2 eps (the beta = 1 case of SILF)."""
    d = np.abs(np.asarray(d, dtype=float))
    return np.where(d <= 2 * eps, d * d / (4 * eps), d - eps)


def _nodes(C, eps, beta):
    """Break points of exp(-C l) on [0, inf): zone edges plus the Gaussian and
    exponential length scales, so that every quad call sees a smooth,
    well-resolved integrand."""
    a, b = (1 - beta) * eps, (1 + beta) * eps
    s = math.sqrt(4 * beta * eps / C)  # width of the Gaussian bump exp(-C u^2/(4 beta eps))
    pts = {0.0, a, b, b + 5.0 / C, b + 20.0 / C, b + 80.0 / C}
    pts.update(a + k * s for k in (0.5, 2.0, 5.0, 10.0) if a + k * s < b)
    return sorted(pts)


def ref_moment(C, eps, beta, power, unnormalised=False):
    """integral over R of |x|^power exp(-C l(x)) dx (by symmetry twice [0, inf))."""

    def f(x):
        return x**power * math.exp(-C * ref_silf_scalar(x, eps, beta))

    nodes = _nodes(C, eps, beta)
    total = 0.0
    for lo, hi in zip(nodes[:-1], nodes[1:]):
        if hi > lo:
            total += integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-13, limit=200)[0]
    total += integrate.quad(f, nodes[-1], np.inf, epsabs=0.0, epsrel=1e-13, limit=200)[0]
    return 2.0 * total


def ref_Z(C, eps, beta):
    return ref_moment(C, eps, beta, 0)


def ref_cdf(x, C, eps, beta):
    """integral_{-inf}^{x} exp(-C l(t)) dt / Z by piecewise quadrature."""
    Z = ref_Z(C, eps, beta)
    pos = _nodes(C, eps, beta)
    grid = sorted({-p for p in pos} | set(pos))
    pieces = [(-np.inf, grid[0])] + list(zip(grid[:-1], grid[1:])) + [(grid[-1], np.inf)]

    def f(t):
        return math.exp(-C * ref_silf_scalar(t, eps, beta))

    total = 0.0
    for lo, hi in pieces:
        hi = min(hi, x)
        if hi > lo:
            total += integrate.quad(f, lo, hi, epsabs=0.0, epsrel=1e-13, limit=200)[0]
    return total / Z


GRID_C = [0.01, 0.7, 5.0, 100.0, 1e4]
GRID_EPS = [1e-3, 0.1, 1.0]
GRID_BETA = [1e-4, 0.3, 1.0]
GRID = list(itertools.product(GRID_C, GRID_EPS, GRID_BETA))


# --------------------------------------------------------------------------
# loss values and limits
# --------------------------------------------------------------------------


@pytest.mark.parametrize("eps,beta", [(0.5, 0.5), (1e-3, 1e-6), (1.0, 1.0), (0.2, 0.9)])
def test_silf_matches_piecewise_definition(eps, beta):
    d = np.linspace(-3 * eps, 3 * eps, 1201)
    expected = np.array([ref_silf_scalar(v, eps, beta) for v in d])
    np.testing.assert_allclose(L.silf(d, eps, beta), expected, rtol=1e-13, atol=1e-300)
    assert isinstance(L.silf(0.1, eps, beta), float)


@pytest.mark.parametrize("eps", [1e-3, 0.3, 1.0])
def test_silf_beta_one_is_huber(eps):
    d = np.linspace(-5 * eps, 5 * eps, 2001)
    np.testing.assert_allclose(L.silf(d, eps, 1.0), ref_huber(d, eps), rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("eps", [1e-3, 0.3, 1.0])
@pytest.mark.parametrize("beta", [1e-6, 1e-9])
def test_silf_beta_to_zero_is_eps_insensitive(eps, beta):
    d = np.linspace(-3 * eps, 3 * eps, 2001)
    ref = np.maximum(np.abs(d) - eps, 0.0)
    np.testing.assert_allclose(L.eps_insensitive(d, eps), ref, rtol=0, atol=0)
    gap = np.abs(L.silf(d, eps, beta) - ref)
    assert gap.max() <= beta * eps * (1 + 1e-12)  # difference is O(beta eps)


def test_silf_epsilon_to_zero_is_laplace():
    d = np.linspace(-2, 2, 401)
    np.testing.assert_allclose(L.silf(d, 1e-12, 0.4), np.abs(d), atol=1e-11)


def test_hinge():
    z = np.linspace(-3, 3, 61)
    np.testing.assert_array_equal(L.hinge(z), np.where(z < 1, 1 - z, 0.0))


# --------------------------------------------------------------------------
# normaliser and variance vs quadrature
# --------------------------------------------------------------------------


@pytest.mark.parametrize("C,eps,beta", GRID)
def test_normalizer_and_variance_vs_quadrature(C, eps, beta):
    Z = ref_Z(C, eps, beta)
    var = ref_moment(C, eps, beta, 2) / Z
    assert L.silf_normalizer(C, eps, beta) == pytest.approx(Z, rel=1e-8)
    assert L.silf_log_normalizer(C, eps, beta) == pytest.approx(math.log(Z), rel=1e-8, abs=1e-10)
    assert L.silf_noise_variance(C, eps, beta) == pytest.approx(var, rel=1e-8)


def test_normalizer_tiny_beta_is_finite():
    for C, eps in itertools.product([0.01, 1.0, 1e4], [1e-3, 1.0]):
        for beta in [1e-6, 1e-12, 1e-300]:
            Z = L.silf_normalizer(C, eps, beta)
            assert np.isfinite(Z) and Z == pytest.approx(2 * eps + 2 / C, rel=1e-5)
            g = L.silf_log_normalizer_grad(C, eps, beta)
            assert all(np.isfinite(v) for v in g)
            assert np.isfinite(L.silf_noise_variance(C, eps, beta))


def test_normalizer_broadcasts():
    C = np.array([0.1, 1.0, 10.0])
    Z = L.silf_normalizer(C, 0.3, 0.5)
    assert Z.shape == (3,)
    np.testing.assert_allclose(Z, [L.silf_normalizer(c, 0.3, 0.5) for c in C], rtol=1e-15)


@pytest.mark.parametrize("C", [0.01, 0.5, 3.0, 1e4])
@pytest.mark.parametrize("eps", [0.0, 1e-3, 0.4, 1.0])
def test_eps_insensitive_variance_vs_quadrature(C, eps):
    def dens(x):
        return math.exp(-C * max(abs(x) - eps, 0.0))

    Z = 2 * (eps + integrate.quad(dens, eps, np.inf, epsabs=0, epsrel=1e-13)[0])
    m2 = 2 * (
        eps**3 / 3 + integrate.quad(lambda x: x * x * dens(x), eps, eps + 100 / C, epsabs=0, epsrel=1e-13)[0]
    )
    assert L.eps_insensitive_normalizer(C, eps) == pytest.approx(Z, rel=1e-9)
    assert L.eps_insensitive_noise_variance(C, eps) == pytest.approx(m2 / Z, rel=1e-9)


@pytest.mark.parametrize("C", [0.01, 1.0, 50.0, 1e4])
@pytest.mark.parametrize("eps", [1e-3, 0.4, 1.0])
def test_variance_beta_to_zero_is_gao(C, eps):
    gao = L.eps_insensitive_noise_variance(C, eps)
    assert L.silf_noise_variance(C, eps, 1e-9) == pytest.approx(gao, rel=1e-6)
    assert L.silf_normalizer(C, eps, 1e-9) == pytest.approx(L.eps_insensitive_normalizer(C, eps), rel=1e-6)


@pytest.mark.parametrize("C", [0.01, 1.0, 50.0, 1e4])
@pytest.mark.parametrize("beta", [1e-4, 0.5, 1.0])
def test_variance_epsilon_to_zero_is_laplace(C, beta):
    assert L.silf_noise_variance(C, 1e-12, beta) == pytest.approx(2.0 / C**2, rel=1e-6)
    assert L.silf_normalizer(C, 1e-12, beta) == pytest.approx(2.0 / C, rel=1e-6)


# --------------------------------------------------------------------------
# distribution function
# --------------------------------------------------------------------------

CDF_PARAMS = [(2.0, 0.5, 0.5), (0.01, 1.0, 1e-4), (1e4, 1.0, 1.0), (100.0, 0.1, 0.3), (5.0, 1e-3, 1.0)]


@pytest.mark.parametrize("C,eps,beta", CDF_PARAMS)
def test_cdf_vs_cumulative_quadrature(C, eps, beta):
    a, b = (1 - beta) * eps, (1 + beta) * eps
    xs = np.array([0.0, 0.5 * a, a, 0.5 * (a + b), b, b + 1 / C, b + 10 / C])
    xs = np.unique(np.concatenate([xs, -xs]))
    got = L.silf_cdf(xs, C, eps, beta)
    want = np.array([ref_cdf(x, C, eps, beta) for x in xs])
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-12)
    # far lower tail: relative accuracy of the tiny probabilities
    x = -(b + 30 / C)
    assert L.silf_cdf(x, C, eps, beta) == pytest.approx(ref_cdf(x, C, eps, beta), rel=1e-8)


@pytest.mark.parametrize("C,eps,beta", CDF_PARAMS + [(1.0, 1.0, 1e-6)])
def test_cdf_shape_and_continuity(C, eps, beta):
    a, b = (1 - beta) * eps, (1 + beta) * eps
    span = b + 40 / C
    xs = np.linspace(-span, span, 20001)
    F = L.silf_cdf(xs, C, eps, beta)
    assert np.all(np.diff(F) >= 0)
    assert np.all((F >= 0) & (F <= 1))
    assert L.silf_cdf(0.0, C, eps, beta) == 0.5
    assert L.silf_cdf(-1e6, C, eps, beta) == 0.0
    assert L.silf_cdf(1e6, C, eps, beta) == 1.0
    assert L.silf_cdf(-span, C, eps, beta) < 1e-15
    np.testing.assert_allclose(F + L.silf_cdf(-xs, C, eps, beta), 1.0, atol=1e-15)
    for bp in (a, b, -a, -b):
        h = 1e-10 * max(eps, 1 / C)
        lo, hi = L.silf_cdf([bp - h, bp + h], C, eps, beta)
        assert 0 <= hi - lo < 1e-8
    # dF/dx equals the density (central differences, away from break points)
    x = np.linspace(-b - 3 / C, b + 3 / C, 97)
    bps = np.array([-b, -a, a, b])
    h = 1e-3 * min(2 * beta * eps, 1 / C, math.sqrt(4 * beta * eps / C))
    x = x[np.min(np.abs(x[:, None] - bps[None, :]), axis=1) > 10 * h]
    fd = (L.silf_cdf(x + h, C, eps, beta) - L.silf_cdf(x - h, C, eps, beta)) / (2 * h)
    pdf = L.silf_pdf(x, C, eps, beta)
    np.testing.assert_allclose(fd, pdf, rtol=1e-4, atol=1e-6 * pdf.max())


@settings(max_examples=60, deadline=None)
@given(
    logC=st.floats(math.log(0.01), math.log(1e4)),
    logeps=st.floats(math.log(1e-3), 0.0),
    logbeta=st.floats(math.log(1e-6), 0.0),
    r=st.floats(1e-300, 0.5),
)
def test_tail_inverse_round_trip(logC, logeps, logbeta, r):
    C, eps, beta = math.exp(logC), math.exp(logeps), min(math.exp(logbeta), 1.0)
    x = L._silf_tail_inverse(np.float64(r), C, eps, beta)
    assert x >= 0
    back = L.silf_cdf(-x, C, eps, beta)
    # accuracy in probability, relative for small tails
    assert back == pytest.approx(r, rel=1e-7, abs=1e-13)


@pytest.mark.parametrize("C,eps,beta", [(2.0, 0.5, 0.5), (1e4, 1.0, 1.0), (0.5, 1.0, 1e-6)])
def test_tail_inverse_covers_every_zone(C, eps, beta):
    a, b = (1 - beta) * eps, (1 + beta) * eps
    s = math.sqrt(4 * beta * eps / C)  # Gaussian length scale of the quadratic zone
    xs = [0.25 * a, 0.75 * a, a + 0.3 * (b - a), a + 0.9 * (b - a), b + 0.5 / C, b + 30 / C]
    xs = np.array(xs + [a + k * s for k in (0.5, 3.0, 8.0) if a + k * s < b])
    r = L.silf_cdf(-xs, C, eps, beta)
    keep = r > 1e-300  # drop probabilities that underflowed
    assert keep.sum() >= 5
    np.testing.assert_allclose(L._silf_tail_inverse(r[keep], C, eps, beta), xs[keep], rtol=1e-7, atol=1e-12 * eps)


# --------------------------------------------------------------------------
# sampler
# --------------------------------------------------------------------------

SAMPLE_PARAMS = [
    (2.0, 0.5, 0.5),
    (1e4, 1.0, 1.0),
    (0.01, 1e-3, 1e-6),
    (100.0, 0.3, 1e-4),
    (1.0, 1.0, 1e-6),
    (30.0, 0.2, 0.8),
]


@pytest.mark.parametrize("C,eps,beta", SAMPLE_PARAMS)
def test_sampler_moments_and_ks(C, eps, beta):
    n = 10**6
    x = L.silf_sample(C, eps, beta, size=n, random_state=12345)
    assert x.shape == (n,) and np.all(np.isfinite(x))
    Z = ref_Z(C, eps, beta)
    var = ref_moment(C, eps, beta, 2) / Z
    m4 = ref_moment(C, eps, beta, 4) / Z
    assert L.silf_noise_variance(C, eps, beta) == pytest.approx(var, rel=1e-8)
    # mean: standard error sqrt(var / n)
    assert abs(x.mean()) < 5 * math.sqrt(var / n)
    # second moment about the known mean 0: standard error sqrt((m4 - var^2) / n)
    assert abs(np.mean(x * x) - var) < 5 * math.sqrt((m4 - var**2) / n)
    p = stats.kstest(x, lambda t: L.silf_cdf(t, C, eps, beta)).pvalue
    assert p > 1e-3


def test_sampler_zone_frequencies():
    # the KS statistic is blind to a zone of tiny mass, so count draws per zone
    C, eps, beta = 3.0, 0.5, 0.02
    a, b = (1 - beta) * eps, (1 + beta) * eps
    n = 10**6
    x = np.abs(L.silf_sample(C, eps, beta, size=n, random_state=7))
    Z = ref_Z(C, eps, beta)
    a_mass = 2 * a / Z
    t_mass = 2 * integrate.quad(lambda t: math.exp(-C * (t - eps)), b, np.inf)[0] / Z
    probs = np.array([a_mass, 1 - a_mass - t_mass, t_mass])
    counts = np.array([np.sum(x < a), np.sum((x >= a) & (x <= b)), np.sum(x > b)])
    assert stats.chisquare(counts, probs * n).pvalue > 1e-3


def test_sampler_seeding():
    a = L.silf_sample(1.0, 0.5, 0.3, size=1000, random_state=42)
    b = L.silf_sample(1.0, 0.5, 0.3, size=1000, random_state=42)
    c = L.silf_sample(1.0, 0.5, 0.3, size=1000, random_state=np.random.default_rng(42))
    d = L.silf_sample(1.0, 0.5, 0.3, size=1000, random_state=43)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, d)
    rng = np.random.default_rng(0)
    e1 = L.silf_sample(1.0, 0.5, 0.3, size=10, random_state=rng)
    e2 = L.silf_sample(1.0, 0.5, 0.3, size=10, random_state=rng)
    assert not np.array_equal(e1, e2)  # a Generator is advanced, not reseeded
    assert L.silf_sample(1.0, 0.5, 0.3, size=(3, 4)).shape == (3, 4)
    assert isinstance(L.silf_sample(1.0, 0.5, 0.3), float)


# --------------------------------------------------------------------------
# derivatives vs central finite differences
# --------------------------------------------------------------------------

DERIV_PARAMS = [(0.5, 0.5), (1e-3, 1e-4), (1.0, 1.0), (0.2, 0.05)]


def _away(x, bps, margin):
    return x[np.min(np.abs(x[:, None] - np.asarray(bps)[None, :]), axis=1) > margin]


@pytest.mark.parametrize("eps,beta", DERIV_PARAMS)
def test_silf_derivatives_fd(eps, beta):
    a, b = (1 - beta) * eps, (1 + beta) * eps
    rng = np.random.default_rng(1)
    # the loss is piecewise quadratic in delta, so central differences are
    # exact up to rounding as long as the stencil does not straddle a break point
    h = 1e-3 * beta * eps
    d = np.concatenate([rng.uniform(-2 * b, 2 * b, 4000), a + (b - a) * rng.uniform(0, 1, 400)])
    d = _away(d, [-b, -a, a, b], 3 * h)
    fd = (L.silf(d + h, eps, beta) - L.silf(d - h, eps, beta)) / (2 * h)
    np.testing.assert_allclose(L.silf_grad(d, eps, beta), fd, rtol=1e-7, atol=1e-9)
    fd2 = (L.silf_grad(d + h, eps, beta) - L.silf_grad(d - h, eps, beta)) / (2 * h)
    H = L.silf_hess(d, eps, beta)
    np.testing.assert_allclose(H, fd2, rtol=1e-7, atol=1e-9 * H.max())
    assert np.sum(H > 0) >= 400  # the quadratic zones were exercised
    # in epsilon the break points move by (1 -+ beta) * he, hence the wider margin
    he = 1e-4 * beta * eps
    d = _away(d, [-b, -a, a, b], 5 * he)
    fde = (L.silf(d, eps + he, beta) - L.silf(d, eps - he, beta)) / (2 * he)
    np.testing.assert_allclose(L.silf_d_epsilon(d, eps, beta), fde, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("eps,beta", DERIV_PARAMS)
def test_silf_d_epsilon_continuous(eps, beta):
    a, b = (1 - beta) * eps, (1 + beta) * eps
    h = 1e-12 * eps
    v = L.silf_d_epsilon(np.array([a - h, a + h, b - h, b + h]), eps, beta)
    np.testing.assert_allclose(v, [0, 0, -1, -1], atol=1e-6)


@pytest.mark.parametrize("C,eps,beta", GRID + [(1.0, 0.5, 1e-6)])
def test_log_normalizer_grad_fd(C, eps, beta):
    h = 1e-5
    lnZ = L.silf_log_normalizer
    fdC = (lnZ(C * math.exp(h), eps, beta) - lnZ(C * math.exp(-h), eps, beta)) / (2 * h)
    fde = (lnZ(C, eps * math.exp(h), beta) - lnZ(C, eps * math.exp(-h), beta)) / (2 * h)
    gC, ge = L.silf_log_normalizer_grad(C, eps, beta)
    assert gC == pytest.approx(fdC, rel=1e-6, abs=1e-8)
    assert ge == pytest.approx(fde, rel=1e-6, abs=1e-8)
    # the closed forms of dZ/dC and dZ/deps quoted under (E.4) and (E.5)
    Z = L.silf_normalizer(C, eps, beta)
    erf = math.erf(math.sqrt(C * beta * eps))
    dZdC = -math.sqrt(beta * eps * math.pi) * C**-1.5 * erf - 2 * C**-2 * math.exp(-C * beta * eps)
    dZde = 2 * (1 - beta) + math.sqrt(beta * math.pi / (C * eps)) * erf
    assert gC == pytest.approx(C * dZdC / Z, rel=1e-10)
    assert ge == pytest.approx(eps * dZde / Z, rel=1e-10)


# --------------------------------------------------------------------------
# trigonometric loss
# --------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_trig_natural_normalisation(delta):
    f = np.linspace(-3 * delta, 3 * delta, 3001)
    total = L.trig_likelihood(f, delta) + L.trig_likelihood(-f, delta)
    np.testing.assert_allclose(total, 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_trig_loss_is_negative_log_likelihood(delta):
    z = np.linspace(-2 * delta, 2 * delta, 2001)
    lik = L.trig_likelihood(z, delta)
    loss = L.trig_loss(z, delta)
    inside = z > -delta
    np.testing.assert_allclose(loss[inside], -np.log(lik[inside]), rtol=1e-12, atol=1e-15)
    assert np.all(np.isinf(loss[~inside])) and np.all(lik[~inside] == 0)
    assert np.all(loss[z >= delta] == 0) and np.all(lik[z >= delta] == 1)
    # the general form (5.11) is (5.7) evaluated at z / delta
    np.testing.assert_allclose(loss[inside], L.trig_loss(z[inside] / delta), rtol=1e-12, atol=1e-15)
    theta = np.pi / 4 * (1 - z[np.abs(z) < delta] / delta)
    np.testing.assert_allclose(lik[np.abs(z) < delta], np.cos(theta) ** 2, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("delta", [1.0, 0.3, 2.5])
def test_trig_derivatives_fd(delta):
    z = np.linspace(-0.95 * delta, 1.5 * delta, 500)
    z = z[np.abs(z - delta) > 1e-3 * delta]
    h = 1e-6 * delta
    fd = (L.trig_loss(z + h, delta) - L.trig_loss(z - h, delta)) / (2 * h)
    g = L.trig_loss_grad(z, delta)
    np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
    fd2 = (L.trig_loss_grad(z + h, delta) - L.trig_loss_grad(z - h, delta)) / (2 * h)
    np.testing.assert_allclose(L.trig_loss_hess(z, delta), fd2, rtol=1e-6, atol=1e-8)
    assert L.trig_loss_grad(-2 * delta, delta) == -np.inf
    assert L.trig_loss_hess(-2 * delta, delta) == np.inf


def test_trig_delta_one_matches_5_9_and_5_10():
    f = np.linspace(-0.9, 0.9, 37)
    for y in (1.0, -1.0):
        z = y * f
        inside = np.abs(z) < 1
        theta = np.pi / 4 * (1 - z[inside])
        # d/df = y d/dz (5.9); d2/df2 = d2/dz2 (5.10)
        np.testing.assert_allclose(y * L.trig_loss_grad(z[inside]), -y * np.pi / 2 * np.tan(theta), rtol=1e-12)
        np.testing.assert_allclose(L.trig_loss_hess(z[inside]), np.pi**2 / 8 / np.cos(theta) ** 2, rtol=1e-12)


# --------------------------------------------------------------------------
# argument validation
# --------------------------------------------------------------------------

BAD = [
    ("C", lambda v: L.silf_normalizer(v, 0.5, 0.5), [0.0, -1.0, np.nan, np.inf]),
    ("epsilon", lambda v: L.silf_normalizer(1.0, v, 0.5), [0.0, -0.1, np.nan]),
    ("beta", lambda v: L.silf_normalizer(1.0, 0.5, v), [0.0, -0.5, 1.5, np.nan]),
    ("beta", lambda v: L.silf(0.1, 0.5, v), [0.0, 1.0001]),
    ("epsilon", lambda v: L.silf_grad(0.1, v, 0.5), [0.0]),
    ("beta", lambda v: L.silf_hess(0.1, 0.5, v), [2.0]),
    ("epsilon", lambda v: L.silf_d_epsilon(0.1, v, 0.5), [-1.0]),
    ("C", lambda v: L.silf_log_normalizer(v, 0.5, 0.5), [-3.0]),
    ("C", lambda v: L.silf_log_normalizer_grad(v, 0.5, 0.5), [0.0]),
    ("C", lambda v: L.silf_noise_variance(v, 0.5, 0.5), [0.0]),
    ("beta", lambda v: L.silf_pdf(0.0, 1.0, 0.5, v), [0.0]),
    ("epsilon", lambda v: L.silf_cdf(0.0, 1.0, v, 0.5), [0.0]),
    ("C", lambda v: L.silf_sample(v, 0.5, 0.5, size=3), [0.0]),
    ("beta", lambda v: L.silf_sample(1.0, 0.5, v, size=3), [1.1]),
    ("epsilon", lambda v: L.eps_insensitive(0.0, v), [-0.1]),
    ("C", lambda v: L.eps_insensitive_noise_variance(v, 0.5), [0.0]),
    ("epsilon", lambda v: L.eps_insensitive_noise_variance(1.0, v), [-1.0]),
    ("delta", lambda v: L.trig_loss(0.0, v), [0.0, -1.0]),
    ("delta", lambda v: L.trig_likelihood(0.0, v), [0.0]),
    ("delta", lambda v: L.trig_loss_grad(0.0, v), [-2.0]),
    ("delta", lambda v: L.trig_loss_hess(0.0, v), [np.inf]),
]


@pytest.mark.parametrize("name,fn,values", BAD)
def test_bad_arguments_raise(name, fn, values):
    for v in values:
        with pytest.raises(ValueError, match=rf"^{name} must lie in .*got {name}="):
            fn(v)


def test_bad_array_argument_names_offender():
    with pytest.raises(ValueError, match=r"C must lie in \(0, inf\); got C=-2\.0"):
        L.silf_normalizer(np.array([1.0, -2.0]), 0.5, 0.5)
    with pytest.raises(ValueError, match=r"beta must lie in \(0, 1\]"):
        L.silf_noise_variance(1.0, 0.5, np.array([0.5, 1.2]))


@pytest.mark.parametrize("eps,beta", [(0.3, 0.1), (1.0, 1.0), (0.05, 0.5)])
def test_the_checked_shape_gives_the_public_functions_bit_for_bit(eps, beta):
    """The solvers' inner loops use SilfShape, checked once; it must be the
    public, checked loss and derivatives, zone boundaries included."""
    rng = np.random.default_rng(3)
    edges = np.array([(1 - beta) * eps, (1 + beta) * eps, 0.0])
    d = np.concatenate([rng.normal(scale=3 * eps, size=500), edges, -edges])
    shape = L.SilfShape.checked(eps, beta)
    np.testing.assert_array_equal(shape.value(d), L.silf(d, eps, beta))
    np.testing.assert_array_equal(shape.grad(d), L.silf_grad(d, eps, beta))
    np.testing.assert_array_equal(shape.hess(d), L.silf_hess(d, eps, beta))
    np.testing.assert_array_equal(shape.quadratic(d), L.silf_hess(d, eps, beta) > 0)
    with pytest.raises(ValueError, match="beta"):
        L.SilfShape.checked(eps, 1.5)
