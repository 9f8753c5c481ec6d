"""Peer benchmarks: tables and figures of the JSON rows written by
``benchmarks/*.py --out`` (``{"rows": [...]}`` or a list of rows).

Rows with a ``bench`` column are shown in one table per value of it, each with
only the columns its rows fill. Nested values (``{"bsvm_scale": {"fit_s":
...}}``) become columns ``bsvm_scale.fit_s``. A figure shows every series of
three sizes or more (rows grouped by their text columns): seconds and peak
memory against ``n`` on log-log axes, one panel per group and unit, each
series named in words by the prose (``series.<file stem>.<column>`` or
``series.<column>``; panels by ``group.<column>=<value>`` of their text columns).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from .figures import log_axes, pyplot
from .stats import fit_exponent
from .tables import table

__all__ = ["section", "bench_ratios", "bench_exponents", "scaling_series", "figure_name"]


def flat(row, prefix=""):
    """``row`` with nested dicts flattened to ``outer.inner`` keys."""
    out = {}
    for k, v in row.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def groups(rows):
    """Rows with an ``n`` (flattened), grouped by their text-valued columns:
    ``{((column, value), ...): rows}``."""
    out = {}
    for r in (flat(r) for r in rows if "n" in r):
        key = tuple(sorted((k, v) for k, v in r.items() if isinstance(v, str)))
        out.setdefault(key, []).append(r)
    return out


def group_label(key):
    """A group's text columns as ``column=value ...`` (``-`` for none)."""
    return " ".join(f"{k}={v}" for k, v in key) or "-"


def _series(rs, col):
    pts = [(float(r["n"]), float(r[col])) for r in rs
           if isinstance(r.get(col), (int, float)) and not isinstance(r.get(col), bool)
           and np.isfinite(r[col])]
    return tuple(map(np.array, zip(*pts))) if pts else (np.array([]), np.array([]))


def bench_ratios(rows):
    """Min / median / max of every ratio column (name holds ``ratio`` or ``_over_``) per group.

    Returns
    -------
    list of [group, column, "n_min-n_max", min, median, max]
    """
    out = []
    for key, rs in groups(rows).items():
        for c in dict.fromkeys(k for r in rs for k in r):
            if "ratio" not in c and "_over_" not in c:
                continue
            n, v = _series(rs, c)
            if v.size:
                out.append([group_label(key), c, f"{int(n.min())}-{int(n.max())}", float(v.min()),
                            float(np.median(v)), float(v.max())])
    return out


def scaling_series(rows):
    """``(group key, column, n, values)`` of every time (``*_s``) and peak-memory
    column with at least three distinct ``n`` in its group, sorted by n."""
    out = []
    for group, rs in groups(rows).items():
        cols = [c for c in dict.fromkeys(k for r in rs for k in r)
                if (c.endswith("_s") or "peak" in c) and "ratio" not in c]
        for c in cols:
            n, v = _series(rs, c)
            if np.unique(n).size >= 3:
                order = np.argsort(n, kind="stable")
                out.append((group, c, n[order], v[order]))
    return out


def bench_exponents(rows):
    """Fitted ``a`` of ``value ~ n^a`` for every time (``*_s``) and peak-memory column.

    Rows (nested dicts flattened to ``outer.inner`` keys) are grouped by
    their text-valued columns (``bench``, ``model``, ``data``); a column
    with at least three distinct ``n`` in a group gets an exponent.

    Returns
    -------
    list of [group, column, "n_min-n_max", a]
    """
    return [[group_label(key), c, f"{int(n.min())}-{int(n.max())}", fit_exponent(n, v)]
            for key, c, n, v in scaling_series(rows)]


def figure_name(stem):
    """File name (without ``.png``) of a benchmark file's figure: its stem,
    prefixed by ``bench_`` unless it starts with it."""
    return stem if stem.startswith("bench") else f"bench_{stem}"


def _cell(v):
    return json.dumps(v) if isinstance(v, (dict, list)) else v


def _tables(name, rows):
    """One table per value of the ``bench`` column (one table without it), each
    with the columns its rows fill."""
    parts = {}
    for r in rows:
        parts.setdefault(r.get("bench"), []).append(flat(r))
    lines = []
    for bench, rs in parts.items():
        head = [h for h in dict.fromkeys(k for r in rs for k in r) if h != "bench"]
        lines += [f"`{name}`" + (f", rows of `{bench}`:" if bench is not None else ":"), ""]
        lines += table(head, [[_cell(r.get(h)) for h in head] for r in rs], drop_empty=True)
        lines.append("")
    return lines


def _words(prose, stem, column):
    """What ``column`` of the benchmark file ``stem`` measures, in words."""
    text = prose.get(f"series.{stem}.{column}") or prose.get(f"series.{column}")
    if text is None:
        raise KeyError(f"the prose file {str(prose.path)!r} has no words for the benchmark "
                       f"column {column!r} of {stem}.json; add '## series.{stem}.{column}' "
                       f"or '## series.{column}'")
    return text


def _panels(stem, rows, prose):
    """``{(group, unit): [(n, values, words)]}`` of the scaling series of ``rows``."""
    panels = {}
    for group, c, n, v in scaling_series(rows):
        if np.all(v > 0):
            unit = "peak memory [MiB]" if "peak" in c else "seconds"
            panels.setdefault((group, unit), []).append((n, v, _words(prose, stem, c)))
    return panels


def _figure(stem, rows, figs, prose):
    """Seconds and peak memory against n (log-log), one panel per group and unit."""
    panels = _panels(stem, rows, prose)
    if not panels:
        return []
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.8), squeeze=False)
    for ax, ((group, unit), series) in zip(axes[0], panels.items()):
        for n, v, words in series:
            ax.loglog(n, v, "o-", ms=4, label=words)
        ax.set_xlabel("training cases n")
        ax.set_ylabel(unit)
        if group:
            ax.set_title(", ".join(prose[f"group.{k}={v}"] for k, v in group), fontsize=10)
        log_axes(ax)
        ax.legend(fontsize=8)
    fig.suptitle(prose[f"bench.{stem}"], fontsize=11)
    fig.tight_layout()
    return figs.save(fig, figure_name(stem), f"{stem}: seconds and peak memory against n")


def _file_lines(path, figs, prose, exps, ratios):
    """Tables and figure of one benchmark file; appends its exponents and ratios."""
    path = Path(path)
    doc = json.loads(path.read_text())
    rows = doc.get("rows", doc) if isinstance(doc, dict) else doc
    if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)):
        return [f"`{path.name}`:", "", "```", json.dumps(doc, indent=1)[:20000], "```", ""]
    exps += [[path.name] + e for e in bench_exponents(rows)]
    ratios += [[path.name] + r for r in bench_ratios(rows)]
    return _tables(path.name, rows) + _figure(path.stem, rows, figs, prose)


def section(bench_files, figs, prose):
    """The peer-benchmark section: tables and figures of every file, the ratios
    at a glance and the scaling exponents (or how to measure them)."""
    lines = ["## Peer benchmarks", ""]
    if not bench_files:
        return lines + [prose["page.no-bench"], ""]
    exps, ratios = [], []
    for f in bench_files:
        lines += _file_lines(f, figs, prose, exps, ratios)
    if ratios:
        lines += ["Side-by-side ratios at a glance (every ratio column of the tables above; "
                  "its name says which way round):", ""]
        lines += table(["file", "group", "ratio", "sizes", "min", "median", "max"], ratios) + [""]
    if exps:
        lines += ["Scaling exponents a of seconds (and peak memory) ~ n^a, least squares over "
                  "the sizes of each benchmark series above (a group = rows sharing their text "
                  "columns; 3 sizes or more):", ""]
        lines += table(["file", "group", "column", "sizes", "a"], exps) + [""]
    return lines
