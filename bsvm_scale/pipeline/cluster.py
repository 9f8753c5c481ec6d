"""Where a pipeline runs: the ``[cluster]`` table of a pipeline file.

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

Batch jobs end at their walltime, and Dask workers killed there are not
replaced unless the cluster is adaptive (dask-jobqueue issue 122). Workers
here are started with a lifetime shorter than the walltime, staggered so
that they do not all leave at once (``--lifetime``, ``--lifetime-stagger``),
and the cluster is adaptive, so a retiring worker is replaced by a new job;
a task that was running on it starts again elsewhere and resumes from its
checkpoint (pipeline tasks checkpoint every evidence evaluation).
"""

from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass, field

__all__ = ["ClusterSpec", "CLUSTER_KINDS", "JOBQUEUE_KINDS", "parse_cluster", "build_cluster",
           "job_script", "walltime_seconds", "lifetime_args", "has_bokeh", "WORKER_ENV"]

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
#: environment of every worker: one thread per process for Numba and BLAS
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1"}


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


def lifetime_args(walltime):
    """Worker arguments that retire a worker before its job's walltime: the
    lifetime leaves 10% of the walltime (at least 5 minutes, at most half)
    for the retirement, staggered by up to a quarter of that margin."""
    total = walltime_seconds(walltime)
    margin = min(max(300, total // 10), total // 2)
    stagger = max(1, margin // 4)
    return ["--lifetime", f"{total - margin}s", "--lifetime-stagger", f"{stagger}s"]


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


def _jobqueue_cluster(spec):
    """A dask-jobqueue cluster for a batch system (not yet scaled)."""
    try:
        import dask_jobqueue
    except ImportError:
        raise ImportError(f"cluster kind {spec.kind!r} needs dask-jobqueue: "
                          "pip install 'bsvm_scale[cluster]'") from None
    o = spec.options
    cls = getattr(dask_jobqueue, JOBQUEUE_KINDS[spec.kind])
    kw = {"cores": o["cores"], "processes": o["cores"], "memory": o["memory"],
          "walltime": o["walltime"], "worker_extra_args": lifetime_args(o["walltime"]),
          "job_script_prologue": [f"export {k}={v}" for k, v in WORKER_ENV.items()],
          "job_extra_directives": list(o.get("directives", []))}
    for key, arg in (("queue", "queue"), ("account", "account"), ("python", "python"),
                     ("interface", "interface"), ("local_directory", "local_directory"),
                     ("log_directory", "log_directory")):
        if key in o:
            kw[arg] = o[key]
    return cls(**kw)


def _kubernetes_cluster(spec):
    try:
        from dask_kubernetes.operator import KubeCluster
    except ImportError:
        raise ImportError("cluster kind 'kubernetes' needs dask-kubernetes: "
                          "pip install 'bsvm_scale[cluster]'") from None
    o = spec.options
    res = {k: v for k, v in (("cpu", o.get("cpu")), ("memory", o.get("memory"))) if v}
    return KubeCluster(name=o.get("name", "bsvm-scale"), image=o["image"],
                       namespace=o.get("namespace"), n_workers=o.get("minimum", 0),
                       resources={"requests": res, "limits": res} if res else None,
                       env=dict(WORKER_ENV))


def has_bokeh():
    """The Dask dashboard needs bokeh (the ``cluster`` extra installs it)."""
    import importlib.util

    return importlib.util.find_spec("bokeh") is not None


def _local_cluster(spec, workers=None):
    from dask.distributed import LocalCluster

    o = spec.options
    n = int(workers or o.get("workers") or os.cpu_count() or 1)
    adaptive = bool(o.get("adaptive")) and workers is None
    cluster = LocalCluster(n_workers=o.get("minimum", 0) if adaptive else n,
                           threads_per_worker=1, processes=True,
                           dashboard_address=":0" if has_bokeh() else None,
                           silence_logs=logging.ERROR, env=dict(WORKER_ENV))
    if adaptive:
        cluster.adapt(minimum=o.get("minimum", 0), maximum=n)
    return cluster


def build_cluster(spec, workers=None):
    """The Dask cluster object of ``spec`` (adaptive where it applies);
    ``workers`` (the command line's ``--workers``) forces a fixed LocalCluster."""
    if workers is not None or spec.kind == "local":
        return _local_cluster(spec if workers is None else ClusterSpec(), workers)
    if spec.kind in JOBQUEUE_KINDS:
        cluster = _jobqueue_cluster(spec)
        cluster.adapt(minimum_jobs=spec.options.get("minimum_jobs", 0),
                      maximum_jobs=spec.options.get("jobs", 1))
        return cluster
    if spec.kind == "kubernetes":
        cluster = _kubernetes_cluster(spec)
        cluster.adapt(minimum=spec.options.get("minimum", 0),
                      maximum=spec.options.get("workers", 1))
        return cluster
    raise ValueError(f"cluster kind {spec.kind!r} has no cluster object (use its address)")


def job_script(spec):
    """The batch job script dask-jobqueue submits for ``spec`` (a batch kind)."""
    if spec.kind not in JOBQUEUE_KINDS:
        raise ValueError(f"cluster kind {spec.kind!r} submits no job script; job scripts "
                         f"exist for {', '.join(JOBQUEUE_KINDS)}")
    cluster = _jobqueue_cluster(spec)
    try:
        return cluster.job_script()
    finally:
        cluster.close()
