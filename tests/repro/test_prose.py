"""The page's prose file (repro/prose.py, repro/prose.md)."""

import pytest

from repro.prose import Prose, parse_prose
from repro.runs import PROTOCOLS


def test_entries_and_paragraphs():
    text = "intro, not used\n## a.b\nline one\nline two\n\nsecond para\n## c\n  x  \n"
    assert parse_prose(text) == {"a.b": "line one line two\n\nsecond para", "c": "x"}
    with pytest.raises(ValueError, match="key 'c' is given twice"):
        parse_prose("## c\nx\n## c\ny\n")
    with pytest.raises(ValueError, match="is not '## <key>'"):
        parse_prose("## two words\nx\n")


def test_missing_entry_names_the_key_and_file(tmp_path):
    p = tmp_path / "p.md"
    p.write_text("## only\nx\n")
    prose = Prose(p)
    assert prose["only"] == "x" and prose.get("other") is None
    with pytest.raises(KeyError, match="has no entry 'other'; add a '## other' section"):
        prose["other"]


def test_shipped_prose_has_every_entry_the_page_needs():
    prose = Prose()
    for key in PROTOCOLS:
        assert prose[f"{key}.title"].startswith(key.upper() + ".")
        assert prose[f"{key}.data"]
    for key in ("page.intro", "page.archive", "page.times", "page.no-bench", "r1.sweep",
                "c2.scaling", "c3.protocols", "c3.grid", "data.diamonds"):
        assert prose[key]
    assert len(prose.with_prefix("scope.")) == 9 and len(prose.with_prefix("note.")) == 11
    assert [k for k, _ in prose.with_prefix("note.")][:2] == ["note.r5-gpr-ard", "note.r5-box"]
