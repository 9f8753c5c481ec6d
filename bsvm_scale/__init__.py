"""bsvm_scale: Bayesian support vector machines at scale.

Public estimators are imported lazily so that ``import bsvm_scale`` stays cheap
and does not trigger Numba compilation.
"""

__version__ = "0.1.0"

_LAZY = {
    "BayesianSVR": "bsvm_scale.models.bsvr",
    "BayesianSVC": "bsvm_scale.models.btsvc",
    "SVR": "bsvm_scale.baselines.svm",
    "SVC": "bsvm_scale.baselines.svm",
    "TSVC": "bsvm_scale.baselines.svm",
    "GPR": "bsvm_scale.baselines.gp",
    "GPC": "bsvm_scale.baselines.gpc",
    "RVR": "bsvm_scale.baselines.rvm",
    "RVC": "bsvm_scale.baselines.rvc",
    "save_model": "bsvm_scale.storage",
    "load_model": "bsvm_scale.storage",
    "GaussianCovariance": "bsvm_scale.inference.covariance",
    "RowCache": "bsvm_scale.inference.covariance",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bsvm_scale' has no attribute {name!r}")
