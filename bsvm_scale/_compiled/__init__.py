"""Compiled kernels: every Numba ``@njit`` function of the package.

Flat functions over arrays, scalars and named tuples, one small function per
step of each solver (select the working set, update, shrink, fetch a cached
row): the covariance function and its derivatives (``covariance``), the
kernel-row cache (``row_cache``), the pivoted Cholesky factor (``lowrank``),
dense helpers for factorised matrices (``dense``) and the SMO solvers -- the
classical epsilon-SVR / SVC duals (``smo_classic``), the trigonometric SVC
with a bias term (``smo_tsvc``, on ``smo_classic``'s working-set steps), the BSVR dual
under the soft insensitive loss (``smo_silf``, its inner problem in ``silf_inner``) and the unbounded BTSVC dual
under the trigonometric loss (``smo_trig``). Nothing here imports from the rest
of the package.

The covariance enters every kernel as one
:class:`~bsvm_scale._compiled.covariance.Kernel` (inputs, weights, ``kappa0``,
``kappa_b``), the row cache as one :class:`~bsvm_scale._compiled.row_cache.CacheState`
(its six arrays), and the arrays of a solver as one tuple of its module
(:class:`~bsvm_scale._compiled.smo_classic.QPDual`,
:class:`~bsvm_scale._compiled.smo_silf.SilfDual`,
:class:`~bsvm_scale._compiled.smo_trig.Pair`, ...). The Python layers above
validate once and build these tuples from contiguous float64 arrays; nothing
here checks bounds.

Disk-cache policy
-----------------
Every function of this subpackage is compiled by :func:`jit`, which keeps the
machine code on disk (numba's ``cache=True``: files in ``__pycache__``, or under
``NUMBA_CACHE_DIR``) whenever :data:`CACHE` is true, and :data:`CACHE` is true
with numba 0.63 or newer. A process then loads the solvers instead of compiling
them, which matters for every CLI run and every Dask worker. Two hazards of
numba's cache are dealt with here, for all functions alike:

* A cached function that calls a ``parallel=True`` function crashed when it
  was loaded from the cache into a fresh process, because loading it did not
  start numba's threading layer (numba issues #8578 and #9938). Numba 0.63
  fixed this (pull request #9950: a caller inherits the start-up hooks of the
  functions it calls). With an older numba :data:`CACHE` is false and every
  process compiles for itself.
* Numba invalidates a cached function only when the file defining it
  changes, but a compiled caller holds its own copy of every function it
  calls from other modules, so after an edit of, say, ``row_cache.py`` the
  solvers would go on loading the old row lookup (a documented limitation of
  numba). :func:`jit` therefore keys every cache entry also on
  :data:`SOURCE_DIGEST`, a hash of all modules of this subpackage: editing
  any of them recompiles everything once instead of loading stale code.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numba
from numba.core.caching import FunctionCache

__all__ = ["CACHE", "SOURCE_DIGEST", "jit"]


def _numba_version():
    """``(major, minor)`` of the installed numba."""
    major, minor = numba.__version__.split(".")[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


#: keep compiled code on disk (numba 0.63 loads cached callers of parallel code safely)
CACHE = _numba_version() >= (0, 63)


def _source_digest():
    """SHA-256 over the names and contents of every module of this subpackage."""
    h = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


#: hash of the sources of this subpackage; part of the key of every cache entry
SOURCE_DIGEST = _source_digest()


class _SubpackageCache(FunctionCache):
    """Numba's disk cache of one function, each entry keyed also on
    :data:`SOURCE_DIGEST` (an edit anywhere in the subpackage is a miss)."""

    def _index_key(self, sig, codegen):
        return (*super()._index_key(sig, codegen), SOURCE_DIGEST)


def jit(*, parallel=False, inline="never"):
    """``numba.njit`` with the disk-cache policy of this subpackage.

    Parameters
    ----------
    parallel : bool, default=False
        Compile ``prange`` loops for the threading layer.
    inline : {"never", "always"}, default="never"
        ``"always"`` inlines the function into its compiled callers.

    Returns
    -------
    callable
        Decorator turning a Python function into a numba dispatcher that
        caches on disk when :data:`CACHE` is true.
    """

    def compile_(py_func):
        dispatcher = numba.njit(parallel=parallel, inline=inline, nogil=True)(py_func)
        if CACHE:
            dispatcher._cache = _SubpackageCache(py_func)
        return dispatcher

    return compile_
