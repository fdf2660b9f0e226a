"""The label-seeded start of the Hartigan engine (``init="labels"``: CEC-IB, C3L)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust import metrics
from ppclust._jax import x64
from ppclust.errors import InvalidParameterError
from ppclust.estimators.c3l import C3L
from ppclust.estimators.cecib import CECIB
from ppclust.inference import cecib, hartigan, init
from ppclust.sideinfo import labelled_means


def _grid(seed, n=30, n_lab=3, d=2):
    """Nine round blobs on a 3 x 3 grid (centres 3 apart, sd 0.5), ``n_lab`` clean labels per class."""
    rng = np.random.default_rng(seed)
    c = np.array([[i, j] + [0] * (d - 2) for i in range(3) for j in range(3)], float) * 3
    x = np.concatenate([rng.normal(ci, 0.5, (n, d)) for ci in c])
    y = np.repeat(np.arange(9), n)
    lab = np.full(len(y), -1)
    idx = np.concatenate([rng.choice(np.flatnonzero(y == k), n_lab, replace=False) for k in range(9)])
    lab[idx] = y[idx]
    return x, y, lab


def test_labelled_means_brute_force():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3))
    codes = rng.integers(-1, 4, 40)
    codes[:4] = np.arange(4)  # every category labelled at least once
    got = labelled_means(x, codes, 4)
    want = np.array([x[codes == c].mean(0) for c in range(4)])
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)


def _restart_centres(key, x, means, K, n_init):
    """Each restart's K centres by the JAX definition (:func:`ppclust.inference.init.kmeanspp_centres`):
    ``means`` fixed first, the others k-means++ draws of the restart's key."""
    c0 = np.zeros((K, x.shape[1]))
    c0[: len(means)] = means
    with x64():
        return [
            np.asarray(init.kmeanspp_centres(kr, jnp.asarray(x), jnp.asarray(c0), jnp.arange(K) < len(means)))
            for kr in jax.random.split(key, n_init)
        ]


def test_seeded_partitions_are_nearest_centre_of_class_means_and_kmeanspp():
    """Restart r: the class means fixed, the other K - m centres the k-means++ draws of restart r's key
    (:func:`ppclust.inference.init.kmeanspp_centres`, the JAX definition), then the nearest centre."""
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 2))
    codes = np.full(60, -1)
    codes[rng.choice(60, 9, replace=False)] = np.arange(9) % 3
    means = labelled_means(x, codes, 3)
    key = jax.random.PRNGKey(4)
    K = 5
    with x64():
        parts = hartigan.seeded_partitions(key, x, means, K, n_init=4)
    for r, cs in enumerate(_restart_centres(key, x, means, K, 4)):
        np.testing.assert_allclose(cs[:3], means, atol=0)  # the class means stay the first centres
        brute = np.argmin(((x[:, None] - cs[None]) ** 2).sum(-1), 1)
        np.testing.assert_array_equal(parts[r], brute)
    assert len({p.tobytes() for p in parts}) > 1  # the free centres are drawn per restart
    with x64():  # no free centre: every restart starts from the nearest-class-mean partition
        parts = hartigan.seeded_partitions(key, x, means, 3, n_init=4)
    nearest_mean = np.argmin(((x[:, None] - means[None]) ** 2).sum(-1), 1)
    np.testing.assert_array_equal(parts, np.broadcast_to(nearest_mean, parts.shape))


def test_seeded_partitions_in_blocks_of_rows_are_the_nearest_centres():
    """More rows than one block ((rows, K) temporaries of 2^20 values): every block's rows still go to
    their nearest centre (brute force on the centres the same draws give)."""
    rng = np.random.default_rng(2)
    K, n = 8, 300_000  # 131,072 rows per block: three blocks, the last one short
    x = rng.normal(size=(n, 2)) + rng.normal(0.0, 4.0, (K, 2))[rng.integers(0, K, n)]
    means = x[:2] + 0.1
    key = jax.random.PRNGKey(7)
    with x64():
        parts = hartigan.seeded_partitions(key, x, means, K, n_init=2)
    for r, cs in enumerate(_restart_centres(key, x, means, K, 2)):
        d2 = ((x[:, None] - cs[None]) ** 2).sum(-1)
        got = d2[np.arange(n), parts[r]]
        np.testing.assert_allclose(got, d2.min(1), rtol=1e-9, atol=1e-9)  # nearest up to rounding ties


@pytest.mark.parametrize("seed", [0, 3])
def test_label_seeded_fit_recovers_classes_where_random_start_does_not(seed):
    """Nine blobs, three clean labels each, n_clusters = 9: from the labelled class means CEC-IB finds the
    nine classes; the paper's random partition (every initial mean near the global mean) merges them."""
    x, y, lab = _grid(seed)
    seeded = CECIB(9, init="labels", n_init=3, random_state=seed, progress_bar=False).fit(x, lab)
    rand = CECIB(9, init="random", n_init=3, random_state=seed, progress_bar=False).fit(x, lab)
    assert seeded.init_ == "labels" and seeded.n_clusters_ == 9
    assert metrics.ari(y, seeded.labels_) > 0.95
    assert metrics.ari(y, rand.labels_) < 0.5
    # the same start through the inference layer, one restart per seed (m = K: all restarts equal)
    codes, m = cecib.encode_labels(lab, len(lab))
    with x64():
        fit = cecib.fit(
            jax.random.PRNGKey(0), jnp.asarray(x), codes, m, n_clusters=9, init="labels", n_init=2
        )
    assert metrics.ari(y, np.asarray(fit.best.labels)) == pytest.approx(metrics.ari(y, seeded.labels_))


def test_auto_init_uses_labels_only_when_given_and_labels_needs_them():
    x, _, lab = _grid(0)
    assert CECIB(9, n_init=1, progress_bar=False).fit(x, lab).init_ == "labels"
    assert CECIB(9, n_init=1, progress_bar=False).fit(x).init_ == "k-means++"
    with pytest.raises(InvalidParameterError) as err:
        CECIB(9, init="labels", progress_bar=False).fit(x)
    assert err.value.parameter == "init"
    with pytest.raises(ValueError, match="centres"):
        hartigan.seeded_partitions(jax.random.PRNGKey(0), x, np.zeros((10, 2)), 9, 1)


def test_c3l_label_seeded_start():
    """C3L's init="labels": the class means (in its transformed space) seed the restarts; nine labelled
    blobs in 4-D are found as nine clusters (the random start merges them)."""
    x, y, lab = _grid(0, d=4)
    lab3 = np.where(lab >= 0, lab % 3, -1)  # three categories (coarse labels: three blobs each)
    seeded = C3L(9, init="labels", n_init=2, random_state=0, progress_bar=False).fit(x, lab3)
    rand = C3L(9, init="random", n_init=2, random_state=0, progress_bar=False).fit(x, lab3)
    assert metrics.ari(y, seeded.labels_) > metrics.ari(y, rand.labels_)
    with pytest.raises(InvalidParameterError):
        C3L(9, init="labels", progress_bar=False).fit(x, hyperplane=(np.array([1.0, 0, 0, 0]), 3.0))
