"""The covariance's exponential (bsvm_scale._compiled.fastexp) against libm's."""

import math

import numpy as np
from numba import njit

from bsvm_scale._compiled.fastexp import exp_into, exp_neg

ULP = 2.0**-52


@njit
def _vector(x):
    y = x.copy()
    exp_into(y)
    return y


@njit
def _in_a_sum(x):
    """Each exponential inside a strict-order running sum (not vectorised)."""
    y = np.empty_like(x)
    s = 0.0
    for i in range(x.shape[0]):
        e = exp_neg(x[i])
        s += e
        y[i] = e
    return y, s


def _arguments():
    rng = np.random.default_rng(0)
    return np.concatenate([-rng.random(200_000) * 708.0, -rng.random(50_000) * 2.0,
                           -rng.random(10_000) * 1e-9, -np.arange(0.0, 708.0, 0.5 * math.log(2)),
                           [0.0, -0.0, -5e-324, -707.999999]])


def test_within_one_unit_in_the_last_place_of_the_correctly_rounded_exponential():
    x = _arguments()
    got = _vector(x)
    ref = np.array([math.exp(v) for v in x])
    rel = np.abs(got - ref) / ref
    assert rel.max() <= 1.01 * ULP
    assert np.mean(got == ref) > 0.8  # most values are the rounded one itself


def test_the_vectorised_and_the_scalar_loop_give_the_same_bits():
    x = _arguments()
    assert np.array_equal(_vector(x).view(np.int64), _in_a_sum(x)[0].view(np.int64))


def test_zero_gives_one_and_arguments_below_the_normal_range_give_zero():
    x = np.array([0.0, -708.0, -708.0000001, -745.0, -1e300, -np.inf])
    got = _vector(x)
    assert got[0] == 1.0
    assert abs(got[1] - math.exp(-708.0)) <= 1.01 * ULP * math.exp(-708.0)
    assert np.all(got[2:] == 0.0)
    assert np.isnan(_vector(np.array([-1.0, np.nan]))[1])


def test_every_length_including_partial_vector_tails():
    for n in range(0, 40):
        x = -np.linspace(0.0, 30.0, n)
        np.testing.assert_allclose(_vector(x), np.exp(x), rtol=1.01 * ULP, atol=0.0)
