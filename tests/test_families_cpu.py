"""Each compiled twin in ppclust._families_cpu against the JAX family function it mirrors (float64, 1e-12).

The end-to-end parity of the two Gibbs sweeps (tests/inference/test_gibbs_cpu.py) only shows that a few
hundred draws
agree; here every primitive is compared on its own, for every family and covariance type, so a wrong term
(a constant, a sign, a stale cache entry) points at the function that holds it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust import _families_cpu as C
from ppclust._jax import x64
from ppclust.families import GaussianNIW, SphericalGaussian, _chol_rank_one, solve_lower_sq

pytestmark = pytest.mark.skipif(not C.available(), reason="numba is not installed")

FAMILIES = ["full", "diag", "spherical", "known-variance"]
TOL = dict(rtol=1e-12, atol=1e-12)


def _family(name, x):
    if name == "known-variance":
        return SphericalGaussian(jnp.asarray(0.7), jnp.full(x.shape[1], 0.3), jnp.asarray(4.0))
    return GaussianNIW.default(x, name, kappa0=0.5)


def _problem(name, d, seed=0):
    """A family, its JAX stats over 5 slots (slot 3 empty, slot 4 a singleton) and the compiled layout."""
    rng = np.random.default_rng(seed)
    x = jnp.asarray(rng.normal(size=(14, d)) * np.array([1.0, 2.0, 0.5, 1.5, 1.0, 3.0])[:d])
    z = jnp.asarray([0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 4], jnp.int32)
    fam = _family(name, x)
    st = fam.stats(x, z, 5)
    return x, fam, st, _compiled_layout(st, fam)


def _compiled_layout(st, fam):
    code = C.family_code(fam)
    n, s = np.array(st.n), np.array(st.s)
    K, d = s.shape
    if code == C.FULL:
        sc = np.ascontiguousarray(np.swapaxes(np.array(st.scale), -1, -2).reshape(K, d * d))
    else:
        sc = np.array(st.scale).reshape(K, -1).copy()
    mu0, hyp = (np.asarray(a) for a in C.family_arrays(fam, jnp.float64))
    return code, n, s, sc, mu0, hyp


def _scale_back(sc, code, d):
    if code == C.FULL:
        return np.swapaxes(sc.reshape(-1, d, d), -1, -2)
    return sc if code == C.DIAG else sc[:, 0]


def _cache(code, n, s, sc, mu0, hyp):
    K, d = s.shape
    out = [np.zeros((K, d)), np.zeros(K), np.zeros(K), np.zeros(K), np.zeros((K, d)), np.zeros(K)]
    loc, lw0, a1, hexp, b1, hl = out
    for k in range(K):
        size = C.predictive_log_norm(n[k], code, d, hyp[1])
        C.predictive_cache_slot(k, size, code, n, s, sc, mu0, hyp, loc, lw0, a1, hexp, b1, hl)
    return out


@pytest.mark.parametrize("d", [1, 4, 6])  # 4: the largest unrolled factor; 6: the loop
@pytest.mark.parametrize("unroll", [False, True])
def test_chol_rank_one(d, unroll):
    rng = np.random.default_rng(d)
    with x64():
        A = rng.normal(size=(d, d))
        L = np.linalg.cholesky(A @ A.T + d * np.eye(d))
        v = 0.3 * rng.normal(size=d)
        for sign in (1.0, -1.0):
            want = np.asarray(_chol_rank_one(jnp.asarray(L), jnp.asarray(v), sign, unroll=unroll))
            np.testing.assert_allclose(want, np.linalg.cholesky(L @ L.T + sign * np.outer(v, v)), **TOL)
            sc = np.ascontiguousarray(L.T.reshape(1, d * d))
            C.chol_rank_one(sc, 0, v.copy(), sign)
            np.testing.assert_allclose(sc.reshape(d, d).T, want, **TOL)


@pytest.mark.parametrize("d", [5, 17])  # 17: the triangular-solve branch of solve_lower_sq
def test_solve_sq(d):
    rng = np.random.default_rng(d)
    with x64():
        A = rng.normal(size=(3, d, d))
        L = np.linalg.cholesky(A @ np.swapaxes(A, 1, 2) + d * np.eye(d))
        u = rng.normal(size=(3, d))
        want = np.asarray(solve_lower_sq(jnp.asarray(L), jnp.asarray(u)))
        np.testing.assert_allclose(want, [u[k] @ np.linalg.solve(L[k] @ L[k].T, u[k]) for k in range(3)],
                                   rtol=1e-10)
        sc = np.ascontiguousarray(np.swapaxes(L, 1, 2).reshape(3, d * d))
        b1 = 1.0 / np.diagonal(L, axis1=1, axis2=2)
        got = [C.solve_sq(k, sc, b1, u[k].copy()) for k in range(3)]
        np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("d", [3])
def test_rank_one_add_remove(name, d):
    with x64():
        x, fam, st, (code, n, s, sc, mu0, hyp) = _problem(name, d)
        xi = np.asarray(x[5]) + 0.25
        v = np.zeros(d)
        for sign, k in ((1.0, 0), (1.0, 3), (-1.0, 2)):  # add to an occupied and an empty slot, remove
            want = fam.add(st, k, jnp.asarray(xi)) if sign > 0 else fam.remove(st, k, jnp.asarray(x[5]))
            xk = xi if sign > 0 else np.asarray(x[5])
            n2, s2, sc2 = n.copy(), s.copy(), sc.copy()
            C.rank_one(k, xk, sign, code, n2, s2, sc2, mu0, hyp, v)
            np.testing.assert_allclose(n2, want.n, **TOL)
            np.testing.assert_allclose(s2, want.s, **TOL)
            np.testing.assert_allclose(_scale_back(sc2, code, d), want.scale, **TOL)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("d", [3])
def test_predictive_log_norm(name, d):
    with x64():
        _, fam, _, (code, *_rest, hyp) = _problem(name, d)
        sizes = np.array([0.0, 1.0, 2.0, 7.0, 2.5, 1000.0])
        want = np.asarray(fam.predictive_log_norm(jnp.asarray(sizes), d))
        got = [C.predictive_log_norm(m, code, d, hyp[1]) for m in sizes]
        np.testing.assert_allclose(got, want, **TOL)


@pytest.mark.parametrize("name", FAMILIES)
@pytest.mark.parametrize("d", [1, 3])
def test_predictive_cache_and_cached_predictive(name, d):
    with x64():
        x, fam, st, (code, n, s, sc, mu0, hyp) = _problem(name, d)
        cache = fam.predictive_cache(st)
        loc, lw0, a1, hexp, b1, _ = _cache(code, n, s, sc, mu0, hyp)
        np.testing.assert_allclose(loc, cache.loc, **TOL)
        np.testing.assert_allclose(lw0, cache.log_norm, **TOL)
        np.testing.assert_allclose(a1, cache.a1, **TOL)
        np.testing.assert_allclose(hexp, cache.hexp, **TOL)
        if code in (C.FULL, C.DIAG):
            np.testing.assert_allclose(b1, cache.b1, **TOL)
        K = n.shape[0]
        cand = np.arange(K)
        for xi in (np.asarray(x[3]), np.asarray(x[3]) + 2.0):
            want = np.asarray(fam.log_predictive_cached(cache, st, jnp.asarray(xi)))
            np.testing.assert_allclose(want, fam.log_predictive(st, jnp.asarray(xi)), rtol=0, atol=0)
            out = np.zeros(K)
            C.log_predictive_cached(code, xi, cand, K, -1, sc, loc, lw0, a1, hexp, b1, np.zeros(d), out)
            np.testing.assert_allclose(out, want, **TOL)


def test_cached_predictive_is_the_student_t():
    """The expanded cache form (full covariance) equals scipy's multivariate t of the NIW posterior."""
    with x64():
        x, fam, st, _ = _problem("full", 3)
        xi = np.asarray(x[2]) + 0.5
        lp = np.asarray(fam.log_predictive(st, jnp.asarray(xi)))
        for k in range(5):
            kn, nun = float(fam.kappa0 + st.n[k]), float(fam.nu0 + st.n[k])
            mun = (np.asarray(fam.kappa0 * fam.mu0) + np.asarray(st.s[k])) / kn
            psi = np.asarray(st.scale[k] @ st.scale[k].T)
            df = nun - 3 + 1
            ref = sps.multivariate_t(mun, psi * (kn + 1) / (kn * df), df=df).logpdf(xi)
            np.testing.assert_allclose(lp[k], ref, rtol=1e-11)


@pytest.mark.parametrize("d", [3])
def test_log_predictive_loo(d):
    with x64():
        x, fam, st, (code, n, s, sc, mu0, hyp) = _problem("full", d)
        _, _, _, _, b1, hl = _cache(code, n, s, sc, mu0, hyp)
        for i, k in ((0, 0), (4, 1), (8, 2)):
            xi = jnp.asarray(x[i])
            want = fam.log_predictive_loo(st, k, xi)
            # the definition: remove x_i, then the predictive of slot k
            np.testing.assert_allclose(want, fam.log_predictive(fam.remove(st, k, xi), xi)[k], rtol=1e-11)
            size = C.predictive_log_norm(n[k] - 1.0, code, d, hyp[1])
            got = C.log_predictive_loo(k, np.asarray(xi), size, n, s, sc, mu0, hyp, b1, hl, np.zeros(d))
            np.testing.assert_allclose(got, want, **TOL)


def test_loo_refuses_non_full():
    with x64():
        _, fam, st, _ = _problem("diag", 2)
        with pytest.raises(ValueError, match="covariance='full'"):
            fam.log_predictive_loo(st, 0, jnp.zeros(2))


def test_log_predictive_jits():
    """log_predictive through the cache stays jittable."""
    with x64():
        x, fam, st, _ = _problem("full", 3)
        f = jax.jit(fam.log_predictive)
        np.testing.assert_allclose(f(st, x[0]), fam.log_predictive(st, x[0]), rtol=1e-14)
