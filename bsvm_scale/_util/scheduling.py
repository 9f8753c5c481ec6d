"""The package's one way of handing work to Dask (dask.distributed).

Work is a pure task function plus its arguments; data every task needs is
sent to each worker once (:func:`scatter_shared`) and passed to the tasks as
a future. :func:`map_tasks` is the whole pattern for a list of independent
tasks (the cross-validation grid); the pipeline executor builds its task graph
from the same :func:`scatter_shared`. Without a client the same functions run
in this process, with identical results.
"""

from __future__ import annotations

__all__ = ["scatter_shared", "map_tasks"]


def scatter_shared(client, value):
    """Send ``value`` to every worker of ``client`` once; returns its future.

    ``hash=False`` gives the data a fresh key, so that releasing the data of an
    earlier call can never remove the data of this one.
    """
    return client.scatter(value, broadcast=True, hash=False)


def map_tasks(func, items, shared=(), client=None):
    """``[func(*shared, *item) for item in items]``, in order.

    Parameters
    ----------
    func : callable
        A pure task function.
    items : sequence of tuple
        The per-task arguments.
    shared : tuple
        Leading arguments common to every task (large arrays): scattered once
        when ``client`` is given.
    client : dask.distributed.Client, optional
        Run each item as one Dask task; serially in this process without it.
    """
    if client is None:
        return [func(*shared, *item) for item in items]
    handles = [scatter_shared(client, value) for value in shared]
    futures = [client.submit(func, *handles, *item, pure=False) for item in items]
    try:
        return client.gather(futures)
    finally:
        for f in futures + handles:
            f.release()
