"""Small-variance asymptotics: TVClust's collapsed Gibbs sampler at sigma^2 -> 0 is RDP-means.

Spec ``tvclust-rdpmeans.md`` Section 3.3. The data are built so that every part of the mapping
``small_variance_hyper`` decides one point (lambda = 1, xi = 0.8, three tight blobs 16 apart):

* O1 sits at squared distance 1.5 from blob A, no links: joining costs 12/13 * 1.5 = 1.38 > lambda,
  so it is a singleton. A mapping with ``exp(-lambda / sigma^2)`` (factor 2 lost) makes it join.
* O2 sits at squared distance 1.5 from blob B with one may-link into B: joining costs 1.38 - 0.8 < 1,
  so it joins B. Links whose log-odds are not scaled by 1 / (2 sigma^2) vanish in the limit: singleton.
* O3 sits at squared distance 0.5 from blob C with two may-not-links into C: joining costs
  0.46 + 1.6 > 1, so it is a singleton; unscaled links let it join.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust import metrics
from ppclust._jax import x64
from ppclust.estimators.dpmeans import RDPMeans
from ppclust.inference import dpmeans as dp
from ppclust.inference import gibbs
from ppclust.models.tvclust import make_links, small_variance_hyper
from ppclust.sideinfo import SideInfo

LAM, XI, M = 1.0, 0.8, 12


def _problem():
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])
    y = np.repeat(np.arange(3), M)
    X = centres[y] + 0.08 * rng.normal(size=(3 * M, 2))
    means = np.stack([X[y == k].mean(0) for k in range(3)])
    o1 = means[0] + [-np.sqrt(1.5), 0.0]
    o2 = means[1] + [np.sqrt(1.5), 0.0]
    o3 = means[2] + [0.0, np.sqrt(0.5)]
    X = np.vstack([X, o1, o2, o3])
    n = len(X)
    i1, i2, i3 = n - 3, n - 2, n - 1
    must = [[M, i2]] + [[k * M + j, k * M + j + 1] for k in range(3) for j in range(0, M - 1, 4)]
    cannot = [[2 * M, i3], [2 * M + 1, i3], [0, M], [M + 1, 2 * M + 2]]
    expected = np.concatenate([y, [3, 1, 4]])  # O1 alone, O2 in B, O3 alone
    side = SideInfo.from_links(n, must_link=np.array(must), cannot_link=np.array(cannot))
    return X, side, expected, (i1, i2, i3)


def _objective(X, z, side, lam=LAM, xi=XI):
    z = np.unique(z, return_inverse=True)[1]
    k = int(z.max()) + 1
    mu = np.stack([X[z == c].mean(0) for c in range(k)])
    with x64():
        return float(dp.objective(X, z, mu, k, lam, xi, xi, side.neighbour_table()))


def _gibbs(X, side, sigma2, *, lam=LAM, xi=XI, unscaled_links=False, n_samples=15, init=None):
    """Two chains at one sigma2; ``init`` = (chain, n) labels to warm-start each chain from."""
    h = small_variance_hyper(sigma2, lam, xi, d=X.shape[1], tau2=16.0)
    weight = 1.0 if unscaled_links else h.link_weight
    with x64():
        x = jnp.asarray(X)
        links = make_links(len(X), side.pairs, side.sign, np.full(len(side.pairs), weight))
        state = None
        if init is not None:
            state = jax.vmap(
                lambda z: gibbs.init(x, links, h.family(), k_max=24, labels=z, p=h.p, q=h.q, alpha=h.alpha)
            )(jnp.asarray(init, jnp.int32))
        res = gibbs.sample(
            jax.random.key(3),
            x,
            links,
            h.family(),
            h.prior(),
            n_draws=n_samples,
            n_warmup=15,
            n_chains=2,
            k_max=24,
            pq="fixed",
            p=h.p,
            q=h.q,
            init_state=state,
            progress_bar=False,
        )
    return res


def _anneal(X, side, sigma2s=(1.0, 0.2, 0.05, 0.01), **kw):
    """Warm-started decreasing variances (the small-variance path); returns the last run.

    Starting at sigma2 = 1, where the chain still mixes: from 0.2 one chain in six (seeds varied) froze in
    a 6-cluster local mode that single-point moves cannot leave at small variance.
    """
    init = None
    for s2 in sigma2s:
        res = _gibbs(X, side, s2, init=init, **kw)
        init = res.labels[:, -1]
    return res


@pytest.fixture(scope="module")
def problem():
    X, side, expected, idx = _problem()
    rdp = RDPMeans(
        lam=LAM, xi0=XI, xi_rate=1.0, n_init=4, max_iter=50, patience=3, init="bbox_random", random_state=0
    )
    rdp.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
    return X, side, expected, idx, rdp.labels_


def test_hyper_mapping_formulas():
    for mode in ("weight", "pq"):
        h = small_variance_hyper(0.25, 2.0, 0.5, 1.5, d=3, tau2=4.0, scale_links=mode)
        g = 0.5 / 0.25
        scale = h.link_weight if mode == "weight" else 1.0
        assert np.log(h.p / (1 - h.q)) * scale == pytest.approx(g * 0.5, rel=1e-10)
        assert np.log(h.q / (1 - h.p)) * scale == pytest.approx(g * 1.5, rel=1e-10)
        assert h.alpha == pytest.approx((1 + 4.0 / 0.25) ** 1.5 * np.exp(-2.0 * g), rel=1e-12)
    with pytest.raises(ValueError, match="round to 1"):
        small_variance_hyper(1e-3, 1.0, 1.0, d=2, scale_links="pq")


def test_problem_optimum_is_the_designed_partition(problem):
    X, side, expected, idx, rdp_labels = problem
    # RDP-means reaches the designed partition, and it beats each single-outlier change in J
    assert metrics.ari(expected, rdp_labels) == 1.0
    j0 = _objective(X, expected, side)
    for alt in ([3, 1, 2], [0, 1, 4], [3, 5, 4]):  # O3 joins C, O1 joins A, O2 alone
        z = expected.copy()
        z[list(idx)] = alt
        assert _objective(X, z, side) > j0


def test_gibbs_small_variance_matches_rdpmeans(problem):
    X, side, expected, idx, rdp_labels = problem
    n = len(X)
    res = _anneal(X, side)
    draws = res.labels.reshape(-1, n)
    # every kept draw of both chains (not only the MAP) is the RDP-means partition
    aris = [metrics.ari(rdp_labels, d) for d in draws]
    assert min(aris) == 1.0
    best = draws[int(np.argmax(res.log_joint.ravel()))]
    assert _objective(X, best, side) == pytest.approx(_objective(X, rdp_labels, side))

    # wrong mappings do NOT converge to RDP-means: each flips a designed outlier
    wrong_lam = _anneal(X, side, lam=2 * LAM, xi=2 * XI).labels[0, -1]  # exp(-lam/sigma2): factor 2 lost
    assert metrics.ari(rdp_labels, wrong_lam) < 1.0
    assert wrong_lam[idx[0]] == wrong_lam[0]  # O1 joined blob A
    unscaled = _anneal(X, side, unscaled_links=True).labels[0, -1]
    assert metrics.ari(rdp_labels, unscaled) < 1.0
    assert unscaled[idx[1]] != unscaled[M] and unscaled[idx[2]] == unscaled[2 * M]

    # at a large variance the chain wanders: its draws are worse in J than RDP-means
    hot = _gibbs(X, side, 2.0).labels.reshape(-1, n)
    j_rdp = _objective(X, rdp_labels, side)
    j_hot = [_objective(X, d, side) for d in hot]
    assert np.mean(j_hot) > j_rdp + 1.0
    assert min(metrics.ari(rdp_labels, d) for d in hot) < 1.0
