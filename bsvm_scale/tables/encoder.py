"""The coding of a table's input columns into the numeric design matrix the
models take, fitted on training data and stored with every model and data
set built from a table.

Coding, per input column in table order:

* numeric -- one column, the number (the models standardise it). A missing
  cell follows the schema's ``missing`` policy; ``"median"`` uses the
  training median, stored here.
* boolean -- one column, 1 for yes and 0 for no. When training had missing
  cells, missing is a level of its own and the column is coded like a
  categorical one with the levels ``false``, ``true``, ``<missing>``.
* categorical -- one-hot: one 0/1 column per level seen in training (the
  levels sorted, ``<missing>`` last when training had missing cells). All
  levels get a column (no reference level), so that no category is special
  to the kernel: two cases of different categories differ in two columns,
  whichever the categories. An unseen level is an error, or with
  ``unknown="ignore"`` a row of zeros (boolean: 0.5), counted in the
  :class:`Encoded` result.

The scale the kernel sees (:attr:`TableEncoder.kernel_scales`): the models
standardise numeric columns with training statistics as always, but not the
coded ones. Those are divided by a fixed scale instead -- sqrt(2) for a
one-hot column, 1 for a yes/no column -- so that two cases of different
categories are at squared distance 1 in that input, whatever the categories
and however rare they are (a standardised one-hot column would put rare
categories far from everything: the squared distance of two categories
would be ``1/p_a(1-p_a) + 1/p_b(1-p_b)`` for frequencies ``p``), on the scale
of a standardised number (whose squared difference is 2 on average). An
unseen value is at squared distance 1/2 (one-hot) or 1/4 (yes/no) from each
known one.

The columns coming from one input column form a *group*
(:attr:`TableEncoder.groups`); BSVR and BTSVC with ``ard=True`` give each
group one relevance weight, so an ARD model has one ``kappa`` per column of
the original table, not per level.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from .schema import (INPUT_KINDS, Column, Schema, TableError, canonical_text, check_policy,
                     describe_rows, flag_of, is_missing, parse_flags, parse_numbers)

__all__ = ["TableEncoder", "Encoded", "MISSING_LEVEL", "BOOLEAN_LEVELS", "describe_schema"]

#: the level of a missing categorical (or boolean) cell
MISSING_LEVEL = "<missing>"
BOOLEAN_LEVELS = ("false", "true")


@dataclass
class Encoded:
    """The result of :meth:`TableEncoder.transform`.

    Attributes
    ----------
    X : ndarray of shape (n, n_outputs), float64, C-contiguous
        The design matrix (rows without a prediction, see ``rows_missing``,
        hold NaN).
    rows_missing : ndarray of int
        Rows with a missing number under the ``"drop"`` policy (no prediction).
    unknown : dict
        ``{column: {value: count}}`` of the unseen categories coded as unknown
        (``unknown="ignore"``).
    """

    X: np.ndarray
    rows_missing: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    unknown: dict = field(default_factory=dict)

    @property
    def n_unknown(self):
        return int(sum(sum(v.values()) for v in self.unknown.values()))


@dataclass(frozen=True)
class _Coding:
    """How one input column is coded: its levels (categorical, or boolean
    with missing cells) or its median (numeric, ``"median"`` policy)."""

    name: str
    kind: str
    levels: tuple = ()
    median: float | None = None

    @property
    def one_hot(self):
        return self.kind == "categorical" or (self.kind == "boolean" and bool(self.levels))

    @property
    def width(self):
        return len(self.levels) if self.one_hot else 1

    def output_names(self):
        if not self.one_hot:
            return [self.name]
        return [f"{self.name}={level}" for level in self.levels]


class TableEncoder:
    """Fitted coding of the input columns of a :class:`~bsvm_scale.tables.schema.Schema`.

    Build one with :meth:`fit`; :meth:`transform` turns a table with (at least)
    the same input columns, in any order, into the design matrix. The state is
    plain text and numbers (:meth:`to_json` / :meth:`from_json`): no pickle.
    """

    def __init__(self, schema, codings):
        self.schema = schema
        self.codings = tuple(codings)

    # -- fitting ----------------------------------------------------------------------
    @classmethod
    def fit(cls, columns, schema, where="the training table"):
        """Learn the levels and medians of the input columns of ``schema``
        from ``columns`` (name -> 1-D array of cells).

        A missing number under ``missing="error"`` (or ``"drop"``: rows are
        dropped before a table reaches this point) is a :class:`TableError`
        naming the rows and columns.
        """
        codings = []
        for col in schema.inputs:
            cells = _column(columns, col.name, where)
            codings.append(_fit_column(col, cells, schema.missing, where))
        return cls(schema, codings)

    # -- the coded layout -------------------------------------------------------------
    @property
    def input_names(self):
        """The input columns, in the order of the design matrix."""
        return [c.name for c in self.codings]

    @property
    def feature_names_out(self):
        """One name per column of the design matrix (``col`` or ``col=level``)."""
        return [name for c in self.codings for name in c.output_names()]

    @property
    def n_outputs(self):
        return int(sum(c.width for c in self.codings))

    @property
    def groups(self):
        """Index of the input column of every design-matrix column."""
        return np.repeat(np.arange(len(self.codings), dtype=np.int64),
                         [c.width for c in self.codings])

    @property
    def kernel_scales(self):
        """Fixed scale of every design-matrix column (NaN: standardise with
        training statistics): sqrt(2) for one-hot columns, 1 for yes/no
        columns (see the module docstring)."""
        return np.concatenate([np.full(c.width, np.nan if c.kind == "numeric" else
                                       (np.sqrt(2.0) if c.one_hot else 1.0))
                               for c in self.codings]) if self.codings else np.zeros(0)

    @property
    def tied(self):
        """True when some input column has more than one design-matrix column."""
        return any(c.width > 1 for c in self.codings)

    def levels(self, name):
        """The levels of the one-hot column ``name`` (empty for other kinds)."""
        return list(self._coding(name).levels)

    def _coding(self, name):
        for c in self.codings:
            if c.name == name:
                return c
        raise KeyError(name)

    # -- transforming -----------------------------------------------------------------
    def transform(self, columns, where="X", unknown=None, missing=None, row_offset=0):
        """The design matrix of ``columns`` (name -> 1-D array of cells).

        Parameters
        ----------
        columns : dict
            Every input column (others are ignored), same length.
        where : str
            Names the table in errors (a file, or ``X``).
        unknown, missing : str, optional
            Override the schema's policies (``bsvm-scale predict --unknown``).
        row_offset : int
            Added to row numbers in errors (chunked reading).

        Returns
        -------
        Encoded
        """
        unknown = check_policy("unknown", unknown or self.schema.unknown, ("error", "ignore"))
        missing = missing or self.schema.missing
        n = _n_rows(columns, self.input_names, where)
        X = np.empty((n, self.n_outputs))
        out = Encoded(X)
        absent = np.zeros(n, dtype=bool)
        at = 0
        for c in self.codings:
            cells = _column(columns, c.name, where)
            block = X[:, at:at + c.width]
            if c.one_hot:
                _one_hot(c, cells, block, unknown, out, where, row_offset)
            elif c.kind == "boolean":
                _flags(c, cells, block, unknown, out, where, row_offset)
            else:
                absent |= _numbers(c, cells, block, missing, where, row_offset)
            at += c.width
        out.rows_missing = np.flatnonzero(absent)
        X[absent] = np.nan
        return out

    # -- storage ----------------------------------------------------------------------
    def to_dict(self):
        return {"schema": self.schema.to_dict(),
                "codings": [{"name": c.name, "kind": c.kind, "levels": list(c.levels),
                             "median": c.median} for c in self.codings]}

    def to_json(self):
        return json.dumps(self.to_dict(), sort_keys=True)

    @classmethod
    def from_dict(cls, d):
        schema = Schema.from_dict(d["schema"])
        codings = [_Coding(str(c["name"]), str(c["kind"]), tuple(str(v) for v in c["levels"]),
                           None if c.get("median") is None else float(c["median"]))
                   for c in d["codings"]]
        return cls(schema, codings)

    @classmethod
    def from_json(cls, text):
        try:
            return cls.from_dict(json.loads(text))
        except (KeyError, TypeError, ValueError) as exc:
            raise TableError(f"not a stored table coding: {exc}") from None

    def __eq__(self, other):
        return isinstance(other, TableEncoder) and self.to_dict() == other.to_dict()

    def __repr__(self):
        kinds = [f"{c.name}:{c.kind}" + (f"[{c.width}]" if c.width > 1 else "")
                 for c in self.codings]
        return f"TableEncoder({', '.join(kinds)})"


# -- fitting, per column ----------------------------------------------------------------
def _column(columns, name, where):
    try:
        return columns[name]
    except KeyError:
        raise TableError(f"{where} lacks the column {name!r}.") from None


def _n_rows(columns, names, where):
    missing = [name for name in names if name not in columns]
    if missing:
        have = list(columns)
        raise TableError(f"{where} lacks the input column{'s' if len(missing) > 1 else ''} "
                         f"{missing[:8]} the model was fitted with (it has {have[:8]}"
                         f"{' ...' if len(have) > 8 else ''}).")
    sizes = {len(columns[name]) for name in names}
    if len(sizes) > 1:
        raise TableError(f"{where}: the columns have different lengths {sorted(sizes)}.")
    return sizes.pop() if sizes else 0


def _fit_column(col, cells, missing, where):
    if col.kind == "numeric":
        values = parse_numbers(cells, where, col.name)
        gaps = np.isnan(values)
        if gaps.any() and missing != "median":
            fix = ("drop those rows before fitting (e.g. frame.dropna()), or use missing="
                   "'median'" if missing == "drop" else "choose a policy for missing numbers "
                   "(--missing drop|median, or Table(missing='median')), or fill them in")
            raise TableError(f"{where}, column {col.name!r}: missing numbers in "
                             f"{describe_rows(np.flatnonzero(gaps))}; {fix}.")
        if gaps.all():
            raise TableError(f"{where}, column {col.name!r}: every cell is missing; drop the "
                             "column (--drop).")
        return _Coding(col.name, "numeric", median=float(np.nanmedian(values)) if gaps.any()
                       else _median_or_none(values, missing))
    if col.kind == "boolean":
        flags = parse_flags(cells, where, col.name, True)
        levels = BOOLEAN_LEVELS + (MISSING_LEVEL,) if np.isnan(flags).any() else ()
        return _Coding(col.name, "boolean", levels)
    texts = [None if is_missing(c) else canonical_text(c) for c in np.asarray(cells).tolist()]
    present = sorted({t for t in texts if t is not None})
    levels = tuple(present) + ((MISSING_LEVEL,) if len(present) < len(set(texts)) else ())
    return _Coding(col.name, "categorical", levels)


def _median_or_none(values, missing):
    """The training median of a numeric column, kept under the ``"median"``
    policy (used at prediction)."""
    return float(np.median(values)) if missing == "median" else None


# -- transforming, per column -----------------------------------------------------------
def _numbers(c, cells, block, missing, where, row_offset):
    """Fill ``block`` (n x 1); return the rows left without a number."""
    values = parse_numbers(cells, where, c.name, row_offset=row_offset)
    gaps = np.isnan(values)
    if gaps.any():
        if missing == "median" and c.median is not None:
            values = np.where(gaps, c.median, values)
            gaps = np.zeros_like(gaps)
        elif missing != "drop":
            raise TableError(f"{where}, column {c.name!r}: missing numbers in "
                             f"{describe_rows(np.flatnonzero(gaps) + row_offset)} (the model's "
                             f"policy for missing numbers is {missing!r}); fill them in.")
    block[:, 0] = np.where(gaps, 0.0, values)
    return gaps


def _codes(c, cells):
    """Level index of every cell (-1: unseen), through a per-text memo; cells
    that are all text (a CSV chunk) are coded per distinct text."""
    index = {level: k for k, level in enumerate(c.levels)}
    miss = index.get(MISSING_LEVEL, -1)
    arr = np.asarray(cells, dtype=object)
    try:
        texts = arr.astype(str) if arr.size and all(map(str.__instancecheck__, arr)) else None
    except TypeError:
        texts = None
    if texts is not None:
        distinct, inverse = np.unique(texts, return_inverse=True)
        codes = np.array([miss if is_missing(t) else index.get(_level_text(c, t), -1)
                          for t in distinct.tolist()], dtype=np.int64)
        return codes[inverse.ravel()]
    memo = {}
    out = np.empty(len(cells), dtype=np.int64)
    for r, cell in enumerate(np.asarray(cells, dtype=object).tolist()):
        key = cell if isinstance(cell, (str, int, float, bool)) else repr(cell)
        code = memo.get(key)
        if code is None:
            code = miss if is_missing(cell) else index.get(_level_text(c, cell), -1)
            memo[key] = code
        out[r] = code
    return out


def _level_text(c, cell):
    """The level name of a present cell (a boolean's ``false``/``true``; None
    for a text that is no yes/no value)."""
    if c.kind == "boolean":
        flag = flag_of(cell)
        return None if flag is None else BOOLEAN_LEVELS[int(flag)]
    return canonical_text(cell)


def _one_hot(c, cells, block, unknown, out, where, row_offset):
    codes = _codes(c, cells)
    block[:] = 0.0
    seen = codes >= 0
    block[np.flatnonzero(seen), codes[seen]] = 1.0
    if not seen.all():
        _unseen(c, cells, ~seen, unknown, out, where, row_offset)


def _flags(c, cells, block, unknown, out, where, row_offset):
    """A boolean column without a missing level: 1/0, and 0.5 for a value
    not seen in training (a missing cell or a text that is no yes/no value)."""
    arr = np.asarray(cells)
    if arr.dtype.kind == "b":
        block[:, 0] = arr
        return
    codes = _codes(_Coding(c.name, "boolean", BOOLEAN_LEVELS), cells)
    gaps = codes < 0
    block[:, 0] = np.where(gaps, 0.5, codes)
    if gaps.any():
        _unseen(c, cells, gaps, unknown, out, where, row_offset)


def _unseen(c, cells, mask, unknown, out, where, row_offset):
    """Refuse (``"error"``) or count (``"ignore"``) the unseen values at ``mask``."""
    rows = np.flatnonzero(mask)
    values = [MISSING_LEVEL if is_missing(v) else canonical_text(v)
              for v in np.asarray(cells, dtype=object)[rows].tolist()]
    if unknown == "error":
        shown = sorted(set(values))[:5]
        raise TableError(f"{where}, column {c.name!r}: the value{'s' if len(shown) > 1 else ''} "
                         f"{shown} (in {describe_rows(rows + row_offset)}) "
                         f"{'were' if len(shown) > 1 else 'was'} not seen in training (known: "
                         f"{list(c.levels)[:8]}); fix the input, or code unseen values as "
                         "unknown (--unknown ignore, or Table(unknown='ignore')).")
    counts = out.unknown.setdefault(c.name, {})
    for v in values:
        counts[v] = counts.get(v, 0) + 1


def schema_of_inputs(schema):
    """``schema`` restricted to its input columns."""
    return Schema(tuple(Column(c.name, c.kind) for c in schema.columns if c.kind in INPUT_KINDS),
                  schema.missing, schema.unknown)


def describe_schema(schema, encoder=None):
    """The columns of a table with their kinds, as text lines (with the
    coding ``encoder``: a categorical column's levels, a numeric column's median)."""
    lines = [f"schema (missing numbers: {schema.missing}, unseen categories: {schema.unknown}):"]
    w = max(len(c.name) for c in schema.columns)
    for col in schema.columns:
        note = ""
        if encoder is not None and col.kind in ("categorical", "boolean"):
            levels = encoder.levels(col.name)
            if levels:
                shown = ", ".join(levels[:8]) + (f", ... ({len(levels)} in all)"
                                                 if len(levels) > 8 else "")
                note = f"  one-hot: {shown}"
            else:
                note = "  coded 1 (yes) / 0 (no)"
        elif encoder is not None and col.kind == "numeric":
            c = encoder._coding(col.name)
            note = f"  median {c.median:.6g} fills missing cells" if c.median is not None else ""
        lines.append(f"  {col.name:<{w}}  {col.kind:<11}{note}")
    return "\n".join(lines)
