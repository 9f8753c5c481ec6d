"""Reports of a run: ``report.md`` and PNG plots (matplotlib, Agg backend).

* predictions with error bars (+-2 predictive sd) of every regression model on
  1-D data sets (partition 0, best start), and ``P(y=+1|x)`` maps of the
  probabilistic classifiers on 2-D data sets;
* the evidence trajectory (-ln evidence per evaluation) of every start;
* the evidence grids of the run (``evidence_grid`` tasks): contours of -ln
  evidence and of the test error over ``(kappa0, kappa)``;
* per-partition distributions of the test metrics, with paired t-tests between
  the models of a data set (``t = mean(e) / sqrt(sum((e_i - mean(e))^2) / (n(n-1)))``,
  ``e_i`` the difference in test error on partition ``i``; docs/protocols.md,
  Conventions);
* time per model.
"""

from __future__ import annotations

import datetime as _dt
import itertools
from pathlib import Path

import numpy as np

from ..spec.kinds import ERROR_BAR_KINDS, PROBABILITY_KINDS
from .runfile import (format_table, main_metric, most_workers, read_run_file, summary_rows,
                      sv_text, wall_clock)

__all__ = ["write_report", "paired_t_test", "evidence_grid_figure", "grid_optima",
           "METRIC_WORDS"]


#: the test metrics of the run record in words (figure titles and axes)
METRIC_WORDS = {"ase": "test ASE (mean squared error)", "aae": "test AAE (mean absolute error)",
                "error_rate": "test error rate", "nll": "test NLL (sum of -ln P(true class | x))"}
#: -ln evidence contour levels of an evidence grid, above its minimum
EVIDENCE_LEVELS = (0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)


def paired_t_test(a, b):
    """Paired t statistic of ``e = a - b`` over partitions; returns ``(t, dof, p)``.

    ``t = mean(e) / sqrt(sum((e_i - mean(e))^2) / (n (n - 1)))``; ``p`` is the
    two-sided p-value with ``n - 1`` degrees of freedom. ``n < 2`` gives NaN;
    identical errors give ``t = 0`` (``p = 1``); a constant non-zero
    difference gives ``t = +-inf`` (``p = 0``).
    """
    from scipy.stats import t as student_t

    e = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = e.size
    if n < 2:
        return float("nan"), n - 1, float("nan")
    m = float(np.mean(e))
    ss = float(np.sum((e - m) ** 2))
    if ss == 0.0:
        t = 0.0 if m == 0.0 else float(np.sign(m) * np.inf)
    else:
        t = m / np.sqrt(ss / (n * (n - 1)))
    p = float(2.0 * student_t.sf(abs(t), n - 1)) if np.isfinite(t) else (1.0 if t == 0 else 0.0)
    return float(t), n - 1, p


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _load_data(path):
    from ...datasets import read_dataset

    try:
        ds = read_dataset(str(path), splits=False, extra=False)
        return ds.X, ds.y
    except (OSError, ValueError):
        return None


def _readable_ticks(ax, labels):
    """Category labels on the x axis, slanted when they would not fit side by side."""
    ax.set_xticks(range(1, len(labels) + 1), labels)
    if sum(len(s) for s in labels) > 40:
        for t in ax.get_xticklabels():
            t.set_rotation(30)
            t.set_horizontalalignment("right")


def _regression_panel(ax, model, kind, X, y, te, grid):
    """Mean and +-2 sd bands of a regression model on a 1-D data set."""
    ax.plot(X[te, 0], y[te], ".", ms=2, color="0.6", label="test data")
    sdf = None
    if kind in ERROR_BAR_KINDS:
        mu, sd = model.predict(grid, return_std=True, include_noise=True)
        _, sdf = model.predict(grid, return_std=True)
    elif kind == "svr":
        mu, sd = model.predict(grid, return_std=True)
    else:
        mu, sd = model.predict(grid), None
    ax.plot(grid[:, 0], mu, "b-", lw=1.5, label="predictive mean")
    if sd is not None:
        ax.fill_between(grid[:, 0], mu - 2 * sd, mu + 2 * sd, color="b", alpha=0.15,
                        label="+- 2 sd of the target")
    if sdf is not None:
        ax.plot(grid[:, 0], mu + 2 * sdf, "b:", lw=0.8)
        ax.plot(grid[:, 0], mu - 2 * sdf, "b:", lw=0.8, label="+- 2 sd of the function")
    ax.set_xlabel("x")
    ax.legend(fontsize=8)


def _regression_figure(ds, models, run_dir, X, y, part, plt):
    """One panel per model (partition 0): predictions with error bars."""
    from ...storage import load_model

    tr, te = np.asarray(part["train"]), np.asarray(part["test"])
    fig, axes = plt.subplots(1, len(models), figsize=(5.2 * len(models), 4.2), squeeze=False)
    grid = np.linspace(X[:, 0].min(), X[:, 0].max(), 400)[:, None]
    for ax, (mname, parts) in zip(axes[0], models.items()):
        entry = parts.get("p000")
        if entry is None or not (run_dir / entry["model_file"]).exists() or \
                entry["kind"].startswith("sk_"):  # external models are not reloadable
            ax.set_title(f"{mname}: no model file to plot", fontsize=10)
            continue
        _regression_panel(ax, load_model(run_dir / entry["model_file"]), entry["kind"], X, y,
                          te, grid)
        ax.set_title(f"{mname}: partition 0, {tr.size} training cases", fontsize=10)
    fig.suptitle(f"{ds}: predictions with error bars")
    fig.tight_layout()
    return fig


def _probability_figure(ds, prob_models, run_dir, X, y, te, plt):
    """One map of P(y = positive class | x) per probabilistic classifier (partition 0)."""
    from ...storage import load_model

    fig, axes = plt.subplots(1, len(prob_models), figsize=(5.2 * len(prob_models), 4.6),
                             squeeze=False)
    G0, G1 = np.meshgrid(np.linspace(X[:, 0].min(), X[:, 0].max(), 120),
                         np.linspace(X[:, 1].min(), X[:, 1].max(), 120))
    grid = np.column_stack([G0.ravel(), G1.ravel()])
    for ax, (mname, parts) in zip(axes[0], prob_models):
        entry = parts["p000"]
        if not (run_dir / entry["model_file"]).exists():
            continue
        model = load_model(run_dir / entry["model_file"])
        P = model.predict_proba(grid)[:, -1].reshape(G0.shape)
        cs = ax.contourf(G0, G1, P, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.8)
        ax.contour(G0, G1, P, levels=[0.5], colors="k", linewidths=1)
        pos = y[te] == model.classes_[-1]
        ax.plot(X[te][pos, 0], X[te][pos, 1], "r.", ms=2,
                label=f"test, class {model.classes_[-1]}")
        ax.plot(X[te][~pos, 0], X[te][~pos, 1], "b.", ms=2, label="test, other class")
        ax.set_title(f"{mname}: P(y = {model.classes_[-1]} | x)", fontsize=10)
        ax.legend(fontsize=7, loc="upper right")
        fig.colorbar(cs, ax=ax)
    fig.suptitle(f"{ds}: class probabilities, partition 0")
    fig.tight_layout()
    return fig


def _prediction_plots(rec, run_dir, out, plt):
    """Predictions of the 1-D regression and 2-D classification data sets."""
    files = []
    for ds, info in rec["datasets"].items():
        xy = _load_data(info["path"]) if ds in rec.get("results", {}) else None
        if xy is None:
            continue
        X, y = xy
        models, part = rec["results"][ds], info["partitions"][0]
        if info["task"] == "regression" and info["d"] == 1:
            fig = _regression_figure(ds, models, run_dir, X, y, part, plt)
            files.append(_save(fig, out / f"predictions_{ds}.png", plt,
                               f"Predictions with error bars: {ds}"))
        elif info["task"] == "classification" and info["d"] == 2:
            prob = [(m, p) for m, p in models.items()
                    if p.get("p000") and p["p000"]["kind"] in PROBABILITY_KINDS]
            if prob:
                fig = _probability_figure(ds, prob, run_dir, X, y, np.asarray(part["test"]), plt)
                files.append(_save(fig, out / f"probabilities_{ds}.png", plt,
                                   f"Class probabilities: {ds}"))
    return files


def _save(fig, path, plt, title):
    """Write ``fig`` to ``path`` and close it; returns ``(title, file name)``."""
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return title, path.name


def _trajectory_plots(rec, out, plt):
    """-ln evidence per evaluation of every start, one figure per (data set, model)."""
    files = []
    groups = {}
    for t in rec.get("tasks", {}).values():
        tr = t.get("trajectory")
        if t.get("binary") is not None:  # its start's record carries the first one's
            continue
        if isinstance(tr, dict) and tr.get("fun") is not None and np.size(tr["fun"]):
            groups.setdefault((t["dataset"], t["model"]), []).append(t)
    for (ds, model), ts in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(6.4, 4.2))
        for t in sorted(ts, key=lambda t: (t["partition"], t["start"])):
            fun = np.asarray(t["trajectory"]["fun"], dtype=float)
            lab = f"partition {t['partition']}" + (f", start {t['start']}" if t["start"] >= 0
                                                   else "")
            ax.plot(np.arange(1, fun.size + 1), np.where(np.isfinite(fun), fun, np.nan), "-",
                    lw=1, label=lab)
            if t.get("resumed_from", -1) > 0:
                ax.axvline(t["resumed_from"] + 0.5, color="0.7", ls=":", lw=0.8)
        allf = np.concatenate([np.asarray(t["trajectory"]["fun"], dtype=float) for t in ts])
        allf = allf[np.isfinite(allf)]
        if allf.size > 4:  # the first evaluations can be far off: zoom on the descent
            lo, hi = float(np.min(allf)), float(np.percentile(allf, 85))
            if hi > lo:
                ax.set_ylim(lo - 0.05 * (hi - lo), hi + 0.05 * (hi - lo))
        ax.set_xlabel("evidence evaluation")
        ax.set_ylabel("-ln evidence")
        ax.set_title(f"{ds} / {model}: evidence search of every start", fontsize=10)
        if len(ts) <= 12:
            ax.legend(fontsize=7, ncol=2)
        fig.tight_layout()
        files.append(_save(fig, out / f"evidence_{ds}__{model}.png", plt,
                           f"Evidence trajectories: {ds} / {model}"))
    return files


def _metric_arrays(rec, ds):
    models = rec["results"][ds]
    task = rec["datasets"][ds]["task"]
    names = ["ase", "aae"] if task == "regression" else ["error_rate", "nll"]
    out = {}
    for m, parts in models.items():
        keys = sorted(parts)
        out[m] = {"partitions": keys,
                  **{n: np.array([parts[k]["metrics"].get(n, np.nan) for k in keys], dtype=float)
                     for n in names}}
    return names, out


def _metric_plots(rec, out, plt):
    """Per-partition test metrics of every model of each data set (box plots)."""
    files = []
    for ds in rec.get("results", {}):
        names, arrs = _metric_arrays(rec, ds)
        fig, axes = plt.subplots(1, len(names), figsize=(5.4 * len(names), 4.4), squeeze=False)
        for ax, n in zip(axes[0], names):
            labels = list(arrs)
            data = [arrs[m][n][np.isfinite(arrs[m][n])] for m in labels]
            if any(d.size for d in data):
                ax.boxplot([d if d.size else np.array([np.nan]) for d in data])
                _readable_ticks(ax, labels)
                for i, d in enumerate(data):
                    ax.plot(np.full(d.size, i + 1.0), d, "k.", ms=3)
            ax.set_title(f"{ds}: {METRIC_WORDS.get(n, n)} per partition", fontsize=10)
        fig.tight_layout()
        files.append(_save(fig, out / f"metrics_{ds}.png", plt,
                           f"Per-partition test metrics: {ds}"))
    return files


def _time_plot(rec, out, plt):
    """Task seconds of every (data set, model), summed over partitions and starts."""
    rows = summary_rows(rec)
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(max(5.0, 1.1 * len(rows)), 4.4))
    ax.bar(range(1, len(rows) + 1), [r["time"] for r in rows], color="tab:blue")
    _readable_ticks(ax, [f"{r['dataset']} / {r['model']}" for r in rows])
    ax.set_ylabel("task seconds, all partitions and starts")
    ax.set_title("time per model")
    fig.tight_layout()
    return [_save(fig, out / "time.png", plt, "Time per model")]


def grid_optima(grid):
    """``((j, i) of the lowest -ln evidence, (j, i) of the lowest test error)`` of an
    evidence grid; ``j`` indexes ``log10_kappa`` (rows), ``i`` ``log10_kappa0``."""
    ev, err = np.asarray(grid["neg_log_evidence"]), np.asarray(grid["error_rate"])
    return (np.unravel_index(np.argmin(ev), ev.shape),
            np.unravel_index(np.argmin(err), err.shape))


def _error_levels(err):
    """Up to five test-error contour levels, 0.005 apart at least."""
    levels = []
    for q in np.round(np.quantile(err, [0.1, 0.3, 0.5, 0.7, 0.9]), 3):
        if not levels or q - levels[-1] >= 0.005:
            levels.append(float(q))
    return levels


def evidence_grid_figure(grid, title):
    """Contours of -ln evidence (left) and of the test error (right) over an
    evidence grid (:mod:`.evidence_grid`), its two optima marked; returns the figure."""
    plt = _plt()
    a, b = np.asarray(grid["log10_kappa0"]), np.asarray(grid["log10_kappa"])
    ev, err = np.asarray(grid["neg_log_evidence"]), np.asarray(grid["error_rate"])
    (jb, ib), (je, ie) = grid_optima(grid)
    fig, ax = plt.subplots(1, 2, figsize=(11, 4.6))
    panels = ((ax[0], ev, "-ln evidence (contours: minimum + 0.5 ... 1000)",
               ev.min() + np.array(EVIDENCE_LEVELS), "%.0f"),
              (ax[1], err, "test error rate", _error_levels(err), "%.3f"))
    for axis, z, name, levels, label in panels:
        if len(levels) > 1 and a.size > 1 and b.size > 1:
            cs = axis.contour(a, b, z, levels=levels, cmap="viridis")
            axis.clabel(cs, fontsize=7, fmt=label, inline_spacing=2)
        axis.plot(a[ib], b[jb], "k*", ms=11, clip_on=False, zorder=5,
                  label="highest evidence on the grid")
        axis.plot(a[ie], b[je], "rx", ms=9, mew=2, clip_on=False, zorder=5,
                  label="lowest test error on the grid")
        axis.set_xlabel("log10 kappa0")
        axis.set_ylabel("log10 kappa")
        axis.set_title(name, fontsize=10)
    ax[0].legend(fontsize=8, loc="lower left")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def _grid_plots(rec, out, plt):
    """The evidence grids of the run, one figure each."""
    files = []
    for ds, models in rec.get("grids", {}).items():
        for model, parts in models.items():
            for part, g in sorted(parts.items()):
                title = (f"{ds} / {model}, partition {int(part[1:])}: fixed (kappa0, kappa), "
                         f"kappa_b = {g['kappa_b']:.3g}")
                files.append(_save(evidence_grid_figure(g, title),
                                   out / f"evidence_grid_{ds}__{model}__{part}.png", plt,
                                   f"Evidence against test error: {ds} / {model}, {part}"))
    return files


def t_test_rows(rec):
    """Paired t-tests between every pair of models of a data set (both metrics)."""
    rows = []
    for ds in rec.get("results", {}):
        names, arrs = _metric_arrays(rec, ds)
        for a, b in itertools.combinations(sorted(arrs), 2):
            common = sorted(set(arrs[a]["partitions"]) & set(arrs[b]["partitions"]))
            ia = [arrs[a]["partitions"].index(k) for k in common]
            ib = [arrs[b]["partitions"].index(k) for k in common]
            for n in names:
                x, y = arrs[a][n][ia], arrs[b][n][ib]
                if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
                    continue
                t, dof, p = paired_t_test(x, y)
                rows.append({"dataset": ds, "a": a, "b": b, "metric": n, "n": len(common),
                             "mean_diff": float(np.mean(x - y)) if len(common) else np.nan,
                             "t": t, "dof": dof, "p": p})
    return rows


def _head_lines(rec):
    """Title, description, run facts and the summary table."""
    meta = rec["meta"]
    when = _dt.datetime.fromtimestamp(meta["finished"], _dt.timezone.utc).strftime(
        "%Y-%m-%d %H:%M UTC")
    lines = [f"# Run report: {meta['name']}", ""]
    if meta.get("description"):
        lines += [meta["description"], ""]
    return lines + [
        f"- finished {when} on {meta['host']}, status **{meta['status']}**, "
        f"{wall_clock(meta)}",
        f"- scheduler: {meta['scheduler']}, {most_workers(meta)} worker(s)",
        f"- tasks: {meta['n_tasks']} ({meta['n_done']} done, {meta['n_failed']} failed, "
        f"{meta['n_skipped']} reused from an earlier run, "
        f"{meta['n_resumed_from_checkpoint']} resumed from a checkpoint)",
        "- versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()),
        f"- pipeline: `{meta['pipeline_path']}` (digest {meta['digest']})", "",
        "## Summary", "",
        "Mean +- standard deviation over partitions of the test metrics of the chosen "
        "start (highest evidence) per partition; ASE/AAE = mean squared/absolute test "
        "error, NLL = sum over test points of -ln P(true label | x).", "",
        format_table(summary_rows(rec), markdown=True), ""]


def _t_test_lines(rec):
    """The paired t-tests section (empty without two models on a data set)."""
    tt = t_test_rows(rec)
    if not tt:
        return []
    lines = ["## Paired t-tests over partitions", "",
             "`t = mean(e) / sqrt(sum((e_i - mean(e))^2) / (n(n-1)))`, `e_i` = metric of A "
             "minus metric of B on partition i; two-sided p with n-1 degrees of freedom.", "",
             "| data set | A | B | metric | n | mean(A-B) | t | p |",
             "|---|---|---|---|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {r['a']} | {r['b']} | {r['metric']} | {r['n']} | "
              f"{r['mean_diff']:.4g} | {r['t']:.3g} | {r['p']:.3g} |" for r in tt]
    return lines + [""]


def _partition_lines(rec):
    """One table per data set: every model's chosen start on every partition."""
    lines = ["## Per partition", ""]
    for ds, models in rec.get("results", {}).items():
        task, info = rec["datasets"][ds]["task"], rec["datasets"][ds]
        lines += [f"### {ds} ({task}, n={info['n']}, d={info['d']})", "",
                  "| model | partition | best start | " + main_metric(task) +
                  " | ln evidence | SVs | hyperparameters |", "|---|---|---|---|---|---|---|"]
        for m, parts in models.items():
            for k, e in sorted(parts.items()):
                hp = ", ".join(f"{hk}={_fmt(hv)}" for hk, hv in e["hyperparameters"].items())
                lines.append(f"| {m} | {k} | {e['best_start']} | "
                             f"{e['metrics'][main_metric(task)]:.4g} | {e['log_evidence']:.4g} | "
                             f"{sv_text(e['n_sv'])} | {hp} |")
        lines.append("")
    if rec.get("failures"):
        lines += ["## Failed tasks", ""]
        lines += [f"- `{tid}` after {f['attempts']} attempt(s): {f['error']}"
                  for tid, f in rec["failures"].items()]
        lines.append("")
    return lines


def write_report(run, out=None):
    """Write ``report.md`` and the PNG plots of ``run`` (run dir or run.h5) into ``out``.

    Returns the path of ``report.md``.
    """
    run = Path(run)
    rec = read_run_file(run)
    run_dir = run if run.is_dir() else run.parent
    out = Path(out) if out is not None else run_dir / "report"
    out.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    figures = _prediction_plots(rec, run_dir, out, plt) + _trajectory_plots(rec, out, plt) + \
        _grid_plots(rec, out, plt) + _metric_plots(rec, out, plt) + _time_plot(rec, out, plt)
    lines = _head_lines(rec) + _t_test_lines(rec) + _partition_lines(rec) + ["## Figures", ""]
    for title, name in figures:
        lines += [f"### {title}", "", f"![{title}]({name})", ""]
    path = out / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _fmt(v):
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}={_fmt(x)}" for k, x in v.items()) + "}"
    a = np.asarray(v)
    if a.ndim == 0:
        try:
            return f"{float(a):.4g}"
        except (TypeError, ValueError):
            return str(v)
    return "[" + ", ".join(f"{float(x):.3g}" for x in a.ravel()) + "]"
