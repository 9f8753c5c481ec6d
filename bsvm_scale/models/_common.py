"""What BSVR and BTSVC share besides the engines: the constraints of their
common parameters and the tied ARD groups of a table."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import StrOptions

from .._util.validation import N_JOBS, POSITIVE, POSITIVE_INT, SEED
from ..inference.evidence_lowrank import METHODS
from ..optimization.starts import ARD_INIT

__all__ = ["BAYES_CONSTRAINTS", "SearchRun", "ard_groups", "table_groups"]

#: scikit-learn ``_parameter_constraints`` of the parameters BSVR and BTSVC share
#: (what they cannot express, e.g. an array ``kappa`` of the wrong length, is
#: checked in ``fit``)
BAYES_CONSTRAINTS = {
    "ard": ["boolean"],
    "ard_init": [StrOptions(set(ARD_INIT))],
    "n_starts": [POSITIVE_INT, None],
    "tol": [POSITIVE],
    "cache_mb": [POSITIVE],
    "random_state": SEED,
    "optimize": ["boolean"],
    "kappa0": [POSITIVE, None],
    "kappa": [POSITIVE, "array-like", None],
    "kappa_b": [POSITIVE, None],
    "starts": [list, tuple, None],
    "max_iter": [POSITIVE_INT, None],
    "optimizer_options": [dict, None],
    "init_subsample": [POSITIVE_INT, None],
    "evidence_method": [StrOptions(set(METHODS))],
    "evidence_tol": [POSITIVE],
    "evidence_mb": [POSITIVE],
    "warm_start_from": [BaseEstimator, str, os.PathLike, None],
    "n_jobs": N_JOBS,
}


class SearchRun(NamedTuple):
    """What a fitted model is made from: the chosen ``theta``, the final
    evaluation there, the covariance to keep (the user's values without a
    search, else None: the final evaluation's), the start records, the
    index of the best, optimiser iterations and SMO iterations of the
    search (the final evaluation's not included)."""

    theta: np.ndarray
    final: object
    cov: object
    records: list
    best: int
    n_iter: int
    smo_iter: int


def ard_groups(est):
    """Tied ARD groups of a fit on a table (``est.encoder_``): the one-hot
    columns of each input column share one relevance weight
    (:attr:`bsvm_scale.tables.TableEncoder.groups`); None for arrays, for
    tables without multi-column inputs, and without ``ard``."""
    encoder = getattr(est, "encoder_", None)
    if not est.ard or encoder is None or not encoder.tied:
        return None
    return encoder.groups


def table_groups(est, X):
    """``(groups, design matrix)`` of the inputs ``X`` given to ``start_points``:
    a table is coded (an :class:`~bsvm_scale.tables.EncodedTable` as it is)
    and its tied ARD groups returned, as :meth:`fit` would."""
    from ..tables.frame import fit_encoder, is_table

    if not is_table(X):
        return None, X
    encoder, design = fit_encoder(X, "X")
    if not est.ard or not encoder.tied:
        return None, design
    return encoder.groups, design
