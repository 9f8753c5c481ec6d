"""The pieces of a box-constrained quasi-Newton trust-region step.

The evidence of BSVR (4.38) and BTSVC (5.37) is only piecewise smooth: it
jumps where a case moves between pieces of the loss, while the gradient
(4.39)-(4.42), (5.38)-(5.40) follows the smooth piece. A line search that
meets such a jump keeps shrinking its step and pays a full MAP solve for
every trial. A trust region instead measures every trial step by the
agreement ratio

    rho = (f(x) - f(x + s)) / (m(0) - m(s)),   m(s) = g's + s'Bs / 2,

accepts it when ``rho > ETA`` and resizes the region from ``rho``: one
evaluation per iteration, and a jump costs one rejected step and a smaller
radius instead of a failed line search (Nocedal and Wright, Numerical
Optimization, algorithm 4.1, with the trust region a box of half-width
``radius`` in max-norm).

The step minimises the quadratic model over the intersection of the box prior
and the trust box, ``l <= s <= u``. With ``B = L L'`` this is the bounded
least-squares problem ``min ||L's + L^-1 g||^2 / 2``, solved exactly by
SciPy's ``lsq_linear`` (bounded-variable least squares). ``B`` is a dense
BFGS approximation (a few dozen hyperparameters at most), kept positive
definite by Powell's damping and updated from every finite trial, accepted
or not: on a rejected step at a jump the gradient difference still measures
the curvature of the smooth pieces.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import cho_factor, solve_triangular
from scipy.optimize import lsq_linear

__all__ = ["ETA", "initial_hessian", "check_hessian", "bfgs_update", "model_step", "next_radius",
           "projected_gradient"]

#: smallest agreement ratio at which a step is accepted
ETA = 1e-4
#: below this ratio the radius shrinks to a quarter of the step
SHRINK_BELOW = 0.25
#: above this ratio a step that reached the radius enlarges it by GROW
GROW_ABOVE = 0.75
GROW = 2.0


def initial_hessian(g0, radius, precondition=False):
    """Diagonal first model Hessian: the first step is ``-B0^-1 g0`` scaled so
    that no variable moves by more than ``radius``.

    ``precondition``: ``B0 = c diag(max(1, |g0_i|))``, so that variables with a
    gradient above one move by the same amount and the others in proportion
    (the ln C gradient of BSVR is usually far larger than the rest, thesis
    4.3.3, and would otherwise take the whole first step); else ``B0 = c I``.
    """
    g0 = np.asarray(g0, dtype=float)
    h = np.maximum(1.0, np.abs(g0)) if precondition else np.ones_like(g0)
    biggest = float(np.max(np.abs(g0) / h)) if g0.size else 0.0
    c = biggest / radius if biggest > 0 else 1.0
    return np.diag(c * h)


def check_hessian(B, p):
    """``B`` as a symmetric positive definite ``p x p`` float array (a model
    Hessian given to start a search with), or ValueError."""
    B = np.array(B, dtype=float)
    if B.shape != (p, p):
        raise ValueError(f"hessian must be a ({p}, {p}) array, one row and column per "
                         f"optimisation variable; got shape {B.shape}. Pass None for the "
                         "diagonal first guess.")
    if not np.all(np.isfinite(B)):
        raise ValueError(f"hessian must be finite; got {np.count_nonzero(~np.isfinite(B))} "
                         "non-finite entries. Pass None for the diagonal first guess.")
    asym = float(np.max(np.abs(B - B.T), initial=0.0))
    if asym > 1e-10 * max(float(np.max(np.abs(B), initial=0.0)), np.finfo(float).tiny):
        raise ValueError(f"hessian must be symmetric; the largest difference B - B.T is "
                         f"{asym:.3g}. Pass (B + B.T) / 2.")
    lowest = float(np.linalg.eigvalsh(0.5 * (B + B.T))[0]) if p else 1.0
    if not lowest > 0.0:
        raise ValueError(f"hessian must be positive definite; its smallest eigenvalue is "
                         f"{lowest:.3g}. Pass a quasi-Newton model Hessian (StartResult."
                         "hessian) or None for the diagonal first guess.")
    return 0.5 * (B + B.T)


def bfgs_update(B, s, y, first=False):
    """Damped BFGS update of ``B`` from the step ``s`` and gradient change ``y``.

    Powell's damping replaces ``y`` by ``r = t y + (1 - t) B s`` with ``t``
    chosen so that ``s'r >= 0.2 s'Bs``: ``B`` stays positive definite across
    the evidence's jumps, where ``s'y`` can have either sign. ``first``: the
    initial guess is first rescaled to the curvature measured along ``s``
    (``s'y / s'Bs`` when positive). Returns the new matrix.
    """
    Bs = B @ s
    sBs = float(s @ Bs)
    if not np.all(np.isfinite(y)) or sBs <= 0.0:
        return B
    sy = float(s @ y)
    if first and sy > 0.0:
        B = B * (sy / sBs)
        Bs, sBs = B @ s, sy
    t = 1.0 if sy >= 0.2 * sBs else 0.8 * sBs / (sBs - sy)
    r = t * y + (1.0 - t) * Bs
    B = B - np.outer(Bs, Bs) / sBs + np.outer(r, r) / float(s @ r)
    return 0.5 * (B + B.T)


def model_step(g, B, lower, upper):
    """Minimiser of ``g's + s'Bs / 2`` over ``lower <= s <= upper``.

    Variables with ``lower == upper`` (a box of zero width) are held at that
    value. Returns ``(s, predicted_decrease)`` with ``predicted_decrease =
    -(g's + s'Bs / 2) >= 0``.
    """
    g = np.asarray(g, dtype=float)
    s = np.clip(np.zeros_like(g), lower, upper)
    free = upper > lower
    if np.any(free):
        Bf = B[np.ix_(free, free)]
        gf = g[free] + B[np.ix_(free, ~free)] @ s[~free]
        L, _ = cho_factor(Bf, lower=True)
        L = np.tril(L)
        rhs = -solve_triangular(L, gf, lower=True)
        res = lsq_linear(L.T, rhs, bounds=(lower[free], upper[free]), method="bvls",
                         tol=1e-12)
        s[free] = np.clip(res.x, lower[free], upper[free])
    pred = -(float(g @ s) + 0.5 * float(s @ B @ s))
    return s, max(pred, 0.0)


def next_radius(radius, rho, step, max_radius):
    """Trust radius after a trial step of max-norm ``step`` with agreement
    ratio ``rho`` (``nan`` for a non-finite value): a quarter of the step below
    :data:`SHRINK_BELOW`, doubled (up to ``max_radius``) above
    :data:`GROW_ABOVE` when the step reached the radius, else unchanged."""
    if not np.isfinite(rho) or rho < SHRINK_BELOW:
        return 0.25 * step
    if rho > GROW_ABOVE and step >= 0.99 * radius:
        return min(GROW * radius, max_radius)
    return radius


def projected_gradient(theta, grad, lo, hi):
    """The gradient with the components that push out of the box set to 0."""
    g = np.array(grad, dtype=float)
    g[(theta <= lo) & (g > 0)] = 0.0
    g[(theta >= hi) & (g < 0)] = 0.0
    return g
