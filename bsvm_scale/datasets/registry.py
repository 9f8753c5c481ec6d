"""One registry of every data set: synthetic generators and shipped real data."""

from __future__ import annotations

import difflib
import inspect
from typing import Callable, NamedTuple

import numpy as np

from . import synthetic as _syn
from ._dataset import Dataset, make_seed_rng, ordered_split, random_splits
from .real import REAL_DATASETS, load_real

__all__ = ["DatasetEntry", "list_datasets", "get_entry", "generate", "dataset_params"]


class DatasetEntry(NamedTuple):
    """One registry row (a tuple, so ``name, task, kind, description, n = entry``)."""

    name: str
    task: str
    kind: str  # 'synthetic' | 'real'
    description: str
    n: int  # default size (synthetic) or number of cases (real)


class _Spec(NamedTuple):
    func: Callable | None
    task: str
    default_n: int
    ordered: bool
    description: str


_SYNTHETIC: dict[str, _Spec] = {
    "sinc_silf": _Spec(_syn.sinc_silf, "regression", 1000, False,
                       "sinc(x), x~U[-10,10], SILF noise C=10 eps=0.1 beta=0.3 (R1)"),
    "sinc_gauss": _Spec(_syn.sinc_gauss, "regression", 1000, False,
                        "sinc(x), x~U[-10,10], Gaussian noise variance 0.04 or none (R2)"),
    "robot_arm": _Spec(_syn.robot_arm, "regression", 400, False,
                       "robot arm kinematics, 2 inputs, output=1|2, noise sd 0.05 (R3)"),
    "robot_arm6": _Spec(_syn.robot_arm6, "regression", 400, False,
                        "robot arm, 6 inputs (2 relevant, 2 noisy copies, 2 noise) (R3)"),
    "mackey_glass": _Spec(_syn.mackey_glass, "regression", 1100, True,
                          "Mackey-Glass tau=17 series, 8 lags -> next value, time order (R4)"),
    "gauss1d": _Spec(_syn.gauss1d, "classification", 100, False,
                     "1-D N(-2,1) (+1) vs N(2,1) (-1), optional outlier at -2 (C1)"),
    "gauss2d": _Spec(_syn.gauss2d, "classification", 1000, False,
                     "2-D N((-2,0),diag(1,2)) (+1) vs N((2,0),diag(2,1)) (-1) (C2)"),
    "twonorm": _Spec(_syn.twonorm, "classification", 7400, False,
                     "Breiman twonorm, 20 inputs, means +-2/sqrt(20) (C3)"),
    "ringnorm": _Spec(_syn.ringnorm, "classification", 7400, False,
                      "Breiman ringnorm, 20 inputs, N(0,4I) vs N(a1,I) (C3)"),
    "waveform": _Spec(_syn.waveform, "classification", 5000, False,
                      "Breiman waveform, 21 inputs, class 0 vs rest; label3 kept (C3)"),
    "friedman1": _Spec(_syn.friedman1, "regression", 1000, False,
                       "Friedman #1 (sklearn), 10 inputs, noise sd 1"),
    "friedman2": _Spec(_syn.friedman2, "regression", 1000, False,
                       "Friedman #2 (sklearn), 4 inputs, noise sd 125"),
    "friedman3": _Spec(_syn.friedman3, "regression", 1000, False,
                       "Friedman #3 (sklearn), 4 inputs, noise sd 0.1"),
}

_REAL: dict[str, _Spec] = {
    name: _Spec(None, task, shape[0], False, desc)
    for name, (task, shape, desc) in REAL_DATASETS.items()
}


def list_datasets(kind: str | None = None) -> list[DatasetEntry]:
    """Every known data set as :class:`DatasetEntry` rows (synthetic first).

    ``kind`` = 'synthetic' or 'real' restricts the list.
    """
    if kind not in (None, "synthetic", "real"):
        raise ValueError(f"kind must be 'synthetic', 'real' or None; got {kind!r}")
    rows = []
    for k, table in (("synthetic", _SYNTHETIC), ("real", _REAL)):
        if kind in (None, k):
            rows += [DatasetEntry(name, s.task, k, s.description, s.default_n)
                     for name, s in table.items()]
    return rows


def _spec(name):
    if name in _SYNTHETIC:
        return "synthetic", _SYNTHETIC[name]
    if name in _REAL:
        return "real", _REAL[name]
    known = list(_SYNTHETIC) + list(_REAL)
    close = difflib.get_close_matches(str(name), known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ValueError(f"unknown data set {name!r}{hint}; known: {', '.join(known)}")


def get_entry(name: str) -> DatasetEntry:
    """The registry row of ``name`` (ValueError if unknown)."""
    kind, s = _spec(name)
    return DatasetEntry(name, s.task, kind, s.description, s.default_n)


def dataset_params(name: str) -> dict:
    """Keyword parameters (with defaults) accepted by ``generate(name, ...)``."""
    kind, s = _spec(name)
    if kind == "real":
        return {}
    sig = inspect.signature(s.func)
    return {p.name: p.default for p in sig.parameters.values()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def generate(name: str, n: int | None = None, seed=0, *, n_splits: int = 0,
             n_train: int | None = None, n_test: int | None = None, split_seed=None,
             **params) -> Dataset:
    """Make data set ``name`` with ``n`` cases from ``seed``.

    Synthetic sets are drawn by their generator (``n`` defaults to the
    registry size; ``params`` override the generator's keyword parameters,
    see :func:`dataset_params`).  Real sets are loaded from ``data/``; with
    ``n`` below their size a random subset of ``n`` rows (drawn from
    ``seed``) is returned without the stored splits.

    ``n_splits > 0`` attaches partitions of ``n_train`` training cases and
    ``n_test`` test cases (default: the rest): random ones drawn from
    ``split_seed`` (default: a stream derived from ``seed``), or, for a time
    series (mackey_glass), the single chronological split.
    """
    kind, s = _spec(name)
    if n is not None:
        if isinstance(n, (bool, np.bool_)) or not isinstance(n, (int, np.integer)):
            raise TypeError(f"n must be a positive int; got {n!r}")
        if n < 1:
            raise ValueError(f"n must be positive; got {n}")
    if kind == "real":
        ds = _real_subset(name, n, seed, params)
    else:
        accepted = dataset_params(name)
        unknown = sorted(set(params) - set(accepted))
        if unknown:
            raise ValueError(
                f"unknown parameter(s) {', '.join(unknown)} for {name!r}; "
                f"accepted: {', '.join(f'{k}={v!r}' for k, v in accepted.items()) or 'none'}"
            )
        ds = s.func(s.default_n if n is None else int(n), seed, **params)
    if n_splits:
        ds = _attach_splits(ds, s, n_splits, n_train, n_test, seed, split_seed)
    return ds


def _real_subset(name, n, seed, params):
    """The real data set ``name``, or a random subset of ``n`` of its rows."""
    if params:
        raise ValueError(f"real data set {name!r} takes no parameters; got {sorted(params)}")
    ds = load_real(name)
    if n is not None and n > ds.n_samples:
        raise ValueError(f"real data set {name!r} has only {ds.n_samples} cases; asked for {n}")
    if n is not None and n < ds.n_samples:
        rng, seed_rec = make_seed_rng(seed)
        ds = ds.subset(np.sort(rng.choice(ds.n_samples, size=int(n), replace=False)))
        ds.provenance["subset_seed"] = seed_rec
    return ds


def _attach_splits(ds, spec, n_splits, n_train, n_test, seed, split_seed):
    """``ds`` with ``n_splits`` partitions: the chronological one of a time
    series, else random ones from ``split_seed`` (default derived from ``seed``)."""
    if n_splits < 0:
        raise ValueError(f"n_splits must be >= 0; got {n_splits}")
    if n_train is None:
        raise ValueError("n_train is required when n_splits > 0")
    if spec.ordered:
        if n_splits != 1:
            raise ValueError(f"{ds.name!r} is a time series: only one chronological split")
        sp = ordered_split(ds.n_samples, n_train, n_test)
        return ds.with_splits(sp, {"kind": "chronological", "n_train": int(n_train),
                                   "n_test": int(len(sp[0][1]))})
    if split_seed is None:
        split_seed = (seed if isinstance(seed, np.random.Generator)
                      else np.random.default_rng([int(seed), 0x5EED]))
    sp = random_splits(ds.n_samples, n_train, n_splits, split_seed, n_test=n_test)
    return ds.with_splits(sp, {"kind": "random", "n_splits": int(n_splits),
                               "n_train": int(n_train), "n_test": int(len(sp[0][1])),
                               "split_seed": split_seed if isinstance(split_seed, int)
                               else f"derived from seed {seed!r}"})
