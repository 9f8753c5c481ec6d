"""Evidence grids: -ln evidence and test error of BTSVC over a (kappa0, kappa) grid.

Protocol C3 (docs/protocols.md) asks for the contours of -ln evidence and of
the test error over a grid of ``(kappa0, kappa)`` with ``kappa_b`` fixed, on the
first partition. A ``btsvc`` model of a pipeline file asks for them with::

    evidence_grid = { points = 13, decades_kappa0 = 2.0, decades_kappa = 1.5, partitions = 1 }

(the values shown are the defaults). Each of the first ``partitions``
partitions of each of the model's data sets then gets one more task,
``<data set>__<model>__p<k>__grid``. It waits for the model's optimiser starts
on that partition (Dask dependencies, like ``fix_from``) and fits BTSVC with
fixed hyperparameters (``optimize=False``) at ``points x points`` values:
``log10 kappa0`` and ``log10 kappa`` evenly spaced over ``decades_kappa0`` and
``decades_kappa`` decades either side of the best start's optimum, ``kappa_b``
fixed at its optimum. Every point is solved cold (no warm start), so a grid
point does not depend on the order of the grid.

The task writes its ``result.h5`` like every task, with the grid under
``evidence_grid`` (arrays ``log10_kappa0`` (columns), ``log10_kappa`` (rows),
``neg_log_evidence``, ``error_rate`` and ``n_sv`` of shape ``(points,
points)``, the centre and ``kappa_b``); it has no model file. After each row
of the grid it rewrites ``checkpoint.h5`` in its task directory, and a task
restarted after an interruption continues from the first missing row. The
run record holds the finished grids under ``grids[data set][model]["p<k>"]``.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import numpy as np

from ..spec.grid import GRID_DEFAULTS, check_evidence_grid
from .taskio import dependencies, owns_dir, read_xy, versions

__all__ = ["GRID_DEFAULTS", "GRID_SUFFIX", "check_evidence_grid", "grid_specs", "grid_axes",
           "compute_grid", "grid_center", "run_grid_task", "is_grid", "grid_records",
           "dependencies"]

#: task id suffix of a grid task
GRID_SUFFIX = "__grid"
#: estimator parameters of the model that also apply to the fixed-hyperparameter fits
FIT_KEYS = ("tol", "cache_mb", "evidence_method", "evidence_tol", "evidence_mb")
CHECKPOINT = "checkpoint.h5"


def grid_specs(specs, models):
    """Task specs of the evidence grids of ``models`` (those with ``evidence_grid``).

    One spec per (data set, partition < ``partitions``) of such a model, made
    from the model's first start task there (its task directory beside the
    start's); ``after`` lists the ids of the model's start tasks on that
    partition.
    """
    out = []
    for m in models:
        opts = getattr(m, "evidence_grid", None)
        if not opts:
            continue
        firsts = [s for s in specs if s["model"] == m.label and s["start"] == 0
                  and s["partition"] < opts["partitions"]]
        for s in firsts:
            after = [t["task_id"] for t in specs if t["model"] == m.label
                     and t["dataset"] == s["dataset"] and t["partition"] == s["partition"]]
            tid = f"{s['dataset']}__{m.label}__p{s['partition']:03d}{GRID_SUFFIX}"
            task_dir = str(Path(s["task_dir"]).parent / tid) if s.get("task_dir") else None
            out.append({**s, "task_id": tid, "start": -1, "n_starts": 1, "task_dir": task_dir,
                        "evidence_grid": dict(opts), "after": after})
    return out


def is_grid(result):
    """True for the result (or spec) of an evidence-grid task."""
    return result.get("evidence_grid") is not None


def grid_axes(center, options):
    """``(log10_kappa0, log10_kappa)`` of the grid around ``center``.

    Parameters
    ----------
    center : dict
        ``kappa0`` and ``kappa`` (scalars) at the centre.
    options : dict
        ``points``, ``decades_kappa0``, ``decades_kappa``.
    """
    k = int(options["points"])
    a = np.log10(float(center["kappa0"])) + np.linspace(-1, 1, k) * options["decades_kappa0"]
    b = np.log10(float(center["kappa"])) + np.linspace(-1, 1, k) * options["decades_kappa"]
    return a, b


def grid_center(spec, deps):
    """Hyperparameters of the best start among the results ``deps`` (highest evidence).

    Raises
    ------
    ValueError
        When the best start has no scalar ``kappa0``, ``kappa`` and ``kappa_b``
        (a multi-class or an ARD model).
    """
    results = [d.get("result", d) for d in deps]
    if not results:
        raise ValueError(f"task {spec['task_id']}: the evidence grid needs the results of the "
                         "model's starts on its partition; none were given")
    best = max(results, key=lambda r: r["log_evidence"] if np.isfinite(r["log_evidence"])
               else -np.inf)
    h = best["hyperparameters"]
    if not {"kappa0", "kappa", "kappa_b"} <= set(h) or np.ndim(h["kappa"]) != 0:
        raise ValueError(f"task {spec['task_id']}: the evidence grid needs a two-class model "
                         f"with one kappa; the optimum of {best['task_id']} has "
                         f"hyperparameters {sorted(h)} (multi-class or ARD): remove "
                         "evidence_grid from this model")
    return {"kappa0": float(h["kappa0"]), "kappa": float(h["kappa"]),
            "kappa_b": float(h["kappa_b"]), "task": best["task_id"]}


def compute_grid(X, y, Xt, yt, center, options, params=None, done=None, on_row=None):
    """-ln evidence (5.35), test error and SV count of BTSVC over the grid.

    Parameters
    ----------
    X, y : ndarray
        Training data.
    Xt, yt : ndarray
        Test data.
    center : dict
        ``kappa0``, ``kappa``, ``kappa_b`` of the centre (:func:`grid_center`).
    options : dict
        ``points``, ``decades_kappa0``, ``decades_kappa`` (:data:`GRID_DEFAULTS`).
    params : dict, optional
        Further BayesianSVC parameters (those of :data:`FIT_KEYS` are used).
    done : dict, optional
        Rows already computed: ``rows`` (count) and the three arrays; they are
        kept and the grid continues with the next row.
    on_row : callable, optional
        Called with the partial grid after every row computed here.

    Returns
    -------
    dict
        ``log10_kappa0`` (k,), ``log10_kappa`` (k,), ``neg_log_evidence``,
        ``error_rate`` and ``n_sv`` (k, k) with rows along ``log10_kappa``,
        ``kappa_b`` and ``rows`` (= k).
    """
    from ...models.btsvc import BayesianSVC

    a, b = grid_axes(center, options)
    fixed = {k: v for k, v in (params or {}).items() if k in FIT_KEYS}
    grid = {"log10_kappa0": a, "log10_kappa": b, "kappa_b": float(center["kappa_b"]), "rows": 0,
            **{k: np.full((b.size, a.size), np.nan) for k in ("neg_log_evidence", "error_rate",
                                                              "n_sv")}}
    if done is not None:
        grid["rows"] = int(done["rows"])
        for k in ("neg_log_evidence", "error_rate", "n_sv"):
            grid[k][:grid["rows"]] = np.asarray(done[k], dtype=float)[:grid["rows"]]
    for j in range(grid["rows"], b.size):
        for i in range(a.size):
            m = BayesianSVC(optimize=False, kappa0=10.0 ** a[i], kappa=10.0 ** b[j],
                            kappa_b=grid["kappa_b"], **fixed).fit(X, y)
            grid["neg_log_evidence"][j, i] = -m.log_evidence_
            grid["error_rate"][j, i] = np.mean(m.predict(Xt) != yt)
            grid["n_sv"][j, i] = len(m.support_)
        grid["rows"] = j + 1
        if on_row is not None:
            on_row(grid)
    return grid


def _resume_point(spec, center):
    """The rows of an earlier attempt of this task (its checkpoint), or None."""
    from ..outputs.records import read_record

    if not spec.get("task_dir"):
        return None
    state = read_record(Path(spec["task_dir"]) / CHECKPOINT)
    if state is None or state.get("key", "") != (spec.get("key") or ""):
        return None
    same = all(np.isclose(float(state["center"][k]), center[k], rtol=1e-12, atol=0.0)
               for k in ("kappa0", "kappa", "kappa_b"))
    return state["grid"] if same else None


def _checkpointer(spec, center):
    """``on_row`` callback writing the partial grid into the task's checkpoint."""
    from .checkpoint import save_checkpoint

    def on_row(grid):
        if owns_dir(spec):
            save_checkpoint(Path(spec["task_dir"]) / CHECKPOINT,
                            {"key": spec.get("key") or "", "center": dict(center), "grid": grid})
        if spec.get("eval_delay"):  # testing hook: slow the rows down
            time.sleep(float(spec["eval_delay"]))
    return on_row


def run_grid_task(spec, *deps):
    """Run one evidence-grid task; returns ``{'result': dict, 'model_h5': None}``.

    ``deps`` are the results of the model's starts on the partition; the grid
    is centred on the best of them (:func:`grid_center`). With
    ``spec['task_dir']`` owned by the task (see :mod:`.tasks`) the result is
    also written there as ``result.h5``.
    """
    import numba
    from threadpoolctl import threadpool_limits

    from ..._util.memory import peak_rss_bytes, reset_peak_rss

    t_start = time.time()
    center = grid_center(spec, deps)
    X, y = read_xy(spec["data"])
    train, test = np.asarray(spec["train"]), np.asarray(spec["test"])
    numba.set_num_threads(1)
    peak_scope = "task" if reset_peak_rss() else "worker process"
    done = _resume_point(spec, center)
    with threadpool_limits(limits=1):
        grid = compute_grid(X[train], y[train], X[test], y[test], center, spec["evidence_grid"],
                            spec.get("params"), done=done, on_row=_checkpointer(spec, center))
    grid.update(center={k: center[k] for k in ("kappa0", "kappa", "kappa_b")},
                center_task=center["task"], options=dict(spec["evidence_grid"]),
                resumed_rows=int(done["rows"]) if done is not None else 0)
    now = time.time()
    result = {"task_id": spec["task_id"], "key": spec.get("key") or "", "kind": spec["kind"],
              "model": spec["model"], "dataset": spec["dataset"],
              "partition": int(spec["partition"]), "start": -1, "status": "done",
              "host": socket.gethostname(), "pid": os.getpid(), "started": t_start,
              "finished": now, "elapsed": now - t_start, "fit_time": now - t_start,
              "n_train": int(train.size), "n_test": int(test.size), "evidence_grid": grid,
              "versions": versions(), "peak_rss_mb": peak_rss_bytes() / 2 ** 20,
              "peak_rss_scope": peak_scope}
    if owns_dir(spec):
        from ..outputs.records import write_record

        write_record(Path(spec["task_dir"]) / "result.h5", result)
    return {"result": result, "model_h5": None}


def grid_records(results):
    """``{data set: {model: {"p<k>": grid}}}`` of the finished grid tasks in ``results``."""
    out = {}
    for r in results.values():
        if is_grid(r):
            g = dict(r["evidence_grid"], task=r["task_id"])
            out.setdefault(r["dataset"], {}).setdefault(r["model"], {})[
                f"p{int(r['partition']):03d}"] = g
    return out
