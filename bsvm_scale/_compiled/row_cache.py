"""Least-recently-used cache of covariance rows, in Numba.

The SMO solvers need rows ``Sigma[i, :]`` of the ``n x n`` covariance many
times over, but may never hold the whole matrix. This module keeps up to
``n_slots`` rows in one ``(n_slots, n)`` buffer, chosen so that the buffer fits
a memory budget, and evicts the least recently used row when a new one is
needed. All state lives in the six arrays of a :class:`CacheState`, so that
compiled solver loops can call :func:`get_row` without returning to Python:

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
start) occupies a core (docs/design/threads_and_caches.md, "Row cache").
:func:`bsvm_scale._compiled.covariance.cov_row` (prange) remains for one-off
rows from Python.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import jit
from .covariance import cov_row_serial

HITS, MISSES, EVICTIONS, HEAD, TAIL, USED = 0, 1, 2, 3, 4, 5


class CacheState(NamedTuple):
    """The arrays of one row cache (layout in the module docstring)."""

    buf: np.ndarray      #: (n_slots, n) float64 cached rows
    slot_of: np.ndarray  #: (n,) int64 slot holding row i, or -1
    row_of: np.ndarray   #: (n_slots,) int64 row held by a slot, or -1
    prev: np.ndarray     #: (n_slots,) int64 LRU list, towards the MRU end
    nxt: np.ndarray      #: (n_slots,) int64 LRU list, towards the LRU end
    meta: np.ndarray     #: (6,) int64 counters and list ends (HITS .. USED)


def allocate(n, n_slots):
    """Fresh :class:`CacheState` for ``n`` points and ``n_slots`` row slots."""
    buf = np.empty((n_slots, n))
    slot_of = np.full(n, -1, dtype=np.int64)
    row_of = np.full(n_slots, -1, dtype=np.int64)
    prev = np.full(n_slots, -1, dtype=np.int64)
    nxt = np.full(n_slots, -1, dtype=np.int64)
    meta = np.zeros(6, dtype=np.int64)
    meta[HEAD] = -1
    meta[TAIL] = -1
    return CacheState(buf, slot_of, row_of, prev, nxt, meta)


@jit()
def reset(cache):
    """Forget every cached row (after a change of kernel hyperparameters)."""
    cache.slot_of[:] = -1
    cache.row_of[:] = -1
    cache.prev[:] = -1
    cache.nxt[:] = -1
    cache.meta[HEAD] = -1
    cache.meta[TAIL] = -1
    cache.meta[USED] = 0


@jit(inline="always")
def _unlink(s, cache):
    prev, nxt, meta = cache.prev, cache.nxt, cache.meta
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


@jit(inline="always")
def _push_front(s, cache):
    prev, nxt, meta = cache.prev, cache.nxt, cache.meta
    h = meta[HEAD]
    prev[s] = -1
    nxt[s] = h
    if h >= 0:
        prev[h] = s
    meta[HEAD] = s
    if meta[TAIL] < 0:
        meta[TAIL] = s


@jit()
def _claim_slot(cache):
    """A free slot if any, else the least recently used one (evicted)."""
    meta = cache.meta
    n_slots = cache.row_of.shape[0]
    if meta[USED] < n_slots:
        s = meta[USED]
        meta[USED] += 1
        return s
    s = meta[TAIL]
    _unlink(s, cache)
    cache.slot_of[cache.row_of[s]] = -1
    cache.row_of[s] = -1
    meta[EVICTIONS] += 1
    return s


@jit(inline="always")
def has_row(cache, i):
    """True when row ``i`` is in the cache (a lookup would be a hit)."""
    return cache.slot_of[i] >= 0


@jit(inline="always")
def is_full(cache):
    """True when every slot holds a row (a further miss evicts one)."""
    return cache.meta[USED] >= cache.row_of.shape[0]


@jit()
def get_row(kern, cache, i):
    """Covariance row ``i`` of ``kern`` (a :class:`~bsvm_scale._compiled.covariance.Kernel`),
    as a view into the buffer of ``cache``.

    The view stays valid until ``n_slots`` further distinct rows have been
    requested; callers that need two rows at once must use a cache of at
    least two slots (guaranteed by :class:`bsvm_scale.inference.covariance.RowCache`).
    """
    meta = cache.meta
    s = cache.slot_of[i]
    if s >= 0:
        meta[HITS] += 1
        if meta[HEAD] != s:
            _unlink(s, cache)
            _push_front(s, cache)
        return cache.buf[s]
    meta[MISSES] += 1
    s = _claim_slot(cache)
    row = cache.buf[s]
    cov_row_serial(kern, i, row)
    cache.slot_of[i] = s
    cache.row_of[s] = i
    _push_front(s, cache)
    return row


@jit()
def rows_matvec(kern, cache, idx, coef):
    """``sum_k coef[k] Sigma[idx[k], :]`` from cached rows (a miss computes
    and caches the row); by symmetry the product ``Sigma[:, idx] coef``.
    Serial, in the order of ``idx``."""
    out = np.zeros(kern.X.shape[0])
    for k in range(idx.shape[0]):
        row = get_row(kern, cache, idx[k])
        c = coef[k]
        for j in range(out.shape[0]):
            out[j] += c * row[j]
    return out


@jit()
def rows_block(kern, cache, idx):
    """``Sigma[idx][:, idx]`` gathered from cached rows (a miss computes and
    caches the row)."""
    m = idx.shape[0]
    out = np.empty((m, m))
    for a in range(m):
        row = get_row(kern, cache, idx[a])
        for b in range(m):
            out[a, b] = row[idx[b]]
    return out
