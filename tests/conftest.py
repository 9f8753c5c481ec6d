"""Shared fixtures of the test suite.

The suite mirrors the package: ``tests/<subpackage>/test_<module>.py`` tests
``bsvm_scale/<subpackage>/<module>.py``; tests of the whole (CLI, estimator
checks, properties, robustness, storage readers) stay at the top. The slow,
obvious NumPy references the compiled code is tested against live in
``tests/reference.py`` (importable as ``reference``: pytest puts ``tests/`` on
the path, see ``pythonpath`` in pyproject.toml); the lists of fast estimator
settings in ``tests/fast_estimators.py``. Markers: ``slow`` (statistical or
scale tests) and ``bench`` (smoke runs of the benchmark scripts); both run in
CI, ``-m "not slow and not bench"`` gives a quick pass.
"""

from pathlib import Path

import pytest

from reference import sinc_data

#: the repository checkout (pipelines/, benchmarks/, data/, docs/)
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo():
    """The repository root."""
    return REPO


@pytest.fixture(scope="module")
def sinc80():
    """80 sinc cases with noise 0.1 (seed 1): a small regression problem."""
    return sinc_data(80, seed=1, noise=0.1)
