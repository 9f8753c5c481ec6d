"""The evidence-maximisation driver: replay of recorded evaluations (exact
resume), first-step normalisation and the stall rule of ``run_start``."""

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from bsvm_scale.optimize import run_start


class _Counted:
    """Rosenbrock objective ``theta -> (value, grad, info)`` counting calls."""

    def __init__(self, step=0.0):
        self.calls = 0
        self.step = step

    def __call__(self, theta):
        self.calls += 1
        value = rosen(theta)
        if self.step:  # piecewise constant: values on a grid of width step
            value = np.floor(value / self.step) * self.step
        return value, rosen_der(theta), {"call": self.calls}


BOUNDS = [(-2.0, 2.0), (-1.0, 3.0)]
THETA0 = np.array([-1.2, 1.0])


def _run(obj, **kw):
    records = []
    res = run_start(obj, THETA0, BOUNDS, {"maxiter": 200}, callback=records.append, **kw)
    return res, records


@pytest.mark.parametrize("k", [1, 7, 25])
@pytest.mark.parametrize("normalize", [False, True])
def test_replay_reproduces_the_run_without_reevaluating(k, normalize):
    ref, records = _run(_Counted(), normalize=normalize)
    assert len(records) > k
    obj = _Counted()
    res, again = _run(obj, normalize=normalize, replay=records[:k])
    assert obj.calls == len(records) - k  # recorded points were not evaluated again
    assert res.n_replayed == k and [r["replayed"] for r in again] == [True] * k + \
        [False] * (len(records) - k)
    assert np.array_equal(res.theta, ref.theta) and res.fun == ref.fun
    assert [r["fun"] for r in again] == [r["fun"] for r in records]
    assert res.n_iter == ref.n_iter and res.message == ref.message


def test_replay_stops_where_the_record_differs():
    _, records = _run(_Counted())
    forged = [dict(r) for r in records[:5]]
    forged[3]["theta"] = forged[3]["theta"] + 1e-3  # not what L-BFGS-B asks for
    obj = _Counted()
    res, again = _run(obj, replay=forged)
    assert res.n_replayed == 3 and not again[3]["replayed"]
    assert np.array_equal(again[3]["theta"], records[3]["theta"])


def test_normalize_reports_unscaled_values_and_reaches_the_minimum():
    obj = _Counted()
    res, records = _run(obj, normalize=True)
    # the first evaluation (theta0) is made once although L-BFGS-B asks for it again
    assert obj.calls == len(records)
    assert records[0]["fun"] == rosen(THETA0)
    for r in records:
        assert r["fun"] == rosen(r["theta"])
        np.testing.assert_array_equal(r["grad"], rosen_der(r["theta"]))
    ref = minimize(rosen, THETA0, jac=rosen_der, method="L-BFGS-B", bounds=BOUNDS,
                   options={"maxiter": 200, "ftol": 1e-12, "gtol": 1e-10})
    np.testing.assert_allclose(res.theta, ref.x, atol=2e-3)


def test_stall_rule_stops_after_the_given_number_of_flat_evaluations():
    obj = _Counted(step=0.05)  # a function flat below a resolution of 0.05
    opts = {"maxiter": 200, "stall_rtol": 1e-3, "stall_evals": 4}
    res = run_start(obj, THETA0, BOUNDS, opts)
    funs = [r["fun"] for r in res.trajectory]
    assert "stall_rtol" in res.message and res.success
    # independent check of the rule on the recorded values
    ref, count = funs[0], 0
    for i, f in enumerate(funs[1:], 1):
        if f < ref - 1e-3 * max(1.0, abs(ref)):
            ref, count = f, 0
        else:
            count += 1
        assert count < 4 or i == len(funs) - 1
    assert count == 4
    free = run_start(_Counted(step=0.05), THETA0, BOUNDS, {"maxiter": 200})
    assert free.n_eval > res.n_eval  # without the rule the line searches go on


def _min_gap_to_best(trajectory):
    """Smallest max-norm distance of an evaluated point to the best point
    evaluated before it (distinct points only)."""
    gaps, best = [], None
    for r in trajectory:
        if best is not None:
            d = np.max(np.abs(r["theta"] - best[0]))
            if d > 0:
                gaps.append(d)
        if best is None or r["fun"] < best[1]:
            best = (r["theta"], r["fun"])
    return min(gaps)


def test_min_step_skips_line_search_steps_that_cannot_matter():
    # values known only to a resolution (like an evidence at an SMO tolerance):
    # near the optimum the line searches shrink their steps towards zero
    opts = {"maxiter": 200}
    free = run_start(_Counted(step=1e-4), THETA0, BOUNDS, opts)
    assert _min_gap_to_best(free.trajectory) < 1e-10
    obj = _Counted(step=1e-4)
    res = run_start(obj, THETA0, BOUNDS, dict(opts, min_step=1e-3))
    assert _min_gap_to_best(res.trajectory) >= 1e-3
    assert obj.calls == len(res.trajectory) < 0.7 * len(free.trajectory)
    # the same optimum (rosen's minimum is 0 at (1, 1))
    assert res.fun == free.fun == 0.0 and rosen(res.theta) < 1e-3
    np.testing.assert_allclose(res.theta, [1.0, 1.0], atol=0.05)


def test_preconditioned_start_evaluates_theta0_once():
    """With precondition=True the start point is evaluated for the scales and
    L-BFGS-B then asks for it again; that request must be recognised as
    theta0 and answered from the first evaluation (each one is a full MAP
    solve in BSVR). Here (theta0 * s) / s != theta0 in floating point, so
    mapping the request back by division made a second, near-identical
    evaluation."""
    theta0 = np.array([-1.5, -0.9])
    seen = []

    def obj(theta):
        seen.append(np.array(theta, dtype=float))
        return rosen(theta), rosen_der(theta), {}

    g0 = rosen_der(theta0)
    s = np.maximum(1.0, np.sqrt(np.abs(g0)))
    assert not np.array_equal((theta0 * s) / s, theta0)   # the case this guards
    run_start(obj, theta0, None, {"maxiter": 3}, precondition=True)
    np.testing.assert_array_equal(seen[0], theta0)
    near = [t for t in seen if np.allclose(t, theta0, rtol=0, atol=1e-12)]
    assert len(near) == 1


@pytest.mark.parametrize("precondition", [False, True])
def test_normalised_first_step_moves_no_variable_beyond_first_step(precondition):
    """normalize bounds L-BFGS-B's first step (-g in the scaled variables) by
    first_step (and max_step) in every variable, preconditioned or not, so a
    trust radius does not reject it: the first point evaluated after theta0
    lies exactly first_step away (max-norm). (With a bound on every variable
    L-BFGS-B's first trial is the full step -g; without, a unit step.)"""
    theta0 = np.array([-1.5, -0.9])
    seen = []

    def obj(theta):
        seen.append(np.array(theta, dtype=float))
        return 100.0 * rosen(theta), 100.0 * rosen_der(theta), {}

    run_start(obj, theta0, [(-5.0, 5.0)] * 2, {"maxiter": 1}, max_step=0.5, first_step=0.2,
              normalize=True, precondition=precondition)
    np.testing.assert_array_equal(seen[0], theta0)
    assert np.max(np.abs(seen[1] - theta0)) == pytest.approx(0.2, rel=1e-9)
