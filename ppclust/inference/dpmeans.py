r"""DP-means and RDP-means (Algorithm 1 of Khashabi et al. 2015) as pure, jitted solvers.

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

from ppclust._jax import x64
from ppclust.families import kl_divergence, sq_euclidean
from ppclust.sideinfo import NeighbourTable, SideInfo, link_counts, table_within_counts

__all__ = [
    "NeighbourTable",
    "DPMeansState",
    "DPMeansInfo",
    "DPMeansAlgorithm",
    "build",
    "DPMeansResult",
    "neighbour_table",
    "fit",
    "fit_restarts",
    "objective",
    "divergence_matrix",
    "lambda_from_k",
    "kth_farthest_from_mean",
    "farthest_first",
]

LABEL_DTYPE = jnp.int32


class DPMeansResult(NamedTuple):
    """Output of :func:`fit`.

    labels: (n,) int32 in 0..n_clusters-1; centers: (k_max, d) (rows >= n_clusters are junk);
    n_clusters: () int; objective: () J of Section 3.5 at the last xi; n_iter: () sweeps done;
    converged: () bool (stopping rule met before max_iter); overflow: () bool (k_max exhausted; the
    caller must raise); xi_trace, k_trace, objective_before, objective_trace: (max_iter,) per sweep
    t the xi used, K at the start of the sweep, J(xi_t) before the sweep and J(xi_t) after the
    update step (NaN beyond n_iter).
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


# ------------------------------------------------------------------------------------------------
# neighbour table (private fallback until ppclust.sideinfo lands)


def neighbour_table(n, pairs=None, sign=None, weight=None, width=None) -> NeighbourTable:
    """Padded neighbour table of unique pairs ``(m, 2)`` with signs +1/-1 (via :class:`SideInfo`)."""
    if pairs is None or len(pairs) == 0:
        return SideInfo(n).neighbour_table(width)
    return SideInfo.from_pairs(n, pairs, np.sign(sign).astype(np.int8), weight,
                               on_conflict="keep").neighbour_table(width)


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
    """D(x_i, mu_k) for all points and slots, (n, k_max), via matrix products (no (n, k, d) array)."""
    if divergence in ("sqeuclidean", "euclidean"):
        sq = sq_euclidean(x, mu, expanded=True)
        return jnp.sqrt(sq) if divergence == "euclidean" else sq
    if divergence == "kl":
        return kl_divergence(x, mu, expanded=True)
    raise ValueError(f"unknown divergence {divergence!r}")


# ------------------------------------------------------------------------------------------------
# objective


def objective(x, z, mu, n_clusters, lam, xi1, xi2, table: NeighbourTable, divergence="sqeuclidean"):
    """J(z, mu) of spec Section 3.5 (pairs counted once); ``n_clusters`` slots are counted in K."""
    x, z, mu = jnp.asarray(x), jnp.asarray(z), jnp.asarray(mu)
    table = NeighbourTable(*(jnp.asarray(a) for a in table))
    d_own = jax.vmap(lambda xi_, k: _point_divergence(xi_, mu[k][None, :], divergence, False)[0])(x, z)
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


def _sequential_sweep(x, z, mu, k_count, order, lam, xi1, xi2, table, *, divergence, tie, compat,
                      equal_xi, use_links):
    k_max = mu.shape[0]
    slots = jnp.arange(k_max)

    def body(p, carry):
        z, mu, k_count, overflow = carry
        i = order[p]
        xi_ = x[i]
        a = _point_divergence(xi_, mu, divergence, compat)
        if use_links:
            a = a - _link_score(z[table.nbr[i]], table.sgn[i], table.wgt[i], k_max, xi1, xi2, equal_xi)
        a = jnp.where(slots < k_count, a, jnp.inf)
        k = _argmin(a, tie)
        open_new = ~(a[k] < lam)
        full = k_count >= k_max
        do_open = open_new & ~full
        k_new = jnp.where(do_open, k_count.astype(LABEL_DTYPE), k)
        mu = jnp.where(do_open, mu.at[jnp.minimum(k_count, k_max - 1)].set(xi_), mu)
        z = z.at[i].set(k_new)
        return z, mu, k_count + do_open.astype(k_count.dtype), overflow | (open_new & full)

    return lax.fori_loop(0, order.shape[0], body, (z, mu, k_count, jnp.array(False)))


def _best_assignment(x, z, mu, k_count, xi1, xi2, table, *, divergence, tie, equal_xi, use_links):
    """Every point's best live cluster under D - xi1 f + xi2 s (all points at once) and that cost."""
    k_max = mu.shape[0]
    a = divergence_matrix(x, mu, divergence)
    if use_links:
        a = a - _link_score(z[table.nbr], table.sgn, table.wgt, k_max, xi1, xi2, equal_xi)
    a = jnp.where(jnp.arange(k_max)[None, :] < k_count, a, jnp.inf)
    k = jax.vmap(lambda r: _argmin(r, tie))(a)
    return k, jnp.take_along_axis(a, k[:, None].astype(jnp.int32), axis=1)[:, 0]


def _delayed_sweep(x, z, mu, k_count, lam, xi1, xi2, table, *, divergence, tie, equal_xi, use_links):
    k_max = mu.shape[0]
    k, best = _best_assignment(x, z, mu, k_count, xi1, xi2, table, divergence=divergence, tie=tie,
                               equal_xi=equal_xi, use_links=use_links)
    worst = jnp.argmax(best)
    open_new = ~(best[worst] < lam)
    full = k_count >= k_max
    do_open = open_new & ~full
    z = jnp.where(do_open, k.at[worst].set(k_count.astype(LABEL_DTYPE)), k)
    mu = jnp.where(do_open, mu.at[jnp.minimum(k_count, k_max - 1)].set(x[worst]), mu)
    return z, mu, k_count + do_open.astype(k_count.dtype), open_new & full


def _delayed_sweep_sharded(x, w, z_all, offset, mu, k_count, lam, xi1, xi2, table, *, divergence, tie,
                           equal_xi, use_links, axis):
    """:func:`_delayed_sweep` on this device's rows (``x``, ``w``, ``table``: rows ``offset..``) inside
    ``shard_map``. ``z_all`` is the replicated label vector of all (padded) points; returns the new one.
    The opening point is the global first argmax of the best augmented cost (as ``jnp.argmax``)."""
    k_max, n = mu.shape[0], x.shape[0]
    # neighbour labels: table.nbr holds global indices into the replicated labels z_all
    k, best = _best_assignment(x, z_all, mu, k_count, xi1, xi2, table, divergence=divergence, tie=tie,
                               equal_xi=equal_xi, use_links=use_links)
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
    sums = lax.psum(jax.ops.segment_sum(x * w[:, None], z_loc, num_segments=k_max), axis)
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


def _update(x, z, mu_old, k_count, *, compat):
    """Mean step, deletion of empty clusters and stable compaction. Returns (z, mu, k_count)."""
    k_max = mu_old.shape[0]
    if compat:  # sums accumulated point by point in index order, as rdpmeans.m does
        def acc(i, c):
            s, cnt = c
            return s.at[z[i]].add(x[i]), cnt.at[z[i]].add(1.0)

        sums, counts = lax.fori_loop(0, x.shape[0], acc,
                                     (jnp.zeros_like(mu_old), jnp.zeros(k_max, x.dtype)))
    else:
        sums = jax.ops.segment_sum(x, z, num_segments=k_max)
        counts = jax.ops.segment_sum(jnp.ones(x.shape[0], x.dtype), z, num_segments=k_max)
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


_STATIC = ("k_max", "max_iter", "divergence", "tie", "compat", "variant", "order", "patience",
           "xi_first_zero", "equal_xi", "use_links")


@partial(jax.jit, static_argnames=_STATIC + ("mesh",))
def _fit(key, x, table, lam, xi0, xi_rate, xi_ratio, xi_max, mu0, orders, *, mesh=None, **static):
    if mesh is None:
        return _loop(key, x, table, lam, xi0, xi_rate, xi_ratio, xi_max, mu0, orders, **static)
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS, pad_rows

    n = x.shape[0]
    n_pad = pad_rows(n, mesh)
    pad = n_pad - n
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    w = (jnp.arange(n_pad) < n).astype(x.dtype)
    tp = NeighbourTable(*(jnp.pad(a, ((0, pad), (0, 0))) for a in table))  # padding rows: no links
    rep = (key, lam, xi0, xi_rate, xi_ratio, xi_max, mu0)

    def per_device(rep, x_loc, w_loc, t_loc):
        key, lam, xi0, xi_rate, xi_ratio, xi_max, mu0 = rep
        return _loop(key, x_loc, t_loc, lam, xi0, xi_rate, xi_ratio, xi_max, mu0, None, w=w_loc, axis=AXIS,
                     n_total=n, n_pad=n_pad, **static)

    res = jax.shard_map(per_device, mesh=mesh, in_specs=(P(), P(AXIS), P(AXIS), P(AXIS)), out_specs=P(),
                        check_vma=False)(rep, xp, w, tp)
    return res._replace(labels=res.labels[:n])


class DPMeansState(NamedTuple):
    """State carried between sweeps (:func:`build`).

    n_iter: sweeps done; labels: (n,) cluster of each point; centers: (k_max, d), the first
    ``n_clusters`` live; run: consecutive sweeps that left the partition unchanged; overflow: a sweep
    needed more than ``k_max`` clusters; done: converged (``run`` reached ``patience``).
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
    objective before and after it (at that sweep's ``xi``)."""

    xi: jax.Array
    n_clusters_before: jax.Array
    objective_before: jax.Array
    objective: jax.Array


class DPMeansAlgorithm(NamedTuple):
    """``init(mu0) -> DPMeansState`` and ``step(key, state) -> (DPMeansState, DPMeansInfo)`` (BlackJAX's
    shape); ``key`` is the sweep's own key (the random visiting order of ``order="random"``)."""

    init: object
    step: object


def build(x, table, lam, xi0, xi_rate, xi_ratio, xi_max, orders, *, k_max, divergence, tie, compat, variant,
          order, patience, xi_first_zero, equal_xi, use_links, w=None, axis=None, n_total=None,
          n_pad=None) -> DPMeansAlgorithm:
    """One DP-means / RDP-means sweep (assignments, then centre update, then the convergence test) with the
    data, links and configuration closed over. Data-parallel form (``axis`` set, inside ``shard_map``,
    delayed variant only): ``x``/``w``/``table`` are this device's rows, labels are kept replicated for all
    ``n_pad`` rows."""
    n, d = x.shape
    sharded = axis is not None
    if sharded:
        offset = lax.axis_index(axis).astype(jnp.int32) * n
        valid = jnp.arange(n_pad) < n_total
        n = n_pad

    def init(mu0) -> DPMeansState:
        mu = jnp.zeros((k_max, d), x.dtype).at[0].set(mu0)
        return DPMeansState(jnp.int32(0), jnp.zeros(n, LABEL_DTYPE), mu, jnp.int32(1), jnp.int32(0),
                            jnp.array(False), jnp.array(False))

    def xi_at(t):  # t is the 0-based sweep index
        xi = jnp.minimum(xi0 * xi_rate ** t.astype(x.dtype), xi_max)
        return jnp.where(t == 0, 0.0, xi) if xi_first_zero else xi

    def step(key, s: DPMeansState) -> tuple[DPMeansState, DPMeansInfo]:
        t = s.n_iter
        xi1 = xi_at(t)
        xi2 = xi1 * xi_ratio
        if sharded:
            def obj(x, z, mu, k):
                return _objective_sharded(x, w, z, offset, mu, k, lam, xi1, xi2, table, divergence, axis)
        else:
            obj = partial(objective, lam=lam, xi1=xi1, xi2=xi2, table=table, divergence=divergence)
        j_before = obj(x, s.labels, s.centers, s.n_clusters)
        if sharded:
            z, mu_end, k_end, ovf = _delayed_sweep_sharded(
                x, w, s.labels, offset, s.centers, s.n_clusters, lam, xi1, xi2, table, divergence=divergence,
                tie=tie, equal_xi=equal_xi, use_links=use_links, axis=axis)
            z = jnp.where(valid, z, z[0])  # padding rows follow point 0: the partition test is unchanged
            z_new, mu_new, k_new = _update_sharded(x, w, z, offset, mu_end, k_end, axis=axis)
        elif variant == "sequential":
            if order == "given":
                perm = orders[jnp.minimum(t, orders.shape[0] - 1)]
            elif order == "fixed":
                perm = jnp.arange(n)
            else:
                perm = jax.random.permutation(key, n)
            z, mu_end, k_end, ovf = _sequential_sweep(
                x, s.labels, s.centers, s.n_clusters, perm, lam, xi1, xi2, table, divergence=divergence,
                tie=tie, compat=compat, equal_xi=equal_xi, use_links=use_links)
        else:
            z, mu_end, k_end, ovf = _delayed_sweep(
                x, s.labels, s.centers, s.n_clusters, lam, xi1, xi2, table, divergence=divergence, tie=tie,
                equal_xi=equal_xi, use_links=use_links)
        if not sharded:
            z_new, mu_new, k_new = _update(x, z, mu_end, k_end, compat=compat)
        j_after = obj(x, z_new, mu_new, k_new)
        if compat:
            live = jnp.arange(k_max) < k_new
            moved = jnp.any(jnp.where(live[:, None], mu_new != mu_end, False))
            unchanged = (k_new == k_end) & ~moved
            run = jnp.where(unchanged, s.run + 1, 0)
            done = unchanged & (s.run >= patience)  # Octave: counter of earlier unchanged sweeps
        else:
            unchanged = _same_partition(s.labels, z_new, k_max) & (k_new == s.n_clusters)
            run = jnp.where(unchanged, s.run + 1, 0)
            done = run >= patience
        new = DPMeansState(t + 1, z_new, mu_new, k_new, run, s.overflow | ovf, done)
        return new, DPMeansInfo(xi1, s.n_clusters, j_before, j_after)

    return DPMeansAlgorithm(init, step)


def _loop(key, x, table, lam, xi0, xi_rate, xi_ratio, xi_max, mu0, orders, *, max_iter, **config):
    """The sweep loop: a ``while_loop`` over :func:`build`'s ``step`` (sweep ``t`` gets the key
    ``fold_in(key, t)``), recording each sweep's :class:`DPMeansInfo` in the result's traces."""
    alg = build(x, table, lam, xi0, xi_rate, xi_ratio, xi_max, orders, **config)
    nan_trace = jnp.full(max_iter, jnp.nan, x.dtype)
    traces = (nan_trace, jnp.full(max_iter, -1, jnp.int32), nan_trace, nan_trace)

    def cond(c):
        s, _ = c
        return (~s.done) & (s.n_iter < max_iter) & (~s.overflow)

    def body(c):
        s, (xi_tr, k_tr, jb_tr, ja_tr) = c
        t = s.n_iter
        new, info = alg.step(jax.random.fold_in(key, t), s)
        return new, (xi_tr.at[t].set(info.xi), k_tr.at[t].set(info.n_clusters_before),
                     jb_tr.at[t].set(info.objective_before), ja_tr.at[t].set(info.objective))

    s, (xi_tr, k_tr, jb_tr, ja_tr) = lax.while_loop(cond, body, (alg.init(mu0), traces))
    last = jnp.maximum(s.n_iter - 1, 0)
    return DPMeansResult(labels=s.labels, centers=s.centers, n_clusters=s.n_clusters, objective=ja_tr[last],
                         n_iter=s.n_iter, converged=s.done, overflow=s.overflow, xi_trace=xi_tr,
                         k_trace=k_tr, objective_before=jb_tr, objective_trace=ja_tr)


def _init_centre(key, x, init):
    if init == "mean":
        return jnp.mean(x, axis=0)
    if init == "bbox_random":
        lo, hi = jnp.min(x, axis=0), jnp.max(x, axis=0)
        u = jax.random.uniform(key, (x.shape[1],), x.dtype)
        return u * (hi - lo) + lo
    raise ValueError(f"init must be 'bbox_random' or 'mean', got {init!r}")


def fit(key, x, table: NeighbourTable | None, lam, *, xi0=1e-3, xi_rate=2.0, xi_ratio=1.0, xi_max=1e12,
        k_max=64, max_iter=1000, divergence="sqeuclidean", tie="first", compat=False, variant="sequential",
        order="random", orders=None, init="bbox_random", init_centre=None, patience=20,
        xi_first_zero=True, mesh=None) -> DPMeansResult:
    """Run DP-means (``xi0=0`` or no links) or RDP-means (Algorithm 1) from one initialisation.

    Parameters
    ----------
    key : JAX PRNG key (initial centroid and visiting orders).
    x : (n, d) float array (float64 recommended: run inside ``ppclust._jax.x64()``).
    table : NeighbourTable or None (no links: DP-means).
    lam : new-cluster penalty lambda > 0, in the units of ``divergence``.
    xi0, xi_rate, xi_ratio, xi_max : sweep t (0-based) uses xi1 = min(xi0 * xi_rate**t, xi_max) and
        xi2 = xi_ratio * xi1; with ``xi_first_zero`` (the authors' choice) sweep 0 uses xi = 0.
    k_max : slot capacity. Exhausting it sets ``overflow`` (the caller raises).
    divergence : "sqeuclidean" (Bregman, default) | "euclidean" (authors' code) | "kl" (rows of x and
        the centroids must be strictly positive, normalised histograms).
    tie : "first" (lowest slot, default) | "last" (authors' ``>=`` scan).
    compat : follow the authors' Octave code (see module docstring); implies nothing else, so pass
        ``divergence="euclidean", tie="last"`` too for a faithful replay.
    variant : "sequential" (Algorithm 1) | "delayed" (parallel pass, at most one new cluster).
    order : "random" (new permutation each sweep) | "fixed" (0..n-1) | "given" (``orders[t]``).
    init / init_centre : "bbox_random" | "mean", or an explicit (d,) initial centroid.
    patience : stop once the partition (compat: the centroid matrix) has been unchanged for
        ``patience`` consecutive sweeps (compat: ``patience`` earlier unchanged sweeps plus this one).
    mesh : None (one device) or a 1-D :class:`jax.sharding.Mesh` with axis ``"data"``
        (:func:`ppclust._devices.resolve_mesh`); needs ``variant="delayed"`` and ``compat=False``. The
        points (and their neighbour-table rows) are split over the devices, padded with zero-weight rows
        to a multiple of the device count; each device assigns its points, the new-cluster candidate is
        the global argmax (``pmax``/``pmin``), per-cluster sums and counts and the objective are reduced
        with ``psum``, and the labels are kept replicated (``all_gather``) for the link counts. Results
        equal the single-device ones up to floating-point summation order.
    """
    if mesh is not None and (variant != "delayed" or compat):
        raise ValueError("a device mesh needs variant='delayed' and compat=False (the sequential sweep "
                         "is inherently serial)")
    x = jnp.asarray(x)
    n = x.shape[0]
    use_links = table is not None and np.asarray(table.wgt).any()
    if table is None:
        table = NeighbourTable.empty(n)
    table = NeighbourTable(jnp.asarray(table.nbr, jnp.int32), jnp.asarray(table.sgn, x.dtype),
                           jnp.asarray(table.wgt, x.dtype))
    k_init, k_run = jax.random.split(key)
    mu0 = _init_centre(k_init, x, init) if init_centre is None else jnp.asarray(init_centre, x.dtype)
    orders = jnp.zeros((1, n), jnp.int32) if orders is None else jnp.asarray(orders, jnp.int32)
    return _fit(k_run, x, table, jnp.asarray(lam, x.dtype), jnp.asarray(xi0, x.dtype),
                jnp.asarray(xi_rate, x.dtype), jnp.asarray(xi_ratio, x.dtype), jnp.asarray(xi_max, x.dtype),
                mu0, orders, k_max=int(k_max), max_iter=int(max_iter), divergence=divergence, tie=tie,
                compat=bool(compat), variant=variant, order=order, patience=int(patience),
                xi_first_zero=bool(xi_first_zero), equal_xi=bool(xi_ratio == 1.0), use_links=bool(use_links),
                mesh=mesh)


def fit_restarts(key, x, table, lam, n_init, **kw) -> DPMeansResult:
    """``n_init`` independent restarts (initial centroid and orders), vmapped; returns stacked results."""
    x = jnp.asarray(x)
    keys = jax.random.split(key, n_init)
    return jax.vmap(lambda k: fit(k, x, table, lam, **kw))(keys)


# ------------------------------------------------------------------------------------------------
# lambda heuristics (spec 3.7)


def kth_farthest_from_mean(x, k, divergence="euclidean"):
    r"""The authors' rule: the k-th largest distance :math:`\|x_i-\bar x\|` of a row to the column mean.

    ``divergence="euclidean"`` gives the plain distance (the value the authors' code uses),
    "sqeuclidean" its square (for squared-Euclidean DP/RDP-means), "kl" the k-th largest
    KL(x_i || mean histogram).
    """
    x = np.asarray(x, dtype=np.float64)
    if not 1 <= k <= x.shape[0]:
        raise ValueError(f"k must be in [1, n_samples={x.shape[0]}], got {k}")
    m = x.mean(axis=0)
    if divergence == "kl":
        with x64():
            dist = np.asarray(kl_divergence(jnp.asarray(x), jnp.asarray(m)[None]))[:, 0]
    else:
        diff = x - m
        dist = np.sqrt(np.sum(diff * diff, axis=1))
        if divergence == "sqeuclidean":
            dist = dist**2
    return float(np.sort(dist)[::-1][k - 1])


def farthest_first(x, k, divergence="sqeuclidean"):
    r"""Kulis & Jordan's farthest-first heuristic: T = {mean}; k times add the point farthest from T.

    Returns the max-min distance at the last (k-th) round, in the units of ``divergence``
    ("sqeuclidean": squared distances, "euclidean": plain).
    """
    x = np.asarray(x, dtype=np.float64)
    if not 1 <= k <= x.shape[0]:
        raise ValueError(f"k must be in [1, n_samples={x.shape[0]}], got {k}")
    diff = x - x.mean(axis=0)
    dmin = np.sum(diff * diff, axis=1)
    last = 0.0
    for _ in range(k):
        j = int(np.argmax(dmin))
        last = float(dmin[j])
        diff = x - x[j]
        dmin = np.minimum(dmin, np.sum(diff * diff, axis=1))
    return last if divergence == "sqeuclidean" else float(np.sqrt(last))


def lambda_from_k(x, k, method="kth_farthest_from_mean", divergence="euclidean"):
    """lambda for a target number of clusters k; ``method``: "kth_farthest_from_mean" | "farthest_first"."""
    if method == "kth_farthest_from_mean":
        return kth_farthest_from_mean(x, k, divergence)
    if method == "farthest_first":
        return farthest_first(x, k, divergence)
    raise ValueError(f"method must be 'kth_farthest_from_mean' or 'farthest_first', got {method!r}")
