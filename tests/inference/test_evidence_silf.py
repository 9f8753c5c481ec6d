"""The dense pieces of the BSVR evidence (``inference/evidence_silf``) against NumPy."""

import numpy as np
import pytest

from bsvm_scale.inference.evidence_silf import inverse_lower, stable_cholesky


@pytest.mark.parametrize("m", [1, 2, 7, 60])
@pytest.mark.parametrize("overwrite", [False, True])
def test_inverse_lower_is_the_lower_triangle_of_the_inverse(m, overwrite):
    rng = np.random.default_rng(m)
    G = rng.normal(size=(m, m))
    A = G @ G.T + m * np.eye(m)
    L, jitter = stable_cholesky(A)
    assert jitter == 0.0
    kept = L.copy()
    inv = inverse_lower(L, overwrite=overwrite)
    lower = np.tril_indices(m)
    np.testing.assert_allclose(inv[lower], np.linalg.inv(A)[lower], rtol=1e-10, atol=1e-14)
    if not overwrite:
        np.testing.assert_array_equal(L, kept)  # the factor stays usable for predictions


def test_inverse_lower_of_an_empty_block():
    assert inverse_lower(np.zeros((0, 0))).shape == (0, 0)
