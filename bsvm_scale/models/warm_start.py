"""Retraining warm-started from an earlier fit (``warm_start_from``).

A nightly job retrains on data that changed a little since the last run. The
earlier model's log hyperparameters ``theta_`` are the only start, refined on
the full data within the trust radius of the coarse-to-fine refinement
(:data:`bsvm_scale.optimization.starts.FINE_MAX_STEP`, first step
:data:`bsvm_scale.optimization.starts.FINE_FIRST_STEP`): no other starts, no subsample
phase and no isotropic first stage. The search begins with the earlier
search's final quasi-Newton model Hessian where the earlier model kept one
(:func:`previous_hessians`), so its first step is a quasi-Newton step on the
new data (within the first trust radius) rather than a gradient step to the
trust radius; it ends at the earlier optimum when the model promises less than
``ftol`` from moving, and at the first evaluation that does not improve
(:func:`bsvm_scale.optimization.starts.retrain_options`). A model file from
before the Hessian was kept gives the diagonal first guess and a stop after 2
evaluations without improvement. The MAP solves start as usual (the low-rank
Newton start of :mod:`bsvm_scale.inference.map_lowrank` when its factor is
exact). With ``fit(init=...)`` the start is ``init["theta"]``: pipelines run
a retraining as one task per partition and resume it like any start.
Pipelines name the earlier run with ``warm_start = "RUN_DIR"`` in a model
table (:func:`run_model_file` finds each partition's model there).

Case identifiers carry the earlier dual solution over as well. A fit given
``case_ids`` (one unique integer or string per training case) keeps those of
its support vectors (``support_case_ids_``); a retraining given ``case_ids``
begins its first MAP solve from the earlier dual values of the cases still
present and zero for the new ones (:func:`carried_dual`). That start goes to
the same start policy as any previous solution
(:func:`bsvm_scale.inference.map_lowrank.choose_start`): on data where the
low-rank Newton start is exact that start is taken instead, elsewhere (many
inputs, a truncated factor) the SMO begins next to the earlier optimum
rather than at zero.
"""

from __future__ import annotations

import os

import numpy as np

from .._util.validation import design_width

__all__ = ["previous_model", "previous_thetas", "previous_hessians", "run_model_file",
           "check_case_ids", "carried_dual", "keep_support_case_ids"]


def previous_model(value, cls, n_features, ard, groups=None):
    """The fitted model ``warm_start_from`` names, checked against this fit.

    Parameters
    ----------
    value : None, a fitted ``cls`` or the path of its model file
        (:func:`bsvm_scale.storage.save_model`).
    cls : the estimator class being fitted.
    n_features : int
        Columns of the training design matrix (a table's coded columns).
    ard : bool
        The ``ard`` setting of this fit (the layouts of ``theta`` must match).
    groups : ndarray, optional
        The tied ARD groups of this fit (a table's one-hot columns), which
        the earlier model must share.

    Returns
    -------
    The model, or None when ``value`` is None.
    """
    if value is None:
        return None
    if isinstance(value, (str, os.PathLike)):
        from ..storage import load_model

        model = load_model(value)
    else:
        model = value
    if type(model) is not cls:
        raise ValueError(f"warm_start_from must be a fitted {cls.__name__} or the path of its "
                         f"model file; got {type(model).__name__}.")
    if not hasattr(model, "n_features_in_"):
        raise ValueError(f"warm_start_from: the {cls.__name__} given is not fitted.")
    if design_width(model) != int(n_features):
        raise ValueError(f"warm_start_from: the earlier model takes {design_width(model)} "
                         f"inputs; the data has {n_features}.")
    if bool(model.ard) != bool(ard):
        raise ValueError(f"warm_start_from: the earlier model has ard={model.ard}, this fit "
                         f"ard={ard}; their hyperparameters do not correspond.")
    before = getattr(model, "ard_groups_", None)
    if (before is None) != (groups is None) or (groups is not None
                                               and not np.array_equal(before, groups)):
        raise ValueError("warm_start_from: the earlier model's inputs were coded with other "
                         "columns or categories; retrain from a model fitted on the same "
                         "table columns.")
    return model


def previous_thetas(model, classes=None):
    """The earlier model's log hyperparameters: one array, or (more than two
    classes) a list in ``estimators_`` order; ``classes`` must be the earlier
    model's classes."""
    if classes is not None and not np.array_equal(np.asarray(model.classes_),
                                                  np.asarray(classes)):
        raise ValueError(f"warm_start_from: the earlier model's classes {list(model.classes_)} "
                         f"differ from the data's {list(classes)}.")
    if classes is None or len(classes) == 2:
        return np.asarray(model.theta_, dtype=float).copy()
    return [np.asarray(e.theta_, dtype=float).copy() for e in model.estimators_]


def previous_hessians(model, classes=None):
    """The final model Hessian of the earlier fit's chosen search
    (:attr:`bsvm_scale.optimization.driver.StartResult.hessian`, kept in its
    ``starts_`` record), which begins the retraining's search: the curvature
    of the evidence barely changes when a few cases do, so the first step
    is a quasi-Newton step and the search can end at its first point. None
    where the earlier fit has none (fixed hyperparameters, a model file
    written before it was kept); a list in ``estimators_`` order for more
    than two classes, as :func:`previous_thetas`."""
    if classes is not None and len(classes) > 2:
        return [_chosen_hessian(e) for e in model.estimators_]
    return _chosen_hessian(model)


def _chosen_hessian(model):
    from ..optimization.trust_region import check_hessian

    theta = np.asarray(model.theta_, dtype=float)
    found = [r for r in getattr(model, "starts_", ()) if isinstance(r, dict)
             and r.get("hessian") is not None and np.array_equal(r.get("theta"), theta)]
    if not found:
        return None
    try:
        return check_hessian(found[0]["hessian"], theta.size)
    except ValueError as err:
        import warnings

        warnings.warn(f"warm_start_from: the earlier model's stored search Hessian is not "
                      f"usable ({err}); the retraining begins with the diagonal first guess.",
                      RuntimeWarning, stacklevel=4)
        return None


def run_model_file(run_dir, dataset, model, partition):
    """The model file an earlier pipeline run kept for ``(dataset, model,
    partition)`` (``RUN_DIR/models/<dataset>__<model>__p<k>.h5``), or None."""
    from pathlib import Path

    path = Path(run_dir) / "models" / f"{dataset}__{model}__p{int(partition):03d}.h5"
    return str(path) if path.is_file() else None


def check_case_ids(case_ids, n):
    """``case_ids`` as a 1-D array of ``n`` unique integers or strings (None stays None).

    Raises
    ------
    ValueError
        Naming ``case_ids``, when it has another length, another type of
        value, or a repeated identifier.
    """
    if case_ids is None:
        return None
    ids = np.asarray(case_ids)
    if ids.ndim != 1 or ids.shape[0] != n:
        raise ValueError(f"case_ids must hold one identifier per training case ({n}); got "
                         f"shape {ids.shape}.")
    values = ids.tolist()
    if ids.dtype.kind in "iu" or (ids.dtype.kind == "O" and all(
            isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in values)):
        ids = ids.astype(np.int64)
    elif ids.dtype.kind in "OUS" and all(isinstance(v, (str, bytes, np.str_, np.bytes_))
                                        for v in values):
        ids = np.array([v.decode() if isinstance(v, bytes) else str(v) for v in values],
                       dtype=str)
    else:
        raise ValueError(f"case_ids must be integers or strings; got dtype {ids.dtype}.")
    uniq, counts = np.unique(ids, return_counts=True)
    if uniq.size != n:
        raise ValueError(f"case_ids must be unique; {uniq[counts > 1][:5].tolist()} occur "
                         "more than once.")
    return ids


def keep_support_case_ids(model, case_ids):
    """Set ``model.support_case_ids_``, the identifiers of its support vectors
    (``support_``, an array or one per binary model), or remove an earlier fit's
    when this fit had no ``case_ids``."""
    if case_ids is None:
        model.__dict__.pop("support_case_ids_", None)
    elif isinstance(model.support_, list):
        model.support_case_ids_ = [case_ids[np.asarray(s, dtype=np.int64)] for s in model.support_]
    else:
        model.support_case_ids_ = case_ids[np.asarray(model.support_, dtype=np.int64)]


def carried_dual(model, case_ids, magnitude=False):
    """The earlier model's dual solution on the cases still present.

    Parameters
    ----------
    model : fitted binary BayesianSVC or BayesianSVR, or None
        Its ``support_case_ids_`` name the cases of ``dual_coef_``.
    case_ids : ndarray of shape (n,) or None
        Identifiers of this fit's training cases (:func:`check_case_ids`).
    magnitude : bool, default=False
        Carry ``|dual_coef_|``: BTSVC's dual variables are ``alpha >= 0`` and
        ``dual_coef_ = y alpha`` (5.9); BSVR's ``nu`` is ``dual_coef_`` itself.

    Returns
    -------
    ndarray of shape (n,) or None
        The earlier dual value of every case whose identifier was a support
        vector, 0 for the others; None when either side has no identifiers,
        the identifiers are of different types, or no case is shared.
    """
    ids_before = None if model is None else getattr(model, "support_case_ids_", None)
    if case_ids is None or ids_before is None or len(ids_before) == 0:
        return None
    ids_before = np.asarray(ids_before)
    if (ids_before.dtype.kind == "U") != (case_ids.dtype.kind == "U"):
        import warnings

        kinds = {True: "strings", False: "integers"}
        warnings.warn(f"case_ids are {kinds[case_ids.dtype.kind == 'U']}, the earlier model's "
                      f"{kinds[ids_before.dtype.kind == 'U']}: no case matches, so the SMO "
                      "does not start from the earlier dual solution.", UserWarning,
                      stacklevel=4)
        return None
    order = np.argsort(ids_before)
    pos = np.clip(np.searchsorted(ids_before, case_ids, sorter=order), 0, ids_before.size - 1)
    src = order[pos]
    hit = ids_before[src] == case_ids
    if not np.any(hit):
        return None
    coef = np.asarray(model.dual_coef_, dtype=np.float64)
    dual = np.zeros(case_ids.shape[0])
    dual[hit] = np.abs(coef[src[hit]]) if magnitude else coef[src[hit]]
    return dual
