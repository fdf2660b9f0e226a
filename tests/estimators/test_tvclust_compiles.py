"""TVClust compiles nothing for a repeat fit: every program of the fit and of its summaries is reused.

Compiles are counted with ``jax.monitoring``'s ``/jax/core/compile/backend_compile_duration`` events. A
persistent-cache hit emits no such event, so the counter's own check runs with that cache off; a repeat fit
in the same process reuses in-memory programs, which the persistent cache does not affect.
"""

from __future__ import annotations

import jax
import jax.monitoring as monitoring
import numpy as np
import pytest

from ppclust import TVClust

_EVENT = "/jax/core/compile/backend_compile_duration"
_COUNT = {"n": 0}


def _listener(event, duration, **kwargs):
    if event == _EVENT:
        _COUNT["n"] += 1


monitoring.register_event_duration_secs_listener(_listener)


@pytest.fixture
def no_persistent_cache():
    old = jax.config.jax_enable_compilation_cache
    jax.config.update("jax_enable_compilation_cache", False)
    yield
    jax.config.update("jax_enable_compilation_cache", old)


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    X = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[truth] + rng.normal(size=(n, 2))
    ml = rng.integers(0, n, (12, 2))
    return X, ml[(ml[:, 0] != ml[:, 1]) & (truth[ml[:, 0]] == truth[ml[:, 1]])]


def _compiles(fn):
    before = _COUNT["n"]
    fn()
    return _COUNT["n"] - before


def test_the_counter_sees_a_compile(no_persistent_cache):
    """The listener counts a fresh program (so the zero counts below can fail)."""
    assert _compiles(lambda: jax.jit(lambda v: v * 3.0 + 1.0)(np.ones(7)).block_until_ready()) >= 1


@pytest.mark.parametrize("algorithm", ["collapsed", "subcluster", "variational"])
def test_a_repeat_fit_compiles_nothing(algorithm):
    X, ml = _data(60)
    if algorithm == "variational":
        kw = dict(algorithm=algorithm, vb_max_iter=5, random_state=0)
    else:
        kw = dict(algorithm=algorithm, n_draws=5, n_warmup=5, n_chains=1, progress_bar=False, random_state=0)
    first = TVClust(**kw).fit(X, must_link=ml)
    again = []
    assert _compiles(lambda: again.append(TVClust(**kw).fit(X, must_link=ml))) == 0
    np.testing.assert_array_equal(again[0].labels_, first.labels_)
    if algorithm != "variational":  # the on-demand log-likelihood reuses its programs too
        first.compute_log_likelihood()
        assert _compiles(again[0].compute_log_likelihood) == 0
