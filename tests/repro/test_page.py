"""The results page (repro/page.py): from run directories, exports and a
checksummed archive of them; one section per protocol; figures and summary
tables beside it."""

import copy
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from bsvm_scale.datasets import read_dataset
from bsvm_scale.pipeline.outputs.archive import write_archive
from bsvm_scale.pipeline.outputs.export import export_run
from bsvm_scale.pipeline.outputs.runfile import read_run_file, write_run_file
from repro import write_results
from repro.page import data_used
from repro.prose import Prose
from repro.runs import Run
from tiny_runs import stopped_c3


def test_results_page_from_a_tiny_run(tiny_run):
    tmp, rec = tiny_run
    assert rec["meta"]["status"] == "complete"
    run_dir = Path(rec["meta"]["run_dir"])
    out = tmp / "docs"
    page = write_results([run_dir], out).read_text()
    assert "## R2. Sinc scaling" in page and "## Machine and versions" in page
    assert "### Run" not in page  # one run of the protocol: no sub-sections
    assert "bsvm-scale run pipelines/repro_r2_tiny.toml" in page
    assert (out / "figures" / "r2_tiny_scaling.png").stat().st_size > 1000
    assert "(figures/r2_tiny_scaling.png)" in page
    # peak memory per size and method, from the tasks' own peaks
    assert "Peak resident memory [MiB] per task, median over repetitions (the task's own" in page
    assert all(50.0 < t["peak_rss_mb"] < 4096.0 for t in rec["tasks"].values())
    # the ASE of the table, recomputed from the stored test predictions and the data file
    ds = read_dataset(run_dir / "data" / "sinc-n24.h5")
    ases = []
    for k in range(2):
        te = np.asarray(rec["datasets"]["sinc-n24"]["partitions"][k]["test"])
        task = rec["tasks"][f"sinc-n24__LIBSVM-SVR-CV__p{k:03d}"]
        ases.append(np.mean((task["predictions"]["mean"] - ds.y[te]) ** 2))
    row = [ln for ln in page.splitlines() if ln.startswith("| 24 | LIBSVM-SVR-CV |")]
    assert len(row) == 1
    assert row[0].split("|")[5].strip().startswith(f"{np.mean(ases):.4g} +- ")
    # the page's prose comes from the prose file; its scope and notes are listed
    prose = Prose()
    assert prose["page.times"] in page and prose["r2.data"] in page
    assert all(f"- {text}" in page for _, text in prose.with_prefix("scope."))
    assert all(f"- {text}" in page for _, text in prose.with_prefix("note."))


def test_one_section_per_protocol_and_stale_files_removed(tiny_run, tmp_path):
    """Two runs of one protocol share its section, one sub-section each, with
    their own figures; figures and tables of an earlier page are removed."""
    _, rec = tiny_run
    second = tmp_path / "repro_r2_tiny_large"
    shutil.copytree(rec["meta"]["run_dir"], second)
    copied = read_run_file(second)
    copied["meta"]["name"] = "repro_r2_tiny_large"
    write_run_file(second / "run.h5", copied)
    out = tmp_path / "docs"
    (out / "figures").mkdir(parents=True)
    (out / "figures" / "old_figure.png").write_bytes(b"png")
    (out / "results").mkdir()
    (out / "results" / "old.csv").write_text("a\n")
    page = write_results([rec["meta"]["run_dir"], second], out).read_text()
    assert page.count("## R2. Sinc scaling") == 1
    assert "### Run `repro_r2_tiny`" in page and "### Run `repro_r2_tiny_large`" in page
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "r2_tiny_large_scaling.png", "r2_tiny_scaling.png"]
    assert sorted(p.name for p in (out / "results").iterdir()) == ["r2.csv"]
    csv = (out / "results" / "r2.csv").read_text().splitlines()
    assert csv[0].startswith("run,dataset,model,kind,partitions,metric,mean,sd")
    assert sum(ln.startswith("repro_r2_tiny_large,") for ln in csv) == 6
    assert sum(ln.startswith("repro_r2_tiny,") for ln in csv) == 6


def test_page_compares_models_on_the_partitions_all_finished(tiny_run):
    """A stopped run: LIBSVM-SVR-CV lacks partition 1 of n = 24, so every model
    of that data set is reported on partition 0 alone, and the header says so."""
    tmp, rec = tiny_run
    run_dir = tmp / "stopped" / "repro_r2_tiny"
    shutil.copytree(Path(rec["meta"]["run_dir"]), run_dir)
    stopped = copy.deepcopy(rec)
    parts = stopped["results"]["sinc-n24"]["LIBSVM-SVR-CV"]
    del parts[sorted(parts)[1]]
    write_run_file(run_dir / "run.h5", stopped)
    run = Run(run_dir / "run.h5")
    assert run.left_out == {"sinc-n24": 2}  # BSVR's and BSVR-A's partition 1
    for m in run.models("sinc-n24"):
        assert len(run.entries("sinc-n24", m)) == 1
    assert all(len(run.entries("sinc-n12", m)) == 2 for m in run.models("sinc-n12"))
    want = rec["tasks"]["sinc-n24__BSVR__p000__s00"]["metrics"]["ase"]
    np.testing.assert_allclose(run.metric("sinc-n24", "BSVR", "ase"), [want])
    page = write_results([run_dir], tmp / "docs_stopped").read_text()
    assert ("on the partitions all of them finished, every start included (sinc-n24 1; 2 other "
            "partition results left out)") in page


def test_data_statement_follows_the_runs_data_sets():
    """A run of the R5 protocol on diamonds says diamonds, not Boston; a run
    on the protocol's own (or unknown) data keeps the protocol's statement."""
    prose = Prose()
    assert data_used({"diamonds": {}}, "r5", prose).startswith("diamonds (ggplot2, 53,940 cases")
    assert data_used({"boston": {}}, "r5", prose) == prose["r5.data"]
    assert data_used({"diamonds": {}, "boston": {}}, "r5", prose) == prose["r5.data"]


def _render_recording_loads(runs, out, monkeypatch, **kw):
    """The page and every (data set, model) whose model the page loaded."""
    loaded, original = [], Run.model

    def model(self, ds, m, k=0):
        got = original(self, ds, m, k)
        if got is not None:
            loaded.append((ds, m, type(got).__name__))
        return got

    monkeypatch.setattr(Run, "model", model)
    page = write_results(runs, out, **kw).read_text()
    monkeypatch.setattr(Run, "model", original)
    return page, sorted(loaded)


def test_export_holds_what_the_page_reads(tiny_c1, tmp_path, monkeypatch, page_body):
    src = tmp_path / "runs" / "repro_c1_tiny"
    shutil.copytree(tiny_c1, src)
    page_run, loads_run = _render_recording_loads([src], tmp_path / "page_run", monkeypatch)
    assert loads_run == [("c1", "BTSVC", "BayesianSVC"), ("c1", "GPC", "GPC")]
    exp = export_run(src, tmp_path / "exports")["path"]
    shutil.rmtree(src)  # the export alone, read from another directory
    monkeypatch.chdir(tmp_path)
    page_exp, loads_exp = _render_recording_loads([exp], tmp_path / "page_exp", monkeypatch)
    assert page_body(page_exp) == page_body(page_run) and loads_exp == loads_run
    assert "![C1: discriminant and class probability](figures/c1_tiny_discriminant.png)" \
        in page_body(page_exp)
    # the page states the machine and source commit the run recorded, not the reader's
    meta = read_run_file(exp)["meta"]
    assert meta["machine"]["cores"] == os.cpu_count() and meta["machine"]["memory_gib"] > 0
    line = f"- {meta['machine']['system']}, {os.cpu_count()} cores ("
    assert any(ln.startswith(line) and ln.endswith(": runs repro_c1_tiny")
               for ln in page_body(page_exp))
    assert f"- source commit of the runs: {meta['commit'] or 'not recorded'} (repro_c1_tiny)" \
        in page_body(page_exp)
    (exp / "models" / "c1__GPC__p000.h5").unlink()
    with pytest.raises(FileNotFoundError, match="lacks the model file"):
        Run(exp).model("c1", "GPC")


def test_export_of_a_stopped_run_gives_the_same_page(tiny_c3, tmp_path, page_body):
    src = stopped_c3(tiny_c3, tmp_path)  # GPC has not finished partition 0 of twonorm
    exp = export_run(src, tmp_path / "exports")["path"]
    page = page_body(write_results([exp], tmp_path / "page").read_text())
    assert page == page_body(write_results([src], tmp_path / "page_src").read_text())
    assert any("(twonorm 1; 1 other partition results left out)" in ln for ln in page)


def test_page_regenerated_from_an_archive(tiny_run, tiny_c3, tmp_path, page_body, capsys):
    """Round trip: runs -> archive + checksum -> `bsvm-scale results --from` (the
    checksum verified) -> the same page as from the runs, which states the
    archive's digest; a damaged archive is refused."""
    from bsvm_scale.cli import main

    runs = [tiny_run[1]["meta"]["run_dir"], str(tiny_c3)]
    direct = write_results(runs, tmp_path / "direct").read_text()
    archive = tmp_path / "runs-export.tar.gz"
    assert main(["export", *runs, "--archive", str(archive)]) == 0
    digest = (tmp_path / "runs-export.tar.gz.sha256").read_text().split()[0]
    assert main(["results", "--from", str(archive), "--out", str(tmp_path / "docs")]) == 0
    page = (tmp_path / "docs" / "results.md").read_text()
    assert f"Made from the run-export archive `runs-export.tar.gz`, SHA-256 `{digest}`" in page
    assert "    bsvm-scale results --from runs-export.tar.gz" in page
    assert page_body(page) == page_body(direct)
    assert sorted(p.name for p in (tmp_path / "docs" / "figures").iterdir()) == sorted(
        p.name for p in (tmp_path / "direct" / "figures").iterdir())
    extracted = tmp_path / "extracted"
    shutil.unpack_archive(archive, extracted)
    assert main(["results", "--from", str(extracted), "--out", str(tmp_path / "d2")]) == 0
    assert page_body((tmp_path / "d2" / "results.md").read_text()) == page_body(direct)
    capsys.readouterr()
    archive.write_bytes(archive.read_bytes()[:-10] + b"0123456789")
    assert main(["results", "--from", str(archive), "--out", str(tmp_path / "d3")]) == 2
    assert "the archive is damaged" in capsys.readouterr().err
    assert not (tmp_path / "d3" / "results.md").exists()


def test_archive_of_exports_is_packed_as_is(tiny_run, tmp_path):
    """Exports packed again keep their records (no second export time)."""
    exp = export_run(tiny_run[1]["meta"]["run_dir"], tmp_path / "exports")["path"]
    info = write_archive([exp], tmp_path / "a.tar.gz")
    shutil.unpack_archive(info["archive"], tmp_path / "x")
    assert (tmp_path / "x" / exp.name / "run.h5").read_bytes() == (exp / "run.h5").read_bytes()
