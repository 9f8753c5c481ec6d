"""Retraining warm-started from an earlier fit (``warm_start_from``)."""

import numpy as np
import pytest

from bsvm_scale import BayesianSVC, BayesianSVR
from bsvm_scale.datasets import synthetic
from bsvm_scale.storage import load_model, save_model


def _evals(model):
    return sum(len(s["trajectory"]) + len(s.get("subsample", {}).get("trajectory", []))
               for s in model.starts_)


@pytest.fixture(scope="module")
def sinc():
    d = synthetic.sinc_silf(1100, seed=0)
    return d.X, d.y


def test_bsvr_retraining_starts_from_the_earlier_optimum(sinc, tmp_path):
    X, y = sinc
    a = BayesianSVR().fit(X[:1000], y[:1000])
    save_model(a, tmp_path / "a.h5")
    Xb, yb = X[50:1050], y[50:1050]  # 5% of the cases replaced
    cold = BayesianSVR().fit(Xb, yb)
    for source in (a, str(tmp_path / "a.h5")):
        warm = BayesianSVR(warm_start_from=source).fit(Xb, yb)
        assert len(warm.starts_) == 1
        np.testing.assert_array_equal(warm.starts_[0]["theta0"], a.theta_)
        assert _evals(warm) < _evals(cold)
        assert warm.log_evidence_ >= cold.log_evidence_ - 0.5
    # the stored model keeps the path, not the earlier model
    save_model(warm, tmp_path / "w.h5")
    assert load_model(tmp_path / "w.h5").warm_start_from == str(tmp_path / "a.h5")


def test_btsvc_one_versus_rest_retraining(tmp_path):
    d = synthetic.waveform(700, seed=1)
    y3 = d.extra["label3"]
    a = BayesianSVC(n_starts=1, multi_class="ovr").fit(d.X[:600], y3[:600])
    warm = BayesianSVC(warm_start_from=a, multi_class="ovr").fit(d.X[50:650], y3[50:650])
    for est, prev in zip(warm.estimators_, a.estimators_):
        assert est.warm_start_from is None and len(est.starts_) == 1
        np.testing.assert_array_equal(est.starts_[0]["theta0"], prev.theta_)


def test_bad_earlier_models_are_named(sinc):
    X, y = sinc
    a = BayesianSVR(optimize=False, C=1.0, epsilon=0.1, kappa=1.0, kappa_b=1.0).fit(X[:200],
                                                                                   y[:200])
    with pytest.raises(ValueError, match="fitted BayesianSVC"):
        BayesianSVC(warm_start_from=a).fit(X[:200], (y[:200] > 0).astype(int))
    with pytest.raises(ValueError, match="takes 1 inputs; the data has 2"):
        BayesianSVR(warm_start_from=a).fit(np.column_stack([X[:200], X[:200]]), y[:200])
    with pytest.raises(ValueError, match="ard=False, this fit ard=True"):
        BayesianSVR(ard=True, warm_start_from=a).fit(X[:200], y[:200])
    with pytest.raises(ValueError, match="not fitted"):
        BayesianSVR(warm_start_from=BayesianSVR()).fit(X[:200], y[:200])
    g = synthetic.waveform(300, seed=2)
    three = BayesianSVC(n_starts=1, optimizer_options={"maxiter": 2}).fit(g.X,
                                                                        g.extra["label3"])
    with pytest.raises(ValueError, match="classes"):
        BayesianSVC(warm_start_from=three).fit(g.X, g.y)


#: a nightly pipeline: one BSVR model on the data set "sinc" ({data}: its source)
_NIGHT = """
[run]
name = "{name}"
output = "{out}"

[[datasets]]
name = "sinc"
{data}

[[models]]
kind = "bsvr"
name = "BSVR"
search = {{ n_starts = {starts} }}
{warm}
"""


def test_pipeline_retrains_from_an_earlier_run(tmp_path):
    from bsvm_scale.pipeline.spec.config import parse_pipeline
    from bsvm_scale.pipeline.run.executor import plan_tasks, prepare_data, run_pipeline

    data = 'generator = "sinc_silf"\nn = 300\nseed = {seed}\npartitions = 2\nn_train = 200'
    text = _NIGHT.replace("{data}", data).replace("{starts}", "2")
    first = parse_pipeline(text.format(name="night1", out=tmp_path, seed=0, warm=""),
                           tmp_path / "p.toml")
    assert run_pipeline(first, workers=1, progress=False)["meta"]["n_failed"] == 0
    second = parse_pipeline(text.format(name="night2", out=tmp_path, seed=1,
                                        warm='warm_start = "night1"'), tmp_path / "p.toml")
    assert second.models[0].warm_start == str(tmp_path / "night1")
    specs = plan_tasks(second, prepare_data(second, tmp_path / "night2"), tmp_path / "night2")
    assert len(specs) == 2 and all(s["n_starts"] == 1 for s in specs)
    assert specs[1]["params"]["warm_start_from"].endswith("sinc__BSVR__p001.h5")
    record = run_pipeline(second, workers=1, progress=False)
    assert record["meta"]["n_failed"] == 0 and record["meta"]["n_done"] == 2
    prev = load_model(tmp_path / "night1" / "models" / "sinc__BSVR__p000.h5")
    new = load_model(tmp_path / "night2" / "models" / "sinc__BSVR__p000.h5")
    np.testing.assert_array_equal(new.starts_[0]["theta0"], prev.theta_)


def test_bsvr_retraining_begins_with_the_earlier_smo_slope(sinc, tmp_path, monkeypatch):
    """The first MAP solve of a retraining starts its outer secant from the
    earlier fit's slope psi'(s) (kept in the model file); a model file without
    one (written before it was stored) starts from no slope, as before."""
    from bsvm_scale.inference.objective_silf import SilfObjective

    X, y = sinc
    a = BayesianSVR(n_starts=1).fit(X[:1000], y[:1000])
    assert a._smo_slope > 0.0
    save_model(a, tmp_path / "a.h5")
    assert load_model(tmp_path / "a.h5")._smo_slope == a._smo_slope
    first = []
    solve = SilfObjective.solve

    def spy(self, C, eps, cov):
        if not first:
            first.append(self.slope)
        return solve(self, C, eps, cov)

    monkeypatch.setattr(SilfObjective, "solve", spy)
    BayesianSVR(n_starts=1, warm_start_from=str(tmp_path / "a.h5")).fit(X[50:1050], y[50:1050])
    assert first == [a._smo_slope]
    old = load_model(tmp_path / "a.h5")
    del old._smo_slope
    first.clear()
    BayesianSVR(n_starts=1, warm_start_from=old).fit(X[50:1050], y[50:1050])
    assert first == [0.0]


# ------------------------------------------------------------ case identifiers
def test_case_ids_are_checked():
    from bsvm_scale.models.warm_start import check_case_ids

    assert check_case_ids(None, 3) is None
    assert check_case_ids([3, 1, 2], 3).dtype == np.int64
    assert check_case_ids(np.array([3, 1], dtype=object), 2).dtype == np.int64  # e.g. pandas
    assert check_case_ids(np.array(["a", "b"], dtype=object), 2).tolist() == ["a", "b"]
    with pytest.raises(ValueError, match=r"one identifier per training case \(3\)"):
        check_case_ids([1, 2], 3)
    with pytest.raises(ValueError, match=r"must be unique; \[2\] occur"):
        check_case_ids([1, 2, 2], 3)
    with pytest.raises(ValueError, match="integers or strings; got dtype float64"):
        check_case_ids([1.0, 2.0], 2)
    with pytest.raises(ValueError, match="case_ids"):
        BayesianSVR(optimize=False).fit(np.arange(4.0)[:, None], [0.0, 1, 0, 1],
                                        case_ids=[1, 1, 2, 3])


class _Earlier:
    def __init__(self, ids, coef):
        self.support_case_ids_, self.dual_coef_ = np.asarray(ids), np.asarray(coef, float)


def test_carried_dual_matches_identifiers():
    """Against a dictionary lookup: shuffled, partly new, integer and string ids."""
    from bsvm_scale.models.warm_start import carried_dual, check_case_ids

    rng = np.random.default_rng(0)
    before = rng.permutation(1000)[:300]
    coef = rng.normal(size=300)
    now = check_case_ids(rng.permutation(1200)[:500], 500)
    ref = {int(i): c for i, c in zip(before, coef)}
    expect = np.array([ref.get(int(i), 0.0) for i in now])
    assert np.count_nonzero(expect) > 50
    np.testing.assert_array_equal(carried_dual(_Earlier(before, coef), now), expect)
    np.testing.assert_array_equal(carried_dual(_Earlier(before, coef), now, magnitude=True),
                                  np.abs(expect))
    text = check_case_ids([f"c{i}" for i in now], 500)
    np.testing.assert_array_equal(carried_dual(_Earlier([f"c{i}" for i in before], coef), text),
                                  expect)
    with pytest.warns(UserWarning, match="case_ids are strings, the earlier model's integers"):
        assert carried_dual(_Earlier(before, coef), text) is None
    assert carried_dual(_Earlier(before, coef), None) is None
    assert carried_dual(_Earlier([5000], [1.0]), now) is None  # nothing shared
    assert carried_dual(None, now) is None


def _first_dual(monkeypatch, cls, attr):
    """Record the dual vector the first MAP solve of each ``cls`` objective starts from.

    The objectives themselves are kept (not their ``id``): a released objective's
    id can be reused by the next one, which would then go unrecorded."""
    seen, objectives = [], []
    solve = cls.solve

    def spy(self, *a, **kw):
        if not any(o is self for o in objectives):
            objectives.append(self)
            seen.append(np.array(getattr(self, attr), dtype=float))
        return solve(self, *a, **kw)

    monkeypatch.setattr(cls, "solve", spy)
    return seen


def test_bsvr_retraining_starts_smo_from_the_earlier_dual_of_shared_cases(sinc, tmp_path,
                                                                         monkeypatch):
    from bsvm_scale.inference.objective_silf import SilfObjective

    X, y = sinc
    ids = np.array([f"row{i}" for i in range(X.shape[0])])
    a = BayesianSVR(n_starts=1).fit(X[:1000], y[:1000], case_ids=ids[:1000])
    np.testing.assert_array_equal(a.support_case_ids_, ids[a.support_])
    save_model(a, tmp_path / "a.h5")
    np.testing.assert_array_equal(load_model(tmp_path / "a.h5").support_case_ids_,
                                  a.support_case_ids_)
    nu_before = dict(zip(a.support_case_ids_, a.dual_coef_))
    seen = _first_dual(monkeypatch, SilfObjective, "nu")
    order = np.random.default_rng(1).permutation(np.arange(50, 1050))  # shuffled, 5% new
    w = BayesianSVR(n_starts=1, warm_start_from=str(tmp_path / "a.h5")).fit(
        X[order], y[order], case_ids=ids[order])
    np.testing.assert_array_equal(seen[0], [nu_before.get(i, 0.0) for i in ids[order]])
    assert w.starts_[0]["trajectory"][0]["info"]["smo_start"] == "warm"
    seen.clear()
    BayesianSVR(n_starts=1, warm_start_from=a).fit(X[order], y[order])  # no ids: from zero
    assert not np.any(seen[0])


def test_btsvc_retraining_carries_alpha_per_class(tmp_path, monkeypatch):
    from bsvm_scale.inference.objective_trig import TrigObjective

    d = synthetic.waveform(700, seed=1)
    y3, ids = d.extra["label3"], np.arange(10_000, 10_700)
    a = BayesianSVC(n_starts=1, multi_class="ovr").fit(d.X[:600], y3[:600], case_ids=ids[:600])
    save_model(a, tmp_path / "a.h5")
    b = load_model(tmp_path / "a.h5")
    for e, eb in zip(a.estimators_, b.estimators_):
        np.testing.assert_array_equal(eb.support_case_ids_, ids[e.support_])
    seen = _first_dual(monkeypatch, TrigObjective, "alpha")
    BayesianSVC(warm_start_from=b, n_jobs=1, multi_class="ovr").fit(d.X[50:650], y3[50:650],  # classes in order
                                                 case_ids=ids[50:650])
    assert len(seen) == 3  # one objective per one-versus-rest model, each carried
    for e, alpha0 in zip(a.estimators_, seen):
        before = dict(zip(e.support_case_ids_, np.abs(e.dual_coef_)))
        np.testing.assert_array_equal(alpha0, [before.get(i, 0.0) for i in ids[50:650]])


@pytest.mark.parametrize("transport", ["path", "scattered"])
def test_pipeline_passes_case_ids_so_retraining_carries_the_dual(tmp_path, monkeypatch,
                                                                  transport):
    """A data set file with case identifiers (``datasets import --id``): the
    first night's model keeps its support vectors' ids, the second night's
    retraining starts its first MAP solve from the carried dual ("warm", not
    "zero" as without ids: 300 cases are below the low-rank start's range)."""
    from bsvm_scale.datasets import Dataset, write_dataset
    from bsvm_scale.pipeline.spec.config import parse_pipeline
    from bsvm_scale.pipeline.run.executor import run_pipeline

    d = synthetic.sinc_silf(330, seed=4)
    ids = np.array([f"case{i:04d}" for i in range(330)])
    for night, rows in (("1", slice(0, 300)), ("2", slice(15, 315))):
        write_dataset(Dataset(X=d.X[rows], y=d.y[rows], name="sinc", task="regression",
                              extra={"case_id": ids[rows]}), tmp_path / f"d{night}.h5")
    if transport == "scattered":  # workers that cannot read the files get (X, y, ids)
        monkeypatch.setenv("BSVM_PIPELINE_FORCE_SCATTER", "1")
    text = _NIGHT.replace("{data}", 'path = "d{night}.h5"\npartitions = 1\nn_train = 270')
    for night, warm in (("1", ""), ("2", 'warm_start = "night1"')):
        p = parse_pipeline(text.replace("{starts}", "1").format(
            name=f"night{night}", night=night, out=tmp_path, warm=warm), tmp_path / "p.toml")
        assert run_pipeline(p, workers=1, progress=False)["meta"]["n_failed"] == 0
    from bsvm_scale.pipeline.outputs.runfile import read_run_file

    train = np.asarray(read_run_file(tmp_path / "night1" / "run.h5")["datasets"]["sinc"]
                       ["partitions"][0]["train"])
    first = load_model(tmp_path / "night1" / "models" / "sinc__BSVR__p000.h5")
    np.testing.assert_array_equal(first.support_case_ids_, ids[:300][train][first.support_])
    second = load_model(tmp_path / "night2" / "models" / "sinc__BSVR__p000.h5")
    assert second.starts_[0]["trajectory"][0]["info"]["smo_start"] == "warm"
    assert second.support_case_ids_.dtype.kind == "U"
    rec = read_run_file(tmp_path / "night2" / "run.h5")
    assert rec["meta"]["data_transport"] == transport


# ------------------------------------------------- the earlier search's Hessian
def _spy_runs(monkeypatch):
    """``(hessian, stall_evals)`` of each ``run_start`` of a search (a
    retraining has no subsample phase)."""
    from bsvm_scale.optimization import search

    seen, real = [], search.run_start

    def spy(objective, theta0, bounds=None, options=None, *args, hessian=None, **kw):
        seen.append((None if hessian is None else np.array(hessian),
                     (options or {}).get("stall_evals")))
        return real(objective, theta0, bounds, options, *args, hessian=hessian, **kw)

    monkeypatch.setattr(search, "run_start", spy)
    return seen


def _best_record_hessian(starts):
    """The Hessian of the searched record with the lowest -ln evidence (worked
    out without the model's theta_)."""
    searched = [r for r in starts if r.get("trajectory")]
    return min(searched, key=lambda r: r["neg_log_evidence"])["hessian"]


def test_retrain_options_follow_the_hessian():
    from bsvm_scale.optimization.starts import retrain_options

    # a retraining begins at a known optimum: no slope trial after its search
    assert retrain_options(None) == {"stall_evals": 2, "slope_rounds": 0}
    assert retrain_options(np.eye(3)) == {"stall_evals": 1, "slope_rounds": 0}


def test_bsvr_retraining_begins_with_the_earlier_model_hessian(sinc, tmp_path, monkeypatch):
    """The chosen start's final model Hessian is kept in ``starts_`` (and the
    model file) and begins the retraining's search, which then stops at the
    first evaluation without improvement; a model without one (written
    before it was kept) retrains from the diagonal guess and stops after 2."""
    from bsvm_scale.models.warm_start import previous_hessians

    X, y = sinc
    a = BayesianSVR(n_starts=2).fit(X[:1000], y[:1000])
    H = previous_hessians(a)
    np.testing.assert_array_equal(H, _best_record_hessian(a.starts_))
    assert np.all(np.linalg.eigvalsh(H) > 0)
    save_model(a, tmp_path / "a.h5")
    b = load_model(tmp_path / "a.h5")
    np.testing.assert_array_equal(previous_hessians(b), H)
    seen = _spy_runs(monkeypatch)
    BayesianSVR(n_starts=1, warm_start_from=b).fit(X[50:1050], y[50:1050])
    assert len(seen) == 1 and seen[0][1] == 1
    np.testing.assert_array_equal(seen[0][0], H)
    for r in b.starts_:
        r.pop("hessian", None)
    assert previous_hessians(b) is None
    seen.clear()
    BayesianSVR(n_starts=1, warm_start_from=b).fit(X[50:1050], y[50:1050])
    assert seen == [(None, 2)]


def test_an_unusable_stored_hessian_is_named_and_not_used(sinc):
    from bsvm_scale.models.warm_start import previous_hessians

    X, y = sinc
    a = BayesianSVR(n_starts=1).fit(X[:300], y[:300])
    for r in a.starts_:
        if "hessian" in r:
            r["hessian"] = -r["hessian"]
    with pytest.warns(RuntimeWarning, match="stored search Hessian is not usable.*positive "
                                            "definite.*diagonal first guess"):
        assert previous_hessians(a) is None


def test_btsvc_retraining_begins_with_the_earlier_hessian(monkeypatch):
    """Binary and one-versus-rest: each binary model's own Hessian."""
    from bsvm_scale.models.warm_start import previous_hessians

    d = synthetic.waveform(700, seed=1)
    seen = _spy_runs(monkeypatch)
    a2 = BayesianSVC(n_starts=2).fit(d.X[:600], d.y[:600])
    seen.clear()
    H2 = previous_hessians(a2, a2.classes_)
    np.testing.assert_array_equal(H2, a2.starts_[a2.best_start_]["hessian"])
    np.testing.assert_array_equal(H2, _best_record_hessian(a2.starts_))
    BayesianSVC(warm_start_from=a2).fit(d.X[50:650], d.y[50:650])
    assert len(seen) == 1 and seen[0][1] == 1
    np.testing.assert_array_equal(seen[0][0], H2)
    y3 = d.extra["label3"]
    a3 = BayesianSVC(n_starts=1, multi_class="ovr").fit(d.X[:600], y3[:600])
    Hs = previous_hessians(a3, a3.classes_)
    assert len(Hs) == 3 and all(h.shape == (3, 3) for h in Hs)
    seen.clear()
    BayesianSVC(warm_start_from=a3, n_jobs=1, multi_class="ovr").fit(  # classes in order
        d.X[50:650], y3[50:650])
    assert len(seen) == 3
    for (got, stall), h in zip(seen, Hs):
        np.testing.assert_array_equal(got, h)
        assert stall == 1
