"""The exponential of the Gaussian covariance, in a form the compiler vectorises.

Every covariance value (thesis eq. 4.3, ARD form 4.42) is ``kappa0 * exp(-q/2)
+ kappa_b``, and on inputs of a few dimensions the exponential is most of the
cost of a covariance row. Numba lowers ``math.exp`` and ``np.exp`` to one libm
call per element, which the loop vectoriser cannot widen (llvmlite ships
without a vector math library). :func:`exp_into` computes ``exp(x)`` for ``x
<= 0`` with arithmetic alone:

1. range reduction ``x = k ln 2 + r``, ``|r| <= ln(2)/2``, with ``k`` rounded by
   adding and subtracting ``1.5 * 2^52`` and ``ln 2`` split in two parts
   (Cody and Waite), so ``r`` is exact to rounding;
2. ``exp(r)`` by its Taylor polynomial of degree 13 in Horner form (truncation
   below ``1e-17`` relative on ``|r| <= 0.347``);
3. ``2^k`` built from the exponent bits of ``k`` (two bit casts, no libm call),
   multiplied in exactly.

The result is within about one unit in the last place of the correctly rounded
exponential (tests/_compiled/test_fastexp.py measures it against libm's).
Arguments below ``-708`` (where ``exp`` leaves the normal range) give 0, NaN
gives NaN. The polynomial is a chain of dependent operations: inside a loop that
the compiler cannot vectorise (a running sum in strict order) it is slower than
libm's call, so callers compute a block of exponentials first
(:func:`exp_into`) and reduce over the block afterwards.
"""

from __future__ import annotations

import math

from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from . import jit

_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: k * _LN2_HI is exact
_LN2_LO = 1.90821492927058770002e-10
_SHIFT = 6755399441055744.0  # 1.5 * 2**52: t + _SHIFT rounds t to an integer
_SHIFT_BITS = 0x4338000000000000  # the bits of _SHIFT
_LOWEST = -708.0  # exp(-708) ~ 3.3e-308, just above the smallest normal number
_C = tuple(1.0 / math.factorial(k) for k in range(14))


@intrinsic
def _bits_of(typingctx, x):
    """The IEEE-754 bits of a float64, as an int64."""
    if not isinstance(x, types.Float):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.IntType(64))

    return types.int64(types.float64), codegen


@intrinsic
def _float_of(typingctx, x):
    """The float64 whose IEEE-754 bits are the int64 ``x``."""
    if not isinstance(x, types.Integer):
        return None

    def codegen(context, builder, signature, args):
        return builder.bitcast(args[0], ir.DoubleType())

    return types.float64(types.int64), codegen


@jit(inline="always")
def exp_neg(x):
    """``exp(x)`` for ``x <= 0`` (one element; see the module docstring)."""
    u = _LOWEST if x < _LOWEST else x
    t = u * _LOG2E + _SHIFT
    k = t - _SHIFT
    r = (u - k * _LN2_HI) - k * _LN2_LO
    p = _C[13]
    for k in range(12, -1, -1):  # Horner; the compiler unrolls the fixed trip count
        p = p * r + _C[k]
    scale = _float_of((_bits_of(t) - _SHIFT_BITS + 1023) << 52)
    return 0.0 if x < _LOWEST else p * scale


@jit(inline="always")
def exp_into(x):
    """``x[j] <- exp(x[j])`` for every ``j`` (all ``x[j] <= 0``); the loop vectorises."""
    for j in range(x.shape[0]):
        x[j] = exp_neg(x[j])
