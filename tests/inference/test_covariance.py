"""Gaussian covariance kernels (eq. 4.3 / ARD 4.42) against dense NumPy references."""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bsvm_scale._compiled import covariance as ck
from bsvm_scale._compiled import row_cache as rc
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache, as_float_matrix
from reference import (dense_cov, dense_dcov, dense_dcov_fd, params_from_theta,
                       ref_weights, theta_from_params)

TOL = 1e-12


def _params(ard, d, rng):
    kappa0 = float(rng.uniform(0.3, 3.0))
    kappa_b = float(rng.uniform(0.1, 2.0))
    kappa = rng.uniform(0.05, 2.0, size=d) if ard else float(rng.uniform(0.05, 2.0))
    return kappa0, kappa, kappa_b


def _problem(n, d, ard, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, _params(ard, d, rng), rng


ARD = pytest.mark.parametrize("ard", [False, True], ids=["iso", "ard"])


# -- rows ---------------------------------------------------------------------
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(n=st.integers(1, 60), d=st.integers(1, 6), ard=st.booleans(),
       seed=st.integers(0, 2**32 - 1), data=st.data())
def test_row_any_sample_matches_dense(n, d, ard, seed, data):
    X, (k0, k, kb), _ = _problem(n, d, ard, seed)
    i = data.draw(st.integers(0, n - 1), label="i")
    ref = dense_cov(X[i:i + 1], X, k0, k, kb)[0]
    w = ref_weights(k, d)
    for row_fn in (ck.cov_row, ck.cov_row_serial):
        out = np.full(n, np.nan)
        row_fn(ck.make_kernel(X, w, k0, kb), i, out)
        np.testing.assert_allclose(out, ref, rtol=TOL, atol=TOL)
    cov = GaussianCovariance(k0, k, kb)
    np.testing.assert_allclose(cov.row(X, i), ref, rtol=TOL, atol=TOL)
    cache = RowCache(X, cov, cache_mb=1.0)
    np.testing.assert_allclose(cache.row(i), ref, rtol=TOL, atol=TOL)


@ARD
def test_rows_parallel_and_serial_path_large_n(ard):
    n = 5000  # large enough for the prange kernel to split the row over threads
    X, (k0, k, kb), rng = _problem(n, 4, ard, 11)
    w = ref_weights(k, 4)
    cov = GaussianCovariance(k0, k, kb)
    cache = RowCache(X, cov, cache_mb=1.0)
    for i in [0, n - 1, *rng.integers(0, n, size=6)]:
        ref = dense_cov(X[i:i + 1], X, k0, k, kb)[0]
        par = np.empty(n)
        ser = np.empty(n)
        ck.cov_row(ck.make_kernel(X, w, k0, kb), int(i), par)
        ck.cov_row_serial(ck.make_kernel(X, w, k0, kb), int(i), ser)
        np.testing.assert_allclose(par, ref, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(ser, ref, rtol=TOL, atol=TOL)
        np.testing.assert_allclose(cache.row(i), ref, rtol=TOL, atol=TOL)


@ARD
def test_rowcache_serial_path_small_n(ard):
    n = 300
    X, (k0, k, kb), _ = _problem(n, 3, ard, 12)
    cache = RowCache(X, GaussianCovariance(k0, k, kb), cache_mb=0.05)
    ref = dense_cov(X, X, k0, k, kb)
    for i in range(n):
        np.testing.assert_allclose(cache.row(i), ref[i], rtol=TOL, atol=TOL)


def test_diag():
    cov = GaussianCovariance(1.7, 0.3, 0.4)
    X = np.random.default_rng(0).normal(size=(25, 2))
    np.testing.assert_allclose(cov.diag(X), np.diag(dense_cov(X, X, 1.7, 0.3, 0.4)),
                               rtol=TOL, atol=TOL)
    np.testing.assert_array_equal(ck.cov_diag(7, 1.7, 0.4), np.full(7, 1.7 + 0.4))


# -- blocks -------------------------------------------------------------------
@ARD
def test_cross_and_iter_cross_reassemble(ard):
    rng = np.random.default_rng(3)
    d = 3
    A = rng.normal(size=(53, d))
    B = rng.normal(size=(17, d))
    k0, k, kb = _params(ard, d, rng)
    ref = dense_cov(A, B, k0, k, kb)
    out = np.empty((53, 17))
    ck.cov_cross(ck.make_kernel(A, ref_weights(k, d), k0, kb), B, out)
    np.testing.assert_allclose(out, ref, rtol=TOL, atol=TOL)
    cov = GaussianCovariance(k0, k, kb)
    np.testing.assert_allclose(cov.cross(A, B), ref, rtol=TOL, atol=TOL)
    row_bytes = 8 * B.shape[0]
    for chunk_bytes in (1, row_bytes, 3 * row_bytes + 5, 10 * row_bytes, 10**9):
        full = np.full_like(ref, np.nan)
        expect_start = 0
        n_chunks = 0
        for start, stop, block in cov.iter_cross(A, B, chunk_bytes=chunk_bytes):
            assert start == expect_start and stop > start
            assert block.shape == (stop - start, B.shape[0])
            assert block.nbytes <= max(chunk_bytes, row_bytes)
            full[start:stop] = block
            expect_start = stop
            n_chunks += 1
        assert expect_start == A.shape[0]
        if chunk_bytes <= row_bytes:
            assert n_chunks == A.shape[0]
        np.testing.assert_allclose(full, ref, rtol=TOL, atol=TOL)


@ARD
def test_cross_matvec(ard):
    rng = np.random.default_rng(4)
    d = 4
    A = rng.normal(size=(31, d))
    B = rng.normal(size=(47, d))
    v = rng.normal(size=47)
    k0, k, kb = _params(ard, d, rng)
    ref = dense_cov(A, B, k0, k, kb) @ v
    got = ck.cov_cross_matvec(ck.make_kernel(A, ref_weights(k, d), k0, kb), B, v)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(GaussianCovariance(k0, k, kb).cross_matvec(A, B, v), ref,
                               rtol=1e-11, atol=1e-11)


@ARD
def test_subset(ard):
    X, (k0, k, kb), rng = _problem(80, 3, ard, 5)
    idx = rng.choice(80, size=23, replace=False)
    ref = dense_cov(X[idx], X[idx], k0, k, kb)
    got = ck.cov_subset(ck.make_kernel(X, ref_weights(k, 3), k0, kb), idx.astype(np.int64))
    np.testing.assert_allclose(got, ref, rtol=TOL, atol=TOL)
    np.testing.assert_allclose(GaussianCovariance(k0, k, kb).subset(X, idx), ref,
                               rtol=TOL, atol=TOL)


# -- derivatives ----------------------------------------------------------------
@ARD
def test_dense_derivatives_match_finite_differences(ard):
    X, (k0, k, kb), _ = _problem(30, 3, ard, 6)
    theta = theta_from_params(k0, k, kb)
    exact = dense_dcov(X, k0, k, kb)
    fd = dense_dcov_fd(X, theta, ard)
    assert len(exact) == len(fd) == (3 + 2 if ard else 3)
    for p, (e, f) in enumerate(zip(exact, fd)):
        np.testing.assert_allclose(e, f, rtol=1e-6, atol=1e-9 * np.abs(e).max(),
                                   err_msg=f"parameter {p}")


def _subset_problem(ard, seed, m=40, n=90, d=3):
    X, (k0, k, kb), rng = _problem(n, d, ard, seed)
    idx = rng.choice(n, size=m, replace=False).astype(np.int64)
    dS = dense_dcov(X[idx], k0, k, kb)
    return X, idx, (k0, k, kb), dS, rng


@ARD
def test_trace_grad(ard):
    X, idx, (k0, k, kb), dS, rng = _subset_problem(ard, 7)
    m = idx.size
    A = rng.normal(size=(m, m))  # not symmetric
    A[rng.random((m, m)) < 0.2] = 0.0  # exercise the zero skip
    assert not np.allclose(A, A.T)
    ref = np.array([np.sum(A * D) for D in dS])
    ref_trace = np.array([np.trace(A @ D) for D in dS])
    np.testing.assert_allclose(ref, ref_trace, rtol=1e-12, atol=1e-12)
    scale = max(np.abs(A).sum() * max(np.abs(D).max() for D in dS), 1.0)
    cov = GaussianCovariance(k0, k, kb)
    got = cov.trace_grad(X, idx, A)
    assert got.shape == cov.theta.shape
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-13 * scale)
    raw = ck.trace_dcov(ck.make_kernel(X, ref_weights(k, X.shape[1]), k0, kb), idx, A)
    assert raw.shape == (X.shape[1] + 2,)
    if ard:
        np.testing.assert_allclose(raw, ref, rtol=1e-11, atol=1e-13 * scale)


@ARD
@pytest.mark.parametrize("m", [1, 6, 7])
def test_trace_grad_lower_triangle(ard, m):
    """A symmetric matrix given by its lower triangle only (garbage above)."""
    X, (k0, k, kb), rng = _problem(12, 3, ard, 3)
    idx = rng.choice(12, size=m, replace=False).astype(np.int64)
    S = rng.normal(size=(m, m))
    S = S + S.T
    ref = np.array([np.sum(S * D) for D in dense_dcov(X[idx], k0, k, kb)])
    A = np.tril(S) + np.triu(np.full((m, m), 1e6), 1)
    got = GaussianCovariance(k0, k, kb).trace_grad(X, idx, A, lower=True)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-12)


@ARD
def test_quad_grad(ard):
    X, idx, (k0, k, kb), dS, rng = _subset_problem(ard, 8)
    v = rng.normal(size=idx.size)
    v[::5] = 0.0
    ref = np.array([v @ D @ v for D in dS])
    scale = max(np.abs(v).sum() ** 2 * max(np.abs(D).max() for D in dS), 1.0)
    got = GaussianCovariance(k0, k, kb).quad_grad(X, idx, v)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-13 * scale)


@ARD
@pytest.mark.parametrize("m", [1, 2, 40, 41])
def test_bilinear_grad(ard, m):
    """``p^T dSigma v`` over each pair once (rows folded two per iteration)
    against the dense derivative matrices, odd and even block sizes."""
    X, idx, (k0, k, kb), dS, rng = _subset_problem(ard, 10, m=m)
    p, v = rng.normal(size=idx.size), rng.normal(size=idx.size)
    v[::7] = 0.0
    ref = np.array([p @ D @ v for D in dS])
    scale = max(np.abs(p).sum() * np.abs(v).sum() * max(np.abs(D).max() for D in dS), 1.0)
    got = GaussianCovariance(k0, k, kb).bilinear_grad(X, idx, p, v)
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-13 * scale)


@ARD
def test_matvec_grad(ard):
    X, idx, (k0, k, kb), dS, rng = _subset_problem(ard, 9)
    v = rng.normal(size=idx.size)
    v[1::4] = 0.0
    ref = np.column_stack([D @ v for D in dS])
    got = GaussianCovariance(k0, k, kb).matvec_grad(X, idx, v)
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=1e-11, atol=1e-12)


def test_isotropic_gradient_is_sum_of_ard_gradients():
    X, idx, (k0, _, kb), _, rng = _subset_problem(False, 10)
    A = rng.normal(size=(idx.size, idx.size))
    iso = GaussianCovariance(k0, 0.7, kb).trace_grad(X, idx, A)
    ard = GaussianCovariance(k0, np.full(3, 0.7), kb).trace_grad(X, idx, A)
    np.testing.assert_allclose(iso, [ard[0], ard[1:-1].sum(), ard[-1]], rtol=1e-12)


def _iso_kernels(n=30, d=4, seed=12):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    w = np.full(d, 0.6)
    return X, rng, ck.make_kernel(X, w, 1.7, 0.4, iso=True), ck.make_kernel(X, w, 1.7, 0.4)


def _check_iso_layout(iso, ard):
    """An isotropic kernel's contraction: ``ln kappa0`` and ``ln kappa_b`` as the ARD
    layout's to the bit, ``d/d ln kappa`` (the sum of the weight columns) in column 1
    (last bits may differ: one pass over the distances instead of one per input)."""
    iso, ard = np.asarray(iso), np.asarray(ard)
    assert np.array_equal(iso[..., 0], ard[..., 0])
    assert np.array_equal(iso[..., -1], ard[..., -1])
    assert np.all(iso[..., 2:-1] == 0.0)
    np.testing.assert_allclose(iso[..., 1], ard[..., 1:-1].sum(axis=-1), rtol=1e-12,
                               atol=1e-12 * np.abs(ard[..., 1:-1]).max())


def test_isotropic_kernel_contractions_give_the_summed_derivative_in_one_column():
    """Every compiled contraction with ``Kernel.iso`` (one pass over a block of
    distances) against the same contraction with the ARD layout."""
    from bsvm_scale._compiled import lowrank as lk

    X, rng, iso, ard = _iso_kernels()
    idx = rng.choice(30, size=17, replace=False).astype(np.int64)
    A, p, v = rng.normal(size=(17, 17)), rng.normal(size=17), rng.normal(size=17)
    for f, args in ((ck.trace_dcov, (idx, A)), (ck.trace_dcov_lower, (idx, A + A.T)),
                    (ck.quad_dcov, (idx, v)), (ck.bilinear_dcov, (idx, p, v)),
                    (ck.dcov_matvec, (idx, v)), (ck.dcov_rows, (idx[:5], idx, v))):
        _check_iso_layout(f(iso, *args), f(ard, *args))
    B, W = np.ascontiguousarray(X[:9] + 0.1), rng.normal(size=(30, 9))
    _check_iso_layout(lk.dcov_contract(iso, B, W), lk.dcov_contract(ard, B, W))
    rows = np.full(30, -1, dtype=np.int64)
    rows[idx] = np.arange(17)
    nu, u = rng.normal(size=30), rng.normal(size=9)
    parts = [np.zeros((17, 6)), np.zeros((17, 6))]
    means = [ck.cov_cross_matvec_dcov(k, B, u, nu, rows, q) for k, q in zip((iso, ard), parts)]
    assert np.array_equal(means[0], means[1])
    _check_iso_layout(parts[0], parts[1])


# -- parameters -------------------------------------------------------------------
@ARD
def test_theta_round_trip(ard):
    rng = np.random.default_rng(13)
    k0, k, kb = _params(ard, 5, rng)
    cov = GaussianCovariance(k0, k, kb)
    assert cov.ard == ard
    theta = cov.theta
    assert theta.shape == ((7,) if ard else (3,))
    assert len(cov.theta_names()) == theta.size
    np.testing.assert_allclose(theta, theta_from_params(k0, k, kb), rtol=0, atol=0)
    back = GaussianCovariance.from_theta(theta, ard)
    assert back.ard == ard
    np.testing.assert_allclose(back.theta, theta, rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(back.kappa0, k0, rtol=1e-14)
    np.testing.assert_allclose(back.kappa, k, rtol=1e-14)
    np.testing.assert_allclose(back.kappa_b, kb, rtol=1e-14)
    for a, b in zip(params_from_theta(theta, ard), (back.kappa0, back.kappa, back.kappa_b)):
        np.testing.assert_array_equal(a, b)
    assert back.same_as(GaussianCovariance.from_theta(theta, ard))
    assert not back.same_as(GaussianCovariance.from_theta(theta + 0.1, ard))


@pytest.mark.parametrize("kwargs, name", [
    (dict(kappa0=-1.0), r"^kappa0\b"),
    (dict(kappa0=0.0), r"^kappa0\b"),
    (dict(kappa0=np.nan), r"^kappa0\b"),
    (dict(kappa=-0.5), r"^kappa\b"),
    (dict(kappa=np.nan), r"^kappa\b"),
    (dict(kappa=np.inf), r"^kappa\b"),
    (dict(kappa=[1.0, -2.0]), r"^kappa\b"),
    (dict(kappa=[1.0, np.nan]), r"^kappa\b"),
    (dict(kappa=[]), r"^kappa\b"),
    (dict(kappa=np.ones((2, 2))), r"^kappa\b"),
    (dict(kappa_b=-1e-3), r"^kappa_b\b"),
    (dict(kappa_b=np.nan), r"^kappa_b\b"),
])
def test_bad_parameters_raise(kwargs, name):
    with pytest.raises(ValueError, match=name):
        GaussianCovariance(**kwargs)


def test_bad_theta_raises():
    with pytest.raises(ValueError, match="kappa"):
        GaussianCovariance.from_theta([0.0, np.nan, 0.0], ard=False)


def test_wrong_ard_length_raises():
    X = np.zeros((5, 3))
    cov = GaussianCovariance(1.0, [1.0, 2.0], 1.0)
    for call in (lambda: cov.row(X, 0), lambda: cov.subset(X, [0, 1]),
                 lambda: cov.cross(X, X), lambda: cov.weights(3),
                 lambda: cov.trace_grad(X, [0, 1], np.eye(2)),
                 lambda: RowCache(X, cov)):
        with pytest.raises(ValueError, match=r"\bkappa\b"):
            call()


def test_bad_inputs_raise():
    with pytest.raises(ValueError, match=r"^X\b"):
        as_float_matrix([[0.0, np.nan]])
    with pytest.raises(ValueError, match=r"^X\b"):
        as_float_matrix(np.zeros(3))
    cov = GaussianCovariance()
    with pytest.raises(ValueError, match=r"^X\b"):
        RowCache(np.array([[np.inf]]), cov)
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match=r"^cache_mb\b"):
            RowCache(np.zeros((4, 1)), cov, cache_mb=bad)


def test_out_of_range_indices_and_shape_mismatches_raise():
    # the compiled kernels do not bounds-check; the Python layer must
    X = np.random.default_rng(2).normal(size=(6, 2))
    cov = GaussianCovariance(1.0, 0.5, 0.1)
    for i in (6, -1, 10**7):
        with pytest.raises(IndexError):
            cov.row(X, i)
    with pytest.raises(ValueError, match=r"^out\b"):
        cov.row(X, 0, out=np.empty(3))
    for bad in ([0, 6], [-1, 2]):
        with pytest.raises(IndexError, match=r"^idx\b"):
            cov.subset(X, bad)
        with pytest.raises(IndexError, match=r"^idx\b"):
            cov.trace_grad(X, bad, np.eye(2))
        with pytest.raises(IndexError, match=r"^idx\b"):
            cov.quad_grad(X, bad, np.ones(2))
        with pytest.raises(IndexError, match=r"^idx\b"):
            cov.matvec_grad(X, bad, np.ones(2))
    with pytest.raises(ValueError, match=r"^A\b"):
        cov.trace_grad(X, [0, 1, 2], np.eye(2))
    with pytest.raises(ValueError, match=r"^v\b"):
        cov.quad_grad(X, [0, 1, 2], np.ones(2))
    with pytest.raises(ValueError, match=r"^v\b"):
        cov.matvec_grad(X, [0, 1, 2], np.ones(4))
    with pytest.raises(ValueError, match=r"^v\b"):
        cov.cross_matvec(X, X[:4], np.ones(6))
    with pytest.raises(ValueError, match="features"):
        cov.cross(X, X[:, :1])
    with pytest.raises(ValueError, match="features"):
        cov.cross_matvec(X, X[:, :1].copy(), np.ones(6))
    # empty subsets stay legal
    assert cov.subset(X, np.array([], dtype=np.int64)).shape == (0, 0)


def test_tied_ard_groups_share_a_weight_and_sum_their_gradients():
    """Tied ARD (one kappa per group of inputs, the one-hot columns of a
    table's category): the kernel is the ARD kernel with the group's weight
    repeated, and every gradient is the per-input ARD gradient summed over
    the group."""
    rng = np.random.default_rng(4)
    X = rng.normal(size=(30, 5))
    groups = np.array([0, 1, 1, 1, 2])
    kappa = np.array([0.3, 0.7, 1.9])
    tied = GaussianCovariance(1.5, kappa, 0.2, groups=groups)
    full = GaussianCovariance(1.5, kappa[groups], 0.2)
    idx = np.arange(0, 30, 2)
    v = rng.normal(size=idx.size)
    A = rng.normal(size=(idx.size, idx.size))
    A = A + A.T
    np.testing.assert_array_equal(tied.subset(X, idx), full.subset(X, idx))

    def summed(g):
        return np.concatenate(([g[0]], np.bincount(groups, g[1:-1]), [g[-1]]))

    np.testing.assert_allclose(tied.trace_grad(X, idx, A), summed(full.trace_grad(X, idx, A)),
                               rtol=1e-12)
    np.testing.assert_allclose(tied.quad_grad(X, idx, v), summed(full.quad_grad(X, idx, v)),
                               rtol=1e-12)
    p = rng.normal(size=idx.size)
    np.testing.assert_allclose(tied.bilinear_grad(X, idx, p, v),
                               summed(full.bilinear_grad(X, idx, p, v)), rtol=1e-12)
    mg = full.matvec_grad(X, idx, v)
    np.testing.assert_allclose(tied.matvec_grad(X, idx, v),
                               np.array([summed(row) for row in mg]), rtol=1e-12)
    assert tied.theta.size == 5 and GaussianCovariance.from_theta(tied.theta, True,
                                                                  groups).same_as(tied)
    assert not tied.same_as(full)
    # the group's derivative by central differences of a quadratic form
    h = 1e-6
    for g in range(3):
        up, dn = tied.theta.copy(), tied.theta.copy()
        up[1 + g] += h
        dn[1 + g] -= h
        fd = (v @ GaussianCovariance.from_theta(up, True, groups).subset(X, idx) @ v
              - v @ GaussianCovariance.from_theta(dn, True, groups).subset(X, idx) @ v) / (2 * h)
        np.testing.assert_allclose(tied.quad_grad(X, idx, v)[1 + g], fd, rtol=1e-6)
    with pytest.raises(ValueError, match="groups must use every index"):
        GaussianCovariance(1.0, kappa, 1.0, groups=[0, 0, 1])


def test_cross_kernels_give_the_bits_of_the_pairwise_kernel():
    """The row-vectorised cross kernels (``cross``, ``cross_matvec``,
    ``cross_matvec_block``) compute every pair with the operations, in the
    order, of the pairwise kernel (``subset``, ``row``): the same bits."""
    rng = np.random.default_rng(7)
    X = rng.normal(size=(120, 9))
    cov = GaussianCovariance(1.7, rng.uniform(0.05, 0.6, 9), 3.0)
    idx = np.arange(0, 120, 3)
    S = cov.subset(X, idx)
    np.testing.assert_array_equal(cov.cross(X[idx], X[idx]), S)
    np.testing.assert_array_equal(cov.cross(X, X[idx])[5], cov.row(X, 5)[idx])
    v = rng.normal(size=idx.size)
    kern = cov.with_bias(0.0)
    mean = kern.cross_matvec(X, X[idx], v)
    expect = np.array([sum((S_ab - 3.0) * v_b for S_ab, v_b in zip(row, v))
                       for row in cov.cross(X, X[idx])])
    np.testing.assert_allclose(mean, expect, rtol=1e-12)
    cols = np.array([0, 4, 7, 31])
    m2, K = kern.cross_matvec_block(X, X[idx], v, cols, cov.kappa_b)
    np.testing.assert_array_equal(m2, mean)
    np.testing.assert_array_equal(K, cov.cross(X, X[idx][cols]))
