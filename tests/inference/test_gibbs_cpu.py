"""The compiled CPU sweep (numba) against the XLA sweep: same random inputs, same decisions.

The exact-enumeration tests in test_tvclust.py / test_ssgmm.py check the posterior itself for both
backends; here a wrong term in either implementation (a predictive constant, a link count, a rank-one
update, the visiting order) shows up as a different label somewhere in a few hundred point updates.
"""

from __future__ import annotations

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families import GaussianNIW, Multinomial, SphericalGaussian
from ppclust.inference import _gibbs_cpu, gibbs
from ppclust.inference.backend import resolve_backend
from ppclust.models.tvclust import TVClustPrior, make_links
from tests._tiers import fast_first

pytestmark = pytest.mark.skipif(not _gibbs_cpu.available(), reason="numba is not installed")


def _problem(n=150, d=3, seed=0, weighted=False):
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 3.0, (3, d))
    x = centres[np.arange(n) % 3] + rng.normal(size=(n, d))
    pairs = rng.choice(n, (n // 2, 2))
    pairs = np.unique(np.sort(pairs[pairs[:, 0] != pairs[:, 1]], 1), axis=0)
    sign = np.where(rng.random(len(pairs)) < 0.5, 1.0, -1.0)
    weight = rng.uniform(0.5, 1.5, len(pairs)) if weighted else None
    return x, make_links(n, pairs, sign, weight)


def _family(name, x):
    if name == "known-variance":
        return SphericalGaussian(jnp.asarray(1.0), jnp.zeros(x.shape[1]), jnp.asarray(10.0))
    return GaussianNIW.default(x, name)


CASES = [
    ("full", "collapse", "dp"),
    ("full", "sample", "dp"),
    ("diag", "fixed", "dp"),
    ("spherical", "collapse", "dp"),
    ("known-variance", "fixed", "dp"),
    ("full", "collapse", "finite"),
]


@pytest.mark.parametrize(("family", "pq", "partition"), fast_first(CASES, unpack=True))
def test_compiled_sweep_takes_the_xla_sweeps_decisions(family, pq, partition):
    with x64():
        x, links = _problem(weighted=pq == "sample")
        x = jnp.asarray(x)
        fam = _family(family, x)
        k_max = 8 if partition == "finite" else 24
        kw = dict(
            n_draws=4,
            n_warmup=4,
            n_chains=2,
            k_max=k_max,
            pq=pq,
            p=0.85,
            q=0.9,
            progress_bar=False,
            partition=partition,
            sample_alpha=partition == "dp",
        )
        if partition == "finite":  # partial labels as a per-point log prior (the SSGMM's use)
            lp = np.zeros((x.shape[0], k_max))
            lp[:20] = np.log(0.05 / (k_max - 1))
            lp[np.arange(20), np.arange(20) % 3] = np.log(0.95)
            kw["point_logprior"] = lp
        a = gibbs.sample(jax.random.key(5), x, links, fam, TVClustPrior(), backend="xla", **kw)
        b = gibbs.sample(jax.random.key(5), x, links, fam, TVClustPrior(), backend="numba", **kw)
    assert len(np.unique(a.labels)) > 1
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_allclose(a.log_joint, b.log_joint, rtol=1e-10, atol=1e-8)
    np.testing.assert_allclose(a.alpha, b.alpha, rtol=1e-10)
    np.testing.assert_allclose(a.state.counts, b.state.counts, atol=1e-10)
    for u, v in zip(a.state.stats, b.state.stats, strict=True):
        np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-9, atol=1e-9)


def test_single_step_unbatched_and_resumed():
    """``gibbs.step`` outside vmap, and a run resumed from a compiled-sweep state."""
    with x64():
        x, links = _problem(n=60, d=2, seed=1)
        x = jnp.asarray(x)
        fam = GaussianNIW.default(x)
        st = gibbs.init(x, links, fam, k_max=16)
        key = jax.random.key(2)
        sa, ia = gibbs.step(key, st, x, links, fam, TVClustPrior(), backend="xla")
        sb, ib = gibbs.step(key, st, x, links, fam, TVClustPrior(), backend="numba")
        np.testing.assert_array_equal(sa.labels, sb.labels)
        assert float(ia.log_joint) == pytest.approx(float(ib.log_joint), rel=1e-12)
        first = gibbs.sample(
            key,
            x,
            links,
            fam,
            TVClustPrior(),
            n_draws=3,
            n_warmup=0,
            n_chains=2,
            k_max=16,
            progress_bar=False,
            backend="numba",
        )
        kw = dict(n_draws=3, n_warmup=0, k_max=16, progress_bar=False, init_state=first.state)
        a = gibbs.sample(key, x, links, fam, TVClustPrior(), backend="xla", **kw)
        b = gibbs.sample(key, x, links, fam, TVClustPrior(), backend="numba", **kw)
    np.testing.assert_array_equal(a.labels, b.labels)


@pytest.mark.slow  # float32 specialisations of every numba kernel of the sweep (not warmed at install)
# plus a float32 XLA sweep; float64 parity is test_compiled_sweep_takes_the_xla_sweeps_decisions
def test_float32_runs_and_matches():
    x, links = _problem(n=90, d=2, seed=3)
    x = jnp.asarray(x, jnp.float32)
    fam = GaussianNIW.default(x)
    kw = dict(n_draws=3, n_warmup=2, n_chains=1, k_max=16, progress_bar=False)
    a = gibbs.sample(jax.random.key(1), x, links, fam, TVClustPrior(), backend="xla", **kw)
    b = gibbs.sample(jax.random.key(1), x, links, fam, TVClustPrior(), backend="numba", **kw)
    assert b.log_joint.dtype == np.float32
    # float32 rounding differs between the two programs more than float64's; most decisions still agree
    assert (a.labels == b.labels).mean() > 0.9


def test_k_max_exhausted_raises_in_the_compiled_sweep():
    with x64():
        x, links = _problem(n=40, d=2)
        x = jnp.asarray(x)
        with pytest.raises(gibbs.KMaxExhaustedError, match="k_max=3"):
            gibbs.sample(
                jax.random.key(0),
                x,
                links,
                GaussianNIW.default(x),
                TVClustPrior(alpha=50.0),
                n_draws=3,
                n_warmup=0,
                n_chains=1,
                k_max=3,
                progress_bar=False,
                backend="numba",
            )


def test_backend_resolution_and_errors():
    x = jnp.zeros((4, 2))
    niw = GaussianNIW.default(jnp.ones((4, 2)) + jnp.arange(8.0).reshape(4, 2))
    multi = Multinomial(jnp.ones(3))
    assert resolve_backend("auto", gibbs.numba_unsupported(niw)) == (
        "numba" if jax.default_backend() == "cpu" else "xla"
    )
    assert resolve_backend("auto", gibbs.numba_unsupported(multi)) == "xla"
    assert resolve_backend("auto", gibbs.numba_unsupported(niw, "explicit")) == "xla"
    with pytest.raises(ValueError, match="does not support Multinomial"):
        resolve_backend("numba", gibbs.numba_unsupported(multi))
    with pytest.raises(ValueError, match="collapsed sweep only"):
        resolve_backend("numba", gibbs.numba_unsupported(niw, "explicit"))
    with pytest.raises(ValueError, match="backend must be one of"):
        gibbs.sample(jax.random.key(0), x, make_links(4), niw, n_draws=1, backend="gpu")


def test_shuffle_order_is_a_uniform_permutation():
    """Fisher-Yates with j = floor(u (t+1)): all 4! orders equally likely (a j = floor(u t) slip gives
    Sattolo's cyclic permutations only; j over the wrong range biases the counts)."""
    n, draws = 4, 24_000
    u = jax.random.uniform(jax.random.key(0), (draws, n))
    orders = np.asarray(jax.jit(jax.vmap(gibbs.shuffle_order))(u))
    assert (np.sort(orders, 1) == np.arange(n)).all()
    index = {p: i for i, p in enumerate(itertools.permutations(range(n)))}
    counts = np.bincount([index[tuple(o)] for o in orders], minlength=24)
    assert sps.chisquare(counts).pvalue > 1e-3


def test_link_counts_and_link_terms_twins():
    """The compiled sweep's link counting and link terms against sideinfo.link_counts / gibbs._link_terms,
    point by point (1e-12): collapsed p, q (offsets from the no-neighbour value) and fixed p, q."""
    from scipy.special import betaln as sp_betaln

    from ppclust.sideinfo import link_counts, pair_counts

    with x64():
        x, links = _problem(n=40, d=2, seed=4, weighted=True)
        k_max = 7
        labels = np.random.default_rng(0).integers(0, 5, 40).astype(np.int32)
        nbr, sgn, wgt = (np.asarray(a) for a in (links.nbr, links.sgn, links.wgt))
        prior = TVClustPrior(a_p=1.5, b_p=8.0, a_q=9.0, b_q=2.0)
        pri = np.array([prior.a_p, prior.b_p, prior.a_q, prior.b_q])
        p, q = 0.85, 0.9
        xi1, xi2 = np.log(p) - np.log1p(-q), np.log(q) - np.log1p(-p)
        counts = pair_counts(jnp.asarray(labels), links)
        checked = 0
        for i in range(40):
            nb_lab = jnp.asarray(labels)[links.nbr[i]]
            f_j, s_j, F_j, S_j, hot = link_counts(nb_lab, links.sgn[i], links.wgt[i], k_max)
            f, st = np.zeros(k_max), np.zeros(k_max)
            F, S, deg = _gibbs_cpu.link_counts(i, labels, nbr, sgn, wgt, f, st)
            np.testing.assert_allclose(f, f_j, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(st, s_j, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose([F, S], [F_j, S_j], rtol=1e-12)
            if deg == 0:
                continue
            k_old = labels[i]
            c = np.asarray(counts) - np.array([f[k_old], st[k_old], F - f[k_old], S - st[k_old]])
            touched = np.asarray(hot).any(0)
            # collapsed: ln B(a_p + N11 + f, b_p + N01 + s) + ln B(a_q + N00 + S - s, b_q + N10 + F - f)
            exact = {
                "collapse": sp_betaln(pri[0] + c[0] + f, pri[1] + c[1] + st)
                + sp_betaln(pri[2] + c[3] + S - st, pri[3] + c[2] + F - f),
                "fixed": f * xi1 - st * xi2,
            }
            for pq in ("collapse", "fixed"):
                jax_terms = np.asarray(
                    gibbs._link_terms(f_j, s_j, F_j, S_j, jnp.asarray(c), p, q, prior, pq, nb_lab, hot)
                )
                link = np.zeros(k_max)
                lp = _gibbs_cpu._LinkPrior(int(pq == "collapse"), pri, xi1, xi2)
                base = _gibbs_cpu.link_terms(i, labels, nbr, sgn, f, st, F, S, tuple(c), lp, link)
                got = np.where(touched, link + base, base)
                np.testing.assert_allclose(got, exact[pq], rtol=1e-12, atol=1e-12)
                # jax.scipy.special.betaln (jax 0.12) is accurate to ~1e-6 relative only, hence 1e-5 here
                np.testing.assert_allclose(jax_terms, exact[pq], rtol=1e-5 if pq == "collapse" else 1e-12)
            checked += 1
    assert checked > 10


def test_draw_categorical_twin():
    """Inverse-CDF draws of the compiled sweep equal gibbs.draw_categorical (with -inf weights)."""
    rng = np.random.default_rng(1)
    with x64():
        for _ in range(200):
            m = int(rng.integers(1, 9))
            logw = rng.normal(0, 3, m)
            logw[rng.random(m) < 0.3] = -np.inf
            if np.all(np.isinf(logw)):
                logw[0] = 0.0
            u = float(rng.random())
            want = int(gibbs.draw_categorical(jnp.asarray(logw), u))
            got = _gibbs_cpu.draw_categorical(logw.copy(), m, np.max(logw), u)
            assert got == want
            assert np.isfinite(logw[got])


LOO_CASES = [("full", "collapse", "dp"), ("known-variance", "fixed", "dp"), ("diag", "sample", "finite")]


@pytest.mark.slow  # three XLA programs compiled (~15-50 s on 2 loaded cores); the brute-force check of the
# compiled path (tests/test_posterior.py) runs in make test
@pytest.mark.parametrize(("family", "pq", "partition"), LOO_CASES)
def test_compiled_loo_log_predictive_equals_the_xla_program(family, pq, partition):
    """posterior.loo_log_predictive's compiled twin (statistics rebuilt by rank-one additions, the sweep's
    weights without a draw) against its XLA program, per draw and point, with per-draw p, q, alpha, a
    per-point log prior (finite mixture) and weighted links."""
    from ppclust import posterior

    with x64():
        x, links = _problem(n=40, weighted=True)
        x = jnp.asarray(x)
        fam = _family(family, x)
        rng = np.random.default_rng(1)
        K = 8
        labels = rng.integers(0, 4 if partition == "dp" else K, (2, 3, 40))
        labels[0, 0] = np.arange(40) % 7  # gaps and singletons
        labels[1, 2] = 0  # one cluster
        kw = dict(
            pq=pq,
            partition=partition,
            p=rng.uniform(0.6, 0.9, (2, 3)),
            q=rng.uniform(0.6, 0.9, (2, 3)),
            alpha=rng.uniform(0.5, 2.0, (2, 3)),
        )
        if partition == "finite":
            lp = np.log(np.full((40, K), 0.05 / (K - 1)))
            lp[np.arange(40), np.arange(40) % K] = np.log(0.95)
            lp[:5, 3] = -np.inf  # forbidden slots
            kw["point_logprior"] = lp
        prior = TVClustPrior(alpha=1.0, a_p=2.0, b_p=1.0, a_q=3.0, b_q=1.5)
        got = posterior.loo_log_predictive(labels, x, links, fam, prior, backend="numba", **kw)
        want = posterior.loo_log_predictive(labels, x, links, fam, prior, backend="xla", **kw)
    assert got.shape == (2, 3, 40) and np.all(np.isfinite(got))
    # collapsed p, q: jax.scipy.special.betaln is accurate to ~1e-8 here (the compiled side uses lgamma)
    tol = 1e-7 if pq == "collapse" else 1e-10
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("bad", [-1, 6])
def test_init_labels_outside_the_slots_are_refused(bad):
    """The compiled sweep indexes its per-slot arrays by the labels without a check: a label outside
    [0, k_max) would write past them, so ``sample`` refuses it with the range in the message."""
    with x64():
        x, links = _problem(n=30, d=2, seed=2)
        x = jnp.asarray(x)
        labels = np.zeros(30, np.int32)
        labels[7] = bad
        with pytest.raises(ValueError, match=r"init_labels must be 30 slot indices in \[0, k_max=6\)"):
            gibbs.sample(
                jax.random.key(0),
                x,
                links,
                GaussianNIW.default(x, "full"),
                TVClustPrior(),
                n_draws=2,
                n_warmup=0,
                n_chains=1,
                k_max=6,
                init_labels=labels,
                progress_bar=False,
            )
