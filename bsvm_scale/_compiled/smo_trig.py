"""Numba SMO solver for the BTSVC dual problem (thesis 5.29), with case weights.

The dual of the trigonometric SVC in a Gaussian process (5.29) is::

    min_{alpha >= 0}  1/2 sum_ij v_i v_j Cov(x_i, x_j) - sum_i alpha_i
                      + sum_i phi(alpha_i),
    phi(a) = 4/pi * a * arctan(2a/pi) - ln(1 + (2a/pi)^2),

with ``v_i = y_i alpha_i`` and no equality constraint (the bias variance
``kappa_b`` is part of the covariance). ``phi'(a) = 4/pi arctan(2a/pi)`` lies
in ``[0, 2)`` and ``phi''(a) = 8 / (pi^2 + 4 a^2) > 0``, so the problem is
strictly convex and its solution is finite; ``y_i f_i > -1`` at the optimum.

Case weights. With a weight ``w_i >= 0`` on the loss of case ``i`` the primal
(5.21) reads ``min 1/2 f^T Sigma^-1 f + sum_i w_i l(xi_i)``, ``l(xi) = 2 ln
sec(pi/4 xi)``. Collecting the ``xi_i`` terms of the Lagrangian (5.22) as in
(5.24)-(5.26): ``w_i l'(xi_i) = alpha_i + gamma_i`` gives ``xi_i = 4/pi
arctan(2 (alpha_i + gamma_i) / (pi w_i))`` and the term ``-w_i l*((alpha_i +
gamma_i) / w_i)``, where ``l* = phi`` is the convex conjugate of ``l`` (the
unweighted derivation); ``gamma = 0`` again maximises. So the weighted dual
is (5.29) with ``phi(alpha_i)`` replaced by its perspective::

    w_i phi(alpha_i / w_i),   derivative phi'(alpha_i / w_i) = xi_i,
                              second derivative phi''(alpha_i / w_i) / w_i.

``w_i = 1`` is (5.29) itself, in the same floating-point operations (a
division by 1.0 is exact). An integer weight ``k`` equals ``k`` copies of the
case: the copies' dual variables are equal at the (unique) optimum, ``a/k``
each, and ``k phi(a/k)`` is their summed term. A case with ``w_i = 0`` has no
loss; its perspective is the indicator of ``alpha_i = 0``: it is held at
``alpha_i = 0``, has no KKT violation, is never chosen as a partner, and its
gradient carries no ``phi'`` term (``g_i = y_i f_i - 1``). The scalar
functions below assume ``w > 0``; only the passes over arrays look at ``w = 0``.

The gradient of the dual with respect to ``alpha_i`` is::

    g_i = y_i f_i - 1 + phi'(alpha_i / w_i),    f = Sigma v          (5.23)

which is ``-y_i F_i`` with ``F_i`` of (5.30). The KKT conditions (5.30) read
``g_i = 0`` for ``alpha_i > 0`` and ``g_i >= 0`` for ``alpha_i = 0``; the
stopping rule (5.31), ``beta_up >= -tau`` and ``beta_low <= tau``, is exactly
``max_i viol_i <= tau`` with ``viol_i = |g_i|`` (``alpha_i > 0``) or
``max(0, -g_i)`` (``alpha_i = 0``), over the cases with ``w_i > 0``. The
weights do not change the scale of ``g`` (a margin), so ``tau`` keeps its
meaning.

Every iteration (one function per step):

1. the most violating variable ``i`` (first order; :func:`max_violation`,
   then fused into the gradient update, :func:`update_and_violation`);
2. :func:`select_partner_parallel`: the partner ``j`` with the largest second-order
   decrease of the two-variable Newton model (Appendix G's 2x2 Newton step),
   using the cached covariance row of ``i``;
3. :func:`solve_pair` (or :func:`solve_single`): the two-variable
   sub-problem solved to high accuracy by a projected Newton method with a
   convexity-based safeguard (line search on the directional derivative),
   which replaces the trust region of Appendix G (G.1-G.3) and converges for
   overlapping classes and (near-)duplicate points alike;
4. :func:`update_and_violation`: the cached gradient ``g`` updated in O(n) with
   the two covariance rows taken from the LRU row cache
   (:mod:`bsvm_scale._compiled.row_cache`), and the next most violating variable found
   in the same pass. The O(n) scans run in parallel chunks reduced in index
   order, so the iterates do not depend on the number of threads.

No ``n x n`` matrix is formed anywhere. The arrays of a solve travel as one
:class:`TrigDual` (labels, weights, ``alpha``, gradient).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import get_num_threads, prange

from . import jit
from .row_cache import get_row

_PI = np.pi
_FOUR_OVER_PI = 4.0 / np.pi
_TWO_OVER_PI = 2.0 / np.pi


class TrigDual(NamedTuple):
    """The arrays of one solve of the (weighted) dual (5.29), length ``n``."""

    y: np.ndarray      #: labels in ``{-1, +1}`` (read only)
    w: np.ndarray      #: case weights ``>= 0`` (read only; all ones: (5.29) itself)
    alpha: np.ndarray  #: the start on entry, the solution on return
    g: np.ndarray      #: dual gradient in step with ``alpha``


class Pair(NamedTuple):
    """The two-variable sub-problem of one SMO step (:func:`solve_pair`)."""

    ai: float   #: alpha_i before the step
    aj: float   #: alpha_j before the step
    gi: float   #: dual gradient g_i
    gj: float   #: dual gradient g_j
    kii: float  #: Cov(x_i, x_i)
    kjj: float  #: Cov(x_j, x_j)
    kij: float  #: y_i y_j Cov(x_i, x_j)
    wi: float   #: weight of case i (> 0)
    wj: float   #: weight of case j (> 0)


# -- the separable dual term w phi(a / w) and its derivatives ------------------------
@jit(inline="always")
def dual_term(a, w):
    """``w phi(a / w)``, ``phi(a) = 4/pi a arctan(2a/pi) - ln(1 + (2a/pi)^2)`` of
    (5.29) (``w > 0``)."""
    u = a / w
    t = _TWO_OVER_PI * u
    return w * (_FOUR_OVER_PI * u * np.arctan(t) - np.log1p(t * t))


@jit(inline="always")
def dual_term_grad(a, w):
    """``phi'(a / w) = 4/pi arctan(2a/(pi w))``; equals the slack ``xi`` of
    (5.25) (``w > 0``)."""
    return _FOUR_OVER_PI * np.arctan(_TWO_OVER_PI * (a / w))


@jit(inline="always")
def dual_term_hess(a, w):
    """``phi''(a / w) / w = 8 w / (pi^2 w^2 + 4 a^2)``, ``phi''(a) = 8 / (pi^2 +
    4 a^2)`` (the diagonal addition in G.2; ``w > 0``). One division, as
    without weights (the partner search evaluates it for every case), and
    exactly ``phi''(a)`` for ``w = 1``."""
    return 8.0 * w / (_PI * _PI * w * w + 4.0 * a * a)


@jit(inline="always")
def _excess(a, d, w):
    """``w phi((a + d)/w) - w phi(a/w) - phi'(a/w) d`` (>= 0, convex in ``d``)."""
    return dual_term(a + d, w) - dual_term(a, w) - dual_term_grad(a, w) * d


@jit(inline="always")
def _slack(a, w):
    """``phi'(a / w)``, and 0 for a case of weight 0 (held at ``alpha = 0``)."""
    return dual_term_grad(a, w) if w > 0.0 else 0.0


# -- gradient / violation --------------------------------------------------------
@jit()
def gradient_from_f(dual, f):
    """Fill ``dual.g`` with ``g_i = y_i f_i - 1 + phi'(alpha_i / w_i)`` (the
    dual gradient, see (5.30); no ``phi'`` term where ``w_i = 0``)."""
    y, w, alpha, g = dual
    for i in range(y.shape[0]):
        g[i] = y[i] * f[i] - 1.0 + _slack(alpha[i], w[i])


@jit()
def f_from_gradient(dual, f):
    """Invert :func:`gradient_from_f`: ``f_i = y_i (g_i + 1 - phi'(alpha_i / w_i))``."""
    y, w, alpha, g = dual
    for i in range(y.shape[0]):
        f[i] = y[i] * (g[i] + 1.0 - _slack(alpha[i], w[i]))


@jit(inline="always")
def violation(a, gi, w):
    """KKT violation of one variable (the quantity bounded by tau in (5.31));
    0 for a case of weight 0 (fixed at ``alpha = 0``)."""
    if not w > 0.0:
        return 0.0
    if a > 0.0:
        return abs(gi)
    return -gi if gi < 0.0 else 0.0


@jit()
def max_violation(dual):
    """Index and size of the largest KKT violation (``max(-beta_up, beta_low)``)."""
    alpha, g, w = dual.alpha, dual.g, dual.w
    best = -1
    vmax = 0.0
    for i in range(alpha.shape[0]):
        v = violation(alpha[i], g[i], w[i])
        if v > vmax:
            vmax = v
            best = i
    return best, vmax


@jit(inline="always")
def _better(v, k, best_v, best_k):
    """Larger value wins, the lower index on a tie (the serial scan's order)."""
    return v > best_v or (v == best_v and 0 <= k < best_k)


@jit()
def _reduce_chunks(best_v, best_k):
    """Winner over per-chunk ``(value, index)`` pairs (``index = -1``: none)."""
    v, k = 0.0, -1
    for c in range(best_k.shape[0]):
        if best_k[c] >= 0 and (k < 0 or _better(best_v[c], best_k[c], v, k)):
            v, k = best_v[c], best_k[c]
    return k, v


def chunks_for(n):
    """Parallel chunks of the O(n) scans: one per thread, at least 4,096 cases each."""
    return max(1, min(get_num_threads(), n // 4096))


# -- working-set selection -----------------------------------------------------------
@jit(inline="always")
def _partner_gain(i, j, dual, row_i, kdiag, hii):
    """Model decrease of the pair ``(i, j)`` (0 when not admissible, e.g. for
    ``w_j = 0``); ``hii = kdiag + phi''(alpha_i / w_i) / w_i``."""
    alpha, g, y, w = dual.alpha, dual.g, dual.y, dual.w
    if not w[j] > 0.0:
        return 0.0
    gi = g[i]
    ai = alpha[i]
    gj = g[j]
    aj = alpha[j]
    hjj = kdiag + dual_term_hess(aj, w[j])
    hij = y[i] * y[j] * row_i[j]
    det = hii * hjj - hij * hij
    if det <= 1e-300:
        return 0.0
    di = -(hjj * gi - hij * gj)
    dj = -(hii * gj - hij * gi)
    if (aj <= 0.0 and dj <= 0.0) or (ai <= 0.0 and di <= 0.0):
        return 0.0
    return 0.5 * (hjj * gi * gi - 2.0 * hij * gi * gj + hii * gj * gj) / det


@jit(parallel=True)
def select_partner_parallel(i, dual, row_i, kdiag, n_chunks):
    """:func:`select_partner` over ``n_chunks`` contiguous chunks in parallel,
    reduced in index order: the same partner as the serial scan."""
    n = dual.alpha.shape[0]
    gi = dual.g[i]
    ai = dual.alpha[i]
    hii = kdiag + dual_term_hess(ai, dual.w[i])
    floor = 0.5 * gi * gi / hii  # single-variable decrease
    best_v = np.zeros(n_chunks)
    best_k = np.full(n_chunks, -1, dtype=np.int64)
    size = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        bv, bk = floor, -1
        for j in range(c * size, min(n, (c + 1) * size)):
            if j == i:
                continue
            gain = _partner_gain(i, j, dual, row_i, kdiag, hii)
            if gain > bv:
                bv, bk = gain, j
        best_v[c], best_k[c] = bv, bk
    return _reduce_chunks(best_v, best_k)[0]


@jit()
def select_partner(i, dual, row_i, kdiag):
    """Second-order choice of the partner ``j`` of the most violating ``i``.

    For every ``j`` the unconstrained 2x2 Newton step (G.2) with
    ``H = [[K_ii + phi''_i, y_i y_j K_ij], [., K_jj + phi''_j]]``
    (``phi''_k = phi''(a_k / w_k) / w_k``) is formed; ``j`` is admissible when
    neither variable at zero would be pushed negative (and ``w_j > 0``), and
    its score is the model decrease ``1/2 g^T H^{-1} g``. Returns ``-1`` if no
    partner is admissible.
    """
    gi = dual.g[i]
    ai = dual.alpha[i]
    hii = kdiag + dual_term_hess(ai, dual.w[i])
    best = -1
    best_gain = 0.5 * gi * gi / hii  # single-variable decrease
    for j in range(dual.alpha.shape[0]):
        if j == i:
            continue
        gain = _partner_gain(i, j, dual, row_i, kdiag, hii)
        if gain > best_gain:
            best_gain = gain
            best = j
    return best


# -- sub-problem solvers -----------------------------------------------------------
@jit()
def solve_single(a, gi, kii, w, eps):
    """Exact minimiser of the one-variable sub-problem (case weight ``w > 0``).

    Minimises ``psi(d) = gi d + 1/2 kii d^2 + excess(a, d)`` (with
    ``excess(a, d) = w phi((a + d)/w) - w phi(a/w) - phi'(a/w) d``)
    over ``d >= -a`` by Newton's method safeguarded with a bisection bracket
    (``psi'`` is strictly increasing). Returns the step ``d``.
    """
    # psi'(d) = gi + kii d + phi'((a + d)/w) - phi'(a/w)
    pa = dual_term_grad(a, w)
    lo = -a
    if gi + kii * lo + dual_term_grad(0.0, w) - pa >= 0.0:
        return lo  # optimum at the bound alpha = 0
    # upper bracket: phi' lies in [0, 2), so psi'(d) > 0 for d >= (2 - gi)/kii
    hi = max(0.0, (2.0 - gi) / kii)
    d = 0.0 if gi < 0.0 else max(lo, -gi / (kii + dual_term_hess(a, w)))
    d = min(max(d, lo), hi)
    for _ in range(200):
        dp = gi + kii * d + dual_term_grad(a + d, w) - pa
        if abs(dp) <= eps:
            break
        if dp > 0.0:
            hi = d
        else:
            lo = d
        step = dp / (kii + dual_term_hess(a + d, w))
        dn = d - step
        if not (lo < dn < hi):
            dn = 0.5 * (lo + hi)
        if abs(dn - d) <= 1e-15 * (1.0 + abs(a + d)):
            d = dn
            break
        d = dn
    return d


@jit(inline="always")
def _pair_value(pair, di, dj):
    """``Phi(di, dj)`` of :func:`solve_pair`."""
    ai, aj, gi, gj, kii, kjj, kij, wi, wj = pair
    return (gi * di + gj * dj + 0.5 * (kii * di * di + 2.0 * kij * di * dj + kjj * dj * dj)
            + _excess(ai, di, wi) + _excess(aj, dj, wj))


@jit(inline="always")
def _newton_direction(gi, gj, hi, hj, kij, free_i, free_j):
    """Newton-Raphson direction (G.2) restricted to the free variables."""
    if free_i and free_j:
        det = hi * hj - kij * kij
        if det > 1e-14 * hi * hj:
            return -(hj * gi - kij * gj) / det, -(hi * gj - kij * gi) / det
        return -gi / hi, -gj / hj  # numerically singular: diagonally scaled descent
    if free_i:
        return -gi / hi, 0.0
    if free_j:
        return 0.0, -gj / hj
    return 0.0, 0.0


@jit()
def solve_pair(pair, eps):
    """Two-variable sub-problem of SMO (Appendix G), solved by projected Newton.

    Minimises over ``(di, dj)`` with ``ai + di >= 0``, ``aj + dj >= 0``
    (the fields of the :class:`Pair`)::

        Phi(d) = gi di + gj dj + 1/2 d^T K d + excess_i(di) + excess_j(dj)

    where ``K = [[kii, kij], [kij, kjj]]`` (``kij = y_i y_j Cov_ij``) and
    ``excess(d) = w phi((a + d)/w) - w phi(a/w) - phi'(a/w) d`` (weights
    ``wi, wj > 0``). Each iteration takes the
    Newton-Raphson step (G.2) on the free variables, truncated at the bound,
    and backtracks until the directional derivative is non-positive or the
    Armijo condition holds; because ``Phi`` is strictly convex this always
    decreases ``Phi`` and converges, also when ``K`` is singular (duplicate
    points). Stops when the projected gradient is below ``eps`` or after
    100 iterations (as Appendix G). Returns ``(di, dj)``.
    """
    ai, aj, gi, gj, kii, kjj, kij, wi, wj = pair
    di = 0.0
    dj = 0.0
    for _ in range(100):
        gi_c = gi + kii * di + kij * dj + dual_term_grad(ai + di, wi) - dual_term_grad(ai, wi)
        gj_c = gj + kij * di + kjj * dj + dual_term_grad(aj + dj, wj) - dual_term_grad(aj, wj)
        free_i = not (ai + di <= 0.0 and gi_c >= 0.0)
        free_j = not (aj + dj <= 0.0 and gj_c >= 0.0)
        pg = 0.0
        if free_i:
            pg = max(pg, abs(gi_c))
        if free_j:
            pg = max(pg, abs(gj_c))
        if pg <= eps:
            break
        hi = kii + dual_term_hess(ai + di, wi)
        hj = kjj + dual_term_hess(aj + dj, wj)
        pi_, pj_ = _newton_direction(gi_c, gj_c, hi, hj, kij, free_i, free_j)
        # a variable at its bound whose Newton component points outwards is
        # fixed, and the direction recomputed on the other one
        if free_i and free_j:
            if ai + di <= 0.0 and pi_ < 0.0:
                pi_, pj_ = _newton_direction(gi_c, gj_c, hi, hj, kij, False, True)
            elif aj + dj <= 0.0 and pj_ < 0.0:
                pi_, pj_ = _newton_direction(gi_c, gj_c, hi, hj, kij, True, False)
        slope = gi_c * pi_ + gj_c * pj_
        if slope >= 0.0:
            break
        # largest feasible step and the variable that hits its bound
        tmax = 1.0
        hit = -1
        if pi_ < 0.0 and -(ai + di) / pi_ < tmax:
            tmax = -(ai + di) / pi_
            hit = 0
        if pj_ < 0.0 and -(aj + dj) / pj_ < tmax:
            tmax = -(aj + dj) / pj_
            hit = 1
        f0 = _pair_value(pair, di, dj)
        t = tmax
        ndi = di
        ndj = dj
        for _ls in range(60):
            ndi = di + t * pi_
            ndj = dj + t * pj_
            if t == tmax and hit == 0:
                ndi = -ai
            if t == tmax and hit == 1:
                ndj = -aj
            ndi = max(ndi, -ai)
            ndj = max(ndj, -aj)
            dgi = (gi + kii * ndi + kij * ndj + dual_term_grad(ai + ndi, wi)
                   - dual_term_grad(ai, wi))
            dgj = (gj + kij * ndi + kjj * ndj + dual_term_grad(aj + ndj, wj)
                   - dual_term_grad(aj, wj))
            if dgi * pi_ + dgj * pj_ <= 0.0:
                break  # not past the minimum along the ray: Phi decreased
            if _pair_value(pair, ndi, ndj) <= f0 + 1e-4 * t * slope:
                break
            t *= 0.5
        moved = abs(ndi - di) + abs(ndj - dj)
        di = ndi
        dj = ndj
        hit_bound = t == tmax and hit >= 0  # active set changed: keep going
        if moved <= 1e-15 * (1.0 + abs(ai + di) + abs(aj + dj)) and not hit_bound:
            break
    return di, dj


# -- gradient update ---------------------------------------------------------------
@jit()
def update_gradient(g, y, row_i, ci, row_j, cj):
    """``g_k += y_k (ci Cov_ik + cj Cov_jk)`` for every k (``c = y * dalpha``)."""
    for k in range(g.shape[0]):
        g[k] += y[k] * (ci * row_i[k] + cj * row_j[k])


@jit(parallel=True)
def update_and_violation(dual, row_i, ci, row_j, cj, n_chunks):
    """:func:`update_gradient` of ``dual.g`` (``cj = 0`` and ``row_j = row_i``
    for one variable) fused with :func:`max_violation` over the updated
    gradient, in ``n_chunks`` parallel chunks reduced in index order.
    ``alpha`` and the ``phi'`` terms of ``g`` at the moved variables must
    already be updated. Returns ``(index, violation)`` as :func:`max_violation`."""
    y, w, alpha, g = dual
    n = g.shape[0]
    best_v = np.zeros(n_chunks)
    best_k = np.full(n_chunks, -1, dtype=np.int64)
    size = (n + n_chunks - 1) // n_chunks
    for c in prange(n_chunks):
        bv, bk = 0.0, -1
        for k in range(c * size, min(n, (c + 1) * size)):
            gk = g[k] + y[k] * (ci * row_i[k] + cj * row_j[k])
            g[k] = gk
            v = violation(alpha[k], gk, w[k])
            if v > bv:
                bv, bk = v, k
        best_v[c], best_k[c] = bv, bk
    k, v = _reduce_chunks(best_v, best_k)
    return k, v


@jit()
def update_gradient_single(g, y, row_i, ci):
    """``g_k += y_k ci Cov_ik`` for every k."""
    for k in range(g.shape[0]):
        g[k] += y[k] * ci * row_i[k]


# -- driver ------------------------------------------------------------------------
@jit()
def smo_loop(kern, cache, dual, tau, max_iter, n_threads=1):
    """Run SMO on the (weighted) dual (5.29) in place on ``dual.alpha`` and
    the cached gradient ``dual.g`` (a :class:`TrigDual`).

    ``kern`` and ``cache`` are the covariance (a
    :class:`~bsvm_scale._compiled.covariance.Kernel`, bias term included) and
    its row cache (a :class:`~bsvm_scale._compiled.row_cache.CacheState`).
    ``dual.g`` must hold the dual gradient for the starting ``alpha`` (warm
    start allowed; ``alpha = 0`` wherever ``w = 0``). ``n_threads`` is the
    number of chunks of the partner search and of the fused gradient update +
    violation scan (:func:`chunks_for`); any value gives the same iterates.

    Returns
    -------
    n_iter : int
        Iterations done.
    vmax : float
        Largest KKT violation at exit (<= ``tau`` on convergence).
    status : int
        0 converged, 1 iteration limit, 2 no progress possible.
    """
    y, w, alpha, g = dual
    kdiag = kern.kappa0 + kern.kappa_b
    eps = min(1e-12, 1e-3 * tau)
    n_chunks = n_threads
    it = 0
    status = 1
    i, vmax = max_violation(dual)
    while it < max_iter:
        if vmax <= tau:
            status = 0
            break
        row_i = get_row(kern, cache, i)
        j = select_partner_parallel(i, dual, row_i, kdiag, n_chunks)
        ai = alpha[i]
        moved = False
        if j >= 0:
            row_j = get_row(kern, cache, j)
            aj = alpha[j]
            di, dj = solve_pair(Pair(ai, aj, g[i], g[j], row_i[i], row_j[j],
                                     y[i] * y[j] * row_i[j], w[i], w[j]), eps)
            if di != 0.0 or dj != 0.0:
                nai = max(ai + di, 0.0)
                naj = max(aj + dj, 0.0)
                g[i] += dual_term_grad(nai, w[i]) - dual_term_grad(ai, w[i])
                g[j] += dual_term_grad(naj, w[j]) - dual_term_grad(aj, w[j])
                alpha[i] = nai
                alpha[j] = naj
                i, vmax = update_and_violation(dual, row_i, y[i] * (nai - ai), row_j,
                                               y[j] * (naj - aj), n_chunks)
                moved = True
        if not moved:
            d = solve_single(ai, g[i], row_i[i], w[i], eps)
            nai = max(ai + d, 0.0)
            if nai == ai:
                status = 2
                break
            g[i] += dual_term_grad(nai, w[i]) - dual_term_grad(ai, w[i])
            alpha[i] = nai
            i, vmax = update_and_violation(dual, row_i, y[i] * (nai - ai), row_i, 0.0,
                                           n_chunks)
        it += 1
    if status == 1:
        i, vmax = max_violation(dual)
        if vmax <= tau:
            status = 0
    return it, vmax, status
