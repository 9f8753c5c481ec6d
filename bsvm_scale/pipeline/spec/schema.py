"""The schema of pipeline files: one declarative table of keys per section.

Each :class:`Key` names a key of a pipeline table with what it accepts, in
scikit-learn's constraint vocabulary (:mod:`sklearn.utils._param_validation`:
``Interval``, ``StrOptions`` (here :class:`OneOf`, which keeps its order),
``"boolean"``, ``"array-like"``, ``"random_state"``, ``str``, ``list``,
``dict``), its default and a description. The ``[run]``, ``[[datasets]]``,
``datasets.test``, ``[[models]]`` and ``models.cv`` tables are declared here;
the ``settings`` of a model kind and its ``search`` keys are derived from the
estimator's own ``_parameter_constraints`` and ``get_params()`` defaults
(:func:`estimator_keys`), so they follow the estimator without being repeated.

:func:`check_table` walks one table against its keys and reports, per key,
an unknown key, a value of the wrong type (``"models[0].search.n_starts: must
be an integer; got 2.5"``) or out of range (``"models[2].settings.C: must be
> 0; got -1"``). :func:`schema_table` lists every key as rows ``(section, key,
type, allowed, default, description)``; :func:`schema_markdown` renders them as
the Markdown reference (``bsvm-scale schema``).
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from dataclasses import dataclass
from numbers import Integral, Real

from sklearn.utils._param_validation import Interval, StrOptions, make_constraint

from ..._util.validation import NON_NEGATIVE_INT, POSITIVE, POSITIVE_INT, IntegerInterval
from .kinds import BAYES_KINDS, CV_KINDS, KINDS, SEARCH_KEYS, START_KEYS, TASK_OF

__all__ = ["Key", "OneOf", "KINDS", "TASK_OF", "BAYES_KINDS", "CV_KINDS", "SEARCH_KEYS",
           "PER_INPUT", "RUN_KEYS", "DATASET_KEYS", "TEST_KEYS", "MODEL_KEYS", "CV_KEYS",
           "GRID_KEYS", "FIX_FROM_KEYS",
           "estimator_class", "estimator_keys", "search_keys", "check_table", "schema_table",
           "schema_markdown", "schema_page"]

#: a start's kappa given as one over the number of inputs of the task's data set
PER_INPUT = "1/d"
BSVR_BOUND_KEYS = ("ln_C", "ln_epsilon", "ln_kappa", "ln_kappa_b", "ln_kappa0")


class Default(str):
    """A default described in words (``"the rest"``), not a value of the key."""


REQUIRED = Default("(required)")

_TOML_TYPES = (bool, int, float, str, list, dict)
_TYPE_NAMES = {bool: "true/false", int: "an integer", float: "a number", str: "a string",
               list: "an array", dict: "a table"}
_SEED_RANGE = Interval(Integral, 0, 2**32 - 1, closed="both")


class OneOf(StrOptions):
    """``StrOptions`` that keeps the order of its strings (for messages and docs)."""

    def __init__(self, *options):
        super().__init__(set(options))
        self.order = options


# ------------------------------------------------------------- constraints
def _types_of(c):
    """The TOML value types that constraint ``c`` admits."""
    if isinstance(c, Interval):
        return (int,) if c.type is Integral else (int, float)
    if isinstance(c, StrOptions):
        return (str,)
    if isinstance(c, str):
        return {"boolean": (bool,), "random_state": (int,), "array-like": (list,),
                "no_validation": _TOML_TYPES}.get(c, ())
    if isinstance(c, type):
        return tuple(t for t in (bool, str, list, dict) if issubclass(t, c)) or \
            {Integral: (int,), Real: (int, float), tuple: (list,)}.get(c, ())
    return ()


def _has_type(value, t):
    if t is bool or isinstance(value, bool):
        return t is bool and isinstance(value, bool)
    return isinstance(value, t)


def _num(v):
    return f"{v:g}" if isinstance(v, float) else str(v)


def _interval_text(c):
    """``("be", "> 0")`` or ``("lie", "in (0, 1]")`` for an ``Interval``; None when unbounded."""
    left = c.closed in ("left", "both")
    right = c.closed in ("right", "both")
    if c.left is not None and c.right is not None:
        return "lie", (f"in {'[' if left else '('}{_num(c.left)}, {_num(c.right)}"
                       f"{']' if right else ')'}")
    if c.left is not None:
        return "be", f"{'>=' if left else '>'} {_num(c.left)}"
    if c.right is not None:
        return "be", f"{'<=' if right else '<'} {_num(c.right)}"
    return None


def _phrase(c, element):
    """What ``c`` allows beyond its type, as ``(verb, text)``, or None.

    ``element`` is the number interval of the entries of an array (the
    constraints ``Interval`` and ``"array-like"`` together), or None.
    """
    if isinstance(c, Interval):
        return _interval_text(c)
    if isinstance(c, StrOptions):
        opts = list(getattr(c, "order", sorted(c.options)))
        return "be", f'"{opts[0]}"' if len(opts) == 1 else "one of " + ", ".join(opts)
    if c == "random_state":
        return _interval_text(_SEED_RANGE)
    if c == "array-like" and element is not None:
        return "be", "an array of numbers " + _interval_text(element)[1]
    return None


def _satisfied(c, value, element):
    if not any(_has_type(value, t) for t in _types_of(c)):
        return False
    if c == "array-like" and element is not None:
        return all(not isinstance(v, bool) and isinstance(v, (int, float))
                   and element.is_satisfied_by(v) for v in value)
    if c in ("no_validation", "array-like") or isinstance(c, type):
        return True
    return make_constraint(c).is_satisfied_by(value)


@dataclass(frozen=True)
class Key:
    """One key of a pipeline table.

    Parameters
    ----------
    name : str
    constraints : tuple
        What the value may be (any one suffices), in scikit-learn's
        vocabulary; constraints no TOML value can meet (None, classes such
        as ``numpy.random.Generator``) are ignored.
    default : object
        The value when the key is left out (:data:`REQUIRED`: it must be given).
    doc : str
        One-line description.
    check : callable, optional
        ``check(value) -> list of str``: further problems, each the text
        after the key (e.g. ``"[0]: must be a table"``).
    bad_value : str, optional
        Message for a value of the right type out of range, formatted with
        ``value``, ``allowed`` (``"> 0"``) and ``must`` (``"must be > 0"``);
        default ``"{must}; got {value!r}"``.
    """

    name: str
    constraints: tuple
    default: object = None
    doc: str = ""
    check: object = None
    bad_value: str = "{must}; got {value!r}"

    def _element(self):
        intervals = [c for c in self.constraints if isinstance(c, Interval)]
        return intervals[0] if intervals and "array-like" in self.constraints else None

    def type_text(self, article=True):
        """``"an integer or a string"``: the TOML types the key accepts."""
        types = [t for c in self.constraints for t in _types_of(c)]
        names = []
        for t in _TOML_TYPES:
            if t in types and not (t is int and float in types):
                names.append(_TYPE_NAMES[t] if article else _TYPE_NAMES[t].split()[-1])
        return " or ".join(names)

    def allowed(self, verbs=False):
        """What the key allows beyond its types (``"> 0 or an array of numbers > 0"``)."""
        out, last = [], None
        for c in self.constraints:
            p = _phrase(c, self._element())
            if p is not None:
                out.append(p[1] if not verbs or p[0] == last else f"{p[0]} {p[1]}")
                last = p[0]
        return " or ".join(out)

    def problems(self, value):
        """Problems of ``value``, each the text after the key (empty when valid)."""
        types = [t for c in self.constraints for t in _types_of(c)]
        if not any(_has_type(value, t) for t in types):
            return [f": must be {self.type_text()}; got {value!r}"]
        if not any(_satisfied(c, value, self._element()) for c in self.constraints):
            return [": " + self.bad_value.format(value=value, allowed=self.allowed(),
                                                 must="must " + self.allowed(verbs=True))]
        return list(self.check(value)) if self.check is not None else []


def check_table(table, keys, where, report, unknown="unknown key"):
    """Check every entry of the pipeline table ``table`` against ``keys``.

    Parameters
    ----------
    table : dict
    keys : dict
        Key name -> :class:`Key`.
    where : str
        Prefix of the messages, e.g. ``"models[2].settings"``.
    report : callable
        ``report(message, key)``, once per problem.
    unknown : str, default="unknown key"
        What a key not in ``keys`` is called in its message.

    Returns
    -------
    dict
        The entries without a problem (all of ``table`` when it is valid).
    """
    valid = {}
    for name, value in table.items():
        key = keys.get(name)
        found = ([f": {unknown}; allowed: {', '.join(keys)}"] if key is None
                 else key.problems(value))
        for text in found:
            report(f"{where}.{name}{text}", name)
        if not found:
            valid[name] = value
    return valid


def _keys(*keys):
    return {k.name: k for k in keys}


# ------------------------------------------------------------------ tables
NAME_RULE = "letters, digits, '_', '-', '.', '+'"
RUN_KEYS = _keys(
    Key("name", (str,), Default("<file stem>-<YYYYMMDD>"), f"Run name ({NAME_RULE})."),
    Key("output", (str,), "runs", "Directory of the run directory <output>/<name>, relative "
        "to the pipeline file."),
    Key("retries", (NON_NEGATIVE_INT,), 2, "Dask retries per task."),
    Key("seed", (NON_NEGATIVE_INT,), 0, "Default seed of the data sets and their splits."),
    Key("description", (str,), "", "Free text kept in the run record."))
DATASET_KEYS = _keys(
    Key("name", (str,), Default("generator name or file stem"), f"Label ({NAME_RULE})."),
    Key("generator", (str,), REQUIRED, "A registry name (`bsvm-scale datasets list`); give "
        "exactly one of generator and path."),
    Key("path", (str,), REQUIRED, "An HDF5 data set file, relative to the pipeline file."),
    Key("n", (Interval(Integral, 2, None, closed="left"),), Default("the generator's size"),
        "Cases to generate (generators only)."),
    Key("seed", (NON_NEGATIVE_INT,), Default("run.seed"), "Seed of the generator."),
    Key("params", (dict,), {}, "Generator parameters (synthetic generators only)."),
    Key("partitions", (POSITIVE_INT, OneOf("stored")),
        Default("\"stored\" for a file with splits, else 1"), "Seeded random train/test splits, or the file's stored splits."),
    Key("n_train", (Interval(Integral, 2, None, closed="left"), list), REQUIRED,
        "Training cases per split (required with random splits); an array: one data set per "
        "size, named <name>-n<size>."),
    Key("n_test", (POSITIVE_INT,), Default("the rest"), "Test cases per split."),
    Key("split_seed", (NON_NEGATIVE_INT,), Default("seed"), "Seed of the random splits."),
    Key("max_partitions", (POSITIVE_INT,), Default("all"), "With partitions = \"stored\": use the first "
        "ones only."),
    Key("test", (dict,), None, "A common test set drawn once (table datasets.test); the "
        "repetitions train on disjoint draws of a pool of n_train * partitions cases."),
    Key("split", (OneOf("random", "chronological"),), "random", "\"chronological\": one split "
        "in time order (first n_train, next n_test)."))
TEST_KEYS = _keys(
    Key("generator", (str,), Default("the data set's generator"), "A synthetic generator of the same "
        "task."),
    Key("n", (POSITIVE_INT,), REQUIRED, "Test cases."),
    Key("seed", (NON_NEGATIVE_INT,), Default("seed + 1000003"), "Seed of the test set."),
    Key("params", (dict,), {}, "Generator parameters of the test set."))
MODEL_KEYS = _keys(
    Key("kind", (OneOf(*KINDS),), REQUIRED, "Model kind; its estimator parameters are the "
        "rows models.settings (kind).", bad_value="unknown model kind {value!r}; allowed: {allowed}"),
    Key("name", (str,), Default("the kind"), f"Label ({NAME_RULE})."),
    Key("datasets", (list,), Default("every data set of the kind's task"), "Data set names (a name of "
        "several training sizes stands for all of them)."),
    Key("settings", (dict,), {}, "Estimator parameters (rows models.settings (kind))."),
    Key("search", (dict,), {}, f"Evidence search of {', '.join(SEARCH_KEYS)} (rows "
        "models.search (kind))."),
    Key("cv", (dict,), None, f"Cross-validated grid of {', '.join(CV_KINDS)} (rows models.cv)."),
    Key("committee", ("boolean",), False, f"{', '.join(BAYES_KINDS)}: also an evidence-"
        "weighted committee of the starts."),
    Key("sweep", (dict,), None, "One model per value of one settings or search key, named "
        "<name>-<key><value>, e.g. { beta = [0.01, 0.1] }."),
    Key("fix_from", (dict,), None, f"{', '.join(BAYES_KINDS)}: hyperparameters fixed to the "
        "average of another model's on its first partitions, { model = \"B\", partitions = 5 }."),
    Key("warm_start", (str,), None, f"{', '.join(BAYES_KINDS)}: an earlier run's directory; "
        "retrain from its models."),
    Key("evidence_grid", (dict,), None, "btsvc: -ln evidence and test error over a "
        "(kappa0, kappa) grid around the optimum (bsvm_scale.pipeline.run.evidence_grid)."),
    Key("sample_weight", ("boolean",), True, "Fit with the data set's case weights (an "
        "imported --weight column) where the data set has them; false: every case counts "
        "once."))


def _grid_default(name):
    from ...baselines.model_selection import grid_search_cv

    return inspect.signature(grid_search_cv).parameters[name].default


def _box_problems(value):
    ok = len(value) == 2 and all(_has_type(x, float) for x in value) and value[0] <= value[1]
    return [] if ok else [f": must be [low, high] with low <= high; got {value!r}"]


CV_KEYS = _keys(
    Key("folds", (Interval(Integral, 2, None, closed="left"), OneOf("loo")), _grid_default("cv"),
        "Folds of the cross-validation, or \"loo\" (leave-one-out)."),
    Key("coarse_points", (POSITIVE_INT,), _grid_default("coarse_points"),
        "Coarse grid of coarse_points x coarse_points."),
    Key("fine_points", (NON_NEGATIVE_INT,), _grid_default("fine_points"),
        "Fine grid around the best coarse point (0: none)."),
    Key("fine_step", (POSITIVE,), _grid_default("fine_step"), "Spacing of the fine grid "
        "(log10 units)."),
    Key("log10_C", (list,), Default("[-0.5, 2.5] (regression), [0, 3] (classification)"),
        "Box of the coarse grid in log10 C (log10 kappa0 for tsvc).", _box_problems),
    Key("log10_kappa", (list,), Default("[-2.5, 0.5] (regression), [-3, 0] (classification)"),
        "Box of the coarse grid in log10 kappa.", _box_problems),
    Key("random_state", ("random_state",), _grid_default("random_state"),
        "Seed of the fold assignment."),
    Key("loo_below", (Interval(Integral, 2, None, closed="left"),), None,
        "Leave-one-out on training sets of fewer cases."))


GRID_KEYS = _keys(
    Key("points", (IntegerInterval(2, None, closed="left"),), 13,
        "Grid points per axis (points x points fits per partition)."),
    Key("decades_kappa0", (POSITIVE,), 2.0,
        "Half-width of the kappa0 axis around the optimum (decades).",
        bad_value="{must} (decades either side of the optimum); got {value!r}"),
    Key("decades_kappa", (POSITIVE,), 1.5,
        "Half-width of the kappa axis around the optimum (decades).",
        bad_value="{must} (decades either side of the optimum); got {value!r}"),
    Key("partitions", (POSITIVE_INT,), 1, "The grid runs on the first this many partitions."))

FIX_FROM_KEYS = _keys(
    Key("model", (str,), REQUIRED, "Label of the model (same kind, with evidence search) "
        "whose inferred hyperparameters are averaged."),
    Key("partitions", (POSITIVE_INT,), 5, "Average over the first this many partitions."))


# -------------------------------------------------------- estimator rows
def estimator_class(kind):
    """The estimator class of model kind ``kind`` (imported on first use)."""
    module, name = KINDS[kind]
    return getattr(importlib.import_module(module), name)


def _first_sentence(text):
    """``text`` up to its first full stop, colon or semicolon outside
    parentheses, ending in a full stop; reST roles become plain names."""
    text = re.sub(r":\w+:`~?([^`]+)`", r"\1", " ".join(text.split())).replace("``", "`")
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch in "([{") - (ch in ")]}")
        if depth == 0 and ch in ".:;" and (i + 1 == len(text) or text[i + 1] == " ") \
                and not text[:i + 1].endswith(("et al.", "e.g.", "i.e.")):
            return text[:i] + "."
    return text


def _param_docs(cls):
    """First sentence of every parameter's description in the numpydoc
    docstrings of ``cls`` and its bases (the first one found wins)."""
    docs = {}
    for klass in reversed(cls.__mro__):
        doc = inspect.cleandoc(klass.__dict__.get("__doc__") or "")
        m = re.search(r"^Parameters\n-+\n(.*?)(?=^\S[^\n]*\n-+\n|\Z)", doc, re.S | re.M)
        names, text = [], []
        for line in (m.group(1).splitlines() if m else []) + ["END"]:
            if line and not line[0].isspace():
                docs.update({n: _first_sentence(" ".join(text)) for n in names if text})
                names = [n.strip() for n in line.split(" : ")[0].split(",")]
                text = []
            elif line.strip():
                text.append(line.strip())
    return docs


@functools.lru_cache(maxsize=None)
def estimator_keys(kind):
    """The ``settings`` keys of model kind ``kind``: one :class:`Key` per
    parameter of its estimator, with the estimator's
    ``_parameter_constraints``, its ``get_params()`` default and the first
    sentence of its docstring."""
    cls = estimator_class(kind)
    constraints = cls._parameter_constraints
    docs = _param_docs(cls)
    return {name: Key(name, tuple(constraints.get(name, ("no_validation",))), default,
                      docs.get(name, ""))
            for name, default in cls().get_params(deep=False).items()}


def _start_problems(kind):
    allowed = START_KEYS[kind]

    def number(v, k):
        return (_has_type(v, float) or (isinstance(v, list) and all(_has_type(x, float) for x in v))
                or (k == "kappa" and v == PER_INPUT))

    def check(starts):
        if not starts:
            return [": must not be empty"]
        out = []
        for j, st in enumerate(starts):
            if not isinstance(st, dict) or not set(st) <= set(allowed):
                out.append(f"[{j}]: must be a table with keys among {', '.join(sorted(allowed))}; "
                           f"got {st!r}")
            elif not all(number(v, k) for k, v in st.items()):
                out.append(f"[{j}]: values must be numbers (kappa may also be \"{PER_INPUT}\", "
                           "one over the number of inputs)")
        return out

    return check


def _bsvr_bounds_problems(bounds):
    out = []
    for k, b in bounds.items():
        if k not in BSVR_BOUND_KEYS:
            out.append(f".{k}: unknown; allowed: {', '.join(BSVR_BOUND_KEYS)}")
        elif not (isinstance(b, list) and len(b) == 2 and all(_has_type(x, float) for x in b)
                  and b[0] < b[1]):
            out.append(f".{k}: must be [low, high] with low < high; got {b!r}")
    return out


def _gp_bounds_problems(b):
    ok = len(b) == 2 and all(_has_type(x, float) for x in b) and 0 < b[0] < b[1]
    return [] if ok else [f": must be [low, high] with 0 < low < high; got {b!r}"]


@functools.lru_cache(maxsize=None)
def search_keys(kind):
    """The ``search`` keys of model kind ``kind`` (empty: no evidence
    search): its estimator's keys (:func:`estimator_keys`) with the checks
    of starting points and boxes."""
    keys = estimator_keys(kind) if kind in SEARCH_KEYS else {}
    extra = {"starts": _start_problems(kind) if kind in START_KEYS else None,
             "bounds": _bsvr_bounds_problems if kind == "bsvr" else _gp_bounds_problems}
    out = {}
    for name in SEARCH_KEYS.get(kind, ()):
        k = keys[name]
        out[name] = Key(k.name, k.constraints, k.default, k.doc, extra.get(name))
    return out


# ---------------------------------------------------------- the reference
def _rows_of(section, keys):
    return [(section, k.name, k.type_text(article=False), k.allowed(), k.default, k.doc)
            for k in keys.values()]


def schema_table():
    """Every key of a pipeline file as rows ``(section, key, type, allowed,
    default, description)``: ``run``, ``datasets``, ``datasets.test``,
    ``models``, ``models.cv``, then per model kind ``models.search (kind)``
    and ``models.settings (kind)`` (from the estimators themselves).

    Returns
    -------
    list of tuple
    """
    rows = (_rows_of("run", RUN_KEYS) + _rows_of("datasets", DATASET_KEYS)
            + _rows_of("datasets.test", TEST_KEYS) + _rows_of("models", MODEL_KEYS)
            + _rows_of("models.cv", CV_KEYS) + _rows_of("models.evidence_grid", GRID_KEYS)
            + _rows_of("models.fix_from", FIX_FROM_KEYS))
    for kind in KINDS:
        rows += _rows_of(f"models.search ({kind})", search_keys(kind))
        rows += _rows_of(f"models.settings ({kind})", estimator_keys(kind))
    return rows


def _cell(text):
    return text.replace("|", "\\|")


def _toml(value):
    """A default as the TOML text that gives it (``Default`` words as they are)."""
    if isinstance(value, Default):
        return str(value)
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, str):
        return f'`"{value}"`'
    if isinstance(value, dict):
        return "`{ " + ", ".join(f"{k} = {_toml(v).strip('`')}" for k, v in value.items()) + " }`" \
            if value else "`{}`"
    if isinstance(value, (list, tuple)):
        return "`[" + ", ".join(_toml(v).strip("`") for v in value) + "]`"
    return f"`{value!r}`"


def schema_page():
    """The reference page of pipeline-file keys: a title, how the page is made,
    and :func:`schema_markdown` (``bsvm-scale schema --out FILE``)."""
    return ("# Pipeline files: every key\n\n"
            "Generated by `bsvm-scale schema --out docs/reference/pipeline_schema.md` from "
            "`bsvm_scale/pipeline/spec/schema.py` and the estimators' parameter constraints; do not "
            "edit by hand. `docs/reference/pipelines.md` shows a whole file and how it runs.\n\n"
            + schema_markdown())


def schema_markdown():
    """:func:`schema_table` as one Markdown table."""
    lines = ["| section | key | type | allowed | default | description |",
             "| --- | --- | --- | --- | --- | --- |"]
    for section, key, type_, allowed, default, doc in schema_table():
        lines.append(f"| {section} | `{key}` | {type_} | {_cell(allowed)} | "
                     f"{_cell(_toml(default))} | {_cell(doc)} |")
    return "\n".join(lines) + "\n"
