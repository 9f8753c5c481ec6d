"""One evidence search for every Bayesian model (thesis 4.3.2, 5.3).

A model supplies a :class:`SearchModel`: its objective (the contract of
:mod:`bsvm_scale.optimization.objective`) on any subset of its training data,
its box, its optimiser options, the isotropic model that begins an ARD
search, and how a solution warm-starts the next. :func:`search` does the
rest, the same for every model:

1. **Starts.** Every start point is a plan of optimiser runs
   (:class:`Run`) on an objective of its own, so the starts are independent
   and run on up to ``n_jobs`` threads (one, with a ``callback``: a
   pipeline's checkpoints have one writer).
2. **Coarse to fine.** With more than ``2 m`` cases (``m = init_subsample``)
   every start is first optimised on one seeded subsample of ``m`` cases;
   only the best is refined on the full data, from its subsample optimum
   within the trust radius :data:`~bsvm_scale.optimization.starts.FINE_MAX_STEP`,
   its MAP solve warm-started from the subsample solution, ending as a
   retraining does (:data:`~bsvm_scale.optimization.starts.FINE_OPTIONS`).
3. **ARD continuation.** An ARD search begins with the isotropic model
   (one ``kappa``), searched by this same function from every start; the
   ARD run then begins at the best isotropic optimum with every ``kappa_l``
   equal to its ``kappa``, the isotropic MAP solution as its warm start and
   the isotropic run's model Hessian lifted to the ARD parameters
   (:func:`~bsvm_scale.optimization.starts.ard_hessian`), so that the ARD
   evidence is at least the isotropic optimum's (``ard_init``,
   :func:`~bsvm_scale.optimization.starts.ard_runs`).
4. **Retraining** (``warm_start_from``): one run from the earlier optimum,
   warm-started from the earlier solution, beginning with the earlier
   search's model Hessian.
5. **Resume.** A start resumed from a checkpoint (:class:`Resume`) restores
   its objective's state and replays the recorded evaluations without
   re-evaluating them, so the result equals that of the uninterrupted start.
6. **The result.** The run with the highest evidence wins; its objective
   makes the final evaluation at its best point (:meth:`Objective.final`).
   Every run leaves a record (:func:`~bsvm_scale.optimization.records.start_record`).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import NamedTuple, Protocol

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._util.threads import thread_map
from .driver import StartResult, run_start
from .objective import Evaluation, Objective, Warm
from .records import start_record, unrefined_record
from .starts import (COARSE_OPTIONS, FINE_FIRST_STEP, FINE_MAX_STEP, FINE_OPTIONS, ard_runs,
                     best_start, coarse_starts, retrain_options)

__all__ = ["Data", "Run", "Resume", "Retrain", "SearchModel", "Outcome", "search", "evaluate_at",
           "run_plan"]


class Data(NamedTuple):
    """Training data as the objectives take them: design matrix (standardised),
    targets and case weights (None: all 1)."""

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray | None = None


class Run(NamedTuple):
    """One optimiser run: from ``theta0``, its objective warm-started from
    ``warm`` (None: as it is), within the trust radius ``max_step`` (None:
    the driver's), beginning with the model Hessian ``hessian`` (None: the
    diagonal guess), with the optimiser options ``options`` (None: the
    start's)."""

    theta0: np.ndarray
    warm: Warm | None = None
    max_step: float | None = None
    hessian: np.ndarray | None = None
    options: dict | None = None


class Resume(NamedTuple):
    """A start resumed or given by ``fit(init=...)``: its start point, the
    objective state of its checkpoint (or None), a bare dual warm start (or
    None) and the evaluations to replay (or None)."""

    theta: np.ndarray
    state: dict | None = None
    dual: np.ndarray | None = None
    evaluations: list | None = None


class Retrain(NamedTuple):
    """A retraining's start: the earlier optimum, the warm start from the
    earlier solution and the earlier search's final model Hessian (None)."""

    theta: np.ndarray
    warm: Warm | None
    hessian: np.ndarray | None


class SearchModel(Protocol):
    """What a model gives :func:`search` (its hooks).

    Attributes: ``bounds`` (the box of ``theta``), ``precondition`` (scale
    the first model Hessian by the gradient, :func:`run_start`),
    ``n_jobs``, ``init_subsample``, ``random_state`` and ``ard_mode``
    (``"start"`` without an isotropic first stage, else ``ard_init``).
    """

    bounds: list
    precondition: bool
    n_jobs: int | None
    init_subsample: int | None
    random_state: object
    ard_mode: str

    def objective(self, data: Data, subsample: bool = False) -> Objective:
        """A fresh objective on ``data`` (a subsample's: ``subsample``)."""

    def options(self, phase: dict | None = None) -> dict:
        """The driver's options: defaults, then ``phase``'s, then the user's."""

    def isotropic(self, theta0) -> "SearchModel":
        """The model of the isotropic first stage of ARD from the ARD start
        ``theta0`` (a variable the stage holds keeps its value there)."""

    def held_bounds(self, theta0) -> list:
        """The box of a stage begun at ``theta0`` that holds some variables
        at their start values (the isotropic stage, the subsample phase)."""

    def isotropic_theta(self, theta) -> np.ndarray:
        """The isotropic start for the ARD start ``theta``."""

    def ard_hessian(self, B) -> np.ndarray | None:
        """The isotropic model Hessian ``B`` lifted to the ARD parameters."""

    def ard_theta(self, theta) -> np.ndarray:
        """The ARD point equal to the isotropic point ``theta``."""

    def continuation_warm(self, final: Evaluation, data: Data) -> Warm:
        """The warm start of the ARD run from the isotropic ``final``."""

    def dual_state(self, dual) -> dict:
        """The objective state of a bare dual warm start."""


@dataclass
class Outcome:
    """The result of :func:`search`.

    ``theta`` is the best point, ``objective`` its run's objective (after
    the final evaluation), ``final`` that evaluation, ``records`` one record
    per run (coarse-to-fine: the refined start first, then the starts
    optimised on the subsample only), ``best`` the index of the winning
    record and ``result`` its :class:`~bsvm_scale.optimization.driver.StartResult`.
    """

    theta: np.ndarray
    objective: Objective
    final: Evaluation
    records: list
    best: int
    result: StartResult

    @property
    def log_evidence(self):
        return -float(self.final.value)


class _Start(NamedTuple):
    runs: list
    isotropic: Outcome | None


def search(model, data, thetas, resume=None, retrain=None, callback=None):
    """Maximise the evidence of ``model`` on ``data`` from the start points
    ``thetas`` (see the module docstring).

    Parameters
    ----------
    model : SearchModel
    data : Data
    thetas : list of ndarray
        Start points (one with ``resume`` or ``retrain``: its theta).
    resume : Resume, optional
    retrain : Retrain, optional
    callback : callable, optional
        ``callback(start_index, record, state)`` after every full-data
        evaluation: the driver's trajectory record and the objective's state.

    Returns
    -------
    Outcome
    """
    if retrain is not None:
        starts = [_Start([Run(thetas[0], None, FINE_MAX_STEP, retrain.hessian)], None)]
        coarse, options = None, model.options(retrain_options(retrain.hessian))
    else:
        coarse = _subsample_phase(model, data, thetas)
        starts, options = _plans(model, data, thetas, coarse), model.options()
    warm = [None if retrain is None else retrain.warm, None if coarse is None else coarse[2]]

    def run(k):
        obj = model.objective(data)
        _prepare(obj, model, warm, resume, starts[k].runs[0].warm)
        return obj, _run_start(obj, model, k, starts[k].runs, options, callback, resume)

    done = thread_map(run, range(len(starts)), model.n_jobs if callback is None else None)
    return _outcome(starts, done, coarse)


def evaluate_at(model, data, theta, resume=None, retrain=None):
    """No search: ``(objective, evaluation)``, the final evaluation at the
    given ``theta`` (``optimize=False``), the objective warm-started as a
    search's would be."""
    obj = model.objective(data)
    _prepare(obj, model, [None if retrain is None else retrain.warm, None], resume)
    return obj, obj.final(np.asarray(theta, dtype=float))


def _subsample_phase(model, data, thetas):
    """The subsample phase (:func:`~bsvm_scale.optimization.starts.coarse_starts`):
    ``(records, best, warm)``, the full-data warm start being the best
    subsample solution on its own cases and 0 elsewhere; None when the data
    are too few."""
    def run(obj, theta0):  # in the box of the start: what the model holds stays there
        res = run_start(obj, theta0, model.held_bounds(theta0), model.options(COARSE_OPTIONS),
                        precondition=model.precondition)
        obj.release()  # one row cache alive at a time
        return res

    records, best, dual0, chosen = coarse_starts(
        lambda *sub: model.objective(Data(*sub), subsample=True), data.X, data.y, thetas,
        model.init_subsample, model.random_state, run, model.n_jobs, data.weights)
    if not records:
        return None
    for rec in records:  # warned here, on the caller's thread
        _warn_limit(rec["message"], rec["n_iter"])
    return records, best, Warm(dual0, chosen.carry().slope)


def _plans(model, data, thetas, coarse):
    """One :class:`_Start` per start point that runs: the run from the point
    itself (coarse-to-fine: from the best subsample optimum, within
    FINE_MAX_STEP, with the stop rule FINE_OPTIONS) and, for the start whose
    isotropic first stage has the best optimum, the ARD continuation from it."""
    max_step, origins, options = None, thetas, None
    if coarse is not None:
        records, best, _ = coarse
        thetas, origins = [records[best]["theta"]], [records[best]["theta0"]]
        max_step, options = FINE_MAX_STEP, model.options(FINE_OPTIONS)
    direct, stage, best_iso = ard_runs(
        lambda X, y, theta0: _isotropic_search(model, data, theta0), data.X, data.y, thetas,
        origins, model.ard_mode, refined=coarse is not None, n_jobs=model.n_jobs)
    starts = []
    for theta0, runs_direct, iso in zip(thetas, direct, stage):
        runs = [Run(theta0, None, max_step, None, options)] if runs_direct else []
        if iso is not None and iso is best_iso:
            runs.append(Run(model.ard_theta(iso.theta), model.continuation_warm(iso.final, data),
                            FINE_MAX_STEP, model.ard_hessian(iso.result.hessian)))
        if runs:
            starts.append(_Start(runs, iso))
    return starts


def _isotropic_search(model, data, theta0):
    """The isotropic first stage from the ARD start ``theta0``: the same
    search on the isotropic model (its own coarse-to-fine phase, one start)."""
    out = search(model.isotropic(theta0), data, [model.isotropic_theta(theta0)])
    if not np.isfinite(out.final.value):
        raise FloatingPointError("the evidence at the isotropic optimum is not finite.")
    return out


def _prepare(obj, model, warm, resume, first=None):
    """Warm-start a start's fresh objective: from a retraining's earlier
    solution, then a resumed state (or bare dual), then, unless a state was
    restored, the subsample solution of coarse-to-fine starts and the warm
    start ``first`` of the start's first run (the isotropic solution, when
    that run is the ARD continuation), the later overriding the earlier."""
    retrained, coarse = warm
    if retrained is not None:
        obj.restart(retrained)
    if resume is not None and resume.state is not None:
        obj.set_state(resume.state)
        return
    if resume is not None and resume.dual is not None:
        obj.set_state(model.dual_state(resume.dual))
        first = None  # the resumed start's own dual is where its solve begins
    for later in (coarse, first):
        if later is not None:
            obj.restart(later)


def _run_start(obj, model, k, runs, options, callback, resume):
    """The runs of start ``k`` on its objective (:func:`run_plan`); within a
    trust radius (coarse-to-fine, retraining, the ARD continuation) the
    first radius is FINE_FIRST_STEP."""
    cb = None if callback is None else (lambda run, rec: callback(k, rec, obj.get_state()))
    replay = None if resume is None else resume.evaluations
    results = run_plan(obj, runs, model.bounds, options, cb, replay,
                       precondition=model.precondition, first_step=FINE_FIRST_STEP)
    obj.release()  # one row cache alive at a time
    return results


def _warn_limit(message, n_iter):
    """A run that stopped at its iteration limit (warned on the caller's
    thread, pointing at the model's ``fit``)."""
    if message.startswith("STOP: max"):
        warnings.warn(f"the evidence search reached its iteration limit ({n_iter}) before "
                      f"the evidence converged ({message}); increase "
                      "optimizer_options['maxiter'].", ConvergenceWarning, stacklevel=5)


def _outcome(starts, done, coarse):
    """Records of every run, the best one and its final evaluation."""
    records, results, owners = [], [], []
    for start, (obj, runs) in zip(starts, done):
        for res, run in zip(runs, start.runs):
            _warn_limit(res.message, res.n_iter)
            rec = start_record(res)
            if run.warm is not None:  # the continuation from the isotropic stage
                rec["isotropic"] = start.isotropic.records[start.isotropic.best]
            records.append(rec)
            results.append(res)
            owners.append(obj)
    if coarse is not None:
        sub, sub_best, _ = coarse
        records[0]["subsample"] = sub[sub_best]
        records += [unrefined_record(r) for k, r in enumerate(sub) if k != sub_best]
    best = best_start(results)
    theta = np.asarray(results[best].theta, dtype=float)
    final = owners[best].final(theta)
    return Outcome(theta, owners[best], final, records, best, results[best])


def run_plan(objective, runs, bounds, options=None, callback=None, replay=None, **kw):
    """Run every :class:`Run` of ``runs`` in turn on one objective and return
    the :class:`~bsvm_scale.optimization.driver.StartResult` of each.

    The runs of one start share the objective, so that its best point is
    kept across them; ``objective.restart(run.warm)`` begins each later run.
    ``callback(k, record)`` gets the run index. ``replay``: the recorded
    evaluations of a resumed start, in the order the runs made them; each
    run replays its own part. The objective's state restored from the
    checkpoint belongs to the run that was interrupted, so a run that
    follows a wholly replayed one keeps it while recorded evaluations
    remain. Other keywords go to :func:`run_start`; ``first_step`` applies
    to runs with a ``max_step``.
    """
    results, replay, used = [], list(replay or []), 0
    first_step = kw.pop("first_step", None)
    for k, run in enumerate(runs):
        if k > 0 and not (results[-1].n_replayed == len(results[-1].trajectory)
                          and used < len(replay)):
            objective.restart(run.warm)
        cb = None if callback is None else (lambda rec, k=k: callback(k, rec))
        res = run_start(objective, run.theta0, bounds,
                        options if run.options is None else run.options, cb, max_step=run.max_step,
                        replay=replay[used:],
                        first_step=first_step if run.max_step is not None else None,
                        hessian=run.hessian, **kw)
        used += len(res.trajectory)
        results.append(res)
    return results
