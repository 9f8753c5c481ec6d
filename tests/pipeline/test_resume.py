"""In-process checks of BSVR and BTSVC start tasks interrupted after a checkpoint and resumed."""

import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import bsvm_scale.pipeline.run.checkpoint as ck
import bsvm_scale.pipeline.run.tasks as tasks
from bsvm_scale.datasets import generate, random_splits
from bsvm_scale.pipeline.run.tasks import run_task


class _Interrupt(Exception):
    pass


_DATA = {"bsvr": ("sinc_silf", 100, 50), "btsvc": ("gauss2d", 160, 80),
         "btsvc3": ("gauss2d", 180, 90), "btsvc3ovo": ("gauss2d", 180, 90),
         "btsvc3shared": ("gauss2d", 180, 90), "btsvc3bin": ("gauss2d", 180, 90),
         "btsvc4": ("gauss2d", 200, 120), "bsvr_ard": ("robot_arm", 100, 50),
         "bsvr_ard_cont": ("robot_arm", 100, 50)}


def _classes(X, k=3):
    """Labels 0..k-1 by the first input's quantiles (a multi-class task)."""
    return np.searchsorted(np.quantile(X[:, 0], np.arange(1, k) / k), X[:, 0]).astype(np.int64)


def _spec(task_dir, start, kind="bsvr"):
    gen, n, n_train = _DATA[kind]
    ds = generate(gen, n, 0)
    y = (_classes(ds.X, 4) if kind == "btsvc4" else
         _classes(ds.X) if kind.startswith("btsvc3") else ds.y)
    tr, te = random_splits(n, n_train, 1, 0, n_test=n - n_train)[0]
    # bsvr_ard: two runs per start (from the start, from the isotropic optimum);
    # bsvr_ard_cont: the default ARD route, one run from the isotropic optimum
    params = {"n_starts": 2, **{"bsvr_ard": {"ard": True, "ard_init": "isotropic"},
                                "bsvr_ard_cont": {"ard": True},
                                "btsvc3": {"multi_class": "ovr"},
                                "btsvc3ovo": {"multi_class": "ovo"},
                                "btsvc3shared": {"shared_kernel": True}}.get(kind, {})}
    binary = {"binary": 1} if kind == "btsvc3bin" else {}  # one binary model's own task
    kind = {"btsvc3": "btsvc", "btsvc3ovo": "btsvc", "btsvc3shared": "btsvc", "btsvc3bin": "btsvc",
            "btsvc4": "btsvc", "bsvr_ard": "bsvr", "bsvr_ard_cont": "bsvr"}.get(kind, kind)
    return {"task_id": "t", "kind": kind, "model": kind, "dataset": gen, "partition": 0,
            "params": params, "cv": None, "train": tr, "test": te,
            "data": (ds.X, y), "start": start, "n_starts": 2,
            "task_dir": None if task_dir is None else str(task_dir), **binary}


def _assert_same_result(res, ref):
    """Bitwise the result of the uninterrupted run."""
    assert res["log_evidence"] == ref["log_evidence"]
    assert res["metrics"] == ref["metrics"]
    assert np.array_equal(res["theta"], ref["theta"])
    assert np.array_equal(res["trajectory"]["fun"], ref["trajectory"]["fun"])


@pytest.mark.parametrize("kind,stop_after,ckpt", [
    ("bsvr", 1, "checkpoint.h5"), ("bsvr", 9, "checkpoint.h5"), ("btsvc", 1, "checkpoint.h5"),
    ("btsvc", 6, "checkpoint.h5"),
    # one-versus-rest: in the first class's start, and in the second class's
    # (the first class has 29 evaluations)
    ("btsvc3", 3, "checkpoint_c0.h5"), ("btsvc3", 35, "checkpoint_c1.h5"),
    # one-versus-one: in the first pair's start and in the second pair's (the
    # first pair has 18 evaluations)
    ("btsvc3ovo", 3, "checkpoint_c0.h5"), ("btsvc3ovo", 22, "checkpoint_c1.h5"),
    # one kernel for the three pairs: one search, one checkpoint
    ("btsvc3shared", 4, "checkpoint.h5"),
    # the second pair's model as a task of its own (pipeline/run/binaries.py)
    ("btsvc3bin", 4, "checkpoint.h5"),
    # BSVR ARD: run 1 of the start is the run from the start, run 2 the one
    # from the isotropic optimum: inside run 1, at its end, inside run 2
    # (offsets from run 1's number of evaluations)
    ("bsvr_ard", -7, "checkpoint.h5"), ("bsvr_ard", 0, "checkpoint.h5"),
    ("bsvr_ard", 5, "checkpoint.h5"),
    # the default route: inside its one run (the isotropic stage is repeated)
    ("bsvr_ard_cont", 4, "checkpoint.h5")])
def test_resume_replays_to_the_same_result(tmp_path, monkeypatch, kind, stop_after, ckpt):
    monkeypatch.setattr(tasks, "CHECKPOINT_SPACING", 0.0)  # a checkpoint per evaluation
    ref = run_task(_spec(None, 1, kind))["result"]
    n_first = ref["trajectory"]["fun"].size  # evaluations of the (first class's) start
    if kind == "bsvr_ard":  # the stop points are placed around run 1's evaluations
        direct = _spec(None, 1, kind)
        direct["params"] = {**direct["params"], "ard_init": "start"}
        run1 = run_task(direct)["result"]["trajectory"]["fun"].size
        assert run1 > 7
        stop_after += run1
    assert n_first > stop_after if ckpt != "checkpoint_c1.h5" else n_first < stop_after
    orig = ck.save_checkpoint
    count = [0]

    def interrupted(path, state):
        orig(path, state)
        count[0] += 1
        if count[0] == stop_after:
            raise _Interrupt

    monkeypatch.setattr(ck, "save_checkpoint", interrupted)
    with pytest.raises(_Interrupt):
        run_task(_spec(tmp_path, 1, kind))
    assert (tmp_path / ckpt).exists() and not (tmp_path / "result.h5").exists()
    monkeypatch.setattr(ck, "save_checkpoint", orig)
    res = run_task(_spec(tmp_path, 1, kind))["result"]
    assert res["resumed_from"] == stop_after
    _assert_same_result(res, ref)
    assert (tmp_path / "result.h5").exists() and (tmp_path / "model.h5").exists()


def test_spaced_checkpoints_cost_little_and_still_resume_exactly(tmp_path, monkeypatch):
    """Checkpoint writes of 100 ms against evaluations of 100 ms: with a
    spacing of 5 write times a start checkpoints its first evaluation and
    then only every few; a resume from such a checkpoint replays what it
    recorded and ends bitwise where an uninterrupted run does."""
    monkeypatch.setattr(tasks, "CHECKPOINT_SPACING", 5.0)
    ref = run_task(_spec(None, 1))["result"]
    orig = ck.save_checkpoint
    written = []

    def slow(path, state):
        time.sleep(0.1)
        orig(path, state)
        written.append(int(state["evals"]["n"]))
        if len(written) == 2:
            raise _Interrupt

    monkeypatch.setattr(ck, "save_checkpoint", slow)
    with pytest.raises(_Interrupt):
        run_task({**_spec(tmp_path, 1), "eval_delay": 0.1})
    assert written[0] == 1 and written[1] > 2  # the first always, then spaced out
    monkeypatch.setattr(ck, "save_checkpoint", orig)
    res = run_task(_spec(tmp_path, 1))["result"]
    assert res["resumed_from"] == written[1] < ref["trajectory"]["fun"].size
    _assert_same_result(res, ref)


def test_task_writes_only_into_a_directory_keyed_for_it(tmp_path, monkeypatch):
    """A task orphaned by a pipeline edit (its directory now holds another
    key) writes no checkpoint, result or model there; a checkpoint made for
    another key is not resumed from."""
    from bsvm_scale.pipeline.run.executor import _finished
    from bsvm_scale.pipeline.run.fingerprint import KEY_FILE

    OLD, NEW = "a" * 64, "b" * 64  # keys are SHA-256 hex digests
    monkeypatch.setattr(tasks, "CHECKPOINT_SPACING", 0.0)
    (tmp_path / KEY_FILE).write_text(NEW)
    out = run_task({**_spec(tmp_path, 1), "key": OLD})
    assert out["result"]["key"] == OLD and out["model_h5"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [KEY_FILE]
    # interrupted while the directory is its own: checkpoint and key recorded
    orig = ck.save_checkpoint

    def interrupted(path, state):
        orig(path, state)
        raise _Interrupt

    monkeypatch.setattr(ck, "save_checkpoint", interrupted)
    (tmp_path / KEY_FILE).write_text(OLD)
    with pytest.raises(_Interrupt):
        run_task({**_spec(tmp_path, 1), "key": OLD})
    assert ck.read_record(tmp_path / "checkpoint.h5")["key"] == OLD
    monkeypatch.setattr(ck, "save_checkpoint", orig)
    assert ck.load_checkpoint(tmp_path / "checkpoint.h5", _theta0(), NEW) is None
    assert ck.load_checkpoint(tmp_path / "checkpoint.h5", _theta0(), OLD) is not None
    # the directory re-keyed (as reconcile would, minus clearing): a fresh start, and its
    # result is taken as finished only under its own key
    (tmp_path / KEY_FILE).write_text(NEW)
    res = run_task({**_spec(tmp_path, 1), "key": NEW})["result"]
    assert res["resumed_from"] == -1 and (tmp_path / "result.h5").exists()
    spec = {**_spec(tmp_path, 1), "key": NEW}
    assert set(_finished([spec])) == {"t"}
    assert _finished([{**spec, "key": "c" * 64}]) == {}
    # a model file written by another task after this result is not taken with it
    good = (tmp_path / "model.h5").read_bytes()
    (tmp_path / "model.h5").write_bytes(good + b"other")
    assert _finished([spec]) == {}
    (tmp_path / "model.h5").write_bytes(good)
    assert set(_finished([spec])) == {"t"}


def _theta0():
    from bsvm_scale.pipeline.run.tasks import _start_theta

    s = _spec(None, 1)
    X, y = s["data"]
    tr = np.asarray(s["train"])
    return _start_theta("bsvr", s["params"], 1, 2, X[tr], y[tr])


def test_checkpoint_of_another_start_is_ignored(tmp_path, monkeypatch):
    monkeypatch.setattr(tasks, "CHECKPOINT_SPACING", 0.0)
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


def _checkpointed_evaluations(path):
    rec = ck.read_record(path)
    return -1 if rec is None or "evals" not in rec else int(rec["evals"]["n"])


@pytest.mark.parametrize("kind", ["btsvc", "bsvr"])
def test_sigkill_mid_start_then_resume(tmp_path, kind):
    """A start task in its own process, killed with SIGKILL after its third
    checkpoint, resumes (replaying the recorded evaluations) to the result of
    an uninterrupted run."""
    ref = run_task(_spec(None, 1, kind))["result"]
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from test_resume import _spec; "
            "from bsvm_scale.pipeline.run.tasks import run_task; "
            "s = _spec(sys.argv[2], 1, sys.argv[3]); s['eval_delay'] = 0.5; run_task(s)")
    ckpt = tmp_path / "checkpoint.h5"
    proc = subprocess.Popen([sys.executable, "-c", code, str(Path(__file__).parent),
                             str(tmp_path), kind])
    try:
        deadline = time.time() + 240
        while time.time() < deadline and proc.poll() is None and \
                _checkpointed_evaluations(ckpt) < 3:
            time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL, "the task finished before it was killed"
    n_done = _checkpointed_evaluations(ckpt)
    assert 3 <= n_done < ref["trajectory"]["fun"].size
    assert not (tmp_path / "result.h5").exists()
    res = run_task(_spec(tmp_path, 1, kind))["result"]
    assert res["resumed_from"] == n_done
    _assert_same_result(res, ref)


def test_task_peak_memory_is_the_tasks_own():
    """The task's peak RSS is not the worker's earlier peak (Linux resets the mark)."""
    def rss_mib():
        with open("/proc/self/status") as fh:
            return next(int(ln.split()[1]) for ln in fh if ln.startswith("VmRSS:")) / 1024

    before = rss_mib()
    big = np.ones(80_000_000)  # 610 MiB touched before the task
    big.sum()
    del big
    res = run_task(_spec(None, 0, "bsvr"))["result"]
    assert res["peak_rss_scope"] == "task"
    # at least the resident set at the start, far below the earlier 610 MiB spike
    assert 0.5 * before < res["peak_rss_mb"] < before + 400


def test_a_task_with_four_classes_keeps_a_checkpoint_per_pair(tmp_path, monkeypatch):
    """The default one-versus-one model of four classes: six pairwise models,
    each with its checkpoint and its hyperparameters in the summary."""
    monkeypatch.setattr(tasks, "CHECKPOINT_SPACING", 0.0)
    out = run_task(_spec(tmp_path, 1, "btsvc4"))
    assert sorted(p.name for p in tmp_path.glob("checkpoint_c*.h5")) == \
        [f"checkpoint_c{i}.h5" for i in range(6)]
    assert list(out["result"]["hyperparameters"]) == [
        f"pair{i}-{j}" for i, j in [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]]
