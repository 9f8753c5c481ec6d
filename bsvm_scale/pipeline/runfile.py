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

from .checkpoint import read_record, write_record

__all__ = ["write_run_file", "read_run_file", "summary_rows", "format_table", "RUN_FORMAT_VERSION"]

RUN_FORMAT_VERSION = 2


def write_run_file(path, record):
    return write_record(path, record, attrs={"kind": "run",
                                             "format_version": np.int64(RUN_FORMAT_VERSION)})


def read_run_file(path):
    """The run record from ``run.h5`` or a run directory (ValueError if unreadable)."""
    p = Path(path)
    if p.is_dir():
        p = p / "run.h5"
    if not p.exists():
        raise FileNotFoundError(f"run file {str(p)!r} does not exist")
    rec = read_record(p)
    if rec is None or "meta" not in rec:
        raise ValueError(f"{str(p)!r} is not a readable bsvm_scale run file")
    return rec


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
                      f"{m2} {b[0]:.4g}", f"{r['log_evidence']:.4g}", f"{r['n_sv']:.0f}",
                      f"{r['time']:.1f}"])
    if markdown:
        out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        out += ["| " + " | ".join(ln) + " |" for ln in lines]
        return "\n".join(out)
    widths = [max(len(h), *(len(ln[i]) for ln in lines)) if lines else len(h)
              for i, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*head)] + [fmt.format(*ln) for ln in lines])
