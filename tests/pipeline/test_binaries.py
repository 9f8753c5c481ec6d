"""A multi-class BTSVC start as one Dask task per binary model plus the task
that assembles them (bsvm_scale.pipeline.run.binaries): the planned tasks,
a run on a LocalCluster against BayesianSVC.fit on the same partition, and
the rerun that recomputes nothing."""

from pathlib import Path

import numpy as np
import pytest
from reference import three_blobs

from bsvm_scale import BayesianSVC
from bsvm_scale.datasets import Dataset, write_dataset
from bsvm_scale.pipeline.run.binaries import expand_binaries, n_separate_models
from bsvm_scale.pipeline.run.executor import run_pipeline
from bsvm_scale.pipeline.spec.config import load_pipeline
from bsvm_scale.storage import load_model

PIPELINE = """
[run]
name = "three"
output = "{out}"

[[datasets]]
name = "three"
path = "{data}"
partitions = "stored"

[[models]]
kind = "btsvc"
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 5 }}, class_weight = {{ c = 2.0 }} }}
"""


def _three(n_per=35, seed=0):
    return three_blobs(n_per, seed)


def _spec(params, y, kind="btsvc", start=0):
    return {"task_id": "d__m__p000__s00", "kind": kind, "dataset": "d", "start": start,
            "params": params, "train": np.arange(y.size), "task_dir": "/r/tasks/d__m__p000__s00"}


def test_a_multiclass_start_waits_for_one_task_per_binary_model():
    X, y = _three()
    data = {"d": {"y": y}}
    specs = expand_binaries([_spec({}, y)], data)
    assert [s["task_id"] for s in specs[1:]] == [f"d__m__p000__s00__b{b:02d}" for b in range(3)]
    assert specs[0]["after"] == [s["task_id"] for s in specs[1:]] and specs[0]["binaries"] == 3
    assert [s["binary"] for s in specs[1:]] == [0, 1, 2]
    assert specs[2]["task_dir"] == "/r/tasks/d__m__p000__s00__b01"
    y4 = np.r_[y, np.full(10, "d")]
    assert n_separate_models(_spec({"multi_class": "ovr"}, y4), {"d": {"y": y4}}) == 4
    assert n_separate_models(_spec({"multi_class": "ovo"}, y4), {"d": {"y": y4}}) == 6
    for spec, d in ((_spec({"shared_kernel": True}, y), data),  # one search: one task
                    (_spec({}, y[y != "c"]), {"d": {"y": y[y != "c"]}}),  # two classes
                    (_spec({}, y, kind="gpc"), data), (_spec({}, y, start=-1), data)):
        assert n_separate_models(spec, d) == 0


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("bin")
    X, y = _three()
    split = np.random.default_rng(3).permutation(y.size)
    ds = Dataset(X, y, "three", "classification", splits=[(split[:75], split[75:])])
    write_dataset(ds, tmp / "three.h5")
    path = tmp / "three.toml"
    path.write_text(PIPELINE.format(out=str(tmp / "runs"), data=str(tmp / "three.h5")))
    return path, run_pipeline(load_pipeline(path), workers=2, progress=False), ds


def test_the_assembled_start_is_the_model_fit_makes(run):
    path, rec, ds = run
    meta = rec["meta"]
    assert meta["status"] == "complete" and meta["n_done"] == 2 * (1 + 3)
    tasks = rec["tasks"]
    assert {t.get("binary") for t in tasks.values()} == {None, 0, 1, 2}
    tr, te = ds.splits[0]
    entry = rec["results"]["three"]["btsvc"]["p000"]
    best = tasks[entry["best_task"]]
    assert best["metrics"]["error_rate"] == entry["metrics"]["error_rate"]
    assert entry["time"] > sum(tasks[t]["elapsed"] for t in tasks if t.startswith(
        entry["best_task"] + "__b"))  # the binary tasks' seconds count
    model = load_model(Path(meta["run_dir"]) / entry["model_file"])
    k = entry["best_start"]
    direct = BayesianSVC(n_starts=1, optimizer_options={"maxiter": 5}, class_weight={"c": 2.0},
                         n_jobs=1)
    theta0 = BayesianSVC(n_starts=2).start_points(ds.X[tr])[k]
    direct.fit(ds.X[tr], ds.y[tr], init=[{"theta": theta0}] * 3)
    np.testing.assert_array_equal(model.log_evidence_, direct.log_evidence_)
    np.testing.assert_array_equal(model.predict_proba(ds.X[te]), direct.predict_proba(ds.X[te]))
    rerun = run_pipeline(load_pipeline(path), workers=2, progress=False)
    assert rerun["meta"]["n_skipped"] == 8
