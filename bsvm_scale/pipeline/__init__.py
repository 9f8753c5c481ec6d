"""Batch pipelines: Dask-scheduled multi-start and partitioned runs.

* :mod:`.config` - the TOML pipeline schema and its validation
* :mod:`.tasks` - pure task functions executed on the workers
* :mod:`.executor` - the one Dask executor (LocalCluster or a scheduler address)
* :mod:`.checkpoint` - atomic run-directory files, start checkpoints, the run lock
* :mod:`.runfile` - the HDF5 run file written by the driver
* :mod:`.report` - markdown + PNG reports of a run
* :mod:`.progress` - the live progress line
"""

from .config import Pipeline, PipelineError, load_pipeline, parse_pipeline

__all__ = ["Pipeline", "PipelineError", "load_pipeline", "parse_pipeline", "run_pipeline"]


def run_pipeline(*args, **kwargs):
    from .executor import run_pipeline as _run

    return _run(*args, **kwargs)
