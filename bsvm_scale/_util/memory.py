"""Peak resident memory of this process, for benchmarks and pipeline tasks.

Linux keeps the resident-set high-water mark ``VmHWM`` in
``/proc/self/status`` and resets it to the current RSS when ``5`` is written
to ``/proc/self/clear_refs`` (Linux >= 4.0), which gives the peak of one
task or one measured call. ``ru_maxrss`` is not used where ``/proc`` exists:
it covers the process's lifetime and survives ``fork`` + ``exec``, so a
spawned process would report its parent's peak.
"""

from __future__ import annotations

import resource

__all__ = ["reset_peak_rss", "peak_rss_bytes"]


def reset_peak_rss():
    """Reset the peak-RSS mark to the current RSS; False where not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes(fallback=True):
    """Peak resident memory in bytes since the last reset (``VmHWM``).

    Without ``/proc``: ``ru_maxrss`` (the process lifetime's peak) when
    ``fallback``, else None.
    """
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    if not fallback:
        return None
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024
