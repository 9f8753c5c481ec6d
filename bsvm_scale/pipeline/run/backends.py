"""Building the Dask cluster a ``[cluster]`` table names
(:mod:`bsvm_scale.pipeline.spec.cluster`): a LocalCluster, a running
scheduler, a batch system through dask-jobqueue or Kubernetes through
dask-kubernetes.

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

from ..spec.cluster import JOBQUEUE_KINDS, ClusterSpec, walltime_seconds

__all__ = ["build_cluster", "job_script", "lifetime_args", "has_bokeh", "WORKER_ENV",
           "ClusterSpec"]

#: environment of every worker: one thread per process for Numba and BLAS
WORKER_ENV = {"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1",
              "MKL_NUM_THREADS": "1"}


def lifetime_args(walltime):
    """Worker arguments that retire a worker before its job's walltime: the
    lifetime leaves 10% of the walltime (at least 5 minutes, at most half)
    for the retirement, staggered by up to a quarter of that margin."""
    total = walltime_seconds(walltime)
    margin = min(max(300, total // 10), total // 2)
    stagger = max(1, margin // 4)
    return ["--lifetime", f"{total - margin}s", "--lifetime-stagger", f"{stagger}s"]


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
