"""Tables as the estimators take them: a pandas DataFrame, a dict of columns,
a :class:`Table` (either of those with declarations and policies), or an
:class:`EncodedTable` (a design matrix with the coding that made it, as a
data set file imported from a table holds).

pandas is optional: nothing here imports it; a DataFrame is recognised by its
``columns`` and ``dtypes`` and read column by column.
"""

from __future__ import annotations

import numpy as np

from .encoder import TableEncoder
from .schema import (INPUT_KINDS, Column, Schema, TableError, check_policy, infer_kind,
                     MISSING_POLICIES, UNKNOWN_POLICIES)

__all__ = ["Table", "EncodedTable", "is_table", "table_columns", "infer_schema",
           "frame_columns"]


class Table:
    """A table with declarations of its columns and the policies of its coding.

    Parameters
    ----------
    data : pandas.DataFrame or dict of 1-D array-likes
        The columns by name.
    categorical, numeric, boolean, drop : sequence of str
        Columns declared of that kind (others are inferred: any non-number
        makes a column categorical, yes/no-like text only makes it boolean);
        ``drop``: columns that are not inputs.
    missing : {"error", "median"}
        Missing numbers in ``fit``: an error naming the rows and columns, or
        the training median (also used for later predictions). (``"drop"``
        belongs to ``bsvm-scale datasets import``; in Python drop such rows
        first.)
    unknown : {"error", "ignore"}
        Unseen categories: an error, or a row of zeros for that column. At
        ``fit`` this sets the model's policy; at prediction it overrides it.

    Examples
    --------
    >>> model.fit(Table(frame, categorical=["zip"], missing="median"), y)   # doctest: +SKIP
    >>> model.predict(Table(new_rows, unknown="ignore"))                   # doctest: +SKIP
    """

    def __init__(self, data, *, categorical=(), numeric=(), boolean=(), drop=(),
                 missing=None, unknown=None):
        self.data = data
        self.declared = {**dict.fromkeys(_names("categorical", categorical), "categorical"),
                         **dict.fromkeys(_names("numeric", numeric), "numeric"),
                         **dict.fromkeys(_names("boolean", boolean), "boolean"),
                         **dict.fromkeys(_names("drop", drop), "dropped")}
        n_declared = sum(len(_names(k, v)) for k, v in (("c", categorical), ("n", numeric),
                                                        ("b", boolean), ("d", drop)))
        if len(self.declared) != n_declared:
            raise TableError("a column is declared with two kinds (categorical, numeric, "
                             "boolean, drop); declare each column once.")
        self.missing = None if missing is None else check_policy("missing", missing,
                                                                 MISSING_POLICIES)
        self.unknown = None if unknown is None else check_policy("unknown", unknown,
                                                                 UNKNOWN_POLICIES)

    def __len__(self):
        cols = table_columns(self)
        return len(next(iter(cols.values()))) if cols else 0


class EncodedTable:
    """A design matrix ``X`` with the :class:`TableEncoder` that coded it (a
    data set imported from a table); a model fitted on it keeps the coding and
    predicts from raw tables too."""

    def __init__(self, X, encoder):
        self.X = X
        self.encoder = encoder

    def __len__(self):
        return len(self.X)


def _names(what, names):
    if isinstance(names, str):
        return [names]
    names = list(names or ())
    if not all(isinstance(n, str) for n in names):
        raise TableError(f"{what} must be a list of column names (str); got {names!r}.")
    return names


def _is_frame(obj):
    return hasattr(obj, "columns") and hasattr(obj, "dtypes") and hasattr(obj, "iloc")


def is_table(obj):
    """True for a DataFrame with text column names, a dict of columns, a
    :class:`Table` or an :class:`EncodedTable` (not for arrays, nor for a
    DataFrame with other column names, which scikit-learn takes as an array)."""
    if hasattr(obj, "nnz"):  # a scipy sparse matrix (the DOK format is a dict)
        return False
    if _is_frame(obj):
        return all(isinstance(c, str) for c in obj.columns)
    return isinstance(obj, (Table, EncodedTable, dict))


def table_columns(obj, where="X"):
    """``{name: 1-D numpy array}`` of a DataFrame, dict of columns or
    :class:`Table` (numeric columns as float64 with NaN for missing cells,
    others as objects)."""
    data = obj.data if isinstance(obj, Table) else obj
    if _is_frame(data):
        return frame_columns(data, where)
    if isinstance(data, dict):
        return _dict_columns(data, where)
    raise TableError(f"{where} must be a pandas DataFrame or a dict of columns; got "
                     f"{type(data).__name__}.")


def _column_name(name, where):
    if not isinstance(name, str):
        raise TableError(f"{where}: column names must be text; got {name!r} "
                         f"({type(name).__name__}). Rename the columns, e.g. "
                         "frame.columns = frame.columns.astype(str).")
    return name


def _dict_columns(data, where):
    out = {}
    for name, values in data.items():
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise TableError(f"{where}: column {name!r} must be 1-D; got shape {arr.shape}.")
        if arr.dtype.kind not in "fiub":
            arr = np.asarray(values, dtype=object)
        out[_column_name(name, where)] = arr
    _same_length(out, where)
    return out


def frame_columns(frame, where="X"):
    """The columns of a pandas DataFrame as numpy arrays (see :func:`table_columns`)."""
    names = [_column_name(c, where) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise TableError(f"{where} names the columns {dup} more than once.")
    out = {}
    for k, name in enumerate(names):
        out[name] = _series_values(frame.iloc[:, k])
    return out


def _series_values(series):
    """float64 (NaN missing) for numeric dtypes, bool for plain booleans,
    objects otherwise (category, text, nullable booleans)."""
    dtype = series.dtype
    kind = getattr(dtype, "kind", "O")
    name = str(dtype).lower()
    if kind == "b" and name == "bool":
        return series.to_numpy(dtype=bool)
    if kind in "iuf" and "category" not in name:
        return series.to_numpy(dtype=np.float64, na_value=np.nan)
    return series.to_numpy(dtype=object)


def frame_kinds(data):
    """Kinds a DataFrame's dtypes declare: ``category`` columns are categorical
    (also when their categories are numbers, e.g. codes), ``bool`` ones boolean."""
    if not _is_frame(data):
        return {}
    kinds = {}
    for k, name in enumerate(data.columns):
        dtype = str(data.iloc[:, k].dtype).lower()
        if dtype == "category":
            kinds[str(name)] = "categorical"
        elif dtype in ("bool", "boolean"):
            kinds[str(name)] = "boolean"
    return kinds


def _same_length(columns, where):
    sizes = {len(v) for v in columns.values()}
    if len(sizes) > 1:
        raise TableError(f"{where}: the columns have different lengths {sorted(sizes)}.")


def infer_schema(columns, declared=None, missing="error", unknown="error"):
    """A :class:`Schema` of ``columns``: declared kinds first, the others inferred
    (:func:`~bsvm_scale.tables.schema.infer_kind`)."""
    declared = dict(declared or {})
    unknown_names = sorted(set(declared) - set(columns))
    if unknown_names:
        raise TableError(f"declared columns {unknown_names} are not in the table (columns: "
                         f"{list(columns)[:10]}).")
    cols = tuple(Column(name, declared.get(name) or infer_kind(cells))
                 for name, cells in columns.items())
    if not any(c.kind in INPUT_KINDS for c in cols):
        raise TableError("the table has no input columns left (every column is dropped or "
                         "names the target, weights or identifiers).")
    return Schema(cols, missing, unknown)


def fit_encoder(table, where="X"):
    """``(encoder, design matrix)`` of a table given to ``fit``."""
    if isinstance(table, EncodedTable):
        return table.encoder, table.X
    columns = table_columns(table, where)
    data = table.data if isinstance(table, Table) else table
    declared = {**frame_kinds(data), **(table.declared if isinstance(table, Table) else {})}
    missing = (table.missing if isinstance(table, Table) else None) or "error"
    unknown = (table.unknown if isinstance(table, Table) else None) or "error"
    schema = infer_schema(columns, declared, missing, unknown)
    encoder = TableEncoder.fit(columns, schema, where)
    encoded = encoder.transform(columns, where)
    if encoded.rows_missing.size:  # "drop": fit_column refused the gaps already
        raise TableError(f"{where}: rows with missing numbers cannot be dropped inside fit.")
    return encoder, encoded.X


def transform_for(encoder, table, where="X"):
    """The design matrix of ``table`` (a table, or a 2-D array of the raw
    columns in the fitted order) under a fitted ``encoder``; unseen
    categories and missing numbers follow the encoder's policies unless the
    :class:`Table` overrides them."""
    if isinstance(table, EncodedTable):
        if table.encoder != encoder:
            raise TableError(f"{where} was coded by another table coding than the model's.")
        return table.X
    if isinstance(table, np.ndarray):
        columns = _positional_columns(table, encoder.input_names, where)
    else:
        columns = table_columns(table, where)
    unknown = table.unknown if isinstance(table, Table) else None
    encoded = encoder.transform(columns, where, unknown=unknown)
    if encoded.rows_missing.size:
        from .schema import describe_rows

        raise TableError(f"{where}: missing numbers in "
                         f"{describe_rows(encoded.rows_missing)} (the model's policy is "
                         "'drop', which has no prediction for them); drop those rows first.")
    return encoded.X


def _positional_columns(X, names, where):
    if X.ndim != 2 or X.shape[1] != len(names):
        raise TableError(f"{where} has shape {X.shape}; the model was fitted on a table with "
                         f"the {len(names)} columns {names[:8]}: pass a DataFrame (any column "
                         "order) or a 2-D array of those columns in that order.")
    return {name: X[:, k] for k, name in enumerate(names)}
