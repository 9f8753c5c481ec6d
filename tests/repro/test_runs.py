"""Reading runs for the page (repro/runs.py): protocols, sizes, the models a
section loads."""

from pathlib import Path

import numpy as np

from bsvm_scale.pipeline.spec.config import load_pipeline
from repro import runs
from repro.runs import Run, groups_by_size, protocol_of, short_name

REPO = Path(__file__).resolve().parents[2]


def test_protocol_names():
    assert protocol_of("repro_r2") == "r2" and protocol_of("repro_c3_reduced") == "c3"
    assert protocol_of("repro_c3_large") == "c3" and protocol_of("repro_r1-x") == "r1"
    assert protocol_of("repro_r9") is None and protocol_of("quickstart") is None
    assert protocol_of("repro_r12") is None
    assert short_name("repro_c3_large") == "c3_large" and short_name("nightly") == "nightly"


def test_every_shipped_repro_pipeline_has_a_protocol():
    paths = sorted((REPO / "pipelines").glob("repro_*.toml"))
    assert len(paths) >= 15
    for path in paths:
        assert protocol_of(load_pipeline(path).name) is not None, path.name


def test_sizes_of_a_single_size_run():
    """A one-size run (label without -n<size>, e.g. repro_c2_large) is grouped
    under its training size, so the C2 tables are made for it."""

    class FakeRun:
        def __init__(self, labels):
            self.labels = labels

        def datasets(self):
            return self.labels

        def partition(self, ds, k=0):
            return np.arange(20000), np.arange(5)

    assert groups_by_size(FakeRun(["gauss2d"])) == {20000: "gauss2d"}
    assert groups_by_size(FakeRun(["g-n100", "g-n20"])) == {20: "g-n20", 100: "g-n100"}
    assert list(groups_by_size(FakeRun(["g-n100", "g-n20"]))) == [20, 100]
    assert groups_by_size(FakeRun(["a", "b"])) == {}


def test_models_loaded_only_at_the_largest_size_where_the_section_says(tiny_run, monkeypatch):
    _, rec = tiny_run
    run = Run(rec["meta"]["run_dir"])
    monkeypatch.setitem(runs.MODELS_READ, "r2", ("BSVR",))
    assert run.loads_model("sinc-n12", "BSVR") and run.loads_model("sinc-n24", "BSVR")
    assert not run.loads_model("sinc-n24", "BSVR-A")
    monkeypatch.setattr(runs, "MODELS_AT_LARGEST_SIZE", {"r2"})
    assert not run.loads_model("sinc-n12", "BSVR") and run.loads_model("sinc-n24", "BSVR")
    assert run.model("sinc-n12", "BSVR") is None
    assert run.model("sinc-n24", "BSVR").hyperparameters_["C"] > 0
    # models trained on more than MAX_MODEL_TRAIN cases are never loaded (nor exported)
    monkeypatch.setattr(runs, "MAX_MODEL_TRAIN", 23)
    assert not run.loads_model("sinc-n24", "BSVR") and run.model("sinc-n24", "BSVR") is None
    monkeypatch.setattr(runs, "MAX_MODEL_TRAIN", 24)
    assert run.loads_model("sinc-n24", "BSVR")


def test_grids_are_read_from_the_record(tiny_c3):
    run = Run(tiny_c3)
    g = run.grid("twonorm", "BTSVC")
    assert g["neg_log_evidence"].shape == (3, 3) and g["task"] == "twonorm__BTSVC__p000__grid"
    assert run.grid("twonorm", "GPC") is None and run.grid("twonorm", "BTSVC", 1) is None
    # grid tasks are not starts: BTSVC's entries are its two partitions' best starts
    assert [e["best_task"] for e in run.entries("twonorm", "BTSVC")] == [
        "twonorm__BTSVC__p000__s00", "twonorm__BTSVC__p001__s00"]
