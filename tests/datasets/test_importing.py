"""``bsvm-scale datasets import`` and :func:`bsvm_scale.datasets.import_table`."""

import numpy as np
import pytest

from bsvm_scale.tables import TableError
from bsvm_scale.cli import main
from bsvm_scale.datasets import import_table, read_dataset


def _csv(path, text):
    path.write_text(text)
    return path


def test_csv_becomes_a_data_set_with_provenance_and_partitions(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 2))
    y = X[:, 0] - X[:, 1]
    lines = ["u,target,v"] + [f"{a!r},{t!r},{b!r}" for (a, b), t in zip(X.tolist(), y.tolist())]
    src = _csv(tmp_path / "my data.csv", "\n".join(lines) + "\n")
    assert main(["datasets", "import", str(src), "--target", "target", "--partitions", "3",
                 "--n-train", "30", "--seed", "5", "--out", str(tmp_path / "d.h5")]) == 0
    assert "regression (inferred)" in capsys.readouterr().out
    ds = read_dataset(tmp_path / "d.h5")
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(ds.y, y)
    assert ds.feature_names == ["u", "v"] and ds.task == "regression"
    assert ds.provenance["target"] == "target" and len(ds.provenance["sha256"]) == 64
    assert ds.n_splits == 3 and all(len(tr) == 30 and len(te) == 10 for tr, te in ds.splits)
    again = import_table(src, "target", partitions=3, n_train=30, seed=5)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(again.splits, ds.splits))


def test_npy_target_by_index_and_class_inference(tmp_path):
    A = np.column_stack([np.arange(10.0), np.arange(10.0) ** 2, np.tile([0, 1], 5)])
    np.save(tmp_path / "a.npy", A)
    ds = import_table(tmp_path / "a.npy", "-1")
    assert ds.task == "classification" and ds.y.dtype.kind == "i"
    np.testing.assert_array_equal(ds.X, A[:, :2])
    assert import_table(tmp_path / "a.npy", 2, task="regression").task == "regression"


@pytest.mark.parametrize("text,target,flags,match", [
    ("a,b\n1,2\n", "c", [], "target 'c' is not a column"),
    ("a,b\n1,2\n2,x\n", "a", ["--numeric", "b"], "row 2, column 'b': 'x' is not a number"),
    ("a,b\n1,2\n2,nan\n", "a", [], "column 'b': missing numbers in row 2"),
    ("a,b\n1,2\n2,inf\n", "a", [], "row 2, column 'b': inf"),
    ("a,a\n1,2\n", "a", [], "more than once"),
    ("a,b\n", "a", [], "no rows"),
    ("a,b\n1,2\n2\n", "a", [], "line 3: 1 fields, the header has 2"),
    ("a,b\nx,2\nx,3\n", "a", [], "one class only"),
    ("a,b\n1,2\n2,3\n", "a", ["--categorical", "c"], "--categorical 'c' is not a column"),
    ("a,b,w\n1,2,1\n2,3,-1\n", "a", ["--weight", "w"], "row 2, weight column 'w': -1.0"),
    ("a,b,w\n1,2,0\n2,3,0\n", "a", ["--weight", "w"], "every weight is 0"),
    ("a,b,w\n1,2,x\n2,3,1\n", "a", ["--weight", "w"], "row 1, column 'w': 'x' is not a "
                                                         "number"),
    ("a,b,w\n1,2,\n2,3,1\n", "a", ["--weight", "w"], "weight column 'w': missing in row 1"),
    ("a,b\n1,2\n,3\n", "a", [], "target column 'a': missing in row 2"),
    ("a,b\n1,2\n2,3\n", "a", ["--numeric", "b", "--drop", "b"], "declared twice"),
])
def test_bad_tables_get_one_clear_line(tmp_path, capsys, text, target, flags, match):
    from bsvm_scale.cli import build_parser

    src = _csv(tmp_path / "t.csv", text)
    args = build_parser().parse_args(["datasets", "import", str(src), "--target", target,
                                      "--out", "o.h5", *flags])
    with pytest.raises(TableError, match=match):
        import_table(src, target, categorical=args.categorical, numeric=args.numeric,
                     drop=args.drop, weight=args.weight)
    assert main(["datasets", "import", str(src), "--target", target, "--out",
                 str(tmp_path / "o.h5"), *flags]) == 2
    assert not (tmp_path / "o.h5").exists()
    assert capsys.readouterr().err.count("\n") == 1


def test_shipped_data_found_below_an_installation_prefix(tmp_path, monkeypatch):
    import shutil
    import sys

    from bsvm_scale.datasets import real

    shipped = real.data_dir()
    prefix = tmp_path / "prefix"
    target = prefix.joinpath(*real.INSTALLED_SUBDIR)
    target.mkdir(parents=True)
    shutil.copy(shipped / "boston.h5", target)
    # a regular install: no data/ beside the package
    monkeypatch.setattr(real, "__file__", str(tmp_path / "site" / "bsvm_scale" / "datasets"
                                              / "real.py"))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    monkeypatch.delenv(real.ENV_VAR, raising=False)
    assert real.data_dir() == target
    assert real.load_real("boston").n_samples == 506


@pytest.mark.slow
def test_the_wheel_carries_the_data_files_and_their_licence(tmp_path):
    import subprocess
    import sys
    import zipfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                    "-q", "-w", str(tmp_path), str(root)], check=True)
    wheel = next(tmp_path.glob("bsvm_scale-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    for f in ("boston.h5", "pima.h5", "titanic.h5", "breast_cancer.h5", "digits.h5",
              "diamonds.h5", "README.md"):
        assert any(n.endswith(f"data/share/bsvm_scale/data/{f}") for n in names), f
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith("METADATA")))
    assert b"GPL" in meta and b"MIT" in meta and b"BSD-3-Clause" in meta


def test_id_column_is_kept_as_case_ids(tmp_path, capsys):
    from bsvm_scale.datasets import read_case_ids

    src = _csv(tmp_path / "t.csv", "id,a,y\ncust-7,1.5,0.1\ncust-2,2.5,0.2\ncust-9,3.5,0.3\n")
    assert main(["datasets", "import", str(src), "--target", "y", "--id", "id", "--out",
                 str(tmp_path / "t.h5")]) == 0
    assert "case ids from 'id'" in capsys.readouterr().out
    ds = read_dataset(tmp_path / "t.h5")
    assert ds.feature_names == ["a"] and ds.X[:, 0].tolist() == [1.5, 2.5, 3.5]
    assert ds.extra["case_id"].tolist() == ["cust-7", "cust-2", "cust-9"]
    assert ds.provenance["id_column"] == "id"
    np.testing.assert_array_equal(read_case_ids(tmp_path / "t.h5"), ds.extra["case_id"])
    numeric = import_table(_csv(tmp_path / "n.csv", "k,a,y\n10,1,0\n3,2,1\n"), "y", id_column="k")
    assert numeric.extra["case_id"].dtype == np.int64
    assert numeric.extra["case_id"].tolist() == [10, 3]
    np.save(tmp_path / "a.npy", np.array([[7.0, 1.0, 0.5], [8.0, 2.0, 0.25]]))
    ds = import_table(tmp_path / "a.npy", "x3", id_column="x1")
    assert ds.extra["case_id"].tolist() == [7, 8] and ds.X.tolist() == [[1.0], [2.0]]
    # without --id a text column is a categorical input (one-hot)
    assert main(["datasets", "import", str(src), "--target", "y", "--out",
                 str(tmp_path / "x.h5")]) == 0
    assert read_dataset(tmp_path / "x.h5").feature_names == ["id=cust-2", "id=cust-7",
                                                              "id=cust-9", "a"]
    plain = _csv(tmp_path / "p.csv", "a,y\n1,0\n2,1\n")
    assert main(["datasets", "import", str(plain), "--target", "y", "--out",
                 str(tmp_path / "p.h5")]) == 0
    assert read_case_ids(tmp_path / "p.h5") is None
    with pytest.raises(TableError, match=r"id column 'k' of .* repeats \[3\]"):
        import_table(_csv(tmp_path / "d.csv", "k,a,y\n3,1,0\n3,2,1\n"), "y", id_column="k")
    with pytest.raises(TableError, match="id column 'nope' is not a column"):
        import_table(src, "y", id_column="nope")
    with pytest.raises(TableError, match="id column and the target are the same column 'y'"):
        import_table(src, "y", id_column="y")


def test_id_and_target_indices_refer_to_the_file_as_given(tmp_path):
    """A numeric --target counts the columns of the file, id column included;
    integer ids keep all their digits; text that is not a canonical integer
    ("042") stays text."""
    A = np.array([[7, 1.0, 2.0, 0.5], [8, 3.0, 4.0, 0.25], [9, 5.0, 6.0, 0.125]])
    np.save(tmp_path / "a.npy", A)
    ds = import_table(tmp_path / "a.npy", 3, id_column=0)
    np.testing.assert_array_equal(ds.y, A[:, 3])
    np.testing.assert_array_equal(ds.X, A[:, 1:3])
    assert ds.extra["case_id"].tolist() == [7, 8, 9]
    big = _csv(tmp_path / "b.csv", "k,a,y\n12345678901234567,1,0\n12345678901234568,2,1\n")
    assert import_table(big, "y", id_column="k").extra["case_id"].tolist() == [
        12345678901234567, 12345678901234568]
    lead = _csv(tmp_path / "l.csv", "k,a,y\n042,1,0\n42,2,1\n")
    assert import_table(lead, "y", id_column="k").extra["case_id"].tolist() == ["042", "42"]
    np.save(tmp_path / "f.npy", np.array([[0.5, 1.0, 2.0], [1.5, 3.0, 4.0]]))
    with pytest.raises(TableError, match="must hold integers"):
        import_table(tmp_path / "f.npy", 2, id_column=0)
