"""Batch scoring: a saved model applied to new inputs, chunk by chunk.

:func:`predict_file` reads a model file (:func:`bsvm_scale.storage.save_model`)
and an input file -- a data set of the project's HDF5 format, a ``.npy``
array or a CSV file with a header -- and writes the predictions to an HDF5
file:

* regression: ``mean``, ``std_f`` (standard deviation of the latent ``f``,
  (4.46) for BSVR) and ``std_y`` (with the noise, where the model has a noise
  model);
* classification: ``label``, ``proba`` (one column per class, ``classes`` as
  an attribute) and, for binary models with a latent function, ``latent_mean``
  and ``latent_std`` (5.41).

Rows are scored in chunks of ``chunk_size`` (memory stays flat in the number
of rows). BLAS kernels handle the rows of a block in groups, and a row's last
bits depend on where in its block it falls (a remainder group is summed
differently), so each chunk is scored in blocks of :data:`BLOCK` rows aligned
to the row index (the last one padded) and chunk sizes are rounded up to a
multiple of it: every row is computed in the same block at the same place
whatever the chunk size or the number of Dask workers, and the predictions
are the same bit for bit (tested). On
a Dask cluster (``scheduler`` or ``workers``; by default a LocalCluster of one
worker per core for more than :data:`LOCAL_CHUNKS` chunks) each chunk is a task
that opens the model and the inputs by path; the driver is the only writer and
codes a CSV file's rows (through the model's table coding) chunk by chunk while
the workers score the chunks before. The output is
written atomically and carries the model's provenance (path, SHA-256,
estimator, parameters, library version) and the input's SHA-256.
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np

from ..._util.atomic import atomic_path, file_sha256
from ..._util.validation import design_width
from ...tables.csv import csv_count_rows, csv_header, iter_csv_chunks
from ...tables.schema import TableError, parse_numbers

__all__ = ["ScoringError", "Inputs", "open_inputs", "read_rows", "score_rows", "predict_file",
           "file_sha256", "DEFAULT_CHUNK", "BLOCK", "FORMAT_VERSION"]

#: rows per chunk by default
DEFAULT_CHUNK = 10_240
#: rows per model call, aligned to the row index (chunks are multiples of it)
BLOCK = 1024
#: version of the predictions file layout
FORMAT_VERSION = 1
#: chunks in flight per Dask worker (bounds the driver's memory)
_WINDOW_PER_WORKER = 2
#: inputs of at most this many chunks are scored in this process by default
LOCAL_CHUNKS = 8


class ScoringError(TableError):
    """Input that cannot be scored (one line naming the problem)."""


# -- inputs -----------------------------------------------------------------------
@dataclass
class Inputs:
    """An input file opened for scoring.

    ``array`` is the path of an ``.npy`` or data set file holding the rows of
    the design matrix (a CSV is coded into a temporary ``.npy`` first, through
    the model's table coding when it has one); ``order`` maps the model's
    features to its columns; ``ids`` are the rows' case identifiers (a data set
    file's ``/extra/case_id``, or a CSV's id column), copied into the
    predictions file; ``skip`` is the path of a boolean ``.npy`` marking rows
    that get no prediction (a missing number under the model's ``"drop"``
    policy), or None; ``unknown`` counts the unseen categories coded as
    unknown, ``{column: {value: count}}``.
    """

    path: str
    kind: str
    n_rows: int
    columns: list
    sha256: str
    array: str
    order: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    ids: np.ndarray | None = None
    skip: str | None = None
    unknown: dict = field(default_factory=dict)
    pending: object = None

    def ready(self, stop):
        """Make the rows before ``stop`` readable (a CSV file's are coded on the way)."""
        if self.pending is not None:
            self.pending.code_until(stop)

    def finish(self):
        """After scoring: a CSV file's identifiers and counts are complete."""
        if self.pending is not None:
            self.ids = self.pending.finish()
            self.pending = None


def _column_order(columns, feature_names, n_features, by_position, where):
    """Input column of each model feature."""
    n_in = len(columns)
    if by_position or feature_names is None:
        if n_in != n_features:
            hint = "" if by_position else (" (the model stores no feature names, so columns "
                                           "are taken by position)")
            raise ScoringError(f"{where} has {n_in} columns; the model takes {n_features}{hint}.")
        return np.arange(n_features, dtype=np.int64)
    missing = [name for name in feature_names if name not in columns]
    if missing:
        raise ScoringError(f"{where} lacks the model's columns {missing[:5]} (it has "
                           f"{list(columns)[:8]}); rename them or pass --by-position.")
    return np.array([list(columns).index(name) for name in feature_names], dtype=np.int64)


class _CsvCoder:
    """Turns chunks of CSV text columns into rows of the design matrix: through
    the model's table coding, or as numbers (columns by name or position)."""

    def __init__(self, path, header, feature_names, n_features, by_position, encoder,
                 unknown=None):
        self.where = f"input {str(path)!r}"
        self.encoder, self.unknown = encoder, unknown
        self.counts = {}
        if encoder is not None:
            self.usecols = list(encoder.input_names)
        elif by_position or feature_names is None:
            _column_order(header, None, n_features, True, self.where)
            self.usecols = list(header)
        else:
            _column_order(header, feature_names, n_features, False, self.where)
            self.usecols = list(feature_names)

    def rows(self, start, columns):
        """``(design rows, rows without a prediction)`` of one chunk."""
        if self.encoder is None:
            X = np.column_stack([parse_numbers(columns[c], self.where, c, row_offset=start,
                                               fix="the model was fitted on numbers only")
                                 for c in self.usecols])
            bad = np.isnan(X)
            if bad.any():
                r, c = np.argwhere(bad)[0]
                raise ScoringError(f"{self.where} row {start + r + 1}, column "
                                   f"{self.usecols[c]!r}: missing (the model needs a number).")
            return X, np.zeros(X.shape[0], dtype=bool)
        enc = self.encoder.transform(columns, self.where, unknown=self.unknown, row_offset=start)
        for col, values in enc.unknown.items():
            counts = self.counts.setdefault(col, {})
            for v, k in values.items():
                counts[v] = counts.get(v, 0) + k
        skip = np.zeros(enc.X.shape[0], dtype=bool)
        skip[enc.rows_missing] = True
        return np.where(skip[:, None], 0.0, enc.X), skip


class _RowFile:
    """An ``.npy`` file of a known shape written row block by row block with
    plain file writes (the pages go to the file, not into this process's
    memory, as a writable memory map's would); readers open it by path."""

    def __init__(self, path, dtype, shape):
        header = np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape)
        self.offset, self.row_bytes = header.offset, header.itemsize * int(
            np.prod(shape[1:], dtype=np.int64))
        del header
        self.fh = open(path, "r+b")

    def write(self, start, rows):
        self.fh.seek(self.offset + start * self.row_bytes)
        self.fh.write(np.ascontiguousarray(rows).tobytes())
        self.fh.flush()

    def close(self):
        self.fh.close()


class _CsvStream:
    """A CSV file coded into the ``.npy`` design matrix ``array`` (and the mask
    ``skip`` of rows without a prediction) chunk by chunk, as scoring reaches
    the rows: the driver codes a chunk while workers score the earlier ones.
    Flat memory but for the identifiers of the ``id_column``."""

    def __init__(self, path, coder, array, skip, id_column, chunk_rows):
        n = csv_count_rows(path)
        if n < 1:
            raise ScoringError(f"CSV file {str(path)!r} has a header but no rows.")
        if id_column is not None and id_column not in csv_header(path):
            raise ScoringError(f"CSV file {str(path)!r} has no id column {id_column!r} "
                               f"(columns: {csv_header(path)[:8]}).")
        width = coder.encoder.n_outputs if coder.encoder is not None else len(coder.usecols)
        self.n, self.coder, self.id_column = n, coder, id_column
        self.shape = (n, width)
        self.X = _RowFile(array, np.float64, (n, width))
        self.skip = _RowFile(skip, np.bool_, (n,))
        usecols = coder.usecols + ([id_column] if id_column is not None else [])
        self.chunks = iter_csv_chunks(path, chunk_rows, usecols)
        self.done, self.id_parts = 0, []
        self.id_stem = str(array)[:-len(".npy")] + ".ids"

    def code_until(self, stop):
        """Code the rows before ``stop`` (and flush them for the readers)."""
        while self.done < stop:
            start, columns = next(self.chunks)
            X, gaps = self.coder.rows(start, columns)
            self.X.write(start, X)
            self.skip.write(start, gaps)
            if self.id_column is not None:
                self._keep_ids(columns[self.id_column].tolist())
            self.done = start + X.shape[0]

    def _keep_ids(self, texts):
        """A chunk's identifiers, to a file of their own (int64 where every one
        is a canonical integer, else text; merged by :class:`_IdParts`)."""
        from ...datasets.importing import case_ids_from_text

        path = f"{self.id_stem}.{len(self.id_parts)}.npy"
        np.save(path, case_ids_from_text(texts, f"id column {self.id_column!r}", unique=False))
        self.id_parts.append(path)

    def finish(self):
        """Code what is left; the rows' case identifiers (None without an id column)."""
        self.code_until(self.n)
        self.X.close()
        self.skip.close()
        return None if self.id_column is None else _IdParts(self.id_parts)


class _IdParts:
    """The case identifiers of a CSV file, one ``.npy`` per chunk, written to
    the output one chunk at a time: integers where every chunk's are, else
    text (an integer chunk written back as its canonical text)."""

    def __init__(self, paths):
        self.paths = paths
        self.kind = "i" if all(np.load(p, mmap_mode="r").dtype.kind == "i" for p in paths) \
            else "U"

    def write(self, f, name):
        import h5py

        n = sum(np.load(p, mmap_mode="r").shape[0] for p in self.paths)
        dset = f.create_dataset(name, shape=(n,), compression="gzip",
                                dtype=np.int64 if self.kind == "i" else h5py.string_dtype())
        at = 0
        for p in self.paths:
            part = np.load(p)
            dset[at:at + part.size] = part if self.kind == "i" else part.astype(str).astype(object)
            at += part.size


def _npy_shape(path):
    a = np.load(path, mmap_mode="r")
    if a.ndim != 2 or a.dtype.kind not in "fiu":
        raise ScoringError(f".npy input {str(path)!r} must be a 2-D numeric array; got "
                           f"shape {a.shape}, dtype {a.dtype}.")
    return a.shape


def _dataset_inputs(p, feature_names, encoder, where):
    """``(shape, columns, names, ids)`` of a data set file; a model fitted on a
    table needs the data set's coding to be its own."""
    from ...datasets import dataset_info, read_case_ids, read_encoder

    info = dataset_info(p)
    shape, columns = (info["n_samples"], info["n_features"]), info["feature_names"]
    if encoder is not None:
        if read_encoder(p) != encoder:
            raise ScoringError(f"{where} was not coded by the model's table coding (it was "
                               "imported with other columns or categories); score the raw "
                               "CSV file instead.")
        return shape, columns, None, read_case_ids(p)
    return shape, columns, feature_names, read_case_ids(p)


def open_inputs(path, feature_names, n_features, by_position=False, workdir=None,
                id_column=None, encoder=None, unknown=None, chunk_rows=DEFAULT_CHUNK):
    """Open ``path`` (``.h5``/``.hdf5`` data set, ``.npy``, ``.csv``) for a
    model with ``n_features`` design columns named ``feature_names`` (or
    None), coded from tables by ``encoder`` (or None); ``id_column``: a CSV
    column of case identifiers (not an input); ``unknown``: overrides the
    model's policy for unseen categories. A CSV file is coded chunk by chunk
    (``chunk_rows``) as :meth:`Inputs.ready` asks for its rows."""
    p = Path(path)
    if not p.is_file():
        raise FileNotFoundError(f"input file {str(p)!r} does not exist")
    suffix = ".csv" if p.name.lower().endswith(".csv.gz") else p.suffix.lower()
    where = f"input {str(p)!r}"
    ids, skip, counts, pending = None, None, {}, None
    if id_column is not None and suffix != ".csv":
        raise ScoringError(f"{where}: an id column is taken from a CSV file only (a data set "
                           "file brings its own case identifiers).")
    if suffix == ".npy":
        shape = _npy_shape(p)
        columns, kind, array = [f"column {k}" for k in range(shape[1])], "npy", str(p)
        names = None  # an array has no names: by position
    elif suffix in (".h5", ".hdf5"):
        shape, columns, names, ids = _dataset_inputs(p, feature_names, encoder, where)
        kind, array = "dataset", str(p)
    elif suffix == ".csv":
        work = Path(workdir or tempfile.gettempdir())
        array = str(work / f".{p.name}.{os.getpid()}.npy")
        skip = str(work / f".{p.name}.{os.getpid()}.skip.npy")
        coder = _CsvCoder(p, csv_header(p), feature_names, n_features, by_position, encoder,
                          unknown)
        pending = _CsvStream(p, coder, array, skip, id_column, chunk_rows)
        columns = coder.encoder.feature_names_out if encoder is not None else coder.usecols
        shape, kind, names, counts = pending.shape, "csv", None, coder.counts
    else:
        raise ScoringError(f"{where}: unknown file type {suffix!r}; give a data set (.h5), "
                           "a .npy array or a .csv file with a header.")
    order = _column_order(columns, names, n_features, by_position or names is None, where)
    return Inputs(str(p), kind, int(shape[0]), list(columns), file_sha256(p), array, order,
                  ids, skip, counts, pending)


def read_rows(inputs, start, stop):
    """Rows ``start:stop`` in the model's feature order (float64, C-ordered);
    a NaN or infinite value raises naming its row and column (rows without a
    prediction, ``inputs.skip``, hold zeros)."""
    if inputs.kind == "dataset":
        import h5py

        with h5py.File(inputs.array, "r") as f:
            X = np.asarray(f["X"][start:stop], dtype=np.float64)
    else:
        X = np.asarray(np.load(inputs.array, mmap_mode="r")[start:stop], dtype=np.float64)
    X = np.ascontiguousarray(X[:, inputs.order])
    bad = ~np.isfinite(X)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        raise ScoringError(f"input {inputs.path!r} row {start + r + 1}, column "
                           f"{inputs.columns[inputs.order[c]]!r}: {X[r, c]} (the model needs "
                           "finite values).")
    return X


def skipped_rows(inputs, start, stop):
    """Boolean mask of the rows ``start:stop`` that get no prediction."""
    if inputs.skip is None:
        return np.zeros(stop - start, dtype=bool)
    return np.load(inputs.skip, mmap_mode="r")[start:stop].copy()


# -- predictions ------------------------------------------------------------------
def _accepts(fn, name):
    return name in inspect.signature(fn).parameters


def score_rows(model, X):
    """Every output the model gives for the rows ``X`` (a dict of arrays)."""
    from sklearn.base import is_classifier

    if not is_classifier(model):
        if not _accepts(model.predict, "return_std"):
            return {"mean": np.asarray(model.predict(X), dtype=np.float64)}
        if hasattr(model, "predictive_moments"):  # BSVR: mean and variances at once
            mean, var_f, var_y = model.predictive_moments(X)
            return {"mean": mean, "std_f": np.sqrt(var_f), "std_y": np.sqrt(var_y)}
        mean, std_f = model.predict(X, return_std=True)
        out = {"mean": mean, "std_f": std_f}
        if _accepts(model.predict, "include_noise"):
            out["std_y"] = model.predict(X, return_std=True, include_noise=True)[1]
        return out
    if hasattr(model, "proba_from_latent"):  # BTSVC: the latent moments once
        mu, sd = model.latent_moments(X)
        proba = model.proba_from_latent(mu, sd)
        out = {"label": model.classes_[np.argmax(proba, axis=1)], "proba": proba}
        if len(model.classes_) == 2:
            out["latent_mean"], out["latent_std"] = mu, sd
        return out
    out = {"label": np.asarray(model.predict(X))}
    if hasattr(model, "predict_proba"):
        out["proba"] = np.asarray(model.predict_proba(X), dtype=np.float64)
    binary = len(getattr(model, "classes_", ())) == 2
    dec = getattr(model, "decision_function", None)
    if binary and dec is not None and _accepts(dec, "return_std"):
        out["latent_mean"], out["latent_std"] = dec(X, return_std=True)
    return out


_MODELS = {}


def _model_at(path):
    """The model at ``path`` (cached per process by path, mtime and size)."""
    from ...storage import load_model

    st = os.stat(path)
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _MODELS:
        _MODELS.clear()
        _MODELS[key] = load_model(path)
    return _MODELS[key]


def score_chunk(model_path, inputs, start, stop):
    """Task: the predictions of rows ``start:stop`` (model and inputs by path),
    in blocks of :data:`BLOCK` rows (``start`` is a multiple of it)."""
    model = _model_at(model_path)
    X = read_rows(inputs, start, stop)
    parts = [_score_block(model, X[b:b + BLOCK]) for b in range(0, X.shape[0], BLOCK)]
    out = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    return start, _blank(out, skipped_rows(inputs, start, stop))


def _blank(out, skip):
    """No prediction on the rows ``skip``: NaN, or an empty label."""
    if not skip.any():
        return out
    for name, arr in out.items():
        if arr.dtype.kind in "US":
            arr = arr.astype(object)
            arr[skip] = ""
        elif arr.dtype.kind in "O":
            arr[skip] = ""
        else:
            arr = arr.astype(np.float64)
            arr[skip] = np.nan
        out[name] = arr
    return out


def _score_block(model, X):
    """Predictions of at most :data:`BLOCK` rows, computed as a full block
    (the last row repeated) so that every row sees the same BLAS path."""
    t = X.shape[0]
    if t < BLOCK:
        X = np.concatenate([X, np.repeat(X[-1:], BLOCK - t, axis=0)])
    return {k: v[:t] for k, v in score_rows(model, X).items()}


# -- writer -----------------------------------------------------------------------
class _Writer:
    """Fills the output datasets slice by slice (created at the first chunk)."""

    def __init__(self, f, n_rows):
        self.f, self.n = f, n_rows

    def put(self, start, out):
        for name, arr in out.items():
            arr = np.asarray(arr)
            text = arr.dtype.kind in "USO"
            if name not in self.f:
                import h5py

                shape = (self.n,) + arr.shape[1:]
                dtype = h5py.string_dtype() if text else \
                    (arr.dtype if arr.dtype.kind in "biuf" else np.float64)
                self.f.create_dataset(name, shape=shape, dtype=dtype, chunks=True,
                                      compression="gzip", compression_opts=4)
            self.f[name][start:start + arr.shape[0]] = arr.astype(object) if text else arr


def _provenance(f, model_path, model, inputs, chunk_size):
    from ... import __version__

    f.attrs["library"] = "bsvm_scale"
    f.attrs["library_version"] = __version__
    f.attrs["format_version"] = np.int64(FORMAT_VERSION)
    f.attrs["kind"] = "predictions"
    f.attrs["model_path"] = str(Path(model_path).resolve())
    f.attrs["model_sha256"] = file_sha256(model_path)
    f.attrs["estimator"] = type(model).__name__
    f.attrs["params_json"] = json.dumps(model.get_params(deep=False), default=str,
                                        sort_keys=True)
    f.attrs["input_path"] = str(Path(inputs.path).resolve())
    f.attrs["input_sha256"] = inputs.sha256
    f.attrs["input_kind"] = inputs.kind
    f.attrs["n_rows"] = np.int64(inputs.n_rows)
    f.attrs["chunk_size"] = np.int64(chunk_size)
    f.attrs["created"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    if hasattr(model, "classes_"):
        _classes_attr(f, model.classes_)


def _counts(inputs):
    """``(unseen categories coded as unknown, rows without a prediction)``."""
    n_skip = 0 if inputs.skip is None else int(np.load(inputs.skip, mmap_mode="r").sum())
    return int(sum(sum(v.values()) for v in inputs.unknown.values())), n_skip


def _finish_file(f, model, inputs):
    """What is known once every row is scored: case identifiers, the counts,
    the named probability columns."""
    import h5py

    if isinstance(inputs.ids, _IdParts):
        inputs.ids.write(f, "case_id")
    elif inputs.ids is not None:
        text = inputs.ids.dtype.kind == "U"
        f.create_dataset("case_id", data=inputs.ids.astype(object) if text else inputs.ids,
                         dtype=h5py.string_dtype() if text else inputs.ids.dtype,
                         compression="gzip")
    if inputs.unknown:
        f.attrs["unknown_values"] = json.dumps(inputs.unknown, sort_keys=True)
    f.attrs["n_unknown"], f.attrs["n_without_prediction"] = map(np.int64, _counts(inputs))
    if "proba" in f and hasattr(model, "classes_"):
        _classes_attr(f["proba"], model.classes_)  # the columns, named


def _classes_attr(obj, classes):
    """The class labels as an attribute (text labels as UTF-8 strings)."""
    classes = np.asarray(classes)
    if classes.dtype.kind in "USO":
        import h5py

        obj.attrs.create("classes", data=[str(c) for c in classes], dtype=h5py.string_dtype())
    else:
        obj.attrs["classes"] = classes


def _chunks(n, size):
    return [(s, min(n, s + size)) for s in range(0, n, size)]


def _run_local(model_path, inputs, chunks, writer, progress):
    for start, stop in chunks:
        inputs.ready(stop)
        writer.put(*score_chunk(model_path, inputs, start, stop))
        progress.task_done()


def _run_dask(model_path, inputs, chunks, writer, progress, client):
    """Chunks as Dask tasks, a bounded number in flight; the driver writes."""
    from dask.distributed import as_completed

    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    todo = list(chunks)
    window = _WINDOW_PER_WORKER * n_workers

    # the driver codes a CSV file's rows and writes the identifiers; tasks read rows only
    shipped = replace(inputs, ids=None, pending=None, unknown={})

    def submit(c):
        inputs.ready(c[1])
        return client.submit(score_chunk, model_path, shipped, *c, pure=False)

    pending = as_completed([submit(todo.pop(0)) for _ in range(min(window, len(todo)))])
    for fut in pending:
        writer.put(*fut.result())
        fut.release()
        progress.task_done()
        if todo:
            pending.add(submit(todo.pop(0)))


def default_workers(n_chunks):
    """Worker processes of a scoring run by default: none (this process) for
    up to :data:`LOCAL_CHUNKS` chunks, where starting a cluster costs more than
    it gains, else one per core (each single-threaded, so that the cores run
    the kernel sums and the triangular solves of separate chunks, and the
    driver codes a CSV file's rows meanwhile)."""
    cores = os.cpu_count() or 1
    return cores if n_chunks > LOCAL_CHUNKS and cores > 1 else 0


def predict_file(model_path, input_path, out_path, *, chunk_size=DEFAULT_CHUNK, scheduler=None,
                 workers=None, by_position=False, progress=True, stream=None, id_column=None,
                 unknown=None):
    """Score ``input_path`` with the model file ``model_path`` into ``out_path``.

    Parameters
    ----------
    model_path : path of a model file (:func:`bsvm_scale.storage.save_model`).
    input_path : a data set file (``.h5``), a ``.npy`` array or a ``.csv``
        file with a header; columns are matched to the model's feature names
        when the model file stores them, else taken by position.
    out_path : the HDF5 file to write (atomically).
    chunk_size : int
        Rows per chunk (per Dask task), rounded up to a multiple of :data:`BLOCK`.
    scheduler : str, optional
        Address of a running Dask scheduler.
    workers : int, optional
        Start a LocalCluster with this many worker processes; 0: score in
        this process. Default (None, no ``scheduler``): in this process up to
        :data:`LOCAL_CHUNKS` chunks, else one worker per core
        (:func:`default_workers`).
    by_position : bool
        Take the input columns by position even when names are known.
    progress, stream : bool, file
        A progress line on ``stream`` (default stderr).
    id_column : str, optional
        A CSV column of case identifiers: not an input, written to the
        output as ``case_id`` (a data set file's own identifiers are copied
        without it).
    unknown : {"error", "ignore"}, optional
        For a model fitted on a table: what a category not seen in training
        does (default: the model's policy, normally ``"error"``); ignored
        values are counted in the output's attributes ``n_unknown`` and
        ``unknown_values``.

    Returns
    -------
    dict
        ``out``, ``n_rows``, ``n_chunks``, ``seconds`` and the output names.
    """
    from ...storage import model_feature_names

    chunk_size = -(-_positive("chunk_size", chunk_size) // BLOCK) * BLOCK
    t0 = time.perf_counter()
    model = _model_at(model_path)
    names = model_feature_names(model_path)
    encoder = getattr(model, "encoder_", None)
    n_features = design_width(model) if hasattr(model, "n_features_in_") else len(names or [])
    with tempfile.TemporaryDirectory(dir=Path(out_path).resolve().parent) as work:
        inputs = open_inputs(input_path, names, n_features, by_position, work, id_column,
                             encoder, unknown, chunk_size)
        chunks = _chunks(inputs.n_rows, chunk_size)
        if scheduler is None and workers is None:
            workers = default_workers(len(chunks))
        outputs = _write_with_progress(model_path, model, inputs, chunks, out_path, scheduler,
                                       workers, chunk_size, progress, stream)
        n_unknown, n_skipped = _counts(inputs)
    return {"out": str(out_path), "n_rows": inputs.n_rows, "n_chunks": len(chunks),
            "seconds": time.perf_counter() - t0, "outputs": outputs,
            "n_unknown": n_unknown, "n_without_prediction": n_skipped}


def _write_with_progress(model_path, model, inputs, chunks, out_path, scheduler, workers,
                         chunk_size, progress, stream):
    """:func:`_write` with a progress line over the chunks."""
    from ..outputs.progress import Progress

    bar = Progress(len(chunks), workers or 1, label="predict", stream=stream,
                   enabled=progress).start()
    try:
        return _write(model_path, model, inputs, chunks, out_path, bar, scheduler, workers,
                      chunk_size)
    finally:
        bar.close()


def _write(model_path, model, inputs, chunks, out_path, bar, scheduler, workers, chunk_size):
    import h5py

    with atomic_path(out_path, what="predictions file") as tmp:
        with h5py.File(tmp, "w", track_order=True) as f:
            _provenance(f, model_path, model, inputs, chunk_size)
            writer = _Writer(f, inputs.n_rows)
            if scheduler or workers:
                from .executor import _start_client

                client, cluster = _start_client(scheduler, workers)
                try:
                    _run_dask(str(Path(model_path).resolve()), inputs, chunks, writer, bar,
                              client)
                finally:
                    client.close()
                    if cluster is not None:
                        cluster.close()
            else:
                _run_local(model_path, inputs, chunks, writer, bar)
            inputs.finish()
            _finish_file(f, model, inputs)
            return sorted(k for k in f.keys())


def _positive(name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise ScoringError(f"{name} must be a positive integer; got {value!r}.")
    return int(value)
