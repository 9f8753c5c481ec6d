"""Reproduction pipelines: protocol keys of the pipeline files (training-size
lists, common test sets, chronological splits, sweeps, LOO CV), the scikit-learn
reference kinds, the shipped repro_*.toml files and the results generator."""

from pathlib import Path

import h5py
import numpy as np
import pytest

from bsvm_scale.datasets import generate, read_dataset
from bsvm_scale.pipeline.config import PipelineError, load_pipeline, parse_pipeline
from bsvm_scale.pipeline.executor import prepare_data, run_pipeline
from bsvm_scale.pipeline.external import SkGPR, SkSVC, SkSVR, model_bytes, without_platt
from bsvm_scale.pipeline.results import (DATA_USED, bench_exponents, bench_ratios, data_used,
                                        fit_exponent, protocol_of, write_results)
from bsvm_scale.pipeline.variants import cv_folds

REPO = Path(__file__).resolve().parents[2]

BASE = """
[run]
name = "t"
output = "{out}"

[[datasets]]
name = "sinc"
generator = "sinc_gauss"
{dataset}

[[models]]
kind = "bsvr"
name = "B"
{model}
"""


def _parse(tmp_path, dataset="n = 100\nn_train = 50\npartitions = 1", model=""):
    text = BASE.format(out=str(tmp_path), dataset=dataset, model=model)
    return parse_pipeline(text, tmp_path / "p.toml")


def _problems(tmp_path, **kw):
    with pytest.raises(PipelineError) as info:
        _parse(tmp_path, **kw)
    return "\n".join(info.value.problems)


# ------------------------------------------------------------ shipped files
@pytest.mark.parametrize("path", sorted((REPO / "pipelines").glob("repro_*.toml")),
                         ids=lambda p: p.stem)
def test_shipped_repro_pipelines_validate(path):
    p = load_pipeline(path)
    assert p.name == path.stem
    assert protocol_of(p.name) is not None
    assert p.models and p.datasets
    for m in p.models:
        assert m.datasets and set(m.datasets) <= {d.label for d in p.datasets}


def test_repro_pipelines_follow_the_protocol_sizes():
    r2 = load_pipeline(REPO / "pipelines" / "repro_r2.toml")
    assert sorted(d.n_train for d in r2.datasets) == [10, 20, 50, 100, 200, 500, 1000]
    assert {d.partitions for d in r2.datasets} == {20}
    assert {d.test["n"] for d in r2.datasets} == {3000}
    r1 = load_pipeline(REPO / "pipelines" / "repro_r1.toml")
    betas = {m.search.get("beta") for m in r1.models}
    assert {0.3, 0.1, 0.001, 1.0} <= betas


# ------------------------------------------------------- training-size lists
def test_size_list_expands_into_data_sets_and_model_groups(tmp_path):
    p = _parse(tmp_path, dataset="n_train = [10, 30]\npartitions = 2\ntest = { n = 40 }",
               model='datasets = ["sinc"]')
    assert [d.label for d in p.datasets] == ["sinc-n10", "sinc-n30"]
    assert [d.n for d in p.datasets] == [20, 60]  # pools of n_train * partitions
    assert p.models[0].datasets == ["sinc-n10", "sinc-n30"]


@pytest.mark.parametrize("sizes", ["[]", "[10, 10]", "[1, 5]", '["a"]'])
def test_bad_size_lists_are_refused(tmp_path, sizes):
    msg = _problems(tmp_path, dataset=f"n = 100\nn_train = {sizes}\npartitions = 1")
    assert "n_train" in msg and "distinct integers >= 2" in msg


# ---------------------------------------------------------- common test set
def test_common_test_set_data_and_partitions(tmp_path):
    p = _parse(tmp_path, dataset="n_train = 15\npartitions = 3\nseed = 4\n"
                                 "test = { n = 25, seed = 9, params = { noise_free = true } }")
    data = prepare_data(p, tmp_path)["sinc"]
    ref_pool = generate("sinc_gauss", 45, 4)
    ref_test = generate("sinc_gauss", 25, 9, noise_free=True)
    X, y = data["X"], data["y"]
    parts = data["partitions"]
    assert len(parts) == 3
    trains = [np.asarray(tr) for tr, _ in parts]
    assert len(np.unique(np.concatenate(trains))) == 45  # fresh training data per repetition
    for tr, te in parts:
        np.testing.assert_array_equal(X[te], ref_test.X)
        np.testing.assert_array_equal(y[te], ref_test.y)
    np.testing.assert_array_equal(X[np.concatenate(trains)], ref_pool.X)


@pytest.mark.parametrize("dataset, needle", [
    ("n_train = 10\npartitions = 1\ntest = { seed = 3 }", "test.n"),
    ("n_train = 10\npartitions = 1\ntest = { n = 5, colour = 1 }", "test.colour"),
    ("n_train = 10\npartitions = 1\ntest = { n = 5, params = { bogus = 1 } }", "bogus"),
    ("n_train = 10\npartitions = 1\nn_test = 3\ntest = { n = 5 }", "n_test"),
    ("n = 12\nn_train = 10\npartitions = 2\ntest = { n = 5 }", "n_train * partitions = 20"),
    ('n_train = 10\npartitions = 1\ntest = { n = 5, generator = "gauss2d" }', "regression"),
])
def test_bad_common_test_tables_are_refused(tmp_path, dataset, needle):
    assert needle in _problems(tmp_path, dataset=dataset)


# ------------------------------------------------------- chronological split
def test_chronological_split(tmp_path):
    p = _parse(tmp_path, dataset='n = 60\nn_train = 40\nn_test = 15\nsplit = "chronological"')
    tr, te = prepare_data(p, tmp_path)["sinc"]["partitions"][0]
    np.testing.assert_array_equal(tr, np.arange(40))
    np.testing.assert_array_equal(te, np.arange(40, 55))
    msg = _problems(tmp_path, dataset='n = 60\nn_train = 20\npartitions = 2\nsplit = "chronological"')
    assert "partitions = 1" in msg
    assert "one of random, chronological" in _problems(
        tmp_path, dataset='n = 60\nn_train = 20\nsplit = "backwards"')


# -------------------------------------------------------------------- sweeps
def test_sweep_expands_models(tmp_path):
    p = _parse(tmp_path, model="sweep = { beta = [0.01, 0.5] }")
    assert [m.label for m in p.models] == ["B-beta0.01", "B-beta0.5"]
    assert [m.search["beta"] for m in p.models] == [0.01, 0.5]
    p = _parse(tmp_path, model="sweep = { tol = [0.01, 0.001] }")
    assert [m.settings["tol"] for m in p.models] == [0.01, 0.001]


@pytest.mark.parametrize("model, needle", [
    ("sweep = { beta = [0.1], tol = [1e-3] }", "exactly one key"),
    ("sweep = { beta = [] }", "non-empty array of numbers"),
    ('sweep = { beta = ["x"] }', "non-empty array of numbers"),
    ("search = { beta = 0.2 }\nsweep = { beta = [0.1] }", "give it in one place"),
    ("sweep = { colour = [1.0] }", "colour"),
    ("sweep = { beta = [2.0] }", "beta: must lie in (0, 1]"),
])
def test_bad_sweeps_are_refused(tmp_path, model, needle):
    assert needle in _problems(tmp_path, model=model)


# ------------------------------------------------------ protocol A (fix_from)
def test_fixed_params_average_the_best_start_per_partition():
    from bsvm_scale.pipeline.variants import fixed_params

    def res(p, ev, k0, kappa):
        return {"partition": p, "log_evidence": ev,
                "hyperparameters": {"kappa0": k0, "kappa": kappa, "kappa_b": 1.0}}

    deps = [res(0, -5.0, 2.0, [1.0, 3.0]), {"result": res(0, -9.0, 50.0, [9.0, 9.0])},
            res(1, -1.0, 4.0, [3.0, 5.0])]
    spec = {"kind": "btsvc", "task_id": "t", "params": {"ard": True, "n_starts": 2}}
    p = fixed_params(spec, deps)
    assert p["optimize"] is False and p["ard"] is True and "n_starts" not in p
    assert p["kappa0"] == pytest.approx(3.0) and p["kappa_b"] == pytest.approx(1.0)
    np.testing.assert_allclose(p["kappa"], [2.0, 4.0])


@pytest.mark.parametrize("fix, needle", [
    ('{ model = "nope" }', "must name another bsvr model"),
    ('{ model = "B", partitions = 0 }', "partitions: must be an integer >= 1"),
    ('{ model = "B", colour = 1 }', "unknown key(s)"),
])
def test_bad_fix_from_is_refused(tmp_path, fix, needle):
    text = BASE.format(out=str(tmp_path), dataset="n = 100\nn_train = 50\npartitions = 1",
                       model="") + f'[[models]]\nkind = "bsvr"\nname = "A"\nfix_from = {fix}\n'
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, tmp_path / "p.toml")
    assert needle in str(info.value)


# ---------------------------------------------------------------- LOO folds
def test_cv_folds_rule():
    assert cv_folds({"folds": "loo"}, 500) == "loo"
    assert cv_folds({"folds": 10, "loo_below": 100}, 99) == "loo"
    assert cv_folds({"folds": 10, "loo_below": 100}, 100) == 10
    assert cv_folds({}, 30) == 5


def test_cv_folds_validation(tmp_path):
    text = BASE.format(out=str(tmp_path), dataset="n = 100\nn_train = 50\npartitions = 1",
                       model="").replace('kind = "bsvr"', 'kind = "svr"')
    ok = parse_pipeline(text + 'cv = { folds = "loo", loo_below = 20 }\n', tmp_path / "p.toml")
    assert ok.models[0].cv["folds"] == "loo"
    for bad, needle in (('cv = { folds = "all" }', 'or "loo"'), ("cv = { loo_below = 1 }", "loo_below")):
        with pytest.raises(PipelineError) as info:
            parse_pipeline(text + bad + "\n", tmp_path / "p.toml")
        assert needle in str(info.value)


# --------------------------------------------------------- external kinds
def test_sk_svr_is_libsvm_on_standardised_inputs():
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR

    ds = generate("friedman1", 120, 0)
    m = SkSVR(C=3.0, epsilon=0.2, kappa=0.4).fit(ds.X, ds.y)
    sc = StandardScaler().fit(ds.X)
    ref = SVR(C=3.0, epsilon=0.2, gamma=0.2).fit(sc.transform(ds.X), ds.y)
    np.testing.assert_allclose(m.predict(ds.X[:20]), ref.predict(sc.transform(ds.X[:20])))
    np.testing.assert_array_equal(m.support_, ref.support_)


def test_sk_svc_probability_only_when_asked():
    ds = generate("gauss2d", 80, 0)
    plain = SkSVC(C=1.0, kappa=1.0).fit(ds.X, ds.y)
    assert not hasattr(plain, "predict_proba")
    platt = SkSVC(C=1.0, kappa=1.0, probability=True).fit(ds.X, ds.y)
    P = platt.predict_proba(ds.X[:5])
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    template, refit = without_platt(platt)
    assert refit and template.probability is False and platt.probability is True
    assert without_platt(plain) == (plain, False)


def _platt_sigmoid(f, pos):
    """(A, B) of Platt's sigmoid 1 / (1 + exp(A f + B)) by maximum likelihood
    with his smoothed targets (Nelder-Mead, tight tolerances)."""
    from scipy.optimize import minimize

    t = np.where(pos, (pos.sum() + 1.0) / (pos.sum() + 2.0), 1.0 / ((~pos).sum() + 2.0))

    def nll(ab):
        z = ab[0] * f + ab[1]
        return np.sum(t * np.logaddexp(0, z) + (1 - t) * np.logaddexp(0, -z))

    return minimize(nll, [0.0, 0.0], method="Nelder-Mead",
                    options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000}).x


@pytest.mark.parametrize("minority, folds", [(None, 5), (3, 3)])
def test_sk_svc_platt_is_libsvm_procedure(minority, folds):
    """Platt's sigmoid (LIBSVM -b 1) from first principles: decision values of
    SVCs fitted on 4 of 5 stratified folds, a sigmoid 1 / (1 + exp(A f + B))
    fitted to them by maximum likelihood with Platt's smoothed targets, applied
    to the decision values of the SVC fitted on all the data; predict is that
    SVC's, with or without probabilities."""
    from sklearn.model_selection import StratifiedKFold
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    ds = generate("gauss2d", 120, 3)
    X, y = ds.X, ds.y
    if minority is not None:  # fewer minority cases than 5 folds: one fold per case
        keep = np.concatenate([np.flatnonzero(y == y[0])[:30], np.flatnonzero(y != y[0])[:minority]])
        X, y = X[keep], y[keep]
    platt = SkSVC(C=2.0, kappa=0.5, probability=True, random_state=4).fit(X, y)
    assert platt.platt_folds_ == folds
    plain = SkSVC(C=2.0, kappa=0.5).fit(X, y)
    Xs = StandardScaler().fit(X).transform(X)
    f = np.empty(y.size)
    for tr, te in StratifiedKFold(folds, shuffle=True, random_state=4).split(Xs, y):
        f[te] = SVC(C=2.0, gamma=0.25).fit(Xs[tr], y[tr]).decision_function(Xs[te])
    A, B = _platt_sigmoid(f, y == platt.classes_[1])
    f_all = SVC(C=2.0, gamma=0.25).fit(Xs, y).decision_function(Xs[:20])
    expected = 1.0 / (1.0 + np.exp(A * f_all + B))
    np.testing.assert_allclose(platt.predict_proba(X[:20])[:, 1], expected, atol=1e-4)
    np.testing.assert_array_equal(platt.predict(X), plain.predict(X))
    np.testing.assert_array_equal(platt.support_, plain.support_)


@pytest.mark.parametrize("majority", [1, 3, 9])
def test_sk_svc_platt_with_a_single_case_of_a_class(majority):
    """One case of a class: no stratified split exists; the sigmoid is fitted to
    the full-data SVC's decision values (in-sample), predict stays the SVC's."""
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVC

    import warnings

    ds = generate("gauss2d", 40, 5)
    keep = np.concatenate([np.flatnonzero(ds.y == ds.y[0])[:majority], np.flatnonzero(ds.y != ds.y[0])[:1]])
    X, y = ds.X[keep], ds.y[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        platt = SkSVC(C=2.0, kappa=0.5, probability=True).fit(X, y)
    assert platt.platt_folds_ == 1
    Xs = StandardScaler().fit(X).transform(X)
    svc = SVC(C=2.0, gamma=0.25).fit(Xs, y)
    f = svc.decision_function(Xs)
    A, B = _platt_sigmoid(f, y == platt.classes_[1])
    np.testing.assert_allclose(platt.predict_proba(X)[:, 1], 1.0 / (1.0 + np.exp(A * f + B)),
                               atol=1e-4)
    np.testing.assert_array_equal(platt.predict(X), svc.predict(Xs))


def test_sk_gpr_error_bars_and_model_record(tmp_path):
    ds = generate("sinc_gauss", 60, 1)
    m = SkGPR().fit(ds.X, ds.y)
    mean, sd_y = m.predict(ds.X[:10], return_std=True, include_noise=True)
    _, sd_f = m.predict(ds.X[:10], return_std=True)
    np.testing.assert_allclose(sd_y ** 2 - sd_f ** 2, m.hyperparameters_["sigma2"], rtol=1e-6)
    # normalize_y: scikit-learn's noise is in standardised units, the error bars are not
    mn = SkGPR(normalize_y=True).fit(ds.X, 50.0 * ds.y)
    assert mn.model_.normalize_y and mn.y_scale_ == pytest.approx(50.0 * np.std(ds.y))
    mean_n, sd_yn = mn.predict(ds.X[:10], return_std=True, include_noise=True)
    _, sd_fn = mn.predict(ds.X[:10], return_std=True)
    np.testing.assert_allclose(sd_yn ** 2 - sd_fn ** 2,
                               mn.hyperparameters_["sigma2"] * mn.y_scale_ ** 2, rtol=1e-6)
    assert np.abs(mean_n - 50.0 * ds.y[:10]).mean() < 50.0 * np.std(ds.y)
    # its evidence is that of the given targets, like GPR(normalize_y=True)'s
    assert mn.log_marginal_likelihood_ == pytest.approx(
        mn.model_.log_marginal_likelihood_value_ - ds.y.size * np.log(mn.y_scale_))
    assert mn.hyperparameters_["y_scale"] == mn.y_scale_
    path = tmp_path / "m.h5"
    path.write_bytes(model_bytes(m, "sk_gpr"))
    with h5py.File(path, "r") as f:
        assert f.attrs["kind"] == "external_model" and f.attrs["model_kind"] == "sk_gpr"


# --------------------------------------------------------------- results
def test_peak_memory_table_names_its_scope():
    from bsvm_scale.pipeline.results import _peak_memory_by_size

    class FakeRun:
        def __init__(self, scope):
            self.scope = scope

        def entries(self, ds, m):
            return [{"task": {"peak_rss_mb": 100.0 + k, "peak_rss_scope": self.scope}}
                    for k in range(3)]

    for scope, words in (("task", "the task's own peak"),
                         ("worker process", "the worker process's lifetime peak")):
        mem, lines = _peak_memory_by_size(FakeRun(scope), {10: "d10", 20: "d20"}, ["A"])
        assert mem == {"A": [101.0, 101.0]} and words in lines[0], lines[0]


def test_sizes_of_a_single_size_run_and_split_evaluation_times():
    """A one-size run (label without -n<size>, e.g. repro_c2_large) is grouped
    under its training size, so the C2 tables are made for it; the MAP and
    evidence seconds per evaluation are medians of the recorded columns."""
    from bsvm_scale.pipeline.results import _groups_by_size, _per_evaluation

    class FakeRun:
        def __init__(self, labels):
            self.labels = labels

        def datasets(self):
            return self.labels

        def partition(self, ds, k=0):
            return np.arange(20000), np.arange(5)

    assert _groups_by_size(FakeRun(["gauss2d"])) == {20000: "gauss2d"}
    assert _groups_by_size(FakeRun(["g-n20", "g-n100"])) == {20: "g-n20", 100: "g-n100"}
    assert _groups_by_size(FakeRun(["a", "b"])) == {}
    task = {"trajectory": {"fun": np.zeros(3), "map_s": np.array([1.0, 5.0, 2.0]),
                           "evidence_s": np.array([np.nan, 4.0, 6.0])}}
    assert _per_evaluation(task) == (2.0, 5.0)
    assert all(np.isnan(_per_evaluation({"trajectory": {"fun": np.zeros(2)}})))
    assert all(np.isnan(_per_evaluation({})))


def test_bench_exponents_per_series():
    n = [1000, 2000, 4000, 8000]
    rows = [{"bench": "map", "n": k, "ours_s": 2e-6 * k ** 2, "ratio_s": 1.0,
             "gp": {"fit_s": 1e-9 * k ** 3, "peak_mb": 8e-6 * k ** 2}} for k in n]
    rows += [{"bench": "fit", "n": k, "fit_s": 1.0} for k in n[:2]]  # too few sizes
    got = {(g, c): a for g, c, sizes, a in bench_exponents(rows)}
    assert set(got) == {("bench=map", "ours_s"), ("bench=map", "gp.fit_s"),
                        ("bench=map", "gp.peak_mb")}
    assert got[("bench=map", "ours_s")] == pytest.approx(2.0)
    assert got[("bench=map", "gp.fit_s")] == pytest.approx(3.0)
    assert got[("bench=map", "gp.peak_mb")] == pytest.approx(2.0)
    ratios = {(g, c): (lo, med, hi) for g, c, sizes, lo, med, hi in bench_ratios(rows)}
    assert ratios == {("bench=map", "ratio_s"): (1.0, 1.0, 1.0)}
    rows[1]["ratio_s"] = 3.0
    assert bench_ratios(rows)[0][3:] == [1.0, 1.0, 3.0]


def test_fit_exponent_and_protocol_names():
    n = np.array([10.0, 100.0, 1000.0])
    assert fit_exponent(n, 3.0 * n ** 2.5) == pytest.approx(2.5)
    assert np.isnan(fit_exponent([10, 10], [1.0, 2.0]))
    assert protocol_of("repro_r2") == "r2" and protocol_of("repro_c3_reduced") == "c3"
    assert protocol_of("repro_r9") is None and protocol_of("quickstart") is None


TINY_R2 = """
[run]
name = "repro_r2_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "sinc"
generator = "sinc_gauss"
n_train = [12, 24]
partitions = 2
test = {{ n = 40, params = {{ noise_free = true }} }}

[[models]]
kind = "bsvr"
name = "BSVR"
search = {{ n_starts = 1 }}
settings = {{ optimizer_options = {{ maxiter = 4 }} }}

[[models]]
kind = "sk_svr"
name = "LIBSVM-SVR-CV"
cv = {{ folds = 3, coarse_points = 2, fine_points = 0 }}

[[models]]
kind = "bsvr"
name = "BSVR-A"
fix_from = {{ model = "BSVR", partitions = 1 }}
"""


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("repro")
    path = tmp / "repro_r2_tiny.toml"
    path.write_text(TINY_R2.format(out=str(tmp / "runs")))
    rec = run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)
    return tmp, rec


def test_results_page_from_a_tiny_run(tiny_run):
    tmp, rec = tiny_run
    assert rec["meta"]["status"] == "complete"
    run_dir = Path(rec["meta"]["run_dir"])
    out = tmp / "docs"
    page = write_results([run_dir], out, scope=["R9 left out"]).read_text()
    assert "## R2. Sinc scaling" in page and "## Machine and versions" in page
    assert "- R9 left out" in page
    assert "bsvm-scale run pipelines/repro_r2_tiny.toml" in page
    assert (out / "repro_r2_tiny_r2_scaling.png").stat().st_size > 1000
    assert "(repro_r2_tiny_r2_scaling.png)" in page
    # peak memory per size and method, from the tasks' own peaks
    assert "Peak resident memory [MiB] per task, median over repetitions (the task's own" in page
    peaks = {t["peak_rss_mb"] for t in rec["tasks"].values()}
    assert all(50.0 < p < 4096.0 for p in peaks)
    # the ASE of the table, recomputed from the stored test predictions and the data file
    ds = read_dataset(run_dir / "data" / "sinc-n24.h5")
    ases = []
    for k in range(2):
        te = np.asarray(rec["datasets"]["sinc-n24"]["partitions"][k]["test"])
        task = rec["tasks"][f"sinc-n24__LIBSVM-SVR-CV__p{k:03d}"]
        ases.append(np.mean((task["predictions"]["mean"] - ds.y[te]) ** 2))
    row = [ln for ln in page.splitlines() if ln.startswith("| 24 | LIBSVM-SVR-CV |")]
    assert len(row) == 1
    assert row[0].split("|")[5].strip().startswith(f"{np.mean(ases):.4g} +- ")


def test_results_page_includes_benchmark_rows(tiny_run):
    import json

    tmp, rec = tiny_run
    bench = tmp / "bench.json"
    bench.write_text(json.dumps({"rows": [{"n": 2000, "ratio": 1.25}, {"n": 5000, "peak_mb": 7}],
                                 "info": {}}))
    page = write_results([Path(rec["meta"]["run_dir"])], tmp / "docs_b", bench=[bench]).read_text()
    assert "| n | ratio | peak_mb |" in page
    assert "| 2000 | 1.25 | - |" in page and "| 5000 | - | 7 |" in page
    assert "bench.png" not in page  # no series of three sizes: no figure
    rows = [{"bench": "map", "n": k, "ours_s": 1e-6 * k ** 2, "peak_mb": 0.01 * k}
            for k in (1000, 2000, 4000)]
    bench.write_text(json.dumps({"rows": rows}))
    out = tmp / "docs_c"
    page = write_results([Path(rec["meta"]["run_dir"])], out, bench=[bench]).read_text()
    assert "![bench: seconds and peak memory against n](bench_bench.png)" in page
    assert (out / "bench_bench.png").stat().st_size > 1000


def test_fix_from_model_uses_the_hyperparameters_of_the_first_partitions(tiny_run):
    from bsvm_scale.models.bsvr import BayesianSVR

    tmp, rec = tiny_run
    run_dir = Path(rec["meta"]["run_dir"])
    ds = read_dataset(run_dir / "data" / "sinc-n12.h5")
    src = rec["results"]["sinc-n12"]["BSVR"]["p000"]["hyperparameters"]
    for k in range(2):
        fixed = rec["results"]["sinc-n12"]["BSVR-A"][f"p{k:03d}"]
        for key in ("C", "epsilon", "kappa", "kappa_b"):
            assert fixed["hyperparameters"][key] == pytest.approx(src[key], rel=1e-9)
    tr, te = (np.asarray(rec["datasets"]["sinc-n12"]["partitions"][1][w]) for w in ("train", "test"))
    ref = BayesianSVR(optimize=False, **{k: src[k] for k in ("C", "epsilon", "kappa", "kappa_b")})
    mean = ref.fit(ds.X[tr], ds.y[tr]).predict(ds.X[te])
    task = rec["tasks"]["sinc-n12__BSVR-A__p001"]
    np.testing.assert_allclose(task["predictions"]["mean"], mean, rtol=1e-6, atol=1e-9)


def test_c3_grid_is_centred_on_the_evidence_optimum():
    from bsvm_scale import BayesianSVC
    from bsvm_scale.pipeline.results import c3_grid

    ds = generate("twonorm", 500, 3)
    X, y, Xt, yt = ds.X[:200], ds.y[:200], ds.X[200:], ds.y[200:]
    m = BayesianSVC(n_starts=1).fit(X, y)
    a, b, ev, err = c3_grid(X, y, Xt, yt, m.hyperparameters_, grid=(5, 0.5, 0.5))
    assert ev.shape == err.shape == (5, 5)
    np.testing.assert_allclose(a[2], np.log10(m.hyperparameters_["kappa0"]))
    np.testing.assert_allclose(b[2], np.log10(m.hyperparameters_["kappa"]))
    # the centre is the fitted point. (It need not be a grid minimum: the
    # Laplace evidence (5.35) drops by a jump whenever a case leaves the SV
    # set, where Lambda_ii falls from pi^2/8 to 0, while the gradient (5.36)
    # follows the smooth pieces between jumps; the grid solves each point
    # cold, the fit warm, so the two MAP solutions can sit on either side
    # of such a jump: 0.06 nats here.)
    assert ev[2, 2] == pytest.approx(-m.log_evidence_, abs=0.1)
    assert np.all(np.isfinite(ev)) and np.ptp(ev) > 1.0
    assert np.all((err >= 0) & (err <= 1)) and err[2, 2] < 0.1
    # rows run along kappa0 at fixed kappa: a larger kappa0 at a tiny kappa
    # (nearly linear covariance) leaves the test error nearly unchanged
    assert np.ptp(err[2]) < 0.05


def test_tasks_record_map_and_evidence_seconds(tiny_run):
    _, rec = tiny_run
    tasks = [t for k, t in rec["tasks"].items() if "__BSVR__" in k]
    assert tasks
    for t in tasks:
        tr = t["trajectory"]
        assert tr["map_s"].shape == tr["evidence_s"].shape == tr["fun"].shape
        assert np.all(tr["map_s"] > 0) and np.all(tr["evidence_s"] > 0)
        assert tr["map_s"].sum() + tr["evidence_s"].sum() <= t["fit_time"]


def test_page_compares_models_on_the_partitions_all_finished(tiny_run):
    """A stopped run: LIBSVM-SVR-CV lacks partition 1 of n = 24, so every model
    of that data set is reported on partition 0 alone, and the header says so."""
    import copy
    import shutil

    from bsvm_scale.pipeline.results import Run
    from bsvm_scale.pipeline.runfile import write_run_file

    tmp, rec = tiny_run
    run_dir = tmp / "stopped" / "repro_r2_tiny"
    shutil.copytree(Path(rec["meta"]["run_dir"]), run_dir)
    stopped = copy.deepcopy(rec)
    parts = stopped["results"]["sinc-n24"]["LIBSVM-SVR-CV"]
    del parts[sorted(parts)[1]]
    write_run_file(run_dir / "run.h5", stopped)
    run = Run(run_dir / "run.h5")
    assert run.left_out == {"sinc-n24": 2}  # BSVR's and BSVR-A's partition 1
    for m in run.models("sinc-n24"):
        assert len(run.entries("sinc-n24", m)) == 1
    assert all(len(run.entries("sinc-n12", m)) == 2 for m in run.models("sinc-n12"))
    want = rec["tasks"]["sinc-n24__BSVR__p000__s00"]["metrics"]["ase"]
    np.testing.assert_allclose(run.metric("sinc-n24", "BSVR", "ase"), [want])
    page = write_results([run_dir], tmp / "docs_stopped").read_text()
    assert ("on the partitions all of them finished, every start included (sinc-n24 1; 2 other "
            "partition results "
            "left out)") in page


def test_common_partitions_need_every_start_and_drop_models_with_none():
    from bsvm_scale.pipeline.results import _keep_common_partitions

    def entry(done, of):
        return {"n_starts_done": done, "n_starts": of, "metrics": {}}

    rec = {"results": {"d": {"A": {"p000": entry(2, 2), "p001": entry(1, 2)},
                             "B": {"p000": entry(1, 1), "p001": entry(1, 1)}},
                       "e": {"A": {"p000": entry(2, 2)}, "B": {"p001": entry(1, 1)}},
                       "f": {"A": {"p000": entry(2, 2)}, "B": {"p000": entry(1, 1)}}}}
    assert _keep_common_partitions(rec) == {"d": 2, "e": 2}
    assert {m: sorted(v) for m, v in rec["results"]["d"].items()} == {"A": ["p000"],
                                                                      "B": ["p000"]}
    assert rec["results"]["e"] == {}  # nothing in common: no model is compared
    assert {m: sorted(v) for m, v in rec["results"]["f"].items()} == {"A": ["p000"],
                                                                      "B": ["p000"]}


def test_sk_gpc_start_length_scale():
    """The scikit-learn GP references start at the given RBF length scale;
    "sqrt(d)" is kappa = 1/d, the start of the project's GPs and BTSVC (on C3's
    waveform data, scikit-learn's GPC from length scale 1 ends at a flat optimum
    that predicts the majority class; see docs/results.md)."""
    from bsvm_scale.pipeline.external import SkGPC, SkGPR

    assert SkGPC(length_scale="sqrt(d)")._build(9).kernel.get_params()["k1__k2__length_scale"] == 3.0
    assert SkGPC(ard=True, length_scale=2.0)._build(3).kernel.get_params()[
        "k1__k2__length_scale"].tolist() == [2.0, 2.0, 2.0]
    assert SkGPR(length_scale="sqrt(d)")._build(4).kernel.get_params()[
        "k1__k1__k2__length_scale"] == 2.0
    assert SkGPC()._build(9).kernel.get_params()["k1__k2__length_scale"] == 1.0
    for bad in ("sqrt(n)", -1.0):
        with pytest.raises(ValueError, match="length_scale must be a positive number"):
            SkGPC(length_scale=bad).fit(np.eye(4), [0, 1, 0, 1])


def test_data_statement_follows_the_runs_data_sets():
    """A run of the R5 protocol on diamonds says diamonds, not Boston; a run
    on the protocol's own (or unknown) data keeps the protocol's statement."""
    assert data_used({"diamonds": {}}, "r5").startswith("diamonds (ggplot2, 53,940 cases")
    assert data_used({"boston": {}}, "r5") == DATA_USED["r5"]
    assert data_used({"diamonds": {}, "boston": {}}, "r5") == DATA_USED["r5"]


def _page_body(page):
    """The page without its command lines (they name the run paths) and blank lines."""
    return [ln for ln in page.splitlines() if ln.strip() and "bsvm-scale" not in ln
            and not ln.startswith("The page is made from")]


TINY_C3 = """
[run]
name = "repro_c3_tiny"
output = "{out}"
retries = 0

[[datasets]]
name = "titanic"
path = "{data}/titanic.h5"
partitions = "stored"
max_partitions = 2

[[datasets]]
name = "twonorm"
generator = "twonorm"
n = 140
n_train = 60
partitions = 2

[[models]]
kind = "btsvc"
name = "BTSVC"
search = {{ n_starts = 1 }}
settings = {{ optimizer_options = {{ maxiter = 3 }} }}

[[models]]
kind = "gpc"
name = "GPC"
search = {{ n_starts = 1 }}
"""


@pytest.fixture(scope="module")
def tiny_c3(tmp_path_factory):
    from bsvm_scale.pipeline.export import repo_root

    tmp = tmp_path_factory.mktemp("repro_c3")
    path = tmp / "repro_c3_tiny.toml"
    path.write_text(TINY_C3.format(out=str(tmp / "runs"), data=str(repo_root() / "data")))
    rec = run_pipeline(load_pipeline(path), workers=1, progress=False, summary_stream=False)
    assert rec["meta"]["status"] == "complete"
    return Path(rec["meta"]["run_dir"])


def _render_recording_loads(runs, out, monkeypatch):
    """The page body and every (data set, model) whose model the page loaded."""
    from bsvm_scale.pipeline import results

    loaded, original = [], results.Run.model

    def model(self, ds, m, k=0):
        got = original(self, ds, m, k)
        if got is not None:
            loaded.append((ds, m, type(got).__name__))
        return got

    monkeypatch.setattr(results.Run, "model", model)
    page = write_results(runs, out).read_text()
    monkeypatch.setattr(results.Run, "model", original)
    return _page_body(page), sorted(loaded)


def test_export_holds_what_the_page_reads(tiny_c3, tmp_path, monkeypatch):
    import os
    import shutil

    from bsvm_scale.pipeline.runfile import read_run_file

    from bsvm_scale.pipeline.export import export_run
    from bsvm_scale.pipeline.results import Run

    src = tmp_path / "runs" / "repro_c3_tiny"
    shutil.copytree(tiny_c3, src)
    body_run, loads_run = _render_recording_loads([src], tmp_path / "page_run", monkeypatch)
    assert [x[:2] for x in loads_run] == [("titanic", "BTSVC"), ("twonorm", "BTSVC")]
    exp = export_run(src, tmp_path / "docs" / "runs")["path"]
    shutil.rmtree(src)  # the export alone, read from another directory
    monkeypatch.chdir(tmp_path)
    body_exp, loads_exp = _render_recording_loads([exp], tmp_path / "page_exp", monkeypatch)
    assert body_exp == body_run and loads_exp == loads_run
    assert any("evidence and test-error contours, titanic" in ln for ln in body_exp)
    # the page states the machine and source commit the run recorded, not the reader's
    meta = read_run_file(exp)["meta"]
    assert meta["machine"]["cores"] == os.cpu_count() and meta["machine"]["memory_gib"] > 0
    line = f"- {meta['machine']['system']}, {os.cpu_count()} cores ("
    assert any(ln.startswith(line) and ln.endswith(": runs repro_c3_tiny") for ln in body_exp)
    assert f"- source commit of the runs: {meta['commit'] or 'not recorded'} (repro_c3_tiny)" \
        in body_exp
    run = Run(exp)
    assert run.rec["meta"]["exported_from"] == str(tiny_c3)
    assert run.rec["datasets"]["titanic"]["path"] == "repo:data/titanic.h5"  # shipped: not copied
    assert run.rec["datasets"]["twonorm"]["path"] == "data/twonorm.h5"
    assert sorted(p.name for p in (exp / "data").iterdir()) == ["twonorm.h5"]
    assert sorted(p.name for p in (exp / "models").iterdir()) == [
        "titanic__BTSVC__p000.h5", "twonorm__BTSVC__p000.h5"]
    kept = {tid for tid, t in run.rec["tasks"].items() if "predictions" in t}
    shown = {run.entries(ds, m)[0]["best_task"] for ds in run.datasets() for m in run.models(ds)}
    assert len(run.partition("titanic")[1]) > 2000  # above max_prediction_cases: dropped
    assert kept == {t for t in shown if t.startswith("twonorm")} and len(kept) == 2
    (exp / "models" / "titanic__BTSVC__p000.h5").unlink()
    with pytest.raises(FileNotFoundError, match="lacks the model file"):
        Run(exp).model("titanic", "BTSVC")


def test_export_of_a_stopped_run_follows_the_partitions_shown(tiny_c3, tmp_path):
    import shutil

    from bsvm_scale.pipeline.export import export_run
    from bsvm_scale.pipeline.runfile import read_run_file, write_run_file

    src = tmp_path / "runs" / "repro_c3_tiny"
    shutil.copytree(tiny_c3, src)
    rec = read_run_file(src)
    del rec["results"]["twonorm"]["GPC"]["p000"]  # as if GPC had not finished partition 0
    write_run_file(src / "run.h5", rec)
    exp = export_run(src, tmp_path / "exports")["path"]
    assert sorted(p.name for p in (exp / "models").iterdir()) == [
        "titanic__BTSVC__p000.h5", "twonorm__BTSVC__p001.h5"]
    page = _page_body(write_results([exp], tmp_path / "page").read_text())
    assert page == _page_body(write_results([src], tmp_path / "page_src").read_text())


def test_export_replaces_the_previous_one_and_refuses_bad_targets(tiny_run, tmp_path, capsys):
    import shutil

    from bsvm_scale.cli import main
    from bsvm_scale.pipeline.export import export_run

    _, rec = tiny_run
    src = tmp_path / "runs" / "repro_r2_tiny"
    shutil.copytree(rec["meta"]["run_dir"], src)
    out = tmp_path / "exports"
    first = export_run(src, out, max_prediction_cases=0)
    assert first["predictions_dropped"] == len(rec["tasks"])
    (first["path"] / "stale.txt").write_text("from the previous export")
    second = export_run(src, out)
    assert not (second["path"] / "stale.txt").exists()
    assert sorted(p.name for p in out.iterdir()) == ["repro_r2_tiny"]
    with pytest.raises(ValueError, match="out: .* would overwrite the run"):
        export_run(src, src.parent)
    assert main(["export", str(src), "--out", str(out), "--max-prediction-cases", "-1"]) == 2
    assert "--max-prediction-cases: got -1" in capsys.readouterr().err
    assert main(["export", str(src), str(src / "run.h5"), "--out", str(out)]) == 2
    assert "are both run 'repro_r2_tiny'" in capsys.readouterr().err
    assert main(["export", str(tmp_path / "nowhere"), "--out", str(out)]) == 2
    assert "RUN '" in capsys.readouterr().err
    from bsvm_scale.pipeline.runfile import read_run_file, write_run_file

    copy = read_run_file(src)  # recorded paths name the fixture's run: point them here
    for d in copy["datasets"].values():
        d["path"] = str(src / "data" / Path(d["path"]).name)
    write_run_file(src / "run.h5", copy)
    (src / "data" / "sinc-n12.h5").unlink()
    with pytest.raises(FileNotFoundError, match="data set 'sinc-n12'"):
        export_run(src, out)
    assert (out / "repro_r2_tiny" / "data" / "sinc-n12.h5").exists()  # previous export kept
    assert sorted(p.name for p in out.iterdir()) == ["repro_r2_tiny"]  # no partial copy left


def _same(a, b, where="record"):
    """Exact structural equality: types, keys in order, array dtypes, nan = nan."""
    assert type(a) is type(b), (where, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), where
        assert [type(k) for k in a] == [type(k) for k in b], where
        for k in a:
            _same(a[k], b[k], f"{where}/{k}")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), where
        for i, (x, y) in enumerate(zip(a, b)):
            _same(x, y, f"{where}[{i}]")
    elif isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, where
        np.testing.assert_array_equal(a, b, err_msg=where)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), where
    else:
        assert a == b, (where, a, b)


def test_packed_run_file_round_trips_exactly(tiny_c3, tmp_path):
    from bsvm_scale.pipeline.runfile import read_run_file, write_run_file

    rec = read_run_file(tiny_c3)
    rec["extra"] = {"ints": {3: np.int32(7), -1: (1.5, None)}, "nan": float("nan"),
                    "inf": np.array([np.inf, -0.0, 1e-310]), "steps": np.array([2, 5, 6], np.uint16),
                    "flat": np.array([5, 5, 1], np.int64), "grid": np.arange(6.0).reshape(2, 3),
                    "u64": np.array([5, 3], np.uint64), "u64max": np.array([0, 2 ** 64 - 1], np.uint64),
                    "i64": np.array([-2 ** 63, 2 ** 63 - 1]), "f32": np.array([0.1, 2.0], np.float32),
                    "bools": np.array([True, False]), "s": np.array(["ab", "c"]), "__t__": "key"}
    write_run_file(tmp_path / "packed.h5", rec, packed=True)
    write_run_file(tmp_path / "plain.h5", rec)
    _same(read_run_file(tmp_path / "packed.h5"), rec)
    assert (tmp_path / "packed.h5").stat().st_size < (tmp_path / "plain.h5").stat().st_size / 3
    import h5py

    with h5py.File(tmp_path / "packed.h5", "r+") as f:  # a damaged blob is named, not hidden
        blob = f["record_json"][()]
        del f["record_json"]
        f["record_json"] = blob[: blob.size // 2]
    with pytest.raises(ValueError, match="packed run record cannot be decoded"):
        read_run_file(tmp_path / "packed.h5")


def test_models_loaded_only_at_the_largest_size_where_the_section_says(tiny_run, monkeypatch):
    from bsvm_scale.pipeline import results

    _, rec = tiny_run
    run = results.Run(rec["meta"]["run_dir"])
    monkeypatch.setitem(results.MODELS_READ, "r2", ("BSVR",))
    assert run.loads_model("sinc-n12", "BSVR") and run.loads_model("sinc-n24", "BSVR")
    assert not run.loads_model("sinc-n24", "BSVR-A")
    monkeypatch.setattr(results, "MODELS_AT_LARGEST_SIZE", {"r2"})
    assert not run.loads_model("sinc-n12", "BSVR") and run.loads_model("sinc-n24", "BSVR")
    assert run.model("sinc-n12", "BSVR") is None
    assert run.model("sinc-n24", "BSVR").hyperparameters_["C"] > 0
    # models trained on more than MAX_MODEL_TRAIN cases are never loaded (nor exported)
    monkeypatch.setattr(results, "MAX_MODEL_TRAIN", 23)
    assert not run.loads_model("sinc-n24", "BSVR") and run.model("sinc-n24", "BSVR") is None
    monkeypatch.setattr(results, "MAX_MODEL_TRAIN", 24)
    assert run.loads_model("sinc-n24", "BSVR")


def test_nll_note_needs_a_real_margin():
    """BTSVC's test NLL is called worse than GPC's only beyond NLL_NOTE_REL (1%)."""
    from bsvm_scale.pipeline import results

    class Stub:
        def __init__(self, b, g):
            self.nll = {"BTSVC": np.array([b]), "GPC": np.array([g])}

        def datasets(self):
            return ["d"]

        def models(self, ds):
            return ["BTSVC", "GPC"]

        def metric(self, ds, m, name):
            return self.nll[m]

        def entries(self, ds, m):
            return [{"n_sv": 1, "task": {"n_train": 10}}]

    for b, g, said in ((1051.4, 1050.9, False), (1000.0, 995.0, False), (1100.0, 1000.0, True)):
        notes = []
        results._nll_notes(Stub(b, g), "C3", notes)
        assert any("NLL" in n for n in notes) == said, (b, g)
