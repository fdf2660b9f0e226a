"""scikit-learn's fitting checks for BayesianSemiSupervisedGMM (collapsed Gibbs over assignments).

All of them are ``slow`` (make reproduce): each check compiles programs of its own; the fast suite's
cover is in ``tests/estimators/test_sklearn_api.py`` (CHEAP checks, test_fitted_estimator_contract).

The checks, small settings and documented skip list are those of ``tests/estimators/test_sklearn_api.py``;
this file
only holds the fitting checks of this estimator, so that pytest-xdist can run them
on either worker, apart from the other heavy pairs (see the cost note in ``test_sklearn_api.py``).
"""

from __future__ import annotations

from tests.estimators.test_sklearn_api import checks_for, run_check


@checks_for(("bayesian-ssgmm",), heavy_fitting=True)
def test_sklearn_fitting_checks(estimator, check):
    run_check(estimator, check)
