"""scikit-learn's fitting checks for TVClust (collapsed Gibbs) and CCIB (deterministic annealing).

All of them are ``slow`` (make reproduce): each check compiles programs of its own; the fast suite's
cover is in ``tests/estimators/test_sklearn_api.py`` (CHEAP checks, test_fitted_estimator_contract).

The checks, small settings and documented skip list are those of ``tests/estimators/test_sklearn_api.py``;
this file
only holds the fitting checks of these two estimators, so that pytest-xdist runs them
on a different worker from the other heavy pair (see the cost note in ``test_sklearn_api.py``).
"""

from __future__ import annotations

from tests.estimators.test_sklearn_api import checks_for, run_check


@checks_for(("tvclust", "ccib"), heavy_fitting=True)
def test_sklearn_fitting_checks(estimator, check):
    run_check(estimator, check)
