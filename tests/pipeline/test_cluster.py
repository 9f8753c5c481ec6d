"""The [cluster] table: validation, batch job scripts (dask-jobqueue) and a run
on an adaptive local deployment."""

import re

import pytest

from bsvm_scale.cli import main
from bsvm_scale.pipeline.run.backends import job_script, lifetime_args
from bsvm_scale.pipeline.spec.cluster import walltime_seconds
from bsvm_scale.pipeline.spec.config import PipelineError, parse_pipeline
from bsvm_scale.pipeline.run.executor import dashboard_line, run_pipeline
from bsvm_scale.pipeline.outputs.runfile import read_run_file

BODY = """
[run]
name = "c"
output = "{out}"
retries = 1

[[datasets]]
name = "sinc"
generator = "sinc_silf"
n = 60
seed = 0
partitions = 2
n_train = 40

[[models]]
kind = "gpr"
search = {{ n_starts = 1 }}
settings = {{ options = {{ maxiter = 4 }} }}
"""


def _pipe(tmp_path, cluster):
    return parse_pipeline(BODY.format(out=tmp_path) + cluster, tmp_path / "p.toml")


def test_walltime_and_lifetime():
    assert walltime_seconds("02:00:00") == 7200
    assert walltime_seconds("1-00:30:00") == 86400 + 1800
    assert walltime_seconds("45") == 2700 and walltime_seconds("01:30") == 5400
    args = lifetime_args("02:00:00")
    life = int(args[1].rstrip("s"))
    stagger = int(args[3].rstrip("s"))
    assert life + stagger < 7200 and life >= 0.8 * 7200
    with pytest.raises(ValueError, match="walltime"):
        walltime_seconds("two hours")


@pytest.mark.parametrize("kind,header,queue_flag", [
    ("slurm", "#SBATCH", "-p normal"), ("pbs", "#PBS", "-q normal"),
    ("sge", "#$", "-q normal"), ("lsf", "#BSUB", "-q normal")])
def test_job_script_from_a_pipeline_file(tmp_path, kind, header, queue_flag):
    p = _pipe(tmp_path, f"""
[cluster]
kind = "{kind}"
cores = 4
memory = "16GB"
walltime = "02:00:00"
queue = "normal"
jobs = 6
directives = ["{header} --comment=nightly"]
""")
    script = job_script(p.cluster)
    assert header in script and queue_flag in script
    assert "export NUMBA_NUM_THREADS=1" in script and "export OPENBLAS_NUM_THREADS=1" in script
    life = int(re.search(r"--lifetime (\d+)s", script).group(1))
    assert life < 7200 and "--lifetime-stagger" in script
    assert "--nthreads 1" in script and "--nworkers 4" in script
    assert "--comment=nightly" in script


def test_job_script_command_and_bad_tables(tmp_path, capsys):
    f = tmp_path / "p.toml"
    f.write_text(BODY.format(out=tmp_path) + '\n[cluster]\nkind = "slurm"\ncores = 2\n'
                 'memory = "4GB"\nwalltime = "00:30:00"\n')
    assert main(["run", str(f), "--job-script"]) == 0
    assert "#SBATCH -t 00:30:00" in capsys.readouterr().out
    with pytest.raises(PipelineError) as err:
        _pipe(tmp_path, '\n[cluster]\nkind = "slurm"\ncores = 0\nimage = "x"\n')
    text = str(err.value)
    assert "cluster.cores: must be >= 1" in text and "cluster.image: not a key of kind" in text
    assert "cluster.walltime: required" in text
    with pytest.raises(PipelineError, match="cluster.kind: 'yarn' is not one of"):
        _pipe(tmp_path, '\n[cluster]\nkind = "yarn"\n')
    with pytest.raises(ValueError, match="submits no job script"):
        job_script(_pipe(tmp_path, '\n[cluster]\nkind = "local"\n').cluster)


def test_run_on_an_adaptive_local_deployment(tmp_path, capsys):
    p = _pipe(tmp_path, '\n[cluster]\nkind = "local"\nadaptive = true\nminimum = 0\n'
                        'workers = 2\n')
    record = run_pipeline(p, progress=True)
    assert record["meta"]["n_failed"] == 0 and record["meta"]["n_done"] == 2
    assert read_run_file(tmp_path / "c" / "run.h5")["meta"]["n_done"] == 2
    assert "dask dashboard:" in capsys.readouterr().err


def test_dashboard_line_without_bokeh(monkeypatch):
    from bsvm_scale.pipeline.run import executor

    monkeypatch.setattr(executor, "has_bokeh", lambda: False)
    assert "pip install 'bsvm_scale[cluster]'" in dashboard_line(object())


def _hog():
    import time

    import numpy as np

    blocks = []
    for _ in range(60):
        blocks.append(np.ones(3_000_000))  # 24 MB each
        time.sleep(0.05)
    return len(blocks)


def test_a_worker_killed_for_memory_is_named_as_such():
    import logging

    import dask
    from dask.distributed import Client, LocalCluster

    from bsvm_scale.pipeline.run.executor import death_reason

    with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
            LocalCluster(n_workers=1, threads_per_worker=1, memory_limit="400MB",
                         silence_logs=logging.CRITICAL, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        fut = client.submit(_hog, pure=False)
        exc = fut.exception()
        kind, text = death_reason(client, exc)
        assert kind == "memory" and "restarted for memory" in text and "MiB" in text
        assert death_reason(client, ValueError("bad"))[0] == "error"
