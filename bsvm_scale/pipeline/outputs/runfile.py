"""The run file ``<run_dir>/run.h5`` (one writer: the driver).

Contents (group ``/record``, written with :func:`bsvm_scale.storage.encode`)::

    meta        name, pipeline text and digest, host, versions, scheduler, workers,
                timings, counts (tasks, done, failed, skipped/resumed), status
    datasets    per data set: task, n, d, data path, partitions (train/test indices)
    tasks       per task: metrics (ASE/AAE/NLPD or error rate/NLL), hyperparameters,
                evidence trajectory, SV counts, timings, host, versions, predictions
    results     per data set / model / partition: the chosen start (highest
                evidence), its metrics, model file; committee metrics if asked
    failures    per failed task: error, traceback, attempts

Root attributes: ``library='bsvm_scale'``, ``kind='run'``, ``format_version=2`` (2: scalar entries of a dict in its
``scalars`` attribute, see :mod:`bsvm_scale.storage`; version 1 files are read too).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .records import read_record, write_record

__all__ = ["write_run_file", "read_run_file", "summary_rows", "format_table", "RUN_FORMAT_VERSION"]

RUN_FORMAT_VERSION = 2


#: ``packing`` attribute of a run file holding its record as gzip-compressed tagged JSON
PACKED = "json-gzip"


def write_run_file(path, record, packed=False):
    """Write the run record atomically: one HDF5 object per entry, or with
    ``packed`` (exports, :mod:`bsvm_scale.pipeline.outputs.export`) one gzip-compressed
    tagged-JSON byte array ``record_json`` (a record of 3,600 tasks takes
    ~44 MB the first way, mostly HDF5 object headers, and a few MB the second)."""
    attrs = {"kind": "run", "format_version": np.int64(RUN_FORMAT_VERSION)}
    if not packed:
        return write_record(path, record, attrs=attrs)
    import gzip
    import json

    import h5py

    from ..._util.atomic import atomic_path

    blob = gzip.compress(json.dumps(_to_json(record), separators=(",", ":")).encode(), 6)
    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w") as f:
            f.attrs["library"] = "bsvm_scale"
            f.attrs.update(attrs)
            f.attrs["packing"] = PACKED
            f.create_dataset("record_json", data=np.frombuffer(blob, dtype=np.uint8))
    return path


def read_run_file(path):
    """The run record from ``run.h5`` or a run directory (ValueError if unreadable)."""
    p = Path(path)
    if p.is_dir():
        p = p / "run.h5"
    if not p.exists():
        raise FileNotFoundError(f"run file {str(p)!r} does not exist")
    rec = _read_packed(p)
    if rec is None:
        rec = read_record(p)
    if rec is None or "meta" not in rec:
        raise ValueError(f"{str(p)!r} is not a readable bsvm_scale run file")
    return rec


def _read_packed(p):
    """The record of a packed run file (None for an unpacked or unreadable one)."""
    import gzip
    import json
    import zlib

    import h5py

    try:
        with h5py.File(p, "r", locking=False) as f:
            if f.attrs.get("packing") != PACKED:
                return None
            blob = f["record_json"][()].tobytes()
    except (OSError, KeyError):
        return None
    try:
        return _from_json(json.loads(gzip.decompress(blob)))
    except (zlib.error, OSError, EOFError, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"{str(p)!r}: its packed run record cannot be decoded ({exc}); "
                         "export the run again") from exc


def _to_json(v):
    """Tagged JSON of a record: dicts with string keys as objects (others and
    tuples, arrays, NumPy scalars tagged with ``__t__``); floats keep every bit
    (JSON writes their shortest repr; nan and inf as NaN / Infinity)."""
    if isinstance(v, dict):
        if all(isinstance(k, str) and k != "__t__" for k in v):
            return {k: _to_json(x) for k, x in v.items()}
        return {"__t__": "dict", "v": [[_to_json(k), _to_json(x)] for k, x in v.items()]}
    if isinstance(v, list):
        return [_to_json(x) for x in v]
    if isinstance(v, tuple):
        return {"__t__": "tuple", "v": [_to_json(x) for x in v]}
    if isinstance(v, np.ndarray):
        if v.ndim == 1 and v.size > 1 and v.dtype.kind in "iu" and np.all(v[1:] > v[:-1]):
            # increasing indices (partitions): their steps, mostly 1, compress to little
            return {"__t__": "steps", "dtype": v.dtype.str, "first": v[0].item(),
                    "v": np.diff(v).tolist()}
        return {"__t__": "nd", "dtype": v.dtype.str, "shape": list(v.shape),
                "v": v.ravel().tolist()}
    if isinstance(v, np.generic):
        return {"__t__": "np", "dtype": v.dtype.str, "v": v.item()}
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    raise TypeError(f"run record: cannot pack a value of type {type(v).__name__}")


def _from_json(v):
    """Inverse of :func:`_to_json`."""
    if isinstance(v, list):
        return [_from_json(x) for x in v]
    if not isinstance(v, dict):
        return v
    tag = v.get("__t__")
    if tag is None:
        return {k: _from_json(x) for k, x in v.items()}
    if tag == "dict":
        return {_from_json(k): _from_json(x) for k, x in v["v"]}
    if tag == "tuple":
        return tuple(_from_json(x) for x in v["v"])
    if tag == "nd":
        return np.array(v["v"], dtype=np.dtype(v["dtype"])).reshape(v["shape"])
    if tag == "steps":
        dt = np.dtype(v["dtype"])
        return np.cumsum(np.array([v["first"]] + v["v"], dtype=dt), dtype=dt)
    if tag == "np":
        return np.dtype(v["dtype"]).type(v["v"])
    raise ValueError(f"run record: unknown packed tag {tag!r}")


def main_metric(task):
    return "ase" if task == "regression" else "error_rate"


def summary_rows(record):
    """One row per (data set, model): mean/sd of the metrics over partitions, time."""
    rows = []
    for ds, models in record.get("results", {}).items():
        task = record["datasets"][ds]["task"]
        for model, parts in models.items():
            vals = [p for p in parts.values() if isinstance(p, dict)]
            if not vals:
                continue
            metric_names = list(vals[0]["metrics"])
            row = {"dataset": ds, "model": model, "kind": vals[0]["kind"], "task": task,
                   "partitions": len(vals)}
            for m in metric_names:
                a = np.array([v["metrics"].get(m, np.nan) for v in vals], dtype=float)
                row[m] = (float(np.mean(a)), float(np.std(a, ddof=1)) if a.size > 1 else 0.0)
            ev = np.array([v.get("log_evidence", np.nan) for v in vals], dtype=float)
            row["log_evidence"] = float(np.mean(ev))
            row["n_sv"] = float(np.mean([v.get("n_sv", -1) for v in vals]))
            row["time"] = float(np.sum([v.get("time", 0.0) for v in vals]))
            if "committee_metrics" in vals[0]:
                a = np.array([v["committee_metrics"][main_metric(task)] for v in vals])
                row["committee"] = (float(np.mean(a)), float(np.std(a, ddof=1)) if a.size > 1 else 0.0)
            rows.append(row)
    return rows


def wall_clock(meta, minutes=False):
    """The wall time of a run from its record's ``meta``: of every invocation of
    ``bsvm-scale run`` on its directory when it was resumed or repeated (the
    last one's named apart; records written before the total was kept give
    the last invocation's only)."""
    unit, scale = ("min", 60.0) if minutes else ("s", 1.0)
    last = float(meta.get("elapsed", 0.0)) / scale
    k = int(meta.get("invocations", 1))
    if k <= 1:
        return f"{last:.1f} {unit} wall clock"
    total = float(meta.get("elapsed_total", meta.get("elapsed", 0.0))) / scale
    return f"{total:.1f} {unit} wall clock over {k} invocations (the last {last:.1f} {unit})"


def most_workers(meta):
    """Workers of a run from its record's ``meta``: the most any invocation
    had (a repeat that reused every task starts none)."""
    return int(meta.get("n_workers_max", meta.get("n_workers", 0)))


def sv_text(n_sv):
    """An SV count for tables: ``-`` for models without support vectors (GPs),
    which record -1."""
    n = float(n_sv)
    return "-" if not n >= 0 else f"{n:.0f}"


def format_table(rows, markdown=False):
    head = ["dataset", "model", "parts", "metric", "mean +- sd", "2nd metric", "ln evidence",
            "SVs", "time [s]"]
    lines = []
    for r in rows:
        m1 = main_metric(r["task"])
        m2 = "aae" if r["task"] == "regression" else "nll"
        a, b = r.get(m1, (np.nan, np.nan)), r.get(m2, (np.nan, np.nan))
        main = f"{a[0]:.4g} +- {a[1]:.2g}"
        if "committee" in r:
            main += f" (committee {r['committee'][0]:.4g})"
        lines.append([r["dataset"], r["model"], str(r["partitions"]), m1, main,
                      f"{m2} {b[0]:.4g}", f"{r['log_evidence']:.4g}", sv_text(r["n_sv"]),
                      f"{r['time']:.1f}"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(ln) + " |" for ln in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*ln) for ln in lines])
