"""Benchmark: exact GPR (bsvm_scale.baselines.gp.GPR) against scikit-learn's
GaussianProcessRegressor, fit time and peak memory.

Data: sinc with Gaussian noise, x ~ U[-10, 10], y = sin|x|/|x| + N(0, 0.04)
(noise variance 0.04). Both models get the same standardised inputs, the same
kernel family

    kappa0 * exp(-kappa/2 ||x - x'||^2) + kappa_b + sigma2 * delta(x, x')
    = ConstantKernel * RBF(1/sqrt(kappa)) + ConstantKernel + WhiteKernel,

the same initial hyperparameters and box (1e-5, 1e5), the same number of
optimiser starts, and L-BFGS-B with the same options (sklearn through a custom
``optimizer`` callable). They run one after the other in one process; peak
memory is the maximum RSS (psutil) sampled by a separate monitor process,
minus the RSS just before the fit (glibc's mmap threshold is pinned so that
freed buffers return to the OS between fits).

The optimisers may take different paths, so time per evidence evaluation
(fit time / evaluations) is reported alongside the fit time.

Measured on the shared 2-core development box (one BLAS thread for both,
one start each; maxiter 20 up to n = 4000, maxiter 3 at n = 8000)::

       n  ours s/eval  sklearn s/eval  time ratio  ours peak MB  sklearn peak MB
     500        0.095           0.128       1.18x             3               26
    1000        0.203           0.481       2.28x             9               84
    2000        0.955           2.667       2.50x            33              336
    4000        5.576          17.287       3.47x           126             1343
    8000       35.256         105.087       2.98x           505             5377

Both reach the same evidence and test error (e.g. n = 8000: log evidence
1527.485 vs 1527.480, RMSE to the noise-free sinc 0.0080 for both). The exact
GP's own working set is one n x n float64 matrix (8 n^2 bytes).

Usage::

    python benchmarks/bench_gpr.py --sizes 500 1000 2000 4000 8000 --maxiter 20 \
        --json bench_gpr.json
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import sys
import time
import warnings

import numpy as np


def sinc_data(n, seed):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10.0, 10.0, size=(n, 1))
    ax = np.abs(x[:, 0])
    f = np.where(ax > 0, np.sin(ax) / np.where(ax > 0, ax, 1.0), 1.0)
    return x, f + rng.normal(0.0, 0.2, size=n), f


def _monitor(pid, stop, out, interval):
    import psutil

    proc = psutil.Process(pid)
    peak = 0
    while not stop.is_set():
        try:
            peak = max(peak, proc.memory_info().rss)
        except psutil.Error:
            break
        stop.wait(interval)
    out.put(peak)


class PeakRSS:
    """Context manager: peak RSS of this process (sampled from another process)."""

    def __init__(self, interval=0.005):
        self.interval = interval

    def __enter__(self):
        import psutil

        ctx = mp.get_context("spawn")
        self._stop = ctx.Event()
        self._out = ctx.Queue()
        self.base = psutil.Process().memory_info().rss
        self._proc = ctx.Process(target=_monitor,
                                 args=(os.getpid(), self._stop, self._out, self.interval))
        self._proc.start()
        time.sleep(0.5)          # let the monitor start sampling
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self.peak = self._out.get(timeout=60)
        self._proc.join(timeout=60)
        self.peak_mb = max(self.peak - self.base, 0) / 2**20
        return False


def fit_ours(X, y, n_starts, options, seed):
    from bsvm_scale.baselines.gp import GPR

    m = GPR(kappa0=1.0, kappa=1.0, kappa_b=1.0, sigma2=0.1, n_starts=n_starts,
            bounds=(1e-5, 1e5), options=options, random_state=seed, max_memory_mb=1e6)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(X, y)
    dt = time.perf_counter() - t0
    n_eval = sum(s["n_eval"] for s in m.starts_) + 1   # + the final factorisation
    return m, dt, n_eval, m.log_marginal_likelihood_


def fit_sklearn(X, y, n_starts, options, seed):
    from scipy.optimize import minimize
    from sklearn.gaussian_process import GaussianProcessRegressor
    from sklearn.gaussian_process.kernels import RBF, WhiteKernel
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    b = (1e-5, 1e5)
    kernel = (C(1.0, b) * RBF(1.0, (1.0 / np.sqrt(b[1]), 1.0 / np.sqrt(b[0]))) + C(1.0, b)
              + WhiteKernel(0.1, b))
    count = {"n": 0}

    def optimizer(obj_func, initial_theta, bounds):
        def f(theta):
            count["n"] += 1
            return obj_func(theta, eval_gradient=True)

        res = minimize(f, initial_theta, jac=True, method="L-BFGS-B", bounds=bounds,
                       options=options)
        return res.x, res.fun

    m = GaussianProcessRegressor(kernel, alpha=1e-10, optimizer=optimizer,
                                 n_restarts_optimizer=n_starts - 1, normalize_y=False,
                                 random_state=seed)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m.fit(X, y)
    dt = time.perf_counter() - t0
    return m, dt, count["n"] + 1, float(m.log_marginal_likelihood_value_)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", type=int, nargs="+", default=[500, 1000, 2000, 4000, 8000])
    p.add_argument("--n-starts", type=int, default=1,
                   help="optimiser starts per model (sklearn: n_restarts_optimizer + 1)")
    p.add_argument("--maxiter", type=int, default=20, help="L-BFGS-B iteration limit")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--n-test", type=int, default=1000)
    p.add_argument("--skip-sklearn-above", type=int, default=None,
                   help="run only bsvm_scale above this n")
    p.add_argument("--blas-threads", type=int, default=1,
                   help="BLAS/LAPACK threads for both models (threadpoolctl); 0 = library "
                        "default. On a small shared machine multi-threaded OpenBLAS can be "
                        "many times slower than one thread, so the default is 1.")
    p.add_argument("--json", default=None, help="write the results to this JSON file")
    args = p.parse_args(argv)

    import psutil
    import scipy
    import sklearn
    from threadpoolctl import threadpool_limits

    if args.blas_threads > 0:
        threadpool_limits(limits=args.blas_threads, user_api="blas")

    options = {"maxiter": args.maxiter, "ftol": 1e-7, "gtol": 1e-4}
    rows = []
    header = (f"{'n':>6} {'model':>9} {'fit_s':>9} {'evals':>6} {'s/eval':>8} {'peakMB':>8} "
              f"{'lml':>11} {'rmse_f':>7}")
    print(f"# python {platform.python_version()}, numpy {np.__version__}, scipy "
          f"{scipy.__version__}, sklearn {sklearn.__version__}, cpus {psutil.cpu_count()}, "
          f"options {options}, n_starts {args.n_starts}, blas_threads "
          f"{args.blas_threads or 'default'}")
    print(header)
    print("-" * len(header))
    # warm-up: Numba compilation/caches are not part of the timings
    xw, yw, _ = sinc_data(50, 1)
    fit_ours((xw - xw.mean()) / xw.std(), yw, 1, {"maxiter": 2}, 0)
    for n in args.sizes:
        x, y, _ = sinc_data(n, args.seed)
        xt, _, ft = sinc_data(args.n_test, args.seed + 1)
        mu, sd = x.mean(), x.std()
        X, Xt = (x - mu) / sd, (xt - mu) / sd
        row = {"n": n}
        runs = [("bsvm_scale", fit_ours)]
        if args.skip_sklearn_above is None or n <= args.skip_sklearn_above:
            runs.append(("sklearn", fit_sklearn))
        for name, fn in runs:
            with PeakRSS() as mem:
                model, dt, n_eval, lml = fn(X, y, args.n_starts, options, args.seed)
            rmse = float(np.sqrt(np.mean((model.predict(Xt) - ft) ** 2)))
            del model
            row[name] = {"fit_s": dt, "n_eval": n_eval, "s_per_eval": dt / n_eval,
                         "peak_mb": mem.peak_mb, "lml": lml, "rmse_f": rmse}
            print(f"{n:>6} {name:>9} {dt:>9.2f} {n_eval:>6d} {dt / n_eval:>8.3f} "
                  f"{mem.peak_mb:>8.0f} {lml:>11.3f} {rmse:>7.4f}", flush=True)
        if "sklearn" in row:
            o, s = row["bsvm_scale"], row["sklearn"]
            row["ratio_sklearn_over_ours_time"] = s["fit_s"] / o["fit_s"]
            row["ratio_sklearn_over_ours_time_per_eval"] = s["s_per_eval"] / o["s_per_eval"]
            row["ratio_sklearn_over_ours_peak_mb"] = s["peak_mb"] / max(o["peak_mb"], 1e-9)
            print(f"{n:>6} {'ratio':>9} sklearn/ours: time "
                  f"{row['ratio_sklearn_over_ours_time']:.2f}x, "
                  f"time/eval {row['ratio_sklearn_over_ours_time_per_eval']:.2f}x, peak memory "
                  f"{row['ratio_sklearn_over_ours_peak_mb']:.2f}x", flush=True)
        rows.append(row)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"options": options, "n_starts": args.n_starts, "seed": args.seed,
                       "blas_threads": args.blas_threads, "rows": rows}, fh, indent=2)
    return rows


if __name__ == "__main__":
    # glibc raises its mmap threshold after large frees, after which freed n x n
    # buffers stay in the heap and RSS no longer returns to its baseline; a fixed
    # threshold keeps every large array in its own mapping, so peak-RSS deltas
    # measure what each fit allocates.
    if sys.platform.startswith("linux") and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        os.environ["MALLOC_MMAP_THRESHOLD_"] = str(1 << 20)
        os.execv(sys.executable, [sys.executable, *sys.argv])
    sys.exit(0 if main() is not None else 1)
