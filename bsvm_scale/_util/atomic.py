"""Atomic file replacement shared by every writer (data sets, models, run
files, checkpoints).

:func:`atomic_path` yields a temporary name in the target's directory; when
the block succeeds the file is optionally fsynced, given the permission bits
it would have had if created normally (those of the file it replaces, else
0o666 less the umask; ``mkstemp`` alone would leave 0o600) and moved over the
target with :func:`os.replace`. On any failure the temporary file is removed
and the target is untouched, so a reader -- or a run resumed after
``kill -9`` -- sees either the old file or the new one, never a torn one.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "target_mode", "file_sha256"]


def target_mode(path):
    """Permission bits for a new file at ``path``."""
    try:
        return os.stat(path).st_mode & 0o777
    except OSError:
        umask = os.umask(0o022)
        os.umask(umask)
        return 0o666 & ~umask


@contextmanager
def atomic_path(path, *, fsync=True, what="file"):
    """Context manager yielding a temporary path that replaces ``path`` on
    success; ``what`` names the file in the error when the directory is not
    writable."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise OSError(exc.errno, f"cannot write {what} {str(path)!r}: "
                                 f"{exc.strerror or exc}") from exc
    os.close(fd)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, target_mode(path))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def file_sha256(path, block=1 << 20):
    """SHA-256 hex digest of a file, read in blocks (provenance of inputs)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(block), b""):
            h.update(chunk)
    return h.hexdigest()
