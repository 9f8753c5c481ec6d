"""End-to-end pipeline runs: LocalCluster, an external dask scheduler with two
workers, kill -9 and resume, the run lock, retries and recorded failures, reports."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.spec.config import load_pipeline
from bsvm_scale.pipeline.run.executor import WORKER_ENV, run_pipeline
from bsvm_scale.pipeline.outputs.runfile import read_run_file

REPO = Path(__file__).resolve().parents[2]

PIPELINE = """
[run]
name = "{name}"
output = "{out}"
retries = 1

[[datasets]]
name = "sinc"
generator = "sinc_silf"
n = 100
seed = 0
partitions = 2
n_train = 50
n_test = 50

[[datasets]]
name = "g2"
generator = "gauss2d"
n = 80
seed = 1
partitions = 1
n_train = 40

[[models]]
kind = "bsvr"
committee = true
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 8 }} }}

[[models]]
kind = "gpr"
search = {{ n_starts = 1 }}
settings = {{ options = {{ maxiter = 8 }} }}

[[models]]
kind = "btsvc"
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 8 }} }}

[[models]]
kind = "gpc"
search = {{ n_starts = 1 }}
settings = {{ options = {{ maxiter = 8 }} }}
"""
N_TASKS = 9
# the same sinc tasks without the classification part (a shorter kill/resume run)
KILL_PIPELINE = PIPELINE.split("[[datasets]]\nname = \"g2\"")[0] + \
    PIPELINE.split("[[models]]", 1)[1].split("[[models]]\nkind = \"btsvc\"")[0].join(
        ["[[models]]", ""])
N_KILL = 6


def _write(tmp, name, text=PIPELINE):
    path = Path(tmp) / f"{name}.toml"
    path.write_text(text.format(name=name, out=str(Path(tmp) / "runs")))
    return path


def _by_task(rec):
    return {tid: t for tid, t in rec["tasks"].items()}


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("ref")
    path = _write(tmp, "ref")
    rec = run_pipeline(load_pipeline(path), workers=2, progress=False)
    return path, rec


def test_local_cluster_run(reference, capsys):
    path, rec = reference
    meta = rec["meta"]
    assert meta["status"] == "complete" and meta["n_done"] == N_TASKS and meta["n_failed"] == 0
    assert meta["scheduler"] == "LocalCluster" and meta["n_workers"] == 2
    assert meta["data_transport"] == "path"
    run_dir = Path(meta["run_dir"])
    # the run file holds what the driver saw; best models are stored and load back
    disk = read_run_file(run_dir / "run.h5")
    assert sorted(disk["tasks"]) == sorted(rec["tasks"])
    res = disk["results"]
    assert set(res) == {"sinc", "g2"} and set(res["sinc"]) == {"bsvr", "gpr"}
    for part in ("p000", "p001"):
        e = res["sinc"]["bsvr"][part]
        starts = e["start_log_evidence"]
        assert e["log_evidence"] == np.max(starts) and e["n_starts_done"] == 2
        assert set(e["metrics"]) >= {"ase", "aae"} and "committee_metrics" in e
        assert (run_dir / e["model_file"]).exists()
    t = disk["tasks"]["sinc__bsvr__p000__s00"]
    assert t["trajectory"]["fun"].size >= 2 and t["trajectory"]["theta"].shape[1] == 5
    assert t["n_sv"] > 0 and t["n_off_bound"] >= 0 and t["host"] and t["versions"]["numpy"]
    assert t["numba_threads"] == 1 and t["omp_num_threads"] == "1"  # workers x threads <= cores
    assert set(disk["tasks"]["g2__btsvc__p000__s01"]["metrics"]) == {"error_rate", "nll"}
    from bsvm_scale.storage import load_model

    m = load_model(run_dir / res["g2"]["gpc"]["p000"]["model_file"])
    assert type(m).__name__ == "GPC"
    # finished tasks keep their result and model, not their start checkpoints
    tasks = list((run_dir / "tasks").iterdir())
    assert len(tasks) == N_TASKS and all((t / "result.h5").exists() for t in tasks)
    assert not list((run_dir / "tasks").glob("*/checkpoint*.h5"))
    # running the same command again recomputes nothing
    rec2 = run_pipeline(load_pipeline(path), workers=2, progress=False)
    assert rec2["meta"]["n_skipped"] == N_TASKS and rec2["meta"]["n_workers"] == 0
    # ... and keeps the wall time and the workers of the first invocation
    m1, m2 = rec["meta"], rec2["meta"]
    assert m1["invocations"] == 1 and m1["elapsed_total"] == m1["elapsed"]
    assert m2["invocations"] == 2 and m2["n_workers_max"] == m1["n_workers"] == 2
    assert m2["elapsed_total"] == pytest.approx(m1["elapsed"] + m2["elapsed"])
    from bsvm_scale.pipeline.outputs.runfile import wall_clock

    assert wall_clock(m2) == (f"{m2['elapsed_total']:.1f} s wall clock over 2 invocations "
                              f"(the last {m2['elapsed']:.1f} s)")
    assert wall_clock({"elapsed": 90.0}, minutes=True) == "1.5 min wall clock"
    # the report
    assert main(["report", str(run_dir), "--out", str(run_dir / "rep")]) == 0
    md = (run_dir / "rep" / "report.md").read_text()
    assert "LocalCluster, 2 worker(s)" in md and "over 2 invocations" in md  # after the repeat
    assert "Paired t-tests" in md and "| sinc | bsvr | gpr | ase |" in md
    for png in ("predictions_sinc.png", "probabilities_g2.png", "evidence_sinc__bsvr.png",
                "metrics_sinc.png", "time.png"):
        assert (run_dir / "rep" / png).stat().st_size > 1000, png


def _retimes(rec):
    return {tid: t["finished"] for tid, t in rec["tasks"].items()}


def test_edited_pipeline_recomputes_only_what_changed(reference, tmp_path, capsys):
    """A resume with an edited file keeps the tasks whose inputs are unchanged."""
    import shutil

    path, rec = reference
    shutil.copytree(Path(rec["meta"]["run_dir"]), tmp_path / "runs" / "ref")
    before = _retimes(rec)
    # edit: a comment, gpr's maxiter 8 -> 6, btsvc removed; bsvr and gpc untouched
    text = "# edited\n" + PIPELINE.replace(
        "settings = {{ options = {{ maxiter = 8 }} }}\n\n[[models]]\nkind = \"btsvc\"",
        "settings = {{ options = {{ maxiter = 6 }} }}\n\n[[models]]\nkind = \"btsvc\"")
    text = text.replace(
        "[[models]]\nkind = \"btsvc\"\nsearch = {{ n_starts = 2 }}\n"
        "settings = {{ optimizer_options = {{ maxiter = 8 }} }}\n\n", "")
    assert text.count("maxiter = 6") == 1 and "btsvc" not in text
    rec2 = run_pipeline(load_pipeline(_write(tmp_path, "ref", text)), workers=1, progress=False)
    meta = rec2["meta"]
    after = _retimes(rec2)
    kept = {t for t in after if before.get(t) == after[t]}
    assert kept == {t for t in after if "__bsvr__" in t or "__gpc__" in t}
    assert meta["n_skipped"] == len(kept) == 5 and meta["n_recomputed_changed"] == 2
    assert meta["stale_task_dirs"] == ["g2__btsvc__p000__s00", "g2__btsvc__p000__s01"]
    traj = [r["tasks"]["sinc__gpr__p000"]["trajectory"]["fun"] for r in (rec, rec2)]
    assert traj[1].size < traj[0].size  # the new maxiter was used
    np.testing.assert_array_equal(traj[1], traj[0][:traj[1].size])
    out = capsys.readouterr().out
    assert "2 task(s) recomputed" in out and "left in place: 2" in out
    # a changed data set (sinc's seed) rewrites its data and recomputes its tasks only
    text2 = text.replace("n = 100\nseed = 0", "n = 100\nseed = 5")
    rec3 = run_pipeline(load_pipeline(_write(tmp_path, "ref", text2)), workers=1, progress=False)
    again = _retimes(rec3)
    assert {t for t in again if again[t] == after[t]} == {"g2__gpc__p000"}
    X_old = rec["tasks"]["sinc__gpr__p000"]["metrics"]["ase"]
    assert rec3["tasks"]["sinc__gpr__p000"]["metrics"]["ase"] != X_old
    # reverting that edit brings the set-aside results back instead of recomputing them
    capsys.readouterr()
    rec4 = run_pipeline(load_pipeline(_write(tmp_path, "ref", text)), workers=1, progress=False)
    back = _retimes(rec4)
    assert back == after
    assert rec4["meta"]["n_restored_earlier_version"] == len(after) - 1
    assert rec4["meta"]["n_recomputed_changed"] == 0 and rec4["meta"]["n_skipped"] == len(after)
    assert f"{len(after) - 1} task(s) given back" in capsys.readouterr().out


def test_tasks_run_partition_major(tmp_path):
    """Every model's partition 0 runs before any partition 1 (the file lists
    BSVR's partitions before GPR's), so a run stopped early holds the first
    partitions of every model and data set."""
    rec = run_pipeline(load_pipeline(_write(tmp_path, "order", KILL_PIPELINE)), workers=1,
                       progress=False)
    order = sorted(rec["tasks"].values(), key=lambda t: t["started"])
    assert [t["partition"] for t in order] == [0, 0, 0, 1, 1, 1]
    assert [t["model"] for t in order][:3] == ["bsvr", "bsvr", "gpr"]


def test_run_file_is_rewritten_while_tasks_run(tmp_path, monkeypatch):
    """The driver writes run.h5 before the first task runs; with
    RUNFILE_EVERY_S = 0 again after every task but the last (status
    "running"); then once more at the end."""
    import bsvm_scale.pipeline.run.executor as ex

    text = PIPELINE.split("[[datasets]]\nname = \"g2\"")[0] + \
        "[[models]]\nkind = \"gpr\"\nsearch = {{ n_starts = 1 }}\n" \
        "settings = {{ options = {{ maxiter = 3 }} }}\n"
    seen = []
    orig = ex.write_run_file

    def spy(path, record):
        seen.append((record["meta"]["status"], record["meta"]["n_done"]))
        return orig(path, record)

    monkeypatch.setattr(ex, "RUNFILE_EVERY_S", 0.0)
    monkeypatch.setattr(ex, "write_run_file", spy)
    rec = run_pipeline(load_pipeline(_write(tmp_path, "every", text)), workers=1, progress=False)
    assert rec["meta"]["n_tasks"] == 2
    assert seen == [("running", 0), ("running", 1), ("complete", 2)]


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _dask_cluster(tmp):
    env = dict(os.environ, **WORKER_ENV)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    port = _free_port()
    addr = f"tcp://127.0.0.1:{port}"
    procs = []
    logs = []
    try:
        log = open(Path(tmp) / "scheduler.log", "w")
        logs.append(log)
        procs.append(subprocess.Popen(
            [sys.executable, "-m", "dask", "scheduler", "--host", "127.0.0.1", "--port",
             str(port), "--no-dashboard"], env=env, stdout=log, stderr=subprocess.STDOUT))
        for k in range(2):
            log = open(Path(tmp) / f"worker{k}.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "dask", "worker", addr, "--nthreads", "1",
                 "--nworkers", "1", "--host", "127.0.0.1", "--no-dashboard"],
                env=env, stdout=log, stderr=subprocess.STDOUT))
        from dask.distributed import Client

        deadline = time.time() + 60
        while True:
            try:
                with Client(addr, timeout="5s") as c:
                    c.wait_for_workers(2, timeout=60)
                break
            except (OSError, TimeoutError):
                if time.time() > deadline:
                    raise
                time.sleep(0.5)
        yield addr
    finally:
        for p in reversed(procs):
            p.terminate()
        for p in procs:
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        for log in logs:
            log.close()


def test_external_scheduler_same_results(reference, tmp_path, monkeypatch):
    _, ref = reference
    # every task fails on its first attempt; retries=1 recovers all of them
    monkeypatch.setenv("BSVM_PIPELINE_FAIL_ONCE_DIR", str(tmp_path))
    with _dask_cluster(tmp_path) as addr:
        rec = run_pipeline(load_pipeline(_write(tmp_path, "ext")), scheduler=addr,
                           progress=False)
        assert rec["meta"]["n_failed"] == 0 and rec["meta"]["n_done"] == N_TASKS
        assert rec["meta"]["scheduler"] == addr and rec["meta"]["n_workers"] == 2
        assert len(list(tmp_path.glob("*.failed"))) == N_TASKS
        a, b = _by_task(ref), _by_task(rec)
        assert a.keys() == b.keys()
        for tid in a:
            assert a[tid]["log_evidence"] == b[tid]["log_evidence"] or (
                np.isnan(a[tid]["log_evidence"]) and np.isnan(b[tid]["log_evidence"])), tid
            for k, v in a[tid]["metrics"].items():
                np.testing.assert_allclose(b[tid]["metrics"][k], v, rtol=1e-12, err_msg=tid)
        # failures are recorded (never dropped) and retried by the next run
        text = PIPELINE.split("[[models]]")[0].replace("retries = 1", "retries = 0") + \
            '[[models]]\nkind = "gpr"\ndatasets = ["sinc"]\nsearch = {{ n_starts = 1 }}\n'
        path = _write(tmp_path, "fail", text)
        monkeypatch.setenv("BSVM_PIPELINE_FAIL_ONCE_DIR", str(tmp_path / "m"))
        (tmp_path / "m").mkdir()
        rec = run_pipeline(load_pipeline(path), scheduler=addr, progress=False)
        assert rec["meta"]["n_failed"] == 2 and rec["meta"]["status"] == "incomplete"
        disk = read_run_file(Path(rec["meta"]["run_dir"]))
        assert set(disk["failures"]) == {"sinc__gpr__p000", "sinc__gpr__p001"}
        assert "injected failure" in disk["failures"]["sinc__gpr__p000"]["error"]
        # workers that cannot see the data path get the data scattered once
        monkeypatch.setenv("BSVM_PIPELINE_FORCE_SCATTER", "1")
        rec = run_pipeline(load_pipeline(path), scheduler=addr, progress=False)
        assert rec["meta"]["n_failed"] == 0 and rec["meta"]["n_done"] == 2
        assert rec["meta"]["data_transport"] == "scattered"
        assert rec["meta"]["status"] == "complete"


def test_kill_and_resume(reference, tmp_path, capsys):
    _, ref = reference
    path = _write(tmp_path, "kill", KILL_PIPELINE)
    run_dir = tmp_path / "runs" / "kill"
    env = dict(os.environ, BSVM_PIPELINE_EVAL_DELAY="0.3")
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    log = open(tmp_path / "driver.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "bsvm_scale.cli", "run", str(path),
                             "--workers", "1", "--no-report", "--no-progress"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    finished_before = {}
    try:
        deadline = time.time() + 180
        while time.time() < deadline:
            if proc.poll() is not None:
                break
            tasks = run_dir / "tasks"
            done = list(tasks.glob("*/result.h5")) if tasks.exists() else []
            inflight = [c for c in (tasks.glob("*/checkpoint.h5") if tasks.exists() else [])
                        if not (c.parent / "result.h5").exists()]
            if done and inflight:
                # a second driver on the same run is refused while the first holds the lock
                assert main(["run", str(path), "--no-report"]) == 2
                assert "in use by another driver" in capsys.readouterr().err
                finished_before = {p.parent.name: p.stat().st_mtime_ns
                                   for p in tasks.glob("*/result.h5")}
                break
            time.sleep(0.1)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and its local workers
        proc.wait()
        log.close()
    assert finished_before, (tmp_path / "driver.log").read_text()[-3000:]
    # the driver died with the run file it wrote when its tasks started
    early = read_run_file(run_dir / "run.h5")["meta"]
    assert early["status"] == "running" and early["n_done"] < N_KILL
    rec = run_pipeline(load_pipeline(path), workers=1, progress=False)
    meta = rec["meta"]
    assert meta["n_done"] == N_KILL and meta["n_failed"] == 0
    assert meta["n_skipped"] >= len(finished_before) >= 1
    assert meta["n_resumed_from_checkpoint"] >= 1
    for tid, mtime in finished_before.items():  # finished tasks were not recomputed
        assert (run_dir / "tasks" / tid / "result.h5").stat().st_mtime_ns == mtime
    resumed = [t for t in rec["tasks"].values() if t["resumed_from"] > 0]
    assert resumed
    for t in resumed:
        assert t["trajectory"]["fun"].size > t["resumed_from"]
    # the same results as the uninterrupted run: a resumed start replays its
    # recorded evaluations, so the search follows the same path
    a, b = _by_task(ref), _by_task(rec)
    assert set(b) <= set(a) and len(b) == N_KILL
    for tid in b:
        np.testing.assert_allclose(b[tid]["log_evidence"], a[tid]["log_evidence"], rtol=1e-9,
                                   err_msg=tid)
        for k, v in a[tid]["metrics"].items():
            np.testing.assert_allclose(b[tid]["metrics"][k], v, rtol=1e-9, err_msg=tid)
        if a[tid]["trajectory"] is not None:
            assert b[tid]["trajectory"]["fun"].size == a[tid]["trajectory"]["fun"].size


def test_numba_cache_write_failure_is_not_reported_as_bad_settings(tmp_path, monkeypatch):
    """A full disk while the driver warms the Numba cache names the cache and
    the fix, not the model's settings."""
    import errno

    import bsvm_scale.pipeline.run.tasks as tasks

    def full_disk(*_a, **_k):
        raise OSError(errno.EFBIG, "File too large", "/cache/index.nbi")

    monkeypatch.setattr(tasks, "make_estimator", full_disk)
    with pytest.raises(OSError) as info:
        run_pipeline(load_pipeline(_write(tmp_path, "disk")), workers=1, progress=False)
    text = str(info.value)
    assert "Numba cache" in text and "NUMBA_CACHE_DIR" in text and "File too large" in text
    assert "cannot be fitted with its settings" not in text
    assert info.value.errno == errno.EFBIG
