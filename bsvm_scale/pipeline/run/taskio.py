"""What a pipeline task reads and how it knows where it stands: its data by
path (inputs, targets, case identifiers and weights, the table coding), the
machine and library versions it records, the key file that says whether its
directory is still its own, and the tasks it waits for.

A leaf of the pipeline package: the task functions (:mod:`.tasks`,
:mod:`.evidence_grid`), the task keys (:mod:`.fingerprint`), the driver
(:mod:`.executor`) and the report import it; it imports none of them.
"""

from __future__ import annotations

import os
import platform
import re
from pathlib import Path

import numpy as np

__all__ = ["versions", "machine", "source_commit", "read_xy", "read_ids", "read_coding",
           "read_weights", "model_inputs", "feature_names_of", "owns_dir", "read_key",
           "dependencies", "KEY_FILE"]

#: the file in a task directory that holds the key of the task owning it
KEY_FILE = "key"
_DATA_CACHE = {}


def versions():
    import importlib.metadata as md

    out = {"python": platform.python_version()}
    for pkg in ("bsvm_scale", "numpy", "scipy", "numba", "dask", "distributed", "h5py",
                "scikit-learn"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def machine():
    """Operating system, cores, CPU model and memory of this machine (for the
    run record: the results page states where its runs ran)."""
    cpu = platform.processor() or platform.machine()
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    except (ValueError, OSError, AttributeError):
        mem = float("nan")
    return {"system": f"{platform.system()} {platform.release()}", "cores": int(os.cpu_count() or 0),
            "cpu": cpu, "memory_gib": float(mem)}


def source_commit():
    """``git describe --always --dirty`` of the checkout holding this package
    ('' outside a git checkout)."""
    import subprocess

    root = Path(__file__).resolve().parents[2]
    try:
        out = subprocess.run(["git", "-C", str(root), "describe", "--always", "--dirty"],
                             capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def read_xy(source):
    """``(X, y)`` from an HDF5 data set path (read-only, cached per process), or
    from scattered data ``(X, y)`` / ``(X, y, case_ids)``."""
    if not isinstance(source, (str, os.PathLike)):
        X, y = source[0], source[1]
        return np.asarray(X, dtype=np.float64), np.asarray(y)
    from ...datasets import read_dataset

    p = str(source)
    st = os.stat(p)
    key = (p, st.st_mtime_ns, st.st_size)
    if key not in _DATA_CACHE:
        ds = read_dataset(p, splits=False, extra=False)
        _DATA_CACHE.clear()  # keep one data set per worker process
        _DATA_CACHE[key] = (ds.X, ds.y)
    return _DATA_CACHE[key]


def read_coding(source):
    """The table coding (:class:`~bsvm_scale.tables.TableEncoder`) of an HDF5 data
    set path imported from a table; None for other data and scattered data."""
    if not isinstance(source, (str, os.PathLike)):
        return source[3] if len(source) > 3 else None
    from ...datasets import read_encoder

    return read_encoder(str(source))


def read_weights(source):
    """The case weights of an HDF5 data set path (``/extra/sample_weight``, an
    imported ``--weight`` column); None without them."""
    if not isinstance(source, (str, os.PathLike)):
        return source[4] if len(source) > 4 else None
    import h5py

    from ...datasets import dataset_info
    from ...datasets._dataset import SAMPLE_WEIGHT

    if SAMPLE_WEIGHT not in dataset_info(str(source))["extra"]:
        return None
    with h5py.File(str(source), "r") as f:
        return np.asarray(f["extra"][SAMPLE_WEIGHT][...], dtype=np.float64)


def model_inputs(X, coding):
    """Training inputs as a model takes them: the coded table of a data set
    imported from a table (the model keeps its coding), else the array."""
    if coding is None:
        return X
    from ...tables import EncodedTable

    return EncodedTable(X, coding)


def read_ids(source):
    """Case identifiers of an HDF5 data set path or of scattered ``(X, y, case_ids)``
    (None without them)."""
    if not isinstance(source, (str, os.PathLike)):
        return source[2] if len(source) > 2 else None
    from ...datasets import read_case_ids

    return read_case_ids(str(source))


def feature_names_of(source):
    """Feature names of the data set file ``source`` (None for scattered data)."""
    if not isinstance(source, (str, os.PathLike)):
        return None
    from ...datasets import dataset_info

    return dataset_info(source)["feature_names"]


def owns_dir(spec):
    """True when the task may write into ``spec['task_dir']`` (its key is the directory's)."""
    if not spec.get("task_dir"):
        return False
    if spec.get("key") is None:
        return True
    return read_key(Path(spec["task_dir"]) / KEY_FILE) == spec["key"]


def read_key(path):
    """The key stored at ``path`` (a small text file), or None (also for a file
    that does not hold a key, e.g. one left empty)."""
    path = Path(path)
    if not path.exists():
        return None
    text = path.read_text(encoding="ascii", errors="replace").strip()
    return text if re.fullmatch(r"[0-9a-f]{64}", text) else None


def dependencies(spec):
    """Ids of the tasks ``spec`` waits for (``fix_from`` and ``after``)."""
    return [*spec.get("fix_from", []), *spec.get("after", [])]
