"""The pipeline-file schema (bsvm_scale.pipeline.spec.schema): the settings and
search keys of every model kind are the estimator's own parameters and
constraints; every table names the key, the value and what is allowed when a
key is unknown, of the wrong type or out of range; the reference table and
the ``bsvm-scale schema`` command list every key."""

from numbers import Integral

import pytest
from sklearn.utils._param_validation import Interval, StrOptions

from bsvm_scale.cli import main
from bsvm_scale.pipeline.spec.config import PipelineError, parse_pipeline, schema_table
from bsvm_scale.pipeline.spec.schema import (CV_KEYS, DATASET_KEYS, KINDS, MODEL_KEYS, RUN_KEYS,
                                        SEARCH_KEYS, TASK_OF, TEST_KEYS, estimator_class,
                                        estimator_keys, search_keys)

DATA = {"regression": '[[datasets]]\nname = "r"\ngenerator = "sinc_gauss"\nn = 40\n'
                      'n_train = 20\n',
        "classification": '[[datasets]]\nname = "c"\ngenerator = "gauss2d"\nn = 40\n'
                          'n_train = 20\n'}
CANDIDATES = ("x", 1.5, 3, True, [1.0], {"a": 1})


def _toml(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return f'"{v}"'
    if isinstance(v, list):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    return repr(v)


def _problems(text):
    with pytest.raises(PipelineError) as info:
        parse_pipeline(text, "p.toml")
    return info.value.problems


def _model(kind, table=""):
    return DATA[TASK_OF[kind]] + f'\n[[models]]\nkind = "{kind}"\n{table}'


def _wrong_type(key):
    """A TOML value of a type ``key`` does not accept."""
    return next(v for v in CANDIDATES if key.problems(v)[:1]
                and key.problems(v)[0].startswith(": must be") and "; got" in key.problems(v)[0]
                and key.type_text() in key.problems(v)[0])


def _out_of_range(key):
    """A value of the right type that ``key``'s constraints refuse, or None."""
    for c in key.constraints:
        if isinstance(c, Interval) and c.left is not None:
            return c.left - 1 if c.type is Integral else c.left - 1.5
        if isinstance(c, Interval) and c.right is not None:
            return c.right + 1
        if isinstance(c, StrOptions):
            return "bogus"
        if c == "random_state":
            return -1
    return None


# ------------------------------------------------- keys from the estimators
@pytest.mark.parametrize("kind", list(KINDS))
def test_settings_keys_are_the_estimators_parameters_and_constraints(kind):
    cls = estimator_class(kind)
    params = cls().get_params(deep=False)
    keys = estimator_keys(kind)
    assert list(keys) == list(params)
    assert set(cls._parameter_constraints) == set(params)  # every parameter is constrained
    for name, key in keys.items():
        assert key.constraints == tuple(cls._parameter_constraints[name])
        assert key.default is params[name] or key.default == params[name]
        assert key.type_text()  # every parameter can be given in a pipeline file
    for name, key in search_keys(kind).items():
        assert name in SEARCH_KEYS[kind] and key.constraints == keys[name].constraints


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_settings_key_refuses_a_wrong_type_and_range_by_name(kind):
    cls = estimator_class(kind).__name__
    for name, key in estimator_keys(kind).items():
        bad = _wrong_type(key)
        probs = _problems(_model(kind, f"settings = {{ {name} = {_toml(bad)} }}\n"))
        assert probs == [f"models[0].settings.{name}: must be {key.type_text()}; got {bad!r} "
                         "(line 9)"]
        bad = _out_of_range(key)
        if bad is not None:
            probs = _problems(_model(kind, f"settings = {{ {name} = {_toml(bad)} }}\n"))
            assert probs[0].startswith(f"models[0].settings.{name}: must ")
            assert f"; got {bad!r} (line 9)" in probs[0] and key.allowed().split()[-1] in probs[0]
    probs = _problems(_model(kind, "settings = { colour = 1 }\n"))
    assert probs[0].startswith(f"models[0].settings.colour: unknown parameter of {cls} ({kind}); "
                               "allowed: ")


def test_range_messages_name_key_value_and_the_allowed_values():
    assert _problems(_model("svr", "settings = { C = -1 }\n")) == [
        "models[0].settings.C: must be > 0; got -1 (line 9)"]
    assert _problems(_model("bsvr", "settings = { kappa = [1.0, -2.0] }\n")) == [
        "models[0].settings.kappa: must be > 0 or an array of numbers > 0; got [1.0, -2.0] "
        "(line 9)"]
    assert _problems(_model("bsvr", "search = { beta = 1.5 }\n")) == [
        "models[0].search.beta: must lie in (0, 1]; got 1.5 (line 9)"]
    assert _problems(_model("btsvc", 'settings = { evidence_method = "exact" }\n')) == [
        "models[0].settings.evidence_method: must be one of auto, dense, matrix_free; got "
        "'exact' (line 9)"]
    assert _problems(_model("gpc", "settings = { ard = 1 }\n")) == [
        "models[0].settings.ard: must be true/false; got 1 (line 9)"]


@pytest.mark.parametrize("kind", list(SEARCH_KEYS))
def test_search_keys_refuse_wrong_types_ranges_and_unknown_keys(kind):
    for name, key in search_keys(kind).items():
        bad = _wrong_type(key)
        probs = _problems(_model(kind, f"search = {{ {name} = {_toml(bad)} }}\n"))
        assert probs == [f"models[0].search.{name}: must be {key.type_text()}; got {bad!r} "
                         "(line 9)"]
    probs = _problems(_model(kind, "search = { n_starts = 0, colour = 1 }\n"))
    assert probs == ["models[0].search.n_starts: must be >= 1; got 0 (line 9)",
                     f"models[0].search.colour: unknown key for {kind}; allowed: "
                     f"{', '.join(SEARCH_KEYS[kind])} (line 9)"]


def test_search_starts_and_bounds_are_checked_inside():
    probs = _problems(_model("bsvr", "search = { starts = [] }\n"))
    assert probs == ["models[0].search.starts: must not be empty (line 9)"]
    probs = _problems(_model("bsvr", "search = { bounds = { ln_C = [2.0, 1.0], ln_x = [0, 1] } }\n"))
    assert probs == ["models[0].search.bounds.ln_C: must be [low, high] with low < high; got "
                     "[2.0, 1.0] (line 9)",
                     "models[0].search.bounds.ln_x: unknown; allowed: ln_C, ln_epsilon, "
                     "ln_kappa, ln_kappa_b, ln_kappa0 (line 9)"]
    probs = _problems(_model("bsvr", "search = { bounds = { ln_kappa0 = [0.0, 1.0] } }\n"))
    assert probs == ['models[0].search: a kappa0 start or an ln_kappa0 bound needs '
                     'settings.kappa0 = "evidence" (kappa0 is otherwise fixed) (line 9)']
    assert _problems(_model("bsvr", "search = { starts = [{ kappa0 = 3.0 }] }\n"))[0].endswith(
        'needs settings.kappa0 = "evidence" (kappa0 is otherwise fixed) (line 9)')
    probs = _problems(_model("gpr", "search = { bounds = [0.0, 1.0] }\n"))
    assert probs == ["models[0].search.bounds: must be [low, high] with 0 < low < high; got "
                     "[0.0, 1.0] (line 9)"]
    assert _problems(_model("svr", "search = { n_starts = 2 }\n"))[0].startswith(
        "models[0].search: svr has no evidence search")


# ------------------------------------------------------ the declared tables
GOOD = DATA["regression"] + '\n[[models]]\nkind = "gpr"\n'


@pytest.mark.parametrize("text, expected", [
    ('[run]\nretries = -1\n' + GOOD, "run.retries: must be >= 0; got -1 (line 2)"),
    ('[run]\nseed = "a"\n' + GOOD, "run.seed: must be an integer; got 'a' (line 2)"),
    ('[run]\ncolour = 1\n' + GOOD, "run.colour: unknown key; allowed: name, output, retries, "
                                   "seed, description (line 2)"),
    (GOOD.replace("n = 40", "n = 1"), "datasets[0].n: must be >= 2; got 1 (line 4)"),
    (GOOD.replace("n = 40", "n = 4.5"), "datasets[0].n: must be an integer; got 4.5 (line 4)"),
    (GOOD.replace("n = 40", "n = 40\nmax_partitions = 0"),
     "datasets[0].max_partitions: must be >= 1; got 0 (line 5)"),
    (GOOD.replace("n = 40", "n = 40\npartitions = 0"),
     'datasets[0].partitions: must be >= 1 or "stored"; got 0 (line 5)'),
    (GOOD.replace("n = 40", "n = 40\nsplit = 1"),
     "datasets[0].split: must be a string; got 1 (line 5)"),
    (GOOD.replace("n = 40", "n = 40\ntest = { n = 0 }"),
     "datasets[0].test.n: must be >= 1; got 0 (line 5)"),
    (GOOD.replace("n = 40", "n = 40\ntest = { n = 5, seed = -2 }"),
     "datasets[0].test.seed: must be >= 0; got -2 (line 5)"),
    (GOOD + "committee = 1\n", "models[0].committee: must be true/false; got 1 (line 9)"),
    (GOOD + 'colour = "red"\n', "models[0].colour: unknown key; allowed: "
                                 f"{', '.join(MODEL_KEYS)} (line 9)"),
    (GOOD.replace('"gpr"', '"svr"') + "cv = { fine_step = 0 }\n",
     "models[0].cv.fine_step: must be > 0; got 0 (line 9)"),
    (GOOD.replace('"gpr"', '"svr"') + "cv = { coarse_points = 2.0 }\n",
     "models[0].cv.coarse_points: must be an integer; got 2.0 (line 9)"),
    (GOOD.replace('"gpr"', '"svr"') + "cv = { log10_C = [2, 1] }\n",
     "models[0].cv.log10_C: must be [low, high] with low <= high; got [2, 1] (line 9)"),
    (GOOD.replace('"gpr"', '"svr"') + "cv = { depth = 2 }\n",
     f"models[0].cv.depth: unknown key; allowed: {', '.join(CV_KEYS)} (line 9)"),
])
def test_declared_tables_name_key_value_and_line(text, expected):
    assert expected in _problems(text)


def test_every_declared_key_refuses_a_wrong_type():
    for keys in (RUN_KEYS, DATASET_KEYS, TEST_KEYS, MODEL_KEYS, CV_KEYS):
        for name, key in keys.items():
            bad = _wrong_type(key)
            assert key.problems(bad) == [f": must be {key.type_text()}; got {bad!r}"], name
            bad = _out_of_range(key)
            if bad is not None:  # "must be >= 1; got 0" (kind: "unknown model kind ...")
                assert len(key.problems(bad)) == 1 and repr(bad) in key.problems(bad)[0], name


# -------------------------------------------------------------- reference
def test_schema_table_lists_every_key_once_per_section():
    rows = schema_table()
    assert all(len(r) == 6 for r in rows)
    sections = {}
    for section, key, type_, allowed, default, doc in rows:
        sections.setdefault(section, []).append(key)
        assert type_ and isinstance(allowed, str)
    assert sections["run"] == list(RUN_KEYS) and sections["models.cv"] == list(CV_KEYS)
    for kind in KINDS:
        assert sections[f"models.settings ({kind})"] == list(estimator_keys(kind))
        assert sections.get(f"models.search ({kind})", []) == list(SEARCH_KEYS.get(kind, ()))
    c = next(r for r in rows if r[:2] == ("models.settings (svr)", "C"))
    assert c[2:5] == ("number", "> 0", 1.0) and c[5].startswith("Regularisation parameter")


def test_cli_schema_prints_the_markdown_table(capsys):
    assert main(["schema"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "| section | key | type | allowed | default | description |"
    assert len(out) == len(schema_table()) + 2
    assert "| models.search (bsvr) | `beta` | number | in (0, 1] | (not set) |" in "\n".join(out)


def test_the_schema_reference_page_is_the_generated_one(tmp_path):
    """docs/reference/pipeline_schema.md is what ``bsvm-scale schema --out``
    writes: the reference cannot drift from the schema."""
    from pathlib import Path

    from bsvm_scale.pipeline.spec.schema import schema_page

    out = tmp_path / "schema.md"
    assert main(["schema", "--out", str(out)]) == 0
    assert out.read_text() == schema_page()
    page = Path(__file__).resolve().parents[2] / "docs" / "reference" / "pipeline_schema.md"
    assert page.read_text() == schema_page(), \
        "regenerate it: bsvm-scale schema --out docs/reference/pipeline_schema.md"


def test_pipeline_tasks_run_bayesian_searches_on_one_thread():
    """Workers are single-threaded processes, one per core: a BSVR/BTSVC task
    runs its search on one thread unless the pipeline file sets n_jobs; a fit
    outside pipelines uses every core by default."""
    from bsvm_scale import BayesianSVC, BayesianSVR
    from bsvm_scale.pipeline.run.tasks import make_estimator

    assert BayesianSVR().n_jobs == -1 and BayesianSVC().n_jobs == -1
    assert make_estimator("bsvr", {}).n_jobs == 1
    assert make_estimator("btsvc", {"ard": True}).n_jobs == 1
    assert make_estimator("btsvc", {"n_jobs": 2}).n_jobs == 2
    assert "n_jobs" not in make_estimator("svr", {}).get_params() or \
        make_estimator("svr", {}).get_params().get("n_jobs") is None
