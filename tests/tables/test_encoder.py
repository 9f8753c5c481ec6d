"""The coding of input columns (:class:`bsvm_scale.tables.TableEncoder`)
against an obvious NumPy one-hot reference."""

import numpy as np
import pytest

from bsvm_scale.tables import TableEncoder, TableError
from bsvm_scale.tables.encoder import MISSING_LEVEL
from bsvm_scale.tables.frame import infer_schema


def _obj(*cells):
    return np.array(cells, dtype=object)


def _table(rng, n=50):
    return {"x": rng.normal(size=n),
            "cut": rng.choice(np.array(["Ideal", "Good", "Fair"], dtype=object), n),
            "flag": rng.choice(np.array(["yes", "no"], dtype=object), n),
            "code": rng.choice(np.array(["7", "07", "3"], dtype=object), n)}


def _reference(cols, levels):
    """One-hot by hand: the number, one 0/1 column per level, the flag."""
    blocks = [cols["x"][:, None]]
    for name in ("cut",):
        blocks.append((np.asarray(cols[name])[:, None] == np.array(levels[name])).astype(float))
    blocks.append((cols["flag"] == "yes").astype(float)[:, None])
    blocks.append((cols["code"].astype(int)[:, None] == np.array([3, 7])).astype(float))
    return np.hstack(blocks)


def test_one_hot_layout_groups_and_names_match_a_hand_coding():
    cols = _table(np.random.default_rng(0))
    schema = infer_schema(cols, {"code": "categorical"})
    enc = TableEncoder.fit(cols, schema)
    X = enc.transform(cols).X
    np.testing.assert_array_equal(X, _reference(cols, {"cut": ["Fair", "Good", "Ideal"]}))
    assert enc.feature_names_out == ["x", "cut=Fair", "cut=Good", "cut=Ideal", "flag",
                                     "code=3", "code=7"]
    assert enc.groups.tolist() == [0, 1, 1, 1, 2, 3, 3] and enc.tied
    assert enc.input_names == ["x", "cut", "flag", "code"]


def test_columns_in_any_order_and_extra_columns_give_the_same_rows():
    cols = _table(np.random.default_rng(1))
    enc = TableEncoder.fit(cols, infer_schema(cols))
    shuffled = {k: cols[k] for k in ("code", "flag", "x", "cut")} | {"other": cols["x"]}
    np.testing.assert_array_equal(enc.transform(shuffled).X, enc.transform(cols).X)


def test_missing_category_is_a_level_and_missing_numbers_follow_the_policy():
    cols = {"x": np.array([1.0, np.nan, 3.0, 5.0]), "c": _obj("a", None, "b", "")}
    with pytest.raises(TableError, match=r"column 'x': missing numbers in row 2"):
        TableEncoder.fit(cols, infer_schema(cols))
    enc = TableEncoder.fit(cols, infer_schema(cols, missing="median"))
    assert enc.levels("c") == ["a", "b", MISSING_LEVEL]
    X = enc.transform(cols).X
    np.testing.assert_array_equal(X[:, 0], [1.0, 3.0, 3.0, 5.0])   # median of 1, 3, 5
    np.testing.assert_array_equal(X[:, 1:], [[1, 0, 0], [0, 0, 1], [0, 1, 0], [0, 0, 1]])


def test_unseen_categories_are_refused_or_counted_as_unknown():
    cols = {"c": _obj("a", "b"), "f": _obj("yes", "no")}
    enc = TableEncoder.fit(cols, infer_schema(cols))
    new = {"c": _obj("a", "z", "z", None), "f": _obj("no", "maybe", "", "yes")}
    with pytest.raises(TableError, match=r"column 'c': the values \['<missing>', 'z'\] \(in "
                                         r"rows 2, 3, 4\) were not seen in training"):
        enc.transform(new)
    out = enc.transform(new, unknown="ignore")
    np.testing.assert_array_equal(out.X, [[1, 0, 0], [0, 0, 0.5], [0, 0, 0.5], [0, 0, 1]])
    assert out.unknown == {"c": {"z": 2, MISSING_LEVEL: 1}, "f": {"maybe": 1,
                                                                  MISSING_LEVEL: 1}}
    assert out.n_unknown == 5


def test_boolean_with_missing_in_training_is_coded_like_a_category():
    cols = {"f": _obj("yes", "no", None)}
    enc = TableEncoder.fit(cols, infer_schema(cols))
    assert enc.feature_names_out == ["f=false", "f=true", f"f={MISSING_LEVEL}"]
    np.testing.assert_array_equal(enc.transform({"f": _obj("Y", "F", "")}).X,
                                  np.eye(3)[[1, 0, 2]])


def test_coding_round_trips_through_json_and_names_a_lacking_column():
    cols = _table(np.random.default_rng(2))
    enc = TableEncoder.fit(cols, infer_schema(cols, missing="median"))
    again = TableEncoder.from_json(enc.to_json())
    assert again == enc
    np.testing.assert_array_equal(again.transform(cols).X, enc.transform(cols).X)
    with pytest.raises(TableError, match=r"lacks the input column \['flag'\]"):
        enc.transform({k: v for k, v in cols.items() if k != "flag"})
    with pytest.raises(TableError, match="not a stored table coding"):
        TableEncoder.from_json('{"schema": 1}')
