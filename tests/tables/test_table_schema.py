"""Column kinds, inference and cell parsing (:mod:`bsvm_scale.tables.schema`)."""

import numpy as np
import pytest

from bsvm_scale.tables.schema import (Column, Schema, TableError, canonical_text, flag_of,
                                      infer_kind, is_missing, parse_flags, parse_numbers)


def _obj(*cells):
    return np.array(cells, dtype=object)


@pytest.mark.parametrize("cells,kind", [
    (_obj("1", "2.5", "", "-3e2"), "numeric"),
    (_obj("yes", "No", "YES", None), "boolean"),
    (_obj("t", "f", "T"), "boolean"),
    (_obj("y", "n", "NA"), "boolean"),
    (_obj("true", "false", "maybe"), "categorical"),
    (_obj("Ideal", "Good", "1"), "categorical"),
    (_obj("1", "0", "1"), "numeric"),          # 1/0 are flags only when declared
    (np.array([1.0, np.nan, 3.0]), "numeric"),
    (np.array([True, False]), "boolean"),
    (_obj(True, False, None), "boolean"),
    (_obj("", "NA", None), "numeric"),          # no value: nothing says otherwise
])
def test_kinds_are_inferred_from_the_present_cells(cells, kind):
    assert infer_kind(cells) == kind


def test_missing_cells_and_canonical_category_text():
    assert all(is_missing(c) for c in ("", " NA ", "nan", "NULL", None, float("nan"), np.nan))
    assert not any(is_missing(c) for c in ("0", "no", "n/a2", 0.0))
    assert canonical_text(" 01 ") == canonical_text(1) == canonical_text(1.0) == "1"
    assert canonical_text("2.50") == canonical_text(2.5) == "2.5"
    assert canonical_text(True) == "true" and canonical_text(" Ideal ") == "Ideal"


def test_numbers_parse_with_gaps_and_refuse_text_naming_row_and_column():
    out = parse_numbers(_obj("1.5", "", "NA", " 4 "), "f.csv", "carat")
    np.testing.assert_array_equal(out, [1.5, np.nan, np.nan, 4.0])
    with pytest.raises(TableError, match=r"'f.csv' row 12, column 'carat': 'big' is not a "
                                         r"number.*declare it categorical"):
        parse_numbers(_obj("1", "big"), "'f.csv'", "carat", row_offset=10)
    with pytest.raises(TableError, match="row 2, column 'x': inf"):
        parse_numbers(_obj("1", "inf"), "t", "x")


def test_flags_parse_yes_no_words_and_declared_ones_and_zeros():
    np.testing.assert_array_equal(parse_flags(_obj("Yes", "n", "", "TRUE"), "t", "c", False),
                                  [1.0, 0.0, np.nan, 1.0])
    np.testing.assert_array_equal(parse_flags(_obj("1", "0", 1, 0.0), "t", "c", True),
                                  [1.0, 0.0, 1.0, 0.0])
    with pytest.raises(TableError, match="row 1, column 'c': '1' is not a yes/no value"):
        parse_flags(_obj("1"), "t", "c", False)
    assert flag_of("maybe") is None and np.isnan(flag_of(""))


def test_schema_checks_names_kinds_and_policies_and_round_trips():
    s = Schema((Column("a", "numeric"), Column("b", "target")), missing="median")
    assert Schema.from_dict(s.to_dict()) == s and [c.name for c in s.inputs] == ["a"]
    with pytest.raises(TableError, match="more than once"):
        Schema((Column("a", "numeric"), Column("a", "boolean")))
    with pytest.raises(TableError, match="kind 'text' is not one of"):
        Column("a", "text")
    with pytest.raises(TableError, match="missing must be one of"):
        Schema((), missing="mean")
