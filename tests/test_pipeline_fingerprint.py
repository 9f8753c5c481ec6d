"""Content keys of tasks and data sets (bsvm_scale.pipeline.fingerprint)."""

import copy

import numpy as np

from bsvm_scale.pipeline.config import DatasetSpec
from bsvm_scale.pipeline.fingerprint import KEY_FILE, dataset_key, reconcile_tasks, task_keys


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
    assert reconcile_tasks(specs, keys, adopt_unkeyed=True) == {"cleared": []}
    assert (tmp_path / "t0" / "result.h5").read_bytes() == b"old"
    assert (tmp_path / "t0" / KEY_FILE).read_text() == keys["t0"]
    # an edit that changes t0 (and its dependant) only
    s2 = copy.deepcopy(specs)
    s2[0]["params"] = {"beta": 0.1}
    k2 = task_keys(s2, data)
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False) == {"cleared": ["t0", "fixed"]}
    assert sorted(p.name for p in (tmp_path / "t0").iterdir()) == [KEY_FILE]
    assert (tmp_path / "t1" / "result.h5").exists()
    # a changed file cannot vouch for directories without a key: they are cleared
    (tmp_path / "t1" / KEY_FILE).unlink()
    assert reconcile_tasks(s2, k2, adopt_unkeyed=False) == {"cleared": ["t1"]}
    assert not (tmp_path / "t1" / "result.h5").exists()


def test_dataset_key_follows_the_generation_spec():
    a = DatasetSpec(label="s", task="regression", n=100, generator="sinc_silf", seed=0)
    assert dataset_key(a) == dataset_key(DatasetSpec(**vars(a)))
    for kw in ({"seed": 1}, {"n": 101}, {"params": {"beta": 0.1}}, {"n_train": 50},
               {"test": {"n": 10, "seed": 1}}):
        assert dataset_key(DatasetSpec(**{**vars(a), **kw})) != dataset_key(a), kw
