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

    [cluster]                  # optional: where to run (see bsvm_scale.pipeline.cluster)
    kind = "local"             # local|address|slurm|pbs|sge|lsf|kubernetes

    [[models]]
    kind = "bsvr"              # bsvr|btsvc|svr|svc|tsvc|gpr|gpc|rvr|rvc
    name = "BSVR"              # label (default: kind)
    datasets = ["sinc"]        # default: every data set of the model's task
    settings = { ard = false } # estimator parameters
    committee = false          # bsvr/btsvc: also an evidence-weighted committee of starts
    warm_start = "runs/nightly-20261126"  # bsvr/btsvc: retrain from that run's models
    evidence_grid = { points = 13 }       # btsvc: -ln evidence / test error over (kappa0, kappa)
                                          # around the optimum (bsvm_scale.pipeline.evidence_grid)
    [models.search]            # bsvr/btsvc/gpr/gpc: n_starts, starts, bounds, beta, random_state
    n_starts = 2
    starts = [{ C = 1.0, kappa = 0.5 }, { C = 10.0, kappa = "1/d" }]  # bsvr/btsvc
    [models.cv]                # svr/svc/tsvc: grid search by cross-validation on the training part
    folds = 5

:func:`load_pipeline` parses and validates the whole file before anything
runs; every problem is reported (all of them, one per line) in one
:class:`PipelineError` naming the key and, where it can be found, the line.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from .cluster import ClusterSpec, parse_cluster
from .evidence_grid import check_evidence_grid
from .variants import check_fix_from, expand_sizes, expand_sweep, resolve_groups

__all__ = ["PipelineError", "Pipeline", "DatasetSpec", "ModelSpec", "load_pipeline",
           "parse_pipeline", "KINDS", "BAYES_KINDS", "TASK_OF"]

#: model kind -> (module, class name)
KINDS = {
    "bsvr": ("bsvm_scale.models.bsvr", "BayesianSVR"),
    "btsvc": ("bsvm_scale.models.btsvc", "BayesianSVC"),
    "svr": ("bsvm_scale.baselines.svm", "SVR"),
    "svc": ("bsvm_scale.baselines.svm", "SVC"),
    "tsvc": ("bsvm_scale.baselines.svm", "TSVC"),
    "gpr": ("bsvm_scale.baselines.gp", "GPR"),
    "gpc": ("bsvm_scale.baselines.gpc", "GPC"),
    "rvr": ("bsvm_scale.baselines.rvm", "RVR"),
    "rvc": ("bsvm_scale.baselines.rvm", "RVC"),
    # scikit-learn as external references (bsvm_scale/pipeline/external.py)
    "sk_svr": ("bsvm_scale.pipeline.external", "SkSVR"),
    "sk_svc": ("bsvm_scale.pipeline.external", "SkSVC"),
    "sk_gpr": ("bsvm_scale.pipeline.external", "SkGPR"),
    "sk_gpc": ("bsvm_scale.pipeline.external", "SkGPC"),
}
TASK_OF = {"bsvr": "regression", "svr": "regression", "gpr": "regression", "rvr": "regression",
           "btsvc": "classification", "svc": "classification", "tsvc": "classification",
           "gpc": "classification", "rvc": "classification",
           "sk_svr": "regression", "sk_gpr": "regression",
           "sk_svc": "classification", "sk_gpc": "classification"}
#: kinds run as one task per optimiser start
BAYES_KINDS = ("bsvr", "btsvc")

RUN_KEYS = {"name": str, "output": str, "retries": int, "seed": int, "description": str}
DATASET_KEYS = {"name": str, "generator": str, "path": str, "n": int, "seed": int,
                "params": dict, "partitions": (int, str), "n_train": (int, list), "n_test": int,
                "split_seed": int, "max_partitions": int, "test": dict, "split": str}
MODEL_KEYS = {"kind": str, "name": str, "datasets": list, "settings": dict, "search": dict,
              "cv": dict, "committee": bool, "sweep": dict, "fix_from": dict, "warm_start": str,
              "evidence_grid": dict}
SEARCH_KEYS = {
    "bsvr": {"n_starts": int, "starts": list, "bounds": dict, "beta": (int, float),
             "random_state": int},
    "btsvc": {"n_starts": int, "starts": list, "random_state": int},
    "gpr": {"n_starts": int, "bounds": list, "random_state": int},
    "gpc": {"n_starts": int, "bounds": list, "random_state": int},
}
START_KEYS = {"bsvr": {"C", "epsilon", "kappa", "kappa_b"}, "btsvc": {"kappa0", "kappa", "kappa_b"}}
#: a start's kappa given as one over the number of inputs of the task's data set
PER_INPUT = "1/d"
CV_KEYS = {"folds": (int, str), "coarse_points": int, "fine_points": int,
           "fine_step": (int, float), "log10_C": list, "log10_kappa": list, "random_state": int,
           "loo_below": int}
CV_KINDS = ("svr", "svc", "tsvc", "sk_svr", "sk_svc")
BSVR_BOUND_KEYS = {"ln_C", "ln_epsilon", "ln_kappa", "ln_kappa_b"}


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
        edited file, see :mod:`~bsvm_scale.pipeline.fingerprint`)."""
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


def _type_name(t):
    if isinstance(t, tuple):
        return " or ".join(_type_name(x) for x in t)
    return {str: "a string", int: "an integer", float: "a number", bool: "true/false",
            list: "an array", dict: "a table"}[t]


def _is(value, t):
    ts = t if isinstance(t, tuple) else (t,)
    for x in ts:
        if x is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if x is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if x not in (int, float) and isinstance(value, x):
            return True
    return False


# ------------------------------------------------------------------- parsing
def load_pipeline(path, check_files=True):
    """Read and validate the pipeline file ``path``; returns a :class:`Pipeline`."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"pipeline file {str(p)!r} does not exist")
    text = p.read_text(encoding="utf-8")
    return parse_pipeline(text, p, check_files=check_files)


def parse_pipeline(text, path="<pipeline>", check_files=True, today=None):
    path = Path(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise PipelineError(path, [f"not valid TOML: {exc}"]) from None
    lines = text.splitlines()
    problems = []

    def bad(msg, table=None, index=0, key=None):
        line = _line_of(lines, table, index, key) if table else None
        problems.append(f"{msg}" + (f" (line {line})" if line else ""))

    for key in doc:
        if key not in ("run", "datasets", "models", "cluster"):
            bad(f"unknown top-level key {key!r}; allowed: run, datasets, models, cluster")
    cluster = parse_cluster(doc.get("cluster"), lambda msg, key: bad(msg, "cluster", 0, key))

    # -- [run]
    run = doc.get("run", {})
    if not isinstance(run, dict):
        bad("run must be a table [run]")
        run = {}
    for key, val in run.items():
        if key not in RUN_KEYS:
            bad(f"run.{key}: unknown key; allowed: {', '.join(RUN_KEYS)}", "run", 0, key)
        elif not _is(val, RUN_KEYS[key]):
            bad(f"run.{key}: must be {_type_name(RUN_KEYS[key])}; got {val!r}", "run", 0, key)
    today = today or _dt.date.today().strftime("%Y%m%d")
    name = run.get("name") if isinstance(run.get("name"), str) else f"{path.stem}-{today}"
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", name or ""):
        bad(f"run.name: {name!r} must be a non-empty name of letters, digits, '_', '-', '.', '+'",
            "run", 0, "name")
    output = run.get("output") if isinstance(run.get("output"), str) else "runs"
    retries = run.get("retries", 2) if _is(run.get("retries", 2), int) else 2
    if retries < 0:
        bad("run.retries: must be >= 0", "run", 0, "retries")
    seed = run.get("seed", 0) if _is(run.get("seed", 0), int) else 0

    # -- [[datasets]]
    raw_ds = doc.get("datasets", [])
    if not isinstance(raw_ds, list) or not raw_ds:
        bad("at least one [[datasets]] table is required")
        raw_ds = []
    datasets = []
    labels = set()
    groups = {}
    for i, d in enumerate(raw_ds):
        where = f"datasets[{i}]"
        ok = True
        for key, val in d.items():
            if key not in DATASET_KEYS:
                bad(f"{where}.{key}: unknown key; allowed: {', '.join(DATASET_KEYS)}",
                    "datasets", i, key)
                ok = False
            elif not _is(val, DATASET_KEYS[key]):
                bad(f"{where}.{key}: must be {_type_name(DATASET_KEYS[key])}; got {val!r}",
                    "datasets", i, key)
                ok = False
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
                datasets.append(spec)

    # -- [[models]]
    raw_models = doc.get("models", [])
    if not isinstance(raw_models, list) or not raw_models:
        bad("at least one [[models]] table is required")
        raw_models = []
    models = []
    mlabels = set()
    by_label = {d.label: d for d in datasets}
    for i, m in enumerate(raw_models):
        for mm in expand_sweep(m, i, bad):  # one table per swept value
            spec = _model_spec(resolve_groups(mm, groups), i, by_label, labels, bad)
            if _unique(spec, mlabels, bad, "models", i):
                models.append(spec)
    check_fix_from(models, bad)

    if problems:
        raise PipelineError(path, problems)
    out = Path(output)
    if not out.is_absolute():
        out = (path.resolve().parent / out).resolve()
    for m in models:  # an earlier run's directory, relative to the pipeline file
        if m.warm_start is not None and not Path(m.warm_start).is_absolute():
            m.warm_start = str((path.resolve().parent / m.warm_start).resolve())
    return Pipeline(path=str(path), text=text, name=name, output=str(out),
                    run_dir=str(out / name), retries=int(retries), seed=int(seed),
                    datasets=datasets, models=models, description=str(run.get("description", "")),
                    cluster=cluster)


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


def _dataset_spec(d, i, where, path, seed, bad, check_files):
    from ..datasets import dataset_info, get_entry

    ds_seed = d.get("seed", seed)
    if ds_seed < 0:
        bad(f"{where}.seed: must be >= 0", "datasets", i, "seed")
        return None
    n_stored_splits = 0
    n_features = None
    if "generator" in d:
        try:
            entry = get_entry(d["generator"])
        except ValueError as exc:
            bad(f"{where}.generator: {exc}", "datasets", i, "generator")
            return None
        task = entry.task
        n = d.get("n", entry.n)
        label = d.get("name", d["generator"])
        if entry.kind == "real" and n > entry.n:
            bad(f"{where}.n: {d['generator']!r} has only {entry.n} cases; got n={n}",
                "datasets", i, "n")
            return None
        if entry.kind == "real":
            from ..datasets import real_path
            if check_files and not real_path(d["generator"]).exists():
                bad(f"{where}.generator: the data file of {d['generator']!r} is missing "
                    f"({real_path(d['generator'])})", "datasets", i, "generator")
                return None
        if d.get("params") and entry.kind == "synthetic":
            from ..datasets import dataset_params
            unknown = sorted(set(d["params"]) - set(dataset_params(d["generator"])))
            if unknown:
                bad(f"{where}.params: unknown parameter(s) {', '.join(unknown)} for "
                    f"{d['generator']!r}; accepted: {', '.join(dataset_params(d['generator']))}",
                    "datasets", i, "params")
                return None
        elif d.get("params"):
            bad(f"{where}.params: real data set {d['generator']!r} takes no parameters",
                "datasets", i, "params")
            return None
        file_path = None
    else:
        fp = Path(d["path"])
        if not fp.is_absolute():
            fp = path.resolve().parent / fp
        file_path = str(fp)
        label = d.get("name", fp.stem)
        if "n" in d or "params" in d:
            bad(f"{where}: 'n' and 'params' apply to generators only, not to 'path'",
                "datasets", i, "n" if "n" in d else "params")
            return None
        if not fp.exists():
            bad(f"{where}.path: data file {str(fp)!r} does not exist", "datasets", i, "path")
            return None
        try:
            info = dataset_info(fp)
        except (ValueError, OSError) as exc:
            bad(f"{where}.path: {exc}", "datasets", i, "path")
            return None
        task, n = info["task"], int(info["n_samples"])
        n_stored_splits = int(info["n_splits"])
        n_features = int(info["n_features"])
    if n < 2:
        bad(f"{where}.n: must be at least 2; got {n}", "datasets", i, "n")
        return None
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", label):
        bad(f"{where}.name: {label!r} must be letters, digits, '_', '-', '.', '+'",
            "datasets", i, "name")
        return None
    partitions = d.get("partitions", "stored" if n_stored_splits else 1)
    n_train, n_test = d.get("n_train"), d.get("n_test")
    if isinstance(partitions, str):
        if partitions != "stored":
            bad(f"{where}.partitions: must be a positive integer or \"stored\"; got {partitions!r}",
                "datasets", i, "partitions")
            return None
        if file_path is None:
            bad(f"{where}.partitions: \"stored\" needs a data set file ('path'); use an integer "
                "for generated data", "datasets", i, "partitions")
            return None
        if not n_stored_splits:
            bad(f"{where}.partitions: the file {file_path!r} holds no stored splits",
                "datasets", i, "partitions")
            return None
        if n_train is not None or n_test is not None:
            bad(f"{where}: n_train/n_test cannot be combined with partitions = \"stored\"",
                "datasets", i, "n_train" if n_train is not None else "n_test")
            return None
    else:
        if partitions < 1:
            bad(f"{where}.partitions: must be >= 1; got {partitions}", "datasets", i, "partitions")
            return None
        if n_train is None:
            bad(f"{where}.n_train: required with random partitions", "datasets", i)
            return None
        if n_train < 2:
            bad(f"{where}.n_train: must be >= 2; got {n_train}", "datasets", i, "n_train")
            return None
        nt = n - n_train if n_test is None else n_test
        if n_test is not None and n_test < 1:
            bad(f"{where}.n_test: must be >= 1; got {n_test}", "datasets", i, "n_test")
            return None
        if "test" not in d and (nt < 1 or n_train + nt > n):
            bad(f"{where}: n_train + n_test = {n_train} + {nt} = {n_train + nt} exceeds the "
                f"{n} cases of the data set (n_train)", "datasets", i, "n_train")
            return None
    mp = d.get("max_partitions")
    if mp is not None and mp < 1:
        bad(f"{where}.max_partitions: must be >= 1", "datasets", i, "max_partitions")
        return None
    split_seed = d.get("split_seed", ds_seed)
    if split_seed < 0:
        bad(f"{where}.split_seed: must be >= 0", "datasets", i, "split_seed")
        return None
    return DatasetSpec(label=label, task=task, n=int(n), generator=d.get("generator"),
                       path=file_path, seed=int(ds_seed), params=dict(d.get("params", {})),
                       partitions=partitions, n_train=n_train, n_test=n_test,
                       split_seed=int(split_seed), max_partitions=mp, n_features=n_features,
                       test=d.get("test"), split=d.get("split", "random"))


def _model_spec(m, i, by_label, labels, bad):
    import importlib

    where = f"models[{i}]"
    ok = True
    for key, val in m.items():
        if key not in MODEL_KEYS:
            bad(f"{where}.{key}: unknown key; allowed: {', '.join(MODEL_KEYS)}", "models", i, key)
            ok = False
        elif not _is(val, MODEL_KEYS[key]):
            bad(f"{where}.{key}: must be {_type_name(MODEL_KEYS[key])}; got {val!r}",
                "models", i, key)
            ok = False
    if "kind" not in m:
        bad(f"{where}.kind: required (one of {', '.join(KINDS)})", "models", i)
        return None
    kind = m["kind"]
    if not isinstance(kind, str) or kind not in KINDS:
        bad(f"{where}.kind: unknown model kind {kind!r}; allowed: {', '.join(KINDS)}",
            "models", i, "kind")
        return None
    if not ok:
        return None
    label = m.get("name", kind)
    if not re.fullmatch(r"[A-Za-z0-9_.+-]+", label):
        bad(f"{where}.name: {label!r} must be letters, digits, '_', '-', '.', '+'",
            "models", i, "name")
        return None
    mod, cls = KINDS[kind]
    params = set(getattr(importlib.import_module(mod), cls)().get_params())
    settings = dict(m.get("settings", {}))
    for key in settings:
        if key not in params:
            bad(f"{where}.settings.{key}: unknown parameter of {cls} ({kind}); allowed: "
                f"{', '.join(sorted(params))}", "models", i, key)
            ok = False
    search = dict(m.get("search", {}))
    if search:
        allowed = SEARCH_KEYS.get(kind)
        if allowed is None:
            bad(f"{where}.search: {kind} has no evidence search; use settings (or cv for "
                f"{', '.join(CV_KINDS)})", "models", i, "search")
            ok = False
        else:
            for key, val in search.items():
                if key not in allowed:
                    bad(f"{where}.search.{key}: unknown key for {kind}; allowed: "
                        f"{', '.join(allowed)}", "models", i, key)
                    ok = False
                elif not _is(val, allowed[key]):
                    bad(f"{where}.search.{key}: must be {_type_name(allowed[key])}; got {val!r}",
                        "models", i, key)
                    ok = False
            if ok and "starts" in search:
                if not search["starts"]:
                    bad(f"{where}.search.starts: must not be empty", "models", i, "starts")
                    ok = False
                for j, st in enumerate(search["starts"]):
                    if not isinstance(st, dict) or not set(st) <= START_KEYS[kind]:
                        bad(f"{where}.search.starts[{j}]: must be a table with keys among "
                            f"{', '.join(sorted(START_KEYS[kind]))}; got {st!r}",
                            "models", i, "starts")
                        ok = False
                    elif not all(_is(v, float) or (isinstance(v, list) and all(_is(x, float) for x in v))
                                 or (k == "kappa" and v == PER_INPUT) for k, v in st.items()):
                        bad(f"{where}.search.starts[{j}]: values must be numbers (kappa may "
                            f"also be \"{PER_INPUT}\", one over the number of inputs)", "models",
                            i, "starts")
                        ok = False
            if ok and "n_starts" in search and search["n_starts"] < 1:
                bad(f"{where}.search.n_starts: must be >= 1", "models", i, "n_starts")
                ok = False
            if ok and kind == "bsvr" and "bounds" in search:
                for bk, bv in search["bounds"].items():
                    if bk not in BSVR_BOUND_KEYS:
                        bad(f"{where}.search.bounds.{bk}: unknown; allowed: "
                            f"{', '.join(sorted(BSVR_BOUND_KEYS))}", "models", i, "bounds")
                        ok = False
                    elif not (isinstance(bv, list) and len(bv) == 2 and all(_is(x, float) for x in bv)
                              and bv[0] < bv[1]):
                        bad(f"{where}.search.bounds.{bk}: must be [low, high] with low < high",
                            "models", i, "bounds")
                        ok = False
            if ok and kind in ("gpr", "gpc") and "bounds" in search:
                b = search["bounds"]
                if not (len(b) == 2 and all(_is(x, float) for x in b) and 0 < b[0] < b[1]):
                    bad(f"{where}.search.bounds: must be [low, high] with 0 < low < high",
                        "models", i, "bounds")
                    ok = False
            if ok and kind == "bsvr" and "beta" in search and not 0 < search["beta"] <= 1:
                bad(f"{where}.search.beta: must lie in (0, 1]", "models", i, "beta")
                ok = False
    for key in search:
        if key in settings:
            bad(f"{where}: {key!r} is given both in settings and in search", "models", i, key)
            ok = False
    cv = m.get("cv")
    if cv is not None:
        if kind not in CV_KINDS:
            bad(f"{where}.cv: only {', '.join(CV_KINDS)} take a cv grid", "models", i, "cv")
            ok = False
        else:
            for key, val in cv.items():
                if key not in CV_KEYS:
                    bad(f"{where}.cv.{key}: unknown key; allowed: {', '.join(CV_KEYS)}",
                        "models", i, key)
                    ok = False
                elif not _is(val, CV_KEYS[key]):
                    bad(f"{where}.cv.{key}: must be {_type_name(CV_KEYS[key])}; got {val!r}",
                        "models", i, key)
                    ok = False
                elif key in ("log10_C", "log10_kappa") and not (
                        len(val) == 2 and all(_is(x, float) for x in val) and val[0] <= val[1]):
                    bad(f"{where}.cv.{key}: must be [low, high]", "models", i, key)
                    ok = False
                elif key == "folds" and (val != "loo" if isinstance(val, str) else val < 2):
                    bad(f"{where}.cv.folds: must be an integer >= 2 or \"loo\"; got {val!r}",
                        "models", i, key)
                    ok = False
                elif key == "loo_below" and val < 2:
                    bad(f"{where}.cv.loo_below: must be >= 2; got {val!r}", "models", i, key)
                    ok = False
    if m.get("warm_start") is not None and kind not in BAYES_KINDS:
        bad(f"{where}.warm_start: only {', '.join(BAYES_KINDS)} retrain from an earlier run",
            "models", i, "warm_start")
    committee = m.get("committee", False)
    if committee and kind not in BAYES_KINDS:
        bad(f"{where}.committee: only {', '.join(BAYES_KINDS)} form committees of starts",
            "models", i, "committee")
        ok = False
    names = m.get("datasets")
    if names is None:
        names = [d for d, spec in by_label.items() if spec.task == TASK_OF[kind]]
        if not names and by_label:
            bad(f"{where}: no {TASK_OF[kind]} data set for {kind}", "models", i, "kind")
            ok = False
    elif not names:
        bad(f"{where}.datasets: must name at least one data set (or be left out: every "
            f"{TASK_OF[kind]} data set)", "models", i, "datasets")
        ok = False
    else:
        for dn in names:
            if not isinstance(dn, str) or dn not in labels:
                bad(f"{where}.datasets: unknown data set {dn!r}; defined: "
                    f"{', '.join(sorted(labels)) or 'none'}", "models", i, "datasets")
                ok = False
            elif dn in by_label and by_label[dn].task != TASK_OF[kind]:
                bad(f"{where}.datasets: {dn!r} is a {by_label[dn].task} data set but {kind} is "
                    f"for {TASK_OF[kind]}", "models", i, "datasets")
                ok = False
    grid = check_evidence_grid(m.get("evidence_grid"), kind, settings, m.get("fix_from"), where,
                               lambda msg: bad(msg, "models", i, "evidence_grid"))
    ok = ok and (grid is not None or "evidence_grid" not in m)
    if not ok:
        return None
    return ModelSpec(label=label, kind=kind, datasets=list(names), settings=settings,
                     search=search, cv=dict(cv) if cv is not None else None,
                     committee=bool(committee), fix_from=m.get("fix_from"),
                     warm_start=m.get("warm_start"), evidence_grid=grid)
