"""BLAS thread limits with one cached ``ThreadpoolController`` per process.

``threadpoolctl.threadpool_limits`` scans the loaded shared libraries on
every call (about 9 ms); the evidence is evaluated dozens of times per fit,
so the scan is done once and its controller reused.
"""

from __future__ import annotations

from threadpoolctl import ThreadpoolController

__all__ = ["blas_threads"]

_CONTROLLER = None


def blas_threads(single: bool):
    """Context manager: BLAS limited to one thread when ``single``, else unchanged."""
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1 if single else None, user_api="blas")
