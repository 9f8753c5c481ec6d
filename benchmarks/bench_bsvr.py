"""BSVR benchmarks (not a test: ratios measured side by side in one run).

1. ``map``: one MAP solve of BSVR's SMO (4.25) against scikit-learn's SVR
   (LIBSVM) on the same standardised sinc data, kernel width (gamma =
   kappa / 2), C and epsilon, tolerance 1e-3 and a 256 MiB cache on both
   sides, beta small (0.01) so that the two problems nearly coincide. BSVR
   additionally carries the bias through kappa_b (no equality constraint).
2. ``infer``: full evidence maximisation (two starts) on sinc with SILF
   noise (C = 10, epsilon = 0.1, beta = 0.3 generating), each size in a fresh
   subprocess so that its peak RSS is its own; reports wall time, peak RSS,
   fitted hyperparameters and the test ASE against the true noise.

Usage::

    python benchmarks/bench_bsvr.py map --n 2000 5000 10000 20000 50000
    python benchmarks/bench_bsvr.py infer --n 4000 --beta 0.1
    python benchmarks/bench_bsvr.py infer --n 50000
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def sinc_data(n, seed):
    from bsvm_scale.datasets import generate

    ds = generate("sinc_silf", n=n, seed=seed)
    return ds.X, ds.y, ds.extra.get("noise")


def bench_map(ns, reps, C=10.0, eps=0.1, kappa=2.0, kappa_b=1.0):
    from sklearn.svm import SVR

    from bsvm_scale import BayesianSVR

    rows = []
    warm = sinc_data(300, 99)
    BayesianSVR(optimize=False, C=C, epsilon=eps, kappa=kappa, kappa_b=kappa_b,
                kappa0=1.0, beta=0.01).fit(warm[0], warm[1])
    for n in ns:
        X, y, _ = sinc_data(n, 1)
        Xs = (X - X.mean(0)) / X.std(0)
        t_ours, t_ref, nsv = [], [], []
        for _ in range(reps):
            t = time.perf_counter()
            m = BayesianSVR(optimize=False, C=C, epsilon=eps, kappa=kappa, kappa_b=kappa_b,
                            kappa0=1.0, beta=0.01, tol=1e-3, cache_mb=256).fit(X, y)
            t_ours.append(time.perf_counter() - t)
            t = time.perf_counter()
            r = SVR(C=C, epsilon=eps, gamma=kappa / 2, tol=1e-3, cache_size=256).fit(Xs, y)
            t_ref.append(time.perf_counter() - t)
            nsv.append((m.support_.size, r.support_.size))
        row = {"n": n, "bsvr_s": float(np.median(t_ours)), "libsvm_s": float(np.median(t_ref)),
               "ratio_bsvr_over_libsvm": float(np.median(t_ours) / np.median(t_ref)),
               "bsvr_sv": nsv[0][0], "libsvm_sv": nsv[0][1], "bsvr_smo_iter": m.n_iter_,
               "libsvm_iter": int(np.sum(r.n_iter_))}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


_CHILD = r"""
import json, sys, time, warnings
import numpy as np
sys.path.insert(0, {here!r})
from bench_bsvr import sinc_data
from bsvm_scale import BayesianSVR
from bsvm_scale._util.memory import peak_rss_bytes, reset_peak_rss
n, beta = {n}, {beta}
X, y, _ = sinc_data(n, 1)
Xt, yt, nt = sinc_data(3000, 2)
BayesianSVR(n_starts=1, optimizer_options={{"maxiter": 1}}).fit(X[:200], y[:200])  # compile
hwm0 = peak_rss_bytes() / 2 ** 20  # peak of data + compile, before the fit
reset_peak_rss()  # VmHWM of this process only (ru_maxrss survives fork + exec)
t = time.perf_counter()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    m = BayesianSVR(beta=beta).fit(X, y)
el = time.perf_counter() - t
h = m.hyperparameters_
ase = float(np.mean((m.predict(Xt) - yt) ** 2))
print(json.dumps({{"n": n, "beta": h["beta"], "fit_s": el,
    "peak_rss_mib": peak_rss_bytes() / 2 ** 20, "peak_rss_before_fit_mib": hwm0,
    "C": h["C"], "epsilon": h["epsilon"], "kappa": float(h["kappa"]), "kappa_b": h["kappa_b"],
    "n_off_bound": int(m.off_bound_.size), "n_sv": int(m.support_.size),
    "test_ase": ase, "true_test_noise": float(np.mean(nt ** 2)),
    "evaluations": sum(len(s["trajectory"]) for s in m.starts_),
    "subsample_evaluations": sum(len(s["subsample"]["trajectory"]) for s in m.starts_
                                 if "subsample" in s),
    "evidence_method": m.evidence_method_, "evidence_error": m.evidence_error_,
    "full_data_map_s": [round(r["info"].get("map_s", 0.0), 2) for r in m.starts_[0]["trajectory"]],
    "full_data_evidence_s": [round(r["info"].get("evidence_s", 0.0), 2)
                             for r in m.starts_[0]["trajectory"]],
    "full_data_smo_start": [r["info"].get("smo_start", "") for r in m.starts_[0]["trajectory"]],
    "full_data_smo_iter": [r["info"].get("smo_iter", -1) for r in m.starts_[0]["trajectory"]],
    "full_data_theta": [np.round(r["theta"], 3).tolist() for r in m.starts_[0]["trajectory"]],
    "warnings": [str(x.message)[:120] for x in w]}}))
"""


def bench_infer(ns, beta):
    rows = []
    here = os.path.dirname(os.path.abspath(__file__))
    for n in ns:
        code = _CHILD.format(here=here, n=n, beta="None" if beta is None else beta)
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        if out.returncode != 0:
            print(out.stderr[-2000:], file=sys.stderr)
            continue
        row = json.loads(out.stdout.strip().splitlines()[-1])
        # a text column, so that scaling exponents are fitted per start strategy
        row["starts"] = "coarse-to-fine" if row["subsample_evaluations"] else "full data"
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("what", choices=["map", "infer"])
    ap.add_argument("--n", type=int, nargs="+", default=[2000, 5000, 10000])
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--beta", type=float, default=None)
    ap.add_argument("--out", help="write the rows as JSON here")
    args = ap.parse_args(argv)
    rows = bench_map(args.n, args.reps) if args.what == "map" else bench_infer(args.n, args.beta)
    info = {"load_avg": os.getloadavg(), "cpus": os.cpu_count(),
            "self_peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    print(json.dumps(info))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"rows": rows, "info": info}, fh, indent=1)


if __name__ == "__main__":
    main()
