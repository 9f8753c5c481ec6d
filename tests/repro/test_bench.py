"""Peer-benchmark tables and figures (repro/bench.py)."""

import json
import re
from pathlib import Path

import pytest

from repro import write_results
from repro.bench import bench_exponents, bench_ratios, figure_name, section
from repro.figures import Figures
from repro.prose import PROSE_FILE, Prose

REPO = Path(__file__).resolve().parents[2]


def test_bench_exponents_per_series():
    n = [1000, 2000, 4000, 8000]
    rows = [{"bench": "map", "n": k, "ours_s": 2e-6 * k ** 2, "ratio_s": 1.0,
             "gp": {"fit_s": 1e-9 * k ** 3, "peak_mb": 8e-6 * k ** 2}} for k in n]
    rows += [{"bench": "fit", "n": k, "fit_s": 1.0} for k in n[:2]]  # too few sizes
    got = {(g, c): a for g, c, sizes, a in bench_exponents(rows)}
    assert set(got) == {("bench=map", "ours_s"), ("bench=map", "gp.fit_s"),
                        ("bench=map", "gp.peak_mb")}
    assert got[("bench=map", "ours_s")] == pytest.approx(2.0)
    assert got[("bench=map", "gp.fit_s")] == pytest.approx(3.0)
    assert got[("bench=map", "gp.peak_mb")] == pytest.approx(2.0)
    ratios = {(g, c): (lo, med, hi) for g, c, sizes, lo, med, hi in bench_ratios(rows)}
    assert ratios == {("bench=map", "ratio_s"): (1.0, 1.0, 1.0)}
    rows[1]["ratio_s"] = 3.0
    assert bench_ratios(rows)[0][3:] == [1.0, 1.0, 3.0]


def test_tables_carry_only_the_columns_that_apply(tmp_path):
    """One table per `bench` value, each with the columns its rows fill; nested
    values as columns; no figure without a series of three sizes."""
    f = tmp_path / "bench_mixed.json"
    f.write_text(json.dumps({"rows": [
        {"bench": "a", "n": 10, "x_s": 1.0, "ratio_x": 2.0},
        {"bench": "b", "n": 10, "y_s": 3.0, "gp": {"fit_s": 4.0}, "note": None},
        {"bench": "a", "n": 20, "x_s": 2.0, "ratio_x": 1.5}]}))
    lines = section([f], Figures(tmp_path / "out"), Prose())
    text = "\n".join(lines)
    assert "`bench_mixed.json`, rows of `a`:\n\n| n | x_s | ratio_x |\n|---|---|---|\n" \
           "| 10 | 1 | 2 |\n| 20 | 2 | 1.5 |" in text
    assert "`bench_mixed.json`, rows of `b`:\n\n| n | y_s | gp.fit_s |" in text
    assert "png" not in text and not (tmp_path / "out" / "figures").exists()
    assert "| bench_mixed.json | bench=a | ratio_x | 10-20 | 1.5 | 1.75 | 2 |" in text


def test_figure_names_words_and_missing_words(tmp_path):
    assert figure_name("bench_btsvc") == "bench_btsvc" and figure_name("svm") == "bench_svm"
    rows = [{"bench": "map", "n": k, "ours_s": 1e-6 * k ** 2, "peak_mb": 0.01 * k}
            for k in (1000, 2000, 4000)]
    f = tmp_path / "mine.json"
    f.write_text(json.dumps({"rows": rows}))
    with pytest.raises(KeyError, match="no words for the benchmark column 'ours_s' of mine"):
        section([f], Figures(tmp_path / "o"), Prose())
    prose = tmp_path / "prose.md"
    prose.write_text(PROSE_FILE.read_text() + "\n## series.mine.ours_s\nour solver\n\n"
                     "## series.peak_mb\nmemory of the fit\n\n## group.bench=map\none solve\n\n"
                     "## bench.mine\nMy benchmark\n")
    figs = Figures(tmp_path / "o")
    lines = section([f], figs, Prose(prose))
    assert "![mine: seconds and peak memory against n](figures/bench_mine.png)" in lines
    assert figs.written == ["bench_mine"]
    assert (tmp_path / "o" / "figures" / "bench_mine.png").stat().st_size > 1000


def test_results_page_includes_benchmark_rows(tiny_run):
    tmp, rec = tiny_run
    bench = tmp / "bench.json"
    bench.write_text(json.dumps({"rows": [{"n": 2000, "ratio": 1.25}, {"n": 5000, "peak_mb": 7}],
                                 "info": {}}))
    page = write_results([Path(rec["meta"]["run_dir"])], tmp / "docs_b",
                         bench_files=[bench]).read_text()
    assert "## Peer benchmarks" in page
    assert "| n | ratio | peak_mb |" in page
    assert "| 2000 | 1.25 | - |" in page and "| 5000 | - | 7 |" in page
    assert "bench.png" not in page  # no series of three sizes: no figure
    assert "--bench " in page


def _regenerate_bench_files():
    """The benchmark files docs/regenerate.sh puts on the page."""
    text = (REPO / "docs" / "regenerate.sh").read_text()
    return [REPO / m for m in re.findall(r"docs/bench/bench_\w+\.json", text)]


def test_committed_benchmarks_have_words_and_titles(tmp_path):
    files = _regenerate_bench_files()
    assert [f.name for f in files] == ["bench_bsvr_infer.json", "bench_bsvr_map.json",
                                       "bench_btsvc.json", "bench_btsvc_large.json",
                                       "bench_gpr.json", "bench_svm.json"]
    figs = Figures(tmp_path)
    lines = section(files, figs, Prose())
    assert figs.written == ["bench_bsvr_infer", "bench_bsvr_map", "bench_btsvc", "bench_gpr",
                            "bench_svm"]
    assert not any("bench_bench" in ln for ln in lines)
    tables = _tables(lines)
    assert len(tables) >= 9  # bench_btsvc.json and bench_btsvc_large.json: 3 tables each
    for t in tables:  # every column shown has a value in some row
        assert all(any(c != "-" for c in col) for col in zip(*t[1:])), t[0]
    btsvc = [t for t in tables if "smo_cold_s" in t[0] or "ratio_btsvc_over_libsvm" in t[0]]
    assert btsvc and max(len(t[0]) for t in btsvc) <= 10


def _tables(lines):
    """The markdown tables of ``lines`` as lists of rows of cells (header first)."""
    out, cur = [], []
    for ln in lines + [""]:
        if ln.startswith("| "):
            if not ln.startswith("|---"):
                cur.append([c.strip() for c in ln.strip().strip("|").split("|")])
        elif cur:
            out.append(cur)
            cur = []
    return out
