"""Markdown and CSV tables of the page."""

from __future__ import annotations

import csv

import numpy as np

__all__ = ["fmt", "table", "write_csv", "EMPTY"]

#: a cell without a value
EMPTY = "-"


def fmt(v, digits=4):
    """A table cell: numbers to ``digits`` significant digits, arrays in brackets,
    missing values (None, nan) as ``-``; strings unchanged."""
    if isinstance(v, str):
        return v
    if isinstance(v, (list, tuple, np.ndarray)):
        a = np.atleast_1d(np.asarray(v, dtype=float))
        return "[" + ", ".join(f"{x:.{digits - 1}g}" for x in a) + "]"
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return EMPTY
    if isinstance(v, (bool, np.bool_)):
        return str(bool(v)).lower()
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{float(v):.{digits}g}"


def table(head, rows, drop_empty=False):
    """Markdown table lines.

    Parameters
    ----------
    head : list of str
        Column names.
    rows : list of list
        Cells (formatted by :func:`fmt`).
    drop_empty : bool, optional
        Leave out the columns without a value in any row.

    Returns
    -------
    list of str
    """
    cells = [[fmt(c) for c in r] for r in rows]
    keep = list(range(len(head)))
    if drop_empty:
        keep = [j for j in keep if any(r[j] != EMPTY for r in cells)]
    out = ["| " + " | ".join(head[j] for j in keep) + " |", "|" + "---|" * len(keep)]
    return out + ["| " + " | ".join(r[j] for j in keep) + " |" for r in cells]


def write_csv(path, head, rows):
    """Write ``rows`` under ``head`` as a CSV file (numbers in full precision)."""
    def cell(v):
        if isinstance(v, (np.floating, np.integer)):
            return v.item()
        if isinstance(v, (list, tuple, np.ndarray)):
            return " ".join(repr(float(x)) for x in np.ravel(v))
        return "" if v is None else v

    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh, lineterminator="\n")
        w.writerow(head)
        w.writerows([[cell(c) for c in r] for r in rows])
    return path
