"""Archives of run exports: one ``.tar.gz`` with a SHA-256 checksum file beside it.

The exports of the reproduction runs (:mod:`.export`) are tens of megabytes of
generated data and models; they are not kept in the repository but packed into
one archive, the artifact from which the results page is regenerated::

    bsvm-scale export runs/repro_r1 runs/repro_c3 ... --archive runs-export.tar.gz
    bsvm-scale results --from runs-export.tar.gz

The archive holds one folder per run (``<run name>/run.h5``, ``data/``,
``models/``). It is written deterministically (members sorted, times, owners
and the gzip header zeroed), so the same exports give the same bytes and the
same checksum. ``<archive>.sha256`` holds the digest in ``sha256sum`` format
(``sha256sum -c`` checks it). Readers verify the digest before anything is
extracted. Both files are written under temporary names and renamed into place.
"""

from __future__ import annotations

import gzip
import shutil
import tarfile
import tempfile
from pathlib import Path

from ..._util.atomic import atomic_path, file_sha256

__all__ = ["write_archive", "verify_archive", "extract_archive", "run_dirs", "checksum_path"]


def checksum_path(archive):
    """Path of the checksum file of ``archive``: ``<archive>.sha256``."""
    archive = Path(archive)
    return archive.with_name(archive.name + ".sha256")


def run_dirs(folder):
    """Run folders in ``folder``: itself when it holds ``run.h5``, else its
    sub-folders that do, sorted by name.

    Raises
    ------
    FileNotFoundError
        When there is no such folder, or it holds no run.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{str(folder)!r} is not a folder of run exports")
    if (folder / "run.h5").is_file():
        return [folder]
    found = sorted(p for p in folder.iterdir() if (p / "run.h5").is_file())
    if not found:
        raise FileNotFoundError(f"{str(folder)!r} holds no run (no <name>/run.h5 inside); give "
                                "a folder of exports or an archive written by "
                                "'bsvm-scale export --archive'")
    return found


def _reset(info):
    """Tar member without times or owners (the archive's bytes depend on content only)."""
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _pack(folders, archive):
    """Write the folders (each as a top-level member named like it) to ``archive``."""
    with atomic_path(archive) as tmp:
        with open(tmp, "wb") as raw, \
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz, \
                tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for folder in folders:
                tar.add(folder, arcname=folder.name, recursive=False, filter=_reset)
                for f in sorted(folder.rglob("*")):
                    tar.add(f, arcname=f"{folder.name}/{f.relative_to(folder).as_posix()}",
                            recursive=False, filter=_reset)


def write_archive(run_paths, archive, base=None, max_prediction_cases=None):
    """Export runs into one archive and write its checksum file beside it.

    Parameters
    ----------
    run_paths : list of path
        Run directories (or ``run.h5`` files) or exports; each is exported
        (:func:`~bsvm_scale.pipeline.outputs.export.export_runs`).
    archive : path
        The ``.tar.gz`` to write; ``<archive>.sha256`` is written beside it.
    base : path, optional
        An earlier archive (verified first): its runs are packed too, except
        those that ``run_paths`` replace (same run name).
    max_prediction_cases : int, optional
        Passed to the export (default: its own).

    Returns
    -------
    dict
        ``archive`` (path), ``sha256`` (hex digest), ``runs`` (names, sorted),
        ``bytes`` (archive size).
    """
    from .export import MAX_PREDICTION_CASES, export_runs

    archive = Path(archive)
    cap = MAX_PREDICTION_CASES if max_prediction_cases is None else int(max_prediction_cases)
    with tempfile.TemporaryDirectory(prefix="bsvm-archive-") as tmp:
        staged = Path(tmp) / "runs"
        names = {info["path"].name for _, info in export_runs(run_paths, staged, cap)}
        if base is not None:
            earlier = extract_archive(base, Path(tmp) / "base")
            for d in earlier:
                if d.name not in names:
                    shutil.copytree(d, staged / d.name)
        folders = sorted(p for p in staged.iterdir() if (p / "run.h5").is_file())
        archive.parent.mkdir(parents=True, exist_ok=True)
        _pack(folders, archive)
    digest = file_sha256(archive)
    with atomic_path(checksum_path(archive)) as tmp_sum:
        Path(tmp_sum).write_text(f"{digest}  {archive.name}\n", encoding="ascii")
    return {"archive": archive, "sha256": digest, "runs": [f.name for f in folders],
            "bytes": archive.stat().st_size}


def verify_archive(archive):
    """The archive's SHA-256 digest, checked against ``<archive>.sha256``.

    Raises
    ------
    FileNotFoundError
        The archive or its checksum file is missing.
    ValueError
        The checksum file is malformed, or the digests differ.
    """
    archive = Path(archive)
    sums = checksum_path(archive)
    if not archive.is_file():
        raise FileNotFoundError(f"archive {str(archive)!r} does not exist")
    if not sums.is_file():
        raise FileNotFoundError(f"archive {str(archive)!r} has no checksum file {sums.name!r} "
                                "beside it; copy it with the archive (both are written by "
                                "'bsvm-scale export --archive')")
    fields = sums.read_text(encoding="ascii", errors="replace").split()
    if not fields or len(fields[0]) != 64:
        raise ValueError(f"checksum file {str(sums)!r} does not hold a SHA-256 digest; "
                         "write it again with 'bsvm-scale export --archive'")
    digest = file_sha256(archive)
    if digest != fields[0].lower():
        raise ValueError(f"archive {str(archive)!r} has SHA-256 {digest}, but {sums.name} "
                         f"says {fields[0]}: the archive is damaged or not the one the "
                         "checksum was written for; fetch both files again")
    return digest


def extract_archive(archive, dest):
    """Verify ``archive`` (:func:`verify_archive`), extract it into ``dest`` and
    return its run folders (:func:`run_dirs`).

    Members are extracted with tarfile's ``data`` filter: no absolute paths,
    no paths leaving ``dest``, no links out of it, no device files.
    """
    verify_archive(archive)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        tar.extractall(dest, filter="data")
    return run_dirs(dest)

