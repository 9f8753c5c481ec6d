"""Archives of run exports with their SHA-256 checksum file
(bsvm_scale/pipeline/outputs/archive.py, ``bsvm-scale export --archive``)."""

import hashlib
import tarfile

import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.outputs.archive import (checksum_path, extract_archive, run_dirs,
                                         verify_archive, write_archive)
from bsvm_scale.pipeline.outputs.export import export_run
from bsvm_scale.pipeline.outputs.runfile import read_run_file


def _files(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_archive_round_trip_and_checksum(tiny_run, tmp_path, capsys):
    run_dir = tiny_run[1]["meta"]["run_dir"]
    out = tmp_path / "a" / "runs-export.tar.gz"
    assert main(["export", run_dir, "--archive", str(out)]) == 0
    digest = hashlib.sha256(out.read_bytes()).hexdigest()
    assert checksum_path(out).read_text() == f"{digest}  runs-export.tar.gz\n"
    assert f"SHA-256 {digest}" in capsys.readouterr().out
    assert verify_archive(out) == digest
    with tarfile.open(out) as tar:
        names = tar.getnames()
        assert all(m.mtime == 0 and m.uid == 0 and m.uname == "" for m in tar.getmembers())
    assert names[0] == "repro_r2_tiny" and "repro_r2_tiny/run.h5" in names
    got = extract_archive(out, tmp_path / "x")
    assert [p.name for p in got] == ["repro_r2_tiny"]
    assert read_run_file(got[0])["meta"]["exported_from"] == run_dir
    assert sorted(_files(got[0])) == sorted(_files(export_run(run_dir, tmp_path / "e")["path"]))
    # the same exports give the same bytes: an archive of the extracted exports
    again = write_archive(got, tmp_path / "b" / "again.tar.gz")
    assert again["sha256"] == digest and again["runs"] == ["repro_r2_tiny"]


def test_damaged_or_unchecked_archives_are_refused(tiny_run, tmp_path):
    out = write_archive([tiny_run[1]["meta"]["run_dir"]], tmp_path / "r.tar.gz")["archive"]
    data = bytearray(out.read_bytes())
    data[len(data) // 2] ^= 0xFF
    out.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="the archive is damaged or not the one"):
        extract_archive(out, tmp_path / "x")
    assert not (tmp_path / "x").exists()  # nothing extracted
    checksum_path(out).write_text("not a digest\n")
    with pytest.raises(ValueError, match="does not hold a SHA-256 digest"):
        verify_archive(out)
    checksum_path(out).unlink()
    with pytest.raises(FileNotFoundError, match="has no checksum file 'r.tar.gz.sha256'"):
        verify_archive(out)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        verify_archive(tmp_path / "none.tar.gz")
    with pytest.raises(FileNotFoundError, match="holds no run"):
        run_dirs(tmp_path)


def test_base_archive_keeps_the_runs_not_replaced(tiny_run, tmp_path):
    """--base: the earlier archive's runs are packed again unless a RUN of the
    same name replaces them."""
    import shutil

    from bsvm_scale.pipeline.outputs.runfile import write_run_file

    old_run = tmp_path / "old" / "repro_r2_tiny"
    shutil.copytree(tiny_run[1]["meta"]["run_dir"], old_run)
    other = tmp_path / "other" / "repro_c9_other"
    shutil.copytree(old_run, other)
    rec = read_run_file(other)
    rec["meta"]["name"] = "repro_c9_other"
    write_run_file(other / "run.h5", rec)
    base = write_archive([old_run, other], tmp_path / "base.tar.gz")
    assert base["runs"] == ["repro_c9_other", "repro_r2_tiny"]
    rec = read_run_file(old_run)
    rec["meta"]["description"] = "rerun"
    write_run_file(old_run / "run.h5", rec)
    new = write_archive([old_run], tmp_path / "new.tar.gz", base=base["archive"])
    assert new["runs"] == ["repro_c9_other", "repro_r2_tiny"]
    got = {p.name: read_run_file(p) for p in extract_archive(new["archive"], tmp_path / "x")}
    assert got["repro_r2_tiny"]["meta"]["description"] == "rerun"
    assert got["repro_c9_other"]["meta"]["name"] == "repro_c9_other"
