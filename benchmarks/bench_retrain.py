"""Nightly retraining benchmark: a cold fit against a fit warm-started from the
previous night's model (``warm_start_from``) after 5% of the cases were replaced.

BSVR on sinc + SILF noise (beta 0.3) at 50,000 cases and BTSVC on C2 at 20,000:
model A is fitted on cases ``[0, n)``; the next night's data are cases
``[n/20, n + n/20)``. Reported: fit times, ``-ln evidence``, evaluations and the
test error of the cold fit, the warm fit, and the warm fit given case identifiers
(``case_ids``: the SMO also starts from the earlier dual values of the cases
still present), the SMO iterations of their first MAP solve, and the ratios.
``--twonorm-n`` adds BTSVC on twonorm (20 inputs: the low-rank MAP start is
truncated there, so the carried dual is what the first solve starts from).

    python3 benchmarks/bench_retrain.py [--bsvr-n 50000] [--btsvc-n 20000] [--twonorm-n 0]
                                        [--out FILE.json]

(0 skips a model.)
"""

import argparse
import json
import os
import tempfile
import time

import numpy as np


def _evaluations(model):
    starts = model.starts_ if isinstance(model.starts_[0], dict) else \
        [s for per_class in model.starts_ for s in per_class]
    return sum(len(s["trajectory"]) + len(s.get("subsample", {}).get("trajectory", []))
               for s in starts)


def _first_solve(model):
    """SMO iterations and start of the first full-data MAP solve."""
    starts = model.starts_ if isinstance(model.starts_[0], dict) else model.starts_[0]
    info = starts[0]["trajectory"][0]["info"]
    return int(info.get("smo_iter", -1)), str(info.get("smo_start", ""))


def _case(name, make, est, n, test, metric):
    from bsvm_scale.storage import save_model

    X, y = make(n + n // 20)
    ids = np.arange(X.shape[0])
    new = slice(n // 20, n + n // 20)
    a = est().fit(X[:n], y[:n], case_ids=ids[:n])
    path = os.path.join(tempfile.mkdtemp(prefix="retrain_"), "a.h5")
    save_model(a, path)
    row = {"model": name, "n": n, "new_fraction": 0.05}
    for how, kw, fit_kw in (("cold", {}, {}), ("warm", {"warm_start_from": path}, {}),
                            ("warm_ids", {"warm_start_from": path}, {"case_ids": ids[new]})):
        t = time.perf_counter()
        m = est(**kw).fit(X[new], y[new], **fit_kw)
        row[f"{how}_s"] = time.perf_counter() - t
        row[f"{how}_first_smo_iter"], row[f"{how}_first_start"] = _first_solve(m)
        row[f"{how}_neg_log_evidence"] = -float(m.log_evidence_)
        row[f"{how}_evaluations"] = _evaluations(m)
        row[f"{how}_{metric}"] = test(m)
    row["time_ratio_warm_over_cold"] = row["warm_s"] / row["cold_s"]
    row["time_ratio_warm_ids_over_cold"] = row["warm_ids_s"] / row["cold_s"]
    row["evidence_gain_warm_minus_cold"] = row["cold_neg_log_evidence"] - row["warm_neg_log_evidence"]
    print(json.dumps(row), flush=True)
    return row


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bsvr-n", type=int, default=50_000)
    ap.add_argument("--btsvc-n", type=int, default=20_000)
    ap.add_argument("--twonorm-n", type=int, default=0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    from bsvm_scale import BayesianSVC, BayesianSVR
    from bsvm_scale.datasets import generate, synthetic

    BayesianSVR(n_starts=1, optimizer_options={"maxiter": 1}).fit(  # compile outside timings
        *(lambda d: (d.X[:300], d.y[:300]))(generate("sinc_silf", n=300, seed=0)))
    BayesianSVC(n_starts=1, optimizer_options={"maxiter": 1}).fit(
        *(lambda d: (d.X, d.y))(synthetic.gauss2d(300, seed=0)))

    sinc_test = generate("sinc_silf", n=3000, seed=2)
    c2_test = synthetic.gauss2d(20000, seed=9)
    rows = []
    if args.bsvr_n:
        rows.append(_case(
            "BSVR beta 0.3, sinc", lambda n: (lambda d: (d.X, d.y))(
                generate("sinc_silf", n=n, seed=1)), lambda **kw: BayesianSVR(beta=0.3, **kw),
            args.bsvr_n, lambda m: float(np.mean((m.predict(sinc_test.X) - sinc_test.y) ** 2)),
            "test_ase"))
    if args.btsvc_n:
        rows.append(_case(
            "BTSVC, C2", lambda n: (lambda d: (d.X, d.y))(synthetic.gauss2d(n, seed=3)),
            lambda **kw: BayesianSVC(**kw), args.btsvc_n,
            lambda m: float(np.mean(m.predict(c2_test.X) != c2_test.y)), "test_error"))
    if args.twonorm_n:
        tn_test = synthetic.twonorm(7000, seed=9)
        rows.append(_case(
            "BTSVC, twonorm", lambda n: (lambda d: (d.X, d.y))(synthetic.twonorm(n, seed=3)),
            lambda **kw: BayesianSVC(**kw), args.twonorm_n,
            lambda m: float(np.mean(m.predict(tn_test.X) != tn_test.y)), "test_error"))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
