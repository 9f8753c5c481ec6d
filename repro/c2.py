"""C2 (and C2-large): two-dimensional simulated classification -- the Bayes
classifiers beside the models at the largest size, scaling, the comparison
with the peers and the contours of P(y = +1 | x) (docs/protocols.md, C2)."""

from __future__ import annotations

import numpy as np

from bsvm_scale.pipeline.outputs.export import MAX_MODEL_TRAIN

from .compare import nll_notes, peer_ratios
from .figures import model_words, pyplot
from .runs import groups_by_size, short_name
from .stats import finite_median, n_evals, per_evaluation
from .tables import table

__all__ = ["section", "bayes_rows", "fitted_gauss_posterior"]

#: the peers of BTSVC in the model-selection comparison
PEERS = ["LIBSVM-SVC-sigmoid", "LIBSVM-SVC-CV", "SVC-CV", "sklearn-GPC", "GPC"]


def fitted_gauss_posterior(X, y, Xt):
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


def bayes_rows(run, ds):
    """Test error and NLL per partition of the optimal Bayes classifier and of
    Gaussians fitted to each training part: ``{name: array (partitions, 2)}``."""
    from bsvm_scale.datasets.synthetic import gauss2d_posterior

    d = run.data(ds, extra=False)
    out = {"Bayes (true densities)": [], "Bayes (estimated Gaussians)": []}
    for k in range(len(run.rec["datasets"][ds]["partitions"])):
        tr, te = run.partition(ds, k)
        yt = d.y[te]
        for name, p1 in (("Bayes (true densities)", gauss2d_posterior(d.X[te])),
                         ("Bayes (estimated Gaussians)",
                          fitted_gauss_posterior(d.X[tr], d.y[tr], d.X[te]))):
            p = np.where(yt > 0, p1, 1.0 - p1)
            out[name].append((float(np.mean((p1 > 0.5) != (yt > 0))),
                              float(-np.sum(np.log(np.maximum(p, 1e-300))))))
    return {k: np.array(v) for k, v in out.items()}


def _largest_size(run, ds, big, notes):
    """Table of the Bayes classifiers and the models at the largest size."""
    rows = [[name, v.shape[0], float(np.mean(v[:, 1])), float(np.mean(v[:, 0]))]
            for name, v in bayes_rows(run, ds).items()]
    for m in run.models(ds):
        nll = run.metric(ds, m, "nll")
        rows.append([m, len(run.entries(ds, m)),
                     float(np.mean(nll)) if np.all(np.isfinite(nll)) else float("nan"),
                     float(np.mean(run.metric(ds, m, "error_rate")))])
    nll_notes(run, "C2", notes, [ds])
    bayes = rows[0][3]
    for r in rows[2:]:
        if r[3] > bayes + 0.01:
            notes.append(f"C2 n={big}: {r[0]} test error {r[3]:.4f} is more than one point above "
                         f"the Bayes error {bayes:.4f}.")
    return [f"Test NLL and error rate at n = {big} (mean over repetitions, "
            f"{len(run.partition(ds)[1])} test cases):", ""] + \
        table(["classifier", "repetitions", "test NLL", "test error rate"], rows) + [""]


def _scaling_row(run, n, ds, m):
    """Error, seconds per evaluation (or per CV fit) and MAP / evidence medians."""
    e = run.entries(ds, m)
    cv = e[0]["task"].get("cv") if e else None
    if cv:
        per = [x["task"].get("fit_time", np.nan) / (cv["n_grid_points"] + 1) for x in e]
    else:
        per = [x["task"].get("fit_time", np.nan) / max(n_evals(x["task"]), 1) for x in e]
    split = np.array([per_evaluation(x["task"]) for x in e]).reshape(-1, 2)
    unit = "per SVC fit (CV grid)" if cv else \
        "per evidence evaluation" if n_evals(e[0]["task"]) else "per fit"
    return [n, m, len(e), float(np.mean(run.metric(ds, m, "error_rate"))), float(np.mean(per)),
            unit, *[finite_median(c) for c in split.T]]


def section(run, figs, notes, prose):
    """Bayes classifiers and models at the largest size, scaling table, peers, contours."""
    sizes = groups_by_size(run)
    if not sizes:
        return []
    big = max(sizes)
    lines = _largest_size(run, sizes[big], big, notes)
    rows = [_scaling_row(run, n, ds, m) for n, ds in sizes.items() for m in run.models(ds)]
    lines += [prose["c2.scaling"], ""]
    lines += table(["n", "model", "repetitions", "test error", "time [s]", "time unit",
                    "MAP [s]", "evidence [s]"], rows) + [""]
    lines += peer_ratios(run, sizes, "BTSVC", PEERS, "error_rate")
    return lines + _contours(run, sizes[big], figs)


def _contours(run, ds, figs):
    """Contours of P(y=+1|x): Bayes, BTSVC and GPC of repetition 0."""
    from bsvm_scale.datasets.synthetic import gauss2d_posterior

    g = np.linspace(-7, 7, 121)
    G = np.array(np.meshgrid(g, g)).reshape(2, -1).T
    panels = [("Bayes (true densities)", gauss2d_posterior(G))]
    for m in run.models(ds):
        model = run.model(ds, m)
        if model is not None and run.entries(ds, m)[0]["kind"] in ("btsvc", "gpc"):
            col = list(model.classes_).index(1)
            panels.append((model_words(m), model.predict_proba(G)[:, col]))
    if len(panels) == 1:
        return [f"(No contour plot: the models of {ds} were trained on more than "
                f"{MAX_MODEL_TRAIN:,} cases, and the page loads and exports only models "
                "trained on fewer.)", ""]
    plt = pyplot()
    fig, ax = plt.subplots(1, len(panels), figsize=(4.8 * len(panels), 4.4), squeeze=False)
    for a, (name, p) in zip(ax[0], panels):
        cs = a.contour(g, g, p.reshape(g.size, g.size), levels=[0.1, 0.25, 0.5, 0.75, 0.9])
        a.clabel(cs, fontsize=8)
        a.set_title(name, fontsize=10)
        a.set_xlabel("x1")
        a.set_ylabel("x2")
    fig.suptitle(f"C2: contours of P(y = +1 | x), {ds}, repetition 0")
    fig.tight_layout()
    return figs.save(fig, f"{short_name(run.name)}_contours",
                     f"C2: contours of P(y=+1|x), {ds}, repetition 0")
