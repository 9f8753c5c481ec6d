"""More than two classes from binary BTSVC models (thesis Appendix H, C4).

Two ways of splitting ``k`` classes into binary problems, chosen by
``BayesianSVC(multi_class=...)``:

* ``"ovr"`` (one-versus-rest): ``k`` models, model ``i`` separating class
  ``i`` from all others on every case; the ``k`` probabilities (5.42) are
  normalised to sum to one.
* ``"ovo"`` (one-versus-one): ``k (k - 1) / 2`` models, model ``(i, j)``
  fitted on the cases of classes ``i`` and ``j`` only (positive for ``i``),
  in :func:`~bsvm_scale.inference.coupling.ovo_pairs` order; their
  probabilities (5.42) are coupled into class probabilities
  (:mod:`bsvm_scale.inference.coupling`, ``coupling=...``).

Each binary model has hyperparameters of its own, chosen by its own evidence
search; the models are independent tasks (threads in ``fit``). With
``shared_kernel=True`` (:func:`fit_shared`) they have one covariance instead,
chosen by the sum of their evidences (5.35) in one search
(:class:`~bsvm_scale.optimization.summed.SummedObjective`), on inputs
standardised once on all cases. Case weights are those of the whole fit
(``sample_weight`` times ``class_weight`` of the original labels),
restricted to each model's cases.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from .._util.threads import fit_threads, thread_map
from ..inference.coupling import COUPLINGS, ovo_pairs, ovo_votes, pairwise_matrix
from ..inference.evidence_trig import trig_class_probability
from ..optimization.objective import Warm
from ..optimization.search import Data, Retrain
from .._util.base import standardizer_for
from .._util.validation import check_classification_data
from .search_hooks import SharedSearch
from .warm_start import carried_dual, keep_support_case_ids, previous_hessians, previous_thetas

__all__ = ["Problem", "FitJob", "binary_pairs", "separate_models", "binary_problems", "subset", "check_multiclass_init",
           "fit_problem", "fit_binaries", "fit_one_binary", "assemble", "fit_shared",
           "retrain_starts", "shared_retrain", "gather", "class_probabilities", "decision_values"]


class Problem(NamedTuple):
    """One binary model's share of the data: the rows of ``X`` it is fitted
    on (None: all) and its 0/1 labels (1: the first or only class)."""

    rows: np.ndarray | None
    y01: np.ndarray


def binary_pairs(n_classes, strategy):
    """The class indices of each binary model of ``strategy`` ("ovr" or
    "ovo"), in ``estimators_`` order: ``(i, None)`` for class ``i`` against
    the rest, ``(i, j)`` for the pair of classes ``i < j``."""
    if strategy == "ovr":
        return [(i, None) for i in range(n_classes)]
    return ovo_pairs(n_classes)


def separate_models(model, n_classes):
    """The binary models ``model`` fits on ``n_classes`` classes with searches
    of their own: one per class ("ovr") or pair ("ovo"); 0 for two classes
    and for one search of them all (``shared_kernel``)."""
    if n_classes <= 2 or model.shared_kernel:
        return 0
    return len(binary_pairs(n_classes, model.multi_class))


def binary_problems(y, classes, strategy):
    """The binary problems of ``strategy`` ("ovr" or "ovo") for labels ``y``."""
    problems = []
    for i, j in binary_pairs(classes.size, strategy):
        rows = None if j is None else np.flatnonzero((y == classes[i]) | (y == classes[j]))
        problems.append(Problem(rows, (subset(y, rows) == classes[i]).astype(np.int64)))
    return problems


def subset(a, rows):
    """``a`` restricted to ``rows`` (None passes through either way)."""
    return a if a is None or rows is None else a[rows]


def check_multiclass_init(init, n_models, strategy, n_classes):
    """``fit(init=...)`` with more than two classes: one dict or None per binary model."""
    if init is None:
        return [None] * n_models
    if not isinstance(init, (list, tuple)) or len(init) != n_models:
        what = ("a dict or None per class, in classes_ order" if strategy == "ovr" else
                "a dict or None per pair of classes, in (0, 1), (0, 2), ... order")
        raise ValueError(f"y has {n_classes} classes, so with multi_class={strategy!r} init "
                         f"must be a list of {n_models} entries ({what}); got {init!r:.200}.")
    return list(init)


class FitJob(NamedTuple):
    """A BTSVC fit's validated data (``BayesianSVC._prepare``): the design
    matrix, the labels, the binary problems (None: two classes), the
    retraining's warm starts (None, a ``Retrain`` or one per problem), the
    case ids and the case weights (None: all 1)."""

    X: np.ndarray
    y: np.ndarray
    problems: list | None
    warm: object
    case_ids: np.ndarray | None
    weights: np.ndarray | None


def fit_problem(model, job, m, callback=None, init=None, inner_jobs=None):
    """Binary model ``m`` of ``job``: a clone of ``model`` fitted on its rows
    (coded as the fit's table, if any) with its entry of the retraining's
    warm starts, its rows' case ids and weights, ``init`` (a dict or None)
    and ``callback(start, record, state)``, its search on ``inner_jobs``
    threads."""
    rows = job.problems[m].rows
    est = clone(model).set_params(warm_start_from=None, n_jobs=inner_jobs, class_weight=None)
    est._fit_binary_labels(model._design(subset(job.X, rows)), job.problems[m].y01, callback,
                           init, None if job.warm is None else job.warm[m],
                           subset(job.case_ids, rows), subset(job.weights, rows))
    return est


def fit_binaries(model, job, callback, init, n_jobs, inner_jobs):
    """Fit one binary model per problem of ``job`` (:func:`fit_problem`, on
    ``n_jobs`` threads, each search on ``inner_jobs``) and :func:`gather`
    them into ``model``. ``init``: one entry per model (checked here);
    ``callback((m, start), record, state)`` for model ``m``."""
    init = check_multiclass_init(init, len(job.problems), model.multi_class, model.classes_.size)

    def fit_one(m):
        cb = None if callback is None else \
            (lambda s, rec, state: callback((m, s), rec, state))
        return fit_problem(model, job, m, cb, init[m], inner_jobs)

    gather(model, thread_map(fit_one, range(len(job.problems)), n_jobs), job.problems)
    keep_support_case_ids(model, job.case_ids)


def fit_one_binary(model, X, y, index, sample_weight=None, callback=None, init=None,
                   case_ids=None):
    """Binary model ``index`` (``estimators_`` order) of ``model``'s fit on
    ``X``, ``y`` alone -- what ``model.fit`` fits for it, on ``n_jobs``
    threads -- for a pipeline's task per binary model; :func:`assemble`
    makes the multi-class model of all of them. ``init`` and ``callback``
    as for two classes. Returns the fitted binary estimator (labels 0/1)."""
    job = model._prepare(X, y, sample_weight, case_ids)
    n = separate_models(model, model.classes_.size)
    if not 0 <= int(index) < n:
        raise ValueError(f"index must be one of the {n} separately fitted binary models of "
                         f"this fit (multi_class={model.multi_class!r}, "
                         f"shared_kernel={model.shared_kernel!r}, {model.classes_.size} "
                         f"classes); got {index!r}.")
    with fit_threads(model.n_jobs):
        return fit_problem(model, job, int(index), callback, init, model.n_jobs)


def assemble(model, X, y, estimators, sample_weight=None, case_ids=None):
    """``model`` fitted on ``X``, ``y`` from its binary models ``estimators``
    (:func:`fit_one_binary` for each index, in order), without fitting."""
    job = model._prepare(X, y, sample_weight, case_ids, retrain=False)
    n = separate_models(model, model.classes_.size)
    if len(estimators) != n or n == 0:
        raise ValueError(f"estimators must hold the {n} separately fitted binary models of "
                         f"this fit (multi_class={model.multi_class!r}, shared_kernel="
                         f"{model.shared_kernel!r}, {model.classes_.size} classes); got "
                         f"{len(estimators)}.")
    gather(model, list(estimators), job.problems)
    keep_support_case_ids(model, job.case_ids)
    return model


def fit_shared(model, job, callback, init):
    """Fit the binary models of ``job`` with one covariance
    (``shared_kernel=True``) and :func:`gather` them into ``model``.

    One evidence search (``model``'s starts; ``init``: one dict, as for two
    classes) of the sum of the binary models' evidences, each evaluation
    solving their duals on ``n_jobs`` threads; ``callback(start, record,
    state)`` as for two classes. The retraining's warm starts (one per
    problem) are combined by :func:`shared_retrain`.
    """
    X, problems, weights = job.X, job.problems, job.weights
    scaler = standardizer_for(model, X, weights)
    Xs = scaler.transform(X)
    parts = [(p.rows, np.where(p.y01 == 1, 1.0, -1.0), subset(weights, p.rows)) for p in problems]
    retrain = None if job.warm is None else \
        shared_retrain(job.warm, [p[1].shape[0] for p in parts])
    hooks = SharedSearch(model._trig_search(X), parts, model.n_jobs)
    run = model._run_search(hooks, Data(Xs, np.zeros(X.shape[0]), weights), X.shape[1], init,
                            retrain, callback)
    estimators = []
    for p, final in zip(problems, run.final.detail):
        est = clone(model).set_params(warm_start_from=None, class_weight=None)
        _, _, est.classes_, _ = check_classification_data(est, model._design(subset(X, p.rows)),
                                                          p.y01)
        est._groups = model._groups
        est.x_mean_, est.x_scale_ = scaler.mean, scaler.scale
        est._set_run_fitted(run, final, subset(Xs, p.rows), subset(job.case_ids, p.rows))
        estimators.append(est)
    gather(model, estimators, problems)
    keep_support_case_ids(model, job.case_ids)


def retrain_starts(model, prev, classes, case_ids, problems):
    """A retraining's :class:`~bsvm_scale.optimization.search.Retrain` per
    binary model of ``model``: the earlier optimum, a warm start from the
    earlier ``alpha`` on the cases still present (None without
    ``case_ids``) and the earlier search's final model Hessian (None where
    it has none); a list of them, one per binary model of ``problems``, with
    more than two classes."""
    def retrain(theta, earlier, hessian, rows=None):
        alpha0 = carried_dual(earlier, subset(case_ids, rows), magnitude=True)
        return Retrain(theta, None if alpha0 is None else Warm(alpha0), hessian)

    thetas, hessians = previous_thetas(prev, classes), previous_hessians(prev, classes)
    if classes.size == 2:
        return retrain(thetas, prev, hessians)
    before = getattr(prev, "multi_class", "ovr")
    if before != model.multi_class:
        raise ValueError(f"warm_start_from: the earlier model has multi_class={before!r}, "
                         f"this one {model.multi_class!r}; retrain with the same multi_class.")
    shared_before = getattr(prev, "shared_kernel", False)
    if model.shared_kernel and not shared_before:
        raise ValueError("warm_start_from: the earlier model's binary models have "
                         "hyperparameters of their own (shared_kernel=False); retrain with "
                         "the same shared_kernel.")
    if shared_before != model.shared_kernel:
        hessians = [None] * len(problems)  # the curvature of the other objective (a sum or a part)
    return [retrain(t, e, h, p.rows)
            for t, e, h, p in zip(thetas, prev.estimators_, hessians, problems)]


def shared_retrain(retrains, sizes):
    """One :class:`~bsvm_scale.optimization.search.Retrain` of a shared
    search from the binary models' (the earlier model's, which shared one
    optimum, :func:`retrain_starts`): their alphas end to end (zeros for a
    model of ``sizes[k]`` cases that carries none)."""
    theta = retrains[0].theta
    if all(r.warm is None for r in retrains):
        return Retrain(theta, None, retrains[0].hessian)
    alpha = [np.zeros(n) if r.warm is None else np.asarray(r.warm.dual, dtype=np.float64)
             for r, n in zip(retrains, sizes)]
    return Retrain(theta, Warm(np.concatenate(alpha)), retrains[0].hessian)


def gather(model, estimators, problems):
    """Set the multi-class model's per-binary-model attributes from its fitted
    ``estimators``; ``support_`` is mapped to rows of the ``X`` given to ``fit``."""
    model.estimators_ = estimators
    model.hyperparameters_ = [e.hyperparameters_ for e in estimators]
    model.log_evidence_ = np.array([e.log_evidence_ for e in estimators])
    model.n_iter_ = np.array([e.n_iter_ for e in estimators])
    model.n_opt_iter_ = np.array([e.n_opt_iter_ for e in estimators])
    model.starts_ = [e.starts_ for e in estimators]
    model.support_ = [e.support_ if p.rows is None else p.rows[e.support_]
                      for e, p in zip(estimators, problems)]
    model.dual_coef_ = [e.dual_coef_ for e in estimators]
    model.__dict__.pop("ard_groups_", None)  # an earlier fit's
    if hasattr(estimators[0], "ard_groups_"):  # the table's tied ARD groups, for retraining
        model.ard_groups_ = estimators[0].ard_groups_


def class_probabilities(strategy, coupling, n_classes, mu, sd):
    """Class probabilities from the binary models' latent moments ``mu``, ``sd``
    (one column per model): (5.42) per model, then normalised ("ovr") or
    coupled ("ovo")."""
    P = np.column_stack([trig_class_probability(mu[:, m], sd[:, m]) for m in range(mu.shape[1])])
    if strategy == "ovo":
        return COUPLINGS[coupling](pairwise_matrix(P, n_classes))
    s = P.sum(axis=1, keepdims=True)
    s[s <= 0.0] = 1.0
    return P / s


def decision_values(strategy, shape, n_classes, mu):
    """``decision_function`` of a multi-class model: the binary models' latent
    means, or for a one-versus-one model with ``shape="ovr"`` scikit-learn's
    one-versus-rest shaped votes (:func:`~bsvm_scale.inference.coupling.ovo_votes`)."""
    if strategy == "ovo" and shape == "ovr":
        return ovo_votes(mu, n_classes)
    return mu
