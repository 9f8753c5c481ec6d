"""Gaussian covariance functions and the kernel-row cache.

The covariance of the thesis (eq. 4.3)::

    Cov(x, x') = kappa0 * exp(-kappa/2 * ||x - x'||^2) + kappa_b

and its automatic-relevance-determination form (4.42), with one ``kappa_l``
per input::

    Cov(x, x') = kappa0 * exp(-1/2 * sum_l kappa_l (x_l - x'_l)^2) + kappa_b

Hyperparameters are handled in log space. The log-parameter vector of a
covariance is ``[ln kappa0, ln kappa, ln kappa_b]`` (isotropic) or
``[ln kappa0, ln kappa_1, ..., ln kappa_d, ln kappa_b]`` (ARD).

Tied ARD: with ``groups`` (the input column of each of the ``d`` inputs, as
:attr:`bsvm_scale.tables.TableEncoder.groups` gives for the one-hot columns of
a table) one ``kappa_g`` serves every input of group ``g``; ``theta`` then
holds one ``ln kappa_g`` per group and every gradient with respect to it is
the sum of the per-input ones over the group. For the one-hot columns of a
category at unit distance this is the kernel ``exp(-kappa_g / 2 [c != c'])``
of that category: one relevance weight per column of the original table.

Nothing here forms the ``n x n`` covariance matrix: rows (through
:class:`RowCache`), chunks of a train x test block, ``m x m`` blocks over a
subset of points and gradient contractions over a subset are all that is
computed. The compiled kernels live in :mod:`bsvm_scale._compiled.covariance`
and :mod:`bsvm_scale._compiled.row_cache`.
"""

from __future__ import annotations

import numpy as np

from .._compiled import covariance as _ck
from .._compiled import row_cache as _rc

__all__ = ["GaussianCovariance", "RowCache", "as_float_matrix"]

_CHUNK_BYTES = 32 * 2**20  # memory cap of one train x test chunk


def as_float_matrix(X, name="X"):
    """C-contiguous float64 2-D copy/view of ``X`` with finite entries."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array (n_samples, n_features); got shape {X.shape}.")
    if not np.all(np.isfinite(X)):
        raise ValueError(f"{name} contains NaN or infinite values; remove or impute them first.")
    return X


def _row_index(i, n):
    """``i`` as a row index in ``[0, n)``; the compiled kernels do not bounds-check."""
    i = int(i)
    if not 0 <= i < n:
        raise IndexError(f"row index {i} is out of range for {n} points.")
    return i


def _indices(idx, n, name="idx"):
    """``idx`` as a contiguous int64 vector of row indices in ``[0, n)``."""
    idx = np.ascontiguousarray(idx, dtype=np.int64)
    if idx.ndim != 1:
        raise ValueError(f"{name} must be a 1-D array of row indices; got shape {idx.shape}.")
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise IndexError(f"{name} has entries outside [0, {n}).")
    return idx


def _float_array(a, shape, name):
    """``a`` as a contiguous float64 array of exactly ``shape``."""
    a = np.ascontiguousarray(a, dtype=np.float64)
    if a.shape != shape:
        raise ValueError(f"{name} must have shape {shape}; got {a.shape}.")
    return a


def _same_features(A, B):
    if A.shape[1] != B.shape[1]:
        raise ValueError(f"A has {A.shape[1]} features but B has {B.shape[1]}.")


def _groups(groups, kappa):
    """``groups`` checked against an ARD ``kappa`` with one entry per group."""
    g = np.ascontiguousarray(groups, dtype=np.int64)
    if np.ndim(kappa) != 1 or g.ndim != 1 or g.size == 0:
        raise ValueError("groups (tied ARD) need an ARD kappa (one entry per group) and a 1-D "
                         f"array of group indices; got groups of shape {g.shape}.")
    if g.min() < 0 or g.max() >= kappa.shape[0] or np.unique(g).size != kappa.shape[0]:
        raise ValueError(f"groups must use every index 0..{kappa.shape[0] - 1} of kappa (one "
                         f"kappa per group); got {g.tolist()!r:.200}.")
    return g


def _positive(name, value):
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}.")
    return arr


class GaussianCovariance:
    """Gaussian covariance (4.3), isotropic or ARD (4.42).

    Parameters
    ----------
    kappa0 : float
        Signal variance (average power of f), > 0.
    kappa : float or array of shape (d,)
        Inverse squared length scale; an array gives the ARD form with one
        relevance weight per input.
    kappa_b : float
        Variance of the bias (offset) of f, > 0; 0 gives the pure Gaussian
        kernel (then ``theta`` is not defined).
    groups : array of int, shape (d,), optional
        Tied ARD: the entry of ``kappa`` that weights each input (see the
        module docstring); ``kappa`` then has one entry per group.
    """

    def __init__(self, kappa0=1.0, kappa=1.0, kappa_b=1.0, groups=None):
        self.kappa0 = float(_positive("kappa0", kappa0))
        k = _positive("kappa", kappa)
        if k.ndim > 1:
            raise ValueError(f"kappa must be a float or a 1-D array; got shape {k.shape}.")
        self.kappa = float(k) if k.ndim == 0 else k.copy()
        if kappa_b == 0:  # a pure Gaussian kernel (no bias term) is allowed
            self.kappa_b = 0.0
        else:
            self.kappa_b = float(_positive("kappa_b", kappa_b))
        self.groups = None if groups is None else _groups(groups, self.kappa)

    # -- parameters -----------------------------------------------------
    @property
    def ard(self):
        """True when ``kappa`` holds one weight per input."""
        return not np.isscalar(self.kappa)

    def weights(self, d):
        """Per-input weights ``w_l`` (length ``d``) used by the kernels."""
        if self.groups is not None:
            if self.groups.shape[0] != d:
                raise ValueError(f"ARD groups name {self.groups.shape[0]} inputs but X has {d} "
                                 "features.")
            return np.ascontiguousarray(self.kappa[self.groups], dtype=np.float64)
        if self.ard:
            if self.kappa.shape[0] != d:
                raise ValueError(
                    f"ARD kappa has {self.kappa.shape[0]} entries but X has {d} features."
                )
            return np.ascontiguousarray(self.kappa, dtype=np.float64)
        return np.full(d, self.kappa)

    @property
    def theta(self):
        """Log hyperparameters ``[ln kappa0, ln kappa(_l), ln kappa_b]``."""
        return np.concatenate(([np.log(self.kappa0)], np.log(np.atleast_1d(self.kappa)),
                               [np.log(self.kappa_b)]))

    @classmethod
    def from_theta(cls, theta, ard, groups=None):
        """Inverse of :attr:`theta` (``groups``: tied ARD, see the class)."""
        theta = np.asarray(theta, dtype=np.float64)
        kappa = np.exp(theta[1:-1]) if ard else float(np.exp(theta[1]))
        return cls(float(np.exp(theta[0])), kappa, float(np.exp(theta[-1])),
                   groups if ard else None)

    def with_bias(self, kappa_b):
        """This covariance with the bias variance ``kappa_b`` (0: the kernel
        without its bias term), groups kept."""
        return GaussianCovariance(self.kappa0, self.kappa, kappa_b, self.groups)

    def theta_names(self):
        """Names of the entries of :attr:`theta`."""
        if self.ard:
            ks = [f"ln kappa_{l + 1}" for l in range(len(self.kappa))]
        else:
            ks = ["ln kappa"]
        return ["ln kappa0", *ks, "ln kappa_b"]

    def same_as(self, other):
        """True when ``other`` has exactly the same hyperparameters."""
        return (isinstance(other, GaussianCovariance) and self.ard == other.ard
                and self.kappa0 == other.kappa0 and self.kappa_b == other.kappa_b
                and np.array_equal(np.atleast_1d(self.kappa), np.atleast_1d(other.kappa))
                and (self.groups is None) == (other.groups is None)
                and (self.groups is None or np.array_equal(self.groups, other.groups)))

    def __repr__(self):
        tied = "" if self.groups is None else f", groups={self.groups.tolist()!r}"
        return (f"GaussianCovariance(kappa0={self.kappa0!r}, kappa={self.kappa!r}, "
                f"kappa_b={self.kappa_b!r}{tied})")

    # -- evaluation -----------------------------------------------------
    def kernel(self, X):
        """This covariance over the inputs ``X`` as the compiled kernels take it:
        a :class:`bsvm_scale._compiled.covariance.Kernel` of contiguous float64
        ``X`` and weights (:meth:`weights`), isotropic when this covariance is (its
        derivative contractions then make ``d/d ln kappa`` in one pass)."""
        X = np.ascontiguousarray(X, dtype=np.float64)
        return _ck.make_kernel(X, self.weights(X.shape[1]), self.kappa0, self.kappa_b,
                               iso=not self.ard)

    def row(self, X, i, out=None):
        """Row ``i`` of the covariance of ``X`` against all of ``X``."""
        kern = self.kernel(X)
        out = np.empty(X.shape[0]) if out is None else out
        if out.shape != (X.shape[0],):
            raise ValueError(f"out must have shape ({X.shape[0]},); got {out.shape}.")
        _ck.cov_row(kern, _row_index(i, X.shape[0]), out)
        return out

    def diag(self, X):
        """Diagonal ``Cov(x_i, x_i) = kappa0 + kappa_b``."""
        return _ck.cov_diag(X.shape[0], self.kappa0, self.kappa_b)

    def subset(self, X, idx):
        """``Sigma_M``: the ``m x m`` block over the points ``idx``."""
        return _ck.cov_subset(self.kernel(X), _indices(idx, X.shape[0]))

    def cross(self, A, B):
        """Cross-covariance block ``Cov(A[a], B[b])``; the caller bounds its size
        (use :meth:`iter_cross` for large ``A``)."""
        kern = self.kernel(A)
        _same_features(A, B)
        out = np.empty((A.shape[0], B.shape[0]))
        _ck.cov_cross(kern, B, out)
        return out

    def iter_cross(self, A, B, chunk_bytes=_CHUNK_BYTES):
        """Yield ``(start, stop, block)`` with ``block = cross(A[start:stop], B)``,
        each block at most ``chunk_bytes`` large."""
        rows = max(1, int(chunk_bytes // (8 * max(B.shape[0], 1))))
        for start in range(0, A.shape[0], rows):
            stop = min(A.shape[0], start + rows)
            yield start, stop, self.cross(A[start:stop], B)

    def cross_matvec(self, A, B, v):
        """``sum_b Cov(A[a], B[b]) v[b]`` for every ``a``, without storing a block."""
        kern = self.kernel(A)
        _same_features(A, B)
        return _ck.cov_cross_matvec(kern, B, _float_array(v, (B.shape[0],), "v"))

    def cross_matvec_block(self, A, B, v, cols, add):
        """``(cross_matvec(A, B, v), K)`` with ``K[a, j] = Cov(A[a], B[cols[j]]) +
        add`` from the same kernel values (each computed once)."""
        kern = self.kernel(A)
        _same_features(A, B)
        cols = _indices(cols, B.shape[0], "cols")
        block = np.empty((A.shape[0], cols.size))
        mean = _ck.cov_cross_matvec_block(kern, B, _float_array(v, (B.shape[0],), "v"), cols,
                                          float(add), block)
        return mean, block

    # -- gradient contractions ------------------------------------------
    def _collapse(self, g):
        """Map the full ARD layout onto this covariance's :attr:`theta`."""
        if self.groups is not None:
            tied = np.bincount(self.groups, weights=g[1:-1], minlength=self.kappa.shape[0])
            return np.concatenate(([g[0]], tied, [g[-1]]))
        if self.ard:
            return g
        return np.array([g[0], g[1:-1].sum(), g[-1]])

    def trace_grad(self, X, idx, A, lower=False):
        """``trace(A dSigma_M/d theta_p)`` for every log hyperparameter ``p``.

        With ``lower=True`` ``A`` is symmetric and only its lower triangle is
        read (C-contiguous ``A`` is used in place, e.g. LAPACK's inverse).
        """
        kern = self.kernel(X)
        idx = _indices(idx, X.shape[0])
        A = _float_array(A, (idx.size, idx.size), "A")
        g = (_ck.trace_dcov_lower if lower else _ck.trace_dcov)(kern, idx, A)
        return self._collapse(g)

    def quad_grad(self, X, idx, v):
        """``v^T (dSigma_S/d theta_p) v`` over the points ``idx`` for every ``p``."""
        kern = self.kernel(X)
        idx = _indices(idx, X.shape[0])
        g = _ck.quad_dcov(kern, idx, _float_array(v, (idx.size,), "v"))
        return self._collapse(g)

    def bilinear_grad(self, X, idx, p, v):
        """``p^T (dSigma_M/d theta_j) v`` over the points ``idx`` for every ``j``
        (each pair of points once: half the work of ``p @ matvec_grad``)."""
        kern = self.kernel(X)
        idx = _indices(idx, X.shape[0])
        g = _ck.bilinear_dcov(kern, idx, _float_array(p, (idx.size,), "p"),
                              _float_array(v, (idx.size,), "v"))
        return self._collapse(g)

    def matvec_grad(self, X, idx, v):
        """``(dSigma_M/d theta_p) v`` as an ``m x n_theta`` array."""
        kern = self.kernel(X)
        idx = _indices(idx, X.shape[0])
        g = _ck.dcov_matvec(kern, idx, _float_array(v, (idx.size,), "v"))
        if self.groups is not None:
            member = np.zeros((self.groups.shape[0], self.kappa.shape[0]))
            member[np.arange(self.groups.shape[0]), self.groups] = 1.0
            return np.column_stack([g[:, 0], g[:, 1:-1] @ member, g[:, -1]])
        if self.ard:
            return g
        return np.column_stack([g[:, 0], g[:, 1:-1].sum(axis=1), g[:, -1]])


class RowCache:
    """LRU cache of covariance rows with a memory budget.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Training inputs (C-contiguous float64).
    covariance : GaussianCovariance
        Current covariance; :meth:`set_covariance` replaces it and drops every
        cached row if the hyperparameters changed.
    cache_mb : float, default=256
        Memory budget of the row buffer in MiB. At least two rows are always
        kept (SMO needs two at once) and never more than ``n``.
    """

    def __init__(self, X, covariance, cache_mb=256.0):
        if not np.isfinite(cache_mb) or cache_mb <= 0:
            raise ValueError(f"cache_mb must be a positive number of MiB; got {cache_mb!r}.")
        self.X = as_float_matrix(X)
        n = self.X.shape[0]
        self.cache_mb = float(cache_mb)
        self.n_slots = int(min(n, max(2, (cache_mb * 2**20) // (8 * max(n, 1)))))
        self._state = _rc.allocate(n, self.n_slots)
        self.covariance = covariance
        self._kernel = covariance.kernel(self.X)

    def set_covariance(self, covariance):
        """Use new hyperparameters; cached rows are dropped if they changed."""
        if not covariance.same_as(self.covariance):
            _rc.reset(self._state)
            self.covariance = covariance
            self._kernel = covariance.kernel(self.X)

    @property
    def holds_all(self):
        """True when every row of the matrix fits in the cache at once (what
        lets Newton's method read its products from cached rows,
        :mod:`bsvm_scale.inference.map_newton`)."""
        return self.n_slots >= self.X.shape[0]

    @property
    def kernel(self):
        """The current covariance over the training inputs, for compiled code
        (a :class:`bsvm_scale._compiled.covariance.Kernel`)."""
        return self._kernel

    @property
    def state(self):
        """The cache arrays, for compiled code (a
        :class:`bsvm_scale._compiled.row_cache.CacheState`); with :attr:`kernel`
        and a row index they are the arguments of
        :func:`bsvm_scale._compiled.row_cache.get_row`."""
        return self._state

    def row(self, i):
        """Covariance row ``i`` (a view that later lookups may overwrite)."""
        return _rc.get_row(self._kernel, self._state, _row_index(i, self.X.shape[0]))

    @property
    def nbytes(self):
        """Bytes held by the row buffer."""
        return self._state.buf.nbytes

    @property
    def stats(self):
        """Counters: hits, misses, evictions, rows held, slots."""
        meta = self._state.meta
        return {"hits": int(meta[_rc.HITS]), "misses": int(meta[_rc.MISSES]),
                "evictions": int(meta[_rc.EVICTIONS]), "rows": int(meta[_rc.USED]),
                "slots": self.n_slots}
