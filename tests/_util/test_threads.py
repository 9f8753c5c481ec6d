"""``thread_map``: order, exceptions, thread limits restored, serial fallback."""

import threading

import numba
import numpy as np
import pytest
from threadpoolctl import threadpool_info

import bsvm_scale._util.threads as threads
from bsvm_scale._util.threads import thread_map


def _blas_threads():
    np.linalg.cholesky(np.eye(2))  # BLAS loaded
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


@pytest.mark.parametrize("n_jobs", [None, 1, 2, -1])
def test_results_come_back_in_the_order_of_the_items(n_jobs):
    assert thread_map(lambda k: k * k, range(7), n_jobs) == [k * k for k in range(7)]


def test_workers_run_blas_and_numba_on_one_thread_and_limits_are_restored():
    before, numba_before = _blas_threads(), numba.get_num_threads()
    seen = thread_map(lambda _: (_blas_threads(), numba.get_num_threads(),
                                 threading.current_thread() is threading.main_thread()),
                      range(4), 2)
    assert all(b and set(b) == {1} for b, _, _ in seen)
    assert all(nt == 1 and not main for _, nt, main in seen)
    assert _blas_threads() == before and numba.get_num_threads() == numba_before


def test_one_job_runs_in_the_calling_thread_and_leaves_blas_alone():
    before = _blas_threads()
    seen = thread_map(lambda _: (_blas_threads(), threading.current_thread()), range(2), 1)
    assert all(t is threading.main_thread() for _, t in seen)
    assert all(b == before for b, _ in seen)


def test_an_exception_in_a_task_propagates():
    def task(k):
        if k == 2:
            raise ValueError("task 2 failed")
        return k

    with pytest.raises(ValueError, match="task 2 failed"):
        thread_map(task, range(4), 2)


def test_a_thread_unsafe_numba_layer_runs_serially(monkeypatch):
    monkeypatch.setattr(threads, "numba_thread_safe", lambda: False)
    seen = thread_map(lambda _: threading.current_thread(), range(3), 2)
    assert all(t is threading.main_thread() for t in seen)


def test_the_numba_layer_of_this_process_is_known():
    assert threads.numba_thread_safe() == (numba.threading_layer() != "workqueue")


def test_the_workqueue_layer_is_known_unsafe_before_any_kernel_ran():
    import os
    import subprocess
    import sys

    code = ("from bsvm_scale._util.threads import numba_thread_safe; "
            "import numba; print(numba_thread_safe(), numba.threading_layer())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "NUMBA_THREADING_LAYER": "workqueue"}, check=True)
    assert out.stdout.split() == ["False", "workqueue"]


def test_fit_threads_limits_numba_and_blas_of_the_calling_thread_and_restores_them():
    before, numba_before = _blas_threads(), numba.get_num_threads()
    with threads.fit_threads(1) as jobs:
        assert jobs == 1
        assert numba.get_num_threads() == 1 and set(_blas_threads()) == {1}
    assert _blas_threads() == before and numba.get_num_threads() == numba_before
    with threads.fit_threads(-1) as jobs:
        assert jobs == min(numba.config.NUMBA_NUM_THREADS, threads.effective_n_jobs(-1))
        assert numba.get_num_threads() == min(jobs, numba_before)


def test_fit_threads_never_raises_an_enclosing_limit():
    saved = numba.get_num_threads()
    with threads.blas_threads(True):
        numba.set_num_threads(1)
        try:
            with threads.fit_threads(-1):
                assert set(_blas_threads()) == {1} and numba.get_num_threads() == 1
        finally:
            numba.set_num_threads(saved)


def test_fit_threads_restores_the_limits_after_an_exception():
    before, numba_before = _blas_threads(), numba.get_num_threads()
    with pytest.raises(RuntimeError, match="inside"):
        with threads.fit_threads(1):
            raise RuntimeError("inside")
    assert _blas_threads() == before and numba.get_num_threads() == numba_before


def test_overlapping_fits_leave_blas_as_it_was_whatever_order_they_end_in():
    """Fit A (one thread) begins, fit B (every core) begins, A ends, B ends
    (as two fits on two threads of one process may): only A limits BLAS, so
    the process's BLAS ends as it began."""
    before, numba_before = _blas_threads(), numba.get_num_threads()
    a, b = threads.fit_threads(1), threads.fit_threads(-1)
    try:
        a.__enter__()
        b.__enter__()
        assert set(_blas_threads()) == {1}  # B runs under A's limit
        inner = threads.blas_threads(True)  # an evaluation of B, begun under A's limit
        inner.__enter__()
        a.__exit__(None, None, None)
        inner.__exit__(None, None, None)  # puts back the 1 it saw
        b.__exit__(None, None, None)
        assert _blas_threads() == before
    finally:
        numba.set_num_threads(numba_before)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("n_jobs", [1, -1])
def test_a_fit_runs_on_n_jobs_threads(n_jobs):
    from bsvm_scale import BayesianSVC, BayesianSVR

    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 2))
    seen = []

    def spy(*_):
        seen.append((numba.get_num_threads(), max(_blas_threads())))

    expected = min(numba.config.NUMBA_NUM_THREADS, threads.effective_n_jobs(n_jobs))
    saved = numba.get_num_threads()
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)  # as in a fresh process
    try:
        BayesianSVR(n_jobs=n_jobs, optimizer_options={"maxiter": 2}).fit(X, X[:, 0], callback=spy)
        BayesianSVC(n_jobs=n_jobs, optimizer_options={"maxiter": 2}).fit(X, X[:, 0] > 0,
                                                                          callback=spy)
    finally:
        numba.set_num_threads(saved)
    assert seen and all(nt == expected and blas <= expected for nt, blas in seen)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_every_start_of_a_threaded_fit_runs_numba_on_one_thread():
    """Workers never raise their numba thread count (an OpenMP team started
    from a worker slowed later fits of the process), also for the last start."""
    from bsvm_scale import BayesianSVC

    rng = np.random.default_rng(2)
    X = rng.normal(size=(90, 2))
    y = np.repeat([0, 1, 2], 30)
    seen = []
    orig = threads._on_one_numba_thread

    def spy(fn, item):
        return orig(lambda it: (fn(it), seen.append(numba.get_num_threads()))[0], item)

    threads._on_one_numba_thread = spy
    try:
        BayesianSVC(n_jobs=2, n_starts=1, optimizer_options={"maxiter": 2}).fit(X, y)
    finally:
        threads._on_one_numba_thread = orig
    assert len(seen) == 3 and set(seen) == {1}
