"""ARD regression against scikit-learn's GaussianProcessRegressor.

Friedman #1 (10 inputs, 5 relevant) with Gaussian noise (sd 1, GPR's own
noise model) and with heavy-tailed noise (Student t, 3 degrees of freedom,
scale 1): BSVR-ARD (the library's defaults; ``--beta 0.3`` for the runs recorded
before 2026-11-29, which fixed it) against
``GaussianProcessRegressor`` with an ARD RBF + constant + white-noise kernel
(normalised targets, its default single optimiser run), both in one process. Reported:
fit seconds, test ASE against the noisy targets and against the true function
(5,000 test cases), and the ratios. ``--kappa0 fixed evidence`` compares
BSVR's default ``kappa0 = var(y)`` with ``kappa0="evidence"`` (inferred).
Both models use every core: GPR through its multithreaded BLAS, BSVR through
``n_jobs`` (default -1: the isotropic first stage of its two starts on two
threads; ``--n-jobs 1`` for one). ``--init-subsample`` compares subsample sizes of
coarse-to-fine starts (``default``, ``none`` or a number)::

    python3 benchmarks/bench_ard.py [--n 2000] [--seeds 0 1 2] [--ard-init ROUTE ...]
                                    [--kappa0 fixed|evidence ...] [--noise gauss student_t3]
                                    [--n-jobs N] [--init-subsample S ...] [--out FILE.json]
"""

import argparse
import json
import time

import numpy as np


def _data(n, n_test, seed, noise):
    from sklearn.datasets import make_friedman1

    X, f = make_friedman1(n + n_test, n_features=10, noise=0.0, random_state=seed)
    rng = np.random.default_rng(seed + 1000)
    e = rng.standard_normal(n + n_test) if noise == "gauss" else rng.standard_t(3, n + n_test)
    return X[:n], (f + e)[:n], X[n:], (f + e)[n:], f[n:]


def _gpr(d):
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

    kernel = ConstantKernel(1.0) * RBF(length_scale=np.ones(d)) + WhiteKernel(0.1)
    return GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=0,
                                    random_state=0)


def _case(name, make, X, y, Xt, yt, ft):
    t = time.perf_counter()
    m = make().fit(X, y)
    seconds = time.perf_counter() - t
    p = m.predict(Xt)
    return {"model": name, "seconds": seconds, "ase": float(np.mean((p - yt) ** 2)),
            "ase_true": float(np.mean((p - ft) ** 2))}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--n-test", type=int, default=5000)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--ard-init", nargs="+", default=["isotropic", "continuation"])
    ap.add_argument("--kappa0", nargs="+", default=["fixed"], choices=["fixed", "evidence"])
    ap.add_argument("--noise", nargs="+", default=["gauss", "student_t3"],
                    choices=["gauss", "student_t3"])
    ap.add_argument("--n-jobs", type=int, default=-1)
    ap.add_argument("--beta", type=float, default=None,
                    help="BSVR's beta (default: the library's default_beta(n))")
    ap.add_argument("--init-subsample", nargs="+", default=["default"],
                    help="BayesianSVR init_subsample values to compare ('default': the "
                         "estimator's, 'none': no subsample phase)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from bsvm_scale import BayesianSVR

    rows = []
    subs = {"default": {}, "none": {"init_subsample": None}}
    variants = [(route, k0, sub) for route in args.ard_init for k0 in args.kappa0
                for sub in args.init_subsample]
    for noise in args.noise:
        for seed in args.seeds:
            X, y, Xt, yt, ft = _data(args.n, args.n_test, seed, noise)
            gpr = _case("sklearn-GPR-ARD", lambda: _gpr(X.shape[1]), X, y, Xt, yt, ft)
            for route, k0, sub in variants:
                kw = subs[sub] if sub in subs else {"init_subsample": int(sub)}
                bsvr = _case(f"BSVR-ARD ({route}, kappa0 {k0}, init_subsample {sub})",
                             lambda: BayesianSVR(
                                 beta=args.beta, ard=True, ard_init=route,
                                 kappa0="evidence" if k0 == "evidence" else None,
                                 n_jobs=args.n_jobs, **kw), X, y, Xt, yt, ft)
                row = {"noise": noise, "seed": seed, "n": args.n, "beta": args.beta,
                       "ard_init": route,
                       "n_jobs": args.n_jobs, "init_subsample": sub,
                       "kappa0": k0, "bsvr": bsvr, "gpr": gpr,
                       "speedup_gpr_over_bsvr": gpr["seconds"] / bsvr["seconds"],
                       "ase_ratio_bsvr_over_gpr": bsvr["ase"] / gpr["ase"],
                       "ase_true_ratio_bsvr_over_gpr": bsvr["ase_true"] / gpr["ase_true"]}
                print(json.dumps(row), flush=True)
                rows.append(row)
    summary = {}
    for noise, (route, k0, sub) in ((a, b) for a in args.noise for b in variants):
        r = [x for x in rows if x["noise"] == noise and x["ard_init"] == route
             and x["kappa0"] == k0 and x["init_subsample"] == sub]
        key = f"{noise}/{route}/kappa0 {k0}"
        key += "" if sub == "default" else f"/init_subsample {sub}"
        summary[key] = {k: float(np.median([x[k] for x in r]))
                        for k in ("speedup_gpr_over_bsvr", "ase_ratio_bsvr_over_gpr",
                                  "ase_true_ratio_bsvr_over_gpr")}
    print(json.dumps(summary, indent=1))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"rows": rows, "summary_medians": summary}, fh, indent=1)


if __name__ == "__main__":
    main()
