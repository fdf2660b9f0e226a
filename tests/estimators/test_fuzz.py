"""Fuzzing the public estimator API with hypothesis.

Random data shapes and dtypes, NaN/inf placed anywhere, random parameter values (valid, out of range,
NaN, wrong type, misspelt strings), partial labels and link arrays of any shape and range. Every call
must end either in a fitted estimator with valid labels (int64, shape (n,), no -1) or in a
``ValueError``/``TypeError`` whose message names the argument at fault; never another exception type,
never a hang (each example runs under an alarm).

Bounded for ``make test``: ``max_examples`` per estimator and small shapes drawn from a few sizes, so
that the jitted solvers compile a handful of shapes only (the persistent compilation cache of
``tests/conftest.py`` keeps later runs fast).
"""

from __future__ import annotations

import math
import re
import signal
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ppclust._registry import METHODS

# Small, fast settings of every estimator; the fuzzed parameter overrides one of them.
BASE = {
    "tvclust": dict(n_draws=3, n_warmup=2, n_chains=1, k_max=6, init_clusters=2, random_state=0),
    "dpmeans": dict(max_iter=10, k_max=16, random_state=0),
    "rdpmeans": dict(max_iter=10, patience=2, k_max=16, random_state=0),
    "ssgmm": dict(n_clusters=2, max_iter=10, random_state=0),
    "bayesian-ssgmm": dict(n_clusters=2, n_draws=3, n_warmup=2, n_chains=1, random_state=0),
    "cecib": dict(n_clusters=2, n_init=1, max_iter=10, random_state=0),
    "c3l": dict(n_clusters=2, n_init=1, max_iter=10, leakage=0.2, random_state=0),
    "ccib": dict(n_clusters=2, n_init=1, max_iter=5, max_inner=20, random_state=0),
    "smic": dict(n_clusters=2, n_neighbors=2, gamma=1.0, eta=0.0, random_state=0),
}
LINKS = {"tvclust", "rdpmeans", "smic", "dpmeans"}
FIT_ARGS = {
    "X",
    "y",
    "must_link",
    "cannot_link",
    "partial_labels",
    "hyperplane",
    "background",
    "n_samples",
    "n_features",
    "pairs",
    "labels",
}
EXAMPLE_SECONDS = 120  # a single example taking longer than this counts as a hang

ODD_VALUES = st.sampled_from(
    [
        0,
        -1,
        1,
        2,
        3,
        1000,
        2.5,
        0.0,
        -0.5,
        0.5,
        1.0,
        math.nan,
        math.inf,
        -math.inf,
        "auto",
        "all",
        "foo",
        None,
        True,
        [1, 2],
    ]
)


def _array(draw, n, d, dtype):
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    X = rng.normal(size=(n, d)) * draw(st.sampled_from([1e-8, 1.0, 1e8]))
    if draw(st.booleans()):
        X[:, 0] = np.round(X[:, 0])  # constant-ish / integer columns
    k = draw(st.integers(0, 2))  # number of non-finite cells
    for _ in range(k):
        X[draw(st.integers(0, n - 1)), draw(st.integers(0, d - 1))] = draw(
            st.sampled_from([np.nan, np.inf, -np.inf])
        )
    if dtype == "object":
        return X.astype(object)
    if dtype == "str":
        return X.astype(str)
    if dtype == "complex":
        return X.astype(np.complex128)
    if dtype in ("int64", "int32", "bool"):
        return np.nan_to_num(X, posinf=7, neginf=-7).astype(dtype)
    return X.astype(dtype)


@st.composite
def problems(draw, name):
    n = draw(st.sampled_from([1, 2, 5, 12]))
    d = draw(st.sampled_from([1, 2, 3]))
    dtype = draw(
        st.sampled_from(["float64", "float64", "float32", "int64", "bool", "object", "str", "complex"])
    )
    shape = draw(st.sampled_from(["2d", "2d", "2d", "1d", "3d", "list", "empty"]))
    X = _array(draw, n, d, dtype)
    if shape == "1d":
        X = X[:, 0]
    elif shape == "3d":
        X = X[:, :, None]
    elif shape == "list":
        X = X.tolist()
    elif shape == "empty":
        X = X[:0]
    params = dict(BASE[name])
    if draw(st.booleans()):
        key = draw(st.sampled_from(sorted(METHODS[name].load()._parameter_constraints)))
        params[key] = draw(ODD_VALUES)
    kw = {}
    y_kind = draw(st.sampled_from(["none", "labels", "short", "float", "big"]))
    if y_kind != "none":
        m = n if y_kind != "short" else max(n - 1, 0)
        y = np.asarray(draw(st.lists(st.integers(-1, 3), min_size=m, max_size=m)), dtype=np.int64)
        if y_kind == "float":
            y = y + 0.5
        if y_kind == "big":
            y = y * 1000
        kw["y"] = y
    if name in LINKS and draw(st.booleans()):
        m = draw(st.integers(0, 4))
        pairs = draw(st.lists(st.tuples(st.integers(-1, n), st.integers(-1, n)), min_size=m, max_size=m))
        which = draw(st.sampled_from(["must_link", "cannot_link"]))
        kw[which] = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    if name == "c3l" and "y" not in kw:
        kw["hyperplane"] = (np.ones(d), 0.0)
    return X, params, kw


class _Hang(Exception):
    pass


def _alarm(signum, frame):
    raise _Hang(f"an example ran for more than {EXAMPLE_SECONDS} s")


def _names(params, kw):
    return set(params) | set(kw) | FIT_ARGS


def _check_outcome(name, X, params, kw):
    cls = METHODS[name].load()
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, EXAMPLE_SECONDS)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est = cls(**params)
            kw2 = dict(kw)
            y = kw2.pop("y", None)
            est.fit(X, y, **kw2)
    except (ValueError, TypeError) as err:
        msg = str(err)
        named = [
            a for a in _names(params, kw) if re.search(rf"(?<![A-Za-z_]){re.escape(a)}(?![A-Za-z_])", msg)
        ]
        assert named, f"{name}({params}).fit(...) raised {type(err).__name__} naming no argument: {msg}"
        return
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    labels = est.labels_
    n = np.asarray(X).shape[0]
    assert labels.dtype == np.int64 and labels.shape == (n,), (labels.dtype, labels.shape)
    assert labels.min() >= 0, f"{name}: labels_ contains -1"


def _fuzz(name):
    @settings(
        max_examples=12,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(problems(name))
    def run(problem):
        _check_outcome(name, *problem)

    return run


@pytest.mark.parametrize("name", sorted(BASE))
def test_fuzz_public_api(name):
    _fuzz(name)()


def test_base_covers_every_method():
    assert set(BASE) == set(METHODS)
