"""In-process checks of a BSVR start task interrupted after a checkpoint and resumed."""

import numpy as np
import pytest

import bsvm_scale.pipeline.checkpoint as ck
from bsvm_scale.datasets import generate, random_splits
from bsvm_scale.pipeline.tasks import run_task


class _Interrupt(Exception):
    pass


def _spec(task_dir, start):
    ds = generate("sinc_silf", 100, 0)
    tr, te = random_splits(100, 50, 1, 0, n_test=50)[0]
    return {"task_id": "t", "kind": "bsvr", "model": "bsvr", "dataset": "sinc", "partition": 0,
            "params": {"n_starts": 2}, "cv": None, "train": tr, "test": te,
            "data": (ds.X, ds.y), "start": start, "n_starts": 2,
            "task_dir": None if task_dir is None else str(task_dir)}


@pytest.mark.parametrize("stop_after", [1, 9])
def test_resume_replays_to_the_same_result(tmp_path, monkeypatch, stop_after):
    ref = run_task(_spec(None, 1))["result"]
    orig = ck.save_checkpoint
    count = [0]

    def interrupted(path, state):
        orig(path, state)
        count[0] += 1
        if count[0] == stop_after:
            raise _Interrupt

    monkeypatch.setattr(ck, "save_checkpoint", interrupted)
    with pytest.raises(_Interrupt):
        run_task(_spec(tmp_path, 1))
    assert (tmp_path / "checkpoint.h5").exists() and not (tmp_path / "result.h5").exists()
    monkeypatch.setattr(ck, "save_checkpoint", orig)
    res = run_task(_spec(tmp_path, 1))["result"]
    assert res["resumed_from"] == stop_after
    assert res["log_evidence"] == ref["log_evidence"]
    assert res["metrics"] == ref["metrics"]
    assert np.array_equal(res["theta"], ref["theta"])
    assert np.array_equal(res["trajectory"]["fun"], ref["trajectory"]["fun"])
    assert (tmp_path / "result.h5").exists() and (tmp_path / "model.h5").exists()


def test_checkpoint_of_another_start_is_ignored(tmp_path, monkeypatch):
    orig = ck.save_checkpoint
    count = [0]

    def interrupted(path, state):
        orig(path, state)
        count[0] += 1
        if count[0] == 3:
            raise _Interrupt

    monkeypatch.setattr(ck, "save_checkpoint", interrupted)
    with pytest.raises(_Interrupt):
        run_task(_spec(tmp_path, 0))
    monkeypatch.setattr(ck, "save_checkpoint", orig)
    res = run_task(_spec(tmp_path, 1))["result"]  # a different start: starts afresh
    assert res["resumed_from"] == -1
