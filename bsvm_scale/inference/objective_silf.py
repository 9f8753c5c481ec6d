"""BSVR evidence objective: ``theta -> (-ln evidence, gradient, info)`` of
(4.38)-(4.42) at the MAP solution of the dual (4.25).

:class:`SilfObjective` implements the objective contract of
:mod:`bsvm_scale.optimization.objective`: it keeps the row cache and the last
dual vector, warm-starts the Numba SMO of :mod:`bsvm_scale._compiled.smo_silf`
at every new point and evaluates the evidence densely or matrix-free
(:func:`bsvm_scale.inference.evidence_silf.silf_evidence`). The estimator is
:class:`bsvm_scale.models.bsvr.BayesianSVR`.
"""

from __future__ import annotations

import time
import warnings
from typing import NamedTuple

import numpy as np

from .._compiled.smo_silf import silf_params
from .blocks import kept_for_final
from .covariance import GaussianCovariance, RowCache
from .evidence_lowrank import EvidenceBudgetError, EvidenceSettings
from .evidence_silf import silf_evidence
from .map_factor import FactorCovariance, from_factor, sample_check, silf_route, start_with_factor
from .map_lowrank import silf_start
from .map_newton import smo_newton
from ..optimization.objective import BestPoint, Evaluation, Warm

__all__ = ["SilfObjective", "SilfDetail"]


class SilfDetail(NamedTuple):
    """What an evaluation of :class:`SilfObjective` leaves for the fitted
    model: the hyperparameters it was made at and its evidence result
    (:class:`~bsvm_scale.inference.evidence_silf.SilfEvidence`)."""

    C: float
    epsilon: float
    covariance: GaussianCovariance
    evidence: object


class SilfObjective:
    """Objective ``theta -> (-ln evidence, gradient, info)`` for one data set.

    ``theta = [ln C, ln eps, (ln kappa0,) ln kappa | ln kappa_1..d, ln kappa_b]``
    (``ln kappa0`` when ``kappa0`` is None: inferred, not fixed). Keeps the
    row cache and the last dual solution, so each evaluation warm-starts SMO
    from the previous one (clipped to the new box). ``sample_weight``: the
    case weights (float64, finite, ``>= 0``, validated by the caller) or None;
    they give the per-case boxes ``C w_i`` of the dual and the weighted
    evidence (:mod:`bsvm_scale.inference.evidence_silf`). ``groups`` (ARD):
    tied relevance weights, one ``ln kappa_g`` per group of inputs in
    ``theta`` (:class:`~bsvm_scale.inference.covariance.GaussianCovariance`).
    """

    def __init__(self, X, y, kappa0, beta, ard, tol, cache_mb, max_iter,
                 evidence=EvidenceSettings(), sample_weight=None, groups=None):
        self.X, self.y = X, y
        self.sample_weight = sample_weight
        self.evidence = evidence
        self.kappa0, self.beta, self.ard = kappa0, beta, ard
        self.lead = 3 if kappa0 is None else 2  # log hyperparameters before ln kappa
        self.tol, self.max_iter = tol, max_iter
        d = X.shape[1]
        n_kappa = d if groups is None else int(groups.max()) + 1
        self.groups = groups if ard else None
        init = GaussianCovariance(1.0 if kappa0 is None else kappa0,
                                  np.ones(n_kappa) if ard else 1.0, 0.0, self.groups)
        self.cache = RowCache(X, init, cache_mb)
        self.last = None
        self.quad = None  # nu^T dSigma~/d ln theta nu of the last solve (None: not known)
        self.map_bound = 0.0  # bound on |f - Sigma nu| of the last solve (0: exact f)
        self.n_newton = 0  # Newton iterations of the last solve (state: the next hand-over)
        self.reset()

    def reset(self, nu=None):
        """Start SMO afresh (``nu = 0``) or from a stored warm-start vector."""
        self.nu = np.zeros(self.X.shape[0]) if nu is None else np.asarray(nu, dtype=float).copy()
        self.slope = 0.0
        self.nu_C = None  # the C of the box self.nu was solved in
        self.best = None  # BestPoint of the lowest value seen
        self.best_evidence = None  # its matrix-free evidence result (block kept for prediction)
        self.pinned = False  # start the next solve from self.nu as it is
        self.lowrank_ok = True  # False once a factor was truncated: no more attempts

    def restart(self, warm=None):
        """Begin another optimiser run from the :class:`~bsvm_scale.optimization.objective.Warm`
        ``warm`` (its dual vector, None: the current one; its secant slope,
        None: the current one), keeping the best point seen so far."""
        if warm is None:
            return
        if warm.dual is not None:
            best, kept = self.best, self.best_evidence
            self.reset(warm.dual)
            self.best, self.best_evidence = best, kept
        if warm.slope is not None:
            self.slope = float(warm.slope)
        if warm.newton_first:  # as after a solve that needed Newton (smo_newton's stiff)
            self.n_newton = max(self.n_newton, 1)

    def release(self):
        """Nothing to drop: the row cache is reused by the next evaluation."""

    def carry(self):
        """The best dual solution and the last outer secant slope, which a
        larger problem's first solve begins with (the slope does not scale
        with the number of cases)."""
        return Warm(None if self.best is None else self.best.dual, self.slope)

    def box(self, C):
        """The boxes ``|nu_i| <= C_i`` of (4.25): ``C`` itself without case
        weights, else the array ``C w``."""
        return C if self.sample_weight is None else C * self.sample_weight

    def _warm_start(self, C):
        """The previous dual vector in the new box: points that sat at a bound
        stay at the (moved) bound, the others are clipped. Bound SVs are the
        bulk of the support set and rarely leave the bound when ``C`` moves a
        little, so this saves SMO the walk of every one of them to the new
        bound. (A case of weight 0 has ``nu_i = 0`` in either box.)"""
        box = self.box(C)
        nu = np.clip(self.nu, -box, box)
        if self.nu_C is not None:
            at_bound = np.abs(self.nu) >= self.box(self.nu_C)
            nu[at_bound] = np.sign(self.nu[at_bound]) * (box if np.ndim(box) == 0
                                                         else box[at_bound])
        return nu

    def _start(self, C, eps, cov):
        """The SMO start, ``(nu0, how, low_rank)``: the low-rank Newton solution
        (``low_rank``, its :class:`~bsvm_scale.inference.map_lowrank.LowRankStart`)
        when its factor is exact, else the previous one in the new box
        (:func:`bsvm_scale.inference.map_lowrank.choose_start`; no more attempts after
        a truncated factor, nor after a near-exact one where the row cache holds every
        row and Newton's method takes the stiff problems)."""
        nu0, how, self.lowrank_ok, low_rank = start_with_factor(
            lambda r, ex: silf_start(cov, self.X, self.y, C, eps, self.beta, r, ex,
                                     self.sample_weight),
            self._warm_start(C), not np.any(self.nu), self.pinned, self.lowrank_ok,
            retry_near=not self.cache.holds_all)
        return nu0, how, low_rank

    _NOT_STATE = ("X", "y", "sample_weight", "cache", "last", "evidence", "pinned", "quad",
                  "best_evidence",
                  "map_bound")

    def get_state(self):
        """Warm-start state (SMO vector ``nu``, outer secant slope, best point,
        ...: every attribute but the data, the row cache and the last solve),
        copied; :meth:`set_state` restores it exactly."""
        return {k: _copied(v) for k, v in vars(self).items() if k not in self._NOT_STATE}

    def set_state(self, state):
        """Restore a :meth:`get_state` dict (or just ``{"nu": ...}``)."""
        n = self.X.shape[0]
        nu = np.asarray(state["nu"], dtype=float)
        if nu.shape != (n,) or not np.all(np.isfinite(nu)):
            raise ValueError(f"the warm-start vector nu must hold {n} finite values (one per "
                             f"training case); got shape {nu.shape}. Pass the state recorded "
                             "for the same training data.")
        self.reset(nu)
        for k, v in state.items():
            if k not in self._NOT_STATE and k != "nu":
                setattr(self, k, _copied(v))
        self.best = _best_point(self.best, n)

    def _repeat(self, theta, need_grad):
        """True when ``theta`` is the point evaluated last (the MAP solution
        is unique, so the stored evaluation is the answer)."""
        return (self.last is not None and np.array_equal(self.last.theta, theta)
                and (not need_grad or self.last.grad is not None))

    def unpack(self, theta):
        theta = np.asarray(theta, dtype=float)
        C, eps = float(np.exp(theta[0])), float(np.exp(theta[1]))
        k = self.lead
        kappa0 = float(np.exp(theta[2])) if k == 3 else self.kappa0
        kappa = np.exp(theta[k:-1]) if self.ard else float(np.exp(theta[k]))
        return C, eps, GaussianCovariance(kappa0, kappa, float(np.exp(theta[-1])), self.groups)

    def solve(self, C, eps, cov):
        """MAP solution of (4.25) at the given hyperparameters: ``(nu, f,
        bias, n_iter, max_violation, start)`` (``start`` says where SMO began)."""
        # the cache holds rows without the bias term; SMO handles kappa_b exactly
        self.cache.set_covariance(cov.with_bias(0.0))
        nu, how, low_rank = self._start(C, eps, cov)
        self.pinned = False
        par = silf_params(C, eps, self.beta, cov.kappa_b, self.y.shape[0], self.sample_weight)
        route = silf_route(low_rank, self.y, par, self.tol)
        if route is not None:
            return self._take_route(route, low_rank, C, cov)
        self.map_bound = 0.0
        # SMO, and Newton's method where the SMO crawls (map_newton); nu^T dSigma~ nu
        # of the gradient (4.39)-(4.41) from the start pass's kernel values
        res = smo_newton(self.cache, self.y, nu, par, eps, self.beta, self.tol, self.max_iter,
                         self.slope, stiff=self.n_newton > 0)
        dual, n_iter, vmax, self.quad = res.dual, res.n_iter, res.violation, res.quad
        self.n_newton = res.n_newton
        self.slope = res.slope
        self.nu_C = C
        nu = dual.nu
        bias = cov.kappa_b * float(nu.sum())
        f = dual.g + self.y - par.dadd * nu
        self.nu = nu
        return nu, f, float(bias), int(n_iter), float(vmax), how

    def _take_route(self, route, low_rank, C, cov):
        """The solution of :meth:`solve` from the factor, no SMO
        (:func:`bsvm_scale.inference.map_factor.silf_route`); ``nu^T dSigma~
        nu`` of the gradient through the same factor."""
        nu = route.dual
        fc = FactorCovariance(cov, self.X, low_rank.G, low_rank.resid)
        self.quad = fc.bilinear_full(np.arange(nu.shape[0]), nu, nu)
        self.map_bound = route.bound
        self.n_newton = 0
        self.nu, self.nu_C = nu, C
        return (nu, route.f, cov.kappa_b * float(nu.sum()), 0, route.violation,
                f"factor{low_rank.rank}")

    def __call__(self, theta, need_grad=True):
        return self.evaluate(theta, need_grad).as_tuple()

    def evaluate(self, theta, need_grad=True):
        """The :class:`~bsvm_scale.optimization.objective.Evaluation` at
        ``theta`` (a rejected step, the evidence arrays over ``evidence_mb``,
        has value ``inf``)."""
        if self._repeat(theta, need_grad):  # the point just evaluated (the final evaluation)
            last = self.last
            self._keep_best(last.value, last.dual, last.f, theta, last.info,
                            getattr(last.detail, "evidence", None))
            return last
        C, eps, cov = self.unpack(theta)
        t0 = time.perf_counter()
        nu, f, bias, n_iter, vmax, how = self.solve(C, eps, cov)
        t1 = time.perf_counter()
        try:
            ev = silf_evidence(cov, self.X, self.y, nu, f, C, eps, self.beta, need_grad,
                               self.evidence, kappa0_grad=self.lead == 3, quad=self.quad,
                               sample_weight=self.sample_weight)
        except EvidenceBudgetError as err:
            if not need_grad:  # a final evaluation: the fit cannot be made
                raise
            warnings.warn(f"{err} The step to {np.round(theta, 3)} is rejected.",
                          RuntimeWarning, stacklevel=3)
            return Evaluation(np.array(theta, dtype=float), np.inf, np.zeros(np.size(theta)),
                              {"rejected": str(err), "smo_iter": n_iter, "smo_violation": vmax})
        t2 = time.perf_counter()
        box = self.box(C)
        info = {**ev.info(), "n_sv": int(ev.support.size), "n_off_bound": int(ev.off_bound.size),
                "n_on_bound": int(ev.support.size - ev.off_bound.size),
                # the index sets of (4.32) (a case of weight 0 is in I_1)
                "n_I0a": int(np.count_nonzero((nu > 0) & (nu < box))),
                "n_I0b": int(np.count_nonzero((nu < 0) & (nu > -box))),
                "n_I1": int(np.count_nonzero(nu == 0)),
                "n_I2": int(np.count_nonzero((nu <= -box) & (nu != 0))),
                "n_I3": int(np.count_nonzero((nu >= box) & (nu != 0))),
                "smo_iter": n_iter, "smo_violation": vmax, "smo_start": how,
                "newton_iter": self.n_newton,
                "map_bound": self.map_bound,
                "jitter": ev.jitter, "bias": bias,
                # wall time of the MAP solve and of the evidence (+ gradient)
                "map_s": t1 - t0, "evidence_s": t2 - t1}
        self.last = Evaluation(np.array(theta, dtype=float), ev.value, ev.grad, info, nu.copy(),
                               f, SilfDetail(C, eps, cov, ev))
        if not need_grad or np.all(np.isfinite(ev.grad)):  # as run_start counts points
            self._keep_best(ev.value, nu, f, theta, info, ev)
        return self.last

    def _keep_best(self, value, nu, f, theta, info, ev=None):
        """Remember the MAP solution at the lowest ``-ln evidence`` so far, and
        its evidence result when matrix-free (the final evaluation there
        continues its factor for prediction instead of factoring the block again)."""
        if np.isfinite(value) and (self.best is None or value < self.best.value):
            self.best = BestPoint(float(value), np.array(theta, dtype=float), nu.copy(),
                                  f.copy(), dict(info))
            self.best_evidence = ev if kept_for_final(getattr(ev, "block", None)) else None

    def final(self, theta):
        """The evaluation at ``theta`` (as :attr:`last`, without gradient).

        When the best point (:attr:`best`) was made at ``theta`` its MAP
        solution is used as it is. A new SMO solve, even warm-started from
        it, stops anywhere within ``tol`` of the optimum, and the evidence
        (4.38) jumps when a case there crosses between the loss's quadratic
        and linear pieces, so a re-solve could return a model whose evidence
        differs from the best one the optimiser found. Otherwise it re-solves
        warm from the best point's dual vector.
        """
        best = self.best
        theta = np.asarray(theta, dtype=float)
        if best is None:  # no search (fixed hyperparameters): from the current state
            return self.evaluate(theta, need_grad=False)
        if best.f is not None and np.array_equal(best.theta, theta):
            nu, f, info = best.dual, best.f, best.info  # kept arrays are never changed in place
            C, eps, cov = self.unpack(theta)
            ev = self.best_evidence  # the same function of (theta, nu, f), made by the search
            if ev is None:
                ev = silf_evidence(cov, self.X, self.y, nu, f, C, eps, self.beta, False,
                                   self.evidence, kappa0_grad=self.lead == 3,
                                   sample_weight=self.sample_weight)
            if from_factor(info):  # f from the factor: one exact check
                info = {**info, "map_check": sample_check(cov, self.X, nu, f)}
            self.last = Evaluation(theta.copy(), ev.value, None, info, nu, f,
                                   SilfDetail(C, eps, cov, ev))
            return self.last
        self.reset(best.dual)
        self.pinned = True
        return self.evaluate(theta, need_grad=False)


def _best_point(stored, n):
    """A checkpoint's best point (a plain tuple in HDF5) as a :class:`BestPoint`.

    Older checkpoints stored ``(value, nu)`` or ``(value, nu, f, theta,
    info)``; the first is re-solved from ``nu`` (no ``theta``, no ``f``).
    """
    if stored is None or isinstance(stored, BestPoint):
        return stored
    if len(stored) == 2:
        return BestPoint(float(stored[0]), None, np.asarray(stored[1], dtype=float))
    if np.shape(stored[3]) != (n,):  # (value, nu, f, theta, info)
        value, nu, f, theta, info = stored
        return BestPoint(float(value), np.asarray(theta, dtype=float), nu, f, info)
    return BestPoint(*stored)


def _copied(v):
    """Copy of a state value (arrays, and tuples of them, are copied)."""
    if isinstance(v, np.ndarray):
        return v.copy()
    if isinstance(v, (tuple, list)):
        return tuple(_copied(x) for x in v)
    return v
