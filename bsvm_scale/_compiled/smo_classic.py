"""Numba SMO for the classical support vector machines (SVC, SVR; the shared
working-set steps of TSVC, whose solver is :mod:`bsvm_scale._compiled.smo_tsvc`).

Every problem solved here is a dual with one equality constraint and box
constraints on ``l`` variables ``alpha_t`` carrying a sign ``s_t = +-1``::

    min_alpha  1/2 alpha^T Q alpha + p^T alpha + sum_t phi(alpha_t)
    s.t.       sum_t s_t alpha_t = const,   0 <= alpha_t <= U_t

with ``Q_tu = s_t s_u K(x_{r(t)}, x_{r(u)})``. ``r(t)`` maps a variable to its
training point (``r(t) = t`` for classification, ``r(t) = t mod n`` for the
regression dual written with ``2n`` variables), so a kernel row of the ``n``
training points serves every variable that belongs to the same point.

* SVC, thesis (B.16) with ``epsilon = 0`` (L1 soft margin): ``l = n``,
  ``s = y``, ``p = -1``, ``U = C``, ``phi = 0``.
* SVR, thesis (B.30)/(C.19) with ``beta = 0`` (epsilon-insensitive loss):
  ``l = 2n`` with ``alpha_{1..n} = alpha``, ``alpha_{n+1..2n} = alpha^*``,
  ``s = [+1, -1]``, ``p = [epsilon - y, epsilon + y]``, ``U = C``, ``phi = 0``.
  ``alpha_i alpha_i^* = 0`` holds at every step of this method.
* TSVC, thesis (H.4): ``l = n``, ``s = y``, ``p = -1``, ``U = +inf`` and
  ``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)``, whose derivative is
  ``phi'(a) = 4/pi arctan(2a/pi)`` and curvature ``phi''(a) = 8/(pi^2 + 4a^2)``
  (the diagonal term of (G.2)).

Case weights ``w_i >= 0`` (a weight multiplies the case's loss term in the
primal) change only the per-variable parts, as in LIBSVM:

* SVC and SVR: the box of every variable of case ``i`` becomes
  ``U_t = C_i = C w_i``. ``U`` is per variable throughout (working-set
  selection, the step bounds, shrinking, ``G_bar`` and the gradient
  reconstruction, the bias), so nothing else changes.
* TSVC: the loss ``w_i l_t`` has the conjugate ``w_i phi(alpha_i / w_i)``
  (the perspective of ``phi``; :func:`trig_phi_w`), so the separable term
  becomes ``phi_i(a) = w_i phi(a / w_i)`` with ``phi_i'(a) = phi'(a / w_i)``
  and ``phi_i''(a) = phi''(a / w_i) / w_i``; the linear term ``-alpha_i``
  and the constraints are unchanged.
* ``w_i = 0`` (the case is absent): ``U_t = 0`` freezes the variable at
  ``alpha_t = 0``; it is then in neither ``I_up`` nor ``I_low`` (both tests
  are strict), so it is never selected, never counted in the stopping test or
  the bias, and its ``phi`` terms are never evaluated (TSVC's ``phi_i'`` is
  taken as 0 there instead of the undefined ``phi'(0/0)``). The limit
  ``w -> 0`` of ``w phi(a / w)`` is ``2a`` -- the conjugate of the hard
  constraint ``y_i f(x_i) > -1`` that ``0 * l_t`` would keep -- which is not
  what a weight of 0 means here.

With all weights 1 every operation reduces to the unweighted one exactly
(``C * 1``, ``a / 1``, ``x / 1``), so the iterates are unchanged bit for bit.

Optimality (C.6), (C.17), (5.30) in the form of Keerthi et al. (2001) with the
two thresholds ``b_up`` and ``b_low``: with the gradient ``G`` of the
objective and the index sets::

    I_up  = {t : s_t = +1, alpha_t < U_t} u {t : s_t = -1, alpha_t > 0}
    I_low = {t : s_t = +1, alpha_t > 0}   u {t : s_t = -1, alpha_t < U_t}

a point is tau-optimal when ``m - M < tau`` with ``m = max_{I_up} -s_t G_t``
and ``M = min_{I_low} -s_t G_t`` (C.7), (C.18), (5.31); the bias is any value
in ``[m, M]``. The working pair is chosen by the second-order rule of Fan,
Chen & Lin (2005, "WSS2"): ``i`` attains ``m`` and ``j`` minimises
``-(m + s_t G_t)^2 / a_it`` over the violators in ``I_low``, ``a_it`` being
the curvature of the objective along the feasible direction
``d = s_i e_i - s_j e_j``. Along ``alpha + t d`` the sub-problem (C.8) is a
one-dimensional convex problem; it has the closed form of Table C.2 when
``phi = 0`` and is solved by safeguarded Newton iterations (Appendix G) for
the trigonometric dual.

Kernel rows come from the LRU cache of :mod:`bsvm_scale._compiled.row_cache`:
every function that reads rows takes the covariance ``kern`` (a
:class:`~bsvm_scale._compiled.covariance.Kernel` over the ``n`` training
points) and the cache arrays ``cache`` (a
:class:`~bsvm_scale._compiled.row_cache.CacheState`), the ``kernel`` and
``state`` of :class:`bsvm_scale.inference.covariance.RowCache`. A row stays
valid until as many other rows as the cache has slots have been fetched; the
cache always has two slots, so the two rows of a pair are valid together.
The arrays of the dual travel as one :class:`QPDual`; the active variables
as ``act``, a view of the first ``n_act`` entries of the permutation
``active``.

Shrinking (Joachims 1999; Fan et al. 2005) is optional: variables at a bound
that cannot enter a violating pair given the current ``m`` and ``M`` are
removed from the active set; the gradient of the removed variables is rebuilt
from ``G_bar_t = sum_{u at upper bound} U_u Q_tu`` before the final test.

All functions are flat compiled functions over arrays and these tuples, so
that other solvers can share them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import jit
from .covariance import _cov_from_sqdist, _wsqdist_row
from .row_cache import get_row

TAU = 1e-12          # curvature floor for non-positive-definite pairs
STATUS_OK = 0
STATUS_MAX_ITER = 1


class QPDual(NamedTuple):
    """The arrays of one dual (length ``l``), solved in place."""

    s: np.ndarray      #: signs +-1.0 of the variables
    p: np.ndarray      #: linear term
    U: np.ndarray      #: upper bounds per variable (``C w_i``; ``inf``: none; 0: fixed at 0)
    alpha: np.ndarray  #: feasible start on entry, the solution on return
    G: np.ndarray      #: gradient ``Q alpha + p`` (output)


@jit(inline="always")
def real_index(t, n):
    """Training point of variable ``t`` (``t mod n`` for ``t < 2n``)."""
    return t - n if t >= n else t


@jit(inline="always")
def in_up(t, s, alpha, U):
    """``t in I_up`` (the variable can move along ``+s_t``)."""
    if s[t] > 0:
        return alpha[t] < U[t]
    return alpha[t] > 0.0


@jit(inline="always")
def in_low(t, s, alpha, U):
    """``t in I_low`` (the variable can move along ``-s_t``)."""
    if s[t] > 0:
        return alpha[t] > 0.0
    return alpha[t] < U[t]


@jit()
def select_i(dual, act):
    """First index of the pair: ``i = argmax_{t in I_up} -s_t G_t`` over the
    active variables ``act``.

    Returns ``(i, m)``; ``i = -1`` when ``I_up`` is empty among them.
    """
    s, alpha, U, G = dual.s, dual.alpha, dual.U, dual.G
    m = -np.inf
    i = -1
    for k in range(act.shape[0]):
        t = act[k]
        if in_up(t, s, alpha, U):
            v = -s[t] * G[t]
            if v >= m:
                m = v
                i = t
    return i, m


@jit()
def select_j(Ki, i, m, dual, diag, curv, act):
    """Second index by the second-order rule (WSS2).

    Among the active ``t in I_low`` with ``b_it = m + s_t G_t > 0`` choose the
    one minimising ``-b_it^2 / a_it`` where
    ``a_it = K_ii + K_tt - 2 K_it + curv_i + curv_t`` is the curvature along
    ``s_i e_i - s_t e_t`` (``diag`` holds ``K_rr`` of the ``n`` points,
    ``curv`` holds ``phi''`` of the separable term, all zeros for the
    quadratic duals).

    Returns ``(j, Mneg)`` with ``Mneg = max_{t in I_low} s_t G_t = -M``, so
    that the gap of the stopping test (C.7) is ``m + Mneg``.
    """
    s, alpha, U, G = dual.s, dual.alpha, dual.U, dual.G
    n = diag.shape[0]
    ri = real_index(i, n)
    kii = diag[ri] + curv[i]
    best = np.inf
    j = -1
    Mneg = -np.inf
    for k in range(act.shape[0]):
        t = act[k]
        if not in_low(t, s, alpha, U):
            continue
        v = s[t] * G[t]
        if v > Mneg:
            Mneg = v
        b = m + v
        if b > 0.0:
            rt = real_index(t, n)
            a = kii + diag[rt] + curv[t] - 2.0 * Ki[rt]
            if a <= 0.0:
                a = TAU
            obj = -(b * b) / a
            if obj <= best:
                best = obj
                j = t
    return j, Mneg


@jit()
def extremes(dual, act):
    """``(m, M)``: ``max_{I_up} -s G`` and ``min_{I_low} -s G`` over the active
    variables ``act``."""
    s, alpha, U, G = dual.s, dual.alpha, dual.U, dual.G
    m = -np.inf
    M = np.inf
    for k in range(act.shape[0]):
        t = act[k]
        v = -s[t] * G[t]
        if in_up(t, s, alpha, U) and v > m:
            m = v
        if in_low(t, s, alpha, U) and v < M:
            M = v
    return m, M


@jit()
def bias(G, alpha, s, U):
    """Bias ``b`` at a tau-optimal point.

    The average of ``-s_t G_t`` over the free variables (``0 < alpha_t <
    U_t``), which all equal ``b`` at the optimum (cases 4, 5 of C.13);
    without free variables the midpoint ``(b_up + b_low)/2`` of the interval
    allowed by the bounded ones (C.7).
    """
    acc = 0.0
    nfree = 0
    lo = -np.inf
    hi = np.inf
    for t in range(G.shape[0]):
        v = -s[t] * G[t]
        if 0.0 < alpha[t] < U[t]:
            acc += v
            nfree += 1
        else:
            if in_up(t, s, alpha, U) and v > lo:
                lo = v
            if in_low(t, s, alpha, U) and v < hi:
                hi = v
    if nfree > 0:
        return acc / nfree
    if np.isfinite(lo) and np.isfinite(hi):
        return 0.5 * (lo + hi)
    if np.isfinite(lo):
        return lo
    if np.isfinite(hi):
        return hi
    return 0.0


# ---------------------------------------------------------------------------
# two-variable steps
# ---------------------------------------------------------------------------
@jit()
def step_bounds(i, j, dual):
    """Largest feasible ``t >= 0`` along ``d = s_i e_i - s_j e_j`` for each of
    the two variables (``inf`` when unbounded)."""
    s, alpha, U = dual.s, dual.alpha, dual.U
    ti = (U[i] - alpha[i]) if s[i] > 0 else alpha[i]
    tj = alpha[j] if s[j] > 0 else (U[j] - alpha[j])
    return ti, tj


@jit()
def quadratic_pair_step(i, j, kij, kii, kjj, dual):
    """Analytic solution of the two-variable QP (C.8), Table C.2.

    Moves ``alpha_i += s_i t``, ``alpha_j -= s_j t`` with
    ``t = min(b_ij / a_ij, bounds)`` where ``b_ij = -s_i G_i + s_j G_j > 0``
    and ``a_ij = K_ii + K_jj - 2 K_ij``; a variable that reaches its bound is
    set to it exactly. Returns ``t``.
    """
    s, alpha, U, G = dual.s, dual.alpha, dual.U, dual.G
    a = kii + kjj - 2.0 * kij
    if a <= 0.0:
        a = TAU
    b = -s[i] * G[i] + s[j] * G[j]
    t = b / a
    ti, tj = step_bounds(i, j, dual)
    hit_i = False
    hit_j = False
    if t >= ti:
        t = ti
        hit_i = True
    if t >= tj:
        t = tj
        hit_j = True
        hit_i = ti <= tj
    if hit_i:
        alpha[i] = U[i] if s[i] > 0 else 0.0
    else:
        alpha[i] += s[i] * t
    if hit_j:
        alpha[j] = 0.0 if s[j] > 0 else U[j]
    else:
        alpha[j] -= s[j] * t
    return t


@jit()
def update_gradient(dual, t, Ki, Kj, act):
    """(C.9): ``G_u += s_u t (K_{r(u) r(i)} - K_{r(u) r(j)})`` over the active
    variables ``act`` after the step ``alpha_i += s_i t``, ``alpha_j -= s_j t``
    (``Ki``, ``Kj``: the kernel rows of the pair)."""
    s, G = dual.s, dual.G
    n = Ki.shape[0]
    for k in range(act.shape[0]):
        u = act[k]
        ru = real_index(u, n)
        G[u] += s[u] * t * (Ki[ru] - Kj[ru])


@jit()
def update_gbar(G_bar, s, coef, Krow):
    """``G_bar_u += coef s_u K_{r(u) r}`` for every variable (a variable entered
    (coef = +U_t s_t) or left (coef = -U_t s_t) its upper bound; ``Krow`` is
    its kernel row)."""
    n = Krow.shape[0]
    for u in range(G_bar.shape[0]):
        G_bar[u] += coef * s[u] * Krow[real_index(u, n)]


@jit()
def shrink(dual, act, m, M):
    """Drop bounded variables that cannot join a violating pair.

    A variable only in ``I_up`` is kept out while ``-s_t G_t < M``; one only
    in ``I_low`` while ``-s_t G_t > m``. Free variables are always kept.
    Returns the new active count (the dropped indices are moved to the tail
    of ``act``, a view of the active prefix of the permutation ``active``).
    """
    s, alpha, U, G = dual.s, dual.alpha, dual.U, dual.G
    n_act = act.shape[0]
    k = 0
    while k < n_act:
        t = act[k]
        up = in_up(t, s, alpha, U)
        low = in_low(t, s, alpha, U)
        v = -s[t] * G[t]
        drop = False
        if up and not low:
            drop = v < M
        elif low and not up:
            drop = v > m
        if drop:
            n_act -= 1
            act[k] = act[n_act]
            act[n_act] = t
        else:
            k += 1
    return n_act


@jit()
def reconstruct_gradient(kern, cache, dual, G_bar, inactive):
    """Rebuild ``G`` of the ``inactive`` variables: ``G_t = G_bar_t + p_t +
    sum_{u free} alpha_u Q_tu``."""
    s, p, U, alpha, G = dual
    if inactive.shape[0] == 0:
        return
    n = kern.X.shape[0]
    for k in range(inactive.shape[0]):
        t = inactive[k]
        G[t] = G_bar[t] + p[t]
    for u in range(G.shape[0]):
        if 0.0 < alpha[u] < U[u]:
            row = get_row(kern, cache, real_index(u, n))
            c = s[u] * alpha[u]
            for k in range(inactive.shape[0]):
                t = inactive[k]
                G[t] += s[t] * c * row[real_index(t, n)]


@jit()
def start_gradient(kern, cache, dual, G_bar):
    """``G = Q alpha + p`` and ``G_bar = sum_{u at upper bound} U_u Q_u`` at
    the start ``alpha``, one kernel row per non-zero variable."""
    s, p, U, alpha, G = dual
    n = kern.X.shape[0]
    l = s.shape[0]
    for t in range(l):
        G[t] = p[t]
    for u in range(l):
        if alpha[u] > 0.0:
            row = get_row(kern, cache, real_index(u, n))
            c = s[u] * alpha[u]
            for t in range(l):
                q = s[t] * row[real_index(t, n)]
                G[t] += c * q
                if alpha[u] >= U[u]:
                    G_bar[t] += s[u] * U[u] * q


# ---------------------------------------------------------------------------
# drivers
# ---------------------------------------------------------------------------
@jit()
def shrink_active(kern, cache, dual, G_bar, active, n_act, unshrunk, tol):
    """One shrinking round of :func:`smo_qp`: the first time the gap is within
    ``10 tol`` every variable is brought back (gradient rebuilt) before the
    test. Returns ``(n_act, unshrunk)``."""
    m0, M0 = extremes(dual, active[:n_act])
    if not unshrunk and m0 - M0 <= 10.0 * tol:
        unshrunk = True
        reconstruct_gradient(kern, cache, dual, G_bar, active[n_act:])
        n_act = active.shape[0]
        m0, M0 = extremes(dual, active[:n_act])
    return shrink(dual, active[:n_act], m0, M0), unshrunk


@jit()
def pair_update(kern, cache, dual, G_bar, diag, i, j, act):
    """The step (C.8) on the pair ``(i, j)`` with the gradient (C.9) of the
    active variables ``act`` and ``G_bar`` brought up to date."""
    s, U, alpha = dual.s, dual.U, dual.alpha
    n = diag.shape[0]
    ri = real_index(i, n)
    rj = real_index(j, n)
    Ki = get_row(kern, cache, ri)
    Kj = get_row(kern, cache, rj)
    Ki = get_row(kern, cache, ri)
    up_i = alpha[i] >= U[i]
    up_j = alpha[j] >= U[j]
    t = quadratic_pair_step(i, j, Ki[rj], diag[ri], diag[rj], dual)
    update_gradient(dual, t, Ki, Kj, act)
    if (alpha[i] >= U[i]) != up_i:
        update_gbar(G_bar, s, (U[i] if not up_i else -U[i]) * s[i], Ki)
    if (alpha[j] >= U[j]) != up_j:
        update_gbar(G_bar, s, (U[j] if not up_j else -U[j]) * s[j], Kj)


@jit()
def smo_qp(kern, cache, dual, tol, max_iter, shrinking):
    """SMO for the quadratic duals (SVC, SVR), starting from ``dual.alpha``
    (any feasible point; zeros is the usual start).

    Parameters
    ----------
    kern, cache : Kernel, CacheState
        Covariance over the ``n`` training points (variable ``t`` belongs to
        point ``t mod n``) and its row cache.
    dual : QPDual
        Signs, linear term, upper bounds, the start ``alpha`` (overwritten
        with the solution) and ``G`` (output: ``Q alpha + p`` there).
    tol : float
        Stopping tolerance ``tau`` of (C.7)/(C.18).
    max_iter : int
        Maximum number of pair updates (negative: unlimited).
    shrinking : bool
        Use the shrinking heuristic.

    Returns
    -------
    n_iter, status, gap : int, int, float
        Pair updates done, ``STATUS_OK`` or ``STATUS_MAX_ITER``, final
        ``m - M``.
    """
    n = kern.X.shape[0]
    l = dual.s.shape[0]
    diag = np.empty(n)
    for r in range(n):
        diag[r] = kern.kappa0 + kern.kappa_b
    curv = np.zeros(l)
    G_bar = np.zeros(l)
    start_gradient(kern, cache, dual, G_bar)
    active = np.arange(l)
    n_act = l
    unshrunk = False
    period = min(l, 1000)
    counter = period
    it = 0
    status = STATUS_OK
    gap = np.inf
    just_rebuilt = False
    while True:
        if max_iter >= 0 and it >= max_iter:
            status = STATUS_MAX_ITER
            # leave a complete gradient behind for the bias and the caller
            reconstruct_gradient(kern, cache, dual, G_bar, active[n_act:])
            break
        if shrinking and not just_rebuilt:
            counter -= 1
            if counter <= 0:
                counter = period
                n_act, unshrunk = shrink_active(kern, cache, dual, G_bar, active, n_act,
                                                unshrunk, tol)
        i, m = select_i(dual, active[:n_act])
        j = -1
        Mneg = -np.inf
        if i >= 0:
            Ki = get_row(kern, cache, real_index(i, n))
            j, Mneg = select_j(Ki, i, m, dual, diag, curv, active[:n_act])
        gap = m + Mneg
        if j < 0 or gap < tol:
            if n_act < l:
                reconstruct_gradient(kern, cache, dual, G_bar, active[n_act:])
                n_act = l
                counter = 1
                just_rebuilt = True   # re-test on the full set before shrinking again
                continue
            break
        just_rebuilt = False
        pair_update(kern, cache, dual, G_bar, diag, i, j, active[:n_act])
        it += 1
    return it, status, gap


@jit()
def decision_values(Xt, Xs, w, k0, kb, coef, b, out):
    """``out[a] = sum_k coef_k K(Xt[a], Xs[k]) + b`` with ``K = k0 exp(-1/2
    sum_l w_l d_l^2)`` (the ``kb`` offset of the cached covariance is not
    part of the classical kernel and is ignored)."""
    Xst = np.ascontiguousarray(Xs.T)
    kk = np.empty(Xs.shape[0])
    for a in range(Xt.shape[0]):
        _wsqdist_row(Xt, a, Xst, w, kk, 0, Xs.shape[0])
        _cov_from_sqdist(kk, k0, 0.0, 0, Xs.shape[0])
        acc = 0.0
        for k in range(Xs.shape[0]):
            acc += coef[k] * kk[k]
        out[a] = acc + b
