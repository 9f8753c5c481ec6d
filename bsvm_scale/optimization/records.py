"""The ``starts_`` record of one optimiser run: one layout for every model.

BSVR, BTSVC, GPR and GPC keep one record per start (:func:`start_record`),
with the per-evaluation trajectory the pipelines read through
:func:`trajectory_columns`; a start that was not searched (fixed
hyperparameters) or not refined gets :func:`fixed_record` /
:func:`unrefined_record`.
"""

from __future__ import annotations

import numpy as np

from .driver import StartResult

__all__ = ["start_record", "fixed_record", "unrefined_record", "trajectory_columns"]


def _plain(value):
    return isinstance(value, (str, bool, int, float, np.integer, np.floating))


def start_record(res, shift=0.0, **extra):
    """The ``starts_`` entry of one optimiser run: one layout for every model.

    Keys: ``theta0``, ``theta``, ``neg_log_evidence``, ``n_iter``,
    ``n_eval``, ``success``, ``message``, ``n_nonfinite``, ``n_rejected``,
    ``n_replayed``, ``hessian`` (the final model Hessian of a search, which
    a retraining starts from; absent without one) and ``trajectory``, one
    record per evaluation with ``theta``, ``fun``, ``grad``, ``grad_norm``,
    ``accepted``, ``radius``, ``replayed`` and the scalar entries of the objective's ``info`` (SV
    counts, SMO iterations, seconds in the MAP solve and the evidence ...).
    Models add ``subsample`` (the subsample phase of a coarse-to-fine
    start, a record of this layout with ``n_samples``) and ``isotropic``
    (the isotropic first stage of an ARD start). ``shift`` is added to every
    value (a GP fitted on rescaled targets reports the evidence of the
    given ones).
    """
    traj = [{"theta": np.asarray(r["theta"], dtype=float), "fun": float(r["fun"]) + shift,
             "grad": np.asarray(r["grad"], dtype=float), "grad_norm": float(r["grad_norm"]),
             "accepted": bool(r.get("accepted", False)), "radius": float(r.get("radius", np.nan)),
             "replayed": bool(r.get("replayed", False)),
             "info": {k: v for k, v in r.get("info", {}).items() if _plain(v)}}
            for r in res.trajectory]
    return {"theta0": np.asarray(res.theta0, dtype=float),
            "theta": np.asarray(res.theta, dtype=float),
            "neg_log_evidence": float(res.fun) + shift, "n_iter": int(res.n_iter),
            "n_eval": int(res.n_eval), "success": bool(res.success), "message": str(res.message),
            "n_nonfinite": int(res.n_nonfinite), "n_rejected": int(res.n_rejected),
            "n_replayed": int(res.n_replayed), "trajectory": traj,
            **({} if res.hessian is None else {"hessian": np.array(res.hessian, dtype=float)}),
            **extra}


def fixed_record(theta, value, info=None):
    """The ``starts_`` entry of a fit at fixed hyperparameters (``optimize=False``):
    one evaluation, no search."""
    theta = np.asarray(theta, dtype=float)
    rec = {"theta": theta, "fun": float(value), "grad": np.full(theta.size, np.nan),
           "grad_norm": np.nan, "info": dict(info or {}), "accepted": True}
    res = StartResult(theta0=theta, theta=theta, fun=float(value), grad=rec["grad"],
                      info=rec["info"], n_iter=0, n_eval=1, success=True,
                      message="fixed hyperparameters (optimize=False)", trajectory=[rec])
    return start_record(res)


def trajectory_columns(records, size=0):
    """Stacked arrays of trajectory records (:func:`start_record`):
    ``theta`` (k x size), ``fun``, ``grad_norm``, ``map_s`` and
    ``evidence_s`` (nan where the objective does not time them)."""
    def col(key):
        return np.array([r.get(key, r.get("info", {}).get(key, np.nan)) for r in records],
                        dtype=float)

    return {"theta": (np.array([r["theta"] for r in records], dtype=float) if records
                      else np.zeros((0, size))),
            "fun": col("fun"), "grad_norm": col("grad_norm"),
            "map_s": col("map_s"), "evidence_s": col("evidence_s")}


def unrefined_record(coarse_record):
    """Start record (``starts_`` entry) of a start that was optimised on the
    subsample only: a lower subsample evidence than the refined start, so it
    was not continued on the full data. Its subsample phase is kept."""
    return {"theta0": coarse_record["theta0"], "theta": coarse_record["theta"],
            "neg_log_evidence": float("nan"), "n_iter": 0, "n_eval": 0, "success": False,
            "message": "not refined on the full data: a lower subsample evidence",
            "n_nonfinite": 0, "n_rejected": 0, "n_replayed": 0,
            "trajectory": [], "subsample": coarse_record}
