"""Thread limits and a thread map for independent optimiser runs.

``blas_threads``: BLAS thread limits with one cached ``ThreadpoolController``
per process. ``threadpoolctl.threadpool_limits`` scans the loaded shared
libraries on every call, which costs more than a small evidence evaluation
(docs/design/threads_and_caches.md); the evidence is evaluated dozens of
times per fit, so the scan is done once and its controller reused (after
NumPy's and SciPy's BLAS are loaded; a library loaded later is not limited).

``fit_threads``: the thread budget of one fit. ``n_jobs`` counts every
thread a fit runs on, so a fit with ``n_jobs=1`` is a one-core fit (its Numba
kernels and BLAS on one thread) and ``n_jobs=k`` uses at most ``k`` cores.

``thread_map``: independent parts of an evidence search (its starts, the
isotropic first stage of ARD, the subsample phase) on several threads of one
process. The compiled solvers release the GIL (``nogil``), and so do NumPy's
and SciPy's LAPACK calls, so the threads run in parallel.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial

import numba
import scipy.linalg  # noqa: F401 -- SciPy's BLAS is loaded before the one scan below
from joblib import effective_n_jobs
from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads", "fit_threads", "thread_map", "numba_thread_safe"]

_CONTROLLER = None


def blas_threads(single: bool):
    """Context manager: BLAS limited to one thread when ``single``, else unchanged."""
    return _controller().limit(limits=1 if single else None, user_api="blas")


_FITS = {"active": 0}
_FITS_LOCK = threading.Lock()


@contextmanager
def fit_threads(n_jobs):
    """Context manager: the calling thread's Numba kernels limited to
    ``effective_n_jobs(n_jobs)`` threads (never more than Numba was started
    with), and the process's BLAS too, restored on exit.

    Numba's thread count is per thread, so that limit holds in the calling
    thread; :func:`thread_map`'s workers set their own (one each). BLAS
    limits are per process, so of fits that overlap in time (fits on several
    threads of one process) the first sets the limit and the last to end
    restores the process's BLAS to what it was: the others run under the
    first one's limit. A limit set inside (a worker's one thread, a small
    block's one thread) overrides it while it lasts.
    """
    jobs = max(1, min(effective_n_jobs(n_jobs), numba.config.NUMBA_NUM_THREADS))
    before, counted = numba.get_num_threads(), False
    try:
        numba.set_num_threads(min(jobs, before))
        with _FITS_LOCK:
            if _FITS["active"] == 0:
                _FITS["limiter"] = _controller().limit(limits=min(jobs, _blas_now()),
                                                       user_api="blas")
            _FITS["active"] += 1
            counted = True
        yield jobs
    finally:
        if counted:
            with _FITS_LOCK:
                _FITS["active"] -= 1
                if _FITS["active"] == 0:  # every limit set inside the fits has ended
                    _FITS.pop("limiter").restore_original_limits()
        numba.set_num_threads(before)


def _controller():
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER


def _blas_now():
    """The smallest thread count of the loaded BLAS libraries now (a limit set
    by an enclosing context is never raised)."""
    counts = [lib.num_threads for lib in _controller().lib_controllers
              if lib.user_api == "blas"]
    return min(counts, default=1 << 16)


def numba_thread_safe():
    """Whether numba's threading layer may be entered from several threads at
    once (``omp`` and ``tbb`` may; ``workqueue`` aborts the process)."""
    try:
        layer = numba.threading_layer()
    except ValueError:  # no parallel kernel has run yet: start the layer as one would
        try:
            from numba.np.ufunc.parallel import _launch_threads
            _launch_threads()
            layer = numba.threading_layer()
        except (ImportError, ValueError):  # unknown: assume the worst
            return False
    return layer != "workqueue"


def _on_one_numba_thread(fn, item):
    numba.set_num_threads(1)  # thread-local: this worker's parallel kernels run serially
    return fn(item)


def thread_map(fn, items, n_jobs=None):
    """``[fn(item) for item in items]`` on up to ``n_jobs`` threads, in order.

    On several threads, BLAS runs on one thread and so do numba's parallel
    kernels inside each worker (the cores go to the tasks; a worker that
    raised its numba threads would start an OpenMP team of its own, which
    slowed later fits of the process several times over, see
    docs/design/threads_and_caches.md). On one thread
    nothing changes, so that large SV blocks keep multithreaded BLAS. The
    results are the same either way unless BLAS would run multithreaded
    (blocks of about 1,500 SVs and more), whose rounding differs with its
    thread count. An exception raised by ``fn`` propagates.

    Parameters
    ----------
    fn : callable
        One independent task; it must not write to shared state.
    items : iterable
    n_jobs : int or None, default=None
        scikit-learn's convention (``joblib.effective_n_jobs``): None means 1
        unless inside a ``joblib.parallel_config`` context, -1 all processors.
        One thread when numba's threading layer is not thread-safe.

    Returns
    -------
    list
    """
    items = list(items)
    workers = min(effective_n_jobs(n_jobs), len(items))
    if workers > 1 and not numba_thread_safe():
        workers = 1
    if workers <= 1:
        return [fn(item) for item in items]
    with blas_threads(True), ThreadPoolExecutor(workers) as pool:
        return list(pool.map(partial(_on_one_numba_thread, fn), items))
