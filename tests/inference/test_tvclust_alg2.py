"""TVClust explicit-parameter Gibbs sampler (Neal 2000, Algorithm 2): posterior draws of the cluster
parameters, the exact partition posterior by enumeration, and the estimator option."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust._jax import x64
from ppclust.families import GaussianNIW, SphericalGaussian
from ppclust.inference import gibbs
from ppclust.models.tvclust import make_links
from tests.models.test_tvclust import PAIRS5, PRIOR, SIGN5, X5, _family, chi_square_pvalue, exact_posterior


@pytest.mark.parametrize(
    "cov",
    ["full", pytest.param("diag", marks=pytest.mark.slow), pytest.param("spherical", marks=pytest.mark.slow)],
)
def test_niw_sample_posterior_moments(cov):
    """E[Sigma] = Psi_n / (nu_n - d - 1), E[mu] = mu_n, Cov(mu) = E[Sigma] / kappa_n, log det consistent.

    A Bartlett factor with the wrong degrees of freedom, a missing L^{-1} or a mean scaled by kappa_n
    instead of sqrt(kappa_n) moves one of these by far more than the Monte Carlo error (< 3% here).
    """
    rng = np.random.default_rng(0)
    d, S = 3, 20000
    with x64():
        x = jnp.asarray(rng.normal(size=(9, d)) @ np.array([[1, 0.5, 0], [0, 1, 0.3], [0, 0, 0.7]]))
        z = jnp.array([0, 0, 0, 0, 1, 1, 1, 1, 1])
        psi0 = jnp.array([[1.0, 0.2, 0.0], [0.2, 0.8, 0.1], [0.0, 0.1, 1.2]]) * 8.0
        fam = GaussianNIW(jnp.array([0.3, -0.2, 0.1]), jnp.asarray(0.7), jnp.asarray(12.0), psi0, cov)
        st = fam.stats(x, z, 3)  # two occupied slots and one empty one (prior draws)
        th = jax.jit(jax.vmap(lambda k, st=st, fam=fam: fam.sample_posterior(k, st)))(
            jax.random.split(jax.random.key(1), S)
        )
        A = np.asarray(th.prec_factor)
        if cov == "full":
            sig = np.linalg.inv(np.swapaxes(A, -1, -2) @ A)
        else:
            sig = np.eye(d) / (A[..., None] ** 2 if cov == "diag" else A[..., None, None] ** 2)
        kn, nun, mun = map(np.asarray, fam._post(st))
        L = np.asarray(st.scale)
        if cov == "full":
            expect = L @ np.swapaxes(L, 1, 2) / (nun - d - 1)[:, None, None]
        elif cov == "diag":
            expect = np.stack([np.diag(sc / (nu - 2)) for sc, nu in zip(L, nun, strict=True)])
        else:
            expect = np.stack([np.eye(d) * sc / (nu * d - 2) for sc, nu in zip(L, nun, strict=True)])
        scale = np.abs(expect).max()
        assert np.abs(sig.mean(0) - expect).max() < 0.03 * scale, cov
        m = np.asarray(th.mean)
        assert np.abs(m.mean(0) - mun).max() < 0.03 * np.sqrt(scale), cov
        cmu = np.einsum("ski,skj->kij", m - mun, m - mun) / S
        assert np.abs(cmu - expect / kn[:, None, None]).max() < 0.04 * scale / kn.min(), cov
        np.testing.assert_allclose(
            np.asarray(th.half_logdet_prec), -0.5 * np.linalg.slogdet(sig)[1], atol=1e-8
        )
        # log_likelihood is the Gaussian density at the drawn parameters
        from scipy.stats import multivariate_normal as mvn

        one = jax.tree.map(lambda a: a[0], th)
        ll = np.asarray(fam.log_likelihood(one, x[0]))
        ref = [mvn(m[0, k], sig[0, k]).logpdf(np.asarray(x[0])) for k in range(3)]
        np.testing.assert_allclose(ll, ref, rtol=1e-10)


def test_spherical_sample_posterior_moments():
    with x64():
        fam = SphericalGaussian(jnp.asarray(0.5), jnp.array([1.0, -1.0]), jnp.asarray(2.0))
        x = jnp.asarray(np.random.default_rng(2).normal(size=(5, 2)))
        st = fam.stats(x, jnp.array([0, 0, 0, 1, 1]), 3)
        th = jax.vmap(lambda k: fam.sample_posterior(k, st))(jax.random.split(jax.random.key(2), 20000))
        v, m = map(np.asarray, fam._post(st))
    np.testing.assert_allclose(np.asarray(th.mean).mean(0), m, atol=0.03)
    np.testing.assert_allclose(np.asarray(th.mean).var(0), np.broadcast_to(v[:, None], m.shape), rtol=0.05)


def _explicit_case(fam, pq, n_chains=1500):
    with x64():
        x = jnp.asarray(X5)
        links = make_links(5, PAIRS5, SIGN5)
        p, q = (0.8, 0.9) if pq == "fixed" else (None, None)
        parts, probs = exact_posterior(x, links, fam, PRIOR, p, q)
        res = gibbs.sample(
            jax.random.key(11),
            x,
            links,
            fam,
            PRIOR,
            n_draws=6,
            n_warmup=10,
            thin=4,
            n_chains=n_chains,
            k_max=5,
            pq=pq,
            p=0.8,
            q=0.9,
            progress_bar=False,
            algorithm="explicit",
        )
    return res, parts, probs


@pytest.mark.parametrize(
    "case", ["niw-collapse", pytest.param("niw-sample", marks=pytest.mark.slow), "spherical-fixed"]
)
def test_explicit_sampler_matches_exact_enumeration(case):
    """Spec G4 for the literal sampler: partitions of 5 linked points vs the exact collapsed posterior.

    The draws of theta are marginalised by the chain; a wrong new-cluster weight (e.g. the likelihood at
    a prior draw instead of the prior predictive) or a wrong theta posterior shifts the 52 probabilities.
    """
    kind, pq = case.split("-")
    with x64():
        fam = (
            _family(None)
            if kind == "niw"
            else SphericalGaussian(jnp.asarray(0.3), jnp.array([1.0, 0.7]), jnp.asarray(1.5))
        )
    res, parts, probs = _explicit_case(fam, pq)
    assert res.state.theta is not None and res.state.theta.mean.shape == (1500, 5, 2)
    pval, tv = chi_square_pvalue(res.labels.reshape(-1, 5), parts, probs)
    assert tv < 0.03, tv
    assert pval > 1e-3, (pval, tv)


def test_explicit_rejects_bad_options():
    with x64():
        x = jnp.asarray(X5)
        fam = _family(x)
        with pytest.raises(ValueError, match="algorithm"):
            gibbs.sample(jax.random.key(0), x, make_links(5), fam, PRIOR, algorithm="alg2", n_draws=1)
        with pytest.raises(ValueError, match="partition='dp'"):
            gibbs.sample(
                jax.random.key(0),
                x,
                make_links(5),
                fam,
                PRIOR,
                algorithm="explicit",
                partition="finite",
                n_draws=1,
            )


def test_estimator_explicit_on_blobs():
    from ppclust import TVClust
    from ppclust.metrics import ari

    rng = np.random.default_rng(1)
    truth = np.repeat([0, 1, 2], 20)
    X = np.array([[0, 0], [6, 0], [0, 6]])[truth] + rng.normal(size=(60, 2))
    ml = np.array([[0, 1], [20, 21], [40, 41]])
    cl = np.array([[0, 20], [20, 40]])
    est = TVClust(n_draws=20, n_warmup=20, n_chains=2, k_max=16, random_state=0, algorithm="explicit")
    est.fit(X, must_link=ml, cannot_link=cl)
    assert ari(truth, est.labels_) > 0.9 and est.n_clusters_ == 3
    assert est.samples_.state.theta is not None
    with pytest.raises(ValueError, match="algorithm"):
        TVClust(algorithm="nope").fit(X)
