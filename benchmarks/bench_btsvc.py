"""Benchmark of the BTSVC (thesis ch. 5) against scikit-learn's Laplace GPC.

Three parts (``--part``; ``all`` runs them all):

``map``
    One cold MAP solve of the BTSVC dual (5.29) against LIBSVM's C-SVC
    (scikit-learn) on the same C2 data, kernel, tolerance and cache, matched
    by ``C = kappa0``; sizes ``--map-sizes`` (2,000 to 50,000), with both
    models' test errors.

``evidence``
    Time of one evidence + gradient evaluation of the BTSVC (MAP solve by SMO,
    cold and warm started, plus (5.35)/(5.36) over the SV block) against one
    ``GaussianProcessClassifier`` optimiser iteration, i.e. one call of its
    ``log_marginal_likelihood(theta, eval_gradient=True)`` (Newton iterations
    for the Laplace mode plus the O(n^3) gradient), on the C2 data
    (docs/protocols.md, C2) for several training sizes. Both at the same covariance
    starting point (kappa0 = 10, kappa = 1/d on standardised inputs; the GPC
    kernel is ``ConstantKernel * RBF`` with matching variance and length).

``fit``
    A full fit (evidence maximisation, default starts) at large n on C2 and
    twonorm, each in a fresh process, reporting wall time, peak RSS (the
    larger of the kernel's high-water mark ``VmHWM`` and psutil samples every
    20 ms; the sampling thread cannot run while Numba code holds the GIL,
    ``VmHWM`` is the
    kernel's figure), SVs, hyperparameters, test error (and the Bayes error
    for C2).

Examples
--------
    python benchmarks/bench_btsvc.py --part evidence --sizes 500 1000 2000 5000
    python benchmarks/bench_btsvc.py --part fit --fit-n 20000 --datasets gauss2d twonorm

Measured (2026-11-26, 2 cores, quiet machine, load ~1-2; figures in
docs/bench/bench_btsvc_evidence.json and bench_btsvc_fit.json)
--------------------------------------------------------------------
``python3 benchmarks/bench_btsvc.py --part evidence --sizes 500 1000 2000 5000
--repeat 2``: evidence + gradient per optimiser iteration, C2, kappa0 = 10,
kappa = 1/d, kappa_b = 100 (best of 2); GPC = one
``log_marginal_likelihood(theta, eval_gradient=True)`` of scikit-learn's
GaussianProcessClassifier::

        n    SVs  BTSVC cold s  BTSVC warm s   GPC s   GPC/warm  GPC/cold
      500    188        0.0120        0.0035   0.147       42        12
     1000    382        0.0414        0.0116   0.919       79        22
     2000    924        0.1797        0.0848   2.852       34        16
     5000   3040        2.4279        1.7425  31.061       18        13

(an earlier run the same hour: GPC/warm 27, 54, 37, 28; the small-n ratios
move with timer noise, every one is above 10).

``python3 benchmarks/bench_btsvc.py --part fit --fit-n 20000 --test-n 5000
--datasets twonorm gauss2d``: full fit, coarse-to-fine starts (default 2
starts on a 4,000-case subsample, the best refined on all 20,000), 5,000 test
cases, each in a fresh process::

    data       SVs  full+sub evals   fit s   peak MiB   test err   Bayes err   ln evidence
    twonorm   4496       7 + 39       95.5      520     0.0222     0.0224      -1379.15
    gauss2d  13879       2 + 39      168.9     1812     0.0402     0.0394      -2519.24

Both under the 10 min / 2 GiB target. C2's peak is the ``m x m`` evidence
block (8 m^2 bytes, m = 13,879: 1.54 GB). Before the coarse-to-fine starts:
twonorm 830 s / 1.0 GB, C2 did not finish. Before the two run_start fixes
(first step within the trust radius; line-search steps below ``min_step``
not evaluated) the same fits took 119.6 s (11 + 43 evaluations) and 313.7 s
(6 + 39): on C2 the full-data phase never left the subsample optimum
(ln evidence -2573.41, 54 lower than now; test error 0.0388).

An earlier version of this script took ``ru_maxrss``, which a spawned
process inherits from its parent (2.4 GB after the GPC timings of the
evidence part); it now reads ``VmHWM``.

Evidence + gradient (5.35)/(5.36) before (dense copies) and after the
in-place evaluation (one ``m x m`` array), same process, same MAP solution,
C2 n = 3000 at kappa0 = 1, kappa = 1/2, kappa_b = 100 (m = 1744 SVs), under
load earlier the same day::

    old: 6.96 s, 73 MB allocated at peak     new: 4.25 s, 24 MB (= 8 m^2)
    time old/new 1.64, memory old/new 3.08; values identical, gradients to 2e-10
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from bsvm_scale._util.memory import peak_rss_bytes  # noqa: E402


def _data(name, n, seed):
    from bsvm_scale.datasets import synthetic
    ds = getattr(synthetic, name)(n, seed)
    return ds.X, ds.y


def _bayes_error(name, X, y):
    if name != "gauss2d":
        if name == "twonorm":  # optimal rule: sign of the sum of the inputs
            return float(np.mean(np.where(X.sum(axis=1) > 0, 1, -1) != y))
        return float("nan")
    from bsvm_scale.datasets.synthetic import gauss2d_posterior
    return float(np.mean(np.where(gauss2d_posterior(X) > 0.5, 1, -1) != y))


def _timeit(fn, repeat, reduce=min):
    """``(reduce(wall times of repeat calls), last result)``."""
    times, out = [], None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return float(reduce(times)), out


def bench_map(sizes, repeat, seed, kappa0=10.0, cache_mb=256.0):
    """Cold MAP solve of the BTSVC dual (5.29) against LIBSVM's C-SVC.

    Same standardised C2 data, same Gaussian kernel (``gamma = kappa / 2``,
    ``kappa = 1/d``), same tolerance 1e-3 and cache budget. The problems
    differ (trigonometric loss, bias through ``kappa_b = 100``; hinge loss,
    explicit bias); they are matched by ``C = kappa0``, since scaling the
    kernel by ``kappa0`` is the same as scaling C. Medians of ``repeat``.
    """
    from sklearn.svm import SVC

    from bsvm_scale._util.base import Standardizer
    from bsvm_scale.models.btsvc import TrigObjective
    from bsvm_scale.inference.covariance import GaussianCovariance

    Xw, yw = _data("gauss2d", 200, seed)  # compile outside the timings
    TrigObjective(Xw, np.where(yw > 0, 1.0, -1.0), False).solve(np.log([1.0, 0.5, 100.0]))
    rows = []
    print(f"\nCold MAP solve, C2, kappa0 = C = {kappa0:g}, kappa = 1/d, tol 1e-3, "
          f"cache {cache_mb:g} MiB (median of {repeat})")
    print("%7s %8s %8s %10s %10s %8s %9s %9s" % ("n", "SVs", "LIBSVM", "BTSVC s", "LIBSVM s",
                                                 "ratio", "err BTSVC", "err SVC"))
    for n in sizes:
        X, y = _data("gauss2d", n, seed)
        Xt, yt = _data("gauss2d", 5000, seed + 1)
        sc = Standardizer.fit(X)
        Xs, Xts = sc.transform(X), sc.transform(Xt)
        yb = np.where(y > 0, 1.0, -1.0)
        theta = GaussianCovariance(kappa0, 1.0 / X.shape[1], 100.0).theta

        def ours():
            return TrigObjective(Xs, yb, False, cache_mb=cache_mb).solve(theta)

        t_ours, (cov, sol) = _timeit(ours, repeat, np.median)
        alpha = sol["alpha"]
        sv = np.flatnonzero(alpha > 0)
        f = np.zeros(len(Xts))
        for i in range(0, len(sv), 2000):  # f(x) = sum_i y_i alpha_i Cov(x, x_i), (5.32)
            j = sv[i:i + 2000]
            f += cov.cross(Xts, Xs[j]) @ (yb[j] * alpha[j])
        lib = SVC(C=kappa0, gamma=0.5 / X.shape[1], tol=1e-3, cache_size=cache_mb)
        t_lib, _ = _timeit(lambda: lib.fit(Xs, y), repeat, np.median)
        r = {"bench": "btsvc_map_vs_libsvm", "n": n, "n_sv": int(sv.size),
             "n_sv_libsvm": int(lib.support_.size), "btsvc_s": t_ours, "libsvm_s": t_lib,
             "ratio_btsvc_over_libsvm": t_ours / t_lib,
             "err_btsvc": float(np.mean(np.where(f > 0, 1, -1) != yt)),
             "err_libsvm": float(np.mean(lib.predict(Xts) != yt))}
        rows.append(r)
        print("%7d %8d %8d %10.3f %10.3f %8.2f %9.4f %9.4f" % (
            n, r["n_sv"], r["n_sv_libsvm"], t_ours, t_lib, r["ratio_btsvc_over_libsvm"],
            r["err_btsvc"], r["err_libsvm"]), flush=True)
    return rows


def bench_evidence(sizes, gpc_max_n, repeat, seed):
    from sklearn.gaussian_process import GaussianProcessClassifier
    from sklearn.gaussian_process.kernels import RBF, ConstantKernel

    from bsvm_scale._util.base import Standardizer
    from bsvm_scale.models.btsvc import TrigObjective
    from bsvm_scale.inference.covariance import GaussianCovariance

    # warm-up: Numba compilation outside the timings
    Xw, yw = _data("gauss2d", 200, seed)
    TrigObjective(Xw, np.where(yw > 0, 1.0, -1.0), False)(np.log([10.0, 0.5, 100.0]))

    rows = []
    for n in sizes:
        X, y = _data("gauss2d", n, seed)
        Xs = Standardizer.fit(X).transform(X)
        yb = np.where(y > 0, 1.0, -1.0)
        d = X.shape[1]
        theta = GaussianCovariance(10.0, 1.0 / d, 100.0).theta
        theta2 = theta + np.array([0.05, -0.05, 0.05])  # a nearby optimiser step

        def cold():
            obj = TrigObjective(Xs, yb, False)
            t0 = time.perf_counter()
            obj.solve(theta)
            t1 = time.perf_counter()
            val, grad, info = obj(theta)  # SMO returns at once (converged)
            t2 = time.perf_counter()
            return t1 - t0, t2 - t1, info["n_sv"], obj

        (t_cold_total, (t_smo, t_ev, n_sv, obj)) = _timeit(cold, repeat)

        def warm():
            obj.alpha = obj.best[2].copy()
            return obj(theta2)

        t_warm, _ = _timeit(warm, repeat)
        t_gpc = float("nan")
        if n <= gpc_max_n:
            ls = np.sqrt(d)  # kappa = 1/d  <=>  length scale sqrt(d)
            kern = ConstantKernel(10.0) * RBF(ls)
            gpc = GaussianProcessClassifier(kernel=kern, optimizer=None).fit(Xs, y)
            base = gpc.base_estimator_
            th = base.kernel_.theta
            t_gpc, _ = _timeit(lambda: base.log_marginal_likelihood(th, eval_gradient=True),
                               repeat)
        rows.append((n, n_sv, t_smo, t_ev, t_smo + t_ev, t_warm, t_gpc))
        print(f"  n={n}: done", file=sys.stderr, flush=True)
    print("\nEvidence + gradient per optimiser iteration, C2 data, "
          "kappa0=10, kappa=1/d, kappa_b=100 (best of %d)" % repeat)
    hdr = ("n", "SVs", "SMO cold s", "evid+grad s", "BTSVC cold s", "BTSVC warm s", "GPC s",
           "GPC/BTSVC warm")
    print("%7s %6s %11s %12s %13s %13s %10s %15s" % hdr)
    for n, m, a, b, c, w, g in rows:
        print("%7d %6d %11.4f %12.4f %13.4f %13.4f %10.4f %15.1f" % (n, m, a, b, c, w, g, g / w))
    keys = ("n", "n_sv", "smo_cold_s", "evidence_grad_s", "btsvc_cold_s", "btsvc_warm_s",
            "gpc_s")
    return [dict(zip(keys, r), bench="btsvc_evidence_vs_gpc", gpc_over_btsvc_warm=r[6] / r[5])
            for r in rows]


def _fit_worker(name, n, n_test, seed, queue, cache_mb=256.0, n_starts=None,
                evidence_method="auto", evidence_mb=1024.0):
    import psutil

    from bsvm_scale import BayesianSVC

    proc = psutil.Process()
    peak = [proc.memory_info().rss]
    stop = threading.Event()

    def sampler():
        t0 = time.perf_counter()
        last = t0
        while not stop.is_set():
            peak[0] = max(peak[0], proc.memory_info().rss)
            time.sleep(0.02)
            if time.perf_counter() - last > 60:
                last = time.perf_counter()
                print(f"  {name}: {last - t0:.0f} s, peak RSS {peak[0] / 2**20:.0f} MB",
                      file=sys.stderr, flush=True)

    X, y = _data(name, n, seed)
    Xt, yt = _data(name, n_test, seed + 1)
    # warm-up compile on a tiny problem so that the timing is the fit itself
    BayesianSVC(optimize=False).fit(X[:50], y[:50])
    rss0 = proc.memory_info().rss
    th = threading.Thread(target=sampler, daemon=True)
    th.start()
    t = time.perf_counter()
    clf = BayesianSVC(n_starts=n_starts, cache_mb=cache_mb,
                      evidence_method=evidence_method, evidence_mb=evidence_mb).fit(X, y)
    t_fit = time.perf_counter() - t
    t = time.perf_counter()
    err = float(np.mean(clf.predict(Xt) != yt))
    t_pred = time.perf_counter() - t
    stop.set()
    th.join()
    h = clf.hyperparameters_
    queue.put({"data": name, "n": n, "fit_s": t_fit, "pred_s": t_pred, "n_test": n_test,
               "peak_rss_mb": peak[0] / 2**20, "rss_before_mb": rss0 / 2**20,
               "vm_hwm_mb": peak_rss_bytes() / 2**20,
               "n_sv": len(clf.support_), "n_iter": clf.n_opt_iter_,
               # evaluations made (L-BFGS-B's nfev also counts repeated points)
               "n_eval": len(clf.starts_[0]["trajectory"]), "err": err,
               "n_starts": len(clf.starts_),
               "n_eval_subsample": sum(len(s["subsample"]["trajectory"]) for s in clf.starts_
                                       if "subsample" in s),
               "bayes_err": _bayes_error(name, Xt, yt),
               "kappa0": h["kappa0"], "kappa": h["kappa"], "kappa_b": h["kappa_b"],
               "log_evidence": clf.log_evidence_, "evidence_method": clf.evidence_method_,
               "message": clf.starts_[0]["message"],
               "full_data_values": [round(float(r["fun"]), 3) for r in clf.starts_[0]["trajectory"]],
               "evidence_error": clf.evidence_error_,
               "map_s": [round(float(r["info"].get("map_s", 0.0)), 2)
                         for r in clf.starts_[0]["trajectory"]],
               "evidence_s": [round(float(r["info"].get("evidence_s", 0.0)), 2)
                              for r in clf.starts_[0]["trajectory"]]})


def bench_fit(datasets, n, n_test, seed, cache_mb=256.0, n_starts=None, evidence_method="auto",
              evidence_mb=1024.0):
    ctx = mp.get_context("spawn")
    out = []
    print(f"\nFull fit (L-BFGS-B on ln kappa0, ln kappa, ln kappa_b; n_starts={n_starts}, "
          f"coarse-to-fine starts at the default init_subsample), n={n}, test n={n_test}; "
          "evals = full-data evaluations (+ subsample ones)")
    print("%9s %7s %6s %5s %9s %9s %9s %10s %8s %8s %9s %9s %9s %11s" % (
        "data", "n", "SVs", "iter", "evals", "fit s", "pred s", "peak MB", "err", "Bayes",
        "kappa0", "kappa", "kappa_b", "ln evid"), flush=True)
    for name in datasets:
        q = ctx.Queue()
        p = ctx.Process(target=_fit_worker, args=(name, n, n_test, seed, q, cache_mb, n_starts,
                                                  evidence_method, evidence_mb))
        p.start()
        r = q.get()
        p.join()
        out.append(dict(r, bench="btsvc_fit", cache_mb=cache_mb, evidence_mb=evidence_mb))
        print(f"  {r['data']}: evidence {r['evidence_method']} (error {r['evidence_error']:.3g} "
              f"nats); full-data evaluations: MAP solve s {r['map_s']}, evidence s "
              f"{r['evidence_s']}", flush=True)
        print("%9s %7d %6d %5d %9s %9.1f %9.2f %10.0f %8.4f %8.4f %9.3g %9.3g %9.3g %11.2f" % (
            r["data"], r["n"], r["n_sv"], r["n_iter"],
            f"{r['n_eval']}+{r['n_eval_subsample']}", r["fit_s"], r["pred_s"],
            max(r["peak_rss_mb"], r["vm_hwm_mb"]), r["err"], r["bayes_err"], r["kappa0"],
            r["kappa"], r["kappa_b"],
            r["log_evidence"]), flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--part", choices=["evidence", "fit", "map", "all"], default="all")
    ap.add_argument("--map-sizes", type=int, nargs="+", default=[2000, 5000, 10000, 20000, 50000])
    ap.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 5000])
    ap.add_argument("--gpc-max-n", type=int, default=5000,
                    help="largest n for which the GPC is timed")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--fit-n", type=int, default=20000)
    ap.add_argument("--test-n", type=int, default=20000)
    ap.add_argument("--datasets", nargs="+", default=["gauss2d", "twonorm"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache-mb", type=float, default=256.0,
                    help="row-cache budget of the full fits (MiB); the cache is freed "
                         "while a large evidence block exists")
    ap.add_argument("--n-starts", type=int, default=None,
                    help="starts of the full fits (default: the estimator's, 2)")
    ap.add_argument("--evidence-method", default="auto", choices=["auto", "dense", "matrix_free"],
                    help="evidence_method of the full fits")
    ap.add_argument("--evidence-mb", type=float, default=1024.0,
                    help="evidence_mb of the full fits (the dense block needs 8 m^2 bytes)")
    ap.add_argument("--out", help="write the rows (both parts) as JSON here")
    args = ap.parse_args(argv)
    rows = []
    if args.part in ("map", "all"):
        rows += bench_map(args.map_sizes, max(args.repeat, 1), args.seed, cache_mb=args.cache_mb)
    if args.part in ("evidence", "all"):
        rows += bench_evidence(args.sizes, args.gpc_max_n, args.repeat, args.seed)
    if args.part in ("fit", "all"):
        rows += bench_fit(args.datasets, args.fit_n, args.test_n, args.seed, args.cache_mb,
                          args.n_starts, args.evidence_method, args.evidence_mb)
    if args.out:
        info = {"load_avg": os.getloadavg(), "cpus": os.cpu_count()}
        with open(args.out, "w") as fh:
            json.dump({"rows": rows, "info": info}, fh, indent=1)


if __name__ == "__main__":
    main()
