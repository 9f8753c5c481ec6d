"""Least-recently-used cache of covariance rows, in Numba.

The SMO solvers need rows ``Sigma[i, :]`` of the ``n x n`` covariance many
times over, but may never hold the whole matrix. This module keeps up to
``n_slots`` rows in one ``(n_slots, n)`` buffer, chosen so that the buffer fits
a memory budget, and evicts the least recently used row when a new one is
needed. All state lives in plain arrays so that njit-compiled solver loops can
call :func:`get_row` without returning to Python:

``buf``      (n_slots, n) float64   the cached rows
``slot_of``  (n,) int64             slot holding row i, or -1
``row_of``   (n_slots,) int64       row held by a slot, or -1
``prev``     (n_slots,) int64       doubly linked LRU list (towards MRU)
``nxt``      (n_slots,) int64       doubly linked LRU list (towards LRU)
``meta``     (6,) int64             [hits, misses, evictions, head (MRU),
                                     tail (LRU), slots in use]

A lookup is O(1) (array index plus list splice); a miss costs one covariance
row, O(n d). Rows are computed serially here: the SMO loop is sequential, and
a parallel (prange) row launched from inside it waits for every thread, so it
costs several serial rows whenever another process (a Dask worker, another
start) occupies a core (docs/design/history.md, "Row cache").
:func:`bsvm_scale._compiled.covariance.cov_row` (prange) remains for one-off
rows from Python.
"""

import numpy as np
from numba import njit

from .covariance import cov_row_serial

HITS, MISSES, EVICTIONS, HEAD, TAIL, USED = 0, 1, 2, 3, 4, 5


def allocate(n, n_slots):
    """Fresh cache state for ``n`` points and ``n_slots`` row slots."""
    buf = np.empty((n_slots, n))
    slot_of = np.full(n, -1, dtype=np.int64)
    row_of = np.full(n_slots, -1, dtype=np.int64)
    prev = np.full(n_slots, -1, dtype=np.int64)
    nxt = np.full(n_slots, -1, dtype=np.int64)
    meta = np.zeros(6, dtype=np.int64)
    meta[HEAD] = -1
    meta[TAIL] = -1
    return buf, slot_of, row_of, prev, nxt, meta


@njit(cache=True)
def reset(slot_of, row_of, prev, nxt, meta):
    """Forget every cached row (after a change of kernel hyperparameters)."""
    slot_of[:] = -1
    row_of[:] = -1
    prev[:] = -1
    nxt[:] = -1
    meta[HEAD] = -1
    meta[TAIL] = -1
    meta[USED] = 0


@njit(cache=True, inline="always")
def _unlink(s, prev, nxt, meta):
    p = prev[s]
    q = nxt[s]
    if p >= 0:
        nxt[p] = q
    else:
        meta[HEAD] = q
    if q >= 0:
        prev[q] = p
    else:
        meta[TAIL] = p
    prev[s] = -1
    nxt[s] = -1


@njit(cache=True, inline="always")
def _push_front(s, prev, nxt, meta):
    h = meta[HEAD]
    prev[s] = -1
    nxt[s] = h
    if h >= 0:
        prev[h] = s
    meta[HEAD] = s
    if meta[TAIL] < 0:
        meta[TAIL] = s


@njit(cache=True)
def _claim_slot(slot_of, row_of, prev, nxt, meta):
    """A free slot if any, else the least recently used one (evicted)."""
    n_slots = row_of.shape[0]
    if meta[USED] < n_slots:
        s = meta[USED]
        meta[USED] += 1
        return s
    s = meta[TAIL]
    _unlink(s, prev, nxt, meta)
    slot_of[row_of[s]] = -1
    row_of[s] = -1
    meta[EVICTIONS] += 1
    return s


@njit(cache=True)
def get_row(X, w, kappa0, kappa_b, buf, slot_of, row_of, prev, nxt, meta, i):
    """Covariance row ``i`` (a view into the cache buffer).

    The view stays valid until ``n_slots`` further distinct rows have been
    requested; callers that need two rows at once must use a cache of at
    least two slots (guaranteed by :class:`bsvm_scale.inference.covariance.RowCache`).
    """
    s = slot_of[i]
    if s >= 0:
        meta[HITS] += 1
        if meta[HEAD] != s:
            _unlink(s, prev, nxt, meta)
            _push_front(s, prev, nxt, meta)
        return buf[s]
    meta[MISSES] += 1
    s = _claim_slot(slot_of, row_of, prev, nxt, meta)
    row = buf[s]
    cov_row_serial(X, i, w, kappa0, kappa_b, row)
    slot_of[i] = s
    row_of[s] = i
    _push_front(s, prev, nxt, meta)
    return row
