"""Identical training cases merged into one weighted case.

Real tables repeat rows: one-hot coded categories and rounded numbers give
many cases with the same inputs and, often, the same label (or target). ``k``
copies of a case are exactly one case of weight ``k`` (summed when the copies
carry case weights): the MAP problem has the loss ``k l(y, f)`` at one shared
``f`` (BTSVC's dual (5.29), BSVR's (4.25) with the box ``C k``), and the
evidence, (5.35) or (4.38), is the same with no constant between them
(Sylvester's determinant identity; :mod:`bsvm_scale.inference.evidence_trig`,
:mod:`bsvm_scale.inference.evidence_silf`). BSVR merges after the statistics it
takes from the data (standardisation, default ``beta``, ``kappa0``, target
scale) are computed on the cases as given; BTSVC standardises the merged cases
with their weights, which gives the same mean and scale up to rounding.

One case instead of ``k`` removes ``k - 1`` kernel rows from the SMO and
``k - 1`` rows and columns from the SV block, and it removes the numerical
hazard of identical rows in ``Sigma_M`` (a singular block).

:func:`merge_duplicates` finds the groups (same inputs *and* same label;
cases that share inputs but not labels stay apart) and keeps the merged
cases in the order of their first occurrence, so data without repeats give
the unchanged problem. The fitted model refers to the first case of each
group (``support_`` holds that row); the dual vectors of a resumed or
retrained fit are over the merged cases, and :func:`merge_dual` sums a dual
vector given per original case.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = ["Merged", "merge_duplicates", "merge_dual", "merge_fit_inputs", "restore_rows"]


class Merged(NamedTuple):
    """The merged problem: its inputs, labels and weights (one per merged
    case), ``rows`` (the first original case of each) and ``inverse`` (the
    merged case of each original case)."""

    X: np.ndarray
    y: np.ndarray
    weights: np.ndarray
    rows: np.ndarray
    inverse: np.ndarray


def merge_duplicates(X, y, weights=None):
    """The cases of ``(X, y)`` with identical inputs and label merged, their
    weights (``weights``, None: all 1) summed; None when no case repeats.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    weights : ndarray of shape (n,), optional

    Returns
    -------
    Merged or None
    """
    n = X.shape[0]
    if n < 2:
        return None
    key = np.column_stack([X, y]).astype(np.float64, copy=False)
    _, first, inverse = np.unique(key, axis=0, return_index=True, return_inverse=True)
    if first.size == n:
        return None
    order = np.argsort(first, kind="stable")          # merged cases by first occurrence
    position = np.empty_like(order)
    position[order] = np.arange(order.size)
    inverse = position[np.ravel(inverse)]
    rows = first[order]
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=np.float64)
    summed = np.bincount(inverse, weights=w, minlength=rows.size)
    return Merged(np.ascontiguousarray(X[rows]), y[rows].copy(), summed, rows, inverse)


def merge_dual(dual, merged):
    """A dual vector given per original case (``alpha``, or ``y alpha``), as
    the merged problem holds it: summed over each group (the dual variable of
    a case of weight ``k`` is ``k`` times that of each copy)."""
    dual = np.asarray(dual, dtype=np.float64)
    return np.bincount(merged.inverse, weights=dual, minlength=merged.rows.size)


def merge_fit_inputs(X, y, weights=None, case_ids=None, start=None, retrain=None):
    """A fit's inputs with repeated cases merged: ``(merged, (X, y, weights,
    case_ids, start, retrain))``, ``merged`` None (and the inputs as given)
    when no case repeats. The case ids become those of each group's first
    case; a retraining's warm start (a :class:`~bsvm_scale.optimization.search.Retrain`)
    and a resumed start's dual vector given per original case -- ``start``
    an ``init`` dict (its ``alpha`` or ``nu``) or a
    :class:`~bsvm_scale.optimization.search.Resume` (its ``dual``) -- are
    summed over the groups (:func:`merge_dual`); a resumed ``state`` is the
    merged fit's own."""
    merged = merge_duplicates(X, y, weights)
    if merged is None:
        return None, (X, y, weights, case_ids, start, retrain)
    if retrain is not None and retrain.warm is not None and retrain.warm.dual is not None:
        retrain = retrain._replace(warm=retrain.warm._replace(
            dual=merge_dual(retrain.warm.dual, merged)))
    case_ids = None if case_ids is None else case_ids[merged.rows]
    return merged, (merged.X, merged.y, merged.weights, case_ids,
                    _merged_start(start, merged, X.shape[0]), retrain)


def _merged_start(start, merged, n):
    """``start`` (an ``init`` dict, a ``Resume`` or None) with its dual vector
    summed over the groups where it is given per original case."""
    def per_case(v):
        return v is not None and np.shape(v) == (n,)

    if isinstance(start, dict):
        return {**start, **{k: merge_dual(start[k], merged) for k in ("alpha", "nu")
                            if per_case(start.get(k))}}
    if start is not None and per_case(start.dual):
        return start._replace(dual=merge_dual(start.dual, merged))
    return start


def restore_rows(estimator, merged, names):
    """Point the fitted index attributes ``names`` of ``estimator`` (indices
    of merged cases) at rows of the ``X`` given to ``fit``: the first case of
    each group. Nothing to do when ``merged`` is None (no case repeated)."""
    if merged is None:
        return
    for name in names:
        setattr(estimator, name, merged.rows[getattr(estimator, name)])
