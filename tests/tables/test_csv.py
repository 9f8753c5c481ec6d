"""CSV files as columns of text (:mod:`bsvm_scale.tables.csv`)."""

import gzip

import numpy as np
import pytest

from bsvm_scale.tables import TableError
from bsvm_scale.tables.csv import csv_header, iter_csv_chunks, read_csv_columns


def test_columns_chunks_quotes_empty_lines_bom_and_gzip(tmp_path):
    text = '\ufeffa,"b, c",d\n1,"x, y",\n\n2,z,t\n3,w,u\n'
    (tmp_path / "t.csv").write_text(text, encoding="utf-8")
    with gzip.open(tmp_path / "t.csv.gz", "wt", encoding="utf-8") as fh:
        fh.write(text)
    for name in ("t.csv", "t.csv.gz"):
        header, cols = read_csv_columns(tmp_path / name)
        assert header == ["a", "b, c", "d"]
        assert cols["b, c"].tolist() == ["x, y", "z", "w"] and cols["d"].tolist() == ["", "t", "u"]
    chunks = list(iter_csv_chunks(tmp_path / "t.csv", 2, usecols=["d", "a"]))
    assert [start for start, _ in chunks] == [0, 2] and list(chunks[0][1]) == ["d", "a"]
    assert np.concatenate([c["a"] for _, c in chunks]).tolist() == ["1", "2", "3"]


@pytest.mark.parametrize("raw,match", [
    (b"a,b\n1,2\n3\n", r"line 3: 1 fields, the header has 2"),
    (b"a,b\n1,2\n3,\xe9t\xe9\n", r"line 3: bytes that are not UTF-8.*iconv"),
    (b"a,\n1,2\n", "header row naming every column"),
])
def test_bad_files_are_one_line_naming_file_and_line(tmp_path, raw, match):
    path = tmp_path / "bad.csv"
    path.write_bytes(raw)
    with pytest.raises(TableError, match=match) as info:
        read_csv_columns(path)
    assert "bad.csv" in str(info.value) and "\n" not in str(info.value)


def test_a_lacking_column_is_named(tmp_path):
    (tmp_path / "t.csv").write_text("a,b\n1,2\n")
    assert csv_header(tmp_path / "t.csv") == ["a", "b"]
    with pytest.raises(TableError, match=r"lacks the columns \['c'\]"):
        list(iter_csv_chunks(tmp_path / "t.csv", 10, usecols=["c"]))
