r"""The posterior predictive of a fitted mixture at new points: densities, cluster probabilities, draws.

Given kept draws :math:`s = 1..S` of a partition :math:`z^{(s)}` of the training points (cluster
parameters integrated out) or of a variational posterior, a new point :math:`x` joins slot :math:`k` of
draw :math:`s` with the joint weight

.. math::

    \ell_{sk}(x) = \log w_{sk} + \log p(x \mid \text{slot } k \text{ of draw } s),

the second term the conjugate family's predictive of the slot's points (for
:class:`~ppclust.families.GaussianNIW` the Student-t of :meth:`~ppclust.families.GaussianNIW.log_predictive`,
the prior predictive for an empty slot) and the weights those of the partition prior:

* Dirichlet process (``partition="dp"``): :math:`w_{sk} = n_{sk} / (n + \alpha_s)` for the occupied
  clusters and :math:`\alpha_s / (n + \alpha_s)` for one new cluster;
* ``K`` components under a symmetric Dirichlet(``alpha / K``) (``partition="finite"``):
  :math:`w_{sk} = (n_{sk} + \alpha_s / K) / (n + \alpha_s)`.

The log posterior predictive density is :math:`\log \frac1S \sum_s \sum_k e^{\ell_{sk}(x)}`
(:func:`log_density`). The probability that :math:`x` belongs to cluster :math:`j` of a reference
partition (the point estimate) is, with :math:`M_{skj}` the share of slot :math:`k`'s training points in
reference cluster :math:`j` (:func:`overlap_map`; a new cluster maps to an extra last column),

.. math::

    P(j \mid x) = \frac{\sum_s \sum_k e^{\ell_{sk}(x)} M_{skj}}{\sum_s \sum_k e^{\ell_{sk}(x)}},

the draws weighted by how well each explains :math:`x` (:func:`cluster_probabilities`). Links between a
new point and training points multiply :math:`e^{\ell_{sk}}` by their likelihood under the link noise
model (:func:`link_log_tilt`). Everything is computed over chunks of new rows: memory
O(chunk x slots x draws), never training x new.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np

from ppclust._buckets import bucket_size, pad_rows

__all__ = [
    "CHUNK_ROWS",
    "slot_log_joint",
    "draws_log_joint",
    "log_density",
    "overlap_map",
    "cluster_probabilities",
    "link_log_tilt",
    "sample_points",
]

#: New rows per chunk of :func:`draws_log_joint` (memory O(CHUNK_ROWS x slots x draws)).
CHUNK_ROWS = 256


def slot_log_joint(family, stats, log_w, x_new):
    r""":math:`\ell_k(x) = \log w_k + \log p(x \mid \text{slot } k)` of every new row and slot (one draw).

    Parameters
    ----------
    family : conjugate family
        E.g. :class:`ppclust.families.GaussianNIW`; its ``log_predictive(stats, x)`` gives the slots'
        predictive densities.
    stats : family statistics
        Statistics of the K slots (``family.stats`` or ``family.soft_stats``).
    log_w : array of shape (K,)
        Log weight of each slot (``-inf`` for slots that cannot take the point).
    x_new : array of shape (m, d)
        New points.

    Returns
    -------
    array of shape (m, K)

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(1), jnp.asarray(1.0), jnp.asarray(3.0), jnp.eye(1))
    ...     st = fam.stats(jnp.array([[0.0], [0.2], [5.0]]), jnp.array([0, 0, 1]), 2)
    ...     out = np.asarray(slot_log_joint(fam, st, jnp.log(jnp.array([2 / 3, 1 / 3])), jnp.array([[0.1]])))
    >>> out.shape, int(out.argmax())
    ((1, 2), 0)
    """
    return log_w[None, :] + jax.vmap(lambda x: family.log_predictive(stats, x))(x_new)


@partial(jax.jit, static_argnames=("n_slots", "partition"))
def _draws_chunk(family, x_train, labels, alpha, x_new, n, *, n_slots, partition):
    """(S, m, n_slots) log joints of one chunk of new rows; the draws visited by ``lax.map``. ``x_train``
    and ``labels`` may carry padding rows (label ``n_slots``: counted in no slot); ``n`` the real rows."""

    def one(args):
        z, a = args
        stats = family.stats(x_train, z, n_slots)
        if partition == "dp":
            empty = stats.n == 0
            first = empty & (jnp.cumsum(empty) == 1)
            log_w = jnp.where(empty, jnp.where(first, jnp.log(a), -jnp.inf), jnp.log(stats.n))
        else:
            log_w = jnp.log(stats.n + a / n_slots)
        return slot_log_joint(family, stats, log_w - jnp.log(n + a), x_new)

    return jax.lax.map(one, (labels, alpha))


def draws_log_joint(family, x_train, labels, alpha, x_new, *, partition="dp", n_slots=None):
    r""":math:`\ell_{sk}(x)` of every draw, slot and new row, from the partition draws (module docstring).

    Parameters
    ----------
    family : conjugate family
        The cluster model the draws were sampled under.
    x_train : array of shape (n, d)
        The training points as the sampler saw them.
    labels : int array of shape (S, n)
        Partition draws. ``partition="dp"``: compact labels 0..K_s-1 per draw
        (:func:`ppclust.partition.compact_labels`); ``"finite"``: component ids in [0, ``n_slots``).
    alpha : float or array of shape (S,)
        DP concentration per draw, or the total Dirichlet concentration ``K a`` (``"finite"``).
    x_new : array of shape (m, d)
        New points, visited in chunks of :data:`CHUNK_ROWS`.
    partition : {"dp", "finite"}, default="dp"
        Weights of the module docstring.
    n_slots : int or None, default=None
        Slots per draw: ``"finite"`` needs the number of components; ``"dp"`` defaults to a bucket above
        the largest number of clusters (one slot at least stays free: the new cluster).

    Returns
    -------
    ndarray of shape (S, m, n_slots), float64

    Examples
    --------
    >>> import numpy as np, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(1), jnp.asarray(1.0), jnp.asarray(3.0), jnp.eye(1))
    ...     lj = draws_log_joint(fam, np.array([[0.0], [0.2], [5.0]]), np.array([[0, 0, 1], [0, 0, 0]]),
    ...                          1.0, np.array([[0.1], [9.0]]))
    >>> lj.shape[:2], bool(np.isfinite(lj[0, 0, 2]) and np.isinf(lj[0, 0, 3]))
    ((2, 2), True)
    """
    labels = np.asarray(labels, np.int32)
    S = labels.shape[0]
    if n_slots is None:
        n_slots = bucket_size(int(labels.max()) + 2, minimum=8)
    alpha = np.broadcast_to(np.asarray(alpha, np.float64), (S,))
    x_new = np.asarray(x_new, np.float64)
    m = x_new.shape[0]
    chunk = min(CHUNK_ROWS, bucket_size(max(m, 1), minimum=8))
    # the training rows padded to their bucket (labels n_slots: no slot): one program per bucket
    n = labels.shape[1]
    n_pad = bucket_size(n)
    zl = np.full((S, n_pad), n_slots, np.int32)
    zl[:, :n] = labels
    xt, zl, al = jax.device_put((pad_rows(np.asarray(x_train, np.float64), n_pad)[0], zl, alpha))
    out = np.empty((S, m, n_slots))
    for lo in range(0, m, chunk):
        part = x_new[lo : lo + chunk]
        block = _draws_chunk(
            family,
            xt,
            zl,
            al,
            jax.device_put(pad_rows(part, chunk)[0]),
            np.float64(n),
            n_slots=n_slots,
            partition=partition,
        )
        out[:, lo : lo + len(part)] = np.asarray(block)[:, : len(part)]
    return out


def log_density(log_joint) -> np.ndarray:
    r"""Log posterior predictive density :math:`\log \frac1S \sum_s \sum_k e^{\ell_{sk}(x)}` per new row.

    Parameters
    ----------
    log_joint : array of shape (S, m, K)
        :func:`draws_log_joint` (or :func:`slot_log_joint` with a leading draw axis).

    Returns
    -------
    ndarray of shape (m,)

    Examples
    --------
    >>> import numpy as np
    >>> log_density(np.log([[[0.2, 0.1]], [[0.4, 0.1]]])).round(4).tolist()  # log mean(0.3, 0.5)
    [-0.9163]
    """
    lj = np.asarray(log_joint, np.float64)
    top = lj.max(axis=(0, 2))
    top = np.where(np.isfinite(top), top, 0.0)
    return top + np.log(np.exp(lj - top[None, :, None]).sum((0, 2))) - np.log(lj.shape[0])


def overlap_map(draws, reference, n_slots) -> np.ndarray:
    r""":math:`M_{skj}`: the share of slot :math:`k`'s points (draw :math:`s`) in reference cluster :math:`j`.

    Empty slots (a new cluster) map to an extra last column ``K_ref``, so every row of ``M[s]`` sums to 1.

    Parameters
    ----------
    draws : int array of shape (S, n)
        Partition draws (slot ids in [0, ``n_slots``)).
    reference : int array of shape (n,)
        Reference labels 0..K_ref-1 (e.g. ``labels_``).
    n_slots : int
        Slots per draw.

    Returns
    -------
    ndarray of shape (S, n_slots, K_ref + 1)

    Examples
    --------
    >>> overlap_map([[0, 0, 1]], [0, 1, 1], 3)[0].tolist()
    [[0.5, 0.5, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    draws = np.asarray(draws, np.int64)
    ref = np.asarray(reference, np.int64)
    S = draws.shape[0]
    k_ref = int(ref.max()) + 1
    counts = np.zeros((S, n_slots, k_ref + 1))
    np.add.at(counts, (np.repeat(np.arange(S), draws.shape[1]), draws.ravel(), np.tile(ref, S)), 1.0)
    size = counts.sum(-1, keepdims=True)
    counts[..., -1] = np.where(size[..., 0] == 0, 1.0, 0.0)
    return counts / np.maximum(counts.sum(-1, keepdims=True), 1.0)


def cluster_probabilities(log_joint, mapping=None) -> np.ndarray:
    r""":math:`P(j \mid x)` of the module docstring: the draws' slot weights mapped onto reference clusters.

    Parameters
    ----------
    log_joint : array of shape (S, m, K)
        :func:`draws_log_joint`, tilted by :func:`link_log_tilt` when there are links.
    mapping : array of shape (S, K, C) or None, default=None
        :func:`overlap_map`; None: the slots are the clusters (``C = K``, identified components).

    Returns
    -------
    ndarray of shape (m, C)
        Rows sum to 1.

    Examples
    --------
    >>> import numpy as np
    >>> cluster_probabilities(np.log([[[0.3, 0.1]]])).round(2).tolist()
    [[0.75, 0.25]]
    """
    lj = np.asarray(log_joint, np.float64)
    top = lj.max(axis=(0, 2), keepdims=True)
    w = np.exp(lj - np.where(np.isfinite(top), top, 0.0))  # (S, m, K)
    prob = w.sum(0) if mapping is None else np.einsum("smk,skc->mc", w, np.asarray(mapping))
    return prob / prob.sum(1, keepdims=True)


def link_log_tilt(draws, n_new, n_slots, links, p, q) -> np.ndarray:
    r"""Log likelihood of links between new and training points for every draw, new row and slot.

    A may-link from new point :math:`b` to training point :math:`j` contributes :math:`\log p_s` to the
    slot :math:`z^{(s)}_j` and :math:`\log(1 - q_s)` to every other slot; a may-not-link
    :math:`\log(1 - p_s)` and :math:`\log q_s` (TVClust's link model, Khashabi et al. 2015, eq. 8).

    Parameters
    ----------
    draws : int array of shape (S, n)
        Partition draws (slot ids).
    n_new : int
        Number of new rows.
    n_slots : int
        Slots per draw.
    links : tuple (pairs, sign)
        ``pairs`` of shape (L, 2) as (new row, training row), ``sign`` of shape (L,): +1 may-link, -1
        may-not-link.
    p, q : float or array of shape (S,)
        Link sensitivity and specificity per draw, in (0, 1).

    Returns
    -------
    ndarray of shape (S, n_new, n_slots)

    Examples
    --------
    >>> t = link_log_tilt([[0, 0, 1]], 1, 2, ([[0, 2]], [1]), 0.9, 0.8)
    >>> np.exp(t).round(2).tolist()
    [[[0.2, 0.9]]]
    """
    draws = np.asarray(draws, np.int64)
    S = draws.shape[0]
    pairs = np.asarray(links[0], np.int64).reshape(-1, 2)
    sign = np.asarray(links[1]).reshape(-1)
    p = np.broadcast_to(np.asarray(p, np.float64), (S,))
    q = np.broadcast_to(np.asarray(q, np.float64), (S,))
    out = np.zeros((S, n_new, n_slots))
    slots = np.arange(n_slots)
    for (b, j), sgn in zip(pairs, sign, strict=True):
        same = (slots[None, :] == draws[:, j][:, None]).astype(bool)  # (S, n_slots)
        if sgn > 0:
            out[:, b] += np.where(same, np.log(p)[:, None], np.log1p(-q)[:, None])
        else:
            out[:, b] += np.where(same, np.log1p(-p)[:, None], np.log(q)[:, None])
    return out


def sample_points(key, family, stats, log_w, n_samples):
    r"""Points drawn from one draw's predictive mixture: a slot by its weight, its parameters from the
    family's posterior (:meth:`~ppclust.families.GaussianNIW.sample_posterior`), the point from the
    Gaussian.

    Parameters
    ----------
    key : jax.random key
        Seeds every draw.
    family : GaussianNIW
        The cluster model.
    stats : Stats
        Statistics of the K slots.
    log_w : array of shape (K,)
        Log slot weights (normalised or not).
    n_samples : int
        Points to draw.

    Returns
    -------
    x : ndarray of shape (n_samples, d)
    slot : ndarray of shape (n_samples,)

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(4.0), jnp.eye(2))
    ...     st = fam.stats(jnp.zeros((3, 2)), jnp.array([0, 0, 0]), 2)
    ...     x, slot = sample_points(jax.random.key(0), fam, st, jnp.log(jnp.array([0.75, 0.25])), 5)
    >>> x.shape, slot.shape
    ((5, 2), (5,))
    """
    k_slot, k_par, k_eps = jax.random.split(key, 3)
    slot = np.asarray(jax.random.categorical(k_slot, jnp.asarray(log_w), shape=(n_samples,)))
    d = stats.s.shape[-1]
    eps = np.asarray(jax.random.normal(k_eps, (n_samples, d), jnp.float64))
    x = np.empty((n_samples, d))
    for i, k in enumerate(slot):
        par = family.sample_posterior(jax.random.fold_in(k_par, i), stats)
        mean, fac = np.asarray(par.mean[k]), np.asarray(par.prec_factor[k])
        if fac.ndim == 2:  # A^T A = Sigma^-1: x = mu + A^-1 eps has covariance Sigma
            x[i] = mean + np.linalg.solve(fac, eps[i])
        else:
            x[i] = mean + eps[i] / fac
    return x, slot
