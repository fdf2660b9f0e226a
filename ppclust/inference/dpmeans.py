r"""DP-means and RDP-means (Algorithm 1 of Khashabi et al. 2015) as pure, jitted solvers.

Kept whole (over 700 lines): the sequential and the delayed (data-parallel) passes, the annealing of the
link weights and the driver share one state, one configuration and one result type.

RDP-means is the small-variance limit of TVClust (spec ``tvclust-rdpmeans.md`` Section 3). Point
:math:`i` goes to

.. math::

    z_i \leftarrow \arg\min\{D(x_i,\mu_1)-\xi_1 f^i_1+\xi_2 s^i_1,\ \dots,\
                             D(x_i,\mu_K)-\xi_1 f^i_K+\xi_2 s^i_K,\ \lambda\},

where :math:`f^i_k` / :math:`s^i_k` are the (weighted) numbers of may-link / may-not-link
neighbours of :math:`i` currently labelled :math:`k` (eq. 12), and choosing :math:`\lambda` opens a
new cluster at :math:`x_i`. With :math:`\xi_1=\xi_2=0` this is DP-means (Kulis & Jordan 2012).
The objective that the sweep + mean step never increases at fixed :math:`\xi` (spec 3.5, each pair
counted once; the paper's eq. (20) double-counts pairs) is

.. math::

    J(z,\mu)=\sum_i D(x_i,\mu_{z_i})+\lambda K-\xi_1N_{11}(z)+\xi_2N_{01}(z).

Implementation
--------------
* Fixed capacity ``k_max`` slots; the active clusters always occupy slots ``0..K-1`` (after each
  update step empty clusters are deleted and the rest compacted *stably*, so slot order equals the
  order of creation, as in the authors' code).
* One point costs O(max_deg + k_max d): friends/strangers are counted by a scatter-add of the
  neighbour table's weights at the neighbours' current labels. No n x n matrix is ever formed.
* ``variant="sequential"`` is Algorithm 1 (Gauss-Seidel: labels and new clusters take effect at
  once). ``variant="delayed"`` is the fully parallel "delayed cluster creation" pass of Dinari &
  Freifeld (UAI 2022): every point is assigned against the labels of the previous pass, then at
  most one new cluster is opened, at the point whose best augmented cost is largest and
  :math:`\ge\lambda`. It is O(n k_max d) vectorised work per pass (fast on large n, GPU-friendly),
  but with links its simultaneous moves carry no monotonicity guarantee.
* ``compat=True`` follows the authors' Octave code (``rdpmeans.m`` / ``dpmeans.m``): plain
  Euclidean distance summed left to right, last minimum wins ties, cost ``D - xi (f - s)``,
  sequential centroid sums in index order, the stale relabelling when two clusters empty in one
  step, and the stopping rule "centroid matrix unchanged for more than ``patience`` consecutive
  sweeps". With the logged random draws it replays the reference runs bit for bit.

Inputs are assumed validated (the estimators in ``ppclust.estimators.dpmeans`` do that).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ppclust._buckets import bucket_size, pad_rows
from ppclust._jax import x64
from ppclust.families import kl_divergence, sq_euclidean
from ppclust.sideinfo import NeighbourTable, SideInfo, link_counts, table_within_counts

__all__ = [
    "NeighbourTable",
    "DPMeansState",
    "DPMeansInfo",
    "DPMeansAlgorithm",
    "build",
    "DPMeansConfig",
    "DPMeansStatic",
    "DPMeansSchedule",
    "DPMeansResult",
    "neighbour_table",
    "fit",
    "fit_restarts",
    "fit_process_rows",
    "objective",
    "divergence_matrix",
    "lambda_from_k",
    "kth_farthest_from_mean",
    "farthest_first",
]

LABEL_DTYPE = jnp.int32


class DPMeansResult(NamedTuple):
    """Output of :func:`fit`.

    Attributes
    ----------
    labels : jax.Array of int32 of shape (n,)
        Cluster of every point, in ``0..n_clusters-1``.
    centers : jax.Array of shape (k_max, d)
        Centroids (rows from ``n_clusters`` on are junk).
    n_clusters : jax.Array of int of shape ()
        Number of clusters.
    objective : jax.Array of shape ()
        J of Section 3.5 at the last xi.
    n_iter : jax.Array of int of shape ()
        Sweeps done.
    converged : jax.Array of bool of shape ()
        The stopping rule was met before ``max_iter``.
    overflow : jax.Array of bool of shape ()
        ``k_max`` was exhausted (the caller must raise).
    xi_trace : jax.Array of shape (max_iter,)
        The xi used by each sweep (NaN beyond ``n_iter``, as the traces below).
    k_trace : jax.Array of shape (max_iter,)
        K at the start of each sweep.
    objective_before : jax.Array of shape (max_iter,)
        J(xi_t) before each sweep.
    objective_trace : jax.Array of shape (max_iter,)
        J(xi_t) after each sweep's update step.

    Examples
    --------
    >>> DPMeansResult._fields[:3]
    ('labels', 'centers', 'n_clusters')
    """

    labels: jax.Array
    centers: jax.Array
    n_clusters: jax.Array
    objective: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    overflow: jax.Array
    xi_trace: jax.Array
    k_trace: jax.Array
    objective_before: jax.Array
    objective_trace: jax.Array


class DPMeansConfig(NamedTuple):
    """Options of one DP-means / RDP-means run (:func:`fit`), a frozen, hashable value.

    Parameters
    ----------
    xi0, xi_rate, xi_ratio, xi_max : float, default=1e-3, 2.0, 1.0, 1e12
        Link-weight schedule: sweep ``t`` (0-based) uses ``xi1 = min(xi0 * xi_rate**t, xi_max)`` and
        ``xi2 = xi_ratio * xi1`` (Khashabi et al. 2015, Algorithm 1); with ``xi_first_zero`` sweep 0
        uses ``xi = 0`` (the authors' code). Traced: changing them compiles nothing new.
    k_max : int, default=64
        Cluster slot capacity; exhausting it sets ``overflow`` (the caller raises).
    max_iter : int, default=1000
        Most sweeps.
    divergence : {"sqeuclidean", "euclidean", "kl"}, default="sqeuclidean"
        ``"sqeuclidean"`` (Bregman), ``"euclidean"`` (the authors' code), ``"kl"`` (rows of x and the
        centroids strictly positive, normalised histograms).
    tie : {"first", "last"}, default="first"
        Lowest slot wins a tie, or the last (the authors' ``>=`` scan).
    compat : bool, default=False
        Follow the authors' Octave code (module docstring); pass ``divergence="euclidean",
        tie="last"`` too for a faithful replay.
    variant : {"sequential", "delayed"}, default="sequential"
        Algorithm 1 (Gauss-Seidel), or the parallel pass with at most one new cluster per pass.
    order : {"random", "fixed", "given"}, default="random"
        Visiting order of a sequential sweep: a new permutation each sweep, ``0..n-1``, or
        ``orders[t]`` (:func:`fit`'s ``orders``).
    init : {"bbox_random", "mean"}, default="bbox_random"
        The first centroid: a uniform point of the data's bounding box, or the data mean.
    patience : int, default=20
        Stop once the partition (compat: the centroid matrix) has been unchanged for ``patience``
        consecutive sweeps (compat: ``patience`` earlier unchanged sweeps plus this one).
    xi_first_zero : bool, default=True
        Sweep 0 runs without links (the authors' schedule).

    Examples
    --------
    >>> DPMeansConfig(k_max=8, variant="delayed").k_max
    8
    """

    xi0: float = 1e-3
    xi_rate: float = 2.0
    xi_ratio: float = 1.0
    xi_max: float = 1e12
    k_max: int = 64
    max_iter: int = 1000
    divergence: str = "sqeuclidean"
    tie: str = "first"
    compat: bool = False
    variant: str = "sequential"
    order: str = "random"
    init: str = "bbox_random"
    patience: int = 20
    xi_first_zero: bool = True


class DPMeansStatic(NamedTuple):
    """The compile-time part of a :class:`DPMeansConfig` (one static argument of the jitted loop), plus
    ``equal_xi`` (``xi_ratio == 1``: the authors' ``xi (f - s)`` form) and ``use_links`` (a table with
    non-zero weights).

    Attributes
    ----------
    k_max, max_iter, divergence, tie, compat, variant, order, patience, xi_first_zero
        As :class:`DPMeansConfig`.
    equal_xi : bool
        ``xi_ratio == 1``: the link term in the authors' ``xi (f - s)`` form.
    use_links : bool
        The table holds links with non-zero weights.

    Examples
    --------
    >>> DPMeansStatic.from_config(DPMeansConfig(), use_links=False).equal_xi
    True
    """

    k_max: int
    max_iter: int
    divergence: str
    tie: str
    compat: bool
    variant: str
    order: str
    patience: int
    xi_first_zero: bool
    equal_xi: bool
    use_links: bool

    @classmethod
    def from_config(cls, config: DPMeansConfig, *, use_links: bool) -> DPMeansStatic:
        return cls(
            int(config.k_max),
            int(config.max_iter),
            config.divergence,
            config.tie,
            bool(config.compat),
            config.variant,
            config.order,
            int(config.patience),
            bool(config.xi_first_zero),
            bool(config.xi_ratio == 1.0),
            bool(use_links),
        )


class DPMeansSchedule(NamedTuple):
    """The traced numbers of a run: new-cluster penalty ``lam`` and the link-weight schedule
    (:class:`DPMeansConfig`), as arrays of the data's dtype.

    Attributes
    ----------
    lam : jax.Array of shape ()
        New-cluster penalty lambda, > 0.
    xi0, xi_rate, xi_ratio, xi_max : jax.Array of shape ()
        The link-weight schedule of :class:`DPMeansConfig`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(DPMeansSchedule.from_config(2.0, DPMeansConfig(), jnp.float32).lam)
    2.0
    """

    lam: jax.Array
    xi0: jax.Array
    xi_rate: jax.Array
    xi_ratio: jax.Array
    xi_max: jax.Array

    @classmethod
    def from_config(cls, lam, config: DPMeansConfig, dtype) -> DPMeansSchedule:
        return cls(
            jnp.asarray(lam, dtype),
            jnp.asarray(config.xi0, dtype),
            jnp.asarray(config.xi_rate, dtype),
            jnp.asarray(config.xi_ratio, dtype),
            jnp.asarray(config.xi_max, dtype),
        )


class _Shard(NamedTuple):
    """This device's rows in the data-parallel form: data, weights (0 on padding), first global row, and
    the mesh axis."""

    x: jax.Array
    w: jax.Array
    offset: jax.Array
    axis: str


# ------------------------------------------------------------------------------------------------
# neighbour table


def neighbour_table(n, pairs=None, sign=None, weight=None, width=None) -> NeighbourTable:
    """Padded neighbour table of unique pairs ``(m, 2)`` with signs +1/-1 (via :class:`SideInfo`).

    Parameters
    ----------
    n : int
        Number of points.
    pairs : array-like of int of shape (m, 2), default=None
        Unique linked pairs; None or empty gives a table without links.
    sign : array-like of shape (m,), default=None
        Signs (any positive or negative number, read through ``np.sign``).
    weight : float or array-like of shape (m,), default=None
        Positive link weights (None: 1).
    width : int, default=None
        Pad to this many columns (at least the maximum degree).

    Examples
    --------
    >>> import numpy as np
    >>> t = neighbour_table(3, np.array([[0, 1]]), np.array([1]))
    >>> t.nbr.shape[0]
    3
    """
    if pairs is None or len(pairs) == 0:
        return SideInfo(n).neighbour_table(width)
    return SideInfo.from_pairs(
        n, pairs, np.sign(sign).astype(np.int8), weight, on_conflict="keep"
    ).neighbour_table(width)


# ------------------------------------------------------------------------------------------------
# divergences


def _point_divergence(x, mu, divergence, compat):
    """D(x, mu_k) for one point x (d,) against all slots mu (k_max, d) -> (k_max,): the family's Bregman
    divergence (:func:`ppclust.families.sq_euclidean`, coordinates summed in the authors' order when
    ``compat``; :func:`ppclust.families.kl_divergence`), "euclidean" its square root."""
    if divergence in ("sqeuclidean", "euclidean"):
        sq = sq_euclidean(x, mu, ordered=compat)
        return jnp.sqrt(sq) if divergence == "euclidean" else sq
    if divergence == "kl":
        return kl_divergence(x, mu)
    raise ValueError(f"unknown divergence {divergence!r}")


def divergence_matrix(x, mu, divergence="sqeuclidean"):
    """D(x_i, mu_k) for all points and slots, (n, k_max), via matrix products (no (n, k, d) array).

    Parameters
    ----------
    x : array of shape (n, d)
        Points.
    mu : array of shape (k_max, d)
        Centroids.
    divergence : {"sqeuclidean", "euclidean", "kl"}, default="sqeuclidean"
        The divergence (``"kl"``: strictly positive normalised histograms).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> divergence_matrix(jnp.asarray([[0.0], [2.0]]), jnp.asarray([[0.0]])).tolist()
    [[0.0], [4.0]]
    """
    if divergence in ("sqeuclidean", "euclidean"):
        sq = sq_euclidean(x, mu, expanded=True)
        return jnp.sqrt(sq) if divergence == "euclidean" else sq
    if divergence == "kl":
        return kl_divergence(x, mu, expanded=True)
    raise ValueError(f"unknown divergence {divergence!r}")


# ------------------------------------------------------------------------------------------------
# objective


def objective(x, z, mu, n_clusters, lam, xi1, xi2, table: NeighbourTable, divergence="sqeuclidean", w=None):
    """J(z, mu) of spec Section 3.5 (pairs counted once); ``n_clusters`` slots are counted in K; ``w``
    (optional, (n,)): 0 on padding rows, which then add nothing (their table rows carry no links).

    Parameters
    ----------
    x : array of shape (n, d)
        Points.
    z : array of int of shape (n,)
        Cluster of each point.
    mu : array of shape (k_max, d)
        Centroids.
    n_clusters : int or int scalar
        Number of clusters counted in K.
    lam : float
        New-cluster penalty lambda.
    xi1 : float
        Weight of a may-link kept inside a cluster.
    xi2 : float
        Weight of a may-not-link violated inside a cluster.
    table : NeighbourTable
        The links.
    divergence : {"sqeuclidean", "euclidean", "kl"}, default="sqeuclidean"
        The divergence.
    w : array of shape (n,) or None, default=None
        Row weights: 1 on real rows, 0 on bucket padding (which then adds nothing); None: all 1.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> x = jnp.asarray([[0.0], [2.0]])
    >>> float(objective(x, jnp.asarray([0, 0]), jnp.asarray([[1.0]]), 1, 3.0, 0.0, 0.0,
    ...                 NeighbourTable.empty(2)))
    5.0
    """
    x, z, mu = jnp.asarray(x), jnp.asarray(z), jnp.asarray(mu)
    table = NeighbourTable(*(jnp.asarray(a) for a in table))
    d_own = jax.vmap(lambda xi_, k: _point_divergence(xi_, mu[k][None, :], divergence, False)[0])(x, z)
    if w is not None:
        d_own = jnp.where(w > 0, d_own, 0.0)
    n11, n01 = table_within_counts(z, z[table.nbr], table.sgn, table.wgt)
    return jnp.sum(d_own) + lam * n_clusters - xi1 * n11 + xi2 * n01


# ------------------------------------------------------------------------------------------------
# the solver


def _link_score(z_nbr, table_sgn, table_wgt, k_max, xi1, xi2, equal_xi):
    """Per-slot link term xi1 f_k - xi2 s_k of points from their neighbour-table rows (..., max_deg)
    (compat form xi (f - s) when xi1 == xi2); the counts are :func:`ppclust.sideinfo.link_counts`."""
    f, s, _, _, _ = link_counts(z_nbr, table_sgn, table_wgt, k_max)
    if equal_xi:
        return xi1 * (f - s)
    return xi1 * f - xi2 * s


def _argmin(a, tie):
    if tie == "last":
        return (a.shape[0] - 1 - jnp.argmin(a[::-1])).astype(LABEL_DTYPE)
    return jnp.argmin(a).astype(LABEL_DTYPE)


def _sequential_sweep(x, z, mu, k_count, order, lam, xi1, xi2, table, cfg: DPMeansStatic, n_valid):
    """Algorithm 1's sweep over the first ``n_valid`` entries of ``order`` (the padding rows sit after
    them and are never visited)."""
    k_max = mu.shape[0]
    slots = jnp.arange(k_max)

    def body(p, carry):
        z, mu, k_count, overflow = carry
        i = order[p]
        xi_ = x[i]
        a = _point_divergence(xi_, mu, cfg.divergence, cfg.compat)
        if cfg.use_links:
            a = a - _link_score(z[table.nbr[i]], table.sgn[i], table.wgt[i], k_max, xi1, xi2, cfg.equal_xi)
        a = jnp.where(slots < k_count, a, jnp.inf)
        k = _argmin(a, cfg.tie)
        open_new = ~(a[k] < lam)
        full = k_count >= k_max
        do_open = open_new & ~full
        k_new = jnp.where(do_open, k_count.astype(LABEL_DTYPE), k)
        mu = jnp.where(do_open, mu.at[jnp.minimum(k_count, k_max - 1)].set(xi_), mu)
        z = z.at[i].set(k_new)
        return z, mu, k_count + do_open.astype(k_count.dtype), overflow | (open_new & full)

    return lax.fori_loop(0, n_valid, body, (z, mu, k_count, jnp.array(False)))


def _best_assignment(x, z, mu, k_count, xi1, xi2, table, cfg: DPMeansStatic):
    """Every point's best live cluster under D - xi1 f + xi2 s (all points at once) and that cost."""
    k_max = mu.shape[0]
    a = divergence_matrix(x, mu, cfg.divergence)
    if cfg.use_links:
        a = a - _link_score(z[table.nbr], table.sgn, table.wgt, k_max, xi1, xi2, cfg.equal_xi)
    a = jnp.where(jnp.arange(k_max)[None, :] < k_count, a, jnp.inf)
    k = jax.vmap(lambda r: _argmin(r, cfg.tie))(a)
    return k, jnp.take_along_axis(a, k[:, None].astype(jnp.int32), axis=1)[:, 0]


def _delayed_sweep(x, z, mu, k_count, lam, xi1, xi2, table, cfg: DPMeansStatic, valid):
    k_max = mu.shape[0]
    k, best = _best_assignment(x, z, mu, k_count, xi1, xi2, table, cfg)
    best = jnp.where(valid, best, -jnp.inf)  # padding rows never open a cluster
    worst = jnp.argmax(best)
    open_new = ~(best[worst] < lam)
    full = k_count >= k_max
    do_open = open_new & ~full
    z = jnp.where(do_open, k.at[worst].set(k_count.astype(LABEL_DTYPE)), k)
    mu = jnp.where(do_open, mu.at[jnp.minimum(k_count, k_max - 1)].set(x[worst]), mu)
    return z, mu, k_count + do_open.astype(k_count.dtype), open_new & full


def _delayed_sweep_sharded(shard: _Shard, z_all, mu, k_count, lam, xi1, xi2, table, cfg: DPMeansStatic):
    """:func:`_delayed_sweep` on this device's rows (``shard.x``, ``shard.w``, ``table``: rows
    ``shard.offset..``) inside ``shard_map``. ``z_all`` is the replicated label vector of all (padded)
    points; returns the new one. The opening point is the global first argmax of the best augmented cost
    (as ``jnp.argmax``)."""
    x, w, offset, axis = shard
    k_max, n = mu.shape[0], x.shape[0]
    # neighbour labels: table.nbr holds global indices into the replicated labels z_all
    k, best = _best_assignment(x, z_all, mu, k_count, xi1, xi2, table, cfg)
    best = jnp.where(w > 0, best, -jnp.inf)  # padding rows never open a cluster
    i_loc = jnp.argmax(best)
    m_loc = best[i_loc]
    m = lax.pmax(m_loc, axis)
    big = jnp.iinfo(jnp.int32).max
    worst = lax.pmin(jnp.where(m_loc == m, offset + i_loc.astype(jnp.int32), big), axis)
    open_new = ~(m < lam)
    full = k_count >= k_max
    do_open = open_new & ~full
    own = (worst >= offset) & (worst < offset + n)
    j = jnp.clip(worst - offset, 0, n - 1)
    x_worst = lax.psum(jnp.where(own, x[j], 0.0), axis)  # exact: one device adds x, the others 0
    k = jnp.where(do_open & own, k.at[j].set(k_count.astype(LABEL_DTYPE)), k)
    z_new = lax.all_gather(k, axis, tiled=True)
    mu = jnp.where(do_open, mu.at[jnp.minimum(k_count, k_max - 1)].set(x_worst), mu)
    return z_new, mu, k_count + do_open.astype(k_count.dtype), open_new & full


def _update_sharded(x, w, z_all, offset, mu_old, k_count, *, axis):
    """Non-compat :func:`_update` with per-device sums reduced by ``psum``."""
    k_max = mu_old.shape[0]
    z_loc = lax.dynamic_slice(z_all, (offset,), (x.shape[0],))
    sums = lax.psum(_row_sums(x, z_loc, w, k_max), axis)
    counts = lax.psum(jax.ops.segment_sum(w, z_loc, num_segments=k_max), axis)
    nonempty = (counts > 0) & (jnp.arange(k_max) < k_count)
    means = sums / jnp.where(nonempty, counts, 1.0)[:, None]
    new_index = (jnp.cumsum(nonempty) - 1).astype(LABEL_DTYPE)
    target = jnp.where(nonempty, new_index, k_max)
    mu = jnp.zeros_like(mu_old).at[target].set(means, mode="drop")
    return new_index[z_all], mu, jnp.sum(nonempty).astype(k_count.dtype)


def _objective_sharded(x, w, z_all, offset, mu, n_clusters, lam, xi1, xi2, table, divergence, axis):
    """:func:`objective` with per-device partial sums reduced by ``psum`` (padding rows weigh 0)."""
    z = lax.dynamic_slice(z_all, (offset,), (x.shape[0],))
    d_own = jax.vmap(lambda xi_, k: _point_divergence(xi_, mu[k][None, :], divergence, False)[0])(x, z)
    n11, n01 = table_within_counts(z, z_all[table.nbr], table.sgn, table.wgt)
    d_sum, n11, n01 = lax.psum((jnp.sum(d_own * w), n11, n01), axis)
    return d_sum + lam * n_clusters - xi1 * n11 + xi2 * n01


def _row_sums(x, z, w, k_max):
    """Per-slot sums of the rows of weight ``w > 0`` (the others are dropped: their label is pointed past
    the last slot), added in row order; no weighted copy of ``x`` is formed inside the sweep loop."""
    return jax.ops.segment_sum(x, jnp.where(w > 0, z, k_max), num_segments=k_max, mode="drop")


def _update(x, z, mu_old, k_count, *, compat, w):
    """Mean step, deletion of empty clusters and stable compaction. Returns (z, mu, k_count); ``w`` is 0
    on the padding rows (all zero, at the end), which add nothing to a sum or a count."""
    k_max = mu_old.shape[0]
    if compat:  # sums accumulated point by point in index order, as rdpmeans.m does

        def acc(i, c):
            s, cnt = c
            return s.at[z[i]].add(x[i]), cnt.at[z[i]].add(1.0)

        n_valid = jnp.sum(w > 0).astype(jnp.int32)
        sums, counts = lax.fori_loop(0, n_valid, acc, (jnp.zeros_like(mu_old), jnp.zeros(k_max, x.dtype)))
    else:
        sums = _row_sums(x, z, w, k_max)
        counts = jax.ops.segment_sum(w, z, num_segments=k_max)
    nonempty = (counts > 0) & (jnp.arange(k_max) < k_count)
    means = sums / jnp.where(nonempty, counts, 1.0)[:, None]
    new_index = (jnp.cumsum(nonempty) - 1).astype(LABEL_DTYPE)
    target = jnp.where(nonempty, new_index, k_max)
    mu = jnp.zeros_like(mu_old).at[target].set(means, mode="drop")
    if compat:  # labels > c (original index) decremented once per emptied c, in order (stale labels)

        def relabel(c, zz):
            empty_c = (~nonempty[c]) & (c < k_count)
            return jnp.where(empty_c & (zz > c), zz - 1, zz)

        z = lax.fori_loop(0, k_max, relabel, z)
    else:
        z = new_index[z]
    return z, mu, jnp.sum(nonempty).astype(k_count.dtype)


def _same_partition(z_old, z_new, k_max):
    def one_way(a, b):
        hi = jnp.full(k_max, -1, b.dtype).at[a].max(b)
        lo = jnp.full(k_max, k_max, b.dtype).at[a].min(b)
        return jnp.all((hi == lo) | (hi < 0))

    return one_way(z_old, z_new) & one_way(z_new, z_old)


def _run(key, x, n_valid, table, schedule: DPMeansSchedule, mu0, orders, static: DPMeansStatic, mesh):
    """One run on bucketed rows (the first ``n_valid`` real): the initial centroid (``mu0`` None: drawn
    by ``static.init`` among the real rows), then the sweep loop, on one device or split over ``mesh``."""
    k_init, k_run = jax.random.split(key)
    valid = jnp.arange(x.shape[0]) < n_valid
    if mu0 is None:
        mu0 = _init_centre(k_init, x, static.init, valid)
    if mesh is None:
        return _loop(k_run, x, table, schedule, mu0, orders, static.run, n_valid=n_valid)
    return _run_sharded(k_run, x, valid, table, schedule, mu0, static.run, mesh)


def _run_sharded(key, x, valid, table, schedule, mu0, static: DPMeansStatic, mesh):
    """The sweep loop split over ``mesh``'s devices (rows padded to a multiple of the device count, zero
    weight); ``valid`` marks the real rows among ``x``'s positions (padding anywhere). Labels come back
    for every position, replicated."""
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS
    from ppclust._devices import pad_rows as pad_to_mesh

    size = x.shape[0]
    pad = pad_to_mesh(size, mesh) - size
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    valid = jnp.pad(valid, (0, pad))
    w = valid.astype(x.dtype)
    tp = NeighbourTable(*(jnp.pad(a, ((0, pad), (0, 0))) for a in table))  # padding rows: no links
    rep = (key, schedule, mu0, valid)

    def per_device(rep, x_loc, w_loc, t_loc):
        key, schedule, mu0, valid = rep
        return _loop(key, x_loc, t_loc, schedule, mu0, None, static, w=w_loc, axis=AXIS, valid=valid)

    res = jax.shard_map(
        per_device, mesh=mesh, in_specs=(P(), P(AXIS), P(AXIS), P(AXIS)), out_specs=P(), check_vma=False
    )(rep, xp, w, tp)
    return res._replace(labels=res.labels[:size])


def _run_rows(key, x, counts, table, schedule: DPMeansSchedule, static: DPMeansStatic, mesh):
    """One run on rows spread over processes: block ``p`` of ``x`` holds process ``p``'s ``counts[p]``
    real rows, then padding."""
    k_init, k_run = jax.random.split(key)
    block = x.shape[0] // counts.shape[0]
    pos = jnp.arange(x.shape[0])
    valid = (pos % block) < counts[pos // block]
    mu0 = _init_centre(k_init, x, static.init, valid)
    return _run_sharded(k_run, x, valid, table, schedule, mu0, static.run, mesh)


class _RunStatic(NamedTuple):
    run: DPMeansStatic
    init: str


@partial(jax.jit, static_argnames=("static", "mesh"))
def _fit_many(keys, x, n_valid, table, schedule, mu0, orders, static: _RunStatic, mesh=None):
    return jax.vmap(lambda k: _run(k, x, n_valid, table, schedule, mu0, orders, static, mesh))(keys)


@partial(jax.jit, static_argnames=("static", "mesh"))
def _fit_many_rows(keys, x, counts, table, schedule, static: _RunStatic, mesh):
    return jax.vmap(lambda k: _run_rows(k, x, counts, table, schedule, static, mesh))(keys)


def _bucketed(x, table, orders, dtype):
    """Rows of ``x``, of the neighbour table (its width too) and of the given orders padded to their
    buckets (:mod:`ppclust._buckets`): padding rows carry no links and come last in every order."""
    x = np.asarray(x, dtype)
    n = x.shape[0]
    size = bucket_size(n)
    xp = pad_rows(x, size)[0]
    if table is None:
        nbr = np.zeros((size, 1), np.int32)
        sgn = wgt = np.zeros((size, 1), dtype)
    else:
        width = bucket_size(np.asarray(table.nbr).shape[1], minimum=1)
        cols = lambda a, dt: pad_rows(np.asarray(a, dt).T, width)[0].T  # noqa: E731
        nbr = pad_rows(cols(table.nbr, np.int32), size)[0]
        sgn = pad_rows(cols(table.sgn, dtype), size)[0]
        wgt = pad_rows(cols(table.wgt, dtype), size)[0]
    if orders is None:
        orders = np.zeros((1, size), np.int32)
    else:
        orders = np.asarray(orders, np.int32).reshape(-1, n)
        tail = np.broadcast_to(np.arange(n, size, dtype=np.int32), (orders.shape[0], size - n))
        orders = np.concatenate([orders, tail], axis=1)
    return xp, NeighbourTable(nbr, sgn, wgt), orders


class DPMeansState(NamedTuple):
    """State carried between sweeps (:func:`build`).

    Attributes
    ----------
    n_iter : jax.Array of int of shape ()
        Sweeps done.
    labels : jax.Array of int32 of shape (n,)
        Cluster of each point.
    centers : jax.Array of shape (k_max, d)
        Centroids, the first ``n_clusters`` live.
    n_clusters : jax.Array of int of shape ()
        Number of live clusters.
    run : jax.Array of int of shape ()
        Consecutive sweeps that left the partition unchanged.
    overflow : jax.Array of bool of shape ()
        A sweep needed more than ``k_max`` clusters.
    done : jax.Array of bool of shape ()
        Converged (``run`` reached ``patience``).

    Examples
    --------
    >>> DPMeansState._fields[:2]
    ('n_iter', 'labels')
    """

    n_iter: jax.Array
    labels: jax.Array
    centers: jax.Array
    n_clusters: jax.Array
    run: jax.Array
    overflow: jax.Array
    done: jax.Array


class DPMeansInfo(NamedTuple):
    """Per-sweep diagnostics: the link weight ``xi`` used, the number of clusters before the sweep, and the
    objective before and after it (at that sweep's ``xi``).

    Attributes
    ----------
    xi : jax.Array of shape ()
        Link weight used by the sweep.
    n_clusters_before : jax.Array of int of shape ()
        Number of clusters before the sweep.
    objective_before : jax.Array of shape ()
        Objective before the sweep (at its ``xi``).
    objective : jax.Array of shape ()
        Objective after the sweep.

    Examples
    --------
    >>> DPMeansInfo._fields[0]
    'xi'
    """

    xi: jax.Array
    n_clusters_before: jax.Array
    objective_before: jax.Array
    objective: jax.Array


class DPMeansAlgorithm(NamedTuple):
    """``init(mu0) -> DPMeansState`` and ``step(key, state) -> (DPMeansState, DPMeansInfo)`` (BlackJAX's
    shape); ``key`` is the sweep's own key (the random visiting order of ``order="random"``).

    Attributes
    ----------
    init : callable
        ``init(mu0) -> DPMeansState``.
    step : callable
        ``step(key, state) -> (DPMeansState, DPMeansInfo)``.

    Examples
    --------
    >>> DPMeansAlgorithm._fields
    ('init', 'step')
    """

    init: object
    step: object


def build(
    x,
    table,
    schedule: DPMeansSchedule,
    orders,
    static: DPMeansStatic,
    *,
    w=None,
    axis=None,
    valid=None,
    n_valid=None,
) -> DPMeansAlgorithm:
    """One DP-means / RDP-means sweep (assignments, then centre update, then the convergence test) with the
    data, links and configuration closed over.

    Parameters
    ----------
    x : array of shape (n, d)
        The data.
    table : NeighbourTable
        The links (an empty table without links).
    schedule : DPMeansSchedule
        ``lam`` and the link-weight schedule (traced).
    orders : int array of shape (m, n) or None
        Visiting orders for ``order="given"`` (sweep ``t`` uses ``orders[min(t, m - 1)]``).
    static : DPMeansStatic
        The compile-time options.
    w, axis, valid : optional
        Data-parallel form (``axis`` set, inside ``shard_map``, delayed variant only): ``x``/``w``/
        ``table`` are this device's rows (``table.nbr``: positions in the whole array), ``w`` is 0 on
        padding rows, labels are kept replicated for every position; ``valid`` (bool, one entry per
        position of the whole array, replicated) marks the real rows (padding may sit anywhere, e.g. at
        the end of every process's block).
    n_valid : int or None, default=None
        Bucketed form (one device): only the first ``n_valid`` rows are points, the rest zero-weight
        padding (:func:`ppclust._buckets.pad_rows`, table rows without links) that is never visited,
        opens no cluster, adds nothing to a mean or the objective and follows point 0's label; may be
        traced, so one program serves every ``n`` of a bucket. A random visiting order is
        ``jax.random.permutation(key, n_valid)`` whatever the padding.

    Returns
    -------
    DPMeansAlgorithm
        ``init(mu0)`` and ``step(key, state)``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> x = jnp.asarray([[0.0], [0.1], [5.0]])
    >>> cfg = DPMeansConfig(k_max=4, order="fixed")
    >>> alg = build(x, NeighbourTable.empty(3), DPMeansSchedule.from_config(1.0, cfg, x.dtype), None,
    ...             DPMeansStatic.from_config(cfg, use_links=False))
    >>> state, info = alg.step(jax.random.key(0), alg.init(x.mean(0)))
    >>> int(state.n_clusters)
    2
    """
    k_max, divergence, compat = static.k_max, static.divergence, static.compat
    lam, xi0, xi_rate, xi_ratio, xi_max = schedule
    n, d = x.shape
    sharded = axis is not None
    if sharded:
        offset = lax.axis_index(axis).astype(jnp.int32) * n
        n = valid.shape[0]
        shard = _Shard(x, w, offset, axis)
    else:
        n_valid = n if n_valid is None else n_valid
        valid = jnp.arange(n) < n_valid
        w = valid.astype(x.dtype)

    first = jnp.argmax(valid)  # the first real row (0 unless process 0 holds no rows)

    def init(mu0) -> DPMeansState:
        mu = jnp.zeros((k_max, d), x.dtype).at[0].set(mu0)
        return DPMeansState(
            jnp.int32(0),
            jnp.zeros(n, LABEL_DTYPE),
            mu,
            jnp.int32(1),
            jnp.int32(0),
            jnp.array(False),
            jnp.array(False),
        )

    def xi_at(t):  # t is the 0-based sweep index
        xi = jnp.minimum(xi0 * xi_rate ** t.astype(x.dtype), xi_max)
        return jnp.where(t == 0, 0.0, xi) if static.xi_first_zero else xi

    def step(key, s: DPMeansState) -> tuple[DPMeansState, DPMeansInfo]:
        t = s.n_iter
        xi1 = xi_at(t)
        xi2 = xi1 * xi_ratio
        if sharded:

            def obj(x, z, mu, k):
                return _objective_sharded(x, w, z, offset, mu, k, lam, xi1, xi2, table, divergence, axis)
        else:
            obj = partial(objective, lam=lam, xi1=xi1, xi2=xi2, table=table, divergence=divergence, w=w)
        j_before = obj(x, s.labels, s.centers, s.n_clusters)
        if sharded:
            z, mu_end, k_end, ovf = _delayed_sweep_sharded(
                shard, s.labels, s.centers, s.n_clusters, lam, xi1, xi2, table, static
            )
            z = jnp.where(valid, z, z[first])  # padding follows the first real row: the partition test holds
            z_new, mu_new, k_new = _update_sharded(x, w, z, offset, mu_end, k_end, axis=axis)
        elif static.variant == "sequential":
            if static.order == "given":
                perm = orders[jnp.minimum(t, orders.shape[0] - 1)]
            elif static.order == "fixed":
                perm = jnp.arange(n)
            else:
                perm = _random_order(key, n_valid, n)
            z, mu_end, k_end, ovf = _sequential_sweep(
                x, s.labels, s.centers, s.n_clusters, perm, lam, xi1, xi2, table, static, n_valid
            )
        else:
            z, mu_end, k_end, ovf = _delayed_sweep(
                x, s.labels, s.centers, s.n_clusters, lam, xi1, xi2, table, static, valid
            )
        if not sharded:
            z = jnp.where(valid, z, z[0])  # padding rows follow point 0: the partition test is unchanged
            z_new, mu_new, k_new = _update(x, z, mu_end, k_end, compat=compat, w=w)
        j_after = obj(x, z_new, mu_new, k_new)
        if compat:
            live = jnp.arange(k_max) < k_new
            moved = jnp.any(jnp.where(live[:, None], mu_new != mu_end, False))
            unchanged = (k_new == k_end) & ~moved
            run = jnp.where(unchanged, s.run + 1, 0)
            done = unchanged & (s.run >= static.patience)  # Octave: counter of earlier unchanged sweeps
        else:
            unchanged = _same_partition(s.labels, z_new, k_max) & (k_new == s.n_clusters)
            run = jnp.where(unchanged, s.run + 1, 0)
            done = run >= static.patience
        new = DPMeansState(t + 1, z_new, mu_new, k_new, run, s.overflow | ovf, done)
        return new, DPMeansInfo(xi1, s.n_clusters, j_before, j_after)

    return DPMeansAlgorithm(init, step)


def _shuffle_rounds(n):
    """The number of sort rounds of ``jax.random.permutation`` for ``n`` items (``n`` may be traced)."""
    n = jnp.maximum(n, 1).astype(jnp.float32)
    return jnp.ceil(3.0 * jnp.log(n) / jnp.log(jnp.float32(np.iinfo(np.uint32).max))).astype(jnp.int32)


def _random_order(key, n_valid, size):
    """``jax.random.permutation(key, n_valid)``, then the padding rows ``n_valid..size-1`` in some order.

    The same algorithm (sort by fresh 32-bit keys, as many rounds as ``permutation`` uses for
    ``n_valid`` items), with the padding rows sorted last in every round: the draws of the first
    ``n_valid`` positions do not depend on ``size`` (counter-based bits), so the real rows' order is the
    one ``permutation`` gives on the unpadded data, whatever the padding."""
    order = jnp.arange(size, dtype=jnp.int32)
    late = (order >= n_valid).astype(jnp.uint32)  # positions of the padding: the last ones, every round
    rounds = _shuffle_rounds(n_valid)
    for r in range(int(np.ceil(3 * np.log(max(1, size)) / np.log(np.iinfo(np.uint32).max)))):
        key, sub = jax.random.split(key)
        bits = jax.random.bits(sub, (size,), jnp.uint32)
        if jax.config.jax_enable_x64:  # one 64-bit key (padding flag, bits): a cheaper comparator
            packed = (late.astype(jnp.uint64) << 32) | bits.astype(jnp.uint64)
            _, shuffled = lax.sort_key_val(packed, order)
        else:
            _, _, shuffled = lax.sort((late, bits, order), num_keys=2)
        order = jnp.where(r < rounds, shuffled, order)
    return order


def _loop(key, x, table, schedule, mu0, orders, static: DPMeansStatic, **shard):
    """The sweep loop: a ``while_loop`` over :func:`build`'s ``step`` (sweep ``t`` gets the key
    ``fold_in(key, t)``), recording each sweep's :class:`DPMeansInfo` in the result's traces; ``shard``:
    :func:`build`'s data-parallel arguments."""
    max_iter = static.max_iter
    alg = build(x, table, schedule, orders, static, **shard)
    nan_trace = jnp.full(max_iter, jnp.nan, x.dtype)
    traces = (nan_trace, jnp.full(max_iter, -1, jnp.int32), nan_trace, nan_trace)

    def cond(c):
        s, _ = c
        return (~s.done) & (s.n_iter < max_iter) & (~s.overflow)

    def body(c):
        s, (xi_tr, k_tr, jb_tr, ja_tr) = c
        t = s.n_iter
        new, info = alg.step(jax.random.fold_in(key, t), s)
        return new, (
            xi_tr.at[t].set(info.xi),
            k_tr.at[t].set(info.n_clusters_before),
            jb_tr.at[t].set(info.objective_before),
            ja_tr.at[t].set(info.objective),
        )

    s, (xi_tr, k_tr, jb_tr, ja_tr) = lax.while_loop(cond, body, (alg.init(mu0), traces))
    last = jnp.maximum(s.n_iter - 1, 0)
    return DPMeansResult(
        labels=s.labels,
        centers=s.centers,
        n_clusters=s.n_clusters,
        objective=ja_tr[last],
        n_iter=s.n_iter,
        converged=s.done,
        overflow=s.overflow,
        xi_trace=xi_tr,
        k_trace=k_tr,
        objective_before=jb_tr,
        objective_trace=ja_tr,
    )


def _masked_range(x, valid, block=4096):
    """Per-feature minimum and maximum over the rows where ``valid``, one block of ``block`` rows at a time
    (no masked copy of ``x``; the last block overlaps the one before it, which min and max ignore)."""
    n, d = x.shape
    b = min(block, n)

    def body(j, acc):
        lo, hi = acc
        start = jnp.minimum(j * b, n - b)
        xb = lax.dynamic_slice_in_dim(x, start, b)
        vb = lax.dynamic_slice_in_dim(valid, start, b)[:, None]
        lo = jnp.minimum(lo, jnp.min(jnp.where(vb, xb, jnp.inf), axis=0))
        return lo, jnp.maximum(hi, jnp.max(jnp.where(vb, xb, -jnp.inf), axis=0))

    inf = jnp.full(d, jnp.inf, x.dtype)
    return lax.fori_loop(0, -(-n // b), body, (inf, -inf))


def _init_centre(key, x, init, valid):
    if init == "mean":
        return jnp.sum(jnp.where(valid[:, None], x, 0.0), axis=0) / jnp.sum(valid)
    if init == "bbox_random":
        lo, hi = _masked_range(x, valid)
        u = jax.random.uniform(key, (x.shape[1],), x.dtype)
        return u * (hi - lo) + lo
    raise ValueError(f"init must be 'bbox_random' or 'mean', got {init!r}")


def fit(
    key,
    x,
    table: NeighbourTable | None,
    lam,
    config: DPMeansConfig | None = None,
    *,
    orders=None,
    init_centre=None,
    mesh=None,
    **options,
) -> DPMeansResult:
    """Run DP-means (``xi0=0`` or no links) or RDP-means (Algorithm 1) from one initialisation.

    Parameters
    ----------
    key : JAX PRNG key
        Initial centroid and visiting orders.
    x : array of shape (n, d)
        The data (float64 recommended: run inside ``ppclust._jax.x64()``).
    table : NeighbourTable or None
        The links; None: DP-means.
    lam : float
        New-cluster penalty :math:`\\lambda > 0`, in the units of ``divergence``.
    config : DPMeansConfig or None, default=None
        The options; None: the defaults of :class:`DPMeansConfig`.
    orders : int array of shape (m, n) or None, default=None
        Visiting orders for ``order="given"``.
    init_centre : array of shape (d,) or None, default=None
        An explicit initial centroid instead of ``config.init``.
    mesh : None or a 1-D :class:`jax.sharding.Mesh` with axis ``"data"``, default=None
        Needs ``variant="delayed"`` and ``compat=False``. The points (and their neighbour-table rows) are
        split over the devices, padded with zero-weight rows; the new-cluster candidate is the global
        argmax (``pmax``/``pmin``), per-cluster sums, counts and the objective are reduced with ``psum``,
        the labels kept replicated (``all_gather``). Same result as one device up to summation order.
    **options
        Fields of :class:`DPMeansConfig` replacing those of ``config`` (``fit(key, x, None, 4.0,
        k_max=16)``).

    Returns
    -------
    DPMeansResult

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> x = jnp.asarray([[0.0, 0.0], [0.1, 0.0], [5.0, 5.0], [5.1, 5.0]])
    >>> res = fit(jax.random.key(0), x, None, 1.0, k_max=4, init="mean")
    >>> int(res.n_clusters)
    2
    """
    res = fit_restarts(
        key, x, table, lam, None, config, orders=orders, init_centre=init_centre, mesh=mesh, **options
    )
    return res


def fit_restarts(
    key,
    x,
    table,
    lam,
    n_init,
    config: DPMeansConfig | None = None,
    *,
    orders=None,
    init_centre=None,
    mesh=None,
    **options,
) -> DPMeansResult:
    """``n_init`` independent restarts of :func:`fit` (initial centroid and orders), vmapped.

    The rows (and the neighbour table's rows and width) are padded to their buckets
    (:mod:`ppclust._buckets`), so every ``n`` of a bucket runs the same compiled program; the results are
    those of the unpadded data (labels cut back to ``n``).

    Parameters
    ----------
    key : JAX PRNG key
        Split into one key per restart (``n_init=None``: ``key`` is the one run's key, :func:`fit`).
    x, table, lam
        As :func:`fit`.
    n_init : int or None
        Number of restarts (>= 1); None: one run without the leading restart axis.
    config : DPMeansConfig or None, default=None
        As :func:`fit`.
    orders : array of int of shape (n_init, n) or None, default=None
        Visiting orders of the sequential sweep, one per restart; None draws them from ``key``.
    init_centre : array of shape (d,) or None, default=None
        The first centroid; None uses the global mean (weighted by the real rows).
    mesh : jax.sharding.Mesh or None, default=None
        A 1-D data mesh for the delayed pass; None runs on one device.
    **options
        As :func:`fit`.

    Returns
    -------
    DPMeansResult
        Every field stacked over the restarts (leading axis ``n_init``).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> x = jnp.asarray([[0.0], [0.1], [5.0], [5.1]])
    >>> fit_restarts(jax.random.key(0), x, None, 1.0, 3, k_max=4).labels.shape
    (3, 4)
    """
    config = (DPMeansConfig() if config is None else config)._replace(**options)
    if mesh is not None and (config.variant != "delayed" or config.compat):
        raise ValueError(
            "a device mesh needs variant='delayed' and compat=False (the sequential sweep "
            "is inherently serial)"
        )
    x = np.asarray(x)
    dtype = jax.dtypes.canonicalize_dtype(x.dtype if np.issubdtype(x.dtype, np.floating) else np.float64)
    n = x.shape[0]
    use_links = table is not None and np.asarray(table.wgt).any()
    xp, tp, op = _bucketed(x, table, orders, dtype)
    mu0 = None if init_centre is None else np.asarray(init_centre, dtype)
    static = _RunStatic(DPMeansStatic.from_config(config, use_links=bool(use_links)), config.init)
    keys = key if n_init is None else jax.random.split(key, n_init)
    res = _fit_many(
        jnp.reshape(keys, (-1,)),
        xp,
        np.int32(n),
        tp,
        DPMeansSchedule.from_config(lam, config, dtype),
        mu0,
        op,
        static,
        mesh=mesh,
    )
    res = res._replace(labels=np.asarray(res.labels)[:, :n])
    if n_init is None:
        res = jax.tree.map(lambda a: a[0], res)
    return res


def fit_process_rows(key, x, table, lam, n_init, layout, config: DPMeansConfig | None = None, **options):
    """:func:`fit_restarts` on rows spread over processes (:mod:`ppclust.distributed`); call it on every
    process.

    The delayed pass over every process's devices: each device assigns its own rows, the opening point is
    the global first argmax of the best augmented cost (``pmax``, then ``pmin`` of its position), the
    sums of points and counts per cluster and the objective are reduced with ``psum``, and the label
    vector (one int32 per position) is all-gathered after each pass, since a point's link term reads
    the labels of its partners on any process.

    Parameters
    ----------
    key : JAX PRNG key
        Split into one key per restart (the same on every process).
    x : jax.Array of shape (P * block, d)
        The global rows (:func:`ppclust.distributed.process_rows`): block ``p`` holds process ``p``'s
        ``layout.counts[p]`` rows, then padding.
    table : NeighbourTable or None
        The links of this process's block of positions, NumPy of shape ``(block, width)`` (``nbr``:
        positions in ``x``, :meth:`ppclust._devices.RowLayout.positions`; the same ``width`` on every
        process); None: DP-means.
    lam : float
        New-cluster penalty, as :func:`fit`.
    n_init : int
        Number of restarts (>= 1).
    layout : ppclust._devices.RowLayout
        The rows per process.
    config : DPMeansConfig or None, default=None
        As :func:`fit`; needs ``variant="delayed"`` and ``compat=False``.
    **options
        As :func:`fit`.

    Returns
    -------
    DPMeansResult
        Stacked over the restarts; ``labels`` of every position of ``x`` (NumPy, the same on every process).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust import distributed
    >>> from ppclust._jax import x64
    >>> X = np.array([[0.0], [0.1], [5.0], [5.1]])
    >>> with x64():
    ...     x = distributed.process_rows(X)  # one process here: the same code runs on every process
    ...     res = fit_process_rows(jax.random.key(0), x, None, 4.0, 1, distributed.layout(x),
    ...                            k_max=4, variant="delayed")
    ...     ref = fit_restarts(jax.random.key(0), X, None, 4.0, 1, k_max=4, variant="delayed")
    >>> res.labels[:, :4].tolist() == ref.labels.tolist(), int(res.n_clusters[0])
    (True, 2)
    """
    from ppclust import _devices

    config = (DPMeansConfig() if config is None else config)._replace(**options)
    if config.variant != "delayed" or config.compat:
        raise ValueError(
            "rows spread over processes need variant='delayed' and compat=False (the sequential sweep "
            "visits the points one after the other)"
        )
    dtype = x.dtype
    me = jax.process_index()
    if table is None:
        table = NeighbourTable(
            np.zeros((layout.block, 1), np.int32),
            np.zeros((layout.block, 1), dtype),
            np.zeros((layout.block, 1), dtype),
        )
    use_links = bool(_devices.process_gather(np.int8(np.asarray(table.wgt).any())).any())
    width = bucket_size(np.asarray(table.nbr).shape[1], minimum=1)  # nearby widths share a program
    glob = NeighbourTable(
        *(
            _devices.from_process_rows(pad_rows(np.asarray(a, dt)[: layout.counts[me]].T, width)[0].T, layout)
            for a, dt in zip(table, (np.int32, dtype, dtype), strict=True)
        )
    )
    static = _RunStatic(DPMeansStatic.from_config(config, use_links=use_links), config.init)
    res = _fit_many_rows(
        jax.random.split(key, n_init),
        x,
        jnp.asarray(layout.counts, jnp.int32),
        glob,
        DPMeansSchedule.from_config(lam, config, dtype),
        static,
        _devices.global_mesh(),
    )
    return type(res)(*[np.asarray(a) for a in res])


# ------------------------------------------------------------------------------------------------
# lambda heuristics (spec 3.7)


#: rows per block of the host-side distance pass of :func:`kth_farthest_from_mean`
_ROW_BLOCK = 65536


def kth_farthest_from_mean(x, k, divergence="euclidean", *, gather=None):
    r"""The authors' rule: the k-th largest distance :math:`\|x_i-\bar x\|` of a row to the column mean.

    ``divergence="euclidean"`` gives the plain distance (the value the authors' code uses),
    "sqeuclidean" its square (for squared-Euclidean DP/RDP-means), "kl" the k-th largest
    KL(x_i || mean histogram).

    Parameters
    ----------
    x : array-like of shape (n, d)
        Data.
    k : int
        Rank of the distance, 1 the largest.
    divergence : {"euclidean", "sqeuclidean", "kl"}, default="euclidean"
        Distance to the mean.
    gather : callable or None, default=None
        Rows spread over processes: ``x`` is this process's rows and ``gather(a)`` stacks every
        process's ``a`` (:func:`ppclust._devices.process_gather`); the mean is the sum of the processes'
        sums over ``n``, and each process sends only its ``k`` largest distances.

    Examples
    --------
    >>> import numpy as np
    >>> kth_farthest_from_mean(np.array([[0.0], [1.0], [5.0]]), 1)
    3.0
    """
    x = np.asarray(x, dtype=np.float64)
    n = _n_rows(x, gather)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n_samples={n}], got {k}")
    m = _mean(x, n, gather)
    if divergence == "kl":
        with x64():
            dist = np.asarray(kl_divergence(jnp.asarray(x), jnp.asarray(m)[None]))[:, 0]
    else:  # in blocks of rows: temporaries of a block, not of the data
        dist = np.empty(x.shape[0])
        for lo in range(0, x.shape[0], _ROW_BLOCK):
            diff = x[lo : lo + _ROW_BLOCK] - m
            dist[lo : lo + _ROW_BLOCK] = np.sqrt(np.sum(diff * diff, axis=1))
        if divergence == "sqeuclidean":
            dist = dist**2
    # the k largest, in decreasing order (a partial sort: O(n + k log k))
    top = dist if len(dist) <= k else np.partition(dist, len(dist) - k)[len(dist) - k :]
    top = np.sort(top)[::-1]
    if (
        gather is not None
    ):  # every process's k largest (padded with -inf): the k-th largest of all is among them
        top = np.sort(gather(np.pad(top[:k], (0, max(0, k - len(top))), constant_values=-np.inf)).ravel())[
            ::-1
        ]
    return float(top[k - 1])


def farthest_first(x, k, divergence="sqeuclidean", *, gather=None):
    r"""Kulis & Jordan's farthest-first heuristic: T = {mean}; k times add the point farthest from T.

    Returns the max-min distance at the last (k-th) round, in the units of ``divergence``
    ("sqeuclidean": squared distances, "euclidean": plain).

    Parameters
    ----------
    x : array-like of shape (n, d)
        Data.
    k : int
        Number of rounds.
    divergence : {"sqeuclidean", "euclidean"}, default="sqeuclidean"
        Units of the returned distance.
    gather : callable or None, default=None
        As :func:`kth_farthest_from_mean`: each round, the farthest point is the first of the processes'
        farthest points with the largest distance (the first in global row order, as ``np.argmax``).

    Examples
    --------
    >>> import numpy as np
    >>> farthest_first(np.array([[0.0], [1.0], [5.0]]), 1)
    9.0
    """
    x = np.asarray(x, dtype=np.float64)
    n = _n_rows(x, gather)
    if not 1 <= k <= n:
        raise ValueError(f"k must be in [1, n_samples={n}], got {k}")
    diff = x - _mean(x, n, gather)
    dmin = np.sum(diff * diff, axis=1)
    last = 0.0
    for _ in range(k):
        j = int(np.argmax(dmin)) if len(dmin) else 0
        if gather is None:
            last, centre = float(dmin[j]), x[j]
        else:
            vals = gather(dmin[j] if len(dmin) else -np.inf)
            p = int(np.argmax(vals))
            last, centre = float(vals[p]), gather(x[j] if len(dmin) else np.zeros(x.shape[1]))[p]
        diff = x - centre
        dmin = np.minimum(dmin, np.sum(diff * diff, axis=1))
    return last if divergence == "sqeuclidean" else float(np.sqrt(last))


def lambda_from_k(x, k, method="kth_farthest_from_mean", divergence="euclidean", *, gather=None):
    """lambda for a target number of clusters k; ``method``: "kth_farthest_from_mean" | "farthest_first".

    Parameters
    ----------
    x : array-like of shape (n, d)
        Data.
    k : int
        Target number of clusters.
    method : {"kth_farthest_from_mean", "farthest_first"}, default="kth_farthest_from_mean"
        The rule (:func:`kth_farthest_from_mean` is the authors'; ``docs/decisions/0008-rdpmeans-init.md``).
    divergence : {"euclidean", "sqeuclidean", "kl"}, default="euclidean"
        Units of lambda: match the divergence of the run.
    gather : callable or None, default=None
        Rows spread over processes (:func:`kth_farthest_from_mean`).

    Examples
    --------
    >>> import numpy as np
    >>> lambda_from_k(np.array([[0.0], [1.0], [5.0]]), 1, divergence="sqeuclidean")
    9.0
    """
    if method == "kth_farthest_from_mean":
        return kth_farthest_from_mean(x, k, divergence, gather=gather)
    if method == "farthest_first":
        return farthest_first(x, k, divergence, gather=gather)
    raise ValueError(f"method must be 'kth_farthest_from_mean' or 'farthest_first', got {method!r}")


def _n_rows(x, gather):
    return x.shape[0] if gather is None else int(np.sum(gather(x.shape[0])))


def _mean(x, n, gather):
    return x.mean(axis=0) if gather is None else np.sum(gather(x.sum(axis=0)), axis=0) / n
