"""Retraining warm-started from an earlier fit (``warm_start_from``).

A nightly job retrains on data that changed a little since the last run. The
earlier model's log hyperparameters ``theta_`` are the only start, refined on
the full data within the trust radius of the coarse-to-fine refinement
(:data:`bsvm_scale.optimization.starts.FINE_MAX_STEP`, first step
:data:`bsvm_scale.optimization.starts.FINE_FIRST_STEP`): no other starts, no subsample
phase and no isotropic first stage. The MAP solves start as usual (the
low-rank Newton start of :mod:`bsvm_scale.inference.map_lowrank` when its factor is
exact). With ``fit(init=...)`` the start is ``init["theta"]``: pipelines run
a retraining as one task per partition and resume it like any start.
Pipelines name the earlier run with ``warm_start = "RUN_DIR"`` in a model
table (:func:`run_model_file` finds each partition's model there).
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["previous_model", "previous_thetas", "run_model_file"]


def previous_model(value, cls, n_features, ard):
    """The fitted model ``warm_start_from`` names, checked against this fit.

    Parameters
    ----------
    value : None, a fitted ``cls`` or the path of its model file
        (:func:`bsvm_scale.storage.save_model`).
    cls : the estimator class being fitted.
    n_features : int
        Inputs of the training data.
    ard : bool
        The ``ard`` setting of this fit (the layouts of ``theta`` must match).

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
    if int(model.n_features_in_) != int(n_features):
        raise ValueError(f"warm_start_from: the earlier model takes {model.n_features_in_} "
                         f"inputs; the data has {n_features}.")
    if bool(model.ard) != bool(ard):
        raise ValueError(f"warm_start_from: the earlier model has ard={model.ard}, this fit "
                         f"ard={ard}; their hyperparameters do not correspond.")
    return model


def previous_thetas(model, classes=None):
    """The earlier model's log hyperparameters: one array, or (one-versus-rest)
    a list in ``classes`` order, which must be the earlier model's classes."""
    if classes is not None and not np.array_equal(np.asarray(model.classes_),
                                                  np.asarray(classes)):
        raise ValueError(f"warm_start_from: the earlier model's classes {list(model.classes_)} "
                         f"differ from the data's {list(classes)}.")
    if classes is None or len(classes) == 2:
        return np.asarray(model.theta_, dtype=float).copy()
    return [np.asarray(e.theta_, dtype=float).copy() for e in model.estimators_]


def run_model_file(run_dir, dataset, model, partition):
    """The model file an earlier pipeline run kept for ``(dataset, model,
    partition)`` (``RUN_DIR/models/<dataset>__<model>__p<k>.h5``), or None."""
    from pathlib import Path

    path = Path(run_dir) / "models" / f"{dataset}__{model}__p{int(partition):03d}.h5"
    return str(path) if path.is_file() else None
