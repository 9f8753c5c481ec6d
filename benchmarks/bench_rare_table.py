"""BTSVC on a generated table where nearly every case is a support vector
(issue 34), against scikit-learn's SVC tuned on a subsample, side by side.

    python3 benchmarks/bench_rare_table.py [--n 20000] [--n-test 20000] [--seed 0] [--out F.json]

The table (:func:`rare_table`): four categorical inputs with 3, 4, 2 and 5
levels (one-hot coded), three standard normal inputs rounded to halves, and a
rare class drawn from a logistic model of them (about 7 % positives); many
input rows repeat. Models, each timed on the same data in this process:

* ``BayesianSVC(random_state=0)`` with default settings;
* scikit-learn's ``SVC(probability=True)`` tuned by a 3-fold 4 x 3 grid (C in
  {0.1, 1, 10, 100} x gamma in {0.01, 0.1, 1}) on 3,000 training cases, then
  refitted on all (the time includes the grid);

and reported: fit time, test NLL, AUC and error, SV count, the ratio of the
times and the distinct input rows.
"""

import argparse
import json
import platform
import time
import warnings

import numpy as np
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import GridSearchCV
from sklearn.svm import SVC

from bsvm_scale import BayesianSVC

LEVELS = (3, 4, 2, 5)
EFFECTS = ((0.0, 0.8, -0.5), (0.0, 0.5, 1.0, -0.7), (0.0, 0.6), (0.0, -0.4, 0.3, 0.9, -1.0))
GRID = {"C": [0.1, 1.0, 10.0, 100.0], "gamma": [0.01, 0.1, 1.0]}


def rare_table(n, seed=0):
    """``(X, y)``: the one-hot coded categorical inputs, the rounded normal
    inputs (17 columns) and 0/1 labels of the rare class."""
    rng = np.random.default_rng(seed)
    cats = [rng.integers(0, k, n) for k in LEVELS]
    num = np.round(rng.standard_normal((n, 3)) * 2.0) / 2.0
    z = (-3.6 + sum(np.asarray(e)[c] for e, c in zip(EFFECTS, cats)) + 0.8 * num[:, 0]
         - 0.3 * num[:, 1] ** 2)
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-z))).astype(np.int64)
    X = np.column_stack([np.eye(k)[c] for k, c in zip(LEVELS, cats)] + [num])
    return X, y


def scores(p, y):
    p = np.clip(p, 1e-12, 1 - 1e-12)
    return {"nll": float(-np.mean(y * np.log(p) + (1 - y) * np.log(1 - p))),
            "auc": float(roc_auc_score(y, p)), "error": float(np.mean((p > 0.5) != y))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--n-test", type=int, default=20000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore", FutureWarning)  # SVC(probability=True) in scikit-learn >= 1.9
    X, y = rare_table(args.n + args.n_test, args.seed)
    Xtr, ytr, Xte, yte = X[:args.n], y[:args.n], X[args.n:], y[args.n:]
    BayesianSVC(optimize=False).fit(Xtr[:60], ytr[:60])  # compile outside the timings
    out = {"n": args.n, "positives": float(ytr.mean()),
           "distinct_rows": int(np.unique(Xtr, axis=0).shape[0])}
    t = time.perf_counter()
    sub = np.random.default_rng(args.seed).permutation(args.n)[:3000]
    grid = GridSearchCV(SVC(), GRID, cv=3).fit(Xtr[sub], ytr[sub])
    svc = SVC(probability=True, random_state=0, **grid.best_params_).fit(Xtr, ytr)
    out["svc"] = {"fit_s": time.perf_counter() - t, "params": grid.best_params_,
                  "n_sv": int(svc.support_.size), **scores(svc.predict_proba(Xte)[:, 1], yte)}
    t = time.perf_counter()
    m = BayesianSVC(random_state=0).fit(Xtr, ytr)
    out["btsvc"] = {"fit_s": time.perf_counter() - t, "n_sv": int(len(m.support_)),
                    "hyperparameters": {k: float(np.mean(v)) for k, v in
                                        m.hyperparameters_.items()},
                    **scores(m.predict_proba(Xte)[:, 1], yte)}
    out["time_ratio"] = out["btsvc"]["fit_s"] / out["svc"]["fit_s"]
    out["machine"] = platform.platform()
    print(json.dumps(out, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
