"""Pipeline faults, each provoked for real: a worker process killed mid-task,
an unreachable scheduler, an output path that cannot be written, files that
hit a size limit (the kernel's EFBIG, standing in for a full disk), and
SIGINT/SIGTERM to the driver. Every run is a separate ``bsvm-scale run``
process, as in production.
"""

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import h5py
import psutil
import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.outputs.runfile import read_run_file

REPO = Path(__file__).resolve().parents[2]
PIPELINE = """
[run]
name = "{name}"
output = "{out}"
retries = 0

[[datasets]]
name = "sinc"
generator = "sinc_silf"
n = {n}
seed = 0
partitions = 1
n_train = {n_train}
n_test = 20

[[models]]
kind = "bsvr"
search = {{ n_starts = 2 }}
settings = {{ optimizer_options = {{ maxiter = 25 }} }}
"""
N_TASKS = 2
RUN_TIMEOUT_S = 900      # generous bound on one run (a hang fails the test, not CI)
WAIT_S = 600
FSIZE_LIMIT = 100_000  # bytes: above a checkpoint and the run file, below a model file


def _write(tmp, name, out=None, n_train=40):
    path = Path(tmp) / f"{name}.toml"
    path.write_text(PIPELINE.format(name=name, out=str(out or Path(tmp) / "runs"),
                                    n=n_train + 20, n_train=n_train))
    return path


def _start(path, log, preexec_fn=None, delay="0.4"):
    env = dict(os.environ, BSVM_PIPELINE_EVAL_DELAY=delay)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.Popen([sys.executable, "-m", "bsvm_scale.cli", "run", str(path),
                             "--workers", "1", "--no-report", "--no-progress"],
                            env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, preexec_fn=preexec_fn)


def _inflight(run_dir):
    """Checkpoints of tasks that have no result yet."""
    tasks = run_dir / "tasks"
    if not tasks.exists():
        return []
    return [c for c in tasks.glob("*/checkpoint.h5") if not (c.parent / "result.h5").exists()]


def _wait_inflight(proc, run_dir, log_path):
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline and proc.poll() is None:
        if _inflight(run_dir):
            return
        time.sleep(0.1)
    pytest.fail("no task was in flight:\n" + log_path.read_text()[-3000:])


def _start_inflight(tmp_path, name):
    """A driver for pipeline ``name`` that is running a task (checkpoint written)."""
    path = _write(tmp_path, name)
    run_dir = tmp_path / "runs" / name
    log_path = tmp_path / "driver.log"
    log = open(log_path, "w")
    proc = _start(path, log)
    _wait_inflight(proc, run_dir, log_path)
    return path, run_dir, proc, log, log_path


def _workers(proc):
    """Dask worker processes started (via multiprocessing spawn) by the driver."""
    try:
        kids = psutil.Process(proc.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    out = []
    for k in kids:
        try:
            if "spawn_main" in " ".join(k.cmdline()):
                out.append(k)
        except psutil.Error:
            pass
    return out


def _finish(proc, log, log_path):
    try:
        rc = proc.wait(timeout=RUN_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
    return rc, log_path.read_text()


def _resume_completes(path, run_dir):
    """Running the same command again finishes the run; returns its meta."""
    assert main(["run", str(path), "--workers", "1", "--no-report", "--no-progress"]) == 0
    meta = read_run_file(run_dir / "run.h5")["meta"]
    assert meta["status"] == "complete" and meta["n_done"] == N_TASKS
    return meta


def test_worker_killed_mid_task_is_retried(tmp_path):
    _, run_dir, proc, log, log_path = _start_inflight(tmp_path, "wkill")
    victims = _workers(proc)
    assert victims, "no worker process found"
    for v in victims:
        v.kill()                                   # SIGKILL: the worker dies mid-task
    rc, text = _finish(proc, log, log_path)
    assert rc == 0, text[-3000:]
    meta = read_run_file(run_dir / "run.h5")
    assert meta["meta"]["status"] == "complete" and meta["meta"]["n_failed"] == 0
    assert meta["meta"]["n_done"] == N_TASKS
    # the task that was interrupted continued from its per-evaluation checkpoint
    assert any(t["resumed_from"] > 0 for t in meta["tasks"].values())
    assert all(not v.is_running() or v.status() == psutil.STATUS_ZOMBIE for v in victims)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_scheduler_is_a_clear_error(tmp_path):
    path = _write(tmp_path, "nosched")
    addr = f"tcp://127.0.0.1:{_free_port()}"          # nothing listens there
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-m", "bsvm_scale.cli", "run", str(path),
                           "--scheduler", addr, "--no-report", "--no-progress"],
                          env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert f"cannot reach the dask scheduler at '{addr}'" in proc.stderr
    assert not (tmp_path / "runs" / "nosched" / "run.h5").exists()


def test_output_path_not_writable(tmp_path, capsys):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("a file where the output directory should be")
    path = _write(tmp_path, "nowrite", out=blocker / "runs")
    assert main(["run", str(path), "--no-report", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "Not a directory" in err and str(blocker) in err


def _ignore_sigxfsz():
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)   # write() then fails with EFBIG


def test_file_size_limit_fails_clearly_and_keeps_checkpoints(tmp_path):
    """Once a task is running, the driver and its worker may no longer write
    files beyond 100 kB (with 400 training cases a BSVR model file is 160-175
    kB, a checkpoint at most 31 kB, the run file 38 kB: measured in storage
    format 2): the kernel refuses the writes with EFBIG, as on a full disk.
    The tasks fail with 'File too large' (recorded in the run file), the
    checkpoints stay readable, and the same command without the limit
    completes the run from them. (The limit is set after start-up so that
    Numba's cache files are not what hits it.)"""
    path = _write(tmp_path, "full", n_train=400)
    run_dir = tmp_path / "runs" / "full"
    log_path = tmp_path / "driver.log"
    log = open(log_path, "w")
    proc = _start(path, log, preexec_fn=_ignore_sigxfsz)
    _wait_inflight(proc, run_dir, log_path)
    for p in [psutil.Process(proc.pid), *_workers(proc)]:
        p.rlimit(psutil.RLIMIT_FSIZE, (FSIZE_LIMIT, FSIZE_LIMIT))
    rc, text = _finish(proc, log, log_path)
    assert rc == 1, text[-3000:]                     # the run finished with failed tasks
    assert "File too large" in text, text[-3000:]
    rec = read_run_file(run_dir / "run.h5")          # small: it fits under the limit
    assert rec["meta"]["status"] == "incomplete" and rec["meta"]["n_failed"] == N_TASKS
    assert all("File too large" in f["error"] for f in rec["failures"].values())
    checkpoints = list((run_dir / "tasks").glob("*/checkpoint.h5"))
    assert checkpoints
    for c in checkpoints:
        with h5py.File(c, "r") as f:                 # intact, not truncated
            assert len(f.keys()) + len(f.attrs) > 0
    meta = _resume_completes(path, run_dir)
    assert meta["n_resumed_from_checkpoint"] >= 1


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
def test_signal_to_driver_exits_cleanly_and_resumes(tmp_path, sig):
    path, run_dir, proc, log, log_path = _start_inflight(tmp_path, "sig")
    workers = _workers(proc)
    os.kill(proc.pid, sig)                           # the driver only, as a terminal or init would
    rc, text = _finish(proc, log, log_path)
    assert rc == 128 + sig, text[-3000:]
    assert f"interrupted by {sig.name}" in text and "resume" in text
    assert (run_dir / ".lock").read_text() == ""   # released by the driver, not by its death
    psutil.wait_procs(workers, timeout=60)
    assert not any(w.is_running() and w.status() != psutil.STATUS_ZOMBIE for w in workers)
    assert _inflight(run_dir)                        # the interrupted task's checkpoint is kept
    part = read_run_file(run_dir / "run.h5")["meta"]  # the run file says where it stopped
    finished = len(list((run_dir / "tasks").glob("*/result.h5")))
    assert part["status"] == "interrupted" and part["n_done"] == finished < N_TASKS
    meta = _resume_completes(path, run_dir)
    assert meta["n_resumed_from_checkpoint"] >= 1
