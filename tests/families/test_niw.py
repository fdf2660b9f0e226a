"""GaussianNIW against brute force: scipy densities, recomputed statistics, the chain rule, jit."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families import (
    GaussianML,
    GaussianNIW,
    Multinomial,
    SphericalGaussian,
)


def _niw(d, cov="full", dtype=np.float64):
    rng = np.random.default_rng(d)
    a = rng.normal(size=(d, d))
    psi0 = a @ a.T + d * np.eye(d)
    return GaussianNIW(
        jnp.asarray(rng.normal(size=d), dtype),
        jnp.asarray(0.7, dtype),
        jnp.asarray(d + 1.5, dtype),
        jnp.asarray(psi0, dtype),
        cov,
    )


def _problem(cov, d, seed=0):
    """A family and its JAX stats over 5 slots (slot 3 empty, slot 4 a singleton)."""
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(14, d)) * np.array([1.0, 2.0, 0.5, 1.5, 1.0, 3.0])[:d])
    z = jnp.asarray([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 4], jnp.int32)
    fam = GaussianNIW.default(x, cov, kappa0=0.5)
    return x, fam, fam.stats(x, z, 5)


def test_cached_predictive_is_the_student_t():
    """The expanded cache form (full covariance) equals scipy's multivariate t of the NIW posterior."""
    with x64():
        x, fam, st = _problem("full", 3)
        xi = np.asarray(x[2]) + 0.5
        lp = np.asarray(fam.log_predictive(st, jnp.asarray(xi)))
        for k in range(5):
            kn, nun = float(fam.kappa0 + st.n[k]), float(fam.nu0 + st.n[k])
            mun = (np.asarray(fam.kappa0 * fam.mu0) + np.asarray(st.s[k])) / kn
            psi = np.asarray(st.scale[k] @ st.scale[k].T)
            df = nun - 3 + 1
            ref = sps.multivariate_t(mun, psi * (kn + 1) / (kn * df), df=df).logpdf(xi)
            np.testing.assert_allclose(lp[k], ref, rtol=1e-11)


def test_loo_refuses_non_full():
    with x64():
        _, fam, st = _problem("diag", 2)
        with pytest.raises(ValueError, match="covariance='full'"):
            fam.log_predictive_loo(st, 0, jnp.zeros(2))


def test_log_predictive_jits():
    """log_predictive through the cache stays jittable."""
    with x64():
        x, fam, st = _problem("full", 3)
        f = jax.jit(fam.log_predictive)
        np.testing.assert_allclose(f(st, x[0]), fam.log_predictive(st, x[0]), rtol=1e-14)


@pytest.mark.parametrize("cov", ["full", "diag", "spherical"])
def test_niw_rank_one_equals_recomputed_after_random_moves(cov):
    with jax.enable_x64(True):
        rng = np.random.default_rng(1)
        n, d, K = 40, 3, 4
        fam = _niw(d, cov)
        x = jnp.asarray(rng.normal(size=(n, d)) * 2 + 1)
        z = rng.integers(0, K, n)
        st_ = fam.stats(x, jnp.asarray(z), K)
        add, rem = jax.jit(fam.add), jax.jit(fam.remove)
        for _ in range(200):
            i = rng.integers(n)
            k_new = rng.integers(K)
            st_ = add(rem(st_, z[i], x[i]), k_new, x[i])
            z[i] = k_new
        ref = fam.stats(x, jnp.asarray(z), K)
        for a, b in zip(st_, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-8)


@pytest.mark.parametrize("cov", ["full", "diag", "spherical"])
@pytest.mark.parametrize("d", [2, 6])
def test_niw_pool_and_weighted_stats_equal_recomputed(cov, d):
    """``pool`` (union of two slots, and a slot minus a subgroup) and ``weighted_stats`` (one masked group,
    the matrix-product scatter for d > 4) equal :meth:`stats` of the relabelled points; the scatter of
    :meth:`stats` (upper triangle, mirrored) equals the brute-force sum of outer products. A pooled
    scatter without the between-group term, or with the wrong sign for a difference, is off by
    n1 n2 / n (mean difference)^2."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        n, K = 60, 4
        fam = _niw(d, cov)
        x = jnp.asarray(rng.normal(size=(n, d)) * 2 + rng.normal(size=d))
        z = rng.integers(0, K - 1, n)
        st_ = fam.stats(x, jnp.asarray(z), K)
        one = lambda k, s=st_: jax.tree.map(lambda a: a[k][None], s)  # noqa: E731

        def check(got, ref):
            for a, b in zip(got, ref, strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)

        merged = fam.stats(x, jnp.asarray(np.where(z == 1, 0, z)), K)
        check(fam.pool(one(0), one(1), 1.0), one(0, merged))
        check(fam.pool(fam.pool(one(0), one(1), 1.0), one(1), -1.0), one(0))
        check(fam.pool(one(2), one(2), -1.0), fam.empty(1))  # a slot minus all of it: the empty slot
        w = jnp.asarray((z == 2).astype(float))
        check(fam.weighted_stats(x, w), one(2))
        if cov == "full":  # the scatter behind the Cholesky factor, by brute force
            xs = np.asarray(x)[z == 0]
            S = (xs - xs.mean(0)).T @ (xs - xs.mean(0))
            kn = fam.kappa0 + len(xs)
            dev = xs.mean(0) - np.asarray(fam.mu0)
            psin = np.asarray(fam.psi0) + S + fam.kappa0 * len(xs) / kn * np.outer(dev, dev)
            L = np.asarray(st_.scale[0])
            np.testing.assert_allclose(L @ L.T, psin, rtol=1e-10)


@pytest.mark.parametrize(
    "fam_name", ["niw-full", "niw-diag", "niw-spherical", "spherical", "multinomial", "ml"]
)
def test_stats_reduced_over_shards_equal_whole_data_stats(fam_name):
    """``stats(..., reduce=psum)`` on each of 3 shards of the rows (``vmap`` with a named axis stands in for
    devices) returns the whole data set's statistics on every shard, padding rows (label K) counted
    nowhere: what the sub-cluster sampler's sharded sweep relies on. A reduce missed on any per-slot
    sum, or a per-shard shift of the scatter, gives shard-local or wrongly centred statistics."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(5)
        n, d, K = 47, 3, 5
        x = rng.normal(size=(n, d)) * 2 + 5.0  # far from 0: a shift that differs per shard would show
        if fam_name == "multinomial":
            x = rng.integers(0, 6, size=(n, d)).astype(float)
        fam = {
            "niw-full": _niw(d, "full"),
            "niw-diag": _niw(d, "diag"),
            "niw-spherical": _niw(d, "spherical"),
            "spherical": SphericalGaussian(jnp.asarray(0.5), jnp.zeros(d), jnp.asarray(2.0)),
            "multinomial": Multinomial(jnp.ones(d)),
            "ml": GaussianML(),
        }[fam_name]
        z = rng.integers(0, K, n)
        z[:K] = np.arange(K)
        if fam_name == "ml":  # every slot needs d + 1 points for a Cholesky factor of its scatter
            z = np.repeat(np.arange(K), -(-n // K))[:n]
        ref = fam.stats(jnp.asarray(x), jnp.asarray(z), K)
        pad = 3 * 16 - n
        xs = jnp.asarray(np.pad(x, ((0, pad), (0, 0))).reshape(3, 16, d))
        zs = jnp.asarray(np.pad(z, (0, pad), constant_values=K).reshape(3, 16))
        red = jax.vmap(
            lambda a, b: fam.stats(a, b, K, reduce=lambda t: jax.lax.psum(t, "shard")), axis_name="shard"
        )(xs, zs)
        for shard in range(3):
            for a, b in zip(jax.tree.map(lambda t, i=shard: t[i], red), ref, strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)


def test_niw_full_predictive_is_scipy_multivariate_t():
    with jax.enable_x64(True):
        rng = np.random.default_rng(2)
        d, K = 3, 3
        fam = _niw(d)
        x = rng.normal(size=(12, d))
        z = np.array([0] * 5 + [1] * 7)
        st_ = fam.stats(jnp.asarray(x), jnp.asarray(z), K)  # slot 2 stays empty
        xq = rng.normal(size=d)
        got = np.asarray(fam.log_predictive(st_, jnp.asarray(xq)))
        mu0, k0, nu0, psi0 = (np.asarray(v) for v in (fam.mu0, fam.kappa0, fam.nu0, fam.psi0))
        for k in range(K):
            xs = x[z == k]
            n = len(xs)
            xbar = xs.mean(0) if n else np.zeros(d)
            S = (xs - xbar).T @ (xs - xbar) if n else np.zeros((d, d))
            kn, nun = k0 + n, nu0 + n
            mun = (k0 * mu0 + xs.sum(0)) / kn
            psin = psi0 + S + k0 * n / kn * np.outer(xbar - mu0, xbar - mu0)
            df = nun - d + 1
            ref = sps.multivariate_t(mun, psin * (kn + 1) / (kn * df), df=df).logpdf(xq)
            assert np.isclose(got[k], ref, rtol=1e-10), (k, got[k], ref)
        assert np.isclose(fam.log_prior_predictive(jnp.asarray(xq)), got[2])


@pytest.mark.parametrize("cov", ["full", "diag", "spherical"])
def test_niw_log_marginal_is_chain_rule_of_predictives(cov):
    """Exchangeability: log p(x_1..x_n) = sum_i log p(x_i | x_<i) — catches any wrong constant."""
    with jax.enable_x64(True):
        rng = np.random.default_rng(3)
        d = 3
        fam = _niw(d, cov)
        x = jnp.asarray(rng.normal(size=(9, d)))
        st_ = fam.empty(1, d)
        total = 0.0
        for i in range(9):
            total += float(fam.log_predictive(st_, x[i])[0])
            st_ = fam.add(st_, 0, x[i])
        assert np.isclose(float(fam.log_marginal(st_)[0]), total, rtol=1e-10)
        assert float(fam.log_marginal(fam.empty(2, d))[1]) == 0.0


def test_niw_float32_tracks_float64():
    rng = np.random.default_rng(4)
    x = rng.normal(size=(30, 2))
    z = rng.integers(0, 3, 30)
    fam32 = _niw(2, dtype=np.float32)
    s32 = fam32.stats(jnp.asarray(x, jnp.float32), jnp.asarray(z), 3)
    for i in range(30):
        s32 = fam32.add(
            fam32.remove(s32, z[i], jnp.asarray(x[i], jnp.float32)),
            (z[i] + 1) % 3,
            jnp.asarray(x[i], jnp.float32),
        )
    z2 = (z + 1) % 3
    with jax.enable_x64(True):
        fam64 = _niw(2)
        s64 = fam64.stats(jnp.asarray(x), jnp.asarray(z2), 3)
        lp64 = np.asarray(fam64.log_predictive(s64, jnp.asarray(x[0])))
    lp32 = np.asarray(fam32.log_predictive(s32, jnp.asarray(x[0], jnp.float32)))
    assert s32.scale.dtype == jnp.float32
    np.testing.assert_allclose(lp32, lp64, rtol=1e-4)


@settings(max_examples=15, deadline=None)
@given(st.permutations(list(range(12))))
def test_niw_stats_invariant_to_add_order(perm):
    with jax.enable_x64(True):
        rng = np.random.default_rng(8)
        x = jnp.asarray(rng.normal(size=(12, 2)))
        fam = _niw(2)
        s1 = fam.empty(1, 2)
        for i in perm:
            s1 = fam.add(s1, 0, x[i])
        ref = fam.stats(x, jnp.zeros(12, int), 1)
        for a, b in zip(s1, ref, strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("cov", ["full", "diag", "spherical"])
def test_posterior_mean_covariance_is_the_inverse_wishart_gamma_mean(cov):
    """E[Sigma | slot] against scipy's inverse-Wishart / inverse-gamma means of the same posterior."""
    with jax.enable_x64(True):
        d = 3
        fam = _niw(d, cov)
        rng = np.random.default_rng(5)
        x = jnp.asarray(rng.normal(size=(20, d)) * [1.0, 2.0, 0.5])
        z = jnp.asarray(np.arange(20) % 2)
        st_ = fam.stats(x, z, 2)
        got = np.asarray(fam.posterior_mean_covariance(st_))
        full = _niw(d, "full").stats(x, z, 2)
        for k in range(2):
            nun = float(fam.nu0 + st_.n[k])
            psi = np.asarray(full.scale[k] @ full.scale[k].T)
            if cov == "full":
                want = sps.invwishart(df=nun, scale=psi).mean()
            elif cov == "diag":
                want = sps.invgamma(a=nun / 2, scale=np.diag(psi) / 2).mean()
            else:
                want = sps.invgamma(a=nun * d / 2, scale=np.trace(psi) / 2).mean()
            np.testing.assert_allclose(got[k], want, rtol=1e-12)
