"""The bsvm_scale HDF5 data set format (format_version 1).

Layout of one file::

    /X                (n, d) float64, chunked, gzip + shuffle
    /y                (n,)   targets (float64 for regression, int for labels)
    /splits/train     (K, n_train) int64  \\ when every partition has the same
    /splits/test      (K, n_test)  int64  / sizes, otherwise
    /splits/train_k, /splits/test_k       (k = 0..K-1) 1-D int64
    /extra/<name>     (n, ...) per-case arrays (e.g. noise-free target f);
                      /extra/case_id: unique case identifiers (int64 or UTF-8 text);
                      /extra/sample_weight: case weights (an imported --weight column)
    /table            (data sets imported from a table) UTF-8 JSON text:
                      ``{"schema": every source column's kind and the policies,
                      "coding": the TableEncoder of the inputs}``

``/y`` holds numbers, or UTF-8 text for text class labels.

Root attributes: ``name``, ``task`` ('regression' | 'classification'),
``feature_names`` (array of str), ``provenance`` (JSON string),
``description`` (str), ``format_version`` (=1) and ``library``
('bsvm_scale'); ``/splits`` carries ``n_splits`` and ``layout``
('stacked' | 'per_split').

Writes are atomic: the file is written under a temporary name in the target
directory and moved over the target with :func:`os.replace`, so a reader
never sees a half-written file and an existing file survives a failed write.
Reading validates the file and turns every problem (not HDF5, truncated,
missing or mis-shaped arrays, unknown version) into a :class:`ValueError`
that names the file and the problem.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .._util.atomic import atomic_path
from .._util.hdf5 import decode_text
from ._dataset import CASE_ID, TASKS, Dataset

__all__ = [
    "FORMAT_VERSION",
    "LIBRARY",
    "DatasetFileError",
    "write_dataset",
    "read_dataset",
    "read_case_ids",
    "read_encoder",
    "dataset_info",
]

FORMAT_VERSION = 1
LIBRARY = "bsvm_scale"


class DatasetFileError(ValueError):
    """A file that is not a valid bsvm_scale data set file."""


def _h5py():
    import h5py

    return h5py


def _compress_kwargs(shape, compression, compression_opts):
    if compression is None or int(np.prod(shape)) == 0:
        return {}
    kw = {"compression": compression, "shuffle": True, "chunks": True}
    if compression == "gzip":
        kw["compression_opts"] = 4 if compression_opts is None else int(compression_opts)
    elif compression_opts is not None:
        kw["compression_opts"] = compression_opts
    return kw


def _write_array(group, name, arr, compression, compression_opts):
    arr = np.asarray(arr)
    if arr.dtype.kind == "O" and all(isinstance(v, str) for v in arr.ravel().tolist()):
        arr = arr.astype(str)
    if arr.dtype.kind == "U":  # text (case identifiers): variable-length UTF-8
        group.create_dataset(name, data=arr.astype(object), dtype=_h5py().string_dtype(),
                             track_times=False)
        return
    kw = _compress_kwargs(arr.shape, compression, compression_opts)
    if "chunks" in kw and arr.ndim >= 1:
        # rows of ~1 MiB: whole rows per chunk so row slices read fast
        row_bytes = max(1, arr.itemsize * int(np.prod(arr.shape[1:], dtype=np.int64)))
        rows = int(max(1, min(arr.shape[0], (1 << 20) // row_bytes)))
        kw["chunks"] = (rows,) + tuple(arr.shape[1:])
    group.create_dataset(name, data=arr, track_times=False, **kw)


def _json_default(obj):
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, tuple)):
        return list(obj)
    return str(obj)


def write_dataset(ds: Dataset, path, *, compression="gzip", compression_opts=4):
    """Write ``ds`` to ``path`` atomically in the bsvm_scale HDF5 format.

    Parameters
    ----------
    ds : Dataset
    path : str or os.PathLike
        Target file; its directory must exist.  An existing file is replaced
        only once the new file is complete.
    compression : str or None
        h5py filter for the arrays ('gzip' by default; None stores raw).
    compression_opts : int, optional
        gzip level (default 4).

    Returns
    -------
    pathlib.Path
        The written path.

    Raises
    ------
    OSError
        When the directory is missing or not writable (the message names the
        path); any temporary file is removed.
    """
    if not isinstance(ds, Dataset):
        raise TypeError(f"write_dataset expects a Dataset; got {type(ds).__name__}")
    h5py = _h5py()
    path = Path(path)
    if path.is_dir():
        raise IsADirectoryError(f"cannot write data set to {str(path)!r}: it is a directory")
    with atomic_path(path, what="data set file") as tmp:
        provenance = json.dumps(ds.provenance, default=_json_default, sort_keys=True)
        with h5py.File(tmp, "w", track_order=True) as f:
            _write_array(f, "X", ds.X, compression, compression_opts)
            _write_array(f, "y", ds.y, compression, compression_opts)
            f.attrs["name"] = ds.name
            f.attrs["task"] = ds.task
            f.attrs["feature_names"] = np.array(ds.feature_names, dtype=h5py.string_dtype())
            f.attrs["provenance"] = provenance
            f.attrs["description"] = ds.description
            f.attrs["format_version"] = np.int64(FORMAT_VERSION)
            f.attrs["library"] = LIBRARY
            if ds.splits:
                _write_splits(f.create_group("splits"), ds.splits, compression, compression_opts)
            if ds.extra:
                g = f.create_group("extra")
                for key, arr in ds.extra.items():
                    _write_array(g, key, arr, compression, compression_opts)
            if ds.encoder is not None or ds.schema is not None:
                f.create_dataset("table", data=_table_json(ds), dtype=h5py.string_dtype())
    return path


def _table_json(ds):
    return json.dumps({"schema": None if ds.schema is None else ds.schema.to_dict(),
                       "coding": None if ds.encoder is None else ds.encoder.to_dict()},
                      sort_keys=True)


def _write_splits(g, splits, compression, compression_opts):
    """The train/test index pairs: two stacked arrays when every split has the
    same sizes (``layout="stacked"``), else ``train_<k>``/``test_<k>``."""
    g.attrs["n_splits"] = np.int64(len(splits))
    if len({len(tr) for tr, _ in splits}) == 1 and len({len(te) for _, te in splits}) == 1:
        g.attrs["layout"] = "stacked"
        _write_array(g, "train", np.stack([tr for tr, _ in splits]), compression, compression_opts)
        _write_array(g, "test", np.stack([te for _, te in splits]), compression, compression_opts)
        return
    g.attrs["layout"] = "per_split"
    for k, (tr, te) in enumerate(splits):
        _write_array(g, f"train_{k}", tr, compression, compression_opts)
        _write_array(g, f"test_{k}", te, compression, compression_opts)


# ---------------------------------------------------------------- reading


def _str_attr(f, key, where, *, required=True, default=""):
    if key not in f.attrs:
        if required:
            raise DatasetFileError(f"{where}: missing attribute {key!r}")
        return default
    val = decode_text(f.attrs[key])
    if not isinstance(val, str):
        raise DatasetFileError(f"{where}: attribute {key!r} is not a string")
    return val


def _open(path):
    """Open ``path`` read-only, mapping every failure to a clear error."""
    h5py = _h5py()
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"data set file {str(p)!r} does not exist")
    if p.is_dir():
        raise DatasetFileError(f"{str(p)!r} is a directory, not a data set file")
    try:
        try:
            # files are only ever replaced atomically, never written in place,
            # so reading needs no HDF5 file lock (which fails on read-only mounts)
            return h5py.File(p, "r", locking=False)
        except (TypeError, ValueError):  # HDF5 library without locking control
            return h5py.File(p, "r")
    except OSError as exc:
        if not h5py.is_hdf5(p):
            raise DatasetFileError(
                f"{str(p)!r} is not an HDF5 file (no HDF5 signature)"
            ) from None
        raise DatasetFileError(
            f"{str(p)!r} cannot be opened as HDF5 (truncated or corrupted?): {exc}"
        ) from None


def _header(f, where):
    """Validate the root attributes and array shapes; return the metadata."""
    version = _check_format(f, where)
    xs = _check_arrays(f, where)
    task = _str_attr(f, "task", where)
    if task not in TASKS:
        raise DatasetFileError(f"{where}: task {task!r} is not one of {TASKS}")
    n_splits, layout = _splits_header(f, where)
    return {
        "name": _str_attr(f, "name", where),
        "task": task,
        "description": _str_attr(f, "description", where, required=False, default=""),
        "n_samples": int(xs[0]),
        "n_features": int(xs[1]),
        "feature_names": _feature_names(f, xs[1], where),
        "provenance": _provenance(f, where),
        "format_version": version,
        "n_splits": int(n_splits),
        "splits_layout": layout,
        "extra": _extras_header(f, xs[0], where),
        "table": _table_header(f, where),
        "X_dtype": str(f["X"].dtype),
        "y_dtype": str(f["y"].dtype),
        "compression": f["X"].compression,
    }


def _check_format(f, where):
    """The file's format version, after checking it is a data set file of it."""
    lib = _str_attr(f, "library", where, required=False, default=None)
    if lib != LIBRARY:
        raise DatasetFileError(
            f"{where}: not a bsvm_scale data set file (attribute 'library' is {lib!r})"
        )
    if "format_version" not in f.attrs:
        raise DatasetFileError(f"{where}: missing attribute 'format_version'")
    try:
        version = int(np.asarray(f.attrs["format_version"]).item())
    except (TypeError, ValueError):
        raise DatasetFileError(f"{where}: format_version is not an integer") from None
    if version != FORMAT_VERSION:
        raise DatasetFileError(
            f"{where}: unknown format_version {version} (this library reads {FORMAT_VERSION})"
        )
    return version


def _check_arrays(f, where):
    """The shape of /X after checking /X and /y exist, are numeric and agree."""
    h5py = _h5py()
    for key in ("X", "y"):
        if key not in f or not isinstance(f[key], h5py.Dataset):
            raise DatasetFileError(f"{where}: missing dataset /{key}")
    xs, ys = f["X"].shape, f["y"].shape
    if len(xs) != 2 or xs[0] < 1 or xs[1] < 1:
        raise DatasetFileError(f"{where}: /X must be a non-empty 2-D array; has shape {xs}")
    if ys != (xs[0],):
        raise DatasetFileError(f"{where}: /y has shape {ys}, expected ({xs[0]},) to match /X {xs}")
    text_y = f["y"].dtype.kind == "O"
    if not np.issubdtype(f["X"].dtype, np.number) or not (
            np.issubdtype(f["y"].dtype, np.number) or text_y):
        raise DatasetFileError(f"{where}: /X must be numeric and /y numeric or text")
    return xs


def _feature_names(f, d, where):
    """The stored column names (``x1..xd`` when absent), one per column."""
    if "feature_names" in f.attrs:
        raw = np.atleast_1d(f.attrs["feature_names"])
        names = [s.decode("utf-8") if isinstance(s, bytes) else str(s) for s in raw]
    else:
        names = [f"x{j + 1}" for j in range(d)]
    if len(names) != d:
        raise DatasetFileError(f"{where}: {len(names)} feature_names for {d} columns of /X")
    return names


def _provenance(f, where):
    """The provenance attribute, parsed from JSON."""
    text = _str_attr(f, "provenance", where, required=False, default="{}")
    try:
        return json.loads(text) if text else {}
    except json.JSONDecodeError as exc:
        raise DatasetFileError(f"{where}: provenance attribute is not valid JSON ({exc})") from None


def _splits_header(f, where):
    """``(n_splits, layout)`` of /splits, checked (``(0, None)`` without it)."""
    if "splits" not in f:
        return 0, None
    g = f["splits"]
    layout = _str_attr(g, "layout", where + " /splits", required=False, default="per_split")
    if layout == "stacked":
        for key in ("train", "test"):
            if key not in g or len(g[key].shape) != 2:
                raise DatasetFileError(f"{where}: /splits/{key} missing or not 2-D")
        n_splits = g["train"].shape[0]
        if g["test"].shape[0] != n_splits:
            raise DatasetFileError(f"{where}: /splits/train and /splits/test disagree in count")
        return n_splits, layout
    if layout == "per_split":
        n_splits = sum(1 for k in g if k.startswith("train_"))
        for k in range(n_splits):
            if f"train_{k}" not in g or f"test_{k}" not in g:
                raise DatasetFileError(f"{where}: /splits lacks train_{k} or test_{k}")
        return n_splits, layout
    raise DatasetFileError(f"{where}: unknown /splits layout {layout!r}")


def _extras_header(f, n, where):
    """``{key: (shape, dtype)}`` of the per-case arrays in /extra (``n`` rows each)."""
    h5py = _h5py()
    extras = {}
    for key, dset in (f["extra"].items() if "extra" in f else ()):
        if not isinstance(dset, h5py.Dataset) or len(dset.shape) < 1 or dset.shape[0] != n:
            raise DatasetFileError(f"{where}: /extra/{key} does not have {n} rows")
        extras[key] = (tuple(dset.shape), str(dset.dtype))
    return extras


def _table_header(f, where):
    """The parsed ``/table`` JSON (``{"schema", "coding"}``), or None."""
    if "table" not in f:
        return None
    raw = f["table"][()]
    try:
        return json.loads(raw.decode("utf-8") if isinstance(raw, bytes) else str(raw))
    except json.JSONDecodeError as exc:
        raise DatasetFileError(f"{where}: /table is not valid JSON ({exc})") from None


def _table_objects(meta, where):
    """``(schema, encoder)`` of the ``/table`` record (None, None without one)."""
    from ..tables import Schema, TableEncoder

    table = meta.get("table")
    if not table:
        return None, None
    try:
        schema = None if table.get("schema") is None else Schema.from_dict(table["schema"])
        coding = table.get("coding")
        return schema, None if coding is None else TableEncoder.from_dict(coding)
    except (KeyError, TypeError, ValueError) as exc:
        raise DatasetFileError(f"{where}: /table does not describe a table coding ({exc})"
                               ) from None


def read_encoder(path):
    """The table coding (:class:`~bsvm_scale.tables.TableEncoder`) of a data set
    file imported from a table, or None."""
    where = repr(str(path))
    f = _open(path)
    with f:
        return _table_objects(_header(f, where), where)[1]


def _read_extra(dset):
    """A per-case array; text comes back as a NumPy ``str`` array."""
    if dset.dtype.kind == "O":
        return np.array(dset.asstr()[...], dtype=str)
    return dset[...]


def read_case_ids(path):
    """The case identifiers of a data set file (``/extra/case_id``), or None.

    Raises :class:`DatasetFileError` naming the file when it is not a data
    set of this format.
    """
    where = repr(str(path))
    f = _open(path)
    with f:
        meta = _header(f, where)
        return _read_extra(f["extra"][CASE_ID]) if CASE_ID in meta["extra"] else None


def _read_splits(g, meta):
    if meta["n_splits"] == 0:
        return None
    if meta["splits_layout"] == "stacked":
        tr, te = g["train"][...], g["test"][...]
        return [(tr[k], te[k]) for k in range(tr.shape[0])]
    return [(g[f"train_{k}"][...], g[f"test_{k}"][...]) for k in range(meta["n_splits"])]


def read_dataset(path, *, splits=True, extra=True) -> Dataset:
    """Read a data set written by :func:`write_dataset`.

    The file is opened read-only.  ``splits=False`` / ``extra=False`` skip
    those groups.  Any problem with the file raises :class:`DatasetFileError`
    (a :class:`ValueError`) naming the file; a missing file raises
    :class:`FileNotFoundError`.
    """
    where = repr(str(path))
    f = _open(path)
    try:
        with f:
            meta = _header(f, where)
            X = f["X"][...]
            y = _read_extra(f["y"])
            sp = _read_splits(f["splits"], meta) if (splits and "splits" in f) else None
            ex = {k: _read_extra(f["extra"][k]) for k in meta["extra"]} if extra else {}
    except DatasetFileError:
        raise
    except (OSError, KeyError, TypeError, RuntimeError, AttributeError, ValueError) as exc:
        raise DatasetFileError(f"{where}: cannot read data (truncated or corrupted?): {exc}") from None
    schema, encoder = _table_objects(meta, where)
    try:
        return Dataset(
            X=X,
            y=y,
            name=meta["name"],
            task=meta["task"],
            feature_names=meta["feature_names"],
            provenance=meta["provenance"],
            splits=sp,
            extra=ex,
            description=meta["description"],
            schema=schema,
            encoder=encoder,
        )
    except ValueError as exc:
        raise DatasetFileError(f"{where}: invalid contents: {exc}") from None


def dataset_info(path) -> dict:
    """Metadata of a data set file without loading its arrays.

    Returns a dict with ``path``, ``file_size``, ``name``, ``task``,
    ``description``, ``n_samples``, ``n_features``, ``feature_names``,
    ``provenance``, ``format_version``, ``n_splits``, ``splits_layout``,
    ``extra`` (name -> (shape, dtype)), ``X_dtype``, ``y_dtype`` and
    ``compression``.  Raises like :func:`read_dataset`.
    """
    where = repr(str(path))
    f = _open(path)
    try:
        with f:
            meta = _header(f, where)
    except DatasetFileError:
        raise
    except (OSError, KeyError, TypeError, RuntimeError, AttributeError, ValueError) as exc:
        raise DatasetFileError(f"{where}: cannot read metadata (truncated or corrupted?): {exc}") from None
    meta = {"path": str(path), "file_size": os.path.getsize(path), **meta}
    return meta
