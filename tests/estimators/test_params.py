"""One parameter-validation mechanism and one vocabulary for every estimator.

* Every constructor parameter is declared in ``_parameter_constraints`` and checked by scikit-learn's
  ``_validate_params`` at ``fit``, before the data are read: the bad-value table below fits with
  ``X=None``, so an error about ``X`` instead of the parameter would fail the test.
* Messages name the parameter, what is allowed and the value received.
* An unknown parameter (including an old spelling such as ``n_components``) is a ``TypeError``, as in
  scikit-learn.
* Every parameter after the first is keyword-only; ``devices`` accepts the same words everywhere.
"""

from __future__ import annotations

import inspect
import math
import re

import numpy as np
import pytest

from ppclust._registry import METHODS
from ppclust.errors import InvalidParameterError, PPClustError
from ppclust.estimators._base import data_mesh, restart_devices

ESTIMATORS = {name: info.load() for name, info in METHODS.items()}

# (method, parameter, bad value, what the message must say is allowed)
BAD = [
    ("smic", "gamma", math.nan, r"float in the range \[0.0, inf\)"),
    ("smic", "eta", -1.0, r"float in the range \[0.0, inf\)"),
    ("smic", "n_clusters", 2.5, r"int in the range \[1, inf\)"),
    ("smic", "n_neighbors", 0, r"int in the range \[1, inf\)"),
    ("smic", "assign", "eigvector", r"\{'eigvec', 'model'\}|\{'model', 'eigvec'\}"),
    ("tvclust", "alpha", math.inf, r"float in the range \(0.0, inf\)"),
    ("tvclust", "n_draws", 0, r"int in the range \[1, inf\)"),
    ("tvclust", "k_max", 0, r"int in the range \[1, inf\)"),
    ("tvclust", "point_estimate", "foo", "binder"),
    ("tvclust", "p", 1.0, r"float in the range \(0.0, 1.0\)"),
    ("dpmeans", "variant", "sequentiel", "sequential"),
    ("dpmeans", "lam", -1.0, r"float in the range \(0.0, inf\)"),
    ("dpmeans", "lam", math.nan, r"float in the range \(0.0, inf\)"),
    ("dpmeans", "k_max", 0, r"int in the range \[1, inf\)"),
    ("dpmeans", "devices", "gpu", "all"),
    ("rdpmeans", "n_init", -2, r"int in the range \[1, inf\)"),
    ("rdpmeans", "xi0", -1e-3, r"float in the range \[0.0, inf\)"),
    ("rdpmeans", "xi_rate", 0.0, r"float in the range \(0.0, inf\)"),
    ("rdpmeans", "max_iter", 0, r"int in the range \[1, inf\)"),
    ("ssgmm", "n_clusters", 0, r"int in the range \[1, inf\)"),
    ("ssgmm", "reg_covar", math.nan, r"float in the range \[0.0, inf\)"),
    ("ssgmm", "covariance_type", "VVV", "spherical"),
    ("ssgmm", "label_noise", 1.0, r"float in the range \[0.0, 1.0\)"),
    ("cecib", "beta", -1.0, r"float in the range \[0.0, inf\)"),
    ("cecib", "n_init", 0, r"int in the range \[1, inf\)"),
    ("cecib", "max_iter", 0, r"int in the range \[1, inf\)"),
    ("cecib", "init", "kmeans", "k-?means\\+\\+"),
    ("c3l", "leakage", 0.0, r"float in the range \(0.0, 1.0\)"),
    ("c3l", "n_clusters", 3.0, r"int in the range \[1, inf\)"),
    ("c3l", "devices", 0, r"int in the range \[1, inf\)"),
    ("ccib", "anneal_rate", 1.0, r"float in the range \(0.0, 1.0\)"),
    ("ccib", "variance", math.inf, r"float in the range \(0.0, inf\)"),
    ("ccib", "feature_model", "gauss", "gaussian"),
    ("ccib", "max_iter", 0, r"int in the range \[1, inf\)"),
]


@pytest.mark.parametrize("name, param, value, allowed", BAD, ids=[f"{b[0]}-{b[1]}-{b[2]}" for b in BAD])
def test_bad_parameter_raises_before_reading_data(name, param, value, allowed):
    est = ESTIMATORS[name](**{param: value})
    with pytest.raises(InvalidParameterError, match=rf"'{param}' parameter of {type(est).__name__}") as err:
        est.fit(None)  # X=None: the parameter error must come first
    msg = str(err.value)
    assert re.search(allowed, msg), msg
    assert f"Got {value!r}" in msg
    assert isinstance(err.value, ValueError) and isinstance(err.value, TypeError)
    assert isinstance(err.value, PPClustError) and err.value.parameter == param


class _NotAValue:
    """A value no constraint accepts (not a number, string, bool, None, list, RNG or device)."""

    def __repr__(self):
        return "<not a value>"


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_parameter_error_is_a_ppclust_error_naming_the_parameter(name):
    """Each declared parameter, given a value of no allowed type, fails at ``fit`` (before ``X`` is read)
    with ONE error class for users to catch: a PPClustError (also scikit-learn's InvalidParameterError)
    whose ``parameter`` and message name that parameter."""
    cls = ESTIMATORS[name]
    for param in cls._parameter_constraints:
        with pytest.raises(PPClustError) as err:
            cls(**{param: _NotAValue()}).fit(None)
        assert isinstance(err.value, InvalidParameterError), (param, err.value)
        assert err.value.parameter == param, (param, str(err.value))
        assert f"'{param}' parameter of {cls.__name__}" in str(err.value)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_parameter_declared_and_keyword_only(name):
    cls = ESTIMATORS[name]
    sig = inspect.signature(cls.__init__)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    assert set(cls._parameter_constraints) == {p.name for p in params}
    # the first parameter may be positional, every later one is keyword-only
    assert all(p.kind is p.KEYWORD_ONLY for p in params[1:]), [
        p.name for p in params[1:] if p.kind is not p.KEYWORD_ONLY
    ]


OLD_NAMES = ("n_samples", "n_components", "max_passes", "max_steps", "covariance", "method")


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_vocabulary(name):
    """The shared names are used where they apply; the retired spellings are not parameters."""
    params = ESTIMATORS[name]().get_params()
    assert not set(OLD_NAMES) & set(params), sorted(set(OLD_NAMES) & set(params))
    # SMIC is a closed-form eigensolver, TVClust a sampler (n_draws, n_warmup)
    assert "max_iter" in params or name in ("smic", "tvclust", "bayesian-ssgmm")
    assert "random_state" in params
    if name in ("tvclust", "bayesian-ssgmm"):
        assert {"n_draws", "n_warmup", "n_chains", "thin", "covariance_type"} <= set(params)
    if name == "ssgmm":  # EM: the sampler's words belong to BayesianSemiSupervisedGMM
        assert not {"n_draws", "n_warmup", "n_chains", "thin"} & set(params)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_unknown_parameter_is_a_type_error(name):
    for old in OLD_NAMES:
        if old not in ESTIMATORS[name]().get_params():
            with pytest.raises(TypeError, match=old):
                ESTIMATORS[name](**{old: 2})


def test_dpmeans_rejects_links():
    from ppclust import DPMeans
    from ppclust.errors import InvalidInputError

    X = np.random.default_rng(0).normal(size=(10, 2))
    for kw in (dict(must_link=[(0, 1)]), dict(cannot_link=[(0, 1)])):
        with pytest.raises(InvalidInputError, match="RDPMeans"):
            DPMeans(lam=1.0).fit(X, **kw)


@pytest.mark.parametrize("word", ["all", "auto"])
@pytest.mark.parametrize("name", ["dpmeans", "rdpmeans", "ssgmm", "cecib", "c3l", "tvclust"])
def test_devices_words_accepted_everywhere(name, word):
    est = ESTIMATORS[name](devices=word)
    est._validate_params()  # both words are valid for every estimator with `devices`


def test_devices_one_meaning():
    import jax

    one = len(jax.devices()) < 2
    for word in ("all", "auto"):
        assert restart_devices(word, "CECIB") == "auto"
        if one:
            assert data_mesh(word) is None  # one device: the single-device path
        assert data_mesh(word, parallel_ok=False) is None  # e.g. DP-means' sequential sweep
    assert data_mesh(None) is None and restart_devices(None, "C3L") is None
    with pytest.raises(ValueError, match="pass devices=m"):
        restart_devices(list(jax.devices()), "CECIB")


def test_dpmeans_lam_k_message_names_lam_k():
    from ppclust import DPMeans

    with pytest.raises(ValueError, match=r"`lam_k`=5 exceeds n_samples=2"):
        DPMeans(lam_k=5).fit(np.array([[0.0, 1.0], [1.0, 0.0]]))
