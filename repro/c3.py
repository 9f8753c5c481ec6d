"""C3 (and C3-large, C3-xl): benchmark partitions -- error rate, SVs and time per
partition (protocols A and B), paired t-tests, and the evidence against the
test error over (kappa0, kappa) read from the run's evidence-grid tasks
(docs/protocols.md, C3)."""

from __future__ import annotations

import numpy as np

from bsvm_scale.pipeline.outputs.report import evidence_grid_figure, grid_optima

from .compare import nll_notes, paired_tests
from .runs import short_name
from .stats import mean_sd
from .tables import table

__all__ = ["section", "GRID_MODEL"]

#: the model whose evidence grids the section shows
GRID_MODEL = "BTSVC"


def section(run, figs, notes, prose):
    """Error rate, SVs and time per partition, paired t-tests, evidence grids."""
    rows = []
    for ds in run.datasets():
        for m in run.models(ds):
            e = run.entries(ds, m)
            n_sv = float(np.mean([x["n_sv"] for x in e]))
            rows.append([ds, m, len(e),
                         mean_sd(run.metric(ds, m, "error_rate"), ".4f", ".3f"),
                         n_sv if n_sv >= 0 else None,  # GPs have no SVs (recorded as -1)
                         float(np.mean([x["time"] for x in e]))])
    lines = [prose["c3.protocols"], ""]
    lines += table(["data set", "model", "partitions", "test error", "SVs", "s per partition"],
                   rows)
    lines += [""] + paired_tests(run, "error_rate", ["BTSVC", "BTSVC-A"], notes, "C3")
    nll_notes(run, "C3", notes)
    grids = [ds for ds in run.datasets() if run.grid(ds, GRID_MODEL) is not None]
    if grids:
        lines += [prose["c3.grid"], ""]
    for ds in grids:
        lines += _grid_block(run, ds, run.grid(ds, GRID_MODEL), figs, notes)
    return lines


def _grid_block(run, ds, grid, figs, notes):
    """The statement on the grid of ``ds`` (partition 0), its figure and its check."""
    a, b = np.asarray(grid["log10_kappa0"]), np.asarray(grid["log10_kappa"])
    err = np.asarray(grid["error_rate"])
    (jb, ib), (je, ie) = grid_optima(grid)
    gap = err[jb, ib] - err.min()
    if gap > 0.01:
        notes.append(f"C3 {ds}: the test error at the grid's evidence optimum ({err[jb, ib]:.4f}) "
                     f"is {gap:.4f} above the grid's lowest ({err.min():.4f}).")
    n_train = run.partition(ds, 0)[0].size
    fig = evidence_grid_figure(grid, f"C3 {ds}: BTSVC at fixed (kappa0, kappa), kappa_b = "
                                     f"{grid['kappa_b']:.3g}, first partition")
    return [f"Evidence against test error on {ds}, partition 0 ({n_train} training cases), "
            f"kappa_b = {grid['kappa_b']:.3g} fixed: the grid's evidence optimum (kappa0 = "
            f"{10 ** a[ib]:.3g}, kappa = {10 ** b[jb]:.3g}) has test error {err[jb, ib]:.4f}; "
            f"the grid's lowest test error is {err.min():.4f} (kappa0 = {10 ** a[ie]:.3g}, "
            f"kappa = {10 ** b[je]:.3g}).", ""] + \
        figs.save(fig, f"{short_name(run.name)}_{ds}_evidence",
                  f"C3: evidence and test-error contours, {ds}")
