"""Newton's method for the BSVR MAP problem where the SMO crawls.

Problem. The MAP function of BSVR minimises the primal (4.10)
``1/2 f^T Sigma^-1 f + sum_i C_i SILF(y_i - f_i)`` (``Sigma`` with its bias
term ``kappa_b``, ``C_i = C w_i`` with case weights). Written in the
coordinates ``a`` of ``f = Sigma a``::

    min_a  J(a) = 1/2 a^T Sigma a + sum_i C_i SILF(y_i - (Sigma a)_i)

whose minimiser is the dual solution ``nu`` of (4.25): at the optimum
``a_i = C_i SILF'(y_i - f_i)`` (2.29), the optimality condition of the dual.

Why. The dual (4.25) has the Hessian ``Sigma + D`` with ``D = diag(2 beta
epsilon / C_i)`` (4.29). With a large signal variance ``kappa0`` and long
length scales (what the evidence chooses on Friedman #1 once ``kappa0`` is
inferred), ``Sigma`` has eigenvalues of ``10^5`` and more next to ``D`` of
about ``0.1``: pair steps cross such a problem slowly (hundreds of thousands
of SMO iterations a solve; ``docs/design/kappa0.md``). Newton's method does
not see the conditioning.

Step. ``J`` is convex and piecewise quadratic with a continuous gradient
``Sigma (a - v)``, ``v_i = C_i SILF'(y_i - f_i)``. With ``Z`` the cases in the
quadratic zones of (2.28) (``(1 - beta) eps <= |y_i - f_i| <= (1 + beta)
eps``), where ``SILF'' = 1 / (2 beta eps)``, the generalised Newton step
solves the zone-wise quadratic model exactly: off ``Z`` the new point is
``a+_i = v_i`` (0 in the insensitive zone, ``+-C_i`` in the linear ones),
and on ``Z``::

    (Sigma_ZZ + D_Z) a+_Z = D_Z v_Z + f_Z - Sigma_ZN v_N

(one Cholesky factor of ``|Z| x |Z|``). The step ``a+ - a`` is taken as
far as the exact minimiser of ``J`` along it: ``J`` is convex along the line
and its derivative is piecewise linear, so regula falsi finds the root, at
``O(n)`` a trial (``a^T Sigma a = a^T f``, and ``f`` moves along ``Sigma
(a+ - a)``, one product over the cases whose ``a`` changes). A step within
:data:`FULL_STEP` of the full one is taken in full: a fraction of it leaves
cases between the loss's pieces, and the large eigenvalues of ``Sigma``
amplify that in ``f``. When a full step leaves every case in its zone,
``a+ = v(Sigma a+)``: the fixed point, which is the solution.

First step. The previous solution at new hyperparameters is a poor start
for the zones read from ``f``: ``f = Sigma a`` moves far in the stiff
directions when ``Sigma`` changes. The dual's own partition of that point
(free, at a bound, at zero) is a better guess, and the first step solves the
stationarity of (4.25) on its free cases with the others held
(:func:`_partition_step`), again with the exact line search. Free cases that
this solve pushes past their bound or through zero are held at that end and
the rest solved again (:func:`_held_solve`): clipping them afterwards would
move ``f`` by ``Sigma`` times the clipped amounts, which in the stiff
directions throws most cases out of the pieces the step assumed, and Newton
then crawls back zone by zone (on Friedman #1 with ``kappa0`` inferred, 12
iterations a solve in the median instead of 2).

Use. :func:`smo_newton` runs the SMO first and hands over to Newton only
after :data:`NEWTON_AFTER` ``n`` pair steps; once a solve of a search needed
Newton, the next ones begin with it (the stiff problems come in runs). The
SMO then measures the Newton solution's violation of (4.33) exactly and
removes what is left. Each Newton iteration costs ``O(n (|Z| + m) d)``
kernel values (``m`` the cases whose ``a`` moves; rows come from the row
cache when it holds the whole matrix) and ``O(|Z|^3)`` for the factor.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, cho_solve

from .._compiled.covariance import cov_cross_matvec, cov_subset
from .._compiled.row_cache import rows_block, rows_matvec
from .._compiled.silf_start import quad_after_smo, start_dual_quad
from .._compiled.smo_silf import SilfDual, smo_silf
from .._util.threads import blas_threads
from .losses import SilfShape

__all__ = ["MapSolve", "NewtonResult", "Products", "products", "silf_newton", "smo_newton",
           "NEWTON_AFTER", "MAX_ZONE", "MAX_ITER", "HOLD_ROUNDS"]

#: SMO iterations, in multiples of ``n``, before Newton takes over (none when
#: the previous solve of the same search needed Newton)
NEWTON_AFTER = 10
#: largest quadratic zone whose system is factorised (``|Z|^3 / 3`` flops)
MAX_ZONE = 3000
#: a line-search step within this of 1 counts as the full Newton step
FULL_STEP = 1e-3
#: Newton iterations before giving up (the SMO then goes on from its own point)
MAX_ITER = 60
#: solves of the first step's system, each holding the cases the last one
#: pushed out of their piece (:func:`_held_solve`)
HOLD_ROUNDS = 8


class NewtonResult(NamedTuple):
    """A Newton solution: the dual vector and the iterations it took."""

    nu: np.ndarray
    n_iter: int


class Products(NamedTuple):
    """Products with ``Sigma`` (with its bias term): ``full(idx, coef)`` is
    ``Sigma[:, idx] coef`` over every case, ``block(idx)`` is ``Sigma[idx, idx]``."""

    full: Callable
    block: Callable


def products(kern, kappa_b, cache=None):
    """:class:`Products` of the covariance ``kern`` (without its bias term)
    plus ``kappa_b``: from the cached rows of the
    :class:`~bsvm_scale.inference.covariance.RowCache` ``cache`` when it can
    hold every row (the rows the SMO computed before are reused), else
    computed (in parallel)."""
    n = kern.X.shape[0]
    use_cache = cache is not None and cache.holds_all

    def full(idx, coef):
        if idx.size == 0:
            return np.zeros(n)
        coef = np.ascontiguousarray(coef, dtype=np.float64)
        if use_cache:
            out = rows_matvec(kern, cache.state, np.ascontiguousarray(idx), coef)
        else:
            out = cov_cross_matvec(kern, np.ascontiguousarray(kern.X[idx]), coef)
        return out + kappa_b * float(coef.sum())

    def block(idx):
        idx = np.ascontiguousarray(idx)
        if use_cache:
            return rows_block(kern, cache.state, idx) + kappa_b
        return cov_subset(kern, idx) + kappa_b

    return Products(full, block)


def _pieces(y, f, box, shape):
    """``(v, Z)`` at ``f``: ``v = C SILF'(y - f)`` (2.29) and the cases in the
    closed quadratic zones of (2.28) with a positive box."""
    r = y - f
    return box * shape.grad(r), np.flatnonzero(shape.quadratic(r) & (box > 0.0))


def _newton_step(prod, a, f, v, Z, dadd):
    """``(da, df)``: the undamped Newton step ``a+ - a`` (module docstring)
    and ``Sigma da``, or None when the zone's system cannot be factorised.
    Off ``Z`` the step moves every case to ``v``; ``Sigma`` times that part
    is formed once and serves both the zone's right-hand side and ``df``."""
    da = v - a
    da[Z] = 0.0
    off = np.flatnonzero(da)
    moved = prod.full(off, da[off])  # Sigma[:, off] (v - a)_off
    if Z.size == 0:
        return da, moved
    S_ZZ = prod.block(Z)
    # (Sigma_ZZ + D_Z) a+_Z = D_Z v_Z + f_Z - Sigma_ZN v_N, with
    # Sigma_ZN v_N = f_Z - Sigma_ZZ a_Z + (Sigma[:, off] (v - a)_off)_Z
    new_Z = _solve_shifted(S_ZZ, dadd[Z], dadd[Z] * v[Z] + S_ZZ @ a[Z] - moved[Z])
    if new_Z is None:
        return None
    da[Z] = new_Z - a[Z]
    return da, moved + prod.full(Z, da[Z])


def _held_solve(S, dadd, rhs, s, box):
    """The new values ``x`` of free cases: ``(S + diag(dadd)) x = rhs``, except
    that a case the solve pushes out of its interval ``s_j [0, C_j]`` is held
    at the end it crossed (``s_j C_j`` past the bound, 0 past zero) and the
    others are solved again with its value moved to the right-hand side, for
    up to :data:`HOLD_ROUNDS` solves; None when a system is not positive
    definite.

    A solve that assumes every case stays free and is then clipped to the
    box moves ``f = Sigma a`` by ``Sigma`` times the clipped amounts, which
    the large eigenvalues of a stiff ``Sigma`` turn into a jump that leaves
    most cases in the wrong piece: holding first keeps ``f`` consistent
    with the pieces the step assumes."""
    x = np.zeros(rhs.shape[0])
    free = np.ones(rhs.shape[0], dtype=bool)
    for _ in range(HOLD_ROUNDS):
        K, H = np.flatnonzero(free), np.flatnonzero(~free)
        if K.size == 0:
            break
        sol = _solve_shifted(S[np.ix_(K, K)], dadd[K], rhs[K] - S[np.ix_(K, H)] @ x[H])
        if sol is None:
            return None
        x[K] = sol
        over, flip = np.abs(sol) > box[K], sol * s[K] < 0.0
        if not (over.any() or flip.any()):
            break
        x[K[over]] = s[K[over]] * box[K[over]]
        x[K[flip]] = 0.0
        free[K[over | flip]] = False
    return x


def _solve_shifted(S, d, rhs):
    """``(S + diag(d))^-1 rhs`` by a Cholesky factor (``S`` is overwritten), or
    None when the matrix is not positive definite."""
    S[np.diag_indices_from(S)] += d
    try:
        return cho_solve(cho_factor(S, lower=True, check_finite=False), rhs,
                         check_finite=False)
    except LinAlgError:
        return None


def _line_search(a, f, da, df, y, box, shape):
    """The exact minimiser ``t`` in ``[0, 1]`` of ``J(a + t da)``: ``J`` is
    convex along the line and its derivative ``da^T f + t da^T df - sum_i C_i
    SILF'(y_i - f_i - t df_i) df_i`` is piecewise linear and increasing, so
    its root is bracketed and found by regula falsi (Illinois)."""
    c0, c1 = float(da @ f), float(da @ df)

    def slope(t):
        return c0 + t * c1 - float(np.sum(box * shape.grad(y - f - t * df) * df))

    lo, hi = 0.0, 1.0
    s_lo, s_hi = slope(lo), slope(hi)
    if s_hi <= 0.0:
        return 1.0
    if s_lo >= 0.0:
        return 0.0
    t, side = 1.0, 0
    for _ in range(60):
        t = hi - s_hi * (hi - lo) / (s_hi - s_lo)
        s_t = slope(t)
        if s_t == 0.0 or hi - lo <= 1e-14:
            break
        if s_t > 0.0:
            hi, s_hi = t, s_t
            s_lo = s_lo * 0.5 if side == -1 else s_lo
            side = -1
        else:
            lo, s_lo = t, s_t
            s_hi = s_hi * 0.5 if side == 1 else s_hi
            side = 1
    return t


def silf_newton(prod, y, nu, box, dadd, eps, beta, max_iter=MAX_ITER):
    """Solve (4.25) by Newton's method from ``nu`` (module docstring).

    Parameters
    ----------
    prod : Products
        Products with the covariance (:func:`products`).
    y : ndarray of shape (n,)
    nu : ndarray of shape (n,)
        The start (any point; the SMO's last iterate).
    box, dadd : ndarray of shape (n,)
        ``C_i`` and ``2 beta eps / C_i`` (0 where ``C_i = 0``).
    eps, beta : float
        The soft insensitive loss (2.28).
    max_iter : int

    Returns
    -------
    NewtonResult or None
        None when a quadratic zone exceeds :data:`MAX_ZONE` cases, its system
        is not positive definite, or ``max_iter`` steps do not reach the
        fixed point.

    Raises
    ------
    ValueError
        When ``eps <= 0`` or ``beta`` is outside ``(0, 1]`` (checked here once,
        :class:`~bsvm_scale.inference.losses.SilfShape`; the inner loops do not
        check again).
    """
    n, shape = y.shape[0], SilfShape.checked(eps, beta)  # checked once for the inner loops
    box = np.broadcast_to(np.asarray(box, dtype=np.float64), (n,))
    dadd = np.broadcast_to(np.asarray(dadd, dtype=np.float64), (n,))
    a = np.clip(np.asarray(nu, dtype=np.float64), -box, box)
    S = np.flatnonzero(a)
    f = prod.full(S, a[S])
    a, f = _partition_step(prod, a, f, y, box, dadd, shape)
    v, Z = _pieces(y, f, box, shape)
    for it in range(max_iter):
        if Z.size > MAX_ZONE:
            return None
        step = _newton_step(prod, a, f, v, Z, dadd)
        if step is None:
            return None
        da, df = step
        t = _line_search(a, f, da, df, y, box, shape)
        if t >= 1.0 - FULL_STEP or t == 0.0:
            # the full step: its point, not a fraction of it, is the candidate
            # (a fraction leaves cases between pieces, and Sigma, whose large
            # eigenvalues make the problem stiff, amplifies that in f); at
            # t = 0 the step is at rounding level
            a_Z = a[Z] + da[Z]
            a, f = v.copy(), f + df
            a[Z] = a_Z
            v_new, Z_new = _pieces(y, f, box, shape)
            if _same_zones(a, v_new, Z, Z_new):
                return NewtonResult(np.clip(a, -box, box), it + 1)
            if t == 0.0:
                return None
            v, Z = v_new, Z_new
        else:
            a, f = a + t * da, f + t * df
            v, Z = _pieces(y, f, box, shape)
    return None


def _partition_step(prod, a, f, y, box, dadd, shape):
    """The dual's own active-set step from ``a``: its free cases ``F`` (``0 <
    |a_i| < C_i``) solve the stationarity of (4.25) with every other case held,
    ``(Sigma_FF + D_F) a_F = y_F - eps' sign(a_F) - Sigma_FN a_N``; taken by the
    exact line search on ``J``. From the previous solution at new
    hyperparameters this lands near the optimum when few cases change piece,
    where ``f = Sigma a`` itself is far off in the stiff directions."""
    F = np.flatnonzero((a != 0.0) & (np.abs(a) < box))
    if F.size == 0 or F.size > MAX_ZONE:
        return a, f
    S_FF = prod.block(F)
    eps, beta = shape
    s = np.sign(a[F])
    x = _held_solve(S_FF, dadd[F], y[F] - (1.0 - beta) * eps * s - (f[F] - S_FF @ a[F]), s,
                    box[F])
    if x is None:
        return a, f
    da = np.zeros_like(a)
    da[F] = x - a[F]
    df = prod.full(F, da[F])
    t = _line_search(a, f, da, df, y, box, shape)
    return a + t * da, f + t * df


def _same_zones(a, v_new, Z, Z_new):
    """True when a full step left every case in its zone: the quadratic zone
    is ``Z`` again and every other case sits at its value ``v_new = C_i
    SILF'`` (0 or ``+-C_i``), so ``a`` is the fixed point ``C SILF'(y - Sigma
    a)`` (on ``Z`` to rounding)."""
    if not np.array_equal(Z_new, Z):
        return False
    off = np.ones(a.shape[0], dtype=bool)
    off[Z] = False
    return bool(np.array_equal(a[off], v_new[off]))


class MapSolve(NamedTuple):
    """One MAP solve of (4.25) by :func:`smo_newton`."""

    dual: SilfDual     #: the solution (``g = Q nu - y`` on return)
    slope: float       #: the outer secant slope, for the next solve
    n_iter: int        #: SMO iterations
    violation: float   #: largest violation of (4.33), measured exactly
    quad: np.ndarray | None  #: ``nu^T dSigma~/d ln theta nu`` (None: not known)
    n_newton: int      #: Newton iterations (0: the SMO alone)


def smo_newton(cache, y, nu, par, eps, beta, tol, max_iter, slope, stiff=False):
    """Solve (4.25) from ``nu``: the SMO (:func:`~bsvm_scale._compiled.smo_silf.smo_silf`)
    for up to :data:`NEWTON_AFTER` ``n`` iterations; if it has not met the
    stopping rule (4.33) by then and the row cache holds every row (so that a
    Newton iteration's products over the support read cached rows instead of
    computing ``n`` kernel values per support vector), :func:`silf_newton` from
    its iterate, and the SMO again from the Newton solution, whose exact start
    pass measures the violation (it has nothing left to do when Newton reached
    the optimum; it goes on from the SMO's own iterate when Newton gave up).
    With ``stiff`` (the previous solve of the search needed Newton: the stiff
    problems come in runs, as the search moves the hyperparameters a little)
    Newton begins at ``nu`` itself, without the SMO's first pass and steps.

    ``cache``: the :class:`~bsvm_scale.inference.covariance.RowCache` holding
    the covariance without its bias term; ``par``: the
    :class:`~bsvm_scale._compiled.smo_silf.SilfParams` of the problem.
    """
    kern, n = cache.kernel, y.shape[0]
    # without every row in the cache the SMO alone solves, as before
    newton = cache.holds_all
    start, n_iter = nu, 0
    if not (stiff and newton):
        dual, q0, nu0 = start_dual_quad(kern, y, nu, par)
        budget = min(max_iter, int(NEWTON_AFTER * n)) if newton else max_iter
        slope, n_iter, vmax = smo_silf(kern, cache.state, dual, par, tol, budget, slope)
        if not (newton and vmax > tol and n_iter < max_iter):
            return _solved(kern, dual, q0, nu0, slope, n_iter, vmax, 0)
        start = dual.nu
    with blas_threads(True):  # the same bits on any number of threads
        res = silf_newton(products(kern, par.kappa_b, cache), y, start, par.box, par.dadd, eps,
                          beta)
    # the SMO's contract: g = Q~ nu - y on entry (one exact pass)
    dual, q0, nu0 = start_dual_quad(kern, y, start if res is None else res.nu, par)
    slope, more, vmax = smo_silf(kern, cache.state, dual, par, tol, max_iter - n_iter, slope)
    return _solved(kern, dual, q0, nu0, slope, n_iter + more, vmax,
                   0 if res is None else res.n_iter)


def _solved(kern, dual, q0, nu0, slope, n_iter, vmax, n_newton):
    """The :class:`MapSolve`, with ``nu^T dSigma~ nu`` from the last start pass."""
    return MapSolve(dual, float(slope), int(n_iter), float(vmax),
                    quad_after_smo(kern, q0, nu0, dual.nu), n_newton)
