"""Where a pipeline runs: the ``[cluster]`` table of a pipeline file (the
language; :mod:`bsvm_scale.pipeline.run.backends` builds the clusters).

::

    [cluster]
    kind = "slurm"          # local | address | slurm | pbs | sge | lsf | kubernetes
    cores = 4               # per batch job (one single-threaded worker per core)
    memory = "16GB"         # per batch job
    walltime = "02:00:00"   # per batch job
    queue = "normal"
    account = "myproject"
    jobs = 8                # adaptive: at most this many jobs ...
    minimum_jobs = 0        # ... and at least this many
    directives = ["--qos=low"]   # extra lines of the job script header

``local`` (the default: a LocalCluster of ``workers`` processes, adaptive
between ``minimum`` and ``workers`` when ``adaptive = true``), ``address``
(a running scheduler at ``address``), the batch systems through dask-jobqueue
and ``kubernetes`` through dask-kubernetes (``image``, ``workers``,
``minimum``, ``cpu``, ``memory``, ``namespace``); the last two are the
``cluster`` extra (``pip install 'bsvm_scale[cluster]'``). The command line's
``--scheduler`` / ``--workers`` override the table.

How batch workers retire before their walltime is described in
:mod:`bsvm_scale.pipeline.run.backends`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["ClusterSpec", "CLUSTER_KINDS", "JOBQUEUE_KINDS", "parse_cluster", "walltime_seconds"]

JOBQUEUE_KINDS = {"slurm": "SLURMCluster", "pbs": "PBSCluster", "sge": "SGECluster",
                  "lsf": "LSFCluster"}
CLUSTER_KINDS = ("local", "address", *JOBQUEUE_KINDS, "kubernetes")
_JOB_KEYS = {"cores": int, "memory": str, "walltime": str, "queue": str, "account": str,
             "jobs": int, "minimum_jobs": int, "directives": list, "python": str,
             "interface": str, "local_directory": str, "log_directory": str}
#: allowed keys (and types) per kind, besides ``kind``
KEYS = {"local": {"workers": int, "adaptive": bool, "minimum": int},
        "address": {"address": str},
        **{k: _JOB_KEYS for k in JOBQUEUE_KINDS},
        "kubernetes": {"image": str, "workers": int, "minimum": int, "cpu": str, "memory": str,
                       "namespace": str, "name": str}}
REQUIRED = {"address": ("address",), **{k: ("cores", "memory", "walltime")
                                        for k in JOBQUEUE_KINDS}, "kubernetes": ("image",)}

@dataclass(frozen=True)
class ClusterSpec:
    """A validated ``[cluster]`` table."""

    kind: str = "local"
    options: dict = field(default_factory=dict)


def _type_ok(value, t):
    if t is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if t is list:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, t)


def walltime_seconds(text):
    """Seconds of a walltime ``[D-]HH:MM:SS``, ``HH:MM`` or ``MM`` (minutes)."""
    m = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", str(text).strip())
    if not m:
        raise ValueError(f"walltime {text!r} is not [D-]HH:MM:SS")
    days, a, b, c = (int(g) if g else None for g in m.groups())
    parts = [p for p in (a, b, c) if p is not None]
    if len(parts) == 1:
        secs = parts[0] * 60
    elif len(parts) == 2:
        secs = parts[0] * 3600 + parts[1] * 60
    else:
        secs = parts[0] * 3600 + parts[1] * 60 + parts[2]
    return secs + 86400 * (days or 0)


def parse_cluster(table, bad):
    """A :class:`ClusterSpec` from the ``[cluster]`` table (``None``: local),
    reporting problems through ``bad(message, key)``."""
    if table is None:
        return ClusterSpec()
    if not isinstance(table, dict):
        bad("cluster must be a table [cluster]", None)
        return ClusterSpec()
    kind = table.get("kind", "local")
    if kind not in CLUSTER_KINDS:
        bad(f"cluster.kind: {kind!r} is not one of {', '.join(CLUSTER_KINDS)}", "kind")
        return ClusterSpec()
    options = {}
    for key, val in table.items():
        if key == "kind":
            continue
        t = KEYS[kind].get(key)
        if t is None:
            bad(f"cluster.{key}: not a key of kind {kind!r}; allowed: "
                f"{', '.join(sorted(KEYS[kind]))}", key)
        elif not _type_ok(val, t):
            bad(f"cluster.{key}: must be {t.__name__}{' of strings' if t is list else ''}; "
                f"got {val!r}", key)
        elif t is int and val < (0 if key.startswith("minimum") else 1):
            bad(f"cluster.{key}: must be >= {0 if key.startswith('minimum') else 1}; got {val}",
                key)
        else:
            options[key] = val
    for key in REQUIRED.get(kind, ()):
        if key not in table:
            bad(f"cluster.{key}: required for kind {kind!r}", None)
    if "walltime" in options:
        try:
            walltime_seconds(options["walltime"])
        except ValueError as exc:
            bad(f"cluster.walltime: {exc}", "walltime")
    return ClusterSpec(kind, options)
