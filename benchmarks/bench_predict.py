"""Batch scoring benchmark: ``bsvm-scale predict`` on 1,000,000 rows with a BTSVC
model of about 20,000 SVs (C2 two-Gaussian data, fixed hyperparameters), in this
process and on a LocalCluster; time and peak memory (driver and workers).

    python3 benchmarks/bench_predict.py [--rows 1000000] [--n-train 30000] [--out FILE.json]

Peak memory is the high-water mark of each process (VmHWM; the workers' are
read before the cluster closes), against the input size (rows x d x 8 bytes).
"""

import argparse
import json
import os
import tempfile
import time

_CHILD = r"""
import json, sys, time
from bsvm_scale._util.memory import peak_rss_bytes, reset_peak_rss
from bsvm_scale.pipeline.run.scoring import predict_file
reset_peak_rss()
t = time.perf_counter()
info = predict_file({model!r}, {inp!r}, {out!r}, chunk_size={chunk}, workers={workers},
                    progress=False)
el = time.perf_counter() - t
print(json.dumps({{"seconds": el, "driver_peak_mib": peak_rss_bytes() / 2**20,
                  "n_chunks": info["n_chunks"]}}))
"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--n-train", type=int, default=30_000)
    ap.add_argument("--chunk", type=int, default=10_240)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)

    import numpy as np

    from bench_tables import peak_child_run

    from bsvm_scale import BayesianSVC
    from bsvm_scale.datasets import synthetic
    from bsvm_scale.storage import save_model

    work = tempfile.mkdtemp(prefix="bench_predict_")
    d = synthetic.gauss2d(args.n_train, seed=0)
    t = time.perf_counter()
    m = BayesianSVC(optimize=False, kappa0=1.0, kappa=1.2, kappa_b=95.0).fit(d.X, d.y)
    fit_s = time.perf_counter() - t
    model = os.path.join(work, "model.h5")
    save_model(m, model)
    inp = os.path.join(work, "rows.npy")
    np.save(inp, synthetic.gauss2d(args.rows, seed=1).X)
    rows = []
    for workers in (None, 2):
        out = os.path.join(work, f"scores_{workers}.h5")
        code = _CHILD.format(model=model, inp=inp, out=out, chunk=args.chunk, workers=workers)
        res = peak_child_run(code)
        peak_children = res["workers_peak_rss_sum_mib"]
        row = {"rows": args.rows, "n_sv": int(m.support_.size), "evidence_method":
               m.evidence_method_, "workers": workers or 0, "chunk": args.chunk,
               "seconds": res["seconds"], "rows_per_s": args.rows / res["seconds"],
               "driver_peak_mib": res["driver_peak_mib"],
               "workers_peak_rss_sum_mib": peak_children,
               "input_mib": args.rows * d.X.shape[1] * 8 / 2**20, "fit_s": fit_s}
        rows.append(row)
        print(json.dumps(row), flush=True)
    a, b = (h5 := __import__("h5py")).File(os.path.join(work, "scores_None.h5")), \
        h5.File(os.path.join(work, "scores_2.h5"))
    same = all(np.array_equal(a[k][()], b[k][()]) for k in a)
    print(json.dumps({"local_equals_dask_bitwise": bool(same)}))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"rows": rows, "local_equals_dask_bitwise": bool(same)}, fh, indent=1)


if __name__ == "__main__":
    main()
