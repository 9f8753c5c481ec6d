"""Compact copies of runs (bsvm_scale/pipeline/outputs/export.py) and the packed run
record they hold."""

import copy
import shutil
from pathlib import Path

import numpy as np
import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.outputs.export import (MAX_MODEL_TRAIN, export_run, keep_common_partitions,
                                        read_checked)
from bsvm_scale.pipeline.outputs.runfile import read_run_file, write_run_file
from tiny_runs import stopped_c3


def test_common_partitions_need_every_start_and_drop_models_with_none():
    def entry(done, of):
        return {"n_starts_done": done, "n_starts": of, "metrics": {}}

    rec = {"results": {"d": {"A": {"p000": entry(2, 2), "p001": entry(1, 2)},
                             "B": {"p000": entry(1, 1), "p001": entry(1, 1)}},
                       "e": {"A": {"p000": entry(2, 2)}, "B": {"p001": entry(1, 1)}},
                       "f": {"A": {"p000": entry(2, 2)}, "B": {"p000": entry(1, 1)}}}}
    assert keep_common_partitions(rec) == {"d": 2, "e": 2}
    assert {m: sorted(v) for m, v in rec["results"]["d"].items()} == {"A": ["p000"],
                                                                      "B": ["p000"]}
    assert rec["results"]["e"] == {}  # nothing in common: no model is compared
    assert {m: sorted(v) for m, v in rec["results"]["f"].items()} == {"A": ["p000"],
                                                                      "B": ["p000"]}


def test_export_holds_the_first_shown_partition(tiny_c3, tmp_path):
    """Data not shipped with the repository, the reloadable models of the first
    partition, the shown tasks' predictions up to the cap, the evidence grids."""
    src = tmp_path / "runs" / "repro_c3_tiny"
    shutil.copytree(tiny_c3, src)
    exp = export_run(src, tmp_path / "exports")["path"]
    rec = read_run_file(exp)
    assert rec["meta"]["exported_from"] == str(tiny_c3)
    assert rec["datasets"]["titanic"]["path"] == "repo:data/titanic.h5"  # shipped: not copied
    assert rec["datasets"]["twonorm"]["path"] == "data/twonorm.h5"
    assert sorted(p.name for p in (exp / "data").iterdir()) == ["twonorm.h5"]
    assert sorted(p.name for p in (exp / "models").iterdir()) == [
        "titanic__BTSVC__p000.h5", "titanic__GPC__p000.h5", "twonorm__BTSVC__p000.h5",
        "twonorm__GPC__p000.h5"]
    kept = {tid for tid, t in rec["tasks"].items() if "predictions" in t}
    shown = {rec["results"][ds][m]["p000"]["best_task"] for ds in rec["results"]
             for m in rec["results"][ds]}
    assert len(rec["datasets"]["titanic"]["partitions"][0]["test"]) > 2000  # over the cap
    assert kept == {t for t in shown if t.startswith("twonorm")} and len(kept) == 2
    np.testing.assert_array_equal(rec["grids"]["twonorm"]["BTSVC"]["p000"]["neg_log_evidence"],
                                  read_run_file(src)["grids"]["twonorm"]["BTSVC"]["p000"][
                                      "neg_log_evidence"])
    # the copy reads its own data file, found by its recorded size
    path, ds = read_checked(exp, "twonorm", rec["datasets"]["twonorm"],
                            rec["meta"]["run_dir"], extra=False)
    assert path == exp / "data" / "twonorm.h5" and ds.X.shape == (140, 20)


def test_export_of_a_stopped_run_follows_the_partitions_shown(tiny_c3, tmp_path):
    exp = export_run(stopped_c3(tiny_c3, tmp_path), tmp_path / "exports")["path"]
    assert sorted(p.name for p in (exp / "models").iterdir()) == [
        "titanic__BTSVC__p000.h5", "titanic__GPC__p000.h5", "twonorm__BTSVC__p001.h5",
        "twonorm__GPC__p001.h5"]


def test_large_and_external_models_are_not_copied(tiny_run, tmp_path, monkeypatch):
    """scikit-learn references cannot be reloaded and models of more than
    MAX_MODEL_TRAIN cases are not copied; an export of an export is the same files."""
    from bsvm_scale.pipeline.outputs import export

    assert MAX_MODEL_TRAIN == 5000
    run_dir = tiny_run[1]["meta"]["run_dir"]
    exp = export_run(run_dir, tmp_path / "a")["path"]
    assert sorted(p.name for p in (exp / "models").iterdir()) == sorted(
        f"sinc-n{n}__{m}__p000.h5" for n in (12, 24) for m in ("BSVR", "BSVR-A"))
    monkeypatch.setattr(export, "MAX_MODEL_TRAIN", 12)
    small = export_run(run_dir, tmp_path / "b")["path"]
    assert sorted(p.name for p in (small / "models").iterdir()) == [
        "sinc-n12__BSVR-A__p000.h5", "sinc-n12__BSVR__p000.h5"]
    again = export_run(exp, tmp_path / "c")
    files = sorted(str(p.relative_to(exp)) for p in exp.rglob("*") if p.is_file())
    assert sorted(str(p.relative_to(again["path"])) for p in again["path"].rglob("*")
                  if p.is_file()) == files
    assert all((exp / f).read_bytes() == (again["path"] / f).read_bytes() for f in files)
    assert again["predictions_dropped"] == 0 and again["models"] == 4


def test_export_replaces_the_previous_one_and_refuses_bad_targets(tiny_run, tmp_path, capsys):
    rec = tiny_run[1]
    src = tmp_path / "runs" / "repro_r2_tiny"
    shutil.copytree(rec["meta"]["run_dir"], src)
    out = tmp_path / "exports"
    first = export_run(src, out, max_prediction_cases=0)
    assert first["predictions_dropped"] == len(rec["tasks"])
    (first["path"] / "stale.txt").write_text("from the previous export")
    second = export_run(src, out)
    assert not (second["path"] / "stale.txt").exists()
    assert sorted(p.name for p in out.iterdir()) == ["repro_r2_tiny"]
    with pytest.raises(ValueError, match="out: .* would overwrite the run"):
        export_run(src, src.parent)
    assert main(["export", str(src), "--out", str(out), "--max-prediction-cases", "-1"]) == 2
    assert "--max-prediction-cases: got -1" in capsys.readouterr().err
    assert main(["export", str(src), str(src / "run.h5"), "--out", str(out)]) == 2
    assert "are both run 'repro_r2_tiny'" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "RUN '" in capsys.readouterr().err
    assert main(["export", str(src), "--base", "old.tar.gz"]) == 2
    assert "--base 'old.tar.gz': an earlier archive is merged" in capsys.readouterr().err
    copied = read_run_file(src)  # recorded paths name the fixture's run: point them here
    for d in copied["datasets"].values():
        d["path"] = str(src / "data" / Path(d["path"]).name)
    write_run_file(src / "run.h5", copied)
    (src / "data" / "sinc-n12.h5").unlink()
    with pytest.raises(FileNotFoundError, match="data set 'sinc-n12'"):
        export_run(src, out)
    assert (out / "repro_r2_tiny" / "data" / "sinc-n12.h5").exists()  # previous export kept
    assert sorted(p.name for p in out.iterdir()) == ["repro_r2_tiny"]  # no partial copy left


def _same(a, b, where="record"):
    """Exact structural equality: types, keys in order, array dtypes, nan = nan."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), where
        assert [type(k) for k in a] == [type(k) for k in b], where
        for k in a:
            _same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, (where, a, b)


def test_packed_run_file_round_trips_exactly(tiny_c3, tmp_path):
    rec = copy.deepcopy(read_run_file(tiny_c3))
    rec["extra"] = {"ints": {3: np.int32(7), -1: (1.5, None)}, "nan": float("nan"),
                    "inf": np.array([np.inf, -0.0, 1e-310]), "steps": np.array([2, 5, 6], np.uint16),
                    "flat": np.array([5, 5, 1], np.int64), "grid": np.arange(6.0).reshape(2, 3),
                    "u64": np.array([5, 3], np.uint64), "u64max": np.array([0, 2 ** 64 - 1], np.uint64),
                    "i64": np.array([-2 ** 63, 2 ** 63 - 1]), "f32": np.array([0.1, 2.0], np.float32),
                    "bools": np.array([True, False]), "s": np.array(["ab", "c"]), "__t__": "key"}
    write_run_file(tmp_path / "packed.h5", rec, packed=True)
    write_run_file(tmp_path / "plain.h5", rec)
    _same(read_run_file(tmp_path / "packed.h5"), rec)
    assert (tmp_path / "packed.h5").stat().st_size < (tmp_path / "plain.h5").stat().st_size / 3
    import h5py

    with h5py.File(tmp_path / "packed.h5", "r+") as f:  # a damaged blob is named, not hidden
        blob = f["record_json"][()]
        del f["record_json"]
        f["record_json"] = blob[: blob.size // 2]
    with pytest.raises(ValueError, match="packed run record cannot be decoded"):
        read_run_file(tmp_path / "packed.h5")
