"""The model kinds of a pipeline file: the one place where a kind is registered.

A kind names an estimator and says how the pipeline treats it: which task it
solves, whether it runs as one Dask task per optimiser start (its evidence
search split across tasks, the best start kept per partition) or one task per
partition, whether it takes a cross-validated grid (``cv``), which keys its
``search`` table and its explicit ``starts`` take, what it predicts beyond the
mean (error bars, class probabilities) and whether it is an external
scikit-learn reference. Everything else (the pipeline-file schema, task
construction, keys, reports, exports) reads these entries; adding a kind is
adding one entry (and its estimator).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["Kind", "REGISTRY", "KINDS", "TASK_OF", "BAYES_KINDS", "CV_KINDS", "SEARCH_KEYS",
           "START_KEYS", "EXTERNAL_KINDS", "ERROR_BAR_KINDS", "PROBABILITY_KINDS"]


class Kind(NamedTuple):
    """One model kind of a pipeline file."""

    module: str                 #: the module of its estimator, below ``bsvm_scale``
    estimator: str              #: the estimator class
    task: str                   #: ``"regression"`` or ``"classification"``
    per_start: bool = False     #: one task per optimiser start (evidence search)
    cv: bool = False            #: takes a cross-validated grid (``[models.cv]``)
    search: tuple = ()          #: estimator parameters its ``search`` table takes
    starts: tuple = ()          #: hyperparameters a start of ``search.starts`` may set
    predicts: str = "mean"      #: ``"mean"``, ``"error_bars"`` or ``"probabilities"``
    external: bool = False      #: runs scikit-learn itself (a reference, not this library)


_BAYES_SEARCH = ("n_starts", "starts", "random_state")
_GP_SEARCH = ("n_starts", "bounds", "random_state")

#: every model kind, by name
REGISTRY = {
    "bsvr": Kind("models.bsvr", "BayesianSVR", "regression", per_start=True,
                 search=("n_starts", "starts", "bounds", "beta", "random_state"),
                 starts=("C", "epsilon", "kappa", "kappa_b", "kappa0"), predicts="error_bars"),
    "btsvc": Kind("models.btsvc", "BayesianSVC", "classification", per_start=True,
                  search=_BAYES_SEARCH, starts=("kappa0", "kappa", "kappa_b"),
                  predicts="probabilities"),
    "svr": Kind("baselines.svm", "SVR", "regression", cv=True),
    "svc": Kind("baselines.svm", "SVC", "classification", cv=True),
    "tsvc": Kind("baselines.svm", "TSVC", "classification", cv=True),
    "gpr": Kind("baselines.gp", "GPR", "regression", search=_GP_SEARCH, predicts="error_bars"),
    "gpc": Kind("baselines.gpc", "GPC", "classification", search=_GP_SEARCH,
                predicts="probabilities"),
    "rvr": Kind("baselines.rvm", "RVR", "regression", predicts="error_bars"),
    "rvc": Kind("baselines.rvc", "RVC", "classification", predicts="probabilities"),
    "sk_svr": Kind("pipeline.run.external", "SkSVR", "regression", cv=True, external=True),
    "sk_svc": Kind("pipeline.run.external", "SkSVC", "classification", cv=True, external=True),
    "sk_gpr": Kind("pipeline.run.external", "SkGPR", "regression", external=True),
    "sk_gpc": Kind("pipeline.run.external", "SkGPC", "classification", external=True),
}

#: model kind -> (module, class name) of its estimator
KINDS = {name: (f"bsvm_scale.{k.module}", k.estimator) for name, k in REGISTRY.items()}
#: model kind -> its task
TASK_OF = {name: k.task for name, k in REGISTRY.items()}
#: kinds run as one task per optimiser start
BAYES_KINDS = tuple(name for name, k in REGISTRY.items() if k.per_start)
#: kinds that take a cross-validated grid (``cv``)
CV_KINDS = tuple(name for name, k in REGISTRY.items() if k.cv)
#: estimator parameters a kind takes in its ``search`` table
SEARCH_KEYS = {name: k.search for name, k in REGISTRY.items() if k.search}
#: hyperparameters a start of ``search.starts`` may set
START_KEYS = {name: k.starts for name, k in REGISTRY.items() if k.starts}
#: kinds that run scikit-learn itself, by estimator class name
EXTERNAL_KINDS = {name: k.estimator for name, k in REGISTRY.items() if k.external}
#: regression kinds whose predictions carry a standard deviation
ERROR_BAR_KINDS = tuple(name for name, k in REGISTRY.items() if k.predicts == "error_bars")
#: classification kinds that predict class probabilities
PROBABILITY_KINDS = tuple(name for name, k in REGISTRY.items() if k.predicts == "probabilities")
