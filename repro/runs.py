"""Runs as the page reads them: a run record with accessors, and its protocol.

A run is recognised by its name (``repro_r1`` ... ``repro_c4``; a suffix such as
``repro_r2_reduced`` or ``repro_c3_large`` is allowed) and gets the section of
its protocol; the runs of one protocol share that section.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from bsvm_scale.pipeline.outputs.export import MAX_MODEL_TRAIN, keep_common_partitions, read_checked
from bsvm_scale.pipeline.outputs.runfile import read_run_file

__all__ = ["Run", "PROTOCOLS", "protocol_of", "short_name", "groups_by_size", "size_of",
           "MODELS_READ", "MODELS_AT_LARGEST_SIZE", "sort_runs"]

#: protocol keys in page order
PROTOCOLS = ("r1", "r2", "r3", "r4", "r5", "c1", "c2", "c3", "c4")
#: labels or kinds of the models a protocol's section loads (``Run.model``, the
#: first shown partition); ``bsvm-scale export`` copies at least these
MODELS_READ = {"c1": ("btsvc", "gpc"), "c2": ("btsvc", "gpc"), "c4": ("btsvc",)}
#: protocols whose section loads models of the largest training size only (C2's contours)
MODELS_AT_LARGEST_SIZE = {"c2"}


def protocol_of(name):
    """Protocol key (``'r1'`` ... ``'c4'``) of a run name like ``repro_r2_reduced``, or None."""
    m = re.match(r"^repro_([rc]\d)(?:$|[_-])", str(name))
    return m.group(1) if m and m.group(1) in PROTOCOLS else None


def short_name(name):
    """A run's name without the ``repro_`` prefix (figure and table file names)."""
    return str(name)[len("repro_"):] if str(name).startswith("repro_") else str(name)


def sort_runs(runs):
    """Runs in page order: by protocol, then by name; runs of no protocol last."""
    def key(r):
        p = protocol_of(r.name)
        return (p is None, PROTOCOLS.index(p) if p else 0, r.name)
    return sorted(runs, key=key)


def size_of(label):
    """Training size of a data set label ``<name>-n<size>`` (None otherwise)."""
    m = re.search(r"-n(\d+)$", label)
    return int(m.group(1)) if m else None


def groups_by_size(run):
    """``{size: label}`` of data sets made from a list of training sizes; for a
    run of a single size (a label without ``-n<size>``), its one data set under
    its training size."""
    out = {}
    for ds in run.datasets():
        n = size_of(ds)
        if n is not None:
            out[n] = ds
    if not out and len(run.datasets()) == 1:
        ds = run.datasets()[0]
        out[len(run.partition(ds)[0])] = ds
    return dict(sorted(out.items()))


class Run:
    """One run record with accessors (``rec``, ``dir``, ``name``, ``left_out``).

    Only the partitions that every model of a data set finished are kept
    (:func:`bsvm_scale.pipeline.outputs.export.keep_common_partitions`).

    Parameters
    ----------
    path : path
        A run directory, an export or a ``run.h5`` file.
    rec : dict, optional
        The record already read from ``path``; its results are copied, not changed.
    """

    def __init__(self, path, rec=None):
        self.rec = read_run_file(path) if rec is None else \
            {**rec, "results": {ds: dict(m) for ds, m in rec.get("results", {}).items()}}
        p = Path(path)
        self.dir = p if p.is_dir() else p.parent
        self.name = self.rec["meta"]["name"]
        self.left_out = keep_common_partitions(self.rec)

    def datasets(self):
        return list(self.rec["datasets"])

    def models(self, ds):
        return list(self.rec.get("results", {}).get(ds, {}))

    def entries(self, ds, model):
        """Chosen start per partition, in partition order (each with its task record)."""
        parts = self.rec.get("results", {}).get(ds, {}).get(model, {})
        out = []
        for key in sorted(parts):
            e = dict(parts[key])
            e["task"] = self.rec["tasks"].get(e["best_task"], {})
            out.append(e)
        return out

    def metric(self, ds, model, name):
        """The test metric ``name`` per partition (nan where not recorded)."""
        return np.array([e["metrics"].get(name, np.nan) for e in self.entries(ds, model)], float)

    def data(self, ds, extra=True):
        """The data set ``ds`` (FileNotFoundError when no file of its size is found)."""
        return read_checked(self.dir, ds, self.rec["datasets"][ds],
                            self.rec["meta"].get("run_dir"), extra=extra)[1]

    def partition(self, ds, k=0):
        """``(train, test)`` indices of partition ``k`` of ``ds``."""
        p = self.rec["datasets"][ds]["partitions"][k]
        return np.asarray(p["train"]), np.asarray(p["test"])

    def grid(self, ds, model, k=0):
        """The evidence grid of partition ``k`` of (``ds``, ``model``), or None."""
        return self.rec.get("grids", {}).get(ds, {}).get(model, {}).get(f"p{k:03d}")

    def loads_model(self, ds, model):
        """True when the page loads this model (its label or kind is in
        :data:`MODELS_READ` for the run's protocol, trained on at most
        ``MAX_MODEL_TRAIN`` cases)."""
        e = self.entries(ds, model)
        key = protocol_of(self.name)
        if key in MODELS_AT_LARGEST_SIZE:
            sizes = groups_by_size(self)
            if not sizes or ds != sizes[max(sizes)]:
                return False
        if e and int(e[0]["task"].get("n_train", 0)) > MAX_MODEL_TRAIN:
            return False
        return bool(e) and (model in MODELS_READ.get(key, ()) or
                            e[0]["kind"] in MODELS_READ.get(key, ()))

    def model(self, ds, model, k=0):
        """The stored model of the ``k``-th shown partition, or None when the page
        does not load it (:meth:`loads_model`, ``k`` = 0 only) or a run directory
        lacks its file; an export lacking it is an error."""
        from bsvm_scale.storage import load_model

        e = self.entries(ds, model)
        if len(e) <= k or k != 0 or not self.loads_model(ds, model):
            return None
        path = self.dir / e[k]["model_file"]
        if not path.exists() and "exported_from" in self.rec["meta"]:
            raise FileNotFoundError(f"export {str(self.dir)!r} lacks the model file "
                                    f"{e[k]['model_file']!r}; export the run again")
        return load_model(path) if path.exists() else None
