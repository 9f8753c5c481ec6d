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


def csv_rows(path, columns, text=None, skip=()):
    """Yield every data row as a list of floats (empty lines skipped); the
    column named ``text`` (optional) is left out of the numbers and yielded
    as its text: ``(numbers, text)``; the columns in ``skip`` are not read."""
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        next(reader)
        for line, row in enumerate(reader, start=2):
            if row:
                yield _numbers(row, columns, path, line, text, skip)


def _numbers(row, columns, path, line, text=None, skip=()):
    if len(row) != len(columns):
        raise TableError(f"{str(path)!r} line {line}: {len(row)} fields, the header has "
                         f"{len(columns)}.")
    out, kept = [], None
    for name, value in zip(columns, row):
        if name == text:
            kept = value.strip()
            continue
        if name in skip:
            continue
        try:
            out.append(float(value))
        except ValueError:
            raise TableError(f"{str(path)!r} line {line}, column {name!r}: {value!r} is not a "
                             "number.") from None
    return out if text is None else (out, kept)


def read_csv(path, text=None):
    """``(columns, array)`` of a whole CSV file (float64, one row per line).

    With ``text`` (a column name) that column is read as text and left out of
    both: ``(columns, array, texts)``.
    """
    columns = csv_header(path)
    if text is not None and text not in columns:
        raise TableError(f"column {text!r} is not in {str(path)!r} (columns: {columns[:10]}).")
    rows = list(csv_rows(path, columns, text))
    if not rows:
        raise TableError(f"CSV file {str(path)!r} has a header but no rows.")
    if text is None:
        return columns, np.asarray(rows, dtype=np.float64)
    numbers, texts = zip(*rows)
    return ([c for c in columns if c != text], np.asarray(numbers, dtype=np.float64),
            list(texts))
