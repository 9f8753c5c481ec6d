"""Statistics of the page (repro/stats.py)."""

import numpy as np
import pytest

from repro.stats import evaluation_seconds, fit_exponent, mean_sd, per_evaluation


def test_fit_exponent():
    n = np.array([10.0, 100.0, 1000.0])
    assert fit_exponent(n, 3.0 * n ** 2.5) == pytest.approx(2.5)
    assert np.isnan(fit_exponent([10, 10], [1.0, 2.0]))
    assert fit_exponent([10, 100, 1000, 5], [1.0, 10.0, 100.0, -1.0]) == pytest.approx(1.0)


def test_split_evaluation_times():
    """The MAP and evidence seconds per evaluation are medians of the recorded columns."""
    task = {"trajectory": {"fun": np.zeros(3), "map_s": np.array([1.0, 5.0, 2.0]),
                           "evidence_s": np.array([np.nan, 4.0, 6.0])}}
    assert per_evaluation(task) == (2.0, 5.0)
    assert all(np.isnan(per_evaluation({"trajectory": {"fun": np.zeros(2)}})))
    assert all(np.isnan(per_evaluation({})))
    starts = [{"trajectory": [{"map_s": 1.0, "evidence_s": 2.0}],
               "subsample": {"trajectory": [{"info": {"map_s": 0.5, "evidence_s": 0.25}}]}}]
    assert evaluation_seconds(starts) == [1.5, 2.25]
    assert all(np.isnan(evaluation_seconds([{"trajectory": []}])))


def test_mean_sd_formats():
    assert mean_sd([1.0, 2.0, 3.0]) == "2 +- 1"
    assert mean_sd([0.0259], ".4f", ".3f") == "0.0259 +- 0.000"
