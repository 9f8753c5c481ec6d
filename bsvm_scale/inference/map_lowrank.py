"""Low-rank Newton starts for the MAP solves of BTSVC (5.29) and BSVR (4.25).

Both MAP problems are, in the primal, ``min_f 1/2 f^T Sigma^-1 f + sum_i
L_i(f_i)`` with a convex loss ``L``: the trigonometric loss (5.7) of the
margin ``y_i f_i`` for BTSVC, ``C`` times the soft insensitive loss (2.28) of
the residual ``y_i - f_i`` for BSVR. Their SMO solvers work on the duals,
two variables at a time, and from ``alpha = 0`` they need many passes over
the data when most cases end up as support vectors (as on overlapping
classes).

With a pivoted-Cholesky (Nystrom) factor ``Sigma ~= G G^T`` of rank ``r``
(:func:`bsvm_scale.inference.pivoted.pivoted_factor`, the same greedy
factorisation the matrix-free evidence uses, here with unit weights) the
primal becomes an ``r``-dimensional smooth problem in ``w`` (``f = G w``)::

    min_w  1/2 ||w||^2 + sum_i L_i((G w)_i)

whose gradient ``w + G^T L'`` and Hessian ``I + G^T diag(L'') G`` cost
``O(n r)`` and ``O(n r^2)``. :func:`newton` minimises it by damped Newton
steps (Armijo backtracking, which also keeps the trigonometric loss finite:
it is ``+inf`` at ``y f <= -1``). The dual variables follow from the
optimality conditions of the duals, ``alpha_i = -L'(y_i f_i)`` (5.9) for
BTSVC and ``nu_i = C SILF'(y_i - f_i)`` (2.29) for BSVR, and start the exact
SMO, whose first step recomputes ``f = Sigma v`` with the exact covariance;
the SMO then removes what the factor left out. The start is used only when
the factor reaches ``tr E <= TRACE_TOL n`` within :data:`MAX_RANK` columns
(:func:`choose_start`): then it is the exact solution up to that residual and
the SMO has almost nothing left to do.

Everything is deterministic: the start is a function of the data and the
hyperparameters alone.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.linalg import cho_factor, cho_solve
from scipy.linalg.blas import dsyrk

from .pivoted import growing_factor, rounding_floor
from .losses import SilfShape, trig_loss, trig_loss_grad, trig_loss_hess

__all__ = ["LowRankStart", "low_rank_factor", "factor_with_residual", "newton", "trig_start",
           "silf_start", "choose_start", "next_start", "TRACE_TOL", "MAX_RANK", "ROUTE_MAX_RANK",
           "NEAR_TOL", "LOWRANK_MIN_N"]

#: the factor counts as exact once its residual trace is at most this times n
TRACE_TOL = 1e-8
#: rank budget of the factor
MAX_RANK = 256
#: rank budget of a factor that is near exact at MAX_RANK (doubled up to this,
#: :func:`factor_with_residual`)
ROUTE_MAX_RANK = 1024
#: near exact: residual trace at most this times ``n (kappa0 + kappa_b)``
NEAR_TOL = 1e-4
#: below this many cases the SMO starts from the previous solution (or zero)
LOWRANK_MIN_N = 3000
#: Newton stops when half the Newton decrement is below this times n
NEWTON_TOL = 1e-12
NEWTON_MAX_ITER = 50
#: ... and ``G G^T dual`` differs from ``f`` by at most this in every case (the
#: factor route, :mod:`bsvm_scale.inference.map_factor`, measures violations there)
NEWTON_F_TOL = 1e-7


class LowRankStart(NamedTuple):
    """A start for SMO: the dual vector and how it was found."""

    dual: np.ndarray   #: alpha (BTSVC) or nu (BSVR), one per case
    f: np.ndarray      #: the low-rank MAP latent function G w
    rank: int          #: columns of the factor
    trace: float       #: tr E, what the factor leaves out
    exact: bool        #: the factor met tr E <= TRACE_TOL n
    n_newton: int      #: Newton iterations
    G: np.ndarray | None = None      #: the factor (n x rank)
    resid: np.ndarray | None = None  #: its residual diagonal E_ii


def low_rank_factor(cov, X, max_rank=MAX_RANK):
    """``(G, tr E, exact)`` of :func:`factor_with_residual`."""
    G, resid, exact = factor_with_residual(cov, X, max_rank)
    return G, float(resid.sum()), exact


def factor_with_residual(cov, X, max_rank=MAX_RANK):
    """``(G, resid, exact)``: the pivoted-Cholesky factor ``Sigma ~= G G^T`` of
    the covariance over the rows of ``X`` and its residual diagonal, taken to
    rounding level or ``max_rank`` columns; ``exact`` when ``tr E <=
    TRACE_TOL n``. A factor that is near exact (:data:`NEAR_TOL`) when it
    reaches ``max_rank`` is continued (budget doubled, up to
    :data:`ROUTE_MAX_RANK`): the factor at rounding level is what lets a
    solution skip the SMO (:mod:`bsvm_scale.inference.map_factor`). ``G`` may
    be a view of a wider array."""
    n = X.shape[0]
    X = np.ascontiguousarray(X, dtype=np.float64)
    near = _near_trace(cov, n)
    budgets = [max_rank]
    while budgets[-1] < ROUTE_MAX_RANK:
        budgets.append(min(2 * budgets[-1], ROUTE_MAX_RANK))
    # near exact at a budget: the spectrum decays fast, and a factor at rounding
    # level lets the solution skip the SMO, so the next budget is tried
    G, _, resid = growing_factor(cov, X, np.ones(n), budgets,
                                 lambda res: float(res.sum()) <= near)
    exact = bool(resid.sum() <= TRACE_TOL * n or G.shape[1] == n
                 or resid.max(initial=0.0) <= rounding_floor(cov, np.ones(1)))
    return G, resid, exact


def _near_trace(cov, n):
    """The residual trace below which a factor of ``n`` cases is near exact."""
    return NEAR_TOL * n * (cov.kappa0 + cov.kappa_b)


def newton(G, loss, max_iter=NEWTON_MAX_ITER):
    """Minimise ``1/2 ||w||^2 + sum loss(G w)`` by damped Newton steps.

    Parameters
    ----------
    G : ndarray of shape (n, r)
    loss : callable
        ``loss(f, order)`` returns the summed loss (``order=0``, ``inf``
        outside its domain) or the per-case first (``1``) or second (``2``)
        derivatives at ``f``; convex, finite at ``f = 0``.
    max_iter : int

    Returns
    -------
    f : ndarray of shape (n,)
        ``G w`` at the last iterate.
    n_iter : int
    """
    n, r = G.shape
    w, f = np.zeros(r), np.zeros(n)
    value = loss(f, 0)
    for it in range(max_iter):
        grad = w + G.T @ loss(f, 1)
        H = _hessian(G, loss(f, 2))
        step = -cho_solve(cho_factor(H, lower=True, check_finite=False), grad,
                          check_finite=False)
        decrement = -float(grad @ step)
        if decrement <= 2.0 * NEWTON_TOL * n and _f_gap(G, grad) <= NEWTON_F_TOL:
            return f, it
        w, f, value = _backtrack(G, loss, w, f, value, step, decrement)
    return f, max_iter


def _hessian(G, h):
    """Lower triangle of ``I + G^T diag(h) G`` over the cases with ``h > 0``
    (the loss is flat elsewhere: beyond the margin for the trigonometric loss,
    outside the quadratic zone for SILF), by one symmetric rank-k update."""
    act = np.flatnonzero(h > 0.0)
    Gh = G[act]
    Gh *= np.sqrt(h[act])[:, None]
    H = dsyrk(1.0, Gh.T, lower=1) if act.size else np.zeros((G.shape[1], G.shape[1]))
    H[np.diag_indices_from(H)] += 1.0
    return H


def _f_gap(G, grad):
    """``max_i |(G grad)_i|``: how far ``f = G w`` is from ``G G^T`` times the
    dual vector of ``f`` (``grad = w - G^T dual``)."""
    return float(np.abs(G @ grad).max(initial=0.0))


def _backtrack(G, loss, w, f, value, step, decrement):
    """Armijo backtracking along ``step`` (halving; infinite values count as
    no decrease)."""
    df = G @ step
    t = 1.0
    for _ in range(60):
        w_new, f_new = w + t * step, f + t * df
        v_new = 0.5 * float(w_new @ w_new) + loss(f_new, 0)
        if v_new <= 0.5 * float(w @ w) + value - 1e-4 * t * decrement:
            return w_new, f_new, v_new - 0.5 * float(w_new @ w_new)
        t *= 0.5
    return w, f, value


def trig_start(cov, X, y, max_rank=MAX_RANK, require_exact=False, weights=None):
    """:class:`LowRankStart` of the BTSVC dual (5.29): ``alpha_i = -w_i L'(y_i
    f_i)`` with ``L`` the trigonometric loss (5.7), ``w`` the case weights
    (None: all ones) and ``f`` the low-rank MAP latent function of ``sum_i w_i
    L(y_i f_i)`` (``Sigma`` includes ``kappa_b``); None when ``require_exact``
    and the factor is not exact. Cases of weight 0 have no loss (whatever
    their ``f``) and ``alpha = 0``."""
    y = np.asarray(y, dtype=np.float64)
    w = np.ones(y.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    on = w > 0.0

    def margin(f):
        """``y f``, and 1 (where ``L = L' = L'' = 0``) for the cases of weight
        0, so that an infinite loss never meets a zero weight."""
        return np.where(on, y * f, 1.0)

    def loss(f, order):
        z = margin(f)
        if order == 0:
            return float(np.sum(w * trig_loss(z)))
        return (w * y) * trig_loss_grad(z) if order == 1 else w * trig_loss_hess(z)

    return _start(cov, X, loss, lambda f: -(w * trig_loss_grad(margin(f))), max_rank,
                  require_exact)


def silf_start(cov, X, y, C, epsilon, beta, max_rank=MAX_RANK, require_exact=False,
               weights=None):
    """:class:`LowRankStart` of the BSVR dual (4.25): ``nu_i = C SILF'(y_i -
    f_i)`` (2.29), in ``[-C, C]``, with ``f`` the low-rank MAP latent function
    of ``C sum SILF(y - f)`` (``Sigma`` includes ``kappa_b``); None when
    ``require_exact`` and the factor is not exact. With case ``weights`` the
    loss is ``C sum w_i SILF(y_i - f_i)`` and ``nu_i = C w_i SILF'(y_i - f_i)``
    in ``[-C w_i, C w_i]`` (:func:`_weighted_silf_start`)."""
    if weights is not None:
        return _weighted_silf_start(cov, X, y, C, epsilon, beta, max_rank, require_exact,
                                    weights)
    y, shape = np.asarray(y, dtype=np.float64), SilfShape.checked(epsilon, beta)

    def loss(f, order):
        if order == 0:
            return C * float(np.sum(shape.value(y - f)))
        if order == 1:
            return -C * shape.grad(y - f)
        return C * shape.hess(y - f)

    return _start(cov, X, loss, lambda f: np.clip(C * shape.grad(y - f), -C, C),
                  max_rank, require_exact)


def _weighted_silf_start(cov, X, y, C, epsilon, beta, max_rank, require_exact, weights):
    """:func:`silf_start` with the per-case ``C_i = C w_i`` (a case of weight 0
    adds nothing to the loss and gets ``nu_i = 0``; weights of 1 give the
    unweighted start bit for bit)."""
    y, shape = np.asarray(y, dtype=np.float64), SilfShape.checked(epsilon, beta)
    w = np.asarray(weights, dtype=np.float64)
    box = C * w

    def loss(f, order):
        if order == 0:
            return C * float(np.sum(w * shape.value(y - f)))
        if order == 1:
            return -C * (w * shape.grad(y - f))
        return C * (w * shape.hess(y - f))

    return _start(cov, X, loss, lambda f: np.clip(C * (w * shape.grad(y - f)), -box, box),
                  max_rank, require_exact)


def _start(cov, X, loss, dual_of, max_rank, require_exact):
    """Factor, Newton on the low-rank primal, dual vector ``dual_of(f)``."""
    G, resid, exact = factor_with_residual(cov, X, max_rank)
    if require_exact and not exact:
        if resid.sum() <= _near_trace(cov, X.shape[0]):
            # near exact at the largest budget: not a start here, but worth trying again
            return LowRankStart(None, None, G.shape[1], float(resid.sum()), False, 0)
        return None
    f, it = newton(G, loss)
    return LowRankStart(np.ascontiguousarray(dual_of(f), dtype=np.float64), f, G.shape[1],
                        float(resid.sum()), exact, it, G, resid)


def choose_start(low_rank, warm, cold):
    """The SMO start at new hyperparameters: ``(dual0, how, exact)``.

    From :data:`LOWRANK_MIN_N` cases on, the low-rank Newton solution
    replaces the previous solution ``warm`` (or zero) when its factor is
    exact (``tr E <= TRACE_TOL n`` within :data:`MAX_RANK` columns: smooth
    kernels on few inputs, where the SMO would walk tens of thousands of
    pairs and from the start has next to nothing left to do). A truncated
    factor is not used: its start is not reliably closer to the optimum than
    the previous solution, and its Newton steps cost more than the SMO
    iterations they could save (docs/design/lowrank_map_start.md).
    ``exact`` is None when no factor was tried, else whether it was exact
    (callers stop trying after a truncated one). The choice depends only on
    the hyperparameters, the data and ``warm``, so resume and replay stay
    exact.

    Parameters
    ----------
    low_rank : callable
        ``low_rank(max_rank, require_exact)`` -> :class:`LowRankStart` or None
        (:func:`trig_start` or :func:`silf_start` with the problem bound).
    warm : ndarray of shape (n,)
        The previous solution, moved into the current feasible set.
    cold : bool
        True when there is no previous solution (``warm`` is zero).
    """
    how = "zero" if cold else "warm"
    if warm.shape[0] < LOWRANK_MIN_N:
        return warm, how, None
    st = low_rank(MAX_RANK, True)
    if st is None:
        return warm, how, False
    if not st.exact:  # near exact: tried again at the next hyperparameters
        return warm, how, None
    return st.dual, f"lowrank{st.rank}", True


def next_start(low_rank, warm, cold, pinned, enabled, retry_near=True):
    """The start policy both objectives share: ``(dual0, how, enabled)``.

    ``pinned``: the previous solution was restored (re-evaluating the best
    point must reproduce it), so it is the start. ``enabled`` False: a factor
    was truncated before, no more are tried. Otherwise :func:`choose_start`,
    and the returned ``enabled`` turns False after a truncated factor, and
    after a near-exact one that was still not exact at :data:`ROUTE_MAX_RANK`
    columns unless ``retry_near`` (the caller has no other way through stiff
    problems; BSVR with every row in the row cache has Newton's method,
    :mod:`bsvm_scale.inference.map_newton`).
    """
    if pinned:
        return warm, "restored", enabled
    if not enabled:
        return warm, "zero" if cold else "warm", enabled
    dual0, how, exact = choose_start(low_rank, warm, cold)
    return dual0, how, bool(exact) or (exact is None and retry_near)
