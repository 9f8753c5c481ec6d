"""Compact summary tables of the runs (CSV files beside the page).

``<out>/results/<protocol>.csv`` holds one row per (run, data set, model) of
the runs of a protocol (mean and sd of the test metrics over the partitions,
evidence, SVs, time); ``<out>/results/<run>_evidence_grid.csv`` one row per
point of every evidence grid of a run. They are small, kept in the
repository, and read without the run exports.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from bsvm_scale.pipeline.outputs.runfile import main_metric, summary_rows

from .runs import protocol_of, short_name
from .tables import write_csv

__all__ = ["write_summaries", "SUMMARY_HEAD", "GRID_HEAD"]

SUMMARY_HEAD = ["run", "dataset", "model", "kind", "partitions", "metric", "mean", "sd",
                "metric_2", "mean_2", "sd_2", "log_evidence", "n_sv", "time_s"]
GRID_HEAD = ["dataset", "model", "partition", "log10_kappa0", "log10_kappa", "kappa_b",
             "neg_log_evidence", "error_rate", "n_sv"]


def _summary(run):
    """Rows of :data:`SUMMARY_HEAD` of one run."""
    rows = []
    for r in summary_rows(run.rec):
        m1 = main_metric(r["task"])
        m2 = "aae" if r["task"] == "regression" else "nll"
        a, b = r.get(m1, (np.nan, np.nan)), r.get(m2, (np.nan, np.nan))
        rows.append([run.name, r["dataset"], r["model"], r["kind"], r["partitions"], m1, a[0],
                     a[1], m2, b[0], b[1], r["log_evidence"],
                     r["n_sv"] if r["n_sv"] >= 0 else None, r["time"]])
    return rows


def _grid_rows(run):
    """Rows of :data:`GRID_HEAD`: every point of every evidence grid of ``run``."""
    rows = []
    for ds, models in run.rec.get("grids", {}).items():
        for model, parts in models.items():
            for part, g in sorted(parts.items()):
                a, b = np.asarray(g["log10_kappa0"]), np.asarray(g["log10_kappa"])
                for j in range(b.size):
                    rows += [[ds, model, part, a[i], b[j], g["kappa_b"],
                              g["neg_log_evidence"][j][i], g["error_rate"][j][i],
                              int(g["n_sv"][j][i])] for i in range(a.size)]
    return rows


def write_summaries(runs, out):
    """Write the summary CSV files of ``runs`` into ``<out>/results``.

    Files of earlier pages that this one does not write are removed.

    Returns
    -------
    list of Path
        The files written.
    """
    folder = Path(out) / "results"
    by_file = {}
    for run in runs:
        key = protocol_of(run.name) or short_name(run.name)
        by_file.setdefault(folder / f"{key}.csv", []).extend(_summary(run))
        grid = _grid_rows(run)
        if grid:
            by_file[folder / f"{short_name(run.name)}_evidence_grid.csv"] = grid
    written = []
    for path, rows in by_file.items():
        head = GRID_HEAD if path.stem.endswith("_evidence_grid") else SUMMARY_HEAD
        written.append(write_csv(path, head, rows))
    for stale in set(folder.glob("*.csv")) - set(written) if folder.is_dir() else ():
        stale.unlink()
    return written
