"""Repeated cases fitted as one weighted case, side by side with every copy
fitted on its own (a benchmark, not a test).

The shipped titanic table (class, age, sex; 2,201 passengers but 24 distinct
rows of inputs and label): ``BayesianSVC(random_state=0)`` on a seeded
1,500-case split, as it is (repeated cases merged, :mod:`bsvm_scale.models.merge`)
and with merging switched off, in one process; median fit seconds of
``--repeat`` fits, ln evidence, SV count, test NLL and error::

    python3 benchmarks/bench_repeats.py [--repeat 3] [--out F.json]
"""

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

import bsvm_scale.models.btsvc as btsvc_module
from bsvm_scale import BayesianSVC
from bsvm_scale.datasets import load_real


def _fit(X, y, Xt, yt, repeat):
    seconds = []
    for _ in range(repeat):
        t = time.perf_counter()
        m = BayesianSVC(random_state=0).fit(X, y)
        seconds.append(time.perf_counter() - t)
    P = m.predict_proba(Xt)[np.arange(yt.size), np.searchsorted(m.classes_, yt)]
    return {"median_s": float(np.median(seconds)), "seconds": seconds,
            "log_evidence": float(m.log_evidence_), "n_sv": int(m.support_.size),
            "nll": float(-np.mean(np.log(P))),
            "error": float(np.mean(m.predict(Xt) != yt))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    ds = load_real("titanic")
    p = np.random.default_rng(0).permutation(ds.y.size)
    X, y, Xt, yt = ds.X[p[:1500]], ds.y[p[:1500]], ds.X[p[1500:]], ds.y[p[1500:]]
    w = np.r_[np.flatnonzero(y == y.min())[:30], np.flatnonzero(y == y.max())[:30]]
    BayesianSVC(optimize=False).fit(X[w], y[w])  # compile outside the timings
    out = {"n": int(y.size), "distinct_rows": int(np.unique(np.c_[X, y], axis=0).shape[0]),
           "merged": _fit(X, y, Xt, yt, args.repeat)}
    merge = btsvc_module.merge_fit_inputs
    btsvc_module.merge_fit_inputs = lambda X, y, w, ids, start, rt: \
        (None, (X, y, w, ids, start, rt))
    try:
        out["each_copy"] = _fit(X, y, Xt, yt, args.repeat)
    finally:
        btsvc_module.merge_fit_inputs = merge
    out["speedup"] = out["each_copy"]["median_s"] / out["merged"]["median_s"]
    text = json.dumps(out, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
