"""R3: robot arm -- every hyperparameter per output and variant, and the ARD
ranking of the six-input variant (docs/protocols.md, R3)."""

from __future__ import annotations

import numpy as np

from .compare import ard_values, worse_than
from .tables import table

__all__ = ["section", "ard_verdict"]

R3_HEAD = ["data set", "C", "epsilon", "noise var", "kappa_l", "kappa_b", "off-bound SVs",
           "on-bound SVs", "time [s]", "test AAE", "test ASE"]


def ard_verdict(k):
    """Plain statement on the ARD ranking of R3's six inputs (x1, x2 > x3, x4 > x5, x6)."""
    relevant = min(k[0], k[1]) > max(k[2:])
    copies = min(k[2], k[3]) > max(k[4], k[5])
    tied = np.isclose(min(k[2], k[3]), max(k[4], k[5]), rtol=1e-3)
    order = ", ".join(f"x{i + 1}" for i in np.argsort(-k))
    return (f"ARD order {order}: x1, x2 ranked first -- {'yes' if relevant else 'NO'}; noisy "
            f"copies x3, x4 above the pure-noise x5, x6 -- "
            f"{'tied (all switched off)' if tied else 'yes' if copies else 'NO'}.")


def _r3_model(run, model, verdicts, notes):
    """Rows of :data:`R3_HEAD` of ``model`` (first partition of each data set) and
    its ARD verdicts on the six-input variant."""
    rows = []
    for ds in run.datasets():
        kap, e = ard_values(run, ds, model)
        if e is None:
            continue
        e0 = e[0]
        h = e0["hyperparameters"]
        noff = int(e0.get("n_off_bound", -1))
        rows.append([ds, h.get("C"), h.get("epsilon"), h.get("noise_variance", h.get("sigma2")),
                     kap[0], h.get("kappa_b"), noff, int(e0["n_sv"]) - noff if noff >= 0 else -1,
                     e0["time"], e0["metrics"]["aae"], e0["metrics"]["ase"]])
        if kap.shape[1] == 6:
            verdicts.append(f"- {model} on {ds}: {ard_verdict(kap[0])}")
            if "NO" in verdicts[-1] and not e0["kind"].startswith("sk_"):
                notes.append(f"R3 {model} on {ds}: {ard_verdict(kap[0])}")
    return rows


def section(run, figs, notes, prose):
    """Every hyperparameter (each kappa_l) per output and variant, ARD verdicts."""
    lines, verdicts = [], []
    for model in sorted({m for ds in run.datasets() for m in run.models(ds)}):
        rows = _r3_model(run, model, verdicts, notes)
        if model.startswith("BSVR"):
            worse_than(run, model, "GPR-ARD", notes, "R3")
        if rows:
            lines += [f"**{model}**:", ""] + table(R3_HEAD, rows) + [""]
    if verdicts:
        lines += ["ARD ranking of the six-input variant (promised: x1, x2, then the noisy "
                  "copies x3, x4, then the pure-noise x5, x6):", ""] + verdicts + [""]
    return lines
