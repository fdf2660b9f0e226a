"""The compiled Hartigan engine (ppclust.inference._hartigan_cpu) against its JAX definitions.

Each numba twin is checked against the JAX function it mirrors to 1e-12 in float64; the engine as a whole
against the XLA engine, label for label and pass for pass, for CEC-IB (lazy and immediate reassignment, with
deletions) and C3L (one and two decision coordinates). The golden replays of the authors' jar run through
the compiled engine in tests/inference/test_cecib.py (backend "auto" on CPU).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust import families
from ppclust.families import _cholesky_cpu as chol_cpu
from ppclust.inference import _hartigan_cpu as cpu
from ppclust.inference import c3l, cec, cecib, hartigan

pytestmark = pytest.mark.skipif(not cpu.available(), reason="numba is not installed")


def _spd_factor(rng, d, m=None):
    a = rng.normal(size=(d, m or 3 * d))
    return np.linalg.cholesky(a @ a.T)


# ---------------------------------------------------------------------------------------------
# primitives, one by one
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("d", [1, 3, 7])
def test_rank_one_twins(d):
    rng = np.random.default_rng(d)
    L = _spd_factor(rng, d)
    v = 0.3 * rng.normal(size=d)
    with jax.enable_x64(True):
        up = np.asarray(families.chol_update(jnp.asarray(L), jnp.asarray(v)))
        down = np.asarray(families.chol_downdate(jnp.asarray(L), jnp.asarray(v)))
        ld = float(families.chol_logdet(jnp.asarray(L)))
    np.testing.assert_allclose(chol_cpu.chol_update(L, v), up, rtol=0, atol=1e-12)
    np.testing.assert_allclose(chol_cpu.chol_downdate(L, v), down, rtol=0, atol=1e-12)
    assert chol_cpu.chol_logdet(L) == pytest.approx(ld, abs=1e-12)
    # a down-date past positive definiteness fails the same way in both (NaN -> singular)
    big = 10.0 * np.abs(L).max() * np.ones(d)
    assert np.isnan(chol_cpu.chol_downdate(L, big)).any()
    assert chol_cpu.chol_singular(chol_cpu.chol_downdate(L, big), 1e-12)


def test_chol_singular_twin():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(20, 3))
    x[:, 2] = x[:, 0] - x[:, 1]  # exactly collinear: scatter singular up to round-off
    xc = x - x.mean(0)
    Ls = [_spd_factor(rng, 3), np.linalg.cholesky(xc.T @ xc + 1e-14 * np.eye(3)), np.eye(3) * [1, 1, 1e-7]]
    with jax.enable_x64(True):
        for L in Ls:
            want = bool(families.chol_singular(jnp.asarray(L)))
            assert chol_cpu.chol_singular(L, families.ML_SING_TOL) == want
            ml = float(families.ml_logdet(jnp.asarray(L)))
            assert (ml == -np.inf) == want
    assert chol_cpu.chol_singular(Ls[1], 1e-12) and not chol_cpu.chol_singular(Ls[0], 1e-12)


def test_ml_entropy_and_constrained_1d_twins():
    with jax.enable_x64(True):
        for n, ld, d in [(5.0, 1.3, 2), (100.0, -40.0, 7), (3.0, 0.0, 1)]:
            assert cpu.ml_entropy(n, ld, d) == pytest.approx(float(families.ml_entropy(n, ld, d)), abs=1e-12)
        p = float(c3l.quantile(0.05))
        # inactive (|mu| >= p s), active with either sign, mu = 0, void constraint (p <= 0)
        for mu, s2, pp in [
            (3.0, 1.0, p),
            (0.4, 1.0, p),
            (-0.4, 2.0, p),
            (0.0, 0.5, p),
            (0.1, 1.0, -0.2),
            (1e-3, 1e-8, float(c3l.quantile(1e-10))),
        ]:
            want = float(c3l.constrained_cost_1d(mu, s2, pp))
            assert cpu.constrained_cost_1d(mu, s2, pp) == pytest.approx(want, abs=1e-12), (mu, s2, pp)


@pytest.mark.parametrize("K", [1, 5, 8])
def test_logdet_after_add_twin(K):
    """Matrix determinant lemma for every slot at once (slot count padded inside the twin)."""
    rng = np.random.default_rng(K)
    d = 6
    n = rng.integers(d + 2, 40, K).astype(float)
    s = rng.normal(size=(K, d)) * n[:, None]
    L = np.stack([_spd_factor(rng, d) for _ in range(K)])
    x = rng.normal(size=d)
    with jax.enable_x64(True):
        want = np.asarray(
            families.GaussianML().logdet_after_add(
                families.Stats(*map(jnp.asarray, (n, s, L))), jnp.asarray(x)
            )
        )
    np.testing.assert_allclose(cpu.logdet_after_add(n, s, L, x), want, rtol=0, atol=1e-12)


def test_cluster_cost_twin():
    """The shared per-cluster cost (cec.CECCost.slot_cost) with its leakage term and its label term."""
    p = np.asarray([float(c3l.quantile(0.05)), float(c3l.quantile(0.2))])
    floor = np.asarray([1e-9, 1e-9])
    cases = [  # nk, logdet, t_mean, t_m2, n_lab, clogc
        (12.0, 3.2, [0.1, -1.0], [4.0, 9.0], 0.0, 0.0),
        (40.0, -7.5, [2.5, 0.01], [30.0, 2.0], 0.0, 0.0),
        (0.0, 1.0, [0.0, 0.0], [0.0, 0.0], 0.0, 0.0),  # empty slot -> 0
        (9.0, -np.inf, [0.3, 0.3], [1.0, 1.0], 0.0, 0.0),  # singular -> inf
    ]
    with jax.enable_x64(True):
        cost_c3l = cec.CECCost(
            jnp.asarray(100.0),
            jnp.asarray(0.0),
            jnp.asarray(p),
            jnp.asarray(floor),
            jnp.asarray(0.0),
            n_labels=0,
            n_dec=2,
            dim=4,
            min_count=6.0,
        )
        for nk, ld, tm, t2, _, _ in cases:
            want = float(
                cost_c3l.slot_cost(
                    jnp.asarray(nk), jnp.asarray(tm), jnp.asarray(t2), jnp.asarray(ld), 0.0, 0.0
                )
            )
            got = cpu.cluster_cost(nk, ld, np.asarray(tm), np.asarray(t2), 0.0, 0.0, 100.0, 0.0, p, floor, 4)
            assert got == pytest.approx(want, abs=1e-12) or got == want == np.inf
        cost_ib = cec.CECCost(
            jnp.asarray(100.0),
            jnp.asarray(0.7),
            jnp.zeros(0),
            jnp.zeros(0),
            jnp.asarray(0.0),
            n_labels=3,
            n_dec=0,
            dim=5,
            min_count=6.0,
        )
        for nk, ld, n_lab, clogc in [
            (12.0, 3.2, 5.0, 3 * np.log(3) + 2 * np.log(2)),
            (30.0, -2.0, 0.0, 0.0),
            (8.0, 1.0, 4.0, 4 * np.log(4)),
        ]:
            want = float(
                cost_ib.slot_cost(
                    jnp.asarray(nk),
                    jnp.zeros(0),
                    jnp.zeros(0),
                    jnp.asarray(ld),
                    jnp.asarray(n_lab),
                    jnp.asarray(clogc),
                )
            )
            got = cpu.cluster_cost(
                nk, ld, np.zeros(0), np.zeros(0), n_lab, clogc, 100.0, 0.7, np.zeros(0), np.zeros(0), 5
            )
            assert got == pytest.approx(want, abs=1e-12)


# ---------------------------------------------------------------------------------------------
# the engine: same decisions as the XLA engine
# ---------------------------------------------------------------------------------------------


def _assert_same_run(a: hartigan.HartiganResult, b: hartigan.HartiganResult, cost):
    np.testing.assert_array_equal(np.asarray(a.labels), np.asarray(b.labels))
    np.testing.assert_array_equal(np.asarray(a.active), np.asarray(b.active))
    assert int(a.n_passes) == int(b.n_passes) and bool(a.converged) == bool(b.converged)
    np.testing.assert_allclose(np.asarray(a.trace), np.asarray(b.trace), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(a.n_clusters_trace), np.asarray(b.n_clusters_trace))
    act = np.asarray(a.active)
    np.testing.assert_allclose(np.asarray(a.costs)[act], np.asarray(b.costs)[act], rtol=0, atol=1e-10)
    ca, cb = a.stats, b.stats
    for f in ("n", "s", "scale", "t_mean", "t_m2", "counts", "n_lab", "clogc"):
        np.testing.assert_allclose(
            np.asarray(getattr(ca, f))[act], np.asarray(getattr(cb, f))[act], rtol=1e-9, atol=1e-9, err_msg=f
        )


def _blobs(seed, n_per=60, d=3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=5.0, size=(3, d))
    x = np.concatenate([c + rng.normal(size=(n_per, d)) for c in centres])
    y = np.where(rng.random(len(x)) < 0.3, np.repeat(np.arange(3), n_per), -1)
    return x, y


@pytest.mark.parametrize("reassign", ["lazy", "immediate"])
def test_engine_matches_xla_cecib(reassign):
    """Random initial partition into 7 slots: several deletions (size rule) and many moves."""
    x, y = _blobs(1)
    n, d = x.shape
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        yc, m = cecib.encode_labels(y, n)
        cost = cecib.make_cost(X, m, 0.8)
        labels0 = jnp.asarray(np.random.default_rng(2).integers(0, 7, n), jnp.int32)
        order = jnp.asarray(np.random.default_rng(3).permutation(n), jnp.int32)
        kw = dict(K=7, min_size=cecib.min_size(n, d, 0.1), reassign=reassign, order=order)
        a = hartigan.run(cost, X, jnp.asarray(yc), labels0, backend="numba", **kw)
        b = hartigan.run(cost, X, jnp.asarray(yc), labels0, backend="xla", **kw)
        assert int(np.asarray(a.active).sum()) < 7 and int(a.n_passes) > 2
        _assert_same_run(a, b, cost)


@pytest.mark.parametrize("J", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_engine_matches_xla_c3l(J):
    rng = np.random.default_rng(J)
    x = np.concatenate(
        [rng.normal(size=(80, 4)) * [1, 3, 1, 1], rng.normal(size=(60, 4)) * 0.5 + [2.5, 0, 1, 0]]
    )
    normals = np.eye(4)[:J] + 0.1
    hp = c3l.make_hyperplane(normals if J > 1 else normals[0], np.zeros(J) if J > 1 else 0.3)
    z = c3l.transform(x, hp)
    with jax.enable_x64(True):
        Z = jnp.asarray(z)
        cost = c3l.make_cost(Z, J, 0.05)
        labels0 = jnp.asarray(rng.integers(0, 5, len(x)), jnp.int32)
        kw = dict(K=5, min_size=c3l.min_size(len(x), 4 - J), reassign="immediate")
        a = hartigan.run(cost, Z, None, labels0, backend="numba", **kw)
        b = hartigan.run(cost, Z, None, labels0, backend="xla", **kw)
        _assert_same_run(a, b, cost)


def test_backend_errors():
    with pytest.raises(ValueError, match="`backend` must be one of"):
        hartigan.resolve_backend("fast")
    assert hartigan.resolve_backend("auto") in ("numba", "xla")


def test_random_starts_do_not_depend_on_the_padding():
    """init="random" draws per row: the compiled engine's starts (rows padded to a size bucket) are the
    first n rows of the draws on a longer padding, so the bucket never changes a fit."""
    x = np.random.default_rng(0).normal(size=(50, 2))
    key = jax.random.key(3)
    with jax.enable_x64(True):
        got = hartigan._compiled_initial_labels(key, x, K=4, n_init=2, init="random")
        xp = jnp.asarray(np.pad(x, ((0, 206), (0, 0))))
        ref = hartigan._initial_labels(
            key, xp, K=4, n_init=2, init="random", sharding=None, n_valid=np.int32(50)
        )
    assert got.shape == (2, 50) and len(np.unique(got)) == 4
    np.testing.assert_array_equal(got, np.asarray(ref)[:, :50])


@pytest.mark.slow
def test_fit_restarts_match_xla():
    x, y = _blobs(4)
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        yc, m = cecib.encode_labels(y, len(y))
        kw = dict(n_clusters=6, n_init=3, min_cluster_fraction=0.05)
        a = cecib.fit(jax.random.key(0), X, yc, m, backend="numba", **kw)
        b = cecib.fit(jax.random.key(0), X, yc, m, backend="xla", **kw)
    assert isinstance(a, hartigan.HartiganFit) and isinstance(a.best, hartigan.HartiganResult)
    np.testing.assert_allclose(np.asarray(a.costs), np.asarray(b.costs), rtol=0, atol=1e-10)
    np.testing.assert_array_equal(np.asarray(a.n_passes), np.asarray(b.n_passes))
    np.testing.assert_array_equal(np.asarray(a.best.labels), np.asarray(b.best.labels))


# ---------------------------------------------------------------------------------------------
# the blocked solves of the visit loop: the same bits as one point at a time
# ---------------------------------------------------------------------------------------------


def _block_vs_point_kernel():
    import numba

    @numba.njit(cache=False)
    def both(L, Lp, mT, X, B, p0):
        """Squared solutions of every (point, slot) by _solve_all (point by point) and _solve_block."""
        d, _, K = L.shape
        point = np.zeros((K, B))
        w, quad, acc = np.zeros(d * K), np.zeros(K), np.zeros(K)
        for q in range(B):
            cpu._solve_all(L.reshape(d * d * K), mT.reshape(d * K), X[:, q].copy(), w, quad, acc, d, K)
            point[:, q] = quad
        block = np.full((K, B), -1.0)
        XB, W, A = X.reshape(d * B).copy(), np.zeros(d * B), np.zeros(4 * B)
        for k in range(K):
            cpu._solve_block(Lp[k], mT, k, XB[p0:], W[p0:], A[p0:], block[k, p0:], d, B, B - p0)
        return point, block

    return both


def test_solve_block_same_bits_as_solve_all():
    """Every d from 1 to 13 (whole and partial 4-row tiles), ill-scaled factors, a block started mid-way:
    the blocked forward substitution reproduces the per-point one exactly, bit for bit."""
    both = _block_vs_point_kernel()
    rng = np.random.default_rng(0)
    for d in range(1, 14):
        K, B = 4, 7
        L = np.stack([_spd_factor(rng, d) * 10.0 ** rng.uniform(-3, 3, size=(d, 1)) for _ in range(K)], -1)
        mT = rng.normal(size=(d, K))
        X = rng.normal(size=(d, B)) * 5
        for p0 in (0, 3):
            L = np.ascontiguousarray(L)
            point, block = both(L, cpu.pack_factors(L), mT, X, B, p0)
            np.testing.assert_array_equal(block[:, p0:], point[:, p0:])
            assert (block[:, :p0] == -1.0).all()  # points before p0 untouched


@pytest.mark.parametrize("reassign", ["lazy", "immediate"])
def test_blocked_visits_same_run_as_point_visits(reassign):
    """The whole compiled run with the blocked solves (blocks of 32 and of 5 points, re-solved after every
    move, with deletions) equals the run with one point at a time, bit for bit (labels, costs, traces,
    factors)."""
    x, y = _blobs(5, n_per=70, d=6)
    n, d = x.shape
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        yc, m = cecib.encode_labels(y, n)
        cost = cecib.make_cost(X, m, 0.8)
        labels0 = jnp.asarray(np.random.default_rng(6).integers(0, 7, (2, n)), jnp.int32)
        captured = []
        hartigan._run_cpu(
            cost,
            X,
            jnp.asarray(yc),
            labels0,
            K=7,
            min_size=cecib.min_size(n, d, 0.1),
            max_passes=100,
            reassign=reassign,
            tol=0.0,
            order=None,
            _kernel_args=captured,
        )
    runs = []
    for block in (0, 32, 5):
        data, cfg, state, out = (
            type(t)(*(a.copy() if isinstance(a, np.ndarray) else a for a in t)) for t in captured[0]
        )
        cpu.run_restarts(data, cfg._replace(block=block), state, out)
        runs.append((state, out))
    state0, out0 = runs[0]
    assert int(out0.n_passes.min()) > 2 and int(state0.active.sum()) < 2 * 7  # several passes and a deletion
    for state, out in runs[1:]:
        for f in ("labels", "active", "n", "sT", "L", "costs"):
            np.testing.assert_array_equal(getattr(state, f), getattr(state0, f), err_msg=f)
        for f in ("trace", "ktrace", "n_passes"):
            np.testing.assert_array_equal(getattr(out, f), getattr(out0, f), err_msg=f)


def test_well_conditioned_shortcut_never_contradicts_the_eigenvalue_test():
    """The end-of-pass degeneracy test skips its eigendecomposition only where the bound proves the answer:
    over factors of condition numbers from 1 to 1e16 (the threshold is 1e12 on S) the shortcut never says
    "well conditioned" where the eigenvalue test says degenerate, and it does decide the easy ones."""
    rng = np.random.default_rng(3)
    tol = families.ML_SING_TOL
    decided = 0
    for trial in range(300):
        d = int(rng.integers(1, 12))
        q, _ = np.linalg.qr(rng.normal(size=(d, d)))
        s = 10.0 ** rng.uniform(-8 * (trial % 3 > 0), 0, size=d)  # singular values of L: cond up to 1e8
        L = np.linalg.cholesky((q * s**2) @ q.T + 1e-300 * np.eye(d)) if np.all(s**2 > 1e-15) else None
        if L is None:
            continue
        ev = np.linalg.eigvalsh(L @ L.T)
        degenerate = ev[0] <= tol * ev[-1]
        fast = cpu._well_conditioned(np.ascontiguousarray(L[:, :, None]), 0, d, tol)
        assert not (fast and degenerate), (d, ev[0] / ev[-1])
        decided += fast
        if ev[0] / ev[-1] > 1e-6:
            assert fast  # far from the threshold: decided without the eigendecomposition
    assert decided > 100
