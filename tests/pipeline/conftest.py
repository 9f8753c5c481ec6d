"""Fixtures of the pipeline tests: the tiny reproduction runs of tests/tiny_runs.py
(used by the export, archive and reproduction-pipeline tests)."""

from tiny_runs import tiny_c3, tiny_run  # noqa: F401  (fixtures, registered by import)
