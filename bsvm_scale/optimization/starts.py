"""Plans of starts shared by the evidence-maximised models.

The multi-start mechanism of BSVR, BTSVC, GPR and GPC around the driver of
:mod:`bsvm_scale.optimization.driver`: the subsample phase of coarse-to-fine
starts (:func:`coarse_starts`), the isotropic-to-ARD continuation
(:func:`isotropic_stage`, :func:`best_isotropic`, :func:`ard_runs`), the pick
of the best start and the weights of an evidence-weighted committee (thesis
4.3.2), and the trust radii of refinement and retraining phases.
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from .._util.base import resolve_rng
from .._util.threads import thread_map
from .driver import PIECEWISE_OPTIONS
from .records import start_record

__all__ = ["evidence_weights", "best_start", "ARD_INIT", "DEFAULT_ARD_INIT", "check_ard_init",
           "isotropic_stage",
           "coarse_starts", "best_isotropic", "ard_runs", "ard_hessian", "subsample_indices",
           "RETRAIN_OPTIONS", "RETRAIN_HESSIAN_OPTIONS", "COARSE_OPTIONS", "FINE_OPTIONS",
           "retrain_options",
           "search_options",
           "FINE_FIRST_STEP", "FINE_MAX_STEP"]

#: a retraining (``warm_start_from``) begins at the earlier optimum, a point
#: known to be good: its search ends once 2 evaluations in a row have not
#: improved on the best point, with no slope trial after it (user options
#: override this) ...
RETRAIN_OPTIONS = {"stall_evals": 2, "slope_rounds": 0}
#: ... or, begun with the earlier search's model Hessian (quasi-Newton steps
#: from the first), at the first evaluation that does not improve on it
RETRAIN_HESSIAN_OPTIONS = {"stall_evals": 1, "slope_rounds": 0}
#: the subsample phase of a coarse-to-fine fit (:func:`coarse_starts`) only
#: supplies the start of the full-data search, at ``m / n`` of its cost per
#: evaluation: it keeps the generic stall rule (no absolute tolerance, no early
#: end on the model's promise, no slope trial), because stopping there early
#: costs full-data evaluations later (docs/design/trust_region_search.md,
#: "Coarse-to-fine phases")
COARSE_OPTIONS = {"stall_atol": 0.0, "promise_atol": 0.0, "slope_rounds": 0}
#: the full-data run of a coarse-to-fine start begins at the subsample optimum,
#: like a retraining at a point known to be good, and each of its evaluations
#: costs ``n / m`` of a subsample one: it ends, as a retraining does, once 2
#: evaluations in a row have not improved on the best point, with no slope
#: trial, where an improvement is a gain of more than 1 nat (a Bayes factor
#: below e is "not worth more than a bare mention", Kass & Raftery 1995;
#: docs/design/trust_region_search.md, "Coarse-to-fine phases")
FINE_OPTIONS = {**RETRAIN_OPTIONS, "stall_atol": 1.0}


def search_options(phase=None, user=None):
    """The driver's options for BSVR and BTSVC: the piecewise-smooth defaults
    (:data:`bsvm_scale.optimization.driver.PIECEWISE_OPTIONS`), then a phase's
    (:func:`retrain_options`, :data:`COARSE_OPTIONS` or :data:`FINE_OPTIONS`), then the user's
    ``optimizer_options``."""
    return {**PIECEWISE_OPTIONS, **(phase or {}), **(user or {})}


def retrain_options(hessian):
    """Optimizer options of a retraining: :data:`RETRAIN_HESSIAN_OPTIONS` when
    it begins with the earlier search's model Hessian (not None), else
    :data:`RETRAIN_OPTIONS`."""
    return dict(RETRAIN_OPTIONS if hessian is None else RETRAIN_HESSIAN_OPTIONS)


#: initial trust radius (max-norm, log units) of the full-data phase of
#: coarse-to-fine starts: the full-data optimum lies close to the subsample
#: optimum, and a first step of the full radius tends to be rejected or to
#: land far below the start (docs/design/trust_region_search.md, "Coarse-to-fine phases")
FINE_FIRST_STEP = 0.2
#: largest trust radius of the full-data phase of coarse-to-fine starts and of
#: retraining: it begins at the subsample (or earlier) optimum, which is close
FINE_MAX_STEP = 0.5



def evidence_weights(log_evidences):
    """Weights of an evidence-weighted committee of starts: proportional to
    ``P(D | theta_k)``, i.e. ``exp(ln evidence_k)`` normalised (computed from
    the differences to the largest, so that evidences of thousands of nats
    do not overflow)."""
    ev = np.asarray(log_evidences, dtype=float)
    w = np.exp(ev - np.max(ev))
    return w / w.sum()


def best_start(results):
    """Index of the start with the highest evidence (lowest ``fun``)."""
    funs = [r.fun if np.isfinite(r.fun) else np.inf for r in results]
    return int(np.argmin(funs))


#: how an ARD search begins (``ard_init`` of BayesianSVR and BayesianSVC)
ARD_INIT = ("isotropic", "start", "continuation")
#: the route of BSVR and BTSVC ARD searches when ``ard_init`` is not given
#: (pipelines key it into task keys, :mod:`bsvm_scale.pipeline.run.fingerprint`)
DEFAULT_ARD_INIT = "continuation"


def check_ard_init(value):
    """Validate ``ard_init``."""
    if value not in ARD_INIT:
        raise ValueError(f"ard_init must be one of {list(ARD_INIT)}; got {value!r}.")
    return value


def isotropic_stage(fit_isotropic, X, y, thetas, n_jobs=None):
    """The isotropic first stage of ARD searches (isotropic-to-ARD continuation).

    ``fit_isotropic(X, y, theta0)`` fits the isotropic model (one ``kappa``)
    from the ARD start ``theta0``; the ARD search then begins at its optimum
    with every ``kappa_l`` equal to its ``kappa``. The ARD model contains the
    isotropic one and the search keeps its best point, so the ARD evidence is
    at least the isotropic optimum's. The fits are independent and run on up
    to ``n_jobs`` threads (:func:`bsvm_scale._util.threads.thread_map`).
    Returns one fitted model per start, or None where the fit failed (with a
    warning; that start then runs as given).
    """
    def fit(theta0):
        try:
            return fit_isotropic(X, y, theta0)
        except (FloatingPointError, np.linalg.LinAlgError, ValueError) as exc:
            return exc

    stage = thread_map(fit, thetas, n_jobs)
    for k, fitted in enumerate(stage):
        if isinstance(fitted, Exception):
            warnings.warn(f"the isotropic first stage of ARD start {k} failed ({fitted}); "
                          "that start runs from its starting point only.",
                          ConvergenceWarning, stacklevel=4)
            stage[k] = None
    return stage


def coarse_starts(make_objective, X, y, thetas, m, random_state, run, n_jobs=None,
                  sample_weight=None):
    """The subsample phase of coarse-to-fine starts (``init_subsample``).

    Every start is optimised on the same seeded subsample of ``m`` of the
    ``n`` cases (``make_objective(X_m, y_m)`` gives a fresh objective,
    ``run(objective, theta0)`` the :class:`StartResult`, in the box the
    caller's model gives that start); the start with the best subsample
    evidence is then refined on the full data.
    The starts are independent and run on up to ``n_jobs`` threads
    (:func:`bsvm_scale._util.threads.thread_map`). Returns ``(records, best,
    dual0, objective)``: one start record per start (with ``n_samples``), the
    index of the best one, the full-data dual warm start (the best subsample
    solution on its own cases and 0 elsewhere, so that the MAP function it
    implies is exactly the subsample's) and the best start's objective.
    ``([], None, None, None)`` when ``m`` is None or ``n <= 2 m``. With case
    weights ``sample_weight`` the subsample keeps its cases' weights:
    ``make_objective(X_m, y_m, w_m)``.
    """
    n = X.shape[0]
    if m is None or n <= 2 * int(m):
        return [], None, None, None
    m = int(m)
    idx = subsample_indices(n, m, random_state)
    Xm, ym = np.ascontiguousarray(X[idx]), np.ascontiguousarray(y[idx])
    data = (Xm, ym) if sample_weight is None else (Xm, ym, np.ascontiguousarray(sample_weight[idx]))

    def one(theta0):
        obj = make_objective(*data)
        record = start_record(run(obj, theta0), n_samples=m)
        return record, obj

    records, objectives = zip(*thread_map(one, thetas, n_jobs))
    best = int(np.argmin([r["neg_log_evidence"] for r in records]))
    dual0 = np.zeros(n)
    chosen = objectives[best]
    dual0[idx] = chosen.best.dual if chosen.best is not None else 0.0
    return list(records), best, dual0, chosen


def best_isotropic(stage):
    """The isotropic search (an outcome with ``log_evidence``) with the
    highest evidence in ``stage`` (None if every one failed): the ARD search continues from this one only, one ARD run
    instead of one per start; the runs from the other isotropic optima add
    cost and seldom a better evidence (docs/design/trust_region_search.md,
    "ARD")."""
    fitted = [iso for iso in stage if iso is not None]
    return max(fitted, key=lambda m: m.log_evidence) if fitted else None


def ard_runs(fit_isotropic, X, y, thetas, origins, mode, refined=False, n_jobs=None):
    """Which optimiser runs an ARD search makes (``ard_init``), for BSVR and BTSVC.

    ``mode`` is ``"start"`` (also for isotropic models and retraining: no
    isotropic stage), ``"isotropic"`` or ``"continuation"``. The isotropic
    model is fitted from every ``origins[k]`` (:func:`isotropic_stage`);
    ``thetas[k]`` runs from itself unless ``mode="continuation"`` and its
    isotropic fit worked (a ``refined`` coarse-to-fine start, which begins at
    its subsample optimum, always runs). Returns ``(direct, stage, best)``:
    a flag per start, the isotropic fits (None where none was made or it
    failed) and the best one, from which the single continuation runs
    (:func:`best_isotropic`; None: no continuation).
    """
    stage = (isotropic_stage(fit_isotropic, X, y, origins, n_jobs) if mode != "start"
             else [None] * len(thetas))
    direct = [refined or iso is None or mode != "continuation" for iso in stage]
    return direct, stage, best_isotropic(stage)


def ard_hessian(B, lead, n_kappa):
    """The isotropic model Hessian ``B`` lifted to the ARD parameters
    (``[lead entries, ln kappa, ln kappa_b]`` to ``[lead entries, ln kappa_1..d,
    ln kappa_b]``), or None without one.

    With ``P`` the map that copies ``ln kappa`` into every ``ln kappa_l``
    (:meth:`~bsvm_scale.optimization.search.SearchModel.ard_theta`), the ARD
    evidence along ``P`` is the isotropic one, so ``P^T H P`` must be ``B``:
    ``H = E B E^T + (B_kk / d) (I - 1 1^T / d)`` on the ``kappa`` block, ``E = P
    (P^T P)^-1``, meets that exactly and gives each direction that tells the
    inputs apart (orthogonal to ``P``) the isotropic curvature shared out per
    input. Positive definite when ``B`` is."""
    if B is None:
        return None
    B = np.asarray(B, dtype=float)
    k, d = int(lead), int(n_kappa)
    E = np.zeros((k + d + 1, B.shape[0]))
    E[:k, :k] = np.eye(k)
    E[k:k + d, k] = 1.0 / d
    E[-1, -1] = 1.0
    H = E @ B @ E.T
    H[k:k + d, k:k + d] += B[k, k] / d * (np.eye(d) - 1.0 / d)
    return 0.5 * (H + H.T)


def subsample_indices(n, m, random_state):
    """Sorted indices of the ``m`` of ``n`` cases used by the subsample phase
    of coarse-to-fine starts; ``random_state=None`` means seed 0, so that a
    fit (and a resumed pipeline start) is repeatable."""
    seed = 0 if random_state is None else random_state
    return np.sort(resolve_rng(seed).choice(int(n), size=int(m), replace=False))
