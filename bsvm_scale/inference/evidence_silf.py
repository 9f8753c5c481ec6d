"""Evidence of the BSVR hyperparameters and its gradient.

Given the MAP solution ``nu = alpha - alpha*`` of (4.25) and ``f_MP = Sigma nu``
(4.26), the Laplace approximation of the evidence is (4.38)::

    -ln P(D|theta) = 1/2 nu^T Sigma nu + C sum_i l(y_i - f_i)
                     + 1/2 ln |I + C/(2 beta eps) Sigma_M| + n ln Z_S

where ``M`` is the set of off-bound SVs (``0 < |nu_i| < C``), ``m = |M|``,
and ``Z_S`` the SILF normaliser (2.32). With ``B = Sigma_M + (2 beta eps / C) I``
the log determinant is ``ln|B| + m ln(C / (2 beta eps))``, computed from the
Cholesky factor of ``B``.

Gradients (4.39)-(4.41), in log space::

    d/d ln C     = C sum_i l_i + 1/2 tr(B^-1 Sigma_M) + n C dlnZ_S/dC
    d/d ln eps   = C eps sum_i dl_i/deps - 1/2 tr(B^-1 Sigma_M) + n eps dlnZ_S/deps
    d/d ln k'    = 1/2 tr(B^-1 dSigma_M/d ln k') - 1/2 nu^T (dSigma/d ln k') nu

for ``k'`` in ``{kappa0, kappa, kappa_l (ARD, 4.42), kappa_b}`` (``kappa0``
only when it is inferred: the thesis holds it fixed, footnote 9). The trace is a contraction over the ``m x m`` block
and the quadratic form runs over the ``s`` support vectors in O(s^2 d)
without storing an ``s x s`` array, so one evaluation costs
O(m^3 + s^2 d) time and O(m^2 + n d) memory.

The SV sets are treated as fixed under differentiation (the thesis' assumption
that they do not change near the optimum); the first-order optimality of
``f_MP`` removes every implicit term.

Case weights
------------
A case weight ``w_i >= 0`` raises the case's likelihood to the power ``w_i``:
``P(D | f) = prod_i P(y_i | f_i)^{w_i}``, so ``C l_i`` becomes ``C w_i l_i``
(the box ``C_i = C w_i`` of the dual, :mod:`bsvm_scale._compiled.smo_silf`) and
the normaliser ``n ln Z_S`` becomes ``W ln Z_S`` with ``W = sum_i w_i``. The
Laplace approximation then has the likelihood curvature ``Lambda_i = C w_i /
(2 beta eps)`` on the off-bound SVs ``0 < |nu_i| < C_i``, and with ``r = 2 beta
eps / C``::

    -ln P(D|theta) = 1/2 nu^T Sigma nu + C sum_i w_i l_i
                     + 1/2 (ln|B_w| + m ln(1/r) + sum_{i in M} ln w_i) + W ln Z_S,
    B_w = Sigma_M + diag(r / w_M),   tr(B_s^-1 Sigma_M) = m - r sum_M (B_w^-1)_ii / w_i

(``ln|I + Lambda Sigma_M| = ln|B_w| + sum_M ln(C w_i / 2 beta eps)``); the
gradients (4.39)-(4.41) keep their form with the weighted sums, ``W`` for
``n`` and this trace.
For integer weights this is exactly the evidence of the data set with case
``i`` repeated ``w_i`` times (no constant between them): the MAP function is
the same, the repeated cases share one value of ``f``, and by Sylvester's
identity ``|I_N + Lambda_D E Sigma E^T| = |I_n + E^T Lambda_D E Sigma|`` with
``E`` the ``N x n`` repetition matrix and ``E^T Lambda_D E = diag(w) Lambda``.
For other weights it is the Laplace evidence of the weighted likelihood,
a pseudo-likelihood that is not a normalised density of the data (it is the
integral of ``prod_i P(y_i|f_i)^{w_i}`` over ``f``, not a probability of ``D``):
evidences of fits with the same weights can be compared, those with
different weights cannot. A case of weight 0 contributes nothing (its
``nu_i = 0``; it is never an SV). Without weights every expression is the
unweighted one, computed as before.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular

from . import losses
from .blocks import SHIFTED_BLAS_BLOCK, block_threads, make_block
from .evidence_lowrank import EvidenceSettings
from .linalg import inverse_lower, stable_cholesky  # noqa: F401 -- part of this module's API

__all__ = ["EvidenceResult", "stable_cholesky", "inverse_lower", "silf_evidence"]



class EvidenceResult:
    """Value, gradient and the pieces kept for prediction.

    ``block`` is the SV block (:mod:`bsvm_scale.inference.blocks`) and ``L``
    its dense Cholesky factor (``None`` on the matrix-free path);
    ``method`` and ``error`` (nats of ``-ln evidence``) say how the block
    was handled.
    """

    def __init__(self, value, grad, L, jitter, off_bound, support, f, method="dense",
                 error=0.0, block=None):
        self.value = value
        self.grad = grad
        self.L = L
        self.jitter = jitter
        self.off_bound = off_bound
        self.support = support
        self.f = f
        self.method = method
        self.error = error
        self.block = block

    def info(self):
        """Diagnostics of the block for the objective's ``info``."""
        return self.block.info()


def silf_evidence(cov, X, y, nu, f, C, epsilon, beta, need_grad=True,
                  settings=EvidenceSettings(), kappa0_grad=False, quad=None,
                  sample_weight=None):
    """``-ln P(D | theta)`` (4.38) and its gradient (4.39)-(4.41).

    Parameters
    ----------
    cov : GaussianCovariance
        Covariance at which ``nu`` was computed.
    X : ndarray (n, d)
        Training inputs (standardised, contiguous).
    y : ndarray (n,)
        Targets.
    nu : ndarray (n,)
        MAP dual solution ``alpha - alpha*``.
    f : ndarray (n,)
        ``f_MP = Sigma nu``.
    C, epsilon, beta : float
        Loss hyperparameters.
    need_grad : bool
        Compute the gradient too.
    settings : EvidenceSettings
        Dense or matrix-free block (:func:`bsvm_scale.inference.evidence_lowrank.plan_block`,
        which raises :class:`~bsvm_scale.inference.evidence_lowrank.EvidenceBudgetError`
        when the block does not fit the budget; :mod:`bsvm_scale.inference.blocks`).
    kappa0_grad : bool, default=False
        Include ``d/d ln kappa0`` (``kappa0`` inferred rather than fixed).
    quad : ndarray, optional
        ``nu^T (dSigma~/d ln theta_p) nu`` in the full layout ``[ln kappa0,
        ln w_1..d, ln kappa_b]`` of the bias-free covariance, when the MAP
        solve already has it (:func:`bsvm_scale._compiled.smo_silf.quad_after_smo`);
        otherwise it is contracted here over the support vectors.
    sample_weight : ndarray (n,), optional
        Case weights (finite, ``>= 0``; see the module docstring); None is
        the unweighted evidence (4.38).

    Returns
    -------
    EvidenceResult
        ``grad`` is laid out as ``[ln C, ln eps, *cov.theta[1:]]`` (that is
        ``ln kappa`` or ``ln kappa_1..d``, then ``ln kappa_b``); with
        ``kappa0_grad`` as ``[ln C, ln eps, *cov.theta]``.
    """
    w = sample_weight
    absnu = np.abs(nu)
    support = np.flatnonzero(absnu > 0.0)
    off = np.flatnonzero((absnu > 0.0) & (absnu < (C if w is None else C * w)))
    method, max_rank = settings.plan(off.size, dense_arrays=3)
    with block_threads(method, off.size, SHIFTED_BLAS_BLOCK):
        block = make_block(method, cov, X, off, _block_curvature(C, epsilon, beta, off, w),
                           tol=settings.tol, max_rank=max_rank, form="shifted",
                           ratio=2.0 * beta * epsilon / C, w=w)
        value, grad = _value_and_grad(cov, X, y, nu, f, C, epsilon, beta, block, support,
                                      need_grad, quad, w)
    if grad is not None and not kappa0_grad:
        grad = np.delete(grad, 2)
    return EvidenceResult(value, grad, block.L, block.jitter, off, support, f, block.method,
                          0.5 * block.error, block)


def _value_and_grad(cov, X, y, nu, f, C, epsilon, beta, block, support, need_grad, quad, w):
    """(4.38) and, with ``need_grad``, (4.39)-(4.41) from the off-bound block."""
    n, m = _n_cases(y.shape[0], w), block.idx.shape[0]
    resid, loss, lnZ = _loss_terms(y, f, C, epsilon, beta)
    value = 0.5 * float(nu @ f) + C * _weighted_sum(loss, w) + 0.5 * block.logdet + n * lnZ
    if not need_grad:
        return value, None
    tr_BS = m - block.trace_lambda_inv_A()
    grad = _assemble_grad(X, nu, cov, C, epsilon, beta, support, resid, loss, tr_BS,
                          block.trace_grad(), quad, w)
    block.done()
    return value, grad


def _weighted_sum(a, w):
    """``sum_i w_i a_i`` (``sum_i a_i`` without weights; bit for bit the same for unit weights)."""
    return float(a.sum()) if w is None else float(np.sum(w * a))


def _n_cases(n, w):
    """The multiplier ``n`` of ``ln Z_S``, or ``W = sum_i w_i`` with case weights."""
    return n if w is None else float(np.sum(w))


def _loss_terms(y, f, C, epsilon, beta):
    """Residuals, SILF values (2.28) and the normaliser ``ln Z_S`` (2.32)."""
    resid = y - f
    return resid, losses.silf(resid, epsilon, beta), float(
        losses.silf_log_normalizer(C, epsilon, beta))


def _block_curvature(C, epsilon, beta, off, w=None):
    """``Lambda`` of the off-bound block: ``C w_i / (2 beta eps)`` (``w_i = 1``
    without weights)."""
    lam = C / (2.0 * beta * epsilon)
    return np.full(off.shape[0], lam) if w is None else lam * w[off]


def _assemble_grad(X, nu, cov, C, epsilon, beta, support, resid, loss, tr_BS, g_trace,
                   quad=None, w=None):
    """(4.39)-(4.41) from ``tr(B_s^-1 Sigma_M)`` (``m - tr(Lambda^-1 A)``),
    ``tr(A dSigma_p)`` and ``nu^T dSigma_p nu`` (``quad``, see
    :func:`silf_evidence`, or contracted here); with case weights ``w`` the
    sums over cases are weighted."""
    n = _n_cases(nu.shape[0], w)
    dlnZ_dlnC, dlnZ_dlneps = losses.silf_log_normalizer_grad(C, epsilon, beta)
    g_lnC = C * _weighted_sum(loss, w) + 0.5 * tr_BS + n * float(dlnZ_dlnC)
    dl_deps = losses.silf_d_epsilon(resid, epsilon, beta)
    g_lneps = C * epsilon * _weighted_sum(dl_deps, w) - 0.5 * tr_BS + n * float(dlnZ_dlneps)
    p = cov.theta.shape[0]
    if quad is not None:
        q = np.array(quad, dtype=np.float64)
        q[-1] = cov.kappa_b * float(np.sum(nu[support])) ** 2  # dSigma/d ln kappa_b = kappa_b
        g_quad = cov._collapse(q)
    else:
        g_quad = cov.quad_grad(X, support, nu[support]) if support.size else np.zeros(p)
    g_cov = 0.5 * g_trace - 0.5 * g_quad
    return np.concatenate(([g_lnC, g_lneps], g_cov))


def prediction_factor(ev, settings):
    """The :class:`~bsvm_scale.inference.evidence_lowrank.LowRankPredictor` of a
    matrix-free evaluation ``ev`` (its block holds the fit's case weights, if
    any), computed to ``PREDICT_TOL_RATIO`` of the evidence tolerance
    (``settings.tol``) by continuing the evaluation's own factor
    (:meth:`~bsvm_scale.inference.blocks.LowRankBlock.for_prediction`)."""
    return ev.block.for_prediction(settings.predict_rank(ev.off_bound.size))["predictor"]


def predictive_variance_chunk(cov, Xtest, Xoff, L):
    """``sigma_t^2 = Cov(x, x) - k_M^T B^-1 k_M`` (4.46) for a chunk of test points
    (``L``: the Cholesky factor of ``B = Sigma_M + diag(2 beta eps / C_i)``, with
    ``C_i = C w_i`` under case weights)."""
    if Xoff.shape[0] == 0:
        return np.full(Xtest.shape[0], cov.kappa0 + cov.kappa_b)
    return variance_from_cross(cov, cov.cross(Xoff, Xtest), L)  # m x chunk


def variance_from_cross(cov, K, L):
    """:func:`predictive_variance_chunk` from the cross-covariance ``K`` (m x
    chunk, the off-bound cases against the test points)."""
    V = solve_triangular(L, K, lower=True, check_finite=False)
    var = cov.kappa0 + cov.kappa_b - np.einsum("ij,ij->j", V, V)
    return np.maximum(var, 0.0)
