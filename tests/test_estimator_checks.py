"""scikit-learn's own estimator checks for every public estimator.

The evidence searches run with one start and a few trust-region iterations (the
checks test the API contract, not the optimum), with warnings about the
iteration limit silenced. Checks that cannot pass by design are declared
through ``expected_failed_checks`` with the reason (also listed in the
README, section Robustness).
"""

import warnings

import pytest
from sklearn.utils import estimator_checks
from sklearn.utils.estimator_checks import parametrize_with_checks

from fast_estimators import all_estimators

# check name -> reason; the same list is in README.md ("Robustness")
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
