"""BSVR-ARD on 50,000 diamonds cases against the isotropic BSVR on the same split
(a benchmark, not a test; issue 34's ARD-at-scale target).

The shipped diamonds data (9 inputs, target ln price): a seeded random split of
``--n`` training cases, the remaining cases the test set. Each model is one full
``BayesianSVR(random_state=0)`` fit with defaults (``ard=True`` for ARD), run in its
own child process under a time limit (``--limit-min``), so that a fit that does
not finish is recorded as such. Recorded per model: fit seconds, peak RSS of the
child, ln evidence, SV count, evaluations per run (and, for the first run, the SMO
iterations and seconds of each evaluation) and test MSE::

    python3 benchmarks/bench_diamonds_ard.py [--n 50000] [--seed 0] [--limit-min 30]
                                            [--models ard iso] [--out F.json]
"""

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np


def _split(n, seed):
    from bsvm_scale.datasets import load_real

    d = load_real("diamonds", splits=False, extra=False)
    X, y = np.asarray(d.X, dtype=float), np.asarray(d.y, dtype=float)
    perm = np.random.default_rng(seed).permutation(y.size)
    return X[perm[:n]], y[perm[:n]], X[perm[n:]], y[perm[n:]]


def _one(model, n, seed):
    from bsvm_scale import BayesianSVR

    X, y, Xt, yt = _split(n, seed)
    t = time.perf_counter()
    m = BayesianSVR(ard=(model == "ard"), random_state=0).fit(X, y)
    seconds = time.perf_counter() - t
    p = m.predict(Xt)
    evals = [s["n_eval"] for s in m.starts_]
    keys = ("smo_iter", "map_s", "evidence_s", "n_sv", "method", "smo_start")
    full = [{k: rec["info"].get(k) for k in keys} | {"fun": rec["fun"]}
            for rec in m.starts_[0]["trajectory"]]
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"model": model, "n": n, "n_test": int(yt.size), "seed": seed,
            "seconds": seconds, "peak_rss_mb": peak_mb,
            "log_evidence": float(m.log_evidence_), "n_sv": int(m.support_.size),
            "evaluations_per_run": evals, "full_data_evaluations": full,
            "test_mse": float(np.mean((p - yt) ** 2)),
            "hyperparameters": {k: np.asarray(v).tolist() for k, v in m.hyperparameters_.items()}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit-min", type=float, default=30.0)
    ap.add_argument("--models", nargs="+", default=["ard", "iso"], choices=["ard", "iso"])
    ap.add_argument("--out", default=None)
    ap.add_argument("--child", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(_one(a.child, a.n, a.seed)))
        return
    rows = []
    for model in a.models:
        cmd = [sys.executable, __file__, "--n", str(a.n), "--seed", str(a.seed), "--child", model]
        t = time.perf_counter()
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=60 * a.limit_min)
            row = json.loads(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else {
                "model": model, "error": out.stderr[-2000:]}
        except subprocess.TimeoutExpired:
            row = {"model": model, "n": a.n, "seed": a.seed,
                   "not_finished_after_s": time.perf_counter() - t}
        print(json.dumps(row), flush=True)
        rows.append(row)
    if a.out:
        Path(a.out).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
