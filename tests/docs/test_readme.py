"""The README's Python examples run as written (from the repository root, with
the model file they save written to a temporary directory)."""

import os
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SECTIONS = ("Regression with error bars", "Classification with probabilities",
            "Tables as they are")


def _example(section):
    """The first indented code block after the heading ``## <section>...``."""
    text = (ROOT / "README.md").read_text()
    start = text.index(f"## {section}")
    lines, block = text[start:].split("\n")[1:], []
    for line in lines:
        if line.startswith("    "):
            block.append(line[4:])
        elif block and line.strip():
            break
    return "\n".join(block)


@pytest.mark.parametrize("section", SECTIONS)
def test_readme_example_runs(section, tmp_path, monkeypatch):
    if section.startswith("Tables"):
        pytest.importorskip("pandas")
    code = _example(section)
    assert code.count("\n") >= 5
    shutil.copytree(ROOT / "data" / "examples", tmp_path / "data" / "examples")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"README.md ({section})", "exec"), {})
    if "save_model" in code:
        assert os.path.getsize(tmp_path / "bsvr.h5") > 0


def test_readme_is_a_guide():
    """Reference material lives in docs/: the README stays short."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250
    assert re.search(r"python3 -m pytest -q tests", (ROOT / "README.md").read_text())


def test_no_code_cites_the_design_log():
    """Code cites the topical design notes; docs/design/history.md is a dated log."""
    cited = [str(p.relative_to(ROOT)) for p in (ROOT / "bsvm_scale").rglob("*.py")
             if "history.md" in p.read_text()]
    assert cited == []
