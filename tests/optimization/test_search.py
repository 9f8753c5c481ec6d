"""The one evidence search (:mod:`bsvm_scale.optimization.search`) on a model
that is neither BSVR nor BTSVC: a quadratic "evidence" whose minimum depends
on the data, with an isotropic and an ARD form, supplying only the hooks of
:class:`~bsvm_scale.optimization.search.SearchModel`.

The model: ``theta = [a, k_1 .. k_d, b]``; on data ``(X, y)`` the value is
``sum((theta - c)^2 * h)`` with the optimum ``c`` = ``(mean y, 0.3 l, -1)``
(``l = 1..d``) and curvatures ``h``. Its "dual solution" is the vector ``y +
a`` (what a warm start carries), so warm starts and states are visible.
"""

import numpy as np
import pytest

from bsvm_scale.optimization.objective import BestPoint, Evaluation, Warm
from bsvm_scale.optimization.search import Data, Resume, Retrain, search
from bsvm_scale.optimization.starts import ard_hessian, search_options


class QuadObjective:
    """A stateful objective of the contract, on one data set."""

    def __init__(self, data, ard, log):
        d = data.X.shape[1] if ard else 1
        self.c = np.concatenate(([data.y.mean()], 0.3 * np.arange(1, d + 1), [-1.0]))
        self.h = np.linspace(1.0, 2.0, d + 2)
        self.y, self.dual, self.best, self.log = data.y, np.zeros(data.y.size), None, log
        self.starts_from = []  # the dual each evaluation began from

    def evaluate(self, theta, need_grad=True):
        theta = np.asarray(theta, dtype=float)
        self.starts_from.append(self.dual.copy())
        self.dual = self.y + theta[0]
        r = theta - self.c
        value = float(np.sum(self.h * r * r))
        ev = Evaluation(theta.copy(), value, 2 * self.h * r if need_grad else None,
                        {"n_sv": self.y.size, "smo_iter": 1}, self.dual.copy())
        if self.best is None or value < self.best.value:
            self.best = BestPoint(value, theta.copy(), self.dual.copy())
        self.log.append((self.y.size, theta.size))
        return ev

    def __call__(self, theta):
        return self.evaluate(theta).as_tuple()

    def final(self, theta):
        if self.best is not None and np.array_equal(self.best.theta, theta):
            self.dual = self.best.dual.copy()
        return self.evaluate(theta, need_grad=False)

    def restart(self, warm=None):
        if warm is not None and warm.dual is not None:
            self.dual = np.asarray(warm.dual, dtype=float).copy()

    def get_state(self):
        state = {"dual": self.dual.copy()}
        if self.best is not None:
            state.update(best_value=self.best.value, best_theta=self.best.theta.copy(),
                         best_dual=self.best.dual.copy())
        return state

    def set_state(self, state):
        self.dual = np.asarray(state["dual"], dtype=float).copy()
        self.best = (BestPoint(state["best_value"], state["best_theta"].copy(),
                               state["best_dual"].copy()) if "best_value" in state else None)

    def release(self):
        pass

    def carry(self):
        return Warm(None if self.best is None else self.best.dual)


class QuadModel:
    """The hooks: objectives, box, options, the isotropic model."""

    precondition = False

    def __init__(self, d, ard=True, n_jobs=None, init_subsample=None, ard_init="continuation"):
        self.d, self.ard, self.n_jobs = d, ard, n_jobs
        self.init_subsample, self.random_state = init_subsample, 0
        self.bounds = [(-5.0, 5.0)] * ((d if ard else 1) + 2)
        self.ard_mode = ard_init if ard and d > 1 else "start"
        self.log = []

    def objective(self, data, subsample=False):
        return QuadObjective(data, self.ard, self.log)

    def options(self, phase=None):
        return search_options(phase, {"maxiter": 50})

    def isotropic(self, theta0):
        iso = QuadModel(self.d, False, self.n_jobs, self.init_subsample)
        iso.log = self.log
        return iso

    @staticmethod
    def isotropic_theta(theta):
        return np.array([theta[0], np.mean(theta[1:-1]), theta[-1]])

    def held_bounds(self, theta0):
        return list(self.bounds)

    def ard_theta(self, theta):
        return np.concatenate((theta[:1], np.full(self.d, theta[1]), theta[-1:]))

    def ard_hessian(self, B):
        return ard_hessian(B, 1, self.d)

    @staticmethod
    def continuation_warm(final, data):
        return Warm(final.dual)

    @staticmethod
    def dual_state(dual):
        return {"dual": dual}


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    return Data(rng.normal(size=(n, d)), rng.normal(1.0, 1.0, n))


def _optimum(data):
    d = data.X.shape[1]
    return np.concatenate(([data.y.mean()], 0.3 * np.arange(1, d + 1), [-1.0]))


def test_starts_on_threads_find_the_optimum_and_equal_one_thread():
    data = _data()
    thetas = [np.zeros(5), np.full(5, 1.0), np.full(5, -2.0)]
    outs = [search(QuadModel(3, ard_init="start", n_jobs=k), data, thetas) for k in (1, 2)]
    for out in outs:
        np.testing.assert_allclose(out.theta, _optimum(data), atol=1e-4)
        assert len(out.records) == 3 and out.final.value == pytest.approx(0.0, abs=1e-7)
    assert [r["neg_log_evidence"] for r in outs[0].records] == \
        [r["neg_log_evidence"] for r in outs[1].records]


def test_the_ard_continuation_runs_from_the_isotropic_optimum():
    data = _data()
    model = QuadModel(3)
    out = search(model, data, [np.zeros(5), np.full(5, 2.0)])
    np.testing.assert_allclose(out.theta, _optimum(data), atol=1e-3)  # the stall rule ends it
    (rec,) = out.records  # continuation: the starts do not run themselves
    iso = rec["isotropic"]
    assert iso["theta"].size == 3
    np.testing.assert_allclose(rec["theta0"], QuadModel(3).ard_theta(iso["theta"]))
    assert {size for _, size in model.log} == {3, 5}  # isotropic, then ARD evaluations


def test_coarse_to_fine_refines_the_best_subsample_start_warm():
    data = _data(n=100)
    model = QuadModel(3, ard_init="start", init_subsample=30)
    out = search(model, data, [np.zeros(5), np.full(5, 3.0)])
    assert out.records[0]["subsample"]["n_samples"] == 30
    assert out.records[1]["message"].startswith("not refined")
    assert {n for n, _ in model.log} == {30, 100}
    first = out.objective.starts_from[0]  # the subsample solution on its cases, 0 elsewhere
    assert np.count_nonzero(first) == 30


def test_a_resumed_start_equals_the_uninterrupted_one():
    data = _data()
    model = QuadModel(3, ard_init="start")
    seen = []
    whole = search(model, data, [np.full(5, 2.0)],
                   callback=lambda k, rec, state: seen.append((k, rec, state)))
    assert {k for k, _, _ in seen} == {0}
    _, _, state = seen[3]
    resume = Resume(np.full(5, 2.0), state, None, [rec for _, rec, _ in seen[:4]])
    again = search(QuadModel(3, ard_init="start"), data, [resume.theta], resume=resume)
    np.testing.assert_array_equal(again.theta, whole.theta)
    assert again.records[0]["n_replayed"] == 4
    assert [r["fun"] for r in again.records[0]["trajectory"]] == \
        [r["fun"] for r in whole.records[0]["trajectory"]]


def test_a_retraining_is_one_run_from_the_earlier_optimum_warm():
    data = _data()
    earlier = np.append(_optimum(data)[:-1], -0.5)
    warm = Warm(np.full(data.y.size, 7.0))
    out = search(QuadModel(3), data, [earlier], retrain=Retrain(earlier, warm, None))
    assert len(out.records) == 1 and "isotropic" not in out.records[0]
    np.testing.assert_array_equal(out.records[0]["theta0"], earlier)
    np.testing.assert_array_equal(out.objective.starts_from[0], warm.dual)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_the_lifted_hessian_restricts_to_the_isotropic_one():
    """P^T H P = B for the map P that copies ln kappa into every ln kappa_l;
    the directions orthogonal to P get B_kk / d; H is positive definite."""
    rng = np.random.default_rng(2)
    A = rng.normal(size=(4, 4))
    B = A @ A.T + 0.1 * np.eye(4)  # [ln C, ln eps, ln kappa, ln kappa_b]
    H = ard_hessian(B, 2, 5)
    P = np.zeros((8, 4))
    P[:2, :2] = np.eye(2)
    P[2:7, 2] = 1.0
    P[7, 3] = 1.0
    np.testing.assert_allclose(P.T @ H @ P, B, rtol=1e-12, atol=1e-12)
    u = np.zeros(8)
    u[2:7] = [1.0, -1.0, 0.0, 2.0, -2.0]  # tells the inputs apart: orthogonal to P
    assert u @ H @ u == pytest.approx(B[2, 2] / 5 * (u @ u))
    assert np.linalg.eigvalsh(H)[0] > 0 and np.array_equal(H, H.T)
    assert ard_hessian(None, 2, 5) is None


def test_the_ard_continuation_begins_with_the_lifted_isotropic_hessian(monkeypatch):
    import bsvm_scale.optimization.search as S

    plans, orig = [], S.run_plan

    def spy(obj, runs, *args, **kw):
        plans.append(list(runs))
        return orig(obj, runs, *args, **kw)

    monkeypatch.setattr(S, "run_plan", spy)
    out = search(QuadModel(3), _data(), [np.zeros(5)])
    (cont,) = plans[-1]
    iso_hessian = out.records[0]["isotropic"]["hessian"]
    assert iso_hessian is not None and cont.warm is not None
    np.testing.assert_array_equal(cont.hessian, ard_hessian(iso_hessian, 1, 3))


@pytest.mark.parametrize("est", ["bsvr", "btsvc"])
def test_the_ard_continuation_begins_at_the_isotropic_solution(monkeypatch, est):
    """With the default ARD route the continuation is a start's first run; its
    objective is warm-started from the isotropic optimum's dual before the
    first evaluation (not only between runs)."""
    import bsvm_scale.optimization.search as S
    from bsvm_scale import BayesianSVC, BayesianSVR

    seen, orig = [], S._prepare

    def spy(obj, model, warm, resume, first=None):
        seen.append(first)
        return orig(obj, model, warm, resume, first)

    monkeypatch.setattr(S, "_prepare", spy)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = X[:, 0] + 0.1 * rng.normal(size=80)
    Est, target = (BayesianSVR, y) if est == "bsvr" else (BayesianSVC, y > 0)
    Est(ard=True, n_starts=1, n_jobs=1, optimizer_options={"maxiter": 3}).fit(X, target)
    outer = seen[-1]  # the ARD search's start (the isotropic stage's come first)
    assert outer is not None and outer.dual is not None and outer.dual.shape[0] in (80, 160)
    assert np.any(outer.dual != 0)


def test_an_inferred_kappa0_is_held_where_the_search_takes_large_steps():
    """BSVR with ``kappa0="evidence"``: the isotropic first stage and the
    subsample phase hold ``kappa0`` at the start's value (a box of zero width
    there); the ARD run begins at the isotropic optimum with that ``kappa0``,
    where the ARD evidence is the isotropic one, and frees it."""
    from bsvm_scale import BayesianSVR
    from bsvm_scale.models.search_hooks import SilfSearch

    rng = np.random.default_rng(1)
    X = rng.normal(size=(60, 3))
    y = X[:, 0] + 0.2 * rng.normal(size=60)
    est = BayesianSVR(ard=True, kappa0="evidence", tol=1e-9)
    est._max_iter = 10**6  # what fit sets
    bounds = [(-10.0, 10.0)] * 7
    ard = SilfSearch(est, bounds, None, 0.2, None, ard=True)
    theta0 = np.array([0.3, -1.0, 0.7, -0.5, -0.4, -0.6, 1.0])
    assert ard.held_bounds(theta0)[2] == (0.7, 0.7) and ard.held_bounds(theta0)[3] == (-10, 10)
    assert ard.held_bounds(np.full(7, 20.0))[2] == (10.0, 10.0)  # a start outside: the edge
    iso = ard.isotropic(theta0)
    assert iso.bounds[2] == (0.7, 0.7) and len(iso.bounds) == 5 and not iso.ard
    iso_theta = ard.isotropic_theta(theta0)
    data = Data(X, y, None)
    v_iso, g_iso, _ = iso.objective(data)(iso_theta)
    v_ard, g_ard, _ = ard.objective(data)(ard.ard_theta(iso_theta))
    assert v_ard == pytest.approx(v_iso, rel=1e-8)
    fixed = SilfSearch(est, [(-10.0, 10.0)] * 6, 1.3, 0.2, None, ard=True)
    assert fixed.held_bounds(theta0[[0, 1, 3, 4, 5, 6]]) == fixed.bounds
    # a fit: the isotropic record ends where it began in ln kappa0, the ARD run moves it
    m = BayesianSVR(ard=True, kappa0="evidence", n_starts=1).fit(X, y)
    rec = m.starts_[0]
    assert rec["isotropic"]["theta"][2] == rec["isotropic"]["theta0"][2]
    assert rec["theta"][2] != rec["theta0"][2]


def test_the_subsample_phase_holds_an_inferred_kappa0():
    """Coarse-to-fine with ``kappa0="evidence"``: every subsample run keeps
    ``ln kappa0`` at its start's value; the full-data run frees it."""
    from bsvm_scale import BayesianSVR

    rng = np.random.default_rng(3)
    X = rng.uniform(-3, 3, (500, 1))
    y = np.sinc(X[:, 0]) + 0.1 * rng.normal(size=500)
    m = BayesianSVR(kappa0="evidence", init_subsample=100).fit(X, y)
    subs = [m.starts_[0]["subsample"]] + [r["subsample"] for r in m.starts_[1:]]
    for sub in subs:
        assert all(t["theta"][2] == sub["theta0"][2] for t in sub["trajectory"])
    assert m.starts_[0]["trajectory"][0]["theta"][2] == subs[0]["theta0"][2]


def test_the_bsvr_continuation_begins_with_newton():
    """The continuation's warm start asks for Newton's method first (it moves
    at most FINE_MAX_STEP a step from a solved point): the objective's next
    solve skips the SMO's steps before Newton."""
    from bsvm_scale.inference.objective_silf import SilfObjective
    from bsvm_scale.optimization.objective import Warm

    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 2))
    obj = SilfObjective(X, X[:, 0], 1.0, 0.2, False, 1e-3, 16.0, 10**6)
    obj.restart(Warm(np.zeros(50)))
    assert obj.n_newton == 0
    obj.restart(Warm(np.zeros(50), newton_first=True))
    assert obj.n_newton == 1
