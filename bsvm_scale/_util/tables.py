"""Numeric tables from CSV files with a header: one reader for scoring
(:mod:`bsvm_scale.pipeline.scoring`) and data set import
(:mod:`bsvm_scale.datasets.importing`).

Every error is one line naming the file, the line and the column.
"""

from __future__ import annotations

import csv

import numpy as np

__all__ = ["TableError", "csv_header", "csv_rows", "csv_count_rows", "read_csv"]


class TableError(ValueError):
    """A table that cannot be read as numbers."""


def csv_header(path):
    """Column names of the first line; every column must be named."""
    with open(path, newline="") as fh:
        header = next(csv.reader(fh), None)
    if not header or not all(h.strip() for h in header):
        raise TableError(f"CSV file {str(path)!r} needs a header row naming every column.")
    names = [h.strip() for h in header]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TableError(f"CSV file {str(path)!r} names the columns {dup} more than once.")
    return names


def csv_count_rows(path):
    """Data rows (non-empty lines after the header)."""
    with open(path, newline="") as fh:
        return sum(1 for row in csv.reader(fh) if row) - 1


def csv_rows(path, columns):
    """Yield every data row as a list of floats (empty lines skipped)."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for line, row in enumerate(reader, start=2):
            if row:
                yield _numbers(row, columns, path, line)


def _numbers(row, columns, path, line):
    if len(row) != len(columns):
        raise TableError(f"{str(path)!r} line {line}: {len(row)} fields, the header has "
                         f"{len(columns)}.")
    out = []
    for name, text in zip(columns, row):
        try:
            out.append(float(text))
        except ValueError:
            raise TableError(f"{str(path)!r} line {line}, column {name!r}: {text!r} is not a "
                             "number.") from None
    return out


def read_csv(path):
    """``(columns, array)`` of a whole CSV file (float64, one row per line)."""
    columns = csv_header(path)
    rows = list(csv_rows(path, columns))
    if not rows:
        raise TableError(f"CSV file {str(path)!r} has a header but no rows.")
    return columns, np.asarray(rows, dtype=np.float64)
