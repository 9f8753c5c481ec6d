"""Pipelines on data sets imported from raw tables: text labels, case weights from
an imported ``--weight`` column, ``class_weight`` in ``settings``, tied ARD; the
models of the run keep the coding and score raw rows."""

import h5py
import numpy as np
import pytest

from bsvm_scale import BayesianSVC, load_model
from bsvm_scale.cli import main
from bsvm_scale.datasets import read_dataset
from bsvm_scale.pipeline.spec.config import load_pipeline
from bsvm_scale.pipeline.run.executor import run_pipeline

pd = pytest.importorskip("pandas")

PIPELINE = """
[run]
name = "tables"
output = "{out}"

[[datasets]]
name = "shop"
path = "{data}"
partitions = 1
n_train = 90

[[models]]
kind = "btsvc"
name = "BTSVC"
search = {{ n_starts = 1 }}
settings = {{ ard = true, class_weight = "balanced", optimizer_options = {{ maxiter = 4 }} }}

[[models]]
kind = "btsvc"
name = "BTSVC-unweighted"
sample_weight = false
committee = true
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 4 }} }}

[[models]]
kind = "svc"
name = "SVC"
settings = {{ class_weight = {{ yes = 5.0 }} }}
"""


@pytest.fixture(scope="module")
def table_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tables")
    rng = np.random.default_rng(0)
    n = 130
    frame = pd.DataFrame({"amount": rng.gamma(2.0, 50.0, n).round(2),
                          "channel": rng.choice(["web", "shop", "phone"], n),
                          "member": rng.choice(["yes", "no"], n),
                          "w": rng.integers(1, 4, n)})
    score = np.log(frame["amount"]) - 4 + (frame["channel"] == "web") * 1.0
    frame["bought"] = np.where(score + rng.normal(0, 0.5, n) > 0.8, "yes", "no")
    frame.loc[[3, 17], "channel"] = ""   # missing categories: a level of their own
    frame.to_csv(tmp / "shop.csv", index=False)
    assert main(["datasets", "import", str(tmp / "shop.csv"), "--target", "bought",
                 "--weight", "w", "--out", str(tmp / "shop.h5")]) == 0
    path = tmp / "p.toml"
    path.write_text(PIPELINE.format(out=tmp / "runs", data=tmp / "shop.h5"))
    rec = run_pipeline(load_pipeline(path), workers=1, progress=False)
    return tmp, frame, rec


def test_the_run_fits_text_labels_with_the_weights_and_keeps_the_coding(table_run):
    tmp, frame, rec = table_run
    assert rec["meta"]["n_failed"] == 0
    ds = read_dataset(tmp / "shop.h5")
    assert ds.y.dtype.kind == "U" and "sample_weight" in ds.extra
    models = tmp / "runs" / "tables" / "models"
    m = load_model(models / "shop__BTSVC__p000.h5")
    assert m.classes_.tolist() == ["no", "yes"] and m.class_weight == "balanced"
    assert list(m.feature_names_in_) == ["amount", "channel", "member"]
    # tied ARD: one relevance weight per input column of the table
    assert m.hyperparameters_["kappa"].shape == (3,)
    unweighted = load_model(models / "shop__BTSVC-unweighted__p000.h5")
    assert unweighted.class_weight is None and unweighted.hyperparameters_["kappa"] > 0
    # the evidence-weighted committee of the two starts on text labels
    entry = rec["results"]["shop"]["BTSVC-unweighted"]["p000"]
    assert entry["n_starts_done"] == 2 and np.isfinite(entry["committee_metrics"]["nll"])
    # the models score raw rows, text labels come out as text
    raw = frame.drop(columns=["bought", "w"])
    raw.to_csv(tmp / "new.csv", index=False)
    for name in ("BTSVC", "SVC"):
        assert main(["predict", str(models / f"shop__{name}__p000.h5"), str(tmp / "new.csv"),
                     "--out", str(tmp / f"{name}.h5"), "--no-progress"]) == 0
        with h5py.File(tmp / f"{name}.h5") as f:
            labels = f["label"].asstr()[...]
        assert set(labels) <= {"yes", "no"}
        np.testing.assert_array_equal(labels, load_model(models / f"shop__{name}__p000.h5")
                                      .predict(raw))


def test_a_task_fit_equals_the_direct_fit_with_the_imported_weights(table_run):
    """The pipeline's BTSVC start is the estimator's own fit on the partition's
    coded rows with ``sample_weight`` from the weight column."""
    from bsvm_scale.datasets import random_splits

    tmp, frame, rec = table_run
    ds = read_dataset(tmp / "shop.h5")
    model = load_model(tmp / "runs" / "tables" / "models" / "shop__BTSVC__p000.h5")
    parts = random_splits(ds.n_samples, 90, 1, 0)[0][0]  # partition 0 (run seed 0)
    direct = BayesianSVC(ard=True, class_weight="balanced", n_starts=1,
                         optimizer_options={"maxiter": 4}).fit(
        ds.table(parts), ds.y[parts], sample_weight=ds.extra["sample_weight"][parts])
    np.testing.assert_array_equal(direct.theta_, model.theta_)
    np.testing.assert_array_equal(direct.predict_proba(frame.drop(columns=["bought", "w"])),
                                  model.predict_proba(frame.drop(columns=["bought", "w"])))
