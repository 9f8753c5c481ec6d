"""The trial points after a search ends (``optimization/trials.py``): the
fitted slope against an exact quadratic, the axis-neighbour probe in the box.
Their use by the driver (continuation, replay) is tested in test_optimize.py."""

import numpy as np

from bsvm_scale.optimization.driver import Recorder
from bsvm_scale.optimization.trials import fitted_slope, probe_neighbours


def test_fitted_slope_is_exact_for_a_quadratic_with_the_model_curvature():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3))
    B, g, xb = A @ A.T + np.eye(3), rng.standard_normal(3), rng.standard_normal(3)
    best = {"theta": xb, "fun": 1.5}
    recs = [{"theta": xb + d, "fun": 1.5 + g @ d + 0.5 * d @ B @ d}
            for d in rng.uniform(-1.0, 1.0, (6, 3))]
    far = {"theta": xb + 5.0, "fun": -1e6}  # outside the reach: ignored
    np.testing.assert_allclose(fitted_slope(recs + [far, best], best, B, 2.0), g, atol=1e-10)
    assert fitted_slope(recs[:3] + [far], best, B, 2.0) is None  # p + 1 points needed
    line = [{"theta": xb + t * np.ones(3), "fun": 0.0} for t in (0.1, 0.2, 0.3, 0.4)]
    assert fitted_slope(line, best, B, 2.0) is None  # the points do not fix every direction


def test_probe_neighbours_stay_in_the_box_and_report_only_a_better_point():
    rec = Recorder(lambda t: (float(t @ t), 2.0 * t, {}), np.array([0.0, -1.0]),
                   np.array([1.0, 1.0]))
    best = rec(np.array([0.0, 0.0]))
    assert probe_neighbours(rec, best, 0.5, (np.array([0.0, -1.0]), np.array([1.0, 1.0]))) is None
    assert [r["theta"].tolist() for r in rec.trajectory[1:]] == [[0.5, 0.0], [0.0, 0.5],
                                                                 [0.0, -0.5]]  # x at its bound
    worse = rec(np.array([0.0, 0.9]))
    found = probe_neighbours(rec, worse, 0.5, (np.array([0.0, -1.0]), np.array([1.0, 1.0])))
    np.testing.assert_array_equal(found["theta"], [0.0, 0.4])
