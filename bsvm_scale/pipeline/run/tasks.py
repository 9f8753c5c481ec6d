"""Pure task functions run on the Dask workers.

One task is one call of :func:`run_task` with a plain ``spec`` dict:

* ``kind`` in ``bsvr``/``btsvc``: one optimiser start ``start`` of ``n_starts``
  on one partition (the start points are those the estimator itself would
  use, computed from the partition's training data). The start writes a
  checkpoint (the evaluations so far and the objective's warm-start state:
  SMO vector ``nu``/``alpha``, best point) after evidence evaluations
  (spaced by ``CHECKPOINT_SPACING``) through ``fit(callback=...)`` and
  resumes from it with ``fit(init=...)``,
  which replays the recorded evaluations: the resumed result equals the
  uninterrupted one. A pipeline fits every binary model of a multi-class
  BTSVC start as a task of its own (spec ``binary``, :mod:`.binaries`; no test
  predictions) and the start's task (spec ``binaries``) assembles them; a
  start task that fits them all itself keeps one checkpoint per binary model
  (``checkpoint_c<i>.h5``, ``estimators_`` order).
* every other kind: one fit on one partition (SVR/SVC/TSVC optionally with a
  cross-validated grid search on the training part).

The data come from ``spec['data']``: the path of an HDF5 data set (opened
read-only inside the task) or an ``(X, y)`` pair scattered by the driver.
The task returns ``{'result': dict of plain values, 'model_h5': bytes}``;
the model travels as the bytes of its :func:`~bsvm_scale.storage.save_model`
file (never pickled). With ``spec['task_dir']`` set (the run directory is
visible from the worker) the task also writes its ``result.h5`` and
``model.h5`` there itself -- only while the directory's ``key`` file still
holds ``spec['key']`` (the content key of the task, see
:mod:`~bsvm_scale.pipeline.run.fingerprint`): a task orphaned by an edit of the
pipeline file cannot write into the directory of its successor. The key is
also recorded in the result and in every checkpoint.
"""

from __future__ import annotations

import hashlib
import os
import socket
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from ..._util.memory import peak_rss_bytes, reset_peak_rss
from ..spec.schema import BAYES_KINDS, KINDS, TASK_OF
from .taskio import (feature_names_of, machine, model_inputs, owns_dir, read_coding, read_ids,
                     read_weights, read_xy, source_commit, versions)
from .external import EXTERNAL_KINDS
from .external import model_bytes as external_model_bytes
from .external import without_platt
from ...optimization.records import trajectory_columns
from ..spec.variants import cv_folds, fixed_params

__all__ = ["run_task", "read_xy", "n_starts_of", "versions", "machine", "source_commit",
           "make_estimator",
           "regression_metrics", "classification_metrics"]

#: a start checkpoints again only when the time since its last checkpoint is
#: at least this many times that checkpoint's write time
CHECKPOINT_SPACING = 10.0


def _weight_kw(model, weights):
    """``{"sample_weight": weights}`` when there are weights and ``model.fit`` takes them."""
    import inspect

    if weights is None or "sample_weight" not in inspect.signature(model.fit).parameters:
        return {}
    return {"sample_weight": weights}


def n_starts_of(kind, params):
    """Number of optimiser starts of a BSVR / BTSVC parameter set."""
    if params.get("warm_start_from") is not None:  # retraining: the earlier optimum
        return 1
    if params.get("n_starts") is not None:
        return int(params["n_starts"])
    if params.get("starts"):
        return len(params["starts"])
    if kind == "btsvc" and params.get("kappa0") is not None:
        return 1
    return 2


def make_estimator(kind, params):
    """The estimator of a task. A pipeline worker is one single-threaded
    process per core, so BSVR and BTSVC run their search on one thread there
    (``n_jobs=1``) unless the pipeline file sets ``n_jobs``."""
    import importlib

    mod, cls = KINDS[kind]
    if kind in BAYES_KINDS and "n_jobs" not in params:
        params = {**params, "n_jobs": 1}
    return getattr(importlib.import_module(mod), cls)(**params)


def regression_metrics(y, mean, std=None):
    r = np.asarray(mean, dtype=float) - np.asarray(y, dtype=float)
    out = {"ase": float(np.mean(r * r)), "aae": float(np.mean(np.abs(r)))}
    if std is not None:
        s = np.maximum(np.asarray(std, dtype=float), 1e-300)
        out["nlpd"] = float(np.mean(0.5 * np.log(2 * np.pi * s * s) + 0.5 * (r / s) ** 2))
        out["mean_std"] = float(np.mean(s))
    return out


def classification_metrics(y, pred, proba=None, classes=None):
    y = np.asarray(y)
    out = {"error_rate": float(np.mean(np.asarray(pred) != y))}
    if proba is not None:
        col = np.searchsorted(classes, y)
        p = np.asarray(proba)[np.arange(y.shape[0]), col]
        out["nll"] = float(-np.sum(np.log(np.maximum(p, 1e-300))))
    else:
        out["nll"] = float("nan")
    return out


def _model_bytes(model, feature_names=None):
    from ...storage import save_model

    fd, tmp = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    try:
        save_model(model, tmp, feature_names=feature_names)
        with open(tmp, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(tmp)


def _summary_of(model, kind):
    """SV counts, evidence and hyperparameters of a fitted model (plain values)."""
    out = {"n_sv": -1, "n_off_bound": -1, "n_on_bound": -1, "log_evidence": float("nan"),
           "hyperparameters": {}}
    sup = getattr(model, "support_", None)
    if isinstance(sup, list):
        out["n_sv"] = int(sum(len(s) for s in sup))
    elif sup is not None:
        out["n_sv"] = int(len(sup))
    if hasattr(model, "n_relevance_vectors_"):
        out["n_sv"] = int(model.n_relevance_vectors_)
    if kind == "bsvr":
        out["n_off_bound"] = int(len(model.off_bound_))
        out["n_on_bound"] = int(len(model.on_bound_))
    for attr in ("log_evidence_", "log_marginal_likelihood_"):
        if hasattr(model, attr):
            out["log_evidence"] = float(np.sum(getattr(model, attr)))
            break
    if kind in BAYES_KINDS:
        h = model.hyperparameters_
        out["hyperparameters"] = h if isinstance(h, dict) else dict(zip(_binary_names(model), h))
        if kind == "bsvr":
            out["hyperparameters"] = dict(h, noise_variance=float(model.noise_variance_))
    elif kind in ("gpr", "gpc"):
        out["hyperparameters"] = {"kappa0": model.kappa0_, "kappa": model.kappa_,
                                  "kappa_b": model.kappa_b_}
        if kind == "gpr":
            out["hyperparameters"]["sigma2"] = model.sigma2_
            if getattr(model, "normalize_y", False):  # hyperparameters in units of y_scale
                out["hyperparameters"]["y_scale"] = model.y_scale_
    elif kind in EXTERNAL_KINDS:
        out["hyperparameters"] = dict(model.hyperparameters_)
    elif kind in ("rvr", "rvc"):
        out["hyperparameters"] = {"kappa": model.kappa_}
        if kind == "rvr":
            out["hyperparameters"]["noise_variance"] = model.noise_variance_
    else:
        names = ("C", "epsilon", "kappa") if kind == "svr" else \
            ("C", "kappa") if kind == "svc" else ("kappa0", "kappa")
        out["hyperparameters"] = {k: float(getattr(model, k)) for k in names}
    return out


def _predict(model, kind, Xte):
    """Test predictions: regression ``mean``/``std`` (of y), classification ``pred``/``proba``."""
    if TASK_OF[kind] == "regression":
        if kind in ("bsvr", "gpr", "rvr", "sk_gpr"):
            mean, std = model.predict(Xte, return_std=True, include_noise=True)
        elif kind == "svr":
            mean, std = model.predict(Xte, return_std=True)
        else:
            mean, std = model.predict(Xte), None
        return {"mean": np.asarray(mean, float), "std": None if std is None else np.asarray(std, float)}
    pred = model.predict(Xte)
    proba = model.predict_proba(Xte) if hasattr(model, "predict_proba") else None
    return {"pred": np.asarray(pred), "proba": proba, "classes": np.asarray(model.classes_)}


def _columns(evals):
    """Recorded evaluations as a few stacked arrays (cheap to checkpoint)."""
    k = len(evals["fun"])
    keys = sorted({key for info in evals["info"] for key in info})
    return {"theta": np.array(evals["theta"], dtype=float), "fun": np.array(evals["fun"], dtype=float),
            "grad": np.array(evals["grad"], dtype=float), "n": int(k),
            "info": {key: np.array([float(info.get(key, np.nan)) for info in evals["info"]])
                     for key in keys},
            "info_int": [key for key in keys
                         if all(isinstance(info.get(key), (int, np.integer, bool)) for info in evals["info"])]}


def _rows(cols):
    """Inverse of :func:`_columns`: the list of records ``fit(init=...)`` replays."""
    k = int(cols["n"])
    ints = set(cols.get("info_int", []))
    theta = np.asarray(cols["theta"]).reshape(k, -1)
    grad = np.asarray(cols["grad"]).reshape(k, -1)
    return [{"theta": theta[i], "fun": float(cols["fun"][i]), "grad": grad[i],
             "info": {key: (int(v[i]) if key in ints else float(v[i]))
                      for key, v in cols["info"].items()}}
            for i in range(k)]


def _record(evals, record):
    """Append one optimiser record (numeric info only) to the column lists."""
    evals["theta"].append(np.array(record["theta"], dtype=float))
    evals["fun"].append(float(record["fun"]))
    evals["grad"].append(np.array(record["grad"], dtype=float))
    evals["info"].append({k: v for k, v in record["info"].items()
                          if isinstance(v, (int, float, bool, np.integer, np.floating))})


def _start_theta(kind, params, k, n_starts, Xtr, ytr, coding=None, weights=None):
    """Start point ``k`` of ``n_starts`` exactly as the estimator itself would
    choose it from the partition's training data; a retraining's
    (``warm_start_from``) is the earlier model's optimum (one per binary
    model with more than two classes: a list)."""
    if params.get("warm_start_from") is not None:
        from ...storage import load_model

        prev = load_model(params["warm_start_from"])
        if hasattr(prev, "estimators_"):
            return [np.asarray(e.theta_, dtype=float) for e in prev.estimators_]
        return np.asarray(prev.theta_, dtype=float)
    import inspect

    full = make_estimator(kind, {**params, "n_starts": n_starts})
    kw = {} if weights is None or "sample_weight" not in inspect.signature(
        full.start_points).parameters else {"sample_weight": weights}
    return np.asarray(full.start_points(model_inputs(Xtr, coding), ytr, **kw)[k], dtype=float)


def _trajectory_of(model, theta0):
    """Every full-data evaluation of the task's start, in order (a BSVR ARD
    start with ``ard_init="isotropic"`` makes two runs: from the start and
    from the isotropic optimum)."""
    starts = model.starts_ if isinstance(model.starts_[0], dict) else model.starts_[0]
    return trajectory_columns([r for st in starts for r in st["trajectory"]], theta0.size)


def _fit_bayes(spec, Xtr, ytr, case_ids=None, coding=None, weights=None):
    """One BSVR/BTSVC start with per-evaluation checkpoints; returns (model, extra).

    After an evidence evaluation (``fit``'s callback) the task atomically
    rewrites its ``checkpoint.h5`` with the evaluations so far and the
    objective's warm-start state: after every evaluation once evaluations
    take longer than ``CHECKPOINT_SPACING`` checkpoint writes, else at most
    once per that many write durations (so the writes cost at most about
    1/CHECKPOINT_SPACING of the run, also where an evaluation takes less
    time than a checkpoint write). A resumed start passes both
    back through ``fit(init=...)``: the optimiser replays the recorded evaluations (it is
    deterministic) and continues from the restored state, so the result
    equals that of an uninterrupted run. A BTSVC with more than two classes
    keeps one checkpoint per binary model, ``checkpoint_c<i>.h5``,
    and resumes every binary model the same way.
    """
    kind, params = spec["kind"], dict(spec["params"])
    start = _start_theta(kind, params, int(spec["start"]), int(spec["n_starts"]), Xtr, ytr,
                         coding, weights)
    b = spec.get("binary")
    if b is not None:  # one binary model of a multi-class start: its own start point
        start = start[b] if isinstance(start, list) else start
    n_models = 1 if b is not None else _n_binary_models(kind, params, np.unique(ytr).size)
    thetas = start if isinstance(start, list) else [start] * n_models
    theta0 = thetas[0]
    writer = _CheckpointWriter(spec, theta0, n_models)
    inits, resumed = writer.inits(thetas)
    model = make_estimator(kind, {**params, "n_starts": 1})
    kw = dict(callback=writer, case_ids=case_ids, **_weight_kw(model, weights))
    if b is not None:  # one binary model of a multi-class start (binaries.py)
        from ...models.multiclass import fit_one_binary

        model = fit_one_binary(model, model_inputs(Xtr, coding), ytr, b, init=inits[0], **kw)
    else:
        model.fit(model_inputs(Xtr, coding), ytr, init=inits[0] if n_models == 1 else inits,
                  **kw)
    theta = theta0 if n_models > 1 else getattr(model, "theta_", None)
    if theta is None:  # one search of a multi-class model (shared_kernel)
        theta = model.estimators_[0].theta_
    return model, {"theta0": theta0, "trajectory": _trajectory_of(model, theta0),
                   "theta": np.asarray(theta, float),
                   "resumed_from": writer.n_replayed if resumed else -1}


def _assemble_bayes(spec, deps, Xtr, ytr, case_ids=None, coding=None, weights=None):
    """A multi-class BTSVC start from its binary-model tasks' results
    (:mod:`.binaries`): the model assembled from their model files (each
    checked against the checksum its result vouches for); returns (model,
    extra) as :func:`_fit_bayes`, the trajectory being the first binary
    model's and ``binary_elapsed`` their seconds."""
    from ...models.multiclass import assemble

    parts = sorted((d for d in deps if d["result"].get("binary") is not None),
                   key=lambda d: int(d["result"]["binary"]))
    if [int(d["result"]["binary"]) for d in parts] != list(range(int(spec["binaries"]))):
        raise ValueError(f"task {spec['task_id']}: the results of its {spec['binaries']} "
                         "binary-model tasks are incomplete; run the pipeline again.")
    estimators = []
    for d in parts:
        if hashlib.sha256(d["model_h5"]).hexdigest() != d["result"]["model_sha256"]:
            raise ValueError(f"task {d['result']['task_id']}: its model file does not match "
                             "its result's checksum; delete the task directory and run again.")
        estimators.append(_model_from_bytes(d["model_h5"]))
    model = make_estimator(spec["kind"], {**spec["params"], "n_starts": 1})
    assemble(model, model_inputs(Xtr, coding), ytr, estimators, case_ids=case_ids,
             **_weight_kw(model, weights))
    first = parts[0]["result"]
    return model, {"theta0": first["theta0"], "trajectory": first["trajectory"],
                   "theta": first["theta0"],
                   "resumed_from": max(int(d["result"]["resumed_from"]) for d in parts),
                   "binary_elapsed": float(sum(d["result"]["elapsed"] for d in parts))}


def _model_from_bytes(data):
    from ...storage import load_model

    fd, tmp = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    try:
        Path(tmp).write_bytes(data)
        return load_model(tmp)
    finally:
        os.unlink(tmp)


def _binary_names(model):
    """Keys of a multi-class model's binary models in summaries: ``class<k>``
    (one-versus-rest) or ``pair<i>-<j>`` (one-versus-one, class indices)."""
    from ...models.multiclass import binary_pairs

    return [f"class{i}" if j is None else f"pair{i}-{j}"
            for i, j in binary_pairs(len(model.classes_), model.multi_class)]


def _n_binary_models(kind, params, n_classes):
    """The binary-model searches a BTSVC makes on ``n_classes`` classes (one
    per class for "ovr", per pair for "ovo", the estimator's default when
    ``params`` do not say); 1 for two classes, for one search of all binary
    models (``shared_kernel``) and for other kinds."""
    if kind != "btsvc":
        return 1
    from ...models.multiclass import separate_models

    return max(1, separate_models(make_estimator(kind, params), n_classes))


class _CheckpointWriter:
    """The ``fit`` callback of a BSVR/BTSVC start task: records every
    evaluation of each binary model (one per class or pair of classes) and rewrites
    that model's checkpoint file at the spacing :func:`_fit_bayes` describes."""

    def __init__(self, spec, theta0, n_models):
        names = (["checkpoint.h5"] if n_models == 1
                 else [f"checkpoint_c{i}.h5" for i in range(n_models)])
        self.spec, self.theta0 = spec, theta0
        self.paths = [Path(spec["task_dir"]) / f if spec.get("task_dir") else None
                      for f in names]
        self.evals = [{"theta": [], "fun": [], "grad": [], "info": []} for _ in names]
        self.last_write = [(-np.inf, 0.0)] * n_models  # (end time, duration)
        self.n_replayed = 0

    def inits(self, thetas):
        """``(inits, resumed)``: the ``fit(init=...)`` of every model, with the
        state and evaluations of its checkpoint where one matches."""
        from .checkpoint import load_checkpoint

        inits, resumed = [], False
        for path, th in zip(self.paths, thetas):
            prev = load_checkpoint(path, th, self.spec.get("key")) if path is not None else None
            init = {"theta": th}  # a fresh start: the estimator's own dual start
            if prev is not None:
                init.update(state=prev["state"], evaluations=_rows(prev["evals"]))
                resumed = True
            inits.append(init)
        return inits, resumed

    def __call__(self, key, record, state):
        from .checkpoint import save_checkpoint

        i = key[0] if isinstance(key, tuple) else 0
        _record(self.evals[i], record)
        if record["replayed"]:
            self.n_replayed += 1
            return
        t0 = time.perf_counter()
        end, took = self.last_write[i]
        if (self.paths[i] is not None and t0 - end >= CHECKPOINT_SPACING * took
                and owns_dir(self.spec)):
            save_checkpoint(self.paths[i], {"theta0": self.theta0,
                                            "key": self.spec.get("key") or "",
                                            "evals": _columns(self.evals[i]), "state": state})
            t1 = time.perf_counter()
            self.last_write[i] = (t1, t1 - t0)
        if self.spec.get("eval_delay"):  # testing hook: slow evaluations down
            time.sleep(float(self.spec["eval_delay"]))


def _fit_plain(spec, Xtr, ytr, coding=None, weights=None):
    from ..._util.validation import record_table
    from ...baselines.model_selection import grid_search_cv

    kind = spec["kind"]
    est = make_estimator(kind, spec["params"])
    if kind in EXTERNAL_KINDS:
        coding, weights = None, None  # the scikit-learn references take the coded arrays
    sw = _weight_kw(est, weights)
    extra = {"trajectory": None, "resumed_from": -1}
    cv = spec.get("cv")
    if cv is not None:
        names = ("kappa0", "kappa") if kind == "tsvc" else ("C", "kappa")
        template, platt = without_platt(est)  # Platt's sigmoid only on the refit
        res = grid_search_cv(template, Xtr, ytr, log10_C=cv.get("log10_C"),
                             log10_kappa=cv.get("log10_kappa"),
                             coarse_points=int(cv.get("coarse_points", 7)),
                             fine_points=int(cv.get("fine_points", 9)),
                             fine_step=float(cv.get("fine_step", 0.1)),
                             cv=cv_folds(cv, Xtr.shape[0]),
                             random_state=int(cv.get("random_state", 0)),
                             params=names, **sw)
        extra["cv"] = {"best_params": res.best_params, "best_score": res.best_score,
                       "n_grid_points": int(len(res.table["score"]))}
        best = res.best_estimator
        best = best.set_params(probability=True).fit(Xtr, ytr, **sw) if platt else best
        if coding is not None:
            record_table(best, coding)  # fitted on the coded table
        return best, extra
    est.fit(model_inputs(Xtr, coding), ytr, **sw)
    starts = getattr(est, "starts_", None)
    if kind in ("gpr", "gpc") and starts:  # the best start's evaluations
        extra["trajectory"] = trajectory_columns(starts[est.best_start_]["trajectory"],
                                                 np.size(est.theta_))
    return est, extra


def run_task(spec, *deps):
    """Run one task (see the module docstring); returns ``{'result', 'model_h5'}``.

    ``deps`` are the results of the tasks a ``fix_from`` task waits for; its
    hyperparameters are their average (:func:`~bsvm_scale.pipeline.spec.variants.fixed_params`).
    An evidence-grid task (``spec['evidence_grid']``) is run by
    :func:`~bsvm_scale.pipeline.run.evidence_grid.run_grid_task`.
    """
    if spec.get("evidence_grid") is not None:
        from .evidence_grid import run_grid_task

        return run_grid_task(spec, *deps)

    t_start = time.time()
    X, y = read_xy(spec["data"])
    train, test = np.asarray(spec["train"]), np.asarray(spec["test"])
    if spec.get("fail_once_marker"):  # testing hook for retries
        marker = Path(spec["fail_once_marker"])
        if not marker.exists():
            marker.write_text("failed once\n")
            raise RuntimeError("injected failure (testing retries)")
    ids = read_ids(spec["data"]) if spec["kind"] in ("bsvr", "btsvc") else None
    coding = read_coding(spec["data"])
    weights = read_weights(spec["data"]) if spec.get("sample_weight", True) else None
    run = _fit_and_predict(spec, deps, X[train], y[train], X[test],
                           None if ids is None else ids[train],
                           coding, None if weights is None else weights[train])
    result = _result_record(spec, run, y[test], t_start, train.size, test.size)
    kind = spec["kind"]
    names = None if coding is not None else feature_names_of(spec["data"])
    model_h5 = (external_model_bytes(run["model"], kind) if kind in EXTERNAL_KINDS
                else _model_bytes(run["model"], names))
    # the result vouches for its model file: a model.h5 written by another task in
    # the same directory (an orphan of an earlier run) is not taken with this result
    result["model_sha256"] = hashlib.sha256(model_h5).hexdigest()
    if owns_dir(spec):
        from ..outputs.records import atomic_write_bytes, write_record

        td = Path(spec["task_dir"])
        atomic_write_bytes(td / "model.h5", model_h5)
        write_record(td / "result.h5", result)
    return {"result": result, "model_h5": model_h5}


def _fit_and_predict(spec, deps, Xtr, ytr, Xte, case_ids=None, coding=None, weights=None):
    """Fit the task's model on one thread (Numba and BLAS) and predict the test
    cases (``case_ids``: those of the training cases, for BSVR/BTSVC); returns the model, the fit's extras, the predictions, the times, the
    warnings caught and the scope of the peak-memory reading."""
    import warnings

    import numba
    from threadpoolctl import threadpool_limits

    numba.set_num_threads(1)
    peak_scope = "task" if reset_peak_rss() else "worker process"
    with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.time()
        if spec.get("fix_from") is not None:
            spec = {**spec, "params": fixed_params(spec, deps), "cv": None}
            model, extra = _fit_plain(spec, Xtr, ytr, coding, weights)
        elif spec.get("binary") is not None:
            model, extra = _fit_bayes(spec, Xtr, ytr, case_ids, coding, weights)
        elif spec.get("binaries"):
            model, extra = _assemble_bayes(spec, deps, Xtr, ytr, case_ids, coding, weights)
        elif spec["kind"] in ("bsvr", "btsvc"):
            model, extra = _fit_bayes(spec, Xtr, ytr, case_ids, coding, weights)
        else:
            model, extra = _fit_plain(spec, Xtr, ytr, coding, weights)
        fit_time = time.time() - t0
        t1 = time.time()
        # a binary model's labels are its problem's, not the data set's: no test predictions
        pred = None if spec.get("binary") is not None else _predict(model, spec["kind"], Xte)
        predict_time = time.time() - t1
    return {"model": model, "extra": extra, "pred": pred, "fit_time": fit_time,
            "predict_time": predict_time, "caught": list(caught), "peak_scope": peak_scope}


def _result_record(spec, run, yte, t_start, n_train, n_test):
    """The task's result record (written to ``result.h5`` and the run file)."""
    import numba

    kind, pred, extra = spec["kind"], run["pred"], run["extra"]
    if pred is None:  # a binary-model task
        metrics, pred = {}, {}
    elif TASK_OF[kind] == "regression":
        metrics = regression_metrics(yte, pred["mean"], pred["std"])
    else:
        metrics = classification_metrics(yte, pred["pred"], pred["proba"], pred["classes"])
    return {
        "task_id": spec["task_id"], "key": spec.get("key") or "", "kind": kind,
        "model": spec["model"], "dataset": spec["dataset"], "partition": int(spec["partition"]),
        "start": int(spec.get("start", -1)), "status": "done",
        "host": socket.gethostname(), "pid": os.getpid(),
        "started": t_start, "finished": time.time(), "elapsed": time.time() - t_start,
        "fit_time": run["fit_time"], "predict_time": run["predict_time"],
        "n_train": int(n_train), "n_test": int(n_test),
        "metrics": metrics, **_summary_of(run["model"], kind),
        "trajectory": extra.get("trajectory"),
        "theta0": extra.get("theta0"), "theta": extra.get("theta"),
        "resumed_from": int(extra.get("resumed_from", -1)), "cv": extra.get("cv"),
        **({} if spec.get("binary") is None else {"binary": int(spec["binary"])}),
        **({} if "binary_elapsed" not in extra else {"binary_elapsed": extra["binary_elapsed"]}),
        "predictions": {k: v for k, v in pred.items() if v is not None},
        "warnings": [f"{w.category.__name__}: {w.message}" for w in run["caught"][:20]],
        "versions": versions(),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
        # peak resident memory of this task (Linux: the high-water mark is reset at
        # the start of the task), else of the worker process so far (an upper bound)
        "peak_rss_mb": peak_rss_bytes() / 2**20,
        "peak_rss_scope": run["peak_scope"],
    }


def format_exception(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
