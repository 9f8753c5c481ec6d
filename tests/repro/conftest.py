"""Fixtures of the results-page tests: tiny reproduction runs (tests/tiny_runs.py).

``repro`` (the page generator) is a package of the source checkout, not of the
installed wheel: the checkout's root goes on the import path here.
"""

import sys

import pytest

from tiny_runs import REPO, tiny_c1, tiny_c3, tiny_run  # noqa: F401  (fixtures, registered by import)

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _page_body(page):
    return [ln for ln in page.splitlines() if ln.strip() and "bsvm-scale" not in ln
            and not ln.startswith("Made from the run-export archive")]


@pytest.fixture(scope="session")
def page_body():
    """The page's lines without blank lines and the lines that name run paths or
    the archive (commands, the archive statement)."""
    return _page_body
