"""C1: one-dimensional simulated classification -- hyperparameters, SVs and
evidence per case, the discriminant with its error bar and P(y = +1 | x)
(docs/protocols.md, C1)."""

from __future__ import annotations

import numpy as np

from .compare import nll_notes
from .figures import model_words, pyplot
from .runs import short_name
from .tables import table

__all__ = ["section"]


def section(run, figs, notes, prose):
    """Hyperparameters, SVs and evidence per case; discriminant and P(y=+1|x) figure."""
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
    lines = table(["case", "model", "kappa0", "C", "kappa", "kappa_b", "SVs", "-ln evidence",
                   "test error"], rows) + [""]
    nll_notes(run, "C1", notes)
    return lines + figs.save(_figure(run), f"{short_name(run.name)}_discriminant",
                             "C1: discriminant and class probability")


def _panels(run, ds, x, ax_f, ax_p):
    """Draw the discriminant (BTSVC) and P(y=+1|x) of the loaded models of ``ds``."""
    from bsvm_scale.datasets.synthetic import gauss1d_posterior

    d = run.data(ds, extra=False)
    tr, _ = run.partition(ds)
    ax_p.plot(x[:, 0], gauss1d_posterior(x[:, 0]), "k:", label="Bayes (true densities)")
    for m in run.models(ds):
        model = run.model(ds, m)
        if model is None or not hasattr(model, "predict_proba"):
            continue
        if hasattr(model, "decision_function") and run.entries(ds, m)[0]["kind"] == "btsvc":
            mu, sd = model.decision_function(x, return_std=True)
            ax_f.plot(x[:, 0], mu, "b-", label=f"{model_words(m)}: mean")
            ax_f.fill_between(x[:, 0], mu - sd, mu + sd, color="b", alpha=0.2,
                              label="mean +- one standard deviation")
        col = list(model.classes_).index(1) if 1 in list(model.classes_) else -1
        ax_p.plot(x[:, 0], model.predict_proba(x)[:, col], label=model_words(m))
    ax_f.plot(d.X[tr, 0], d.y[tr], "k|", ms=8, label="training cases (at their label)")
    ax_f.set_title(f"{ds}: latent discriminant f(x)")
    ax_p.set_title(f"{ds}: P(y = +1 | x)")


def _figure(run):
    """One column per case: discriminant +- error bar (top), P(y=+1|x) (bottom)."""
    plt = pyplot()
    cases = run.datasets()
    fig, ax = plt.subplots(2, len(cases), figsize=(6.5 * len(cases), 7), squeeze=False)
    x = np.linspace(-6, 6, 400)[:, None]
    for j, ds in enumerate(cases):
        _panels(run, ds, x, ax[0, j], ax[1, j])
        for a in ax[:, j]:
            a.legend(fontsize=8)
            a.set_xlabel("x")
    fig.suptitle("C1: BTSVC and GPC on one-dimensional Gaussian classes")
    fig.tight_layout()
    return fig
