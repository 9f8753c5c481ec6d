"""A multi-class BTSVC start as Dask tasks: one task per binary model, then
one that assembles them.

A BTSVC whose binary models each have a kernel of their own (the default;
not ``shared_kernel``) fits ``k (k - 1) / 2`` pairwise models ("ovo") or
``k`` one-versus-rest models on a partition with ``k > 2`` classes. These are
independent searches, so :func:`expand_binaries` gives every such start task
(``<data set>__<model>__p<partition>__s<start>``) one task per binary model
(``...__b<index>``, ``estimators_`` order; spec ``binary``: the index), and
makes the start task wait for them (``after``). A binary task fits its model
alone (:func:`~bsvm_scale.models.multiclass.fit_one_binary`: the same fit as
inside ``BayesianSVC.fit``), with a checkpoint of its own; the start task then
assembles the multi-class model from their model files
(:func:`~bsvm_scale.models.multiclass.assemble`), predicts and scores it, so
the run's results and model files are those of one start task as before. On
a cluster the binary models of one start run on as many workers as are free.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

__all__ = ["expand_binaries", "n_separate_models", "is_binary"]


def is_binary(record):
    """True for the result (or spec) of a binary-model task."""
    return record.get("binary") is not None


def n_separate_models(spec, data):
    """The binary models the start task ``spec`` fits as tasks of their own
    (0: none, the start is one task): BTSVC starts with more than two classes
    in the training partition and a kernel per binary model."""
    if spec["kind"] != "btsvc" or int(spec.get("start", -1)) < 0 or \
            spec.get("fix_from") is not None or spec.get("evidence_grid") is not None:
        return 0
    from ...models.multiclass import separate_models
    from .tasks import make_estimator

    k = np.unique(np.asarray(data[spec["dataset"]]["y"])[np.asarray(spec["train"])]).size
    if k <= 2:  # no estimator needed to know (planning stays free of model code)
        return 0
    return separate_models(make_estimator("btsvc", spec["params"]), k)


def expand_binaries(specs, data):
    """``specs`` with the binary-model tasks of every multi-class BTSVC start
    (:func:`n_separate_models`) added after them, each start task waiting for
    its own (``after``) and knowing their number (``binaries``)."""
    added = []
    for s in specs:
        n = n_separate_models(s, data)
        if n == 0:
            continue
        ids = [f"{s['task_id']}__b{b:02d}" for b in range(n)]
        for b, tid in enumerate(ids):
            task_dir = str(Path(s["task_dir"]).parent / tid) if s.get("task_dir") else None
            added.append({**s, "task_id": tid, "binary": b, "task_dir": task_dir})
        s["after"] = [*s.get("after", []), *ids]
        s["binaries"] = n
    return specs + added
