"""The one-command peer benchmark runner (benchmarks/peers.py), smoke-run on
its smallest setting: it must run the scripts it lists and leave JSON rows
that the results page can include."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.bench


def test_peer_runner_writes_rows_for_the_results_page(tmp_path):
    sys.path.insert(0, str(REPO / "benchmarks"))
    try:
        import peers
    finally:
        sys.path.pop(0)
    names = [name for name, argv in peers.commands(tmp_path)]
    assert names == ["bench_bsvr_map", "bench_bsvr_infer", "bench_svm", "bench_btsvc", "bench_gpr"]
    for _, argv in peers.commands(tmp_path):
        assert Path(argv[1]).exists()
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "peers.py"), "--out",
                          str(tmp_path), "--quick", "--only", "bench_svm"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    rows = json.loads((tmp_path / "bench_svm.json").read_text())["rows"]
    assert {r["n"] for r in rows} == {2000, 5000}
    assert all(r["ratio_ours_over_libsvm"] > 0 for r in rows)


@pytest.mark.parametrize("argv,key", [
    (["predict", "--rows", "3000", "--n-fit", "300"], "predict"),
    (["rare", "--n-train", "400", "--seeds", "0"], "rare"),
])
def test_table_benchmarks_run_on_their_smallest_setting(tmp_path, argv, key):
    """benchmarks/bench_tables.py (issue 32's figures) at tiny sizes."""
    out = subprocess.run([sys.executable, str(REPO / "benchmarks" / "bench_tables.py"), *argv,
                          "--out", str(tmp_path / "b.json")],
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads((tmp_path / "b.json").read_text())[key]
    if key == "predict":
        assert result["rows"] == 3000 and all(r["seconds"] > 0 for r in result["runs"])
    else:
        row = result[0]
        for model in ("btsvc", "btsvc_balanced", "sklearn_svc_balanced_platt"):
            assert 0.0 <= row[model]["balanced_accuracy"] <= 1.0 and row[model]["nll"] > 0
