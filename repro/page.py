"""The page: ``<out>/results.md``, its figures and its summary tables.

:func:`write_results` reads the runs (run directories, exports, a folder of
exports or a checksummed archive of them), gives every protocol one section
(the runs of a protocol, e.g. ``repro_c3`` and ``repro_c3_large``, one
sub-section each) and adds the machine and versions, the commands that remake
the page, what was reduced or left out, the automatic checks of what the
method promises, and the peer benchmarks.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np

from bsvm_scale.pipeline.outputs.archive import extract_archive, run_dirs, verify_archive
from bsvm_scale.pipeline.run.evidence_grid import is_grid
from bsvm_scale.pipeline.outputs.runfile import format_table, most_workers, summary_rows, wall_clock

from . import bench, c1, c2, c3, c4, r1, r2, r3, r4, r5
from .figures import Figures
from .prose import Prose
from .runs import PROTOCOLS, Run, protocol_of, sort_runs
from .summaries import write_summaries

__all__ = ["write_results", "data_used", "SECTIONS"]

#: the section of each protocol: ``section(run, figures, notes, prose) -> lines``
SECTIONS = {"r1": r1.section, "r2": r2.section, "r3": r3.section, "r4": r4.section,
            "r5": r5.section, "c1": c1.section, "c2": c2.section, "c3": c3.section,
            "c4": c4.section}
#: the source checkout (pipelines/ and the relative paths shown on the page)
ROOT = Path(__file__).resolve().parents[1]


def data_used(run_datasets, key, prose):
    """The 'Data:' statement of a run: its own data sets' (``data.<name>`` of the
    prose) when every one has such an entry, else the protocol's."""
    names = list(run_datasets)
    if names and all(prose.get(f"data.{n}") for n in names):
        return " ".join(prose[f"data.{n}"] for n in names)
    return prose[f"{key}.data"]


def _shown(path):
    """``path`` relative to the current directory when it lies below it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def _run_header(run):
    """One paragraph: description, status, wall time, partitions, training sizes."""
    m = run.rec["meta"]
    parts = {ds: len(v["partitions"]) for ds, v in run.rec["datasets"].items()}
    sizes = sorted({len(np.asarray(v["partitions"][0]["train"]))
                    for v in run.rec["datasets"].values()})
    text = (f"Run `{run.name}` ({m.get('status', '?')}: {m.get('n_done', 0)}/"
            f"{m.get('n_tasks', 0)} tasks, {m.get('n_failed', 0)} failed), "
            f"{wall_clock(m, minutes=True)} with {most_workers(m)} worker(s); "
            f"pipeline `{Path(m.get('pipeline_path', '')).name}`; partitions per data set: "
            f"{', '.join(f'{k} {v}' for k, v in parts.items())}; training sizes: "
            f"{', '.join(map(str, sizes))}.")
    if m.get("description"):
        text = f"{m['description']} {text}"
    if run.left_out:
        common = {ds: len(next(iter(ms.values()), {})) for ds, ms in run.rec["results"].items()
                  if ds in run.left_out}
        text += (" Not every model finished every partition: this page compares the models "
                 "of a data set on the partitions all of them finished, every start included ("
                 + ", ".join(f"{ds} {k}" for ds, k in common.items())
                 + f"; {sum(run.left_out.values())} other partition results left out).")
    return [text, ""]


def _summary(run):
    """The run's summary table (as in ``bsvm-scale report``)."""
    rows = summary_rows(run.rec)
    if not rows:
        return ["(no finished results)", ""]
    return ["Summary (mean +- sd over partitions; time = total task seconds, see TIMES at the "
            "top):", "", format_table(rows, markdown=True), ""]


def _protocol_section(key, runs, figs, notes, prose):
    """One protocol's section: title, data, then each run's part."""
    lines = [f"## {prose[f'{key}.title'] if key else runs[0].name}", ""]
    if key:
        lines += [f"Data: {prose[f'{key}.data']}", ""]
    for run in runs:
        if key and len(runs) > 1:
            lines += [f"### Run `{run.name}`", ""]
        own = data_used(run.rec["datasets"], key, prose) if key else None
        if own and own != prose[f"{key}.data"]:
            lines += [f"Data of this run: {own}", ""]
        lines += _run_header(run)
        if key:
            lines += SECTIONS[key](run, figs, notes, prose)
        lines += _summary(run)
        if run.rec["meta"].get("status") != "complete":
            notes.append(f"Run {run.name} is incomplete ({run.rec['meta'].get('n_done')}/"
                         f"{run.rec['meta'].get('n_tasks')} tasks); its tables cover the "
                         "finished tasks.")
    return lines


def _machine_line(m):
    return f"{m['system']}, {m['cores']} cores ({m['cpu']}), {m['memory_gib']:.1f} GiB memory"


def _machine(runs):
    """Operating system, cores, CPU and memory of the machines the runs recorded
    (runs made before that record: this machine, said so), hosts, package
    versions and source commits."""
    from bsvm_scale.pipeline.run.tasks import machine

    recorded = {}
    for r in runs:
        if r.rec["meta"].get("machine"):
            recorded.setdefault(_machine_line(r.rec["meta"]["machine"]), []).append(r.name)
    lines = [f"- {k}: runs {', '.join(v)}" for k, v in recorded.items()]
    older = [r.name for r in runs if not r.rec["meta"].get("machine")]
    if older:
        lines.append(f"- {_machine_line(machine())} (the machine that made this page; runs "
                     f"{', '.join(older)} predate the machine record)")
    vers = runs[0].rec["meta"].get("versions", {}) if runs else {}
    commits = {}
    for r in runs:
        commits.setdefault(r.rec["meta"].get("commit") or "not recorded", []).append(r.name)
    hosts = sorted({r.rec["meta"].get("host", "?") for r in runs})
    return ["## Machine and versions", ""] + lines + \
        [f"- hosts of the runs: {', '.join(hosts)}",
         "- " + ", ".join(f"{k} {v}" for k, v in vers.items()),
         "- source commit of the runs: " + "; ".join(f"{c} ({', '.join(v)})"
                                                      for c, v in commits.items())]


def _largest(runs):
    """One line on the largest training set fitted in the runs: time and memory."""
    best = None
    for run in runs:
        for t in run.rec.get("tasks", {}).values():
            key = (int(t.get("n_train", 0)), float(t.get("fit_time", 0.0)))
            if not is_grid(t) and (best is None or key > best[0]):
                best = (key, run.name, t)
    if best is None:
        return []
    (n, fit), name, t = best
    rss = t.get("peak_rss_mb")
    if t.get("peak_rss_scope") == "task":
        mem = f", peak RSS of the task {rss:.0f} MiB" if rss else ""
    else:
        mem = f", worker peak RSS {rss:.0f} MB (an upper bound: workers are reused)" if rss else ""
    one = " (one optimiser start)" if t.get("start", -1) >= 0 else ""
    return [f"- Largest training set fitted: n = {n} ({t['model']} on {t['dataset']}, run "
            f"{name}), {fit:.0f} s for one fit{one}{mem}.", ""]


def _missing_pipelines(runs):
    """Reproduction pipelines of the checkout with no run on the page (a reduced
    variant or a run named after a pipeline, e.g. ``<name>_reduced``, counts as
    its run)."""
    names = [r.name for r in runs]
    out = []
    order = {k: i for i, k in enumerate(PROTOCOLS)}
    for p in sorted((ROOT / "pipelines").glob("repro_*.toml"),
                    key=lambda p: (order.get(protocol_of(p.stem), len(order)), p.stem)):
        if "_reduced" in p.stem or any(n == p.stem or n.startswith(p.stem + "_") for n in names):
            continue
        out.append(f"- {p.stem}: not among the run exports this page was made from, so it has "
                   f"no section; `bsvm-scale run pipelines/{p.name} --workers 2` and a new "
                   f"archive (`bsvm-scale export runs/{p.stem} --archive NEW.tar.gz --base "
                   "OLD.tar.gz`) add it.")
    return out


def _scope_and_notes(runs, notes, prose):
    """The 'scope' and 'differences' sections."""
    scope = [f"- `{r.name}` is a reduced run; the full protocol is "
             f"`{r.name.split('_reduced')[0]}.toml`." for r in runs if "_reduced" in r.name]
    scope += _missing_pipelines(runs) + [f"- {t}" for _, t in prose.with_prefix("scope.")]
    lines = ["## Scope: what was reduced or left out", ""] + scope + [""] if scope else []
    stated = [t for _, t in prose.with_prefix("note.")] + notes
    return lines + ["## Where results differ from what the method promises", ""] + \
        ([f"- {n}" for n in stated] or ["- No automatic check failed."]) + [""]


def _regenerate(runs, bench_files, out, archive):
    """The commands that remake the runs, their archive and the page."""
    lines = ["## Regenerate", ""]
    lines += [f"    bsvm-scale run pipelines/"
              f"{Path(r.rec['meta'].get('pipeline_path', r.name)).name} --workers 1"
              for r in runs]
    source = f"--from {archive['path'].name}" if archive else \
        " ".join(_shown(r.dir) for r in runs)
    if archive:
        lines.append("    bsvm-scale export " + " ".join(f"runs/{r.name}" for r in runs)
                     + f" --archive {archive['path'].name}")
    bench = (" --bench " + " ".join(_shown(b) for b in bench_files)) if bench_files else ""
    lines.append(f"    bsvm-scale results {source}{bench} --out {_shown(out)}")
    return lines + ["", "(`bash docs/regenerate.sh ARCHIVE` runs the last command with the "
                        "benchmark files of this page.)", ""]


def _head(runs, bench_files, out, archive, prose):
    """Title, introduction, the archive statement and the regenerate commands."""
    lines = ["# Reproduction of the reference experiments", "", prose["page.intro"], ""]
    if archive:
        name = archive["path"].name
        lines += [f"Made from the run-export archive `{name}`, SHA-256 `{archive['sha256']}` "
                  f"(checked against `{name}.sha256` before it was read).", "",
                  prose["page.archive"], ""]
    return lines + _regenerate(runs, bench_files, out, archive)


def _open_runs(run_paths, source, tmp):
    """``(runs, archive)``: the runs of ``run_paths`` and of ``source`` (a folder
    of exports or an archive, extracted into ``tmp`` after its checksum is
    verified); ``archive`` is ``{"path", "sha256"}`` of the archive, or None."""
    paths, archive = list(run_paths), None
    if source is not None and Path(source).is_file():
        archive = {"path": Path(source), "sha256": verify_archive(source)}
        paths += extract_archive(source, tmp)
    elif source is not None:
        paths += run_dirs(source)
    if not paths:
        raise ValueError("no runs: give RUN directories or --from an archive or folder of "
                         "run exports")
    return sort_runs([Run(p) for p in paths]), archive


def write_results(run_paths=(), out="docs", bench_files=(), prose=None, source=None):
    """Write ``results.md``, ``figures/*.png`` and ``results/*.csv`` into ``out``.

    Parameters
    ----------
    run_paths : list of path, optional
        Run directories, exports or ``run.h5`` files.
    out : path, optional
        Output folder (created).
    bench_files : list of path, optional
        JSON benchmark result files (``{"rows": [...]}`` or a list of rows).
    prose : path, optional
        The prose file (default ``repro/prose.md``).
    source : path, optional
        An archive written by ``bsvm-scale export --archive`` (its checksum
        file beside it is checked first) or a folder of run exports.

    Returns
    -------
    Path
        The written ``results.md``.
    """
    out, prose = Path(out), Prose(prose)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bsvm-results-") as tmp:
        runs, archive = _open_runs(run_paths, source, Path(tmp))
        figs, notes, body = Figures(out), [], []
        for key in [*PROTOCOLS, None]:
            group = [r for r in runs if protocol_of(r.name) == key]
            for part in ([group] if key else [[r] for r in group]):
                if part:
                    body += _protocol_section(key, part, figs, notes, prose)
        body += bench.section(list(bench_files), figs, prose)
        head = _head(runs, list(bench_files), out, archive, prose) + _machine(runs) + \
            (_largest(runs) or [""]) + [prose["page.times"], ""] + \
            _scope_and_notes(runs, notes, prose)
        write_summaries(runs, out)
    figs.remove_others()
    path, tmp_page = out / "results.md", out / ".results.md.tmp"
    tmp_page.write_text("\n".join(head + body) + "\n", encoding="utf-8")
    os.replace(tmp_page, path)
    return path
