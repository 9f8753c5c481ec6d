"""The support-vector block of a Laplace evidence, as a type.

Both evidences, BSVR's (4.38)-(4.42) and BTSVC's (5.35)-(5.37), need the same
few quantities of one matrix over the ``m`` support vectors of the block
(BSVR: its off-bound SVs), with ``Lambda`` the diagonal curvature of the
(weighted) loss there and ``A = (Lambda^-1 + Sigma_M)^-1``:

- ``logdet`` = ``ln |I + Lambda Sigma_M|``, with the bound ``error`` on its
  error (0 where exact) and the ``jitter`` its factorisation needed;
- :meth:`trace_grad` = ``tr(A dSigma_M / d ln theta_p)`` for every ``p``;
- :meth:`diag_A`, :meth:`A_matvec` and :meth:`trace_lambda_inv_A` =
  ``tr(Lambda^-1 A)``;
- :meth:`for_prediction`: what the predictive variance keeps.

:class:`DenseBlock` factorises the block (exact, ``O(m^3)``, ``m x m``
arrays); :class:`LowRankBlock` is the matrix-free path of
:mod:`bsvm_scale.inference.evidence_lowrank` (a pivoted-Cholesky factor with
an error bound, plus a stochastic correction when a rank budget stops it).
:func:`make_block` chooses one from the plan of ``evidence_method``; the
evidence modules use the methods only.

A dense block is built in one of two algebraically equal forms, each with the
arithmetic its model has always used (results do not change in the last bit):
``B = I + Lambda^1/2 Sigma_M Lambda^1/2`` (BTSVC) or ``B = Sigma_M +
Lambda^-1`` (BSVR, whose ``Lambda^-1 = ratio / w_i`` with ``ratio = 2 beta eps
/ C``); ``form`` names it.
"""

from __future__ import annotations

from contextlib import nullcontext

import numpy as np
from scipy.linalg.blas import dsymv

from .._util.threads import blas_threads
from .evidence_lowrank import (AUTO_FACTOR_FIRST, FACTOR_OR_DENSE, N_PROBES,
                               PREDICT_TOL_RATIO, BlockEvidence, LowRankPredictor)
from .linalg import chol_with_jitter, inverse_lower, stable_cholesky

__all__ = ["DenseBlock", "LowRankBlock", "make_block", "kept_for_final", "block_threads", "empty_prediction", "SCALED_BLAS_BLOCK",
           "SHIFTED_BLAS_BLOCK"]

#: below these block sizes BLAS runs single-threaded (docs/design/threads_and_caches.md)
SCALED_BLAS_BLOCK = 2000
SHIFTED_BLAS_BLOCK = 1500


class DenseBlock:
    """The SV block factorised densely: ``L`` the Cholesky factor of ``B``.

    Parameters
    ----------
    cov : GaussianCovariance
    X : ndarray (n, d)
        Training inputs; the block is ``idx``.
    idx : ndarray of int
    sl : ndarray (m,)
        ``Lambda^1/2`` on the block.
    form : {"scaled", "shifted"}
    ratio, w : float, ndarray or None
        The shifted form's ``Lambda^-1 = ratio / w[idx]`` (w None: all 1).
    """

    method = "dense"
    error = 0.0
    rank = 0

    def __init__(self, cov, X, idx, sl, form="scaled", ratio=None, w=None, S=None):
        self.cov, self.X, self.idx, self.sl = cov, X, idx, sl
        self.form, self._ratio, self._w = form, ratio, w
        self._A, self._S = None, S
        if form == "scaled":
            self.L, self.jitter = chol_with_jitter(self._scaled_B)
            self.logdet = 2.0 * np.sum(np.log(np.diag(self.L)))
        else:
            self.L, self.jitter, self.logdet = self._shifted_factor()

    def _scaled_B(self):
        """``B = I + Lambda^1/2 Sigma_M Lambda^1/2`` in one ``m x m`` array (the
        memory of the caller's ``Sigma_M`` the first time; rebuilt on a retry)."""
        B, self._S = self._S, None
        if B is None:
            B = self.cov.subset(self.X, self.idx)
        B *= self.sl[:, None]
        B *= self.sl[None, :]
        B[np.diag_indices(self.idx.size)] += 1.0
        return B

    def _shifted_factor(self):
        """``B = Sigma_M + diag(ratio / w)``, its factor, and ``ln |I + Lambda
        Sigma_M| = ln |B| + m ln(1 / ratio) + sum ln w``."""
        idx, w, ratio = self.idx, self._w, self._ratio
        B = self.cov.subset(self.X, idx)
        B[np.diag_indices_from(B)] += ratio if w is None else ratio / w[idx]
        L, jitter = stable_cholesky(B)
        logdet = 2.0 * np.sum(np.log(np.diag(L))) + idx.shape[0] * np.log(1.0 / ratio)
        if w is not None:
            logdet += float(np.sum(np.log(w[idx])))
        return L, jitter, logdet

    def prepare_gradient(self, keep_factor):
        """Form ``A`` for the gradient: in the memory of ``L`` unless the factor
        is kept for prediction (one ``m x m`` array in all)."""
        self.A(keep_L=keep_factor)

    def A(self, keep_L=True):
        """The lower triangle of ``A``, formed once; the scaled form works in
        the memory of ``L`` unless ``keep_L`` (the factor kept for prediction)."""
        if self._A is None:
            if self.form == "scaled":
                A = inverse_lower(self.L.copy() if keep_L else self.L, overwrite=True)
                A *= self.sl[:, None]
                A *= self.sl[None, :]
            else:  # B^-1 of B = Sigma_M + Lambda^-1 is A itself
                A = inverse_lower(self.L)
            self._A = A
        return self._A

    def diag_A(self):
        return np.diag(self.A())

    def done(self):
        """Drop ``A`` (an ``m x m`` array) once the gradient is made; the factor stays."""
        self._A = None

    def A_matvec(self, w):
        return dsymv(1.0, self.A().T, w, lower=0)  # from the lower triangle

    def trace_lambda_inv_A(self):
        A = self.A()
        if self.form == "scaled":
            return float(np.sum(np.diag(A) / (self.sl * self.sl)))
        if self._w is None:
            return self._ratio * float(np.trace(A))
        return self._ratio * float(np.sum(np.diag(A) / self._w[self.idx]))

    def trace_grad(self):
        if self.idx.size == 0:
            return np.zeros(self.cov.theta.shape[0])
        return self.cov.trace_grad(self.X, self.idx, self.A(), lower=True)

    @staticmethod
    def info():
        return {"method": "dense", "error": 0.0, "rank": 0}

    def for_prediction(self, predict_rank=None):
        """The factor and ``Lambda^1/2`` (the predictive variance (4.46), (5.41))."""
        return {"chol": self.L, "lam_sqrt": self.sl}


class LowRankBlock:
    """The SV block through a pivoted-Cholesky factor of ``I + Lambda^1/2
    Sigma_M Lambda^1/2`` (:class:`~bsvm_scale.inference.evidence_lowrank.BlockEvidence`:
    the factor alone when its bound meets ``tol``, else with a stochastic
    correction)."""

    method = "matrix_free"
    jitter = 0.0
    L = None

    def __init__(self, cov, X, idx, sl, lam, tol, max_rank, n_probes=N_PROBES,
                 first_rank=None):
        self.cov, self.idx, self.sl, self.lam, self.tol = cov, idx, sl, lam, tol
        self.XM = np.ascontiguousarray(X[idx])
        self.E = BlockEvidence(cov, self.XM, sl, tol, max_rank, n_probes, first_rank)
        self.logdet, self.error, self.rank = self.E.logdet, self.E.error, self.E.rank

    @classmethod
    def if_within_tol(cls, cov, X, idx, sl, lam, tol, max_rank):
        """The block from a factor of at most ``max_rank`` columns, staged from
        :data:`~bsvm_scale.inference.evidence_lowrank.AUTO_FACTOR_FIRST`, when
        it meets ``tol`` without a stochastic correction; else None."""
        block = cls(cov, X, idx, sl, lam, tol, max_rank, n_probes=0,
                    first_rank=min(AUTO_FACTOR_FIRST, max_rank))
        return block if block.E.within_tol else None

    def prepare_gradient(self, keep_factor):
        """Nothing to form: the factor answers every product."""

    def done(self):
        """Nothing to drop: the factor is what prediction and the record keep."""

    def diag_A(self):
        return self.lam * self.E.diag_inv()

    def A_matvec(self, w):
        return self.sl * self.E.solve(self.sl * w)

    def trace_lambda_inv_A(self):
        return float(np.sum(self.E.diag_inv()))

    def trace_grad(self):
        if self.idx.size == 0:
            return np.zeros(self.cov.theta.shape[0])
        return self.E.dlogdet()

    def info(self):
        return self.E.info()

    def for_prediction(self, predict_rank):
        """The low-rank predictor, to ``PREDICT_TOL_RATIO`` of the evidence
        tolerance: the evidence factor continued (its columns are the first
        ones of the predictor's)."""
        F = self.E.F.extended(self.cov, self.XM, 2.0 * self.tol * PREDICT_TOL_RATIO, predict_rank)
        return {"predictor": F.predictor()}


def make_block(method, cov, X, idx, lam, *, tol=None, max_rank=None, n_probes=N_PROBES,
               form="scaled", ratio=None, w=None, S=None):
    """The block of ``method`` (``"dense"``, ``"matrix_free"`` or
    :data:`~bsvm_scale.inference.evidence_lowrank.FACTOR_OR_DENSE`, from
    :meth:`~bsvm_scale.inference.evidence_lowrank.EvidenceSettings.plan`) over the
    cases ``idx`` with curvatures ``lam`` (``S``: the dense block ``Sigma_M``
    when the caller has it)."""
    sl = np.sqrt(lam)
    if method == FACTOR_OR_DENSE:
        block = LowRankBlock.if_within_tol(cov, X, idx, sl, lam, tol, max_rank)
        if block is not None:
            return block
        method = "dense"
    if method == "dense":
        return DenseBlock(cov, X, idx, sl, form, ratio, w, S)
    return LowRankBlock(cov, X, idx, sl, lam, tol, max_rank, n_probes)


def kept_for_final(block):
    """``block`` when a final evaluation at the same point may use it again
    (a matrix-free block: the gradient leaves its factor as it was; a dense
    block's factor is overwritten by the gradient), else None."""
    return block if isinstance(block, LowRankBlock) else None


def empty_prediction(method, d):
    """What a block without cases keeps for prediction (``d`` inputs)."""
    if method == "dense":
        return {"chol": np.zeros((0, 0)), "lam_sqrt": np.zeros(0)}
    return {"predictor": LowRankPredictor(np.zeros((0, d)), np.zeros((0, 0)), np.zeros((0, 0)))}


def block_threads(method, m, limit):
    """BLAS limits for work on a block of ``m`` cases: a dense block below
    ``limit`` (:data:`SCALED_BLAS_BLOCK`, :data:`SHIFTED_BLAS_BLOCK`) runs BLAS
    on one thread, where more threads do not pay; otherwise unchanged."""
    return blas_threads(m < limit) if method == "dense" else nullcontext()
