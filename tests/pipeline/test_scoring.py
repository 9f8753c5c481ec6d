"""Batch scoring (bsvm_scale.pipeline.run.scoring) and ``bsvm-scale predict``."""

import h5py
import numpy as np
import pytest

from bsvm_scale import BayesianSVC, BayesianSVR
from bsvm_scale.cli import main
from bsvm_scale.datasets import Dataset, synthetic, write_dataset
from bsvm_scale.baselines.gp import GPR
from bsvm_scale.tables import TableError
from bsvm_scale.pipeline.run.scoring import ScoringError, file_sha256, predict_file
from bsvm_scale.storage import model_feature_names, save_model

NAMES = ["a", "b", "c"]


@pytest.fixture(scope="module")
def svr_file(tmp_path_factory):
    rng = np.random.default_rng(0)
    X = rng.uniform(-2, 2, size=(150, 3))
    y = np.sinc(X[:, 0]) + 0.2 * X[:, 1] + 0.05 * rng.standard_normal(150)
    m = BayesianSVR(optimize=False, C=10.0, epsilon=0.1, kappa=1.0, kappa_b=1.0).fit(X, y)
    path = tmp_path_factory.mktemp("m") / "svr.h5"
    save_model(m, path, feature_names=NAMES)
    return m, path


@pytest.fixture(scope="module")
def svc_file(tmp_path_factory):
    d = synthetic.gauss2d(300, seed=1)
    m = BayesianSVC(optimize=False, kappa0=10.0, kappa=0.5, kappa_b=10.0).fit(d.X, d.y)
    path = tmp_path_factory.mktemp("m") / "svc.h5"
    save_model(m, path)
    return m, path


def _csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(v) for v in r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def _read(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in f}, dict(f.attrs)


def test_feature_names_are_stored_and_checked(svr_file, tmp_path):
    m, path = svr_file
    assert model_feature_names(path) == NAMES
    with pytest.raises(ValueError, match="feature_names has 2 entries"):
        save_model(m, tmp_path / "x.h5", feature_names=["a", "b"])


def test_csv_columns_matched_by_name_with_error_bars(svr_file, tmp_path):
    m, path = svr_file
    X = np.random.default_rng(1).uniform(-2, 2, size=(57, 3))
    # columns in another order, plus one the model does not use
    csv = _csv(tmp_path / "in.csv", ["c", "extra", "a", "b"],
               [[r[2], 9.0, r[0], r[1]] for r in X.tolist()])
    info = predict_file(path, csv, tmp_path / "out.h5", chunk_size=10, progress=False)
    out, attrs = _read(tmp_path / "out.h5")
    mean, sd = m.predict(X, return_std=True)
    np.testing.assert_allclose(out["mean"], mean, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(out["std_f"], sd, rtol=1e-12)
    np.testing.assert_allclose(out["std_y"], m.predict(X, return_std=True,
                                                       include_noise=True)[1], rtol=1e-12)
    assert info["n_rows"] == 57 and info["n_chunks"] == 1
    assert attrs["model_sha256"] == file_sha256(path)
    assert attrs["input_sha256"] == file_sha256(csv)
    assert attrs["estimator"] == "BayesianSVR" and attrs["input_kind"] == "csv"


@pytest.mark.parametrize("chunks", [(1, 1000), (300, 700)])
def test_classifier_outputs_do_not_depend_on_the_chunk_size(svc_file, tmp_path, chunks):
    m, path = svc_file
    Xt = synthetic.gauss2d(1500, seed=2).X
    np.save(tmp_path / "in.npy", Xt)
    res = []
    for k in chunks:
        predict_file(path, tmp_path / "in.npy", tmp_path / f"o{k}.h5", chunk_size=k,
                     progress=False)
        res.append(_read(tmp_path / f"o{k}.h5")[0])
    assert set(res[0]) == {"label", "proba", "latent_mean", "latent_std"}
    for key in res[0]:
        np.testing.assert_array_equal(res[0][key], res[1][key])
    np.testing.assert_allclose(res[0]["proba"], m.predict_proba(Xt), rtol=1e-10)
    np.testing.assert_array_equal(res[0]["label"], m.predict(Xt))
    mu, sd = m.decision_function(Xt, return_std=True)
    np.testing.assert_allclose(res[0]["latent_std"], sd, rtol=1e-10)


def test_dask_workers_give_the_same_bits(svc_file, tmp_path):
    _, path = svc_file
    np.save(tmp_path / "in.npy", synthetic.gauss2d(900, seed=3).X)
    predict_file(path, tmp_path / "in.npy", tmp_path / "local.h5", chunk_size=900,
                 progress=False)
    predict_file(path, tmp_path / "in.npy", tmp_path / "dask.h5", chunk_size=256, workers=2,
                 progress=False)
    a, b = _read(tmp_path / "local.h5")[0], _read(tmp_path / "dask.h5")[0]
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_dataset_file_input_and_a_gp_model(tmp_path):
    rng = np.random.default_rng(4)
    X = rng.uniform(-2, 2, size=(80, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.standard_normal(80)
    m = GPR(n_starts=1).fit(X, y)
    save_model(m, tmp_path / "gpr.h5", feature_names=["u", "v"])
    write_dataset(Dataset(X=X[:, ::-1], y=y, name="t", task="regression",
                          feature_names=["v", "u"]), tmp_path / "d.h5")
    predict_file(tmp_path / "gpr.h5", tmp_path / "d.h5", tmp_path / "o.h5", progress=False)
    out = _read(tmp_path / "o.h5")[0]
    np.testing.assert_allclose(out["mean"], m.predict(X), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("rows,header,match", [
    ([[1, 2, 3]], ["a", "b", "x"], "lacks the model's columns"),
    ([[1, "oops", 3]], NAMES, "row 1, column 'b': 'oops' is not a number"),
    ([[1, 2, 3], [1, "nan", 3]], NAMES, "row 2, column 'b': missing"),
    ([[1, 2]], NAMES, "line 2: 2 fields, the header has 3"),
])
def test_bad_csv_gets_one_clear_line_and_no_output(svr_file, tmp_path, capsys, rows, header,
                                                    match):
    _, path = svr_file
    csv = _csv(tmp_path / "bad.csv", header, rows)
    with pytest.raises(TableError, match=match):
        predict_file(path, csv, tmp_path / "out.h5", progress=False)
    assert not (tmp_path / "out.h5").exists()
    assert main(["predict", str(path), str(csv), "--out", str(tmp_path / "o.h5"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "error" in err


def test_wrong_column_count_and_unknown_type(svc_file, tmp_path):
    _, path = svc_file
    np.save(tmp_path / "three.npy", np.zeros((4, 3)))
    with pytest.raises(ScoringError, match="has 3 columns; the model takes 2"):
        predict_file(path, tmp_path / "three.npy", tmp_path / "o.h5", progress=False)
    (tmp_path / "x.txt").write_text("1 2\n")
    with pytest.raises(ScoringError, match="unknown file type"):
        predict_file(path, tmp_path / "x.txt", tmp_path / "o.h5", progress=False)
    with pytest.raises(ScoringError, match="chunk_size must be a positive integer"):
        predict_file(path, tmp_path / "three.npy", tmp_path / "o.h5", chunk_size=0)


def test_cli_predict_writes_the_file(svr_file, tmp_path, capsys):
    _, path = svr_file
    np.save(tmp_path / "in.npy", np.zeros((5, 3)))
    assert main(["predict", str(path), str(tmp_path / "in.npy"), "--out",
                 str(tmp_path / "o.h5"), "--chunk-size", "2", "--no-progress"]) == 0
    assert "5 rows" in capsys.readouterr().out
    assert _read(tmp_path / "o.h5")[0]["mean"].shape == (5,)


def test_documented_csv_sequence_imports_trains_and_scores(tmp_path, monkeypatch):
    """docs/reference/nightly.md, "Your own data": a raw table with text columns is imported, a model
    trained by pipelines/from_csv.toml, and new raw rows scored, with no code."""
    import gzip
    import shutil
    from pathlib import Path

    from bsvm_scale.storage import load_model

    repo = Path(__file__).resolve().parents[2]
    (tmp_path / "pipelines").mkdir()
    text = (repo / "pipelines" / "from_csv.toml").read_text()
    assert "n_train = 2000" in text
    (tmp_path / "pipelines" / "from_csv.toml").write_text(
        text.replace("n_train = 2000", "n_train = 150").replace(
            'name = "BSVR"', 'name = "BSVR"\nsettings = { optimizer_options = { maxiter = 3 } }'))
    shutil.copytree(repo / "data" / "examples", tmp_path / "data" / "examples")
    monkeypatch.chdir(tmp_path)
    commands = [ln.split("#", 1)[1].strip() for ln in text.splitlines()
                if ln.startswith("#   bsvm-scale")]
    assert len(commands) == 3  # the file's own comment is the documented sequence
    for cmd in commands:
        argv = cmd.split()[1:]
        if argv[0] == "run":
            argv += ["--no-progress", "--no-report", "--workers", "1"]
        elif argv[0] == "predict":
            argv += ["--no-progress"]
        assert main(argv) == 0, cmd
    model = load_model("runs/from_csv/models/diamonds__BSVR__p000.h5")
    assert list(model.feature_names_in_) == ["carat", "cut", "color", "clarity", "depth",
                                             "table", "x", "y", "z"]
    out, attrs = _read(tmp_path / "runs" / "from_csv" / "scores.h5")
    import pandas as pd

    with gzip.open("data/examples/diamonds_new.csv.gz", "rt") as fh:
        new = pd.read_csv(fh)
    mean, sd = model.predict(new.drop(columns=["id", "price", "ln_price"]), return_std=True)
    np.testing.assert_allclose(out["mean"], mean, rtol=1e-12, atol=1e-12)
    assert [v.decode() for v in out["case_id"][:3]] == new["id"][:3].tolist()
    assert np.all(out["std_y"] > out["std_f"]) and out["mean"].shape == (4000,)
    assert np.mean((out["mean"] - new["ln_price"]) ** 2) < 0.5 * np.var(new["ln_price"])


def test_case_ids_travel_with_the_predictions(svr_file, svc_file, tmp_path, capsys):
    """A CSV id column (``--id``) and a data set file's own identifiers are
    written as ``case_id`` beside the predictions, in row order."""
    m, path = svr_file
    X = np.random.default_rng(3).uniform(-2, 2, size=(40, 3))
    ids = [f"c-{i:03d}" for i in range(40)]
    csv = _csv(tmp_path / "in.csv", ["b", "key", "a", "c"],
               [[r[1], k, r[0], r[2]] for r, k in zip(X, ids)])
    assert main(["predict", str(path), str(csv), "--out", str(tmp_path / "o.h5"), "--id", "key",
                 "--chunk-size", "5", "--no-progress"]) == 0
    out, _ = _read(tmp_path / "o.h5")
    assert [v.decode() for v in out["case_id"]] == ids  # text ids stay text
    np.testing.assert_array_equal(out["mean"], m.predict(X))
    capsys.readouterr()
    # without --id a text column the model does not take is not read at all
    assert main(["predict", str(path), str(csv), "--out", str(tmp_path / "y.h5"),
                 "--no-progress"]) == 0
    out, _ = _read(tmp_path / "y.h5")
    assert "case_id" not in out and np.array_equal(out["mean"], m.predict(X))
    # ... but by position every column is an input
    assert main(["predict", str(path), str(csv), "--out", str(tmp_path / "x.h5"),
                 "--by-position", "--no-progress"]) == 2
    assert "in.csv' has 4 columns; the model takes 3" in capsys.readouterr().err
    with pytest.raises(ScoringError, match="no id column 'nope'"):
        predict_file(path, csv, tmp_path / "x.h5", id_column="nope", progress=False)
    np.save(tmp_path / "a.npy", X)
    with pytest.raises(ScoringError, match="id column is taken from a CSV file only"):
        predict_file(path, tmp_path / "a.npy", tmp_path / "x.h5", id_column="key",
                     progress=False)
    assert not (tmp_path / "x.h5").exists()
    svc, svc_path = svc_file
    d = synthetic.gauss2d(30, seed=5)
    write_dataset(Dataset(X=d.X, y=d.y, name="g", task="classification",
                          extra={"case_id": np.arange(100, 130)}), tmp_path / "g.h5")
    predict_file(svc_path, tmp_path / "g.h5", tmp_path / "g_out.h5", progress=False)
    out, _ = _read(tmp_path / "g_out.h5")
    assert out["case_id"].tolist() == list(range(100, 130))
    np.testing.assert_array_equal(out["label"], svc.predict(d.X))


def test_csv_ids_over_many_chunks_keep_their_type_and_order(svr_file, tmp_path):
    """A CSV file is coded chunk by chunk, its identifiers kept per chunk: all
    canonical integers stay int64, one text identifier makes them all text."""
    m, path = svr_file
    X = np.random.default_rng(8).uniform(-2, 2, size=(2500, 3))
    ints = [[i * 7, *r] for i, r in enumerate(X.tolist())]
    _csv(tmp_path / "i.csv", ["key", "a", "b", "c"], ints)
    out = predict_file(path, tmp_path / "i.csv", tmp_path / "i.h5", id_column="key",
                       chunk_size=1024, progress=False)
    assert out["n_chunks"] == 3
    got, _ = _read(tmp_path / "i.h5")
    assert got["case_id"].dtype == np.int64 and got["case_id"].tolist() == [i * 7 for i in
                                                                           range(2500)]
    np.testing.assert_array_equal(got["mean"], m.predict(X))
    ints[2050][0] = "x-2050"  # the last chunk has a text identifier
    _csv(tmp_path / "t.csv", ["key", "a", "b", "c"], ints)
    predict_file(path, tmp_path / "t.csv", tmp_path / "t.h5", id_column="key", chunk_size=1024,
                 progress=False)
    got, _ = _read(tmp_path / "t.h5")
    ids = [v.decode() for v in got["case_id"]]
    assert ids[:3] == ["0", "7", "14"] and ids[2050] == "x-2050" and len(ids) == 2500
