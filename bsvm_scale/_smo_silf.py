"""Numba SMO for the BSVR dual with the soft insensitive loss.

Problem (thesis eq. 4.25), written in ``nu_i = alpha_i - alpha*_i`` (the
constraint ``alpha_i alpha*_i = 0`` holds at every optimum, so one signed
variable per point suffices)::

    min_nu  1/2 nu^T Q nu - y^T nu + eps' * ||nu||_1
    s.t.    -C <= nu_i <= C

with ``Q = Sigma + (2 beta epsilon / C) I`` (4.29) and ``eps' = (1 - beta) epsilon``.
There is no equality constraint: the bias is carried by ``kappa_b`` inside
``Sigma``.

Optimality (4.31)-(4.33). With ``g = Q nu - y = -F`` (4.30) the KKT
conditions per point are::

    nu_i = 0        |g_i| <= eps'              (I_1)
    0 < nu_i < C    g_i = -eps'                (I_0a)
    -C < nu_i < 0   g_i = +eps'                (I_0b)
    nu_i = C        g_i <= -eps'               (I_3)
    nu_i = -C       g_i >= +eps'               (I_2)

and the stopping rule ``b_up >= -tau, b_low <= tau`` (4.33) is the statement
that no point violates its condition by more than ``tau``; :func:`violation`
computes that amount per point.

Each iteration (one small function per step):

1. :func:`select_first` takes the maximal violator ``i``.
2. :func:`select_second` picks ``j`` by second-order gain: the decrease of
   the two-variable Newton step on the (i, j) pair, using row ``i`` of the
   covariance (strongly correlated pairs, e.g. through a large ``kappa_b``,
   are handled well, unlike single-coordinate descent).
   Both scans run over the active points only: :func:`shrink` periodically
   drops bound points held firmly at their bound (LIBSVM-style shrinking,
   with a final full scan that un-shrinks if needed).
3. :func:`solve_pair` minimises the objective exactly over the pair: the
   sub-problem is piecewise quadratic in four quadrants (Table 4.1); in each
   quadrant the minimiser over the box is either the interior Newton point
   or lies on an edge, so all candidates are checked.
4. :func:`update_gradient` applies the step to ``g`` with two cached rows.

Rows of ``Sigma`` come from the LRU cache of :mod:`bsvm_scale._row_cache`;
the ``n x n`` matrix is never formed.
"""

import numpy as np
from numba import njit

from ._row_cache import get_row


@njit(cache=True, inline="always")
def violation(g_i, nu_i, C, eps1):
    """KKT violation of point ``i`` (0 when its condition in (4.31) holds)."""
    if nu_i == 0.0:
        v = abs(g_i) - eps1
    elif nu_i >= C:
        v = g_i + eps1
        if v < 0.0:
            v = 0.0
    elif nu_i <= -C:
        v = eps1 - g_i
        if v < 0.0:
            v = 0.0
    elif nu_i > 0.0:
        v = abs(g_i + eps1)
    else:
        v = abs(g_i - eps1)
    return v if v > 0.0 else 0.0


@njit(cache=True, inline="always")
def descent_gradient(g_i, nu_i, C, eps1):
    """Directional derivative along which point ``i`` would move (0 if the
    point cannot move downhill)."""
    if nu_i > 0.0:
        h = g_i + eps1
    elif nu_i < 0.0:
        h = g_i - eps1
    elif g_i > eps1:
        h = g_i - eps1
    elif g_i < -eps1:
        h = g_i + eps1
    else:
        return 0.0
    if (nu_i >= C and h < 0.0) or (nu_i <= -C and h > 0.0):
        return 0.0
    return h


@njit(cache=True)
def select_first(g, nu, C, eps1):
    """Index and size of the maximal KKT violation."""
    best = -1
    vmax = 0.0
    for k in range(g.shape[0]):
        v = violation(g[k], nu[k], C, eps1)
        if v > vmax:
            vmax = v
            best = k
    return best, vmax


@njit(cache=True)
def select_first_active(g, nu, C, eps1, active, n_active):
    """:func:`select_first` over the active (unshrunk) points only."""
    best = -1
    vmax = 0.0
    for a in range(n_active):
        k = active[a]
        v = violation(g[k], nu[k], C, eps1)
        if v > vmax:
            vmax = v
            best = k
    return best, vmax


@njit(cache=True)
def shrink(g, nu, C, eps1, margin, active):
    """Shrinking: keep in ``active`` the points that are free or within
    ``margin`` of violating their condition in (4.31); returns their number.

    Points at a bound (``nu = 0`` inside the tube, ``|nu| = C`` outside it)
    whose gradient holds them there by more than ``margin`` are unlikely to
    move, so the selection scans skip them. ``g`` is still updated for every
    point, so nothing needs reconstructing: a final full scan un-shrinks if
    any skipped point turns out to violate.
    """
    n_active = 0
    for k in range(g.shape[0]):
        nk = nu[k]
        gk = g[k]
        if nk == 0.0:
            keep = abs(gk) > eps1 - margin
        elif nk >= C:
            keep = gk + eps1 > -margin
        elif nk <= -C:
            keep = eps1 - gk > -margin
        else:
            keep = True
        if keep:
            active[n_active] = k
            n_active += 1
    return n_active


@njit(cache=True)
def select_second(i, row_i, g, nu, C, eps1, qdiag, tau, active, n_active):
    """Partner ``j`` of ``i`` (among the active points) maximising the
    two-variable Newton gain ``1/2 h^T H^{-1} h`` with
    ``H = [[Q_ii, Q_ij], [Q_ij, Q_jj]]``."""
    hi = descent_gradient(g[i], nu[i], C, eps1)
    best = -1
    gmax = -1.0
    for a in range(n_active):
        k = active[a]
        if k == i:
            continue
        hk = descent_gradient(g[k], nu[k], C, eps1)
        if abs(hk) <= tau:
            continue
        qik = row_i[k]
        det = qdiag * qdiag - qik * qik
        if det <= 1e-12 * qdiag * qdiag:
            gain = 0.5 * (hi + hk) * (hi + hk) / (2.0 * qdiag + 2.0 * qik) \
                if qik > 0 else 0.5 * (hi - hk) * (hi - hk) / (2.0 * qdiag - 2.0 * qik)
        else:
            gain = 0.5 * (qdiag * hi * hi - 2.0 * qik * hi * hk + qdiag * hk * hk) / det
        if gain > gmax:
            gmax = gain
            best = k
    return best


@njit(cache=True, inline="always")
def _pair_value(a, b, qii, qij, qjj, pa, pb, eps1):
    return 0.5 * (qii * a * a + 2.0 * qij * a * b + qjj * b * b) + pa * a + pb * b \
        + eps1 * (abs(a) + abs(b))


@njit(cache=True, inline="always")
def _clip(x, lo, hi):
    return lo if x < lo else (hi if x > hi else x)


@njit(cache=True)
def solve_pair(nu_i, nu_j, g_i, g_j, qii, qij, qjj, C, eps1):
    """Exact minimiser of the objective over ``(nu_i, nu_j)``, others fixed.

    In new values ``(a, b)`` the sub-problem is
    ``1/2 [a b] H [a b]^T + pa a + pb b + eps' (|a| + |b|)`` on ``[-C, C]^2``.
    Each sign quadrant is a smooth convex quadratic on a rectangle; its
    minimiser is the Newton point if inside, else on an edge (1-D minimum
    clipped). Returns the best candidate over the four quadrants.
    """
    pa = g_i - qii * nu_i - qij * nu_j
    pb = g_j - qij * nu_i - qjj * nu_j
    det = qii * qjj - qij * qij
    best_a = nu_i
    best_b = nu_j
    best_v = _pair_value(nu_i, nu_j, qii, qij, qjj, pa, pb, eps1)
    for sa in (-1.0, 1.0):
        alo = 0.0 if sa > 0 else -C
        ahi = C if sa > 0 else 0.0
        ca = pa + sa * eps1
        for sb in (-1.0, 1.0):
            blo = 0.0 if sb > 0 else -C
            bhi = C if sb > 0 else 0.0
            cb = pb + sb * eps1
            if det > 1e-14 * qii * qjj:
                a = (-qjj * ca + qij * cb) / det
                b = (qij * ca - qii * cb) / det
                if alo <= a <= ahi and blo <= b <= bhi:
                    v = _pair_value(a, b, qii, qij, qjj, pa, pb, eps1)
                    if v < best_v:
                        best_v, best_a, best_b = v, a, b
            for e in range(4):
                if e < 2:
                    a = alo if e == 0 else ahi
                    b = _clip(-(cb + qij * a) / qjj, blo, bhi)
                else:
                    b = blo if e == 2 else bhi
                    a = _clip(-(ca + qij * b) / qii, alo, ahi)
                v = _pair_value(a, b, qii, qij, qjj, pa, pb, eps1)
                if v < best_v:
                    best_v, best_a, best_b = v, a, b
    return best_a, best_b


@njit(cache=True)
def update_gradient(g, row_i, row_j, di, dj, i, j, diag_add):
    """``g += Q[:, i] di + Q[:, j] dj`` with ``Q = Sigma + diag_add I``."""
    for k in range(g.shape[0]):
        g[k] += row_i[k] * di + row_j[k] * dj
    g[i] += diag_add * di
    g[j] += diag_add * dj


@njit(cache=True)
def init_gradient(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta,
                  nu, y, diag_add, b):
    """``g = Q~ nu - y + b`` for a warm start (rows of the non-zero ``nu`` only)."""
    g = b - y
    for i in range(nu.shape[0]):
        if nu[i] != 0.0:
            row = get_row(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta, i)
            for k in range(g.shape[0]):
                g[k] += row[k] * nu[i]
            g[i] += diag_add * nu[i]
    return g


@njit(cache=True)
def smo_inner(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta,
              g, nu, C, eps1, diag_add, tau, max_iter):
    """Pair SMO at a fixed bias: minimise ``1/2 nu^T Q~ nu - (y - b)^T nu +
    eps' |nu|_1`` in place (``g`` holds its gradient). Returns
    ``(iterations, max_violation)``."""
    qdiag = kappa0 + kappa_b + diag_add
    n = g.shape[0]
    active = np.arange(n)
    n_active = n
    period = min(1000, n)
    countdown = period
    it = 0
    while it < max_iter:
        i, vmax = select_first_active(g, nu, C, eps1, active, n_active)
        if vmax <= tau:
            if n_active == n:
                return it, vmax
            i, vmax = select_first(g, nu, C, eps1)  # un-shrink check
            if vmax <= tau:
                return it, vmax
            n_active = shrink(g, nu, C, eps1, vmax, active)
            countdown = period
        countdown -= 1
        if countdown <= 0:
            n_active = shrink(g, nu, C, eps1, vmax, active)
            countdown = period
            continue
        row_i = get_row(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta, i)
        j = select_second(i, row_i, g, nu, C, eps1, qdiag, tau, active, n_active)
        if j < 0:
            j = i - 1 if i > 0 else i + 1
        row_j = get_row(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta, j)
        if slot_of[i] < 0:  # row i was evicted by fetching row j (tiny cache)
            row_i = get_row(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta, i)
        a, bb = solve_pair(nu[i], nu[j], g[i], g[j], qdiag, row_i[j], qdiag, C, eps1)
        di = a - nu[i]
        dj = bb - nu[j]
        if di == 0.0 and dj == 0.0:  # numerical stall: report, never loop forever
            break
        nu[i] = a
        nu[j] = bb
        update_gradient(g, row_i, row_j, di, dj, i, j, diag_add)
        it += 1
    i, vmax = select_first(g, nu, C, eps1)
    return it, vmax


@njit(cache=True, inline="always")
def _shift(g, delta):
    for k in range(g.shape[0]):
        g[k] += delta


@njit(cache=True)
def smo_silf(X, w, kappa0, buf, slot_of, row_of, prev, nxt, meta,
             y, nu, C, epsilon, beta, kappa_b, tau, max_iter, b0, slope0):
    """Solve (4.25) in place in ``nu`` (a feasible warm start).

    ``Sigma = Sigma~ + kappa_b 1 1^T``: the cache holds rows of ``Sigma~``
    (built with a zero bias variance) and the bias is handled exactly by an
    outer one-dimensional root search. For a fixed bias ``b`` the problem
    without the rank-one term is solved by pair SMO (:func:`smo_inner`); the
    full problem is solved when ``psi(b) = kappa_b sum(nu(b)) - b = 0``, a
    decreasing function of ``b``, found by secant steps (starting from the
    previous solve's bias ``b0`` and slope ``slope0``) until the root is
    bracketed, then the Illinois variant of regula falsi. This keeps SMO well
    conditioned however large ``kappa_b`` is (plain coordinate methods slow
    down in proportion to ``kappa_b / kappa0``).

    The bias mode is very stiff: the inner tolerance leaves an error ``ds``
    in ``sum(nu)`` that ``psi`` magnifies by ``kappa_b``, so ``psi`` itself
    cannot be driven to zero. Accuracy is judged on ``b`` instead: the search
    stops once the secant (Newton) step ``|psi / psi'|`` or the bracket on
    ``b`` is below ``tau / 2``. The solution is then exact (to ``tau / 2``)
    for the bias ``b``, which is returned and used for ``f``; ``b`` differs
    from ``kappa_b sum(nu)`` only through the inner tolerance.

    Returns ``(g, b, slope, n_iter, max_violation)`` where
    ``g = Q~ nu - y + b`` is the gradient ``-F`` of (4.30) with bias ``b``,
    ``slope`` the last secant estimate of ``psi'`` (for the next warm start)
    and ``max_violation`` adds the remaining bias uncertainty to the largest
    KKT violation, so ``max_violation <= tau`` is the stopping rule (4.33).
    """
    eps1 = (1.0 - beta) * epsilon
    diag_add = 2.0 * beta * epsilon / C
    half = 0.5 * tau
    b = b0
    slope = slope0 if slope0 < 0.0 else -(1.0 + kappa_b * nu.shape[0] / (kappa0 + diag_add))
    g = init_gradient(X, w, kappa0, 0.0, buf, slot_of, row_of, prev, nxt, meta,
                      nu, y, diag_add, b)
    total, v = smo_inner(X, w, kappa0, 0.0, buf, slot_of, row_of, prev, nxt, meta,
                         g, nu, C, eps1, diag_add, half, max_iter)
    psi = kappa_b * np.sum(nu) - b
    b_a, psi_a, b_b, psi_b = b, psi, b, psi
    have_bracket = False
    measured = False  # slope from a secant of this solve, not a guess
    width = np.inf
    outer = 0
    while total < max_iter and outer < 200:
        # psi carries the inner tolerance magnified by kappa_b, so accuracy is
        # judged on b: the Newton step |psi / slope| or the bracket width
        if width <= half or (measured and abs(psi / slope) <= half) or psi == 0.0:
            break
        outer += 1
        if not have_bracket:
            b_new = b - psi / slope
        else:
            b_new = b_b - psi_b * (b_b - b_a) / (psi_b - psi_a)
        _shift(g, b_new - b)
        it, v = smo_inner(X, w, kappa0, 0.0, buf, slot_of, row_of, prev, nxt, meta,
                          g, nu, C, eps1, diag_add, half, max_iter - total)
        total += it
        psi_new = kappa_b * np.sum(nu) - b_new
        if b_new != b:
            sec = (psi_new - psi) / (b_new - b)
            if sec < 0.0:
                slope = sec
                measured = True
            elif not have_bracket:
                slope *= 0.5  # flat or noisy: take a longer step next time
        b = b_new
        if not have_bracket:
            if (psi_new > 0.0) != (psi_a > 0.0):
                have_bracket = True
                b_b, psi_b = b, psi_new
            else:
                b_a, psi_a = b, psi_new
        else:
            if (psi_new > 0.0) == (psi_b > 0.0):
                b_b, psi_b = b, psi_new
                psi_a *= 0.5
            else:
                b_a, psi_a = b_b, psi_b
                b_b, psi_b = b, psi_new
        if have_bracket:
            width = abs(b_b - b_a)
        psi = psi_new
    # ``g`` is exact for the bias ``b``; the bias itself is known to within
    # the bracket, which bounds the remaining violation of the full problem
    i, vmax = select_first(g, nu, C, eps1)
    return g, b, slope, total, max(vmax, min(abs(psi / slope), width))
