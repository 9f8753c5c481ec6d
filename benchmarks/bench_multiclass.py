"""Multi-class BTSVC against scikit-learn's CV-tuned SVC(probability=True), side by side.

    python3 benchmarks/bench_multiclass.py --out docs/bench/bench_multiclass.json

Data (issue 35): the shipped digits split (``load_real("digits")``, partition
0: 1,200 training and 597 test cases, 64 inputs, 10 classes) and Breiman's
waveform with its three classes (``extra["label3"]``) at 400 and 4,000
training cases (2,000 test cases, seed 0); inputs standardised with the
training statistics. A real table: the cut of a diamond (five text classes,
"Fair" 3 %) from the raw rows of ``data/examples/diamonds_train.csv.gz``
(carat, color and clarity as text, depth, table, x, y, z, price; 2,000
training and 4,000 test rows of a seeded permutation), BTSVC through
:class:`bsvm_scale.tables.Table`, the SVC after scikit-learn's one-hot coding
and standardisation. Models, each timed on the same data in this process:

* ``BayesianSVC(multi_class=..., shared_kernel=...)``, "ovr" and "ovo", each
  binary model with hyperparameters of its own and with one kernel for all
  (``_shared``), otherwise default settings (``random_state=0``); the "ovo"
  fits' probabilities are reported under both couplings (the coupling acts
  at prediction only, so one fit serves both);
* scikit-learn's ``SVC(probability=True)`` tuned by a 3-fold grid, C in {1, 10,
  100} x gamma in {1e-3, 3e-3, 1e-2, 3e-2}, refitted on all training cases
  (the time includes the grid).

Reported: test error, test NLL (mean ``-ln p`` of the true class) and fit
time, with the ratios to the SVC.
"""

import argparse
import json
import os
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
#: (multi_class, shared_kernel) of the BTSVC fits
VARIANTS = (("ovr", False), ("ovo", False), ("ovo", True), ("ovr", True))


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


DIAMONDS = "data/examples/diamonds_train.csv.gz"
TABLE_COLUMNS = ["carat", "color", "clarity", "depth", "table", "x", "y", "z", "price"]
TEXT_COLUMNS = ["color", "clarity"]


def diamonds_cut(n_train=2000, n_test=4000, seed=0):
    """The raw diamonds rows as tables and their cut as labels (train, test)."""
    import pandas as pd

    d = pd.read_csv(os.path.join(os.path.dirname(__file__), "..", DIAMONDS))
    idx = np.random.default_rng(seed).permutation(len(d))
    tr, te = idx[:n_train], idx[n_train:n_train + n_test]
    return (d.iloc[tr][TABLE_COLUMNS], d.iloc[te][TABLE_COLUMNS], d["cut"].to_numpy()[tr],
            d["cut"].to_numpy()[te])


def _table_models():
    """How the table case reaches each model: BTSVC through Table, the SVC
    through a one-hot coding and standardisation pipeline."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from bsvm_scale.tables import Table

    coding = ColumnTransformer([("text", OneHotEncoder(handle_unknown="ignore"), TEXT_COLUMNS)],
                               remainder=StandardScaler())
    svc = GridSearchCV(make_pipeline(coding, SVC(probability=True, random_state=0)),
                       {f"svc__{k}": v for k, v in GRID.items()}, cv=3)
    return svc, (lambda X: Table(X, categorical=TEXT_COLUMNS))


def score(classes, P, yte):
    idx = np.searchsorted(classes, yte)
    p_true = np.clip(P[np.arange(yte.size), idx], 1e-300, None)
    return {"error": float(np.mean(np.argmax(P, axis=1) != idx)),
            "nll": float(-np.mean(np.log(p_true)))}


def timed(make, Xtr, ytr):
    t0 = time.perf_counter()
    model = make().fit(Xtr, ytr)
    return model, time.perf_counter() - t0


def run_one(name, Xtr, Xte, ytr, yte, table=False):
    out = {}
    grid, wrap = (_table_models() if table else
                  (GridSearchCV(SVC(probability=True, random_state=0), GRID, cv=3), lambda X: X))
    svc, t = timed(lambda: grid, Xtr, ytr)
    out["svc_cv"] = {**score(svc.classes_, svc.predict_proba(Xte), yte), "fit_s": t,
                     "params": svc.best_params_}
    for mc, shared in VARIANTS:
        m, t = timed(lambda: BayesianSVC(multi_class=mc, shared_kernel=shared, random_state=0),
                     wrap(Xtr), ytr)
        key = f"btsvc_{mc}" + ("_shared" if shared else "")
        out[key] = {**score(m.classes_, m.predict_proba(wrap(Xte)), yte), "fit_s": t,
                    "n_models": len(m.estimators_),
                    "sum_log_evidence": float(np.sum(m.log_evidence_))}
        if mc == "ovo":
            m.set_params(coupling="wu_lin_weng")
            out[key + "_wlw"] = {**score(m.classes_, m.predict_proba(wrap(Xte)), yte),
                                 "fit_s": t}
    ref = out["svc_cv"]
    for key, rec in out.items():
        rec["error_ratio"] = rec["error"] / ref["error"] if ref["error"] else float("nan")
        rec["nll_ratio"] = rec["nll"] / ref["nll"]
        rec["time_ratio"] = rec["fit_s"] / ref["fit_s"]
        print(f"{name:16s} {key:21s} err {rec['error']:.4f} nll {rec['nll']:.4f} "
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
    if args.only in (None, "diamonds_cut"):
        results["diamonds_cut"] = run_one("diamonds_cut", *diamonds_cut(), table=True)
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"results": results, "machine": platform.platform()}, fh, indent=1)


if __name__ == "__main__":
    main()
