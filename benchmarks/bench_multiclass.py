"""Multi-class BTSVC against scikit-learn's CV-tuned SVC(probability=True), side by side.

    python3 benchmarks/bench_multiclass.py --out docs/bench/bench_multiclass.json

Data (issue 35): the shipped digits split (``load_real("digits")``, partition
0: 1,200 training and 597 test cases, 64 inputs, 10 classes) and Breiman's
waveform with its three classes (``extra["label3"]``) at 400 and 4,000
training cases (2,000 test cases, seed 0). Inputs are standardised with the
training statistics. Models, each timed on the same data in this process:

* ``BayesianSVC(multi_class="ovr")`` and ``BayesianSVC(multi_class="ovo")``
  with otherwise default settings (``random_state=0``); the "ovo" fit's
  probabilities are reported under both couplings (the coupling acts at
  prediction only, so one fit serves both);
* scikit-learn's ``SVC(probability=True)`` tuned by a 3-fold grid, C in {1, 10,
  100} x gamma in {1e-3, 3e-3, 1e-2, 3e-2}, refitted on all training cases
  (the time includes the grid).

Reported: test error, test NLL (mean ``-ln p`` of the true class) and fit
time, with the ratios to the SVC.
"""

import argparse
import json
import platform
import time
import warnings

import numpy as np
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from bsvm_scale import BayesianSVC
from bsvm_scale.datasets import generate
from bsvm_scale.datasets.real import load_real

GRID = {"C": [1.0, 10.0, 100.0], "gamma": [1e-3, 3e-3, 1e-2, 3e-2]}


def _standardised(Xtr, Xte):
    mu, sd = Xtr.mean(0), Xtr.std(0)
    sd[sd == 0] = 1.0
    return (Xtr - mu) / sd, (Xte - mu) / sd


def data_sets(waveform_sizes):
    d = load_real("digits")
    a, b = d.split(0)
    yield "digits", *_standardised(a.X, b.X), a.y, b.y
    for n in waveform_sizes:
        w = generate("waveform", n + 2000, 0)
        y = w.extra["label3"]
        Xtr, Xte = _standardised(w.X[:n], w.X[n:])
        yield f"waveform3_{n}", Xtr, Xte, y[:n], y[n:]


def score(classes, P, yte):
    idx = np.searchsorted(classes, yte)
    p_true = np.clip(P[np.arange(yte.size), idx], 1e-300, None)
    return {"error": float(np.mean(np.argmax(P, axis=1) != idx)),
            "nll": float(-np.mean(np.log(p_true)))}


def timed(make, Xtr, ytr):
    t0 = time.perf_counter()
    model = make().fit(Xtr, ytr)
    return model, time.perf_counter() - t0


def run_one(name, Xtr, Xte, ytr, yte):
    out = {}
    svc, t = timed(lambda: GridSearchCV(SVC(probability=True, random_state=0), GRID, cv=3),
                   Xtr, ytr)
    out["svc_cv"] = {**score(svc.classes_, svc.predict_proba(Xte), yte), "fit_s": t,
                     "params": svc.best_params_}
    for mc in ("ovr", "ovo"):
        m, t = timed(lambda: BayesianSVC(multi_class=mc, random_state=0), Xtr, ytr)
        out[f"btsvc_{mc}"] = {**score(m.classes_, m.predict_proba(Xte), yte), "fit_s": t,
                              "n_models": len(m.estimators_)}
        if mc == "ovo":
            m.set_params(coupling="wu_lin_weng")
            out["btsvc_ovo_wlw"] = {**score(m.classes_, m.predict_proba(Xte), yte), "fit_s": t}
    ref = out["svc_cv"]
    for key, rec in out.items():
        rec["error_ratio"] = rec["error"] / ref["error"] if ref["error"] else float("nan")
        rec["nll_ratio"] = rec["nll"] / ref["nll"]
        rec["time_ratio"] = rec["fit_s"] / ref["fit_s"]
        print(f"{name:16s} {key:14s} err {rec['error']:.4f} nll {rec['nll']:.4f} "
              f"fit {rec['fit_s']:7.1f} s  (x{rec['error_ratio']:.2f} err, "
              f"x{rec['nll_ratio']:.2f} nll, x{rec['time_ratio']:.2f} time)", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--waveform", type=int, nargs="*", default=[400, 4000])
    ap.add_argument("--only", default=None, help="run only the data set of this name")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) in scikit-learn >= 1.9
    BayesianSVC(optimizer_options={"maxiter": 2}).fit(  # compile outside the timings
        np.random.default_rng(0).normal(size=(60, 2)), np.arange(60) % 3)
    results = {}
    for name, *arrays in data_sets(args.waveform):
        if args.only in (None, name):
            results[name] = run_one(name, *arrays)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"results": results, "machine": platform.platform()}, fh, indent=1)


if __name__ == "__main__":
    main()
