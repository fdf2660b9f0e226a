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
    # n // 10 disjoint must-links inside cluster 0: the link count changes with n (inside its bucket), the
    # neighbour table's width stays 1
    first = np.flatnonzero(truth == 0)
    return X, first[: 2 * (n // 10)].reshape(-1, 2)


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
    fitted = []
    n_first = _compiles(lambda: fitted.append(TVClust(**kw).fit(X, must_link=ml)))
    # a fit is a few named programs: arithmetic run eagerly would build one program per operation and shape
    assert n_first <= 20, f"the first fit built {n_first} programs"
    first = fitted[0]
    again = []
    assert _compiles(lambda: again.append(TVClust(**kw).fit(X, must_link=ml))) == 0
    np.testing.assert_array_equal(again[0].labels_, first.labels_)
    if algorithm != "variational":  # the on-demand log-likelihood reuses its programs too
        first.compute_log_likelihood()
        assert _compiles(again[0].compute_log_likelihood) == 0


@pytest.mark.parametrize("algorithm", ["collapsed", "variational"])
def test_predict_at_a_new_size_in_its_bucket_compiles_nothing(algorithm):
    """New points are padded to their row bucket: a second number of points in the bucket compiles
    nothing, and the padding changes no prediction."""
    X, ml = _data(60)
    if algorithm == "variational":
        kw = dict(algorithm=algorithm, vb_max_iter=5, random_state=0)
    else:
        kw = dict(algorithm=algorithm, n_draws=5, n_warmup=5, n_chains=1, progress_bar=False, random_state=0)
    est = TVClust(**kw).fit(X, must_link=ml)
    new = _data(60, seed=1)[0]
    some = est.predict(new[:50])
    every = []
    assert _compiles(lambda: every.append(est.predict(new))) == 0
    np.testing.assert_array_equal(every[0][:50], some)


def test_a_new_number_of_draws_compiles_nothing_and_extends_the_chain(no_persistent_cache):
    """The sub-cluster sampler runs its draws in blocks whose counts are operands: a fit with more draws
    or another warm-up compiles no program, and with the same warm-up its draws continue the shorter fit's
    chain (the first 40 of 50 draws are the 40 draws)."""
    X, ml = _data(60)
    kw = dict(algorithm="subcluster", n_chains=1, progress_bar=False, random_state=0)
    short = TVClust(n_draws=40, n_warmup=5, **kw).fit(X, must_link=ml)
    fits = []
    assert _compiles(lambda: fits.append(TVClust(n_draws=50, n_warmup=5, **kw).fit(X, must_link=ml))) == 0
    assert _compiles(lambda: TVClust(n_draws=33, n_warmup=12, **kw).fit(X, must_link=ml)) == 0
    np.testing.assert_array_equal(fits[0].samples_.labels[:, :40], short.samples_.labels)
    np.testing.assert_array_equal(fits[0].samples_.log_joint[:, :40], short.samples_.log_joint)


# --- a new data size: one set of programs per bucket (ppclust._buckets) -------------------------------------

#: 100 and 110 share a bucket (128), 140 opens the next one (192)
_SIZES = (100, 110, 140)


def _sampler_fit(kind, n):
    """One fit at ``n`` points with tiny runs (5 + 5 sweeps, one chain), its summaries and a prediction
    included."""
    X, ml = _data(n)
    if kind == "bayesian_ssgmm":
        from ppclust import BayesianSemiSupervisedGMM

        truth = np.argmin(((X[:, None] - np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])) ** 2).sum(-1), 1)
        y = np.where(np.arange(n) % 5 == 0, truth, -1)
        est = BayesianSemiSupervisedGMM(
            3, n_draws=5, n_warmup=5, n_chains=1, random_state=0, progress_bar=False
        ).fit(X, y)
        est.predict(X[:7])
        return est
    kw = dict(n_draws=5, n_warmup=5, n_chains=1, progress_bar=False, random_state=0)
    if kind == "variational":  # a truncation no other test uses: programs of this test alone
        kw = dict(algorithm="variational", vb_max_iter=5, vb_truncation=11, random_state=0)
    elif kind == "xla":
        kw.update(backend="xla")
    else:
        kw.update(algorithm=kind)
    est = TVClust(**kw).fit(X, must_link=ml)
    if kind != "variational":
        est.compute_log_likelihood()
        est.predict(X[:7])
    return est


@pytest.mark.parametrize(
    "kind",
    [
        "collapsed",
        "bayesian_ssgmm",
        pytest.param("xla", marks=pytest.mark.slow),  # the XLA sweep compiles for minutes on a loaded CPU
        "explicit",
        "subcluster",
        "variational",
    ],
)
def test_a_new_n_compiles_only_for_a_new_bucket(kind, no_persistent_cache):
    """A new n inside a seen bucket compiles nothing; a size in the next bucket compiles at most the first
    fit's programs (the same set again, for the new bucket). The in-memory programs of earlier tests are
    dropped first, so that the first fit compiles its whole set (other tests may have compiled part of it)."""
    jax.clear_caches()
    counts = [_compiles(lambda n=n: _sampler_fit(kind, n)) for n in _SIZES]
    assert counts[0] > 0  # the first fit compiled (else the zeros below prove nothing)
    assert counts[1] == 0, f"n={_SIZES[1]} (bucket of n={_SIZES[0]}) compiled {counts[1]} programs"
    assert counts[2] <= counts[0], counts


@pytest.mark.parametrize(
    "algorithm",
    ["collapsed", pytest.param("explicit", marks=pytest.mark.slow)],  # explicit: eager sweeps, a minute
)
def test_the_draws_do_not_depend_on_the_padding(algorithm):
    """``gibbs.sample`` runs on rows padded to their bucket (20 -> 32); its draws equal sweeps of
    ``gibbs.step`` on the 20 rows alone with the same keys (a padding row visited, counted in a slot or
    shifting the visiting order would change them; with ``algorithm="explicit"`` so would a new cluster's
    parameters drawn per padded length instead of per row)."""
    import jax.numpy as jnp

    from ppclust._jax import x64
    from ppclust.families import GaussianNIW
    from ppclust.inference import gibbs
    from ppclust.models.tvclust import TVClustPrior, make_links

    X, ml = _data(20, seed=3)
    with x64():
        x = jnp.asarray(X)
        fam = GaussianNIW.default(x)
        links = make_links(20, [[0, 1], [2, 3], [4, 9]], [1, -1, 1])
        kw = dict(n_draws=2, n_warmup=2, n_chains=1, k_max=8, progress_bar=False, algorithm=algorithm)
        res = gibbs.sample(jax.random.key(4), x, links, fam, **kw)
        chain_key = jax.random.split(jax.random.fold_in(jax.random.key(4), 0), 1)[0]
        draw_keys = jax.random.split(chain_key, 2)
        state = gibbs.init(x, links, fam, k_max=8)
        if algorithm == "explicit":  # the initial parameters as gibbs.sample draws them (chain 0)
            key0 = jax.random.split(jax.random.fold_in(jax.random.key(4), 0x7FFFFFFF), 1)[0]
            state = state._replace(theta=fam.sample_posterior(key0, state.stats))
        want = []
        for j, sweeps in enumerate((3, 1)):  # draw 0: two warm-up sweeps and its own
            for t in range(sweeps):
                state, _ = gibbs.step(
                    jax.random.fold_in(draw_keys[j], t),
                    state,
                    x,
                    links,
                    fam,
                    TVClustPrior(),
                    algorithm=algorithm,
                )
            want.append(np.asarray(state.labels))
    assert res.labels.shape == (1, 2, 20)
    np.testing.assert_array_equal(res.labels[0], np.stack(want))
