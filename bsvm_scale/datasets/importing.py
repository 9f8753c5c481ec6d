"""Bring user data in: a CSV file with a header or a ``.npy`` array becomes a
data set of the project's HDF5 format, with provenance (the source file's
SHA-256 and the import options) and optional seeded partitions, so that a
pipeline file can name it (``path = "NAME.h5"``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .._util.atomic import file_sha256
from .._util.tables import TableError, csv_header, read_csv
from ._dataset import CASE_ID, TASKS, Dataset, random_splits

__all__ = ["import_table", "case_ids_from_text", "MAX_CLASSES"]

#: a target of integers with at most this many distinct values is taken as
#: class labels when the task is not given
MAX_CLASSES = 20


def _header(path):
    """Column names of a CSV file's header, or ``x1..xd`` of a ``.npy`` array."""
    suffix = path.suffix.lower()
    if suffix == ".csv":
        return csv_header(path)
    if suffix == ".npy":
        return [f"x{k + 1}" for k in range(_npy(path).shape[1])]
    raise TableError(f"cannot import {str(path)!r}: give a .csv file with a header or a .npy "
                     "array.")


def _npy(path):
    a = np.load(path)
    if a.ndim != 2 or a.dtype.kind not in "fiub":
        raise TableError(f".npy file {str(path)!r} must hold a 2-D numeric array; got shape "
                         f"{a.shape}, dtype {a.dtype}.")
    return a


def _read(path, id_name=None):
    """``(column names, float64 array, case ids or None)`` of a CSV or ``.npy``
    file; the column ``id_name`` (case identifiers: CSV text, or a ``.npy``
    column) is left out of the names and the array."""
    if path.suffix.lower() == ".csv":
        if id_name is None:
            return (*read_csv(path), None)
        columns, A, texts = read_csv(path, text=id_name)
        return columns, A, case_ids_from_text(texts, f"id column {id_name!r} of {str(path)!r}")
    a = _npy(path)
    columns = [f"x{k + 1}" for k in range(a.shape[1])]
    if id_name is None:
        return columns, a.astype(np.float64), None
    k = columns.index(id_name)
    return (columns[:k] + columns[k + 1:], np.delete(a, k, axis=1).astype(np.float64),
            _numeric_ids(a[:, k], f"id column {id_name!r} of {str(path)!r}"))


def case_ids_from_text(texts, where, unique=True):
    """Case identifiers from text: int64 when every value is written as a
    canonical integer (``"42"``, not ``"042"``) within int64, else the
    strings themselves; with ``unique`` they must be unique
    (:class:`TableError` naming ``where`` otherwise)."""
    texts = [str(t) for t in texts]
    try:
        ints = [int(t) for t in texts]
        canonical = all(str(i) == t and -2**63 <= i < 2**63 for i, t in zip(ints, texts))
    except ValueError:
        canonical = False
    ids = np.array(ints, dtype=np.int64) if canonical else np.array(texts, dtype=str)
    return _unique(ids, where) if unique else ids


def _numeric_ids(col, where):
    if col.dtype.kind in "iub":
        return _unique(col.astype(np.int64), where)
    if not (np.all(np.isfinite(col)) and np.all(np.mod(col, 1.0) == 0.0)
            and np.all(np.abs(col) < 2.0**53)):
        raise TableError(f"{where} must hold integers (exactly representable); got "
                         f"{col[:3].tolist()} ...")
    return _unique(col.astype(np.int64), where)


def _unique(ids, where):
    uniq, counts = np.unique(ids, return_counts=True)
    if uniq.size != ids.size:
        raise TableError(f"{where} repeats {uniq[counts > 1][:5].tolist()}: case identifiers "
                         "must be unique.")
    return ids


def _target_column(columns, target, path, what="target"):
    """Index of the column ``target`` (a name, or an index) in ``columns``."""
    if target in columns:
        return columns.index(target)
    try:
        k = int(target)
    except (TypeError, ValueError):
        raise TableError(f"{what} {target!r} is not a column of {str(path)!r} (columns: "
                         f"{columns[:10]}).") from None
    if not -len(columns) <= k < len(columns):
        raise TableError(f"{what} column {k} is outside the {len(columns)} columns of "
                         f"{str(path)!r}.")
    return k % len(columns)


def _infer_task(y):
    integral = np.all(np.equal(np.mod(y, 1.0), 0.0))
    return "classification" if integral and np.unique(y).size <= MAX_CLASSES else "regression"


def _check_finite(A, columns, path):
    bad = ~np.isfinite(A)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise TableError(f"{str(path)!r} row {r + 1}, column {columns[c]!r}: {A[r, c]} (every "
                         "value must be finite).")


def import_table(path, target, *, task=None, name=None, partitions=0, n_train=None,
                 n_test=None, seed=0, id_column=None):
    """A :class:`Dataset` from a CSV file (header row) or a ``.npy`` array.

    Parameters
    ----------
    path : str or Path
    target : str or int
        The target column: its header name, or its index (``.npy``).
    task : {'regression', 'classification'}, optional
        Inferred when omitted: integer targets with at most
        :data:`MAX_CLASSES` distinct values are class labels.
    name : str, optional
        Data set name (default: the file's stem).
    partitions, n_train, n_test, seed : int
        ``partitions`` seeded random train/test splits of ``n_train``
        training cases (``n_test`` test cases, default the rest).
    id_column : str or int, optional
        A column of unique case identifiers (integers or text), kept as the
        per-case array ``extra["case_id"]`` rather than as an input: a
        pipeline passes them to BSVR/BTSVC fits, whose retraining
        (``warm_start``) then carries the earlier dual solution over on the
        cases still present (:mod:`bsvm_scale.models.warm_start`).
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file {str(path)!r} does not exist")
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}.")
    header = _header(path)
    target_name = header[_target_column(header, target, path)]
    id_name = None if id_column is None else header[_target_column(header, id_column, path,
                                                                   "id column")]
    if id_name is not None and id_name == target_name:
        raise TableError(f"the id column and the target are the same column {id_name!r}.")
    columns, A, ids = _read(path, id_name)
    _check_finite(A, columns, path)
    k = columns.index(target_name)
    y = A[:, k]
    inferred = task is None
    task = _infer_task(y) if inferred else task
    if task == "classification":
        y = y.astype(np.int64)
    prov = {"source": "import", "file": str(path.resolve()), "sha256": file_sha256(path),
            "target": columns[k], "task": task, "task_inferred": inferred,
            "id_column": id_name,
            "imported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    ds = Dataset(X=np.delete(A, k, axis=1), y=y, name=name or path.stem, task=task,
                 feature_names=[c for j, c in enumerate(columns) if j != k], provenance=prov,
                 description=f"imported from {path.name} (target {columns[k]!r})",
                 extra={} if ids is None else {CASE_ID: ids})
    if partitions:
        if n_train is None:
            raise ValueError("partitions need n_train (training cases per partition).")
        note = {"kind": "random", "n_splits": int(partitions), "n_train": int(n_train),
                "n_test": None if n_test is None else int(n_test), "seed": seed}
        ds = ds.with_splits(random_splits(ds.n_samples, n_train, partitions, seed, n_test), note)
    return ds
