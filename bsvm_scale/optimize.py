"""Evidence maximisation driver shared by every Bayesian model.

The models supply an objective ``theta -> (value, gradient, info)`` where
``theta`` is the vector of log hyperparameters (possibly with some entries
reparametrised, see the models), ``value = -ln P(D | theta)`` and ``info`` a
small dict of diagnostics (SV counts, jitter used, ...). This module runs
SciPy's L-BFGS-B on it from one or several starting points, inside a box prior,
keeps the trajectory of every start and returns the start with the highest
evidence (thesis 4.3.2: several starts, the best evidence kept).

Optimiser options are passed straight through to
``scipy.optimize.minimize(method="L-BFGS-B", options=...)``.

Non-finite objective values are never passed to the optimiser: the step is
rejected by returning a value worse than every value seen so far (with a zero
gradient), which makes the line search backtrack, and the event is counted
and reported with a warning.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import minimize

__all__ = ["StartResult", "run_start", "best_start", "DEFAULT_OPTIONS", "STALL_OPTIONS",
           "FINE_MAX_STEP", "FINE_FIRST_STEP", "subsample_indices", "unrefined_record"]

DEFAULT_OPTIONS = {"maxiter": 100, "ftol": 1e-6, "gtol": 1e-4}
#: BTSVC's default stall rule (see :func:`run_start`): stop once 5 evaluations
#: in a row have not improved -ln evidence by 1e-5 relative (the MAP solution,
#: and so the evidence, is known only to the SMO tolerance). Not BSVR's: it
#: ended ARD starts early on Boston (22 nats lower on average)
STALL_OPTIONS = {"stall_rtol": 1e-5, "stall_evals": 5}
#: largest move of any log hyperparameter in the first step of the full-data
#: phase of coarse-to-fine starts: on diamonds the best point along that
#: first direction lay 0.08 (20,000 cases) and 0.17 (50,000) from the
#: subsample optimum, and a first trial at the trust radius (0.5) was worse
#: than the start by 2,055 and 384 nats (one wasted full-data evaluation)
FINE_FIRST_STEP = 0.2
#: trust radius (max-norm, log units) of the full-data phase of coarse-to-fine
#: starts: it begins at the subsample optimum, which is close, and its first
#: L-BFGS-B step (gradients about n / subsample size times larger than on the
#: subsample) must not jump away from it
FINE_MAX_STEP = 0.5


@dataclass
class StartResult:
    """Outcome of one start of the evidence maximisation.

    Attributes
    ----------
    theta0, theta : ndarray
        Starting and final optimisation variables.
    fun : float
        ``-ln P(D | theta)`` at ``theta``.
    grad : ndarray
        Gradient at ``theta``.
    info : dict
        Diagnostics returned by the objective at ``theta``.
    n_iter, n_eval : int
        L-BFGS-B iterations and objective evaluations.
    success : bool
        SciPy's convergence flag.
    message : str
        SciPy's message.
    trajectory : list of dict
        One record per objective evaluation: ``theta``, ``fun``, ``grad``,
        ``grad_norm`` (projected onto the box), the objective's ``info`` and
        ``replayed`` (answered from ``replay``).
    n_nonfinite : int
        Evaluations whose value was not finite (rejected steps).
    n_rejected : int
        Trial points outside the trust radius (not evaluated).
    n_replayed : int
        Evaluations answered from a recorded run (``replay``).
    """

    theta0: np.ndarray
    theta: np.ndarray
    fun: float
    grad: np.ndarray
    info: dict
    n_iter: int
    n_eval: int
    success: bool
    message: str
    trajectory: list = field(default_factory=list)
    n_nonfinite: int = 0
    n_rejected: int = 0
    n_replayed: int = 0


def _projected_grad_norm(theta, grad, bounds):
    """Infinity norm of the gradient projected onto the box (L-BFGS-B's pgtol)."""
    g = np.array(grad, dtype=float)
    if bounds is not None:
        lo = np.array([b[0] if b[0] is not None else -np.inf for b in bounds])
        hi = np.array([b[1] if b[1] is not None else np.inf for b in bounds])
        g[(theta <= lo) & (g > 0)] = 0.0
        g[(theta >= hi) & (g < 0)] = 0.0
    return float(np.max(np.abs(g))) if g.size else 0.0


def run_start(objective, theta0, bounds=None, options=None, callback=None, max_step=None,
              precondition=False, normalize=False, replay=None, first_step=None):
    """Minimise ``objective`` from ``theta0`` with L-BFGS-B.

    Parameters
    ----------
    objective : callable
        ``theta -> (value, gradient, info)``.
    theta0 : array-like
        Starting point (clipped into ``bounds``).
    bounds : sequence of (low, high) or None
        Box prior on the variables.
    options : dict, optional
        Passed to SciPy's L-BFGS-B (defaults :data:`DEFAULT_OPTIONS`).
    callback : callable, optional
        Called as ``callback(record)`` after every evaluation (replayed ones
        included, flagged ``record["replayed"]``), with the trajectory record
        (used for checkpointing).
    max_step : float, optional
        Trust radius: a trial point farther than ``max_step`` (max-norm) from
        the best point so far is not evaluated; it gets a value worse than any
        seen (zero gradient), so the line search backtracks towards the best
        point. Guards against wild first steps when one gradient component
        dominates (the ln C remark of thesis 4.3.3).
    precondition : bool, default=False
        Optimise ``u_i = s_i theta_i`` with ``s_i = max(1, sqrt(|g_i|))`` from
        the gradient at ``theta0``, which evens out the gradient components
        (the ln C gradient is usually far larger than the others, thesis
        4.3.3) so that L-BFGS-B's first steps do not run along ln C alone.
        Values, gradients and trajectories are reported in ``theta``.
    normalize : bool, default=False
        Divide the objective (and ``gtol``) by ``max(1, |g(theta0)|_inf)``
        (by ``|g(theta0)|_inf / max_step`` with a trust radius below 1):
        L-BFGS-B's first step is ``-g`` (unit initial Hessian), which for a
        steep start throws the variables to a corner of the box; scaled, the
        first step moves no variable by more than one unit (or ``max_step``
        or ``first_step`` when smaller: a first step beyond the trust radius
        would be rejected, and the line search then backtracks to a
        vanishing step). With ``precondition`` the bound applies to the
        preconditioned step ``g_i / s_i^2``. The evaluation
        at ``theta0`` is made once and reused (as every point L-BFGS-B asks
        for twice in a row). Values, gradients and trajectories are reported
        unscaled.
    first_step : float, optional
        With ``normalize``: the largest move of any variable in the first
        step, when smaller than 1 and ``max_step``.
    replay : sequence of dict, optional
        Evaluations recorded by ``callback`` in an interrupted run of the same
        start (keys ``theta``, ``fun``, ``grad``, ``info``). L-BFGS-B is
        deterministic, so it asks for the recorded points again in order;
        they are answered from the record without calling ``objective``,
        and the run continues exactly as the uninterrupted one would (exact
        resume). The caller restores the objective's own state (e.g. the SMO
        warm start) to what it was after the last recorded evaluation. Should
        a requested point differ from the record, replay stops there and the
        objective is evaluated.

    ``options`` may also hold ``min_step``: a trial point closer than
    ``min_step`` (max-norm, but not equal) to the best point so far is not
    evaluated; it gets the best point's value and gradient, so a line search
    that keeps shrinking its step (as it does on an objective that is only
    piecewise smooth or known to a tolerance) fails at once and L-BFGS-B
    ends, instead of paying full evaluations for steps that cannot matter.

    Besides SciPy's options, ``options`` may hold ``stall_rtol`` and
    ``stall_evals``: the start stops (successfully) once ``stall_evals``
    consecutive finite evaluations have not lowered the best value by more
    than ``stall_rtol * max(1, |best|)``. When the objective is only
    piecewise smooth (a MAP solution to a tolerance, a support set that
    changes with ``theta``) L-BFGS-B's line search otherwise spends up to
    ``maxls`` evaluations per iteration on changes far below any meaningful
    difference in evidence. The rule depends only on the sequence of values,
    so it is replayed exactly.

    Returns
    -------
    StartResult
    """
    theta0 = np.asarray(theta0, dtype=float).copy()
    if bounds is not None:
        lo = [b[0] for b in bounds]
        hi = [b[1] for b in bounds]
        theta0 = np.clip(theta0, lo, hi)
    opts = dict(DEFAULT_OPTIONS)
    opts.update(options or {})
    gtol = float(opts["gtol"])
    stall = (opts.pop("stall_rtol", None), opts.pop("stall_evals", None))
    stall = None if None in stall else (float(stall[0]), int(stall[1]))
    min_step = opts.pop("min_step", None)
    min_step = None if min_step is None else float(min_step)
    replay = list(replay or [])
    state = {"best": None, "trajectory": [], "nonfinite": 0, "rejected": 0, "replayed": 0,
             "stall_best": None, "stall_count": 0, "nit": 0}

    def worse():
        worst = max((r["fun"] for r in state["trajectory"] if np.isfinite(r["fun"])),
                    default=0.0)
        return abs(worst) * 10.0 + 1e10

    def fun(theta):
        if (max_step is not None and state["best"] is not None
                and np.max(np.abs(theta - state["best"][0])) > max_step):
            state["rejected"] += 1
            return worse(), np.zeros_like(theta)
        if (min_step is not None and state["best"] is not None
                and 0.0 < np.max(np.abs(theta - state["best"][0])) < min_step):
            # a line search shrinking its step below min_step: answer with the
            # best point (no decrease), so it gives up instead of evaluating
            # points that differ only by the MAP solve's tolerance
            return state["best"][1], state["best"][2].copy()
        last = state["trajectory"][-1] if state["trajectory"] else None
        if last is not None and np.array_equal(theta, last["theta"]):
            # L-BFGS-B asks again for the point it was just given (line searches
            # do): the answer is the stored one, not recorded twice, so a
            # resumed run (whose objective no longer holds it) agrees exactly
            if np.isfinite(last["grad_norm"]):
                return last["fun"], last["grad"].copy()
            return worse(), np.zeros_like(theta)
        value, grad, info, replayed = _evaluate(objective, theta, replay, state)
        grad = np.asarray(grad, dtype=float)
        finite = np.isfinite(value) and np.all(np.isfinite(grad))
        record = {"theta": np.array(theta, dtype=float), "fun": float(value),
                  "grad_norm": _projected_grad_norm(theta, grad, bounds) if finite else np.inf,
                  "info": dict(info), "grad": grad.copy(), "replayed": replayed}
        state["trajectory"].append(record)
        if callback is not None:
            callback(record)
        if not finite:
            state["nonfinite"] += 1
            return worse(), np.zeros_like(theta)
        if state["best"] is None or value < state["best"][1]:
            state["best"] = (np.array(theta, dtype=float), float(value), grad.copy(), dict(info))
        if stall is not None and _stalled(state, float(value), *stall):
            raise _Stalled
        return float(value), grad

    scale = np.ones_like(theta0)
    fscale = 1.0
    if precondition or normalize:
        _, g0 = fun(theta0)
        if np.all(np.isfinite(g0)):
            scale = np.maximum(1.0, np.sqrt(np.abs(g0))) if precondition else scale
            # first step -g / fscale: at most one unit, or max_step if smaller
            limit = min([1.0] + [float(v) for v in (max_step, first_step) if v is not None])
            step = np.abs(g0) / scale ** 2  # the first step in theta, unnormalised
            fscale = float(max(1.0, np.max(step) / limit)) if normalize else 1.0
        opts["gtol"] = opts["gtol"] / fscale  # tolerance on the unscaled gradient

    u0 = theta0 * scale

    def fun_u(u):
        # theta0 itself for the first point: (theta0 * scale) / scale can differ
        # from theta0 in the last bit, which would cost a second full evaluation
        theta = theta0 if np.array_equal(u, u0) else u / scale
        value, grad = fun(theta)
        return value / fscale, grad / (scale * fscale)

    ubounds = None if bounds is None else [
        (None if lo is None else lo * sc, None if hi is None else hi * sc)
        for (lo, hi), sc in zip(bounds, scale)]
    def count(_xk):
        state["nit"] += 1

    try:
        res = minimize(fun_u, u0, jac=True, method="L-BFGS-B", bounds=ubounds,
                       options=opts, callback=count)
        nit, nfev, success, message = res.nit, res.nfev, res.success, res.message
    except _Stalled:
        nit, nfev, success = state["nit"], len(state["trajectory"]), True
        message = (f"STOP: the best value improved by less than stall_rtol={stall[0]:g} "
                   f"(relative) over the last {stall[1]} evaluations")
    if state["best"] is None:
        reasons = [r["info"]["rejected"] for r in state["trajectory"]
                   if isinstance(r.get("info"), dict) and "rejected" in r["info"]]
        why = (f" The last point was rejected because {reasons[-1][:1].lower()}{reasons[-1][1:]}"
               if reasons else " Check the data and the starting values.")
        raise FloatingPointError(
            "the evidence was not finite at any point tried from theta0="
            f"{np.array2string(theta0, precision=4)}.{why}"
        )
    theta, value, grad, info = state["best"]
    if state["nonfinite"]:
        success, message = _after_nonfinite(state["nonfinite"], theta, grad, bounds, gtol,
                                            success, message)
    return StartResult(theta0=theta0, theta=theta, fun=value, grad=grad, info=info,
                       n_iter=int(nit), n_eval=int(nfev), success=bool(success),
                       message=str(message), trajectory=state["trajectory"],
                       n_nonfinite=state["nonfinite"], n_rejected=state["rejected"],
                       n_replayed=state["replayed"])


def _after_nonfinite(n_nonfinite, theta, grad, bounds, gtol, success, message):
    """Warn about rejected non-finite evaluations; a start that then stopped
    away from a stationary point is reported as not successful.

    L-BFGS-B can take the rejected steps (a huge value, zero gradient) for a
    stalled line search and claim convergence at a point whose gradient is
    not small; that claim is withdrawn here.
    """
    gnorm = _projected_grad_norm(theta, grad, bounds)
    text = f"{n_nonfinite} evidence evaluation(s) were not finite and the steps were rejected"
    if gnorm > gtol and str(message).startswith("CONVERGENCE"):
        success = False
        message = (f"STOP: non-finite evidence values; the projected gradient at the best point "
                   f"is {gnorm:.3g} > gtol={gtol:g} (not a maximum of the evidence)")
        text += (f"; the optimiser then stopped where the projected gradient is {gnorm:.3g} > "
                 f"gtol={gtol:g}, so the evidence may not be maximised (other starts, a "
                 "smaller box or a larger tol may avoid the failing region)")
    warnings.warn(text + ".", RuntimeWarning, stacklevel=3)
    return success, message


class _Stalled(Exception):
    """Raised inside the objective to end a start by the stall rule."""


def _stalled(state, value, rtol, n_evals):
    """Stall rule of :func:`run_start`: True after ``n_evals`` consecutive
    values that do not improve the reference value by ``rtol`` (relative)."""
    ref = state["stall_best"]
    if ref is None or value < ref - rtol * max(1.0, abs(ref)):
        state["stall_best"], state["stall_count"] = value, 0
        return False
    state["stall_count"] += 1
    return state["stall_count"] >= n_evals


def _evaluate(objective, theta, replay, state):
    """``objective(theta)``, or the next recorded evaluation while L-BFGS-B
    retraces the recorded path (see ``replay`` in :func:`run_start`).

    Returns ``(value, grad, info, replayed)``.
    """
    i = state["replayed"]
    if i < len(replay) and len(state["trajectory"]) == i \
            and np.array_equal(theta, np.asarray(replay[i]["theta"], dtype=float)):
        rec = replay[i]
        state["replayed"] += 1
        return (float(rec["fun"]), np.array(rec["grad"], dtype=float), dict(rec["info"]), True)
    value, grad, info = objective(theta)
    return value, grad, info, False


def best_start(results):
    """Index of the start with the highest evidence (lowest ``fun``)."""
    funs = [r.fun if np.isfinite(r.fun) else np.inf for r in results]
    return int(np.argmin(funs))


def subsample_indices(n, m, random_state):
    """Sorted indices of the ``m`` of ``n`` cases used by the subsample phase
    of coarse-to-fine starts; ``random_state=None`` means seed 0, so that a
    fit (and a resumed pipeline start) is repeatable."""
    from ._base import resolve_rng

    seed = 0 if random_state is None else random_state
    return np.sort(resolve_rng(seed).choice(int(n), size=int(m), replace=False))


def unrefined_record(coarse_record):
    """Start record (``starts_`` entry) of a start that was optimised on the
    subsample only: a lower subsample evidence than the refined start, so it
    was not continued on the full data. Its subsample phase is kept."""
    return {"theta0": coarse_record["theta0"], "theta": coarse_record["theta"],
            "neg_log_evidence": float("nan"), "n_iter": 0, "n_eval": 0, "success": False,
            "message": "not refined on the full data: a lower subsample evidence",
            "trajectory": [], "subsample": coarse_record}
