"""Batch pipelines: Dask-scheduled multi-start and partitioned runs, in three rooms.

* :mod:`.spec` - the pipeline-file language: the schema of its keys
  (:mod:`.spec.schema`), the model kinds (:mod:`.spec.kinds`, the one place a
  kind is registered), parsing and validation (:mod:`.spec.config`), protocol
  keys (:mod:`.spec.variants`), the ``[cluster]`` table and the evidence grid.
* :mod:`.run` - running tasks: the one Dask executor (:mod:`.run.executor`),
  the pure task functions (:mod:`.run.tasks`, :mod:`.run.evidence_grid`), what a
  task reads (:mod:`.run.taskio`), start checkpoints and the run lock
  (:mod:`.run.checkpoint`), task keys (:mod:`.run.fingerprint`), cluster back
  ends (:mod:`.run.backends`), scikit-learn references (:mod:`.run.external`)
  and scoring new inputs (:mod:`.run.scoring`).
* :mod:`.outputs` - what a run leaves: atomic HDF5 records
  (:mod:`.outputs.records`), the run file (:mod:`.outputs.runfile`), reports,
  exports and archives, and the progress line.

Imports go from ``run`` to ``outputs`` to ``spec``, never back
(``tests/test_layers.py``).
"""

from .spec.config import Pipeline, PipelineError, load_pipeline, parse_pipeline

__all__ = ["Pipeline", "PipelineError", "load_pipeline", "parse_pipeline", "run_pipeline"]


def run_pipeline(*args, **kwargs):
    from .run.executor import run_pipeline as _run

    return _run(*args, **kwargs)
