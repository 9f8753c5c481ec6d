"""Bring user data in: a CSV file with a header (a table: text, yes/no and
numeric columns, empty cells) or a ``.npy`` array becomes a data set of the
project's HDF5 format, with its schema and coding (tables), provenance (the
source file's SHA-256 and the import options) and optional seeded partitions,
so that a pipeline file can name it (``path = "NAME.h5"``).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .._util.atomic import file_sha256
from ..tables.schema import TableError, describe_rows
from ._dataset import CASE_ID, SAMPLE_WEIGHT, TASKS, Dataset, random_splits

__all__ = ["import_table", "case_ids_from_text", "MAX_CLASSES"]

#: a target of integers with at most this many distinct values is taken as
#: class labels when the task is not given
MAX_CLASSES = 20


def _header(path):
    """Column names ``x1..xd`` of a ``.npy`` array."""
    if path.suffix.lower() == ".npy":
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
    """``(column names, float64 array, case ids or None)`` of a ``.npy`` file;
    the column ``id_name`` (case identifiers) is left out of the names and
    the array."""
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
                 n_test=None, seed=0, id_column=None, categorical=(), numeric=(), boolean=(),
                 drop=(), weight=None, missing="error", unknown="error"):
    """A :class:`Dataset` from a CSV file (header row) or a ``.npy`` array.

    A CSV file is read as a table (:mod:`bsvm_scale.tables`): every column gets
    a kind -- declared, or inferred (a column with any cell that is not a
    number is categorical; one whose cells are all yes/no-like is boolean) --
    and the input columns are coded into ``X`` by a
    :class:`~bsvm_scale.tables.TableEncoder` (one-hot categories, 1/0 flags),
    stored with the data set (``schema``, ``encoder``): a model fitted on
    :meth:`Dataset.table` keeps the coding and predicts from raw CSV rows.

    Parameters
    ----------
    path : str or Path
    target : str or int
        The target column: its header name, or its index.
    task : {'regression', 'classification'}, optional
        Inferred when omitted: a target with text is classification (the
        labels kept as text), integer targets with at most
        :data:`MAX_CLASSES` distinct values are class labels, other numbers
        regression.
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
    categorical, numeric, boolean, drop : sequence of str
        Columns declared of that kind (CSV only); ``drop``: not read. A cell
        that does not fit its declared kind is an error naming row and column.
    weight : str, optional
        A column of case weights (finite, >= 0, not all zero), kept as
        ``extra["sample_weight"]``; pipelines pass it to ``fit`` as
        ``sample_weight``.
    missing : {'error', 'drop', 'median'}
        Missing numbers in input columns (and missing targets or weights):
        an error naming the rows and columns, rows dropped (counted in the
        provenance), or (inputs only) the median of the column.
    unknown : {'error', 'ignore'}
        The model's policy for categories not seen here, at prediction.
    """
    path = _check_source(path, task, any((categorical, numeric, boolean, drop, weight))
                         or missing != "error")
    if not path.name.lower().endswith((".csv", ".csv.gz")):
        return _import_array(path, target, task, name, id_column, partitions, n_train, n_test,
                             seed)
    ds = _import_csv(path, target, task, name, id_column,
                     {"categorical": categorical, "numeric": numeric, "boolean": boolean,
                      "dropped": drop, "weight": weight}, missing, unknown)
    return _partitioned(ds, partitions, n_train, n_test, seed)


def _check_source(path, task, table_options):
    """The input file as a Path, checked: it exists, ``task`` is known, and
    table options (``table_options``) go with a CSV file only."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"file {str(path)!r} does not exist")
    if task is not None and task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}; got {task!r}.")
    if table_options and not path.name.lower().endswith((".csv", ".csv.gz")):
        raise TableError(f"{str(path)!r}: column kinds, weights and missing-cell policies "
                         "apply to CSV files; a .npy array is numbers only.")
    return path


def _partitioned(ds, partitions, n_train, n_test, seed):
    if not partitions:
        return ds
    if n_train is None:
        raise ValueError("partitions need n_train (training cases per partition).")
    note = {"kind": "random", "n_splits": int(partitions), "n_train": int(n_train),
            "n_test": None if n_test is None else int(n_test), "seed": seed}
    return ds.with_splits(random_splits(ds.n_samples, n_train, partitions, seed, n_test), note)


def _provenance(path, target, task, inferred, id_name, **more):
    return {"source": "import", "file": str(path.resolve()), "sha256": file_sha256(path),
            "target": target, "task": task, "task_inferred": inferred, "id_column": id_name,
            "imported": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **more}


def _import_array(path, target, task, name, id_column, partitions, n_train, n_test, seed):
    """A ``.npy`` array: numbers only, as before tables."""
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
    ds = Dataset(X=np.delete(A, k, axis=1), y=y, name=name or path.stem, task=task,
                 feature_names=[c for j, c in enumerate(columns) if j != k],
                 provenance=_provenance(path, columns[k], task, inferred, id_name),
                 description=f"imported from {path.name} (target {columns[k]!r})",
                 extra={} if ids is None else {CASE_ID: ids})
    return _partitioned(ds, partitions, n_train, n_test, seed)


def _declarations(header, path, target, id_column, kinds):
    """``{column: kind}`` of the target, identifiers, weights and declared columns."""
    out = {header[_target_column(header, target, path)]: "target"}
    if id_column is not None:
        out = _declare(out, header[_target_column(header, id_column, path, "id column")],
                       "identifier")
    if kinds.get("weight") is not None:
        out = _declare(out, header[_target_column(header, kinds["weight"], path,
                                                  "weight column")], "weight")
    for kind in ("categorical", "numeric", "boolean", "dropped"):
        for col in ([kinds[kind]] if isinstance(kinds[kind], str) else kinds[kind] or ()):
            if col not in header:
                raise TableError(f"--{'drop' if kind == 'dropped' else kind} {col!r} is not a "
                                 f"column of {str(path)!r} (columns: {header[:10]}).")
            out = _declare(out, col, kind)
    return out


def _declare(out, col, kind):
    if out.get(col) == "target" and kind == "identifier":
        raise TableError(f"the id column and the target are the same column {col!r}.")
    if col in out:
        raise TableError(f"column {col!r} is declared twice ({out[col]} and {kind}); give "
                         "each column one role.")
    return {**out, col: kind}


def _import_csv(path, target, task, name, id_column, kinds, missing, unknown):
    """A CSV file read as a table (see :func:`import_table`)."""
    from ..tables.csv import read_csv_columns
    from ..tables.encoder import TableEncoder
    from ..tables.frame import infer_schema

    header, cells = read_csv_columns(path)
    declared = _declarations(header, path, target, id_column, kinds)
    schema = infer_schema(cells, declared, missing, unknown)
    where = repr(str(path))
    target_name = schema.of_kind("target")[0]
    keep = _rows_kept(schema, cells, missing, where)
    cells = {k: v[keep] for k, v in cells.items()} if not keep.all() else cells
    inferred = task is None
    y, task = _target(cells[target_name], task, where, target_name, np.flatnonzero(keep))
    encoder = TableEncoder.fit(cells, schema, where)
    X = encoder.transform(cells, where).X
    extra = _beside(schema, cells, where)
    prov = _provenance(path, target_name, task, inferred, (schema.of_kind("identifier") or
                                                           [None])[0],
                       schema=schema.to_dict(), rows_dropped=int((~keep).sum()))
    return Dataset(X=X, y=y, name=name or path.stem, task=task,
                   feature_names=encoder.feature_names_out, provenance=prov,
                   description=f"imported from {path.name} (target {target_name!r})",
                   extra=extra, schema=schema, encoder=encoder)


def _rows_kept(schema, cells, missing, where):
    """Rows kept: all, or (``missing="drop"``) those with every number, the
    target and the weight present; a missing target or weight is an error
    naming its rows otherwise."""
    from ..tables.schema import is_missing, parse_numbers

    n = len(next(iter(cells.values())))
    absent = np.zeros(n, dtype=bool)
    for col in schema.columns:
        if col.kind == "numeric" and missing == "drop":
            absent |= np.isnan(parse_numbers(cells[col.name], where, col.name))
        elif col.kind in ("target", "weight"):
            gaps = np.array([is_missing(c) for c in cells[col.name].tolist()], dtype=bool)
            if gaps.any() and missing != "drop":
                raise TableError(f"{where}, {col.kind} column {col.name!r}: missing in "
                                 f"{describe_rows(np.flatnonzero(gaps))}; fill them in or drop "
                                 "those rows (--missing drop).")
            absent |= gaps
    if absent.all():
        raise TableError(f"{where}: every row has a missing cell, so --missing drop leaves none.")
    return ~absent


def _target(cells, task, where, column, rows):
    """``(y, task)``: numbers (regression, or integer labels) or text labels."""
    from ..tables.schema import canonical_text

    texts = [canonical_text(c) for c in cells.tolist()]
    try:
        numbers = np.array(texts, dtype=np.float64)
    except ValueError:
        numbers = None
    if numbers is None:
        if task == "regression":
            bad = next(i for i, t in enumerate(texts) if not _is_number(t))
            raise TableError(f"{where} row {rows[bad] + 1}, column {column!r}: {texts[bad]!r} is "
                             "not a number, but the task is regression.")
        y, task = np.array(texts, dtype=str), "classification"
    else:
        task = task or _infer_task(numbers)
        integral = np.all(np.mod(numbers, 1.0) == 0.0)
        y = numbers.astype(np.int64) if task == "classification" and integral else numbers
        if task == "classification" and not integral:
            y = np.array(texts, dtype=str)
    if task == "classification" and np.unique(y).size < 2:
        raise TableError(f"{where}, target column {column!r}: one class only ({y[0]!r}); a "
                         "classifier needs at least two classes.")
    return y, task


def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _beside(schema, cells, where):
    """The per-case arrays kept beside the inputs: case identifiers and weights."""
    from ..tables.schema import parse_numbers

    extra = {}
    for col in schema.of_kind("identifier"):
        extra[CASE_ID] = case_ids_from_text([str(c).strip() for c in cells[col].tolist()],
                                            f"id column {col!r} of {where}")
    for col in schema.of_kind("weight"):
        w = parse_numbers(cells[col], where, col)
        bad = np.flatnonzero(~(w >= 0))
        if bad.size:
            raise TableError(f"{where} row {bad[0] + 1}, weight column {col!r}: {w[bad[0]]} "
                             "(weights must be finite and >= 0).")
        if not np.any(w > 0):
            raise TableError(f"{where}, weight column {col!r}: every weight is 0; at least one "
                             "case must count.")
        extra[SAMPLE_WEIGHT] = w
    return extra
