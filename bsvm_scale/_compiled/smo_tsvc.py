"""Numba SMO for the trigonometric SVC with a bias term (TSVC, thesis Appendix H).

The dual (H.4) is the problem of :mod:`bsvm_scale._compiled.smo_classic` with
``l = n``, ``s = y``, ``p = -1``, no upper bound (``U = +inf``) and the
separable term ``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)``, whose
derivative is ``phi'(a) = 4/pi arctan(2a/pi)`` and curvature ``phi''(a) =
8/(pi^2 + 4a^2)`` (the diagonal term of (G.2)). With case weights ``w_i`` the
separable term is the perspective ``w_i phi(a / w_i)``; a case of weight 0 is
frozen at ``alpha = 0`` (``smo_classic``'s module docstring says why).

The working pair is chosen as for the quadratic duals (:func:`select_i`,
:func:`select_j`, with the curvatures ``phi''`` added), and the pair step along
the feasible direction is a one-dimensional convex problem without a closed
form, solved by safeguarded Newton iterations (Appendix G,
:func:`trig_pair_step`). Only ``Kv = K (s alpha)`` is kept; the gradient is
rebuilt from it after each step.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import jit
from .row_cache import get_row
from .smo_classic import STATUS_MAX_ITER, STATUS_OK, QPDual, select_i, select_j

_FOUR_OVER_PI = 4.0 / np.pi
_TWO_OVER_PI = 2.0 / np.pi
_PI2 = np.pi * np.pi
_MAX_NEWTON = 100    # Newton iterations of one trigonometric pair step
_XTOL = 1e-14        # relative step size at which they stop


class TsvcDual(NamedTuple):
    """The arrays of the trigonometric dual (H.4) with case weights (length
    ``n``), solved in place by :func:`smo_tsvc`."""

    s: np.ndarray      #: signs +-1.0 (the labels)
    w: np.ndarray      #: case weights >= 0 (all ones: unweighted; 0: variable fixed at 0)
    alpha: np.ndarray  #: feasible start on entry, the solution on return
    Kv: np.ndarray     #: ``K (s * alpha)`` (output)


# ---------------------------------------------------------------------------
# small helpers
# ---------------------------------------------------------------------------


@jit(inline="always")
def trig_dphi(a):
    """``phi'(a) = 4/pi arctan(2a/pi)`` of the trigonometric dual (H.4)."""
    return _FOUR_OVER_PI * np.arctan(_TWO_OVER_PI * a)


@jit(inline="always")
def trig_d2phi(a):
    """``phi''(a) = 8 / (pi^2 + 4 a^2)`` (diagonal term of G.2)."""
    return 8.0 / (_PI2 + 4.0 * a * a)


@jit()
def trig_phi(a):
    """``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)`` (H.4)."""
    u = _TWO_OVER_PI * a
    return _FOUR_OVER_PI * a * np.arctan(u) - np.log1p(u * u)


@jit(inline="always")
def trig_dphi_w(a, w):
    """``phi_w'(a) = phi'(a / w)``, the derivative of the weighted term
    ``w phi(a / w)`` of case weight ``w``; 0 for ``w = 0`` (a frozen
    variable, ``a = 0``)."""
    if w > 0.0:
        return trig_dphi(a / w)
    return 0.0


@jit(inline="always")
def trig_d2phi_w(a, w):
    """``phi_w''(a) = phi''(a / w) / w = 8 w / (pi^2 w^2 + 4 a^2)``; 0 for
    ``w = 0`` (never used: the variable is frozen)."""
    if w > 0.0:
        return trig_d2phi(a / w) / w
    return 0.0


@jit()
def trig_phi_w(a, w):
    """``w phi(a / w)``: the dual term of a case whose trigonometric loss has
    weight ``w`` (the conjugate of ``w l_t``). For ``w = 0``: 0 at ``a = 0``,
    ``inf`` otherwise (the case is absent and its variable fixed at 0)."""
    if w > 0.0:
        return w * trig_phi(a / w)
    return 0.0 if a == 0.0 else np.inf


# ---------------------------------------------------------------------------
# working-set selection and stopping test
# ---------------------------------------------------------------------------


@jit()
def trig_pair_step(i, j, kij, kii, kjj, dual, w):
    """Two-variable step of the trigonometric dual (H.4) by safeguarded Newton.

    Minimises ``psi(t)`` along ``alpha_i += s_i t``, ``alpha_j -= s_j t``
    (``alpha >= 0``, no upper bound): ``psi'(t) = g0 + t eta
    + s_i [phi_i'(alpha_i + s_i t) - phi_i'(alpha_i)] - s_j [phi_j'(alpha_j - s_j t)
    - phi_j'(alpha_j)]`` with ``g0 = s_i G_i - s_j G_j < 0``,
    ``eta = K_ii + K_jj - 2 K_ij`` and ``phi_i(a) = w_i phi(a / w_i)`` for
    the case weights ``w`` (all ones: the unweighted (H.4)). ``psi`` is
    strictly convex, so Newton steps (G.2 restricted to the feasible line)
    are kept inside a bracket ``[lo, hi]`` of the root of ``psi'`` and
    replaced by bisection (or bracket expansion) when they leave it, as the
    trust region of (G.3) does. Both variables must have ``w > 0``.
    Returns ``t``; ``alpha`` is updated in place.
    """
    s, alpha, G = dual.s, dual.alpha, dual.G
    eta = kii + kjj - 2.0 * kij
    if eta < 0.0:
        eta = 0.0
    ai = alpha[i]
    aj = alpha[j]
    si = s[i]
    sj = s[j]
    wi = w[i]
    wj = w[j]
    g0 = si * G[i] - sj * G[j]
    dpi = trig_dphi_w(ai, wi)
    dpj = trig_dphi_w(aj, wj)
    ti = ai if si < 0 else np.inf
    tj = aj if sj > 0 else np.inf
    hi = min(ti, tj)

    def dpsi(t):
        return (g0 + t * eta + si * (trig_dphi_w(ai + si * t, wi) - dpi)
                - sj * (trig_dphi_w(aj - sj * t, wj) - dpj))

    if np.isfinite(hi) and dpsi(hi) <= 0.0:
        # minimum at the boundary: the variable(s) reaching zero leave the support
        alpha[i] = 0.0 if ti <= hi else ai + si * hi
        alpha[j] = 0.0 if tj <= hi else aj - sj * hi
        return hi
    lo = 0.0
    t = 0.0
    for _ in range(_MAX_NEWTON):
        g = dpsi(t)
        if g == 0.0:
            break
        if g > 0.0:
            hi = t
        else:
            lo = t
        h = eta + trig_d2phi_w(ai + si * t, wi) + trig_d2phi_w(aj - sj * t, wj)
        tn = t - g / h
        if not (lo < tn < hi):
            if np.isfinite(hi):
                tn = 0.5 * (lo + hi)
            else:
                tn = max(2.0 * t, t + 1.0)
        if abs(tn - t) <= _XTOL * (1.0 + abs(t)):
            t = tn
            break
        t = tn
    if t < 0.0:
        t = 0.0
    na = ai + si * t
    nb = aj - sj * t
    alpha[i] = na if na > 0.0 else 0.0
    alpha[j] = nb if nb > 0.0 else 0.0
    return t


# ---------------------------------------------------------------------------
# gradient bookkeeping
# ---------------------------------------------------------------------------


@jit()
def trig_bounds(w):
    """Upper bounds of the trigonometric dual: ``+inf`` for a case of weight
    ``w_t > 0``, 0 (variable frozen at 0) for ``w_t = 0``."""
    U = np.empty(w.shape[0])
    for t in range(w.shape[0]):
        U[t] = np.inf if w[t] > 0.0 else 0.0
    return U


@jit()
def trig_start(kern, cache, tdual, G, curv):
    """``Kv = K (s alpha)``, the gradient ``G_t = s_t Kv_t - 1 + phi_t'(alpha_t)``
    and the curvatures ``phi_t''(alpha_t)`` at the start ``alpha``, one
    kernel row per non-zero variable."""
    s, w, alpha, Kv = tdual
    n = s.shape[0]
    Kv[:] = 0.0
    for u in range(n):
        if alpha[u] > 0.0:
            row = get_row(kern, cache, u)
            c = s[u] * alpha[u]
            for t in range(n):
                Kv[t] += c * row[t]
    for t in range(n):
        G[t] = s[t] * Kv[t] - 1.0 + trig_dphi_w(alpha[t], w[t])
        curv[t] = trig_d2phi_w(alpha[t], w[t])


@jit()
def smo_tsvc(kern, cache, tdual, tol, max_iter):
    """SMO for the trigonometric SVC dual with bias (H.4), with case weights.

    ``min 1/2 v^T K v - sum alpha + sum_t w_t phi(alpha_t / w_t)``,
    ``v = s * alpha``, ``sum v = 0``, ``alpha >= 0`` (``alpha_t = 0`` where
    ``w_t = 0``; all weights 1 give (H.4) itself). Only ``Kv = K v`` is
    stored; the gradient is ``G_t = s_t Kv_t - 1 + phi'(alpha_t / w_t)`` and
    ``-s_t G_t`` is the ``F_t`` of (5.30) (there without the equality
    constraint). The pair attaining ``m`` (``b_up``) and the WSS2 partner are
    updated by :func:`trig_pair_step` until ``m - M < tol``.

    Parameters
    ----------
    kern, cache : Kernel, CacheState
        As for :func:`smo_qp` (``n`` variables, one per training point).
    tdual : TsvcDual
        Signs, case weights, the feasible start ``alpha`` (zeros is;
        overwritten with the solution) and ``Kv`` (output).
    tol : float
        Stopping tolerance of (5.31).
    max_iter : int
        Maximum number of pair updates (negative: unlimited).

    Returns
    -------
    n_iter, status, gap, G : int, int, float, ndarray
        As for :func:`smo_qp`, and the gradient at the solution.
    """
    s, w, alpha, Kv = tdual
    n = s.shape[0]
    diag = np.empty(n)
    for r in range(n):
        diag[r] = kern.kappa0 + kern.kappa_b
    G = np.empty(n)
    curv = np.empty(n)
    trig_start(kern, cache, tdual, G, curv)
    dual = QPDual(s, np.full(n, -1.0), trig_bounds(w), alpha, G)
    active = np.arange(n)
    it = 0
    status = STATUS_OK
    gap = np.inf
    while True:
        if max_iter >= 0 and it >= max_iter:
            status = STATUS_MAX_ITER
            break
        i, m = select_i(dual, active)
        j = -1
        Mneg = -np.inf
        if i >= 0:
            Ki = get_row(kern, cache, i)
            j, Mneg = select_j(Ki, i, m, dual, diag, curv, active)
        gap = m + Mneg
        if j < 0 or gap < tol:
            break
        Kj = get_row(kern, cache, j)
        Ki = get_row(kern, cache, i)
        t = trig_pair_step(i, j, Ki[j], diag[i], diag[j], dual, w)
        for u in range(n):
            Kv[u] += t * (Ki[u] - Kj[u])
        for u in range(n):
            G[u] = s[u] * Kv[u] - 1.0 + trig_dphi_w(alpha[u], w[u])
        curv[i] = trig_d2phi_w(alpha[i], w[i])
        curv[j] = trig_d2phi_w(alpha[j], w[j])
        it += 1
    return it, status, gap, G
