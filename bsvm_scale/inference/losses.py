r"""Loss functions, their noise densities and derivatives.

Equation numbers refer to Chu (2003), *Bayesian support vector machines*
(the "thesis"), and to Gao et al. (2002), *A probabilistic framework for SVM
regression and error bar estimation* ("Gao").

Soft insensitive loss function (SILF), thesis (2.28)
----------------------------------------------------
With ``a = (1 - beta) * epsilon``, ``b = (1 + beta) * epsilon`` and
``d = |delta|`` the loss is symmetric in ``delta``::

    l(delta) = 0                            d <  a          (insensitive zone)
             = (d - a)^2 / (4 beta eps)     a <= d <= b     (quadratic zone)
             = d - eps                      d >  b          (linear zone)

with ``epsilon > 0`` and ``0 < beta <= 1``.  ``beta -> 0`` recovers Vapnik's
epsilon-insensitive loss, ``beta = 1`` Huber's loss with threshold
``2 epsilon`` and ``epsilon -> 0`` the Laplacian loss ``|delta|``.
Its derivatives in ``delta`` are (2.29) and (2.30); in ``epsilon`` it is
``-1`` on the linear zones, ``-(delta^2 - a^2) / (4 beta eps^2)`` on the
quadratic zones and ``0`` in the insensitive zone.

The noise density is ``P_S(delta) = exp(-C l(delta)) / Z_S`` (2.31) with
normaliser (2.32)::

    Z_S = 2 a + 2 G + 2 T,
    G   = sqrt(pi beta eps / C) * erf(sqrt(C beta eps)),
    T   = exp(-C beta eps) / C,

i.e. the masses of the insensitive, quadratic and linear zones.  The noise
has zero mean and variance (2.33)::

    sigma_n^2 = (2 / Z_S) * [ a^3 / 3 + G (2 beta eps / C + a^2)
                              + 4 (1 - beta) beta eps^2 / C
                              + T C (a^2 / C + 2 b / C^2 + 2 / C^3) ].

The log-normaliser derivatives used by the evidence gradients (E.4), (E.5)
simplify to::

    d ln Z_S / d ln C   = -(G + 2 T) / Z_S
    d ln Z_S / d ln eps =  (2 a + G) / Z_S.

The distribution function is (F.1); :func:`silf_sample` inverts it piece by
piece (exponential tails, inverse error function on the quadratic zones,
linear in the insensitive zone).

Other losses
------------
* epsilon-insensitive loss ``max(|delta| - eps, 0)`` with noise density
  proportional to ``exp(-C |delta|_eps)``, normaliser ``2 eps + 2 / C`` and
  variance (Gao eq. 29) ``2 / C^2 + eps^2 (eps C + 3) / (3 (eps C + 1))``;
* hinge loss ``max(0, 1 - z)`` of the margin ``z = y f``;
* trigonometric loss (thesis 5.7, general width ``delta`` as in 5.11)::

      l_t(z) = +inf                             z <= -delta
             = 2 ln sec(pi/4 (1 - z / delta))   -delta < z < delta
             = 0                                z >= delta

  whose likelihood ``exp(-l_t) = cos^2(pi/4 (1 - z/delta))`` (5.8) satisfies
  ``P(+1 | f) + P(-1 | f) = 1`` for every ``f``.  Derivatives are taken with
  respect to ``z``; since ``y^2 = 1``, ``d/df = y d/dz`` and
  ``d^2/df^2 = d^2/dz^2`` ((5.9), (5.10) are the ``delta = 1`` cases).

All functions broadcast over array arguments and return Python floats for
scalar input.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import special

__all__ = [
    "silf",
    "silf_grad",
    "SilfShape",
    "silf_hess",
    "silf_d_epsilon",
    "silf_normalizer",
    "silf_log_normalizer",
    "silf_log_normalizer_grad",
    "silf_pdf",
    "silf_cdf",
    "silf_noise_variance",
    "silf_sample",
    "eps_insensitive",
    "eps_insensitive_normalizer",
    "eps_insensitive_noise_variance",
    "hinge",
    "trig_loss",
    "trig_likelihood",
    "trig_loss_grad",
    "trig_loss_hess",
]

_SQRT_PI = np.sqrt(np.pi)


# --------------------------------------------------------------------------
# argument handling
# --------------------------------------------------------------------------
def _check(name, value, *, lower, upper=np.inf, lower_open=True, upper_open=False):
    """Return ``value`` as a float array after checking it lies in a range."""
    arr = np.asarray(value, dtype=np.float64)
    lo_ok = arr > lower if lower_open else arr >= lower
    hi_ok = arr < upper if upper_open else arr <= upper
    ok = np.isfinite(arr) & lo_ok & hi_ok
    if arr.size == 0 or not np.all(ok):
        lb = "(" if lower_open else "["
        ub = ")" if (upper_open or not np.isfinite(upper)) else "]"
        hi = "inf" if not np.isfinite(upper) else f"{upper:g}"
        bad = arr[~ok] if arr.ndim else arr
        shown = float(bad.ravel()[0]) if bad.size else value
        raise ValueError(
            f"{name} must lie in {lb}{lower:g}, {hi}{ub}; got {name}={shown!r}"
            + ("" if arr.ndim == 0 else f" (in an array of shape {arr.shape})")
            + "."
        )
    return arr


def _shape_params(epsilon, beta):
    """Validated ``(epsilon, beta)`` of the loss shape (2.28)."""
    return (_check("epsilon", epsilon, lower=0.0),
            _check("beta", beta, lower=0.0, upper=1.0))


def _silf_params(C, epsilon, beta):
    return (_check("C", C, lower=0.0), *_shape_params(epsilon, beta))


def _out(x):
    """Python float for 0-d results, ndarray otherwise."""
    x = np.asarray(x)
    return float(x) if x.ndim == 0 else x


def _delta(delta, name="delta"):
    arr = np.asarray(delta, dtype=np.float64)
    if np.any(np.isnan(arr)):
        raise ValueError(f"{name} contains NaN.")
    return arr


def _masses(C, epsilon, beta):
    """Half-masses ``a``, ``G``, ``T`` of the three zones (see module doc).

    ``G`` is finite for any ``beta > 0``: as ``beta -> 0`` both factors vanish
    and ``G -> 2 beta eps``; ``T`` simply underflows to 0 for huge
    ``C beta eps`` while ``G`` then carries the mass.
    """
    a = (1.0 - beta) * epsilon
    cbe = C * beta * epsilon
    G = np.sqrt(np.pi * beta * epsilon / C) * special.erf(np.sqrt(cbe))
    T = np.exp(-cbe) / C
    return a, G, T


# --------------------------------------------------------------------------
# SILF and its derivatives
# --------------------------------------------------------------------------
def _zones(delta, epsilon, beta):
    """``(|delta|, epsilon, beta, (1-beta) eps, (1+beta) eps)``: the magnitudes
    and the zone boundaries of (2.28), parameters checked."""
    d = np.abs(_delta(delta))
    epsilon, beta = _shape_params(epsilon, beta)
    return d, epsilon, beta, (1.0 - beta) * epsilon, (1.0 + beta) * epsilon


class SilfShape(NamedTuple):
    """The loss shape ``(epsilon, beta)`` of (2.28), checked once
    (:meth:`checked`): the loss and its derivatives of float arrays of
    residuals without further checks, for solvers that call them in their
    inner loops (the public :func:`silf`, :func:`silf_grad`, :func:`silf_hess`
    check their arguments and then use these, so the bits are the same)."""

    epsilon: object
    beta: object

    @classmethod
    def checked(cls, epsilon, beta):
        """The shape after the checks of :func:`silf` (``epsilon > 0``, ``0 <
        beta <= 1``; floats or arrays)."""
        return cls(*_shape_params(epsilon, beta))

    def value(self, delta):
        """SILF (2.28) of the residuals ``delta`` (an array)."""
        eps, beta = self
        d = np.abs(delta)
        u = np.maximum(d - (1.0 - beta) * eps, 0.0)
        return np.where(d > (1.0 + beta) * eps, d - eps, u * u / (4.0 * beta * eps))

    def grad(self, delta):
        """SILF' (2.29) of the residuals ``delta`` (an array)."""
        eps, beta = self
        g = np.minimum(np.maximum(np.abs(delta) - (1.0 - beta) * eps, 0.0) / (2.0 * beta * eps),
                       1.0)
        return np.sign(delta) * g

    def quadratic(self, delta):
        """Whether each residual of ``delta`` (an array) lies in the closed
        quadratic zones ``(1-beta) eps <= |delta| <= (1+beta) eps`` of (2.28)."""
        eps, beta = self
        d = np.abs(delta)
        return (d >= (1.0 - beta) * eps) & (d <= (1.0 + beta) * eps)

    def hess(self, delta):
        """SILF'' (2.30) of the residuals ``delta`` (an array; the closed
        quadratic zones)."""
        eps, beta = self
        return np.where(self.quadratic(delta), 1.0 / (2.0 * beta * eps), 0.0)


def silf(delta, epsilon, beta):
    r"""Soft insensitive loss function, thesis eq. (2.28).

    Parameters
    ----------
    delta : array_like
        Residuals ``y - f(x)``.
    epsilon : float or array_like
        Insensitive half-width, ``epsilon > 0``.
    beta : float or array_like
        Smoothing fraction, ``0 < beta <= 1``.

    Returns
    -------
    float or ndarray
        ``0`` for ``|delta| < (1-beta) eps``; ``(|delta| - (1-beta) eps)^2 /
        (4 beta eps)`` on ``[(1-beta) eps, (1+beta) eps]``; ``|delta| - eps``
        beyond ``(1+beta) eps``.
    """
    return _out(SilfShape.checked(epsilon, beta).value(_delta(delta)))


def silf_grad(delta, epsilon, beta):
    r"""First derivative of SILF with respect to ``delta``, eq. (2.29).

    Parameters
    ----------
    delta : array_like
        Residuals.
    epsilon, beta : float or array_like
        SILF parameters (``epsilon > 0``, ``0 < beta <= 1``).

    Returns
    -------
    float or ndarray
        ``sign(delta) * min(max(|delta| - (1-beta) eps, 0) / (2 beta eps), 1)``.
        The loss is continuously differentiable, so the value is unambiguous
        at the zone boundaries.
    """
    return _out(SilfShape.checked(epsilon, beta).grad(_delta(delta)))


def silf_hess(delta, epsilon, beta):
    r"""Second derivative of SILF with respect to ``delta``, eq. (2.30).

    Arguments ``delta``, ``epsilon``, ``beta`` as in :func:`silf`; returns
    ``1 / (2 beta eps)`` on the closed quadratic zones
    ``(1-beta) eps <= |delta| <= (1+beta) eps``, 0 elsewhere.  (The second
    derivative jumps at the zone boundaries; the closed-interval
    convention of (2.28) is used there.)
    """
    return _out(SilfShape.checked(epsilon, beta).hess(_delta(delta)))


def silf_d_epsilon(delta, epsilon, beta):
    r"""Derivative of SILF with respect to ``epsilon`` (thesis Appendix E.2).

    Parameters
    ----------
    delta, epsilon, beta : as in :func:`silf`.

    Returns
    -------
    float or ndarray
        ``-1`` on the linear zones, ``-(delta^2 - (1-beta)^2 eps^2) /
        (4 beta eps^2)`` on the quadratic zones and ``0`` in the insensitive
        zone.

    Notes
    -----
    The formula printed after (E.5) has ``2 beta eps^2`` in the denominator.
    Differentiating (2.28) gives ``4 beta eps^2``; only then is the
    derivative continuous (``0`` at ``|delta| = (1-beta) eps``, ``-1`` at
    ``(1+beta) eps``), and it agrees with the ``epsilon``-gradient (4.40),
    which uses ``eps * dl/deps = -(delta^2 - (1-beta)^2 eps^2)/(4 beta eps)``.
    """
    d, epsilon, beta, a, b = _zones(delta, epsilon, beta)
    u = np.maximum(d - a, 0.0)
    # (d^2 - a^2) factored as (d - a)(d + a) to avoid cancellation
    quad = -u * (d + a) / (4.0 * beta * epsilon * epsilon)
    return _out(np.where(d > b, -1.0, quad))


# --------------------------------------------------------------------------
# SILF noise model
# --------------------------------------------------------------------------
def silf_normalizer(C, epsilon, beta):
    r"""Normaliser ``Z_S`` of the SILF noise density, eq. (2.32).

    Parameters
    ----------
    C : float or array_like
        Noise scale (inverse temperature) of the likelihood, ``C > 0``.
    epsilon, beta : float or array_like
        SILF parameters (``epsilon > 0``, ``0 < beta <= 1``).

    Returns
    -------
    float or ndarray
        ``Z_S = integral of exp(-C l(delta)) d delta
        = 2 (1-beta) eps + 2 sqrt(pi beta eps / C) erf(sqrt(C beta eps))
        + (2 / C) exp(-C beta eps)``.

    Notes
    -----
    The thesis writes ``1/Z_S = integral ...`` under (2.31); that is a typo,
    ``Z_S`` itself is the integral (as (2.32) and the density show).
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    a, G, T = _masses(C, epsilon, beta)
    return _out(2.0 * (a + G + T))


def silf_log_normalizer(C, epsilon, beta):
    r"""Natural logarithm of ``Z_S`` (2.32), as it enters the evidence (4.38).

    Parameters
    ----------
    C, epsilon, beta : float or array_like
        ``C > 0``, ``epsilon > 0``, ``0 < beta <= 1``.

    Returns
    -------
    float or ndarray
        ``ln Z_S = ln 2 + ln(a + G + T)``; the three terms are non-negative
        masses (see module docstring), so no cancellation can occur and the
        sum never underflows (``G > 0`` whenever ``T`` underflows).
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    a, G, T = _masses(C, epsilon, beta)
    return _out(np.log(2.0) + np.log(a + G + T))


def silf_log_normalizer_grad(C, epsilon, beta):
    r"""Derivatives of ``ln Z_S`` with respect to ``ln C`` and ``ln epsilon``.

    From (E.4) and (E.5), ``dZ_S/dC = -sqrt(beta eps pi) C^{-3/2}
    erf(sqrt(C beta eps)) - 2 C^{-2} exp(-C beta eps)`` and ``dZ_S/deps =
    2 (1-beta) + sqrt(beta pi / (C eps)) erf(sqrt(C beta eps))`` (both
    verified by direct differentiation of (2.32)).

    Parameters
    ----------
    C, epsilon, beta : as in :func:`silf_normalizer`.

    Returns
    -------
    dlnC : float or ndarray
        ``C / Z_S * dZ_S/dC = -(G + 2 T) / Z_S``.
    dlneps : float or ndarray
        ``eps / Z_S * dZ_S/deps = (2 (1-beta) eps + G) / Z_S``.

    with ``G = sqrt(pi beta eps / C) erf(sqrt(C beta eps))`` and
    ``T = exp(-C beta eps) / C``; these are the ``n / Z_S`` terms of (4.39)
    and (4.40) divided by ``n``.
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    a, G, T = _masses(C, epsilon, beta)
    Z = 2.0 * (a + G + T)
    return _out(-(G + 2.0 * T) / Z), _out((2.0 * a + G) / Z)


def silf_pdf(delta, C, epsilon, beta):
    r"""SILF noise density ``exp(-C l(delta)) / Z_S``, eq. (2.31).

    Parameters
    ----------
    delta : array_like
        Noise values.
    C, epsilon, beta : float or array_like
        ``C > 0``, ``epsilon > 0``, ``0 < beta <= 1``.

    Returns
    -------
    float or ndarray
        Density values.
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    return _out(np.exp(-C * np.asarray(silf(delta, epsilon, beta))) / silf_normalizer(C, epsilon, beta))


def silf_noise_variance(C, epsilon, beta):
    r"""Variance ``sigma_n^2`` of the SILF noise, eq. (2.33).

    Arguments ``C``, ``epsilon``, ``beta`` as in :func:`silf_normalizer`; returns
    ``(2/Z_S) {(1-beta)^3 eps^3/3 + sqrt(pi beta eps/C) (2 beta eps/C +
    (1-beta)^2 eps^2) erf(sqrt(C beta eps)) + 4 (1-beta) beta eps^2 / C
    + ((1-beta)^2 eps^2/C + 2 (1+beta) eps/C^2 + 2/C^3) exp(-C beta eps)}``.
    Every term is non-negative.  The limits are Gao's epsilon-insensitive
    variance as ``beta -> 0`` and the Laplace variance ``2/C^2`` as
    ``epsilon -> 0``.
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    a, G, T = _masses(C, epsilon, beta)
    b = (1.0 + beta) * epsilon
    e = C * T  # exp(-C beta eps)
    inner = (
        a**3 / 3.0
        + G * (2.0 * beta * epsilon / C + a * a)
        + 4.0 * (1.0 - beta) * beta * epsilon * epsilon / C
        + (a * a / C + 2.0 * b / C**2 + 2.0 / C**3) * e
    )
    return _out(inner / (a + G + T))


def _silf_lower_tail(x, C, epsilon, beta):
    """``P(delta <= -x)`` for ``x >= 0`` (F.1 on the negative half-line)."""
    a, G, T = _masses(C, epsilon, beta)
    half = a + G + T  # Z_S / 2
    b = (1.0 + beta) * epsilon
    S = np.sqrt(np.pi * beta * epsilon / C)
    rk = np.sqrt(C / (4.0 * beta * epsilon))
    Y = np.sqrt(C * beta * epsilon)
    y = rk * np.maximum(x - a, 0.0)
    # quadratic zone: T + S (erf(Y) - erf(y)); erfc form is accurate when y is large
    quad = T + S * np.where(y > 0.5, special.erfc(y) - special.erfc(Y), special.erf(Y) - special.erf(y))
    tail = np.exp(-C * (np.maximum(x, b) - epsilon)) / C
    mid = half - x
    r = np.where(x > b, tail, np.where(x >= a, quad, mid))
    return r / (2.0 * half)


def silf_cdf(delta, C, epsilon, beta):
    r"""Distribution function of the SILF noise, eq. (F.1).

    Arguments ``delta``, ``C``, ``epsilon``, ``beta`` as in :func:`silf_pdf`; returns
    ``F(delta) = P(noise <= delta)``.  The lower tail is evaluated
    directly from the pieces of (F.1) and the upper half through the
    symmetry ``F(delta) = 1 - F(-delta)``.
    """
    delta = _delta(delta)
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    r = _silf_lower_tail(np.abs(delta), C, epsilon, beta)
    return _out(np.where(delta <= 0.0, r, 1.0 - r))


def _silf_tail_inverse(r, C, epsilon, beta):
    """Solve ``P(delta <= -x) = r`` for ``x >= 0``, ``r`` in ``(0, 1/2]``."""
    a, G, T = _masses(C, epsilon, beta)
    half = a + G + T
    m = r * 2.0 * half  # unnormalised tail mass
    S = np.sqrt(np.pi * beta * epsilon / C)
    scale = 2.0 * np.sqrt(beta * epsilon / C)  # 1 / sqrt(C / (4 beta eps))
    Y = np.sqrt(C * beta * epsilon)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # exponential tail: m = exp(-C (x - eps)) / C
        x_tail = epsilon - np.log(C * m) / C
        # quadratic zone: m = T + S (erf(Y) - erf(y)), x = a + scale * y
        p = (G + T - m) / S  # = erf(y), in [0, erf(Y)]
        q = special.erfc(Y) + (m - T) / S  # = erfc(y) = 1 - p, accurate for large y
        y = np.where(p < 0.5, special.erfinv(np.clip(p, 0.0, 1.0)), special.erfcinv(np.clip(q, 0.0, 2.0)))
        x_quad = a + scale * y
        # insensitive zone: m = half - x
        x_mid = half - m
    return np.where(m <= T, x_tail, np.where(m <= G + T, x_quad, x_mid))


def silf_sample(C, epsilon, beta, size=None, random_state=None):
    r"""Draw SILF noise by exact inversion of the distribution function (F.1).

    Parameters
    ----------
    C, epsilon, beta : float
        ``C > 0``, ``epsilon > 0``, ``0 < beta <= 1``.
    size : int or tuple of int, optional
        Output shape; ``None`` returns a single float.
    random_state : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Source of randomness, passed to :func:`numpy.random.default_rng`
        (a Generator is used as is).

    Returns
    -------
    float or ndarray
        Samples with density (2.31).

    Notes
    -----
    One uniform ``U`` in ``[0, 1)`` is used per draw.  The density is
    symmetric, so ``U < 1/2`` gives a negative draw with lower-tail
    probability ``r = 1/2 - U`` and ``U >= 1/2`` a positive draw with
    upper-tail probability ``r = 1 - U``; in both cases ``r`` lies in
    ``(0, 1/2]`` (never 0, so no infinite draws) and is an exact uniform on
    that interval.  ``|delta|`` is then obtained from ``r`` by inverting
    (F.1) piece by piece: a logarithm on the exponential tail, the inverse
    error function (or its complement, for accuracy near 1) on the quadratic
    zone and a linear map in the insensitive zone.
    """
    C, epsilon, beta = _silf_params(C, epsilon, beta)
    if C.ndim or epsilon.ndim or beta.ndim:
        raise ValueError("C, epsilon and beta must be scalars in silf_sample.")
    rng = np.random.default_rng(random_state)
    u = rng.random(size)
    neg = u < 0.5
    r = np.where(neg, 0.5 - u, 1.0 - u)
    x = _silf_tail_inverse(r, C, epsilon, beta)
    return _out(np.where(neg, -x, x))


# --------------------------------------------------------------------------
# epsilon-insensitive and hinge losses
# --------------------------------------------------------------------------
def eps_insensitive(delta, epsilon):
    r"""Vapnik's epsilon-insensitive loss ``max(|delta| - epsilon, 0)``.

    Parameters
    ----------
    delta : array_like
        Residuals.
    epsilon : float or array_like
        Insensitive half-width, ``epsilon >= 0`` (0 gives the Laplacian loss).

    Returns
    -------
    float or ndarray
        Loss values; the ``beta -> 0`` limit of (2.28).
    """
    delta = _delta(delta)
    epsilon = _check("epsilon", epsilon, lower=0.0, lower_open=False)
    return _out(np.maximum(np.abs(delta) - epsilon, 0.0))


def _eps_params(C, epsilon):
    """``(C, epsilon)`` checked: ``C > 0``, ``epsilon >= 0``."""
    return _check("C", C, lower=0.0), _check("epsilon", epsilon, lower=0.0, lower_open=False)


def eps_insensitive_normalizer(C, epsilon):
    r"""Normaliser of the density proportional to ``exp(-C |delta|_eps)``.

    Parameters
    ----------
    C, epsilon : float or array_like
        ``C > 0``, ``epsilon >= 0``.

    Returns
    -------
    float or ndarray
        ``2 epsilon + 2 / C`` (the ``beta -> 0`` limit of (2.32)).
    """
    C, epsilon = _eps_params(C, epsilon)
    return _out(2.0 * epsilon + 2.0 / C)


def eps_insensitive_noise_variance(C, epsilon):
    r"""Noise variance of the epsilon-insensitive likelihood, Gao et al. eq. (29).

    Arguments ``C``, ``epsilon`` as in :func:`eps_insensitive_normalizer`; returns
    ``2 / C^2 + eps^2 (eps C + 3) / (3 (eps C + 1))``, the variance of the
    density ``exp(-C max(|delta| - eps, 0)) / (2 eps + 2/C)``.  (Direct
    integration gives ``(C eps^3/3 + eps^2 + 2 eps/C + 2/C^2) /
    (C eps + 1)``, which is the same expression.)
    """
    C, epsilon = _eps_params(C, epsilon)
    ec = epsilon * C
    return _out(2.0 / C**2 + epsilon**2 * (ec + 3.0) / (3.0 * (ec + 1.0)))


def hinge(z):
    r"""Hinge (soft-margin L1) loss ``max(0, 1 - z)`` of the margin ``z = y f``.

    Parameters
    ----------
    z : array_like
        Margins ``y * f(x)``.

    Returns
    -------
    float or ndarray
        Loss values.
    """
    z = _delta(z, "z")
    return _out(np.maximum(0.0, 1.0 - z))


# --------------------------------------------------------------------------
# trigonometric loss (classification)
# --------------------------------------------------------------------------
def _trig_args(z, delta):
    z = _delta(z, "z")
    delta = _check("delta", delta, lower=0.0)
    # phi = pi/4 (1 + z/delta) = pi/2 - theta with theta = pi/4 (1 - z/delta);
    # cos(theta) = sin(phi) is accurate near z = -delta where cos(theta) -> 0.
    phi = 0.25 * np.pi * (1.0 + z / delta)
    return z, delta, phi


def trig_likelihood(z, delta=1.0):
    r"""Trigonometric likelihood ``P(y | f)`` of the margin ``z = y f``, eq. (5.8).

    Parameters
    ----------
    z : array_like
        Margins ``y * f(x)``.
    delta : float, optional
        Width of the non-trivial region (5.11), ``delta > 0``.

    Returns
    -------
    float or ndarray
        ``0`` for ``z <= -delta``, ``cos^2(pi/4 (1 - z/delta))`` for
        ``|z| < delta``, ``1`` for ``z >= delta``.  Naturally normalised:
        ``trig_likelihood(f) + trig_likelihood(-f) = 1``.
    """
    z, delta, phi = _trig_args(z, delta)
    s = np.sin(np.clip(phi, 0.0, 0.5 * np.pi))
    return _out(s * s)


def trig_loss(z, delta=1.0):
    r"""Trigonometric loss ``-ln P(y | f)``, eqs. (5.7) and (5.11).

    Arguments ``z``, ``delta`` as in :func:`trig_likelihood` (``delta = 1`` gives (5.7)); returns
    ``+inf`` for ``z <= -delta``, ``2 ln sec(pi/4 (1 - z/delta))`` for
    ``|z| < delta`` and ``0`` for ``z >= delta``.
    """
    z, delta, phi = _trig_args(z, delta)
    with np.errstate(divide="ignore"):
        inside = -2.0 * np.log(np.sin(np.clip(phi, 0.0, 0.5 * np.pi)))
    out = np.where(z <= -delta, np.inf, np.where(z >= delta, 0.0, inside))
    return _out(out)


def trig_loss_grad(z, delta=1.0):
    r"""Derivative of the trigonometric loss with respect to ``z``.

    Arguments ``z``, ``delta`` as in :func:`trig_likelihood`; returns
    ``-(pi / (2 delta)) tan(pi/4 (1 - z/delta))`` for ``|z| < delta``,
    ``0`` for ``z >= delta`` and ``-inf`` (the one-sided limit) for
    ``z <= -delta``.  Multiply by ``y`` for the derivative in ``f``,
    which for ``delta = 1`` is (5.9).
    """
    z, delta, phi = _trig_args(z, delta)
    phic = np.clip(phi, 0.0, 0.5 * np.pi)
    with np.errstate(divide="ignore"):
        inside = -(0.5 * np.pi / delta) * np.cos(phic) / np.sin(phic)
    out = np.where(z <= -delta, -np.inf, np.where(z >= delta, 0.0, inside))
    return _out(out)


def trig_loss_hess(z, delta=1.0):
    r"""Second derivative of the trigonometric loss with respect to ``z``.

    Arguments ``z``, ``delta`` as in :func:`trig_likelihood`; returns
    ``(pi^2 / (8 delta^2)) sec^2(pi/4 (1 - z/delta))`` for
    ``|z| < delta``, ``0`` for ``z >= delta`` and ``+inf`` (the one-sided
    limit) for ``z <= -delta``.  Equal to the second derivative in ``f``
    (``y^2 = 1``); ``delta = 1`` gives (5.10).
    """
    z, delta, phi = _trig_args(z, delta)
    s = np.sin(np.clip(phi, 0.0, 0.5 * np.pi))
    with np.errstate(divide="ignore"):
        inside = (np.pi**2 / (8.0 * delta**2)) / (s * s)
    out = np.where(z <= -delta, np.inf, np.where(z >= delta, 0.0, inside))
    return _out(out)
