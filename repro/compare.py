"""Comparisons shared by the protocol sections: paired tests, model-selection
time against the peers, peak memory, ARD values, and the automatic checks of
what the method promises (each adds a plain statement to ``notes``)."""

from __future__ import annotations

import numpy as np

from .stats import paired_t_test
from .tables import table

__all__ = ["paired_tests", "peer_ratios", "peak_memory_by_size", "ard_values", "worse_than",
           "nll_notes", "NLL_NOTE_REL"]

#: BTSVC's mean test NLL is called worse than GPC's beyond this relative margin
NLL_NOTE_REL = 0.01


def _paired_rows(run, ds, a, b, metric):
    """``[ds, "a - b", k, mean diff, t, p]`` over the first ``k`` common partitions, or None."""
    ea, eb = run.metric(ds, a, metric), run.metric(ds, b, metric)
    k = min(ea.size, eb.size)
    if k < 2:
        return None
    t, _, p = paired_t_test(ea[:k], eb[:k])
    return [ds, f"{a} - {b}", k, float(np.mean(ea[:k] - eb[:k])), t, p]


def paired_tests(run, metric, against, notes=None, label=""):
    """Paired t-tests of ``against`` models vs every other model of each data set.

    Where a model of ``against`` errs significantly more (p < 0.05, at least five
    partitions), a plain statement is added to ``notes``.
    """
    rows = []
    for ds in run.datasets():
        models = run.models(ds)
        for a in [m for m in models if m in against]:
            for b in models:
                if b == a or b in against[:against.index(a) + 1]:
                    continue
                row = _paired_rows(run, ds, a, b, metric)
                if row is None:
                    continue
                rows.append(row)
                t, p, k = row[4], row[5], row[2]
                if notes is not None and t > 0 and p < 0.05 and k >= 5:
                    notes.append(f"{label} {ds}: {a} has a significantly higher test {metric} "
                                 f"than {b} (paired t = {t:.2f}, p = {p:.3g}, {k} partitions).")
    if not rows:
        return []
    return [f"Paired t-tests on the test {metric} (t > 0: the first model errs more):", ""] + \
        table(["data set", "difference", "partitions", "mean diff", "t", "p"], rows) + [""]


def peer_ratios(run, sizes, ours, peers, metric):
    """Model-selection time of ``ours`` against each peer, side by side with the test metric.

    Times are the mean task seconds per repetition (all starts / the whole CV grid);
    the ratio is peer time / our time (> 1: ours is faster).
    """
    rows = []
    for n, ds in sizes.items():
        models = run.models(ds)
        if ours not in models:
            continue
        t0 = np.mean([e["time"] for e in run.entries(ds, ours)])
        m0 = np.mean(run.metric(ds, ours, metric))
        for p in [p for p in peers if p in models]:
            t = np.mean([e["time"] for e in run.entries(ds, p)])
            rows.append([n, f"{ours} vs {p}", t0, t, t / t0, m0,
                         np.mean(run.metric(ds, p, metric))])
    if not rows:
        return []
    return [f"Model selection side by side (same data, same run): task seconds per repetition "
            f"and test {metric}; ratio = peer time / {ours} time:", ""] + \
        table(["n", "pair", f"{ours} [s]", "peer [s]", "ratio", f"{ours} {metric}",
               f"peer {metric}"], rows) + [""]


def peak_memory_by_size(run, sizes, models):
    """Median peak resident memory of the chosen task per (size, method), and its table.

    Returns ``({method: [MiB per size]}, lines)``. Runs made before the
    per-task memory scope recorded the worker's lifetime peak (an upper
    bound); the table says which.
    """
    mem, scopes = {m: [] for m in models}, set()
    for ds in sizes.values():
        for m in models:
            tasks = [x["task"] for x in run.entries(ds, m)]
            scopes |= {"task" if t.get("peak_rss_scope") == "task" else "worker" for t in tasks}
            mem[m].append(float(np.median([t.get("peak_rss_mb", np.nan) for t in tasks]))
                          if tasks else np.nan)
    what = ("the task's own peak" if scopes == {"task"} else
            "the worker process's lifetime peak, an upper bound: the run predates per-task "
            "peaks" if scopes == {"worker"} else "mixed task and worker peaks")
    rows = [[n] + [mem[m][i] for m in models] for i, n in enumerate(sizes)]
    lines = [f"Peak resident memory [MiB] per task, median over repetitions ({what}):", ""]
    return mem, lines + table(["n"] + models, rows) + [""]


def ard_values(run, ds, model):
    """``(kappa, entries)``: the kappa values (partitions x inputs) of ``model`` on
    ``ds`` and its entries; ``([], None)`` when it has none."""
    e = run.entries(ds, model)
    if not e:
        return [], None
    kap = np.array([np.atleast_1d(np.asarray(x["hyperparameters"].get("kappa", np.nan), float))
                    for x in e])
    return kap, e


def worse_than(run, model, ref, notes, label, factor=2.0):
    """A note for every data set where ``model``'s test ASE exceeds ``factor`` x ``ref``'s."""
    for ds in run.datasets():
        if model == ref or ref not in run.models(ds) or model not in run.models(ds):
            continue
        a, g = np.mean(run.metric(ds, model, "ase")), np.mean(run.metric(ds, ref, "ase"))
        if a > factor * g:
            notes.append(f"{label} {model} on {ds}: test ASE {a:.3g} is {a / g:.1f} x that of "
                         f"{ref} ({g:.3g}).")


def nll_notes(run, label, notes, datasets=None):
    """Plain statements where BTSVC's test NLL is worse than GPC's (by more than
    :data:`NLL_NOTE_REL`), and on its sparseness."""
    for ds in datasets or run.datasets():
        models = run.models(ds)
        if "BTSVC" not in models or "GPC" not in models:
            continue
        b, g = np.nanmean(run.metric(ds, "BTSVC", "nll")), np.nanmean(run.metric(ds, "GPC", "nll"))
        if b > (1.0 + NLL_NOTE_REL) * g:
            notes.append(f"{label} {ds}: BTSVC test NLL {b:.4g} is {b / g - 1:.0%} worse than "
                         f"GPC's {g:.4g} (its probabilities are less well calibrated on this "
                         "data).")
        e = run.entries(ds, "BTSVC")
        frac = np.mean([x["n_sv"] / max(int(x["task"].get("n_train", 1)), 1) for x in e])
        if frac > 0.5:
            notes.append(f"{label} {ds}: BTSVC keeps {frac:.0%} of the training cases as SVs, "
                         "not the sparse solution the trigonometric loss promises.")
