"""``bsvm-scale results``: argument parsing in the CLI, the page from the
checkout's repro package, and the one-line error without it (an installed wheel)."""

import importlib
from pathlib import Path

import pytest

import bsvm_scale.cli as cli


def _one_line(err):
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bsvm-scale: error: "), err
    return lines[0]


def test_results_without_the_checkout_says_so_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(cli, "_repro_root", lambda: tmp_path)  # like site-packages
    assert cli.main(["results", "--from", str(tmp_path / "runs-export.tar.gz")]) == 2
    line = _one_line(capsys.readouterr().err)
    assert "the results page is a tool of the source checkout" in line
    assert str(tmp_path / "repro") in line and "Traceback" not in line


def test_results_needs_runs(capsys):
    assert cli.main(["results", "--out", "x"]) == 2
    assert "give RUN directories, or --from" in _one_line(capsys.readouterr().err)


def test_results_command_writes_the_page(tiny_run, tmp_path, capsys):
    import json

    _, rec = tiny_run
    bench = [tmp_path / "first.json", tmp_path / "second.json"]
    for f in bench:
        f.write_text(json.dumps({"rows": [{"n": 10, "x": 1.5}]}))
    assert cli.main(["results", rec["meta"]["run_dir"], "--out", str(tmp_path / "d"),
                     "--bench", str(bench[0]), "--bench", str(bench[1])]) == 0
    assert capsys.readouterr().out.strip() == f"wrote {tmp_path / 'd' / 'results.md'}"
    page = (tmp_path / "d" / "results.md").read_text()
    assert "`first.json`:" in page and "`second.json`:" in page  # repeated --bench adds
    assert f" --bench {bench[0]} {bench[1]} --out " in page
    assert cli.load_repro().__file__ == str(Path(cli.__file__).resolve().parents[1] / "repro"
                                            / "__init__.py")


def test_no_argument_parsing_outside_the_cli():
    root = Path(cli.__file__).resolve().parents[1]
    for folder in (root / "bsvm_scale", root / "repro"):
        for path in folder.rglob("*.py"):
            if path.name != "cli.py":
                assert "argparse" not in path.read_text(), path
    with pytest.raises(ImportError):  # the page generator moved to repro/
        importlib.import_module("bsvm_scale.pipeline.results")
