"""Two tiny reproduction runs shared by the export, archive and results-page
tests: a tiny R2 (two training sizes, two repetitions, a fix_from model), a tiny
C3 (a stored-partition and a generated data set, 3 x 3 evidence grids) and a
tiny C1 (the models its section loads). Test modules import the fixtures
(``from tiny_runs import tiny_run``); each importing module runs them once."""

import shutil
from pathlib import Path

import pytest

from bsvm_scale.pipeline.spec.config import load_pipeline
from bsvm_scale.pipeline.run.executor import run_pipeline

#: the repository checkout
REPO = Path(__file__).resolve().parents[1]

TINY_R2 = """
[run]
name = "repro_r2_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "sinc"
generator = "sinc_gauss"
n_train = [12, 24]
partitions = 2
test = {{ n = 40, params = {{ noise_free = true }} }}

[[models]]
kind = "bsvr"
name = "BSVR"
search = {{ n_starts = 1 }}
settings = {{ optimizer_options = {{ maxiter = 4 }} }}

[[models]]
kind = "sk_svr"
name = "LIBSVM-SVR-CV"
cv = {{ folds = 3, coarse_points = 2, fine_points = 0 }}

[[models]]
kind = "bsvr"
name = "BSVR-A"
fix_from = {{ model = "BSVR", partitions = 1 }}
"""

TINY_C3 = """
[run]
name = "repro_c3_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "titanic"
path = "{data}/titanic.h5"
partitions = "stored"
max_partitions = 2

[[datasets]]
name = "twonorm"
generator = "twonorm"
n = 140
n_train = 60
partitions = 2

[[models]]
kind = "btsvc"
name = "BTSVC"
search = {{ n_starts = 1 }}
settings = {{ optimizer_options = {{ maxiter = 3 }} }}
evidence_grid = {{ points = 3, decades_kappa0 = 1.0, decades_kappa = 0.5 }}

[[models]]
kind = "gpc"
name = "GPC"
search = {{ n_starts = 1 }}
"""


TINY_C1 = """
[run]
name = "repro_c1_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "c1"
generator = "gauss1d"
n = 40
n_train = 40
partitions = 1
test = {{ n = 200, seed = 1001 }}

[[models]]
kind = "btsvc"
name = "BTSVC"
search = {{ n_starts = 1 }}
settings = {{ optimizer_options = {{ maxiter = 3 }} }}

[[models]]
kind = "gpc"
name = "GPC"
search = {{ n_starts = 1 }}

[[models]]
kind = "sk_svc"
name = "LIBSVM-SVC-CV"
cv = {{ folds = 3, coarse_points = 2, fine_points = 0 }}
"""


def run_tiny_r2(tmp):
    """Run the tiny R2 pipeline with its runs under ``tmp/runs``; returns the record."""
    return _run(tmp, "repro_r2_tiny", TINY_R2.format(out=str(tmp / "runs")))


def run_tiny_c3(tmp):
    """Run the tiny C3 pipeline with its runs under ``tmp/runs``; returns the run directory."""
    rec = _run(tmp, "repro_c3_tiny", TINY_C3.format(out=str(tmp / "runs"),
                                                     data=str(REPO / "data")))
    assert rec["meta"]["status"] == "complete"
    return Path(rec["meta"]["run_dir"])


def run_tiny_c1(tmp):
    """Run the tiny C1 pipeline with its runs under ``tmp/runs``; returns the run directory."""
    rec = _run(tmp, "repro_c1_tiny", TINY_C1.format(out=str(tmp / "runs")))
    assert rec["meta"]["status"] == "complete"
    return Path(rec["meta"]["run_dir"])


def _run(tmp, name, text):
    path = tmp / f"{name}.toml"
    path.write_text(text)
    return run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)


def stopped_c3(run_dir, folder):
    """A copy of the tiny C3 run in ``folder/runs`` in which GPC has not finished
    partition 0 of twonorm (as in a stopped run); returns its directory."""
    from bsvm_scale.pipeline.outputs.runfile import read_run_file, write_run_file

    src = Path(folder) / "runs" / "repro_c3_tiny"
    shutil.copytree(run_dir, src)
    rec = read_run_file(src)
    del rec["results"]["twonorm"]["GPC"]["p000"]
    write_run_file(src / "run.h5", rec)
    return src


@pytest.fixture(scope="session")
def tiny_run(tmp_path_factory):
    """``(folder, record)`` of a finished tiny R2 run (two sizes, two repetitions)."""
    tmp = tmp_path_factory.mktemp("repro")
    return tmp, run_tiny_r2(tmp)


@pytest.fixture(scope="session")
def tiny_c3(tmp_path_factory):
    """The run directory of a finished tiny C3 run with 3 x 3 evidence grids."""
    return run_tiny_c3(tmp_path_factory.mktemp("repro_c3"))


@pytest.fixture(scope="session")
def tiny_c1(tmp_path_factory):
    """The run directory of a finished tiny C1 run (BTSVC, GPC, LIBSVM's SVC)."""
    return run_tiny_c1(tmp_path_factory.mktemp("repro_c1"))
