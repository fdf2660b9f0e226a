"""EM's explicit Gaussian: the M-step against numpy, the log-density against scipy, the MAP as a mode."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families.gaussian_em import (
    GMMParams,
    covariances,
    gaussian_map_estimate,
    gaussian_moment_stats,
    log_gaussian_prob,
    mixture_niw_prior,
    niw_log_prior,
    precision_cholesky,
)


def _data(seed=0, n=40, d=3, k=2):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)) * [1.0, 2.0, 0.5]
    resp = rng.dirichlet(np.ones(k), n)
    return x, resp


@pytest.mark.parametrize("cov_type", ["full", "tied", "diag", "spherical"])
def test_ml_estimate_is_the_weighted_moments(cov_type):
    x, resp = _data()
    with x64():
        stats = gaussian_moment_stats(jnp.asarray(x), jnp.asarray(resp), cov_type)
        p = gaussian_map_estimate(stats, cov_type, 0.0)
        cov = np.asarray(covariances(p.prec_chol, cov_type))
    nk = resp.sum(0)
    means = resp.T @ x / nk[:, None]
    np.testing.assert_allclose(p.means, means, rtol=1e-10)
    np.testing.assert_allclose(p.weights, nk / nk.sum(), rtol=1e-10)
    full = np.stack([((x - means[j]) * resp[:, j : j + 1]).T @ (x - means[j]) / nk[j] for j in range(2)])
    want = {
        "full": full,
        "tied": (full * nk[:, None, None]).sum(0) / nk.sum(),
        "diag": np.diagonal(full, axis1=1, axis2=2),
        "spherical": np.trace(full, axis1=1, axis2=2) / 3,
    }[cov_type]
    np.testing.assert_allclose(cov, want, rtol=1e-8)


def test_log_gaussian_prob_is_scipy():
    x, resp = _data(1)
    with x64():
        p = gaussian_map_estimate(
            gaussian_moment_stats(jnp.asarray(x), jnp.asarray(resp), "full"), "full", 0.0
        )
        lp = np.asarray(log_gaussian_prob(jnp.asarray(x), p.means, p.prec_chol, "full"))
        cov = np.asarray(covariances(p.prec_chol, "full"))
    for j in range(2):
        want = sps.multivariate_normal(p.means[j], cov[j]).logpdf(x)
        np.testing.assert_allclose(lp[:, j], want, rtol=1e-10)


def test_full_covariance_loops_agree_on_host_and_in_jax():
    """The full-covariance densities and second moments run one component at a time, in NumPy for NumPy
    inputs and in ``lax.map`` otherwise; both equal the (n, k, d) broadcasting formula."""
    x, resp = _data(2, k=3)
    with x64():
        p = gaussian_map_estimate(gaussian_moment_stats(x, resp, "full"), "full", 0.0)
        means, pc = np.asarray(p.means), np.asarray(p.prec_chol)
        lp_jax = np.asarray(log_gaussian_prob(jnp.asarray(x), jnp.asarray(means), jnp.asarray(pc), "full"))
        m2_jax = np.asarray(gaussian_moment_stats(jnp.asarray(x), jnp.asarray(resp), "full")[2])
        lp_np = np.asarray(log_gaussian_prob(x, means, pc, "full"))
        m2_np = gaussian_moment_stats(x, resp, "full")[2]
    assert isinstance(m2_np, np.ndarray)  # the host loop ran (no program per shape)
    y = np.einsum("nd,kde->nke", x, pc) - np.einsum("kd,kde->ke", means, pc)[None]
    logdet = np.log(np.abs(np.diagonal(pc, axis1=1, axis2=2))).sum(1)
    want_lp = -0.5 * (3 * np.log(2 * np.pi) + (y * y).sum(-1)) + logdet
    want_m2 = np.einsum("nk,nd,ne->kde", resp, x, x)
    for lp, m2 in ((lp_np, m2_np), (lp_jax, m2_jax)):
        np.testing.assert_allclose(lp, want_lp, rtol=1e-10)
        np.testing.assert_allclose(m2, want_m2, rtol=1e-10)


def test_map_estimate_is_a_mode_of_likelihood_plus_prior():
    """Perturbing the MAP means or covariances lowers sum_i r_ik log N + log prior (full covariance)."""
    x, resp = _data(2)
    with x64():
        xj, rj = jnp.asarray(x), jnp.asarray(resp)
        prior = mixture_niw_prior(xj)
        p = gaussian_map_estimate(gaussian_moment_stats(xj, rj, "full"), "full", 0.0, prior)

        def objective(q):
            ll = jnp.sum(rj * (log_gaussian_prob(xj, q.means, q.prec_chol, "full") + jnp.log(q.weights)))
            return float(ll + niw_log_prior(q, prior, "full"))

        best = objective(p)
        cov = covariances(p.prec_chol, "full")
        for eps in (1e-3, -1e-3):
            moved = GMMParams(p.weights, p.means + eps, p.prec_chol)
            assert objective(moved) < best
            scaled = GMMParams(p.weights, p.means, precision_cholesky(cov * (1 + eps), "full"))
            assert objective(scaled) < best


def test_component_blocks_on_an_accelerator_give_the_per_component_result(monkeypatch):
    """On an accelerator the full-covariance densities and second moments run over blocks of components (a
    remainder block when the block does not divide K): the same numbers as one component at a time."""
    import jax

    from ppclust.families import gaussian_em

    rng = np.random.default_rng(3)
    n, d, k = 50, 4, 7
    x = rng.normal(size=(n, d))
    means = rng.normal(size=(k, d))
    a = rng.normal(size=(k, d, d))
    prec_chol = np.triu(a) + 3 * np.eye(d)
    resp = rng.dirichlet(np.ones(k), n)

    def run():
        with x64():
            lp = jax.jit(lambda *a: log_gaussian_prob(*a, "full"))(x, means, prec_chol)
            mom = jax.jit(lambda x, r: gaussian_em._second_moments(x, r))(x, resp)  # a new trace each run
        return np.asarray(lp), np.asarray(mom)

    lp1, mom1 = run()
    monkeypatch.setattr(gaussian_em.jax, "default_backend", lambda: "gpu")
    monkeypatch.setattr(gaussian_em, "_BLOCK_ELEMENTS", 3 * n * d)  # blocks of 3: two blocks and a remainder
    lp3, mom3 = run()
    blocked = jax.make_jaxpr(lambda x, r: gaussian_em._second_moments(x, r))(x, resp)
    assert "dot_general" in str(blocked) and "3,50,4" in str(blocked).replace(" ", "")  # a (3, n, d) block
    np.testing.assert_allclose(lp3, lp1, rtol=1e-12)
    np.testing.assert_allclose(mom3, mom1, rtol=1e-12)
    # and both are the densities themselves
    cov = np.linalg.inv(np.einsum("kij,klj->kil", prec_chol, prec_chol))
    ref = np.stack([sps.multivariate_normal(means[j], cov[j]).logpdf(x) for j in range(k)], 1)
    np.testing.assert_allclose(lp1, ref, rtol=1e-9)
