"""Every compiled twin of ppclust.families against the JAX function it mirrors (float64, 1e-12).

One parametrised walk over the registry ``ppclust.families._twins.TWINS``: each entry has a parity check
below (``CHECKS``) and its cases (``CASES``); an entry without a check fails, and so does a public function of
a twin module missing from the registry. The end-to-end parity of the two Gibbs sweeps
(tests/inference/test_gibbs_cpu.py) only shows that a few hundred draws agree; here every primitive is
compared on its own, for every family and covariance type, so a wrong term (a constant, a sign, a stale
cache entry) points at the function that holds it.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from ppclust._jax import x64
from ppclust.families import (
    GaussianNIW,
    GaussianParams,
    SphericalGaussian,
    _cholesky_cpu,
    _densities_cpu,
    _niw_cpu,
    chol_downdate,
    chol_logdet,
    chol_rank_one,
    chol_singular,
    chol_update,
    gaussian_loglik,
    solve_lower_sq,
)
from ppclust.families._numba import available
from ppclust.families._twins import NOT_TWINS, TWINS

pytestmark = pytest.mark.skipif(not available(), reason="numba is not installed")

C = _niw_cpu
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
    out = C.empty_cache(K, d)
    for k in range(K):
        size = C.predictive_log_norm(n[k], code, d, hyp[1])
        C.predictive_cache_slot(k, size, code, n, s, sc, mu0, hyp, out)
    return out


def _spd_factor(rng, d):
    a = rng.normal(size=(d, d + 2))
    return np.linalg.cholesky(a @ a.T)


def _singular_cases():
    """A well-conditioned factor, a numerically singular scatter (collinear data), a tiny pivot."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3))
    x[:, 2] = x[:, 0] - x[:, 1]  # exactly collinear: scatter singular up to round-off
    xc = x - x.mean(0)
    return [_spd_factor(rng, 3), np.linalg.cholesky(xc.T @ xc + 1e-14 * np.eye(3)), np.eye(3) * [1, 1, 1e-7]]


# ---------------------------------------------------------------------------------------------
# Cholesky twins
# ---------------------------------------------------------------------------------------------


def check_chol_rank_one(case):
    d, unroll = case
    rng = np.random.default_rng(d)
    with x64():
        A = rng.normal(size=(d, d))
        L = np.linalg.cholesky(A @ A.T + d * np.eye(d))
        v = 0.3 * rng.normal(size=d)
        for sign in (1.0, -1.0):
            want = np.asarray(chol_rank_one(jnp.asarray(L), jnp.asarray(v), sign, unroll=unroll))
            np.testing.assert_allclose(want, np.linalg.cholesky(L @ L.T + sign * np.outer(v, v)), **TOL)
            sc = np.ascontiguousarray(L.T.reshape(1, d * d))
            _cholesky_cpu.chol_rank_one(sc, 0, v.copy(), sign)
            np.testing.assert_allclose(sc.reshape(d, d).T, want, **TOL)


def check_solve_lower_sq(d):
    rng = np.random.default_rng(d)
    with x64():
        A = rng.normal(size=(3, d, d))
        L = np.linalg.cholesky(A @ np.swapaxes(A, 1, 2) + d * np.eye(d))
        u = rng.normal(size=(3, d))
        want = np.asarray(solve_lower_sq(jnp.asarray(L), jnp.asarray(u)))
        np.testing.assert_allclose(
            want, [u[k] @ np.linalg.solve(L[k] @ L[k].T, u[k]) for k in range(3)], rtol=1e-10
        )
        sc = np.ascontiguousarray(np.swapaxes(L, 1, 2).reshape(3, d * d))
        b1 = 1.0 / np.diagonal(L, axis1=1, axis2=2)
        got = [_cholesky_cpu.solve_lower_sq(k, sc, b1, u[k].copy()) for k in range(3)]
        np.testing.assert_allclose(got, want, **TOL)


def _factor_and_vector(d):
    rng = np.random.default_rng(d)
    L = _spd_factor(rng, d)
    return L, 0.3 * rng.normal(size=d)


def check_rank_one_slot(d):
    L, v = _factor_and_vector(d)
    with x64():
        for sign in (1.0, -1.0):
            want = np.asarray(chol_rank_one(jnp.asarray(L), jnp.asarray(v), sign))
            L3 = np.stack([np.eye(d), L, np.eye(d)], -1)  # slot-major, the factor in slot 1
            _cholesky_cpu.rank_one_slot(L3, 1, v.copy(), sign)
            np.testing.assert_allclose(L3[:, :, 1], want, rtol=0, atol=1e-12)
            np.testing.assert_array_equal(L3[:, :, 0], np.eye(d))


def check_chol_update(d):
    L, v = _factor_and_vector(d)
    with x64():
        up = np.asarray(chol_update(jnp.asarray(L), jnp.asarray(v)))
    np.testing.assert_allclose(_cholesky_cpu.chol_update(L, v), up, rtol=0, atol=1e-12)


def check_chol_downdate(d):
    L, v = _factor_and_vector(d)
    with x64():
        down = np.asarray(chol_downdate(jnp.asarray(L), jnp.asarray(v)))
    np.testing.assert_allclose(_cholesky_cpu.chol_downdate(L, v), down, rtol=0, atol=1e-12)
    # a down-date past positive definiteness fails the same way in both (NaN -> singular)
    big = 10.0 * np.abs(L).max() * np.ones(d)
    assert np.isnan(_cholesky_cpu.chol_downdate(L, big)).any()
    assert _cholesky_cpu.chol_singular(_cholesky_cpu.chol_downdate(L, big), 1e-12)


def check_chol_logdet(d):
    L, _ = _factor_and_vector(d)
    with x64():
        ld = float(chol_logdet(jnp.asarray(L)))
    assert _cholesky_cpu.chol_logdet(L) == pytest.approx(ld, abs=1e-12)


def check_logdet_slot(d):
    L, _ = _factor_and_vector(d)
    with x64():
        ld = float(chol_logdet(jnp.asarray(L)))
    L3 = np.stack([np.eye(d), L], -1)
    assert _cholesky_cpu.logdet_slot(L3, 1) == pytest.approx(ld, abs=1e-12)
    L3[0, 0, 0] = 0.0
    assert _cholesky_cpu.logdet_slot(L3, 0) == -np.inf


def check_chol_singular(i):
    Ls = _singular_cases()
    with x64():
        want = bool(chol_singular(jnp.asarray(Ls[i])))
    assert _cholesky_cpu.chol_singular(Ls[i], 1e-12) == want
    assert _cholesky_cpu.chol_singular(Ls[1], 1e-12) and not _cholesky_cpu.chol_singular(Ls[0], 1e-12)


def check_pivots_slot(i):
    L = _singular_cases()[i]
    with x64():
        want = bool(chol_singular(jnp.asarray(L)))
    mn, mx, fin = _cholesky_cpu.pivots_slot(L.reshape(3, 3, 1), 0)
    assert ((not fin) or mn <= 1e-12 * mx) == want
    assert mn == pytest.approx(np.min(np.diag(L) ** 2), rel=1e-12)
    assert mx == pytest.approx(np.max(np.diag(L @ L.T)), rel=1e-12)


# ---------------------------------------------------------------------------------------------
# conjugate-family twins
# ---------------------------------------------------------------------------------------------


def check_rank_one(name, d=3):
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


def check_predictive_log_norm(name, d=3):
    with x64():
        _, fam, _, (code, *_rest, hyp) = _problem(name, d)
        sizes = np.array([0.0, 1.0, 2.0, 7.0, 2.5, 1000.0])
        want = np.asarray(fam.predictive_log_norm(jnp.asarray(sizes), d))
        got = [C.predictive_log_norm(m, code, d, hyp[1]) for m in sizes]
        np.testing.assert_allclose(got, want, **TOL)


def check_predictive_cache_slot(case):
    name, d = case
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


def check_log_predictive_cached(case):
    name, d = case
    with x64():
        x, fam, st, (code, n, s, sc, mu0, hyp) = _problem(name, d)
        cache = fam.predictive_cache(st)
        slot_cache = _cache(code, n, s, sc, mu0, hyp)
        K = n.shape[0]
        cand = np.arange(K)
        for xi in (np.asarray(x[3]), np.asarray(x[3]) + 2.0):
            want = np.asarray(fam.log_predictive_cached(cache, st, jnp.asarray(xi)))
            np.testing.assert_allclose(want, fam.log_predictive(st, jnp.asarray(xi)), rtol=0, atol=0)
            out = np.zeros(K)
            C.log_predictive_cached(code, xi, cand, K, -1, sc, slot_cache, np.zeros(d), out)
            np.testing.assert_allclose(out, want, **TOL)


def check_log_predictive_loo(d):
    with x64():
        x, fam, st, (code, n, s, sc, mu0, hyp) = _problem("full", d)
        slot_cache = _cache(code, n, s, sc, mu0, hyp)
        for i, k in ((0, 0), (4, 1), (8, 2)):
            xi = jnp.asarray(x[i])
            want = fam.log_predictive_loo(st, k, xi)
            # the definition: remove x_i, then the predictive of slot k
            np.testing.assert_allclose(want, fam.log_predictive(fam.remove(st, k, xi), xi)[k], rtol=1e-11)
            size = C.predictive_log_norm(n[k] - 1.0, code, d, hyp[1])
            got = C.log_predictive_loo(k, np.asarray(xi), size, n, s, sc, mu0, hyp, slot_cache, np.zeros(d))
            np.testing.assert_allclose(got, want, **TOL)


# ---------------------------------------------------------------------------------------------
# density twins
# ---------------------------------------------------------------------------------------------


def check_gaussian_loglik(layout, K=4, d=3):
    """Explicit parameters in each layout the kernels take (full, upper-triangular full, diag, spherical)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(6, d))
    mean = rng.normal(size=(K, d))
    half = rng.normal(size=K)
    if layout in ("full", "upper"):
        A = rng.normal(size=(K, d, d))
        if layout == "upper":
            A = np.triu(A)
        flat, code = np.ascontiguousarray(np.swapaxes(A, 1, 2).reshape(K, d * d)), C.FULL
        if layout == "upper":
            code = _densities_cpu.UPPER
    elif layout == "diag":
        A = rng.uniform(0.5, 2.0, (K, d))
        flat, code = A, C.DIAG
    else:
        A = rng.uniform(0.5, 2.0, K)
        flat, code = A[:, None].copy(), C.SPHERICAL
    with x64():
        params = GaussianParams(jnp.asarray(mean), jnp.asarray(A), jnp.asarray(half))
        want = np.stack([np.asarray(gaussian_loglik(params, jnp.asarray(xi))) for xi in x])
    w = np.empty(d)
    got = np.array(
        [
            [_densities_cpu.gaussian_loglik(x, i, mean, flat, half, k, code, w) for k in range(K)]
            for i in range(len(x))
        ]
    )
    np.testing.assert_allclose(got, want, **TOL)


CHECKS = {
    "_cholesky_cpu.chol_rank_one": check_chol_rank_one,
    "_cholesky_cpu.solve_lower_sq": check_solve_lower_sq,
    "_cholesky_cpu.rank_one_slot": check_rank_one_slot,
    "_cholesky_cpu.chol_update": check_chol_update,
    "_cholesky_cpu.chol_downdate": check_chol_downdate,
    "_cholesky_cpu.logdet_slot": check_logdet_slot,
    "_cholesky_cpu.chol_logdet": check_chol_logdet,
    "_cholesky_cpu.pivots_slot": check_pivots_slot,
    "_cholesky_cpu.chol_singular": check_chol_singular,
    "_niw_cpu.rank_one": check_rank_one,
    "_niw_cpu.predictive_log_norm": check_predictive_log_norm,
    "_niw_cpu.predictive_cache_slot": check_predictive_cache_slot,
    "_niw_cpu.log_predictive_cached": check_log_predictive_cached,
    "_niw_cpu.log_predictive_loo": check_log_predictive_loo,
    "_densities_cpu.gaussian_loglik": check_gaussian_loglik,
}

_DIMS = [1, 3, 7]
CASES = {
    "_cholesky_cpu.chol_rank_one": [(d, u) for d in (1, 4, 6) for u in (False, True)],  # 4: largest unrolled
    "_cholesky_cpu.solve_lower_sq": [5, 17],  # 17: the triangular-solve branch of solve_lower_sq
    "_cholesky_cpu.rank_one_slot": _DIMS,
    "_cholesky_cpu.chol_update": _DIMS,
    "_cholesky_cpu.chol_downdate": _DIMS,
    "_cholesky_cpu.logdet_slot": _DIMS,
    "_cholesky_cpu.chol_logdet": _DIMS,
    "_cholesky_cpu.pivots_slot": [0, 1, 2],
    "_cholesky_cpu.chol_singular": [0, 1, 2],
    "_niw_cpu.rank_one": FAMILIES,
    "_niw_cpu.predictive_log_norm": FAMILIES,
    "_niw_cpu.predictive_cache_slot": [(f, d) for f in FAMILIES for d in (1, 3)],
    "_niw_cpu.log_predictive_cached": [(f, d) for f in FAMILIES for d in (1, 3)],
    "_niw_cpu.log_predictive_loo": [3],
    "_densities_cpu.gaussian_loglik": ["full", "upper", "diag", "spherical"],
}

WALK = [(t.name, case) for t in TWINS for case in CASES.get(t.name, [None])]


@pytest.mark.parametrize(("name", "case"), WALK, ids=[f"{n}-{c}" for n, c in WALK])
def test_twin(name, case):
    """Each registered twin against its JAX definition; a registered twin without a check fails."""
    if name not in CHECKS or name not in CASES:
        pytest.fail(f"twin {name} is registered but has no parity check")
    CHECKS[name](case)


def test_registry_is_complete():
    """Every public function of a twin module is registered (or is a listed non-twin), and every check is
    of a registered twin."""
    registered = {t.name for t in TWINS}
    public = {
        f"{m.__name__.rsplit('.', 1)[1]}.{n}"
        for m in (_cholesky_cpu, _niw_cpu, _densities_cpu)
        for n in m.__all__
    }
    assert public - NOT_TWINS == registered
    assert set(CHECKS) == registered
    for t in TWINS:
        module, fn = t.name.split(".")
        assert (
            getattr(
                {"_cholesky_cpu": _cholesky_cpu, "_niw_cpu": _niw_cpu, "_densities_cpu": _densities_cpu}[
                    module
                ],
                fn,
            )
            is t.twin
        )
