"""Pure task functions run on the Dask workers.

One task is one call of :func:`run_task` with a plain ``spec`` dict:

* ``kind`` in ``bsvr``/``btsvc``: one optimiser start ``start`` of ``n_starts``
  on one partition (the start points are those the estimator itself would
  use, computed from the partition's training data). BSVR writes a
  checkpoint (theta and the SMO warm-start vector ``nu`` of the best point
  so far, plus the trajectory) after every evidence evaluation through
  ``fit(callback=...)`` and resumes from it with ``fit(init=...)``.
  BayesianSVC has neither hook, so its starts are checkpointed at start
  granularity (a start is either finished or recomputed).
* every other kind: one fit on one partition (SVR/SVC/TSVC optionally with a
  cross-validated grid search on the training part).

The data come from ``spec['data']``: the path of an HDF5 data set (opened
read-only inside the task) or an ``(X, y)`` pair scattered by the driver.
The task returns ``{'result': dict of plain values, 'model_h5': bytes}``;
the model travels as the bytes of its :func:`~bsvm_scale.storage.save_model`
file (never pickled). With ``spec['task_dir']`` set (the run directory is
visible from the worker) the task also writes its ``result.h5`` and
``model.h5`` there itself.
"""

from __future__ import annotations

import os
import platform
import socket
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np

from .config import BAYES_KINDS, KINDS, TASK_OF
from .external import EXTERNAL_KINDS
from .external import model_bytes as external_model_bytes
from .variants import cv_folds

__all__ = ["run_task", "read_xy", "n_starts_of", "versions", "make_estimator",
           "regression_metrics", "classification_metrics"]

_DATA_CACHE = {}


def versions():
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("bsvm_scale", "numpy", "scipy", "numba", "dask", "distributed", "h5py",
                "scikit-learn"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def read_xy(source):
    """``(X, y)`` from an HDF5 data set path (read-only, cached per process) or a pair."""
    if not isinstance(source, (str, os.PathLike)):
        X, y = source
        return np.asarray(X, dtype=np.float64), np.asarray(y)
    from ..datasets import read_dataset

    p = str(source)
    st = os.stat(p)
    key = (p, st.st_mtime_ns, st.st_size)
    if key not in _DATA_CACHE:
        ds = read_dataset(p, splits=False, extra=False)
        _DATA_CACHE.clear()  # keep one data set per worker process
        _DATA_CACHE[key] = (ds.X, ds.y)
    return _DATA_CACHE[key]


def n_starts_of(kind, params):
    """Number of optimiser starts of a BSVR / BTSVC parameter set."""
    if params.get("n_starts") is not None:
        return int(params["n_starts"])
    if params.get("starts"):
        return len(params["starts"])
    if kind == "btsvc" and params.get("kappa0") is not None:
        return 1
    return 2


def make_estimator(kind, params):
    import importlib

    mod, cls = KINDS[kind]
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


def _model_bytes(model):
    from ..storage import save_model

    fd, tmp = tempfile.mkstemp(suffix=".h5")
    os.close(fd)
    try:
        save_model(model, tmp)
        with open(tmp, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(tmp)


def _theta_to_btsvc_start(theta, ard):
    theta = np.asarray(theta, dtype=float)
    kappa = np.exp(theta[1:-1]) if ard else float(np.exp(theta[1]))
    return {"kappa0": float(np.exp(theta[0])), "kappa": kappa, "kappa_b": float(np.exp(theta[-1]))}


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
        out["hyperparameters"] = h if isinstance(h, dict) else {f"class{k}": v for k, v in enumerate(h)}
        if kind == "bsvr":
            out["hyperparameters"] = dict(h, noise_variance=float(model.noise_variance_))
    elif kind in ("gpr", "gpc"):
        out["hyperparameters"] = {"kappa0": model.kappa0_, "kappa": model.kappa_,
                                  "kappa_b": model.kappa_b_}
        if kind == "gpr":
            out["hyperparameters"]["sigma2"] = model.sigma2_
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


_PROBLEM_SKIP = ("X", "y", "cache", "last")


def _snapshot(problem):
    """The warm-start state of a BSVR objective (everything but data, cache, last solve)."""
    out = {}
    for k, v in vars(problem).items():
        if k in _PROBLEM_SKIP:
            continue
        if isinstance(v, np.ndarray):
            v = v.copy()
        elif isinstance(v, tuple):
            v = tuple(x.copy() if isinstance(x, np.ndarray) else x for x in v)
        out[k] = v
    return out


class _Replay:
    """Objective wrapper that records every evaluation (value, gradient, info and the
    objective's warm-start state) and, on resume, replays the recorded evaluations.

    L-BFGS-B is deterministic, so a resumed start asks for exactly the recorded
    points; they are answered from the checkpoint, the objective's state (SMO
    warm start ``nu`` etc.) is restored after the last of them, and the
    optimisation continues as if it had never been interrupted.
    """

    def __init__(self, problem, replay=None):
        self.problem = problem
        self.replay = replay or {"theta": [], "fun": [], "grad": [], "info": []}
        self.n_replay = len(self.replay["theta"])
        self.i = 0
        self.replayed = 0
        self.evals = {"theta": [], "fun": [], "grad": [], "info": []}
        self.state = None

    def __getattr__(self, name):
        return getattr(self.problem, name)

    def __call__(self, theta, *args, **kwargs):
        i = self.i
        self.i += 1
        theta = np.asarray(theta, dtype=float)
        if i < self.n_replay and self.replayed == i and \
                np.array_equal(theta, np.asarray(self.replay["theta"][i])):
            value = self.replay["fun"][i]
            grad = np.asarray(self.replay["grad"][i], dtype=float).copy()
            info = dict(self.replay["info"][i])
            self.replayed += 1
            if self.replayed == self.n_replay:
                for k, v in self.replay["state"].items():
                    setattr(self.problem, k, v.copy() if isinstance(v, np.ndarray) else v)
        else:
            if 0 < self.replayed < self.n_replay and self.replayed == i:
                # diverged from the recording (should not happen): continue from its state
                for k, v in self.replay["state"].items():
                    setattr(self.problem, k, v.copy() if isinstance(v, np.ndarray) else v)
            value, grad, info = self.problem(theta, *args, **kwargs)
        self.evals["theta"].append(theta.copy())
        self.evals["fun"].append(float(value))
        self.evals["grad"].append(np.array(grad, dtype=float))
        self.evals["info"].append({k: v for k, v in dict(info).items()
                                   if isinstance(v, (int, float, bool, np.integer, np.floating))})
        self.state = None  # taken lazily by the checkpoint callback
        return value, grad, info


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
    """Inverse of :func:`_columns`."""
    k = int(cols["n"])
    ints = set(cols.get("info_int", []))
    info = [{key: (int(v[i]) if key in ints else float(v[i])) for key, v in cols["info"].items()}
            for i in range(k)]
    return {"theta": list(np.asarray(cols["theta"]).reshape(k, -1)), "fun": list(cols["fun"]),
            "grad": list(np.asarray(cols["grad"]).reshape(k, -1)), "info": info}


def _fit_bsvr(spec, Xtr, ytr):
    """One BSVR start with per-evaluation checkpoints; returns (model, extra).

    Each evidence evaluation (``fit``'s callback) atomically rewrites the
    task's ``checkpoint.h5`` with the recorded evaluations and the SMO
    warm-start state. A resumed start replays the recorded evaluations (see
    :class:`_Replay`), so its result equals an uninterrupted run; should the
    estimator's internals not allow the replay, it falls back to
    ``fit(init={'theta': best theta, 'nu': its warm start})``.
    """
    from .. import bsvr as bsvr_mod
    from ..bsvr import BayesianSVR
    from .checkpoint import load_checkpoint, save_checkpoint

    params = dict(spec["params"])
    k, N = int(spec["start"]), int(spec["n_starts"])
    full = BayesianSVR(**{**params, "n_starts": N})
    n, d = Xtr.shape
    full._check_params(n, d)
    s = float(np.std(ytr))
    # the start points the estimator itself would use (private helpers of BayesianSVR)
    thetas = full._start_points(s, d, full._box(s, d))
    theta0 = np.asarray(thetas[k], dtype=float)
    ckpt_path = Path(spec["task_dir"]) / "checkpoint.h5" if spec.get("task_dir") else None
    prev = load_checkpoint(ckpt_path) if ckpt_path is not None else None
    if prev is not None and not np.array_equal(np.asarray(prev["theta0"]), theta0):
        prev = None
    can_replay = callable(getattr(bsvr_mod, "run_start", None))
    init = {"theta": theta0, "nu": np.zeros(n)}
    replay = None
    if prev is not None and can_replay and prev.get("evals") and prev.get("state") is not None:
        replay = dict(_rows(prev["evals"]), state=prev["state"])
    elif prev is not None:
        init = {"theta": prev["best_theta"], "nu": prev["best_nu"]}
    holder = {}
    orig = bsvr_mod.run_start if can_replay else None

    def patched_run_start(objective, *args, **kwargs):
        holder["rec"] = _Replay(objective, replay)
        return orig(holder["rec"], *args, **kwargs)

    best = {"fun": np.inf, "theta": theta0, "nu": np.zeros(n)}
    if prev is not None and replay is None:
        best = {"fun": float(prev["best_fun"]), "theta": prev["best_theta"], "nu": prev["best_nu"]}

    def callback(_k, record, nu):
        rec = holder.get("rec")
        if np.isfinite(record["fun"]) and record["fun"] < best["fun"]:
            best.update(fun=float(record["fun"]), theta=np.asarray(record["theta"], dtype=float),
                        nu=np.array(nu, dtype=float))
        replaying = rec is not None and rec.replayed == rec.i and rec.i < rec.n_replay
        if ckpt_path is not None and not replaying:
            state = {"theta0": theta0, "best_theta": best["theta"], "best_nu": best["nu"],
                     "best_fun": best["fun"], "n_eval": rec.i if rec is not None else -1}
            if rec is not None:
                state["evals"] = _columns(rec.evals)
                state["state"] = _snapshot(rec.problem)
            save_checkpoint(ckpt_path, state)
        delay = spec.get("eval_delay")  # testing hook: slow evaluations down
        if delay and not replaying:
            time.sleep(float(delay))

    model = BayesianSVR(**{**params, "n_starts": 1})
    if can_replay:
        bsvr_mod.run_start = patched_run_start
    try:
        model.fit(Xtr, ytr, callback=callback, init=init)
    finally:
        if can_replay:
            bsvr_mod.run_start = orig
    tr = model.starts_[0]["trajectory"]
    resumed_from = -1
    if replay is not None and holder.get("rec") is not None:
        resumed_from = int(holder["rec"].replayed)
    elif prev is not None:
        resumed_from = int(prev.get("n_eval", 0))
    extra = {"theta0": theta0,
             "trajectory": {"theta": np.array([r["theta"] for r in tr]) if tr else np.zeros((0, theta0.size)),
                            "fun": np.array([r["fun"] for r in tr], dtype=float),
                            "grad_norm": np.array([r["grad_norm"] for r in tr], dtype=float)},
             "resumed_from": resumed_from, "theta": np.asarray(model.theta_, float)}
    return model, extra


def _fit_btsvc(spec, Xtr, ytr):
    """One BTSVC start (checkpointed at start granularity: no evaluation hooks)."""
    from ..btsvc import BayesianSVC

    params = dict(spec["params"])
    k, N = int(spec["start"]), int(spec["n_starts"])
    full = BayesianSVC(**{**params, "n_starts": N})
    d = Xtr.shape[1]
    full._check_params(d)
    theta0 = np.asarray(full._start_thetas(d)[k], dtype=float)
    start = _theta_to_btsvc_start(theta0, bool(params.get("ard", False)))
    p = {**params, "starts": [start], "n_starts": None}
    model = BayesianSVC(**p)
    model.fit(Xtr, ytr)
    starts = model.starts_ if isinstance(model.starts_[0], dict) else model.starts_[0]
    tr = starts[0]["trajectory"]
    extra = {"theta0": theta0,
             "trajectory": {"theta": np.array([r["theta"] for r in tr]) if tr else np.zeros((0, theta0.size)),
                            "fun": np.array([r["fun"] for r in tr], dtype=float),
                            "grad_norm": np.array([r["grad_norm"] for r in tr], dtype=float)},
             "resumed_from": -1,
             "theta": np.asarray(getattr(model, "theta_", theta0), float)}
    return model, extra


def _fit_plain(spec, Xtr, ytr):
    from ..model_selection import grid_search_cv

    kind = spec["kind"]
    est = make_estimator(kind, spec["params"])
    extra = {"trajectory": None, "resumed_from": -1}
    cv = spec.get("cv")
    if cv is not None:
        names = ("kappa0", "kappa") if kind == "tsvc" else ("C", "kappa")
        res = grid_search_cv(est, Xtr, ytr, log10_C=cv.get("log10_C"),
                             log10_kappa=cv.get("log10_kappa"),
                             coarse_points=int(cv.get("coarse_points", 7)),
                             fine_points=int(cv.get("fine_points", 9)),
                             fine_step=float(cv.get("fine_step", 0.1)),
                             cv=cv_folds(cv, Xtr.shape[0]),
                             random_state=int(cv.get("random_state", 0)),
                             params=names)
        extra["cv"] = {"best_params": res.best_params, "best_score": res.best_score,
                       "n_grid_points": int(len(res.table["score"]))}
        return res.best_estimator, extra
    est.fit(Xtr, ytr)
    traj = None
    starts = getattr(est, "starts_", None)
    if kind in ("gpr", "gpc") and starts:
        b = starts[est.best_start_]
        if "trajectory_fun" in b:
            traj = {"theta": np.asarray(b.get("trajectory_theta")), "fun": np.asarray(b["trajectory_fun"]),
                    "grad_norm": np.asarray(b.get("trajectory_grad_norm"))}
    extra["trajectory"] = traj
    return est, extra


def run_task(spec):
    """Run one task (see the module docstring); returns ``{'result', 'model_h5'}``."""
    import warnings

    import numba
    from threadpoolctl import threadpool_limits

    t_start = time.time()
    kind = spec["kind"]
    X, y = read_xy(spec["data"])
    train, test = np.asarray(spec["train"]), np.asarray(spec["test"])
    Xtr, ytr, Xte, yte = X[train], y[train], X[test], y[test]
    if spec.get("fail_once_marker"):  # testing hook for retries
        marker = Path(spec["fail_once_marker"])
        if not marker.exists():
            marker.write_text("failed once\n")
            raise RuntimeError("injected failure (testing retries)")
    numba.set_num_threads(1)
    with threadpool_limits(limits=1), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        t0 = time.time()
        if kind == "bsvr":
            model, extra = _fit_bsvr(spec, Xtr, ytr)
        elif kind == "btsvc":
            model, extra = _fit_btsvc(spec, Xtr, ytr)
        else:
            model, extra = _fit_plain(spec, Xtr, ytr)
        fit_time = time.time() - t0
        t1 = time.time()
        pred = _predict(model, kind, Xte)
        predict_time = time.time() - t1
    if TASK_OF[kind] == "regression":
        metrics = regression_metrics(yte, pred["mean"], pred["std"])
    else:
        metrics = classification_metrics(yte, pred["pred"], pred["proba"], pred["classes"])
    summary = _summary_of(model, kind)
    result = {
        "task_id": spec["task_id"], "kind": kind, "model": spec["model"],
        "dataset": spec["dataset"], "partition": int(spec["partition"]),
        "start": int(spec.get("start", -1)), "status": "done",
        "host": socket.gethostname(), "pid": os.getpid(),
        "started": t_start, "finished": time.time(), "elapsed": time.time() - t_start,
        "fit_time": fit_time, "predict_time": predict_time,
        "n_train": int(train.size), "n_test": int(test.size),
        "metrics": metrics, **summary,
        "trajectory": extra.get("trajectory"),
        "theta0": extra.get("theta0"), "theta": extra.get("theta"),
        "resumed_from": int(extra.get("resumed_from", -1)),
        "cv": extra.get("cv"),
        "predictions": {k: v for k, v in pred.items() if v is not None},
        "warnings": [f"{w.category.__name__}: {w.message}" for w in caught[:20]],
        "versions": versions(),
        "numba_threads": int(numba.config.NUMBA_NUM_THREADS),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
    }
    model_h5 = external_model_bytes(model, kind) if kind in EXTERNAL_KINDS else _model_bytes(model)
    if spec.get("task_dir"):
        from .checkpoint import atomic_write_bytes, write_record

        td = Path(spec["task_dir"])
        atomic_write_bytes(td / "model.h5", model_h5)
        write_record(td / "result.h5", result)
    return {"result": result, "model_h5": model_h5}


def format_exception(exc):
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))[-4000:]
