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
    "contingency", "nmi", "ari", "pairwise_f1", "accuracy", "purity",
    "contingency_jax", "nmi_jax", "ari_jax", "pairwise_f1_jax", "purity_jax",
]

_AVERAGES = ("arithmetic", "geometric", "max", "min")


# --------------------------------------------------------------------------- host (numpy)


def contingency(labels_true, labels_pred) -> np.ndarray:
    """Contingency table ``C[r, c] = #{i : true_i = r-th class, pred_i = c-th cluster}`` (int64)."""
    a, b = _check_pair_of_labelings(labels_true, labels_pred)
    _, ia = np.unique(a, return_inverse=True)
    _, ib = np.unique(b, return_inverse=True)
    ka = int(ia.max()) + 1 if len(ia) else 0
    kb = int(ib.max()) + 1 if len(ib) else 0
    flat = np.bincount(ia.astype(np.int64) * kb + ib, minlength=ka * kb)
    return flat.reshape(ka, kb)


def nmi(labels_true, labels_pred, average="arithmetic") -> float:
    """Normalised mutual information, ``I(U; V) / mean(H(U), H(V))`` in nats.

    ``average`` selects the mean: ``"arithmetic"`` (scikit-learn's default), ``"geometric"``
    (Strehl & Ghosh; the TVClust and CEC-IB papers), ``"max"`` or ``"min"``. Conventions follow
    scikit-learn: two single-cluster partitions give 1; zero mutual information gives 0.
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
    """Adjusted Rand index (Hubert & Arabie), exact integer pair counts; 1 for identical partitions."""
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
    """Pairwise precision, recall and F-measure over all ``n (n - 1) / 2`` point pairs.

    A pair is *positive* when ``labels_pred`` puts both points in one cluster, *relevant* when
    ``labels_true`` does. ``precision = TP / #positive``, ``recall = TP / #relevant``,
    ``F = 2 TP / (#positive + #relevant)`` (the TVClust paper's F; see reference/README "Metrics").
    An empty denominator means nothing can be wrong: precision (recall, F) is then 1.
    """
    c = contingency(labels_true, labels_pred)
    tp, same_true, same_pred = _pair_counts(c)
    precision = tp / same_pred if same_pred else 1.0
    recall = tp / same_true if same_true else 1.0
    f = 2.0 * tp / (same_pred + same_true) if (same_pred + same_true) else 1.0
    return float(precision), float(recall), float(f)


def accuracy(labels_true, labels_pred) -> float:
    """Clustering accuracy: share of points correct under the best one-to-one cluster-to-class map.

    The map maximises the matched counts of the contingency table (Hungarian algorithm, SciPy's
    ``linear_sum_assignment``). Surplus clusters (or classes) stay unmatched and count as errors.
    """
    c = contingency(labels_true, labels_pred)
    if c.size == 0:
        return 1.0
    r, k = linear_sum_assignment(c, maximize=True)
    return float(c[r, k].sum() / c.sum())


def purity(labels_true, labels_pred) -> float:
    """Purity: each predicted cluster votes for its majority class; share of points in the majority."""
    c = contingency(labels_true, labels_pred)
    if c.size == 0:
        return 1.0
    return float(c.max(axis=0).sum() / c.sum())


# --------------------------------------------------------------------------- JAX (jittable)


@partial(jax.jit, static_argnames=("n_labels",))
def contingency_jax(labels_true, labels_pred, n_labels: int):
    """``(n_labels, n_labels)`` contingency table via one-hot products; out-of-range labels ignored."""
    dtype = jnp.zeros((), float).dtype  # float64 under x64, float32 otherwise
    a = jax.nn.one_hot(labels_true, n_labels, dtype=dtype)
    b = jax.nn.one_hot(labels_pred, n_labels, dtype=dtype)
    keep = (a.sum(-1) * b.sum(-1))[:, None]  # drop a point that is out of range in either labelling
    return (a * keep).T @ b


@partial(jax.jit, static_argnames=("n_labels", "average"))
def nmi_jax(labels_true, labels_pred, n_labels: int, average: str = "arithmetic"):
    """Jittable :func:`nmi` (same conventions); labels must lie in ``[0, n_labels)``."""
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
    norm = {"arithmetic": 0.5 * (hu + hv), "geometric": jnp.sqrt(hu * hv),
            "max": jnp.maximum(hu, hv), "min": jnp.minimum(hu, hv)}[average]
    ku, kv = (u > 0).sum(), (v > 0).sum()
    both_single = (ku <= 1) & (kv <= 1)
    # one side unsplit means I = 0 exactly; round-off below 1e-12 is treated as 0 too
    tiny = (ku <= 1) | (kv <= 1) | (mi <= 1e-12 * jnp.maximum(1.0, jnp.log(n)))
    safe = jnp.where(norm > 0, norm, 1.0)
    return jnp.where(both_single, 1.0, jnp.where(tiny, 0.0, mi / safe))


@partial(jax.jit, static_argnames=("n_labels",))
def ari_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`ari`; labels must lie in ``[0, n_labels)``."""
    c = contingency_jax(labels_true, labels_pred, n_labels)
    n = c.sum()
    comb2 = lambda t: t * (t - 1) / 2
    tp = comb2(c).sum()
    same_true = comb2(c.sum(1)).sum()
    same_pred = comb2(c.sum(0)).sum()
    total = comb2(n)
    fp, fn = same_pred - tp, same_true - tp
    tn = total - tp - fp - fn
    den = (tp + fn) * (fn + tn) + (tp + fp) * (fp + tn)
    perfect = (fn == 0) & (fp == 0)
    return jnp.where(perfect, 1.0, 2.0 * (tp * tn - fn * fp) / jnp.where(perfect, 1.0, den))


@partial(jax.jit, static_argnames=("n_labels",))
def pairwise_f1_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`pairwise_f1`; returns ``(precision, recall, f)`` as a tuple of scalars."""
    c = contingency_jax(labels_true, labels_pred, n_labels)
    comb2 = lambda t: t * (t - 1) / 2
    tp = comb2(c).sum()
    st = comb2(c.sum(1)).sum()
    sp = comb2(c.sum(0)).sum()
    div = lambda a, b: jnp.where(b > 0, a / jnp.where(b > 0, b, 1.0), 1.0)
    return div(tp, sp), div(tp, st), div(2.0 * tp, sp + st)


@partial(jax.jit, static_argnames=("n_labels",))
def purity_jax(labels_true, labels_pred, n_labels: int):
    """Jittable :func:`purity`; labels must lie in ``[0, n_labels)``."""
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
        raise ValueError("`labels_true` and `labels_pred` must have the same length, "
                         f"got {len(a)} and {len(b)}.")
    return a, b


def _pair_counts(c):
    """Exact integer pair counts ``(TP, #same-true pairs, #same-pred pairs)`` from a contingency table."""
    c = c.astype(np.int64)
    comb2 = lambda t: int((t * (t - 1) // 2).sum())
    return comb2(c), comb2(c.sum(axis=1)), comb2(c.sum(axis=0))


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
