"""Compact, committable copies of run directories for the results page.

A run directory (``runs/<name>/``) holds every task's result, model, checkpoint
and earlier versions; the reproduction runs behind ``docs/results.md`` take
about two days on 2 cores and are not kept in the repository. ``export_run``
writes what the page reads, and nothing else, into ``<out>/<name>/``::

    run.h5        the run record: every task (metrics, hyperparameters, evidence
                  trajectory, timings, memory) and every chosen start; test
                  predictions only for partition 0 with at most
                  ``max_prediction_cases`` test cases (the R4 plot)
    data/         the run's generated data sets (the page plots them and the C2 /
                  C3 sections recompute Bayes rates and evidence grids on them);
                  data sets read from the repository's ``data/`` stay there and
                  are referred to by their repository-relative path
    models/       the chosen partition-0 models that the page loads (the C1-C4
                  figures and tables; ``results.MODELS_READ``)

``bsvm-scale results docs/runs/<name> ...`` reads such a directory exactly as it
reads the run directory, so the page is regenerated from committed files and a
rerun of one pipeline replaces one export (``bsvm-scale export runs/<name> --out
docs/runs``). The export is written next to its destination and renamed into
place, so an interrupted export leaves the previous one intact.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

from .runfile import read_run_file, write_run_file

__all__ = ["export_run", "data_path_candidates", "add_arguments", "cmd_export"]

#: test predictions larger than this are dropped from the export (per task)
MAX_PREDICTION_CASES = 2000


def data_path_candidates(run_dir, path):
    """Where the data set file recorded as ``path`` of the run in ``run_dir`` may be.

    In order: the recorded path (absolute, or relative to the run directory, or
    relative to the current directory: an exported record names a repository
    data set by its repository-relative path, and ``docs/regenerate.sh`` runs
    from the repository root), then a file of that name in the run's own
    ``data/`` folder (a run directory that was moved) and in ``data/`` under the
    current directory.
    """
    p = Path(path)
    run_dir = Path(run_dir)
    cands = [p] if p.is_absolute() else [run_dir / p, Path.cwd() / p]
    cands += [run_dir / "data" / p.name, Path.cwd() / "data" / p.name]
    return cands


def _existing(cands):
    for c in cands:
        if c.exists():
            return c
    return None


def _repo_relative(path):
    """``data/<file>`` when ``path`` is the file of that name under the current
    directory's ``data/`` folder (a shipped data set), else ``None``."""
    shipped = Path.cwd() / "data" / path.name
    try:
        same = shipped.exists() and os.path.samefile(shipped, path)
    except OSError:
        same = False
    return f"data/{path.name}" if same else None


def _export_data(rec, src, dst):
    """Copy generated data files into ``dst/data`` and point the record at them."""
    for ds, info in rec["datasets"].items():
        found = _existing(data_path_candidates(src, info["path"]))
        if found is None:
            raise FileNotFoundError(f"run {rec['meta']['name']!r}: data set {ds!r} file "
                                    f"{info['path']!r} not found; re-run its pipeline first")
        rel = _repo_relative(found)
        if rel is None:
            (dst / "data").mkdir(exist_ok=True)
            shutil.copy2(found, dst / "data" / found.name)
            rel = f"data/{found.name}"
        info["path"] = rel


def _export_models(rec, src, dst):
    """Copy the chosen partition-0 models that the run's page section loads
    (:data:`~bsvm_scale.pipeline.results.MODELS_READ`)."""
    from .results import MODELS_READ, protocol_of

    kinds = MODELS_READ.get(protocol_of(rec["meta"]["name"]), ())
    n = 0
    for models in rec.get("results", {}).values():
        for parts in models.values():
            first = parts.get("p000") if isinstance(parts, dict) else None
            if not isinstance(first, dict) or first.get("kind") not in kinds:
                continue
            mf = first.get("model_file")
            if mf and (src / mf).exists():
                (dst / mf).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(src / mf, dst / mf)
                n += 1
    return n


def _trim_predictions(rec, max_cases):
    """Drop test predictions except those of partition 0 with at most ``max_cases``."""
    dropped = 0
    for t in rec.get("tasks", {}).values():
        pred = t.get("predictions")
        if not pred:
            continue
        if t.get("partition", 0) != 0 or int(t.get("n_test", 0)) > max_cases:
            del t["predictions"]
            dropped += 1
    return dropped


def export_run(run_path, out, max_prediction_cases=MAX_PREDICTION_CASES):
    """Write the compact copy of one run to ``<out>/<run name>/``.

    Parameters
    ----------
    run_path : path
        A run directory (or its ``run.h5``).
    out : path
        Folder of the exports (created); ``docs/runs`` in this repository.
    max_prediction_cases : int, optional
        Test predictions of partition-0 tasks with at most this many test cases
        are kept; all others are dropped.

    Returns
    -------
    dict
        ``path`` of the export, ``bytes`` on disk, ``models`` copied and
        ``predictions_dropped`` (tasks).
    """
    src = Path(run_path)
    src = src if src.is_dir() else src.parent
    rec = read_run_file(src)
    name = rec["meta"]["name"]
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    final = out / name
    if final.resolve() == src.resolve():
        raise ValueError(f"out: {str(out)!r} would overwrite the run being exported; "
                         "give another folder")
    tmp = out / f".{name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    _export_data(rec, src, tmp)
    n_models = _export_models(rec, src, tmp)
    dropped = _trim_predictions(rec, int(max_prediction_cases))
    rec["meta"]["exported_from"] = str(rec["meta"].get("run_dir", src))
    rec["meta"]["exported"] = time.time()
    write_run_file(tmp / "run.h5", rec)
    old = out / f".{name}.old"
    shutil.rmtree(old, ignore_errors=True)
    if final.exists():
        os.replace(final, old)
    os.replace(tmp, final)
    shutil.rmtree(old, ignore_errors=True)
    size = sum(f.stat().st_size for f in final.rglob("*") if f.is_file())
    return {"path": final, "bytes": size, "models": n_models, "predictions_dropped": dropped}


def add_arguments(parser):
    """Arguments of ``bsvm-scale export``."""
    parser.add_argument("runs", nargs="+", metavar="RUN", help="run directories or run.h5 files")
    parser.add_argument("--out", default="docs/runs",
                        help="folder of the exports (default: docs/runs)")
    parser.add_argument("--max-prediction-cases", type=int, default=MAX_PREDICTION_CASES,
                        help="keep partition-0 test predictions up to this many test cases "
                             f"(default: {MAX_PREDICTION_CASES})")


def cmd_export(args):
    """Export every run of parsed ``args``; prints one line each, returns 0."""
    if args.max_prediction_cases < 0:
        raise ValueError(f"--max-prediction-cases: got {args.max_prediction_cases}; "
                         "give 0 or more")
    for r in args.runs:
        info = export_run(r, args.out, args.max_prediction_cases)
        print(f"exported {r} -> {info['path']} ({info['bytes'] / 2 ** 20:.2f} MiB, "
              f"{info['models']} model files, predictions dropped from "
              f"{info['predictions_dropped']} tasks)")
    return 0
