"""The compiled twins of the sub-cluster sampler's O(n) passes (ppclust.inference._subcluster_cpu,
_subcluster_draw_cpu, _cluster_index, _counter_rng) against the JAX functions they twin, the shared
counter-based uniforms, and whole chains numba vs XLA."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families import GaussianNIW, _densities_cpu, _niw_cpu, gaussian_loglik
from ppclust.inference import _cluster_index as cidx
from ppclust.inference import _counter_rng as crng
from ppclust.inference import _subcluster_cpu as cpu
from ppclust.inference import _subcluster_draw_cpu as draw
from ppclust.inference import _subcluster_move_cpu as mcpu
from ppclust.inference import subcluster
from ppclust.inference import subcluster_moves as moves
from ppclust.inference.backend import resolve_backend
from ppclust.models.tvclust import TVClustPrior, make_links
from tests._tiers import fast_first

pytestmark = pytest.mark.skipif(not cpu.available(), reason="numba is not installed")

COVS = ["full", "diag", "spherical"]


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=3.0, size=(5, d))
    z = rng.integers(0, 5, n)
    return centres[z] + rng.normal(size=(n, d)), z.astype(np.int32)


def _theta(fam, x, z, k, seed=1):
    return fam.sample_posterior(jax.random.key(seed), fam.stats(x, jnp.asarray(z), k))


def test_counter_uniform_twin_uniformity_and_independence():
    """JAX and numba give the same bits; the uniforms pass a KS test, in float64 and float32, and the
    uniforms of neighbouring indices and of two seeds are uncorrelated (a hash of the index alone, or
    one ignoring a seed word, fails these)."""
    with x64():
        seed = moves.counter_seed(jax.random.key(5))
        idx = np.r_[np.arange(2000), [2**31 - 1, 123456789, 4_000_000_000 % 2**31]]
        uj = np.asarray(moves.counter_uniform(seed, jnp.asarray(idx), jnp.float64))
        s0, s1 = crng.host_seed(np.asarray(seed))
        un = np.array([crng.counter_uniform(s0, s1, int(i)) for i in idx])
        np.testing.assert_array_equal(uj, un)
        n = 200_000
        u = np.asarray(moves.counter_uniform(seed, jnp.arange(n), jnp.float64))
        u2 = np.asarray(moves.counter_uniform(seed.at[1].add(1), jnp.arange(n), jnp.float64))
        u3 = np.asarray(moves.counter_uniform(seed.at[0].add(1), jnp.arange(n), jnp.float64))
    u32 = np.asarray(moves.counter_uniform(seed.astype(jnp.uint32), jnp.arange(n), jnp.float32))
    assert u.min() > 0 and u.max() < 1 and u32.min() > 0 and u32.max() < 1
    for v in (u, u2, u3, u32, u[::7]):
        assert sps.kstest(v, "uniform").pvalue > 1e-3
    bound = 5 / np.sqrt(n)  # 5 standard errors of a correlation of independent uniforms
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < bound
    assert abs(np.corrcoef(u, u2)[0, 1]) < bound and abs(np.corrcoef(u, u3)[0, 1]) < bound
    assert len(np.unique(u)) == n  # 53 bits: no collisions at this size


@pytest.mark.parametrize("cov", fast_first(COVS))
def test_gaussian_loglik_twin(cov):
    x, z = _data(50, 4)
    with x64():
        fam = GaussianNIW.default(jnp.asarray(x), cov)
        th = _theta(fam, jnp.asarray(x), z, 5)
        ref = np.asarray(jax.vmap(gaussian_loglik, (None, 0))(th, jnp.asarray(x)))
    code = _niw_cpu.family_code(fam)
    mean, A, half, code = cpu.param_arrays(th, code)
    mean, A, half = np.asarray(mean), np.asarray(A), np.asarray(half)
    w = np.empty(x.shape[1])
    got = np.array(
        [
            [_densities_cpu.gaussian_loglik(x, i, mean, A, half, k, code, w) for k in range(5)]
            for i in range(len(x))
        ]
    )
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("cov", fast_first(COVS))
def test_stats_twin(cov):
    """The statistics from the compiled sums equal ``family.stats`` (an empty slot, labels past the
    slots counted nowhere, as the segment sum drops them)."""
    x, z = _data(400, 6)
    z = np.where(z == 2, 7, z).astype(np.int32)  # slot 2 empty
    z[:3] = 9  # outside the 9 slots
    with x64():
        xj = jnp.asarray(x)
        fam = GaussianNIW.default(xj, cov)
        ref = fam.stats(xj, jnp.asarray(z), 9)
        got = jax.jit(lambda: cpu.family_stats(xj, jnp.asarray(z), 9, fam))()
    for a, b in zip(got, ref, strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)
    counts = np.asarray(got.n)
    assert counts[2] == 0 and counts.sum() == len(z) - 3


def test_pick_subsamples_twin():
    """The four subsamples of a fit in one visit (C from two uniform vectors, A and B from the second)
    equal the cumulative-count search of each set (split and merge, an empty cluster, cb = ca; a split's
    B is empty, as the JAX fit's)."""
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 6, 3000).astype(np.int32)
    u, u_lab = rng.random(1024), rng.random(64)

    def ref(mask, v):
        cum = np.cumsum(mask)
        return np.minimum(np.searchsorted(cum, 1 + np.floor(v * cum[-1]).astype(np.int32)), len(labels) - 1)

    for ca, cb, is_split in ((2, 4, True), (2, 4, False), (7, 1, True), (1, 7, False), (5, 5, False)):
        mask = (labels == ca) | ((labels == cb) & (not is_split))
        got = jax.jit(
            lambda s, a, b: cpu.subsamples(jnp.asarray(labels), a, b, s, jnp.asarray(u), jnp.asarray(u_lab))
        )(is_split, ca, cb)
        pieces = (mask & (labels == ca), mask & (labels != ca))  # the JAX fit's mask & in_a, mask & ~in_a
        for (idx, cnt), m_, v in zip(got, (mask, mask) + pieces, (u, u_lab, u_lab, u_lab), strict=True):
            np.testing.assert_array_equal(np.asarray(idx), ref(m_, v))
            assert int(cnt) == m_.sum()


def test_peel_points_twin():
    """The peel/absorb step's points equal ``_pick_point`` (the same draw j) and ``argmax`` of the
    singleton's mask, also when a cluster is empty (0, as argmax of all-False)."""
    rng = np.random.default_rng(4)
    labels = rng.integers(0, 6, 2000).astype(np.int32)
    labels[1234] = 9  # a singleton
    for c, s, seed in ((2, 9, 0), (5, 9, 1), (7, 9, 2), (3, 8, 3)):
        key = jax.random.key(seed)
        mask = jnp.asarray(labels == c)
        ref = int(moves._pick_point(key, mask))
        j = jax.random.randint(key, (), 0, max(int(mask.sum()), 1))
        i, i_abs = cpu.peel_points_of(jnp.asarray(labels), c, j, s)
        assert int(i) == ref and int(i_abs) == int(np.argmax(labels == s))
        assert (labels[ref] == c) == (mask.sum() > 0)


def _moved_labels(rng, z, k_max=8):
    """Labels after accepted moves since a cluster index of ``z`` was built (a split of 2 into 6, a merge of
    4 into 1, a peel of a point of 3 into 7, then a rejected split of 0 into 5), with the index's covers
    updated as the sampler updates them."""
    with x64():
        index = cidx.cluster_index(jnp.asarray(z), k_max)
    lab = z.copy()
    side = (lab == 2) & (rng.random(len(lab)) < 0.4)
    lab[side] = 6
    index = index.moved(True, True, 2, 6)
    lab[lab == 4] = 1
    index = index.moved(True, False, 1, 4)
    lab[np.flatnonzero(lab == 3)[5]] = 7
    index = index.moved(True, True, 3, 7)
    index = index.moved(False, True, 0, 5)  # rejected: nothing changes
    return lab.astype(np.int32), index


def test_merge_two_equals_sorted_union():
    """The two-segment merge of a merge move's candidates: the sorted union, empty sides and interleaved
    runs included, and equal to the k-way merge of the same index segments."""
    rng = np.random.default_rng(0)
    for na, nb in ((0, 5), (5, 0), (1, 1), (3, 7), (200, 31)):
        r = rng.permutation(400)[: na + nb]
        a, b = np.sort(r[:na]).astype(np.int32), np.sort(r[na:]).astype(np.int32)
        out = np.empty(na + nb, np.int32)
        cidx.merge_two(a, b, out)
        np.testing.assert_array_equal(out, np.sort(r))
        order, off = np.concatenate([a, b]), np.array([0, na, na + nb], np.int32)
        ref = np.empty(na + nb, np.int32)
        cidx.merge_segments(order, off, np.array([0, 1], np.int64), ref)
        np.testing.assert_array_equal(out, ref)


def test_cluster_index_covers_every_point():
    """The counting sort equals a stable argsort by label with the slots' offsets; after accepted moves
    the covers of every slot hold all its points (what the kernels need), and a rejected move changes no
    cover."""
    rng = np.random.default_rng(5)
    z = rng.integers(0, 6, 3000).astype(np.int32)
    with x64():
        index = cidx.cluster_index(jnp.asarray(z), 8)
    order, off = cidx.held_index(index.token)
    np.testing.assert_array_equal(order, np.argsort(z, kind="stable"))
    np.testing.assert_array_equal(off, np.r_[0, np.cumsum(np.bincount(z, minlength=8))])
    lab, index = _moved_labels(rng, z)
    cover = np.asarray(index.cover)
    for k in range(8):
        cand = cidx.candidates(len(lab), index.token, cover[k][None])
        assert np.all(np.diff(cand) > 0)  # increasing
        assert set(np.flatnonzero(lab == k)) <= set(cand.tolist())
    assert cover[5].sum() == 1 and cover[5, 5]  # the rejected split left slot 5's cover alone
    assert cidx.held_index(0) is None  # a token not (or no longer) held: every point is a candidate
    np.testing.assert_array_equal(cidx.candidates(len(lab), 0, cover[:1]), np.arange(len(lab)))
    assert cover[1, 4] and cover[6, 2] and cover[7, 3]


def test_twins_with_cluster_index_equal_full_visits():
    """Subsamples, peel points and the move's O(n) part from a cluster index with updated covers (the points
    of the chosen clusters only) equal the same kernels visiting all n points (the XLA twins' results,
    tested above), for splits and merges of slots whose covers span one and several segments."""
    rng = np.random.default_rng(6)
    x, z = _data(3000, 3)
    z = rng.integers(0, 6, 3000).astype(np.int32)
    lab, index = _moved_labels(rng, z)
    u, u_lab = rng.random(1024), rng.random(64)
    with x64():
        xj, labj = jnp.asarray(x), jnp.asarray(lab)
        fam = GaussianNIW.default(xj, "full")
        sub = _theta(fam, xj, (lab == 1).astype(np.int32), 2, seed=4)
        lw = jnp.log(jnp.asarray([40.0, 60.0]))
        seed = moves.counter_seed(jax.random.key(9))
        uj, ulj = jnp.asarray(u), jnp.asarray(u_lab)
        pick = jax.jit(lambda s, a, b, ix: cpu.subsamples(labj, a, b, s, uj, ulj, ix))
        mv = jax.jit(
            lambda s, a, b, ix: mcpu.move(
                xj, labj, mcpu.MoveSlots(a, b, 5, s), sub, lw, seed, fam, 30.0, None, ix
            )
        )
        pp = jax.jit(lambda c, j, s, ix: cpu.peel_points_of(labj, c, j, s, ix))
        for ca, cb, is_split in (
            (2, 6, False),
            (1, 3, True),
            (1, 6, False),
            (6, 0, True),
            (7, 3, False),
            (5, 1, True),
        ):
            for (i1, c1), (i2, c2) in zip(
                pick(is_split, ca, cb, index), pick(is_split, ca, cb, None), strict=True
            ):
                np.testing.assert_array_equal(np.asarray(i1), np.asarray(i2))
                assert int(c1) == int(c2)
            got, ref = mv(is_split, ca, cb, index), mv(is_split, ca, cb, None)
            np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(ref[0]))
            np.testing.assert_allclose(float(got[1]), float(ref[1]), rtol=1e-12)
            assert int(got[2]) == int(ref[2]) and int(got[3]) == int(ref[3])
            for a, b in zip(got[4], ref[4], strict=True):
                np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)
            for j in (0, 7, 10**6):
                assert [int(v) for v in pp(ca, j, 7, index)] == [int(v) for v in pp(ca, j, 7, None)]
        assert int(mv(False, 2, 6, index)[2]) == int(((lab == 2) | (lab == 6)).sum())


@pytest.mark.parametrize("cov", fast_first(["full", "diag"]))
def test_move_twin(cov):
    """The move's O(n) part for the points of C only: proposal, log q, |C|, |A| and side B's statistics
    equal the XLA path's (final responsibilities of every point, Bernoulli sides from the same
    uniforms, _log_q_pair, weighted_stats), for a split and for a merge."""
    x, z = _data(500, 3)
    with x64():
        xj = jnp.asarray(x)
        fam = GaussianNIW.default(xj, cov)
        sub = _theta(fam, xj, (z == 1).astype(np.int32), 2, seed=4)  # two sub-cluster components
        lw = jnp.log(jnp.asarray([40.0, 60.0]))
        seed = moves.counter_seed(jax.random.key(9))
        lab = jnp.asarray(z)
        for is_split, ca, cb, new in ((True, 1, 3, 6), (False, 1, 3, 6)):
            log_r, log_1r = moves._responsibilities(fam, sub, lw, xj)
            in_a = lab == ca
            mask = in_a if is_split else in_a | (lab == cb)
            u = moves.counter_uniform(seed, jnp.arange(len(x)), xj.dtype)
            side_a = jnp.log(u) < log_r if is_split else in_a
            target = new if is_split else ca
            ref_prop = jnp.where(mask & ~side_a, target, lab)
            ref_q = moves._log_q_pair(log_r, log_1r, mask, side_a)
            twin = jax.jit(
                lambda s, a, b, nw: mcpu.move(xj, lab, mcpu.MoveSlots(a, b, nw, s), sub, lw, seed, fam, 30.0)
            )
            prop, log_q, n_c, n_a, side_b = twin(is_split, ca, cb, new)
            np.testing.assert_array_equal(np.asarray(prop), np.asarray(ref_prop))
            np.testing.assert_allclose(float(log_q), float(ref_q), rtol=1e-12)
            assert int(n_c) == int(mask.sum()) and int(n_a) == int((mask & side_a).sum())
            if is_split:
                assert 0 < int(n_a) < int(n_c)  # a real split of the cluster
                ref_b = fam.weighted_stats(xj, (ref_prop == new).astype(xj.dtype))
                for a, b in zip(side_b, ref_b, strict=True):
                    np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-10, atol=1e-10)


def test_fexp_matches_libm_exp():
    """The branch-free exp of the dense label draw: within 3 ulp of libm's exp over the range the draw
    uses (t <= 0), exact at 0, and exp(-708) for every t below -708 (a wrong polynomial, range reduction or
    exponent write is off by far more)."""
    rng = np.random.default_rng(0)
    t = np.concatenate(
        [-rng.random(20000) * 40, -rng.random(2000) * 708, [0.0, -1e-300, -np.log(2) / 2, -np.log(2), -700.0]]
    )
    got = np.array([draw.fexp(v) for v in t])
    assert got[-5] == 1.0
    np.testing.assert_array_less(np.abs(got - np.exp(t)), 3 * np.finfo(float).eps * np.exp(t))
    assert draw.fexp(-745.0) == draw.fexp(-1e10) == pytest.approx(np.exp(-708.0), rel=1e-15)


@pytest.mark.parametrize(
    "cov,cut,d",
    fast_first(
        [
            ("full", 20.0, 2),
            ("full", 20.0, 3),
            ("diag", 20.0, 3),
            ("spherical", 20.0, 3),
            ("full", 20.0, 6),
            ("diag", 20.0, 6),
            ("spherical", 20.0, 6),
            ("full", 1.0, 6),
        ],
        unpack=True,
    ),
)
def test_block_draw_twin(cov, cut, d):
    """The compiled unlinked-block draw equals ``subcluster._block_draw`` (XLA: every exp, matrix
    products) label for label, with the same slot counts: overlapping and separated clusters, an inactive
    slot between active ones (never drawn), kept points (their labels, counted). d <= 4 takes the dense
    draw (every weight, blocks of points; d = 2 its unrolled densities; 3000 rows end in a partial block).
    d = 6 takes the bounded path (a slot skipped when an O(d) upper bound
    of its density is ``cut`` below the largest; with ``cut = 1`` most are, and most draws need the
    densities themselves: a wrong bound or a redraw from the bounds changes draws)."""
    x, z = _data(3000, d)
    x[:1500] *= 0.3  # half the points where all five clusters overlap
    rng = np.random.default_rng(3)
    keep = rng.random(len(x)) < 0.2
    with x64():
        xj = jnp.asarray(x)
        fam = GaussianNIW.default(xj, cov)
        theta = _theta(fam, xj, z, 6)
        log_pi = jnp.log(jnp.asarray([0.1, 0.3, 0.2, 0.25, 0.15, 0.05])).at[2].set(-jnp.inf)
        seed = moves.counter_seed(jax.random.key(3))
        u = moves.counter_uniform(seed, jnp.arange(len(x)), xj.dtype)
        lab = jnp.asarray(z)
        ref, ref_cnt = subcluster._block_draw(xj, u, jnp.asarray(keep), lab, fam, log_pi, theta, None)
        got, cnt = jax.jit(
            lambda: draw.draw_block(xj, jnp.asarray(keep), lab, log_pi, theta, seed, fam, cut)
        )()
    np.testing.assert_array_equal(np.asarray(got), np.asarray(ref))
    np.testing.assert_array_equal(np.asarray(cnt), np.asarray(ref_cnt))
    got = np.asarray(got)
    assert np.all(got[keep] == z[keep]) and not np.any(got[~keep] == 2) and np.any(got[~keep] == 5)
    assert 0.05 < np.mean(got[~keep] != z[~keep]) < 0.9  # the draws are random, not the argmax


@pytest.mark.parametrize("cov", fast_first(COVS + ["round"]))
def test_precision_bound_holds_and_is_tight_on_stretched_clusters(cov):
    r"""The O(d) bound of the bounded draw (``_precision_bound``, summed as ``_bounded_logliks`` does) never
    exceeds the quadratic form :math:`u^\top A^\top A u`, for random u and precisions stretched along two
    directions; it equals the form on the span of the two smallest eigenvectors and is at least the
    third eigenvalue times :math:`\|u\|^2` off it (the smallest eigenvalue alone, or a sign slip in the
    correction terms, fails one of these). A round precision ("round": every eigenvalue within a factor
    1.5) takes the smallest eigenvalue alone (no correction sums) and still bounds the form."""
    d, K = 9, 5
    rng = np.random.default_rng(4)
    if cov in ("full", "round"):
        Q = np.linalg.qr(rng.normal(size=(K, d, d)))[0]
        ev = (
            np.concatenate([[0.01, 0.05], rng.uniform(1.0, 3.0, d - 2)])
            if cov == "full"
            else rng.uniform(1.0, 1.5, d)
        )
        A = np.sqrt(ev)[None, :, None] * np.swapaxes(Q, 1, 2)  # A^T A = Q diag(ev) Q^T
        code = _niw_cpu.FULL
        Af = np.swapaxes(A, 1, 2).reshape(K, -1)  # param_arrays' column-major layout
    elif cov == "diag":
        Af = np.sqrt(
            rng.permuted(
                np.tile(np.concatenate([[0.01, 0.05], rng.uniform(1.0, 3.0, d - 2)]), (K, 1)), axis=1
            )
        )
        code, A = _niw_cpu.DIAG, None
    else:
        Af, code, A = rng.uniform(0.5, 2.0, (K, 1)), _niw_cpu.SPHERICAL, None
    lam, V = draw.precision_bound(Af, code, d)
    P = (
        np.swapaxes(A, 1, 2) @ A
        if A is not None
        else np.stack([np.diag(np.broadcast_to(a * a, (d,))) for a in Af])
    )

    def bound(u):
        p0, p1 = np.einsum("kj,nkj->nk", V[:, 0], u), np.einsum("kj,nkj->nk", V[:, 1], u)
        return lam[:, 0] * (u * u).sum(-1) - lam[:, 1] * p0**2 - lam[:, 2] * p1**2

    u = rng.normal(size=(2000, K, d)) * rng.uniform(0.1, 10.0, (2000, 1, 1))
    q = np.einsum("nkj,kjl,nkl->nk", u, P, u)
    assert np.all(bound(u) <= q * (1 + 1e-12))
    evs, vecs = np.linalg.eigh(P)
    if cov == "round":
        assert np.all(lam[:, 1:] == 0.0)  # one O(d) sum
        assert np.all(bound(u) >= evs[:, 0] * (u * u).sum(-1) * (1 - 1e-6))
        return
    in_span = np.einsum("nkt,klt->nkl", rng.normal(size=(50, K, 2)), vecs[:, :, :2])
    np.testing.assert_allclose(
        bound(in_span), np.einsum("nkj,kjl,nkl->nk", in_span, P, in_span), rtol=1e-6, atol=1e-12
    )
    off = u - np.einsum("nkj,kjt,klt->nkl", u, vecs[:, :, :2], vecs[:, :, :2])
    assert np.all(bound(off) >= evs[:, 2] * (off * off).sum(-1) * (1 - 1e-6))
    if cov != "spherical":
        assert np.all(evs[:, 2] > 10 * evs[:, 0])  # the smallest eigenvalue alone would be far weaker


def _chain_problem(n=240, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, n)
    x = np.array([[0, 0], [4, 0], [0, 4], [4, 4]], float)[truth] + rng.normal(size=(n, 2))
    pairs = rng.integers(0, n, (40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    return x, pairs, sign


@pytest.mark.slow  # an XLA sub-cluster chain compiled for the comparison; the fast tier compares each
# compiled step with its XLA twin (stats, moves, block draws, sub-block acceptance) one by one
def test_chain_numba_equals_xla():
    """Two chains, 6 sweeps from one cluster (splits accepted, colour classes present): the numba backend
    draws the same labels as the XLA backend, sweep by sweep, and the same log joints up to rounding."""
    x, pairs, sign = _chain_problem()
    with x64():
        xj = jnp.asarray(x)
        links = make_links(len(x), pairs, sign)
        fam = GaussianNIW.default(xj, "full")
        kw = dict(n_draws=6, n_warmup=0, n_chains=2, k_max=12, n_moves=3, pq="sample")
        res = {
            b: subcluster.sample(jax.random.key(4), xj, links, fam, TVClustPrior(), backend=b, **kw)
            for b in ("xla", "numba")
        }
        assert resolve_backend("auto", subcluster.numba_unsupported(fam, xj.dtype)) == "numba"
    np.testing.assert_array_equal(res["numba"].labels, res["xla"].labels)
    np.testing.assert_allclose(res["numba"].log_joint, res["xla"].log_joint, rtol=1e-9)
    # the chains moved: splits were accepted (and peel/absorb steps may merge a chain back to 2)
    assert res["xla"].n_clusters.max() >= 3 and res["xla"].n_clusters[:, -1].min() >= 2


@pytest.mark.slow  # two numba-backend sweeps traced and compiled after clearing JAX's caches; the fast
# tier's chain parity (test_chain_numba_equals_xla, k_max = 12) runs the uint8 labels against XLA
def test_uint8_labels_in_the_sweep_draw_what_int32_labels_draw(monkeypatch):
    """With k_max < 256 a numba sweep carries its labels as uint8 (the callbacks' crossings cost a quarter
    of the bytes): the kernels see uint8 labels, and the chain is label for label the one that int32
    labels draw (``_UINT8_SLOTS = 0``); the state's labels stay int32."""
    seen = []
    real_sides, real_draw = mcpu.move_sides, draw.dense_draw

    def sides(x, centre, labels, *rest):
        seen.append(("move", labels.dtype))
        return real_sides(x, centre, labels, *rest)

    def fake_draw(x, keep, labels, *rest):
        seen.append(("draw", labels.dtype))
        return real_draw(x, keep, labels, *rest)

    monkeypatch.setattr(mcpu, "move_sides", sides)
    monkeypatch.setattr(draw, "dense_draw", fake_draw)
    x, pairs, sign = _chain_problem()
    res = {}
    with x64():
        xj = jnp.asarray(x)
        links = make_links(len(x), pairs, sign)
        fam = GaussianNIW.default(xj, "full")
        kw = dict(n_draws=5, n_warmup=0, n_chains=1, k_max=12, n_moves=3, backend="numba")
        for slots in (256, 0):
            monkeypatch.setattr(subcluster, "_UINT8_SLOTS", slots)
            jax.clear_caches()  # the sweep reads the constant when traced
            seen.clear()
            res[slots] = subcluster.sample(jax.random.key(6), xj, links, fam, TVClustPrior(), **kw)
            assert {t for _, t in seen} == {np.dtype(np.uint8 if slots else np.int32)}
            assert {k for k, _ in seen} == {"move", "draw"}
    jax.clear_caches()
    np.testing.assert_array_equal(res[256].labels, res[0].labels)
    assert res[256].state.labels.dtype == res[0].state.labels.dtype == jnp.int32
    assert res[0].n_clusters.max() >= 2  # the moves and draws changed the partition


@pytest.mark.slow  # a call count (how often the compiled draw runs), a sampler compiled at k_max = 32 for
# it alone; the draws of several chains are checked against XLA by test_chain_numba_equals_xla
def test_chains_run_one_label_block_width_per_sweep(monkeypatch):
    """Several chains (``vmap``) agree on one label-block width per sweep (``step``'s ``chain_axis``), so the
    unlinked block's compiled draw runs once per chain and sweep. With a batched width index ``lax.switch``
    becomes a select over every width (8, 16 and 32 at k_max = 32): three draws per chain and sweep."""
    calls = []
    real = draw.dense_draw

    def counted(*args):
        calls.append(1)
        return real(*args)

    monkeypatch.setattr(draw, "dense_draw", counted)
    x, pairs, sign = _chain_problem()
    with x64():
        xj = jnp.asarray(x)
        links = make_links(len(x), pairs, sign)
        fam = GaussianNIW.default(xj, "full")
        res = subcluster.sample(
            jax.random.key(2),
            xj,
            links,
            fam,
            TVClustPrior(),
            n_draws=3,
            n_warmup=0,
            n_chains=2,
            k_max=32,
            n_moves=2,
            backend="numba",
        )
    assert len(calls) == 2 * 3
    assert res.labels.shape == (2, 3, len(x)) and res.n_clusters.min() >= 1


def test_backend_argument_is_checked():
    x, pairs, sign = _chain_problem(20)
    with x64():
        fam = GaussianNIW.default(jnp.asarray(x), "full")
        with pytest.raises(ValueError, match="backend must be one of"):
            resolve_backend("gpu", subcluster.numba_unsupported(fam, jnp.float64))
        with pytest.raises(ValueError, match="float64 GaussianNIW"):
            resolve_backend("numba", subcluster.numba_unsupported(fam, jnp.float32))
        with pytest.raises(ValueError, match="no mesh"):
            resolve_backend("numba", subcluster.numba_unsupported(fam, jnp.float64, mesh=object()))
    assert resolve_backend("auto", subcluster.numba_unsupported(fam, jnp.float32)) == "xla"


@pytest.mark.parametrize(
    "n, want", [(40, "xla"), (subcluster.XLA_UP_TO, "xla"), (subcluster.XLA_UP_TO + 1, "numba")]
)
def test_auto_backend_keeps_the_xla_program_up_to_its_size(monkeypatch, n, want):
    """``backend="auto"`` runs the sampler as one XLA program up to ``XLA_UP_TO`` points and on the compiled
    twins above (the run itself is replaced: only the backend it was handed is checked)."""
    seen = []

    def run(*args, config, **kwargs):
        seen.append(config.backend)
        raise StopIteration

    monkeypatch.setattr(subcluster, "_run", run)
    rng = np.random.default_rng(0)
    with x64():
        xj = jnp.asarray(rng.normal(size=(n, 2)))
        fam = GaussianNIW.default(xj, "full")
        links = make_links(n, np.array([[0, 1]]), np.array([1]))
        with pytest.raises(StopIteration):
            subcluster.sample(jax.random.key(0), xj, links, fam, TVClustPrior(), n_draws=1, backend="auto")
    assert seen == [want]


def test_xla_up_to_is_the_measured_crossover():
    """``XLA_UP_TO`` is the size up to which ``benchmarks/bench_backend.py`` measured the XLA program as the
    faster backend (its results file, written by the script)."""
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "benchmarks" / "results" / "backend.json"
    assert subcluster.XLA_UP_TO == json.loads(path.read_text())["crossover"]["subcluster"]


@pytest.mark.parametrize("n, n_blocks", fast_first([(6, 6), (3001, 64), (3001, 1)], unpack=True))
def test_accept_sub_blocks_twin(n, n_blocks):
    """The compiled sub-block acceptance equals ``subcluster.accept_sub_blocks`` (labels and sizes): a slot
    of three points and a singleton that every draw empties (so with several sub-blocks some are rejected,
    others accepted), an unoccupied slot (2), kept rows (draw = label)."""
    rng = np.random.default_rng(n)
    lab = rng.integers(0, 2, n).astype(np.int32)
    small = rng.choice(n, 4, replace=False)
    lab[small[:3]], lab[small[3]] = 3, 4
    proposal = np.where(rng.random(n) < 0.5, rng.integers(0, 2, n), lab)
    proposal[small] = 0  # the small clusters' points all leave, none joins
    proposal = proposal.astype(np.int32)
    sizes = np.bincount(lab, minlength=5).astype(float)
    with x64():
        args = (jnp.asarray(lab), jnp.asarray(proposal), jnp.asarray(sizes), n_blocks)
        ref = subcluster.accept_sub_blocks(*args)
        got = jax.jit(draw.accept_sub_blocks, static_argnums=3)(*args)
    np.testing.assert_array_equal(np.asarray(got[0]), np.asarray(ref[0]))
    np.testing.assert_array_equal(np.asarray(got[1]), np.asarray(ref[1]))
    out = np.asarray(ref[0])
    np.testing.assert_array_equal(np.asarray(ref[1]), np.bincount(out, minlength=5))
    assert np.all(np.bincount(out, minlength=5)[sizes > 0] > 0)  # no occupied slot emptied
    took = (out == proposal) & (proposal != lab)
    assert np.any(took) == (n_blocks > 1)  # one block: rejected (small clusters empty); several: some taken
    assert np.any(out != draw)


def test_sub_block_deltas_skip_labels_outside_the_slots():
    """Under ``vmap`` the label step runs every width of its ``lax.switch``, so the compiled sub-block
    deltas see labels beyond their K slots in the discarded branches: those rows are skipped (no write
    out of bounds; before, a batched chain corrupted the heap), the others counted."""
    lab = np.array([0, 1, 5, 9, 2, 1], np.int32)
    z = np.array([1, 1, 0, 2, 0, 7], np.int32)
    delta = np.zeros((2, 3), np.int64)
    draw.sub_block_deltas(lab, z, 2, delta)
    np.testing.assert_array_equal(delta, [[-1 + 1, 1, -1], [0, 0, 0]])


def test_twins_leave_the_bucket_padding_alone():
    """Rows padded to a bucket (label k_max, rows past ``n_valid``, far from every cluster): the cluster
    index, the statistics, the unlinked block's draw and the sub-block acceptance give on the padded rows
    what they give on the points alone; the padding keeps its label and is counted in no slot."""
    n, n_pad, k = 50, 64, 6
    x, z = _data(n, 2, seed=4)
    xp = np.r_[x, np.full((n_pad - n, 2), 100.0)]  # padding far away: a draw of it would take any slot
    zp = np.r_[z, np.full(n_pad - n, k)].astype(np.int32)
    index = cidx.cluster_index(jnp.asarray(zp), k)
    order, off = cidx.held_index(index.token)
    assert off[-1] == n
    np.testing.assert_array_equal(order[:n], np.argsort(z, kind="stable"))
    with x64():
        fam = GaussianNIW.default(jnp.asarray(x))
        ref = fam.stats(jnp.asarray(x), jnp.asarray(z), k)
        got = jax.jit(
            lambda: cpu.family_stats(jnp.asarray(xp), jnp.asarray(zp), k, fam, n_valid=jnp.int32(n))
        )()
        for a, b in zip(got, ref, strict=True):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-9, atol=1e-9)
        theta = _theta(fam, jnp.asarray(x), z, k)
        log_pi = jnp.log(jnp.full(k, 1.0 / k))
        seed = moves.counter_seed(jax.random.key(2))
        keep = np.zeros(n, bool)
        want, cnt_want = draw.draw_block(
            jnp.asarray(x), jnp.asarray(keep), jnp.asarray(z), log_pi, theta, seed, fam, 20.0
        )
        keep_p = jnp.asarray(np.r_[keep, np.ones(n_pad - n, bool)])
        got_z, cnt = draw.draw_block(
            jnp.asarray(xp), keep_p, jnp.asarray(zp), log_pi, theta, seed, fam, 20.0, n_valid=jnp.int32(n)
        )
        np.testing.assert_array_equal(np.asarray(got_z), np.r_[np.asarray(want), np.full(n_pad - n, k)])
        np.testing.assert_array_equal(np.asarray(cnt), np.asarray(cnt_want))
        sizes = jnp.asarray(np.bincount(z, minlength=k).astype(float))
        blocks = jnp.int32(min(n, 64))
        acc = jax.jit(lambda a, b, s, nb: draw.accept_sub_blocks(a, b, s, nb))
        lab_a, size_a = acc(jnp.asarray(zp), got_z, sizes, blocks)
        lab_x, size_x = jax.jit(lambda a, b, s, nb: subcluster.accept_sub_blocks(a, b, s, nb, 64))(
            jnp.asarray(zp), got_z, sizes, blocks
        )
        lab_u, size_u = subcluster.accept_sub_blocks(jnp.asarray(z), want, sizes, min(n, 64))
    for lab, size in ((lab_a, size_a), (lab_x, size_x)):
        np.testing.assert_array_equal(np.asarray(lab), np.r_[np.asarray(lab_u), np.full(n_pad - n, k)])
        np.testing.assert_array_equal(np.asarray(size), np.asarray(size_u))
