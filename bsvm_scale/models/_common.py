"""What BSVR and BTSVC share besides the engines: the constraints of their
common parameters and the isotropic first stage of an ARD search."""

from __future__ import annotations

import os

import numpy as np
from sklearn.base import BaseEstimator, clone
from sklearn.utils._param_validation import StrOptions

from .._util.validation import N_JOBS, POSITIVE, POSITIVE_INT, SEED
from ..inference.evidence_lowrank import METHODS
from ..optimization.starts import ARD_INIT
from ..tables import EncodedTable

__all__ = ["BAYES_CONSTRAINTS", "isotropic_fit", "ard_groups", "table_groups"]

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


def isotropic_fit(est, X, y, theta0, leading, keep=(), sample_weight=None):
    """The isotropic model fitted from the ARD start ``theta0``.

    A clone of ``est`` with ``ard=False``, no ``warm_start_from`` and one
    start: the hyperparameters of ``theta0`` with its ``kappa_l`` replaced
    by their geometric mean. Not checkpointed: a resumed start repeats it
    (it is deterministic).

    Parameters
    ----------
    est : BayesianSVR or BayesianSVC
    X, y : ndarray
        Training data as given to ``fit``.
    theta0 : ndarray
        ``[ln leading..., ln kappa_1 .. ln kappa_d, ln kappa_b]``.
    leading : tuple of str
        Names of the log hyperparameters before the ``ln kappa_l``:
        ``("C", "epsilon")`` (BSVR; ``("C", "epsilon", "kappa0")`` with
        ``kappa0="evidence"``) or ``("kappa0",)`` (BTSVC).
    keep : tuple of str
        Parameters of ``est`` the clone keeps although they name a start
        value (BSVR's ``kappa0="evidence"`` says what is inferred).
    sample_weight : ndarray of shape (n,), optional
        The case weights of the ARD fit, passed on to the isotropic one.

    Returns
    -------
    estimator
        The fitted isotropic clone.
    """
    k = len(leading)
    start = {name: float(np.exp(theta0[i])) for i, name in enumerate(leading)}
    start["kappa"] = float(np.exp(np.mean(theta0[k:-1])))
    start["kappa_b"] = float(np.exp(theta0[-1]))
    iso = clone(est).set_params(ard=False, starts=[start], n_starts=1, warm_start_from=None,
                                **dict.fromkeys(k for k in start if k not in keep))
    encoder = getattr(est, "encoder_", None)
    if encoder is not None and not isinstance(X, EncodedTable):
        X = EncodedTable(X, encoder)  # the design matrix of a table: keep its coding's scales
    if sample_weight is None:
        return iso.fit(X, y)
    return iso.fit(X, y, sample_weight=sample_weight)
