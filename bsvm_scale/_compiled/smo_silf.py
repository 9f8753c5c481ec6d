"""Numba SMO for the BSVR dual with the soft insensitive loss.

Problem (thesis eq. 4.25), written in ``nu_i = alpha_i - alpha*_i`` (the
constraint ``alpha_i alpha*_i = 0`` holds at every optimum, so one signed
variable per point suffices)::

    min_nu  1/2 nu^T Q nu - y^T nu + eps' * ||nu||_1
    s.t.    -C_i <= nu_i <= C_i

with ``Q = Sigma + diag(2 beta epsilon / C_i)`` (4.29) and ``eps' = (1 - beta)
epsilon``. Without case weights every box is ``C_i = C``; a case weight
``w_i`` multiplies the case's loss term ``C l(y_i - f_i)`` of the primal
(4.10), which gives the box ``C_i = C w_i`` and the diagonal term ``2 beta
epsilon / C_i`` of its dual (the conjugate of ``C w_i`` times the soft
insensitive loss). A case of weight 0 has the box ``[0, 0]``: ``nu_i = 0``
throughout, it is never selected and never reported as a KKT violation, and
its diagonal term is stored as 0 (it only ever multiplies ``nu_i = 0``).
There is no equality constraint: the bias is carried by ``kappa_b`` inside
``Sigma = Sigma~ + kappa_b 1 1^T``.

Optimality (4.31)-(4.33). With ``g = Q nu - y = -F`` (4.30) the KKT
conditions per point are::

    nu_i = 0        |g_i| <= eps'              (I_1)
    0 < nu_i < C_i  g_i = -eps'                (I_0a)
    -C_i < nu_i < 0 g_i = +eps'                (I_0b)
    nu_i = C_i      g_i <= -eps'               (I_3)
    nu_i = -C_i     g_i >= +eps'               (I_2)

and the stopping rule ``b_up >= -tau, b_low <= tau`` (4.33) is the statement
that no point violates its condition by more than ``tau``; :func:`violation`
computes that amount per point.

Why not plain SMO on ``Q``: ``Q`` has a stiff near-constant direction (the
rank-one ``kappa_b 1 1^T`` and, for wide kernels, the constant part of
``Sigma~``). Coordinate and pair methods crawl along it. The classical
remedy is the equality constraint of LIBSVM, whose pair moves
``e_i - e_j`` never touch that direction. We use it exactly: with
``s = sum(nu)``,

    min_nu F(nu) = min_s [ P(s) + kappa_b s^2 / 2 ],
    P(s) = min { 1/2 nu^T Q~ nu - y^T nu + eps' |nu|_1 : sum(nu) = s, |nu_i| <= C_i }

with ``Q~ = Sigma~ + diag(2 beta eps / C_i)``. The inner problem :func:`smo_inner`
is an SVR-type dual with one equality constraint, solved by SMO with the
second-order working-set selection of Fan, Chen & Lin (2005); its threshold
``theta = P'(s)`` lies between the largest "down" and smallest "up"
directional derivatives. The outer equation ``psi(s) = kappa_b s + theta(s)
= 0`` is increasing in ``s`` and is solved by secant steps (Illinois regula
falsi once bracketed), each inner solve warm-started after moving ``s``
with :func:`move_sum`. Convergence is judged on the subdifferential
``[M_low, m_up]`` of ``P`` (``0`` in ``kappa_b s + [M_low, m_up]``), not on
``psi`` alone: with no free point at the optimum ``theta`` jumps at the
root, and :func:`land_on_jump` puts the bracket's remnants on their kink
or bound so that ``s`` lands on the jump.

Steps of one inner iteration, each its own small function:

1. :func:`select_pair` -- ``i`` minimises the "up" derivative, ``j``
   maximises the second-order gain ``(low_j - up_i)^2 / a_ij`` with
   ``a_ij = Q~_ii + Q~_jj - 2 Q~_ij`` among the violating "down" moves;
2. :func:`pair_step` -- exact minimiser along ``e_i - e_j`` of the
   piecewise quadratic (kinks where ``nu_i`` or ``nu_j`` cross zero, the
   four quadrants of Table 4.1), inside the box;
3. :func:`update_gradient` -- ``g += t (Q~_i - Q~_j)`` from two cached rows;
4. :func:`shrink` -- points held firmly at a bound leave the scans and
   their gradient entries go stale; :func:`reconstruct` restores them on
   un-shrinking from LIBSVM's ``G_bar`` (the part of ``Sigma~ nu`` due to
   the points at a bound, kept up to date by :func:`update_gbar` whenever a
   point enters or leaves a bound) plus the rows of the few free points.

A warm start after a change of hyperparameters needs ``g = Q~ nu - y`` for
the new kernel: :func:`bsvm_scale._compiled.silf_start.start_dual` forms it
(and ``G_bar``) in one parallel pass over the ``n x s`` cross-covariance with
the support vectors, outside the row cache.

Rows of ``Sigma~`` come from the LRU cache of :mod:`bsvm_scale._compiled.row_cache`;
the ``n x n`` matrix is never formed. Every function that reads rows takes the
covariance without its bias term, ``kern`` (a
:class:`~bsvm_scale._compiled.covariance.Kernel` with ``kappa_b = 0``), the
cache arrays ``cache`` (a :class:`~bsvm_scale._compiled.row_cache.CacheState`),
the arrays of the solve ``dual`` (a :class:`SilfDual`) and its constants
``par`` (a :class:`SilfParams`); the active points travel as ``act``, a view
of the first ``n_active`` entries of the permutation ``active``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import jit
from .row_cache import get_row
from .silf_inner import case_value, max_violation, smo_inner, snap, update_gbar


class SilfDual(NamedTuple):
    """The arrays of one solve of (4.25), length ``n``, updated in place."""

    y: np.ndarray     #: targets (read only)
    nu: np.ndarray    #: ``alpha - alpha*``: the start on entry, the solution on return
    g: np.ndarray     #: ``Q~ nu - y`` in step with ``nu`` (``Q nu - y`` on return)
    gbar: np.ndarray  #: ``G_bar``: the part of ``Sigma~ nu`` due to the points at a bound


class SilfParams(NamedTuple):
    """The constants of (4.25) at fixed hyperparameters (:func:`silf_params`).

    ``box`` and ``dadd`` are one float shared by every case (no case
    weights) or a float64 array with one value per case; the kernels read
    them through :func:`case_value`, so that each layout compiles to its
    own code and the unweighted solver reads no per-case array.
    """

    C: float          #: scale of the boxes: ``C`` (times the mean case weight with weights)
    eps1: float       #: ``eps' = (1 - beta) epsilon``, weight of ``|nu|_1``
    kappa_b: float    #: bias variance of the outer equation on ``s = sum(nu)``
    #: box ``|nu_i| <= C_i``: ``C``, or the array ``C_i = C w_i``
    box: float | np.ndarray
    #: ``2 beta epsilon / C_i`` added to the diagonal of ``Sigma~`` (0 where ``C_i = 0``)
    dadd: float | np.ndarray
    s_max: float      #: ``sum_i C_i``, the largest ``|sum(nu)|`` (``n C`` without weights)


def silf_params(C, epsilon, beta, kappa_b, n, weights=None):
    """:class:`SilfParams` of (4.25) for ``C``, ``epsilon``, ``beta``, ``kappa_b``
    and ``n`` cases, with the case weights ``weights`` (length ``n``, finite,
    ``>= 0``; per-case arrays) or without (every ``C_i = C``; shared floats).

    With weights that are all 1 every value equals, bit for bit, the one
    without weights (``C * 1.0 = C``, ``sum(1, ..., 1) = n``), so the
    solver's iterates are the same.
    """
    C = float(C)
    add = 2.0 * beta * epsilon / C
    if weights is None:
        return SilfParams(C, (1.0 - beta) * epsilon, float(kappa_b), C, add, n * C)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"weights must hold one value per case, shape ({n},); got {w.shape}.")
    box = C * w
    dadd = np.zeros(n)
    np.divide(add, w, out=dadd, where=w > 0.0)  # 2 beta eps / (C w_i) as (2 beta eps / C) / w_i
    return SilfParams(C * float(np.mean(w)), (1.0 - beta) * epsilon, float(kappa_b), box, dadd,
                      C * float(np.sum(w)))


@jit()
def move_sum(kern, cache, dual, par, delta):
    """Change ``sum(nu)`` by ``delta`` keeping ``|nu_i| <= C_i``: the change is
    put on the points with the most room, one row update per point moved.
    Returns the change actually made (less than ``delta`` only when the box
    is full)."""
    nu, box = dual.nu, par.box
    n = nu.shape[0]
    done = 0.0
    while abs(delta - done) > 0.0:
        rest = delta - done
        best = -1
        room = 0.0
        for k in range(n):
            C = case_value(box, k)
            r = (C - nu[k]) if rest > 0.0 else (C + nu[k])
            if r > room:
                room = r
                best = k
        if best < 0 or room <= 0.0:
            break
        old = nu[best]
        C = case_value(box, best)
        if abs(rest) <= room:
            step = rest
            nu[best] = snap(old + step, C)
        else:  # fill this point's room exactly up to the bound
            nu[best] = C if rest > 0.0 else -C
            step = nu[best] - old
        moved_point(kern, cache, dual, par, best, old, step)
        done += step
    return done


@jit()
def moved_point(kern, cache, dual, par, k, old, step):
    """Update ``g`` (every point, one row of ``Q~``) and ``G_bar`` after ``nu_k``
    moved from ``old`` to its current value by ``step`` outside a pair step."""
    g = dual.g
    row = get_row(kern, cache, k)
    for a in range(g.shape[0]):
        g[a] += row[a] * step
    g[k] += case_value(par.dadd, k) * step
    update_gbar(kern, cache, dual.gbar, k, old, dual.nu[k], case_value(par.box, k))


@jit()
def threshold(m_up, M_low):
    """``theta = P'(s)``: the middle of ``[M_low, m_up]``, or its finite end
    when every point sits at one bound (no point can move up, or down)."""
    if not np.isfinite(m_up):
        return M_low
    if not np.isfinite(M_low):
        return m_up
    return 0.5 * (m_up + M_low)


@jit()
def inner_psi(kern, cache, dual, par, tol, max_iter):
    """Solve the inner problem at the current ``s`` to ``tol`` and return
    ``(iterations, s, psi(s) = kappa_b s + theta(s), off)``.

    ``[M_low, m_up]`` is the subdifferential of ``P`` at ``s`` (one-sided
    derivatives), so ``s`` is optimal when ``0`` lies in ``kappa_b s +
    [M_low, m_up]``; ``off`` is the distance of ``0`` from that interval.
    ``psi`` (its middle) drives the secant steps; ``off`` decides
    convergence. The two differ where ``theta`` jumps: when no point is
    free at the root, ``P'`` is discontinuous there and ``|psi|`` stays
    large on both sides while ``off`` is zero at the root itself.
    """
    it, m_up, M_low = smo_inner(kern, cache, dual, par, tol, max_iter)
    kappa_b = par.kappa_b
    s = np.sum(dual.nu)
    off = max(kappa_b * s + M_low, -(kappa_b * s + m_up), 0.0)
    return it, s, kappa_b * s + threshold(m_up, M_low), off


@jit()
def polish(kern, cache, dual, par, width):
    """Move every free ``nu_k`` within ``width`` of ``0`` or of ``+-C_k`` onto it
    (``g`` and ``G_bar`` updated). When the root of ``psi`` sits on a jump of
    ``theta``, regula falsi closes in on it from both sides and leaves the
    distance to the jump as remnants of that size on free points; putting
    them on the kink or bound lands ``s`` exactly on the jump. Returns the
    number of points moved."""
    nu, box = dual.nu, par.box
    n = nu.shape[0]
    moved = 0
    for k in range(n):
        old = nu[k]
        C = case_value(box, k)
        if old == 0.0 or old >= C or old <= -C:
            continue
        if abs(old) <= width:
            new = 0.0
        elif C - abs(old) <= width:
            new = C if old > 0.0 else -C
        else:
            continue
        nu[k] = new
        moved_point(kern, cache, dual, par, k, old, new - old)
        moved += 1
    return moved


@jit()
def count_free(nu, box):
    """Number of free points ``0 < |nu_i| < C_i`` (``box``: the ``C_i``, or one ``C``)."""
    m = 0
    for k in range(nu.shape[0]):
        C = case_value(box, k)
        if nu[k] != 0.0 and -C < nu[k] < C:
            m += 1
    return m


@jit()
def capped_step(s, psi, slope, cap):
    """Secant/Newton step on ``s`` before the root is bracketed, limited to
    ``cap`` (which doubles each time it binds). A first slope guess can be
    far too small (``kappa_b`` tiny, no history); an uncapped step would
    then push every point to a bound, from where SMO cannot recover."""
    step = -psi / slope
    if abs(step) > cap:
        step = cap if step > 0.0 else -cap
        cap *= 2.0
    return s + step, cap


@jit()
def smo_silf(kern, cache, dual, par, tau, max_iter, slope0):
    """Solve (4.25) in place in ``dual.nu`` (any point with ``|nu_i| <= C_i`` is
    a valid warm start; its sum is the first guess of ``s``).

    ``kern`` is the covariance without its bias term (rows of ``Sigma~``);
    ``dual.g = Q~ nu - y`` and ``dual.gbar`` must match ``nu`` on entry
    (:func:`start_dual`); both are updated in place. ``slope0`` is the
    previous solve's estimate of ``psi'(s)`` (0 for none). Returns
    ``(slope, n_iter, max_violation)``; afterwards ``g = Q nu - y`` is the
    full gradient (4.30) and ``max_violation <= tau`` the stopping rule
    (4.33).
    """
    nu, g, C, kappa_b = dual.nu, dual.g, par.C, par.kappa_b
    half = 0.5 * tau
    n = nu.shape[0]
    slope = slope0 if slope0 > 0.0 else kappa_b
    # inexact inner solves while s is far from its root: the inner tolerance
    # starts at 10 tau and shrinks with |psi| down to tau / 2; each time it
    # tightens, psi is re-measured at the same s and the bracket restarts
    # (a bracket mixing values of different precision can be false)
    tol_in = 20.0 * half
    total, s, psi, off = inner_psi(kern, cache, dual, par, tol_in, max_iter)
    s_a, psi_a, s_b, psi_b = s, psi, s, psi
    bracket = False
    cap = C * max(16.0, count_free(nu, par.box))
    outer = 0
    while (off > half or tol_in > half) and total < max_iter and outer < 100:
        outer += 1
        tighter = max(half, min(tol_in, 0.1 * off))
        if tighter <= half < tol_in or tighter < 0.5 * tol_in:
            # re-measure psi at the tighter tolerance, same s, and forget the
            # bracket built from less precise values (not for every hair's
            # breadth: a bracket closing on a jump of theta needs to survive)
            tol_in = tighter
            it, s, psi, off = inner_psi(kern, cache, dual, par, tol_in, max_iter - total)
            total += it
            bracket = False
            s_a, psi_a = s, psi
            continue
        if off > half:
            if bracket:
                s_new = s_b - psi_b * (s_b - s_a) / (psi_b - psi_a)
            else:
                s_new, cap = capped_step(s, psi, slope, cap)
            s_new = min(max(s_new, -par.s_max), par.s_max)
            if move_sum(kern, cache, dual, par, s_new - s) == 0.0:
                if not bracket:
                    break  # the box is full in that direction
                bracket = False  # a collapsed bracket: continue with secant steps
                s_a, psi_a = s, psi
                continue
        it, s_new, psi_new, off = inner_psi(kern, cache, dual, par, tol_in, max_iter - total)
        total += it
        if s_new != s:
            sec = (psi_new - psi) / (s_new - s)
            if sec > 0.0:
                slope = sec
        if not bracket:
            if (psi_new > 0.0) != (psi_a > 0.0):
                bracket = True
                s_b, psi_b = s_new, psi_new
            else:
                s_a, psi_a = s_new, psi_new
        elif (psi_new > 0.0) == (psi_b > 0.0):
            s_b, psi_b = s_new, psi_new
            psi_a *= 0.5
        else:
            s_a, psi_a = s_b, psi_b
            s_b, psi_b = s_new, psi_new
        s, psi = s_new, psi_new
    if off > half and total < max_iter:  # the root sits on a jump of theta: land on it
        width = abs(s_b - s_a) if bracket else 0.0
        total += land_on_jump(kern, cache, dual, par, half, max_iter - total,
                              2.0 * width + 1e-9 * C)
    shift = kappa_b * np.sum(nu)
    for k in range(n):
        g[k] += shift
    return slope, total, max_violation(g, nu, par.box, par.eps1)


@jit()
def land_on_jump(kern, cache, dual, par, tol, max_iter, width):
    """Put the remnants of a collapsed bracket (free values within ``width``,
    twice the bracket's, of a kink or bound) onto it and re-solve the inner problem at
    the resulting ``s``; the previous point is restored unless that lowers
    the distance ``off`` of ``0`` from ``kappa_b s + [M_low, m_up]``.
    Returns the inner iterations spent."""
    nu, g, gbar = dual.nu, dual.g, dual.gbar
    it0, _, _, off0 = inner_psi(kern, cache, dual, par, tol, max_iter)
    nu0, g0, gbar0 = nu.copy(), g.copy(), gbar.copy()
    if polish(kern, cache, dual, par, width) == 0:
        return it0
    it, _, _, off = inner_psi(kern, cache, dual, par, tol, max_iter - it0)
    if off >= off0:
        nu[:] = nu0
        g[:] = g0
        gbar[:] = gbar0
    return it0 + it
