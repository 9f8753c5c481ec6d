"""Fuzzing of the HDF5 readers: truncated and bit-flipped data set and model
files give a clear error (DatasetFileError / ModelFileError, both
ValueError) or a readable object; never a crash of the interpreter and
never a hang.

The damaged files are read in a child process with a timeout, so that a
segmentation fault inside HDF5 or a compiled kernel (a model loaded from a
damaged file is also used to predict) fails the test instead of killing the
test session.
"""

import json
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from bsvm_scale import GPR, SVC
from bsvm_scale.datasets import Dataset, random_splits, write_dataset
from bsvm_scale.storage import save_model

RNG = np.random.default_rng(808)
X = RNG.normal(size=(25, 3))
Y = np.sin(X[:, 0])
LAB = np.where(X[:, 1] > 0, 1, -1)
N_FLIPS = 60
CHILD_TIMEOUT_S = 300

CHILD = textwrap.dedent("""
    import json, sys, warnings
    import numpy as np
    warnings.simplefilter("ignore")
    from bsvm_scale.datasets import read_dataset, DatasetFileError
    from bsvm_scale.storage import load_model, ModelFileError
    kind = sys.argv[1]
    Xq = np.zeros((4, 3))
    for path in sys.argv[2:]:
        rec = {"path": path}
        try:
            if kind == "dataset":
                ds = read_dataset(path)
                rec["outcome"] = "ok"
                rec["finite_X"] = bool(np.all(np.isfinite(ds.X)))
            else:
                m = load_model(path)
                rec["outcome"] = "ok"
                try:
                    m.predict(Xq)
                    rec["predict"] = "ok"
                except Exception as exc:  # a clear Python error is acceptable here
                    rec["predict"] = type(exc).__name__ + ": " + str(exc)[:200]
        except (DatasetFileError, ModelFileError) as exc:
            rec["outcome"] = type(exc).__name__
            rec["message"] = str(exc)[:300]
        except Exception as exc:
            rec["outcome"] = "unexpected " + type(exc).__name__
            rec["message"] = str(exc)[:300]
        print(json.dumps(rec), flush=True)
""")


def _damaged_copies(good, out_dir, seed):
    """Truncations at 12 lengths and ``N_FLIPS`` single-bit flips (seeded)."""
    data = good.read_bytes()
    rng = np.random.default_rng(seed)
    paths = []
    for k, frac in enumerate(np.linspace(0.02, 0.98, 12)):
        p = out_dir / f"trunc{k}.h5"
        p.write_bytes(data[: int(frac * len(data))])
        paths.append(p)
    for k in range(N_FLIPS):
        buf = bytearray(data)
        pos = int(rng.integers(len(buf)))
        buf[pos] ^= 1 << int(rng.integers(8))
        p = out_dir / f"flip{k}.h5"
        p.write_bytes(bytes(buf))
        paths.append(p)
    return paths


def _read_in_child(kind, paths):
    proc = subprocess.run([sys.executable, "-c", CHILD, kind, *map(str, paths)],
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert proc.returncode == 0, f"reader crashed (rc={proc.returncode}):\n{proc.stderr[-3000:]}"
    records = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(records) == len(paths)
    return records


def _check(records, error_name, path_in_message=True):
    outcomes = [r["outcome"] for r in records]
    unexpected = [r for r in records if r["outcome"] not in ("ok", error_name)]
    assert not unexpected, unexpected
    assert outcomes.count(error_name) >= 12, outcomes  # every truncation at least
    if path_in_message:
        for r in records:
            if r["outcome"] == error_name:
                assert r["path"] in r["message"], r


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_damaged_dataset_files(tmp_path, compression):
    ds = Dataset(X=X, y=Y, name="fuzz", task="regression",
                 splits=random_splits(25, 15, 2, seed=1), extra={"f": Y.copy()},
                 provenance={"source": "test_fuzz_readers"})
    good = tmp_path / "good.h5"
    write_dataset(ds, good, compression=compression)
    records = _read_in_child("dataset", _damaged_copies(good, tmp_path, seed=1))
    _check(records, "DatasetFileError")


@pytest.mark.parametrize("model", [SVC(C=2.0), GPR(optimize=False)], ids=lambda m: type(m).__name__)
def test_damaged_model_files(tmp_path, model):
    model.fit(X, LAB if type(model).__name__ == "SVC" else Y)
    good = tmp_path / "good.h5"
    save_model(model, good)
    records = _read_in_child("model", _damaged_copies(good, tmp_path, seed=2))
    _check(records, "ModelFileError")
