"""R1: sinc with SILF noise -- BSVR per training size beside the true noise, and
the beta sweep (docs/protocols.md, R1)."""

from __future__ import annotations

import re

import numpy as np

from .figures import log_axes, pyplot
from .runs import groups_by_size, short_name
from .stats import n_evals, per_evaluation
from .tables import table

__all__ = ["section"]

R1_HEAD = ["n", "true noise var (train)", "C", "epsilon", "noise var (2.33)", "kappa",
           "-ln evidence", "off-bound SVs", "on-bound SVs", "time [s]", "test AAE", "test ASE",
           "true test AAE", "true test ASE", "MAP [s]", "evidence [s]"]
SWEEP = re.compile(r"beta([0-9.e+-]+)$")


def _true_noise(run, sizes):
    """``{n: (noise variance of the training set, mean square and mean absolute
    noise of the test set)}`` from the generated data's noise-free targets."""
    true = {}
    for n, ds in sizes.items():
        d = run.data(ds)
        tr, te = run.partition(ds)
        noise = d.y - d.extra["f"] if "f" in d.extra else np.full(d.y.shape, np.nan)
        true[n] = (float(np.var(noise[tr])), float(np.mean(noise[te] ** 2)),
                   float(np.mean(np.abs(noise[te]))))
    return true


def _model_rows(run, sizes, model, true):
    """One row of :data:`R1_HEAD` per size at which ``model`` ran."""
    rows = []
    for n, ds in sizes.items():
        e = run.entries(ds, model)
        if not e:
            continue
        e = e[0]
        h = e["hyperparameters"]
        nsv, noff = int(e["n_sv"]), int(e["n_off_bound"])
        tr = e["task"].get("trajectory") or {}
        t_map, t_ev = (float(np.nansum(tr[k])) if k in tr else np.nan
                       for k in ("map_s", "evidence_s"))
        rows.append([n, true[n][0], h.get("C"), h.get("epsilon"), h.get("noise_variance"),
                     h.get("kappa"), -e["log_evidence"], noff, nsv - noff, e["time"],
                     e["metrics"]["aae"], e["metrics"]["ase"], true[n][2], true[n][1],
                     t_map, t_ev])
    return rows


def _model_block(model, rows, notes):
    """The table of one BSVR model, the gap to the true noise and the noise check."""
    lines = [f"**{model}** (best of the starts; time = all starts, seconds; MAP / evidence = "
             "the chosen start's full-data MAP solves and evidence + gradient evaluations):",
             ""] + table(R1_HEAD, rows) + [""]
    gap = [r[11] - r[13] for r in rows]
    if len(rows) > 1:
        lines += [f"Test ASE minus the true test noise goes from {gap[0]:.3g} (n = {rows[0][0]}) "
                  f"to {gap[-1]:.3g} (n = {rows[-1][0]}).", ""]
    else:
        lines += [f"Test ASE minus the true test noise: {gap[0]:.3g} (n = {rows[0][0]}).", ""]
    last = rows[-1]
    if last[4] is not None and abs(last[4] / last[1] - 1.0) > 0.25:
        notes.append(f"R1 {model}, n = {last[0]}: the noise variance implied by (2.33), "
                     f"{last[4]:.3g}, is {last[4] / last[1]:.2f} x the true noise variance "
                     f"of the training set ({last[1]:.3g}).")
    return lines


def section(run, figs, notes, prose):
    """Per-size table of every BSVR model beside the true noise, and the beta sweep."""
    sizes = groups_by_size(run)
    true = _true_noise(run, sizes)
    lines = []
    for model in sorted({m for ds in sizes.values() for m in run.models(ds)
                         if m.startswith("BSVR")}):
        rows = _model_rows(run, sizes, model, true)
        if rows:
            lines += _model_block(model, rows, notes)
    return lines + _sweep(run, sizes, true, figs, prose)


def _sweep_rows(run, ds, true_ase):
    """One row per beta value of the sweep on ``ds``, sorted by beta."""
    rows = []
    for model in run.models(ds):
        e = run.entries(ds, model)
        m = SWEEP.search(model)
        if not e or not m:
            continue
        e = e[0]
        ne = max(n_evals(e["task"]), 1)
        rows.append([float(m.group(1)), int(e["n_sv"]), int(e["n_off_bound"]),
                     e["task"].get("fit_time", np.nan) / ne, -e["log_evidence"],
                     e["metrics"]["ase"] - true_ase, *per_evaluation(e["task"]), model])
    return sorted(rows)


def _sweep(run, sizes, true, figs, prose):
    """Table and figure of the beta sweep (on the size with most beta values)."""
    if not sizes:
        return []
    big = max(sizes, key=lambda n: (sum(bool(SWEEP.search(m)) for m in run.models(sizes[n])), n))
    rows = _sweep_rows(run, sizes[big], true[big][1])
    if len(rows) < 2:
        return []
    name = f"{short_name(run.name)}_beta_sweep"
    lines = [f"beta sweep on the {big}-case training set (evidence maximisation at each beta):",
             ""] + table(["beta", "SVs", "off-bound SVs", "s per evaluation", "-ln evidence",
                          "test ASE - true noise", "MAP solve [s]", "evidence + gradient [s]",
                          "model"], rows)
    lines += ["", prose["r1.sweep"], ""]
    fig = _sweep_figure(np.array([r[:6] for r in rows], dtype=float), big)
    return lines + figs.save(fig, name, f"R1: the role of beta at n = {big}")


def _sweep_figure(a, n):
    """Four panels against beta: SVs, seconds per evaluation, -ln evidence, ASE gap."""
    plt = pyplot()
    fig, ax = plt.subplots(1, 4, figsize=(16, 3.8))
    ax[0].loglog(a[:, 0], a[:, 1], "o-", label="support vectors")
    ax[0].loglog(a[:, 0], np.maximum(a[:, 2], 0.5), "s--", label="off-bound support vectors")
    ax[0].legend(fontsize=8)
    ax[0].set_title("support vectors")
    ax[1].loglog(a[:, 0], a[:, 3], "o-")
    ax[1].set_title("seconds per evidence evaluation")
    ax[2].semilogx(a[:, 0], a[:, 4], "o-")
    ax[2].set_title("-ln evidence at the optimum")
    ax[3].semilogx(a[:, 0], a[:, 5], "o-")
    ax[3].set_title("test ASE minus the true test noise")
    for x in ax:
        x.set_xlabel("beta (SILF)")
        log_axes(x)
    fig.suptitle(f"R1: BSVR fitted with each beta of the sweep on {n} sinc training cases")
    fig.tight_layout()
    return fig
