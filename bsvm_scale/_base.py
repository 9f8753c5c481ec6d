"""Pieces shared by the public estimators: input standardisation, start
points, and checks of hyperparameter arguments.

Inputs are standardised internally with training statistics (mean and
standard deviation per column; a constant column keeps scale 1), as the thesis
does for every experiment; targets are used as given. Hyperparameters such as
``kappa`` therefore refer to standardised inputs.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Standardizer", "check_positive", "check_beta", "resolve_rng"]


class Standardizer:
    """Column-wise standardisation with training statistics."""

    def __init__(self, mean, scale):
        self.mean = np.ascontiguousarray(mean, dtype=np.float64)
        self.scale = np.ascontiguousarray(scale, dtype=np.float64)

    @classmethod
    def fit(cls, X):
        mean = X.mean(axis=0)
        scale = X.std(axis=0)
        scale[~(scale > 1e-12 * np.maximum(1.0, np.abs(mean)))] = 1.0
        return cls(mean, scale)

    def transform(self, X):
        return np.ascontiguousarray((X - self.mean) / self.scale)


def check_positive(name, value, allow_none=False):
    """``value`` as a positive float (or array), with a clear error otherwise."""
    if value is None and allow_none:
        return None
    arr = np.asarray(value, dtype=np.float64)
    if arr.size == 0 or not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}.")
    return float(arr) if arr.ndim == 0 else arr


def check_beta(beta):
    """``beta`` of the soft insensitive loss must lie in (0, 1]."""
    b = float(beta)
    if not (0.0 < b <= 1.0):
        raise ValueError(f"beta must lie in (0, 1]; got {beta!r}.")
    return b


def resolve_rng(random_state):
    """numpy Generator from None, an int seed or a Generator/RandomState."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(2**31 - 1))
    return np.random.default_rng(random_state)
