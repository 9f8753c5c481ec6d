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

__all__ = ["BAYES_CONSTRAINTS", "isotropic_fit"]

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
        Case weights of the fit, passed on to the clone's ``fit``.

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
    return iso.fit(X, y) if sample_weight is None else iso.fit(X, y, sample_weight=sample_weight)
