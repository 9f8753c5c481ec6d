"""save_model / load_model: lossless round trips for every estimator, clear errors."""

import copy
import json
import os

import h5py
import numpy as np
import pytest

from bsvm_scale.storage import FORMAT_VERSION, ModelFileError, load_model, save_model

RNG = np.random.default_rng(3)
X = RNG.normal(size=(30, 2))
XT = RNG.normal(size=(25, 2))
Y_REG = np.sin(X[:, 0]) + 0.1 * RNG.normal(size=30)
Y_BIN = np.where(X[:, 0] + 0.5 * RNG.normal(size=30) > 0, 1, -1)
Y_3 = np.digitize(X[:, 0], [-0.4, 0.4])
OPT = {"maxiter": 5}


def _models():
    from bsvm_scale.models.bsvr import BayesianSVR
    from bsvm_scale.models.btsvc import BayesianSVC
    from bsvm_scale.baselines.gpc import GPC
    from bsvm_scale.baselines.gp import GPR
    from bsvm_scale.baselines.rvm import RVC, RVR
    from bsvm_scale.baselines.svm import SVC, SVR, TSVC

    return [
        ("bsvr", BayesianSVR(n_starts=1, optimizer_options=OPT), Y_REG),
        ("bsvr_ard", BayesianSVR(n_starts=1, ard=True, optimizer_options=OPT,
                                 bounds={"ln_C": (-3.0, 5.0)}), Y_REG),
        ("btsvc", BayesianSVC(n_starts=1, optimizer_options=OPT), Y_BIN),
        ("btsvc_ovr", BayesianSVC(n_starts=1, optimizer_options=OPT, multi_class="ovr"), Y_3),
        ("btsvc_ovo", BayesianSVC(n_starts=1, optimizer_options=OPT), Y_3),
        ("svr", SVR(C=3.0, epsilon=0.05), Y_REG),
        ("svr_eb", SVR(C=3.0, epsilon=0.05, error_bars=True, standardize=True), Y_REG),
        ("svc", SVC(C=2.0), Y_BIN),
        ("tsvc", TSVC(kappa0=2.0), Y_BIN),
        ("gpr", GPR(n_starts=1, options=OPT), Y_REG),
        ("gpc", GPC(n_starts=1, options=OPT), Y_BIN),
        ("rvr", RVR(), Y_REG),
        ("rvc", RVC(), Y_BIN),
    ]


def _outputs(m):
    out = {"predict": m.predict(XT)}
    name = type(m).__name__
    if name in ("BayesianSVR", "GPR", "RVR"):
        out["std"] = m.predict(XT, return_std=True)[1]
        out["std_noise"] = m.predict(XT, return_std=True, include_noise=True)[1]
    if name == "SVR":
        out["std"] = m.predict(XT, return_std=True)[1]
    if hasattr(m, "predict_proba"):
        out["proba"] = m.predict_proba(XT)
    if hasattr(m, "decision_function"):
        df = m.decision_function(XT)
        out["decision"] = df
        if name in ("BayesianSVC", "GPC", "RVC"):
            out["decision_std"] = (m.latent_moments(XT)[1] if hasattr(m, "latent_moments")
                                   else m.decision_function(XT, return_std=True)[1])
    return out


@pytest.mark.parametrize("case", range(len(_models())))
def test_round_trip_bitwise(case, tmp_path):
    import warnings

    label, model, y = _models()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    path = tmp_path / f"{label}.h5"
    save_model(model, path)
    loaded = load_model(path)
    assert type(loaded) is type(model)
    assert repr(loaded.get_params()) == repr(model.get_params())
    a, b = _outputs(model), _outputs(loaded)
    assert a.keys() == b.keys()
    for k in a:
        assert np.array_equal(a[k], b[k]), (label, k)
    for k, v in vars(model).items():
        if k.endswith("_") and isinstance(v, np.ndarray):
            assert np.array_equal(getattr(loaded, k), v)
            assert getattr(loaded, k).dtype == v.dtype
    with h5py.File(path, "r") as f:
        assert f.attrs["library"] == "bsvm_scale"
        assert int(f.attrs["format_version"]) == FORMAT_VERSION
        assert f.attrs["estimator"] == type(model).__name__
    if label == "btsvc_ovr":
        assert len(loaded.estimators_) == 3
        assert all(type(e).__name__ == "BayesianSVC" for e in loaded.estimators_)


def test_no_pickle_anywhere():
    import bsvm_scale.storage as st

    src = open(st.__file__).read()
    for word in ("import pickle", "cloudpickle", "joblib", "dill"):
        assert word not in src


def _small_model():
    from bsvm_scale.baselines.svm import SVC

    return SVC(C=1.0).fit(X, Y_BIN)


def test_load_errors(tmp_path):
    good = tmp_path / "good.h5"
    save_model(_small_model(), good)
    # truncated
    data = good.read_bytes()
    bad = tmp_path / "trunc.h5"
    bad.write_bytes(data[: len(data) // 2])
    with pytest.raises(ValueError, match="trunc.h5"):
        load_model(bad)
    # not HDF5
    txt = tmp_path / "notes.txt"
    txt.write_text("hello")
    with pytest.raises(ModelFileError, match="not an HDF5 file"):
        load_model(txt)
    # HDF5 but not a model
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["X"] = np.zeros(3)
    with pytest.raises(ModelFileError, match="not a bsvm_scale model"):
        load_model(other)
    # another format version
    v3 = tmp_path / "v3.h5"
    v3.write_bytes(data)
    with h5py.File(v3, "r+") as f:
        f.attrs["format_version"] = np.int64(3)
    with pytest.raises(ModelFileError, match="format_version 3|reads format_version 1 and 2"):
        load_model(v3)
    with pytest.raises(FileNotFoundError):
        load_model(tmp_path / "missing.h5")


def test_atomic_write_keeps_old_file(tmp_path):
    path = tmp_path / "m.h5"
    save_model(_small_model(), path)
    before = path.read_bytes()

    class NotAModel:
        pass

    with pytest.raises(TypeError):
        save_model(NotAModel(), path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.h5"]
    m = _small_model()
    m.strange_ = object()
    with pytest.raises(TypeError, match="strange_"):
        save_model(m, path)
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["m.h5"]


def _exact(a, b):
    """Equal values of the same type, recursively (NaN equals NaN, -0.0 keeps its sign)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _exact(a[k], b[k])
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _exact(x, y)
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
    elif isinstance(a, (float, np.floating)):
        assert (np.isnan(a) and np.isnan(b)) or (a == b and np.signbit(a) == np.signbit(b))
    else:
        assert a == b


RECORD = {
    "none": None, "t": True, "i": -7, "i64max": 2**63 - 1, "f": 0.1 + 0.2, "nan": float("nan"),
    "inf": -float("inf"), "negzero": -0.0, "c": complex(1.5, -2.0), "s": "", "u": "g\u00e4rtner \u03ba",
    "long": "x" * 5000, "f32": np.float32(1.1), "i8": np.int8(-3), "u64": np.uint64(2**64 - 1),
    "c64": np.complex64(1 - 2j), "b_": np.bool_(False), "f16": np.float16(0.3),
    "arr": np.arange(3.0), "kind": "a key named like an attribute", "scalars": 3,
    "a/b": 1.0, "": "empty key", 7: "int key", 8: np.arange(2), ".": None,
    "nested": {"x": [1, (2.0, "y"), {"z": None}], "empty": {}}, "list": [None, np.int64(4)],
}


def test_record_round_trip_exact_types(tmp_path):
    from bsvm_scale.pipeline.outputs.records import read_record, write_record

    path = write_record(tmp_path / "r.h5", RECORD)
    _exact(RECORD, read_record(path))
    with h5py.File(path, "r") as f:  # the scalars are attributes, not datasets
        assert "scalars" in f["record"].attrs
        int_key_child = f"__key{list(RECORD).index(8)}"
        assert set(f["record"]) == {"long", "arr", int_key_child, "nested", "list"}


def test_large_dict_falls_back_to_datasets(tmp_path):
    from bsvm_scale.pipeline.outputs.records import read_record, write_record

    rec = {f"k{i}": float(i) / 3.0 for i in range(6000)}  # JSON well over 48 KiB
    path = write_record(tmp_path / "big.h5", rec)
    _exact(rec, read_record(path))
    with h5py.File(path, "r") as f:  # too long for one attribute: one child per entry
        assert "scalars" not in f["record"].attrs and len(f["record"]) == 6000


def test_format_1_files_still_load(tmp_path, monkeypatch):
    """A file written without ``scalars`` attributes (format 1, every scalar a
    dataset) loads to the same predictions and the same record."""
    import bsvm_scale.storage as st
    from bsvm_scale.pipeline.outputs.records import read_record, write_record
    from bsvm_scale.models.bsvr import BayesianSVR

    model = BayesianSVR(n_starts=1, optimizer_options=OPT).fit(X, Y_REG)
    monkeypatch.setattr(st, "_inline_scalar", lambda value: None)
    monkeypatch.setattr(st, "FORMAT_VERSION", 1)
    old = save_model(model, tmp_path / "v1.h5")
    old_rec = write_record(tmp_path / "v1_record.h5", RECORD)
    monkeypatch.undo()
    with h5py.File(old, "r") as f:
        assert int(f.attrs["format_version"]) == 1
        assert "scalars" not in f["params"].attrs and "C" in f["params"]
    loaded = load_model(old)
    assert repr(loaded.get_params()) == repr(model.get_params())
    a, b = _outputs(model), _outputs(loaded)
    for k in a:
        assert np.array_equal(a[k], b[k]), k
    _exact(RECORD, read_record(old_rec))


def test_files_from_before_a_new_parameter_load_with_how_they_were_fitted(tmp_path, monkeypatch):
    """A BayesianSVR file saved before ``ard_init`` existed loads with
    ``ard_init="start"`` (the behaviour it was fitted with), not the new default."""
    from bsvm_scale.models.bsvr import BayesianSVR

    model = BayesianSVR(n_starts=1, optimizer_options=OPT).fit(X, Y_REG)
    names = [k for k in BayesianSVR._get_param_names() if k != "ard_init"]
    monkeypatch.setattr(BayesianSVR, "get_params",
                        lambda self, deep=True: {k: getattr(self, k) for k in names})
    old = copy.copy(model)
    del old.ard_init  # an estimator of the version without the parameter
    path = save_model(old, tmp_path / "old.h5")
    monkeypatch.undo()
    with h5py.File(path, "r") as f:
        assert "ard_init" not in json.loads(f.attrs["params_json"])
    assert load_model(path).ard_init == "start"
    assert load_model(save_model(model, tmp_path / "new.h5")).ard_init == "continuation"


def test_a_multiclass_file_from_before_one_versus_one_loads_as_one_versus_rest(tmp_path,
                                                                               monkeypatch):
    """A three-class BayesianSVC file written before ``multi_class`` existed
    holds one-versus-rest models; it loads with ``multi_class="ovr"`` (not the
    new default "ovo") and predicts as it did."""
    from bsvm_scale.models.btsvc import BayesianSVC

    rng = np.random.default_rng(3)
    y3 = np.repeat([0, 1, 2], 20)
    X3 = np.array([[0, 0], [2.5, 0], [0, 2.5]])[y3] + 0.8 * rng.standard_normal((60, 2))
    model = BayesianSVC(n_starts=1, optimizer_options=OPT, multi_class="ovr").fit(X3, y3)
    new = {"multi_class", "coupling", "decision_function_shape"}
    names = [k for k in BayesianSVC._get_param_names() if k not in new]
    monkeypatch.setattr(BayesianSVC, "get_params",
                        lambda self, deep=True: {k: getattr(self, k) for k in names})
    old = copy.copy(model)
    for k in new:
        delattr(old, k)
    path = save_model(old, tmp_path / "old.h5")
    monkeypatch.undo()
    with h5py.File(path, "r") as f:
        assert not new & set(json.loads(f.attrs["params_json"]))
    back = load_model(path)
    assert back.multi_class == "ovr"
    np.testing.assert_array_equal(back.predict_proba(X3), model.predict_proba(X3))
    np.testing.assert_array_equal(back.decision_function(X3), model.decision_function(X3))
