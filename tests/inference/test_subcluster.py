"""Sub-cluster split/merge sampler: exact enumeration, brute-force Hastings ratios, colouring, mixing."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust._jax import x64
from ppclust.inference import gibbs, subcluster
from ppclust.inference import subcluster_moves as moves
from ppclust.models.tvclust import log_joint, make_links
from tests._tiers import fast_first
from tests.models.test_tvclust import PAIRS5, PRIOR, SIGN5, X5, _family, chi_square_pvalue, exact_posterior

# six points: two groups, links inside and across (one of them contradicting the geometry)
X6 = np.array([[0.0, 0.1], [0.4, -0.2], [0.2, 0.5], [2.0, 1.6], [2.3, 1.2], [1.2, 0.8]])
PAIRS6 = np.array([[0, 1], [1, 2], [2, 3], [3, 4], [4, 5], [0, 5], [1, 4]])
SIGN6 = np.array([1, 1, -1, 1, 1, -1, 1])
PROPOSE = jax.jit(moves.propose)
RESP = jax.jit(moves.subcluster_responsibilities)


def _enumeration(x, pairs, sign, pq, n_chains=1500, n_samples=6, thin=3, backend="xla"):
    n = x.shape[0]
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = _family(xj)
        p, q = (0.8, 0.9) if pq == "fixed" else (None, None)
        parts, probs = exact_posterior(xj, links, fam, PRIOR, p, q)
        res = subcluster.sample(
            jax.random.key(11),
            xj,
            links,
            fam,
            PRIOR,
            n_draws=n_samples,
            n_warmup=8,
            thin=thin,
            n_chains=n_chains,
            k_max=n,
            pq=pq,
            p=0.8,
            q=0.9,
            n_moves=2,
            backend=backend,
        )
    pval, tv = chi_square_pvalue(res.labels.reshape(-1, n), parts, probs)
    return res, pval, tv


@pytest.mark.slow  # ~60 s (mostly compile) on the loaded 2-core VM: above the non-slow budget
@pytest.mark.parametrize("backend", ["xla", "numba"])
@pytest.mark.parametrize("pq", ["collapse", "sample", "fixed"])
def test_matches_exact_enumeration(pq, backend):
    """Partition frequencies of 1500 chains vs the exact posterior over Bell(5) = 52 partitions, p and q
    integrated out (split/merge ratio with Beta functions of the pair counts), sampled or fixed; the O(n)
    passes in the XLA program or on the compiled twins (``_subcluster_cpu``)."""
    res, pval, tv = _enumeration(X5, PAIRS5, SIGN5, pq, backend=backend)
    assert tv < 0.03, tv
    assert pval > 1e-3, (pval, tv)
    if pq == "sample":  # the sampled p moves off its prior mean 2/3 toward the links
        assert 0.4 < res.p.mean() < 0.95


@pytest.mark.slow
def test_matches_exact_enumeration_with_chains_sharing_a_width(monkeypatch):
    """The chains of one call agree on the widest label-block width any of them needs (``step``'s
    ``chain_axis``): a chain then draws with empty slots beyond its own width. Widths 2, 4, 5 instead of
    the one width 5 of k_max = 5, so that the 1500 vmapped chains' widths differ and the shared one is
    often wider than a chain's own: the partition frequencies still match the exact posterior."""
    monkeypatch.setattr(subcluster, "_widths", lambda k_max: [2, 4, k_max])
    res, pval, tv = _enumeration(X5, PAIRS5, SIGN5, "collapse")
    assert tv < 0.03, tv
    assert pval > 1e-3, (pval, tv)
    assert res.n_clusters.min() <= 2 < res.n_clusters.max()  # chains at different widths


@pytest.mark.slow
def test_enumeration_detects_a_ratio_without_the_proposal_probability(monkeypatch):
    """Power of the enumeration test: the same run with a Hastings ratio that leaves out log q (the
    probability that the sub-cluster fit proposes this very bipartition: what a ratio treating the
    proposed split as given by the state leaves out, e.g. Chang & Fisher's ratio with sub-cluster labels
    kept in the state) must fail it."""
    real = moves.split_merge_log_ratio

    def wrong(is_split, lj_new, lj_old, n_clusters, log_q, log_pair=None):
        return real(is_split, lj_new, lj_old, n_clusters, jnp.zeros_like(log_q), log_pair)

    monkeypatch.setattr(moves, "split_merge_log_ratio", wrong)
    jax.clear_caches()  # the sampler is retraced with the wrong ratio
    try:
        _, pval, tv = _enumeration(X5, PAIRS5, SIGN5, "collapse")
    finally:
        jax.clear_caches()
    assert pval < 1e-6, (pval, tv)


@pytest.mark.slow
@pytest.mark.parametrize("pq, backend", [("collapse", "xla"), ("sample", "xla"), ("collapse", "numba")])
def test_matches_exact_enumeration_six_points(pq, backend):
    """Bell(6) = 203 partitions, two colour classes of linked points plus the unlinked block."""
    _, pval, tv = _enumeration(X6, PAIRS6, SIGN6, pq, n_chains=2000, n_samples=8, backend=backend)
    assert tv < 0.04, tv
    assert pval > 1e-3, (pval, tv)


_LOG_JOINT = jax.jit(log_joint)


def _brute_pair_prob(z, x, a, b):
    """P(the merge move picks {a, b}) from labels z by enumerating its two-stage choice: a uniform first
    cluster, then with probability u = _MERGE_UNIFORM a uniform other cluster, else one with weight
    exp(-s D / min D) (D: squared distance of the cluster means, s = _MERGE_SHARPNESS)."""
    u, s = moves._MERGE_UNIFORM, moves._MERGE_SHARPNESS
    occ = np.unique(z)
    k = len(occ)
    means = {c: x[z == c].mean(0) for c in occ}

    def near(c, e):
        dist = {o: np.sum((means[c] - means[o]) ** 2) for o in occ if o != c}
        dmin = min(dist.values())
        w = {o: np.exp(-s * v / dmin) for o, v in dist.items()}
        return w[e] / sum(w.values())

    return sum(1.0 / k * (u / (k - 1) + (1.0 - u) * near(c, e)) for c, e in ((a, b), (b, a)))


def _brute_log_h_minus_m(fit, mask, side_a):
    """log h(I, y | C) - log m(I, y | A, B) written out in probability space from the definitions: h draws
    I uniformly from C and y as a uniform subset of a uniform size (probability w = _LAB_SUBSET) or the
    EM sides with flips (1 - w, both orientations 1/2); m draws each point of I from A with probability
    beta_A = clip(n_A / n_C, 1/16, 15/16) (then uniform in its piece) and y as the pieces' labels with
    flips in a random orientation."""
    idx, y, em = np.asarray(fit.idx), np.asarray(fit.y), np.asarray(fit.em)
    f = moves._LAB_FLIP
    ml = len(idx)
    n_c = mask.sum()
    a = mask & side_a
    n_a, n_b = a.sum(), (mask & ~side_a).sum()

    def copied(s):
        return 0.5 * np.prod(np.where(y == s, 1 - f, f)) + 0.5 * np.prod(np.where(y == ~s, 1 - f, f))

    w = moves._LAB_SUBSET
    h = (w / (ml + 1) / math.comb(ml, int(y.sum())) + (1 - w) * copied(em)) * (1.0 / n_c) ** ml
    beta = min(max(n_a / n_c, 1 / 16), 15 / 16)
    m = np.prod(np.where(a[idx], beta / n_a, (1 - beta) / n_b)) * copied(a[idx])
    return np.log(h) - np.log(m)


def _brute_ratio(z, z_new, lr, l1r, mask, side_a, x, links, fam, p, q):
    """log [p(z') P(z' -> z)] - log [p(z) P(z -> z')] from full log joints and the Bernoulli products."""
    lj = float(_LOG_JOINT(jnp.asarray(z), x, links, fam, PRIOR, p, q))
    lj_new = float(_LOG_JOINT(jnp.asarray(z_new), x, links, fam, PRIOR, p, q))
    a, b = mask & side_a, mask & ~side_a
    q_split = np.exp(lr[a].sum() + l1r[b].sum()) + np.exp(l1r[a].sum() + lr[b].sum())
    return lj, lj_new, q_split


@pytest.mark.parametrize("pq", fast_first(["collapse", "fixed"], core=True))
def test_split_merge_ratio_equals_brute_force(pq):
    """log H of a split equals log p(z') - log p(z) + log P(merge back) - log P(split) with P computed by
    hand (1/2 * 1/K * q for the split, 1/2 * 2 / (K'(K'-1)) for the merge, q summed over both orientations
    of the unordered bipartition), and the merge back with the same sub-cluster fit has exactly -log H."""
    rng = np.random.default_rng(5)
    n = 9
    x = np.concatenate([rng.normal(size=(5, 2)), rng.normal(size=(4, 2)) + 2.0])
    pairs = np.array([[0, 1], [1, 5], [2, 7], [3, 4], [6, 8], [0, 8]])
    sign = np.array([1, -1, 1, 1, 1, -1])
    p, q = (None, None) if pq == "collapse" else (0.8, 0.7)
    z = np.array([0, 0, 0, 0, 0, 0, 0, 0, 3], np.int32)  # K = 2; slot 0 gets split
    with x64():
        xj = jnp.asarray(x)
        links = make_links(n, pairs, sign)
        fam = _family(xj)
        stats = fam.stats(xj, jnp.asarray(z), 5)
        checked = 0
        for seed in range(12):
            key = jax.random.key(seed)
            z_new, log_q, valid, _, (ka, kb) = PROPOSE(key, True, jnp.asarray(z), stats, xj, fam)
            if not bool(valid) or int(z_new[8]) != 3 or not (np.asarray(z_new) != z).any():
                continue
            mask = z == 0
            fit = RESP(jax.random.split(key, 6)[2], xj, jnp.asarray(mask), fam)
            lr, l1r = np.asarray(fit.log_r), np.asarray(fit.log_1r)
            z_new = np.asarray(z_new)
            side_a = z_new == 0
            lj, lj_new, q_split = _brute_ratio(z, z_new, lr, l1r, mask, side_a, xj, links, fam, p, q)
            # the labelled subsample: drawn from h by the split, from m by the reverse merge
            q_split = q_split * np.exp(_brute_log_h_minus_m(fit, mask, side_a))
            k = 2
            assert (int(ka), int(kb)) == (0, int(z_new[~side_a & mask][0]))
            pair = _brute_pair_prob(z_new, x, int(ka), int(kb))  # merge back, chosen from the split state
            brute = lj_new - lj + np.log(0.5 * pair) - np.log(0.5 / k * q_split)
            np.testing.assert_allclose(float(log_q), np.log(q_split), rtol=1e-10)
            log_pair = moves.merge_pair_log_prob(ka, kb, fam.stats(xj, jnp.asarray(z_new), 5))
            np.testing.assert_allclose(float(log_pair), np.log(pair), rtol=1e-10)
            log_h = moves.split_merge_log_ratio(
                True, jnp.asarray(lj_new), jnp.asarray(lj), k, log_q, log_pair
            )
            np.testing.assert_allclose(float(log_h), brute, rtol=1e-9, atol=1e-9)
            back = moves.split_merge_log_ratio(
                False, jnp.asarray(lj), jnp.asarray(lj_new), k + 1, log_q, log_pair
            )
            np.testing.assert_allclose(float(back), -brute, rtol=1e-9, atol=1e-9)
            checked += 1
        assert checked >= 3


def test_merge_proposal_log_q_is_the_reverse_split_probability():
    """``propose`` with is_split=False: the merged labels and log q of that very bipartition (both sides)."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(9, 2))  # the shapes of the test above: one compiled program
    z = np.array([0, 2, 0, 2, 2, 4, 0, 4, 2], np.int32)
    with x64():
        xj = jnp.asarray(x)
        fam = _family(xj)
        stats = fam.stats(xj, jnp.asarray(z), 5)
        for seed in range(4):
            key = jax.random.key(seed)
            z_new, log_q, valid, full, _ = PROPOSE(key, False, jnp.asarray(z), stats, xj, fam)
            z_new = np.asarray(z_new)
            merged = np.flatnonzero(z_new != z)
            assert bool(valid) and not bool(full) and len(np.unique(z_new)) == 2 and len(merged)
            target = z_new[merged[0]]
            mask = z_new == target
            fit = RESP(
                jax.random.split(key, 6)[2], xj, jnp.asarray(mask), fam, jnp.asarray(z == target), True
            )
            lr, l1r = np.asarray(fit.log_r), np.asarray(fit.log_1r)
            a = mask & (z == target)
            b = mask & ~a
            expect = np.logaddexp(lr[a].sum() + l1r[b].sum(), l1r[a].sum() + lr[b].sum())
            expect += _brute_log_h_minus_m(fit, mask, a)
            np.testing.assert_allclose(float(log_q), expect, rtol=1e-10)


@pytest.mark.parametrize("cov", fast_first(["full", "diag", "spherical"]))
def test_two_slot_stats_equal_family_stats(cov):
    """The sub-cluster fit's two-slot statistics (above d = 4 as two weighted products) equal
    ``family.stats`` with the same weights, slot by slot (a swapped side or a missing weight fails)."""
    from ppclust.families import GaussianNIW

    rng = np.random.default_rng(11)
    for d in (2, 7):
        x = rng.normal(size=(300, d)) + 3.0 * (rng.random(300) < 0.3)[:, None]
        side, w = (rng.random(300) < 0.4).astype(np.int32), rng.random(300) + 0.5
        with x64():
            xj, side, w = jnp.asarray(x), jnp.asarray(side), jnp.asarray(w)
            fam = GaussianNIW.default(xj, cov)
            got = jax.jit(moves._two_slot_stats)(fam, xj, side, w)
            ref = fam.stats(xj, side, 2, w)
        for u, v in zip(got, ref, strict=True):
            np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-10)


def test_proposal_stats_equal_recomputed_stats():
    """The move's statistics of the proposed partition (two slots updated: a merge pools the pair, a
    split computes one side by a weighted pass and the other as the difference) equal the statistics
    recomputed from all points, for splits and merges (these enter the Hastings ratio via the log
    joint)."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(9, 2)) + np.repeat([[0.0, 0.0], [3.0, 1.0], [0.0, 4.0]], 3, 0)
    z = jnp.asarray(np.array([0, 0, 0, 2, 2, 2, 4, 4, 0], np.int32))
    with x64():
        xj = jnp.asarray(x)
        fam = _family(xj)
        stats = fam.stats(xj, z, 5)

        @jax.jit
        def both(key, is_split):
            prop, _, valid, _, (a, b) = moves.propose(key, is_split, z, stats, xj, fam)
            got = moves._proposal_stats(fam, stats, xj, is_split, prop, a, b)
            return got, fam.stats(xj, prop, 5), valid

        seen = set()
        for seed in range(8):
            for is_split in (True, False):
                got, ref, valid = both(jax.random.key(seed), jnp.asarray(is_split))
                if not bool(valid):
                    continue
                for u, v in zip(got, ref, strict=True):
                    np.testing.assert_allclose(np.asarray(u), np.asarray(v), rtol=1e-10, atol=1e-10)
                seen.add(is_split)
        assert seen == {True, False}


def test_merge_pair_frequencies_match_their_probability():
    """The merge pairs ``propose`` draws (4 clusters at unequal distances, 4000 draws) occur with the
    probabilities ``merge_pair_log_prob`` puts in the Hastings ratio (and these match the brute-force
    enumeration of the two-stage choice): a drawn pair distribution and a ratio term that disagree would
    bias the chain."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(9, 2))  # the shapes of the tests above: one compiled program
    z = np.array([0, 2, 0, 2, 2, 4, 0, 4, 1], np.int32)
    x = x * 0.2 + np.array([[0, 0], [0.5, 0], [3, 0], [0, 0], [0, 6]])[z]
    with x64():
        xj = jnp.asarray(x)
        fam = _family(xj)
        stats = fam.stats(xj, jnp.asarray(z), 5)
        draw = jax.jit(jax.vmap(lambda k: moves.propose(k, False, jnp.asarray(z), stats, xj, fam)[4]))
        a, b = map(np.asarray, draw(jax.random.split(jax.random.key(0), 4000)))
        occ = [0, 1, 2, 4]
        pairs = [(c, e) for i, c in enumerate(occ) for e in occ[i + 1 :]]
        prob = np.array([float(np.exp(moves.merge_pair_log_prob(c, e, stats))) for c, e in pairs])
    np.testing.assert_allclose(prob, [_brute_pair_prob(z, x, c, e) for c, e in pairs], rtol=1e-10)
    np.testing.assert_allclose(prob.sum(), 1.0, rtol=1e-12)
    freq = np.array([np.mean(((a == c) & (b == e)) | ((a == e) & (b == c))) for c, e in pairs])
    se = np.sqrt(prob * (1 - prob) / len(a))
    assert np.all(np.abs(freq - prob) < 4.5 * se), (freq, prob)
    assert prob.max() > 1.5 / len(pairs)  # the informed choice makes the near pair likelier than uniform


def test_colouring_is_proper_and_covers_linked_points():
    rng = np.random.default_rng(0)
    n = 60
    pairs = np.unique(np.sort(rng.integers(0, n, (90, 2)), 1), axis=0)
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    links = make_links(n, pairs, np.ones(len(pairs)))
    col = subcluster.colour_links(links, n)
    classes, linked = np.asarray(col.classes), np.asarray(col.linked)
    colour = np.full(n, -1)
    for c, row in enumerate(classes):
        for i in row[row < n]:
            assert colour[i] == -1
            colour[i] = c
    np.testing.assert_array_equal(colour >= 0, linked)
    assert linked.sum() == len(np.unique(pairs))
    assert (colour[pairs[:, 0]] != colour[pairs[:, 1]]).all()  # no link inside a colour class
    assert classes.shape[0] <= np.bincount(pairs.ravel()).max() + 1


def _sweeps_to_truth(labels, truth):
    from ppclust.metrics import ari

    for t, row in enumerate(labels):
        if ari(truth, row) > 0.99:
            return t + 1
    return None


@pytest.mark.slow
def test_mixes_from_one_cluster_faster_than_collapsed():
    """Four separated blobs with a few links, every chain started with all points in one cluster: the
    split/merge sampler reaches the true partition within 40 sweeps; the collapsed sampler's single-point
    moves take longer (or never get there in 40 sweeps)."""
    rng = np.random.default_rng(1)
    truth = np.repeat(np.arange(4), 60)
    x = np.array([[0, 0], [8, 0], [0, 8], [8, 8]])[truth] + rng.normal(size=(240, 2))
    pairs = rng.choice(240, (24, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    with x64():
        xj = jnp.asarray((x - x.mean(0)) / x.std(0))
        links = make_links(240, pairs, sign)
        fam = _family(xj)
        kw = dict(n_draws=40, n_warmup=0, n_chains=2, k_max=16, pq="collapse")
        sub = subcluster.sample(jax.random.key(0), xj, links, fam, PRIOR, n_moves=4, **kw)
        col = gibbs.sample(jax.random.key(0), xj, links, fam, PRIOR, progress_bar=False, **kw)
    t_sub = [_sweeps_to_truth(c, truth) for c in sub.labels]
    t_col = [_sweeps_to_truth(c, truth) for c in col.labels]
    assert all(t is not None and t <= 40 for t in t_sub), t_sub
    assert all(tc is None or tc > ts for tc, ts in zip(t_col, t_sub, strict=True)), (t_sub, t_col)


@pytest.mark.slow
def test_estimator_and_cli_reach_the_subcluster_sampler(tmp_path):
    """``TVClust(algorithm="subcluster")``: same outputs as the collapsed sampler (point estimate, p, q, K,
    DataTree), on three blobs with links started from one cluster."""
    from ppclust import TVClust
    from ppclust.metrics import ari

    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 20)
    X = np.array([[0, 0], [6, 0], [0, 6]])[truth] + rng.normal(size=(60, 2))
    ml = np.array([[0, 1], [20, 21], [40, 41]])
    cl = np.array([[0, 20], [20, 40]])
    est = TVClust(
        n_draws=20, n_warmup=20, n_chains=2, k_max=12, init="one", algorithm="subcluster", random_state=0
    ).fit(X, must_link=ml, cannot_link=cl)
    assert ari(truth, est.labels_) > 0.9 and est.n_clusters_ == 3
    ds = est.posterior_["posterior"].ds
    assert set(ds.data_vars) >= {"n_clusters", "p", "q"} and ds["p"].shape == (2, 20)
    assert "subcluster" in est.posterior_.attrs["sampler"] and 0 <= est.p_ <= 1
    with pytest.raises(ValueError, match="algorithm"):
        TVClust(algorithm="sub-cluster").fit(X)
    from ppclust.cli import main

    np.savetxt(tmp_path / "x.csv", X, delimiter=",")
    np.savetxt(
        tmp_path / "links.csv",
        np.concatenate([np.c_[ml, np.ones(3)], np.c_[cl, -np.ones(2)]]),
        delimiter=",",
        fmt="%d",
    )
    params = [
        "n_draws=20",
        "n_warmup=20",
        "n_chains=2",
        "k_max=12",
        "init=one",
        "algorithm=subcluster",
        "random_state=0",
    ]
    argv = [
        "fit",
        "--method",
        "tvclust",
        str(tmp_path / "x.csv"),
        "--links",
        str(tmp_path / "links.csv"),
        "--no-plots",
        "--out",
        str(tmp_path / "out"),
    ]
    assert main(argv + [a for kv in params for a in ("--param", kv)]) == 0
    cli_labels = np.loadtxt(tmp_path / "out" / "labels.csv", delimiter=",", skiprows=1)
    assert ari(truth, cli_labels.reshape(len(X), -1)[:, -1]) > 0.9


@pytest.mark.parametrize("sampler", ["gibbs", "subcluster"])
def test_n_draws_must_be_positive(sampler):
    """A non-positive count of kept draws is refused by both samplers."""
    sample = {"gibbs": gibbs.sample, "subcluster": subcluster.sample}[sampler]
    extra = dict(progress_bar=False, backend="xla") if sampler == "gibbs" else {}
    with x64():
        xj = jnp.asarray(X5)
        links = make_links(len(X5), PAIRS5, SIGN5)
        with pytest.raises(ValueError, match="n_draws must be >= 1"):
            sample(
                jax.random.key(5),
                xj,
                links,
                _family(xj),
                PRIOR,
                n_draws=0,
                n_warmup=1,
                n_chains=2,
                k_max=6,
                **extra,
            )


def _partition(z):
    return frozenset(frozenset(np.flatnonzero(z == c).tolist()) for c in np.unique(z))


def _brute_peel_absorb(z, x):
    """Probabilities of the partitions the peel and the absorb move propose from labels z, by enumerating
    their choices: peel = a uniform cluster of >= 2 points, then a uniform point of it, split off alone;
    absorb = a uniform singleton, then a partner with probability exp(-s D / min D) (s = _MERGE_SHARPNESS; as
    the merge's informed partner), the singleton joining it."""
    occ = np.unique(z)
    sizes = {c: int((z == c).sum()) for c in occ}
    means = {c: x[z == c].mean(0) for c in occ}
    peel, absorb = {}, {}
    for c in occ:
        if sizes[c] < 2:
            continue
        for i in np.flatnonzero(z == c):
            zz = z.copy()
            zz[i] = z.max() + 1
            peel[_partition(zz)] = peel.get(_partition(zz), 0.0) + 1.0 / len(occ) / sizes[c]
    singles = [c for c in occ if sizes[c] == 1]
    for s in singles:
        dist = {o: np.sum((means[s] - means[o]) ** 2) for o in occ if o != s}
        dmin = min(dist.values())
        w = {o: np.exp(-moves._MERGE_SHARPNESS * v / dmin) for o, v in dist.items()}
        for c in dist:
            zz = np.where(z == s, c, z)
            absorb[_partition(zz)] = absorb.get(_partition(zz), 0.0) + w[c] / sum(w.values()) / len(singles)
    return peel, absorb


def test_peel_absorb_probabilities_equal_brute_force():
    """The peel/absorb move's forward and reverse proposal probabilities (``peel_absorb_log_probs``, the
    terms of its Hastings ratio) equal the enumeration of the move's choices, for every peel and every
    absorb from a state with a 2-point cluster (either point peels to the same partition) and three
    singletons (absorbing one singleton into another can happen two ways)."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(9, 2)) + np.repeat([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]], 3, 0)
    z = np.array([0, 0, 0, 0, 2, 2, 4, 1, 3], np.int32)
    k_max = 7
    with x64():
        xj = jnp.asarray(x)
        fam = _family(xj)
        probs = jax.jit(moves.peel_absorb_log_probs)
        stats_of = jax.jit(lambda zz: fam.stats(xj, zz, k_max))
        peel0, absorb0 = _brute_peel_absorb(z, x)
        checked = 0
        for c in np.unique(z):
            for i in np.flatnonzero(z == c):
                if (z == c).sum() < 2:
                    continue
                zz = z.copy()
                zz[i] = 5  # the first free slot
                fwd, rev = probs(True, c, 5, stats_of(jnp.asarray(z)), stats_of(jnp.asarray(zz)))
                np.testing.assert_allclose(float(fwd), np.log(peel0[_partition(zz)]), rtol=1e-10)
                np.testing.assert_allclose(
                    float(rev), np.log(_brute_peel_absorb(zz, x)[1][_partition(z)]), rtol=1e-10
                )
                checked += 1
        for s in (1, 3, 4):
            for c in np.unique(z):
                if c == s:
                    continue
                zz = np.where(z == s, c, z).astype(np.int32)
                fwd, rev = probs(False, c, s, stats_of(jnp.asarray(z)), stats_of(jnp.asarray(zz)))
                np.testing.assert_allclose(float(fwd), np.log(absorb0[_partition(zz)]), rtol=1e-10)
                np.testing.assert_allclose(
                    float(rev), np.log(_brute_peel_absorb(zz, x)[0][_partition(z)]), rtol=1e-10
                )
                checked += 1
    assert checked == 6 + 12


def test_merge_labelled_subsample_is_drawn_from_its_probability():
    """The merge draws its labelled subsample (I, y) from m(I, y | A, B) as ``_log_m_lab`` computes it:
    each point of I from A with probability beta_A = clip(n_A / n_C, 1/16, 15/16), uniform within its
    piece, labels copied (random orientation) with flip probability ``_LAB_FLIP``. A draw that does not
    follow the density in the Hastings ratio would bias the chain."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(40, 2))
    a = np.zeros(40, bool)
    a[:2] = True  # A: 2 points, B: 30, 8 points outside the cluster: beta_A = 1/16 (clipped)
    mask = np.arange(40) < 32
    with x64():
        xj = jnp.asarray(x)
        fam = _family(xj)
        draw = jax.jit(
            jax.vmap(
                lambda k: moves.subcluster_responsibilities(
                    k, xj, jnp.asarray(mask), fam, jnp.asarray(a), True
                )[2:4]
            )
        )
        idx, y = map(np.asarray, draw(jax.random.split(jax.random.key(1), 3000)))
    assert mask[idx].all()
    frac_a = a[idx].mean()
    se = np.sqrt(frac_a * (1 - frac_a) / idx.size)
    assert abs(frac_a - 1 / 16) < 5 * se + 0.002, frac_a
    counts = np.bincount(idx[~a[idx]], minlength=40)[2:32]  # uniform within B
    assert counts.min() > 0.8 * counts.mean() and counts.max() < 1.2 * counts.mean()
    # labels: the pieces' labels in one orientation per draw, each flipped with probability _LAB_FLIP
    agree = (y == a[idx]).mean(1)
    agree = np.maximum(agree, 1 - agree)
    assert abs(1 - agree.mean() - moves._LAB_FLIP) < 0.003, agree.mean()


@pytest.mark.slow
def test_enumeration_detects_a_ratio_without_the_fit_proposal_density(monkeypatch):
    """Power of the enumeration test for the merge's fit proposed from the pieces: the same run with a
    Hastings ratio that treats that fit as a draw of the kernel h (log h - log m of its labelled
    subsample left out, as if the fit of the union were fresh) must fail it. Both densities are zeroed at
    their definitions (``_log_h`` and ``_log_m_counts``, which ``propose`` calls on both backends)."""
    monkeypatch.setattr(moves, "_log_h", lambda y, em_side, valid=None: jnp.zeros(()))
    monkeypatch.setattr(moves, "_log_m_counts", lambda y, ina, n_a, n_b, valid=None: jnp.zeros(()))
    jax.clear_caches()
    try:
        _, pval, tv = _enumeration(X5, PAIRS5, SIGN5, "collapse")
    finally:
        jax.clear_caches()
    assert pval < 1e-6, (pval, tv)


def test_estimator_passes_subcluster_moves(monkeypatch):
    """``TVClust(subcluster_moves=k)`` reaches the sampler as ``n_moves=k`` (the default 4); a non-positive
    count is refused by the parameter validation."""
    from ppclust import TVClust

    seen = []

    class Reached(Exception):
        pass

    def spy(*args, **kw):  # records the call and stops the fit there: nothing is compiled
        seen.append(kw["n_moves"])
        raise Reached

    monkeypatch.setattr(subcluster, "sample", spy)
    X = np.random.default_rng(0).normal(size=(12, 2))
    for k in (4, 7):
        kw = {} if k == 4 else dict(subcluster_moves=k)
        est = TVClust(
            n_draws=2,
            n_warmup=0,
            n_chains=1,
            k_max=4,
            init="one",
            algorithm="subcluster",
            progress_bar=False,
            random_state=0,
            **kw,
        )
        with pytest.raises(Reached):
            est.fit(X)
    assert seen == [4, 7]
    with pytest.raises(ValueError, match="subcluster_moves"):
        TVClust(algorithm="subcluster", subcluster_moves=0).fit(X)


def _sub_block_transition(accept, n, k, n_blocks, w):
    """Exact transition matrix of the unlinked block's kernel on n points and k occupied slots: every
    point proposes slot j with probability w[i, j] independently, then ``accept(labels, draw, sizes,
    n_blocks)`` keeps or takes the draws. States: every labelling with all k slots occupied."""
    grid = np.array(np.meshgrid(*[np.arange(k)] * n, indexing="ij")).reshape(n, -1).T.astype(np.int32)
    states = grid[[len(np.unique(g)) == k for g in grid]]
    index = {tuple(s): j for j, s in enumerate(states)}
    prop = np.prod(w[np.arange(n), grid], axis=1)  # probability of each draw vector
    sizes = np.stack([np.bincount(s, minlength=k) for s in states]).astype(float)
    run = jax.jit(
        jax.vmap(jax.vmap(lambda z, y, s: accept(z, y, s, n_blocks)[0], (None, 0, None)), (0, None, 0))
    )
    out = np.asarray(run(jnp.asarray(states), jnp.asarray(grid), jnp.asarray(sizes)))
    trans = np.zeros((len(states), len(states) + 1))  # last column: left the support (a cluster emptied)
    for a in range(len(states)):
        for y, z in enumerate(out[a]):
            trans[a, index.get(tuple(z), len(states))] += prop[y]
    target = np.prod(w[np.arange(n), states], axis=1)
    return trans, target / target.sum()


@pytest.mark.parametrize("n_blocks", fast_first([2, 1, 3, 5]))
def test_sub_block_acceptance_leaves_the_restricted_target_invariant(n_blocks):
    """Brute force on 5 points and 3 slots (150 labellings with every slot occupied, 243 draw vectors):
    the sub-block scan of the unlinked block (module docstring (d)) leaves the restricted product
    p(z) ~ prod_i w[i, z_i] on {all slots occupied} exactly invariant and never leaves that set, for one
    sub-block (the old whole-block rule), strided pairs and triples, and one point per sub-block (what the
    enumeration tests run at n <= 6); and with several sub-blocks it accepts draws the whole-block rule
    rejects."""
    n, k = 5, 3
    rng = np.random.default_rng(0)
    w = rng.dirichlet(np.ones(k) * 0.7, size=n)
    trans, target = _sub_block_transition(subcluster.accept_sub_blocks, n, k, n_blocks, w)
    np.testing.assert_allclose(trans.sum(1), 1.0, atol=1e-12)
    assert np.all(trans[:, -1] < 1e-15)
    np.testing.assert_allclose(target @ trans[:, :-1], target, atol=1e-12)
    stay = float(target @ np.diag(trans[:, :-1]))
    if n_blocks > 1:  # fewer proposals wasted than with one block (the reason for the sub-blocks)
        one, _ = _sub_block_transition(subcluster.accept_sub_blocks, n, k, 1, w)
        assert stay < float(target @ np.diag(one[:, :-1])) - 0.01


def test_sub_block_brute_force_detects_acceptance_against_the_start_sizes():
    """Power of the brute-force check above: the same scan that tests each sub-block against the slot sizes
    at the start of the block (not after the sub-blocks before it) can empty a cluster and is caught."""

    def wrong(labels, draw, sizes, n_blocks):
        n, w = labels.shape[0], sizes.shape[0]
        blk = jnp.arange(n) % n_blocks
        ok = jnp.stack(
            [
                ~jnp.any(
                    (sizes > 0)
                    & (
                        sizes
                        + jnp.sum(
                            jnp.where(
                                blk[:, None] == b,
                                (draw[:, None] == jnp.arange(w)).astype(sizes.dtype)
                                - (labels[:, None] == jnp.arange(w)),
                                0,
                            ),
                            0,
                        )
                        == 0
                    )
                )
                for b in range(n_blocks)
            ]
        )
        return jnp.where(ok[blk], draw, labels), sizes

    n, k = 5, 3
    w = np.random.default_rng(0).dirichlet(np.ones(k) * 0.7, size=n)
    trans, target = _sub_block_transition(wrong, n, k, 5, w)
    assert trans[:, -1].max() > 0.01  # a cluster emptied


@pytest.mark.slow  # two sampler programs (32 and 64 rows) compiled: about a minute on the 2-core VM
@pytest.mark.parametrize("backend", ["numba", "xla"])
def test_the_draws_do_not_depend_on_the_padding(backend, monkeypatch):
    """``sample`` pads the rows to their bucket (20 points -> 32 rows, ``ppclust._buckets``); with the
    smallest bucket raised to 64 rows the same data and seed give the same draws: labels, log joint, the
    concentration (sampled: Escobar-West counts the points), p and q. A padding row counted in a sum, a
    sub-cluster statistic or a split/merge Hastings ratio, the sub-cluster fit's subsample sizes or the
    sub-blocks taken from the padded length, a padding row drawn, or its label k_max relabelled, would
    change them."""
    if backend == "numba":
        pytest.importorskip("numba")
    rng = np.random.default_rng(2)
    truth = rng.integers(0, 3, 20)
    X = np.array([[0.0, 0.0], [6.0, 0.0], [0.0, 6.0]])[truth] + rng.normal(size=(20, 2))
    pairs = [[0, 1], [2, 3], [3, 7], [4, 9]]
    runs = []
    with x64():
        x = jnp.asarray(X)
        links, fam = make_links(20, pairs, [1, -1, 1, 1]), _family(x)
        for rows_min in (32, 64):
            monkeypatch.setattr(subcluster, "_ROWS_MIN", rows_min)
            kw = dict(n_draws=3, n_warmup=4, n_chains=1, k_max=8, n_moves=2, sample_alpha=True, pq="sample")
            runs.append(subcluster.sample(jax.random.key(5), x, links, fam, PRIOR, backend=backend, **kw))
    a, b = runs
    assert a.state.labels.shape == (1, 32) and b.state.labels.shape == (1, 64)
    assert a.labels.shape == (1, 3, 20)
    assert a.n_clusters.max() > 1  # splits were accepted (their Hastings ratios entered)
    np.testing.assert_array_equal(a.labels, b.labels)
    np.testing.assert_array_equal(np.asarray(b.state.labels)[:, 20:], 8)  # the padding keeps label k_max
    for field in ("log_joint", "alpha", "p", "q"):
        np.testing.assert_allclose(getattr(a, field), getattr(b, field), rtol=1e-9, err_msg=field)
    np.testing.assert_allclose(np.asarray(a.state.stats.n), np.asarray(b.state.stats.n))
