"""TVClust: log joint identities, Gibbs conditional vs log joint, exact-enumeration posterior checks."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats as sps

from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.inference import gibbs
from ppclust.models.tvclust import (
    TVClustPrior,
    link_log_odds,
    link_reliability,
    link_reliability_share,
    log_joint,
    log_link_likelihood,
    make_links,
    pair_counts,
    small_variance_hyper,
)
from ppclust.sideinfo import SideInfo
from tests._partitions import set_partitions

# five points in 2-D: two loose groups, and links that partly disagree with the geometry
X5 = np.array([[0.0, 0.1], [0.4, -0.2], [1.3, 0.9], [2.0, 1.6], [2.3, 1.2]])
PAIRS5 = np.array([[0, 1], [1, 2], [2, 3], [0, 4], [3, 4]])
SIGN5 = np.array([1, -1, 1, -1, 1])
PRIOR = TVClustPrior(alpha=1.3, a_p=2.0, b_p=1.0, a_q=3.0, b_q=1.0)


def _family(x):
    return GaussianNIW(jnp.zeros(2), jnp.asarray(0.5), jnp.asarray(3.0), jnp.eye(2) * 0.8)


def canonical(labels):
    """Relabel each row by order of first appearance (restricted growth string)."""
    out = np.empty_like(labels)
    for r, row in enumerate(labels):
        seen = {}
        out[r] = [seen.setdefault(v, len(seen)) for v in row]
    return out


def exact_posterior(x, links, fam, prior, p=None, q=None):
    parts = set_partitions(x.shape[0])
    lj = jax.vmap(lambda z: log_joint(z, x, links, fam, prior, p, q))(jnp.asarray(parts))
    lj = np.asarray(lj)
    return parts, np.exp(lj - np.logaddexp.reduce(lj))


def chi_square_pvalue(samples, parts, probs):
    index = {tuple(p): i for i, p in enumerate(parts)}
    counts = np.zeros(len(parts))
    for row in canonical(samples):
        counts[index[tuple(row)]] += 1
    expected = probs * counts.sum()
    # pool cells with small expectation so the chi-square approximation holds
    order = np.argsort(expected)
    obs, exp, acc_o, acc_e = [], [], 0.0, 0.0
    for i in order:
        acc_o += counts[i]
        acc_e += expected[i]
        if acc_e >= 5:
            obs.append(acc_o)
            exp.append(acc_e)
            acc_o = acc_e = 0.0
    if acc_e > 0:
        obs[-1] += acc_o
        exp[-1] += acc_e
    obs, exp = np.array(obs), np.array(exp)
    stat = ((obs - exp) ** 2 / exp).sum()
    tv = 0.5 * np.abs(counts / counts.sum() - probs).sum()
    return sps.chi2.sf(stat, len(obs) - 1), tv


def test_link_likelihood_identity_and_table():
    """Spec G1/G2: pair-table sum == counts form == the xi-identity of Section 1.3."""
    rng = np.random.default_rng(0)
    n = 7
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n) if rng.random() < 0.5])
    sign = rng.choice([-1, 1], len(pairs))
    p, q = 0.83, 0.71
    with x64():
        links = make_links(n, pairs, sign)
        for _ in range(5):
            z = rng.integers(0, 3, n)
            table = sum(
                np.log(p if s > 0 else 1 - p) if z[i] == z[j] else np.log(1 - q if s > 0 else q)
                for (i, j), s in zip(pairs, sign, strict=True)
            )
            c = pair_counts(jnp.asarray(z), links)
            np.testing.assert_allclose(log_link_likelihood(c, PRIOR, p, q), table, rtol=1e-12)
            n11, n01, n10, n00 = np.asarray(c)
            mplus, mminus = n11 + n10, n01 + n00
            ident = (
                mplus * np.log(1 - q)
                + mminus * np.log(q)
                + np.log(p / (1 - q)) * n11
                - np.log(q / (1 - p)) * n01
            )
            np.testing.assert_allclose(table, ident, rtol=1e-12)
            # relabelling invariance
            np.testing.assert_allclose(pair_counts(jnp.asarray((z + 1) % 3), links), c)


def test_neighbour_table_counts_each_pair_twice():
    links = make_links(5, PAIRS5, SIGN5)
    nbr, sgn, wgt = map(np.asarray, (links.nbr, links.sgn, links.wgt))
    assert wgt.sum() == 2 * len(PAIRS5)
    for (i, j), s in zip(PAIRS5, SIGN5, strict=True):
        assert s in sgn[i][nbr[i] == j] and s in sgn[j][nbr[j] == i]


@pytest.mark.parametrize("pq", ["collapse", "fixed"])
def test_gibbs_conditional_equals_log_joint_differences(pq):
    """Spec G3: log w_k - log w_k' == log joint(z_i=k) - log joint(z_i=k'), new cluster included."""
    rng = np.random.default_rng(1)
    n, k_max = 6, 6
    x = rng.normal(size=(n, 2))
    pairs = np.array([[0, 1], [0, 2], [1, 3], [2, 5], [3, 4], [4, 5], [1, 5]])
    sign = rng.choice([-1, 1], len(pairs))
    weight = rng.uniform(0.5, 2.0, len(pairs))
    p, q = (None, None) if pq == "collapse" else (0.8, 0.65)
    with x64():
        x = jnp.asarray(x)
        links = make_links(n, pairs, sign, weight)
        fam = _family(x)
        cond = jax.jit(gibbs.conditional, static_argnames=("pq", "removed"))
        lj_fn = jax.jit(lambda z: log_joint(z, x, links, fam, PRIOR, p, q))
        for trial in range(4):
            z = np.array([0, 0, 1, 1, 3, 1]) if trial == 0 else rng.integers(0, 3, n).astype(np.int32)
            for i in range(n):
                st = fam.stats(x, jnp.asarray(z), k_max)
                counts = pair_counts(jnp.asarray(z), links)
                state = gibbs.GibbsState(
                    jnp.asarray(z),
                    st,
                    counts,
                    jnp.asarray(0.8),
                    jnp.asarray(0.65),
                    jnp.asarray(PRIOR.alpha),
                    jnp.asarray(False),
                )
                logw, _, _ = cond(i, state, x, links, fam, PRIOR, pq="fixed" if p else "collapse")
                logw = np.asarray(logw)
                cand = np.flatnonzero(np.isfinite(logw))
                # exactly the occupied slots (without i) plus one free slot
                occupied = set(np.delete(z, i).tolist())
                assert set(cand.tolist()) - occupied and len(cand) == len(occupied) + 1
                lj = []
                for k in cand:
                    zk = z.copy()
                    zk[i] = k
                    lj.append(float(lj_fn(jnp.asarray(zk))))
                np.testing.assert_allclose(logw[cand] - logw[cand[0]], np.array(lj) - lj[0], atol=1e-9)


def _enumeration_case(pq, backend="auto"):
    with x64():
        x = jnp.asarray(X5)
        links = make_links(5, PAIRS5, SIGN5)
        fam = _family(x)
        p, q = (0.8, 0.9) if pq == "fixed" else (None, None)
        parts, probs = exact_posterior(x, links, fam, PRIOR, p, q)
        res = gibbs.sample(
            jax.random.key(7),
            x,
            links,
            fam,
            PRIOR,
            n_draws=6,
            n_warmup=8,
            thin=3,
            n_chains=1500,
            k_max=5,
            pq=pq,
            p=0.8,
            q=0.9,
            progress_bar=False,
            backend=backend,
        )
    return res, parts, probs


@pytest.mark.parametrize(
    ("pq", "backend"),
    [
        pytest.param("collapse", "numba", marks=pytest.mark.core),
        ("sample", "numba"),
        ("fixed", "numba"),
        ("collapse", "xla"),
        ("fixed", "xla"),
        pytest.param("sample", "xla", marks=pytest.mark.slow),
    ],
)
def test_sampler_matches_exact_enumeration(pq, backend):
    """Spec G4 / claim 13: empirical partition distribution vs exact posterior over Bell(5)=52 partitions,
    for the compiled CPU sweep and the XLA sweep."""
    res, parts, probs = _enumeration_case(pq, backend)
    samples = res.labels.reshape(-1, 5)
    pval, tv = chi_square_pvalue(samples, parts, probs)
    assert tv < 0.03, tv
    assert pval > 1e-3, (pval, tv)
    if pq == "sample":
        # the sampled p is informative: its mean moves off the prior mean a_p/(a_p+b_p)=2/3 toward the data
        assert 0.4 < res.p.mean() < 0.95


def test_links_with_p_equal_one_minus_q_carry_no_information():
    """p = 1 - q makes xi1' = xi2' = 0: the chain is bit-identical to a DP mixture without links."""
    with x64():
        x = jnp.asarray(X5)
        fam = _family(x)
        kw = dict(n_draws=20, n_warmup=5, n_chains=3, k_max=5, pq="fixed", p=0.3, q=0.7, progress_bar=False)
        with_links = gibbs.sample(jax.random.key(3), x, make_links(5, PAIRS5, SIGN5), fam, PRIOR, **kw)
        without = gibbs.sample(jax.random.key(3), x, make_links(5), fam, PRIOR, **kw)
    np.testing.assert_array_equal(with_links.labels, without.labels)
    # and the links do matter when p + q > 1
    with x64():
        kw.update(p=0.95, q=0.95)
        informative = gibbs.sample(jax.random.key(3), x, make_links(5, PAIRS5, SIGN5), fam, PRIOR, **kw)
    assert not np.array_equal(informative.labels, without.labels)


def test_k_max_exhausted_raises():
    with x64():
        x = jnp.asarray(X5 * 100.0)  # far-apart points want their own clusters
        fam = _family(x)
        with pytest.raises(gibbs.KMaxExhaustedError, match="k_max=2"):
            gibbs.sample(
                jax.random.key(0),
                x,
                make_links(5),
                fam,
                PRIOR._replace(alpha=50.0),
                n_draws=5,
                n_warmup=5,
                n_chains=1,
                k_max=2,
                progress_bar=False,
            )


def test_point_estimates_and_psm():
    from ppclust import posterior

    draws = np.array([[0, 0, 1, 1], [1, 1, 0, 0], [0, 0, 0, 1], [2, 2, 5, 5]])
    psm = posterior.similarity_matrix(draws)
    assert psm[0, 1] == 1.0 and psm[2, 3] == 0.75 and psm[1, 2] == 0.25
    # the {01}{23} partition (3 of 4 draws, up to relabelling) minimises both losses
    for loss in ("binder", "vi"):
        np.testing.assert_array_equal(posterior.point_estimate(draws, loss=loss), [0, 0, 1, 1])
    lj = np.array([0.0, 1.0, 5.0, 2.0])
    np.testing.assert_array_equal(
        posterior.point_estimate(draws, loss="max_log_joint", log_joint=lj), [0, 0, 0, 1]
    )
    assert posterior.variation_of_information([0, 0, 1, 1], [5, 5, 2, 2]) == pytest.approx(0.0, abs=1e-12)


def test_estimator_recovers_clusters_and_datatree_roundtrip(tmp_path):
    from ppclust import TVClust, posterior
    from ppclust.metrics import ari

    rng = np.random.default_rng(0)
    truth = np.repeat([0, 1, 2], 20)
    X = np.array([[0, 0], [6, 0], [0, 6]])[truth] + rng.normal(size=(60, 2))
    ml = np.array([[0, 1], [20, 21], [40, 41]])
    cl = np.array([[0, 20], [20, 40]])
    X0 = X.copy()
    est = TVClust(n_draws=30, n_warmup=30, n_chains=2, k_max=16, random_state=0)
    est.fit(X, must_link=ml, cannot_link=cl)
    np.testing.assert_array_equal(X, X0)
    assert ari(truth, est.labels_) > 0.9 and est.n_clusters_ == 3
    assert est.psm_.shape == (60, 60) and 0 <= est.p_ <= 1
    ds = est.posterior_["posterior"].ds
    assert set(ds.data_vars) >= {"n_clusters", "p", "q"} and ds["p"].shape == (2, 30)
    assert "alpha" not in ds  # fixed alpha is a constant: an attribute, not a posterior variable
    posterior.save(est.posterior_, tmp_path / "post.nc")
    back = posterior.load(tmp_path / "post.nc")
    np.testing.assert_allclose(back["clustering"]["psm"].values, est.psm_)
    np.testing.assert_allclose(back["sample_stats"]["lp"].values, est.objective_trace_)


def test_numpyro_kernel_adapter_targets_the_posterior(monkeypatch):
    """The MCMCKernel adapter under numpyro.infer.MCMC samples the same exact posterior."""
    from numpyro.infer import MCMC

    from ppclust.inference.tvclust_kernel import TVClustKernel

    monkeypatch.setenv("TQDM_DISABLE", "1")  # progress_bar=True keeps numpyro's cached step (ECOSYSTEM 2)
    with x64():
        x = jnp.asarray(X5)
        links = make_links(5, PAIRS5, SIGN5)
        fam = _family(x)
        mcmc = MCMC(
            TVClustKernel(links, fam, PRIOR, k_max=5),
            num_warmup=20,
            num_samples=3000,
            num_chains=1,
            progress_bar=True,
        )
        mcmc.run(jax.random.key(0), x, extra_fields=("log_joint", "n_clusters"))
        lab = np.asarray(mcmc.get_samples()["labels"])
        parts, probs = exact_posterior(x, links, fam, PRIOR)
    _, tv = chi_square_pvalue(lab[::3], parts, probs)
    assert tv < 0.08, tv
    assert mcmc.get_extra_fields()["log_joint"].shape == (3000,)


def test_kmeanspp_start_escapes_the_one_cluster_trap():
    """Standardised iris, 5% noise-free links: from one cluster the chains stay near K = 1-2 (the
    collapsed p, q absorb the violated cannot-links); the default k-means++ start finds the classes."""
    from ppclust import datasets, metrics
    from ppclust.estimators.tvclust import TVClust

    X, y = datasets.load("iris")
    si = datasets.sample_links(y, 559, noise=0.0, seed=1)
    kw = dict(must_link=si.must_link, cannot_link=si.cannot_link)
    est = TVClust(n_draws=100, n_warmup=150, random_state=0).fit(X, **kw)
    assert est.n_clusters_ == 3 and metrics.nmi(y, est.labels_) > 0.9
    with pytest.raises(ValueError, match="init"):
        TVClust(init="random").fit(X, **kw)


def test_link_noise_prior_parameters():
    """``link_noise=eps``: p, q ~ Beta(s (1 - eps), s eps) (prior mean 1 - eps) with s = max(11, L) for L
    links (``link_strength="links"``) or a fixed s; the default "auto" is eps = 0.1 for the samplers and
    the explicit a_p, b_p, a_q, b_q (the authors') for the VB; None keeps those; values above 0.5 and
    a non-positive strength are rejected."""
    from ppclust.estimators.tvclust import TVClust

    assert TVClust(link_noise=0.1)._link_prior() == pytest.approx((9.9, 1.1, 9.9, 1.1))
    assert TVClust(link_noise=0.5)._link_prior() == pytest.approx((5.5, 5.5, 5.5, 5.5))
    assert TVClust()._link_prior(600) == pytest.approx((540.0, 60.0, 540.0, 60.0))
    assert TVClust()._link_prior(5) == pytest.approx((9.9, 1.1, 9.9, 1.1))  # at least 11 pseudo-links
    assert TVClust(link_strength=11.0)._link_prior(600) == pytest.approx((9.9, 1.1, 9.9, 1.1))
    assert TVClust(link_noise=None)._link_prior(600) == (1.0, 10.0, 10.0, 1.0)
    assert TVClust(algorithm="variational")._link_prior(600) == (1.0, 10.0, 10.0, 1.0)
    assert TVClust(link_noise=None, a_p=2.0)._link_prior() == (2.0, 10.0, 10.0, 1.0)
    with pytest.raises(ValueError, match="link_noise"):
        TVClust(link_noise=0.7).fit(X5)
    with pytest.raises(ValueError, match="link_strength"):
        TVClust(link_strength=0.0).fit(X5)


def _paired_classes(seed, d=6, n=25, off=3.0, sep=10.0):
    """Six Gaussian classes in three well-separated pairs; the two classes of a pair overlap (means
    ``off`` sd apart), so the Gaussian term alone prefers one cluster per pair."""
    rng = np.random.default_rng(seed)
    X, y = [], []
    for c in range(6):
        centre = np.zeros(d)
        centre[c // 2], centre[3] = sep, off * (c % 2)
        X.append(centre + rng.normal(size=(n, d)))
        y.append(np.full(n, c))
    return np.concatenate(X), np.concatenate(y)


def test_default_link_prior_keeps_clean_cannot_links_that_the_neutral_prior_explains_as_noise():
    """Why the default link prior, on data built for it: with the neutral Beta(1, 10) / Beta(10, 1) prior
    (``link_noise=None``) the chain merges overlapping classes and explains the clean may-not-links inside
    the merged clusters as noise (posterior p near 0.5: each merge puts cannot-links inside clusters,
    which lowers p, which makes the next merge cheaper); the default prior (``link_noise="auto"``: mean
    0.9, strength = the number of links) keeps p near 0.9 and the six classes. 3 clean pairs per point."""
    from ppclust import datasets, metrics
    from ppclust.estimators.tvclust import TVClust

    rows = []
    for seed in range(4):
        X, y = _paired_classes(seed)
        si = datasets.sample_links(y, 3 * len(y), 0.0, seed=seed)
        kw = dict(n_draws=100, n_warmup=100, n_chains=1, random_state=seed, progress_bar=False)
        fits = [
            TVClust(link_noise=ln, **kw).fit(X, must_link=si.must_link, cannot_link=si.cannot_link)
            for ln in (None, "auto")
        ]
        rows.append([(metrics.nmi(y, e.labels_), e.n_clusters_, e.p_) for e in fits])
    old, new = np.array([r[0] for r in rows]), np.array([r[1] for r in rows])
    assert new[:, 0].mean() > old[:, 0].mean() + 0.05, rows
    assert np.all(new[:, 0] >= old[:, 0] - 0.01), rows
    assert np.sum(new[:, 1] == 6) >= 3 and np.sum(old[:, 1] == 6) <= 1, rows
    assert np.all(new[:, 2] > 0.85) and np.sum(old[:, 2] < 0.6) >= 3, rows


@pytest.mark.slow
def test_link_noise_keeps_clean_links_credible():
    """On standardised wine with 44 clean random links (0.25 per point) the neutral Beta(1, 10) /
    Beta(10, 1) prior lets the sampler explain many may-links as noise (posterior p well below 0.8),
    the "links are mostly right" prior (link_noise=0.1) keeps p near its clean value."""
    from ppclust import datasets
    from ppclust.estimators.tvclust import TVClust

    X, y = datasets.load("wine")
    si = datasets.sample_links(y, 44, noise=0.0, seed=5)
    kw = dict(n_draws=60, n_warmup=60, n_chains=1, random_state=0, progress_bar=False)
    fits = {
        eps: TVClust(link_noise=eps, **kw).fit(X, must_link=si.must_link, cannot_link=si.cannot_link)
        for eps in (None, 0.1)
    }
    assert fits[0.1].p_ > 0.85 > fits[None].p_ + 0.1, (fits[0.1].p_, fits[None].p_)


def test_kappa0_default_is_fraley_raftery_for_the_samplers():
    """kappa0=None: 0.01 (Fraley & Raftery 2007) for the samplers -- the same draws as kappa0=0.01 passed
    explicitly, recorded in the DataTree -- and the authors' beta0 = 1 for algorithm="variational"."""
    from ppclust.estimators.tvclust import TVClust

    kw = dict(n_draws=3, n_warmup=3, n_chains=1, random_state=0, progress_bar=False)
    default = TVClust(**kw).fit(X5)
    explicit = TVClust(kappa0=0.01, **kw).fit(X5)
    assert default.posterior_.attrs["niw_kappa0"] == pytest.approx(0.01)
    np.testing.assert_array_equal(default.samples_.labels, explicit.samples_.labels)
    np.testing.assert_array_equal(default.objective_trace_, explicit.objective_trace_)
    vb = TVClust(algorithm="variational", vb_max_iter=3, random_state=0).fit(X5)
    vb1 = TVClust(algorithm="variational", vb_max_iter=3, kappa0=1.0, random_state=0).fit(X5)
    vb2 = TVClust(algorithm="variational", vb_max_iter=3, kappa0=0.01, random_state=0).fit(X5)
    np.testing.assert_array_equal(vb.objective_trace_, vb1.objective_trace_)
    assert not np.allclose(vb.objective_trace_, vb2.objective_trace_)


@pytest.mark.slow
def test_kappa0_default_does_not_over_split_wine():
    """Standardised wine (3 classes), no links: the kappa0 = 1 prior of spec 2.8 splits it into many more
    clusters than the default kappa0 = 0.01 (an Occam factor of (d/2) ln 100 per extra cluster); the
    study in benchmarks/results/tvclust_prior_study.md saw 16 against 7 on a 300-point draw."""
    from ppclust import datasets
    from ppclust.estimators.tvclust import TVClust

    X, y = datasets.load("wine")
    kw = dict(n_draws=60, n_warmup=60, n_chains=1, random_state=0, progress_bar=False)
    old = TVClust(kappa0=1.0, **kw).fit(X)
    new = TVClust(**kw).fit(X)
    assert np.mean(new.samples_.n_clusters) + 2 < np.mean(old.samples_.n_clusters)


# ----------------------------------------------------------------------------- the link prior


def _random_links(rng, n, m):
    i = rng.integers(n, size=m)
    j = (i + rng.integers(1, n, size=m)) % n
    return np.stack([i, j], 1), rng.choice([-1, 1], size=m)


def test_link_reliability_is_the_beta_posterior_mean_of_brute_force_pair_counts():
    """p, q: posterior means of TVClust's sensitivity / specificity given the pair counts, counted here pair
    by pair (a swap of N01 / N10 or of p / q, or counts conditional on the observed sign -- the share of
    may-links kept -- would fail), and the same as ``posterior.link_parameter_draws``' conditional means."""
    import jax

    from ppclust.posterior import link_parameter_draws

    rng = np.random.default_rng(3)
    n = 40
    z = rng.integers(0, 3, n)
    pairs, sign = _random_links(rng, n, 120)
    side = SideInfo.from_pairs(n, pairs, sign, on_conflict="keep")
    n11 = n01 = n10 = n00 = 0
    for (i, j), s_ in zip(side.pairs, side.sign, strict=True):
        same = z[i] == z[j]
        n11 += same and s_ > 0
        n01 += same and s_ < 0
        n10 += (not same) and s_ > 0
        n00 += (not same) and s_ < 0
    counts = pair_counts(z, side, xp=np)
    np.testing.assert_array_equal(counts, [n11, n01, n10, n00])
    p, q = link_reliability(counts, 2.0, 0.5)
    assert p == pytest.approx((n11 + 2.0) / (n11 + n01 + 2.5))
    assert q == pytest.approx((n00 + 2.0) / (n00 + n10 + 2.5))
    prior = TVClustPrior(a_p=2.0, b_p=0.5, a_q=2.0, b_q=0.5)
    d = link_parameter_draws(jax.random.key(0), z[None, None], make_links(n, side=side), prior)
    assert (p, q) == pytest.approx((float(d["p_cond_mean"][0, 0]), float(d["q_cond_mean"][0, 0])), rel=1e-12)
    # separate priors on q (the samplers' TVClustPrior), traced as the sweeps call it
    p2, q2 = link_reliability(jax.numpy.asarray(counts, float), 2.0, 0.5, a_q=3.0, b_q=0.25, xp=jax.numpy)
    assert (float(p2), float(q2)) == pytest.approx(
        ((n11 + 2.0) / (n11 + n01 + 2.5), (n00 + 3.0) / (n00 + n10 + 3.25)), rel=1e-6
    )
    prior = TVClustPrior(a_p=2.0, b_p=0.5, a_q=3.0, b_q=0.25)
    d = link_parameter_draws(jax.random.key(0), z[None, None], make_links(n, side=side), prior)
    assert float(d["q_cond_mean"][0, 0]) == pytest.approx((n00 + 3.0) / (n00 + n10 + 3.25), rel=1e-12)


def test_link_log_odds_inverts_the_small_variance_map():
    """ln p/(1-q), ln q/(1-p) are RDP-means' xi1, xi2 of ``small_variance_hyper`` (sigma-free p, q)."""
    h = small_variance_hyper(0.7, 5.0, 1.3, 0.4, d=2)
    assert link_log_odds(h.p, h.q) == pytest.approx((1.3, 0.4), rel=1e-10)


def test_link_reliability_share_known_cases():
    """Weight shares: 1 without counts (p = q = 0.9, the prior mean) and for links a partition keeps; the
    log-odds ratio to ln 9 for a symmetric 20% flip rate; 0 for links violated as often as kept."""
    share, pq = link_reliability_share([0, 0, 0, 0])
    assert share == (1.0, 1.0) and pq == pytest.approx((0.9, 0.9))
    assert link_reliability_share([50, 0, 0, 150])[0] == (1.0, 1.0)
    share, (p, q) = link_reliability_share([800, 200, 200, 800])
    assert p == pytest.approx(809.9 / 1011) and q == pytest.approx(p)
    assert share[0] == pytest.approx(np.log(p / (1 - q)) / np.log(9)) and share[1] == pytest.approx(share[0])
    assert 0.6 < share[0] < 0.66  # ln 4 / ln 9 = 0.63 at exactly 20%
    assert link_reliability_share([100, 900, 900, 100])[0] == (0.0, 0.0)
    # one kind unreliable, the other not: may-links across clusters lower q, so both log-odds fall, the
    # may-link's (ln p/(1-q)) the most
    share, _ = link_reliability_share([300, 0, 300, 900])
    assert share[0] < share[1] <= 1.0
