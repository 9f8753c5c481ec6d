"""CSV files with a header row, read as columns of text cells.

One reader for data set import (:mod:`bsvm_scale.datasets.importing`, the whole
file) and batch scoring (:mod:`bsvm_scale.pipeline.run.scoring`, chunks of rows):
every cell comes back as its text, and the schema decides what it is
(:mod:`bsvm_scale.tables.schema`). Files are UTF-8 (a byte-order mark is
allowed), optionally gzip-compressed (``.csv.gz``); empty lines are skipped. Every error is one line naming the file,
the line and, where there is one, the column: a row with another number of
fields than the header, bytes that are not UTF-8, a header that repeats or
omits a name.
"""

from __future__ import annotations

import csv
import gzip

import numpy as np

from .schema import TableError

__all__ = ["csv_header", "csv_count_rows", "iter_csv_chunks", "read_csv_columns"]

_ENCODING = "utf-8-sig"


def _open(path):
    """Text of a ``.csv`` file, or of a gzip-compressed ``.csv.gz`` one."""
    if str(path).lower().endswith(".gz"):
        return gzip.open(path, "rt", newline="", encoding=_ENCODING)
    return open(path, newline="", encoding=_ENCODING)


def _decode_error(path, exc):
    """The :class:`TableError` for bytes that are not UTF-8: names the line."""
    line = _first_bad_line(path)
    return TableError(f"{str(path)!r} line {line}: bytes that are not UTF-8 ({exc.reason} at "
                      f"byte {exc.start} of a read block); save the file as UTF-8, e.g. "
                      f"iconv -f latin1 -t utf-8 IN.csv > OUT.csv.")


def _first_bad_line(path):
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    with opener(path, "rb") as fh:
        for number, raw in enumerate(fh, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return number
    return "?"


def csv_header(path):
    """Column names of the first line; every column must be named, once."""
    try:
        with _open(path) as fh:
            header = next(csv.reader(fh), None)
    except UnicodeDecodeError as exc:
        raise _decode_error(path, exc) from None
    if not header or not all(h.strip() for h in header):
        raise TableError(f"CSV file {str(path)!r} needs a header row naming every column.")
    names = [h.strip() for h in header]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise TableError(f"CSV file {str(path)!r} names the columns {dup} more than once.")
    return names


def csv_count_rows(path):
    """Data rows (non-empty lines after the header): counted on the bytes when
    the file has no quote character (no field can span lines), else parsed."""
    count = _count_unquoted(path)
    if count is not None:
        return count
    try:
        with _open(path) as fh:
            return sum(1 for row in csv.reader(fh) if row) - 1
    except UnicodeDecodeError as exc:
        raise _decode_error(path, exc) from None


def _count_unquoted(path):
    """Non-empty lines after the first, or None when the file quotes fields."""
    opener = gzip.open if str(path).lower().endswith(".gz") else open
    lines, carry = 0, b""
    with opener(path, "rb") as fh:
        while block := fh.read(1 << 24):
            if b'"' in block:
                return None
            parts = (carry + block).split(b"\n")
            carry = parts.pop()
            lines += sum(1 for ln in parts if ln.strip())
    return lines + bool(carry.strip()) - 1


def _rows(path, width):
    """``(line number, fields)`` of every non-empty data row, checked for width."""
    try:
        with _open(path) as fh:
            reader = csv.reader(fh)
            next(reader, None)
            for row in reader:
                if not row:
                    continue
                if len(row) != width:
                    raise TableError(f"{str(path)!r} line {reader.line_num}: {len(row)} fields, "
                                     f"the header has {width}; every row needs one field per "
                                     "column (quote fields that contain commas).")
                yield row
    except UnicodeDecodeError as exc:
        raise _decode_error(path, exc) from None


def iter_csv_chunks(path, chunk_rows, usecols=None):
    """Yield ``(first_row, {name: object array of text})`` for chunks of
    ``chunk_rows`` data rows (``first_row`` 0-based); ``usecols`` (names)
    limits the columns read (default: all)."""
    header = csv_header(path)
    names = header if usecols is None else list(usecols)
    absent = [n for n in names if n not in header]
    if absent:
        raise TableError(f"CSV file {str(path)!r} lacks the columns {absent[:8]} (it has "
                         f"{header[:8]}{' ...' if len(header) > 8 else ''}).")
    index = [header.index(n) for n in names]
    chunk, start = [], 0
    for row in _rows(path, len(header)):
        chunk.append(row)
        if len(chunk) == chunk_rows:
            yield start, _columns(chunk, names, index)
            start += len(chunk)
            chunk = []
    if chunk:
        yield start, _columns(chunk, names, index)


def _columns(rows, names, index):
    cells = np.array(rows, dtype=object)
    return {name: cells[:, k] for name, k in zip(names, index)}


def read_csv_columns(path, usecols=None):
    """``(header, {name: object array of text})`` of a whole file."""
    header = csv_header(path)
    parts = [cols for _, cols in iter_csv_chunks(path, 1 << 16, usecols)]
    if not parts:
        raise TableError(f"CSV file {str(path)!r} has a header but no rows.")
    names = list(parts[0])
    return header, {n: np.concatenate([p[n] for p in parts]) for n in names}
