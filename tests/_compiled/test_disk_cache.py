"""The disk-cache policy of :mod:`bsvm_scale._compiled` (its module docstring):
every compiled function caches on disk, a cached caller of parallel code loads
safely into a fresh process, and an edit of any module is never loaded stale.

The end-to-end tests run a copy of the subpackage (it imports nothing from the
rest of the package) in fresh processes with their own ``NUMBA_CACHE_DIR``.
"""

import importlib
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import numba
import pytest
from numba.core import types
from numba.core.registry import CPUDispatcher

import bsvm_scale._compiled as compiled

_TRIG = """
import numpy as np
from kcopy.covariance import make_kernel
from kcopy import row_cache, smo_trig
rng = np.random.default_rng(0)
X = rng.normal(size=(400, 2))
y = np.where(X[:, 0] + 0.5 * rng.normal(size=400) > 0, 1.0, -1.0)
alpha, g = np.zeros(400), np.empty(400)
dual = smo_trig.TrigDual(y, np.ones(400), alpha, g)
smo_trig.gradient_from_f(dual, np.zeros(400))
out = smo_trig.smo_loop(make_kernel(X, np.ones(2), 2.0, 1.0), row_cache.allocate(400, 400),
                        dual, 1e-8, 10 ** 6, 2)
print(out[2], repr(float(alpha @ np.arange(400.0))),
      sum(smo_trig.smo_loop.stats.cache_hits.values()))
"""

_GBAR = """
import numpy as np
from kcopy.covariance import make_kernel
from kcopy import row_cache, silf_inner
X = np.linspace(-1.0, 1.0, 20).reshape(10, 2)
gbar = np.zeros(10)
silf_inner.update_gbar(make_kernel(X, np.ones(2), 1.0, 0.5), row_cache.allocate(10, 2), gbar,
                       3, 0.0, 1.0, 1.0)
print(repr(float(gbar.sum())), sum(silf_inner.update_gbar.stats.cache_hits.values()))
"""


def _dispatchers():
    for info in pkgutil.iter_modules(compiled.__path__):
        mod = importlib.import_module(f"{compiled.__name__}.{info.name}")
        for name, obj in vars(mod).items():
            if isinstance(obj, CPUDispatcher) and obj.py_func.__module__ == mod.__name__:
                yield f"{info.name}.{name}", obj


def test_every_compiled_function_follows_the_policy():
    found = dict(_dispatchers())
    assert len(found) > 60 and "smo_trig.smo_loop" in found and "smo_classic.smo_qp" in found
    wrong = [name for name, d in found.items()
             if isinstance(d._cache, compiled._SubpackageCache) != compiled.CACHE]
    assert wrong == []


def test_policy_follows_the_numba_version():
    major, minor = (int(p) for p in numba.__version__.split(".")[:2])
    assert compiled.CACHE == ((major, minor) >= (0, 63))


@pytest.mark.skipif(not compiled.CACHE, reason="no disk cache with numba < 0.63")
def test_cache_key_carries_the_source_digest():
    snap = importlib.import_module(f"{compiled.__name__}.smo_silf").snap
    key = snap._cache._index_key((types.float64, types.float64), snap.targetctx.codegen())
    assert key[-1] == compiled.SOURCE_DIGEST and len(compiled.SOURCE_DIGEST) == 64


@pytest.fixture
def package_copy(tmp_path):
    """A copy of the subpackage as ``kcopy``, and a runner of scripts on it in
    fresh processes sharing one empty numba cache directory."""
    shutil.copytree(Path(compiled.__file__).parent, tmp_path / "kcopy",
                    ignore=shutil.ignore_patterns("__pycache__"))

    def run(script, **env):
        full = {**os.environ, "PYTHONPATH": str(tmp_path),
                "NUMBA_CACHE_DIR": str(tmp_path / "cache"), **env}
        res = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=full,
                             capture_output=True, text=True, timeout=900)
        assert res.returncode == 0, res.stderr[-2000:]
        return res.stdout.split()

    return tmp_path / "kcopy", run


@pytest.mark.skipif(not compiled.CACHE, reason="no disk cache with numba < 0.63")
def test_cached_caller_of_parallel_code_loads_in_a_fresh_process(package_copy):
    # smo_loop calls two parallel=True functions; loaded from the cache as the
    # first parallel code of a process it must start the threading layer itself
    # (numba #8578), whatever the thread count
    _, run = package_copy
    status, value, hits = run(_TRIG)
    assert status == "0" and hits == "0"
    for threads in ("2", "1"):
        again = run(_TRIG, NUMBA_NUM_THREADS=threads)
        assert again[:2] == [status, value] and again[2] == "1"


@pytest.mark.skipif(not compiled.CACHE, reason="no disk cache with numba < 0.63")
def test_an_edit_in_another_module_is_not_loaded_stale(package_copy):
    # update_gbar (smo_silf.py) holds its own copy of the row computation
    # (covariance.py): editing only covariance.py must recompile it
    root, run = package_copy
    value, hits = run(_GBAR)
    assert hits == "0" and run(_GBAR) == [value, "1"]
    cov = root / "covariance.py"
    text = cov.read_text()
    old = "acc[j] = kappa0 * exp_neg(-0.5 * acc[j]) + kappa_b\n"
    assert text.count(old) == 1  # _cov_from_sqdist: the entries of cov_row_serial's rows
    cov.write_text(text.replace(old, old.replace("+ kappa_b", "+ 2.0 * kappa_b")))
    new_value, new_hits = run(_GBAR)
    assert new_hits == "0"
    assert float(new_value) == pytest.approx(float(value) + 10 * 0.5)
