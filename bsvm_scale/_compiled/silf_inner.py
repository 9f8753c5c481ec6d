"""The inner problem of the BSVR SMO (:mod:`bsvm_scale._compiled.smo_silf`): the
dual (4.25) at a fixed outer variable ``s``, solved two variables at a time.

Working-pair selection by the largest KKT violation (4.33) and the
second-order partner (:func:`select_pair`), the exact pair step along the
piecewise-quadratic objective (:func:`pair_step`), the gradient update, and
shrinking with ``G_bar`` (the part of the gradient owed to bound variables)
and its reconstruction (:func:`shrink`, :func:`reconstruct`,
:func:`unshrink`). ``case_value`` reads a per-case box (an array) or one
``C`` (a scalar) alike.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from . import jit
from .covariance import _wsqdist
from .fastexp import exp_neg
from .row_cache import get_row, has_row, is_full


def case_value(v, k):
    """``v[k]`` for a per-case array ``v``, ``v`` itself for one value shared
    by every case (compiled: :func:`_case_value`)."""
    return v if np.ndim(v) == 0 else v[k]


@overload(case_value, inline="always")
def _case_value(v, k):
    """Compiled :func:`case_value`, resolved on the type of ``v``."""
    if isinstance(v, types.Float):
        return lambda v, k: v
    return lambda v, k: v[k]


@jit(inline="always")
def violation(g_i, nu_i, C, eps1):
    """KKT violation of point ``i`` with box ``C`` (0 when its condition in
    (4.31) holds; always 0 for a box of width 0, a case of weight 0)."""
    if C == 0.0:
        return 0.0
    if nu_i == 0.0:
        v = abs(g_i) - eps1
    elif nu_i >= C:
        v = g_i + eps1
    elif nu_i <= -C:
        v = eps1 - g_i
    elif nu_i > 0.0:
        v = abs(g_i + eps1)
    else:
        v = abs(g_i - eps1)
    return v if v > 0.0 else 0.0


@jit()
def max_violation(g, nu, box, eps1):
    """Largest KKT violation (4.31) over all points (``box``: the ``C_i``, or one ``C``)."""
    vmax = 0.0
    for k in range(g.shape[0]):
        v = violation(g[k], nu[k], case_value(box, k), eps1)
        if v > vmax:
            vmax = v
    return vmax


@jit(inline="always")
def up_derivative(g_k, nu_k, eps1):
    """Derivative of the inner objective when ``nu_k`` increases."""
    return g_k + eps1 if nu_k >= 0.0 else g_k - eps1


@jit(inline="always")
def low_derivative(g_k, nu_k, eps1):
    """Minus the derivative when ``nu_k`` decreases."""
    return g_k + eps1 if nu_k > 0.0 else g_k - eps1


@jit()
def thresholds(dual, par, act):
    """``(i, m_up, M_low)``: the index of the smallest up derivative, its
    value and the largest low derivative, over the active points ``act``."""
    g, nu, box, eps1 = dual.g, dual.nu, par.box, par.eps1
    i = -1
    m_up = np.inf
    M_low = -np.inf
    for a in range(act.shape[0]):
        k = act[a]
        C = case_value(box, k)
        if nu[k] < C:
            u = up_derivative(g[k], nu[k], eps1)
            if u < m_up:
                m_up = u
                i = k
        if nu[k] > -C:
            lo = low_derivative(g[k], nu[k], eps1)
            if lo > M_low:
                M_low = lo
    return i, m_up, M_low


@jit(inline="always")
def pair_curvature(kappa0, dadd, i, j, row_i_j):
    """``a_ij = Q~_ii + Q~_jj - 2 Q~_ij`` (``row_i_j = Sigma~_ij``, ``kappa0 =
    Sigma~_ii``); with equal diagonal terms it is ``2 Q~_ii - 2 Q~_ij`` to the bit."""
    return (kappa0 + case_value(dadd, i)) + (kappa0 + case_value(dadd, j)) - 2.0 * row_i_j


@jit()
def select_pair(i, m_up, row_i, dual, par, kappa0, act):
    """Second-order choice of ``j`` (WSS2): maximise
    ``(low_j - m_up)^2 / a_ij`` over the violating down moves of the active
    points ``act`` (``kappa0``: the diagonal of ``Sigma~``)."""
    g, nu, box, eps1 = dual.g, dual.nu, par.box, par.eps1
    best = -1
    gmax = 0.0
    for a in range(act.shape[0]):
        k = act[a]
        if k == i or nu[k] <= -case_value(box, k):
            continue
        b = low_derivative(g[k], nu[k], eps1) - m_up
        if b <= 0.0:
            continue
        curv = pair_curvature(kappa0, par.dadd, i, k, row_i[k])
        if curv < 1e-12:
            curv = 1e-12
        gain = b * b / curv
        if gain > gmax:
            gmax = gain
            best = k
    return best


@jit()
def pair_step(nu_i, nu_j, g_i, g_j, curv, C_i, C_j, eps1):
    """Exact minimiser ``t >= 0`` of the inner objective along ``e_i - e_j``.

    ``phi(t) = (g_i - g_j) t + curv t^2 / 2 + eps' (|nu_i + t| + |nu_j - t|)``
    on ``[0, T]``, ``T = min(C_i - nu_i, C_j + nu_j)``, is convex and piecewise
    quadratic with kinks where ``nu_i + t`` or ``nu_j - t`` change sign. The
    minimiser lies in the first segment whose right end has a non-negative
    derivative.
    """
    T = min(C_i - nu_i, C_j + nu_j)
    if T <= 0.0:
        return 0.0
    k1 = -nu_i if (nu_i < 0.0 and -nu_i < T) else T
    k2 = nu_j if (nu_j > 0.0 and nu_j < T) else T
    lo = 0.0
    for seg in range(3):
        if seg == 0:
            hi = min(k1, k2)
        elif seg == 1:
            hi = max(k1, k2)
        else:
            hi = T
        if hi <= lo:
            continue
        tm = 0.5 * (lo + hi)
        c = g_i - g_j + (eps1 if nu_i + tm > 0.0 else -eps1) \
            - (eps1 if nu_j - tm > 0.0 else -eps1)
        if c + curv * hi >= 0.0:
            t = -c / curv if curv > 0.0 else lo
            return min(max(t, lo), hi)
        lo = hi
    return T


@jit()
def update_gradient(g, row_i, row_j, t, i, j, dadd, act):
    """``g += t (Q~[:, i] - Q~[:, j])`` on the active points ``act`` (``dadd``:
    the diagonal terms ``2 beta eps / C_k``, or one shared value)."""
    for a in range(act.shape[0]):
        k = act[a]
        g[k] += t * (row_i[k] - row_j[k])
    g[i] += case_value(dadd, i) * t
    g[j] -= case_value(dadd, j) * t


@jit()
def shrink(dual, par, m_up, M_low, act):
    """Drop from the active points ``act`` (a view of the active prefix) the
    points that cannot take part in a violating pair given the thresholds
    ``m_up <= M_low`` (LIBSVM rule): a point at the upper bound whose low
    derivative is below ``m_up``, at the lower bound with up derivative above
    ``M_low``, or at zero with both derivatives outside ``[m_up, M_low]``.
    Only active points are examined: the gradient of a shrunk point is stale
    until :func:`reconstruct`, so it must not be judged (or re-admitted) on
    it. Returns the new count (the kept points first in ``act``)."""
    g, nu, box, eps1 = dual.g, dual.nu, par.box, par.eps1
    kept = 0
    for a in range(act.shape[0]):
        k = act[a]
        nk = nu[k]
        gk = g[k]
        C = case_value(box, k)
        if nk >= C:
            keep = low_derivative(gk, nk, eps1) >= m_up
        elif nk <= -C:
            keep = up_derivative(gk, nk, eps1) <= M_low
        elif nk == 0.0:
            keep = up_derivative(gk, nk, eps1) <= M_low or low_derivative(gk, nk, eps1) >= m_up
        else:
            keep = True
        if keep:
            act[kept] = k
            kept += 1
    return kept


@jit(inline="always")
def bound_part(nu_k, C):
    """Contribution of ``nu_k`` to ``G_bar``: itself at a bound, else 0."""
    return nu_k if (nu_k >= C or nu_k <= -C) else 0.0


@jit()
def update_gbar(kern, cache, gbar, k, old, new, C):
    """Keep ``G_bar = Sigma~[:, bound] nu[bound]`` (LIBSVM's ``G_bar``) when
    ``nu_k`` moves from ``old`` to ``new``; a full row is needed only when
    ``k`` enters or leaves a bound, which is rare next to the pair steps."""
    delta = bound_part(new, C) - bound_part(old, C)
    if delta == 0.0:
        return
    row = get_row(kern, cache, k)
    for a in range(gbar.shape[0]):
        gbar[a] += delta * row[a]


@jit()
def reconstruct(kern, cache, dual, par, act):
    """Recompute the gradient of the points outside the active ``act``
    (shrunk points whose entries were not updated) as ``G_bar`` plus the rows
    of the free points ``0 < |nu_j| < C`` only: the bound SVs, usually the
    large majority, are already summed in ``G_bar``."""
    y, nu, g, gbar = dual
    n = g.shape[0]
    if act.shape[0] == n:
        return
    mark = np.zeros(n, dtype=np.bool_)
    for a in range(act.shape[0]):
        mark[act[a]] = True
    for k in range(n):
        if not mark[k]:
            g[k] = -y[k] + case_value(par.dadd, k) * nu[k] + gbar[k]
    for j in range(n):
        if nu[j] != 0.0 and bound_part(nu[j], case_value(par.box, j)) == 0.0:
            row = get_row(kern, cache, j)
            for k in range(n):
                if not mark[k]:
                    g[k] += row[k] * nu[j]


@jit()
def fetch_row(kern, cache, i, act, scratch):
    """Row ``i`` of ``Sigma~`` for the inner loop.

    A cached row is used when present. When the cache is full and shrinking
    has left at most a quarter of the points active (``act``), a missing row
    is computed on the active points only, into ``scratch`` and without
    caching (LIBSVM's partial rows): a full row would cost ``n / n_active``
    times as much and evict a row that is more likely to be reused.
    """
    n = kern.X.shape[0]
    if has_row(cache, i) or 4 * act.shape[0] > n or not is_full(cache):
        return get_row(kern, cache, i)
    X, w, kappa0 = kern.X, kern.w, kern.kappa0
    for a in range(act.shape[0]):
        k = act[a]
        scratch[k] = kappa0 * exp_neg(-0.5 * _wsqdist(X, i, X, k, w))
    return scratch


@jit()
def unshrink(kern, cache, dual, par, active, n_active):
    """Bring every point back into the scans (gradient reconstructed)."""
    n = active.shape[0]
    reconstruct(kern, cache, dual, par, active[:n_active])
    for k in range(n):
        active[k] = k
    return n


@jit()
def snap(v, C):
    """Land exactly on the kink at 0 and on the bounds a step aimed at."""
    if abs(v) < 1e-15 * C:
        return 0.0
    if v > C * (1.0 - 1e-15):
        return C
    if v < -C * (1.0 - 1e-15):
        return -C
    return v


@jit()
def smo_inner(kern, cache, dual, par, tau, max_iter):
    """SMO for the inner problem at fixed ``sum(nu)`` (in place).

    Returns ``(iterations, m_up, M_low)``; converged when
    ``M_low - m_up <= tau``. On return every point is active again and
    ``g`` is complete.
    """
    nu, g = dual.nu, dual.g
    box, eps1 = par.box, par.eps1
    n = g.shape[0]
    scratch_i = np.empty(n)
    scratch_j = np.empty(n)
    active = np.arange(n)
    n_active = n
    period = min(1000, n)
    countdown = period
    it = 0
    while True:
        i, m_up, M_low = thresholds(dual, par, active[:n_active])
        if M_low - m_up <= tau or i < 0 or it >= max_iter:
            if n_active < n:  # un-shrink and test again on every point
                n_active = unshrink(kern, cache, dual, par, active, n_active)
                countdown = period
                if it < max_iter:
                    continue
                i, m_up, M_low = thresholds(dual, par, active[:n_active])
            return it, m_up, M_low
        countdown -= 1
        if countdown <= 0:
            countdown = period
            if M_low - m_up < 10.0 * tau or n_active == n:
                n_active = shrink(dual, par, m_up, M_low, active[:n_active])
                continue
        act = active[:n_active]
        row_i = fetch_row(kern, cache, i, act, scratch_i)
        j = select_pair(i, m_up, row_i, dual, par, kern.kappa0, act)
        t = 0.0
        if j >= 0:
            row_j = fetch_row(kern, cache, j, act, scratch_j)
            # row i evicted by row j (tiny cache)
            if not has_row(cache, i) and row_i is not scratch_i:
                row_i = fetch_row(kern, cache, i, act, scratch_i)
            curv = pair_curvature(kern.kappa0, par.dadd, i, j, row_i[j])
            t = pair_step(nu[i], nu[j], g[i], g[j], curv, case_value(box, i),
                          case_value(box, j), eps1)
        if t <= 0.0:  # no partner or a numerical stall: report, never loop forever
            if n_active < n:
                n_active = unshrink(kern, cache, dual, par, active, n_active)
                i, m_up, M_low = thresholds(dual, par, active[:n_active])
            return it, m_up, M_low
        old_i, old_j = nu[i], nu[j]
        C_i, C_j = case_value(box, i), case_value(box, j)
        nu[i] = snap(old_i + t, C_i)
        nu[j] = snap(old_j - t, C_j)
        update_gradient(g, row_i, row_j, t, i, j, par.dadd, act)
        update_gbar(kern, cache, dual.gbar, i, old_i, nu[i], C_i)
        update_gbar(kern, cache, dual.gbar, j, old_j, nu[j], C_j)
        it += 1
