"""Pipeline keys for experiment protocols: several training sizes, a common
test set, chronological splits, parameter sweeps and leave-one-out CV.

Data set keys (``[[datasets]]``)::

    n_train = [50, 100, 300]   # several training sizes: one data set per size,
                               # named "<name>-n<size>"; models naming "<name>" get all
    partitions = 20            # with `test`: repetitions, each with fresh training data
    test = { n = 3000, seed = 99, params = { noise_free = true } }
                               # common test set drawn once (generator: the data set's
                               # own unless `generator` is given); the training cases of
                               # the repetitions are disjoint draws of a pool of
                               # n_train * partitions cases (`n`, default that size)
    split = "chronological"    # one split in time order (first n_train, next n_test)

Model keys (``[[models]]``)::

    sweep = { beta = [0.001, 0.01, 0.1, 1.0] }
                               # one model per value, named "<name>-beta<value>"; the key
                               # is a search key of the kind or an estimator parameter
    cv = { folds = "loo" }     # leave-one-out; or folds = 10 with loo_below = 100:
                               # leave-one-out on training sets of fewer than 100 cases
    fix_from = { model = "BTSVC", partitions = 5 }
                               # (bsvr/btsvc) hyperparameters fixed to the average of the
                               # named model's on the first 5 partitions (C3 protocol A);
                               # its tasks wait for those (Dask dependencies)
"""

from __future__ import annotations

import numpy as np

from .schema import DATASET_KEYS, FIX_FROM_KEYS, SEARCH_KEYS, TEST_KEYS, check_table

__all__ = ["expand_sizes", "expand_sweep", "resolve_groups", "cv_folds", "common_test_data",
           "TEST_KEYS", "SPLITS"]

SPLITS = DATASET_KEYS["split"].constraints[0].order


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _base_label(d):
    from pathlib import Path

    if "name" in d:
        return d["name"]
    return d["generator"] if "generator" in d else Path(d["path"]).stem


def expand_sizes(d, i, where, bad):
    """Validate the protocol keys of one ``[[datasets]]`` table and expand its sizes.

    Parameters
    ----------
    d : dict
        The raw table (keys and types already checked).
    i : int
        Its index (for line numbers).
    where : str
        ``"datasets[i]"`` (for messages).
    bad : callable
        ``bad(message, table, index, key)`` records a problem.

    Returns
    -------
    base : str
        The label models use to name the whole group.
    tables : list of dict
        One table per training size (``n_train`` an integer in each); empty
        when a problem was found.
    """
    sizes = d.get("n_train")
    if isinstance(sizes, list):
        if not sizes or not all(_is_int(s) and s >= 2 for s in sizes) or len(set(sizes)) != len(sizes):
            bad(f"{where}.n_train: a list of training sizes must hold distinct integers >= 2; "
                f"got {sizes!r}", "datasets", i, "n_train")
            return _base_label(d), []
    else:
        sizes = [sizes]
    if not _check_split(d, i, where, bad):
        return _base_label(d), []
    test = None
    if "test" in d:
        test = _check_test(d, i, where, bad)
        if test is None:
            return _base_label(d), []
    base = _base_label(d)
    tables = []
    for s in sizes:
        dd = dict(d)
        dd["n_train"] = s
        if len(sizes) > 1:
            dd["name"] = f"{base}-n{s}"
        if test is not None:
            dd["test"] = test
            dd.setdefault("n", s * int(d.get("partitions", 1)))
        tables.append(dd)
    return base, tables


def _check_split(d, i, where, bad):
    split = d.get("split", "random")
    if split not in SPLITS:
        bad(f"{where}.split: must be one of {', '.join(SPLITS)}; got {split!r}",
            "datasets", i, "split")
        return False
    if split == "chronological" and (d.get("partitions", 1) != 1 or "test" in d or "path" in d):
        bad(f"{where}.split: \"chronological\" needs a generated data set with partitions = 1 "
            "and no common test set", "datasets", i, "split")
        return False
    return True


def _check_test(d, i, where, bad):
    """The normalised common-test table of data set ``d``, or None after a problem."""
    from ...datasets import dataset_params, get_entry

    t = d["test"]
    if "generator" not in d:
        bad(f"{where}.test: a common test set needs a generated data set ('generator'), not "
            "'path'", "datasets", i, "test")
        return None
    if not isinstance(d.get("partitions", 1), int) or "n_test" in d:
        bad(f"{where}.test: cannot be combined with n_test or partitions = \"stored\" "
            "(the test set is the table's n cases)", "datasets", i, "test")
        return None
    if len(check_table(t, TEST_KEYS, f"{where}.test", lambda msg, key: bad(msg, "datasets", i,
                                                                            "test"))) < len(t):
        return None
    if "n" not in t:
        bad(f"{where}.test.n: the number of test cases is required (an integer >= 1)",
            "datasets", i, "test")
        return None
    gen = t.get("generator", d["generator"])
    try:
        entry = get_entry(gen)
    except ValueError as exc:
        bad(f"{where}.test.generator: {exc}", "datasets", i, "test")
        return None
    if entry.kind != "synthetic" or entry.task != get_entry(d["generator"]).task:
        bad(f"{where}.test.generator: {gen!r} must be a synthetic {get_entry(d['generator']).task} "
            "generator", "datasets", i, "test")
        return None
    params = dict(t.get("params", {}))
    unknown = sorted(set(params) - set(dataset_params(gen)))
    if unknown:
        bad(f"{where}.test.params: unknown parameter(s) {', '.join(unknown)} for {gen!r}; "
            f"accepted: {', '.join(dataset_params(gen))}", "datasets", i, "test")
        return None
    sizes = d["n_train"] if isinstance(d["n_train"], list) else [d["n_train"]]
    need = max(sizes) * int(d.get("partitions", 1))
    if d.get("n", need) < need:
        bad(f"{where}.n: the training pool needs n_train * partitions = {need} cases for fresh "
            f"training data per repetition; got n={d['n']} (leave n out)", "datasets", i, "n")
        return None
    return {"generator": gen, "n": int(t["n"]),
            "seed": int(t.get("seed", d.get("seed", 0) + 1_000_003)), "params": params}


def expand_sweep(m, i, bad):
    """One raw model table per value of its ``sweep`` (the table itself without a sweep).

    Parameters
    ----------
    m : dict
        The raw ``[[models]]`` table.
    i : int
        Its index (for line numbers).
    bad : callable
        Records a problem (see :func:`expand_sizes`).

    Returns
    -------
    list of dict
        Empty after a problem.
    """
    sweep = m.get("sweep")
    if sweep is None:
        return [m]
    where = f"models[{i}].sweep"
    if not isinstance(sweep, dict) or len(sweep) != 1:
        bad(f"{where}: must be a table with exactly one key, e.g. {{ beta = [0.01, 0.1] }}; "
            f"got {sweep!r}", "models", i, "sweep")
        return []
    (key, values), = sweep.items()
    if not isinstance(values, list) or not values or not all(_is_number(v) for v in values):
        bad(f"{where}.{key}: must be a non-empty array of numbers; got {values!r}",
            "models", i, "sweep")
        return []
    kind = m.get("kind")
    table = "search" if key in SEARCH_KEYS.get(kind, {}) else "settings"
    if key in m.get("settings", {}) or key in m.get("search", {}):
        bad(f"{where}.{key}: is also given in settings or search; give it in one place",
            "models", i, "sweep")
        return []
    base = m.get("name", kind)
    out = []
    for v in values:
        mm = {k: val for k, val in m.items() if k != "sweep"}
        mm[table] = {**m.get(table, {}), key: v}
        mm["name"] = f"{base}-{key}{v:g}"
        out.append(mm)
    return out


def resolve_groups(m, groups):
    """``m`` with data set group names (several training sizes) replaced by their members."""
    names = m.get("datasets")
    if not isinstance(names, list):
        return m
    return {**m, "datasets": [x for n in names for x in groups.get(n, [n])]}


def cv_folds(cv, n_train):
    """The ``cv`` argument of :func:`~bsvm_scale.baselines.model_selection.grid_search_cv`.

    Parameters
    ----------
    cv : dict
        The model's ``cv`` table.
    n_train : int
        Training cases of the partition.

    Returns
    -------
    int or "loo"
        ``"loo"`` when ``folds = "loo"`` or ``n_train < loo_below``, else ``folds``
        (default 5).
    """
    folds = cv.get("folds", 5)
    if folds == "loo" or n_train < int(cv.get("loo_below", 0)):
        return "loo"
    return int(folds)


def common_test_data(spec):
    """Training pool plus common test set of a data set with ``test``.

    Parameters
    ----------
    spec : DatasetSpec
        With ``test`` set (and integer ``partitions``).

    Returns
    -------
    ds : Dataset
        The pool's ``n`` cases followed by the test cases (``extra`` arrays
        kept where both parts have them).
    partitions : list of (train, test)
        Repetition ``k`` trains on pool cases ``k*n_train ... (k+1)*n_train - 1``
        and tests on the common test cases; a single partition trains on the
        whole pool (which may hold extra rows, e.g. gauss1d's outlier).
    """
    from ...datasets import Dataset, generate

    pool = generate(spec.generator, spec.n, spec.seed, **spec.params)
    t = spec.test
    test = generate(t["generator"], t["n"], t["seed"], **t["params"])
    extra = {k: np.concatenate([v, test.extra[k]]) for k, v in pool.extra.items()
             if k in test.extra and np.shape(v)[1:] == np.shape(test.extra[k])[1:]}
    prov = {"pool": pool.provenance, "common_test": test.provenance,
            "recipe": "pool cases first, then the common test set"}
    ds = Dataset(X=np.vstack([pool.X, test.X]), y=np.concatenate([pool.y, test.y]),
                 name=pool.name, task=pool.task, feature_names=pool.feature_names,
                 provenance=prov, extra=extra, description=pool.description)
    te = np.arange(pool.n_samples, pool.n_samples + test.n_samples)
    k = spec.n_train
    parts = [(np.arange(j * k, (j + 1) * k), te) for j in range(int(spec.partitions))]
    if int(spec.partitions) == 1:  # the whole pool (e.g. gauss1d's appended outlier row)
        parts = [(np.arange(pool.n_samples), te)]
    return ds.with_splits(parts, {"kind": "common test set", "n_train": int(k),
                                  "n_test": int(te.size)}), parts


# ------------------------------------------------------------------ protocol A
FIXED_KEYS = {"bsvr": ("C", "epsilon", "kappa", "kappa_b"), "btsvc": ("kappa0", "kappa", "kappa_b")}


def check_fix_from(models, bad):
    """Validate the ``fix_from`` tables of parsed models (after all labels are known).

    ``fix_from = { model = "BTSVC", partitions = 5 }`` fixes the hyperparameters
    of a BSVR/BTSVC model to the average of those inferred by the named model
    (same kind) on the first ``partitions`` partitions of each data set
    (docs/protocols.md, C3 protocol A); the model is then fitted without evidence
    maximisation on every partition.

    Parameters
    ----------
    models : list of ModelSpec
    bad : callable
        Records a problem (see :func:`expand_sizes`).
    """
    by_label = {m.label: m for m in models}
    for i, m in enumerate(models):
        f = m.fix_from
        if f is None:
            continue
        where = f"models[{m.label}].fix_from"
        src = by_label.get(f.get("model")) if isinstance(f.get("model"), str) else None
        problems = []
        check_table(f, FIX_FROM_KEYS, where, lambda msg, key: problems.append(msg))
        if "model" not in f:
            problems.append(f"{where}.model: missing; name the model to fix from")
        if problems:
            for p in problems:
                bad(p)
        elif m.kind not in FIXED_KEYS:
            bad(f"{where}: only {', '.join(FIXED_KEYS)} models take fixed hyperparameters; "
                f"{m.label!r} is {m.kind}")
        elif src is None or src is m or src.fix_from is not None or src.kind != m.kind:
            bad(f"{where}.model: must name another {m.kind} model with evidence maximisation; "
                f"got {f.get('model')!r}")
        elif (src.settings.get("kappa0") == "evidence") != (m.settings.get("kappa0") == "evidence"):
            bad(f"{where}.model: {src.label!r} and {m.label!r} must both set kappa0 = "
                "\"evidence\" or neither (the averaged hyperparameters include kappa0 only "
                "when it was inferred)")
        elif not set(m.datasets) <= set(src.datasets):
            bad(f"{where}.model: {src.label!r} does not run on every data set of {m.label!r} "
                f"({', '.join(sorted(set(m.datasets) - set(src.datasets)))})")


def link_fixed(specs, models):
    """Give every task of a ``fix_from`` model the ids of the tasks it depends on."""
    by_label = {m.label: m for m in models}
    for s in specs:
        m = by_label[s["model"]]
        if m.fix_from is None:
            continue
        k = int(m.fix_from.get("partitions", FIX_FROM_KEYS["partitions"].default))
        s["fix_from"] = [t["task_id"] for t in specs if t["model"] == m.fix_from["model"]
                         and t["dataset"] == s["dataset"] and t["partition"] < k]


def fixed_params(spec, deps):
    """Estimator parameters of a ``fix_from`` task: the averaged hyperparameters, no search.

    Parameters
    ----------
    spec : dict
        The task spec (``kind``, ``params``).
    deps : list of dict
        Results of the source model's tasks (one per start and partition);
        per partition the start with the highest evidence counts.

    Returns
    -------
    dict
    """
    best = {}
    for d in deps:
        r = d.get("result", d)
        p = int(r["partition"])
        if p not in best or r["log_evidence"] > best[p]["log_evidence"]:
            best[p] = r
    keys = FIXED_KEYS[spec["kind"]]
    if spec["kind"] == "bsvr" and isinstance(spec["params"].get("kappa0"), str):
        # inferred, here and in the source model (check_fix_from): averaged too
        keys = keys + ("kappa0",)
    hyp = [b["hyperparameters"] for b in best.values()]
    if not hyp or any(k not in h for h in hyp for k in keys):
        raise ValueError(f"task {spec['task_id']}: fix_from needs the hyperparameters "
                         f"{', '.join(keys)} of a two-class/regression model on "
                         f"{len(best)} partition(s); got {sorted(hyp[0]) if hyp else 'none'}")
    avg = {k: np.mean([np.asarray(h[k], dtype=float) for h in hyp], axis=0) for k in keys}
    avg = {k: float(v) if np.ndim(v) == 0 else v for k, v in avg.items()}
    params = {k: v for k, v in spec["params"].items() if k not in ("starts", "n_starts")}
    return {**params, **avg, "optimize": False}
