"""BTSVC evidence objective: the MAP solve of the dual (5.29) by SMO with
shrinking, and ``theta -> (-ln evidence, gradient, info)`` (5.35)-(5.37) for the
optimiser.

:func:`solve_dual` runs the Numba SMO of :mod:`bsvm_scale._compiled.smo_trig` on a
working problem (cases at ``alpha = 0`` far from violating (5.31) are left out
and checked afterwards); :class:`TrigObjective` (the objective contract of
:mod:`bsvm_scale.optimization.objective`) keeps the row cache and the
last dual solution (the warm start of the next solve) and evaluates the
evidence densely or matrix-free (:mod:`bsvm_scale.inference.evidence_trig`,
:mod:`bsvm_scale.inference.evidence_lowrank`). The estimator is
:class:`bsvm_scale.models.btsvc.BayesianSVC`.
"""

from __future__ import annotations

import time
import warnings

import numpy as np

from .._compiled.smo_trig import TrigDual, chunks_for, f_from_gradient, gradient_from_f, smo_loop
from .blocks import kept_for_final
from .covariance import GaussianCovariance, RowCache
from .evidence_lowrank import EvidenceBudgetError, EvidenceSettings
from .evidence_trig import SMALL_BLOCK, neg_log_evidence
from .map_factor import FactorCovariance, from_factor, sample_check, start_with_factor, trig_route
from .map_lowrank import trig_start
from ..optimization.objective import BestPoint, Evaluation, Warm

__all__ = ["solve_dual", "TrigObjective", "EVIDENCE_MB", "case_weights"]


# -- MAP solve ---------------------------------------------------------------------
#: a case at ``alpha = 0`` whose dual gradient ``y f - 1`` exceeds this is left
#: out of the SMO working problem (shrunk) until the check after the solve
SHRINK_MARGIN = 0.25
#: below this fraction of cases outside the working problem SMO runs on all
SHRINK_MIN_FRACTION = 0.05
#: rounds of shrunk solves before the last one runs on every case
SHRINK_ROUNDS = 8


def _gradient_pass(cov, X, y, alpha, idx, w):
    """Dual gradient ``g_i = y_i f_i - 1 + phi'(alpha_i / w_i)`` (5.23) at the
    cases ``idx``, ``f = Sigma v`` summed over the SVs by the parallel
    cross-covariance pass (O(|idx| m d), outside the row cache)."""
    sv = np.flatnonzero(alpha > 0.0)
    f = (cov.cross_matvec(np.ascontiguousarray(X[idx]), np.ascontiguousarray(X[sv]),
                          y[sv] * alpha[sv]) if sv.size else np.zeros(idx.size))
    g = np.empty(idx.size)
    gradient_from_f(TrigDual(y[idx], w[idx], np.ascontiguousarray(alpha[idx]), g), f)
    return g


def _working_set(alpha, g, w):
    """Cases of the working problem: every SV and every case at ``alpha = 0``
    whose gradient is within :data:`SHRINK_MARGIN` of violating (cases of
    weight 0 only when they are SVs, which they never are)."""
    return np.flatnonzero((alpha > 0.0) | ((g < SHRINK_MARGIN) & (w > 0.0)))


def _round_cases(alpha, g, w):
    """Cases of a shrunk round's working problem (:func:`_working_set`), or
    None (every case) when fewer than :data:`SHRINK_MIN_FRACTION` are left out."""
    idx = _working_set(alpha, g, w)
    n = alpha.shape[0]
    return None if n - idx.size < SHRINK_MIN_FRACTION * n else idx


def _recheck_left_out(cache, dual, idx, tol, before):
    """Bring the gradient of the cases outside ``idx`` up to date in ``dual.g``
    after a round that moved ``alpha[idx]`` from ``before``; True when one of
    them (of positive weight) violates (5.31) by more than ``tol``.

    Their ``alpha`` is 0 and stays so; only ``f = Sigma v`` changes, by the
    covariance with the cases the round moved: ``g_i += y_i sum_j
    Cov(x_i, x_j) y_j (alpha_j - before_j)`` over those ``j`` (one parallel
    pass over the moved cases, typically few after a warm or low-rank
    start), or, when more cases moved than there are SVs, a pass over the SVs
    that rebuilds it."""
    y, w, alpha, g = dual
    out = np.ones(y.shape[0], dtype=bool)
    out[idx] = False
    out = np.flatnonzero(out)
    moved = alpha[idx] != before
    if np.count_nonzero(moved) < np.count_nonzero(alpha > 0.0):
        j = idx[moved]
        if j.size:
            step = y[j] * (alpha[j] - before[moved])
            g[out] += y[out] * cache.covariance.cross_matvec(
                np.ascontiguousarray(cache.X[out]), np.ascontiguousarray(cache.X[j]), step)
    else:
        g[out] = _gradient_pass(cache.covariance, cache.X, y, alpha, out, w)
    return bool(np.any((g[out] < -tol) & (w[out] > 0.0)))


def _smo_on(cache, dual, idx, tol, max_iter):
    """SMO on the cases ``idx`` (every case when ``idx`` is None), in place on
    ``dual.alpha`` and ``dual.g``; a sub-problem gets its own row cache over
    its cases, so rows have the working problem's length."""
    if idx is None:
        return smo_loop(cache.kernel, cache.state, dual, float(tol), int(max_iter),
                        chunks_for(dual.y.shape[0]))
    sub = RowCache(np.ascontiguousarray(cache.X[idx]), cache.covariance, cache.cache_mb)
    part = TrigDual(*(np.ascontiguousarray(a[idx]) for a in dual))
    out = smo_loop(sub.kernel, sub.state, part, float(tol), int(max_iter), chunks_for(idx.size))
    dual.alpha[idx], dual.g[idx] = part.alpha, part.g
    return out


def case_weights(weights, n):
    """The case weights of a solve as a contiguous float64 array: all ones
    (the unweighted dual (5.29), in the same floating-point operations) when
    ``weights`` is None. Validation (:func:`bsvm_scale._util.validation.check_sample_weight`)
    is the estimator's."""
    if weights is None:
        return np.ones(n)
    w = np.ascontiguousarray(weights, dtype=np.float64)
    if w.shape != (n,):
        raise ValueError(f"the case weights must hold one value per case ({n}); got shape "
                         f"{w.shape}.")
    return w


def solve_dual(cache, y, alpha0=None, tol=1e-3, max_iter=1_000_000, shrink=True, weights=None):
    """Solve the BTSVC dual (5.29) by SMO with shrinking (case weights: the
    weighted dual of :mod:`bsvm_scale._compiled.smo_trig`).

    The dual has no upper bound: a shrunk case sits at ``alpha = 0`` and
    adds nothing to ``f = Sigma v``, so no LIBSVM-style ``G_bar`` is needed.
    Cases at ``alpha = 0`` with ``y f - 1 >= SHRINK_MARGIN`` are left out,
    SMO runs on the rest (rows of the working problem's length), then the
    gradient of the left-out cases is brought up to date by one parallel
    pass over the cases the round moved (or over the SVs, when more moved)
    and any that violates (5.31) joins the next round. The result satisfies
    (5.31) on every case.

    Parameters
    ----------
    cache : RowCache
        Row cache over the (standardised) training inputs, current covariance.
    y : ndarray of shape (n,)
        Labels in ``{-1.0, +1.0}``.
    alpha0 : ndarray of shape (n,), optional
        Warm start (e.g. the solution for the previous hyperparameters).
    tol : float
        Tolerance ``tau`` of the stopping rule (5.31).
    max_iter : int
        SMO iteration limit (over all rounds).
    shrink : bool, default=True
        Use the working problem; False runs SMO on every case.
    weights : ndarray of shape (n,), optional
        Case weights ``w_i >= 0`` (the loss of case ``i`` counts ``w_i``
        times); None: all ones. A case of weight 0 is held at ``alpha = 0``
        (also when ``alpha0`` says otherwise).

    Returns
    -------
    dict
        ``alpha``, ``f`` (``f_MP`` at every training point, 5.32), ``n_iter``,
        ``max_violation``, ``status`` (0 converged, 1 iteration limit,
        2 stalled), ``n_active`` (cases in the last working problem).
    """
    y = np.ascontiguousarray(y, dtype=np.float64)
    n = y.shape[0]
    w = case_weights(weights, n)
    alpha = np.zeros(n) if alpha0 is None else np.maximum(np.array(alpha0, dtype=np.float64), 0.0)
    alpha[w <= 0.0] = 0.0
    g = _gradient_pass(cache.covariance, cache.X, y, alpha, np.arange(n), w)
    dual = TrigDual(y, w, alpha, g)
    n_iter, vmax, status, n_active = _rounds(cache, dual, tol, max_iter, shrink)
    f = np.empty(n)
    f_from_gradient(dual, f)
    return {"alpha": alpha, "f": f, "n_iter": int(n_iter), "max_violation": float(vmax),
            "status": int(status), "n_active": int(n_active)}


def _rounds(cache, dual, tol, max_iter, shrink):
    """The shrunk rounds of :func:`solve_dual` and the last one on every case:
    ``(iterations, max violation, status, cases in the last working problem)``."""
    y, w, alpha, g = dual
    n = y.shape[0]
    n_iter, vmax, status, n_active = 0, 0.0, 1, n
    for rnd in range(SHRINK_ROUNDS + 1):
        last = not shrink or rnd == SHRINK_ROUNDS
        idx = None if last else _round_cases(alpha, g, w)
        n_active = n if idx is None else idx.size
        # every case in play (a cold start): a bounded number of iterations,
        # after which g (kept for every case) tells which can be shrunk
        budget = max_iter - n_iter if idx is not None or last else min(max_iter - n_iter, n)
        before = None if idx is None else alpha[idx].copy()
        it, vmax, status = _smo_on(cache, dual, idx, tol, budget)
        n_iter += int(it)
        if status == 2 or n_iter >= max_iter:
            break
        if idx is None:
            if status == 0:
                break
            continue
        violated = _recheck_left_out(cache, dual, idx, tol, before)
        if status == 0 and not violated:
            break
    return n_iter, vmax, status, n_active


#: default memory budget (MiB) of the evidence arrays (dense block or factor)
EVIDENCE_MB = 1024.0


def _best_point(state):
    """The best point of a :meth:`TrigObjective.get_state` dict; its ``f``
    (and the final evaluation made from it) only where the state kept it."""
    info = {"smo_iter": int(state["best_smo_iter"]),
            "smo_start": "factor" if bool(state.get("best_from_factor", False)) else "smo"}
    f = None
    if "best_f" in state:
        f = np.asarray(state["best_f"], dtype=np.float64).copy()
        info.update(smo_start=str(state["best_start"]),
                    smo_violation=float(state["best_violation"]),
                    map_bound=float(state["best_map_bound"]))
    return BestPoint(float(state["best_value"]), np.asarray(state["best_theta"], dtype=float).copy(),
                     np.asarray(state["best_alpha"], dtype=np.float64).copy(), f, info)


class TrigObjective:
    """``theta -> (-ln evidence, gradient, info)`` for :func:`run_start`.

    Keeps one row cache and the last dual solution, which warm-starts the
    SMO solve at the next hyperparameters. ``weights`` (one per case, >= 0;
    None: all ones) weight the cases' losses in the MAP problem, the
    low-rank start and the evidence. ``groups`` (ARD): tied relevance
    weights, one ``ln kappa_g`` per group of inputs in ``theta``
    (:class:`~bsvm_scale.inference.covariance.GaussianCovariance`).
    """

    def __init__(self, X, y, ard, cache_mb=256.0, tol=1e-3, max_iter=1_000_000,
                 evidence=EvidenceSettings(), weights=None, groups=None):
        self.X = np.ascontiguousarray(X, dtype=np.float64)
        self.y = np.ascontiguousarray(y, dtype=np.float64)
        self.w = case_weights(weights, self.y.shape[0])
        self.ard = bool(ard)
        self.groups = groups if self.ard else None
        self.cache_mb = float(cache_mb)
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.cache = None
        self.alpha = np.zeros(self.y.shape[0])
        self.smo_limit_hits = 0
        self.n_smo_iter = 0
        self.best = None  # BestPoint (info: smo_iter) of the lowest value seen
        self.evidence = evidence
        self._pinned = False  # self.alpha was set by restore(): start from it
        self.lowrank_ok = True  # False once a factor was truncated: no more attempts
        self.dcov = None  # FactorCovariance of the last solve when it came from the factor
        self._refactor = False  # restore(): the best point came from the factor, make it again
        self._best_block = None  # the best evaluation's matrix-free SV block (memory: one factor)

    def start(self, cov):
        """The SMO start at new hyperparameters, ``(alpha0, how, low_rank)``:
        the low-rank Newton solution (``low_rank``, its
        :class:`~bsvm_scale.inference.map_lowrank.LowRankStart`) when its factor
        is exact, else the previous
        solution (:func:`bsvm_scale.inference.map_lowrank.choose_start`); after
        :meth:`restore` the restored solution itself. After one truncated
        factor no more are tried (their cost is wasted on such data)."""
        alpha0, how, self.lowrank_ok, low_rank = start_with_factor(
            lambda r, ex: trig_start(cov, self.X, self.y, r, ex, self.w), self.alpha,
            not np.any(self.alpha > 0.0), self._pinned, self.lowrank_ok or self._refactor)
        self._refactor = False
        return alpha0, how, low_rank

    def solve(self, theta):
        """MAP solution at log hyperparameters ``theta`` (warm started)."""
        cov = GaussianCovariance.from_theta(theta, self.ard, self.groups)
        if self.cache is None:
            self.cache = RowCache(self.X, cov, self.cache_mb)
        else:
            self.cache.set_covariance(cov)
        self.dcov = None  # the last factor's memory, before the next one is made
        alpha0, how, low_rank = self.start(cov)
        self._pinned = False
        route = trig_route(low_rank, self.y, self.w, self.tol)
        if route is not None:  # the factor's solution meets (5.31): no SMO
            sol = {"alpha": route.dual, "f": route.f, "n_iter": 0,
                   "max_violation": route.violation, "status": 0, "n_active": 0,
                   "start": f"factor{low_rank.rank}", "map_bound": route.bound}
            self.dcov = FactorCovariance(cov, self.X, low_rank.G, low_rank.resid)
        else:
            sol = solve_dual(self.cache, self.y, alpha0, self.tol, self.max_iter, weights=self.w)
            sol["start"] = how
        if sol["status"] == 1:
            self.smo_limit_hits += 1
        self.alpha = sol["alpha"]
        self.n_smo_iter = sol["n_iter"]
        return cov, sol

    def __call__(self, theta):
        return self.evaluate(theta).as_tuple()

    def final(self, theta):
        """The evaluation a fitted model is made from, without gradient,
        keeping the factor of the SV block. At the best point it is made from
        the best evaluation's own MAP solution: its ``alpha`` and ``f`` as
        kept (no SMO pass), or, from a checkpoint of older code that kept no
        ``f``, re-solved from its ``alpha`` (:meth:`restore`)."""
        theta = np.asarray(theta, dtype=float)
        ev = self._at_best(theta)
        if ev is None:
            self.restore(theta)
            ev = self.evaluate(theta, need_grad=False, keep_factor=True)
        if from_factor(ev.info):  # f from the factor: one exact check
            ev.info["map_check"] = sample_check(ev.detail, self.X, self.y * ev.dual, ev.f)
        return ev

    def _at_best(self, theta):
        """The final evaluation from the best point's kept solution when
        ``theta`` is the best point and its ``f`` is kept, else None. The
        evidence is a function of ``alpha`` and ``f``, so this is the best
        evaluation's value; a re-solve could stop elsewhere within ``tol``."""
        best = self.best
        if best is None or best.f is None or not np.array_equal(best.theta, theta):
            return None
        self.alpha, self.dcov = best.dual.copy(), None  # (dcov: the last solve's factor)
        kept = best.info
        sol = {"alpha": best.dual, "f": best.f, "n_iter": 0,
               "max_violation": kept["smo_violation"], "map_bound": kept["map_bound"],
               "start": kept["smo_start"] if from_factor(kept) else "restored"}
        cov = GaussianCovariance.from_theta(theta, self.ard, self.groups)
        return self._with_evidence(theta, cov, sol, 0.0, False, True, self._best_block)

    def evaluate(self, theta, need_grad=True, keep_factor=False):
        """The :class:`~bsvm_scale.optimization.objective.Evaluation` at
        ``theta``; ``keep_factor``: keep the factor of the SV block in its
        ``info`` (what prediction needs). A rejected step (the evidence
        arrays over ``evidence_mb``) has value ``inf``; at a final
        evaluation (``keep_factor``) it is an error."""
        t0 = time.perf_counter()
        cov, sol = self.solve(theta)
        return self._with_evidence(theta, cov, sol, time.perf_counter() - t0, need_grad,
                                   keep_factor)

    def _with_evidence(self, theta, cov, sol, t_map, need_grad, keep_factor, block=None):
        """:meth:`evaluate` after the MAP solve ``sol`` (``t_map`` seconds);
        ``block``: the SV block already made for it, if any."""
        m = int(np.count_nonzero(sol["alpha"] > 0.0))
        try:
            method, max_rank = self.evidence.plan(m)
        except EvidenceBudgetError as err:
            if keep_factor:
                raise
            warnings.warn(f"{err} The step to {np.round(theta, 3)} is rejected.",
                          RuntimeWarning, stacklevel=3)
            return Evaluation(np.array(theta, dtype=float), np.inf, np.zeros(np.size(theta)),
                              {"n_sv": m, "jitter": 0.0, "smo_iter": sol["n_iter"],
                               "smo_violation": sol["max_violation"], "map_s": t_map,
                               "evidence_s": 0.0, "rejected": str(err)})
        if m >= SMALL_BLOCK:
            # the cached rows are dropped at the next hyperparameters anyway:
            # give their memory to the evidence arrays
            self.release()
        t1 = time.perf_counter()
        value, grad, info, block = neg_log_evidence(
            cov, self.X, self.y, sol["alpha"], sol["f"], need_grad=need_grad,
            keep_factor=keep_factor, method=method, tol=self.evidence.tol, max_rank=max_rank,
            predict_rank=self.evidence.predict_rank(m), weights=self.w, dcov=self.dcov,
            block=block, return_block=True)
        info.setdefault("method", "dense")
        info.setdefault("error", 0.0)
        # wall time of the MAP solve and of the evidence (+ gradient)
        info["map_s"] = t_map
        info["evidence_s"] = time.perf_counter() - t1
        info["smo_iter"] = sol["n_iter"]
        info["smo_violation"] = sol["max_violation"]
        info["smo_start"] = sol["start"]
        info["map_bound"] = sol.get("map_bound", 0.0)
        if np.isfinite(value) and (self.best is None or value < self.best.value):
            # a matrix-free block is kept with the best point: a final evaluation there
            # needs only the prediction factor, which continues its factor
            self._best_block = kept_for_final(block)
            self.best = BestPoint(float(value), np.array(theta, dtype=float), sol["alpha"].copy(),
                                  np.array(sol["f"], dtype=np.float64),
                                  {"smo_iter": int(sol["n_iter"]), "smo_start": sol["start"],
                                   "smo_violation": float(sol["max_violation"]),
                                   "map_bound": float(sol.get("map_bound", 0.0))})
        return Evaluation(np.array(theta, dtype=float), value, grad, info, sol["alpha"],
                          sol["f"], cov)

    def get_state(self):
        """Warm-start state: the SMO vector ``alpha`` and the best point seen.

        Plain arrays and numbers (storable in HDF5); with
        :meth:`set_state` a resumed optimisation continues exactly where the
        recorded one was.
        """
        state = {"alpha": self.alpha.copy(), "smo_limit_hits": int(self.smo_limit_hits),
                 "n_smo_iter": int(self.n_smo_iter), "lowrank_ok": bool(self.lowrank_ok)}
        if self.best is not None:
            state.update(best_value=self.best.value, best_theta=self.best.theta.copy(),
                         best_alpha=self.best.dual.copy(),
                         best_smo_iter=self.best.info["smo_iter"],
                         best_from_factor=from_factor(self.best.info))
            if self.best.f is not None:
                state.update(best_f=self.best.f.copy(), best_start=self.best.info["smo_start"],
                             best_violation=self.best.info["smo_violation"],
                             best_map_bound=self.best.info["map_bound"])
        return state

    def set_state(self, state):
        """Restore a :meth:`get_state` dict (or just ``{"alpha": ...}``)."""
        n = self.y.shape[0]
        alpha = np.asarray(state["alpha"], dtype=np.float64)
        if alpha.shape != (n,) or not np.all(np.isfinite(alpha)):
            raise ValueError(f"the warm-start vector alpha must hold {n} finite values (one per "
                             f"training case); got shape {alpha.shape}. Pass the state recorded "
                             "for the same training data.")
        self.alpha = np.maximum(alpha, 0.0)
        self.smo_limit_hits = int(state.get("smo_limit_hits", 0))
        self.n_smo_iter = int(state.get("n_smo_iter", 0))
        self.lowrank_ok = bool(state.get("lowrank_ok", True))
        self.best = None
        self._best_block = None  # not in a state: made again from alpha and f when needed
        if "best_value" in state:
            self.best = _best_point(state)

    def restart(self, warm=None):
        """Begin another optimiser run from the :class:`~bsvm_scale.optimization.objective.Warm`
        ``warm`` (its dual vector ``alpha``; None: the current one),
        keeping the best point seen so far."""
        if warm is not None and warm.dual is not None:
            self.alpha = np.maximum(np.asarray(warm.dual, dtype=np.float64), 0.0)
        self._pinned = False

    def release(self):
        """Drop the row cache (kept: the best dual solution)."""
        self.cache = None

    def carry(self):
        """The best dual solution, which a larger problem's first solve begins with."""
        return Warm(None if self.best is None else self.best.dual)

    def restore(self, theta):
        """Warm start from the dual solution kept for ``theta`` if it is the
        best point seen, so that re-evaluating there reproduces its evidence
        (the evidence jumps when a marginal SV enters or leaves the set)."""
        if self.best is not None and np.array_equal(self.best.theta,
                                                    np.asarray(theta, dtype=float)):
            self.alpha = self.best.dual.copy()
            # a solution taken from the factor is made again by it, bit for bit
            # (a deterministic function of the hyperparameters and the data)
            self._refactor = from_factor(self.best.info)
            self._pinned = not self._refactor
            return self.best.info["smo_iter"]
        return None

