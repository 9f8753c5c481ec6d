"""The in-memory data set container shared by generators, real data and storage."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Dataset", "TASKS", "CASE_ID", "SAMPLE_WEIGHT", "make_seed_rng", "random_splits",
           "ordered_split"]

#: Allowed values of :attr:`Dataset.task`.
TASKS = ("regression", "classification")
#: Key of :attr:`Dataset.extra` holding unique case identifiers (int64 or str),
#: when the data carry them.
CASE_ID = "case_id"
#: Key of :attr:`Dataset.extra` holding case weights (``--weight`` of an import)
SAMPLE_WEIGHT = "sample_weight"


def make_seed_rng(seed):
    """``(rng, seed_record)`` from an int seed or a numpy Generator.

    Every generator of this package is driven by one
    :class:`numpy.random.Generator`.  An int seed (>= 0) makes the draw
    reproducible and is recorded in the provenance; a Generator is used as
    is (the provenance then says so, since it cannot be replayed).
    """
    if isinstance(seed, np.random.Generator):
        return seed, "numpy.random.Generator (not replayable)"
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise TypeError(
            f"seed must be a non-negative int or a numpy.random.Generator; got {seed!r}"
        )
    if seed < 0:
        raise ValueError(f"seed must be non-negative; got {seed}")
    return np.random.default_rng(int(seed)), int(seed)


def _as_index(a, n, what):
    idx = np.asarray(a)
    if idx.ndim != 1:
        raise ValueError(f"{what} must be a 1-D index array; got shape {idx.shape}")
    if idx.size and not np.issubdtype(idx.dtype, np.integer):
        raise ValueError(f"{what} must hold integers; got dtype {idx.dtype}")
    idx = idx.astype(np.int64, copy=False)
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise ValueError(f"{what} holds indices outside [0, {n})")
    return idx


@dataclass
class Dataset:
    """A data set: inputs, targets and what is known about where they came from.

    Attributes
    ----------
    X : ndarray, shape (n, d), float64
        Inputs (row per case).
    y : ndarray, shape (n,)
        Targets: real values (``task='regression'``) or class labels
        (``task='classification'``; +1/-1 for the two-class sets, 0..K-1 for
        the multi-class digits).
    name : str
        Data set name (a registry name for generated and shipped sets).
    task : {'regression', 'classification'}
    feature_names : list of str, length d
    provenance : dict
        JSON-serialisable record of the source, parameters, seed and
        transformations.
    splits : list of (train_idx, test_idx), optional
        Repeated partitions as integer index arrays into the rows.
    extra : dict of str -> ndarray
        Additional per-case arrays (first axis of length n), e.g. the
        noise-free target ``f`` for test metrics, the noise draw ``noise``, or
        the 3-class ``label3`` of waveform; ``case_id`` (:data:`CASE_ID`) and
        ``sample_weight`` (:data:`SAMPLE_WEIGHT`) when imported with them.
    description : str
        One-line description.
    schema : bsvm_scale.tables.Schema or None
        For a data set imported from a table: the kind of every column of the
        source (inputs, target, identifiers, weights, dropped columns) and the
        policies for missing cells and unseen categories.
    encoder : bsvm_scale.tables.TableEncoder or None
        For a data set imported from a table: the coding of its input columns
        into ``X`` (``feature_names`` are the coded columns, e.g. ``cut=Ideal``).
        A model fitted on :meth:`table` keeps it and predicts from raw tables.

    Class labels may be text (``y`` a ``str`` array) for classification.
    """

    X: np.ndarray
    y: np.ndarray
    name: str
    task: str
    feature_names: list[str] = field(default_factory=list)
    provenance: dict[str, Any] = field(default_factory=dict)
    splits: list[tuple[np.ndarray, np.ndarray]] | None = None
    extra: dict[str, np.ndarray] = field(default_factory=dict)
    description: str = ""
    schema: Any = None
    encoder: Any = None

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim == 1:
            X = X[:, None]
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D (n, d); got shape {X.shape}")
        n, d = X.shape
        if n < 1 or d < 1:
            raise ValueError(f"X must have at least one row and one column; got {X.shape}")
        self.X = np.ascontiguousarray(X)
        y = np.asarray(self.y)
        if y.ndim != 1 or y.shape[0] != n:
            raise ValueError(f"y must have shape ({n},); got {y.shape}")
        if y.dtype.kind == "O" and all(isinstance(v, str) for v in y.tolist()):
            y = y.astype(str)
        text = y.dtype.kind == "U" and self.task == "classification"
        if not (np.issubdtype(y.dtype, np.number) or y.dtype == np.bool_ or text):
            raise ValueError(f"y must be numeric (or text class labels for classification); "
                             f"got dtype {y.dtype}")
        self.y = np.ascontiguousarray(y)
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}; got {self.task!r}")
        self.name = str(self.name)
        if not self.feature_names:
            self.feature_names = [f"x{j + 1}" for j in range(d)]
        self.feature_names = [str(s) for s in self.feature_names]
        if len(self.feature_names) != d:
            raise ValueError(
                f"feature_names has {len(self.feature_names)} entries for {d} columns"
            )
        if self.provenance is None:
            self.provenance = {}
        if self.splits is not None:
            splits = []
            for k, pair in enumerate(self.splits):
                if len(pair) != 2:
                    raise ValueError(f"split {k} must be a (train_idx, test_idx) pair")
                tr = _as_index(pair[0], n, f"split {k} train indices")
                te = _as_index(pair[1], n, f"split {k} test indices")
                splits.append((tr, te))
            self.splits = splits
        extra = {}
        for key, val in (self.extra or {}).items():
            arr = np.asarray(val)
            if arr.ndim < 1 or arr.shape[0] != n:
                raise ValueError(f"extra array {key!r} must have first dimension {n}; got {arr.shape}")
            if "/" in str(key) or not str(key):
                raise ValueError(f"extra array name {key!r} is not a valid HDF5 name")
            extra[str(key)] = arr
        self.extra = extra

    # ------------------------------------------------------------------ views
    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def n_splits(self) -> int:
        return 0 if self.splits is None else len(self.splits)

    def __len__(self) -> int:
        return self.n_samples

    def subset(self, idx, name: str | None = None) -> "Dataset":
        """Rows ``idx`` as a new data set (extras follow, splits are dropped)."""
        idx = _as_index(idx, self.n_samples, "subset indices")
        prov = dict(self.provenance)
        prov["subset_of"] = self.name
        prov["subset_size"] = int(idx.size)
        return replace(
            self,
            X=self.X[idx],
            y=self.y[idx],
            name=name or self.name,
            provenance=prov,
            splits=None,
            extra={k: v[idx] for k, v in self.extra.items()},
        )

    def split(self, k: int = 0) -> tuple["Dataset", "Dataset"]:
        """Partition ``k`` as ``(train, test)`` data sets."""
        if not self.splits:
            raise ValueError(f"data set {self.name!r} has no stored splits")
        if not 0 <= k < len(self.splits):
            raise IndexError(f"split {k} out of range (data set has {len(self.splits)})")
        tr, te = self.splits[k]
        return (
            self.subset(tr, name=f"{self.name}[train {k}]"),
            self.subset(te, name=f"{self.name}[test {k}]"),
        )

    def table(self, idx=None):
        """The inputs of rows ``idx`` (default all) as a model takes them: for
        a data set imported from a table an
        :class:`~bsvm_scale.tables.EncodedTable` (the model keeps the coding),
        else the array ``X``."""
        X = self.X if idx is None else self.X[_as_index(idx, self.n_samples, "table rows")]
        if self.encoder is None:
            return X
        from ..tables import EncodedTable

        return EncodedTable(X, self.encoder)

    def with_splits(self, splits, note: dict | None = None) -> "Dataset":
        """A copy carrying ``splits`` (and an entry in the provenance)."""
        prov = dict(self.provenance)
        if note is not None:
            prov["splits"] = note
        return replace(self, splits=list(splits), provenance=prov)

    def __repr__(self) -> str:  # compact: never print the arrays
        return (
            f"Dataset(name={self.name!r}, task={self.task!r}, n={self.n_samples}, "
            f"d={self.n_features}, splits={self.n_splits}, extra={sorted(self.extra)})"
        )


def random_splits(n, n_train, n_splits, seed, n_test=None):
    """``n_splits`` random partitions of ``range(n)`` into train/test index arrays.

    Each partition draws an independent permutation; the first ``n_train``
    indices are the training set and the next ``n_test`` (default: all the
    rest) the test set.  Indices inside each part are sorted.
    """
    n = int(n)
    n_train = int(n_train)
    n_test = n - n_train if n_test is None else int(n_test)
    if n_splits < 1:
        raise ValueError(f"n_splits must be >= 1; got {n_splits}")
    if n_train < 1 or n_test < 1 or n_train + n_test > n:
        raise ValueError(
            f"cannot split {n} cases into {n_train} training and {n_test} test cases"
        )
    rng, _ = make_seed_rng(seed)
    out = []
    for _ in range(int(n_splits)):
        perm = rng.permutation(n)
        out.append((np.sort(perm[:n_train]), np.sort(perm[n_train:n_train + n_test])))
    return out


def ordered_split(n, n_train, n_test=None):
    """One chronological partition: the first ``n_train`` cases, then the next ``n_test``."""
    n = int(n)
    n_train = int(n_train)
    n_test = n - n_train if n_test is None else int(n_test)
    if n_train < 1 or n_test < 1 or n_train + n_test > n:
        raise ValueError(
            f"cannot split {n} cases into {n_train} training and {n_test} test cases"
        )
    return [(np.arange(n_train), np.arange(n_train, n_train + n_test))]
