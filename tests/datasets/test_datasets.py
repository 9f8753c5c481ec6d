"""Tests of bsvm_scale.datasets: generators, HDF5 format, shipped real data, registry."""

from __future__ import annotations

import math
import os
import shutil

import h5py
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bsvm_scale import datasets as D
from bsvm_scale.datasets import (
    Dataset,
    DatasetFileError,
    dataset_info,
    generate,
    list_datasets,
    load_real,
    read_dataset,
    write_dataset,
)

SYNTHETIC = [e.name for e in list_datasets("synthetic")]
REAL = [e.name for e in list_datasets("real")]


def _equal(a: Dataset, b: Dataset):
    assert a.name == b.name and a.task == b.task
    assert a.X.dtype == b.X.dtype and np.array_equal(a.X, b.X)
    assert a.y.dtype == b.y.dtype and np.array_equal(a.y, b.y)
    assert a.feature_names == b.feature_names
    assert a.provenance == b.provenance
    assert a.description == b.description
    assert a.n_splits == b.n_splits
    for (p, q), (r, s) in zip(a.splits or [], b.splits or []):
        assert np.array_equal(p, r) and np.array_equal(q, s)
    assert sorted(a.extra) == sorted(b.extra)
    for k in a.extra:
        assert a.extra[k].dtype == b.extra[k].dtype
        assert np.array_equal(a.extra[k], b.extra[k])


# ------------------------------------------------------------- registry


def test_registry_lists_every_protocol_set():
    names = {e.name for e in list_datasets()}
    for name in ["sinc_silf", "sinc_gauss", "robot_arm", "robot_arm6", "mackey_glass",
                 "gauss1d", "gauss2d", "twonorm", "ringnorm", "waveform", "friedman1",
                 "friedman2", "friedman3", "boston", "pima", "titanic", "breast_cancer",
                 "digits", "diamonds"]:
        assert name in names
    for e in list_datasets():
        name, task, kind, description, n = e
        assert task in D.TASKS and kind in ("synthetic", "real")
        assert description and "\n" not in description and n > 0


def test_registry_errors():
    with pytest.raises(ValueError, match="unknown data set 'sinc_slif'.*sinc_silf"):
        generate("sinc_slif", 10, 0)
    with pytest.raises(ValueError, match="n must be positive"):
        generate("sinc_gauss", 0, 0)
    with pytest.raises(ValueError, match="unknown parameter"):
        generate("sinc_gauss", 10, 0, bogus=1)
    with pytest.raises(ValueError, match="takes no parameters"):
        generate("boston", None, 0, beta=0.1)
    with pytest.raises(TypeError):
        generate("sinc_gauss", 10, 1.5)
    with pytest.raises(ValueError):
        generate("sinc_gauss", 10, -1)
    with pytest.raises(ValueError, match="kind"):
        list_datasets("other")


@pytest.mark.parametrize("name", SYNTHETIC)
def test_generators_deterministic_and_shaped(name):
    a = generate(name, 257, 11)
    b = generate(name, 257, 11)
    c = generate(name, 257, 12)
    _equal(a, b)
    n_rows = 257
    assert a.X.shape[0] == n_rows and a.y.shape == (n_rows,)
    assert a.X.dtype == np.float64 and np.all(np.isfinite(a.X)) and np.all(np.isfinite(a.y))
    assert len(a.feature_names) == a.X.shape[1]
    assert not np.array_equal(a.X, c.X)
    assert a.provenance["seed"] == 11 and a.provenance["source"] == "synthetic"
    if a.task == "classification":
        assert set(np.unique(a.y)) == {-1, 1}
    for v in a.extra.values():
        assert v.shape[0] == n_rows


def test_generator_accepts_numpy_generator():
    rng = np.random.default_rng(5)
    a = D.twonorm(50, rng)
    b = D.twonorm(50, rng)  # stream moves on
    assert not np.array_equal(a.X, b.X)
    assert "Generator" in a.provenance["seed"]


def test_expected_dimensions():
    dims = {"sinc_silf": 1, "sinc_gauss": 1, "robot_arm": 2, "robot_arm6": 6,
            "mackey_glass": 8, "gauss1d": 1, "gauss2d": 2, "twonorm": 20, "ringnorm": 20,
            "waveform": 21, "friedman1": 10, "friedman2": 4, "friedman3": 4}
    for name, d in dims.items():
        assert generate(name, 20, 0).X.shape == (20, d), name


# ------------------------------------------------------------------ sinc


def test_sinc_silf_large_and_noise_variance():
    from bsvm_scale.inference.losses import silf_noise_variance

    ds = D.sinc_silf(50_000, 3)
    assert ds.X.shape == (50_000, 1) and ds.y.shape == (50_000,)
    x = ds.X[:, 0]
    assert x.min() >= -10 and x.max() <= 10
    assert abs(x.mean()) < 0.1
    assert np.allclose(ds.extra["f"], np.sin(np.abs(x)) / np.abs(x))
    resid = ds.y - ds.extra["f"]
    assert np.allclose(resid, ds.extra["noise"])
    s2 = silf_noise_variance(10.0, 0.1, 0.3)
    assert ds.provenance["noise_variance"] == pytest.approx(s2)
    # sampling sd of a variance estimate is about sqrt((kurtosis - 1) / n) * s2, ~1%
    assert resid.var() == pytest.approx(s2, rel=0.05)
    assert abs(resid.mean()) < 5 * math.sqrt(s2 / 50_000)


def test_sinc_silf_parameters_override():
    from bsvm_scale.inference.losses import silf_noise_variance

    ds = generate("sinc_silf", 20_000, 1, beta=0.1, C=3.0)
    assert ds.provenance["params"]["beta"] == 0.1
    assert ds.extra["noise"].var() == pytest.approx(silf_noise_variance(3.0, 0.1, 0.1), rel=0.06)


def test_sinc_gauss_variance_and_noise_free():
    ds = D.sinc_gauss(40_000, 2)
    assert ds.extra["noise"].var() == pytest.approx(0.04, rel=0.03)
    clean = D.sinc_gauss(40_000, 2, noise_free=True)
    assert np.array_equal(clean.X, ds.X)
    assert np.array_equal(clean.y, clean.extra["f"])
    assert clean.provenance["noise_variance"] == 0.0
    assert D.sinc(0.0) == 1.0


# ------------------------------------------------------------- robot arm


def test_robot_arm_recipe():
    ds = D.robot_arm(20_000, 4)
    x1, x2 = ds.X[:, 0], ds.X[:, 1]
    a = np.abs(x1)
    assert a.min() >= 0.453 and a.max() <= 1.932
    assert 0.45 < np.mean(x1 > 0) < 0.55
    assert x2.min() >= 0.534 and x2.max() <= 3.142
    f1 = 2.0 * np.cos(x1) + 1.3 * np.cos(x1 + x2)
    f2 = 2.0 * np.sin(x1) + 1.3 * np.sin(x1 + x2)
    assert np.allclose(ds.extra["f1"], f1) and np.allclose(ds.extra["f2"], f2)
    assert np.array_equal(ds.y, ds.extra["y1"])
    assert (ds.y - f1).std() == pytest.approx(0.05, rel=0.05)
    two = D.robot_arm(500, 4, output=2)
    assert np.array_equal(two.y, two.extra["y2"])
    with pytest.raises(ValueError):
        D.robot_arm(10, 0, output=3)


def test_robot_arm6_extends_two_input_set():
    a = D.robot_arm(3000, 8)
    b = generate("robot_arm6", 3000, 8)
    assert np.array_equal(b.X[:, :2], a.X) and np.array_equal(b.y, a.y)
    assert b.feature_names == ["x1", "x2", "x3", "x4", "x5", "x6"]
    assert (b.X[:, 2] - b.X[:, 0]).std() == pytest.approx(0.02, rel=0.1)
    assert (b.X[:, 3] - b.X[:, 1]).std() == pytest.approx(0.02, rel=0.1)
    for j in (4, 5):
        assert abs(b.X[:, j].mean()) < 0.1 and b.X[:, j].std() == pytest.approx(1, rel=0.1)


# ----------------------------------------------------------- Mackey-Glass


def test_mackey_glass_sanity():
    ds = D.mackey_glass(3000, 0)
    X, y = ds.X, ds.y
    assert X.shape == (3000, 8)
    # bounded on the attractor, not constant, lag structure
    assert X.min() > 0.2 and X.max() < 1.6
    assert y.std() > 0.1
    assert np.array_equal(X[1:, :-1], X[:-1, 1:])
    assert np.array_equal(y[:-1], X[1:, -1])
    assert np.array_equal(ds.extra["f"], y)
    assert np.allclose(np.diff(ds.extra["t"]), 1.0)
    # not periodic with a short period: many distinct local maxima heights
    s = y
    peaks = s[1:-1][(s[1:-1] > s[:-2]) & (s[1:-1] > s[2:])]
    assert len(peaks) > 50 and np.unique(np.round(peaks, 3)).size > 20
    # chaotic: two histories 1e-5 apart separate to an O(1) difference
    # (largest Lyapunov exponent of tau=17 is about 0.005 per unit time)
    t1, s1 = D.mackey_glass_series(4000, 0, burn_in=0.0, history_jitter=0.0, x0=1.2)
    t2, s2 = D.mackey_glass_series(4000, 0, burn_in=0.0, history_jitter=0.0, x0=1.2 + 1e-5)
    assert np.abs(s1[:100] - s2[:100]).max() < 1e-3
    assert np.abs(s1[-300:] - s2[-300:]).max() > 0.1


def test_mackey_glass_step_size_converged():
    _, a = D.mackey_glass_series(120, 0, burn_in=0.0, history_jitter=0.0, steps_per_unit=10)
    _, b = D.mackey_glass_series(120, 0, burn_in=0.0, history_jitter=0.0, steps_per_unit=40)
    assert np.abs(a - b).max() < 1e-3


def test_mackey_glass_chronological_split():
    ds = generate("mackey_glass", 1100, 0, n_splits=1, n_train=1000)
    tr, te = ds.splits[0]
    assert np.array_equal(tr, np.arange(1000)) and np.array_equal(te, np.arange(1000, 1100))
    with pytest.raises(ValueError, match="time series"):
        generate("mackey_glass", 1100, 0, n_splits=2, n_train=1000)


# --------------------------------------------------- Gaussian class sets


def test_gauss1d_counts_and_outlier():
    ds = D.gauss1d(100, 0)
    assert (ds.y == 1).sum() == 50 and (ds.y == -1).sum() == 50
    out = D.gauss1d(100, 0, outlier=True)
    assert out.n_samples == 101
    assert out.X[-1, 0] == -2.0 and out.y[-1] == -1 and out.extra["outlier"][-1] == 1
    assert np.array_equal(out.X[:-1], ds.X)
    big = D.gauss1d(40_000, 1)
    assert big.X[big.y == 1, 0].mean() == pytest.approx(-2, abs=0.05)
    assert big.X[big.y == -1, 0].std() == pytest.approx(1, abs=0.03)
    p = D.gauss1d_posterior(np.array([-2.0, 0.0, 2.0]))
    assert p[0] > 0.99 and p[1] == pytest.approx(0.5) and p[2] < 0.01


def test_gauss2d_class_moments():
    ds = D.gauss2d(40_000, 7)
    assert (ds.y == 1).sum() == 20_000
    pos, neg = ds.X[ds.y == 1], ds.X[ds.y == -1]
    se = 4 * math.sqrt(2 / 20_000)
    assert np.allclose(pos.mean(0), [-2, 0], atol=se)
    assert np.allclose(neg.mean(0), [2, 0], atol=se)
    assert np.allclose(pos.var(0), [1, 2], rtol=0.05)
    assert np.allclose(neg.var(0), [2, 1], rtol=0.05)
    assert abs(np.corrcoef(pos.T)[0, 1]) < 0.03


def test_gauss2d_posterior_and_bayes_error():
    # the posterior is a proper probability, symmetric under (x1, x2) -> (-x1, ...)
    # only through the densities, and 1/2 where the densities are equal
    X = np.array([[-2.0, 0.0], [2.0, 0.0], [0.0, 0.0]])
    lp, ln = D.gauss2d_log_densities(X)
    from scipy.stats import multivariate_normal

    assert lp[0] == pytest.approx(multivariate_normal([-2, 0], np.diag([1, 2])).logpdf(X[0]))
    assert ln[1] == pytest.approx(multivariate_normal([2, 0], np.diag([2, 1])).logpdf(X[1]))
    p = D.gauss2d_posterior(X)
    assert p[0] > 0.9 and p[1] < 0.1 and 0 < p[2] < 1
    assert D.gauss2d_posterior(X, prior_positive=0.9)[2] > p[2]
    # Bayes error: numerical integration vs Monte Carlo on a large sample
    err_num = D.gauss2d_bayes_error()
    assert 0.01 < err_num < 0.2
    assert D.gauss2d_bayes_error(n_grid=801) == pytest.approx(err_num, abs=2e-4)
    ds = D.gauss2d(200_000, 123)
    post = D.gauss2d_posterior(ds.X)
    mc_rate = np.mean(np.where(post > 0.5, 1, -1) != ds.y)
    mc_expect = np.mean(np.minimum(post, 1 - post))  # lower-variance estimator
    assert mc_rate == pytest.approx(err_num, abs=4 * math.sqrt(err_num / 200_000))
    assert mc_expect == pytest.approx(err_num, abs=2e-3)


# ---------------------------------------------------- Breiman benchmarks


def test_twonorm_means():
    ds = D.twonorm(20_000, 5)
    a = 2 / math.sqrt(20)
    pos, neg = ds.X[ds.y == 1], ds.X[ds.y == -1]
    assert 0.48 < len(pos) / ds.n_samples < 0.52
    assert np.abs(pos.mean(0) - a).max() < 5 / math.sqrt(len(pos))
    assert np.abs(neg.mean(0) + a).max() < 5 / math.sqrt(len(neg))
    assert np.allclose(pos.var(0), 1, atol=0.06)


def test_ringnorm_moments():
    ds = D.ringnorm(20_000, 5)
    a = 1 / math.sqrt(20)
    pos, neg = ds.X[ds.y == 1], ds.X[ds.y == -1]
    assert np.allclose(pos.var(0), 4, rtol=0.06)
    assert np.abs(pos.mean(0)).max() < 5 * 2 / math.sqrt(len(pos))
    assert np.abs(neg.mean(0) - a).max() < 5 / math.sqrt(len(neg))
    assert np.allclose(neg.var(0), 1, rtol=0.06)


def test_waveform_recipe():
    ds = D.waveform(30_000, 9)
    c = ds.extra["label3"]
    assert set(np.unique(c)) == {0, 1, 2}
    assert np.array_equal(ds.y == 1, c == 0)
    assert np.allclose(np.bincount(c) / c.size, 1 / 3, atol=0.015)
    H = D.waveform_bases()
    assert H.shape == (3, 21) and H.max() == 6 and np.argmax(H[0]) == 10
    expected = {0: 0.5 * (H[0] + H[1]), 1: 0.5 * (H[0] + H[2]), 2: 0.5 * (H[1] + H[2])}
    for k, m in expected.items():
        assert np.abs(ds.X[c == k].mean(0) - m).max() < 0.12


# -------------------------------------------------------------- Friedman


@pytest.mark.parametrize("which,sd", [(1, 1.0), (2, 125.0), (3, 0.1)])
def test_friedman_noise_and_truth(which, sd):
    ds = generate(f"friedman{which}", 20_000, 3)
    assert ds.extra["noise"].std() == pytest.approx(sd, rel=0.04)
    clean = generate(f"friedman{which}", 500, 3, noise=0.0)
    assert np.allclose(clean.y, clean.extra["f"])


# ------------------------------------------------------------ containers


def test_dataset_validation_and_views():
    with pytest.raises(ValueError):
        Dataset(X=np.zeros((3, 2)), y=np.zeros(4), name="a", task="regression")
    with pytest.raises(ValueError):
        Dataset(X=np.zeros((3, 2)), y=np.zeros(3), name="a", task="ranking")
    with pytest.raises(ValueError):
        Dataset(X=np.zeros((3, 2)), y=np.zeros(3), name="a", task="regression",
                feature_names=["only one"])
    with pytest.raises(ValueError):
        Dataset(X=np.zeros((3, 2)), y=np.zeros(3), name="a", task="regression",
                splits=[(np.array([0, 5]), np.array([1]))])
    ds = generate("twonorm", 100, 0, n_splits=3, n_train=60, n_test=30)
    assert ds.n_splits == 3
    for tr, te in ds.splits:
        assert len(tr) == 60 and len(te) == 30 and not set(tr) & set(te)
    train, test = ds.split(1)
    assert train.n_samples == 60 and test.n_samples == 30
    assert np.array_equal(train.X, ds.X[ds.splits[1][0]])
    assert "n=100" in repr(ds)


# ----------------------------------------------------------------- HDF5


@pytest.mark.parametrize("name", ["sinc_silf", "waveform", "robot_arm6", "gauss1d"])
def test_hdf5_round_trip_exact(tmp_path, name):
    ds = generate(name, 333, 1, n_splits=4, n_train=200)
    path = write_dataset(ds, tmp_path / f"{name}.h5")
    back = read_dataset(path)
    _equal(ds, back)
    info = dataset_info(path)
    assert info["n_samples"] == 333 and info["n_features"] == ds.n_features
    assert info["n_splits"] == 4 and info["format_version"] == 1
    assert info["compression"] == "gzip"
    assert set(info["extra"]) == set(ds.extra)
    with h5py.File(path, "r") as f:
        assert f.attrs["library"] == "bsvm_scale"
        assert f["X"].chunks is not None and f["X"].compression == "gzip"
        assert f["X"].dtype == np.float64


def test_hdf5_round_trip_ragged_splits(tmp_path):
    ds = generate("gauss2d", 50, 0)
    ds = ds.with_splits([(np.arange(10), np.arange(10, 50)), (np.arange(30), np.arange(30, 40))])
    back = read_dataset(write_dataset(ds, tmp_path / "r.h5"))
    _equal(ds, back)
    assert dataset_info(tmp_path / "r.h5")["splits_layout"] == "per_split"


@settings(max_examples=20, deadline=None)
@given(n=st.integers(1, 40), d=st.integers(1, 5), cls=st.booleans(), seed=st.integers(0, 2**32))
def test_hdf5_round_trip_property(tmp_path_factory, n, d, cls, seed):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d)) * 10.0 ** rng.integers(-300, 300, size=(n, d))
    y = rng.choice([-1, 1], size=n) if cls else rng.standard_normal(n)
    ds = Dataset(X=X, y=y, name="p\u00e9", task="classification" if cls else "regression",
                 feature_names=[f"f\u00fc{j}" for j in range(d)],
                 provenance={"seed": seed, "nested": {"a": [1, 2.5, None]}})
    path = tmp_path_factory.mktemp("prop") / "p.h5"
    _equal(ds, read_dataset(write_dataset(ds, path, compression=None if cls else "gzip")))


def test_atomic_write_leaves_no_temp_and_replaces(tmp_path):
    a = generate("sinc_gauss", 100, 0)
    b = generate("sinc_gauss", 200, 1)
    path = tmp_path / "s.h5"
    write_dataset(a, path)
    write_dataset(b, path)
    assert os.listdir(tmp_path) == ["s.h5"]
    _equal(read_dataset(path), b)
    umask = os.umask(0o022)
    os.umask(umask)
    fresh = write_dataset(a, tmp_path / "fresh.h5")
    assert os.stat(fresh).st_mode & 0o777 == 0o666 & ~umask  # not mkstemp's 0o600


def test_failed_write_keeps_existing_file(tmp_path, monkeypatch):
    path = tmp_path / "keep.h5"
    write_dataset(generate("gauss2d", 30, 0), path)
    before = path.read_bytes()
    # h5py cannot store an object array: the write fails half way
    bad = generate("gauss2d", 30, 1)
    bad.extra["obj"] = np.array([{"x": 1}] * 30, dtype=object)
    with pytest.raises(TypeError):
        write_dataset(bad, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.h5"]
    # failure at the final rename
    import bsvm_scale.datasets.hdf5 as H

    def boom(*args, **kw):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(H.os, "replace", boom)
    with pytest.raises(OSError):
        write_dataset(generate("gauss2d", 30, 2), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["keep.h5"]


def test_write_to_missing_directory_is_clear(tmp_path):
    with pytest.raises(OSError, match="cannot write data set file"):
        write_dataset(generate("gauss2d", 5, 0), tmp_path / "nope" / "x.h5")
    with pytest.raises(TypeError):
        write_dataset("not a dataset", tmp_path / "x.h5")


@pytest.fixture
def good_file(tmp_path):
    path = tmp_path / "good.h5"
    write_dataset(generate("twonorm", 400, 0, n_splits=2, n_train=300), path)
    return path


def _expect_clear_error(path, match):
    for fn in (read_dataset, dataset_info):
        with pytest.raises(ValueError, match=match) as exc:
            fn(path)
        assert str(path) in str(exc.value)
        assert isinstance(exc.value, DatasetFileError)


def test_error_not_hdf5(tmp_path):
    p = tmp_path / "text.h5"
    p.write_text("this is not HDF5\n" * 100)
    _expect_clear_error(p, "not an HDF5 file")
    empty = tmp_path / "empty.h5"
    empty.write_bytes(b"")
    _expect_clear_error(empty, "not an HDF5 file")


@pytest.mark.parametrize("fraction", [0.02, 0.3, 0.7, 0.98])
def test_error_truncated(tmp_path, good_file, fraction):
    data = good_file.read_bytes()
    p = tmp_path / "trunc.h5"
    p.write_bytes(data[: max(1, int(len(data) * fraction))])
    with pytest.raises(DatasetFileError, match="trunc"):
        read_dataset(p)


def test_error_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        read_dataset(tmp_path / "absent.h5")
    with pytest.raises(DatasetFileError, match="directory"):
        read_dataset(tmp_path)


def _edit(src, dst, fn):
    shutil.copy(src, dst)
    with h5py.File(dst, "r+") as f:
        fn(f)
    return dst


def test_error_wrong_version(tmp_path, good_file):
    p = _edit(good_file, tmp_path / "v.h5", lambda f: f.attrs.__setitem__("format_version", 2))
    _expect_clear_error(p, "unknown format_version 2")
    p = _edit(good_file, tmp_path / "nov.h5", lambda f: f.attrs.__delitem__("format_version"))
    _expect_clear_error(p, "format_version")


def test_error_missing_arrays(tmp_path, good_file):
    p = _edit(good_file, tmp_path / "nox.h5", lambda f: f.__delitem__("X"))
    _expect_clear_error(p, "missing dataset /X")
    p = _edit(good_file, tmp_path / "noy.h5", lambda f: f.__delitem__("y"))
    _expect_clear_error(p, "missing dataset /y")


def test_error_wrong_shapes(tmp_path, good_file):
    def short_y(f):
        del f["y"]
        f["y"] = np.zeros(7)

    _expect_clear_error(_edit(good_file, tmp_path / "y.h5", short_y), "/y has shape")

    def flat_x(f):
        del f["X"]
        f["X"] = np.zeros(400)

    _expect_clear_error(_edit(good_file, tmp_path / "x.h5", flat_x), "2-D")

    def bad_names(f):
        f.attrs["feature_names"] = np.array(["a", "b"], dtype=h5py.string_dtype())

    _expect_clear_error(_edit(good_file, tmp_path / "n.h5", bad_names), "feature_names")

    def bad_split(f):
        del f["splits/test"]
        f["splits/test"] = np.full((2, 100), 10_000, dtype=np.int64)

    with pytest.raises(DatasetFileError, match="indices outside"):
        read_dataset(_edit(good_file, tmp_path / "s.h5", bad_split))


def test_error_foreign_hdf5(tmp_path):
    p = tmp_path / "foreign.h5"
    with h5py.File(p, "w") as f:
        f["X"] = np.zeros((3, 2))
        f["y"] = np.zeros(3)
    _expect_clear_error(p, "not a bsvm_scale data set file")


# ------------------------------------------------------------- real data

REAL_SHAPES = {  # documented in data/README.md
    "boston": (506, 13),
    "pima": (532, 7),
    "titanic": (2201, 3),
    "breast_cancer": (569, 30),
    "digits": (1797, 64),
    "diamonds": (53_940, 9),
}


@pytest.mark.parametrize("name", sorted(REAL_SHAPES))
def test_real_file_loads_with_documented_shape(name):
    ds = load_real(name)
    assert ds.X.shape == REAL_SHAPES[name] == D.REAL_DATASETS[name][1]
    assert ds.task == D.REAL_DATASETS[name][0]
    assert np.all(np.isfinite(ds.X)) and np.all(np.isfinite(ds.y))
    prov = ds.provenance
    assert prov["source"] == "real" and prov["licence"] and prov["transformations"]
    assert prov["source_package_version"]
    info = dataset_info(D.real_path(name))
    assert (info["n_samples"], info["n_features"]) == REAL_SHAPES[name]


def test_real_data_published_facts():
    t = load_real("titanic")
    assert (t.y == 1).sum() == 711  # survivors in the 2201-person table
    assert t.n_splits == 100 and all(len(tr) == 150 for tr, _ in t.splits)
    b = load_real("boston")
    assert b.y.min() == 5.0 and b.y.max() == 50.0
    assert b.n_splits == 100 and all(len(tr) == 481 and len(te) == 25 for tr, te in b.splits)
    p = load_real("pima")
    assert (p.y == 1).sum() == 177  # 68 in Pima.tr + 109 in Pima.te
    c = load_real("breast_cancer")
    assert (c.y == 1).sum() == 212  # malignant
    g = load_real("digits")
    assert set(np.unique(g.y)) == set(range(10)) and g.X.max() == 16
    d = load_real("diamonds")
    assert d.extra["price"].min() == 326 and d.extra["price"].max() == 18_823
    assert np.allclose(np.exp(d.y), d.extra["price"])
    assert np.array_equal(np.bincount(d.X[:, 1].astype(int))[1:], [1610, 4906, 12082, 13791, 21551])


def test_real_via_registry_and_missing_dir(tmp_path, monkeypatch):
    full = generate("boston")
    assert full.n_samples == 506
    sub = generate("boston", 100, 3)
    assert sub.n_samples == 100 and sub.splits is None
    _equal(sub, generate("boston", 100, 3))
    with pytest.raises(ValueError, match="only 506"):
        generate("boston", 1000, 0)
    monkeypatch.setenv("BSVM_SCALE_DATA_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="build_data.py"):
        load_real("boston")
    with pytest.raises(ValueError, match="unknown real data set"):
        load_real("iris")
