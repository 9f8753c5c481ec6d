"""DataFrames, dicts and :class:`Table` as inputs (:mod:`bsvm_scale.tables.frame`)."""

import numpy as np
import pytest

from bsvm_scale.tables import EncodedTable, Table, TableError, is_table
from bsvm_scale.tables.frame import fit_encoder, table_columns, transform_for

pd = pytest.importorskip("pandas")


def _frame():
    return pd.DataFrame({
        "n": pd.array([1, None, 3, 4], dtype="Int64"),       # nullable integers
        "f": [0.5, 1.5, np.nan, 2.0],
        "s": pd.array(["a", "b", None, "a"], dtype="string"),
        "cat": pd.Categorical(["x", "y", "x", "y"]),
        "b": [True, False, True, True],
        "yn": ["yes", "no", "no", None]})


def test_pandas_dtypes_become_cells_of_the_right_kind():
    cols = table_columns(_frame())
    assert np.isnan(cols["n"][1]) and cols["n"].dtype == np.float64
    assert cols["s"].dtype == object and cols["b"].dtype == bool
    enc, X = fit_encoder(Table(_frame(), missing="median"))
    kinds = {c.name: c.kind for c in enc.codings}
    assert kinds == {"n": "numeric", "f": "numeric", "s": "categorical", "cat": "categorical",
                     "b": "boolean", "yn": "boolean"}
    assert X.shape == (4, 1 + 1 + 3 + 2 + 1 + 3) and np.all(np.isfinite(X))


def test_declarations_override_inference_and_are_checked():
    frame = pd.DataFrame({"zip": [10001, 10002, 10001], "v": [1.0, 2.0, 3.0],
                          "note": ["a", "b", "c"]})
    enc, X = fit_encoder(Table(frame, categorical=["zip"], drop=["note"]))
    assert enc.feature_names_out == ["zip=10001", "zip=10002", "v"]
    with pytest.raises(TableError, match=r"declared columns \['nope'\] are not in the table"):
        fit_encoder(Table(frame, numeric=["nope"]))
    with pytest.raises(TableError, match="declared with two kinds"):
        Table(frame, numeric=["v"], drop=["v"])
    with pytest.raises(TableError, match="missing must be one of"):
        Table(frame, missing="mean")


def test_what_counts_as_a_table():
    import scipy.sparse as sp

    assert is_table(_frame()) and is_table({"a": [1]}) and is_table(Table({"a": [1]}))
    assert is_table(EncodedTable(np.zeros((1, 1)), None))
    assert not is_table(np.zeros((2, 2))) and not is_table(sp.dok_matrix((2, 2)))
    assert not is_table(pd.DataFrame(np.zeros((2, 2))))  # integer column names: an array


def test_prediction_inputs_by_name_or_by_position():
    frame = pd.DataFrame({"v": [1.0, 2.0], "c": ["a", "b"]})
    enc, X = fit_encoder(frame)
    np.testing.assert_array_equal(transform_for(enc, frame[["c", "v"]]), X)
    np.testing.assert_array_equal(transform_for(enc, np.array([[1.0, "a"], [2.0, "b"]],
                                                              dtype=object)), X)
    np.testing.assert_array_equal(transform_for(enc, EncodedTable(X, enc)), X)
    with pytest.raises(TableError, match=r"shape \(2, 3\); the model was fitted on a table"):
        transform_for(enc, np.zeros((2, 3), dtype=object))
    with pytest.raises(TableError, match="coded by another table coding"):
        transform_for(enc, EncodedTable(X, fit_encoder(frame[["v"]])[0]))
    with pytest.raises(TableError, match="column names must be text"):
        table_columns({1: [1.0]})


def test_pandas_category_and_bool_dtypes_declare_their_kind():
    """A ``category`` column is categorical even when its categories are numbers
    (codes); a declaration in :class:`Table` still wins."""
    frame = pd.DataFrame({"zip": pd.Categorical([10001, 10002, 10001]),
                          "b": pd.array([True, None, False], dtype="boolean"),
                          "v": [1.0, 2.0, 3.0]})
    enc, X = fit_encoder(frame)
    assert {c.name: c.kind for c in enc.codings} == {"zip": "categorical", "b": "boolean",
                                                     "v": "numeric"}
    assert enc.feature_names_out[:2] == ["zip=10001", "zip=10002"]
    enc2, _ = fit_encoder(Table(frame, numeric=["zip"]))
    assert enc2.codings[0].kind == "numeric"
