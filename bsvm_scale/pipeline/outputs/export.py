"""Compact copies of run directories: what a reader of the run's results needs.

A run directory (``runs/<name>/``) holds every task's result, model, checkpoint
and earlier versions; the reproduction runs behind ``docs/results.md`` take
hours on 2 cores. ``export_run`` writes a compact copy into ``<out>/<name>/``::

    run.h5        the run record, packed (gzip-compressed tagged JSON, see
                  ``runfile.write_run_file``): every task (metrics, hyperparameters, evidence
                  trajectory, timings, memory, evidence grids) and every chosen
                  start; test predictions only of the task shown first for each
                  (data set, model), up to ``max_prediction_cases`` test cases
    data/         the run's generated data sets, as ``<label>.h5``; a data set
                  that is a file of the repository's ``data/`` folder is
                  recorded as ``repo:data/<file>`` and not copied
    models/       the model of the first partition shown of each (data set,
                  model) (:func:`keep_common_partitions`) when it can be
                  reloaded (not a scikit-learn reference) and was trained on at
                  most :data:`MAX_MODEL_TRAIN` cases

A copy is read exactly as the run directory is (the recorded data paths are
rewritten to the copy's own files). An export of an export is the same files
again. The export is assembled beside its destination and renamed into place; a
failed export removes its partial copy and leaves the previous one.
:mod:`.archive` packs exports into one checksummed archive.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .runfile import read_run_file, write_run_file

__all__ = ["export_run", "export_runs", "data_path_candidates", "read_checked", "repo_root",
           "keep_common_partitions", "is_export", "MAX_PREDICTION_CASES", "MAX_MODEL_TRAIN"]

#: test predictions of a shown task with more test cases than this are dropped
MAX_PREDICTION_CASES = 2000
#: models trained on more cases are not copied: a model fitted on the dense evidence
#: path keeps the m x m Cholesky factor of its SV block for the error bars (8 m^2
#: bytes; docs/design/matrix_free_evidence.md, "The factor kept for prediction")
MAX_MODEL_TRAIN = 5000
#: prefix of a data path relative to the repository root (a shipped data set)
REPO_PREFIX = "repo:"


def repo_root():
    """The source checkout holding this package (an editable install), else the
    current directory (``docs/regenerate.sh`` runs from the repository root)."""
    root = Path(__file__).resolve().parents[2]
    if (root / "pyproject.toml").exists() and (root / "data").is_dir():
        return root
    return Path.cwd()


def data_path_candidates(run_dir, path, recorded_run_dir=None):
    """Where the data set file recorded as ``path`` may be, most specific first.

    ``repo:data/x.h5`` names a file of the repository. A path inside
    ``recorded_run_dir`` (the run directory at run time) is looked up in
    ``run_dir`` first, so that a copied or moved run reads its own data; then the
    recorded path itself (a relative one inside ``run_dir``); last the file of that
    name in the run's ``data/`` folder and in the repository's ``data/`` (runs
    made in another checkout). :func:`read_checked` guards the last two against
    a different file of the same name.
    """
    path = str(path)
    if path.startswith(REPO_PREFIX):
        rel = path[len(REPO_PREFIX):]
        return [repo_root() / rel, Path.cwd() / rel]
    p, run_dir = Path(path), Path(run_dir)
    cands = []
    if p.is_absolute() and recorded_run_dir:
        try:
            cands.append(run_dir / p.relative_to(recorded_run_dir))
        except ValueError:
            pass
    cands.append(p if p.is_absolute() else run_dir / p)
    cands += [run_dir / "data" / p.name, repo_root() / "data" / p.name]
    return cands


def read_checked(run_dir, ds, info, recorded_run_dir=None, extra=True):
    """``(path, dataset)``: the first candidate file of data set ``ds`` whose size
    matches the record's ``n`` x ``d`` (FileNotFoundError naming every place
    looked at otherwise)."""
    from ...datasets import read_dataset

    tried = []
    for c in data_path_candidates(run_dir, info["path"], recorded_run_dir):
        if not c.exists():
            tried.append(f"{c} (missing)")
            continue
        d = read_dataset(c, splits=False, extra=extra)
        if d.X.shape == (int(info["n"]), int(info["d"])):
            return c, d
        tried.append(f"{c} ({d.X.shape[0]} x {d.X.shape[1]}, not {info['n']} x {info['d']})")
    raise FileNotFoundError(f"data set {ds!r} (recorded as {info['path']!r}) not found: "
                            + "; ".join(tried))


def _is_shipped(path):
    """``repo:data/<file>`` when ``path`` is that file of the repository."""
    shipped = repo_root() / "data" / path.name
    try:
        same = shipped.exists() and os.path.samefile(shipped, path)
    except OSError:
        same = False
    return f"{REPO_PREFIX}data/{path.name}" if same else None


def _export_data(rec, src, dst):
    """Copy generated data files into ``dst/data`` and point the record at them."""
    for ds, info in rec["datasets"].items():
        try:
            found, _ = read_checked(src, ds, info, rec["meta"].get("run_dir"), extra=False)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"RUN {str(src)!r}: {exc}; re-run its pipeline") from None
        rel = _is_shipped(found)
        if rel is None:
            (dst / "data").mkdir(exist_ok=True)
            rel = f"data/{ds}.h5"
            shutil.copy2(found, dst / rel)
        info["path"] = rel


def _all_starts(entry):
    """True when every optimiser start of a partition's entry finished."""
    return int(entry.get("n_starts_done", 1)) >= int(entry.get("n_starts", 1))


def keep_common_partitions(rec):
    """Keep, per data set, only the partitions every one of its models finished
    (with all of its optimiser starts).

    A stopped run (or one with failed tasks) holds different partitions for
    different models; means, tables and paired tests then compare models over
    the same partitions. Changes ``rec["results"]`` in place (a model left
    with no partition is removed).

    Returns
    -------
    dict
        ``{data set: number of partition results left out}`` (data sets with
        none left out are not listed).
    """
    left_out = {}
    for ds, models in rec.get("results", {}).items():
        done = [{k for k, v in parts.items() if _all_starts(v)} for parts in models.values()]
        common = set.intersection(*done) if done else set()
        n = sum(len(parts) - len(common) for parts in models.values())
        if n:
            left_out[ds] = n
            for model in list(models):
                kept = {k: v for k, v in models[model].items() if k in common}
                if kept:
                    models[model] = kept
                else:  # nothing in common: the model is not compared at all
                    del models[model]
    return left_out


def _shown(rec):
    """``(tasks, model files)``: the chosen task of the first partition shown for
    each (data set, model) (:func:`keep_common_partitions`), and the model
    files of those that can be reloaded and were trained on at most
    :data:`MAX_MODEL_TRAIN` cases."""
    from ..spec.kinds import EXTERNAL_KINDS

    results = {ds: {m: dict(parts) for m, parts in models.items()}
               for ds, models in rec.get("results", {}).items()}
    keep_common_partitions({"results": results})
    tasks, files = set(), set()
    for models in results.values():
        for parts in models.values():
            first = parts[min(parts)]
            task = rec.get("tasks", {}).get(first["best_task"], {})
            tasks.add(first["best_task"])
            if first["kind"] not in EXTERNAL_KINDS and \
                    int(task.get("n_train", MAX_MODEL_TRAIN + 1)) <= MAX_MODEL_TRAIN:
                files.add(first["model_file"])
    return tasks, files


def _trim_predictions(rec, keep, max_cases):
    """Drop test predictions except those of the tasks in ``keep`` up to ``max_cases``."""
    dropped = 0
    for tid, t in rec.get("tasks", {}).items():
        if t.get("predictions") and (tid not in keep or int(t.get("n_test", 0)) > max_cases):
            del t["predictions"]
            dropped += 1
    return dropped


def _fill(rec, src, tmp, max_cases):
    """Write the export of ``rec`` (read from ``src``) into the empty folder ``tmp``."""
    keep, files = _shown(rec)
    _export_data(rec, src, tmp)
    for mf in sorted(files):
        if not (src / mf).exists():
            raise FileNotFoundError(f"RUN {str(src)!r}: model file {mf!r} is missing")
        (tmp / mf).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / mf, tmp / mf)
    dropped = _trim_predictions(rec, keep, max_cases)
    rec["meta"]["exported_from"] = str(rec["meta"].get("run_dir", src))
    rec["meta"]["exported"] = time.time()
    write_run_file(tmp / "run.h5", rec, packed=True)
    return len(files), dropped


def _swap_in(tmp, final):
    """Replace ``final`` by ``tmp``; the previous export comes back on failure."""
    old = final.with_name(f".{final.name}.old")
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    try:
        os.replace(tmp, final)
    except OSError:
        if old.exists() and not final.exists():
            os.replace(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _source_dir(run_path):
    p = Path(run_path)
    if p.is_dir():
        return p
    if p.name == "run.h5" and p.is_file():
        return p.parent
    raise FileNotFoundError(f"RUN {str(run_path)!r}: no run directory or run.h5 file there")


def is_export(rec):
    """True when the run record ``rec`` was read from an export."""
    return "exported_from" in rec.get("meta", {})


def _copy_export(src, tmp):
    """Copy the export ``src`` file by file into the empty folder ``tmp``."""
    for f in sorted(src.rglob("*")):
        if f.is_file():
            (tmp / f.relative_to(src)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, tmp / f.relative_to(src))


def export_run(run_path, out, max_prediction_cases=MAX_PREDICTION_CASES, rec=None):
    """Write the compact copy of one run to ``<out>/<run name>/``.

    An export given as ``run_path`` is copied file by file (its record is
    not rewritten).

    Parameters
    ----------
    run_path : path
        A run directory (or its ``run.h5``).
    out : path
        Folder of the exports (created); ``docs/runs`` in this repository.
    max_prediction_cases : int, optional
        Test predictions of the shown tasks with at most this many test cases
        are kept; all others are dropped.
    rec : dict, optional
        The run record already read from ``run_path`` (changed in place).

    Returns
    -------
    dict
        ``path`` of the export, ``bytes`` on disk, ``models`` copied and
        ``predictions_dropped`` (tasks).
    """
    src = _source_dir(run_path)
    rec = read_run_file(src) if rec is None else rec
    out = Path(out)
    final = out / rec["meta"]["name"]
    if final.resolve() == src.resolve():
        raise ValueError(f"--out: {str(out)!r} would overwrite the run being exported; "
                         "give another folder")
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / f".{final.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        if is_export(rec):
            _copy_export(src, tmp)
            n_models, dropped = len(list((tmp / "models").glob("*.h5"))), 0
        else:
            n_models, dropped = _fill(rec, src, tmp, int(max_prediction_cases))
        _swap_in(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    size = sum(f.stat().st_size for f in final.rglob("*") if f.is_file())
    return {"path": final, "bytes": size, "models": n_models, "predictions_dropped": dropped}


def export_runs(run_paths, out, max_prediction_cases=MAX_PREDICTION_CASES):
    """Export every run of ``run_paths`` into ``out`` (:func:`export_run`).

    Every run is read (and checked) before anything is written.

    Returns
    -------
    list of (path, dict)
        Each run path given with the information :func:`export_run` returned.

    Raises
    ------
    ValueError
        ``max_prediction_cases`` below 0, or two paths holding the same run
        (their exports would overwrite each other).
    """
    if max_prediction_cases < 0:
        raise ValueError(f"--max-prediction-cases: got {max_prediction_cases}; give 0 or more")
    names, recs = {}, []
    for r in run_paths:
        recs.append(read_run_file(_source_dir(r)))
        name = recs[-1]["meta"]["name"]
        if name in names:
            raise ValueError(f"RUN: {names[name]!r} and {r!r} are both run {name!r}; "
                             "their exports would overwrite each other, give one")
        names[name] = r
    return [(r, export_run(r, out, max_prediction_cases, rec=rec))
            for r, rec in zip(run_paths, recs)]
