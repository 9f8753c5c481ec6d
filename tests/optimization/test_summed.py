"""The sum of independent evidences sharing theta (SummedObjective): values,
gradients (against central differences on BTSVC evidences), the best point
each part keeps, state round trips, and one search over it resumed."""

import numpy as np
import pytest

from bsvm_scale.inference.objective_trig import TrigObjective
from bsvm_scale.optimization.objective import BestPoint, Evaluation, Warm
from bsvm_scale.optimization.search import Data, Resume, search
from bsvm_scale.optimization.summed import SummedObjective
from bsvm_scale.models.search_hooks import SharedSearch


class Bowl:
    """``0.5 |theta - c|^2 + s`` with a dual vector of ``n`` entries equal to theta[0]."""

    def __init__(self, c, s=0.0, n=3):
        self.c, self.s, self.n = np.asarray(c, float), s, n
        self.best, self.warm = None, None

    def evaluate(self, theta, need_grad=True, **kw):
        r = np.asarray(theta) - self.c
        value = 0.5 * float(r @ r) + self.s
        dual = np.full(self.n, theta[0])
        if self.best is None or value < self.best.value:
            self.best = BestPoint(value, np.array(theta, float), dual.copy())
        return Evaluation(np.array(theta, float), value, r.copy() if need_grad else None,
                          {"n_sv": 1, "smo_iter": 2, "method": "dense"}, dual)

    def final(self, theta):
        return self.evaluate(theta, need_grad=False)

    def restart(self, warm=None):
        self.warm = warm

    def get_state(self):
        out = {"warm": np.zeros(self.n)}
        if self.best is not None:
            out.update(best_value=self.best.value, best_theta=self.best.theta.copy(),
                       best_dual=self.best.dual.copy())
        return out

    def set_state(self, state):
        self.best = None
        if "best_value" in state:
            self.best = BestPoint(float(state["best_value"]), np.asarray(state["best_theta"]),
                                  np.asarray(state["best_dual"]))

    def release(self):
        pass

    def carry(self):
        return Warm(None)


def _bowls():
    return [Bowl([1.0, 0.0], 1.0, 3), Bowl([-1.0, 2.0], 0.5, 2), Bowl([0.0, 1.0], 0.0, 4)]


def test_value_and_gradient_are_the_sums_of_the_parts():
    parts = _bowls()
    obj = SummedObjective(parts, [3, 2, 4])
    theta = np.array([0.3, -0.2])
    ev = obj.evaluate(theta)
    single = [p.evaluate(theta) for p in _bowls()]
    assert ev.value == pytest.approx(sum(e.value for e in single))
    np.testing.assert_allclose(ev.grad, np.sum([e.grad for e in single], axis=0))
    assert ev.info["n_sv"] == 3 and ev.info["smo_iter"] == 6 and ev.info["n_parts"] == 3
    assert ev.dual.shape == (9,) and len(ev.detail) == 3


def test_every_part_keeps_its_evaluation_at_the_summed_optimum_as_its_best():
    parts = _bowls()
    obj = SummedObjective(parts, [3, 2, 4])
    obj.evaluate([0.0, 1.0])  # the sum's optimum
    obj.evaluate([1.0, 0.0])  # part 0's own optimum, a worse sum
    assert obj.best.theta.tolist() == [0.0, 1.0]
    for p in parts:
        assert p.best.theta.tolist() == [0.0, 1.0]
    np.testing.assert_array_equal(obj.carry().dual, np.zeros(9))


def test_state_round_trip_and_bare_dual():
    parts = _bowls()
    obj = SummedObjective(parts, [3, 2, 4])
    obj.evaluate([0.2, 0.7])
    state = obj.get_state()
    assert {"part0.best_value", "part2.warm", "best_value"} <= set(state)
    other = SummedObjective(_bowls(), [3, 2, 4])
    other.set_state(state)
    assert other.best.value == obj.best.value
    np.testing.assert_array_equal(other.best.dual, obj.best.dual)
    with pytest.raises(ValueError, match="part1"):
        other.set_state({"part0.warm": np.zeros(3), "part2.warm": np.zeros(4)})
    other.set_state({"dual": np.arange(9.0)})
    assert other.best is None
    np.testing.assert_array_equal(other.parts[1].warm.dual, [3.0, 4.0])
    with pytest.raises(ValueError, match="must hold 9 values"):
        other.restart(Warm(np.zeros(8)))


def _trig_parts(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((90, 3))
    y = np.where(X[:, 0] + 0.5 * rng.standard_normal(90) > 0, 1.0, -1.0)
    z = np.where(X[:, 1] - X[:, 2] + 0.5 * rng.standard_normal(90) > 0, 1.0, -1.0)
    rows = np.flatnonzero(X[:, 2] > -0.3)
    return X, [(None, y, None), (rows, z[rows], None)]


@pytest.mark.parametrize("ard", [False, True])
def test_the_summed_btsvc_evidence_gradient_matches_central_differences(ard):
    X, parts = _trig_parts()
    sizes = [p[1].size for p in parts]
    make = lambda: SummedObjective(  # noqa: E731
        [TrigObjective(X if r is None else X[r], y, ard, tol=1e-9) for r, y, _ in parts], sizes)
    theta = np.log([3.0, 0.3, 0.2, 0.4, 2.0]) if ard else np.log([3.0, 0.3, 2.0])
    obj = make()
    ev = obj.evaluate(theta)
    h = 1e-5
    for k in range(theta.size):
        e = np.zeros(theta.size)
        e[k] = h
        fd = (make().evaluate(theta + e, False).value - make().evaluate(theta - e, False).value)
        assert ev.grad[k] == pytest.approx(fd / (2 * h), rel=2e-4, abs=1e-6)


class _Hooks:
    """TrigObjectives on the parts, as BayesianSVC's hooks make them."""

    bounds = [(-5.0, 6.0)] * 3
    precondition, n_jobs, init_subsample, random_state, ard_mode = False, None, None, 0, "start"

    def objective(self, data, subsample=False):
        return TrigObjective(data.X, data.y, False, tol=1e-6)

    def options(self, phase=None):
        return {"maxiter": 30}

    @staticmethod
    def dual_state(dual):
        return {"alpha": dual}


def _cut(funs):
    """Where to interrupt a recorded search: after its first evaluation that
    is worse than the best before it (the restored state's last solution is
    then not its best point's), else after the third."""
    worse = [k for k in range(2, len(funs) - 1) if funs[k] > min(funs[:k])]
    assert len(funs) > 4
    return worse[0] + 1 if worse else 3


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_a_shared_search_resumed_from_a_checkpoint_equals_the_uninterrupted_one():
    X, parts = _trig_parts(1)
    data = Data(X, np.zeros(90))
    theta0 = np.log([10.0, 0.3, 100.0])
    seen = []
    full = search(SharedSearch(_Hooks(), parts, n_jobs=2), data, [theta0],
                  callback=lambda k, rec, st: seen.append((rec, st)))
    cut = _cut([r["fun"] for r, _ in seen])
    resumed = search(SharedSearch(_Hooks(), parts, n_jobs=2), data, [theta0],
                     resume=Resume(theta0, seen[cut - 1][1], None, [r for r, _ in seen[:cut]]))
    one_thread = search(SharedSearch(_Hooks(), parts, n_jobs=None), data, [theta0])
    for other in (resumed, one_thread):
        np.testing.assert_array_equal(other.theta, full.theta)
        assert [r["fun"] for r in other.records[0]["trajectory"]] == \
            [r["fun"] for r in full.records[0]["trajectory"]]
        assert other.final.value == full.final.value
        np.testing.assert_array_equal(other.final.dual, full.final.dual)
    assert resumed.records[0]["n_replayed"] == cut


def test_a_restored_state_reproduces_the_final_evaluation_at_the_best_point():
    X, parts = _trig_parts(2)
    sizes = [p[1].size for p in parts]
    make = lambda: SummedObjective(  # noqa: E731
        [TrigObjective(X if r is None else X[r], y, False, tol=1e-3) for r, y, _ in parts], sizes)
    obj = make()
    for t in ([2.0, -1.0, 3.0], [1.0, -2.0, 2.0], [2.5, 0.0, 4.0]):
        obj.evaluate(np.array(t))
    state = obj.get_state()
    best = obj.best.theta
    again = make()
    again.set_state(state)
    a, b = obj.final(best), again.final(best)
    assert a.value == b.value
    np.testing.assert_array_equal(a.dual, b.dual)
    cold = make().final(best)  # from no solution: SMO stops elsewhere within tol
    assert not np.array_equal(cold.dual, a.dual)
