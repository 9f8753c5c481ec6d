"""C4: multi-class by one-versus-rest -- the overall test error and every binary
classifier's SVs, hyperparameters, test error and seconds (docs/protocols.md, C4)."""

from __future__ import annotations

import numpy as np

from .stats import evaluation_seconds
from .tables import table

__all__ = ["section"]


def _binary_rows(model, X, y):
    """One row per one-versus-rest classifier of ``model`` on the test data."""
    mu = model.decision_function(X)
    rows = []
    for k, est in enumerate(model.estimators_):
        h = est.hyperparameters_
        err = float(np.mean((mu[:, k] > 0) != (y == model.classes_[k])))
        rows.append([f"{model.classes_[k]} vs rest", int(len(est.support_)), h.get("kappa0"),
                     h.get("kappa"), h.get("kappa_b"), err, *evaluation_seconds(est.starts_)])
    return rows


def _model_lines(run, ds, m, te, d):
    """The overall line of model ``m`` and, for a loaded one-versus-rest model,
    the table of its binary classifiers."""
    e = run.entries(ds, m)[0]
    lines = [f"{m}: overall test error rate {e['metrics']['error_rate']:.4f} ({te.size} test "
             f"cases), {int(e['n_sv'])} SVs in all, {e['time']:.0f} s."]
    model = run.model(ds, m)
    if model is None or not hasattr(model, "estimators_"):
        return lines
    rows = _binary_rows(model, d.X[te], d.y[te])
    lines += ["", f"Binary one-versus-rest classifiers of {m} (time: "
              f"{e['task'].get('fit_time', np.nan):.0f} s for all {len(rows)}; per classifier: "
              "the seconds of its MAP solves and of its evidence evaluations, every start):", ""]
    return lines + table(["classifier", "SVs", "kappa0", "kappa", "kappa_b", "test error",
                          "MAP solves [s]", "evidence [s]"], rows) + [""]


def section(run, figs, notes, prose):
    """Overall error and every one-versus-rest classifier's SVs and test error."""
    lines = []
    for ds in run.datasets():
        _, te = run.partition(ds)
        d = run.data(ds, extra=False)
        for m in run.models(ds):
            lines += _model_lines(run, ds, m, te, d)
        errs = {m: run.entries(ds, m)[0]["metrics"]["error_rate"] for m in run.models(ds)}
        for m, e in errs.items():
            if m.startswith("BTSVC") and min(errs.values()) < e:
                best = min(errs, key=errs.get)
                notes.append(f"C4 {ds}: {m} test error {e:.4f} is above {best}'s "
                             f"{errs[best]:.4f}.")
        lines.append("")
    return lines
