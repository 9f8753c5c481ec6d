"""Atomic HDF5 records: every file a run writes (run file, task results,
checkpoints) is a nested dict written under a temporary name in its
directory, fsynced and moved into place with :func:`os.replace`, so a reader
(or a resumed run after ``kill -9``) sees either the previous or the new
complete file."""

from __future__ import annotations

from pathlib import Path

from ..._util.atomic import atomic_path

__all__ = ["atomic_write_bytes", "write_record", "read_record"]


def atomic_write_bytes(path, data: bytes):
    """Write ``data`` to ``path`` atomically (fsynced)."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return path


def write_record(path, record: dict, attrs: dict | None = None, fsync=True):
    """Write the dict ``record`` (nested dicts/lists/arrays/scalars) as HDF5, atomically.

    ``fsync=False`` (checkpoints) still replaces the file atomically, which is
    what survives ``kill -9``; only a power loss could lose the newest one.
    """
    import h5py

    from ...storage import encode

    with atomic_path(path, fsync=fsync) as tmp:
        with h5py.File(tmp, "w", track_order=True) as f:
            f.attrs["library"] = "bsvm_scale"
            for k, v in (attrs or {}).items():
                f.attrs[k] = v
            encode(f, "record", record, str(Path(path).name))
    return path


def read_record(path):
    """Inverse of :func:`write_record`; ``None`` when the file is missing or unreadable."""
    import h5py

    from ...storage import decode

    path = Path(path)
    if not path.exists():
        return None
    try:
        with h5py.File(path, "r", locking=False) as f:
            return decode(f["record"], str(path))
    except (OSError, KeyError, ValueError, TypeError):
        return None
