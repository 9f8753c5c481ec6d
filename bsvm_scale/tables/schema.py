"""The input schema of a table: what every column is, and the policies for
missing cells and unseen categories.

A column is one of :data:`KINDS`:

``numeric``
    Real numbers; an input, standardised by the models.
``categorical``
    Text (or integer codes declared categorical); an input, one-hot coded by
    :class:`~bsvm_scale.tables.encoder.TableEncoder`.
``boolean``
    Yes/no flags (:data:`TRUE_TEXT` / :data:`FALSE_TEXT`, any case; ``1``/``0``
    when declared); an input coded 1/0.
``identifier``, ``weight``, ``target``
    Case identifiers, case weights and the target: kept beside the inputs.
``dropped``
    Not read.

Inference (:func:`infer_kind`): a column with any cell that is not a number
is categorical, unless every cell is yes/no-like, then it is boolean; missing
cells (:data:`MISSING_TEXT`) do not count. Declarations override inference,
and a cell that does not fit its declared kind is an error naming its row and
column (:func:`parse_numbers`).

The policies (:class:`Schema`): ``missing`` for numeric inputs -- ``"error"``
(default: an error naming the rows and columns), ``"drop"`` (training rows
with a missing number are left out; at prediction such rows get no
prediction) or ``"median"`` (the training median) -- and ``unknown`` for
categories not seen in training -- ``"error"`` (default) or ``"ignore"``
(coded as no known category). A missing categorical cell is a category of its
own.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

__all__ = ["KINDS", "INPUT_KINDS", "MISSING_POLICIES", "UNKNOWN_POLICIES", "MISSING_TEXT",
           "TRUE_TEXT", "FALSE_TEXT", "TableError", "Column", "Schema", "infer_kind",
           "parse_numbers", "parse_flags", "flag_of", "canonical_text", "is_missing", "describe_rows"]

KINDS = ("numeric", "categorical", "boolean", "identifier", "weight", "target", "dropped")
#: the kinds that become model inputs
INPUT_KINDS = ("numeric", "categorical", "boolean")
MISSING_POLICIES = ("error", "drop", "median")
UNKNOWN_POLICIES = ("error", "ignore")
#: cell texts read as missing (after stripping white space)
MISSING_TEXT = frozenset({"", "NA", "N/A", "n/a", "NaN", "nan", "NULL", "null", "None",
                          "<NA>", "#N/A"})
#: yes/no-like texts, compared in lower case
TRUE_TEXT = frozenset({"yes", "true", "y", "t"})
FALSE_TEXT = frozenset({"no", "false", "n", "f"})
#: further flag texts accepted in a column declared boolean
_DECLARED_TRUE = frozenset({"1", "1.0"})
_DECLARED_FALSE = frozenset({"0", "0.0"})


class TableError(ValueError):
    """A table that does not fit its schema (names the file or argument, the
    row, the column and the fix)."""


@dataclass(frozen=True)
class Column:
    """One column of a table: its ``name`` and ``kind`` (one of :data:`KINDS`)."""

    name: str
    kind: str

    def __post_init__(self):
        if self.kind not in KINDS:
            raise TableError(f"column {self.name!r}: kind {self.kind!r} is not one of {KINDS}.")


@dataclass(frozen=True)
class Schema:
    """The columns of a table in order, and the missing/unknown policies.

    Parameters
    ----------
    columns : tuple of Column
    missing : {"error", "drop", "median"}
        What a missing numeric input cell does.
    unknown : {"error", "ignore"}
        What a category not seen in training does at prediction.
    """

    columns: tuple = field(default_factory=tuple)
    missing: str = "error"
    unknown: str = "error"

    def __post_init__(self):
        object.__setattr__(self, "columns", tuple(self.columns))
        names = [c.name for c in self.columns]
        dup = sorted({n for n in names if names.count(n) > 1})
        if dup:
            raise TableError(f"the schema names the columns {dup} more than once.")
        check_policy("missing", self.missing, MISSING_POLICIES)
        check_policy("unknown", self.unknown, UNKNOWN_POLICIES)

    @property
    def names(self):
        return [c.name for c in self.columns]

    def of_kind(self, *kinds):
        """Names of the columns of the given kinds, in table order."""
        return [c.name for c in self.columns if c.kind in kinds]

    @property
    def inputs(self):
        """The input columns (numeric, categorical, boolean), in table order."""
        return tuple(c for c in self.columns if c.kind in INPUT_KINDS)

    def kind(self, name):
        for c in self.columns:
            if c.name == name:
                return c.kind
        raise KeyError(name)

    def with_policies(self, missing=None, unknown=None):
        return replace(self, missing=self.missing if missing is None else missing,
                       unknown=self.unknown if unknown is None else unknown)

    def to_dict(self):
        return {"columns": [[c.name, c.kind] for c in self.columns], "missing": self.missing,
                "unknown": self.unknown}

    @classmethod
    def from_dict(cls, d):
        return cls(tuple(Column(str(n), str(k)) for n, k in d["columns"]),
                   str(d.get("missing", "error")), str(d.get("unknown", "error")))

    def describe(self):
        """One line per column: ``name  kind`` (for ``datasets info``)."""
        w = max((len(c.name) for c in self.columns), default=4)
        return [f"{c.name:<{w}}  {c.kind}" for c in self.columns]


def check_policy(name, value, allowed):
    if value not in allowed:
        raise TableError(f"{name} must be one of {allowed}; got {value!r}.")
    return value


# -- cells ----------------------------------------------------------------------------
def is_missing(cell):
    """True for ``None``, a float NaN, or a text in :data:`MISSING_TEXT`."""
    if cell is None:
        return True
    if isinstance(cell, str):
        return cell.strip() in MISSING_TEXT
    if isinstance(cell, float):
        return math.isnan(cell)
    try:  # pandas.NA, numpy NaN scalars
        return bool(cell != cell) or type(cell).__name__ in ("NAType", "NaTType")
    except (TypeError, ValueError):
        return type(cell).__name__ in ("NAType", "NaTType")


def canonical_text(cell):
    """The text of a category cell. Numbers are written canonically (``1``,
    ``1.0`` and ``01`` are all ``"1"``; ``2.5`` is ``"2.5"``), so that a
    category read from a CSV file and the same one from a numeric DataFrame
    column agree; booleans are ``"true"``/``"false"``."""
    if isinstance(cell, (bool, np.bool_)):
        return "true" if cell else "false"
    if isinstance(cell, str):
        text = cell.strip()
        try:
            value = float(text)
        except ValueError:
            return text
        return _number_text(value) if math.isfinite(value) else text
    if isinstance(cell, (int, np.integer)):
        return str(int(cell))
    if isinstance(cell, (float, np.floating)):
        return _number_text(float(cell))
    return str(cell).strip()


def _number_text(value):
    return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)


def describe_rows(rows, limit=5):
    """``"rows 3, 7 and 12"``-style text of 0-based row indices (shown 1-based
    as data rows, the first data row being row 1)."""
    rows = [int(r) + 1 for r in rows]
    shown = ", ".join(map(str, rows[:limit]))
    more = f" and {len(rows) - limit} more" if len(rows) > limit else ""
    return f"row{'s' if len(rows) > 1 else ''} {shown}{more}"


_NUMERIC_FIX = ("declare it categorical (--categorical / Table(categorical=...)) or fix the "
                "cell")


def parse_numbers(cells, where, column, *, row_offset=0, fix=_NUMERIC_FIX):
    """Cells of a numeric column as float64 (NaN where missing).

    ``cells`` is a 1-D array of numbers (float64, NaN missing) or of objects
    (text or numbers, ``None``/missing text for missing). A text that is not a
    number, or an infinite value, is a :class:`TableError` naming ``where``,
    the row (``row_offset`` + 1-based index), ``column`` and ``fix``.
    """
    arr = np.asarray(cells)
    if arr.dtype.kind in "fiub":
        out = arr.astype(np.float64)
    else:
        try:  # fast path: every cell is a number (numpy parses the texts)
            out = arr.astype(np.float64)
        except (ValueError, TypeError):
            out = _parse_slowly(arr, where, column, row_offset, fix)
    bad = np.isinf(out)
    if bad.any():
        r = int(np.flatnonzero(bad)[0])
        raise TableError(f"{where} row {row_offset + r + 1}, column {column!r}: {out[r]} "
                         "(numbers must be finite).")
    return out


def _parse_slowly(arr, where, column, row_offset, fix):
    out = np.empty(arr.shape[0])
    for r, cell in enumerate(arr.tolist()):
        if is_missing(cell):
            out[r] = np.nan
            continue
        try:
            out[r] = float(cell.strip() if isinstance(cell, str) else cell)
        except (TypeError, ValueError):
            raise TableError(f"{where} row {row_offset + r + 1}, column {column!r}: {cell!r} is "
                             f"not a number, but the column is numeric; {fix}.") from None
    return out


def parse_flags(cells, where, column, declared, *, row_offset=0):
    """Cells of a boolean column as float64 1/0 (NaN where missing); with
    ``declared`` ``1``/``0`` are flags too. Another value is a
    :class:`TableError` naming its row and column."""
    arr = np.asarray(cells)
    if arr.dtype.kind == "b":
        return arr.astype(np.float64)
    out = np.empty(arr.shape[0])
    for r, cell in enumerate(arr.tolist()):
        flag = flag_of(cell, declared)
        if flag is None:
            raise TableError(f"{where} row {row_offset + r + 1}, column {column!r}: {cell!r} is "
                             "not a yes/no value (yes/no, true/false, y/n, t/f"
                             f"{', 1/0' if declared else ''}); declare the column categorical or "
                             "fix the cell.")
        out[r] = flag
    return out


def flag_of(cell, declared=True):
    """1.0 (yes), 0.0 (no), NaN (missing) or None (not a yes/no value) of a cell."""
    if is_missing(cell):
        return np.nan
    if isinstance(cell, (bool, np.bool_)):
        return float(cell)
    text = canonical_text(cell).lower()
    if text in TRUE_TEXT or (declared and text in _DECLARED_TRUE):
        return 1.0
    if text in FALSE_TEXT or (declared and text in _DECLARED_FALSE):
        return 0.0
    return None


def infer_kind(cells):
    """``"numeric"``, ``"boolean"`` or ``"categorical"`` for a column of cells
    (missing cells ignored; a column of missing cells only is numeric)."""
    arr = np.asarray(cells)
    if arr.dtype.kind in "fiu":
        return "numeric"
    if arr.dtype.kind == "b":
        return "boolean"
    present = [c for c in arr.tolist() if not is_missing(c)]
    if all(isinstance(c, (bool, np.bool_)) for c in present) and present:
        return "boolean"
    try:
        np.asarray([c.strip() if isinstance(c, str) else c for c in present], dtype=np.float64)
        return "numeric"
    except (ValueError, TypeError):
        pass
    if all(flag_of(c, False) is not None for c in present):
        return "boolean"
    return "categorical"
