"""R4: time series with error bars -- test predictions of the Mackey-Glass
series, errors inside the +-2 sd band (docs/protocols.md, R4)."""

from __future__ import annotations

import numpy as np

from .compare import worse_than
from .figures import model_words, pyplot
from .runs import short_name
from .tables import table

__all__ = ["section"]


def _r4_checks(m, err, sd, notes):
    """The R4 checks of one model's error bars; returns the share inside +-2 sd."""
    inside = float(np.mean(np.abs(err) <= 2 * sd))
    rmse = float(np.sqrt(np.mean(err ** 2)))
    if m.startswith("BSVR") and np.mean(sd) > 3.0 * rmse:
        notes.append(f"R4 {m}: the error bars are conservative -- mean predictive sd "
                     f"{np.mean(sd):.3g} against a test RMSE of {rmse:.3g} ({inside:.0%} "
                     "of the errors inside +-2 sd).")
    if inside < 0.9:
        notes.append(f"R4 {m}: only {inside:.0%} of the test errors lie inside the +-2 sd band "
                     "(about 95% expected for calibrated error bars).")
    return inside


def section(run, figs, notes, prose):
    """Test predictions against the series and errors inside the +-2 sd band."""
    ds = run.datasets()[0]
    _, te = run.partition(ds)
    y = run.data(ds, extra=False).y[te]
    models = [m for m in run.models(ds) if run.entries(ds, m)
              and run.entries(ds, m)[0]["task"].get("predictions", {}).get("std") is not None]
    if not models:
        return []
    rows, series = [], []
    for m in models:
        p = run.entries(ds, m)[0]["task"]["predictions"]
        mu, sd = np.asarray(p["mean"]), np.asarray(p["std"])
        err = mu - y
        if m.startswith("BSVR"):
            worse_than(run, m, "GPR", notes, "R4")
        inside = _r4_checks(m, err, sd, notes)
        rows.append([m, float(np.mean(err ** 2)), float(np.mean(np.abs(err))),
                     float(np.mean(sd)), f"{inside:.0%}"])
        series.append((m, mu, err, sd))
    keys = ("C", "epsilon", "kappa", "kappa_b", "noise_variance", "sigma2")
    hyp = [[m, *(run.entries(ds, m)[0]["hyperparameters"].get(k) for k in keys)] for m in models]
    lines = table(["model", "test ASE", "test AAE", "mean predictive sd", "inside +-2 sd"], rows)
    lines += [""] + table(["model", "C", "epsilon", "kappa", "kappa_b", "noise var (BSVR)",
                           "noise var (GPR)"], hyp) + [""]
    return lines + figs.save(_r4_figure(y, series), f"{short_name(run.name)}_timeseries",
                             "R4: test predictions and error bars")


def _r4_figure(y, series):
    """Per model: predictions against the series (top), errors and the +-2 sd band."""
    plt = pyplot()
    fig, ax = plt.subplots(2, len(series), figsize=(5.5 * len(series), 6.4), squeeze=False)
    t = np.arange(y.size)
    for j, (m, mu, err, sd) in enumerate(series):
        ax[0, j].plot(t, y, "k-", lw=1, label="series")
        ax[0, j].plot(t, mu, "r--", lw=1, label="prediction")
        ax[0, j].set_title(f"{model_words(m)}: test predictions", fontsize=10)
        ax[0, j].legend(fontsize=8, loc="upper left")
        ax[1, j].fill_between(t, -2 * sd, 2 * sd, color="b", alpha=0.2,
                              label="+- two predictive standard deviations")
        ax[1, j].plot(t, err, "r-", lw=1, label="prediction error")
        ax[1, j].set_title("errors and error bars", fontsize=10)
        ax[1, j].set_xlabel("test step")
        ax[1, j].set_ylim(-3.2 * float(np.max(sd)), 4.5 * float(np.max(sd)))
        ax[1, j].legend(fontsize=8, loc="upper left", ncol=2)
    fig.suptitle("R4: Mackey-Glass series, one-step predictions with error bars")
    fig.tight_layout()
    return fig
