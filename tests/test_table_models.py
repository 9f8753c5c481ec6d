"""Every estimator on tables: DataFrames, raw CSV files and data sets imported
from them give the fits and predictions of the same data coded by hand."""

import h5py
import numpy as np
import pytest

from fast_estimators import all_estimators, name

from bsvm_scale import BayesianSVC, BayesianSVR, load_model, save_model
from bsvm_scale.cli import main
from bsvm_scale.datasets import import_table, read_dataset, write_dataset
from bsvm_scale.pipeline.run.scoring import predict_file
from bsvm_scale.tables import EncodedTable, Table, TableError

pd = pytest.importorskip("pandas")

CUTS = ["Fair", "Good", "Ideal"]


def _frame(n=60, seed=0):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({"carat": rng.uniform(0.2, 2.0, n).round(2),
                         "cut": rng.choice(CUTS, n),
                         "premium": rng.choice(["yes", "no"], n)})


def _by_hand(frame):
    """The coding written out: the number, one 0/1 column per sorted level, the flag."""
    onehot = (frame["cut"].to_numpy()[:, None] == np.array(CUTS)).astype(float)
    return np.column_stack([frame["carat"].to_numpy(float), onehot,
                            (frame["premium"] == "yes").to_numpy(float)])


def _target(frame, seed=1):
    rng = np.random.default_rng(seed)
    return (np.log(frame["carat"]).to_numpy() + (frame["cut"] == "Ideal").to_numpy()
            + rng.normal(0, 0.1, len(frame)))


def _labels(y):
    return np.where(y > np.median(y), "dear", "cheap")


FIXED_BSVR = dict(optimize=False, C=10.0, epsilon=0.05, kappa=0.5, kappa_b=10.0, beta=0.3)


@pytest.mark.parametrize("est", all_estimators(), ids=name)
def test_a_dataframe_fits_like_its_hand_coding_and_takes_columns_in_any_order(est):
    """The coding of a DataFrame is the hand coding (one 0/1 column per sorted
    level, 1/0 flags), and a fit on the DataFrame is the fit on that array with
    the coding's kernel scales (the models standardise the numbers only)."""
    from sklearn.base import clone, is_classifier

    frame = _frame()
    y = _labels(_target(frame)) if is_classifier(est) else _target(frame)
    a = clone(est).fit(frame, y)
    assert list(a.feature_names_in_) == ["carat", "cut", "premium"] and a.n_features_in_ == 3
    np.testing.assert_array_equal(
        a.encoder_.transform({c: frame[c].to_numpy(object) for c in frame}).X, _by_hand(frame))
    b = clone(est).fit(EncodedTable(_by_hand(frame), a.encoder_), y)
    test = _frame(20, seed=5)
    out = a.predict(test)
    np.testing.assert_array_equal(out, b.predict(_by_hand(test)))
    np.testing.assert_array_equal(a.predict(test[["premium", "carat", "cut"]]), out)
    with pytest.raises(TableError, match=r"lacks the input column \['cut'\]"):
        a.predict(test[["carat", "premium"]])


def test_coded_columns_keep_unit_distance_while_numbers_are_standardised():
    frame = _frame()
    m = BayesianSVR(**FIXED_BSVR).fit(frame, _target(frame))
    Xs = (_by_hand(frame) - m.x_mean_) / m.x_scale_
    np.testing.assert_allclose(Xs[:, 0].std(), 1.0)
    cut = frame["cut"].to_numpy()
    d2 = ((Xs[:, None, 1:4] - Xs[None, :, 1:4]) ** 2).sum(axis=2)
    np.testing.assert_allclose(d2, (cut[:, None] != cut[None, :]).astype(float), atol=1e-15)
    flag = frame["premium"].to_numpy()
    np.testing.assert_array_equal(np.abs(Xs[:, None, 4] - Xs[None, :, 4]),
                                  (flag[:, None] != flag[None, :]).astype(float))


def test_a_model_file_keeps_the_coding_and_predicts_from_raw_rows(tmp_path):
    frame = _frame()
    m = BayesianSVR(**FIXED_BSVR).fit(Table(frame, unknown="ignore"), _target(frame))
    save_model(m, tmp_path / "m.h5")
    back = load_model(tmp_path / "m.h5")
    assert back.encoder_ == m.encoder_ and list(back.feature_names_in_) == list(
        m.feature_names_in_)
    test = _frame(15, seed=9)
    test.loc[3, "cut"] = "Premium"  # unseen: the model's policy (ignore) codes it unknown
    mean, sd = back.predict(test, return_std=True)
    np.testing.assert_array_equal(mean, m.predict(test))
    np.testing.assert_array_equal(sd, m.predict(test, return_std=True)[1])
    with pytest.raises(TableError, match=r"column 'cut': the value \['Premium'\]"):
        back.predict(Table(test, unknown="error"))


def test_csv_to_data_set_to_model_to_raw_predictions_equals_the_hand_coding(tmp_path):
    frame = _frame(80)
    frame["price"] = _target(frame)
    frame.to_csv(tmp_path / "train.csv", index=False)
    ds = import_table(tmp_path / "train.csv", "price")
    write_dataset(ds, tmp_path / "train.h5")
    ds = read_dataset(tmp_path / "train.h5")
    np.testing.assert_array_equal(ds.X, _by_hand(frame))
    model = BayesianSVR(**FIXED_BSVR).fit(ds.table(), ds.y)
    save_model(model, tmp_path / "m.h5")
    new = _frame(30, seed=3)
    new.to_csv(tmp_path / "new.csv", index=False)
    predict_file(tmp_path / "m.h5", tmp_path / "new.csv", tmp_path / "p.h5", progress=False,
                 chunk_size=256)
    # the same design matrix coded by hand, fitted with the coding's kernel scales
    by_hand = BayesianSVR(**FIXED_BSVR).fit(EncodedTable(_by_hand(frame), ds.encoder),
                                            frame["price"].to_numpy())
    save_model(by_hand, tmp_path / "hand.h5")
    np.save(tmp_path / "new.npy", _by_hand(new))
    predict_file(tmp_path / "hand.h5", tmp_path / "new.npy", tmp_path / "q.h5", progress=False)
    with h5py.File(tmp_path / "p.h5") as f, h5py.File(tmp_path / "q.h5") as g:
        for key in ("mean", "std_f", "std_y"):
            np.testing.assert_array_equal(f[key][...], g[key][...])
        assert f.attrs["n_unknown"] == 0
        mean = f["mean"][...]
    # the raw DataFrame and the raw CSV give the same predictions
    np.testing.assert_array_equal(load_model(tmp_path / "m.h5").predict(new), mean)


def test_text_labels_go_in_and_come_out_as_text(tmp_path):
    frame = _frame(80)
    frame["grade"] = _labels(_target(frame))
    frame.to_csv(tmp_path / "train.csv", index=False)
    assert main(["datasets", "import", str(tmp_path / "train.csv"), "--target", "grade",
                 "--out", str(tmp_path / "train.h5")]) == 0
    ds = read_dataset(tmp_path / "train.h5")
    assert ds.task == "classification" and ds.y.dtype.kind == "U"
    m = BayesianSVC(optimize=False, kappa0=2.0, kappa=0.5, kappa_b=1.0).fit(ds.table(), ds.y)
    assert m.classes_.tolist() == ["cheap", "dear"]
    save_model(m, tmp_path / "m.h5")
    frame.drop(columns="grade").head(25).to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(tmp_path / "m.h5"), str(tmp_path / "new.csv"), "--out",
                 str(tmp_path / "p.h5"), "--no-progress"]) == 0
    with h5py.File(tmp_path / "p.h5") as f:
        labels = f["label"].asstr()[...]
        proba = f["proba"][...]
        assert list(f["proba"].attrs["classes"]) == ["cheap", "dear"]
        assert list(f.attrs["classes"]) == ["cheap", "dear"]
    np.testing.assert_array_equal(labels, m.predict(frame.head(25)))
    np.testing.assert_allclose(proba, m.predict_proba(frame.head(25)), rtol=1e-12, atol=1e-15)


def test_missing_labels_and_text_for_array_models_are_clear_errors():
    frame = _frame()
    y = _labels(_target(frame)).astype(object)
    y[[4, 9]] = None
    with pytest.raises(ValueError, match="y has missing values in rows 5, 10"):
        BayesianSVC(optimize=False, kappa0=1.0, kappa=1.0, kappa_b=1.0).fit(frame, y)
    m = BayesianSVR(**FIXED_BSVR).fit(_by_hand(frame), _target(frame))
    with pytest.raises(ValueError, match="fitted on a numeric array, so X must be numeric"):
        m.predict(frame)


def test_unseen_category_in_a_raw_csv_is_refused_or_counted(tmp_path):
    frame = _frame(50)
    m = BayesianSVR(**FIXED_BSVR).fit(frame, _target(frame))
    save_model(m, tmp_path / "m.h5")
    new = _frame(10, seed=4)
    new.loc[[2, 7], "cut"] = "Premium"
    new["id"] = [f"r{i}" for i in range(10)]
    new.to_csv(tmp_path / "new.csv", index=False)
    assert main(["predict", str(tmp_path / "m.h5"), str(tmp_path / "new.csv"), "--out",
                 str(tmp_path / "p.h5"), "--no-progress"]) == 2
    assert not (tmp_path / "p.h5").exists()
    out = predict_file(tmp_path / "m.h5", tmp_path / "new.csv", tmp_path / "p.h5",
                       unknown="ignore", progress=False, id_column="id")
    assert out["n_unknown"] == 2
    with h5py.File(tmp_path / "p.h5") as f:
        assert f.attrs["n_unknown"] == 2 and '"Premium": 2' in f.attrs["unknown_values"]
        np.testing.assert_array_equal(f["mean"][...],
                                      m.predict(Table(new.drop(columns="id"), unknown="ignore")))


def test_missing_numbers_under_the_drop_policy_get_no_prediction(tmp_path):
    frame = _frame(60)
    frame["price"] = _target(frame)
    frame.loc[[3, 11], "carat"] = np.nan
    frame.to_csv(tmp_path / "t.csv", index=False)
    ds = import_table(tmp_path / "t.csv", "price", missing="drop")
    assert ds.n_samples == 58 and ds.provenance["rows_dropped"] == 2
    m = BayesianSVR(**FIXED_BSVR).fit(ds.table(), ds.y)
    save_model(m, tmp_path / "m.h5")
    frame.drop(columns="price").to_csv(tmp_path / "new.csv", index=False)
    out = predict_file(tmp_path / "m.h5", tmp_path / "new.csv", tmp_path / "p.h5",
                       progress=False)
    assert out["n_without_prediction"] == 2
    with h5py.File(tmp_path / "p.h5") as f:
        mean = f["mean"][...]
    assert np.isnan(mean[[3, 11]]).all() and np.isfinite(np.delete(mean, [3, 11])).all()
    np.testing.assert_array_equal(np.delete(mean, [3, 11]),
                                  m.predict(frame.drop(index=[3, 11]).drop(columns="price")))
