"""Synthetic data generators: Gaussian blobs (flat and hierarchical) and the two-factor data of CCIB.

Re-exported by :mod:`ppclust.datasets`. All randomness comes from ``seed`` (None, an int or a
``numpy.random.Generator``).
"""

from __future__ import annotations

import numpy as np

from ppclust.datasets.checks import positive_int, probability

__all__ = [
    "make_blobs",
    "make_blobs_hier",
    "make_two_factor",
    "make_two_factor_bits",
    "make_two_factor_counts",
]


def make_blobs(
    n_samples=300,
    n_clusters=3,
    n_features=2,
    *,
    cluster_std=1.0,
    center_box=(-10.0, 10.0),
    centers=None,
    seed=None,
) -> tuple[np.ndarray, np.ndarray]:
    """Isotropic Gaussian blobs of (almost) equal size; returns ``(X, y)``.

    ``centers`` (``(K, d)``) overrides ``n_clusters``/``n_features``/``center_box``. Cluster sizes
    differ by at most one. Points are shuffled.

    Parameters
    ----------
    n_samples : int >= 1, default 300
        Number of points.
    n_clusters : int >= 1, default 3
        Number of blobs (ignored with ``centers``).
    n_features : int >= 1, default 2
        Dimension (ignored with ``centers``).
    cluster_std : float or array of shape (K,), default 1.0
        Standard deviation of each blob.
    center_box : (float, float), default (-10.0, 10.0)
        Bounds of the uniformly drawn centres.
    centers : array of shape (K, d), optional
        Fixed centres.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : float64 ndarray of shape (n_samples, d)
    y : int ndarray of shape (n_samples,)

    Examples
    --------
    >>> from ppclust.datasets import make_blobs
    >>> X, y = make_blobs(30, 3, 2, seed=0)
    >>> X.shape, sorted(set(y.tolist()))
    ((30, 2), [0, 1, 2])
    """
    rng = np.random.default_rng(seed)
    if centers is None:
        positive_int(n_clusters, "n_clusters")
        positive_int(n_features, "n_features")
        centers = rng.uniform(center_box[0], center_box[1], size=(n_clusters, n_features))
    centers = np.asarray(centers, np.float64)
    if centers.ndim != 2:
        raise ValueError(f"`centers` must have shape (n_clusters, n_features), got {centers.shape}.")
    positive_int(n_samples, "n_samples")
    k = len(centers)
    y = np.arange(n_samples) % k
    rng.shuffle(y)
    std = np.broadcast_to(np.asarray(cluster_std, np.float64), (k,))
    X = centers[y] + rng.standard_normal((n_samples, centers.shape[1])) * std[y, None]
    return X, y.astype(np.int32)


def make_blobs_hier(
    n_categories=3,
    n_sub=2,
    n_per_sub=50,
    n_features=2,
    *,
    category_spread=12.0,
    sub_spread=3.0,
    cluster_std=0.5,
    seed=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hierarchical blobs: sub-clusters inside categories. Returns ``(X, y_fine, y_coarse)``.

    Category centres are drawn uniformly in ``[-category_spread, category_spread]^d``; each of the
    ``n_sub`` sub-cluster centres of a category is its centre plus ``N(0, sub_spread^2 I)``; points
    are ``N(sub-centre, cluster_std^2 I)``. ``n_sub`` may be a list (one count per category). Fine
    labels number the sub-clusters consecutively category by category, so
    ``y_coarse == coarse_of_fine[y_fine]`` with ``coarse_of_fine = np.repeat(arange(C), n_sub)``.

    Parameters
    ----------
    n_categories : int >= 1, default 3
        Number of categories (coarse classes) ``C``.
    n_sub : int or list of int, default 2
        Sub-clusters per category (one count per category for a list).
    n_per_sub : int >= 1, default 50
        Points per sub-cluster.
    n_features : int >= 1, default 2
        Dimension ``d``.
    category_spread : float, default 12.0
        Half-width of the box of category centres.
    sub_spread : float, default 3.0
        Standard deviation of sub-cluster centres around their category's centre.
    cluster_std : float, default 0.5
        Standard deviation of points around their sub-cluster's centre.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : float64 ndarray of shape (n, d)
    y_fine, y_coarse : int ndarray of shape (n,)

    Examples
    --------
    >>> from ppclust.datasets import make_blobs_hier
    >>> X, fine, coarse = make_blobs_hier(2, 3, 5, seed=0)
    >>> X.shape, int(fine.max()) + 1, int(coarse.max()) + 1
    ((30, 2), 6, 2)
    """
    rng = np.random.default_rng(seed)
    positive_int(n_categories, "n_categories")
    subs = np.broadcast_to(np.asarray(n_sub), (n_categories,)).astype(int)
    if np.any(subs < 1):
        raise ValueError(f"`n_sub` must be >= 1 per category, got {n_sub}.")
    positive_int(n_per_sub, "n_per_sub")
    cat_c = rng.uniform(-category_spread, category_spread, size=(n_categories, n_features))
    coarse_of_fine = np.repeat(np.arange(n_categories), subs)
    sub_c = cat_c[coarse_of_fine] + sub_spread * rng.standard_normal((len(coarse_of_fine), n_features))
    y_fine = np.repeat(np.arange(len(coarse_of_fine)), n_per_sub)
    perm = rng.permutation(len(y_fine))
    y_fine = y_fine[perm]
    X = sub_c[y_fine] + cluster_std * rng.standard_normal((len(y_fine), n_features))
    return X, y_fine.astype(np.int32), coarse_of_fine[y_fine].astype(np.int32)


def make_two_factor(
    n_samples=400,
    n_clusters=(2, 2),
    n_features=(2, 2),
    *,
    separation=4.0,
    noise_features=0,
    cluster_std=1.0,
    seed=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Gaussian data with two independent ground-truth partitions (for CCIB). Returns ``(X, y1, y2)``.

    ``y1`` and ``y2`` are drawn independently and uniformly (``n_clusters = (K1, K2)``). The first
    ``n_features[0]`` coordinates carry factor 1: cluster means are ``separation`` times a random
    direction per class, the next ``n_features[1]`` coordinates carry factor 2 likewise, then
    ``noise_features`` pure-noise coordinates. Noise is ``N(0, cluster_std^2)`` in every coordinate.

    Parameters
    ----------
    n_samples : int >= 1, default 400
        Number of points.
    n_clusters : (int, int), default (2, 2)
        Classes ``(K1, K2)`` of the two factors.
    n_features : (int, int), default (2, 2)
        Coordinates carrying each factor.
    separation : float, default 4.0
        Distance scale of the class means.
    noise_features : int >= 0, default 0
        Extra pure-noise coordinates.
    cluster_std : float, default 1.0
        Noise standard deviation in every coordinate.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : float64 ndarray of shape (n_samples, sum(n_features) + noise_features)
    y1, y2 : int ndarray of shape (n_samples,)

    Examples
    --------
    >>> from ppclust.datasets import make_two_factor
    >>> X, y1, y2 = make_two_factor(40, seed=0)
    >>> X.shape
    (40, 4)
    """
    rng = np.random.default_rng(seed)
    positive_int(n_samples, "n_samples")
    k1, k2 = (int(v) for v in n_clusters)
    d1, d2 = (int(v) for v in n_features)
    if min(k1, k2, d1, d2) < 1:
        raise ValueError(
            f"`n_clusters` and `n_features` entries must be >= 1, got {n_clusters}, {n_features}."
        )
    y1 = rng.integers(k1, size=n_samples)
    y2 = rng.integers(k2, size=n_samples)
    m1 = separation * _spread_means(rng, k1, d1)
    m2 = separation * _spread_means(rng, k2, d2)
    mean = np.concatenate([m1[y1], m2[y2], np.zeros((n_samples, int(noise_features)))], axis=1)
    X = mean + cluster_std * rng.standard_normal(mean.shape)
    return X, y1.astype(np.int32), y2.astype(np.int32)


def make_two_factor_bits(n_samples=100, *, noise=0.1, seed=None):
    """The synthetic set of Gondek & Hofmann (2004), Table 1: two independent binary factors.

    Factor B sets bits 1-8 of a 12-bit vector, factor C bits 9-12 (each bit equals its factor's
    value); every bit is then flipped with probability ``noise``. Returns ``(X, b, c)`` with ``X``
    float (n, 12). With ``noise = 0.1`` the Bayes precision for C is 0.972 (CCIB spec 11.1).

    Parameters
    ----------
    n_samples : int >= 1, default 100
        Number of points.
    noise : float in [0, 1], default 0.1
        Probability of flipping each bit.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : float ndarray of shape (n_samples, 12)
    b, c : int ndarray of shape (n_samples,)
        The two binary factors.

    References
    ----------
    D. Gondek and T. Hofmann, "Non-redundant data clustering", ICDM 2004, Table 1.

    Examples
    --------
    >>> from ppclust.datasets import make_two_factor_bits
    >>> X, b, c = make_two_factor_bits(20, seed=0)
    >>> X.shape
    (20, 12)
    """
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    positive_int(n_samples, "n_samples")
    probability(noise, "noise")
    b = rng.integers(0, 2, n_samples)
    c = rng.integers(0, 2, n_samples)
    X = np.concatenate([np.repeat(b[:, None], 8, 1), np.repeat(c[:, None], 4, 1)], 1)
    X = np.where(rng.random(X.shape) < noise, 1 - X, X)
    return X.astype(float), b.astype(np.int32), c.astype(np.int32)


def make_two_factor_counts(
    n_docs=300,
    n_clusters=(2, 2),
    *,
    words_per_topic=20,
    n_background_words=40,
    doc_length=100,
    mix=(0.4, 0.4),
    concentration=1.0,
    seed=None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Word-count corpus with two independent factors. Returns ``(X, y1, y2)``, ``X`` int64 counts.

    The vocabulary has one block of ``words_per_topic`` words per class of factor 1, one per class
    of factor 2 and ``n_background_words`` shared words. A document of classes ``(a, b)`` draws
    ``doc_length`` words from ``mix[0] * phi1[a] + mix[1] * phi2[b] + (1 - sum(mix)) * phi0``, where
    each ``phi`` is ``Dirichlet(concentration)`` on its block.

    Parameters
    ----------
    n_docs : int >= 1, default 300
        Number of documents.
    n_clusters : (int, int), default (2, 2)
        Classes ``(K1, K2)`` of the two factors.
    words_per_topic : int >= 1, default 20
        Words of each class's block.
    n_background_words : int >= 0, default 40
        Shared background words.
    doc_length : int >= 1, default 100
        Words per document.
    mix : (float, float), default (0.4, 0.4)
        Weights of the two factors' topics (the background gets the rest).
    concentration : float > 0, default 1.0
        Dirichlet concentration of every topic.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    X : int64 ndarray of shape (n_docs, V)
    y1, y2 : int ndarray of shape (n_docs,)

    Examples
    --------
    >>> from ppclust.datasets import make_two_factor_counts
    >>> X, y1, y2 = make_two_factor_counts(10, seed=0)
    >>> X.shape, int(X.sum(1)[0])
    ((10, 120), 100)
    """
    rng = np.random.default_rng(seed)
    positive_int(n_docs, "n_docs")
    k1, k2 = (int(v) for v in n_clusters)
    w1, w2 = float(mix[0]), float(mix[1])
    if min(w1, w2) < 0 or w1 + w2 > 1:
        raise ValueError(f"`mix` must be two non-negative weights with sum <= 1, got {mix}.")
    V = (k1 + k2) * words_per_topic + n_background_words
    phi1 = np.zeros((k1, V))
    phi2 = np.zeros((k2, V))
    for a in range(k1):
        phi1[a, a * words_per_topic : (a + 1) * words_per_topic] = rng.dirichlet(
            np.full(words_per_topic, concentration)
        )
    off = k1 * words_per_topic
    for b in range(k2):
        lo = off + b * words_per_topic
        phi2[b, lo : lo + words_per_topic] = rng.dirichlet(np.full(words_per_topic, concentration))
    phi0 = np.zeros(V)
    if n_background_words:
        phi0[-n_background_words:] = rng.dirichlet(np.full(n_background_words, concentration))
    elif w1 + w2 < 1:
        raise ValueError("`mix` must sum to 1 when n_background_words=0.")
    y1 = rng.integers(k1, size=n_docs)
    y2 = rng.integers(k2, size=n_docs)
    probs = w1 * phi1[y1] + w2 * phi2[y2] + (1.0 - w1 - w2) * phi0
    probs /= probs.sum(axis=1, keepdims=True)
    X = rng.multinomial(doc_length, probs)
    return X.astype(np.int64), y1.astype(np.int32), y2.astype(np.int32)


def _spread_means(rng, k, d):
    """``k`` well-spread unit-scale means in ``d`` dimensions (simplex-like when ``k <= d + 1``)."""
    if k == 1:
        return np.zeros((1, d))
    m = rng.standard_normal((k, d))
    m -= m.mean(axis=0)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m
