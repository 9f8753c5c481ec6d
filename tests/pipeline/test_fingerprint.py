"""Content keys of tasks and data sets (bsvm_scale.pipeline.run.fingerprint)."""

import copy

import numpy as np

from bsvm_scale.pipeline.spec.config import DatasetSpec
from bsvm_scale.pipeline.run.fingerprint import KEEP_VERSIONS, KEY_FILE, VERSIONS_DIR, dataset_key, \
    reconcile_tasks, task_keys


def _specs(tmp_path):
    base = {"kind": "bsvr", "model": "BSVR", "dataset": "d", "partition": 0,
            "params": {"beta": 0.3, "bounds": (1e-3, 1e3)}, "cv": None, "n_starts": 2,
            "train": np.arange(10), "test": np.arange(10, 20)}
    specs = [dict(base, start=k, task_id=f"t{k}", task_dir=str(tmp_path / f"t{k}"))
             for k in range(2)]
    specs.append(dict(base, kind="btsvc", model="A", start=-1, task_id="fixed",
                      task_dir=str(tmp_path / "fixed"), fix_from=["t0", "t1"]))
    return specs


def _data(seed=0):
    rng = np.random.default_rng(seed)
    return {"d": {"X": rng.normal(size=(20, 2)), "y": rng.normal(size=20)}}


def test_keys_follow_every_input_and_nothing_else(tmp_path):
    specs, data = _specs(tmp_path), _data()
    ref = task_keys(specs, data)
    assert len(set(ref.values())) == 3
    assert task_keys(copy.deepcopy(specs), _data()) == ref  # deterministic
    moved = [dict(s, task_dir="/elsewhere") for s in specs]  # where it runs does not count
    assert task_keys(moved, data) == ref

    def changed(**kw):
        s = copy.deepcopy(specs)
        s[0].update(kw)
        return task_keys(s, data)

    for kw in ({"params": {"beta": 0.1, "bounds": (1e-3, 1e3)}}, {"train": np.arange(1, 11)},
               {"test": np.arange(10, 19)}, {"start": 5}, {"n_starts": 3},
               {"cv": {"folds": 5}}, {"partition": 1}):
        k = changed(**kw)
        assert k["t0"] != ref["t0"], kw
        assert k["t1"] == ref["t1"], kw
        assert k["fixed"] != ref["fixed"], kw  # a dependency changed
    assert task_keys(specs, _data(seed=1))["t1"] != ref["t1"]  # the data


def test_reconcile_keeps_clears_and_adopts(tmp_path):
    specs, data = _specs(tmp_path), _data()
    keys = task_keys(specs, data)
    for s in specs:  # directories of an earlier run without keys
        d = tmp_path / s["task_id"]
        d.mkdir()
        (d / "result.h5").write_bytes(b"old")
    # the same file: directories without keys are adopted
    assert reconcile_tasks(specs, keys, adopt_unkeyed=True) == {"cleared": [], "restored": []}
    assert (tmp_path / "t0" / "result.h5").read_bytes() == b"old"
    assert (tmp_path / "t0" / KEY_FILE).read_text() == keys["t0"]
    # an edit that changes t0 (and its dependant) only
    s2 = copy.deepcopy(specs)
    s2[0]["params"] = {"beta": 0.1}
    k2 = task_keys(s2, data)
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False) == {"cleared": ["t0", "fixed"],
                                                            "restored": []}
    assert sorted(p.name for p in (tmp_path / "t0").iterdir()) == [KEY_FILE]
    assert (tmp_path / "t1" / "result.h5").exists()
    # the old t0 is set aside under its key, not deleted
    aside = tmp_path / VERSIONS_DIR / "t0" / keys["t0"]
    assert (aside / "result.h5").read_bytes() == b"old"
    # a changed file cannot vouch for directories without a key: they are cleared
    (tmp_path / "t1" / KEY_FILE).unlink()
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False) == {"cleared": ["t1"], "restored": []}
    assert not (tmp_path / "t1" / "result.h5").exists()
    assert not (tmp_path / VERSIONS_DIR / "t1").exists()


def test_reverting_an_edit_restores_the_earlier_results(tmp_path):
    specs, data = _specs(tmp_path), _data()
    keys = task_keys(specs, data)
    reconcile_tasks(specs, keys, adopt_unkeyed=False)
    (tmp_path / "t0" / "result.h5").write_bytes(b"first")
    (tmp_path / "fixed" / "checkpoint.h5").write_bytes(b"half")
    s2 = copy.deepcopy(specs)
    s2[0]["params"] = {"beta": 0.1}
    k2 = task_keys(s2, data)
    reconcile_tasks(s2, k2, adopt_unkeyed=False)
    (tmp_path / "t0" / "result.h5").write_bytes(b"second")
    # revert: both versions survive, each in place for its own key
    assert reconcile_tasks(specs, keys, adopt_unkeyed=False) == {"cleared": [],
                                                                 "restored": ["t0", "fixed"]}
    assert (tmp_path / "t0" / "result.h5").read_bytes() == b"first"
    assert (tmp_path / "t0" / KEY_FILE).read_text() == keys["t0"]
    assert (tmp_path / "fixed" / "checkpoint.h5").read_bytes() == b"half"
    assert (tmp_path / VERSIONS_DIR / "t0" / k2["t0"] / "result.h5").read_bytes() == b"second"
    # and forward again ("fixed" had nothing under k2 to bring back)
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False) == {"cleared": ["fixed"],
                                                            "restored": ["t0"]}
    assert (tmp_path / "t0" / "result.h5").read_bytes() == b"second"
    # a run killed between setting aside and restoring (task directory absent) recovers
    (tmp_path / "t0").rename(tmp_path / VERSIONS_DIR / "t0" / k2["t0"])
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False)["restored"] == ["t0"]
    assert (tmp_path / "t0" / "result.h5").read_bytes() == b"second"


def test_only_the_newest_versions_are_kept(tmp_path):
    specs, data = _specs(tmp_path)[:1], _data()
    made = []
    for beta in range(KEEP_VERSIONS + 2):
        s = copy.deepcopy(specs)
        s[0]["params"] = {"beta": float(beta)}
        k = task_keys(s, data)
        reconcile_tasks(s, k, adopt_unkeyed=False)
        (tmp_path / "t0" / "result.h5").write_bytes(str(beta).encode())
        made.append(k["t0"])
    kept = {p.name for p in (tmp_path / VERSIONS_DIR / "t0").iterdir()}
    assert kept == set(made[-1 - KEEP_VERSIONS:-1])
def test_dataset_key_follows_the_generation_spec():
    a = DatasetSpec(label="s", task="regression", n=100, generator="sinc_silf", seed=0)
    assert dataset_key(a) == dataset_key(DatasetSpec(**vars(a)))
    for kw in ({"seed": 1}, {"n": 101}, {"params": {"beta": 0.1}}, {"n_train": 50},
               {"test": {"n": 10, "seed": 1}}):
        assert dataset_key(DatasetSpec(**{**vars(a), **kw})) != dataset_key(a), kw


def test_prepare_data_adopts_a_keyless_data_file_only_for_the_same_file(tmp_path):
    """A generated data file from before keys existed is kept when the pipeline
    file is unchanged and regenerated (and keyed) when it was edited."""
    from bsvm_scale.datasets import read_dataset, write_dataset
    from bsvm_scale.pipeline.spec.config import parse_pipeline
    from bsvm_scale.pipeline.run.executor import prepare_data

    text = ('[run]\nname = "k"\noutput = "runs"\n\n[[datasets]]\nname = "s"\n'
            'generator = "sinc_silf"\nn = 40\nseed = 0\npartitions = 1\nn_train = 20\n\n'
            '[[models]]\nkind = "gpr"\n')
    pipeline = parse_pipeline(text, path=str(tmp_path / "k.toml"))
    run_dir = tmp_path / "run"
    fresh = prepare_data(pipeline, run_dir)["s"]
    path, kpath = run_dir / "data" / "s.h5", run_dir / "data" / "s.key"
    assert kpath.read_text() == dataset_key(pipeline.datasets[0])
    # an older run's file: no key, and (to tell it apart) other contents
    old = read_dataset(path, splits=True, extra=False)
    old.y[:] = 7.0
    write_dataset(old, path)
    kpath.unlink()
    kept = prepare_data(pipeline, run_dir, adopt_unkeyed=True)["s"]
    np.testing.assert_array_equal(kept["y"], 7.0)
    assert kpath.read_text() == dataset_key(pipeline.datasets[0])
    kpath.unlink()
    redone = prepare_data(pipeline, run_dir, adopt_unkeyed=False)["s"]
    np.testing.assert_array_equal(redone["y"], fresh["y"])
    np.testing.assert_array_equal(redone["X"], fresh["X"])
    assert kpath.read_text() == dataset_key(pipeline.datasets[0])


def test_a_changed_library_default_is_keyed_in(tmp_path):
    """BSVR and BTSVC ARD tasks whose parameters leave ``ard_init`` out get the
    key of the current default (``"continuation"``), so tasks made under an
    earlier default (BSVR: ``"isotropic"``, keyed in then; BTSVC: not keyed)
    are recomputed; isotropic tasks keep their keys."""
    data = _data()

    def key(params, kind="bsvr"):
        s = dict(_specs(tmp_path)[0], params=params, kind=kind)
        return task_keys([s], data)["t0"]

    for kind in ("bsvr", "btsvc"):
        assert key({"ard": True}, kind) == key({"ard": True, "ard_init": "continuation"}, kind)
        assert key({"ard": True}, kind) != key({"ard": True, "ard_init": "isotropic"}, kind)
        assert key({"ard": True}, kind) != key({"ard": True, "ard_init": "start"}, kind)
        assert key({"ard": False}, kind) != key({"ard": False, "ard_init": "continuation"}, kind)


def test_threads_are_not_keyed(tmp_path):
    """``n_jobs`` does not change a BSVR or BTSVC fit, so it leaves keys alone."""
    data = _data()

    def key(params, kind):
        s = dict(_specs(tmp_path)[0], params=params, kind=kind)
        return task_keys([s], data)["t0"]

    for kind in ("bsvr", "btsvc"):
        assert key({"ard": True, "n_jobs": 2}, kind) == key({"ard": True}, kind)
        assert key({"ard": True, "n_jobs": 2}, kind) != key({"ard": False, "n_jobs": 2}, kind)


def test_the_search_defaults_are_keyed_in_under_the_tasks_own_options(tmp_path):
    """BSVR and BTSVC tasks carry the evidence search's defaults in their key
    (made before the stall in nats and the slope trial, they are recomputed);
    a task's own optimizer options are merged over them."""
    from bsvm_scale.optimization.driver import PIECEWISE_OPTIONS

    data = _data()

    def key(params):
        s = dict(_specs(tmp_path)[0], params=params)
        return task_keys([s], data)["t0"]

    assert key({}) == key({"optimizer_options": dict(PIECEWISE_OPTIONS)})
    assert key({"optimizer_options": {"maxiter": 7}}) == \
        key({"optimizer_options": {**PIECEWISE_OPTIONS, "maxiter": 7}})
    assert key({"optimizer_options": {"maxiter": 7}}) != key({})
    assert key({}) != key({"optimizer_options": {"slope_rounds": 0}})


def test_btsvc_keys_carry_the_one_versus_one_default():
    """A BTSVC task without ``multi_class`` is keyed as the default "ovo":
    tasks of runs made before it (one-versus-rest) are not adopted."""
    from bsvm_scale.pipeline.run.fingerprint import _keyed_params

    assert _keyed_params("btsvc", {})["multi_class"] == "ovo"
    assert _keyed_params("btsvc", {"multi_class": "ovr"})["multi_class"] == "ovr"
    assert "multi_class" not in _keyed_params("bsvr", {})


def test_bsvr_and_btsvc_keys_carry_the_evidence_tolerance_default():
    """Tasks keyed before the evidence tolerance's default became 0.05 nats (0.01
    before) are not adopted; an explicit tolerance keys as given."""
    from bsvm_scale.inference.evidence_lowrank import DEFAULT_TOL
    from bsvm_scale.pipeline.run.fingerprint import _keyed_params

    for kind in ("bsvr", "btsvc"):
        assert _keyed_params(kind, {})["evidence_tol"] == DEFAULT_TOL == 0.05
        assert _keyed_params(kind, {"evidence_tol": 0.01})["evidence_tol"] == 0.01
    assert "evidence_tol" not in _keyed_params("gpr", {})
