"""Reports of a run: ``report.md`` and PNG plots (matplotlib, Agg backend).

* predictions with error bars (+-2 predictive sd) of every regression model on
  1-D data sets (partition 0, best start), and ``P(y=+1|x)`` maps of the
  probabilistic classifiers on 2-D data sets;
* the evidence trajectory (-ln evidence per evaluation) of every start;
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

from .runfile import format_table, main_metric, read_run_file, summary_rows, sv_text

__all__ = ["write_report", "paired_t_test"]


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
    from .tasks import read_xy

    try:
        return read_xy(str(path))
    except (OSError, ValueError):
        return None


def _prediction_plots(rec, run_dir, out, plt):
    from ..storage import load_model

    files = []
    for ds, info in rec["datasets"].items():
        if ds not in rec.get("results", {}):
            continue
        xy = _load_data(info["path"])
        if xy is None:
            continue
        X, y = xy
        part = info["partitions"][0]
        tr, te = np.asarray(part["train"]), np.asarray(part["test"])
        models = rec["results"][ds]
        if info["task"] == "regression" and info["d"] == 1:
            fig, axes = plt.subplots(1, len(models), figsize=(5 * len(models), 3.8), squeeze=False)
            grid = np.linspace(X[:, 0].min(), X[:, 0].max(), 400)[:, None]
            for ax, (mname, parts) in zip(axes[0], models.items()):
                entry = parts.get("p000")
                if entry is None or not (run_dir / entry["model_file"]).exists() or \
                        entry["kind"].startswith("sk_"):  # external models are not reloadable
                    ax.set_title(f"{mname}: no model")
                    continue
                model = load_model(run_dir / entry["model_file"])
                kind = entry["kind"]
                ax.plot(X[te, 0], y[te], ".", ms=2, color="0.6", label="test data")
                if kind in ("bsvr", "gpr", "rvr"):
                    mu, sd = model.predict(grid, return_std=True, include_noise=True)
                    _, sdf = model.predict(grid, return_std=True)
                elif kind == "svr":
                    mu, sd = model.predict(grid, return_std=True)
                    sdf = None
                else:
                    mu, sd, sdf = model.predict(grid), None, None
                ax.plot(grid[:, 0], mu, "b-", lw=1.5, label="mean")
                if sd is not None:
                    ax.fill_between(grid[:, 0], mu - 2 * sd, mu + 2 * sd, color="b", alpha=0.15,
                                    label="+-2 sd (target)")
                if sdf is not None:
                    ax.plot(grid[:, 0], mu + 2 * sdf, "b:", lw=0.8)
                    ax.plot(grid[:, 0], mu - 2 * sdf, "b:", lw=0.8, label="+-2 sd (function)")
                ax.set_title(f"{ds} / {mname} (partition 0, n_train={tr.size})")
                ax.set_xlabel("x")
                ax.legend(fontsize=7)
            fig.tight_layout()
            name = f"predictions_{ds}.png"
            fig.savefig(out / name, dpi=90)
            plt.close(fig)
            files.append((f"Predictions with error bars: {ds}", name))
        elif info["task"] == "classification" and info["d"] == 2:
            prob_models = [(m, p) for m, p in models.items()
                           if p.get("p000") and p["p000"]["kind"] in ("btsvc", "gpc", "rvc")]
            if not prob_models:
                continue
            fig, axes = plt.subplots(1, len(prob_models), figsize=(5 * len(prob_models), 4.2),
                                     squeeze=False)
            g0 = np.linspace(X[:, 0].min(), X[:, 0].max(), 120)
            g1 = np.linspace(X[:, 1].min(), X[:, 1].max(), 120)
            G0, G1 = np.meshgrid(g0, g1)
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
                ax.plot(X[te][pos, 0], X[te][pos, 1], "r.", ms=2)
                ax.plot(X[te][~pos, 0], X[te][~pos, 1], "b.", ms=2)
                ax.set_title(f"{ds} / {mname}: P(y={model.classes_[-1]}|x)")
                fig.colorbar(cs, ax=ax)
            fig.tight_layout()
            name = f"probabilities_{ds}.png"
            fig.savefig(out / name, dpi=90)
            plt.close(fig)
            files.append((f"Class probabilities: {ds}", name))
    return files


def _trajectory_plots(rec, out, plt):
    files = []
    groups = {}
    for tid, t in rec.get("tasks", {}).items():
        tr = t.get("trajectory")
        if isinstance(tr, dict) and tr.get("fun") is not None and np.size(tr["fun"]):
            groups.setdefault((t["dataset"], t["model"]), []).append(t)
    for (ds, model), ts in sorted(groups.items()):
        fig, ax = plt.subplots(figsize=(6, 3.8))
        for t in sorted(ts, key=lambda t: (t["partition"], t["start"])):
            fun = np.asarray(t["trajectory"]["fun"], dtype=float)
            fun = np.where(np.isfinite(fun), fun, np.nan)
            lab = f"p{t['partition']}" + (f" s{t['start']}" if t["start"] >= 0 else "")
            ax.plot(np.arange(1, fun.size + 1), fun, "-", lw=1, label=lab)
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
        ax.set_title(f"{ds} / {model}: evidence trajectories")
        if len(ts) <= 12:
            ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        name = f"evidence_{ds}__{model}.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        files.append((f"Evidence trajectories: {ds} / {model}", name))
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
    files = []
    for ds in rec.get("results", {}):
        names, arrs = _metric_arrays(rec, ds)
        fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.6), squeeze=False)
        for ax, n in zip(axes[0], names):
            labels = list(arrs)
            data = [arrs[m][n][np.isfinite(arrs[m][n])] for m in labels]
            if any(d.size for d in data):
                ax.boxplot([d if d.size else np.array([np.nan]) for d in data])
                ax.set_xticks(range(1, len(labels) + 1), labels)
                for i, d in enumerate(data):
                    ax.plot(np.full(d.size, i + 1.0), d, "k.", ms=3)
            ax.set_title(f"{ds}: {n} per partition")
        fig.tight_layout()
        name = f"metrics_{ds}.png"
        fig.savefig(out / name, dpi=90)
        plt.close(fig)
        files.append((f"Per-partition test metrics: {ds}", name))
    return files


def _time_plot(rec, out, plt):
    rows = summary_rows(rec)
    if not rows:
        return []
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(rows)), 3.6))
    labels = [f"{r['dataset']}\n{r['model']}" for r in rows]
    ax.bar(range(len(rows)), [r["time"] for r in rows], color="tab:blue")
    ax.set_xticks(range(len(rows)), labels, fontsize=8)
    ax.set_ylabel("task time summed over partitions and starts [s]")
    ax.set_title("time per model")
    fig.tight_layout()
    fig.savefig(out / "time.png", dpi=90)
    plt.close(fig)
    return [("Time per model", "time.png")]


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
    figures = []
    figures += _prediction_plots(rec, run_dir, out, plt)
    figures += _trajectory_plots(rec, out, plt)
    figures += _metric_plots(rec, out, plt)
    figures += _time_plot(rec, out, plt)

    meta = rec["meta"]
    when = _dt.datetime.fromtimestamp(meta["finished"], _dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [f"# Run report: {meta['name']}", ""]
    if meta.get("description"):
        lines += [meta["description"], ""]
    lines += [f"- finished {when} on {meta['host']}, status **{meta['status']}**, "
              f"{meta['elapsed']:.1f} s wall clock",
              f"- scheduler: {meta['scheduler']}, {meta['n_workers']} worker(s)",
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
    tt = t_test_rows(rec)
    if tt:
        lines += ["## Paired t-tests over partitions", "",
                  "`t = mean(e) / sqrt(sum((e_i - mean(e))^2) / (n(n-1)))`, `e_i` = metric of A "
                  "minus metric of B on partition i; two-sided p with n-1 degrees of freedom.", "",
                  "| data set | A | B | metric | n | mean(A-B) | t | p |", "|---|---|---|---|---|---|---|---|"]
        for r in tt:
            lines.append(f"| {r['dataset']} | {r['a']} | {r['b']} | {r['metric']} | {r['n']} | "
                         f"{r['mean_diff']:.4g} | {r['t']:.3g} | {r['p']:.3g} |")
        lines.append("")
    lines += ["## Per partition", ""]
    for ds, models in rec.get("results", {}).items():
        task = rec["datasets"][ds]["task"]
        lines += [f"### {ds} ({task}, n={rec['datasets'][ds]['n']}, d={rec['datasets'][ds]['d']})",
                  "", "| model | partition | best start | " + main_metric(task) +
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
        for tid, f in rec["failures"].items():
            lines.append(f"- `{tid}` after {f['attempts']} attempt(s): {f['error']}")
        lines.append("")
    lines += ["## Figures", ""]
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
