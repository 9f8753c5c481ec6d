"""Every public estimator with small, fast settings, shared by the
validation, conformance and property tests.

The evidence searches use one start and a few trust-region iterations: these
tests exercise the API contract and the numerics of fit/predict, not the
quality of the optimum.
"""

from bsvm_scale import GPC, GPR, RVC, RVR, SVC, SVR, TSVC, BayesianSVC, BayesianSVR

FEW = {"maxiter": 3}
ONE = {"maxiter": 1}       # GPC: every evidence evaluation is an O(n^3) Laplace fit
#: the Bayesian models' SMO tolerance ((4.33), (5.31)) at rounding level:
#: scikit-learn's check that integer sample weights equal repeated cases then
#: compares one optimum (at the default 1e-3 the two MAP solutions, and the
#: searches after them, differ within that tolerance, about 1e-3 in the
#: probabilities; the repeated cases are merged into weighted ones, in another
#: case order than the weighted data's)
SVC_TOL = 1e-11


def regressors():
    """Fresh fast instances of the regressors (BayesianSVR with the tight SMO
    tolerance :data:`SVC_TOL`: scikit-learn's check that integer case weights
    equal repeated cases compares predictions to 1e-7, and two MAP solves
    stopped within a tolerance of the optimum differ by about that much)."""
    return [BayesianSVR(n_starts=1, optimizer_options=FEW, tol=SVC_TOL), SVR(),
            GPR(n_starts=1, options=FEW), RVR(max_iter=50)]


def classifiers():
    """Fresh fast instances of the classifiers."""
    return [BayesianSVC(n_starts=1, optimizer_options=FEW, tol=SVC_TOL), SVC(), TSVC(),
            GPC(n_starts=1, options=ONE), RVC(max_iter=50)]


def all_estimators():
    """Regressors then classifiers."""
    return regressors() + classifiers()


def name(est):
    """Class name, for test ids."""
    return type(est).__name__
