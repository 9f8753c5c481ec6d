"""The evidence-maximisation driver and its pieces: the trust-region step
(against an exhaustive active-set reference), the damped BFGS update, the
radius rule, the recorder (replay, callback, non-finite values), the stall
rule, the stopping rules, and ``run_start`` on smooth and jumping objectives."""

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize, rosen, rosen_der

from bsvm_scale.optimization import trust_region as tr
from bsvm_scale.optimization.driver import Options, Recorder, StallRule, run_start, stop_reason
from bsvm_scale.optimization.records import fixed_record, start_record, trajectory_columns


class _Counted:
    """Rosenbrock objective ``theta -> (value, grad, info)`` counting calls;
    ``jump``: a step of that height where ``theta[0] > 0.5`` (the gradient
    follows the smooth piece, as the evidence's does)."""

    def __init__(self, step=0.0, jump=0.0):
        self.calls = 0
        self.step = step
        self.jump = jump

    def __call__(self, theta):
        self.calls += 1
        value = rosen(theta) + (self.jump if theta[0] > 0.5 else 0.0)
        if self.step:  # piecewise constant: values on a grid of width step
            value = np.floor(value / self.step) * self.step
        return value, rosen_der(theta), {"call": self.calls}


BOUNDS = [(-2.0, 2.0), (-1.0, 3.0)]
THETA0 = np.array([-1.2, 1.0])


def _run(obj, **kw):
    records = []
    # Rosenbrock's values are not nats of evidence: no absolute stall tolerance
    res = run_start(obj, THETA0, BOUNDS, {"maxiter": 200, "stall_atol": 0.0},
                    callback=records.append, **kw)
    return res, records


# -- pieces -------------------------------------------------------------------

def _exhaustive_box_qp(g, B, lo, hi):
    """Slow reference: every assignment of each variable to its lower bound,
    its upper bound or free; the feasible stationary point of lowest value."""
    d = g.size
    best, best_s = np.inf, None
    for pattern in itertools.product((0, 1, 2), repeat=d):
        s = np.zeros(d)
        fixed = np.array([p != 2 for p in pattern])
        for i, p in enumerate(pattern):
            if p != 2:
                s[i] = lo[i] if p == 0 else hi[i]
        free = ~fixed
        if free.any():
            rhs = -(g[free] + B[np.ix_(free, fixed)] @ s[fixed])
            s[free] = np.linalg.solve(B[np.ix_(free, free)], rhs)
            if np.any(s[free] < lo[free] - 1e-12) or np.any(s[free] > hi[free] + 1e-12):
                continue
        value = g @ s + 0.5 * s @ B @ s
        if value < best:
            best, best_s = value, s
    return best_s, -best


@pytest.mark.parametrize("seed", range(8))
def test_model_step_is_the_exact_minimiser_over_the_box(seed):
    rng = np.random.default_rng(seed)
    d = 4
    A = rng.normal(size=(d, d))
    B = A @ A.T + 0.1 * np.eye(d)
    g = rng.normal(size=d) * 3.0
    lo, hi = -rng.uniform(0.0, 1.0, d), rng.uniform(0.05, 1.0, d)
    s, pred = tr.model_step(g, B, lo, hi)
    ref, ref_pred = _exhaustive_box_qp(g, B, lo, hi)
    np.testing.assert_allclose(s, ref, atol=1e-8)
    assert pred == pytest.approx(ref_pred, rel=1e-9, abs=1e-12)
    assert np.all(s >= lo) and np.all(s <= hi)


def test_model_step_holds_variables_with_a_box_of_zero_width():
    B = np.array([[2.0, 0.5], [0.5, 1.0]])
    g = np.array([1.0, -2.0])
    s, pred = tr.model_step(g, B, np.array([0.0, -1.0]), np.array([0.0, 1.0]))
    assert s[0] == 0.0 and s[1] == pytest.approx(1.0)  # -g/B = 2, cut at 1
    assert pred == pytest.approx(-(g @ s + 0.5 * s @ B @ s))


@pytest.mark.parametrize("precondition", [False, True])
def test_initial_hessian_makes_the_first_step_the_radius(precondition):
    g = np.array([300.0, -0.5, 2.0, 0.0])
    B = tr.initial_hessian(g, 0.2, precondition)
    step = -np.linalg.solve(B, g)
    assert np.max(np.abs(step)) == pytest.approx(0.2)
    if precondition:  # gradients above one move by the same amount, the others less
        assert abs(step[0]) == pytest.approx(abs(step[2]))
        assert abs(step[1]) == pytest.approx(0.5 * abs(step[0]))
    else:
        np.testing.assert_allclose(step, -g / 300.0 * 0.2)


def test_bfgs_update_meets_the_secant_condition_and_stays_positive_definite():
    rng = np.random.default_rng(3)
    B = np.eye(3)
    s = rng.normal(size=3)
    y = 2.0 * s + 0.1 * rng.normal(size=3)  # positive curvature: plain BFGS
    B1 = tr.bfgs_update(B, s, y)
    np.testing.assert_allclose(B1 @ s, y, rtol=1e-12)
    y_bad = -s  # negative curvature (a jump): damped, still positive definite
    B2 = tr.bfgs_update(B1, s, y_bad)
    assert np.all(np.linalg.eigvalsh(B2) > 0)
    assert s @ B2 @ s == pytest.approx(0.2 * (s @ B1 @ s))  # Powell: s'r = 0.2 s'Bs
    assert tr.bfgs_update(B1, s, np.full(3, np.nan)) is B1  # non-finite: unchanged


def test_first_bfgs_update_rescales_the_initial_guess():
    s, y = np.array([1.0, 0.0]), np.array([50.0, 0.0])
    B = tr.bfgs_update(np.eye(2), s, y, first=True)
    assert B[0, 0] == pytest.approx(50.0) and B[1, 1] == pytest.approx(50.0)


@pytest.mark.parametrize("rho, step, expect", [
    (np.nan, 0.4, 0.1),      # non-finite value: a quarter of the step
    (-3.0, 0.4, 0.1),        # worse: a quarter of the step
    (0.1, 0.4, 0.1),         # poor agreement: a quarter of the step
    (0.5, 0.4, 0.5),         # fair: unchanged
    (0.9, 0.5, 1.0),         # good and at the radius: doubled
    (0.9, 0.2, 0.5),         # good but inside: unchanged
    (0.9, 0.5, 1.0),
])
def test_next_radius(rho, step, expect):
    assert tr.next_radius(0.5, rho, step, 10.0) == pytest.approx(expect)
    assert tr.next_radius(0.5, 0.99, 0.5, 0.7) == 0.7  # capped by max_radius


def test_recorder_replays_then_evaluates_and_reports_every_record():
    obj = _Counted()
    seen = []
    first = Recorder(obj, *np.array(BOUNDS).T)
    points = [THETA0, THETA0 + 0.1, THETA0 + 0.2]
    recorded = [first(p) for p in points]
    again = Recorder(obj, *np.array(BOUNDS).T, replay=recorded[:2], callback=seen.append)
    calls = obj.calls
    out = [again(p) for p in points]
    assert obj.calls == calls + 1 and again.n_replayed == 2
    assert [r["replayed"] for r in out] == [True, True, False]
    assert [r["fun"] for r in out] == [r["fun"] for r in recorded] and seen == out


def test_recorder_counts_non_finite_values_with_an_infinite_gradient_norm():
    rec = Recorder(lambda t: (np.nan, np.zeros(2), {}), *np.array(BOUNDS).T)
    r = rec(THETA0)
    assert rec.n_nonfinite == 1 and r["grad_norm"] == np.inf


def test_stall_rule_counts_values_that_do_not_improve_the_reference():
    rule = StallRule(1e-3, 3)
    assert [rule(v) for v in (10.0, 9.0, 8.995, 8.999, np.nan, 8.992)] == \
        [False, False, False, False, False, True]
    assert not any(StallRule()(v) for v in (1.0, 1.0, 1.0, 1.0))  # off by default


def test_stall_rule_absolute_tolerance_counts_gains_below_it_as_stalls():
    values = (10.0, 9.95, 9.85, 9.8, 9.79)

    def calls(rule):
        return [rule(v) for v in values]

    assert calls(StallRule(1e-5, 2, atol=0.1)) == [False, False, False, False, True]
    assert not any(calls(StallRule(1e-5, 2)))  # every gain beats 1e-5 relative
    # the larger of the two tolerances applies (here 1e-2 * |best|)
    assert calls(StallRule(1e-2, 2, atol=0.01)) == [False, False, False, False, True]


def test_stop_reason_names_the_rule():
    opts = Options.parse({"maxiter": 5, "maxfun": 9, "gtol": 1e-3, "ftol": 1e-6,
                          "min_radius": 1e-3})
    assert stop_reason(opts, 1, 2, 1e-4, 1.0)[1].startswith("CONVERGENCE: projected gradient")
    assert "relative decrease" in stop_reason(opts, 1, 2, 1.0, 1.0, decrease=1e-7)[1]
    assert "trust radius" in stop_reason(opts, 1, 2, 1.0, 1e-4)[1]
    assert stop_reason(opts, 5, 6, 1.0, 1.0) == (False, "STOP: maxiter=5 iterations reached")
    assert stop_reason(opts, 4, 9, 1.0, 1.0)[0] is False
    assert stop_reason(opts, 1, 2, 1.0, 1.0, decrease=None, predicted=1e-3) is None
    assert stop_reason(opts, 1, 2, 1.0, 1.0, promised=0.0)[1].startswith(
        "CONVERGENCE: the model predicts a decrease 0 <= promise_atol=0")
    loose = Options.parse({"promise_atol": 0.1})
    assert "promise_atol=0.1" in stop_reason(loose, 1, 2, 1.0, 1.0, promised=0.05)[1]
    assert stop_reason(loose, 1, 2, 1.0, 1.0, promised=0.2) is None


def test_promise_atol_ends_a_start_once_a_trusted_model_sees_no_gain_that_counts():
    """A shallow quadratic ``a |x - 1|^2`` from ``x = 0`` (whole gain ``2 a =
    0.1``), first radius 0.25. The first point's model is a guess and never
    ends a start, even with ``promise_atol`` above the whole gain. After the
    first accepted step the model is exact and promises ``2 a 0.75^2 =
    0.05625``: ``promise_atol = 0.06`` ends the start there, ``1e-3`` lets the
    search go on to the minimum."""
    def shallow(theta, a=0.05):
        return a * float(np.sum((theta - 1.0) ** 2)), 2 * a * (theta - 1.0), {}

    opts = {"stall_atol": 0.0, "gtol": 1e-8, "radius": 0.25}
    box = [(-3.0, 3.0)] * 2
    for atol in (0.5, 0.06):
        cut = run_start(shallow, np.zeros(2), box, {**opts, "promise_atol": atol})
        assert cut.n_eval == 2 and f"promise_atol={atol:g}" in cut.message and cut.success
        assert cut.fun == pytest.approx(0.05625)
    full = run_start(shallow, np.zeros(2), box, {**opts, "promise_atol": 1e-3})
    assert full.n_eval > 2 and full.fun < 1e-3 and "promise_atol" not in full.message


@pytest.mark.parametrize("stalls", [0, 1, 2, 3, 5])
def test_promise_stalls_lets_the_promise_end_a_start_only_after_that_many_stalls(stalls):
    """A shallow quartic ``a |x - 1|^4`` from ``x = 0`` (whole gain 0.1, slow
    convergence) gains less than the stall rule's 0.1 nat at every step, so
    evaluation ``1 + j`` is the ``j``-th stall. With ``promise_stalls = k`` the
    (trusted, small) promise ends the start after ``max(k, 1)`` stalls; the
    stall rule alone ends it after 5."""
    def shallow(theta, a=0.05):
        return a * float(np.sum((theta - 1.0) ** 4)), 4 * a * (theta - 1.0) ** 3, {}

    opts = {"stall_rtol": 1e-5, "stall_evals": 5, "stall_atol": 0.1, "gtol": 1e-8,
            "radius": 0.25, "promise_atol": 0.06, "promise_stalls": stalls}
    res = run_start(shallow, np.zeros(2), [(-3.0, 3.0)] * 2, opts)
    if stalls < 5:
        assert res.n_eval == 1 + max(stalls, 1) and "promise_atol=0.06" in res.message
    else:
        assert res.n_eval == 6 and "stall_atol=0.1" in res.message


def test_the_full_data_phase_counts_only_gains_above_one_nat():
    """``FINE_OPTIONS``: a shallow quartic whose whole gain is 0.8 nat ends after
    its first evaluation and 2 more, each gaining less than 1 nat; a retraining's
    options (a gain counts above 0.1 nat) go on."""
    from bsvm_scale.optimization.starts import FINE_OPTIONS, RETRAIN_OPTIONS, search_options

    def shallow(theta, a=0.4):
        return a * float(np.sum((theta - 1.0) ** 4)), 4 * a * (theta - 1.0) ** 3, {}

    box = [(-3.0, 3.0)] * 2
    fine = run_start(shallow, np.zeros(2), box, search_options(FINE_OPTIONS), max_step=0.5)
    assert fine.n_eval == 3 and "stall_atol=1 " in fine.message and fine.success
    retrain = run_start(shallow, np.zeros(2), box, search_options(RETRAIN_OPTIONS), max_step=0.5)
    assert retrain.n_eval > 3 and retrain.fun < fine.fun


def test_options_are_validated_by_name():
    with pytest.raises(ValueError, match=r"\['maxls'\] are not known"):
        Options.parse({"maxls": 20})
    with pytest.raises(ValueError, match="stall_rtol and stall_evals go together"):
        Options.parse({"stall_rtol": 1e-3})
    with pytest.raises(ValueError, match="gtol must be a number >= 0"):
        Options.parse({"gtol": -1.0})
    with pytest.raises(ValueError, match="probe_step must be a number >= 0"):
        Options.parse({"probe_step": -0.5})
    with pytest.raises(ValueError, match="stall_atol must be a number >= 0"):
        Options.parse({"stall_atol": -0.1})
    with pytest.raises(ValueError, match="promise_atol must be a number >= 0"):
        Options.parse({"promise_atol": -1})
    with pytest.raises(ValueError, match="promise_stalls must be a number >= 0"):
        Options.parse({"promise_stalls": -1})
    with pytest.raises(ValueError, match="promise_stalls must be a whole number; got 1.5"):
        Options.parse({"promise_stalls": 1.5})
    assert Options.parse({"min_step": 0.01}).min_radius == 0.01
    opts = Options.parse(None, max_step=0.5, first_step=0.2)
    assert (opts.radius, opts.max_radius) == (0.2, 0.5)


# -- the driver ---------------------------------------------------------------

@pytest.mark.parametrize("k", [1, 7, 25])
@pytest.mark.parametrize("precondition", [False, True])
def test_replay_reproduces_the_run_without_reevaluating(k, precondition):
    ref, records = _run(_Counted(), precondition=precondition)
    assert len(records) > k
    obj = _Counted()
    res, again = _run(obj, precondition=precondition, replay=records[:k])
    assert obj.calls == len(records) - k  # recorded points were not evaluated again
    assert res.n_replayed == k and [r["replayed"] for r in again] == [True] * k + \
        [False] * (len(records) - k)
    assert np.array_equal(res.theta, ref.theta) and res.fun == ref.fun
    assert [r["fun"] for r in again] == [r["fun"] for r in records]
    assert res.n_iter == ref.n_iter and res.message == ref.message


def test_replay_stops_where_the_record_differs():
    _, records = _run(_Counted())
    forged = [dict(r) for r in records[:5]]
    forged[3]["theta"] = forged[3]["theta"] + 1e-3  # not what the driver asks for
    obj = _Counted()
    res, again = _run(obj, replay=forged)
    assert res.n_replayed == 3 and not again[3]["replayed"]
    assert np.array_equal(again[3]["theta"], records[3]["theta"])


def test_reaches_the_minimum_with_one_evaluation_per_iteration():
    obj = _Counted()
    res, records = _run(obj)
    assert obj.calls == len(records) == res.n_iter + 1  # no line search, no repeats
    ref = minimize(rosen, THETA0, jac=rosen_der, method="L-BFGS-B", bounds=BOUNDS,
                   options={"maxiter": 200, "ftol": 1e-12, "gtol": 1e-10})
    np.testing.assert_allclose(res.theta, ref.x, atol=2e-2)
    assert res.fun < 1e-3 and res.success


def test_result_is_the_best_point_and_rejected_steps_shrink_the_radius():
    res, records = _run(_Counted())
    assert res.fun == min(r["fun"] for r in records)
    assert res.n_rejected == sum(not r["accepted"] for r in records[1:]) > 0
    for a, b in zip(records[1:], records[2:]):
        if not a["accepted"]:  # the next trial lies in a smaller region
            assert b["radius"] < a["radius"]
            assert np.max(np.abs(b["theta"] - a["theta"])) > 0


def test_first_trial_lies_at_the_initial_radius_within_max_step():
    seen = []

    def obj(theta):
        seen.append(np.array(theta, dtype=float))
        return 100.0 * rosen(theta), 100.0 * rosen_der(theta), {}

    theta0 = np.array([-1.5, -0.9])
    res = run_start(obj, theta0, [(-5.0, 5.0)] * 2, {"maxiter": 30}, max_step=0.5,
                    first_step=0.2)
    np.testing.assert_array_equal(seen[0], theta0)
    assert np.max(np.abs(seen[1] - theta0)) == pytest.approx(0.2, rel=1e-9)
    for r in res.trajectory[1:]:
        assert r["radius"] <= 0.5


def test_the_search_follows_the_gradients_across_a_jump():
    """``(x - 2)^2`` plus 0.5 where ``x > 1``, the gradient from the smooth
    piece (as the evidence's), steps of at most 0.25 from 0. The first point
    past the jump (1.25: 1.0625) is worse than the last before it (1: 1), so a
    search that accepts only decreases ends at 1; the gradients agree with
    the model there, the step is taken and the search reaches 2 (0.5, the
    lowest value)."""
    def objective(theta):
        x = theta[0]
        return (x - 2.0) ** 2 + (0.5 if x > 1.0 else 0.0), np.array([2.0 * (x - 2.0)]), {}

    res = run_start(objective, np.zeros(1), [(-5.0, 5.0)], {"maxiter": 50}, max_step=0.25)
    assert res.theta[0] == pytest.approx(2.0, abs=1e-3) and res.fun == pytest.approx(0.5)
    recs = res.trajectory
    uphill = [b for a, b in zip(recs, recs[1:])
              if b["accepted"] and b["fun"] > a["fun"] and b["theta"][0] > 1.0 >= a["theta"][0]]
    assert uphill  # the jump was crossed by a step the values alone would reject
    assert all(r["radius"] <= 0.25 for r in recs[1:])


def test_stall_rule_ends_a_start_on_a_flat_objective():
    obj = _Counted(step=0.05)  # a function flat below a resolution of 0.05
    opts = {"maxiter": 200, "stall_rtol": 1e-3, "stall_evals": 4, "stall_atol": 0.02,
            "min_radius": 0.0, "ftol": 0.0}
    res = run_start(obj, THETA0, BOUNDS, opts)
    funs = [r["fun"] for r in res.trajectory]
    assert "stall_rtol" in res.message and "stall_atol=0.02" in res.message and res.success
    rule = StallRule(1e-3, 4, atol=0.02)
    flags = [rule(f) for f in funs]
    assert flags[-1] and not any(flags[:-1])


def test_min_radius_ends_a_start_whose_steps_cannot_matter():
    """Values known to 1e-3 and a gradient slightly off (as an evidence at an
    SMO tolerance): near the optimum the steps fail and the radius shrinks;
    below min_radius the start ends instead of paying for steps that cannot
    matter."""
    def objective(theta):
        value = np.floor(rosen(theta) / 1e-3) * 1e-3
        return value, rosen_der(theta) + np.array([0.05, -0.05]), {}

    off = {"maxiter": 300, "ftol": 0.0, "gtol": 0.0, "stall_rtol": None, "stall_evals": None}
    free = run_start(objective, THETA0, BOUNDS, dict(off, min_radius=0.0))
    res = run_start(objective, THETA0, BOUNDS, dict(off, min_radius=1e-3))
    assert "min_radius" in res.message and res.n_eval < free.n_eval
    assert res.fun <= 1e-3 and rosen(res.theta) < 1e-2


def test_start_record_layout_is_shared():
    res, _ = _run(_Counted())
    rec = start_record(res, shift=2.0, n_samples=7)
    assert rec["neg_log_evidence"] == res.fun + 2.0 and rec["n_samples"] == 7
    assert {"theta0", "theta", "n_iter", "n_eval", "success", "message", "n_nonfinite",
            "n_rejected", "n_replayed"} <= set(rec)
    r = rec["trajectory"][0]
    assert set(r) == {"theta", "fun", "grad", "grad_norm", "accepted", "radius", "replayed",
                      "info"}
    assert r["info"] == {"call": 1}
    cols = trajectory_columns(rec["trajectory"], 2)
    assert cols["theta"].shape == (res.n_eval, 2) and np.all(np.isnan(cols["map_s"]))
    fixed = fixed_record(THETA0, 3.0, {"n_sv": 4, "support": np.arange(4)})
    assert fixed["n_eval"] == 1 and fixed["trajectory"][0]["info"] == {"n_sv": 4}


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_coarse_starts_refine_the_best_subsample_start_from_its_dual_solution(n_jobs):
    from bsvm_scale.optimization.objective import BestPoint
    from bsvm_scale.optimization.starts import coarse_starts, subsample_indices

    class Quadratic:
        """-ln evidence (theta - c)^2 + offset on a subsample; dual = its labels."""

        def __init__(self, X, y):
            self.X, self.y, self.best = X, y, None

        def __call__(self, theta):
            value = float(np.sum((theta - 1.0) ** 2)) + self.y.size
            if self.best is None or value < self.best.value:
                self.best = BestPoint(value, theta.copy(), self.y + theta[0])
            return value, 2.0 * (theta - 1.0), {}

    X = np.arange(40.0).reshape(20, 2)
    y = np.arange(20.0)
    thetas = [np.array([3.0, 3.0]), np.array([1.2, 0.8])]
    records, best, dual0, chosen = coarse_starts(Quadratic, X, y, thetas, 6, None,
                                                 lambda o, t: run_start(o, t, BOUNDS), n_jobs)
    assert [r["n_samples"] for r in records] == [6, 6]
    lo, hi = np.array(BOUNDS).T
    for r, t in zip(records, thetas):  # in the order of the starts
        np.testing.assert_array_equal(r["theta0"], np.clip(t, lo, hi))
    assert chosen.best.value == records[best]["neg_log_evidence"]
    assert best == int(np.argmin([r["neg_log_evidence"] for r in records]))
    idx = subsample_indices(20, 6, None)
    assert np.count_nonzero(dual0) == 6  # y + theta_0 > 0 on the subsample
    np.testing.assert_allclose(dual0[idx], y[idx] + records[best]["theta"][0])
    assert np.all(dual0[np.setdiff1d(np.arange(20), idx)] == 0)
    assert coarse_starts(Quadratic, X, y, thetas, 10, None, None) == ([], None, None, None)


def test_evidence_weights_are_the_normalised_evidences():
    from scipy.special import softmax

    from bsvm_scale.optimization.starts import evidence_weights

    ev = np.array([-1225.3, -1219.6, -1230.0])
    np.testing.assert_allclose(evidence_weights(ev), softmax(ev), rtol=1e-12)
    assert evidence_weights([-5000.0])[0] == 1.0


class _IsoFit:
    """A stand-in isotropic search outcome whose evidence is the start's first entry."""

    def __init__(self, ev):
        self.log_evidence = ev


def _fit_isotropic(X, y, theta0):
    if theta0[0] < 0:
        raise FloatingPointError("no finite evidence")
    return _IsoFit(float(theta0[0]))


def test_the_ard_continuation_begins_at_the_best_isotropic_fit():
    import warnings

    from bsvm_scale.optimization.starts import best_isotropic, isotropic_stage

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        stage = isotropic_stage(_fit_isotropic, None, None, [np.array([1.0]), np.array([-1.0]),
                                                  np.array([3.0])])
    assert stage[1] is None and "start 1 failed" in str(caught[0].message)
    assert best_isotropic(stage) is stage[2]
    assert best_isotropic([None, None]) is None


@pytest.mark.parametrize("mode,refined,direct", [
    ("start", False, [True, True, True]),
    ("isotropic", False, [True, True, True]),
    ("continuation", False, [False, True, False]),   # start 1's isotropic fit failed
    ("continuation", True, [True, True, True]),      # a refined start always runs
])
def test_ard_runs_policy(mode, refined, direct):
    import warnings

    from bsvm_scale.optimization.starts import ard_runs

    thetas = [np.array([1.0]), np.array([-1.0]), np.array([3.0])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        flags, stage, best = ard_runs(_fit_isotropic, None, None, thetas, thetas, mode, refined)
    assert flags == direct
    if mode == "start":
        assert stage == [None] * 3 and best is None
    else:
        assert best is stage[2] and stage[1] is None


def _two_wells(theta):
    """``x^2`` for ``x < 0.7`` and ``(x - 1.2)^2 - 0.5`` beyond, in both
    coordinates summed: each piece's gradient is its own (the search cannot
    see the lower well from the first one)."""
    v, g = 0.0, np.zeros(theta.size)
    for k, x in enumerate(theta):
        if x < 0.7:
            v, g[k] = v + x * x, 2.0 * x
        else:
            v, g[k] = v + (x - 1.2) ** 2 - 0.5, 2.0 * (x - 1.2)
    return v, g, {}


def test_probe_continues_the_search_from_a_better_neighbour():
    box = [(-3.0, 3.0), (-3.0, 3.0)]
    plain = run_start(_two_wells, [-1.0, -1.0], box, {"maxiter": 100})
    np.testing.assert_allclose(plain.theta, [0.0, 0.0], atol=1e-3)  # the first well
    probed = run_start(_two_wells, [-1.0, -1.0], box, {"maxiter": 100, "probe_step": 0.8,
                                                       "probe_rounds": 3})
    np.testing.assert_allclose(probed.theta, [1.2, 1.2], atol=1e-3)  # both wells left
    assert probed.fun == pytest.approx(-1.0, abs=1e-6) and probed.success
    probes = [r for r in probed.trajectory if r["radius"] == 0.8]
    assert len(probes) >= 4  # axis neighbours, evaluated through the recorder
    assert probed.n_eval == len(probed.trajectory) > plain.n_eval


@pytest.mark.parametrize("k", [3, 9, 14])
def test_replay_is_exact_through_the_probes(k):
    opts = {"maxiter": 100, "probe_step": 0.8, "probe_rounds": 3}
    records = []
    ref = run_start(_two_wells, [-1.0, -1.0], [(-3.0, 3.0)] * 2, opts, callback=records.append)
    assert len(records) > k and any(r["radius"] == 0.8 for r in records[k:])
    calls = []

    def counted(theta):
        calls.append(1)
        return _two_wells(theta)

    res = run_start(counted, [-1.0, -1.0], [(-3.0, 3.0)] * 2, opts, replay=records[:k])
    assert len(calls) == len(records) - k and res.n_replayed == k
    assert np.array_equal(res.theta, ref.theta) and res.fun == ref.fun
    assert [r["fun"] for r in res.trajectory] == [r["fun"] for r in records]


def test_probe_respects_limits_and_ignores_non_finite_neighbours():
    box = [(-3.0, 3.0), (-3.0, 3.0)]
    plain = run_start(_two_wells, [-1.0, -1.0], box, {"maxiter": 100})
    # no room for 2p more evaluations under maxfun: no probe, the converged start stays a success
    capped = run_start(_two_wells, [-1.0, -1.0], box, {"maxiter": 100, "probe_step": 0.8,
                                                       "maxfun": plain.n_eval + 1})
    assert capped.n_eval == plain.n_eval and capped.success
    assert not any(r.get("probe") for r in capped.trajectory)

    def holes(theta):  # the lower well gives NaN gradients, one neighbour a NaN value
        v, g, info = _two_wells(theta)
        if theta[0] > 0.7:
            g = np.full(2, np.nan)
        if theta[1] > 0.7:
            v = np.nan
        return v, g, info

    with pytest.warns(RuntimeWarning, match="not finite"):
        res = run_start(holes, [-1.0, -1.0], box, {"maxiter": 100, "probe_step": 0.8})
    probes = [r for r in res.trajectory if r.get("probe")]
    assert len(probes) == 4 and res.success  # a failed probe does not fail the start
    np.testing.assert_allclose(res.theta, [0.0, 0.0], atol=1e-3)  # no NaN-gradient incumbent
    with pytest.raises(ValueError, match="probe_step must be finite"):
        Options.parse({"probe_step": np.inf})
    with pytest.raises(ValueError, match="probe_rounds a whole number"):
        Options.parse({"probe_rounds": 1.5})


# -- the slope trial after a start ---------------------------------------------

_TILT = np.array([[2.0, 1.2], [1.2, 3.0]])


def _staircase(theta):
    """A tilted quadratic plus steps falling by 0.05 every 0.1 along
    ``theta[0]`` (a slope of -0.5 that the gradient, the smooth piece's,
    never shows)."""
    theta = np.asarray(theta, dtype=float)
    v = 0.5 * theta @ _TILT @ theta + 0.05 * np.floor(-theta[0] / 0.1)
    return float(v), _TILT @ theta, {}


STAIR0 = [-2.5, 2.0]


def test_slope_trial_follows_the_values_past_a_gradient_minimum():
    box = [(-3.0, 3.0), (-3.0, 3.0)]
    plain = run_start(_staircase, STAIR0, box, {"maxiter": 100})
    sloped = run_start(_staircase, STAIR0, box, {"maxiter": 100, "slope_rounds": 2})
    assert np.max(np.abs(plain.theta)) < 0.01  # the smooth piece's minimum
    trials = [r for r in sloped.trajectory if r.get("slope")]
    assert 1 <= len(trials) <= 2 and trials[0]["theta"][0] > 0.1  # down the values' slope
    assert sloped.fun < plain.fun - 0.05 and sloped.theta[0] > 0.1 and sloped.success
    assert sloped.n_eval == len(sloped.trajectory) > plain.n_eval


def test_slope_continuation_stalls_after_slope_stall_evaluations():
    box = [(-3.0, 3.0), (-3.0, 3.0)]
    only_stall = {"maxiter": 100, "ftol": 0.0, "gtol": 0.0, "min_radius": 0.0}
    for k in (2, 3):
        opts = {**only_stall, "slope_rounds": 1, "slope_stall": k, "stall_evals": 5}
        res = run_start(_staircase, STAIR0, box, opts)
        first = next(i for i, r in enumerate(res.trajectory) if r.get("slope"))
        assert f"over the last {k} evaluations" in res.message
        assert len(res.trajectory) - first - 1 == k  # the trial was the best point since
    with pytest.raises(ValueError, match="slope_stall a whole number >= 1"):
        Options.parse({"slope_stall": 0})
    with pytest.raises(ValueError, match="slope_rounds must be a number >= 0"):
        Options.parse({"slope_rounds": -1})


@pytest.mark.parametrize("k", [3, 6, 8])
def test_replay_is_exact_through_the_slope_trials(k):
    opts = {"maxiter": 100, "slope_rounds": 2}
    records = []
    ref = run_start(_staircase, STAIR0, [(-3.0, 3.0)] * 2, opts, callback=records.append)
    assert len(records) > k and any(r.get("slope") for r in records[k - 1:])
    calls = []

    def counted(theta):
        calls.append(1)
        return _staircase(theta)

    res = run_start(counted, STAIR0, [(-3.0, 3.0)] * 2, opts, replay=records[:k])
    assert len(calls) == len(records) - k and res.n_replayed == k
    assert np.array_equal(res.theta, ref.theta) and res.fun == ref.fun
    assert [r["fun"] for r in res.trajectory] == [r["fun"] for r in records]


# -- a start that begins with a given model Hessian ----------------------------

def _quadratic(H, xstar):
    """``theta -> (1/2 (theta - x*)' H (theta - x*), gradient, {})`` with a call count."""
    calls = []

    def f(theta):
        calls.append(np.array(theta))
        r = np.asarray(theta) - xstar
        return 0.5 * float(r @ H @ r), H @ r, {}
    return f, calls


def test_check_hessian_names_each_problem():
    good = np.array([[2.0, 0.5], [0.5, 1.0]])
    np.testing.assert_array_equal(tr.check_hessian(good, 2), good)
    with pytest.raises(ValueError, match=r"\(3, 3\) array.*got shape \(2, 2\).*None"):
        tr.check_hessian(good, 3)
    with pytest.raises(ValueError, match="must be finite; got 2 non-finite"):
        tr.check_hessian(np.array([[1.0, np.nan], [np.nan, 1.0]]), 2)
    with pytest.raises(ValueError, match=r"symmetric; the largest difference B - B.T is 1.*\(B \+ B.T\) / 2"):
        tr.check_hessian(np.array([[2.0, 1.0], [0.0, 1.0]]), 2)
    with pytest.raises(ValueError, match="positive definite; its smallest eigenvalue is -1"):
        tr.check_hessian(np.array([[1.0, 2.0], [2.0, 1.0]]), 2)
    with pytest.raises(ValueError, match="positive definite"):
        run_start(lambda t: (0.0, np.zeros(2), {}), np.zeros(2), hessian=-np.eye(2))
    tiny = np.array([[1e-300, 0.0], [1e-310, 1e-300]])  # rounding-level asymmetry passes
    assert tr.check_hessian(tiny, 2).shape == (2, 2)


def test_a_given_hessian_is_not_rescaled_at_the_first_update(monkeypatch):
    """The diagonal guess is rescaled to the measured curvature at the first
    BFGS update; a given Hessian (an earlier search's) is not."""
    from bsvm_scale.optimization import driver

    firsts, real = [], tr.bfgs_update

    def spy(B, s, y, first=False):
        firsts.append(first)
        return real(B, s, y, first)

    monkeypatch.setattr(driver, "bfgs_update", spy)
    H = np.array([[40.0, 12.0], [12.0, 9.0]])
    f, _ = _quadratic(H, np.array([0.3, -0.2]))
    run_start(f, np.zeros(2), options={"maxiter": 3})
    assert firsts[0] is True and not any(firsts[1:])
    firsts.clear()
    run_start(f, np.zeros(2), options={"maxiter": 3}, hessian=2.0 * H)
    assert firsts and not any(firsts)


def test_the_result_keeps_a_hessian_only_when_it_is_one():
    """A start that ends at its first point on the diagonal guess has no
    model Hessian to pass on; one begun with a given Hessian passes it on."""
    H = np.diag([400.0, 4.0])
    xstar = np.array([0.1, 0.2])
    f, _ = _quadratic(H, xstar)
    at_optimum = run_start(f, xstar)  # gradient 0: ends at once
    assert at_optimum.n_eval == 1 and at_optimum.hessian is None
    given = run_start(f, xstar, hessian=H)
    np.testing.assert_array_equal(given.hessian, H)
    moved = run_start(f, np.zeros(2))
    assert moved.n_iter > 0 and moved.hessian is not None


def test_a_given_hessian_makes_the_first_step_newtons():
    """With the exact Hessian of a quadratic the first trial is the minimiser
    (inside the radius), where the start ends; the diagonal guess needs more
    evaluations from the same point. The final model Hessian is returned."""
    H = np.array([[40.0, 12.0, 0.0], [12.0, 9.0, -2.0], [0.0, -2.0, 3.0]])
    xstar = np.array([0.3, -0.2, 0.1])
    f, calls = _quadratic(H, xstar)
    res = run_start(f, np.zeros(3), options={"radius": 1.0}, hessian=H)
    np.testing.assert_allclose(calls[1], xstar, atol=1e-12)
    assert res.n_eval == 2 and res.fun < 1e-20
    assert res.hessian.shape == (3, 3) and np.all(np.linalg.eigvalsh(res.hessian) > 0)
    f2, calls2 = _quadratic(H, xstar)
    plain = run_start(f2, np.zeros(3), options={"radius": 1.0})
    assert plain.n_eval > res.n_eval


def test_a_given_hessian_ends_a_start_at_its_first_point_near_the_optimum():
    """Begun where the model promises less than ftol, the start ends there:
    one evaluation (a retraining at an optimum that barely moved)."""
    H = np.diag([1e4, 1e3])
    xstar = np.array([0.5, 0.5])
    f, calls = _quadratic(H, xstar)
    theta0 = xstar + np.array([1e-6, -1e-6])
    res = run_start(lambda t: (lambda v, g, i: (v + 1e3, g, i))(*f(t)), theta0,
                    options={"ftol": 1e-6}, hessian=H)
    assert res.n_eval == 1 and "predicts a relative decrease" in res.message
    np.testing.assert_array_equal(res.theta, theta0)


def test_run_plan_passes_each_entrys_hessian():
    from bsvm_scale.optimization.search import Run, run_plan

    H = np.array([[5.0, 1.0], [1.0, 2.0]])
    xstar = np.array([0.2, 0.1])
    f, calls = _quadratic(H, xstar)

    class Obj:
        best = None

        def __call__(self, theta):
            return f(theta)

        def restart(self, warm=None):
            pass

    res = run_plan(Obj(), [Run(np.zeros(2), hessian=H), Run(np.zeros(2))], None)
    np.testing.assert_allclose(calls[1], xstar, atol=1e-12)  # first run: a Newton step
    assert res[0].n_eval == 2 and res[1].n_eval > 2  # second run: the diagonal guess


def test_start_record_keeps_the_final_hessian():
    H = np.array([[5.0, 1.0], [1.0, 2.0]])
    f, _ = _quadratic(H, np.array([0.2, 0.1]))
    rec = start_record(run_start(f, np.zeros(2)))
    assert rec["hessian"].shape == (2, 2)
    assert "hessian" not in fixed_record(np.zeros(2), 1.0)
