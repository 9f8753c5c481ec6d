"""Evidence-grid tasks (bsvm_scale/pipeline/run/evidence_grid.py): the pipeline
key, the grid itself, the task run by the executor and its resumption."""

from pathlib import Path

import numpy as np
import pytest

from bsvm_scale.datasets import generate
from bsvm_scale.pipeline.run.checkpoint import read_record, save_checkpoint
from bsvm_scale.pipeline.spec.config import PipelineError, load_pipeline, parse_pipeline
from bsvm_scale.pipeline.run.evidence_grid import (GRID_DEFAULTS, compute_grid, grid_center,
                                               run_grid_task)
from bsvm_scale.pipeline.run.executor import run_pipeline

PIPELINE = """
[run]
name = "grid_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "twonorm"
generator = "twonorm"
n = 120
n_train = 60
partitions = 2

[[models]]
kind = "btsvc"
name = "BTSVC"
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 3 }} }}
{grid}

[[models]]
kind = "btsvc"
name = "BTSVC-A"
fix_from = {{ model = "BTSVC", partitions = 2 }}
"""
GRID = "evidence_grid = { points = 3, decades_kappa0 = 1.0, decades_kappa = 0.5 }"


def _problems(tmp_path, grid):
    text = PIPELINE.format(out=str(tmp_path), grid=grid)
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, tmp_path / "p.toml")
    return "\n".join(info.value.problems)


def test_grid_key_defaults_and_validation(tmp_path):
    p = parse_pipeline(PIPELINE.format(out=str(tmp_path), grid="evidence_grid = {}"),
                       tmp_path / "p.toml")
    assert p.models[0].evidence_grid == GRID_DEFAULTS and p.models[1].evidence_grid is None
    assert GRID_DEFAULTS == {"points": 13, "decades_kappa0": 2.0, "decades_kappa": 1.5,
                             "partitions": 1}
    for grid, needle in (("evidence_grid = { points = 1 }", "evidence_grid.points: must be >= 2; got 1"),
                         ("evidence_grid = { points = 2.5 }", "points: must be an integer; got 2.5"),
                         ("evidence_grid = { decades_kappa = 0 }",
                          "decades_kappa: must be > 0 (decades either side of the optimum); got 0"),
                         ("evidence_grid = { partitions = 0 }", "partitions: must be >= 1; got 0"),
                         ("evidence_grid = { partitions = true }", "partitions: must be an integer"),
                         ("evidence_grid = { colour = 1 }",
                          "evidence_grid.colour: unknown key; allowed: points, decades_kappa0, "
                          "decades_kappa, partitions"),
                         ('evidence_grid = "yes"', "evidence_grid: must be a table")):
        assert needle in _problems(tmp_path, grid), grid
    ard = PIPELINE.format(out=str(tmp_path), grid="evidence_grid = {}").replace(
        "settings = { optimizer_options = { maxiter = 3 } }", "settings = { ard = true }")
    with pytest.raises(PipelineError, match="ard = false"):
        parse_pipeline(ard, tmp_path / "p.toml")
    other = PIPELINE.format(out=str(tmp_path), grid="") + \
        '[[models]]\nkind = "gpc"\nname = "G"\nevidence_grid = {}\n'
    with pytest.raises(PipelineError, match="only btsvc models take an evidence grid"):
        parse_pipeline(other, tmp_path / "p.toml")
    fixed = PIPELINE.format(out=str(tmp_path), grid="").replace(
        'fix_from = { model = "BTSVC", partitions = 2 }',
        'fix_from = { model = "BTSVC", partitions = 2 }\nevidence_grid = {}')
    with pytest.raises(PipelineError, match="a fix_from model has no evidence optimum"):
        parse_pipeline(fixed, tmp_path / "p.toml")


def test_grid_is_centred_on_the_evidence_optimum():
    from bsvm_scale import BayesianSVC

    ds = generate("twonorm", 500, 3)
    X, y, Xt, yt = ds.X[:200], ds.y[:200], ds.X[200:], ds.y[200:]
    m = BayesianSVC(n_starts=1).fit(X, y)
    g = compute_grid(X, y, Xt, yt, m.hyperparameters_,
                     {"points": 5, "decades_kappa0": 0.5, "decades_kappa": 0.5})
    ev, err = g["neg_log_evidence"], g["error_rate"]
    assert ev.shape == err.shape == g["n_sv"].shape == (5, 5) and g["rows"] == 5
    np.testing.assert_allclose(g["log10_kappa0"][2], np.log10(m.hyperparameters_["kappa0"]))
    np.testing.assert_allclose(g["log10_kappa"][2], np.log10(m.hyperparameters_["kappa"]))
    np.testing.assert_allclose(np.diff(g["log10_kappa0"]), 0.25)
    assert g["kappa_b"] == m.hyperparameters_["kappa_b"]
    # the centre is the fitted point. (It need not be a grid minimum: the
    # Laplace evidence (5.35) drops by a jump whenever a case leaves the SV
    # set, where Lambda_ii falls from pi^2/8 to 0, while the gradient (5.36)
    # follows the smooth pieces between jumps; the grid solves each point
    # cold, the fit warm, so the two MAP solutions can sit on either side
    # of such a jump.)
    assert ev[2, 2] == pytest.approx(-m.log_evidence_, abs=0.1)
    assert np.all(np.isfinite(ev)) and np.ptp(ev) > 1.0
    assert np.all((err >= 0) & (err <= 1)) and err[2, 2] < 0.1
    # rows run along kappa0 at fixed kappa: a larger kappa0 at a tiny kappa
    # (nearly linear covariance) leaves the test error nearly unchanged
    assert np.ptp(err[2]) < 0.05
    assert np.all((g["n_sv"] >= 1) & (g["n_sv"] <= 200))


def test_grid_center_needs_one_kappa():
    spec = {"task_id": "t"}
    deps = [{"task_id": "a", "log_evidence": -3.0,
             "hyperparameters": {"kappa0": 1.0, "kappa": 0.5, "kappa_b": 2.0}},
            {"result": {"task_id": "b", "log_evidence": -1.0,
                        "hyperparameters": {"kappa0": 4.0, "kappa": 0.25, "kappa_b": 8.0}}}]
    assert grid_center(spec, deps) == {"kappa0": 4.0, "kappa": 0.25, "kappa_b": 8.0, "task": "b"}
    ard = [{"task_id": "a", "log_evidence": 0.0,
            "hyperparameters": {"kappa0": 1.0, "kappa": np.ones(3), "kappa_b": 1.0}}]
    with pytest.raises(ValueError, match="one kappa.*remove evidence_grid"):
        grid_center(spec, ard)
    with pytest.raises(ValueError, match="none were given"):
        grid_center(spec, [])


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grid")
    path = tmp / "grid_tiny.toml"
    path.write_text(PIPELINE.format(out=str(tmp / "runs"), grid=GRID))
    rec = run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)
    return path, rec


def test_grid_task_runs_in_the_pipeline(grid_run):
    """A 3 x 3 grid on 60 cases: one task per data set after BTSVC's starts on
    partition 0, centred on the best start, kept apart from the model's results."""
    from bsvm_scale.pipeline.outputs.export import read_checked

    path, rec = grid_run
    assert rec["meta"]["status"] == "complete"
    tid = "twonorm__BTSVC__p000__grid"
    assert sorted(t for t in rec["tasks"] if t.endswith("__grid")) == [tid]
    assert rec["meta"]["n_tasks"] == 4 + 2 + 1
    task_dir = Path(rec["meta"]["run_dir"]) / "tasks" / tid
    assert sorted(p.name for p in task_dir.iterdir()) == ["key", "result.h5"]  # no model
    g = rec["grids"]["twonorm"]["BTSVC"]["p000"]
    best = rec["results"]["twonorm"]["BTSVC"]["p000"]
    assert g["center_task"] == best["best_task"] and g["task"] == tid
    assert g["center"] == {k: best["hyperparameters"][k] for k in ("kappa0", "kappa", "kappa_b")}
    # the same numbers as the grid computed here from the run's data
    info = rec["datasets"]["twonorm"]
    _, ds = read_checked(Path(rec["meta"]["run_dir"]), "twonorm", info, extra=False)
    tr, te = (np.asarray(info["partitions"][0][k]) for k in ("train", "test"))
    ref = compute_grid(ds.X[tr], ds.y[tr], ds.X[te], ds.y[te], g["center"], g["options"])
    for k in ("log10_kappa0", "log10_kappa", "neg_log_evidence", "error_rate", "n_sv"):
        np.testing.assert_allclose(g[k], ref[k], rtol=1e-9, err_msg=k)
    assert g["neg_log_evidence"].shape == (3, 3) and g["resumed_rows"] == 0
    # BTSVC's own results and protocol A are unchanged by the grid task
    assert sorted(rec["results"]["twonorm"]) == ["BTSVC", "BTSVC-A"]
    assert sorted(rec["results"]["twonorm"]["BTSVC"]) == ["p000", "p001"]


def test_grid_task_is_kept_and_resumed(grid_run):
    """Run again: nothing recomputed. With its result gone and a checkpoint of
    two rows left, the task computes the third row only."""
    path, rec = grid_run
    again = run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)
    assert again["meta"]["n_skipped"] == again["meta"]["n_tasks"] == 7
    np.testing.assert_array_equal(again["grids"]["twonorm"]["BTSVC"]["p000"]["neg_log_evidence"],
                                  rec["grids"]["twonorm"]["BTSVC"]["p000"]["neg_log_evidence"])
    task_dir = Path(rec["meta"]["run_dir"]) / "tasks" / "twonorm__BTSVC__p000__grid"
    res = read_record(task_dir / "result.h5")
    part = dict(res["evidence_grid"], rows=2)
    part["neg_log_evidence"] = np.where(np.arange(3)[:, None] < 2, 7.0, np.nan) * np.ones((1, 3))
    save_checkpoint(task_dir / "checkpoint.h5",
                    {"key": res["key"], "center": part["center"], "grid": part})
    (task_dir / "result.h5").unlink()
    resumed = run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)
    g = resumed["grids"]["twonorm"]["BTSVC"]["p000"]
    assert g["resumed_rows"] == 2 and resumed["meta"]["n_skipped"] == 6
    np.testing.assert_array_equal(g["neg_log_evidence"][:2], 7.0)  # kept from the checkpoint
    np.testing.assert_allclose(g["neg_log_evidence"][2],
                               rec["grids"]["twonorm"]["BTSVC"]["p000"]["neg_log_evidence"][2])
    assert not (task_dir / "checkpoint.h5").exists()


def test_checkpoint_of_another_task_is_not_resumed(grid_run, tmp_path):
    """A checkpoint with another key (an edited pipeline file) is ignored."""
    _, rec = grid_run
    res = rec["tasks"]["twonorm__BTSVC__p000__grid"]
    info = rec["datasets"]["twonorm"]
    start = rec["tasks"][res["evidence_grid"]["center_task"]]
    part = dict(res["evidence_grid"], rows=3)
    part["neg_log_evidence"] = np.full((3, 3), 7.0)
    save_checkpoint(tmp_path / "checkpoint.h5", {"key": "another", "center": part["center"],
                                                 "grid": part})
    spec = {"task_id": "g", "kind": "btsvc", "model": "BTSVC", "dataset": "twonorm",
            "partition": 0, "params": {}, "evidence_grid": res["evidence_grid"]["options"],
            "data": info["path"], "train": info["partitions"][0]["train"],
            "test": info["partitions"][0]["test"], "task_dir": str(tmp_path), "key": None}
    out = run_grid_task(spec, start)
    assert out["model_h5"] is None and out["result"]["evidence_grid"]["resumed_rows"] == 0
    np.testing.assert_allclose(out["result"]["evidence_grid"]["neg_log_evidence"],
                               res["evidence_grid"]["neg_log_evidence"])


def test_grid_optima():
    from bsvm_scale.pipeline.outputs.report import grid_optima

    grid = {"neg_log_evidence": np.array([[5.0, 4.0], [3.0, 6.0]]),
            "error_rate": np.array([[0.1, 0.05], [0.2, 0.3]])}
    assert grid_optima(grid) == ((1, 0), (0, 1))


def test_report_shows_the_grid_and_names_figures_in_words(grid_run, tmp_path):
    """The run report draws every evidence grid; legends and titles in words."""
    from bsvm_scale.pipeline.outputs.report import write_report

    _, rec = grid_run
    page = write_report(rec["meta"]["run_dir"], tmp_path).read_text()
    name = "evidence_grid_twonorm__BTSVC__p000.png"
    assert f"![Evidence against test error: twonorm / BTSVC, p000]({name})" in page
    assert (tmp_path / name).stat().st_size > 1000
    assert sorted(p.name for p in tmp_path.glob("*.png")) == sorted(
        [name, "evidence_twonorm__BTSVC.png", "metrics_twonorm.png", "time.png"])
