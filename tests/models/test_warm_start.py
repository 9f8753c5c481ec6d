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
    a = BayesianSVC(n_starts=1).fit(d.X[:600], y3[:600])
    warm = BayesianSVC(warm_start_from=a).fit(d.X[50:650], y3[50:650])
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


def test_pipeline_retrains_from_an_earlier_run(tmp_path):
    from bsvm_scale.pipeline.config import parse_pipeline
    from bsvm_scale.pipeline.executor import plan_tasks, prepare_data, run_pipeline

    text = """
[run]
name = "{name}"
output = "{out}"

[[datasets]]
name = "sinc"
generator = "sinc_silf"
n = 300
seed = {seed}
partitions = 2
n_train = 200

[[models]]
kind = "bsvr"
name = "BSVR"
search = {{ n_starts = 2 }}
{warm}
"""
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
    from bsvm_scale.inference.objective_silf import _Problem

    X, y = sinc
    a = BayesianSVR(n_starts=1).fit(X[:1000], y[:1000])
    assert a._smo_slope > 0.0
    save_model(a, tmp_path / "a.h5")
    assert load_model(tmp_path / "a.h5")._smo_slope == a._smo_slope
    first = []
    solve = _Problem.solve

    def spy(self, C, eps, cov):
        if not first:
            first.append(self.slope)
        return solve(self, C, eps, cov)

    monkeypatch.setattr(_Problem, "solve", spy)
    BayesianSVR(n_starts=1, warm_start_from=str(tmp_path / "a.h5")).fit(X[50:1050], y[50:1050])
    assert first == [a._smo_slope]
    old = load_model(tmp_path / "a.h5")
    del old._smo_slope
    first.clear()
    BayesianSVR(n_starts=1, warm_start_from=old).fit(X[50:1050], y[50:1050])
    assert first == [0.0]
