"""Benchmark of the covariance row kernels and the memory of the LRU row cache.

(a) Time of one covariance row (n = 50,000, d = 10 by default) with the Numba
    kernels -- the parallel ``cov_row`` (prange) and ``cov_row_serial`` -- and
    with the obvious vectorised NumPy expression::

        kappa0 * np.exp(-0.5 * ((X - X[i]) ** 2 * w).sum(1)) + kappa_b

    all in this process, after warm-up; medians over many repetitions, the
    kernels interleaved round by round so that they see the same machine load.

(b) Peak memory of generating the 50,000-case sinc data set and caching rows
    with a 256 MiB budget until the cache is full, then evicting
    (``2 * n_slots`` distinct rows are requested). Runs in a fresh child
    process so that the resident-set high-water mark (VmHWM, reset through
    /proc/self/clear_refs when the kernel allows it, and sampled with psutil
    during the run) belongs to this step alone. The expectation is
    ``RSS before + n*d*8 + buffer + small change``.

Usage::

    python benchmarks/bench_covariance.py [--n 50000] [--d 10] [--reps 300]
        [--numpy-reps 60] [--mem-n 50000] [--cache-mb 256] [--out bench.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time

import numpy as np

from bsvm_scale._util.memory import peak_rss_bytes, reset_peak_rss

MiB = 2.0**20


# ---------------------------------------------------------------- helpers
def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def _stats(times):
    t = np.asarray(times)
    return {"median_s": float(np.median(t)), "min_s": float(t.min()),
            "p25_s": float(np.percentile(t, 25)), "p75_s": float(np.percentile(t, 75)),
            "reps": int(t.size)}


# ------------------------------------------------------------ (a) speed
def bench_row_speed(n, d, reps, numpy_reps, seed=0):
    import numba

    from bsvm_scale._compiled import covariance as ck

    rng = np.random.default_rng(seed)
    X = np.ascontiguousarray(rng.normal(size=(n, d)))
    kappa0, kappa, kappa_b = 1.0, 1.0 / d, 0.1
    w = np.full(d, kappa)
    kern = ck.make_kernel(X, w, kappa0, kappa_b)
    out = np.empty(n)

    def numpy_row(i):
        return kappa0 * np.exp(-0.5 * ((X - X[i]) ** 2 * w).sum(1)) + kappa_b

    kernels = {"numba_parallel": lambda i: ck.cov_row(kern, i, out),
               "numba_serial": lambda i: ck.cov_row_serial(kern, i, out),
               "numpy": numpy_row}
    # warm-up (JIT compilation / cache load, thread pool start, page faults)
    for f in kernels.values():
        for i in range(5):
            f(i)
    # agreement check
    idx = rng.integers(0, n, size=max(reps, 5))
    max_err = 0.0
    for i in idx[:5]:
        ref = numpy_row(int(i))
        ck.cov_row(kern, int(i), out)
        max_err = max(max_err, float(np.abs(out - ref).max()))
        ck.cov_row_serial(kern, int(i), out)
        max_err = max(max_err, float(np.abs(out - ref).max()))

    # interleaved rounds, so that every kernel sees the same machine load
    times = {name: [] for name in kernels}
    np_every = max(1, reps // max(numpy_reps, 1))
    for r, i in enumerate(idx[:reps]):
        i = int(i)
        for name, f in kernels.items():
            if name == "numpy" and (r % np_every or len(times[name]) >= numpy_reps):
                continue
            t0 = time.perf_counter()
            f(i)
            times[name].append(time.perf_counter() - t0)
    res = {name: _stats(t) for name, t in times.items()}
    med_np = res["numpy"]["median_s"]
    return {
        "n": n, "d": d, "numba_threads": int(numba.get_num_threads()),
        "threading_layer": numba.threading_layer(),
        "loadavg_1min_after": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        "max_abs_diff_vs_numpy": max_err,
        "timings": res,
        "speedup_parallel_vs_numpy": med_np / res["numba_parallel"]["median_s"],
        "speedup_serial_vs_numpy": med_np / res["numba_serial"]["median_s"],
        "speedup_parallel_vs_serial": (res["numba_serial"]["median_s"]
                                       / res["numba_parallel"]["median_s"]),
    }


# ----------------------------------------------------------- (b) memory
def _make_sinc(n, seed=0):
    """The sinc data set via bsvm_scale.datasets.generate if available."""
    try:
        from bsvm_scale.datasets import generate
    except ImportError:
        generate = None
    if generate is not None:
        ds = generate("sinc_silf", n=n, seed=seed)
        return ds, np.ascontiguousarray(ds.X, dtype=np.float64), "bsvm_scale.datasets.generate('sinc_silf')"
    rng = np.random.default_rng(seed)
    x = rng.uniform(-10.0, 10.0, size=n)
    y = np.sinc(x / np.pi) + rng.normal(scale=0.2, size=n)
    return (x, y), x[:, None].copy(), "inline: x ~ U[-10, 10], y = sinc(x) + N(0, 0.2^2)"


def memory_child(n, cache_mb, seed=0):
    """Body of the memory measurement; runs in a fresh process."""
    import tracemalloc

    from bsvm_scale.inference.covariance import GaussianCovariance, RowCache

    # warm-up: compile/load get_row and start the thread pool on a small
    # problem so that JIT memory is not counted as data
    Xw = np.random.default_rng(1).normal(size=(2000, 1))
    cw = RowCache(Xw, GaussianCovariance(), cache_mb=1e-6)
    for i in range(4):
        cw.row(i)
    cw = RowCache(Xw[:100], GaussianCovariance(), cache_mb=1e-6)
    cw.row(0)
    del cw, Xw

    hwm_reset = reset_peak_rss()
    rss_before = _rss()
    hwm_before = peak_rss_bytes(fallback=False)
    tracemalloc.start()
    sampled_peak = rss_before

    t0 = time.perf_counter()
    data, X, source = _make_sinc(n, seed)
    t_data = time.perf_counter() - t0
    rss_data = _rss()
    sampled_peak = max(sampled_peak, rss_data)
    d = X.shape[1]

    cov = GaussianCovariance(1.0, 1.0, 0.1)
    cache = RowCache(X, cov, cache_mb=cache_mb)
    rss_alloc = _rss()
    k = cache.n_slots
    order = np.random.default_rng(seed + 1).permutation(n)[: 2 * k] if 2 * k <= n \
        else np.arange(2 * k) % n
    rss_full = None
    t0 = time.perf_counter()
    for r, i in enumerate(order, 1):
        cache.row(int(i))
        if r % 64 == 0 or r == k:
            sampled_peak = max(sampled_peak, _rss())
        if r == k:
            rss_full = _rss()
    t_rows = time.perf_counter() - t0
    rss_evict = _rss()
    sampled_peak = max(sampled_peak, rss_evict)
    traced_now, traced_peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    hwm_after = peak_rss_bytes(fallback=False)
    peak = max(sampled_peak, hwm_after or 0) if hwm_reset else sampled_peak

    data_bytes = n * d * 8
    buf = cache.nbytes
    expected = rss_before + data_bytes + buf
    slack = 16 * MiB + 4 * n * 8  # y, f, noise copies + bookkeeping + allocator
    stats = cache.stats
    return {
        "n": n, "d": d, "data_source": source, "cache_mb": cache_mb,
        "n_slots": k, "rows_requested": int(order.size), "cache_stats": stats,
        "buffer_bytes": int(buf), "data_bytes_X": int(data_bytes),
        "rss_before": int(rss_before), "rss_after_data": int(rss_data),
        "rss_after_alloc": int(rss_alloc), "rss_cache_full": int(rss_full or 0),
        "rss_after_evict": int(rss_evict), "rss_peak": int(peak),
        "vm_hwm_reset": bool(hwm_reset), "vm_hwm_before": hwm_before, "vm_hwm_after": hwm_after,
        "tracemalloc_peak": int(traced_peak), "tracemalloc_now": int(traced_now),
        "peak_minus_before": int(peak - rss_before),
        "expected_increase": int(data_bytes + buf),
        "excess_over_expected": int(peak - expected),
        "within_expectation": bool(peak <= expected + slack
                                   and stats["evictions"] == order.size - k),
        "seconds_data": t_data, "seconds_rows": t_rows,
    }


def bench_memory(n, cache_mb):
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-child",
           "--mem-n", str(n), "--cache-mb", str(cache_mb)]
    env = dict(os.environ)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory child failed:\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- report
def _ms(s):
    return f"{1e3 * s:9.3f}"


def _mib(b):
    return f"{b / MiB:9.1f}"


def print_report(speed, mem):
    if speed is not None:
        print(f"(a) one covariance row, n = {speed['n']}, d = {speed['d']}, "
              f"numba threads = {speed['numba_threads']} ({speed['threading_layer']}), "
              f"1-min load avg after = {speed['loadavg_1min_after']}  "
              f"(max |numba - numpy| = {speed['max_abs_diff_vs_numpy']:.1e})")
        print(f"    {'kernel':<16}{'median ms':>10}{'min ms':>10}{'p25 ms':>10}{'p75 ms':>10}"
              f"{'reps':>7}{'numpy/x':>9}")
        med_np = speed["timings"]["numpy"]["median_s"]
        for name, t in speed["timings"].items():
            print(f"    {name:<16}{_ms(t['median_s']):>10}{_ms(t['min_s']):>10}"
                  f"{_ms(t['p25_s']):>10}{_ms(t['p75_s']):>10}{t['reps']:>7}"
                  f"{med_np / t['median_s']:>9.2f}")
        print(f"    parallel/serial speed-up: {speed['speedup_parallel_vs_serial']:.2f}")
    if mem is not None:
        print(f"(b) memory: n = {mem['n']}, d = {mem['d']}, data: {mem['data_source']}")
        print(f"    cache_mb = {mem['cache_mb']}, n_slots = {mem['n_slots']}, rows requested = "
              f"{mem['rows_requested']}, stats = {mem['cache_stats']}")
        rows = [("RSS before data", mem["rss_before"]), ("RSS after data", mem["rss_after_data"]),
                ("RSS after RowCache()", mem["rss_after_alloc"]),
                ("RSS cache full", mem["rss_cache_full"]),
                ("RSS after evictions", mem["rss_after_evict"]), ("RSS peak", mem["rss_peak"]),
                ("buffer bytes", mem["buffer_bytes"]), ("X bytes (n*d*8)", mem["data_bytes_X"]),
                ("tracemalloc peak", mem["tracemalloc_peak"]),
                ("peak - before", mem["peak_minus_before"]),
                ("expected n*d*8 + buffer", mem["expected_increase"]),
                ("peak - (before + expected)", mem["excess_over_expected"])]
        for label, b in rows:
            print(f"    {label:<28}{_mib(b)} MiB  ({b} B)")
        print(f"    VmHWM reset available: {mem['vm_hwm_reset']}; "
              f"within expectation: {mem['within_expectation']}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=50_000, help="points for the row timing")
    p.add_argument("--d", type=int, default=10, help="inputs for the row timing")
    p.add_argument("--reps", type=int, default=300, help="timed Numba rows")
    p.add_argument("--numpy-reps", type=int, default=60, help="timed NumPy rows")
    p.add_argument("--mem-n", type=int, default=50_000, help="cases of the sinc data set")
    p.add_argument("--cache-mb", type=float, default=256.0, help="row-cache budget in MiB")
    p.add_argument("--skip-speed", action="store_true")
    p.add_argument("--skip-memory", action="store_true")
    p.add_argument("--out", help="write the results as JSON to this file")
    p.add_argument("--memory-child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)

    if a.memory_child:
        print(json.dumps(memory_child(a.mem_n, a.cache_mb)))
        return 0

    speed = None if a.skip_speed else bench_row_speed(a.n, a.d, a.reps, a.numpy_reps)
    mem = None if a.skip_memory else bench_memory(a.mem_n, a.cache_mb)
    print_report(speed, mem)
    if a.out:
        import numba

        result = {"benchmark": "bench_covariance", "speed": speed, "memory": mem,
                  "env": {"python": platform.python_version(), "numpy": np.__version__,
                          "numba": numba.__version__, "cpu_count": os.cpu_count(),
                          "machine": platform.machine()},
                  "argv": sys.argv[1:]}
        with open(a.out, "w") as fh:
            json.dump(result, fh, indent=2)
        print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
