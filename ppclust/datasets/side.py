"""Simulated side information: links and partial labels drawn from a ground truth, and the links protocol
of the TVClust paper's experiments.

Re-exported by :mod:`ppclust.datasets`. All randomness comes from ``seed`` (None, an int or a
``numpy.random.Generator``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ppclust.datasets.checks import probability
from ppclust.sideinfo import SideInfo, decode_pair_index

__all__ = ["sample_links", "sample_labels", "paper_links_protocol", "PaperLinks"]


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
    probability(noise, "noise")
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
    probability(fraction, "fraction")
    probability(noise, "noise")
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
    probability(p, "p")
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
