"""Fit times of the classical SVMs of bsvm_scale against scikit-learn (LIBSVM).

Both sides see the same data and the same C, epsilon, gamma = kappa/2,
tolerance and kernel-cache budget, in one process; each fit is repeated and
the median wall time is reported with the ratio ours / LIBSVM. Also printed:
numbers of support vectors and the largest difference of the decision values
on 1000 test inputs (a check that both solved the same problem).

Data: SVR on sinc(x) = sin|x|/|x| with x uniform on [-10, 10] and Gaussian
noise of variance 0.04 (experiments R2); SVC on the two 2-D Gaussian classes
of experiments C2 (N((-2,0), diag(1,2)) against N((2,0), diag(2,1))).

Examples::

    python benchmarks/bench_svm.py
    python benchmarks/bench_svm.py --sizes 2000 5000 10000 20000 50000 --repeats 3 \
        --json bench_svm.json
    python benchmarks/bench_svm.py --models svc --sizes 50000 --repeats 1
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import numpy as np


def sinc_data(n, rng):
    X = rng.uniform(-10.0, 10.0, (n, 1))
    x = np.abs(X[:, 0])
    f = np.where(x > 0, np.sin(x) / np.where(x > 0, x, 1.0), 1.0)
    return X, f + rng.normal(0.0, 0.2, n)


def gauss2d_data(n, rng):
    m = n // 2
    Xp = rng.normal([-2.0, 0.0], [1.0, np.sqrt(2.0)], (m, 2))
    Xn = rng.normal([2.0, 0.0], [np.sqrt(2.0), 1.0], (n - m, 2))
    X = np.vstack([Xp, Xn])
    y = np.r_[np.ones(m), -np.ones(n - m)]
    perm = rng.permutation(n)
    return X[perm], y[perm]


def timed(fn, repeats):
    times = []
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def run(args):
    from sklearn import svm as sksvm

    from bsvm_scale.baselines.svm import SVC, SVR

    rng0 = np.random.default_rng(args.seed)
    # compile the Numba code outside the timings
    Xw, yw = sinc_data(200, rng0)
    SVR(C=args.C, epsilon=args.epsilon, kappa=args.kappa).fit(Xw, yw)
    Xw, yw = gauss2d_data(200, rng0)
    SVC(C=args.C_svc, kappa=args.kappa_svc).fit(Xw, yw)

    rows = []
    for model in args.models:
        for n in args.sizes:
            rng = np.random.default_rng(args.seed + n)
            if model == "svr":
                X, y = sinc_data(n, rng)
                Xt, _ = sinc_data(1000, rng)
                ours = lambda: SVR(C=args.C, epsilon=args.epsilon, kappa=args.kappa, tol=args.tol,
                                   cache_mb=args.cache_mb, shrinking=not args.no_shrinking).fit(X, y)
                ref = lambda: sksvm.SVR(C=args.C, epsilon=args.epsilon, gamma=args.kappa / 2,
                                        tol=args.tol, cache_size=args.cache_mb,
                                        shrinking=not args.no_shrinking).fit(X, y)
                dec = lambda m: m.predict(Xt)
            else:
                X, y = gauss2d_data(n, rng)
                Xt, _ = gauss2d_data(1000, rng)
                ours = lambda: SVC(C=args.C_svc, kappa=args.kappa_svc, tol=args.tol,
                                   cache_mb=args.cache_mb, shrinking=not args.no_shrinking).fit(X, y)
                ref = lambda: sksvm.SVC(C=args.C_svc, gamma=args.kappa_svc / 2, tol=args.tol,
                                        cache_size=args.cache_mb,
                                        shrinking=not args.no_shrinking).fit(X, y)
                dec = lambda m: m.decision_function(Xt)
            t_ours, m_ours = timed(ours, args.repeats)
            t_ref, m_ref = timed(ref, args.repeats)
            row = {
                "model": model, "n": n, "ours_s": t_ours, "libsvm_s": t_ref,
                "ratio_ours_over_libsvm": t_ours / t_ref,
                "sv_ours": int(len(m_ours.support_)), "sv_libsvm": int(len(m_ref.support_)),
                "iter_ours": int(m_ours.n_iter_), "iter_libsvm": int(np.sum(m_ref.n_iter_)),
                "max_abs_dec_diff": float(np.max(np.abs(dec(m_ours) - dec(m_ref)))),
            }
            rows.append(row)
            print(f"{model:>4} {n:>7d} {t_ours:9.3f} {t_ref:9.3f} "
                  f"{row['ratio_ours_over_libsvm']:7.2f} "
                  f"{row['sv_ours']:>7d} {row['sv_libsvm']:>7d} {row['iter_ours']:>9d} "
                  f"{row['iter_libsvm']:>9d} {row['max_abs_dec_diff']:10.2e}", flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", nargs="+", choices=["svr", "svc"], default=["svr", "svc"])
    p.add_argument("--sizes", nargs="+", type=int, default=[2000, 5000, 10000, 20000, 50000])
    p.add_argument("--repeats", type=int, default=3, help="fits per side; the median is reported")
    p.add_argument("--C", type=float, default=10.0, help="C of the SVR")
    p.add_argument("--epsilon", type=float, default=0.1)
    p.add_argument("--kappa", type=float, default=0.5, help="SVR kernel kappa (gamma = kappa/2)")
    p.add_argument("--C-svc", dest="C_svc", type=float, default=1.0)
    p.add_argument("--kappa-svc", dest="kappa_svc", type=float, default=1.0)
    p.add_argument("--tol", type=float, default=1e-3)
    p.add_argument("--cache-mb", dest="cache_mb", type=float, default=256.0)
    p.add_argument("--no-shrinking", action="store_true", help="disable shrinking on both sides")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--json", help="also write the results to this JSON file")
    args = p.parse_args(argv)
    for name in ("repeats",):
        if getattr(args, name) < 1:
            p.error(f"--{name} must be >= 1")
    if any(n < 10 for n in args.sizes):
        p.error("--sizes must be >= 10")

    print(f"# python {platform.python_version()} on {platform.machine()}, "
          f"tol={args.tol:g}, cache={args.cache_mb:g} MB, repeats={args.repeats}")
    print(f"# SVR: C={args.C:g} epsilon={args.epsilon:g} kappa={args.kappa:g} "
          f"(gamma={args.kappa / 2:g}); SVC: C={args.C_svc:g} kappa={args.kappa_svc:g}")
    print(f"{'mdl':>4} {'n':>7} {'ours[s]':>9} {'libsvm[s]':>9} {'ratio':>7} {'SV':>7} "
          f"{'SV_ref':>7} {'iter':>9} {'iter_ref':>9} {'max|df|':>10}")
    rows = run(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"args": vars(args), "rows": rows}, fh, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
