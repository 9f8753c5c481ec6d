"""LRU covariance-row cache (bsvm_scale._compiled.row_cache / covariance.RowCache)."""

import tracemalloc
from collections import OrderedDict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bsvm_scale._compiled import row_cache as rc
from bsvm_scale.inference.covariance import GaussianCovariance, RowCache
from reference import dense_cov

TOL = 1e-12


class LRUModel:
    """Obvious pure-Python LRU over row indices."""

    def __init__(self, capacity):
        self.capacity = capacity
        self.od = OrderedDict()
        self.hits = self.misses = self.evictions = 0

    def access(self, i):
        if i in self.od:
            self.hits += 1
            self.od.move_to_end(i)
            return
        self.misses += 1
        if len(self.od) == self.capacity:
            self.od.popitem(last=False)
            self.evictions += 1
        self.od[i] = None

    def mru_to_lru(self):
        return list(reversed(self.od))


def _mb_for_slots(n, k):
    """A budget that yields exactly ``k`` slots for ``n`` points."""
    return (k + 0.5) * 8 * n / 2**20


def _cache_order(cache):
    """Rows from most to least recently used, by walking the linked list."""
    _, _, row_of, prev, nxt, meta = cache._state
    order = []
    s = meta[rc.HEAD]
    last = -1
    while s >= 0:
        assert prev[s] == last
        order.append(int(row_of[s]))
        last = s
        s = nxt[s]
        assert len(order) <= cache.n_slots
    assert meta[rc.TAIL] == last
    return order


def _check_consistent(cache):
    _, slot_of, row_of, _, _, meta = cache._state
    used = int(meta[rc.USED])
    held = row_of[row_of >= 0]
    assert held.size == used
    assert np.all(slot_of[held] == np.flatnonzero(row_of >= 0))
    assert np.count_nonzero(slot_of >= 0) == used


def _setup(n=120, d=3, k_slots=7, seed=0, ard=False):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    kappa = rng.uniform(0.2, 1.5, size=d) if ard else 0.6
    cov = GaussianCovariance(1.3, kappa, 0.4)
    cache = RowCache(X, cov, cache_mb=_mb_for_slots(n, k_slots))
    assert cache.n_slots == k_slots
    return X, cov, cache, rng


@settings(max_examples=30, deadline=None)
@given(k_slots=st.integers(2, 12), n_rows=st.integers(2, 40),
       seq=st.lists(st.integers(0, 39), min_size=1, max_size=300))
def test_lru_matches_ordereddict_model(k_slots, n_rows, seq):
    n = 40
    X = np.linspace(-1.0, 1.0, 2 * n).reshape(n, 2)
    cache = RowCache(X, GaussianCovariance(1.0, 0.5, 0.1), cache_mb=_mb_for_slots(n, k_slots))
    k_slots = min(k_slots, n)
    assert cache.n_slots == k_slots
    model = LRUModel(k_slots)
    for i in seq:
        i = i % n_rows
        cache.row(i)
        model.access(i)
    st_ = cache.stats
    assert (st_["hits"], st_["misses"], st_["evictions"]) == (model.hits, model.misses,
                                                               model.evictions)
    assert st_["rows"] == len(model.od)
    assert _cache_order(cache) == model.mru_to_lru()
    _check_consistent(cache)


@pytest.mark.parametrize("ard", [False, True], ids=["iso", "ard"])
def test_random_sequence_with_evictions_and_values(ard):
    X, cov, cache, rng = _setup(ard=ard)
    n = X.shape[0]
    ref = dense_cov(X, X, cov.kappa0, cov.kappa, cov.kappa_b)
    model = LRUModel(cache.n_slots)
    # skewed access pattern so that there are plenty of hits and evictions
    seq = np.concatenate([rng.integers(0, 12, size=400), rng.integers(0, n, size=400)])
    rng.shuffle(seq)
    for i in seq:
        row = cache.row(i)
        model.access(int(i))
        np.testing.assert_allclose(row, ref[i], rtol=TOL, atol=TOL)
    s = cache.stats
    assert s["evictions"] > 50 and s["hits"] > 50
    assert (s["hits"], s["misses"], s["evictions"]) == (model.hits, model.misses,
                                                        model.evictions)
    assert set(_cache_order(cache)) == set(model.od)
    assert _cache_order(cache) == model.mru_to_lru()


def test_row_after_eviction_is_recomputed_correctly():
    X, cov, cache, _ = _setup(k_slots=3)
    ref = dense_cov(X, X, cov.kappa0, cov.kappa, cov.kappa_b)
    r5 = cache.row(5).copy()
    for i in (6, 7, 8):  # evicts 5; its slot is overwritten by row 8
        cache.row(i)
    _, slot_of, *_ = cache._state
    assert slot_of[5] == -1
    before = cache.stats
    again = cache.row(5)
    after = cache.stats
    assert after["misses"] == before["misses"] + 1
    assert after["evictions"] == before["evictions"] + 1
    np.testing.assert_array_equal(again, r5)
    np.testing.assert_allclose(again, ref[5], rtol=TOL, atol=TOL)
    # the two most recent rows remain valid together (SMO needs two at once)
    a = cache.row(7)
    b = cache.row(8)
    np.testing.assert_allclose(a, ref[7], rtol=TOL, atol=TOL)
    np.testing.assert_allclose(b, ref[8], rtol=TOL, atol=TOL)


def test_two_slot_minimum_keeps_pair_valid():
    X = np.random.default_rng(1).normal(size=(50, 2))
    cov = GaussianCovariance(1.0, 0.3, 0.2)
    cache = RowCache(X, cov, cache_mb=1e-9)
    assert cache.n_slots == 2
    ref = dense_cov(X, X, 1.0, 0.3, 0.2)
    for i, j in [(0, 1), (2, 3), (3, 0), (49, 3)]:
        a = cache.row(i)
        b = cache.row(j)
        np.testing.assert_allclose(a, ref[i], rtol=TOL, atol=TOL)
        np.testing.assert_allclose(b, ref[j], rtol=TOL, atol=TOL)


def test_set_covariance_same_params_keeps_rows():
    X, cov, cache, _ = _setup()
    for i in range(5):
        cache.row(i)
    s0 = cache.stats
    same = GaussianCovariance(cov.kappa0, cov.kappa, cov.kappa_b)  # new object, same values
    cache.set_covariance(same)
    for i in range(5):
        cache.row(i)
    s1 = cache.stats
    assert s1["hits"] == s0["hits"] + 5
    assert s1["misses"] == s0["misses"]
    assert s1["rows"] == 5


@pytest.mark.parametrize("ard", [False, True], ids=["iso", "ard"])
def test_set_covariance_new_params_invalidates(ard):
    X, cov, cache, rng = _setup(ard=ard)
    for i in range(5):
        cache.row(i)
    d = X.shape[1]
    new_kappa = rng.uniform(0.2, 1.5, size=d) if ard else 2.1
    new = GaussianCovariance(0.8, new_kappa, 0.9)
    cache.set_covariance(new)
    s0 = cache.stats
    assert s0["rows"] == 0
    _, slot_of, row_of, _, _, meta = cache._state
    assert np.all(slot_of == -1) and np.all(row_of == -1)
    assert meta[rc.HEAD] == -1 and meta[rc.TAIL] == -1
    ref_new = dense_cov(X, X, 0.8, new_kappa, 0.9)
    for i in range(5):
        np.testing.assert_allclose(cache.row(i), ref_new[i], rtol=TOL, atol=TOL)
    s1 = cache.stats
    assert s1["misses"] == s0["misses"] + 5 and s1["hits"] == s0["hits"]
    # and the LRU keeps working after the reset, evictions included
    model = LRUModel(cache.n_slots)
    for i in range(5):
        model.access(i)
    for i in rng.integers(0, 20, size=200):
        np.testing.assert_allclose(cache.row(i), ref_new[i], rtol=TOL, atol=TOL)
        model.access(int(i))
    assert _cache_order(cache) == model.mru_to_lru()


def test_set_covariance_iso_to_ard_invalidates():
    X, cov, cache, _ = _setup()
    cache.row(3)
    ard = GaussianCovariance(cov.kappa0, np.full(X.shape[1], cov.kappa), cov.kappa_b)
    cache.set_covariance(ard)  # same values but a different parameterisation
    assert cache.stats["rows"] == 0
    np.testing.assert_allclose(cache.row(3), dense_cov(X[3:4], X, 1.3, 0.6, 0.4)[0],
                               rtol=TOL, atol=TOL)


@pytest.mark.parametrize("n, cache_mb", [
    (1, 256.0), (2, 1e-6), (10, 1e-6), (100, 256.0), (1000, 0.01), (1000, 0.5),
    (5000, 1.0), (5000, 3.3), (50_000, 256.0), (50_000, 0.3), (300_000, 256.0),
])
def test_n_slots_respects_budget(n, cache_mb):
    budget = cache_mb * 2**20
    X = np.zeros((n, 1))
    cache = RowCache(X, GaussianCovariance(), cache_mb=cache_mb)
    k = cache.n_slots
    fits = int(budget // (8 * n))
    assert 1 <= k <= n
    if n >= 2:
        assert k >= 2
    if fits >= 2:
        assert k * n * 8 <= budget
        assert k == min(n, fits)  # uses the whole budget
    else:
        assert k == min(n, 2)
    assert cache.nbytes == k * n * 8
    assert cache._state[0].shape == (k, n)
    assert cache.stats["slots"] == k


def test_buffer_memory_matches_allocation():
    n = 20_000
    X = np.zeros((n, 2))
    cov = GaussianCovariance()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        cache = RowCache(X, cov, cache_mb=8.0)
        grown = tracemalloc.get_traced_memory()[0] - base
    finally:
        tracemalloc.stop()
    assert cache.n_slots == int(8 * 2**20 // (8 * n))
    assert cache.nbytes == cache.n_slots * n * 8
    assert cache.nbytes <= 8 * 2**20
    # the buffer plus O(n + n_slots) bookkeeping and the kernel's transposed
    # copy of the inputs (n d), nothing n x n
    bookkeeping = 8 * (n + 3 * cache.n_slots + 6) + 8 * X.size + 64 * 1024
    assert cache.nbytes <= grown <= cache.nbytes + bookkeeping


def test_get_row_callable_with_kernel_and_state():
    X, cov, cache, _ = _setup()
    row = rc.get_row(cache.kernel, cache.state, 4)
    np.testing.assert_allclose(row, dense_cov(X[4:5], X, 1.3, 0.6, 0.4)[0], rtol=TOL, atol=TOL)
    assert cache.stats["misses"] == 1
    cache.row(4)
    assert cache.stats["hits"] == 1


def test_out_of_range_row_raises_and_leaves_state_intact():
    X, cov, cache, _ = _setup(k_slots=3)
    cache.row(0)
    for i in (-1, X.shape[0], 10**7):
        with pytest.raises(IndexError):
            cache.row(i)
    assert cache.stats["misses"] == 1 and cache.stats["rows"] == 1
    _check_consistent(cache)
    assert _cache_order(cache) == [0]
