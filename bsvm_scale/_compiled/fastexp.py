"""The exponential of the Gaussian covariance, in a form the compiler vectorises.

Every covariance value (thesis eq. 4.3, ARD form 4.42) is ``kappa0 * exp(-q/2)
+ kappa_b``, and on inputs of a few dimensions the exponential is most of the
cost of a covariance row. Numba lowers ``math.exp`` and ``np.exp`` to one libm
call per element, which the loop vectoriser cannot widen (llvmlite ships
without a vector math library). The functions here compute ``exp(x)`` for ``x
<= 0`` with arithmetic alone:

1. range reduction ``x = k ln 2 + r``, ``|r| <= ln(2)/2``, with ``k`` rounded by
   adding and subtracting ``1.5 * 2^52`` and ``ln 2`` split in two parts
   (Cody and Waite), so ``r`` is exact to rounding;
2. ``exp(r)`` by its Taylor polynomial of degree 13 in Horner form (truncation
   below ``1e-17`` relative on ``|r| <= 0.347``);
3. ``2^k`` built from the exponent bits of ``k`` (vector form) or by
   ``ldexp`` (scalar form); both multiply exactly, so the two forms give the same
   bits.

The result is within about one unit in the last place of the correctly rounded
exponential (tests/_compiled/test_fastexp.py measures it against NumPy's).
Arguments below ``-708`` (where ``exp`` leaves the normal range) give 0, NaN
gives NaN.
:func:`exp_into` works in place on an array and is the form for rows and
blocks; :func:`exp_scalar` serves the pairwise loops, so that a covariance
value has the same bits whichever loop computed it.
"""

from __future__ import annotations

import math

import numpy as np

from . import jit

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: t + _SHIFT rounds t to an integer
_SHIFT_BITS = 0x4338000000000000  # the bits of _SHIFT
_LOWEST = -708.0  # exp(-708) ~ 3.3e-308, just above the smallest normal number
_C = tuple(1.0 / math.factorial(k) for k in range(14))


@jit(inline="always")
def _reduced(x):
    """``(exp(r), k + _SHIFT)`` for ``x = k ln 2 + r`` (``x >= _LOWEST``)."""
    t = x * _LOG2E + _SHIFT
    k = t - _SHIFT
    r = (x - k * _LN2_HI) - k * _LN2_LO
    p = _C[13]
    p = p * r + _C[12]
    p = p * r + _C[11]
    p = p * r + _C[10]
    p = p * r + _C[9]
    p = p * r + _C[8]
    p = p * r + _C[7]
    p = p * r + _C[6]
    p = p * r + _C[5]
    p = p * r + _C[4]
    p = p * r + _C[3]
    p = p * r + _C[2]
    p = p * r + _C[1]
    p = p * r + _C[0]
    return p, t


@jit(inline="always")
def exp_scalar(x):
    """``exp(x)`` for ``x <= 0``: the same bits as :func:`exp_into`."""
    if x < _LOWEST:
        return 0.0
    p, t = _reduced(x)
    return math.ldexp(p, int(t - _SHIFT))


@jit(inline="always")
def exp_into(x, scratch):
    """``x[j] <- exp(x[j])`` for every ``j`` (all ``x[j] <= 0``), in three
    vectorisable passes; ``scratch`` is a float64 array of at least
    ``len(x)`` entries (overwritten)."""
    n = x.shape[0]
    for j in range(n):
        v = x[j]
        p, t = _reduced(_LOWEST if v < _LOWEST else v)
        x[j] = 0.0 if v < _LOWEST else p
        scratch[j] = t
    bits = scratch[:n].view(np.int64)
    for j in range(n):
        bits[j] = (bits[j] - _SHIFT_BITS + 1023) << 52
    for j in range(n):
        x[j] *= scratch[j]
