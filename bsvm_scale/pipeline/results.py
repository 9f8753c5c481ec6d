"""The published results page: ``docs/results.md`` and its PNG figures.

One command reads the run files of the reproduction pipelines
(``pipelines/repro_*.toml``) and writes the page::

    bsvm-scale results runs/repro_* --out docs
    python3 -m bsvm_scale.pipeline.results runs/repro_* --out docs [--bench FILE ...]

Each run is recognised by its name (``repro_r1`` ... ``repro_c4``, a suffix such
as ``repro_r2_reduced`` is allowed) and gets the tables and plots its protocol in
``docs/protocols.md`` asks for; every other run gets the summary table. The page
also states the machine and package versions, how each run was sized (full
protocol or reduced), the commands that regenerate it, automatic checks of
what the method promises (stated plainly where they fail), and the peer
benchmark figures when ``--bench`` result files (JSON rows written by
``benchmarks/bench_*.py --out``) are given.
"""

from __future__ import annotations

import argparse
import json
import os
import re
from pathlib import Path

import numpy as np

from .report import paired_t_test
from .runfile import format_table, read_run_file, summary_rows

__all__ = ["write_results", "protocol_of", "fit_exponent", "bench_exponents", "bench_ratios",
           "add_arguments", "cmd_results", "main"]

PROTOCOL_TITLES = {
    "r1": "R1. Sinc with SILF noise (scale and the role of beta)",
    "r2": "R2. Sinc scaling: BSVR vs GPR vs SVR",
    "r3": "R3. Robot arm (ARD feature selection)",
    "r4": "R4. Time series with error bars",
    "r5": "R5. Real regression benchmarks",
    "c1": "C1. One-dimensional simulated classification",
    "c2": "C2. Two-dimensional simulated classification",
    "c3": "C3. Benchmark partitions",
    "c4": "C4. Multi-class by one-versus-rest",
}

#: the data each protocol was run on (docs/protocols.md: every report says which data were used)
DATA_USED = {
    "r1": "sinc(x) on [-10, 10] with SILF noise (C = 10, epsilon = 0.1, beta = 0.3), generated.",
    "r2": "sinc(x) on [-10, 10] with Gaussian noise of variance 0.04; noise-free test targets.",
    "r3": "Substitute for the 600-pair robot-arm file: the generated arm of docs/protocols.md (R3).",
    "r4": "Substitute for the Santa Fe laser series: Mackey-Glass (tau = 17), 8 lags.",
    "r5": "Boston housing (MASS::Boston, 506 cases) with its 100 stored 481/25 splits.",
    "c1": "Generated 1-D Gaussian classes (50 + 50, optional outlier at x = -2).",
    "c2": "Generated 2-D Gaussian classes; common test set of 20,002 cases.",
    "c3": "twonorm, ringnorm, waveform generated from their recipes (not the Raetsch "
          "files); titanic, Pima and Wisconsin breast cancer with stored partitions.",
    "c4": "Substitute for USPS: scikit-learn's 8x8 digits (1797 cases), stored 1200/597 split.",
}
#: data sets of the runs beyond a protocol's own data (they replace its statement)
DATA_BY_DATASET = {
    "diamonds": "diamonds (ggplot2, 53,940 cases, 9 inputs, target ln(price)), random "
                "partitions of 50,000 training and 3,940 test cases.",
}


def data_used(run_datasets, key):
    """The 'Data:' statement of a run: its own data sets' when all are in
    :data:`DATA_BY_DATASET`, else the protocol's."""
    names = list(run_datasets)
    if names and all(n in DATA_BY_DATASET for n in names):
        return " ".join(DATA_BY_DATASET[n] for n in names)
    return DATA_USED[key]


# ------------------------------------------------------------------ helpers
def protocol_of(name):
    """Protocol key (``'r1'`` ... ``'c4'``) of a run name like ``repro_r2_reduced``, or None."""
    m = re.match(r"^repro_([rc]\d)(?:$|[_-])", str(name))
    return m.group(1) if m and m.group(1) in PROTOCOL_TITLES else None


def fit_exponent(n, t):
    """Least-squares slope ``a`` of ``log t = a log n + c`` (NaN with < 2 usable points).

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


def _plt():
    from .report import _plt as report_plt

    return report_plt()


def _fmt(v, digits=4):
    """A table cell: numbers to ``digits`` significant digits, arrays in brackets."""
    if isinstance(v, (list, tuple, np.ndarray)):
        a = np.atleast_1d(np.asarray(v, dtype=float))
        return "[" + ", ".join(f"{x:.{digits - 1}g}" for x in a) + "]"
    if v is None or (isinstance(v, float) and not np.isfinite(v)):
        return "-"
    if isinstance(v, (int, np.integer)):
        return str(int(v))
    return f"{float(v):.{digits}g}"


def _table(head, rows):
    """Markdown table lines."""
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(_fmt(c) if not isinstance(c, str) else c for c in r) + " |"
            for r in rows]
    return out


def _keep_common_partitions(rec):
    """Keep, per data set, only the partitions every one of its models finished
    (with all of its optimiser starts).

    A stopped run (or one with failed tasks) holds different partitions for
    different models; every mean, table and paired test on the page then
    compares models over the same partitions. Changes ``rec["results"]`` in
    place (a model left with no partition is removed); returns ``{data set:
    number of partition results left out}``.
    """
    left_out = {}
    for ds, models in rec.get("results", {}).items():
        done = [{k for k, v in parts.items() if _all_starts(v)} for parts in models.values()]
        common = set.intersection(*done) if done else set()
        n = sum(len(parts) - len(common) for parts in models.values())
        if n:
            left_out[ds] = n
            for model in list(models):
                kept = {k: v for k, v in models[model].items() if k in common}
                if kept:
                    models[model] = kept
                else:  # nothing in common: the model is not compared at all
                    del models[model]
    return left_out


def _all_starts(entry):
    """True when every optimiser start of a partition's entry finished."""
    return int(entry.get("n_starts_done", 1)) >= int(entry.get("n_starts", 1))


class Run:
    """One run record with accessors (``rec``, ``dir``, ``name``, ``left_out``).

    Only the partitions that every model of a data set finished are kept
    (:func:`_keep_common_partitions`).
    """

    def __init__(self, path, rec=None):
        # rec: the record already read from path; its results are copied, not changed
        self.rec = read_run_file(path) if rec is None else \
            {**rec, "results": {ds: dict(m) for ds, m in rec.get("results", {}).items()}}
        p = Path(path)
        self.dir = p if p.is_dir() else p.parent
        self.name = self.rec["meta"]["name"]
        self.left_out = _keep_common_partitions(self.rec)

    def datasets(self):
        return list(self.rec["datasets"])

    def models(self, ds):
        return list(self.rec.get("results", {}).get(ds, {}))

    def entries(self, ds, model):
        """Chosen start per partition, in partition order (each with its task record)."""
        parts = self.rec.get("results", {}).get(ds, {}).get(model, {})
        out = []
        for key in sorted(parts):
            e = dict(parts[key])
            e["task"] = self.rec["tasks"].get(e["best_task"], {})
            out.append(e)
        return out

    def metric(self, ds, model, name):
        return np.array([e["metrics"].get(name, np.nan) for e in self.entries(ds, model)], float)

    def data(self, ds, extra=True):
        """The data set ``ds`` (FileNotFoundError when no file of its size is found)."""
        from .export import read_checked

        return read_checked(self.dir, ds, self.rec["datasets"][ds],
                            self.rec["meta"].get("run_dir"), extra=extra)[1]

    def partition(self, ds, k=0):
        p = self.rec["datasets"][ds]["partitions"][k]
        return np.asarray(p["train"]), np.asarray(p["test"])

    def loads_model(self, ds, model):
        """True when the page loads this model (its label or kind is in
        :data:`MODELS_READ` for the run's protocol); ``bsvm-scale export`` copies
        exactly these."""
        e = self.entries(ds, model)
        key = protocol_of(self.name)
        wanted = MODELS_READ.get(key, ())
        if key in MODELS_AT_LARGEST_SIZE:
            sizes = _groups_by_size(self)
            if not sizes or ds != sizes[max(sizes)]:
                return False
        if e and int(e[0]["task"].get("n_train", 0)) > MAX_MODEL_TRAIN:
            return False
        return bool(e) and (model in wanted or e[0]["kind"] in wanted)

    def model(self, ds, model, k=0):
        """The stored model of the ``k``-th shown partition, or None when the page
        does not load it (:meth:`loads_model`, ``k`` = 0 only) or a run directory
        lacks its file; an export lacking it is an error."""
        from ..storage import load_model

        e = self.entries(ds, model)
        if len(e) <= k or k != 0 or not self.loads_model(ds, model):
            return None
        path = self.dir / e[k]["model_file"]
        if not path.exists() and "exported_from" in self.rec["meta"]:
            raise FileNotFoundError(f"export {str(self.dir)!r} lacks the model file "
                                    f"{e[k]['model_file']!r}; export the run again")
        return load_model(path) if path.exists() else None


def _n_evals(task):
    """Number of evidence evaluations recorded for a task (0 without a trajectory)."""
    tr = task.get("trajectory") or {}
    fun = tr.get("fun") if isinstance(tr, dict) else None
    return int(np.size(fun)) if fun is not None else 0


def _finite_median(values):
    """Median of the finite entries of ``values`` (nan when there are none)."""
    a = np.asarray(values, dtype=float).ravel()
    a = a[np.isfinite(a)]
    return float(np.median(a)) if a.size else float("nan")


def _per_evaluation(task):
    """Median seconds of one full-data MAP solve and of one evidence + gradient
    evaluation of the task's chosen start (nan when not recorded)."""
    tr = task.get("trajectory")
    tr = tr if isinstance(tr, dict) else {}
    return tuple(_finite_median(tr.get(k, [])) for k in ("map_s", "evidence_s"))


def _size_of(label):
    """Training size of a data set label ``<name>-n<size>`` (None otherwise)."""
    m = re.search(r"-n(\d+)$", label)
    return int(m.group(1)) if m else None


def _groups_by_size(run):
    """``{size: label}`` of data sets made from a list of training sizes; for a
    run of a single size (a label without ``-n<size>``), its one data set under
    its training size."""
    out = {}
    for ds in run.datasets():
        n = _size_of(ds)
        if n is not None:
            out[n] = ds
    if not out and len(run.datasets()) == 1:
        ds = run.datasets()[0]
        out[len(run.partition(ds)[0])] = ds
    return dict(sorted(out.items()))


# ------------------------------------------------------------ generic parts
def _run_header(run):
    """One paragraph: description, status, wall time, partitions, training sizes."""
    m = run.rec["meta"]
    parts = {ds: len(v["partitions"]) for ds, v in run.rec["datasets"].items()}
    sizes = sorted({len(np.asarray(v["partitions"][0]["train"])) for v in run.rec["datasets"].values()})
    lines = [f"Run `{run.name}` ({m.get('status', '?')}: {m.get('n_done', 0)}/{m.get('n_tasks', 0)} "
             f"tasks, {m.get('n_failed', 0)} failed), wall time {float(m.get('elapsed', 0)) / 60:.1f} min "
             f"with {m.get('n_workers', 0)} worker(s); pipeline `{Path(m.get('pipeline_path', '')).name}`; "
             f"partitions per data set: {', '.join(f'{k} {v}' for k, v in parts.items())}; "
             f"training sizes: {', '.join(map(str, sizes))}.", ""]
    if m.get("description"):
        lines[0] = f"{m['description']} " + lines[0]
    if run.left_out:
        common = {ds: len(next(iter(ms.values()), {})) for ds, ms in run.rec["results"].items()
                  if ds in run.left_out}
        lines[0] += (" Not every model finished every partition: this page compares the models "
                     "of a data set on the partitions all of them finished, every start included ("
                     + ", ".join(f"{ds} {k}" for ds, k in common.items())
                     + f"; {sum(run.left_out.values())} other partition results left out).")
    return lines


def _summary(run):
    """The run's summary table (as in ``bsvm-scale report``)."""
    rows = summary_rows(run.rec)
    if not rows:
        return ["(no finished results)", ""]
    return ["Summary (mean +- sd over partitions; time = total task seconds, see TIMES at the top):", "",
            format_table(rows, markdown=True), ""]


def _paired_tests(run, metric, against, notes=None, label=""):
    """Paired t-tests of ``against`` models vs every other model of each data set.

    Where a model of ``against`` errs significantly more (p < 0.05, at least five
    partitions), a plain statement is added to ``notes``.
    """
    rows = []
    for ds in run.datasets():
        models = run.models(ds)
        for a in [m for m in models if m in against]:
            ea = run.metric(ds, a, metric)
            for b in models:
                if b == a or b in against[:against.index(a) + 1]:
                    continue
                eb = run.metric(ds, b, metric)
                k = min(ea.size, eb.size)
                if k < 2:
                    continue
                t, dof, p = paired_t_test(ea[:k], eb[:k])
                rows.append([ds, f"{a} - {b}", k, float(np.mean(ea[:k] - eb[:k])), t, p])
                if notes is not None and t > 0 and p < 0.05 and k >= 5:
                    notes.append(f"{label} {ds}: {a} has a significantly higher test {metric} "
                                 f"than {b} (paired t = {t:.2f}, p = {p:.3g}, {k} partitions).")
    if not rows:
        return []
    return [f"Paired t-tests on the test {metric} (t > 0: the first model errs more):", ""] + \
        _table(["data set", "difference", "partitions", "mean diff", "t", "p"], rows) + [""]


# -------------------------------------------------------------- protocols
# Every section_<key>(run, out, notes) returns the markdown lines of its protocol,
# writes its figures into ``out`` and appends plain statements to ``notes`` where
# a result differs from what the method promises.
def section_r1(run, out, notes):
    """Per-size table of the BSVR fits beside the true noise, and the beta sweep."""
    lines = []
    sizes = _groups_by_size(run)
    true = {}
    for n, ds in sizes.items():
        d = run.data(ds)
        tr, te = run.partition(ds)
        noise = d.y - d.extra["f"] if "f" in d.extra else np.full(d.y.shape, np.nan)
        true[n] = (float(np.var(noise[tr])), float(np.mean(noise[te] ** 2)),
                   float(np.mean(np.abs(noise[te]))))
    for model in sorted({m for ds in sizes.values() for m in run.models(ds) if m.startswith("BSVR")}):
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
        if rows:
            lines += [f"**{model}** (best of the starts; time = all starts, seconds; MAP / "
                      "evidence = the chosen start's full-data MAP solves and evidence + "
                      "gradient evaluations):", ""]
            lines += _table(["n", "true noise var (train)", "C", "epsilon", "noise var (2.33)",
                             "kappa", "-ln evidence", "off-bound SVs", "on-bound SVs", "time [s]",
                             "test AAE", "test ASE", "true test AAE", "true test ASE",
                             "MAP [s]", "evidence [s]"], rows) + [""]
            gap = [r[11] - r[13] for r in rows]
            lines += [f"Test ASE minus the true test noise goes from {gap[0]:.3g} (n = {rows[0][0]}) "
                      f"to {gap[-1]:.3g} (n = {rows[-1][0]}).", ""] if len(rows) > 1 else \
                [f"Test ASE minus the true test noise: {gap[0]:.3g} (n = {rows[0][0]}).", ""]
            last = rows[-1]
            if last[4] is not None and abs(last[4] / last[1] - 1.0) > 0.25:
                notes.append(f"R1 {model}, n = {last[0]}: the noise variance implied by (2.33), "
                             f"{last[4]:.3g}, is {last[4] / last[1]:.2f} x the true noise variance "
                             f"of the training set ({last[1]:.3g}).")
    lines += _r1_sweep(run, sizes, true, out)
    return lines


def _r1_sweep(run, sizes, true, out):
    """Table and four-panel plot of the beta sweep (the size with most beta values)."""
    if not sizes:
        return []
    # the sweep's training set: the size with the most beta values
    big = max(sizes, key=lambda n: (sum(bool(re.search(r"beta[0-9.e+-]+$", m))
                                        for m in run.models(sizes[n])), n))
    ds = sizes[big]
    rows = []
    for model in run.models(ds):
        e = run.entries(ds, model)
        m = re.search(r"beta([0-9.e+-]+)$", model)
        if not e or not m:
            continue
        e = e[0]
        ne = max(_n_evals(e["task"]), 1)
        rows.append([float(m.group(1)), int(e["n_sv"]), int(e["n_off_bound"]),
                     e["task"].get("fit_time", np.nan) / ne, -e["log_evidence"],
                     e["metrics"]["ase"] - true[big][1], *_per_evaluation(e["task"]), model])
    if len(rows) < 2:
        return []
    rows.sort()
    a = np.array([r[:6] for r in rows], dtype=float)
    plt = _plt()
    fig, ax = plt.subplots(1, 4, figsize=(16, 3.4))
    ax[0].loglog(a[:, 0], a[:, 1], "o-", label="SVs")
    ax[0].loglog(a[:, 0], np.maximum(a[:, 2], 0.5), "s--", label="off-bound SVs")
    ax[0].legend(fontsize=7)
    ax[1].loglog(a[:, 0], a[:, 3], "o-")
    ax[1].set_ylabel("s per evidence evaluation")
    ax[2].semilogx(a[:, 0], a[:, 4], "o-")
    ax[2].set_ylabel("-ln evidence")
    ax[3].semilogx(a[:, 0], a[:, 5], "o-")
    ax[3].set_ylabel("test ASE - true test noise")
    for x in ax:
        x.set_xlabel("beta")
    fig.suptitle(f"R1 beta sweep, n = {big}")
    fig.tight_layout()
    fig.savefig(out / f"{run.name}_r1_beta_sweep.png", dpi=80)
    plt.close(fig)
    return [f"beta sweep on the {big}-case training set (evidence maximisation at each beta):", ""] + \
        _table(["beta", "SVs", "off-bound SVs", "s per evaluation", "-ln evidence",
                "test ASE - true noise", "MAP solve [s]", "evidence + gradient [s]", "model"],
               rows) + \
        ["", "s per evaluation: the fit time divided by the number of evidence evaluations "
         "(subsample phase and every start included); MAP solve and evidence + gradient: the "
         "median of the chosen start's full-data evaluations, timed separately (- where the run "
         "predates that timing).", "",
         f"![R1 beta sweep]({run.name}_r1_beta_sweep.png)", ""]


def _peer_ratios(run, sizes, ours, peers, metric):
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
            rows.append([n, f"{ours} vs {p}", t0, t, t / t0, m0, np.mean(run.metric(ds, p, metric))])
    if not rows:
        return []
    return [f"Model selection side by side (same data, same run): task seconds per repetition "
            f"and test {metric}; ratio = peer time / {ours} time:", ""] + \
        _table(["n", "pair", f"{ours} [s]", "peer [s]", "ratio", f"{ours} {metric}",
                f"peer {metric}"], rows) + [""]


def _peak_memory_by_size(run, sizes, models):
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
    return mem, lines + _table(["n"] + models, rows) + [""]


def section_r2(run, out, notes):
    """Mean/sd of test AAE and ASE per size and method, task times, fitted exponents."""
    sizes = _groups_by_size(run)
    models = sorted({m for ds in sizes.values() for m in run.models(ds)})
    rows, times = [], {m: ([], []) for m in models}
    for n, ds in sizes.items():
        for m in models:
            e = run.entries(ds, m)
            if not e:
                continue
            aae, ase = run.metric(ds, m, "aae"), run.metric(ds, m, "ase")
            t = float(sum(x["time"] for x in e))
            rows.append([n, m, len(e), f"{np.mean(aae):.4g} +- {np.std(aae, ddof=1) if aae.size > 1 else 0:.2g}",
                         f"{np.mean(ase):.4g} +- {np.std(ase, ddof=1) if ase.size > 1 else 0:.2g}", t])
            times[m][0].append(n)
            times[m][1].append(t / len(e))
    lines = ["Test AAE / ASE (mean +- sd over repetitions) and total task time per method and size:", ""]
    lines += _table(["n", "method", "repetitions", "test AAE", "test ASE", "total time [s]"], rows) + [""]
    exps = [[m, fit_exponent(*times[m]), fit_exponent(*[np.array(v)[np.array(times[m][0]) >= 100]
                                                          for v in times[m]])] for m in models]
    lines += ["Fitted exponent a of time ~ n^a (time per repetition):", ""]
    lines += _table(["method", "a (all sizes)", "a (n >= 100)"], exps) + [""]
    mem, mem_lines = _peak_memory_by_size(run, sizes, models)
    lines += mem_lines
    plt = _plt()
    fig, ax = plt.subplots(1, 3, figsize=(15, 3.8))
    for m in models:
        ns = np.array(times[m][0])
        ase = [np.mean(run.metric(sizes[n], m, "ase")) for n in ns]
        ax[0].loglog(ns, ase, "o-", label=m)
        ax[1].loglog(ns, times[m][1], "o-", label=m)
        ax[2].semilogx(list(sizes), mem[m], "o-", label=m)
    ax[0].set_ylabel("test ASE (noise-free targets)")
    ax[1].set_ylabel("task seconds per repetition")
    ax[2].set_ylabel("peak RSS per task [MiB]")
    for x in ax:
        x.set_xlabel("training cases n")
        x.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / f"{run.name}_r2_scaling.png", dpi=80)
    plt.close(fig)
    lines += [f"![R2 scaling]({run.name}_r2_scaling.png)", ""]
    lines += _peer_ratios(run, sizes, "BSVR",
                          ["LIBSVM-SVR-CV", "SVR-CV", "sklearn-GPR", "GPR", "RVR"], "ase")
    big = max(sizes) if sizes else None
    if big and "BSVR" in models and "GPR" in models:
        b, g = np.mean(run.metric(sizes[big], "BSVR", "ase")), np.mean(run.metric(sizes[big], "GPR", "ase"))
        notes.append(f"R2 at n={big}: BSVR test ASE {b:.3g} vs GPR {g:.3g} "
                     f"({'BSVR worse' if b > g else 'BSVR not worse'}); Gaussian noise favours GPR, "
                     "whose likelihood is the true noise model.")
    return lines


def _ard_table(run, ds, model):
    """ARD values (partitions x inputs) and the entries of ``model`` on ``ds``."""
    e = run.entries(ds, model)
    if not e:
        return [], None
    kap = np.array([np.atleast_1d(np.asarray(x["hyperparameters"].get("kappa", np.nan), float))
                    for x in e])
    return kap, e


def _ard_verdict(k):
    """Plain statement on the ARD ranking of R3's six inputs (x1, x2 > x3, x4 > x5, x6)."""
    relevant = min(k[0], k[1]) > max(k[2:])
    copies = min(k[2], k[3]) > max(k[4], k[5])
    tied = np.isclose(min(k[2], k[3]), max(k[4], k[5]), rtol=1e-3)
    order = ", ".join(f"x{i + 1}" for i in np.argsort(-k))
    return (f"ARD order {order}: x1, x2 ranked first -- {'yes' if relevant else 'NO'}; noisy "
            f"copies x3, x4 above the pure-noise x5, x6 -- "
            f"{'tied (all switched off)' if tied else 'yes' if copies else 'NO'}.")


def _worse_than(run, model, ref, notes, label, factor=2.0):
    """A note for every data set where ``model``'s test ASE exceeds ``factor`` x ``ref``'s."""
    for ds in run.datasets():
        if model == ref or ref not in run.models(ds) or model not in run.models(ds):
            continue
        a, g = np.mean(run.metric(ds, model, "ase")), np.mean(run.metric(ds, ref, "ase"))
        if a > factor * g:
            notes.append(f"{label} {model} on {ds}: test ASE {a:.3g} is {a / g:.1f} x that of "
                         f"{ref} ({g:.3g}).")


def section_r3(run, out, notes):
    """Every hyperparameter (each kappa_l) per output and variant, ARD verdicts."""
    lines, verdicts = [], []
    for model in sorted({m for ds in run.datasets() for m in run.models(ds)}):
        rows = []
        for ds in run.datasets():
            kap, e = _ard_table(run, ds, model)
            if e is None:
                continue
            e0 = e[0]
            h = e0["hyperparameters"]
            noff = int(e0.get("n_off_bound", -1))
            rows.append([ds, h.get("C"), h.get("epsilon"), h.get("noise_variance", h.get("sigma2")),
                         kap[0], h.get("kappa_b"), noff, int(e0["n_sv"]) - noff if noff >= 0 else -1,
                         e0["time"], e0["metrics"]["aae"], e0["metrics"]["ase"]])
            if kap.shape[1] == 6:
                verdicts.append(f"- {model} on {ds}: {_ard_verdict(kap[0])}")
                if "NO" in verdicts[-1] and not e0["kind"].startswith("sk_"):
                    notes.append(f"R3 {model} on {ds}: {_ard_verdict(kap[0])}")
        if model.startswith("BSVR"):
            _worse_than(run, model, "GPR-ARD", notes, "R3")
        if rows:
            lines += [f"**{model}**:", ""]
            lines += _table(["data set", "C", "epsilon", "noise var", "kappa_l", "kappa_b",
                             "off-bound SVs", "on-bound SVs", "time [s]", "test AAE", "test ASE"],
                            rows) + [""]
    return lines + (["ARD ranking of the six-input variant (promised: x1, x2, then the noisy "
                     "copies x3, x4, then the pure-noise x5, x6):", ""] + verdicts + [""]
                    if verdicts else [])


def section_r4(run, out, notes):
    """Test predictions against the series and errors inside the +-2 sd band."""
    ds = run.datasets()[0]
    tr, te = run.partition(ds)
    d = run.data(ds, extra=False)
    models = [m for m in run.models(ds) if run.entries(ds, m)
              and run.entries(ds, m)[0]["task"].get("predictions", {}).get("std") is not None]
    if not models:
        return []
    plt = _plt()
    fig, ax = plt.subplots(2, len(models), figsize=(5.5 * len(models), 6), squeeze=False)
    rows = []
    for j, m in enumerate(models):
        p = run.entries(ds, m)[0]["task"]["predictions"]
        mu, sd = np.asarray(p["mean"]), np.asarray(p["std"])
        err = mu - d.y[te]
        inside = float(np.mean(np.abs(err) <= 2 * sd))
        rows.append([m, float(np.mean(err ** 2)), float(np.mean(np.abs(err))), float(np.mean(sd)),
                     f"{inside:.0%}"])
        if m.startswith("BSVR"):
            _worse_than(run, m, "GPR", notes, "R4")
        t = np.arange(te.size)
        ax[0, j].plot(t, d.y[te], "k-", lw=1, label="series")
        ax[0, j].plot(t, mu, "r--", lw=1, label="prediction")
        ax[0, j].set_title(f"{m}: test predictions")
        ax[0, j].legend(fontsize=7)
        ax[1, j].plot(t, err, "r-", lw=1, label="prediction error")
        ax[1, j].fill_between(t, -2 * sd, 2 * sd, color="b", alpha=0.2,
                              label="+-2 sqrt(sigma_t^2 + sigma_n^2)")
        ax[1, j].set_xlabel("test step")
        ax[1, j].legend(fontsize=7)
        rmse = float(np.sqrt(np.mean(err ** 2)))
        if m.startswith("BSVR") and np.mean(sd) > 3.0 * rmse:
            notes.append(f"R4 {m}: the error bars are conservative -- mean predictive sd "
                         f"{np.mean(sd):.3g} against a test RMSE of {rmse:.3g} ({inside:.0%} "
                         "of the errors inside +-2 sd).")
        if inside < 0.9:
            notes.append(f"R4 {m}: only {inside:.0%} of the test errors lie inside the +-2 sd band "
                         "(about 95% expected for calibrated error bars).")
    fig.tight_layout()
    fig.savefig(out / f"{run.name}_r4_timeseries.png", dpi=80)
    plt.close(fig)
    hyp = [[m, *(run.entries(ds, m)[0]["hyperparameters"].get(k) for k in
                 ("C", "epsilon", "kappa", "kappa_b", "noise_variance", "sigma2"))] for m in models]
    return _table(["model", "test ASE", "test AAE", "mean predictive sd", "inside +-2 sd"], rows) + \
        [""] + _table(["model", "C", "epsilon", "kappa", "kappa_b", "noise var (BSVR)",
                       "noise var (GPR)"], hyp) + \
        ["", f"![R4 predictions and error bars]({run.name}_r4_timeseries.png)", ""]


#: (isotropic, ARD) model pairs of R5: the ARD model contains the isotropic one
R5_NESTED = (("BSVR", "BSVR-ARD"), ("BSVR-sd", "BSVR-ARD-sd"))


def _nested_evidence(run, pairs, notes, label):
    """ln evidence of each isotropic/ARD pair per split: the ARD model contains
    the isotropic one (all kappa_l equal), so its maximum evidence can only be
    higher; splits where it ends lower show optima the optimiser missed."""
    rows = []
    for ds in run.datasets():
        for iso, ard in pairs:
            if iso not in run.models(ds) or ard not in run.models(ds):
                continue
            # Run keeps the partitions every model finished, so these are aligned
            a, b = ([e["log_evidence"] for e in run.entries(ds, m)] for m in (iso, ard))
            a, b = np.array(a, float), np.array(b, float)
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
        _table(["data set", "isotropic", "ARD", "splits", "ln ev isotropic", "ln ev ARD",
                "ARD lower"], rows) + [""]


def section_r5(run, out, notes):
    """Paired t-tests against BSVR, the isotropic/ARD evidence comparison and
    mean/sd of each ARD value over the splits."""
    lines = _paired_tests(run, "ase", [m for pair in R5_NESTED for m in pair], notes, "R5")
    lines += _nested_evidence(run, R5_NESTED, notes, "R5")
    for ds in run.datasets():
        try:
            names = run.data(ds, extra=False).feature_names
        except (OSError, ValueError):
            names = None
        for m in run.models(ds):
            kap, e = _ard_table(run, ds, m)
            if e is None or kap.ndim != 2 or kap.shape[1] < 2:
                continue
            names = names if names and len(names) == kap.shape[1] else \
                [f"x{i + 1}" for i in range(kap.shape[1])]
            rows = [[names[i], float(np.mean(kap[:, i])), float(np.std(kap[:, i], ddof=1))
                     if kap.shape[0] > 1 else 0.0] for i in np.argsort(-np.mean(kap, axis=0))]
            lines += [f"ARD values kappa_l of {m} on {ds} over {kap.shape[0]} splits (largest first):", ""]
            lines += _table(["input", "mean", "sd"], rows) + [""]
    return lines


def section_c1(run, out, notes):
    """Hyperparameters, SVs and evidence per case; discriminant and P(y=+1|x) plot."""
    rows = []
    for ds in run.datasets():
        for m in run.models(ds):
            e = run.entries(ds, m)
            if not e:
                continue
            e = e[0]
            h = e["hyperparameters"]
            h = h.get("class0", h) if isinstance(h, dict) else {}
            rows.append([ds, m, h.get("kappa0"), h.get("C"), h.get("kappa"), h.get("kappa_b"),
                         int(e["n_sv"]), -e["log_evidence"], e["metrics"]["error_rate"]])
    lines = _table(["case", "model", "kappa0", "C", "kappa", "kappa_b", "SVs", "-ln evidence",
                    "test error"], rows) + [""]
    _nll_notes(run, "C1", notes)
    lines += _c1_plot(run, out)
    return lines


#: BTSVC's mean test NLL is called worse than GPC's beyond this relative margin
NLL_NOTE_REL = 0.01


def _nll_notes(run, label, notes, datasets=None):
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


def _c1_plot(run, out):
    """Discriminant +- error bar (BTSVC) and P(y=+1|x) of the reloadable models."""
    from ..datasets.synthetic import gauss1d_posterior

    plt = _plt()
    cases = run.datasets()
    fig, ax = plt.subplots(2, len(cases), figsize=(6 * len(cases), 6.5), squeeze=False)
    x = np.linspace(-6, 6, 400)[:, None]
    for j, ds in enumerate(cases):
        d = run.data(ds, extra=False)
        tr, _ = run.partition(ds)
        ax[1, j].plot(x[:, 0], gauss1d_posterior(x[:, 0]), "k:", label="Bayes (true densities)")
        for m in run.models(ds):
            model = run.model(ds, m)
            if model is None or not hasattr(model, "predict_proba"):
                continue
            if hasattr(model, "decision_function") and run.entries(ds, m)[0]["kind"] == "btsvc":
                mu, sd = model.decision_function(x, return_std=True)
                ax[0, j].plot(x[:, 0], mu, "b-", label=f"{m} mean")
                ax[0, j].fill_between(x[:, 0], mu - sd, mu + sd, color="b", alpha=0.2,
                                      label="+- error bar")
            col = list(model.classes_).index(1) if 1 in list(model.classes_) else -1
            ax[1, j].plot(x[:, 0], model.predict_proba(x)[:, col], label=m)
        ax[0, j].plot(d.X[tr, 0], d.y[tr], "k|", ms=8)
        ax[0, j].set_title(f"{ds}: discriminant")
        ax[1, j].set_title(f"{ds}: P(y = +1 | x)")
        for a in ax[:, j]:
            a.legend(fontsize=7)
            a.set_xlabel("x")
    fig.tight_layout()
    fig.savefig(out / f"{run.name}_c1_discriminant.png", dpi=80)
    plt.close(fig)
    return [f"![C1 discriminant and class probability]({run.name}_c1_discriminant.png)", ""]


def _bayes_rows(run, ds):
    """Test NLL / error of the optimal Bayes classifier and of Gaussians fitted to each training part."""
    from ..datasets.synthetic import gauss2d_posterior

    d = run.data(ds, extra=False)
    out = {"Bayes (true densities)": [], "Bayes (estimated Gaussians)": []}
    for k in range(len(run.rec["datasets"][ds]["partitions"])):
        tr, te = run.partition(ds, k)
        for name, p1 in (("Bayes (true densities)", gauss2d_posterior(d.X[te])),
                         ("Bayes (estimated Gaussians)", _fitted_gauss_posterior(d.X[tr], d.y[tr], d.X[te]))):
            yt = d.y[te]
            p = np.where(yt > 0, p1, 1.0 - p1)
            out[name].append((float(np.mean((p1 > 0.5) != (yt > 0))),
                              float(-np.sum(np.log(np.maximum(p, 1e-300))))))
    return {k: np.array(v) for k, v in out.items()}


def _fitted_gauss_posterior(X, y, Xt):
    """P(y=+1|x) of the Bayes classifier with Gaussians fitted to ``(X, y)``."""
    from scipy.stats import multivariate_normal

    logp = []
    for c in (1, -1):
        Xc = X[y == c]
        if Xc.shape[0] < 2:
            return np.full(Xt.shape[0], 0.5)
        cov = np.cov(Xc.T) + 1e-6 * np.eye(X.shape[1])
        logp.append(multivariate_normal(Xc.mean(axis=0), cov, allow_singular=True).logpdf(Xt)
                    + np.log(Xc.shape[0] / X.shape[0]))
    return 1.0 / (1.0 + np.exp(np.clip(logp[1] - logp[0], -700, 700)))


def section_c2(run, out, notes):
    """Bayes classifiers and models at the largest size, scaling table, contours."""
    sizes = _groups_by_size(run)
    if not sizes:
        return []
    lines = []
    big = max(sizes)
    ds = sizes[big]
    rows = [[name, v.shape[0], float(np.mean(v[:, 1])), float(np.mean(v[:, 0]))]
            for name, v in _bayes_rows(run, ds).items()]
    for m in run.models(ds):
        nll = run.metric(ds, m, "nll")
        rows.append([m, len(run.entries(ds, m)), float(np.mean(nll)) if np.all(np.isfinite(nll))
                     else float("nan"),
                     float(np.mean(run.metric(ds, m, "error_rate")))])
    lines += [f"Test NLL and error rate at n = {big} (mean over repetitions, "
              f"{len(run.partition(ds)[1])} test cases):", ""]
    lines += _table(["classifier", "repetitions", "test NLL", "test error rate"], rows) + [""]
    _nll_notes(run, "C2", notes, [ds])
    bayes = rows[0][3]
    for r in rows[2:]:
        if r[3] > bayes + 0.01:
            notes.append(f"C2 n={big}: {r[0]} test error {r[3]:.4f} is more than one point above "
                         f"the Bayes error {bayes:.4f}.")
    srows = []
    for n, dsn in sizes.items():
        for m in run.models(dsn):
            e = run.entries(dsn, m)
            ne = [max(_n_evals(x["task"]), 1) for x in e]
            per = [x["task"].get("fit_time", np.nan) / k for x, k in zip(e, ne)]
            cv = e[0]["task"].get("cv") if e else None
            if cv:
                per = [x["task"].get("fit_time", np.nan) / (cv["n_grid_points"] + 1) for x in e]
            split = np.array([_per_evaluation(x["task"]) for x in e]).reshape(-1, 2)
            split = [_finite_median(c) for c in split.T]
            srows.append([n, m, len(e), float(np.mean(run.metric(dsn, m, "error_rate"))),
                          float(np.mean(per)), "per SVC fit (CV grid)" if cv else
                          "per evidence evaluation" if _n_evals(e[0]["task"]) else "per fit",
                          *split])
    lines += ["Scaling (error rate on the common test set; fit seconds per evidence evaluation for "
              "BTSVC/GPC, i.e. the fit time over the number of evaluations, per SVC fit for the "
              "CV-tuned SVCs; MAP / evidence: BTSVC's full-data MAP solve and evidence + gradient "
              "evaluation timed separately, median):", ""]
    lines += _table(["n", "model", "repetitions", "test error", "time [s]", "time unit",
                     "MAP [s]", "evidence [s]"], srows) + [""]
    lines += _peer_ratios(run, sizes, "BTSVC", ["LIBSVM-SVC-sigmoid", "LIBSVM-SVC-CV", "SVC-CV",
                                                 "sklearn-GPC", "GPC"], "error_rate")
    lines += _c2_contours(run, ds, out)
    return lines


def _c2_contours(run, ds, out):
    """Contours of P(y=+1|x): Bayes, BTSVC and GPC of repetition 0."""
    from ..datasets.synthetic import gauss2d_posterior

    g = np.linspace(-7, 7, 121)
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    panels = [("Bayes", gauss2d_posterior(G))]
    for m in run.models(ds):
        model = run.model(ds, m)
        if model is not None and run.entries(ds, m)[0]["kind"] in ("btsvc", "gpc"):
            col = list(model.classes_).index(1)
            panels.append((m, model.predict_proba(G)[:, col]))
    if len(panels) == 1:
        return [f"(No contour plot: the models of {ds} were trained on more than "
                f"{MAX_MODEL_TRAIN:,} cases, and the page loads and exports only models "
                "trained on fewer.)", ""]
    plt = _plt()
    fig, ax = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4), squeeze=False)
    for a, (name, p) in zip(ax[0], panels):
        cs = a.contour(g, g, p.reshape(g.size, g.size), levels=[0.1, 0.25, 0.5, 0.75, 0.9])
        a.clabel(cs, fontsize=7)
        a.set_title(f"{name}: P(y=+1|x)")
    fig.tight_layout()
    fig.savefig(out / f"{run.name}_c2_contours.png", dpi=80)
    plt.close(fig)
    return [f"![C2 contours of P(y=+1|x), {ds}, repetition 0]({run.name}_c2_contours.png)", ""]


def section_c3(run, out, notes):
    """Error rate, SVs and time per partition (protocols A and B), paired t-tests."""
    rows = []
    for ds in run.datasets():
        for m in run.models(ds):
            e = run.entries(ds, m)
            er = run.metric(ds, m, "error_rate")
            rows.append([ds, m, len(e), f"{np.mean(er):.4f} +- {np.std(er, ddof=1) if er.size > 1 else 0:.3f}",
                         float(np.mean([x["n_sv"] for x in e])),
                         float(np.mean([x["time"] for x in e]))])
    lines = ["Protocol B: every model infers its hyperparameters on every partition; protocol A: "
             "BTSVC-A uses the average of BTSVC's hyperparameters on the first five partitions "
             "(fewer in a reduced run) on all of them.", ""]
    lines += _table(["data set", "model", "partitions", "test error", "SVs", "s per partition"], rows)
    lines += [""] + _paired_tests(run, "error_rate", ["BTSVC", "BTSVC-A"], notes, "C3")
    _nll_notes(run, "C3", notes)
    for ds in run.datasets():
        lines += _c3_evidence_contours(run, ds, out, notes)
    return lines


#: C3 contour grid: (kappa0, kappa) around BTSVC's optimum on the first
#: partition, +-2 decades in kappa0 and +-1.5 in kappa, kappa_b fixed
C3_GRID = (13, 2.0, 1.5)
#: largest training set for which the grid (169 MAP solves + evidences) is run
C3_GRID_MAX_N = 2000


def c3_grid(X, y, Xt, yt, hyper, grid=C3_GRID):
    """-ln evidence (5.35) and test error of BTSVC over a (kappa0, kappa) grid.

    ``hyper``: the fitted ``kappa0``, ``kappa`` (float) and ``kappa_b``; the
    grid is log-spaced around them with ``kappa_b`` fixed (docs/protocols.md,
    C3). Returns ``(log10_kappa0, log10_kappa, neg_log_evidence, error)``,
    the last two of shape ``(len(log10_kappa), len(log10_kappa0))``.
    """
    from ..models.btsvc import BayesianSVC

    k, w0, w1 = grid
    a = np.log10(hyper["kappa0"]) + np.linspace(-w0, w0, k)
    b = np.log10(float(np.mean(hyper["kappa"]))) + np.linspace(-w1, w1, k)
    ev = np.empty((k, k))
    err = np.empty((k, k))
    for j, lk in enumerate(b):
        for i, l0 in enumerate(a):
            m = BayesianSVC(optimize=False, kappa0=10.0 ** l0, kappa=10.0 ** lk,
                            kappa_b=hyper["kappa_b"]).fit(X, y)
            ev[j, i] = -m.log_evidence_
            err[j, i] = np.mean(m.predict(Xt) != yt)
    return a, b, ev, err


def _c3_evidence_contours(run, ds, out, notes):
    """Contours of -ln evidence and test error over (kappa0, kappa), first partition."""
    entries = run.entries(ds, "BTSVC") if "BTSVC" in run.models(ds) else []
    model = run.model(ds, "BTSVC") if entries else None
    if model is None or isinstance(model.hyperparameters_, list) or np.ndim(model.hyperparameters_["kappa"]):
        return []
    tr, te = run.partition(ds, 0)
    if tr.size > C3_GRID_MAX_N:
        return [f"Evidence / test-error contours of {ds}: not computed ({tr.size} training cases "
                f"> {C3_GRID_MAX_N}).", ""]
    d = run.data(ds, extra=False)
    a, b, ev, err = c3_grid(d.X[tr], d.y[tr], d.X[te], d.y[te], model.hyperparameters_)
    jb, ib = np.unravel_index(np.argmin(ev), ev.shape)
    je, ie = np.unravel_index(np.argmin(err), err.shape)
    plt = _plt()
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    levels = (ev.min() + np.array([0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]),
              np.unique(np.round(np.quantile(err, [0.05, 0.15, 0.3, 0.5, 0.7, 0.85, 0.95]), 4)))
    for axis, z, title, lev in ((ax[0], ev, "-ln evidence", levels[0]),
                                (ax[1], err, "test error", levels[1])):
        cs = axis.contour(a, b, z, levels=lev)
        axis.clabel(cs, fontsize=7)
        axis.plot(a[ib], b[jb], "k*", ms=10, label="evidence optimum (grid)")
        axis.plot(a[ie], b[je], "rx", ms=9, label="lowest test error (grid)")
        axis.set_xlabel("log10 kappa0")
        axis.set_ylabel("log10 kappa")
        axis.set_title(f"{ds}: {title}" + (" (levels: minimum + 0.5 ... 1000)"
                                            if title.startswith("-ln") else ""))
    ax[0].legend(fontsize=7)
    fig.tight_layout()
    name = f"{run.name}_c3_{ds}_evidence_contours.png"
    fig.savefig(out / name, dpi=80)
    plt.close(fig)
    gap = err[jb, ib] - err.min()
    if gap > 0.01:
        notes.append(f"C3 {ds}: the test error at the grid's evidence optimum ({err[jb, ib]:.4f}) "
                     f"is {gap:.4f} above the grid's lowest ({err.min():.4f}).")
    return [f"Evidence against test error on {ds}, partition 0 ({tr.size} training cases), "
            f"kappa_b = {model.hyperparameters_['kappa_b']:.3g} fixed: the grid's evidence "
            f"optimum (kappa0 = {10 ** a[ib]:.3g}, kappa = {10 ** b[jb]:.3g}) has test error "
            f"{err[jb, ib]:.4f}; the grid's lowest test error is {err.min():.4f} (kappa0 = "
            f"{10 ** a[ie]:.3g}, kappa = {10 ** b[je]:.3g}).", "",
            f"![C3 evidence and test-error contours, {ds}]({name})", ""]


def _evaluation_seconds(starts):
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


def section_c4(run, out, notes):
    """Overall error and every one-versus-rest classifier's SVs and test error."""
    lines = []
    for ds in run.datasets():
        tr, te = run.partition(ds)
        d = run.data(ds, extra=False)
        for m in run.models(ds):
            e = run.entries(ds, m)[0]
            lines.append(f"{m}: overall test error rate {e['metrics']['error_rate']:.4f} "
                         f"({te.size} test cases), {int(e['n_sv'])} SVs in all, {e['time']:.0f} s.")
            model = run.model(ds, m)
            if model is None or not hasattr(model, "estimators_"):
                continue
            mu = model.decision_function(d.X[te])
            rows = []
            for k, est in enumerate(model.estimators_):
                h = est.hyperparameters_
                err = float(np.mean((mu[:, k] > 0) != (d.y[te] == model.classes_[k])))
                rows.append([f"{model.classes_[k]} vs rest", int(len(est.support_)), h.get("kappa0"),
                             h.get("kappa"), h.get("kappa_b"), err, *_evaluation_seconds(est.starts_)])
            lines += ["", f"Binary one-versus-rest classifiers of {m} (time: "
                      f"{e['task'].get('fit_time', np.nan):.0f} s for all ten; per classifier: "
                      "the seconds of its MAP solves and of its evidence evaluations, every "
                      "start):", ""]
            lines += _table(["classifier", "SVs", "kappa0", "kappa", "kappa_b", "test error",
                             "MAP solves [s]", "evidence [s]"], rows)
            lines.append("")
        errs = {m: run.entries(ds, m)[0]["metrics"]["error_rate"] for m in run.models(ds)}
        for m, e in errs.items():
            if m.startswith("BTSVC") and min(errs.values()) < e:
                best = min(errs, key=errs.get)
                notes.append(f"C4 {ds}: {m} test error {e:.4f} is above {best}'s {errs[best]:.4f}.")
        lines.append("")
    return lines


#: labels or kinds of the models a protocol's section loads (``Run.model``, the
#: first shown partition); ``bsvm-scale export`` copies exactly these
MODELS_READ = {"c1": ("btsvc", "gpc"), "c2": ("btsvc", "gpc"), "c3": ("BTSVC",),
               "c4": ("btsvc",)}
#: protocols whose section loads models of the largest training size only (C2's contours)
MODELS_AT_LARGEST_SIZE = {"c2"}
#: models trained on more cases are not loaded (nor exported): a model fitted on the
#: dense evidence path keeps the m x m Cholesky factor of its SV block for the error bars
#: (1.4 GB at C2's 20,000 cases before the matrix-free path existed)
MAX_MODEL_TRAIN = 5000

SECTIONS = {"r1": section_r1, "r2": section_r2, "r3": section_r3, "r4": section_r4,
            "r5": section_r5, "c1": section_c1, "c2": section_c2, "c3": section_c3,
            "c4": section_c4}


# ------------------------------------------------------------- the page
def _machine_line(m):
    return (f"{m['system']}, {m['cores']} cores ({m['cpu']}), {m['memory_gib']:.1f} GiB memory")


def _machine(runs):
    """Operating system, cores, CPU model and memory of the machines the runs
    recorded (runs made before that record: this machine, said so), and the
    package versions."""
    from .tasks import machine

    recorded = {}
    for r in runs:
        m = r.rec["meta"].get("machine")
        if m:
            recorded.setdefault(_machine_line(m), []).append(r.name)
    lines = [f"- {k}: runs {', '.join(v)}" for k, v in recorded.items()]
    older = [r.name for r in runs if not r.rec["meta"].get("machine")]
    if older:
        lines.append(f"- {_machine_line(machine())} (the machine that made this page; runs "
                     f"{', '.join(older)} predate the machine record)")
    vers = runs[0].rec["meta"].get("versions", {}) if runs else {}
    hosts = sorted({r.rec["meta"].get("host", "?") for r in runs})
    commits = {}
    for r in runs:
        commits.setdefault(r.rec["meta"].get("commit") or "not recorded", []).append(r.name)
    return ["## Machine and versions", ""] + lines + \
        [f"- hosts of the runs: {', '.join(hosts)}",
         "- " + ", ".join(f"{k} {v}" for k, v in vers.items()),
         "- source commit of the runs: " + "; ".join(f"{c} ({', '.join(v)})"
                                                      for c, v in commits.items()), ""]


def _largest(runs):
    """One line on the largest training set fitted in the runs: time and memory."""
    best = None
    for run in runs:
        for t in run.rec.get("tasks", {}).values():
            key = (int(t.get("n_train", 0)), float(t.get("fit_time", 0.0)))
            if best is None or key > best[0]:
                best = (key, run.name, t)
    if best is None:
        return []
    (n, fit), name, t = best
    rss = t.get("peak_rss_mb")
    if t.get("peak_rss_scope") == "task":
        mem = f", peak RSS of the task {rss:.0f} MiB" if rss else ""
    else:
        mem = f", worker peak RSS {rss:.0f} MB (an upper bound: workers are reused)" if rss else ""
    return [f"- Largest training set fitted: n = {n} ({t['model']} on {t['dataset']}, run "
            f"{name}), {fit:.0f} s for one fit{' (one optimiser start)' if t.get('start', -1) >= 0 else ''}"
            f"{mem}.", ""]


def _bench_section(bench_files, out=None):
    """Tables (and, with ``out``, log-log figures) of the benchmark JSON rows, or
    the commands that make them."""
    lines = ["## Peer benchmarks", ""]
    if not bench_files:
        return lines + [
            "No benchmark result files were given. The side-by-side ratios against LIBSVM "
            "(scikit-learn) and scikit-learn's Gaussian processes are measured by",
            "", "    python3 benchmarks/bench_bsvr.py map --n 2000 5000 10000 20000 50000 --out runs/bench_bsvr_map.json",
            "    python3 benchmarks/bench_svm.py", "    python3 benchmarks/bench_gpr.py",
            "    python3 benchmarks/bench_btsvc.py", "",
            "and included here with `--bench FILE.json` (rows written by `--out` / `--json`). "
            "Figures measured earlier on the shared development machine are recorded in the "
            "docstrings of those scripts. The model-selection comparisons of R2 and C2 above "
            "(BSVR / BTSVC against CV-tuned LIBSVM and scikit-learn's GPs) were measured side "
            "by side in the same runs.", ""]
    exps, ratios = [], []
    for f in bench_files:
        doc = json.loads(Path(f).read_text())
        rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
        if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)):
            lines += [f"`{Path(f).name}`:", "", "```", json.dumps(doc, indent=1)[:20000], "```", ""]
            continue
        exps += [[Path(f).name] + e for e in bench_exponents(rows)]
        ratios += [[Path(f).name] + r for r in bench_ratios(rows)]
        head = list(dict.fromkeys(k for r in rows for k in r))
        lines += [f"`{Path(f).name}`:", ""]
        lines += _table(head, [[r.get(h) if not isinstance(r.get(h), (dict, list)) else
                                json.dumps(r.get(h)) for h in head] for r in rows]) + [""]
        if out is not None:
            lines += _bench_figure(Path(f).stem, rows, Path(out))
    if ratios:
        lines += ["Side-by-side ratios at a glance (every ratio column of the tables above; "
                  "its name says which way round):", ""]
        lines += _table(["file", "group", "ratio", "sizes", "min", "median", "max"], ratios) + [""]
    if exps:
        lines += ["Scaling exponents a of seconds (and peak memory) ~ n^a, least squares over "
                  "the sizes of each benchmark series above (a group = rows sharing their text "
                  "columns; 3 sizes or more):", ""]
        lines += _table(["file", "group", "column", "sizes", "a"], exps) + [""]
    return lines


def _bench_figure(name, rows, out):
    """Seconds and peak memory against n (log-log), one line per series of
    three or more sizes (the series whose exponents are tabulated)."""
    panels = {"seconds": [], "peak memory [MiB]": []}
    for group, c, n, v in _scaling_series(rows):
        if np.all(v > 0):
            label = c if group == "-" else f"{group}: {c}"
            panels["peak memory [MiB]" if "peak" in c else "seconds"].append((n, v, label))
    panels = {k: v for k, v in panels.items() if v}
    if not panels:
        return []
    plt = _plt()
    fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.2), squeeze=False)
    for ax, (ylabel, series) in zip(axes[0], panels.items()):
        for n, v, label in series:
            ax.loglog(n, v, "o-", ms=3, label=label)
        ax.set_xlabel("n (training cases)")
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=6)
    fig.suptitle(name)
    fig.tight_layout()
    fname = f"bench_{name}.png"
    fig.savefig(out / fname, dpi=80)
    plt.close(fig)
    return [f"![{name}: seconds and peak memory against n]({fname})", ""]


def _flat(row, prefix=""):
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def _groups(rows):
    """Rows with an ``n`` (flattened), grouped by their text-valued columns."""
    groups = {}
    for r in (_flat(r) for r in rows if "n" in r):
        key = tuple(sorted((k, v) for k, v in r.items() if isinstance(v, str)))
        groups.setdefault(key, []).append(r)
    return {" ".join(f"{k}={v}" for k, v in key) or "-": rs for key, rs in groups.items()}


def _series(rs, col):
    pts = [(float(r["n"]), float(r[col])) for r in rs
           if isinstance(r.get(col), (int, float)) and not isinstance(r.get(col), bool)
           and np.isfinite(r[col])]
    return tuple(map(np.array, zip(*pts))) if pts else (np.array([]), np.array([]))


def bench_ratios(rows):
    """Min / median / max of every ratio column (name holds ``ratio`` or ``_over_``) per group.

    Returns
    -------
    list of [group, column, "n_min-n_max", min, median, max]
    """
    out = []
    for group, rs in _groups(rows).items():
        for c in dict.fromkeys(k for r in rs for k in r):
            if "ratio" not in c and "_over_" not in c:
                continue
            n, v = _series(rs, c)
            if v.size:
                out.append([group, c, f"{int(n.min())}-{int(n.max())}", float(v.min()),
                            float(np.median(v)), float(v.max())])
    return out


def bench_exponents(rows):
    """Fitted ``a`` of ``value ~ n^a`` for every time (``*_s``) and peak-memory column.

    Rows (nested dicts flattened to ``outer.inner`` keys) are grouped by
    their text-valued columns (``bench``, ``model``, ``data``); a column
    with at least three distinct ``n`` in a group gets an exponent.

    Returns
    -------
    list of [group, column, "n_min-n_max", a]
    """
    return [[group, c, f"{int(n.min())}-{int(n.max())}", fit_exponent(n, v)]
            for group, c, n, v in _scaling_series(rows)]


def _scaling_series(rows):
    """``(group, column, n, values)`` of every time (``*_s``) and peak-memory
    column with at least three distinct ``n`` in its group, sorted by n."""
    out = []
    for group, rs in _groups(rows).items():
        cols = [c for c in dict.fromkeys(k for r in rs for k in r)
                if (c.endswith("_s") or "peak" in c) and "ratio" not in c]
        for c in cols:
            n, v = _series(rs, c)
            if np.unique(n).size >= 3:
                order = np.argsort(n, kind="stable")
                out.append((group, c, n[order], v[order]))
    return out


def _shown_path(path):
    """``path`` relative to the current directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def write_results(run_paths, out, bench=(), notes_extra=(), scope=()):
    """Write ``results.md`` and its PNG figures into ``out``.

    Parameters
    ----------
    run_paths : list of path
        Run directories or ``run.h5`` files.
    out : path
        Output directory (created).
    bench : list of path, optional
        JSON benchmark result files (``{"rows": [...]}`` or a list of rows).
    notes_extra : list of str, optional
        Further plain statements for the "differences" section.
    scope : list of str, optional
        Statements for the "scope" section: what was reduced or left out.

    Returns
    -------
    Path
        The written ``results.md``.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    runs = [Run(p) for p in run_paths]
    order = list(PROTOCOL_TITLES)
    runs.sort(key=lambda r: (protocol_of(r.name) is None,
                             order.index(protocol_of(r.name)) if protocol_of(r.name) else 0, r.name))
    notes = list(notes_extra)
    body = []
    for run in runs:
        key = protocol_of(run.name)
        body += [f"## {PROTOCOL_TITLES[key] if key else run.name}", ""]
        body += [f"Data: {data_used(run.rec['datasets'], key)}", ""] if key else []
        body += _run_header(run)
        if key:
            body += SECTIONS[key](run, out, notes)
        body += _summary(run)
        if run.rec["meta"].get("status") != "complete":
            notes.append(f"Run {run.name} is incomplete ({run.rec['meta'].get('n_done')}/"
                         f"{run.rec['meta'].get('n_tasks')} tasks); its tables cover the finished tasks.")
    cmd = "bsvm-scale results " + " ".join(_shown_path(r.dir) for r in runs) + \
        "".join(f" --bench {b}" for b in bench) + f" --out {out}"
    head = ["# Reproduction of the reference experiments", "",
            "Generated by `bsvm_scale.pipeline.results` from the run files; do not edit by hand.",
            "Protocols: `docs/protocols.md` (R1-R5, C1-C4); pipelines: `pipelines/repro_*.toml`.", "",
            "## Regenerate", ""]
    head += [f"    bsvm-scale run pipelines/{Path(r.rec['meta'].get('pipeline_path', r.name)).name} --workers 1"
             for r in runs]
    exported = [r for r in runs if "exported_from" in r.rec["meta"]]
    if exported:
        head += ["    bsvm-scale export " + " ".join(f"runs/{r.name}" for r in exported)
                 + f" --out {_shown_path(exported[0].dir.parent)}"]
    head += [f"    {cmd}", ""]
    if exported:
        head += ["The page is made from the committed exports of the runs (`bsvm-scale export`: "
                 "run record, generated data, the models the page loads), so the last command alone "
                 "remakes it; the run and export commands remake the runs.", ""]
    if scope or notes_extra:
        head += [f"with the {len(scope)} scope and {len(notes_extra)} difference statements "
                 "given as `--scope` / `--note` (this repository keeps the whole command in "
                 "`docs/regenerate.sh`).", ""]
    times = ["TIMES: every time on this page is the wall-clock time of the tasks on their "
             "single-threaded Dask workers (fit plus prediction; all starts of a Bayesian model, "
             "the whole grid of a CV-tuned one). On a loaded machine these exceed the CPU time.", ""]
    diff = ["## Where results differ from what the method promises", ""]
    diff += [f"- {n}" for n in notes] or ["- No automatic check failed."]
    reduced = [f"- `{r.name}` is a reduced run; the full protocol is `{r.name.split('_reduced')[0]}.toml`."
               for r in runs if "_reduced" in r.name]
    scope_lines = ["## Scope: what was reduced or left out", ""] + reduced + \
        [f"- {t}" for t in scope] + [""] if (reduced or scope) else []
    text = "\n".join(head + _machine(runs)[:-1] + _largest(runs) + times + scope_lines + diff + [""] + body + _bench_section(list(bench), out)) + "\n"
    path = out / "results.md"
    tmp = out / ".results.md.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def add_arguments(parser):
    """Arguments of the results command (shared by ``bsvm-scale results`` and ``-m``)."""
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories or run.h5 files")
    parser.add_argument("--out", default="docs", help="output directory (default: docs)")
    parser.add_argument("--bench", nargs="*", default=[], metavar="FILE",
                        help="benchmark JSON result files (rows of benchmarks/bench_*.py --out)")
    parser.add_argument("--note", action="append", default=[],
                        help="a further statement for the 'differences' section (repeatable)")
    parser.add_argument("--scope", action="append", default=[],
                        help="a statement on what was reduced or left out (repeatable)")


def cmd_results(args):
    """Write the page for parsed ``args``; returns the exit status 0."""
    path = write_results(args.runs, args.out, bench=args.bench, notes_extra=args.note,
                         scope=args.scope)
    print(f"wrote {path}")
    return 0


def main(argv=None):
    """``python3 -m bsvm_scale.pipeline.results RUN... --out DIR [--bench FILE ...]``."""
    ap = argparse.ArgumentParser(prog="python3 -m bsvm_scale.pipeline.results",
                                 description="write results.md and figures from run files")
    add_arguments(ap)
    return cmd_results(ap.parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
