"""Statistics of the page: scaling exponents, medians, per-evaluation times."""

from __future__ import annotations

import numpy as np

from bsvm_scale.pipeline.outputs.report import paired_t_test

__all__ = ["fit_exponent", "finite_median", "n_evals", "per_evaluation", "evaluation_seconds",
           "paired_t_test", "mean_sd"]


def fit_exponent(n, t):
    """Least-squares slope ``a`` of ``log t = a log n + c`` (NaN with < 2 usable sizes).

    Parameters
    ----------
    n, t : array-like
        Sizes and times; non-positive or non-finite pairs are left out.

    Returns
    -------
    float
    """
    n, t = np.asarray(n, dtype=float), np.asarray(t, dtype=float)
    ok = np.isfinite(n) & np.isfinite(t) & (n > 0) & (t > 0)
    if np.unique(n[ok]).size < 2:
        return float("nan")
    return float(np.polyfit(np.log(n[ok]), np.log(t[ok]), 1)[0])


def finite_median(values):
    """Median of the finite entries of ``values`` (nan when there are none)."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else float("nan")


def mean_sd(values, mean_format=".4g", sd_format=".2g"):
    """``"mean +- sd"`` of ``values`` (sd with ``ddof=1``; 0 for a single value),
    each formatted by its format specification."""
    a = np.asarray(values, dtype=float)
    sd = np.std(a, ddof=1) if a.size > 1 else 0
    return f"{np.mean(a):{mean_format}} +- {sd:{sd_format}}"


def n_evals(task):
    """Number of evidence evaluations recorded for a task (0 without a trajectory)."""
    tr = task.get("trajectory") or {}
    fun = tr.get("fun") if isinstance(tr, dict) else None
    return int(np.size(fun)) if fun is not None else 0


def per_evaluation(task):
    """Median seconds of one full-data MAP solve and of one evidence + gradient
    evaluation of the task's chosen start (nan when not recorded)."""
    tr = task.get("trajectory")
    tr = tr if isinstance(tr, dict) else {}
    return tuple(finite_median(tr.get(k, [])) for k in ("map_s", "evidence_s"))


def evaluation_seconds(starts):
    """Seconds in MAP solves and in evidence (+ gradient) evaluations over the
    trajectories of ``starts_`` records (subsample phases included); nan when
    the records predate the timing."""
    recs = []
    for st in starts:
        recs += list(st.get("trajectory", []))
        recs += list(st.get("subsample", {}).get("trajectory", []))
    tot = [sum(float(r.get(k, r.get("info", {}).get(k, np.nan))) for r in recs)
           for k in ("map_s", "evidence_s")]
    return tot if recs else [np.nan, np.nan]
