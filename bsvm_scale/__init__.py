"""bsvm_scale: Bayesian support vector machines at scale.

Public estimators are imported lazily so that ``import bsvm_scale`` stays cheap
and does not trigger Numba compilation.
"""

__version__ = "0.1.0"

_LAZY = {
    "BayesianSVR": "bsvm_scale.bsvr",
    "BayesianSVC": "bsvm_scale.btsvc",
    "SVR": "bsvm_scale.svm",
    "SVC": "bsvm_scale.svm",
    "TSVC": "bsvm_scale.svm",
    "GPR": "bsvm_scale.gp",
    "GPC": "bsvm_scale.gp",
    "RVR": "bsvm_scale.rvm",
    "RVC": "bsvm_scale.rvm",
    "save_model": "bsvm_scale.storage",
    "load_model": "bsvm_scale.storage",
    "GaussianCovariance": "bsvm_scale.covariance",
    "RowCache": "bsvm_scale.covariance",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'bsvm_scale' has no attribute {name!r}")
