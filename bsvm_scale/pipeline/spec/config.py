"""Pipeline files (TOML): schema, defaults and validation.

A pipeline file has one ``[run]`` table, one or more ``[[datasets]]`` and one
or more ``[[models]]``::

    [run]
    name = "quickstart"        # default: <file stem>-<YYYYMMDD>
    output = "runs"            # run directory = <output>/<name> (relative to the file)
    retries = 2                # dask retries per task
    seed = 0                   # default seed of data and splits

    [[datasets]]
    name = "sinc"              # label (default: generator name or file stem)
    generator = "sinc_silf"    # a registry name (see `bsvm-scale datasets list`) ...
    n = 800
    seed = 0
    params = { beta = 0.3 }    # generator parameters
    # path = "data/x.h5"       # ... or an HDF5 data set file (relative to the pipeline file)
    partitions = 3             # k seeded random train/test splits, or "stored"
    n_train = 400
    n_test = 400               # default: the rest
    split_seed = 1             # default: seed
    max_partitions = 10        # with partitions = "stored": use the first ones only

    [cluster]                  # optional: where to run (see bsvm_scale.pipeline.spec.cluster)
    kind = "local"             # local|address|slurm|pbs|sge|lsf|kubernetes

    [[models]]
    kind = "bsvr"              # bsvr|btsvc|svr|svc|tsvc|gpr|gpc|rvr|rvc
    name = "BSVR"              # label (default: kind)
    datasets = ["sinc"]        # default: every data set of the model's task
    settings = { ard = false } # estimator parameters
    committee = false          # bsvr/btsvc: also an evidence-weighted committee of starts
    sample_weight = true       # fit with the data set's case weights (imported --weight)
    warm_start = "runs/nightly-20261126"  # bsvr/btsvc: retrain from that run's models
    evidence_grid = { points = 13 }       # btsvc: -ln evidence / test error over (kappa0, kappa)
                                          # around the optimum (bsvm_scale.pipeline.run.evidence_grid)
    [models.search]            # bsvr/btsvc/gpr/gpc: n_starts, starts, bounds, beta, random_state
    n_starts = 2
    starts = [{ C = 1.0, kappa = 0.5 }, { C = 10.0, kappa = "1/d" }]  # bsvr/btsvc
    [models.cv]                # svr/svc/tsvc: grid search by cross-validation on the training part
    folds = 5

:func:`load_pipeline` parses and validates the whole file before anything
runs; every problem is reported (all of them, one per line) in one
:class:`PipelineError` naming the key and, where it can be found, the line.
The keys, their types, ranges and defaults are the declarative tables of
:mod:`bsvm_scale.pipeline.spec.schema` (a model's ``settings`` and ``search``
keys come from its estimator's ``_parameter_constraints``);
:func:`schema_table` lists them (``bsvm-scale schema``).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import ClusterSpec, parse_cluster
from .grid import check_evidence_grid
from .schema import (BAYES_KINDS, CV_KEYS, CV_KINDS, DATASET_KEYS, KINDS, MODEL_KEYS, NAME_RULE,
                     PER_INPUT, RUN_KEYS, TASK_OF, check_table, estimator_class, estimator_keys,
                     schema_markdown, schema_table, search_keys)
from .variants import check_fix_from, expand_sizes, expand_sweep, resolve_groups

__all__ = ["PipelineError", "Pipeline", "DatasetSpec", "ModelSpec", "load_pipeline",
           "parse_pipeline", "KINDS", "BAYES_KINDS", "TASK_OF", "schema_table", "schema_markdown"]

#: labels of runs, data sets and models
_NAME = re.compile(r"[A-Za-z0-9_.+-]+")


class PipelineError(ValueError):
    """An invalid pipeline file; ``problems`` lists every problem found."""

    def __init__(self, path, problems):
        self.path = str(path)
        self.problems = list(problems)
        lines = "\n".join(f"  - {p}" for p in self.problems)
        super().__init__(f"invalid pipeline {self.path!r} ({len(self.problems)} problem"
                         f"{'s' if len(self.problems) != 1 else ''}):\n{lines}")


@dataclass
class DatasetSpec:
    label: str
    task: str
    n: int
    generator: str | None = None
    path: str | None = None
    seed: int = 0
    params: dict = field(default_factory=dict)
    partitions: int | str = 1
    n_train: int | None = None
    n_test: int | None = None
    split_seed: int = 0
    max_partitions: int | None = None
    n_features: int | None = None
    test: dict | None = None          # common test set (see variants.py)
    split: str = "random"             # or "chronological" (one split, time order)


@dataclass
class ModelSpec:
    label: str
    kind: str
    datasets: list
    settings: dict = field(default_factory=dict)
    search: dict = field(default_factory=dict)
    cv: dict | None = None
    committee: bool = False
    fix_from: dict | None = None      # protocol A: hyperparameters of another model (variants.py)
    warm_start: str | None = None     # an earlier run's directory: retrain from its models
    evidence_grid: dict | None = None  # btsvc: (kappa0, kappa) grid tasks (evidence_grid.py)
    sample_weight: bool = True        # the data set's case weights (imported --weight) in fit

    @property
    def task(self):
        return TASK_OF[self.kind]

    def estimator_params(self, n_features=None):
        """Constructor parameters: settings plus the search entries that are parameters.

        A start's ``kappa = "1/d"`` (the protocol's second BSVR start) becomes
        ``1 / n_features`` of the data set the task runs on (left as the
        string when ``n_features`` is not given).
        """
        p = dict(self.settings)
        for k, v in self.search.items():
            if k == "bounds" and self.kind in ("gpr", "gpc"):
                p[k] = tuple(float(b) for b in v)
            elif k == "starts":
                p[k] = [{sk: 1.0 / n_features if sv == PER_INPUT and n_features else sv
                         for sk, sv in st.items()} for st in v]
            else:
                p[k] = v
        return p


@dataclass
class Pipeline:
    path: str
    text: str
    name: str
    output: str
    run_dir: str
    retries: int
    seed: int
    datasets: list
    models: list
    description: str = ""
    cluster: ClusterSpec = field(default_factory=ClusterSpec)

    @property
    def digest(self):
        """Hash of the pipeline text (recorded in the run file; a resumed run may use an
        edited file, see :mod:`~bsvm_scale.pipeline.run.fingerprint`)."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]


# --------------------------------------------------------------- line lookup
def _header_lines(lines, table):
    pat = re.compile(r"^\s*\[\[\s*" + re.escape(table) + r"\s*\]\]")
    return [i for i, ln in enumerate(lines) if pat.match(ln)]


def _line_of(lines, table, index, key=None):
    """1-based line of ``key`` in the ``index``-th ``[[table]]`` (or of its header)."""
    if table in ("run", "cluster"):
        heads = [i for i, ln in enumerate(lines)
                 if re.match(r"^\s*\[\s*" + table + r"\s*\]", ln)]
    else:
        heads = _header_lines(lines, table)
    if index >= len(heads):
        return None
    start = heads[index]
    if key is None:
        return start + 1
    pat = re.compile(r"^\s*(\"?)" + re.escape(key) + r"\1\s*=")
    sub = re.compile(r"^\s*\[\s*" + re.escape(table) + r"\." + re.escape(key) + r"\s*\]")
    for i in range(start + 1, len(lines)):
        ln = lines[i]
        if pat.match(ln) or sub.match(ln):
            return i + 1
        if re.match(r"^\s*\[\[", ln) or (re.match(r"^\s*\[[^\[]", ln)
                                        and not re.match(r"^\s*\[\s*" + re.escape(table) + r"\.", ln)):
            break
        # inline tables: key inside settings = { key = ... }
        if re.search(r"[{,]\s*" + re.escape(key) + r"\s*=", ln):
            return i + 1
    return start + 1


# ------------------------------------------------------------------- parsing
def load_pipeline(path, check_files=True):
    """Read and validate the pipeline file ``path``; returns a :class:`Pipeline`."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"pipeline file {str(p)!r} does not exist")
    text = p.read_text(encoding="utf-8")
    return parse_pipeline(text, p, check_files=check_files)


def parse_pipeline(text, path="<pipeline>", check_files=True, today=None):
    """Parse and validate the text of a pipeline file.

    Parameters
    ----------
    text : str
        The TOML text.
    path : str or Path, default="<pipeline>"
        Its file (messages, relative paths, the default run name).
    check_files : bool, default=True
        Also require the data files of real data sets to exist.
    today : str, optional
        ``YYYYMMDD`` of the default run name (default: today).

    Returns
    -------
    Pipeline

    Raises
    ------
    PipelineError
        Listing every problem found, each naming its key and line.
    """
    path = Path(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(path, [f"not valid TOML: {exc}"]) from None
    problems = []
    bad = _reporter(text.splitlines(), problems)
    for key in doc:
        if key not in ("run", "datasets", "models", "cluster"):
            bad(f"unknown top-level key {key!r}; allowed: run, datasets, models, cluster")
    cluster = parse_cluster(doc.get("cluster"), lambda msg, key: bad(msg, "cluster", 0, key))
    run = _run(doc.get("run", {}), path, today, bad)
    datasets, groups = _datasets(doc.get("datasets", []), path, run["seed"], bad, check_files)
    models = _models(doc.get("models", []), datasets, groups, bad)
    if problems:
        raise PipelineError(path, problems)
    base = path.resolve().parent  # relative paths are relative to the pipeline file
    out = Path(run["output"])
    out = out if out.is_absolute() else (base / out).resolve()
    for m in models:  # an earlier run's directory
        if m.warm_start is not None and not Path(m.warm_start).is_absolute():
            m.warm_start = str((base / m.warm_start).resolve())
    return Pipeline(path=str(path), text=text, name=run["name"], output=str(out),
                    run_dir=str(out / run["name"]), retries=int(run["retries"]),
                    seed=int(run["seed"]), datasets=datasets, models=models,
                    description=str(run["description"]), cluster=cluster)


def _reporter(lines, problems):
    """``bad(message, table=None, index=0, key=None)``: record a problem, with
    the line of ``key`` in the ``index``-th ``table`` where it is found."""
    def bad(msg, table=None, index=0, key=None):
        line = _line_of(lines, table, index, key) if table else None
        problems.append(f"{msg}" + (f" (line {line})" if line else ""))

    return bad


def _at(bad, table, i):
    """``report(message, key)`` for the ``i``-th ``table`` (:func:`check_table`)."""
    return lambda msg, key=None: bad(msg, table, i, key)


def _run(run, path, today, bad):
    """The ``[run]`` table with its defaults (:data:`RUN_KEYS`); the name
    defaults to ``<file stem>-<today>``."""
    if not isinstance(run, dict):
        bad("run must be a table [run]")
        run = {}
    valid = check_table(run, RUN_KEYS, "run", _at(bad, "run", 0))
    out = {k: valid.get(k, key.default) for k, key in RUN_KEYS.items()}
    out["name"] = valid.get("name", f"{path.stem}-{today or _dt.date.today().strftime('%Y%m%d')}")
    if not _NAME.fullmatch(out["name"]):
        bad(f"run.name: {out['name']!r} must be a non-empty name of {NAME_RULE}", "run", 0, "name")
    return out


def _unique(spec, seen, bad, table, i):
    """True (and ``spec.label`` added to ``seen``) for a parsed spec with a new label."""
    if spec is None:
        return False
    if spec.label in seen:
        what = "data set" if table == "datasets" else "model"
        bad(f"{table}[{i}].name: duplicate {what} name {spec.label!r}", table, i, "name")
        return False
    seen.add(spec.label)
    return True


def _tables(raw, table, bad):
    """The ``[[table]]`` entries (at least one required), as ``(index, table)``."""
    if not isinstance(raw, list) or not raw:
        bad(f"at least one [[{table}]] table is required")
        return []
    out = []
    for i, t in enumerate(raw):
        if isinstance(t, dict):
            out.append((i, t))
        else:
            bad(f"{table}[{i}]: must be a table [[{table}]]; got {t!r}")
    return out


# ----------------------------------------------------------------- datasets
def _datasets(raw, path, seed, bad, check_files):
    """The data set specs of the ``[[datasets]]`` tables (one per training
    size) and the groups of several sizes (name -> member labels)."""
    specs, labels, groups = [], set(), {}
    for i, d in _tables(raw, "datasets", bad):
        where = f"datasets[{i}]"
        ok = len(check_table(d, DATASET_KEYS, where, _at(bad, "datasets", i))) == len(d)
        if ("generator" in d) == ("path" in d):
            bad(f"{where}: give exactly one of 'generator' or 'path'", "datasets", i)
            continue
        if not ok:
            continue
        base, tables = expand_sizes(d, i, where, bad)  # one table per training size
        for dd in tables:
            spec = _dataset_spec(dd, i, where, path, seed, bad, check_files)
            if _unique(spec, labels, bad, "datasets", i):
                groups.setdefault(base, []).append(spec.label)
                specs.append(spec)
    return specs, groups


def _dataset_spec(d, i, where, path, seed, bad, check_files):
    """The :class:`DatasetSpec` of one ``[[datasets]]`` table of one training
    size (its keys already checked), or None after a problem."""
    at = _at(bad, "datasets", i)
    src = (_generator_source(d, where, at, check_files) if "generator" in d
           else _file_source(d, where, path, at))
    if src is None:
        return None
    if src["n"] < 2:
        at(f"{where}.n: must be at least 2; got {src['n']}", "n")
        return None
    if not _NAME.fullmatch(src["label"]):
        at(f"{where}.name: {src['label']!r} must be {NAME_RULE}", "name")
        return None
    partitions = d.get("partitions", "stored" if src["n_splits"] else 1)
    if not _partitions_ok(d, partitions, src, where, at):
        return None
    ds_seed = d.get("seed", seed)
    return DatasetSpec(label=src["label"], task=src["task"], n=int(src["n"]),
                       generator=d.get("generator"), path=src["path"], seed=int(ds_seed),
                       params=dict(d.get("params", {})), partitions=partitions,
                       n_train=d.get("n_train"), n_test=d.get("n_test"),
                       split_seed=int(d.get("split_seed", ds_seed)),
                       max_partitions=d.get("max_partitions"), n_features=src["n_features"],
                       test=d.get("test"), split=d.get("split", "random"))


def _generator_source(d, where, at, check_files):
    """Task, size and label of a generated data set, or None after a problem."""
    from ...datasets import dataset_params, get_entry, real_path

    gen = d["generator"]
    try:
        entry = get_entry(gen)
    except ValueError as exc:
        at(f"{where}.generator: {exc}", "generator")
        return None
    n = d.get("n", entry.n)
    problem = None
    if entry.kind == "real" and n > entry.n:
        problem = f"{where}.n: {gen!r} has only {entry.n} cases; got n={n}", "n"
    elif entry.kind == "real" and check_files and not real_path(gen).exists():
        problem = (f"{where}.generator: the data file of {gen!r} is missing ({real_path(gen)})",
                   "generator")
    elif d.get("params") and entry.kind == "synthetic":
        unknown = sorted(set(d["params"]) - set(dataset_params(gen)))
        if unknown:
            problem = (f"{where}.params: unknown parameter(s) {', '.join(unknown)} for {gen!r}; "
                       f"accepted: {', '.join(dataset_params(gen))}", "params")
    elif d.get("params"):
        problem = f"{where}.params: real data set {gen!r} takes no parameters", "params"
    if problem is not None:
        at(*problem)
        return None
    return {"task": entry.task, "n": n, "label": d.get("name", gen), "path": None,
            "n_splits": 0, "n_features": None}


def _file_source(d, where, path, at):
    """Task, size, label and stored splits of a data set file, or None after a problem."""
    from ...datasets import dataset_info

    fp = Path(d["path"])
    if not fp.is_absolute():
        fp = path.resolve().parent / fp
    if "n" in d or "params" in d:
        at(f"{where}: 'n' and 'params' apply to generators only, not to 'path'",
           "n" if "n" in d else "params")
        return None
    if not fp.exists():
        at(f"{where}.path: data file {str(fp)!r} does not exist", "path")
        return None
    try:
        info = dataset_info(fp)
    except (ValueError, OSError) as exc:
        at(f"{where}.path: {exc}", "path")
        return None
    return {"task": info["task"], "n": int(info["n_samples"]), "label": d.get("name", fp.stem),
            "path": str(fp), "n_splits": int(info["n_splits"]),
            "n_features": int(info["n_features"])}


def _partitions_ok(d, partitions, src, where, at):
    """Whether the splits of a data set are possible: stored splits need a
    file that has them; random splits need ``n_train`` and enough cases."""
    n_train, n_test, n = d.get("n_train"), d.get("n_test"), src["n"]
    if partitions == "stored":
        problem = _stored_splits_problem(src, n_train, n_test, where)
    elif n_train is None:
        problem = f"{where}.n_train: required with random partitions", None
    else:
        nt = n - n_train if n_test is None else n_test
        problem = None if "test" in d or (nt >= 1 and n_train + nt <= n) else (
            f"{where}: n_train + n_test = {n_train} + {nt} = {n_train + nt} exceeds the {n} "
            "cases of the data set (n_train)", "n_train")
    if problem is not None:
        at(*problem)
    return problem is None


def _stored_splits_problem(src, n_train, n_test, where):
    """``(message, key)`` when ``partitions = "stored"`` is impossible, else None."""
    if src["path"] is None:
        return (f"{where}.partitions: \"stored\" needs a data set file ('path'); use an integer "
                "for generated data", "partitions")
    if not src["n_splits"]:
        return f"{where}.partitions: the file {src['path']!r} holds no stored splits", "partitions"
    if n_train is not None or n_test is not None:
        return (f"{where}: n_train/n_test cannot be combined with partitions = \"stored\"",
                "n_train" if n_train is not None else "n_test")
    return None


# ------------------------------------------------------------------- models
def _models(raw, datasets, groups, bad):
    """The model specs of the ``[[models]]`` tables (one per swept value)."""
    models, labels = [], set()
    by_label = {d.label: d for d in datasets}
    for i, m in _tables(raw, "models", bad):
        for mm in expand_sweep(m, i, bad):  # one table per swept value
            spec = _model_spec(resolve_groups(mm, groups), i, by_label, bad)
            if _unique(spec, labels, bad, "models", i):
                models.append(spec)
    check_fix_from(models, bad)
    return models


def _model_spec(m, i, by_label, bad):
    """The :class:`ModelSpec` of one ``[[models]]`` table, or None after a problem."""
    where, at = f"models[{i}]", _at(bad, "models", i)
    ok = len(check_table(m, MODEL_KEYS, where, at)) == len(m)
    if "kind" not in m:
        at(f"{where}.kind: required (one of {', '.join(KINDS)})")
        return None
    kind = m["kind"]
    if kind not in KINDS or not ok:
        return None
    label = m.get("name", kind)
    if not _NAME.fullmatch(label):
        at(f"{where}.name: {label!r} must be {NAME_RULE}", "name")
        return None
    settings, search = dict(m.get("settings", {})), dict(m.get("search", {}))
    ok = _estimator_tables(kind, settings, search, where, at)
    ok = _cv_ok(kind, m.get("cv"), where, at) and ok
    ok = _bayes_only(kind, m, where, at) and ok
    names = _model_datasets(kind, m.get("datasets"), by_label, where, at)
    grid = check_evidence_grid(m.get("evidence_grid"), kind, settings, m.get("fix_from"), where,
                               lambda msg: bad(msg, "models", i, "evidence_grid"))
    ok = ok and names is not None and (grid is not None or "evidence_grid" not in m)
    if not ok:
        return None
    return ModelSpec(label=label, kind=kind, datasets=list(names), settings=settings,
                     search=search, cv=dict(m["cv"]) if m.get("cv") is not None else None,
                     committee=bool(m.get("committee", False)), fix_from=m.get("fix_from"),
                     warm_start=m.get("warm_start"), evidence_grid=grid,
                     sample_weight=bool(m.get("sample_weight", True)))


def _estimator_tables(kind, settings, search, where, at):
    """Check ``settings`` (the estimator's parameters) and ``search`` (those
    of its evidence search) of a model of ``kind``; True when both are valid."""
    cls = estimator_class(kind).__name__
    ok = len(check_table(settings, estimator_keys(kind), f"{where}.settings", at,
                         unknown=f"unknown parameter of {cls} ({kind})")) == len(settings)
    if search and not search_keys(kind):
        at(f"{where}.search: {kind} has no evidence search; use settings (or cv for "
           f"{', '.join(CV_KINDS)})", "search")
        ok = False
    elif search:
        ok = len(check_table(search, search_keys(kind), f"{where}.search", at,
                             unknown=f"unknown key for {kind}")) == len(search) and ok
    for key in search:
        if key in settings:
            at(f"{where}: {key!r} is given both in settings and in search", key)
            ok = False
    return _kappa0_keys_ok(kind, settings, search, where, at) and ok


def _kappa0_keys_ok(kind, settings, search, where, at):
    """A BSVR ``kappa0`` start or ``ln_kappa0`` bound needs ``kappa0 = "evidence"``."""
    if kind != "bsvr" or settings.get("kappa0") == "evidence":
        return True
    starts = search.get("starts") if isinstance(search.get("starts"), list) else []
    bounds = search.get("bounds") if isinstance(search.get("bounds"), dict) else {}
    if any(isinstance(st, dict) and "kappa0" in st for st in starts) or "ln_kappa0" in bounds:
        at(f"{where}.search: a kappa0 start or an ln_kappa0 bound needs settings.kappa0 = "
           "\"evidence\" (kappa0 is otherwise fixed)", "search")
        return False
    return True


def _cv_ok(kind, cv, where, at):
    """Check the ``cv`` table of a model of ``kind`` (None: absent)."""
    if cv is None:
        return True
    if kind not in CV_KINDS:
        at(f"{where}.cv: only {', '.join(CV_KINDS)} take a cv grid", "cv")
        return False
    return len(check_table(cv, CV_KEYS, f"{where}.cv", at)) == len(cv)


def _bayes_only(kind, m, where, at):
    """``warm_start`` and ``committee`` apply to the Bayesian SVMs only."""
    ok = True
    if m.get("warm_start") is not None and kind not in BAYES_KINDS:
        at(f"{where}.warm_start: only {', '.join(BAYES_KINDS)} retrain from an earlier run",
           "warm_start")
        ok = False
    if m.get("committee", False) and kind not in BAYES_KINDS:
        at(f"{where}.committee: only {', '.join(BAYES_KINDS)} form committees of starts",
           "committee")
        ok = False
    return ok


def _model_datasets(kind, names, by_label, where, at):
    """The data sets a model of ``kind`` runs on (default: every one of its
    task), or None after a problem."""
    task = TASK_OF[kind]
    if names is None:
        names = [d for d, spec in by_label.items() if spec.task == task]
        if not names and by_label:
            at(f"{where}: no {task} data set for {kind}", "kind")
            return None
        return names
    if not names:
        at(f"{where}.datasets: must name at least one data set (or be left out: every {task} "
           "data set)", "datasets")
        return None
    ok = True
    for dn in names:
        if not isinstance(dn, str) or dn not in by_label:
            at(f"{where}.datasets: unknown data set {dn!r}; defined: "
               f"{', '.join(sorted(by_label)) or 'none'}", "datasets")
            ok = False
        elif by_label[dn].task != task:
            at(f"{where}.datasets: {dn!r} is a {by_label[dn].task} data set but {kind} is for "
               f"{task}", "datasets")
            ok = False
    return names if ok else None
