"""R2: sinc scaling -- test error, time and memory of BSVR against GPR, SVR and
RVR from 10 to 1000 training cases (docs/protocols.md, R2)."""

from __future__ import annotations

import numpy as np

from .compare import peak_memory_by_size, peer_ratios
from .figures import log_axes, model_words, pyplot
from .runs import groups_by_size, short_name
from .stats import fit_exponent, mean_sd
from .tables import table

__all__ = ["section"]

#: the peers of BSVR in the model-selection comparison
PEERS = ["LIBSVM-SVR-CV", "SVR-CV", "sklearn-GPR", "GPR", "RVR"]


def _error_rows(run, sizes, models):
    """Rows (n, method, repetitions, AAE, ASE, total time) and ``{method: (sizes,
    seconds per repetition)}``."""
    rows, times = [], {m: ([], []) for m in models}
    for n, ds in sizes.items():
        for m in models:
            e = run.entries(ds, m)
            if not e:
                continue
            t = float(sum(x["time"] for x in e))
            rows.append([n, m, len(e), mean_sd(run.metric(ds, m, "aae")),
                         mean_sd(run.metric(ds, m, "ase")), t])
            times[m][0].append(n)
            times[m][1].append(t / len(e))
    return rows, times


def _exponent_rows(times, models):
    """Fitted exponent of time per repetition, over all sizes and over n >= 100."""
    rows = []
    for m in models:
        n, t = np.array(times[m][0]), np.array(times[m][1])
        rows.append([m, fit_exponent(n, t), fit_exponent(n[n >= 100], t[n >= 100])])
    return rows


def section(run, figs, notes, prose):
    """Mean/sd of test AAE and ASE per size and method, task times, fitted
    exponents, peak memory, a figure of the three, and the peer comparison."""
    sizes = groups_by_size(run)
    models = sorted({m for ds in sizes.values() for m in run.models(ds)})
    rows, times = _error_rows(run, sizes, models)
    lines = ["Test AAE / ASE (mean +- sd over repetitions) and total task time per method "
             "and size:", ""]
    lines += table(["n", "method", "repetitions", "test AAE", "test ASE", "total time [s]"],
                   rows) + [""]
    lines += ["Fitted exponent a of time ~ n^a (time per repetition):", ""]
    lines += table(["method", "a (all sizes)", "a (n >= 100)"], _exponent_rows(times, models))
    mem, mem_lines = peak_memory_by_size(run, sizes, models)
    lines += [""] + mem_lines
    fig = _figure(run, sizes, models, times, mem)
    lines += figs.save(fig, f"{short_name(run.name)}_scaling",
                       "R2: test error, time and memory against training cases")
    lines += peer_ratios(run, sizes, "BSVR", PEERS, "ase")
    big = max(sizes) if sizes else None
    if big and "BSVR" in models and "GPR" in models:
        b = np.mean(run.metric(sizes[big], "BSVR", "ase"))
        g = np.mean(run.metric(sizes[big], "GPR", "ase"))
        notes.append(f"R2 at n={big}: BSVR test ASE {b:.3g} vs GPR {g:.3g} "
                     f"({'BSVR worse' if b > g else 'BSVR not worse'}); Gaussian noise favours "
                     "GPR, whose likelihood is the true noise model.")
    return lines


def _figure(run, sizes, models, times, mem):
    """Test ASE, task seconds and peak memory against n, one line per method."""
    plt = pyplot()
    fig, ax = plt.subplots(1, 3, figsize=(16, 4.8))
    for m in models:
        ns = np.array(times[m][0])
        ase = [np.mean(run.metric(sizes[n], m, "ase")) for n in ns]
        ax[0].loglog(ns, ase, "o-", label=model_words(m))
        ax[1].loglog(ns, times[m][1], "o-", label=model_words(m))
        ax[2].semilogx(list(sizes), mem[m], "o-", label=model_words(m))
    ax[0].set_title("test ASE (noise-free targets)")
    ax[1].set_title("task seconds per repetition (model selection included)")
    ax[2].set_title("peak resident memory per task [MiB]")
    for x in ax:
        x.set_xlabel("training cases n")
        log_axes(x)
    handles, labels = ax[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=3, fontsize=9)
    fig.suptitle("R2: BSVR against GPR, SVR and RVR on sinc with Gaussian noise")
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig
