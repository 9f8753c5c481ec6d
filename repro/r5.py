"""R5: real regression benchmarks -- paired t-tests, the isotropic/ARD evidence
comparison and the ARD values over the splits (docs/protocols.md, R5)."""

from __future__ import annotations

import numpy as np

from .compare import ard_values, paired_tests
from .tables import table

__all__ = ["section", "R5_NESTED", "nested_evidence"]

#: (isotropic, ARD) model pairs of R5: the ARD model contains the isotropic one
R5_NESTED = (("BSVR", "BSVR-ARD"), ("BSVR-sd", "BSVR-ARD-sd"))


def nested_evidence(run, pairs, notes, label):
    """ln evidence of each isotropic/ARD pair per split: the ARD model contains
    the isotropic one (all kappa_l equal), so its maximum evidence can only be
    higher; splits where it ends lower show optima the optimiser missed."""
    rows = []
    for ds in run.datasets():
        for iso, ard in pairs:
            if iso not in run.models(ds) or ard not in run.models(ds):
                continue
            # Run keeps the partitions every model finished, so these are aligned
            a, b = (np.array([e["log_evidence"] for e in run.entries(ds, m)], float)
                    for m in (iso, ard))
            if a.size == 0:
                continue
            lower = int(np.sum(b < a - 0.01))
            rows.append([ds, iso, ard, a.size, float(np.mean(a)), float(np.mean(b)), lower])
            if lower:
                notes.append(f"{label} {ds}: {ard} ends at a lower ln evidence than {iso} on "
                             f"{lower} of {a.size} splits (means {np.mean(b):.1f} against "
                             f"{np.mean(a):.1f}), although its model contains {iso}'s: "
                             f"its starts reach poorer optima.")
    if not rows:
        return []
    return ["ln evidence of the isotropic model and of its ARD extension (mean over splits; "
            "splits where ARD ends lower by more than 0.01):", ""] + \
        table(["data set", "isotropic", "ARD", "splits", "ln ev isotropic", "ln ev ARD",
               "ARD lower"], rows) + [""]


def _feature_names(run, ds):
    try:
        return run.data(ds, extra=False).feature_names
    except (OSError, ValueError):
        return None


def _ard_tables(run, ds):
    """Mean and sd of every kappa_l of each ARD model of ``ds`` over the splits."""
    names = _feature_names(run, ds)
    lines = []
    for m in run.models(ds):
        kap, e = ard_values(run, ds, m)
        if e is None or kap.ndim != 2 or kap.shape[1] < 2:
            continue
        labels = names if names and len(names) == kap.shape[1] else \
            [f"x{i + 1}" for i in range(kap.shape[1])]
        rows = [[labels[i], float(np.mean(kap[:, i])), float(np.std(kap[:, i], ddof=1))
                 if kap.shape[0] > 1 else 0.0] for i in np.argsort(-np.mean(kap, axis=0))]
        lines += [f"ARD values kappa_l of {m} on {ds} over {kap.shape[0]} splits (largest "
                  "first):", ""] + table(["input", "mean", "sd"], rows) + [""]
    return lines


def section(run, figs, notes, prose):
    """Paired t-tests against BSVR, the isotropic/ARD evidence comparison and
    mean/sd of each ARD value over the splits."""
    lines = paired_tests(run, "ase", [m for pair in R5_NESTED for m in pair], notes, "R5")
    lines += nested_evidence(run, R5_NESTED, notes, "R5")
    for ds in run.datasets():
        lines += _ard_tables(run, ds)
    return lines
