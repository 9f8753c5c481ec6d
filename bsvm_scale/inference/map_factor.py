"""MAP solutions that stay in the pivoted-Cholesky feature space, with a bound.

The low-rank Newton start (:mod:`bsvm_scale.inference.map_lowrank`) solves the
MAP problems of BSVR (4.25) and BTSVC (5.29) in the primal with ``Sigma``
replaced by its greedy pivoted-Cholesky factor ``G G^T`` (``kappa_b``
included). On inputs of low dimension that factor reaches rounding level in a
few dozen to a few hundred columns, and the Newton solution is then the MAP
solution up to what the factor leaves out, ``E = Sigma - G G^T``. Until now the
SMO still started with one exact pass ``f = Sigma v`` over every case and every
support vector (``O(n m)``, ``n^2`` when most cases are SVs), and the evidence
gradient contracted ``dSigma`` over every pair of SVs. This module replaces
both by ``O(n r)`` work with a bound that says how far the result can be from
the exact one, and the objectives skip the SMO when the bound shows it has
nothing to do.

Bound on ``f``. ``E`` is positive semidefinite (a Schur complement of
``Sigma``), and the factor knows its diagonal (the residual ``E_ii``). For the
dual vector ``v`` (``nu`` of (4.25); ``y alpha`` of (5.29)) the exact latent
function is ``Sigma v = G (G^T v) + E v``, and by Cauchy-Schwarz in the
semi-inner product of ``E``::

    |(E v)_i| <= sqrt(E_ii) sqrt(v^T E v) <= sqrt(max_i E_ii * tr E) ||v||_2

(``v^T E v <= lambda_max(E) ||v||^2 <= tr E ||v||^2``). The stopping rules
(4.33) and (5.31) bound per-case violations that move by at most ``|df_i|``
when ``f`` moves (each is a margin in units of ``f``), so the violation
measured with ``f^ = G G^T v`` plus that bound is a bound on the exact
violation. When it is within the solver's tolerance ``tau`` the solution
meets the same stopping rule as an SMO solution, and no SMO is run
(:func:`silf_route`, :func:`trig_route`).

Gradient contractions. The evidence gradients need ``p^T (dSigma/d ln
theta_k) v`` ((4.39)-(4.41) with ``p = v = nu``; (5.36)/(5.37) with ``p = v +
u``). For the Gaussian covariance (4.3)/(4.42), ``dK_ij/d ln w_l = -w_l/2
(x_il - x_jl)^2 K_ij``; expanding the square gives three bilinear forms with
the covariance itself::

    p^T dK_l v = -w_l/2 [ (p x_l^2)^T K v + p^T K (v x_l^2) - 2 (p x_l)^T K (v x_l) ]

(``p x_l``: the elementwise product with input ``l``, centred first, which
leaves the distances unchanged). Each ``a^T K b`` is ``(G^T a).(G^T b) -
kappa_b (1^T a)(1^T b) + a^T E b`` with ``|a^T E b| <= tr E ||a|| ||b||``:
:class:`FactorCovariance` computes them in ``O(n r d)`` and reports that bound.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .._compiled.silf_inner import max_violation as _silf_max_violation
from .map_lowrank import next_start

__all__ = ["FactorCovariance", "Route", "start_with_factor", "from_factor", "residual_bound",
           "silf_route", "trig_route", "sample_check", "N_CHECK"]

#: cases whose exact ``f`` the final check computes
N_CHECK = 1000


class Route(NamedTuple):
    """A MAP solution taken from the factor: the dual vector, ``f^ = G G^T v``,
    the violation of the stopping rule measured with ``f^`` and the bound on
    ``|f^ - Sigma v|``."""

    dual: np.ndarray
    f: np.ndarray
    violation: float
    bound: float


class _KeptStart:
    """A low-rank start maker (``make(max_rank, require_exact)``) that keeps the
    last start it made."""

    def __init__(self, make):
        self.make, self.last = make, None

    def __call__(self, max_rank, require_exact):
        self.last = self.make(max_rank, require_exact)
        return self.last


def start_with_factor(make, warm, cold, pinned, enabled, retry_near=True):
    """:func:`bsvm_scale.inference.map_lowrank.next_start` that also returns the
    :class:`~bsvm_scale.inference.map_lowrank.LowRankStart` it used (None when
    the start is not the low-rank one), whose factor a route can certify:
    ``(dual0, how, enabled, low_rank)``."""
    kept = _KeptStart(make)
    dual0, how, enabled = next_start(kept, warm, cold, pinned, enabled, retry_near)
    return dual0, how, enabled, (kept.last if how.startswith("lowrank") else None)


def from_factor(info):
    """True when the evaluation of ``info`` took its MAP solution from the factor."""
    return str(info.get("smo_start", "")).startswith("factor")


def residual_bound(resid, v):
    """``sqrt(max_i E_ii tr E) ||v||``: the bound on ``|(E v)_i|`` (module
    docstring) from the factor's residual diagonal ``resid``."""
    if resid.size == 0:
        return 0.0
    e = np.maximum(resid, 0.0)
    return float(np.sqrt(float(e.max()) * float(e.sum())) * np.linalg.norm(v))


def _factor_f(st, v):
    """``(f^, bound)``: ``G (G^T v)`` and :func:`residual_bound`."""
    return st.G @ (st.G.T @ v), residual_bound(st.resid, v)


def silf_route(st, y, par, tol):
    """The BSVR solution of a low-rank start ``st`` as a :class:`Route` when
    its violation of (4.33), measured with ``f^`` and widened by the bound,
    is at most ``tol``; else None. ``par``: the
    :class:`~bsvm_scale._compiled.smo_silf.SilfParams` of the problem."""
    if st is None or st.G is None:
        return None
    nu = st.dual
    f, bound = _factor_f(st, nu)
    g = f - y + par.dadd * nu  # the dual gradient Q nu - y of (4.30)
    vmax = float(_silf_max_violation(g, nu, par.box, par.eps1))
    return Route(nu, f, vmax, bound) if vmax + bound <= tol else None


def trig_route(st, y, w, tol):
    """The BTSVC solution of a low-rank start ``st`` as a :class:`Route` when
    its violation of (5.31) (``g_i = y_i f_i - 1 + phi'(alpha_i / w_i)``,
    :mod:`bsvm_scale._compiled.smo_trig`), measured with ``f^`` and widened by
    the bound, is at most ``tol``; else None."""
    if st is None or st.G is None:
        return None
    alpha = st.dual
    f, bound = _factor_f(st, y * alpha)
    on = w > 0.0
    slack = np.zeros_like(alpha)
    slack[on] = 4.0 / np.pi * np.arctan(2.0 * alpha[on] / (np.pi * w[on]))
    g = y * f - 1.0 + slack
    viol = np.where(alpha > 0.0, np.abs(g), np.maximum(-g, 0.0))
    vmax = float(viol[on].max()) if np.any(on) else 0.0
    return Route(alpha, f, vmax, bound) if vmax + bound <= tol else None


def sample_check(cov, X, v, f, n_check=N_CHECK):
    """``max |Sigma v - f|`` over ``n_check`` evenly spaced cases (all when
    fewer), with the exact covariance: the check a factor-route solution gets
    once, at the end of a fit (one pass of ``n_check`` rows over the SVs)."""
    n = X.shape[0]
    rows = np.unique(np.linspace(0, n - 1, min(n, n_check)).astype(np.int64))
    sv = np.flatnonzero(v != 0.0)
    if sv.size == 0:
        return float(np.abs(f[rows]).max()) if rows.size else 0.0
    exact = cov.cross_matvec(np.ascontiguousarray(X[rows]), np.ascontiguousarray(X[sv]), v[sv])
    return float(np.abs(exact - f[rows]).max())


class FactorCovariance:
    """The gradient contractions of :class:`~bsvm_scale.inference.covariance.GaussianCovariance`
    through a factor ``Sigma ~= G G^T`` of it (``kappa_b`` included) over the
    rows of ``X``, each with a bound on its error (module docstring).

    Parameters
    ----------
    cov : GaussianCovariance
    X : ndarray of shape (n, d)
    G : ndarray of shape (n, r)
    resid : ndarray of shape (n,)
        The factor's residual diagonal ``E_ii``.

    Attributes
    ----------
    error : ndarray or None
        Bound on the error of each entry of the last contraction (full
        layout ``[ln kappa0, ln w_1..d, ln kappa_b]``).
    """

    def __init__(self, cov, X, G, resid):
        self.cov, self.X, self.G, self.resid = cov, X, G, resid
        self.error = None

    def bilinear_full(self, idx, p, v):
        """``p^T (dSigma/d ln theta_k) v`` over the rows ``idx`` in the full
        layout ``[ln kappa0, ln w_1..d, ln kappa_b]`` (``p``, ``v`` of length
        ``idx.size``); sets :attr:`error`."""
        X = self.X[idx]
        weight = np.abs(p) + np.abs(v)
        X = X - (weight @ X) / max(float(weight.sum()), 1e-300)  # distances unchanged
        cols = _columns(p, v, X)
        B = self.G[idx].T @ cols  # r x (2 + 4d)
        s = cols.sum(axis=0)
        kb = self.cov.kappa_b
        norms = np.linalg.norm(cols, axis=0)
        lam = float(np.maximum(self.resid[idx], 0.0).sum())  # >= lambda_max(E_idx)

        def form(a, b):
            return float(B[:, a] @ B[:, b]) - kb * s[a] * s[b]

        d = X.shape[1]
        w = self.cov.weights(d)
        q = np.empty(d + 2)
        err = np.empty(d + 2)
        q[0], err[0] = form(0, 1), lam * norms[0] * norms[1]
        for l in range(d):
            p2, v2, p1, v1 = 2 + l, 2 + d + l, 2 + 2 * d + l, 2 + 3 * d + l
            q[1 + l] = -0.5 * w[l] * (form(p2, 1) + form(0, v2) - 2.0 * form(p1, v1))
            err[1 + l] = 0.5 * w[l] * lam * (norms[p2] * norms[1] + norms[0] * norms[v2]
                                             + 2.0 * norms[p1] * norms[v1])
        q[-1], err[-1] = kb * s[0] * s[1], 0.0
        self.error = err
        return q

    def bilinear_grad(self, X, idx, p, v):
        """``p^T (dSigma_M/d theta_k) v`` over the rows ``idx`` in the layout of
        ``cov.theta``, as :meth:`GaussianCovariance.bilinear_grad` (``X``
        must be the factor's inputs)."""
        if X is not self.X and X.shape != self.X.shape:
            raise ValueError("FactorCovariance.bilinear_grad: X is not the factor's inputs.")
        return self.cov._collapse(self.bilinear_full(np.asarray(idx), p, v))


def _columns(p, v, X):
    """``[p, v, p x_l^2.., v x_l^2.., p x_l.., v x_l..]`` as the columns of one array."""
    X2 = X * X
    return np.column_stack([p, v, p[:, None] * X2, v[:, None] * X2, p[:, None] * X,
                            v[:, None] * X])
