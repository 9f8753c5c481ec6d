"""Every peer benchmark of the project in one command (issue 7, item 3).

Runs, one after the other and each in its own process, the side-by-side
benchmarks against scikit-learn's LIBSVM and Gaussian processes, writing one
JSON file per script into ``--out``:

* ``bench_bsvr.py map``: BSVR MAP solve (SMO on 4.25) against LIBSVM SVR;
* ``bench_bsvr.py infer``: BSVR's whole evidence maximisation (default beta,
  coarse-to-fine starts) at 5,000 to 50,000 cases, for its time and memory
  scaling;
* ``bench_svm.py``: the project's SVR/SVC against LIBSVM SVR/SVC;
* ``bench_btsvc.py``: BTSVC MAP solve against LIBSVM SVC, evidence + gradient
  against one GaussianProcessClassifier iteration, full 20,000-case fits;
* ``bench_gpr.py``: the project's GPR against GaussianProcessRegressor.

Model-selection comparisons at equal test error (BSVR against 5-fold CV of
LIBSVM SVR and against GaussianProcessRegressor, BTSVC against CV of LIBSVM
SVC and GaussianProcessClassifier) and the scaling exponents are measured in
the reproduction pipelines R2 and C2 (``pipelines/repro_r2.toml``,
``repro_c2.toml``). The JSON files go into the results page with
``bsvm-scale results RUN... --bench OUT/*.json --out docs``.

Example::

    python3 benchmarks/peers.py --out runs/bench            # about an hour on 2 cores
    python3 benchmarks/peers.py --out runs/bench --quick    # small sizes, minutes
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def commands(out, quick=False):
    """``(name, argv)`` of every benchmark run."""
    big = ["2000", "5000"] if quick else ["2000", "5000", "10000", "20000", "50000"]
    reps = "1" if quick else "3"
    py = sys.executable
    return [
        ("bench_bsvr_map", [py, str(HERE / "bench_bsvr.py"), "map", "--n", *big, "--reps", reps,
                            "--out", str(out / "bench_bsvr_map.json")]),
        ("bench_bsvr_infer", [py, str(HERE / "bench_bsvr.py"), "infer", "--n",
                              *(["2000", "5000"] if quick else ["5000", "10000", "20000", "50000"]),
                              "--out", str(out / "bench_bsvr_infer.json")]),
        ("bench_svm", [py, str(HERE / "bench_svm.py"), "--sizes", *big, "--repeats", reps,
                       "--json", str(out / "bench_svm.json")]),
        ("bench_btsvc", [py, str(HERE / "bench_btsvc.py"), "--part", "all", "--map-sizes", *big,
                         "--sizes", *(["500", "1000"] if quick else ["500", "1000", "2000", "5000"]),
                         "--repeat", "1" if quick else "2",
                         "--fit-n", "5000" if quick else "20000", "--test-n", "5000",
                         "--out", str(out / "bench_btsvc.json")]),
        ("bench_gpr", [py, str(HERE / "bench_gpr.py"), "--sizes",
                       *(["250", "500"] if quick else ["250", "500", "1000", "2000", "4000"]),
                       "--json", str(out / "bench_gpr.json")]),
    ]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="folder for the JSON files and logs")
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--only", nargs="*", default=None, help="names of the benchmarks to run")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = []
    for name, argv_ in commands(out, args.quick):
        if args.only and name not in args.only:
            continue
        t = time.perf_counter()
        print(f"== {name}: {' '.join(argv_)}", flush=True)
        with open(out / f"{name}.log", "w") as log:
            rc = subprocess.run(argv_, stdout=log, stderr=subprocess.STDOUT).returncode
        print(f"   exit {rc} after {time.perf_counter() - t:.0f} s (log {out / (name + '.log')})",
              flush=True)
        if rc:
            failed.append(name)
    print("include them with: bsvm-scale results RUN... --bench "
          f"{out}/*.json --out docs")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
