"""Partition-comparison metrics: NMI, ARI, pairwise precision/recall/F, Hungarian accuracy, purity.

Two layers:

* host functions (``nmi``, ``ari``, ``pairwise_f1``, ``accuracy``, ``purity``) take any integer (or
  hashable) label arrays, build the contingency table with numpy and return Python floats. They
  agree with scikit-learn's ``normalized_mutual_info_score`` / ``adjusted_rand_score`` to 1e-9.
* JAX functions (``contingency_jax``, ``nmi_jax``, ``ari_jax``, ``pairwise_f1_jax``, ``purity_jax``)
  take int labels in ``[0, n_labels)`` with a **static** ``n_labels``; they are jittable and
  ``vmap``-able over posterior draws, e.g. ``jax.vmap(nmi_jax, (0, None, None))(draws, y, K)``.
  Labels outside ``[0, n_labels)`` (e.g. ``-1``) are ignored: the point is dropped from both
  partitions. Run them inside ``ppclust._jax.x64()`` for float64 exactness on large ``n``.

All metrics take ``(labels_true, labels_pred)`` in scikit-learn's order. Pair counts are computed
from the contingency table, never from the ``n x n`` pair matrix.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linear_sum_assignment

__all__ = [
    "contingency",
    "nmi",
    "ari",
    "pairwise_f1",
    "accuracy",
    "purity",
    "contingency_jax",
    "nmi_jax",
    "ari_jax",
    "pairwise_f1_jax",
    "purity_jax",
]

_AVERAGES = ("arithmetic", "geometric", "max", "min")


# --------------------------------------------------------------------------- host (numpy)


def contingency(labels_true, labels_pred) -> np.ndarray:
    """Contingency table of two labellings.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).

    Returns
    -------
    table : ndarray of shape (n_classes, n_clusters), int64
        ``table[r, c]`` counts the points whose true label is the r-th distinct value of ``labels_true``
        and whose predicted label is the c-th distinct value of ``labels_pred`` (both sorted).

    Examples
    --------
    >>> from ppclust.metrics import contingency
    >>> contingency([0, 0, 1, 1], [1, 1, 1, 0]).tolist()
    [[0, 2], [1, 1]]
    """
    a, b = _check_pair_of_labelings(labels_true, labels_pred)
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    ka = int(ia.max()) + 1 if len(ia) else 0
    kb = int(ib.max()) + 1 if len(ib) else 0
    flat = np.bincount(ia.astype(np.int64) * kb + ib, minlength=ka * kb)
    return flat.reshape(ka, kb)


def nmi(labels_true, labels_pred, average="arithmetic") -> float:
    """Normalised mutual information of two labellings, in [0, 1].

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).
    average : {"arithmetic", "geometric", "max", "min"}, default "arithmetic"
        The mean of the two entropies that normalises the mutual information: ``"arithmetic"`` is
        scikit-learn's default, ``"geometric"`` that of Strehl & Ghosh (used by the TVClust and CEC-IB
        papers).

    Returns
    -------
    nmi : float
        1 for identical partitions (up to renaming), 0 for independent ones.

    Notes
    -----
    ``NMI = I(U; V) / mean(H(U), H(V))`` with ``I(U; V) = sum_rc (n_rc / n) log(n n_rc / (n_r n_c))`` and
    ``H(U) = -sum_r (n_r / n) log(n_r / n)`` (nats). As in scikit-learn, two single-cluster partitions give
    1 and a partition with one cluster against any other gives 0.

    References
    ----------
    A. Strehl and J. Ghosh, "Cluster ensembles", JMLR 3 (2002), 583-617.

    Examples
    --------
    >>> from ppclust.metrics import nmi
    >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
    1.0
    >>> round(nmi([0, 0, 1, 1], [0, 1, 0, 1]), 6)
    0.0
    """
    if average not in _AVERAGES:
        raise ValueError(f"`average` must be one of {_AVERAGES}, got {average!r}.")
    c = contingency(labels_true, labels_pred).astype(np.float64)
    if (c.shape[0] == c.shape[1] == 1) or c.size == 0:
        return 1.0
    if c.shape[0] == 1 or c.shape[1] == 1:  # one side unsplit: I = 0 exactly (as scikit-learn)
        return 0.0
    n = c.sum()
    mi = _mutual_info(c)
    if mi == 0.0:
        return 0.0
    hu, hv = _entropy(c.sum(axis=1), n), _entropy(c.sum(axis=0), n)
    return float(mi / _mean(hu, hv, average))


def ari(labels_true, labels_pred) -> float:
    """Adjusted Rand index of two labellings: 1 for identical partitions, 0 in expectation by chance.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).

    Returns
    -------
    ari : float
        At most 1; negative when the agreement is below chance.

    Notes
    -----
    With pair counts TP, FP, FN, TN over the ``n (n - 1) / 2`` pairs (computed exactly in integers from
    the contingency table), ``ARI = 2 (TP TN - FN FP) / ((TP + FN)(FN + TN) + (TP + FP)(FP + TN))``.

    References
    ----------
    L. Hubert and P. Arabie, "Comparing partitions", Journal of Classification 2 (1985), 193-218.

    Examples
    --------
    >>> from ppclust.metrics import ari
    >>> ari([0, 0, 1, 1], [5, 5, 7, 7])
    1.0
    >>> round(ari([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2]), 4)
    0.2424
    """
    c = contingency(labels_true, labels_pred)
    n = int(c.sum())
    tp, same_true, same_pred = _pair_counts(c)
    total = n * (n - 1) // 2
    fp = same_pred - tp
    fn = same_true - tp
    tn = total - tp - fp - fn
    if fn == 0 and fp == 0:
        return 1.0
    return float(2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)))


def pairwise_f1(labels_true, labels_pred) -> tuple[float, float, float]:
    """Pairwise precision, recall and F-measure over all point pairs.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).

    Returns
    -------
    precision, recall, f : tuple of float
        ``precision = TP / #positive``, ``recall = TP / #relevant``, ``f = 2 TP / (#positive +
        #relevant)``; an empty denominator gives 1 (nothing can be wrong).

    Notes
    -----
    A pair is *positive* when ``labels_pred`` puts both points in one cluster and *relevant* when
    ``labels_true`` does; TP counts the pairs that are both. This is the F-measure of the TVClust paper
    (Khashabi et al. 2015).

    Examples
    --------
    >>> from ppclust.metrics import pairwise_f1
    >>> pairwise_f1([0, 0, 1, 1], [0, 0, 0, 0])
    (0.3333333333333333, 1.0, 0.5)
    """
    c = contingency(labels_true, labels_pred)
    tp, same_true, same_pred = _pair_counts(c)
    precision = tp / same_pred if same_pred else 1.0
    recall = tp / same_true if same_true else 1.0
    f = 2.0 * tp / (same_pred + same_true) if (same_pred + same_true) else 1.0
    return float(precision), float(recall), float(f)


def accuracy(labels_true, labels_pred) -> float:
    """Clustering accuracy: the share of points correct under the best one-to-one map of clusters to classes.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).

    Returns
    -------
    accuracy : float
        In [0, 1]. Surplus clusters (or classes) stay unmatched and their points count as errors.

    Notes
    -----
    The map maximises the matched counts of the contingency table ``C``:
    ``accuracy = max_pi sum_r C[r, pi(r)] / n`` over one-to-one maps ``pi`` (Hungarian algorithm,
    SciPy's ``linear_sum_assignment``).

    Examples
    --------
    >>> from ppclust.metrics import accuracy
    >>> accuracy([0, 0, 1, 1], [1, 1, 0, 2])
    0.75
    """
    c = contingency(labels_true, labels_pred)
    if c.size == 0:
        return 1.0
    r, k = linear_sum_assignment(c, maximize=True)
    return float(c[r, k].sum() / c.sum())


def purity(labels_true, labels_pred) -> float:
    """Purity: each predicted cluster votes for its majority class; the share of points in the majority.

    Parameters
    ----------
    labels_true : array-like of shape (n_samples,)
        Reference labels (any hashable values).
    labels_pred : array-like of shape (n_samples,)
        Predicted labels (any hashable values).

    Returns
    -------
    purity : float
        ``sum_c max_r C[r, c] / n`` for the contingency table ``C``; 1 when every cluster is pure
        (singletons included).

    Examples
    --------
    >>> from ppclust.metrics import purity
    >>> purity([0, 0, 1, 1], [0, 0, 0, 1])
    0.75
    """
    c = contingency(labels_true, labels_pred)
    if c.size == 0:
        return 1.0
    return float(c.max(axis=0).sum() / c.sum())


# --------------------------------------------------------------------------- JAX (jittable)


@partial(jax.jit, static_argnames=("n_labels",))
def contingency_jax(labels_true, labels_pred, n_labels: int):
    """Jittable contingency table of two labellings with a static number of labels.

    Parameters
    ----------
    labels_true : int array of shape (n_samples,)
        Reference labels in ``[0, n_labels)``; a point with a label outside is dropped.
    labels_pred : int array of shape (n_samples,)
        Predicted labels in ``[0, n_labels)``; a point with a label outside is dropped.
    n_labels : int
        Static bound on both labellings (the table is ``n_labels x n_labels``).

    Returns
    -------
    table : Array of shape (n_labels, n_labels), float
        ``table[r, c] = #{i : labels_true[i] = r, labels_pred[i] = c}`` (float64 under x64, float32
        otherwise), built from one-hot products.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.metrics import contingency_jax
    >>> contingency_jax(jnp.array([0, 0, 1, -1]), jnp.array([1, 1, 0, 0]), n_labels=2).tolist()
    [[0.0, 2.0], [1.0, 0.0]]
    """
    dtype = jnp.zeros((), float).dtype  # float64 under x64, float32 otherwise
    a = jax.nn.one_hot(labels_true, n_labels, dtype=dtype)
    b = jax.nn.one_hot(labels_pred, n_labels, dtype=dtype)
    keep = (a.sum(-1) * b.sum(-1))[:, None]  # drop a point that is out of range in either labelling
    return (a * keep).T @ b


@partial(jax.jit, static_argnames=("n_labels", "average"))
def nmi_jax(labels_true, labels_pred, n_labels: int, average: str = "arithmetic"):
    """Jittable :func:`nmi` (same formula and conventions), ``vmap``-able over posterior draws.

    Parameters
    ----------
    labels_true : int array of shape (n_samples,)
        Reference labels in ``[0, n_labels)``; a point with a label outside is dropped.
    labels_pred : int array of shape (n_samples,)
        Predicted labels in ``[0, n_labels)``; a point with a label outside is dropped.
    n_labels : int
        Static bound on both labellings (the table is ``n_labels x n_labels``).
    average : {"arithmetic", "geometric", "max", "min"}, default "arithmetic"
        The mean of the two entropies (static), as in :func:`nmi`.

    Returns
    -------
    nmi : Array of shape ()
        A mutual information below ``1e-12 max(1, log n)`` counts as 0.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.metrics import nmi_jax
    >>> float(nmi_jax(jnp.array([0, 0, 1, 1]), jnp.array([1, 1, 0, 0]), n_labels=2))
    1.0
    """
    if average not in _AVERAGES:
        raise ValueError(f"`average` must be one of {_AVERAGES}, got {average!r}.")
    c = contingency_jax(labels_true, labels_pred, n_labels)
    n = c.sum()
    u, v = c.sum(1), c.sum(0)
    xlogx = lambda t: jnp.where(t > 0, t * jnp.log(jnp.where(t > 0, t, 1.0)), 0.0)
    # I = sum c/n log(c n / (u v)) = (sum c log c - sum u log u - sum v log v)/n + log n
    mi = (xlogx(c).sum() - xlogx(u).sum() - xlogx(v).sum()) / n + jnp.log(n)
    mi = jnp.maximum(mi, 0.0)
    hu = jnp.log(n) - xlogx(u).sum() / n
    hv = jnp.log(n) - xlogx(v).sum() / n
    hu, hv = jnp.maximum(hu, 0.0), jnp.maximum(hv, 0.0)
    norm = {
        "arithmetic": 0.5 * (hu + hv),
        "geometric": jnp.sqrt(hu * hv),
        "max": jnp.maximum(hu, hv),
        "min": jnp.minimum(hu, hv),
    }[average]
    ku, kv = (u > 0).sum(), (v > 0).sum()
    both_single = (ku <= 1) & (kv <= 1)
    # one side unsplit means I = 0 exactly; round-off below 1e-12 is treated as 0 too
    tiny = (ku <= 1) | (kv <= 1) | (mi <= 1e-12 * jnp.maximum(1.0, jnp.log(n)))
    safe = jnp.where(norm > 0, norm, 1.0)
    return jnp.where(both_single, 1.0, jnp.where(tiny, 0.0, mi / safe))


@partial(jax.jit, static_argnames=("n_labels",))
def ari_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`ari` (same formula, pair counts in floating point).

    Parameters
    ----------
    labels_true : int array of shape (n_samples,)
        Reference labels in ``[0, n_labels)``; a point with a label outside is dropped.
    labels_pred : int array of shape (n_samples,)
        Predicted labels in ``[0, n_labels)``; a point with a label outside is dropped.
    n_labels : int
        Static bound on both labellings (the table is ``n_labels x n_labels``).

    Returns
    -------
    ari : Array of shape ()

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.metrics import ari_jax
    >>> round(float(ari_jax(jnp.array([0, 0, 0, 1, 1, 1]), jnp.array([0, 0, 1, 1, 2, 2]), n_labels=3)), 4)
    0.2424
    """
    c = contingency_jax(labels_true, labels_pred, n_labels)
    n = c.sum()
    tp, same_true, same_pred = _pair_counts_jax(c)
    total = n * (n - 1) / 2
    fp, fn = same_pred - tp, same_true - tp
    tn = total - tp - fp - fn
    den = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    perfect = (fn == 0) & (fp == 0)
    return jnp.where(perfect, 1.0, 2.0 * (tp * tn - fn * fp) / jnp.where(perfect, 1.0, den))


@partial(jax.jit, static_argnames=("n_labels",))
def pairwise_f1_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`pairwise_f1`.

    Parameters
    ----------
    labels_true : int array of shape (n_samples,)
        Reference labels in ``[0, n_labels)``; a point with a label outside is dropped.
    labels_pred : int array of shape (n_samples,)
        Predicted labels in ``[0, n_labels)``; a point with a label outside is dropped.
    n_labels : int
        Static bound on both labellings (the table is ``n_labels x n_labels``).

    Returns
    -------
    precision, recall, f : tuple of Array of shape ()

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.metrics import pairwise_f1_jax
    >>> [round(float(v), 4) for v in pairwise_f1_jax(jnp.array([0, 0, 1, 1]), jnp.zeros(4, int), n_labels=2)]
    [0.3333, 1.0, 0.5]
    """
    tp, st, sp = _pair_counts_jax(contingency_jax(labels_true, labels_pred, n_labels))
    div = lambda a, b: jnp.where(b > 0, a / jnp.where(b > 0, b, 1.0), 1.0)
    return div(tp, sp), div(tp, st), div(2.0 * tp, sp + st)


@partial(jax.jit, static_argnames=("n_labels",))
def purity_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`purity`.

    Parameters
    ----------
    labels_true : int array of shape (n_samples,)
        Reference labels in ``[0, n_labels)``; a point with a label outside is dropped.
    labels_pred : int array of shape (n_samples,)
        Predicted labels in ``[0, n_labels)``; a point with a label outside is dropped.
    n_labels : int
        Static bound on both labellings (the table is ``n_labels x n_labels``).

    Returns
    -------
    purity : Array of shape ()
        1 when no point is in range.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.metrics import purity_jax
    >>> float(purity_jax(jnp.array([0, 0, 1, 1]), jnp.array([0, 0, 0, 1]), n_labels=2))
    0.75
    """
    c = contingency_jax(labels_true, labels_pred, n_labels)
    n = c.sum()
    return jnp.where(n > 0, c.max(axis=0).sum() / jnp.where(n > 0, n, 1.0), 1.0)


# --------------------------------------------------------------------------- helpers


def _check_pair_of_labelings(labels_true, labels_pred):
    a = np.asarray(labels_true)
    b = np.asarray(labels_pred)
    for name, x in (("labels_true", a), ("labels_pred", b)):
        if x.ndim != 1:
            raise ValueError(f"`{name}` must be 1-D of shape (n_samples,), got shape {x.shape}.")
        if x.dtype.kind == "f" and not np.all(np.isfinite(x)):
            raise ValueError(f"`{name}` contains NaN or inf.")
    if a.shape != b.shape:
        raise ValueError(
            f"`labels_true` and `labels_pred` must have the same length, got {len(a)} and {len(b)}."
        )
    return a, b


def _pair_counts(c):
    """Exact integer pair counts ``(TP, #same-true pairs, #same-pred pairs)`` from a contingency table."""
    c = c.astype(np.int64)
    comb2 = lambda t: int((t * (t - 1) // 2).sum())
    return comb2(c), comb2(c.sum(axis=1)), comb2(c.sum(axis=0))


def _pair_counts_jax(c):
    """:func:`_pair_counts` in floating point, jittable: ``(TP, #same-true pairs, #same-pred pairs)``."""
    comb2 = lambda t: t * (t - 1) / 2
    return comb2(c).sum(), comb2(c.sum(1)).sum(), comb2(c.sum(0)).sum()


def _mutual_info(c):
    n = c.sum()
    nz = c > 0
    cij = c[nz]
    u = c.sum(axis=1)
    v = c.sum(axis=0)
    rows, cols = np.nonzero(nz)
    mi = np.sum(cij / n * (np.log(cij) + np.log(n) - np.log(u[rows]) - np.log(v[cols])))
    return max(float(mi), 0.0)


def _entropy(counts, n):
    p = counts[counts > 0]
    if len(p) <= 1:
        return 0.0
    return float(-np.sum(p / n * (np.log(p) - np.log(n))))


def _mean(u, v, average):
    if average == "arithmetic":
        return 0.5 * (u + v)
    if average == "geometric":
        return float(np.sqrt(u * v))
    if average == "max":
        return max(u, v)
    return min(u, v)
