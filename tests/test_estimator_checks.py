"""scikit-learn's own estimator checks for every public estimator.

The evidence searches run with one start and a few trust-region iterations (the
checks test the API contract, not the optimum), with warnings about the
iteration limit silenced. Checks that cannot pass by design are declared
through ``expected_failed_checks`` with the reason (also listed in the
docs/reference/robustness.md).
"""

import warnings

import pytest
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

from bsvm_scale import SVC, SVR, TSVC
from fast_estimators import all_estimators

_SMO_TOL = ("with the default tol=1e-3 the SMO stops the weighted and the repeated problem at "
            "different points within that tolerance (decision values differ by ~1e-4, the check "
            "asks for rtol=1e-7); at tol=1e-10 the check passes (test_sample_weight_equivalence_"
            "at_tight_tol) and tests/baselines/test_svm.py compares weights with repeated cases. "
            "scikit-learn declares the same failure for its SVC and SVR.")

# check name -> reason; the same list is in docs/reference/robustness.md
EXPECTED_FAILURES = {
    "BayesianSVC": {
        "check_decision_proba_consistency":
            "the class probability (5.42) integrates the trigonometric likelihood over the "
            "predictive distribution N(mu, sd^2) of f; with sd varying between test points its "
            "ranking differs from that of the decision value mu by design.",
    },
    "GPC": {
        "check_decision_proba_consistency":
            "the class probability (Bishop 6.76) averages the logistic over the latent "
            "predictive N(mu, s^2); with s varying between test points its ranking differs from "
            "that of the latent mean mu (the decision function) by design.",
    },
    **{name: {"check_sample_weight_equivalence_on_dense_data": _SMO_TOL}
       for name in ("SVR", "SVC", "TSVC")},
}


def _expected_failed_checks(estimator):
    return EXPECTED_FAILURES.get(type(estimator).__name__, {})


@parametrize_with_checks(all_estimators(), expected_failed_checks=_expected_failed_checks)
def test_sklearn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        check(estimator)


@pytest.mark.parametrize("est,check_name", [
    (est, check) for est in all_estimators() for check in _expected_failed_checks(est)],
    ids=lambda v: v if isinstance(v, str) else type(v).__name__)
def test_expected_failures_are_real(est, check_name):
    """Each declared failure still fails (otherwise it must leave the list)."""
    check = getattr(estimator_checks, check_name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(AssertionError):
            check(type(est).__name__, est)


@pytest.mark.parametrize("est", [SVR(tol=1e-10), SVC(tol=1e-10), TSVC(tol=1e-10),
                                 SVC(tol=1e-10, class_weight="balanced")],
                         ids=["SVR", "SVC", "TSVC", "SVC-balanced"])
def test_sample_weight_equivalence_at_tight_tol(est):
    """The declared SVM failures of check_sample_weight_equivalence_on_dense_data
    are the solver tolerance only: at tol=1e-10 scikit-learn's check passes."""
    estimator_checks.check_sample_weight_equivalence_on_dense_data(type(est).__name__, est)
