"""Pipeline TOML validation: one clear message per problem, naming the key and line."""

from pathlib import Path

import numpy as np
import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.spec.config import PipelineError, load_pipeline, parse_pipeline

REPO = Path(__file__).resolve().parents[2]

GOOD = """
[run]
name = "t"
output = "out"

[[datasets]]
name = "sinc"
generator = "sinc_silf"
n = 100
partitions = 2
n_train = 50
n_test = 50

[[models]]
kind = "bsvr"
search = { n_starts = 2 }
"""


def _problems(text, tmp_path, name="p.toml"):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(PipelineError) as info:
        load_pipeline(path)
    return info.value.problems, str(info.value)


def test_good_pipeline_defaults(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(GOOD)
    p = load_pipeline(path)
    assert p.name == "t" and Path(p.run_dir) == (tmp_path / "out" / "t").resolve()
    assert p.models[0].datasets == ["sinc"] and p.retries == 2
    text = GOOD.replace('name = "t"\n', "")
    p2 = parse_pipeline(text, tmp_path / "nightly_x.toml", today="20260101")
    assert p2.name == "nightly_x-20260101"


def test_unknown_keys_named_with_line(tmp_path):
    text = GOOD.replace("n_test = 50", "n_test = 50\nn_tset = 3").replace(
        'kind = "bsvr"', 'kind = "bsvr"\ncolour = "red"')
    probs, msg = _problems(text, tmp_path)
    assert len(probs) == 2
    assert "datasets[0].n_tset: unknown key" in probs[0] and "(line 13)" in probs[0]
    assert "models[0].colour: unknown key" in probs[1] and "(line 17)" in probs[1]
    assert "p.toml" in msg


def test_wrong_types(tmp_path):
    text = GOOD.replace("n = 100", 'n = "many"').replace("search = { n_starts = 2 }",
                                                          "search = { n_starts = 2.5 }")
    probs, _ = _problems(text, tmp_path)
    assert any("datasets[0].n: must be an integer" in p and "line 9" in p for p in probs)
    assert any("models[0].search.n_starts: must be an integer" in p for p in probs)
    probs, _ = _problems(GOOD.replace('output = "out"', "output = 3"), tmp_path)
    assert probs == ["run.output: must be a string; got 3 (line 4)"]


def test_missing_file_and_impossible_sizes(tmp_path):
    text = GOOD.replace('generator = "sinc_silf"\nn = 100', 'path = "nowhere.h5"')
    probs, _ = _problems(text, tmp_path)
    assert len(probs) == 1 and "datasets[0].path" in probs[0] and "does not exist" in probs[0]
    probs, _ = _problems(GOOD.replace("n_test = 50", "n_test = 51"), tmp_path)
    assert len(probs) == 1 and "n_train + n_test = 50 + 51 = 101 exceeds the 100 cases" in probs[0]
    assert "(line 11)" in probs[0]


def test_bad_values(tmp_path):
    text = GOOD.replace('kind = "bsvr"', 'kind = "bsvrr"')
    probs, _ = _problems(text, tmp_path)
    assert "unknown model kind 'bsvrr'" in probs[0] and "line 15" in probs[0]
    text = GOOD.replace('generator = "sinc_silf"', 'generator = "sync"')
    probs, _ = _problems(text, tmp_path)
    assert "unknown data set 'sync'" in probs[0]
    text = GOOD + 'settings = { gamma = 1.0 }\n'
    probs, _ = _problems(text, tmp_path)
    assert "models[0].settings.gamma: unknown parameter of BayesianSVR" in probs[0]
    text = GOOD.replace("search = { n_starts = 2 }", "search = { starts = [{ C = 1.0, nu = 2 }] }")
    probs, _ = _problems(text, tmp_path)
    assert "models[0].search.starts[0]" in probs[0]
    text = GOOD + '\n[[models]]\nkind = "gpc"\n'
    probs, _ = _problems(text, tmp_path)
    assert "no classification data set for gpc" in probs[0]
    text = GOOD + '\n[[models]]\nkind = "gpr"\ncommittee = true\ndatasets = ["other"]\n'
    probs, _ = _problems(text, tmp_path)
    assert len(probs) == 2 and "committee" in probs[0] and "unknown data set 'other'" in probs[1]
    probs, _ = _problems(GOOD + "datasets = []\n", tmp_path)
    assert "models[0].datasets: must name at least one data set" in probs[0]
    probs, _ = _problems("[run\nname=1", tmp_path)
    assert "not valid TOML" in probs[0]
    probs, _ = _problems(GOOD.replace("partitions = 2", 'partitions = "stored"'), tmp_path)
    assert "needs a data set file" in probs[0]


def test_stored_splits_file(tmp_path):
    from bsvm_scale.datasets import generate, write_dataset

    write_dataset(generate("gauss2d", 60, 0, n_splits=3, n_train=30), tmp_path / "g.h5")
    text = """
[[datasets]]
path = "g.h5"
max_partitions = 2
[[models]]
kind = "gpc"
"""
    path = tmp_path / "p.toml"
    path.write_text(text)
    p = load_pipeline(path)
    assert p.datasets[0].partitions == "stored" and p.datasets[0].label == "g"
    assert p.datasets[0].max_partitions == 2
    from bsvm_scale.datasets import read_dataset
    from bsvm_scale.pipeline.run.executor import plan_tasks, prepare_data

    data = prepare_data(p, tmp_path / "run")
    stored = read_dataset(tmp_path / "g.h5").splits
    parts = data["g"]["partitions"]
    assert len(parts) == 2
    for (tr, te), (str_, ste) in zip(parts, stored):
        assert np.array_equal(tr, str_) and np.array_equal(te, ste)
    specs = plan_tasks(p, data, tmp_path / "run")
    assert [s["task_id"] for s in specs] == ["g__gpc__p000", "g__gpc__p001"]
    assert specs[0]["data"] == str(tmp_path / "g.h5")  # workers read the file itself


def test_plan_generated_partitions(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(GOOD.replace("search = { n_starts = 2 }", "search = { n_starts = 3 }"))
    from bsvm_scale.pipeline.run.executor import plan_tasks, prepare_data

    p = load_pipeline(path)
    data = prepare_data(p, Path(p.run_dir))
    assert (Path(p.run_dir) / "data" / "sinc.h5").exists()
    specs = plan_tasks(p, data, Path(p.run_dir))
    assert len(specs) == 6 and specs[5]["task_id"] == "sinc__bsvr__p001__s02"
    tr, te = data["sinc"]["partitions"][1]
    assert tr.size == 50 and te.size == 50 and not set(tr) & set(te)
    again = prepare_data(p, Path(p.run_dir))  # deterministic (a resumed run sees the same)
    assert all(np.array_equal(a[0], b[0]) for a, b in zip(again["sinc"]["partitions"],
                                                         data["sinc"]["partitions"]))


def test_cli_reports_problems(tmp_path, capsys):
    path = tmp_path / "bad.toml"
    path.write_text(GOOD.replace("n_test = 50", "n_test = 500"))
    assert main(["run", str(path)]) == 2
    err = capsys.readouterr().err
    assert "bad.toml" in err and "n_train + n_test" in err
    good = tmp_path / "good.toml"
    good.write_text(GOOD)
    assert main(["run", str(good), "--check"]) == 0
    assert "valid" in capsys.readouterr().out


@pytest.mark.parametrize("name", ["quickstart.toml", "nightly.toml"])
def test_shipped_pipelines_validate(name):
    p = load_pipeline(REPO / "pipelines" / name)
    assert p.datasets and p.models


def test_paired_t_formula():
    from bsvm_scale.pipeline.outputs.report import paired_t_test

    a = np.array([0.10, 0.12, 0.09, 0.11])
    b = np.array([0.12, 0.13, 0.12, 0.12])
    e = a - b
    t_expected = e.mean() / np.sqrt(np.sum((e - e.mean()) ** 2) / (4 * 3))
    t, dof, p = paired_t_test(a, b)
    assert t == pytest.approx(t_expected) and dof == 3 and 0 < p < 0.1
    assert paired_t_test(a, a)[0] == 0.0


def test_start_kappa_one_over_d_resolves_per_data_set(tmp_path):
    """The protocol's second BSVR start (kappa = 1/d) in one model over data sets
    with 1 and 6 inputs: each task gets 1 / its own number of inputs."""
    from bsvm_scale.pipeline.run.executor import plan_tasks, prepare_data

    starts = 'search = { starts = [{ C = 1.0, kappa = 0.5 }, { C = 10.0, kappa = "1/d" }] }'
    text = GOOD.replace("search = { n_starts = 2 }", starts) + (
        '\n[[datasets]]\nname = "arm"\ngenerator = "robot_arm6"\nn = 60\npartitions = 1\n'
        'n_train = 30\n')
    path = tmp_path / "d.toml"
    path.write_text(text)
    pipeline = load_pipeline(path)
    run_dir = tmp_path / "run"
    data = prepare_data(pipeline, run_dir)
    got = {(s["dataset"], s["start"]): s["params"]["starts"] for s in plan_tasks(pipeline, data, run_dir)}
    assert got[("sinc", 0)] == [{"C": 1.0, "kappa": 0.5}, {"C": 10.0, "kappa": 1.0}]
    assert got[("arm", 1)] == [{"C": 1.0, "kappa": 0.5}, {"C": 10.0, "kappa": 1.0 / 6}]
    # only kappa may be given per input, and only as "1/d"
    for bad in ('{ C = "1/d" }', '{ kappa = "1/n" }'):
        probs, _ = _problems(GOOD.replace("search = { n_starts = 2 }",
                                          f"search = {{ starts = [{bad}] }}"), tmp_path)
        assert 'values must be numbers (kappa may also be "1/d"' in probs[0]
