"""The Dask executor of pipelines (the one driver of a run).

:func:`run_pipeline` turns a validated :class:`~bsvm_scale.pipeline.spec.config.Pipeline`
into tasks -- one per (data set, model, partition, start) for BSVR/BTSVC, one
per (data set, model, partition) otherwise, one per evidence grid
(:mod:`.evidence_grid`), one per binary model of a multi-class BTSVC start
(:mod:`.binaries`) -- and runs them on a
``dask.distributed`` cluster: a ``LocalCluster`` (processes, one thread per
worker, closed at the end) or an existing scheduler given by address.

Before any worker starts, the driver locks the run directory, writes the
generated data sets, and warms Numba's on-disk cache by fitting a tiny model
of every kind used (so that workers load compiled code instead of compiling
it concurrently). Workers get ``NUMBA_NUM_THREADS=1`` / ``OMP_NUM_THREADS=1``
(and each task limits BLAS and Numba to one thread), so workers x threads <=
cores and results do not depend on where a task ran.

Finished tasks leave ``result.h5`` + ``model.h5`` in their task directory
(their checkpoints are then removed) and are not recomputed when the same
command runs again; in-flight BSVR and BTSVC starts continue from their last
checkpoint. The driver rewrites ``run.h5`` every ``RUNFILE_EVERY_S`` seconds
while tasks run and once more when it stops, also on Ctrl-C / SIGTERM (status
``"interrupted"``). The pipeline file may be edited between
runs: a task is kept exactly when its content key (:mod:`.fingerprint`: model,
parameters, partition, data) is unchanged, and recomputed otherwise. Failed
tasks are retried by Dask (``retries``) and, if they still fail, recorded in
the run file (and tried again by the next run of the command).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import sys
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..._util.scheduling import scatter_shared
from ...models.warm_start import run_model_file
from ..outputs.records import atomic_write_bytes, read_record, write_record
from .checkpoint import RunLock
from .backends import WORKER_ENV, ClusterSpec, build_cluster, has_bokeh
from ..spec.config import BAYES_KINDS, TASK_OF, Pipeline
from .binaries import expand_binaries, is_binary
from .evidence_grid import dependencies, grid_records, grid_specs, is_grid
from .fingerprint import (KEY_FILE, VERSIONS_DIR, dataset_key, key_changed, read_key,
                          reconcile_tasks, task_keys, write_key)
from ..outputs.progress import Progress
from ..outputs.runfile import format_table, read_run_file, summary_rows, wall_clock, write_run_file
from .tasks import format_exception, machine, n_starts_of, run_task, source_commit, versions
from ..spec.variants import link_fixed

__all__ = ["run_pipeline", "plan_tasks", "prepare_data", "warm_numba_cache", "WORKER_ENV"]

#: the driver rewrites run.h5 after a task finishes when its last write is this
#: old (status "running")
RUNFILE_EVERY_S = 600.0
#: start checkpoints of a task (checkpoint_c<i>.h5: binary model i of a multi-class BTSVC)
CHECKPOINTS = "checkpoint*.h5"


# --------------------------------------------------------------------- data
def prepare_data(pipeline: Pipeline, run_dir: Path, adopt_unkeyed=True):
    """Write generated data sets into ``run_dir/data`` and build the partitions.

    A generated set is written once and rewritten only when its spec changed
    (its key in ``data/<label>.key``, see :mod:`.fingerprint`); a file
    without a key is kept when ``adopt_unkeyed`` (the pipeline file is the
    one that wrote it).

    Returns ``{label: {'path', 'task', 'n', 'd', 'partitions': [(train, test), ...]}}``.
    """
    from ...datasets import (generate, ordered_split, random_splits, read_case_ids, read_dataset,
                            write_dataset)
    from ..spec.variants import common_test_data

    out = {}
    (run_dir / "data").mkdir(parents=True, exist_ok=True)
    for spec in pipeline.datasets:
        if spec.generator is not None:
            path = run_dir / "data" / f"{spec.label}.h5"
            kpath = path.with_suffix(".key")
            key = dataset_key(spec)
            if not path.exists() or key_changed(kpath, key, adopt_unkeyed=adopt_unkeyed):
                ds = (common_test_data(spec)[0] if spec.test else
                      generate(spec.generator, spec.n, spec.seed, **spec.params))
                write_dataset(ds, path)
            if read_key(kpath) != key:
                write_key(kpath, key)
        else:
            path = Path(spec.path)
        ds = read_dataset(path, splits=True, extra=False)
        if spec.partitions == "stored":
            parts = list(ds.splits)
            if spec.max_partitions:
                parts = parts[:spec.max_partitions]
        elif spec.test:  # fresh training data per repetition, one common test set
            parts = list(ds.splits)
        elif spec.split == "chronological":
            parts = ordered_split(ds.n_samples, spec.n_train, spec.n_test)
        else:
            parts = random_splits(ds.n_samples, spec.n_train, spec.partitions, spec.split_seed,
                                  n_test=spec.n_test)
        out[spec.label] = {"path": str(path), "task": ds.task, "n": ds.n_samples,
                           "d": ds.n_features, "partitions": parts, "X": ds.X, "y": ds.y,
                           "ids": read_case_ids(path), "weights": _weights_of(path),
                           "coding": None if ds.encoder is None else ds.encoder.to_json()}
    return out


def _weights_of(path):
    """The case weights of a data set file (``/extra/sample_weight``), or None."""
    from .taskio import read_weights

    return read_weights(str(path))


def plan_tasks(pipeline: Pipeline, data, run_dir: Path):
    """Every task spec of the run, in a fixed order."""
    specs = []
    for ds in pipeline.datasets:
        for m in pipeline.models:
            if ds.label not in m.datasets:
                continue
            params = m.estimator_params(n_features=data[ds.label]["d"])
            for p, (tr, te) in enumerate(data[ds.label]["partitions"]):
                base = {"kind": m.kind, "model": m.label, "dataset": ds.label, "partition": p,
                        "params": _retraining(params, m, ds.label, p), "cv": m.cv,
                        "sample_weight": m.sample_weight,
                        "train": np.asarray(tr),
                        "test": np.asarray(te), "data": data[ds.label]["path"]}
                if m.kind in BAYES_KINDS and m.fix_from is None:
                    N = n_starts_of(m.kind, base["params"])
                    for k in range(N):
                        tid = f"{ds.label}__{m.label}__p{p:03d}__s{k:02d}"
                        specs.append({**base, "task_id": tid, "start": k, "n_starts": N})
                else:
                    tid = f"{ds.label}__{m.label}__p{p:03d}"
                    specs.append({**base, "task_id": tid, "start": -1, "n_starts": 1})
    for s in specs:
        s["task_dir"] = str(run_dir / "tasks" / s["task_id"])
    link_fixed(specs, pipeline.models)  # protocol A: tasks that wait for others
    specs = specs + grid_specs(specs, pipeline.models)  # evidence grids wait for their starts
    return expand_binaries(specs, data)  # multi-class BTSVC starts wait for their binary models


def _retraining(params, m, dataset, partition):
    """``params`` with ``warm_start_from`` set to the earlier run's model of this
    (data set, model, partition) when the model table names a run
    (``warm_start``) that kept one; unchanged otherwise (a cold fit)."""
    if m.warm_start is None:
        return params
    path = run_model_file(m.warm_start, dataset, m.label, partition)
    return params if path is None else {**params, "warm_start_from": path}


# --------------------------------------------------------------- numba warm-up
def _tiny_params(kind, params):
    p = dict(params)
    p.pop("warm_start_from", None)
    if kind == "bsvr":
        p.update(n_starts=1, optimizer_options={**(p.get("optimizer_options") or {}), "maxiter": 2})
    elif kind == "btsvc":
        if p.get("starts"):
            p["starts"] = p["starts"][:1]
        p.update(n_starts=1 if not p.get("starts") else None,
                 optimizer_options={**(p.get("optimizer_options") or {}), "maxiter": 2})
    elif kind in ("gpr", "gpc"):
        p.update(n_starts=1, options={**(p.get("options") or {}), "maxiter": 2})
    return p


def warm_numba_cache(pipeline: Pipeline, data):
    """Fit a tiny model of every (kind, settings) used, in the driver.

    Compiles (or loads) the Numba kernels and writes Numba's on-disk cache
    before any worker starts; also catches invalid estimator settings early
    (the error names the model).
    """
    import warnings

    from .tasks import make_estimator

    seen = set()
    for m in pipeline.models:
        key = (m.kind, bool(m.estimator_params().get("ard", False)))
        if key in seen:
            continue
        seen.add(key)
        ds = data[m.datasets[0]]
        tr = np.asarray(ds["partitions"][0][0])
        X, y = ds["X"][tr], ds["y"][tr]
        if TASK_OF[m.kind] == "classification":
            classes = np.unique(y)
            # every class (a class_weight may name any of them)
            idx = np.concatenate([np.flatnonzero(y == c)[:12] for c in classes])
        else:
            idx = np.arange(min(30, y.size))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = make_estimator(m.kind, _tiny_params(m.kind, m.estimator_params(ds["d"])))
                est.fit(X[idx], y[idx])
                est.predict(X[idx[:3]])
        except OSError as exc:  # the Numba cache could not be written (disk full, ...)
            raise OSError(exc.errno, f"warming the Numba cache for model {m.label!r} failed "
                          f"while writing files: {exc.strerror or exc}. Free disk space or "
                          "point NUMBA_CACHE_DIR at a writable directory with room.",
                          exc.filename) from exc
        except Exception as exc:  # noqa: BLE001 - reported with the model's name
            raise ValueError(f"model {m.label!r} ({m.kind}) cannot be fitted with its settings "
                             f"{m.estimator_params(ds['d'])}: {type(exc).__name__}: {exc}") from exc


# ------------------------------------------------------------------ helpers
def _paths_visible(paths):
    return all(os.path.exists(p) for p in paths)


def _dir_writable(path):
    return os.path.isdir(path) and os.access(path, os.W_OK)


def _committee(starts, task, y_test):
    """Evidence-weighted committee of the starts (weights proportional to the evidence)."""
    from ...optimization.starts import evidence_weights
    from .tasks import classification_metrics, regression_metrics

    w = evidence_weights([s["log_evidence"] for s in starts])
    if task == "regression":
        mu = np.array([s["predictions"]["mean"] for s in starts])
        sd = np.array([s["predictions"]["std"] for s in starts])
        mean = w @ mu
        var = w @ (sd ** 2 + mu ** 2) - mean ** 2
        return regression_metrics(y_test, mean, np.sqrt(np.maximum(var, 0.0))), w
    P = np.array([s["predictions"]["proba"] for s in starts])
    proba = np.tensordot(w, P, axes=1)
    classes = np.asarray(starts[0]["predictions"]["classes"])
    pred = classes[np.argmax(proba, axis=1)]
    return classification_metrics(y_test, pred, proba, classes), w


def _publish(src: Path, dst: Path):
    """Make ``dst`` the file ``src`` atomically: a hard link (no copy; files are
    only ever replaced, never changed in place), else a copy."""
    if dst.exists() and os.path.samefile(src, dst):
        return
    tmp = dst.with_name(dst.name + ".tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(src, tmp)
    except OSError:  # file systems without hard links
        shutil.copyfile(src, tmp)
    os.replace(tmp, dst)


def aggregate(pipeline, data, results, run_dir: Path):
    """Best start per (data set, model, partition), committees, best-model files."""
    out = {}
    models_dir = run_dir / "models"
    models_dir.mkdir(exist_ok=True)
    groups = {}
    for r in results.values():
        if not is_grid(r) and not is_binary(r):  # grids are kept apart (grid_records);
            # binary-model tasks are parts of their start's (its binary_elapsed)
            groups.setdefault((r["dataset"], r["model"], r["partition"]), []).append(r)
    mspec = {m.label: m for m in pipeline.models}
    for (ds, model, p), rs in sorted(groups.items()):
        rs = sorted(rs, key=lambda r: r["start"])
        m = mspec[model]
        expected = n_starts_of(m.kind, m.estimator_params()) \
            if m.kind in BAYES_KINDS and m.fix_from is None else 1
        ev = np.array([r["log_evidence"] if np.isfinite(r["log_evidence"]) else -np.inf
                       for r in rs])
        best = rs[int(np.argmax(ev))] if m.kind in BAYES_KINDS else rs[0]
        fname = f"{ds}__{model}__p{p:03d}.h5"
        src = Path(run_dir / "tasks" / best["task_id"] / "model.h5")
        if src.exists():
            _publish(src, models_dir / fname)
        entry = {"kind": m.kind, "best_start": int(best["start"]), "best_task": best["task_id"],
                 "n_starts_done": len(rs), "n_starts": int(expected),
                 "metrics": best["metrics"], "log_evidence": float(best["log_evidence"]),
                 "hyperparameters": best["hyperparameters"], "n_sv": int(best["n_sv"]),
                 "n_off_bound": int(best.get("n_off_bound", -1)),
                 "time": float(sum(r["elapsed"] + r.get("binary_elapsed", 0.0) for r in rs)),
                 "start_log_evidence": np.array([r["log_evidence"] for r in rs], dtype=float),
                 "model_file": f"models/{fname}"}
        if m.committee and len(rs) > 1:
            te = np.asarray(data[ds]["partitions"][p][1])
            cm, w = _committee(rs, data[ds]["task"], data[ds]["y"][te])
            entry["committee_metrics"] = cm
            entry["committee_weights"] = w
        out.setdefault(ds, {}).setdefault(model, {})[f"p{p:03d}"] = entry
    return out


def _connect(Client, scheduler, timeout_s=30, workers_timeout_s=60):
    """Client of the scheduler at ``scheduler`` with one worker at least, or
    an ``OSError`` naming the address within ``timeout_s + workers_timeout_s``."""
    try:
        client = Client(scheduler, timeout=f"{timeout_s}s")
    except (OSError, TimeoutError) as exc:
        raise OSError(f"cannot reach the dask scheduler at {scheduler!r} within {timeout_s} s "
                      f"({type(exc).__name__}: {exc}); start it ('dask scheduler') or fix "
                      "--scheduler. Nothing was run; finished tasks and checkpoints are kept.") \
            from None
    try:
        client.wait_for_workers(1, timeout=workers_timeout_s)
    except (OSError, TimeoutError) as exc:
        client.close()
        raise OSError(f"the dask scheduler at {scheduler!r} has no worker after "
                      f"{workers_timeout_s} s ({type(exc).__name__}); start workers "
                      f"('dask worker {scheduler}').") from None
    return client


def _drop_checkpoints(task_dir: Path):
    """Remove the start checkpoints of a finished task (its result and model are on disk)."""
    for c in task_dir.glob(CHECKPOINTS):
        c.unlink(missing_ok=True)


@dataclass
class _Run:
    """What the driver knows about one run while it executes."""

    pipeline: Pipeline
    run_dir: Path
    data: dict
    specs: list
    results: dict = field(default_factory=dict)
    failures: dict = field(default_factory=dict)
    info: dict = field(default_factory=dict)

    def write(self, status=None):
        """Aggregate the finished tasks and rewrite ``run.h5``; returns the record."""
        record = _run_record(self, status)
        write_run_file(self.run_dir / "run.h5", record)
        self.info["written"] = time.time()
        return record


def run_pipeline(pipeline: Pipeline, *, scheduler=None, workers=None, resume=True,
                 progress=True, stream=None, summary_stream=None):
    """Run (or resume) ``pipeline``; returns the run record (also in ``run.h5``)."""
    stream = stream or sys.stderr
    summary_stream = summary_stream or sys.stdout
    run_dir = Path(pipeline.run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    t_begin = time.time()
    with RunLock(run_dir):
        run = _prepare_run(pipeline, run_dir, resume)
        run.info.update(t_begin=t_begin, scheduler=scheduler, n_workers=0,
                        data_transport="none")
        todo = [s for s in run.specs if s["task_id"] not in run.results]
        interrupted = None
        try:
            if todo:
                _run_todo(run, todo, scheduler=scheduler, workers=workers, stream=stream,
                          progress=progress)
        except KeyboardInterrupt as exc:  # Ctrl-C / SIGTERM: keep what finished in run.h5
            interrupted = exc
            run.results.update(_finished(todo))  # finished while the workers were stopped
        record = run.write("interrupted" if interrupted else None)
    if interrupted is not None:
        raise interrupted
    if summary_stream is not None:
        _print_summary(record, run.info, run_dir, summary_stream)
    return record


def _prepare_run(pipeline, run_dir, resume):
    """Data, task specs (each with its key), reconciled task directories, finished tasks.

    Settings are checked (Numba warm-up) before any task directory is cleared
    for an edited pipeline file.
    """
    stored = run_dir / "pipeline.toml"
    earlier = _earlier_invocations(run_dir / "run.h5") if resume else (0.0, 0, 0)
    if not resume:
        for sub in ("tasks", "models", "data"):
            shutil.rmtree(run_dir / sub, ignore_errors=True)
        for f in ("run.h5", "pipeline.toml"):
            (run_dir / f).unlink(missing_ok=True)
    # an edited pipeline file keeps the tasks whose inputs are unchanged (fingerprint.py)
    same_file = stored.exists() and stored.read_text(encoding="utf-8") == pipeline.text
    data = prepare_data(pipeline, run_dir, adopt_unkeyed=same_file)
    specs = plan_tasks(pipeline, data, run_dir)
    keys = task_keys(specs, data)
    for s in specs:
        s["key"] = keys[s["task_id"]]
    if any(key_changed(Path(s["task_dir"]) / KEY_FILE, s["key"], adopt_unkeyed=same_file)
           or not (Path(s["task_dir"]) / "result.h5").exists() for s in specs):
        warm_numba_cache(pipeline, data)
    changed = reconcile_tasks(specs, keys, adopt_unkeyed=same_file)
    atomic_write_bytes(stored, pipeline.text.encode("utf-8"))
    planned = {Path(s["task_dir"]).name for s in specs}
    stale = sorted(p.name for p in (run_dir / "tasks").iterdir()
                   if p.is_dir() and p.name not in planned and p.name != VERSIONS_DIR)
    results = _finished(specs)
    for tid in results:
        _drop_checkpoints(run_dir / "tasks" / tid)  # left by runs before this rule
    _add_testing_hooks([s for s in specs if s["task_id"] not in results])
    info = {"n_skipped": len(results), "cleared": changed["cleared"], "earlier": earlier,
            "restored": changed["restored"], "stale": stale,
            "n_resumed": sum(1 for s in specs if s["task_id"] not in results
                             and any(Path(s["task_dir"]).glob(CHECKPOINTS)))}
    return _Run(pipeline, run_dir, data, specs, results=results, info=info)


def _earlier_invocations(path):
    """``(wall seconds, invocations, most workers)`` of the earlier invocations
    of ``bsvm-scale run`` on this run directory, from its ``run.h5`` (zeros
    without a readable one): a resumed or repeated run adds its own, so that
    re-running a finished pipeline does not report the wall time of the
    repeat alone."""
    try:
        meta = read_run_file(path)["meta"] if Path(path).exists() else None
    except (OSError, ValueError, KeyError, TypeError):  # damaged: rewritten, history lost
        meta = None
    if not meta:
        return 0.0, 0, 0
    return (float(meta.get("elapsed_total", meta.get("elapsed", 0.0))),
            int(meta.get("invocations", 1)),
            int(meta.get("n_workers_max", meta.get("n_workers", 0))))


def _finished(specs):
    """Records of the finished tasks among ``specs`` (result, model and the task's key)."""
    results = {}
    for s in specs:
        if not s.get("task_dir"):  # workers cannot write the run directory
            continue
        d = Path(s["task_dir"])
        rec = read_record(d / "result.h5")
        if rec is not None and rec.get("status") == "done" and _model_matches(d, rec) \
                and rec.get("key", s["key"]) == s["key"]:
            results[s["task_id"]] = rec
    return results


def _model_matches(task_dir, rec):
    """``model.h5`` exists and is the one the result was written with (an
    evidence grid has no model)."""
    if is_grid(rec):
        return True
    path = task_dir / "model.h5"
    if not path.exists():
        return False
    want = rec.get("model_sha256")  # absent in results written before the digest
    return want is None or hashlib.sha256(path.read_bytes()).hexdigest() == want


def _add_testing_hooks(specs):
    delay = os.environ.get("BSVM_PIPELINE_EVAL_DELAY")  # slow evaluations down
    fail_dir = os.environ.get("BSVM_PIPELINE_FAIL_ONCE_DIR")  # fail every task once
    for s in specs:
        if delay:
            s["eval_delay"] = float(delay)
        if fail_dir:
            s["fail_once_marker"] = str(Path(fail_dir) / f"{s['task_id']}.failed")


def dashboard_line(client):
    """One line naming the Dask dashboard address (or how to get one)."""
    link = getattr(client, "dashboard_link", None) if has_bokeh() else None
    if link:
        return f"dask dashboard: {link}"
    return "dask dashboard: not available (pip install 'bsvm_scale[cluster]' adds bokeh)"


def _start_client(scheduler, workers, spec=None):
    """``(client, cluster)``: a client of ``scheduler``, of a new LocalCluster of
    ``workers`` processes, or of the cluster the ``[cluster]`` table ``spec``
    describes (the command line's options win)."""
    from dask.distributed import Client

    spec = spec or ClusterSpec()
    if scheduler or (workers is None and spec.kind == "address"):
        return _connect(Client, scheduler or spec.options["address"]), None
    cluster = build_cluster(spec, workers)
    return Client(cluster), cluster


def _submit(run, todo, client):
    """Submit the ``todo`` specs (data by path or scattered); returns ``{future: spec}``."""
    seen = client.run(_paths_visible, sorted({s["data"] for s in todo}))
    scatter = bool(os.environ.get("BSVM_PIPELINE_FORCE_SCATTER")) or not all(seen.values())
    if scatter:
        scattered = {d["path"]: scatter_shared(client, (d["X"], d["y"]) if d.get("ids") is None
                                               else (d["X"], d["y"], d["ids"]))
                     for d in run.data.values()}
        for s in todo:
            s["data"] = scattered[s["data"]]
    run.info["data_transport"] = "scattered" if scatter else "path"
    if not all(client.run(_dir_writable, str(run.run_dir / "tasks")).values()):
        for s in todo:  # driver writes the result files; no mid-start checkpoints
            s["task_dir"] = None
    futures, by_id = {}, {}
    for s in sorted(todo, key=lambda s: bool(dependencies(s))):  # dependents last
        key = f"bsvm-{s['task_id']}-{uuid.uuid4().hex[:8]}"
        deps = [by_id[t] if t in by_id else _done(run, t) for t in dependencies(s)]
        # partition-major: every data set's and model's partition 0 before any
        # partition 1, so that a run stopped early holds the first partitions of all
        by_id[s["task_id"]] = client.submit(run_task, s, *deps, key=key,
                                            priority=-int(s["partition"]),
                                            retries=run.pipeline.retries, pure=False)
        futures[by_id[s["task_id"]]] = s
    return futures


def _done(run, task_id):
    """What a task gets of a dependency finished before: its result, and for
    a binary-model task also its model file's bytes (``{"result",
    "model_h5"}``, as a task returns them)."""
    rec = run.results[task_id]
    if not is_binary(rec):
        return rec
    return {"result": rec, "model_h5": (run.run_dir / "tasks" / task_id / "model.h5").read_bytes()}


def _run_todo(run, todo, *, scheduler, workers, stream, progress):
    """Run the ``todo`` specs on a Dask cluster, filling ``run.results`` / ``run.failures``.

    After a task finishes, ``run.h5`` is rewritten when the last write is
    ``RUNFILE_EVERY_S`` old (status ``"running"``), so that a driver killed
    outright leaves a recent run file. On an interrupt the submitted tasks
    are cancelled (an external scheduler's workers would run them on).
    """
    from dask.distributed import as_completed

    client, cluster = _start_client(scheduler, workers, run.pipeline.cluster)
    futures = {}
    try:
        if progress:
            print(dashboard_line(client), file=stream or sys.stderr, flush=True)
        run.info["n_workers"] = len(client.nthreads())
        futures = _submit(run, todo, client)
        run.write("running")
        bar = Progress(len(run.specs), sum(client.nthreads().values()), label=run.pipeline.name,
                       stream=stream, enabled=progress, already_done=run.info["n_skipped"]).start()
        try:
            for fut in as_completed(list(futures)):
                bar.task_done(failed=not _collect(fut, futures.pop(fut), run, client))
                fut.release()
                if futures and time.time() - run.info["written"] >= RUNFILE_EVERY_S:
                    run.write("running")
        finally:
            bar.close()
    finally:
        if futures:
            client.cancel(list(futures))
        client.close()
        if cluster is not None:
            cluster.close()


def death_reason(client, exc):
    """``(kind, message)`` of a failed task: ``"memory"`` when its last worker
    was restarted by its nanny for exceeding the memory budget (the
    scheduler's ``worker-restart-memory`` events), ``"worker died"`` for
    another death of the worker (killed, walltime, crash), else ``"error"``."""
    text = f"{type(exc).__name__}: {exc}"
    if type(exc).__name__ != "KilledWorker" or client is None:
        return "error", text
    worker = getattr(exc.last_worker, "address", None)
    limit = getattr(exc.last_worker, "memory_limit", 0) or 0
    try:
        events = client.get_events("worker-restart-memory")
    except Exception:  # noqa: BLE001 -- an old scheduler without events
        events = ()
    rss = [e.get("rss", 0) for _, e in events if isinstance(e, dict) and e.get("worker") == worker]
    if rss:
        return "memory", (f"the worker running this task ({worker}) was restarted for memory: "
                          f"{max(rss) / 2**20:.0f} MiB against a limit of {limit / 2**20:.0f} "
                          f"MiB, {int(exc.allowed_failures) + 1} time(s). Give workers more "
                          "memory (or fewer workers per node) or lower the model's cache_mb / "
                          "evidence_mb. " + text)
    return "worker died", text


def _collect(fut, s, run, client=None):
    """Record one finished future (result files, or the failure); True on success."""
    tid = s["task_id"]
    task_dir = run.run_dir / "tasks" / tid
    if fut.status == "error":
        exc = fut.exception()
        kind, text = death_reason(client, exc)
        run.failures[tid] = {"task_id": tid, "error": text, "kind": kind,
                             "traceback": format_exception(exc),
                             "attempts": int(run.pipeline.retries) + 1, "time": time.time()}
        return False
    out = fut.result()
    res = out["result"]
    if out["model_h5"] is not None and (not (task_dir / "model.h5").exists()
                                        or s.get("task_dir") is None):
        atomic_write_bytes(task_dir / "model.h5", out["model_h5"])
    if read_record(task_dir / "result.h5") is None or s.get("task_dir") is None:
        write_record(task_dir / "result.h5", res)
    run.results[tid] = res
    _drop_checkpoints(task_dir)
    return True


def _run_record(run, status=None):
    """The run record: meta, data sets, models, task results, aggregates, failures.

    ``status`` None means complete or incomplete by the task counts.
    """
    pipeline, info, results, specs = run.pipeline, run.info, run.results, run.specs
    agg = aggregate(pipeline, run.data, results, run.run_dir)
    t_end = time.time()
    status = status or ("complete" if len(results) == len(specs) else "incomplete")
    meta = {"name": pipeline.name, "pipeline_path": str(pipeline.path),
            "pipeline_text": pipeline.text, "digest": pipeline.digest,
            "description": pipeline.description, "run_dir": str(run.run_dir),
            "host": socket.gethostname(), "versions": versions(), "machine": machine(),
            "commit": run.info.setdefault("commit", source_commit()),
            "scheduler": info["scheduler"] or "LocalCluster", "n_workers": int(info["n_workers"]),
            "data_transport": info["data_transport"],
            "started": info["t_begin"], "finished": t_end, "elapsed": t_end - info["t_begin"],
            # every invocation on this run directory (resumed and repeated runs)
            "elapsed_total": info["earlier"][0] + t_end - info["t_begin"],
            "invocations": info["earlier"][1] + 1,
            "n_workers_max": max(info["earlier"][2], int(info["n_workers"])),
            "n_tasks": len(specs), "n_done": len(results), "n_failed": len(run.failures),
            "n_skipped": info["n_skipped"], "n_resumed_from_checkpoint": info["n_resumed"],
            "n_recomputed_changed": len(info["cleared"]),
            "n_restored_earlier_version": len(info["restored"]), "stale_task_dirs": info["stale"],
            "status": status}
    return {
        "meta": meta,
        "datasets": {k: {"task": v["task"], "n": v["n"], "d": v["d"], "path": v["path"],
                         "partitions": [{"train": np.asarray(tr), "test": np.asarray(te)}
                                        for tr, te in v["partitions"]]}
                     for k, v in run.data.items()},
        "models": {m.label: {"kind": m.kind, "datasets": m.datasets,
                             "committee": m.committee} for m in pipeline.models},
        "tasks": {k: results[k] for k in sorted(results)},
        "results": agg,
        "grids": grid_records(results),
        "failures": run.failures,
    }


def _print_summary(record, info, run_dir, stream):
    meta, failures = record["meta"], record["failures"]
    print(f"run {meta['name']}: {meta['n_done']}/{meta['n_tasks']} tasks done "
          f"({meta['n_skipped']} reused), {meta['n_failed']} failed, {wall_clock(meta)}; "
          f"run file {run_dir / 'run.h5'}", file=stream)
    if info["cleared"]:
        print(f"{len(info['cleared'])} task(s) recomputed because the pipeline file "
              f"changed what they depend on (earlier results kept under "
              f"{run_dir / 'tasks' / VERSIONS_DIR})", file=stream)
    if info["restored"]:
        print(f"{len(info['restored'])} task(s) given back the results of an earlier "
              "version of the pipeline file with the same inputs", file=stream)
    if info["stale"]:
        print(f"task directories under {run_dir / 'tasks'} belong to no task of this pipeline "
              f"file and were left in place: {len(info['stale'])} (e.g. {info['stale'][0]})",
              file=stream)
    rows = summary_rows(record)
    if rows:
        print(format_table(rows), file=stream)
    for tid, f in failures.items():
        print(f"FAILED {tid}: {f['error']}", file=stream)
