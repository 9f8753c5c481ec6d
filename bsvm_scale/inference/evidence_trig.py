"""Laplace-approximated evidence of the BTSVC and its gradient (thesis 5.3.3).

At the MAP solution ``f_MP = Sigma v`` (5.32) of the dual (5.29), with the
support vectors (SVs) ``M = {i : alpha_i > 0}``, the negative log evidence is
(5.35)::

    -ln P(D | theta) = 1/2 v_M^T Sigma_M v_M + 2 sum_m ln sec(pi/4 xi_m)
                       + 1/2 ln |I + Sigma_M Lambda_M|,

with ``xi_m = 1 - y_m f_MP(x_m)`` and ``Lambda_m = pi^2/8 sec^2(pi/4 xi_m)``
the second derivative (5.10) of the trigonometric loss.

Also the predictive class probability (5.42), :func:`trig_class_probability`.

The determinant is computed through the symmetric, well conditioned matrix
``B = I + Lambda^{1/2} Sigma_M Lambda^{1/2}`` (eigenvalues >= 1), so
``ln |I + Sigma_M Lambda_M| = 2 sum ln diag chol(B)`` and
``A = (Lambda_M^{-1} + Sigma_M)^{-1} = Lambda^{1/2} B^{-1} Lambda^{1/2}``.

Gradient with respect to a log hyperparameter ``ln theta_p`` (Remark 4, 5.36,
derived in E.13-E.16; ARD (5.37) works the same with one ``ln kappa_l`` per
input)::

    d(-ln P)/d ln theta_p = 1/2 tr(A dSigma_p) - 1/2 v^T dSigma_p v
                            - 1/2 sum_m v_m [(Lambda^{-1} + Sigma)^{-1} Sigma]_mm
                                        [Lambda^{-1} A dSigma_p v]_m

where ``dSigma_p = dSigma_M / d ln theta_p``. The last (implicit) term comes
from the dependence of ``f_MP`` on theta (E.15): ``df_MP = Lambda^{-1} A
dSigma v``, and ``d Lambda_m / d f_m = -v_m Lambda_m``. (The sign of the
implicit term printed in E.16 is ``+``; differentiating (5.35) as above gives
``-``, as in (5.36), and the finite-difference tests agree with ``-``.)
Writing ``w_m = v_m (1 - A_mm / Lambda_m) / Lambda_m`` (because
``[(Lambda^{-1}+Sigma)^{-1} Sigma]_mm = 1 - A_mm / Lambda_m``) and
``u = A w``, the two quadratic terms merge into ``-1/2 (v + u)^T (dSigma_p v)``,
which :meth:`GaussianCovariance.bilinear_grad` gives for all ``p`` at once
(each pair of SVs visited once).

Cost: ``O(m^3)`` for the factorisation and inverse plus ``O(m^2 d)`` for the
covariance contractions; only ``m x m`` arrays over the SV block exist.

Case weights. With weights ``c_i >= 0`` the likelihood is ``prod_i P(y_i |
f_i)^{c_i}``, the loss of case ``i`` is ``c_i l(xi_i)`` and the MAP solution
that of the weighted dual (:mod:`bsvm_scale._compiled.smo_trig`), at which
``alpha_m = c_m pi/2 tan(pi/4 xi_m)``. Everything above holds with the
curvature of the weighted loss, ``Lambda_m = c_m pi^2/8 sec^2(pi/4 xi_m)``::

    -ln P(D | theta) = 1/2 v_M^T Sigma_M v_M + sum_m c_m 2 ln sec(pi/4 xi_m)
                       + 1/2 ln |I + Sigma_M Lambda_M|,

and in the gradient only ``d Lambda_m / d f_m`` changes: it is ``-c_m y_m
Lambda_m^(1) pi/2 tan(pi/4 xi_m) = -v_m Lambda_m / c_m`` (``Lambda^(1)`` the
unweighted curvature), so ``w_m = (v_m / c_m) (1 - A_mm / Lambda_m) /
Lambda_m``. With all weights 1 these are the formulas above in the same
floating-point operations. Cases of weight 0 are never SVs and do not enter.

Integer weights are duplicated cases: ``k_i`` copies of case ``i`` give the
same ``f_MP`` (the copies' ``v`` add up to the weighted one) and the same
``-ln P(D | theta)``: the quadratic and loss terms agree term by term and, with
``P`` the ``N x n`` matrix that copies rows, Sylvester's determinant identity
gives ``|I_N + P Sigma P^T Lambda_dup| = |I_n + Sigma P^T Lambda_dup P| = |I_n
+ Sigma diag(k) Lambda^(1)|``. There is no extra constant: the evidence of the
weighted data set equals the evidence of the duplicated one. With other
weights ``-ln P(D | theta)`` is the Laplace approximation of ``-ln int
prod_i P(y_i | f_i)^{c_i} p(f) df``, the evidence of a data set in which case
``i`` counts ``c_i`` times (a tempered likelihood, not a normalised
distribution over labels); it compares hyperparameters for the same weights,
not data sets with different total weight.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import solve_triangular
from scipy.special import erfc

from .._util.threads import blas_threads
from .blocks import SCALED_BLAS_BLOCK, empty_prediction, make_block
from .evidence_lowrank import DEFAULT_TOL, N_PROBES
from .linalg import chol_with_jitter  # noqa: F401 -- part of this module's API

__all__ = ["trig_slack_terms", "neg_log_evidence", "chol_with_jitter", "trig_class_probability"]

_XI_MAX = 2.0 - 1e-12
#: below this SV-block size BLAS runs single-threaded: Numba's OpenMP workers
#: keep spinning after each parallel kernel, and multi-threaded BLAS on a small
#: block competes with them for the cores (docs/design/threads_and_caches.md).
SMALL_BLOCK = SCALED_BLAS_BLOCK


def _blas_limit(m):
    """Context manager limiting BLAS to one thread for blocks below SMALL_BLOCK."""
    return blas_threads(m < SMALL_BLOCK)


def trig_slack_terms(xi):
    """Loss ``2 ln sec(pi/4 xi)`` (5.7 with ``xi = 1 - y f``) and its second
    derivative ``Lambda = pi^2/8 sec^2(pi/4 xi)`` (5.10).

    ``xi`` is clipped into ``[0, 2)`` (an SV can sit at ``xi`` marginally
    below 0 within the SMO tolerance; the loss is flat there).
    """
    xi = np.clip(np.asarray(xi, dtype=np.float64), 0.0, _XI_MAX)
    c = np.cos(0.25 * np.pi * xi)
    return -2.0 * np.log(c), (np.pi ** 2 / 8.0) / (c * c)


def neg_log_evidence(cov, X, y, alpha, f=None, need_grad=True, keep_factor=False,
                     method="dense", tol=DEFAULT_TOL, max_rank=None, n_probes=N_PROBES,
                     predict_rank=None, weights=None, dcov=None, block=None,
                     return_block=False):
    """Negative log evidence (5.35) and gradient (5.36)/(5.37).

    Parameters
    ----------
    cov : GaussianCovariance
        Covariance at the current hyperparameters.
    X : ndarray of shape (n, d)
        Training inputs (standardised, C-contiguous).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    alpha : ndarray of shape (n,)
        Dual solution of (5.29) for ``cov``.
    f : ndarray of shape (n,), optional
        The MAP function at the training points (the matrix-free block takes
        it; the dense block recomputes it on the SVs from ``Sigma_M``).
    need_grad : bool, default=True
        Also return the gradient with respect to ``cov.theta``.
    keep_factor : bool, default=False
        Add to ``info`` what prediction needs: ``support``, ``dual_coef`` =
        ``v_M`` and the block's factor (dense: ``chol``, ``lam_sqrt``;
        matrix-free: ``predictor``, of rank up to ``predict_rank``).
    method : {"dense", "matrix_free"}
        The SV block (:mod:`bsvm_scale.inference.blocks`), with ``tol``,
        ``max_rank`` and ``n_probes`` for the matrix-free one.
    weights : ndarray of shape (n,), optional
        Case weights of the MAP problem (None: all ones; module docstring).
    dcov : FactorCovariance, optional
        Computes the gradient's ``(v + u)^T dSigma_p v`` through a factor of
        ``Sigma`` (:mod:`bsvm_scale.inference.map_factor`) instead of over
        every pair of SVs.
    block : LowRankBlock, optional
        The matrix-free block an earlier evaluation made at these ``cov``,
        ``alpha`` and ``f`` (it is a function of them), used as it is.
    return_block : bool, default=False
        Also return the SV block (:mod:`bsvm_scale.inference.blocks`; None
        without SVs) as a fourth value.

    Returns
    -------
    value : float
        ``-ln P(D | theta)``.
    grad : ndarray or None
        Gradient with respect to the log hyperparameters (layout of ``cov.theta``).
    info : dict
        ``n_sv``, ``jitter``, ``method``, ``error`` (nats) and the block's
        diagnostics; with ``keep_factor`` the prediction factor.
    """
    y = np.asarray(y, dtype=np.float64)
    idx = np.flatnonzero(alpha > 0.0)
    m = idx.size
    c = np.ones(m) if weights is None else np.asarray(weights, dtype=np.float64)[idx]
    info = {"n_sv": int(m), "jitter": 0.0}
    if m == 0:
        info.update(method=method, error=0.0, rank=0)
        if keep_factor:
            info.update(support=idx, dual_coef=np.zeros(0), **empty_prediction(method, X.shape[1]))
        out = 0.0, (np.zeros(cov.theta.size) if need_grad else None), info, None
    else:
        with _blas_limit(m):
            out = _evaluate(cov, X, y, alpha, idx, c, f, need_grad, keep_factor, method, tol,
                            max_rank, n_probes,
                            max_rank if predict_rank is None else predict_rank, info, dcov, block)
    return out if return_block else out[:3]


def _evaluate(cov, X, y, alpha, idx, c, f, need_grad, keep_factor, method, tol, max_rank,
              n_probes, predict_rank, info, dcov=None, block=None):
    """:func:`neg_log_evidence` on the SVs ``idx`` (weights ``c``)."""
    v = y[idx] * alpha[idx]
    S, fM = _sv_function(cov, X, y, alpha, idx, v, f, method if block is None else block.method)
    loss, lam = _weighted_slack_terms(1.0 - y[idx] * fM, c)
    if block is None:
        block = make_block(method, cov, X, idx, lam, tol=tol, max_rank=max_rank,
                           n_probes=n_probes, S=S)
    info.update(block.info(), jitter=block.jitter)
    value = 0.5 * float(v @ fM) + float(loss.sum()) + 0.5 * block.logdet
    if keep_factor:
        info.update(support=idx, dual_coef=v, **block.for_prediction(predict_rank))
    if not need_grad:
        return value, None, info, block
    return value, _gradient(cov if dcov is None else dcov, X, idx, v, lam, c, block,
                            keep_factor), info, block


def _sv_function(cov, X, y, alpha, idx, v, f, method):
    """``(Sigma_M or None, f_MP on the SVs)``: the dense block computes ``f_M =
    Sigma_M v`` from the block it factorises anyway (exact); the matrix-free one
    takes the solver's ``f`` (or one pass over the SVs without it)."""
    if method == "dense":
        S = cov.subset(X, idx)
        return S, S @ v
    if f is None:
        f = cov.cross_matvec(X, X[idx], v)
    return None, np.asarray(f, dtype=np.float64)[idx]


def _weighted_slack_terms(xi, c):
    """Weighted loss ``c 2 ln sec(pi/4 xi)`` and curvature ``c pi^2/8
    sec^2(pi/4 xi)`` of the SVs (weights ``c > 0``; :func:`trig_slack_terms`)."""
    loss, lam = trig_slack_terms(xi)
    return c * loss, c * lam


def _gradient(cov, X, idx, v, lam, c, block, keep_factor):
    """Gradient (5.36)/(5.37) from the SV block: the trace term ``tr(A
    dSigma_p)``, and ``w``, ``u = A w`` of the implicit term (module
    docstring; ``c``: the SVs' case weights; ``cov``: anything with
    :meth:`~bsvm_scale.inference.covariance.GaussianCovariance.bilinear_grad`)."""
    block.prepare_gradient(keep_factor)
    tr = block.trace_grad()
    w = (v / c) * (1.0 - block.diag_A() / lam) / lam
    u = block.A_matvec(w)
    block.done()
    return 0.5 * tr - 0.5 * cov.bilinear_grad(X, idx, v + u, v)  # (v + u)^T dSigma_p v


def predictive_moments(cov, X_sv, dual_coef, chol, lam_sqrt, Xt, chunk_bytes=32 * 2**20):
    """Mean and variance of the latent ``f(x)`` (5.41) at test points.

    ``mu = k_M^T v_M`` and ``sigma^2 = Cov(x, x) - k_M^T (Lambda^-1 +
    Sigma_M)^-1 k_M = Cov(x, x) - || L^-1 Lambda^1/2 k_M ||^2`` with ``L`` the
    Cholesky factor of ``B`` kept from training (``Lambda`` the curvature of
    the weighted loss when the fit had case weights: ``lam_sqrt`` carries
    them); processed in chunks of test points so that no block exceeds
    ``chunk_bytes``.
    """
    nt = Xt.shape[0]
    m = X_sv.shape[0]
    mu = np.empty(nt)
    var = np.empty(nt)
    kxx = cov.kappa0 + cov.kappa_b
    if m == 0:
        mu[:] = 0.0
        var[:] = kxx
        return mu, var
    rows = max(1, int(chunk_bytes // (8 * 2 * m)))
    with _blas_limit(m):
        _moments_chunks(cov, X_sv, dual_coef, chol, lam_sqrt, Xt, rows, kxx, mu, var)
    np.maximum(var, 0.0, out=var)
    return mu, var


def _moments_chunks(cov, X_sv, dual_coef, chol, lam_sqrt, Xt, rows, kxx, mu, var):
    nt = Xt.shape[0]
    for s in range(0, nt, rows):
        e = min(nt, s + rows)
        K = cov.cross(Xt[s:e], X_sv)             # (t, m)
        mu[s:e] = K @ dual_coef
        W = solve_triangular(chol, (K * lam_sqrt).T, lower=True, check_finite=False)
        var[s:e] = kxx - np.einsum("ij,ij->j", W, W)


# -- class probability (5.42) ----------------------------------------------------------
_GL_ORDER = 64
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(_GL_ORDER)
_GL_HALF_WIDTH = 9.0  # integrate the Gaussian over mu +- 9 sigma (tail < 1e-18)


def _trig_likelihood(z):
    """Trigonometric likelihood (5.8) of ``z = y f``."""
    z = np.asarray(z, dtype=np.float64)
    inner = np.cos(0.25 * np.pi * (1.0 - np.clip(z, -1.0, 1.0))) ** 2
    return np.where(z >= 1.0, 1.0, np.where(z <= -1.0, 0.0, inner))


def _class_prob(y, mu, sd, chunk=32768):
    """(5.42) for label ``y`` (scalar +-1) at arrays ``mu``, ``sd`` (sd > 0),
    in chunks of test points (the quadrature holds ``chunk x 64`` arrays)."""
    if mu.shape[0] > chunk:
        return np.concatenate([_class_prob(y, mu[s:s + chunk], sd[s:s + chunk], chunk)
                               for s in range(0, mu.shape[0], chunk)])
    tail = 0.5 * erfc((1.0 - y * mu) / (np.sqrt(2.0) * sd))
    lo = np.maximum(-1.0, mu - _GL_HALF_WIDTH * sd)
    hi = np.minimum(1.0, mu + _GL_HALF_WIDTH * sd)
    half = 0.5 * np.maximum(hi - lo, 0.0)
    mid = 0.5 * (hi + lo)
    f = mid[:, None] + half[:, None] * _GL_NODES[None, :]           # (t, order)
    dens = np.exp(-0.5 * ((f - mu[:, None]) / sd[:, None]) ** 2)
    dens /= np.sqrt(2 * np.pi) * sd[:, None]
    lik = np.cos(0.25 * np.pi * (1.0 - y * f)) ** 2
    integral = half * ((lik * dens) @ _GL_WEIGHTS)
    return tail + integral


def trig_class_probability(mu, sd):
    """``P(y = +1 | x)`` of (5.42) for a Gaussian ``f(x) ~ N(mu, sd^2)``.

    The tail ``1/2 erfc((1 - mu)/(sqrt 2 sd))`` is exact; the integral over
    ``[-1, 1]`` of the trigonometric likelihood (5.8) against the Gaussian is
    computed with a 64-point Gauss-Legendre rule on the part of ``[-1, 1]``
    within ``mu +- 9 sd``, vectorised over points. The probability of the less
    likely label is evaluated by (5.42) itself and the other one as its
    complement, so ``P(+1) + P(-1) = 1`` exactly and small probabilities
    keep their relative accuracy. ``sd = 0`` gives the likelihood at ``mu``.
    """
    mu = np.atleast_1d(np.asarray(mu, dtype=np.float64))
    sd = np.broadcast_to(np.atleast_1d(np.asarray(sd, dtype=np.float64)), mu.shape)
    p = np.empty_like(mu)
    tiny = sd < 1e-12 * np.maximum(1.0, np.abs(mu))
    p[tiny] = _trig_likelihood(mu[tiny])
    ok = ~tiny
    if np.any(ok):
        m, s = mu[ok], sd[ok]
        pos = m >= 0.0
        q = np.empty_like(m)
        if np.any(pos):  # P(-1) is the smaller one
            q[pos] = 1.0 - _class_prob(-1.0, m[pos], s[pos])
        if np.any(~pos):
            q[~pos] = _class_prob(1.0, m[~pos], s[~pos])
        p[ok] = q
    return np.clip(p, 0.0, 1.0)
