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
search; the models are independent tasks (threads in ``fit``). Case weights
are those of the whole fit (``sample_weight`` times ``class_weight`` of the
original labels), restricted to each model's cases.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from sklearn.base import clone

from .._util.threads import thread_map
from ..inference.coupling import COUPLINGS, ovo_pairs, ovo_votes, pairwise_matrix
from ..inference.evidence_trig import trig_class_probability

__all__ = ["Problem", "binary_pairs", "binary_problems", "subset", "check_multiclass_init", "fit_binaries",
           "gather", "class_probabilities", "decision_values"]


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


def fit_binaries(model, design, X, problems, callback, init, warm, case_ids, weights,
                 n_jobs, inner_jobs):
    """Fit one binary model per problem (on ``n_jobs`` threads, each model's
    own search on ``inner_jobs``) and :func:`gather` them into ``model``.

    Each is a clone of ``model`` fitted on its rows (``design`` codes them as
    the fit's table, if any) with its own entry of ``init`` (checked here)
    and ``warm`` (None or a list), its rows' ``case_ids`` and ``weights``,
    and ``callback((m, start), record, state)`` for model ``m``.
    """
    k = model.classes_.size
    init = check_multiclass_init(init, len(problems), model.multi_class, k)

    def fit_one(m):
        cb = None if callback is None else \
            (lambda s, rec, state: callback((m, s), rec, state))
        rows = problems[m].rows
        est = clone(model).set_params(warm_start_from=None, n_jobs=inner_jobs, class_weight=None)
        est._fit_binary_labels(design(subset(X, rows)), problems[m].y01, cb, init[m],
                               None if warm is None else warm[m], subset(case_ids, rows),
                               subset(weights, rows))
        return est

    gather(model, thread_map(fit_one, range(len(problems)), n_jobs), problems)


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
