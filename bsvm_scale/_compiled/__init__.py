"""Compiled kernels: every Numba ``@njit`` function of the package.

Flat functions over arrays and scalars, one small function per step of each
solver (select the working set, update, shrink, fetch a cached row): the
covariance function and its derivatives (``covariance``), the kernel-row cache
(``row_cache``), the pivoted Cholesky factor (``lowrank``), dense helpers for
factorised matrices (``dense``) and the three SMO solvers -- the classical
epsilon-SVR / SVC / TSVC duals (``smo_classic``), the BSVR dual under the soft
insensitive loss (``smo_silf``) and the unbounded BTSVC dual under the
trigonometric loss (``smo_trig``). Nothing here imports from the rest of the
package; the Python layers above validate once and pass contiguous float64
arrays in.
"""
