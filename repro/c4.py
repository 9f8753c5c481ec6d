"""C4: multi-class by one-versus-rest -- the overall test error and every binary
classifier's SVs, hyperparameters, test error and seconds (docs/protocols.md, C4)."""

from __future__ import annotations

import numpy as np

from .stats import evaluation_seconds
from .tables import table

__all__ = ["section"]


def _binary_tasks(model, y):
    """``(name, test cases, positive labels)`` of each binary classifier of
    ``model``: a class against the rest on every case, or (one-versus-one) a
    pair on the cases of its two classes."""
    from bsvm_scale.models.multiclass import binary_pairs

    c = model.classes_
    return [(f"{c[i]} vs rest", np.ones(y.size, bool), y == c[i]) if j is None else
            (f"{c[i]} vs {c[j]}", (y == c[i]) | (y == c[j]), y == c[i])
            for i, j in binary_pairs(c.size, getattr(model, "multi_class", "ovr"))]


def _binary_rows(model, X, y):
    """One row per binary classifier of ``model`` on the test data (its test
    error on the test cases of its problem)."""
    mu = model.latent_moments(X)[0]
    rows = []
    for k, (est, (name, cases, positive)) in enumerate(zip(model.estimators_,
                                                          _binary_tasks(model, y))):
        h = est.hyperparameters_
        err = float(np.mean((mu[cases, k] > 0) != positive[cases]))
        row = [name, int(len(est.support_)), h.get("kappa0"), h.get("kappa"), h.get("kappa_b"),
               err]
        rows.append(row if getattr(model, "shared_kernel", False) else
                    row + list(evaluation_seconds(est.starts_)))
    return rows


def _model_lines(run, ds, m, te, d):
    """The overall line of model ``m`` and, for a loaded multi-class model,
    the table of its binary classifiers."""
    e = run.entries(ds, m)[0]
    lines = [f"{m}: overall test error rate {e['metrics']['error_rate']:.4f} ({te.size} test "
             f"cases), {int(e['n_sv'])} SVs in all, {e['time']:.0f} s."]
    model = run.model(ds, m)
    if model is None or not hasattr(model, "estimators_"):
        return lines
    rows = _binary_rows(model, d.X[te], d.y[te])
    kind = "one-versus-rest" if getattr(model, "multi_class", "ovr") == "ovr" else "pairwise"
    fit = f"{e['task'].get('fit_time', np.nan):.0f} s for all {len(rows)}"
    head = ["classifier", "SVs", "kappa0", "kappa", "kappa_b", "test error"]
    if getattr(model, "shared_kernel", False):
        lines += ["", f"Binary {kind} classifiers of {m}, one kernel for all chosen by the sum "
                  f"of their evidences (time: {fit}, one search):", ""]
        return lines + table(head, rows) + [""]
    lines += ["", f"Binary {kind} classifiers of {m} (time: {fit}; per classifier: the seconds "
              "of its MAP solves and of its evidence evaluations, every start):", ""]
    return lines + table(head + ["MAP solves [s]", "evidence [s]"], rows) + [""]


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
