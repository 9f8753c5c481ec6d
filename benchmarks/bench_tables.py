"""Tables in and out (issue 32): raw CSV tables with text columns through the
command line, measured against the hand-coded numeric route.

    python3 benchmarks/bench_tables.py diamonds [--n-train 2000] [--seeds 0 1 2] [--out F.json]
    python3 benchmarks/bench_tables.py predict [--rows 1000000] [--n-fit 6000] [--out F.json]
    python3 benchmarks/bench_tables.py rare [--n-train 3000] [--seeds 0 1 2] [--out F.json]

``diamonds``: the raw diamonds table of ``data/examples`` (cut, color, clarity as
text) through ``bsvm-scale datasets import`` -> ``bsvm-scale run`` -> ``bsvm-scale
predict`` on the raw new rows, against the same pipeline on the same rows coded
as numbers by hand (``diamonds.h5``: the ordered levels as 1, 2, ...): test MSE
on the 4,000 new rows and time, per partition seed (the spread between seeds is
the run-to-run spread).

``predict``: ``bsvm-scale predict`` on ``--rows`` raw CSV rows with text columns
(diamonds rows drawn with replacement), with a BSVR fitted at fixed
hyperparameters on ``--n-fit`` rows; time and peak memory with the default (one
Dask worker per core) and in one process (``--workers 0``).

``rare``: a two-class table with a rare class (``data/examples/default.csv.gz``,
3.3 % defaults): BTSVC with ``class_weight="balanced"`` against unweighted
BTSVC and scikit-learn's SVC with ``class_weight="balanced"`` and Platt
scaling (3-fold grid), side by side in one run: balanced accuracy, AUC, NLL
and time on the test rows; also the unweighted BTSVC's decisions at the
threshold ``p(Yes) > `` the training share of Yes (its probabilities as they are).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "data" / "examples"


def _cli(*args, cwd):
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "bsvm_scale.cli", *map(str, args)], cwd=cwd,
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"bsvm-scale {' '.join(map(str, args))} failed: {out.stderr}")
    return time.perf_counter() - t


def _pipeline(path, name, data, n_train, seed):
    path.write_text(f"""[run]
name = "{name}"
output = "runs"
seed = {seed}

[[datasets]]
name = "d"
path = "{data}"
partitions = 1
n_train = {n_train}

[[models]]
kind = "bsvr"
name = "BSVR"
""")


def _new_rows():
    import csv

    with gzip.open(EXAMPLES / "diamonds_new.csv.gz", "rt", newline="") as fh:
        rows = list(csv.DictReader(fh))
    return rows


def _mse(scores, y):
    import h5py

    with h5py.File(scores) as f:
        return float(np.mean((f["mean"][...] - y) ** 2))


def bench_diamonds(args):
    """Raw table route against the hand-coded numeric route, per seed."""
    from bsvm_scale.datasets import Dataset, load_real, read_dataset, write_dataset

    work = Path(tempfile.mkdtemp(prefix="bench_tables_"))
    new = _new_rows()
    y_new = np.array([float(r["ln_price"]) for r in new])
    t_import = _cli("datasets", "import", EXAMPLES / "diamonds_train.csv.gz", "--target",
                    "ln_price", "--id", "id", "--drop", "price", "--out", work / "raw.h5",
                    cwd=work)
    raw = read_dataset(work / "raw.h5")
    numeric = load_real("diamonds")
    rows = np.array([int(i[1:]) - 1 for i in raw.extra["case_id"]])
    hand = Dataset(X=numeric.X[rows], y=numeric.y[rows], name="hand", task="regression",
                   feature_names=numeric.feature_names)
    write_dataset(hand, work / "hand.h5")
    new_rows = np.array([int(r["id"][1:]) - 1 for r in new])
    np.save(work / "new.npy", numeric.X[new_rows])
    out = []
    for seed in args.seeds:
        rec = {"seed": seed, "n_train": args.n_train, "import_s": t_import}
        for route, data, inputs in (("raw", "raw.h5", EXAMPLES / "diamonds_new.csv.gz"),
                                    ("hand", "hand.h5", work / "new.npy")):
            name = f"{route}{seed}"
            _pipeline(work / f"{name}.toml", name, data, args.n_train, seed)
            t_run = _cli("run", f"{name}.toml", "--no-progress", "--no-report", cwd=work)
            model = work / "runs" / name / "models" / "d__BSVR__p000.h5"
            scores = work / f"scores_{name}.h5"
            t_pred = _cli("predict", model, inputs, "--out", scores, "--no-progress", cwd=work)
            rec[route] = {"mse": _mse(scores, y_new), "run_s": t_run, "predict_s": t_pred}
        print(json.dumps(rec), flush=True)
        out.append(rec)
    return {"diamonds": out}


def _raw_csv(path, n_rows, seed=0):
    """``n_rows`` diamonds rows with text columns, drawn with replacement."""
    import csv

    with gzip.open(EXAMPLES / "diamonds_train.csv.gz", "rt", newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader)
        rows = list(reader)
    pick = np.random.default_rng(seed).integers(0, len(rows), n_rows)
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows[i] for i in pick)


_CHILD = r"""
import json
from bsvm_scale._util.memory import peak_rss_bytes, reset_peak_rss
from bsvm_scale.pipeline.run.scoring import predict_file
reset_peak_rss()
info = predict_file({model!r}, {inp!r}, {out!r}, workers={workers}, id_column="id",
                    progress=False)
print(json.dumps({{"seconds": info["seconds"], "driver_peak_mib": peak_rss_bytes() / 2**20}}))
"""


def peak_child_run(code):
    """Run ``code`` in a child Python; its last stdout line (JSON) and the peak
    summed RSS of its own children (Dask workers), sampled every 0.5 s."""
    import psutil

    proc = psutil.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    peak_children = 0.0
    while proc.poll() is None:
        try:
            kids = proc.children(recursive=True)
            peak_children = max(peak_children, sum(k.memory_info().rss for k in kids) / 2**20)
        except psutil.Error:
            pass
        time.sleep(0.5)
    res = json.loads(proc.stdout.read().strip().splitlines()[-1])
    return {**res, "workers_peak_rss_sum_mib": peak_children}


def bench_predict(args):
    """``bsvm-scale predict`` on many raw rows with a fixed-hyperparameter BSVR."""
    from bsvm_scale import BayesianSVR, save_model
    from bsvm_scale.datasets import import_table

    work = Path(tempfile.mkdtemp(prefix="bench_tables_"))
    train = import_table(EXAMPLES / "diamonds_train.csv.gz", "ln_price", id_column="id",
                         drop=["price"])
    rows = np.random.default_rng(0).permutation(train.n_samples)[:args.n_fit]
    t = time.perf_counter()
    # the optimum of a default BayesianSVR fit on 6,000 of these rows
    m = BayesianSVR(optimize=False, C=17.6, epsilon=0.0745, kappa=0.0814, kappa_b=77.0,
                    beta=0.05).fit(train.table(rows), train.y[rows])
    fit_s = time.perf_counter() - t
    save_model(m, work / "m.h5")
    _raw_csv(work / "rows.csv", args.rows)
    rec = {"rows": args.rows, "n_fit": args.n_fit, "n_sv": int(m.support_.size),
           "n_off_bound": int(m.off_bound_.size), "fit_s": fit_s,
           "input_mib": os.path.getsize(work / "rows.csv") / 2**20, "runs": []}
    for workers in (None, 0):  # the default (one worker per core here), this process
        code = _CHILD.format(model=str(work / "m.h5"), inp=str(work / "rows.csv"),
                             out=str(work / f"p{workers}.h5"), workers=workers)
        res = {"workers": "default" if workers is None else workers, **peak_child_run(code)}
        rec["runs"].append(res)
        print(json.dumps(res), flush=True)
    return {"predict": rec}


def _rare_split(n_train, seed):
    import pandas as pd

    frame = pd.read_csv(EXAMPLES / "default.csv.gz")
    order = np.random.default_rng(seed).permutation(len(frame))
    train, test = frame.iloc[order[:n_train]], frame.iloc[order[n_train:]]
    return train.drop(columns=["id", "default"]), train["default"].to_numpy(), \
        test.drop(columns=["id", "default"]), test["default"].to_numpy()


def _class_metrics(y, pred, proba, classes, seconds):
    from sklearn.metrics import balanced_accuracy_score, log_loss, roc_auc_score

    pos = list(classes).index("Yes")
    return {"balanced_accuracy": float(balanced_accuracy_score(y, pred)),
            "auc": float(roc_auc_score(y == "Yes", proba[:, pos])),
            "nll": float(log_loss(y, proba, labels=list(classes))),
            "positives_predicted": int(np.sum(pred == "Yes")), "seconds": seconds}


def _sklearn_svc(Xtr, ytr, Xte):
    """scikit-learn's SVC with balanced class weights and Platt scaling, C and
    gamma by a 3-fold grid (balanced accuracy), on the same coded inputs."""
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    from bsvm_scale.tables.frame import fit_encoder, transform_for

    enc, A = fit_encoder(Xtr)
    grid = GridSearchCV(make_pipeline(StandardScaler(), SVC(class_weight="balanced")),
                        {"svc__C": [0.1, 1.0, 10.0, 100.0], "svc__gamma": [0.01, 0.1, 1.0]},
                        cv=3, scoring="balanced_accuracy")
    grid.fit(A, ytr)
    best = grid.best_estimator_.set_params(svc__probability=True, svc__random_state=0)
    best.fit(A, ytr)
    B = transform_for(enc, Xte)
    return best.predict(B), best.predict_proba(B), best.classes_


def bench_rare(args):
    """BTSVC with and without balanced class weights against scikit-learn's SVC."""
    from bsvm_scale import BayesianSVC

    out = []
    for seed in args.seeds:
        Xtr, ytr, Xte, yte = _rare_split(args.n_train, seed)
        rec = {"seed": seed, "n_train": args.n_train, "positives_train": int(np.sum(ytr == "Yes")),
               "n_test": int(len(yte))}
        for label, cw in (("btsvc", None), ("btsvc_balanced", "balanced")):
            t = time.perf_counter()
            m = BayesianSVC(class_weight=cw, random_state=0).fit(Xtr, ytr)
            proba = m.predict_proba(Xte)
            rec[label] = _class_metrics(yte, m.predict(Xte), proba, m.classes_,
                                        time.perf_counter() - t)
            if cw is None:  # balanced decisions from the calibrated probabilities
                prior = float(np.mean(ytr == "Yes"))
                pos = list(m.classes_).index("Yes")
                rec["btsvc_prior_threshold"] = _class_metrics(
                    yte, np.where(proba[:, pos] > prior, "Yes", "No"), proba, m.classes_,
                    rec[label]["seconds"])
        t = time.perf_counter()
        pred, proba, classes = _sklearn_svc(Xtr, ytr, Xte)
        rec["sklearn_svc_balanced_platt"] = _class_metrics(yte, pred, proba, classes,
                                                           time.perf_counter() - t)
        print(json.dumps(rec), flush=True)
        out.append(rec)
    return {"rare": out}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("diamonds")
    d.add_argument("--n-train", type=int, default=2000)
    d.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p = sub.add_parser("predict")
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--n-fit", type=int, default=6000)
    r = sub.add_parser("rare")
    r.add_argument("--n-train", type=int, default=3000)
    r.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    for q in (d, p, r):
        q.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    result = {"diamonds": bench_diamonds, "predict": bench_predict,
              "rare": bench_rare}[args.what](args)
    print(json.dumps(result))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
