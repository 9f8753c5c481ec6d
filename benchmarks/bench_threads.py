"""Starts on threads: a default BSVR fit with ``n_jobs=2`` against ``n_jobs=1``
(a one-core fit: ``n_jobs`` counts every thread of a fit) and the default ``n_jobs=-1``.

    python3 benchmarks/bench_threads.py --n 5000 --repeats 3 --out docs/bench/bench_threads.json

Sinc data (x uniform on [-10, 10], Gaussian noise 0.1), default settings (two
starts on the full data below ``2 * init_subsample`` cases). Reports the median
wall time of each setting (the order of the settings rotating between repeats),
the ratios, and checks that the fits are the same.
"""

import argparse
import json
import platform
import statistics
import time

import numba
import numpy as np

from bsvm_scale import BayesianSVR


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(-10, 10, (n, 1))
    return X, np.sinc(X[:, 0] / np.pi) + 0.1 * rng.standard_normal(n)


def _time(X, y, n_jobs):
    t0 = time.perf_counter()
    m = BayesianSVR(n_jobs=n_jobs).fit(X, y)
    return time.perf_counter() - t0, m


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    X, y = _data(args.n)
    BayesianSVR(optimizer_options={"maxiter": 2}).fit(X[:300], y[:300])  # compile
    cores = numba.config.NUMBA_NUM_THREADS
    settings = {"n_jobs=1": 1, "n_jobs=2": 2, "n_jobs=-1 (default)": -1}
    times = {k: [] for k in settings}
    evidence = {}
    names = list(settings)
    for r in range(args.repeats):  # the order rotates, so no setting always follows another
        for name in names[r % len(names):] + names[:r % len(names)]:
            t, m = _time(X, y, settings[name])
            times[name].append(t)
            evidence[name] = float(m.log_evidence_)
            print(f"{name}: {t:.2f} s, ln evidence {m.log_evidence_:.6f}", flush=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    out = {"n": args.n, "repeats": args.repeats, "cores": cores, "median_s": med,
           "times_s": times, "log_evidence": evidence,
           "speedup_vs_n_jobs_1": med["n_jobs=1"] / med["n_jobs=2"],
           "speedup_default_vs_n_jobs_1": med["n_jobs=1"] / med["n_jobs=-1 (default)"],
           "same_fit": len(set(evidence.values())) == 1,
           "machine": platform.platform()}
    print(json.dumps({k: out[k] for k in ("median_s", "speedup_vs_n_jobs_1",
                                          "speedup_default_vs_n_jobs_1", "same_fit")}, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(out, fh, indent=1)


if __name__ == "__main__":
    main()
