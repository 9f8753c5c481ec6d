"""Class probabilities from pairwise (one-versus-one) probabilities.

A one-versus-one classifier over ``k`` classes has ``k (k - 1) / 2`` binary
models, one per pair ``i < j`` (in :func:`ovo_pairs` order, scikit-learn's and
LIBSVM's), each giving ``r_ij = P(y = i | y in {i, j}, x)`` and ``r_ji = 1 -
r_ij``; for BTSVC ``r_ij`` is the class probability (5.42) of the pair's model
with its predictive variance (5.41). A *coupling* turns the matrix ``R`` of
one test case into class probabilities ``p`` (summing to one):

* :func:`couple_product` -- ``p_i`` proportional to ``prod_{j != i} r_ij``:
  the pairwise answers taken as independent evidence about the class, combined
  by multiplying them (a log-linear pool). A class must win every one of its
  pairs to keep its mass, so the coupled probabilities are sharper than the
  pairwise ones imply: it does not recover ``p`` from consistent pairwise
  probabilities ``r_ij = p_i / (p_i + p_j)`` (method 2 does), which suits
  the under-confident pairwise probabilities of (5.42)
  (``docs/design/multiclass.md``).
* :func:`couple_wu_lin_weng` -- Wu, Lin & Weng (2004), method 2, what LIBSVM
  uses: ``p`` minimises ``sum_i sum_{j != i} (r_ji p_i - r_ij p_j)^2``
  subject to ``sum_i p_i = 1``, the least-squares solution of ``r_ij = p_i /
  (p_i + p_j)``; it is the linear system ``[Q 1; 1^T 0] [p; b] = [0; 1]``
  with ``Q_ii = sum_{j != i} r_ji^2`` and ``Q_ij = -r_ji r_ij``.

:func:`ovo_votes` is scikit-learn's one-versus-rest shaped decision function
of a one-versus-one classifier (``decision_function_shape="ovr"``): votes plus
a bounded share of the summed pairwise decision values.

Everything is vectorised over test cases; ``R`` has shape ``(n, k, k)``.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
from scipy.special import logsumexp

__all__ = ["ovo_pairs", "pairwise_matrix", "couple_product", "couple_wu_lin_weng", "ovo_votes",
           "COUPLINGS"]

#: smallest pairwise probability used (as LIBSVM's ``min_prob``): a pairwise
#: model's 0 or 1 would otherwise veto a class outright
MIN_PROB = 1e-7


def ovo_pairs(k):
    """The pairs ``(i, j)``, ``i < j``, of ``k`` classes in one-versus-one order."""
    return list(combinations(range(k), 2))


def pairwise_matrix(r, k):
    """``R`` of shape ``(n, k, k)`` from the pairwise probabilities ``r`` of
    shape ``(n, k (k - 1) / 2)`` (column ``m``: ``P(i | i or j)`` of pair ``m``
    of :func:`ovo_pairs`), clipped to ``[MIN_PROB, 1 - MIN_PROB]``; the
    diagonal is 0."""
    r = np.clip(np.asarray(r, dtype=float), MIN_PROB, 1.0 - MIN_PROB)
    pairs = ovo_pairs(k)
    if r.ndim != 2 or r.shape[1] != len(pairs):
        raise ValueError(f"r must have shape (n, {len(pairs)}) for {k} classes; got {r.shape}.")
    R = np.zeros((r.shape[0], k, k))
    i, j = np.array(pairs, dtype=np.int64).T
    R[:, i, j] = r
    R[:, j, i] = 1.0 - r
    return R


def couple_product(R):
    """``p_i`` proportional to ``prod_{j != i} r_ij``, normalised in log space.

    Parameters
    ----------
    R : ndarray of shape (n, k, k)
        Pairwise probabilities (:func:`pairwise_matrix`; the diagonal is ignored).

    Returns
    -------
    ndarray of shape (n, k)
    """
    k = R.shape[1]
    off = ~np.eye(k, dtype=bool)
    logs = np.where(off, np.log(np.where(off, R, 1.0)), 0.0).sum(axis=2)
    return np.exp(logs - logsumexp(logs, axis=1, keepdims=True))


def couple_wu_lin_weng(R):
    """Wu, Lin & Weng (2004), method 2 (the module docstring's linear system).

    Parameters
    ----------
    R : ndarray of shape (n, k, k)
        Pairwise probabilities with ``R[:, j, i] = 1 - R[:, i, j]``.

    Returns
    -------
    ndarray of shape (n, k)
        The solution, its rounding-level negatives set to 0 and renormalised.
    """
    n, k, _ = R.shape
    off = ~np.eye(k, dtype=bool)
    Rt = np.swapaxes(R, 1, 2)  # Rt[:, i, j] = r_ji
    Q = np.where(off, -Rt * R, 0.0)
    idx = np.arange(k)
    Q[:, idx, idx] = np.where(off, Rt ** 2, 0.0).sum(axis=2)
    A = np.zeros((n, k + 1, k + 1))
    A[:, :k, :k] = Q
    A[:, :k, k] = 1.0
    A[:, k, :k] = 1.0
    b = np.zeros((n, k + 1, 1))
    b[:, k, 0] = 1.0
    p = np.maximum(np.linalg.solve(A, b)[:, :k, 0], 0.0)
    return p / p.sum(axis=1, keepdims=True)


#: the couplings by the name ``BayesianSVC(coupling=...)`` takes
COUPLINGS = {"product": couple_product, "wu_lin_weng": couple_wu_lin_weng}


def ovo_votes(dec, k):
    """One-versus-rest shaped scores of a one-versus-one classifier.

    Parameters
    ----------
    dec : ndarray of shape (n, k (k - 1) / 2)
        Pairwise decision values, positive for the first class of the pair.
    k : int

    Returns
    -------
    ndarray of shape (n, k)
        The votes of each class plus its summed decision values (signed for
        the class) squashed into ``(-1/3, 1/3)``, so that the votes decide
        and the decision values only break ties (scikit-learn's rule for
        ``SVC(decision_function_shape="ovr")``).
    """
    dec = np.asarray(dec, dtype=float)
    votes = np.zeros((dec.shape[0], k))
    conf = np.zeros((dec.shape[0], k))
    for m, (i, j) in enumerate(ovo_pairs(k)):
        votes[:, i] += dec[:, m] >= 0.0
        votes[:, j] += dec[:, m] < 0.0
        conf[:, i] += dec[:, m]
        conf[:, j] -= dec[:, m]
    return votes + conf / (3.0 * (np.abs(conf) + 1.0))
