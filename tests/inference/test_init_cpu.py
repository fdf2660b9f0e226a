"""k-means++ (ppclust.inference.init, one definition) and the compiled set-up of the Hartigan engine
(ppclust.inference._init_cpu) against the JAX functions they mirror.

The seeding is checked against a hand-computed inverse CDF and the numba twin index for index against
the JAX function (with fixed centres, with padding rows); the initial statistics, costs and live slots
against ``hartigan._init_states`` for CEC-IB (labels, ridge, the one-cluster fallback) and C3L. Last, a
CECIB fit on a new n of another size bucket compiles no JAX program.
"""

from __future__ import annotations

import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust.inference import _hartigan_cpu as cpu
from ppclust.inference import c3l, cecib, hartigan, init

pytestmark = pytest.mark.skipif(not cpu.available(), reason="numba is not installed")


def _cpu():
    from ppclust.inference import _init_cpu

    return _init_cpu


def test_inverse_cdf_by_hand():
    """Points 0, 1, 3 on a line, first centre point 0: D^2 weights (0, 1, 9) / 10, cumulative (0, .1, 1);
    the second centre is the first i with cum_i >= 1 - u."""
    x = np.array([[0.0], [1.0], [3.0]])
    zero_c, no_fixed = np.zeros((2, 1)), np.zeros(2, bool)
    with jax.enable_x64(True):
        for u1, want in [(0.95, 1), (0.91, 1), (0.89, 2), (0.0, 2)]:
            u = np.array([0.5, u1])
            got_j = init.kmeanspp_from_uniforms(
                jnp.int32(0), jnp.asarray(u), jnp.asarray(x), jnp.asarray(zero_c), jnp.asarray(no_fixed)
            )[0]
            got_c = _cpu().kmeanspp_from_uniforms(0, u, x, zero_c, no_fixed, 3)[0]
            assert list(np.asarray(got_j)) == list(got_c) == [0, want], u1


def _data(seed, n=150, d=4):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, d)) + 4.0 * rng.integers(0, 3, n)[:, None]


@pytest.mark.parametrize("case", ["plain", "fixed", "padded", "duplicates"])
def test_kmeanspp_twin(case):
    x = _data(1)
    if case == "duplicates":  # 4 distinct points for 6 centres: D^2 runs out, then uniform draws
        x = np.repeat(x[:4], 20, axis=0)
    n, d = x.shape
    K = 6
    centres = np.zeros((K, d))
    fixed = np.zeros(K, bool)
    n_valid = n
    if case == "fixed":
        centres[[1, 4]] = x[:2] + 0.5
        fixed[[1, 4]] = True
    if case == "padded":
        n_valid = n - 37
    with jax.enable_x64(True):
        for seed in range(4):
            first, u = init.kmeanspp_uniforms(jax.random.key(seed), K, n_valid, jnp.float64)
            pad = n_valid if case == "padded" else None
            idx_j, cs_j = init.kmeanspp_from_uniforms(
                first, u, jnp.asarray(x), jnp.asarray(centres), jnp.asarray(fixed), pad
            )
            idx_c, cs_c = _cpu().kmeanspp_from_uniforms(int(first), np.asarray(u), x, centres, fixed, n_valid)
            np.testing.assert_array_equal(np.asarray(idx_j), idx_c)
            np.testing.assert_allclose(np.asarray(cs_j), cs_c, rtol=0, atol=1e-12)
            assert np.all(idx_c[~fixed] < n_valid) and np.all(idx_c[fixed] == -1)
            if case != "duplicates":  # distinct seeds while distinct points are left
                assert len(set(idx_c[~fixed])) == (~fixed).sum()
            if case == "fixed":
                np.testing.assert_array_equal(cs_c[fixed], centres[fixed])


@pytest.mark.slow  # the old bucket property of the XLA engine (its own compiles)
def test_kmeanspp_indices_padding_invariant():
    """Padding rows are never drawn and do not change the draws (the XLA engine's shape buckets)."""
    x = _data(2)
    with jax.enable_x64(True):
        for seed in range(5):
            key = jax.random.key(seed)
            a = init.kmeanspp_indices(key, jnp.asarray(x), 5)
            b = init.kmeanspp_indices(key, jnp.pad(jnp.asarray(x), ((0, 50), (0, 0))), 5, jnp.int32(len(x)))
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    assert hartigan.init_kmeanspp is init.kmeanspp_indices  # one definition


def test_initial_labels_twin():
    """The compiled engine's k-means++ partitions equal the XLA engine's (hartigan._initial_labels)."""
    x = _data(3, n=211)
    with jax.enable_x64(True):
        key = jax.random.key(7)
        want = hartigan._initial_labels(key, jnp.asarray(x), K=5, n_init=6, init="k-means++", sharding=None)
        first, u = hartigan._kmeanspp_draws(key, np.int32(len(x)), K=5, n_init=6, dtype="float64")
        got = _cpu().initial_labels(np.asarray(first), np.asarray(u), x, 5)
    np.testing.assert_array_equal(np.asarray(want), got)
    np.testing.assert_array_equal(
        _cpu().voronoi(x, np.array([3, 0, 9])),
        np.asarray(hartigan.voronoi(jnp.asarray(x), jnp.array([3, 0, 9]))),
    )


def _compare_states(cost, x, side, labels0, K, min_size=0.0):
    """_init_cpu.init_states against hartigan._init_states (JAX) on the same partitions."""
    R, n = labels0.shape
    data, cfg = hartigan._cpu_inputs(
        cost, x, side, None, min_size=min_size, tol=0.0, max_passes=1, reassign="lazy"
    )
    J, m = cost.n_dec, cost.n_labels
    d, Kp = x.shape[1] - J, K + 3
    st = cpu.Slots(
        labels0.astype(np.int32).copy(),
        np.zeros((R, Kp), bool),
        np.zeros((R, Kp)),
        np.zeros((R, d, Kp)),
        np.zeros((R, d, d, Kp)),
        np.zeros((R, Kp, J)),
        np.zeros((R, Kp, J)),
        np.zeros((R, Kp, m)),
        np.zeros((R, Kp)),
        np.zeros((R, Kp)),
        np.zeros((R, Kp)),
    )
    _cpu().init_states(data, cfg, st, K, float(cost.ridge))
    labels = st.labels
    out = dict(
        n=st.n,
        sT=st.sT,
        L=st.L,
        tmean=st.tmean,
        tm2=st.tm2,
        counts=st.counts,
        nlab=st.nlab,
        clogc=st.clogc,
        costs=st.costs,
        active=st.active,
    )
    lab_j, st_j, costs_j, act_j = hartigan._init_states(cost, jnp.asarray(x), side, jnp.asarray(labels0), K=K)
    cs = st_j
    act = np.asarray(act_j)
    np.testing.assert_array_equal(labels, np.asarray(lab_j))
    np.testing.assert_array_equal(out["active"][:, :K], act)
    assert not out["active"][:, K:].any() and np.all(out["n"][:, K:] == 1.0)
    live = act
    np.testing.assert_allclose(out["costs"][:, :K][live], np.asarray(costs_j)[live], rtol=1e-12, atol=1e-12)
    for mine, theirs in [
        ("n", cs.n),
        ("tmean", cs.t_mean),
        ("tm2", cs.t_m2),
        ("counts", cs.counts),
        ("nlab", cs.n_lab),
        ("clogc", cs.clogc),
    ]:
        np.testing.assert_allclose(
            out[mine][:, :K][live], np.asarray(theirs)[live], rtol=1e-12, atol=1e-12, err_msg=mine
        )
    np.testing.assert_allclose(
        np.swapaxes(out["sT"], 1, 2)[:, :K][live], np.asarray(cs.s)[live], rtol=1e-12, atol=1e-10
    )
    np.testing.assert_allclose(
        out["L"].transpose(0, 3, 1, 2)[:, :K][live], np.asarray(cs.scale)[live], rtol=1e-10, atol=1e-10
    )
    return out, act


def test_init_states_twin_cecib():
    x = _data(4, n=120)
    rng = np.random.default_rng(5)
    y = np.where(rng.random(len(x)) < 0.4, rng.integers(0, 3, len(x)), -1)
    with jax.enable_x64(True):
        yc, m = cecib.encode_labels(y, len(x))
        labels0 = rng.integers(0, 6, (3, len(x)))
        labels0[1, :115] = 0  # slots 1..5 of restart 1 too small: dead (degenerate)
        for reg in (0.0, 1e-3):
            cost = cecib.make_cost(jnp.asarray(x), m, 0.7, reg_covar=reg)
            out, act = _compare_states(cost, x, jnp.asarray(yc), labels0, 6)
            assert act[1].sum() == 1 and act[0].sum() == 6
        # every slot too small: all points start in slot 0 (the one-cluster fallback)
        cost = cecib.make_cost(jnp.asarray(x[:12]), m, 0.7)
        lab12 = np.stack([np.repeat(np.arange(4), 3), np.tile(np.arange(4), 3)])  # 3 points per slot < d + 1
        out, act = _compare_states(cost, x[:12], jnp.asarray(yc[:12]), lab12, 4)
        assert np.all(act[:, 0]) and not act[:, 1:].any()


@pytest.mark.slow  # C3L's statistics (the same kernel as CEC-IB's with J > 0)
def test_init_states_twin_c3l():
    rng = np.random.default_rng(6)
    x = np.concatenate(
        [rng.normal(size=(70, 4)) * [1, 3, 1, 1], rng.normal(size=(50, 4)) * 0.5 + [2.5, 0, 1, 0]]
    )
    hp = c3l.make_hyperplane(np.eye(4)[0] + 0.1, 0.3)
    z = np.array(c3l.transform(x, hp), np.float64)  # writable, as the engine's copy
    with jax.enable_x64(True):
        cost = c3l.make_cost(jnp.asarray(z), 1, 0.05)
        _compare_states(cost, z, None, rng.integers(0, 4, (3, len(x))), 4)


def test_new_n_compiles_no_jax_program(caplog):
    """CECIB on a new n in a new size bucket: the compiled engine, its set-up and the cluster Gaussians run
    without compiling a JAX program (the first fit compiles the draws and the (k, d)-shaped estimates)."""
    import ppclust

    x = _data(8, n=300, d=3)
    blob = np.clip(np.round(x.mean(1) / 4.0), 0, 2).astype(int)  # the blob of each point (4 sd apart)
    y = np.where(np.arange(300) % 4 == 0, blob, -1)  # labels that agree with the blobs (label-seeded start)

    def fit(n):
        return ppclust.CECIB(n_clusters=3, n_init=3, random_state=0, progress_bar=False).fit(x[:n], y[:n])

    fit(60)
    with jax.log_compiles(True), caplog.at_level(logging.DEBUG):
        model = fit(300)
    compiled = [r.getMessage()[:120] for r in caplog.records if "Compiling" in r.getMessage()]
    assert compiled == []
    assert model.n_clusters_ == 3 and np.all(np.isfinite(model.covariances_))
