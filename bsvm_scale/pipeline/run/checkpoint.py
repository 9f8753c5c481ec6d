"""Files of a run directory: atomic HDF5 records, start checkpoints, the driver lock.

Layout of a run directory::

    <run_dir>/pipeline.toml        copy of the pipeline file (a resume must match it)
    <run_dir>/.lock                fcntl lock held by the one driver of the run
    <run_dir>/data/<label>.h5      generated data sets (written once by the driver)
    <run_dir>/tasks/<task>/checkpoint.h5   last optimiser state of an in-flight start
                                           (a multi-class BTSVC start: in each
                                           <task>__b<i>, binary model i's task)
    <run_dir>/tasks/<task>/result.h5       finished task: metrics, trajectory, ...
    <run_dir>/tasks/<task>/model.h5        the fitted model of the task
    <run_dir>/models/<dataset>__<model>__p<k>.h5   best model per partition
    <run_dir>/run.h5               the run file (written by the driver only)

Every file is written under a temporary name in its directory, fsynced and
moved into place with :func:`os.replace`, so a reader (or a resumed run after
``kill -9``) sees either the previous or the new complete file.
"""

from __future__ import annotations

import errno
import os

from pathlib import Path

import numpy as np

from ..outputs.records import read_record, write_record

__all__ = ["save_checkpoint", "load_checkpoint", "RunLock", "RunLockedError"]


def save_checkpoint(path, state):
    """Checkpoint of one optimiser start: ``theta0``, the recorded evaluations
    ``evals`` and the objective's warm-start ``state`` (SMO vector, best point)."""
    return write_record(path, state, fsync=False)


def load_checkpoint(path, theta0, key=None):
    """The checkpoint at ``path`` if it belongs to the start at ``theta0`` and,
    when both carry one, to the task with content ``key`` (else ``None``:
    missing, unreadable, another start or task, or an older layout)."""
    state = read_record(path)
    if state is None or not {"theta0", "evals", "state"} <= set(state):
        return None
    if not np.array_equal(np.asarray(state["theta0"], dtype=float), np.asarray(theta0, dtype=float)):
        return None
    if key and state.get("key") and state["key"] != key:
        return None
    return state


class RunLockedError(RuntimeError):
    """Another driver holds the run's lock."""


class RunLock:
    """Exclusive ``fcntl.flock`` on ``<run_dir>/.lock`` (released when the process dies)."""

    def __init__(self, run_dir):
        self.path = Path(run_dir) / ".lock"
        self.fh = None

    def acquire(self):
        import fcntl
        import socket

        self.path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(self.path, "a+")
        try:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                fh.close()
                raise
            fh.seek(0)
            holder = fh.read().strip() or "unknown process"
            fh.close()
            raise RunLockedError(
                f"run directory {str(self.path.parent)!r} is in use by another driver "
                f"({holder}); only one 'bsvm-scale run' may drive a run at a time") from None
        fh.seek(0)
        fh.truncate()
        fh.write(f"pid {os.getpid()} on {socket.gethostname()}\n")
        fh.flush()
        self.fh = fh
        return self

    def release(self):
        if self.fh is not None:
            import fcntl

            try:
                self.fh.seek(0)
                self.fh.truncate()
                fcntl.flock(self.fh.fileno(), fcntl.LOCK_UN)
            finally:
                self.fh.close()
                self.fh = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
