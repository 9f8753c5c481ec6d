"""Content keys of a run's data sets and tasks: what may be kept when a pipeline file changes.

A run directory can be resumed with an edited pipeline file (a model added, a
size dropped, a comment changed). Whether a finished task -- or a checkpoint
of an unfinished one -- still answers the edited file is decided by a key
over everything the task's result depends on:

* the model kind and label, its estimator parameters (but not those in
  :data:`UNKEYED_PARAMS`) and CV settings,
* the start index and the number of starts,
* the training and test indices of the partition,
* a digest of the data (X and y bytes),
* the keys of the tasks it depends on (protocol A, ``fix_from``; the starts an
  evidence grid is centred on) and the grid's options.

Each task directory holds its key in a small text file ``key``. Generated
data sets keep the key of their generation spec in ``data/<label>.key``.

A task directory made for another key is set aside under
``tasks/.versions/<task id>/<key>`` rather than deleted, and brought back when
an edit is reverted. Directories written before keys existed (no ``key``
file) are adopted only when the pipeline file is byte-for-byte the one that
made them; otherwise they are recomputed, since nothing else proves what
they were made from.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

import numpy as np

from ...inference.evidence_lowrank import DEFAULT_TOL
from ...optimization.driver import PIECEWISE_OPTIONS
from ...optimization.starts import DEFAULT_ARD_INIT
from ..outputs.records import atomic_write_bytes
from .taskio import KEY_FILE, dependencies, read_key

__all__ = ["array_digest", "dataset_key", "task_keys", "key_changed", "reconcile_tasks",
           "read_key", "write_key", "KEY_FILE", "VERSIONS_DIR"]

#: earlier versions of task directories live in ``<tasks>/VERSIONS_DIR/<task id>/<key>``
VERSIONS_DIR = ".versions"
#: versions kept per task (the most recently set aside)
KEEP_VERSIONS = 3


def _json(obj):
    def default(o):
        if isinstance(o, np.ndarray):
            return o.tolist()
        if isinstance(o, np.generic):
            return o.item()
        if isinstance(o, (tuple, set)):
            return list(o)
        raise TypeError(f"cannot key a {type(o).__name__}")
    return json.dumps(obj, sort_keys=True, default=default, separators=(",", ":"))


def _sha(*parts) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode("utf-8"))
        h.update(b"\0")
    return h.hexdigest()


def array_digest(*arrays) -> str:
    """SHA-256 over dtype, shape and bytes of each array."""
    parts = []
    for a in arrays:
        a = np.ascontiguousarray(a)
        parts += [a.dtype.str, repr(a.shape), a.tobytes()]
    return _sha(*parts)


def dataset_key(spec) -> str:
    """Key of a generated data set's spec (a :class:`DatasetSpec`)."""
    return _sha(_json(dataclasses.asdict(spec)))


#: library defaults that changed what a task computes, keyed in when a task's
#: parameters leave them out: ``(kinds, condition on the parameters, {name: default})``;
#: a dict-valued default is merged under the task's own dict. Tasks made before
#: the change (their key lacks the default) are then recomputed rather than
#: mixed with new ones. BSVR and BTSVC ARD: the route of the search (``ard_init``,
#: ``"continuation"`` since it became the default; BSVR ARD tasks keyed before that
#: carry ``"isotropic"``, the default before). BSVR and BTSVC: the evidence search's
#: options (the stall in nats and the slope trial). BTSVC: ``multi_class``
#: (``"ovo"`` since it became the default; every BTSVC task is re-keyed once,
#: also two-class ones, as the condition sees the parameters only). BSVR and
#: BTSVC: ``evidence_tol`` (0.05 nats since 2026-12-08, 0.01 before; it changes
#: only fits whose evidence takes the factor, but the condition sees the
#: parameters only, so every such task is re-keyed once).
KEYED_DEFAULTS = ((("bsvr", "btsvc"), lambda p: bool(p.get("ard")),
                   {"ard_init": DEFAULT_ARD_INIT}),
                  (("bsvr", "btsvc"), lambda p: True, {"optimizer_options": PIECEWISE_OPTIONS}),
                  (("btsvc",), lambda p: True, {"multi_class": "ovo"}),
                  (("bsvr", "btsvc"), lambda p: True, {"evidence_tol": DEFAULT_TOL}))


#: estimator parameters that do not change what a task computes, left out of keys
#: (``n_jobs``: threads of BSVR and BTSVC searches; their tasks fit with BLAS on one
#: thread, where the result does not depend on it)
UNKEYED_PARAMS = ("n_jobs",)


def _keyed_params(kind, params):
    params = {k: v for k, v in (params or {}).items() if k not in UNKEYED_PARAMS}
    for kinds, applies, defaults in KEYED_DEFAULTS:
        if kind in kinds and applies(params):
            params = {**defaults, **params, **{
                name: {**value, **params[name]} for name, value in defaults.items()
                if isinstance(value, dict) and isinstance(params.get(name), dict)}}
    return params


def _data_digest(d):
    """Digest of a prepared data set: inputs, targets, case ids and (where the
    data set has them) case weights and table coding."""
    parts = [d["X"], d["y"]] + [d[k] for k in ("ids", "weights") if d.get(k) is not None]
    digest = array_digest(*parts)
    if d.get("coding") is not None:
        digest = _sha(digest, d["coding"])
    return digest


def task_keys(specs, data):
    """``{task_id: key}`` for the planned ``specs`` over the prepared ``data``."""
    digests = {label: _data_digest(d) for label, d in data.items()}
    keys = {}
    for s in sorted(specs, key=lambda s: bool(dependencies(s))):  # dependencies first
        body = {k: s[k] for k in ("kind", "model", "dataset", "partition", "params", "cv",
                                  "start", "n_starts")}
        body["params"] = _keyed_params(s["kind"], s["params"])
        if s.get("evidence_grid") is not None:
            body["evidence_grid"] = s["evidence_grid"]
        if s.get("binary") is not None:  # one binary model of a multi-class start
            body["binary"] = int(s["binary"])
        if s.get("sample_weight") is False and data[s["dataset"]].get("weights") is not None:
            body["sample_weight"] = False
        keys[s["task_id"]] = _sha(_json(body), array_digest(np.asarray(s["train"])),
                                  array_digest(np.asarray(s["test"])), digests[s["dataset"]],
                                  *[keys[t] for t in dependencies(s)])
    return keys


def write_key(path, key):
    """Store ``key`` at ``path`` atomically."""
    atomic_write_bytes(Path(path), key.encode("ascii"))


def key_changed(key_file, key, *, adopt_unkeyed):
    """True when what ``key_file`` vouches for (a task directory, a data file) was
    made for another spec than ``key``.

    A missing key file counts as made for ``key`` only when ``adopt_unkeyed``
    (the pipeline file is the one that made it).
    """
    old = read_key(key_file)
    return old != key and not (old is None and adopt_unkeyed)


def _has_content(task_dir: Path):
    return any(p.name != KEY_FILE for p in task_dir.iterdir())


def _versions(task_dir: Path) -> Path:
    """Where earlier versions of ``task_dir`` are kept: ``<tasks>/.versions/<task id>``."""
    return task_dir.parent / VERSIONS_DIR / task_dir.name


def _set_aside(task_dir: Path, old_key: str):
    """Move ``task_dir`` (made for ``old_key``) to its versions, in one rename;
    keep the newest :data:`KEEP_VERSIONS`."""
    home = _versions(task_dir)
    home.mkdir(parents=True, exist_ok=True)
    dest = home / old_key
    if dest.exists():
        shutil.rmtree(dest)
    others = list(home.iterdir())
    task_dir.rename(dest)
    # the time set aside, strictly after every kept version's (the rename keeps
    # the old mtime, and the clock may not advance between two quick edits)
    t = max([time.time_ns()] + [p.stat().st_mtime_ns + 1 for p in others])
    os.utime(dest, ns=(t, t))
    others.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    for p in others[KEEP_VERSIONS - 1:]:
        shutil.rmtree(p, ignore_errors=True)


def _restore(task_dir: Path, key: str) -> bool:
    """Move a version made for ``key`` back to ``task_dir`` (absent), in one rename."""
    src = _versions(task_dir) / key
    if read_key(src / KEY_FILE) != key:  # None when there is no such version
        return False
    src.rename(task_dir)
    return True


def reconcile_tasks(specs, keys, *, adopt_unkeyed):
    """Give every task directory its key; set aside those made for another spec
    and bring back earlier versions made for this one.

    A directory made for another key is not deleted: it is renamed to
    ``<tasks>/.versions/<task id>/<its key>`` (the newest :data:`KEEP_VERSIONS`
    per task are kept), so that reverting an edit of the pipeline file finds
    its results again. Each move is one rename, so a run killed in between
    leaves every task either in place or among the versions.

    Parameters
    ----------
    specs : list of dict
        Planned tasks (``task_id``, ``task_dir``).
    keys : dict
        From :func:`task_keys`.
    adopt_unkeyed : bool
        True when the pipeline file is unchanged: directories without a key
        file were made by this very file and are kept. Otherwise their
        contents are deleted (no key says what they were made for).

    Returns
    -------
    dict
        ``{"cleared": [task ids whose earlier results no longer apply and that
        start afresh], "restored": [task ids given back a version made for
        their key]}``.
    """
    cleared, restored = [], []
    for s in specs:
        d = Path(s["task_dir"])
        key = keys[s["task_id"]]
        old = read_key(d / KEY_FILE) if d.is_dir() else None
        if old == key:
            continue
        content = d.is_dir() and _has_content(d)
        if content and old is None and adopt_unkeyed:
            write_key(d / KEY_FILE, key)
            continue
        if content and old is not None:
            _set_aside(d, old)
        elif d.is_dir():
            shutil.rmtree(d)  # empty, or unkeyed contents nothing vouches for
        if _restore(d, key):
            restored.append(s["task_id"])
            continue
        if content:
            cleared.append(s["task_id"])
        d.mkdir(parents=True, exist_ok=True)
        write_key(d / KEY_FILE, key)
    return {"cleared": cleared, "restored": restored}
