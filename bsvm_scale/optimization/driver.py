"""Evidence maximisation driver shared by every Bayesian model.

The models supply an objective ``theta -> (value, gradient, info)`` where
``theta`` is the vector of log hyperparameters (possibly with some entries
reparametrised, see the models), ``value = -ln P(D | theta)`` and ``info`` a
small dict of diagnostics (SV counts, jitter used, ...). :func:`run_start`
minimises it from one starting point inside the box prior by a
quasi-Newton trust-region method (:mod:`bsvm_scale.optimization.trust_region`): one
evaluation per iteration, every trial step judged by the ratio of the actual
to the predicted decrease, the radius resized from that ratio. Several starts
are run and the one with the highest evidence kept (thesis 4.3.2; the plans
of starts are in :mod:`bsvm_scale.optimization.starts`, their records in
:mod:`bsvm_scale.optimization.records`).

The driver is a loop over small pieces, each tested on its own:

- :class:`Recorder`: evaluates the objective or answers from a recorded run
  (exact resume), keeps the trajectory, calls the callback, counts
  non-finite values;
- :func:`trust_region.model_step`, :func:`trust_region.bfgs_update`,
  :func:`trust_region.next_radius`: the step, the model and the radius;
- :class:`StallRule` and :func:`stop_reason`: when a start ends.

A non-finite value (or gradient) is a rejected step: the radius shrinks and
nothing else changes; the count is reported with a warning.

Options (``options=``, every key optional; :class:`Options`): ``maxiter``
(trust-region iterations, = evaluations after the first), ``maxfun``
(evaluations), ``gtol`` (projected gradient, max-norm), ``ftol`` (relative
decrease of a step inside the trust region, as L-BFGS-B's ``ftol``, and
relative decrease the model promises; 0 turns both rules off),
``radius`` (initial), ``min_radius``, ``max_radius`` (max-norm, log units),
``stall_rtol``, ``stall_evals`` and ``stall_atol`` (:class:`StallRule`), ``promise_atol``
and ``promise_stalls`` (end the start once a model that has just predicted an
accepted step promises less than ``promise_atol`` nats over the whole box and
the stall rule has counted ``promise_stalls`` evaluations without a gain; off
by default, 0.03 nat after 3 in :data:`PIECEWISE_OPTIONS`),
``probe_step`` and
``probe_rounds`` (:func:`~bsvm_scale.optimization.trials.probe_neighbours`; off by default), ``slope_rounds``,
``slope_radius`` and ``slope_stall`` (:func:`~bsvm_scale.optimization.trials.slope_trial`; off by default, one
round in :data:`PIECEWISE_OPTIONS`).

The evidence is piecewise smooth, and a search that converged on one piece
can end next to a better point across a jump. With ``probe_step > 0`` a
start that ended normally evaluates the ``2 p`` axis neighbours of its best
point at ``+-probe_step`` (log units); the best of them, if it improves,
becomes the incumbent, and the trust-region search continues from it at
radius ``probe_step``, at most ``probe_rounds`` times.

A cheaper look across the jumps uses the values already paid for. The model
gradient is the smooth piece's; where the jumps lean one way, the values fall
in a direction the gradient does not show. With ``slope_rounds > 0`` a start
that ended normally fits the slope its values explain around the best point
(:func:`~bsvm_scale.optimization.trials.fitted_slope`, the model curvature held fixed) and evaluates the
model step along it inside a box of half-width ``slope_radius``
(:func:`~bsvm_scale.optimization.trials.slope_trial`, one evaluation). If that point is lower, it becomes the
incumbent and the search continues from it, ending after ``slope_stall``
evaluations without a gain.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field, fields

import numpy as np

from .trials import probe_neighbours, slope_trial
from .trust_region import (ETA, bfgs_update, check_hessian, initial_hessian, model_step,
                           next_radius, projected_gradient)

__all__ = ["StartResult", "Options", "Recorder", "StallRule",
           "run_start", "run_plan", "stop_reason", "agreement", "DEFAULT_OPTIONS", "STALL_OPTIONS",
           "PIECEWISE_OPTIONS"]

#: the stall rule (:class:`StallRule`) of every model: stop once 5 evaluations
#: in a row have not improved -ln evidence by 1e-5 relative (the MAP solution,
#: and so the evidence, is known only to the SMO tolerance; the search keeps
#: the best point while it follows the gradients across jumps)
STALL_OPTIONS = {"stall_rtol": 1e-5, "stall_evals": 5}
DEFAULT_OPTIONS = {"maxiter": 100, "ftol": 1e-6, "gtol": 1e-4, **STALL_OPTIONS}
#: defaults of the piecewise-smooth evidences (BSVR, BTSVC): gains below 0.1
#: nat (a Bayes factor of 1.1) count as stalls too, and after the stall the
#: search tries one slope trial (:func:`~bsvm_scale.optimization.trials.slope_trial`). Across the
#: jumps the gradient-following search keeps taking steps whose values barely
#: move; a smooth evidence (the GP baselines) converges by ``gtol``/``ftol``
#: instead (docs/design/trust_region_search.md, "The stall in nats and the
#: slope trial"). The stall ends after 3 such evaluations instead of 5 when the
#: quasi-Newton model, trusted after an accepted step, also promises less than
#: 0.03 nat over the box (same document, "Stopping on the model's promise").
PIECEWISE_OPTIONS = {**DEFAULT_OPTIONS, "stall_atol": 0.1, "slope_rounds": 1,
                     "promise_atol": 0.03, "promise_stalls": 3}


@dataclass(frozen=True)
class Options:
    """Settings of :func:`run_start` (see the module docstring)."""

    maxiter: int = 100
    maxfun: int | None = None
    gtol: float = 1e-4
    ftol: float = 1e-6
    radius: float = 1.0
    min_radius: float = 1e-3
    max_radius: float = np.inf
    stall_rtol: float | None = None
    stall_evals: int | None = None
    stall_atol: float = 0.0
    promise_atol: float = 0.0
    promise_stalls: int = 0
    probe_step: float = 0.0
    probe_rounds: int = 2
    slope_rounds: int = 0
    slope_radius: float = 0.5
    slope_stall: int = 1

    @classmethod
    def parse(cls, options=None, max_step=None, first_step=None):
        """Options from a dict; ``max_step`` caps the radius and ``first_step``
        (else ``min(1, max_step)``) sets the initial one."""
        given = dict(options or {})
        if "min_step" in given:  # accepted as another name of min_radius
            given.setdefault("min_radius", given.pop("min_step"))
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise ValueError(f"optimizer options {unknown} are not known; the trust-region "
                             f"driver takes {sorted(names)}.")
        if max_step is not None:
            given["max_radius"] = min(float(max_step), float(given.get("max_radius", np.inf)))
        if first_step is not None or max_step is not None:
            given.setdefault("radius", float(first_step if first_step is not None
                                             else min(1.0, max_step)))
        opts = cls(**given)
        for name in ("maxiter", "gtol", "ftol", "radius", "min_radius", "max_radius",
                     "probe_step", "probe_rounds", "stall_atol", "promise_atol", "promise_stalls",
                     "slope_rounds", "slope_radius", "slope_stall"):
            v = getattr(opts, name)
            if not (isinstance(v, (int, float, np.integer, np.floating)) and v >= 0):
                raise ValueError(f"optimizer option {name} must be a number >= 0; got {v!r}.")
        if int(opts.promise_stalls) != opts.promise_stalls:
            raise ValueError(f"optimizer option promise_stalls must be a whole number; got "
                             f"{opts.promise_stalls!r}.")
        if not np.isfinite(opts.probe_step) or int(opts.probe_rounds) != opts.probe_rounds:
            raise ValueError(f"optimizer options probe_step must be finite and probe_rounds a "
                             f"whole number; got probe_step={opts.probe_step!r}, "
                             f"probe_rounds={opts.probe_rounds!r}.")
        if (not np.isfinite(opts.slope_radius) or int(opts.slope_rounds) != opts.slope_rounds
                or int(opts.slope_stall) != opts.slope_stall or opts.slope_stall < 1):
            raise ValueError(f"optimizer options slope_radius must be finite, slope_rounds a "
                             f"whole number and slope_stall a whole number >= 1; got "
                             f"slope_radius={opts.slope_radius!r}, slope_rounds="
                             f"{opts.slope_rounds!r}, slope_stall={opts.slope_stall!r}.")
        if (opts.stall_rtol is None) != (opts.stall_evals is None):
            raise ValueError("optimizer options stall_rtol and stall_evals go together; got "
                             f"stall_rtol={opts.stall_rtol!r}, stall_evals={opts.stall_evals!r}.")
        return opts


@dataclass
class StartResult:
    """Outcome of one start of the evidence maximisation.

    Attributes
    ----------
    theta0, theta : ndarray
        Starting and final (best) optimisation variables.
    fun : float
        ``-ln P(D | theta)`` at ``theta``.
    grad : ndarray
        Gradient at ``theta``.
    info : dict
        Diagnostics returned by the objective at ``theta``.
    n_iter, n_eval : int
        Trust-region iterations (trial steps) and objective evaluations.
    success : bool
        False when a limit (``maxiter``, ``maxfun``) ended the start, or
        non-finite values made the radius collapse away from a stationary
        point.
    message : str
        Why the start ended.
    trajectory : list of dict
        One record per objective evaluation: ``theta``, ``fun``, ``grad``,
        ``grad_norm`` (projected onto the box), the objective's ``info``,
        ``replayed`` (answered from ``replay``), ``accepted`` (the step
        became the new incumbent) and ``radius`` (the trust radius it was
        taken in; ``nan`` for the first point).
    n_nonfinite : int
        Evaluations whose value was not finite (rejected steps).
    n_rejected : int
        Trial steps rejected (agreement ratio at most ``ETA``, or not finite).
    n_replayed : int
        Evaluations answered from a recorded run (``replay``).
    hessian : ndarray or None
        The quasi-Newton model Hessian at the end of the start (in ``theta``),
        which a later start near the same optimum can begin with
        (``run_start(hessian=...)``); None when it is only the diagonal first
        guess (no quasi-Newton update was made and none was given).
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
    hessian: np.ndarray | None = None

    @property
    def hit_limit(self):
        """True when ``maxiter`` or ``maxfun`` ended the start."""
        return self.message.startswith("STOP: max")


def _box(bounds, size):
    """Lower and upper bound arrays (infinite where a bound is None)."""
    if bounds is None:
        return np.full(size, -np.inf), np.full(size, np.inf)
    lo = np.array([-np.inf if b[0] is None else float(b[0]) for b in bounds])
    hi = np.array([np.inf if b[1] is None else float(b[1]) for b in bounds])
    return lo, hi


class Recorder:
    """The evaluations of one start.

    ``record = recorder(theta)`` evaluates the objective, or -- while the
    requested points repeat the recorded run ``replay`` in order -- answers
    from it without calling the objective (the driver is deterministic, so
    a resumed start asks for the same points; the caller restores the
    objective's own state to what it was after the last recorded
    evaluation). Every record is appended to :attr:`trajectory` and given
    to ``callback``.
    """

    def __init__(self, objective, lo, hi, replay=None, callback=None):
        self.objective, self.lo, self.hi = objective, lo, hi
        self.replay = list(replay or [])
        self.callback = callback
        self.trajectory = []
        self.n_replayed = 0
        self.n_nonfinite = 0

    def _answer(self, theta):
        i = self.n_replayed
        if (i < len(self.replay) and len(self.trajectory) == i
                and np.array_equal(theta, np.asarray(self.replay[i]["theta"], dtype=float))):
            rec = self.replay[i]
            self.n_replayed += 1
            return float(rec["fun"]), np.array(rec["grad"], dtype=float), dict(rec["info"]), True
        value, grad, info = self.objective(theta)
        return value, grad, info, False

    def __call__(self, theta, radius=np.nan):
        value, grad, info, replayed = self._answer(theta)
        grad = np.asarray(grad, dtype=float)
        finite = bool(np.isfinite(value) and np.all(np.isfinite(grad)))
        gnorm = (float(np.max(np.abs(projected_gradient(theta, grad, self.lo, self.hi)),
                              initial=0.0)) if finite else np.inf)
        record = {"theta": np.array(theta, dtype=float), "fun": float(value), "grad": grad.copy(),
                  "grad_norm": gnorm, "info": dict(info), "replayed": replayed,
                  "accepted": False, "radius": float(radius)}
        self.trajectory.append(record)
        self.n_nonfinite += not finite
        if self.callback is not None:
            self.callback(record)
        return record


class StallRule:
    """Ends a start once ``n_evals`` consecutive finite values have not lowered
    the best value by more than ``max(atol, rtol * max(1, |best|))``.

    The MAP solution, and so the evidence, is known only to the SMO
    tolerance; past that resolution further evaluations cannot matter.
    ``atol`` is in the units of the value (nats of evidence): a gain of 0.1
    nat is a Bayes factor of 1.1, too small to choose between hyperparameters,
    while the relative part sets the resolution of large problems. The rule
    sees only the sequence of values, so a replayed run stops where the
    original did.
    """

    def __init__(self, rtol=None, n_evals=None, atol=0.0):
        self.rtol = None if rtol is None else float(rtol)
        self.n_evals = None if n_evals is None else int(n_evals)
        self.atol = float(atol)
        self.best, self.count = None, 0

    def __call__(self, value):
        """Take the next value; True when the start has stalled."""
        if self.rtol is None or not np.isfinite(value):
            return False
        if self.best is None or value < self.best - max(self.atol,
                                                        self.rtol * max(1.0, abs(self.best))):
            self.best, self.count = value, 0
            return False
        self.count += 1
        return self.count >= self.n_evals


def stop_reason(opts, n_iter, n_eval, grad_norm, radius, decrease=None, predicted=None,
                promised=None):
    """``(success, message)`` when the start should end, else None.

    ``decrease``: relative decrease of the last accepted step when it lay
    strictly inside the trust region (a step cut by the radius says the
    radius is small, not that the evidence is flat). ``predicted``: the
    relative decrease the quadratic model promises over the whole box (no
    trust region): below ``ftol`` no step can gain more than the evidence's
    resolution. ``promised``: the same decrease in the value's units; at most
    ``promise_atol`` (nats) it ends the start too.
    """
    if grad_norm <= opts.gtol:
        return True, f"CONVERGENCE: projected gradient {grad_norm:.3g} <= gtol={opts.gtol:g}"
    if promised is not None and promised <= opts.promise_atol:
        return True, (f"CONVERGENCE: the model predicts a decrease {promised:.3g} <= "
                      f"promise_atol={opts.promise_atol:g}")
    if predicted is not None and opts.ftol > 0 and predicted <= opts.ftol:
        return True, (f"CONVERGENCE: the model predicts a relative decrease {predicted:.3g} <= "
                      f"ftol={opts.ftol:g}")
    if decrease is not None and opts.ftol > 0 and decrease <= opts.ftol:
        return True, (f"CONVERGENCE: relative decrease {decrease:.3g} <= ftol={opts.ftol:g} "
                      "in a step inside the trust region")
    if radius < opts.min_radius:
        return True, (f"CONVERGENCE: trust radius {radius:.3g} below min_radius="
                      f"{opts.min_radius:g}")
    if n_iter >= opts.maxiter:
        return False, f"STOP: maxiter={opts.maxiter} iterations reached"
    if opts.maxfun is not None and n_eval >= opts.maxfun:
        return False, f"STOP: maxfun={opts.maxfun} evaluations reached"
    return None


def _first_point(rec, theta0):
    """The evaluation at the starting point, which must be finite."""
    here = rec(theta0)
    if not np.isfinite(here["grad_norm"]):
        raise _no_finite_start(theta0, here)
    here["accepted"] = True
    return here


def _no_finite_start(theta0, record):
    reason = record["info"].get("rejected") if isinstance(record.get("info"), dict) else None
    why = (f" The point was rejected because {reason[:1].lower()}{reason[1:]}" if reason
           else " Check the data and the starting values.")
    return FloatingPointError("the evidence was not finite at the starting point theta0="
                              f"{np.array2string(theta0, precision=4)}.{why}")


def _promised(here, B, lo, hi):
    """Decrease the model's minimiser over the box promises (no trust region):
    ``(relative, absolute)``."""
    x = here["theta"]
    _, pred = model_step(here["grad"], B, lo - x, hi - x)
    return pred / max(abs(here["fun"]), 1.0), pred


def _relative_decrease(old, new):
    return (old - new) / max(abs(old), abs(new), 1.0)


def agreement(here, trial, s, predicted):
    """Agreement ratio of a trial step: the larger of the values' ratio
    ``(f(x) - f(x + s)) / predicted`` and the gradients' ratio
    ``-(g(x) + g(x + s))' s / (2 predicted)`` (the trapezoid rule for the
    change of the smooth piece along ``s``; exact for a quadratic). The
    evidence jumps where a case changes pieces of the loss while its
    gradient follows the smooth piece: there the values disagree with the
    model but the gradients agree, and the step is taken (the best point
    seen is kept apart). ``nan`` for a non-finite trial."""
    if not np.isfinite(trial["grad_norm"]):
        return np.nan
    by_value = (here["fun"] - trial["fun"]) / predicted
    by_gradient = -0.5 * float((here["grad"] + trial["grad"]) @ s) / predicted
    return max(by_value, by_gradient)


def run_start(objective, theta0, bounds=None, options=None, callback=None, max_step=None,
              precondition=False, replay=None, first_step=None, hessian=None):
    """Minimise ``objective`` from ``theta0`` by the trust-region method.

    Parameters
    ----------
    objective : callable
        ``theta -> (value, gradient, info)``.
    theta0 : array-like
        Starting point (clipped into ``bounds``).
    bounds : sequence of (low, high) or None
        Box prior on the variables.
    options : dict, optional
        :class:`Options` (defaults :data:`DEFAULT_OPTIONS`).
    callback : callable, optional
        ``callback(record)`` after every evaluation (replayed ones included,
        flagged ``record["replayed"]``), with the trajectory record (used for
        checkpointing).
    max_step : float, optional
        Largest trust radius (max-norm) around the current point.
    precondition : bool, default=False
        Diagonal first model Hessian from the gradient at ``theta0``
        (:func:`trust_region.initial_hessian`).
    replay : sequence of dict, optional
        Evaluations recorded by ``callback`` in an interrupted run of the
        same start (keys ``theta``, ``fun``, ``grad``, ``info``), answered
        without calling ``objective`` (:class:`Recorder`), so that the run
        continues exactly as the uninterrupted one would.
    first_step : float, optional
        Initial trust radius (default ``min(1, max_step)``, or 1).
    hessian : array-like of shape (p, p), optional
        First model Hessian in place of the diagonal one (and of its
        rescaling at the first update): the final :attr:`StartResult.hessian`
        of an earlier search of a nearby problem, e.g. the fit a retraining
        starts from. With it the first step is a quasi-Newton step, and the
        start ends at its first point when the model promises less than
        ``ftol`` (:func:`stop_reason`). Must be symmetric positive definite.

    Returns
    -------
    StartResult
        At the best point evaluated.
    """
    opts = Options.parse({**DEFAULT_OPTIONS, **(options or {})}, max_step, first_step)
    theta0 = np.asarray(theta0, dtype=float).copy()
    lo, hi = _box(bounds, theta0.size)
    theta0 = np.clip(theta0, lo, hi)
    rec = Recorder(objective, lo, hi, replay, callback)
    st = _begin(rec, theta0, min(opts.radius, opts.max_radius), precondition, hessian)
    success, message = _search(st, rec, opts, (lo, hi))
    success, message = _probed(st, rec, opts, (lo, hi), (success, message))
    success, message = _sloped(st, rec, opts, (lo, hi), (success, message))
    if rec.n_nonfinite:
        success, message = _after_nonfinite(rec, st.best, opts, success, message)
    return _result(theta0, st, rec, success, message)


def _result(theta0, st, rec, success, message):
    """The :class:`StartResult` of a finished start at its best point."""
    best = st.best
    return StartResult(theta0=theta0, theta=best["theta"], fun=best["fun"], grad=best["grad"],
                       info=best["info"], n_iter=st.n_iter, n_eval=len(rec.trajectory),
                       success=bool(success), message=str(message), trajectory=rec.trajectory,
                       n_nonfinite=rec.n_nonfinite, n_rejected=st.n_rejected,
                       n_replayed=rec.n_replayed,
                       hessian=None if st.rescale and not st.n_updates else st.B.copy())


def _begin(rec, theta0, radius, precondition, hessian):
    """The :class:`_Search` at the first point: the given model Hessian, or the
    diagonal guess (rescaled at the first update)."""
    B0 = None if hessian is None else check_hessian(hessian, theta0.size)
    here = _first_point(rec, theta0)
    if B0 is None:
        return _Search(here, here, initial_hessian(here["grad"], radius, precondition), radius)
    return _Search(here, here, B0, radius, rescale=False, trusted=True)


def _search(st, rec, opts, box, stall_evals=None):
    """Trust-region iterations on ``st`` until a stop rule answers (a fresh
    stall rule from the incumbent, after ``stall_evals`` evaluations when
    given, else ``opts.stall_evals``); returns ``(success, message)``."""
    lo, hi = box
    stall = StallRule(opts.stall_rtol, stall_evals or opts.stall_evals, opts.stall_atol)
    stall(st.here["fun"])
    stop = None
    while stop is None:
        relative, promised = _promised(st.here, st.B, lo, hi)
        promised = promised if _promise_applies(opts, st, stall) else None
        stop = (stop_reason(opts, st.n_iter, len(rec.trajectory), st.here["grad_norm"],
                            st.radius, st.decrease, relative, promised)
                or _iterate(st, rec, opts, box, stall))
    return stop


def _promise_applies(opts, st, stall):
    """Whether the model's promise may end the start now (``promise_atol``): the
    model has just predicted an accepted step (``st.trusted``) and the stall
    rule has counted ``promise_stalls`` evaluations without a gain."""
    return bool(opts.promise_atol) and st.trusted and stall.count >= opts.promise_stalls


def _probed(st, rec, opts, box, stop):
    """Up to ``probe_rounds`` rounds of :func:`~bsvm_scale.optimization.trials.probe_neighbours` after a start
    that ended normally (``stop``) while the limits leave room for them, the
    search continuing from each better neighbour; the last ``(success,
    message)``."""
    def find():
        room = opts.maxfun is None or (len(rec.trajectory) + 2 * st.best["theta"].size
                                       < opts.maxfun)
        return probe_neighbours(rec, st.best, opts.probe_step, box) if room else None

    rounds = int(opts.probe_rounds) if opts.probe_step > 0 else 0
    return _continued(st, rec, opts, box, stop, find, rounds, opts.probe_step)


def _sloped(st, rec, opts, box, stop):
    """Up to ``slope_rounds`` rounds of :func:`~bsvm_scale.optimization.trials.slope_trial` after a start that
    ended normally (``stop``), the search continuing from each better trial
    with a stall after ``slope_stall`` evaluations; the last ``(success,
    message)``."""
    def find():
        room = opts.maxfun is None or len(rec.trajectory) < opts.maxfun
        return slope_trial(rec, st.best, st.B, opts.slope_radius, box) if room else None

    return _continued(st, rec, opts, box, stop, find, int(opts.slope_rounds),
                      opts.slope_radius, int(opts.slope_stall))


def _continued(st, rec, opts, box, stop, find, rounds, radius, stall_evals=None):
    """Up to ``rounds`` times while the start ends normally and ``maxiter``
    leaves room: ``find()`` a point better than the best (None: stop), make it
    the incumbent and continue the search from it at ``radius``."""
    success, message = stop
    for _ in range(rounds):
        better = find() if success and st.n_iter < opts.maxiter else None
        if better is None:
            break
        better["accepted"] = True
        st.best, st.here, st.decrease, st.trusted = better, better, None, False
        st.radius = min(float(radius), opts.max_radius)
        success, message = _search(st, rec, opts, box, stall_evals)
    return success, message


@dataclass
class _Search:
    """State of one start between iterations: the incumbent ``here``, the
    best point evaluated, the model Hessian ``B`` (``rescale``: a diagonal
    guess, rescaled at the first update; ``n_updates`` quasi-Newton updates
    so far), the trust radius, the counts, and the relative decrease of the
    last step taken strictly inside the trust region (None otherwise;
    :func:`stop_reason`)."""

    here: dict
    best: dict
    B: np.ndarray
    radius: float
    rescale: bool = True
    n_updates: int = 0
    n_iter: int = 0
    n_rejected: int = 0
    decrease: float | None = None
    trusted: bool = False


def _iterate(st, rec, opts, box, stall):
    """One trust-region iteration on ``st``: the model's step inside the
    radius, its evaluation, the quasi-Newton update from every finite trial,
    acceptance by :func:`agreement`, the new radius. Returns ``(success,
    message)`` when the start ends, else None."""
    lo, hi = box
    x = st.here["theta"]
    s, pred = model_step(st.here["grad"], st.B, np.maximum(lo - x, -st.radius),
                         np.minimum(hi - x, st.radius))
    step = float(np.max(np.abs(s), initial=0.0))
    if pred <= 0.0 or step == 0.0:
        return True, "CONVERGENCE: the model predicts no decrease inside the box"
    trial = rec(np.clip(x + s, lo, hi), st.radius)
    st.n_iter += 1
    rho = agreement(st.here, trial, s, pred)
    if np.isfinite(rho):
        st.B = bfgs_update(st.B, s, trial["grad"] - st.here["grad"],
                           first=st.rescale and st.n_iter == 1)
        st.n_updates += 1
        st.best = trial if trial["fun"] < st.best["fun"] else st.best
    st.decrease = None
    if rho > ETA:
        if step < 0.99 * st.radius and trial["fun"] <= st.here["fun"]:
            st.decrease = _relative_decrease(st.here["fun"], trial["fun"])
        trial["accepted"], st.here = True, trial
    else:
        st.n_rejected += 1
    st.trusted = rho > ETA
    st.radius = next_radius(st.radius, rho, step, opts.max_radius)
    if stall(trial["fun"]):
        return True, (f"CONVERGENCE: the best value improved by less than stall_rtol="
                      f"{opts.stall_rtol:g} (relative) or stall_atol={opts.stall_atol:g} "
                      f"over the last {stall.n_evals} evaluations")
    return None


def _after_nonfinite(rec, best, opts, success, message):
    """Warn about rejected non-finite evaluations; a start whose radius then
    collapsed (the last trial not finite) away from a stationary point is
    reported as not successful."""
    text = f"{rec.n_nonfinite} evidence evaluation(s) were not finite and the steps were rejected"
    # a failed probe or slope trial is no failure of the search
    searched = [r for r in rec.trajectory if not (r.get("probe") or r.get("slope"))]
    last_failed = not np.isfinite(searched[-1]["grad_norm"])
    if success and last_failed and best["grad_norm"] > opts.gtol:
        success = False
        message = (f"STOP: non-finite evidence values around the best point, whose projected "
                   f"gradient is {best['grad_norm']:.3g} > gtol={opts.gtol:g} (not a maximum "
                   "of the evidence)")
        text += (f"; the search then ended where the projected gradient is "
                 f"{best['grad_norm']:.3g} > gtol={opts.gtol:g}, so the evidence may not be "
                 "maximised (other starts, a smaller box or a larger tol may avoid the failing "
                 "region)")
    warnings.warn(text + ".", RuntimeWarning, stacklevel=3)
    return success, message


def run_plan(objective, plan, bounds, options=None, callback=None, replay=None, **kw):
    """Run every ``(theta0, warm, max_step)`` of ``plan`` in turn on one
    objective and return the :class:`StartResult` of each run. An entry may
    carry a fourth item, the first model Hessian of its run (None: the
    diagonal guess; ``run_start(hessian=...)``).

    The runs of one start (the run from the start itself, the run from the
    isotropic optimum, ...) share the objective, so that its best point is
    kept across them; ``objective.restart(warm)`` begins each later run
    from its dual warm start ``warm`` (None: afresh). ``callback(k, record)``
    gets the run index. ``replay``: the recorded evaluations of a resumed
    start, in the order the runs made them; each run replays its own part.
    The objective's state restored from the checkpoint belongs to the run
    that was interrupted, so a run that follows a wholly replayed one keeps
    it while recorded evaluations remain. Other keywords go to
    :func:`run_start`; ``first_step`` applies to runs with a ``max_step``.
    """
    results, replay, used = [], list(replay or []), 0
    first_step = kw.pop("first_step", None)
    for k, (theta0, warm, max_step, *hessian) in enumerate(plan):
        if k > 0 and not (results[-1].n_replayed == len(results[-1].trajectory)
                          and used < len(replay)):
            objective.restart(warm)
        cb = None if callback is None else (lambda rec, k=k: callback(k, rec))
        res = run_start(objective, theta0, bounds, options, cb, max_step=max_step,
                        replay=replay[used:],
                        first_step=first_step if max_step is not None else None,
                        hessian=hessian[0] if hessian else None, **kw)
        used += len(res.trajectory)
        results.append(res)
    return results
