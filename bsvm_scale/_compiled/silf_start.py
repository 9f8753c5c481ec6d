"""Warm starts of the BSVR SMO (:mod:`bsvm_scale._compiled.smo_silf`) and the
quadratic term of the evidence gradient from the same kernel values.

After a change of hyperparameters the solver of (4.25) needs ``g = Q~ nu - y``
and LIBSVM's ``G_bar`` (the part of ``Sigma~ nu`` due to the points at a
bound ``|nu_i| = C_i > 0``; a case of weight 0 has ``nu_i = 0`` and is none)
for the new kernel, at the start ``nu``: one parallel pass over the
``n x s`` cross-covariance with the ``s`` support vectors of the start
(:func:`start_dual`). The evidence gradient (4.39)-(4.41) needs
``nu^T (dSigma~/d ln theta_p) nu`` over the support vectors of the solution,
a contraction over ``s x s`` pairs; every kernel value it needs is already
computed by the start pass, so :func:`start_dual_quad` accumulates it there
and :func:`quad_after_smo` moves it from the start to the solution over the
rows the SMO changed::

    Q(nu) = Q(nu0) + sum_{a: delta_a != 0} delta_a (D (nu0 + nu))_a,  delta = nu - nu0

with ``D = dSigma~/d ln theta_p`` (symmetric). These are Python functions over
the compiled kernels of :mod:`bsvm_scale._compiled.covariance`.
"""

from __future__ import annotations

import numpy as np

from .covariance import cov_cross_matvec_dcov, dcov_rows
from .smo_silf import SilfDual

__all__ = ["start_dual", "start_dual_quad", "quad_after_smo"]


def start_dual(kern, y, nu, par):
    """:class:`SilfDual` of a warm start: ``g = Q~ nu - y`` and ``G_bar`` the
    part of ``Sigma~ nu`` from the points at a bound.

    One blocked, parallel pass over the ``n x s`` cross-covariance with the
    support vectors (nothing goes through the row cache, whose rows are
    better spent on the SMO iterations that follow). ``kern`` must be the
    covariance without its bias term (``kappa_b = 0``: ``Sigma~``); ``y`` and
    ``nu`` must hold one value per input of ``kern``; ``nu`` is used in
    place when it is a contiguous float64 array.
    """
    return _start(kern, y, nu, par, False)[0]


def start_dual_quad(kern, y, nu, par):
    """:func:`start_dual` that also returns, from the same kernel values,
    ``q[p] = nu^T (dSigma~/d ln theta_p) nu`` over the support of the start
    (layout ``[ln kappa0, ln w_1..d, ln kappa_b]``, the last entry 0) and a
    copy of the start ``nu``: the quadratic term of the evidence gradient
    (4.39)-(4.41) at the start, which :func:`quad_after_smo` moves to the
    solution."""
    return _start(kern, y, nu, par, True)


def _start(kern, y, nu, par, quad):
    n = kern.X.shape[0]
    if kern.kappa_b != 0.0:
        raise ValueError(f"kern must be the covariance without its bias term (kappa_b=0, "
                         f"the rows of Sigma~); got kappa_b={kern.kappa_b!r}. Pass kappa_b "
                         "in the SilfParams instead.")
    y = np.ascontiguousarray(y, dtype=np.float64)
    nu = np.ascontiguousarray(nu, dtype=np.float64)
    for name, a in (("y", y), ("nu", nu)):
        if a.shape != (n,):
            raise ValueError(f"{name} must hold one value per training input, shape ({n},); "
                             f"got shape {a.shape}.")
    box = par.box
    bound = np.flatnonzero((np.abs(nu) >= box) & (nu != 0.0))
    free = np.flatnonzero((nu != 0.0) & (np.abs(nu) < box))
    rows = np.full(n, -1, dtype=np.int64)
    support = np.flatnonzero(nu != 0.0)
    if quad:
        rows[support] = np.arange(support.size)
    part = np.zeros((support.size if quad else 0, kern.X.shape[1] + 2))
    nu0 = nu.copy() if quad else None
    gbar = cov_cross_matvec_dcov(kern, np.ascontiguousarray(kern.X[bound]),
                                 np.ascontiguousarray(nu[bound]), nu, rows, part)
    g = gbar + cov_cross_matvec_dcov(kern, np.ascontiguousarray(kern.X[free]),
                                     np.ascontiguousarray(nu[free]), nu, rows, part)
    g += par.dadd * nu - y
    return SilfDual(y, nu, g, gbar), part.sum(axis=0), nu0


def quad_after_smo(kern, q0, nu0, nu, max_changed=0.25):
    """``nu^T (dSigma~/d ln theta) nu`` at the solution ``nu`` from the value
    ``q0`` at the start ``nu0`` (:func:`start_dual_quad`; the update of the
    module docstring). Returns None when the SMO changed more than
    ``max_changed`` of the support (then the direct contraction over the
    support costs less)."""
    changed = np.flatnonzero(nu != nu0)
    if changed.size == 0:
        return q0.copy()
    cols = np.flatnonzero((nu0 != 0.0) | (nu != 0.0))
    if changed.size > max_changed * cols.size:
        return None
    r = dcov_rows(kern, changed, cols, np.ascontiguousarray((nu0 + nu)[cols]))
    return q0 + (nu[changed] - nu0[changed]) @ r
