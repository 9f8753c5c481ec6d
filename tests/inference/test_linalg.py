"""Dense helpers of ``bsvm_scale.inference.linalg`` against plain NumPy."""

import numpy as np
import pytest

from bsvm_scale.inference.linalg import inverse_triangle, times_lower


def _lower(rng, r):
    return np.tril(rng.normal(size=(r, r))) + 4.0 * np.eye(r)


@pytest.mark.parametrize("r", [0, 1, 5, 70])
def test_inverse_triangle_is_the_lower_inverse(r):
    L = _lower(np.random.default_rng(r), r)
    inv = inverse_triangle(L)
    assert inv.shape == (r, r) and inv.flags.c_contiguous
    assert np.all(np.triu(inv, 1) == 0.0)
    np.testing.assert_allclose(inv @ L, np.eye(r), atol=1e-13)


def test_inverse_triangle_refuses_a_singular_triangle():
    L = np.eye(3)
    L[1, 1] = 0.0
    with pytest.raises(np.linalg.LinAlgError, match="singular"):
        inverse_triangle(L)


@pytest.mark.parametrize("k, r", [(1, 1), (7, 3), (300, 50), (40, 0)])
@pytest.mark.parametrize("trans", [False, True])
@pytest.mark.parametrize("overwrite", [False, True])
def test_times_lower_equals_the_dense_product(k, r, trans, overwrite):
    rng = np.random.default_rng(k + r)
    N, Y = _lower(rng, r), rng.normal(size=(k, r))
    Y0 = Y.copy()
    W = times_lower(Y, N, 2.0, trans=trans, overwrite=overwrite)
    ref = 2.0 * Y0 @ (N.T if trans else N)
    assert W.shape == (k, r) and W.flags.c_contiguous and W.flags.writeable
    np.testing.assert_allclose(W, ref, rtol=1e-13, atol=1e-12)
    if overwrite and r:
        assert np.shares_memory(W, Y)  # the product is made in the memory of Y
    if not overwrite:
        assert np.array_equal(Y, Y0)
