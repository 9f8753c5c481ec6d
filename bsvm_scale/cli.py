"""Command line interface: ``bsvm-scale <command> ...``.

The commands -- ``datasets list|generate|import|info``, ``run``, ``predict``,
``report``, ``results``, ``export``, ``schema`` -- and their options are
described by ``bsvm-scale <command> --help`` (built below) and in
``docs/reference/cli.md``.

Structure: each top-level command has an ``add_<command>_parser(subparsers)``
function that builds its sub-parser and binds each leaf subcommand to a
handler ``cmd_<command>_<sub>(args) -> int`` via ``set_defaults(func=...)``.
To add a command, write its ``add_..._parser`` and handlers and append the
builder to :data:`COMMANDS`.  Handlers raise :class:`CLIError`, ``ValueError`` or
``OSError`` for bad input; :func:`main` turns those into a one-line message on
stderr and exit status 2 (argparse usage errors also exit 2).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import signal
import sys
import threading
from pathlib import Path

__all__ = ["CLIError", "build_parser", "main", "parse_param", "COMMANDS"]

PROG = "bsvm-scale"
EXIT_OK = 0
EXIT_USAGE = 2


class CLIError(Exception):
    """Bad input detected by a handler; reported without traceback, exit 2."""


# ----------------------------------------------------------------- helpers


def parse_param(text: str):
    """``'key=value'`` -> ``(key, value)`` with value as int/float/bool/None/str."""
    if "=" not in text:
        raise CLIError(f"--param expects key=value; got {text!r}")
    key, raw = text.split("=", 1)
    key = key.strip()
    if not key.isidentifier():
        raise CLIError(f"--param key {key!r} is not a valid parameter name")
    raw = raw.strip()
    low = raw.lower()
    if low in ("true", "yes"):
        return key, True
    if low in ("false", "no"):
        return key, False
    if low in ("none", "null"):
        return key, None
    for conv in (int, float):
        try:
            return key, conv(raw)
        except ValueError:
            pass
    return key, raw


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {text!r}") from None
    if v <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer; got {v}")
    return v


def _nonneg_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer; got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer; got {v}")
    return v


def _print_json(obj) -> None:
    print(json.dumps(obj, indent=2, sort_keys=True, default=str))


# -------------------------------------------------------- datasets command


def cmd_datasets_list(args) -> int:
    from .datasets import list_datasets

    rows = list_datasets(args.kind)
    if args.json:
        _print_json([row._asdict() for row in rows])
        return EXIT_OK
    w = max(len(r.name) for r in rows)
    print(f"{'name':<{w}}  {'kind':<9}  {'task':<14}  {'n':>6}  description")
    for r in rows:
        print(f"{r.name:<{w}}  {r.kind:<9}  {r.task:<14}  {r.n:>6}  {r.description}")
    return EXIT_OK


def cmd_datasets_generate(args) -> int:
    from .datasets import generate

    params = dict(parse_param(p) for p in (args.param or []))
    if args.splits and args.n_train is None:
        raise CLIError("--splits needs --n-train")
    ds = generate(args.name, args.n, args.seed, n_splits=args.splits or 0,
                  n_train=args.n_train, n_test=args.n_test, **params)
    _write_out(ds, args)
    print(f"wrote {args.out}: {ds.name} ({ds.task}), n={ds.n_samples}, d={ds.n_features}, "
          f"splits={ds.n_splits}, seed={args.seed}")
    return EXIT_OK


def _write_out(ds, args):
    """Write ``ds`` to ``--out`` (its directory made; ``--no-overwrite`` kept)."""
    from .datasets import write_dataset

    out = Path(args.out)
    if out.exists() and out.is_dir():
        raise CLIError(f"--out {str(out)!r} is a directory; give a file name")
    if out.exists() and args.no_overwrite:
        raise CLIError(f"{str(out)!r} exists and --no-overwrite was given")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CLIError(f"cannot create directory {str(out.parent)!r}: {exc.strerror or exc}") from None
    write_dataset(ds, out)


def cmd_datasets_import(args) -> int:
    from .datasets import import_table

    if args.partitions and args.n_train is None:
        raise CLIError("--partitions needs --n-train")
    ds = import_table(args.file, args.target, task=args.task, name=args.name,
                      partitions=args.partitions, n_train=args.n_train, n_test=args.n_test,
                      seed=args.seed, id_column=args.id, categorical=args.categorical,
                      numeric=args.numeric, boolean=args.boolean, drop=args.drop,
                      weight=args.weight, missing=args.missing, unknown=args.unknown)
    _write_out(ds, args)
    how = " (inferred)" if ds.provenance["task_inferred"] else ""
    ids = "" if args.id is None else f", case ids from {args.id!r}"
    dropped = ds.provenance.get("rows_dropped", 0)
    print(f"wrote {args.out}: {ds.name} ({ds.task}{how}), n={ds.n_samples}, d={ds.n_features}, "
          f"target {ds.provenance['target']!r}{ids}, splits={ds.n_splits}"
          + (f", {dropped} rows with missing cells dropped" if dropped else ""))
    if ds.schema is not None:
        from .tables import describe_schema

        print(describe_schema(ds.schema, ds.encoder))
    return EXIT_OK


def cmd_datasets_info(args) -> int:
    from .datasets import dataset_info

    info = dataset_info(args.file)
    if args.json:
        _print_json(info)
        return EXIT_OK
    prov = info["provenance"]
    print(f"file:           {info['path']} ({info['file_size']} bytes, "
          f"compression={info['compression']})")
    print(f"name:           {info['name']}")
    print(f"task:           {info['task']}")
    if info["description"]:
        print(f"description:    {info['description']}")
    print(f"shape:          n={info['n_samples']}, d={info['n_features']} "
          f"(X {info['X_dtype']}, y {info['y_dtype']})")
    names = info["feature_names"]
    shown = ", ".join(names[:12]) + (f", ... ({len(names)} in all)" if len(names) > 12 else "")
    print(f"features:       {shown}")
    print(f"splits:         {info['n_splits']}"
          + (f" ({info['splits_layout']})" if info["n_splits"] else ""))
    if info["extra"]:
        ex = ", ".join(f"{k} {tuple(s)} {t}" for k, (s, t) in info["extra"].items())
        print(f"extra:          {ex}")
    print(f"format_version: {info['format_version']}")
    if info.get("table"):
        from .tables import Schema, TableEncoder, describe_schema

        table = info["table"]
        print(describe_schema(Schema.from_dict(table["schema"]),
                           None if table.get("coding") is None
                           else TableEncoder.from_dict(table["coding"])))
    for key in ("source", "generator", "seed", "params", "source_package",
                "source_package_version", "licence"):
        if key in prov:
            print(f"provenance.{key}: {json.dumps(prov[key], default=str)}")
    return EXIT_OK


def add_datasets_parser(subparsers) -> None:
    p = subparsers.add_parser("datasets", help="list, generate and inspect data sets",
                              description="List, generate and inspect data sets.")
    sub = p.add_subparsers(dest="datasets_command", metavar="SUBCOMMAND")
    sub.required = True

    _add_list_parser(sub)
    _add_generate_parser(sub)
    _add_import_parser(sub)
    q = sub.add_parser("info", help="validate a data set file and show its metadata")
    q.add_argument("file", metavar="FILE.h5")
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_datasets_info)


def _add_list_parser(sub) -> None:
    q = sub.add_parser("list", help="list every synthetic and real data set")
    q.add_argument("--kind", choices=["synthetic", "real"], default=None)
    q.add_argument("--json", action="store_true", help="machine-readable output")
    q.set_defaults(func=cmd_datasets_list)


def _add_generate_parser(sub) -> None:
    q = sub.add_parser("generate", help="generate a data set and write it as HDF5")
    q.add_argument("name", metavar="NAME", help="data set name (see 'datasets list')")
    q.add_argument("--n", type=_positive_int, default=None,
                   help="number of cases (default: the registry size; real sets: all)")
    q.add_argument("--seed", type=_nonneg_int, default=0, help="integer seed (default 0)")
    q.add_argument("--out", required=True, metavar="FILE.h5", help="output file")
    q.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="generator parameter, repeatable (e.g. --param beta=0.1)")
    q.add_argument("--splits", type=_nonneg_int, default=0, metavar="K",
                   help="attach K partitions (random; time series: 1 chronological)")
    _add_split_sizes(q)
    q.add_argument("--no-overwrite", action="store_true",
                   help="refuse to replace an existing file (by default it is replaced atomically)")
    q.set_defaults(func=cmd_datasets_generate)


def _add_split_sizes(q) -> None:
    """``--n-train`` and ``--n-test`` of the partitions a data set file carries."""
    q.add_argument("--n-train", type=_positive_int, default=None, metavar="N",
                   help="training cases per partition")
    q.add_argument("--n-test", type=_positive_int, default=None, metavar="T",
                   help="test cases per partition (default: the rest)")


def _add_import_parser(sub) -> None:
    q = sub.add_parser("import", help="a CSV (with header) or .npy file as a data set",
                       description="Write a CSV file with a header row, or a .npy array, in "
                                   "the project's data set format with provenance (the "
                                   "source's SHA-256 and the options), so that a pipeline "
                                   "file can name it.")
    q.add_argument("file", metavar="FILE.csv|FILE.npy")
    q.add_argument("--target", required=True, metavar="COLUMN",
                   help="target column: header name (CSV) or index (.npy)")
    q.add_argument("--id", default=None, metavar="COLUMN",
                   help="column of unique case identifiers (kept beside the data, not an "
                        "input; retraining carries the earlier dual solution over by them)")
    q.add_argument("--task", choices=["regression", "classification"], default=None,
                   help="default: a target with text, or integers with at most 20 values, "
                        "is classes; other numbers regression")
    _add_column_options(q)
    q.add_argument("--name", default=None, help="data set name (default: the file's stem)")
    q.add_argument("--partitions", type=_nonneg_int, default=0, metavar="K",
                   help="attach K seeded random train/test partitions")
    _add_split_sizes(q)
    q.add_argument("--seed", type=_nonneg_int, default=0, help="partition seed (default 0)")
    q.add_argument("--out", required=True, metavar="NAME.h5", help="output file")
    q.add_argument("--no-overwrite", action="store_true",
                   help="refuse to replace an existing file")
    q.set_defaults(func=cmd_datasets_import)


def _add_column_options(q) -> None:
    """The column kinds, weights and missing/unknown policies of ``datasets import``."""
    q.add_argument("--categorical", nargs="+", action="extend", default=[], metavar="COL",
                   help="columns of categories (text, or integer codes); one-hot coded. "
                        "Default: inferred (a column with any non-number)")
    q.add_argument("--numeric", nargs="+", action="extend", default=[], metavar="COL",
                   help="columns of numbers: a text cell is an error naming row and column")
    q.add_argument("--boolean", nargs="+", action="extend", default=[], metavar="COL",
                   help="yes/no columns (yes/no, true/false, y/n, t/f, 1/0); coded 1/0. "
                        "Default: inferred for yes/no-like text")
    q.add_argument("--drop", nargs="+", action="extend", default=[], metavar="COL",
                   help="columns not to read")
    q.add_argument("--weight", default=None, metavar="COL",
                   help="column of case weights (>= 0), passed to fits as sample_weight")
    q.add_argument("--missing", choices=["error", "drop", "median"], default="error",
                   help="missing numbers (and targets, weights): an error naming the rows "
                        "(default), drop those rows, or the column's median (inputs only; "
                        "stored with the data set and its models). A missing category is a "
                        "category of its own")
    q.add_argument("--unknown", choices=["error", "ignore"], default="error",
                   help="the models' policy for categories not seen here, at predict: an "
                        "error naming column and value (default), or coded as unknown")


# ------------------------------------------------------- run, predict, report, ...


class Interrupted(KeyboardInterrupt):
    """SIGTERM turned into an interrupt, so that the run unwinds like on Ctrl-C."""

    def __init__(self, signum):
        super().__init__(signum)
        self.signum = signum


def _raise_interrupted(signum, frame):
    raise Interrupted(signum)


class _sigterm_interrupts:
    """Context in which SIGTERM and SIGINT raise :class:`Interrupted` (main thread only).

    The driver then unwinds through its ``finally`` blocks: the Dask client
    and local workers are closed and the run lock is released; checkpoints
    and finished task results are already on disk (written atomically), so
    running the same command again resumes.
    """

    SIGNALS = (signal.SIGTERM, signal.SIGINT)

    def __enter__(self):
        # SIGINT too: a driver started in the background of a shell script
        # inherits SIGINT ignored, and Python then installs no Ctrl-C handler
        self.previous = {}
        if threading.current_thread() is threading.main_thread():
            for sig in self.SIGNALS:
                self.previous[sig] = signal.signal(sig, _raise_interrupted)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.previous.items():
            signal.signal(sig, handler)
        return False


def cmd_run(args) -> int:
    """``bsvm-scale run PIPELINE.toml``: validate, run (or resume) and report."""
    from .pipeline.run.checkpoint import RunLockedError
    from .pipeline.spec.config import load_pipeline
    from .pipeline.run.executor import run_pipeline

    pipeline = load_pipeline(args.pipeline)
    if args.name:
        pipeline.name = args.name
        pipeline.run_dir = str(Path(pipeline.output) / args.name)
    if args.check:
        n_tasks = sum(len(m.datasets) for m in pipeline.models)
        print(f"{args.pipeline}: valid; run directory {pipeline.run_dir}; "
              f"{len(pipeline.datasets)} data set(s), {len(pipeline.models)} model(s), "
              f"{n_tasks} (data set, model) pair(s)")
        return EXIT_OK
    if args.job_script:
        from .pipeline.run.backends import job_script

        print(job_script(pipeline.cluster), end="")
        return EXIT_OK
    try:
        with _sigterm_interrupts():
            record = run_pipeline(pipeline, scheduler=args.scheduler, workers=args.workers,
                                  resume=not args.fresh, progress=not args.no_progress)
    except RunLockedError as exc:
        raise CLIError(str(exc)) from None
    if not args.no_report:
        from .pipeline.outputs.report import write_report

        path = write_report(pipeline.run_dir)
        print(f"report: {path}")
    return EXIT_OK if record["meta"]["n_failed"] == 0 else 1


def _add_dask_target(p, scheduler_note: str, workers_note: str = "") -> None:
    """``--scheduler ADDRESS | --workers N``: where the Dask tasks of a command run."""
    g = p.add_mutually_exclusive_group()
    g.add_argument("--scheduler", metavar="ADDRESS", default=None,
                   help=f"address of a running dask scheduler (e.g. tcp://host:8786; "
                        f"{scheduler_note})")
    g.add_argument("--workers", type=_nonneg_int if workers_note else _positive_int,
                   default=None, metavar="N",
                   help="a LocalCluster of N worker processes, one thread each" + workers_note)


def add_run_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "run", help="run (or resume) a pipeline on a Dask cluster",
        description="Run the pipeline file on a local Dask cluster (default) or an existing "
                    "scheduler. Re-running the same command resumes: finished tasks are kept "
                    "and interrupted optimiser starts continue from their checkpoints. "
                    "After an edit of the file, only tasks whose model, parameters, "
                    "partition or data changed are recomputed.")
    p.add_argument("pipeline", metavar="PIPELINE.toml")
    _add_dask_target(p, "default: a LocalCluster of one worker per core, closed at the end")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--resume", action="store_true", default=True,
                   help="keep finished tasks and checkpoints of an earlier run (default)")
    g.add_argument("--fresh", action="store_true", help="discard an earlier run of this name")
    p.add_argument("--name", default=None, help="override run.name")
    p.add_argument("--no-progress", action="store_true", help="no live progress line")
    p.add_argument("--no-report", action="store_true", help="do not write the report")
    p.add_argument("--check", action="store_true", help="only validate the pipeline file")
    p.add_argument("--job-script", action="store_true",
                   help="print the batch job script of the file's [cluster] table and exit")
    p.set_defaults(func=cmd_run)


def cmd_report(args) -> int:
    from .pipeline.outputs.report import write_report

    path = write_report(args.run, args.out)
    print(f"wrote {path}")
    return EXIT_OK


def add_report_parser(subparsers) -> None:
    p = subparsers.add_parser("report", help="write report.md and plots of a run",
                              description="Write report.md and PNG plots of a finished run.")
    p.add_argument("run", metavar="RUN_DIR_or_RUN.h5")
    p.add_argument("--out", metavar="DIR", default=None,
                   help="output directory (default: RUN_DIR/report)")
    p.set_defaults(func=cmd_report)


def _repro_root() -> Path:
    """The folder that holds this package: a source checkout's root, where the
    results page's ``repro/`` package lives beside ``bsvm_scale/``."""
    return Path(__file__).resolve().parents[1]


def load_repro():
    """The ``repro`` package of the source checkout holding this package.

    Raises
    ------
    CLIError
        When there is none (an installed wheel ships ``bsvm_scale`` only).
    """
    init = _repro_root() / "repro" / "__init__.py"
    if not init.is_file():
        raise CLIError(f"results: the results page is a tool of the source checkout, and "
                       f"{str(init.parent)!r} (beside the installed bsvm_scale) does not exist; "
                       "run 'bsvm-scale results' from a checkout of the repository "
                       "(pip install -e .)")
    loaded = sys.modules.get("repro")
    if loaded is not None and Path(getattr(loaded, "__file__", "") or "").resolve() == init.resolve():
        return loaded
    spec = importlib.util.spec_from_file_location("repro", init,
                                                  submodule_search_locations=[str(init.parent)])
    module = importlib.util.module_from_spec(spec)
    sys.modules["repro"] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop("repro", None)
        raise
    return module


def cmd_results(args) -> int:
    """``bsvm-scale results``: write the page with the checkout's ``repro`` package."""
    if not args.runs and args.source is None:
        raise CLIError("results: give RUN directories, or --from an archive or a folder of run "
                       "exports")
    repro = load_repro()
    path = repro.write_results(args.runs, args.out, bench_files=args.bench, prose=args.prose,
                               source=args.source)
    print(f"wrote {path}")
    return EXIT_OK


def add_results_parser(subparsers) -> None:
    p = subparsers.add_parser(
        "results", help="write docs/results.md from reproduction runs (source checkout)",
        description="Write results.md, its PNG figures (figures/) and summary tables (results/) "
                    "from the runs of the reproduction pipelines (pipelines/repro_*.toml). A "
                    "tool of the source checkout: the repro/ package beside bsvm_scale/.")
    p.add_argument("runs", nargs="*", metavar="RUN",
                   help="run directories, exports or run.h5 files")
    p.add_argument("--from", dest="source", default=None, metavar="ARCHIVE|FOLDER",
                   help="an archive written by 'bsvm-scale export --archive' (its .sha256 file "
                        "beside it is checked first) or a folder of run exports")
    p.add_argument("--out", default="docs", metavar="DIR", help="output folder (default: docs)")
    p.add_argument("--bench", nargs="+", action="extend", default=[], metavar="FILE",
                   help="benchmark JSON result files (rows of benchmarks/*.py --out); "
                        "repeatable")
    p.add_argument("--prose", default=None, metavar="FILE.md",
                   help="the page's prose, one '## <key>' section per paragraph (default: "
                        "repro/prose.md of the checkout)")
    p.set_defaults(func=cmd_results)


def cmd_export(args) -> int:
    """``bsvm-scale export``: compact copies of runs, or one checksummed archive of them."""
    from .pipeline.outputs.export import export_runs

    if args.archive is not None:
        from .pipeline.outputs.archive import checksum_path, write_archive

        info = write_archive(args.runs, args.archive, base=args.base,
                             max_prediction_cases=args.max_prediction_cases)
        print(f"wrote {info['archive']} ({info['bytes'] / 2 ** 20:.2f} MiB; runs "
              f"{', '.join(info['runs'])}) and {checksum_path(info['archive'])} "
              f"(SHA-256 {info['sha256']})")
        return EXIT_OK
    if args.base is not None:
        raise CLIError(f"--base {args.base!r}: an earlier archive is merged into a new one only; "
                       "give --archive OUT.tar.gz as well")
    for r, info in export_runs(args.runs, args.out or "docs/runs", args.max_prediction_cases):
        print(f"exported {r} -> {info['path']} ({info['bytes'] / 2 ** 20:.2f} MiB, "
              f"{info['models']} model files, predictions dropped from "
              f"{info['predictions_dropped']} tasks)")
    return EXIT_OK


def add_export_parser(subparsers) -> None:
    from .pipeline.outputs.export import MAX_PREDICTION_CASES

    p = subparsers.add_parser(
        "export", help="compact copies of runs, or one checksummed archive of them",
        description="Write a compact copy of each run (run record, generated data, the models "
                    "of the first partition) to OUT/<run name>, or pack the copies into one "
                    ".tar.gz with a SHA-256 checksum file beside it (--archive), from which "
                    "'bsvm-scale results --from' remakes the results page.")
    p.add_argument("runs", nargs="+", metavar="RUN",
                   help="run directories, run.h5 files or exports")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--out", default=None, metavar="DIR",
                   help="folder of the exports (default: docs/runs, not kept in git)")
    g.add_argument("--archive", default=None, metavar="OUT.tar.gz",
                   help="write one archive of the exports and OUT.tar.gz.sha256 beside it")
    p.add_argument("--base", default=None, metavar="OLD.tar.gz",
                   help="with --archive: also pack the runs of this earlier archive that no RUN "
                        "replaces (its checksum is checked first)")
    p.add_argument("--max-prediction-cases", type=int, default=MAX_PREDICTION_CASES,
                   help="keep the shown tasks' test predictions up to this many test "
                        f"cases (default: {MAX_PREDICTION_CASES})")
    p.set_defaults(func=cmd_export)


def cmd_predict(args) -> int:
    from .pipeline.run.scoring import predict_file

    out = predict_file(args.model, args.input, args.out, chunk_size=args.chunk_size,
                       scheduler=args.scheduler, workers=args.workers,
                       by_position=args.by_position, progress=not args.no_progress,
                       id_column=args.id, unknown=args.unknown)
    notes = [f"{out[k]} {what}" for k, what in (("n_unknown", "unseen categories coded as "
                                                 "unknown"), ("n_without_prediction",
                                                 "rows without a prediction (missing numbers)"))
             if out.get(k)]
    print(f"wrote {out['out']}: {out['n_rows']} rows ({', '.join(out['outputs'])}) in "
          f"{out['seconds']:.1f} s" + (f"; {', '.join(notes)}" if notes else ""))
    return EXIT_OK


def add_predict_parser(subparsers) -> None:
    from .pipeline.run.scoring import DEFAULT_CHUNK

    p = subparsers.add_parser(
        "predict", help="score new inputs with a saved model",
        description="Apply a model file to a data set (.h5), a .npy array or a CSV file with a "
                    "header, chunk by chunk, and write the predictions (mean and standard "
                    "deviations, or classes, probabilities and the latent mean and sd) to an "
                    "HDF5 file with the model's and the input's provenance. CSV columns are "
                    "matched to the feature names stored in the model.")
    p.add_argument("model", metavar="MODEL.h5")
    p.add_argument("input", metavar="INPUT")
    p.add_argument("--out", required=True, metavar="OUT.h5")
    _add_dask_target(p, "workers must see the files",
                     "; 0: score in this process. Default: in this process for up to 8 "
                     "chunks, else one worker per core")
    p.add_argument("--chunk-size", type=_positive_int, default=DEFAULT_CHUNK, metavar="N",
                   help=f"rows per chunk (default {DEFAULT_CHUNK})")
    p.add_argument("--by-position", action="store_true",
                   help="take the input columns by position, not by name")
    p.add_argument("--id", default=None, metavar="COLUMN",
                   help="CSV column of case identifiers, written beside the predictions as "
                        "case_id (a data set file's own identifiers are copied without it)")
    p.add_argument("--unknown", choices=["error", "ignore"], default=None,
                   help="a model fitted on a table: categories not seen in training are an "
                        "error naming column and value, or coded as unknown and counted in the "
                        "output's attributes (default: the model's policy)")
    p.add_argument("--no-progress", action="store_true", help="no progress line")
    p.set_defaults(func=cmd_predict)


def cmd_schema(args) -> int:
    """Print every key of a pipeline file (run, datasets, models, cv, and per model kind its
    search and settings keys, from the estimators' own parameter constraints) with its type,
    allowed values, default and description, as one Markdown table; with --out, write it as
    the reference page (docs/reference/pipeline_schema.md is made this way)."""
    from .pipeline.spec.schema import schema_page, schema_markdown

    if args.out is None:
        print(schema_markdown(), end="")
        return EXIT_OK
    from ._util.atomic import atomic_path

    with atomic_path(args.out) as tmp:
        Path(tmp).write_text(schema_page())
    return EXIT_OK


def add_schema_parser(subparsers) -> None:
    p = subparsers.add_parser("schema", help="print the keys of pipeline files as a Markdown table",
                              description=" ".join(cmd_schema.__doc__.split()))
    p.add_argument("--out", type=Path, default=None,
                   help="write the reference page (title, how it was made, the table) to this file")
    p.set_defaults(func=cmd_schema)


COMMANDS = [add_datasets_parser, add_run_parser, add_predict_parser, add_report_parser,
            add_results_parser, add_export_parser, add_schema_parser]


# -------------------------------------------------------------------- main


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Bayesian support vector machines at scale (bsvm_scale).",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add in COMMANDS:
        add(sub)
    return parser


def _error(message: str) -> int:
    message = " ".join(str(message).split())  # one line
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv=None) -> int:
    """Run the CLI with ``argv`` (default ``sys.argv[1:]``); return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, usage errors (already printed)
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    try:
        return int(args.func(args) or EXIT_OK)
    except (CLIError, ValueError, TypeError, KeyError, OSError) as exc:
        msg = exc.args[0] if isinstance(exc, KeyError) and exc.args else exc
        if isinstance(exc, OSError) and not str(exc):
            msg = repr(exc)
        return _error(str(msg))
    except KeyboardInterrupt as exc:
        signum = getattr(exc, "signum", signal.SIGINT)
        _error(f"interrupted by {signal.Signals(signum).name}; finished tasks and checkpoints "
               "are kept (a pipeline's run.h5 lists the finished tasks): run the same command "
               "again to resume")
        return 128 + int(signum)


if __name__ == "__main__":
    sys.exit(main())
