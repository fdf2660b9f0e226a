r"""A parallel exact sampler for TVClust: restricted block Gibbs with explicit parameters + split/merge MH.

Target: the TVClust posterior over partitions :math:`p(z \mid x, E)` (:mod:`ppclust.models.tvclust`;
``p, q`` integrated out, ``pq="collapse"``) or :math:`p(z, p, q \mid x, E)` (``pq="sample"``; ``"fixed"``
conditions on given ``p, q``). One sweep is the composition of five kernels ((a), (a'), (b)-(d)), each
leaving the target invariant (Chang & Fisher 2013, "Parallel sampling of DP mixture models using
sub-cluster splits", NIPS, Sections 3-4, made exact as described under (a)). The module is kept whole so
that the invariance argument of the composed sweep reads in one place (its moves and compiled draws live in
:mod:`~ppclust.inference.subcluster_moves` and the ``_subcluster_*_cpu`` twins):

(a) **Split/merge Metropolis-Hastings on the partition** (``n_moves`` proposals per sweep), cluster
    parameters integrated out: a split of a cluster along a freshly fitted pair of sub-clusters, or a
    merge of two clusters, with an exact Hastings ratio (:mod:`ppclust.inference.subcluster_moves`).

(a') **Peel/absorb Metropolis-Hastings** (``max(1, n_moves)`` steps per sweep): one point split off its
    cluster, or a singleton joined to a partner (:mod:`ppclust.inference.subcluster_moves`).

(b) **Link parameters:** ``"sample"``: :math:`p\sim\mathrm{Beta}(a_p+N_{11}, b_p+N_{01})`,
    :math:`q\sim\mathrm{Beta}(a_q+N_{00}, b_q+N_{10})` (spec 2.5). ``"collapse"``: the same draw, used by
    (d) only and then discarded. This is a valid partially collapsed order (van Dyk & Park 2008): (a) is a
    kernel on the :math:`z`-marginal; (b)-(c) draw :math:`(p, q, \pi, \theta)` from their exact joint
    conditional given :math:`z` (``p, q`` depend on the links only, :math:`\pi` on the sizes,
    :math:`\theta` on the points), (d) updates :math:`z` given all of them, and dropping them returns
    the chain to :math:`z` with its marginal intact.

(c) **Augmentation** (Chang & Fisher eq. 7, the restricted finite representation): given the K
    occupied clusters, :math:`(\pi_1..\pi_K, \pi_{K+1})\sim\mathrm{Dir}(n_1, .., n_K, \alpha)` and
    :math:`\theta_k\sim p(\theta\mid x_{C_k})` (``family.sample_posterior``). Multiplying the collapsed
    posterior by these conditionals gives the joint
    :math:`\propto \alpha^K\prod_k\pi_k^{n_k-1}\pi_{K+1}^{\alpha-1}\prod_k p_0(\theta_k)
    \prod_i p(x_i\mid\theta_{z_i})\,p(E\mid z, p, q)`, so for a fixed set of K occupied clusters
    :math:`p(z\mid\pi,\theta,p,q)\propto\prod_i\pi_{z_i}p(x_i\mid\theta_{z_i})\,p(E\mid z,p,q)`,
    restricted to labellings that leave all K clusters occupied.

(d) **Restricted parallel label updates.** Given :math:`\pi,\theta,p,q`, the link likelihood factorises
    over the observed pairs, so :math:`z_i` depends on the other labels only through its link
    neighbours. The link graph is greedily coloured on the host (:func:`colour_links`, once per fit);
    the points of one colour class share no link, hence are conditionally independent given all other
    labels, and drawing them all at once is an exact *block* Gibbs update. Unlinked points form one
    more block. Blocks are visited in a fixed order (a systematic-scan Gibbs sampler over blocks). Each
    block draws every point from :math:`\pi_k p(x_i\mid\theta_k)\exp(f_k\ln\tfrac{p}{1-q}-s_k\ln
    \tfrac{q}{1-p})` (friends :math:`f_k` / strangers :math:`s_k` in cluster k,
    :func:`ppclust.sideinfo.link_counts`) independently; the conditional is this product restricted to
    "no occupied cluster empties", so the block's draw is an independence Metropolis-Hastings proposal
    from the unrestricted product, accepted iff no cluster empties (acceptance ratio 1 inside the
    support, 0 outside). Clusters are created only by splits and removed only by merges.
    *Sub-blocks of the unlinked block* (:func:`accept_sub_blocks`): the unlinked points are cut into
    :math:`B = \min(64, n)` sub-blocks (point i in sub-block :math:`i \bmod B`), visited in the order
    :math:`0, 1, \dots, B-1`, each one such independence MH step on its own: sub-block b takes its
    points' draws iff, given the labels of every other point as they are at that moment (the sub-blocks
    before it updated, the ones after it not yet), no occupied cluster empties. This is again a
    systematic scan over blocks, now over B + (number of colour classes) blocks: the conditional of
    sub-block b given all other labels is the product over its points restricted to the labellings that
    leave the K clusters occupied given the others, and the unrestricted product is a valid independence
    proposal for it (ratio 1 inside that support, 0 outside). The proposal of an unlinked point depends
    on :math:`\pi, \theta` only, never on other labels, so the draws of all sub-blocks can be made at once
    before the scan (the fused draw) and only the acceptance runs in sequence: drawing sub-block b's
    proposal when it is visited would give the same joint law. Why: with one block, a tiny cluster
    (few points, small weight) would almost always be emptied by the unrestricted draw, rejecting the
    whole unlinked block; with sub-blocks only those holding its last points are rejected. The strided cut
    (rather than contiguous index ranges) spreads the points of a small cluster over different
    sub-blocks even when the data are sorted, so it can shrink to one point before a sub-block is
    rejected. At n <= 6 every point is its own sub-block, so the exact enumeration checks this scan.

Each kernel commutes with relabelling the slots, so the induced kernels on partitions are well defined
and the slot labels are bookkeeping only (before (d) the occupied slots are moved to the front and the
label block runs at the smallest width 8, 16, 32, ... holding them, ``lax.switch``; several chains take
the widest any of them needs, so that the switch runs one branch under ``vmap``: ``step``'s
``chain_axis``). Array-shaped
throughout: the unlinked block's data term and draw run fused over chunks of ``_DRAW_CHUNK`` rows
(``family.log_likelihood_matrix``, matrix products; no (n, width) array is stored), a colour class is one
gather of its neighbour-table rows and of its points, a split/merge proposal a few O(n) passes (the
sub-cluster fit sees a fixed-size subsample; the statistics update touches two slots); the sweep is one
XLA program, chains a ``vmap`` axis.
Data parallel (``mesh``, :func:`_block_draw`): the unlinked block, the (n, width) part of a sweep, is
drawn with ``jax.shard_map`` over a 1-D mesh of the points, its slot counts reduced with ``psum``; every
point's draw depends on its own row and the replicated weights and parameters only, so the chain is the
single-device chain (``tests/test_subcluster_multidevice.py``). The end-of-sweep family statistics and
pair counts are sharded too (:func:`_sharded_stats_counts`: each device sums its rows and its share of
the link pairs, ``psum`` adds them). The split/merge moves (O(n_C) per move on a subsample-fitted
proposal) and the colour classes (the linked points, few) still run replicated.
Rows spread over processes (:func:`sample_process_rows`, :mod:`ppclust.distributed`): the sweep runs
inside one ``shard_map`` over every process's devices, each holding its block of rows only
(:class:`~ppclust.inference.subcluster_moves.RowShard`), while every device keeps the labels of all
points (int32, in global row order: the one-process layout). Whatever reads rows is data parallel: the
unlinked block's draw (each device its rows, the draws gathered), a proposal's responsibilities, sides,
:math:`\log q` and new side's statistics (sums reduced), the end-of-sweep statistics; the few rows a
sub-cluster fit, a peel or a colour class reads are sent by the devices holding them. Uniforms are keyed
by global row (:func:`counter_uniform` of the row index), so the chain is the one-process XLA chain up to
the order of the sums.

Two backends (``sample(backend=...)``, :func:`numba_unsupported`), one chain. ``"xla"``: every pass in the
jitted program (GPU, ``mesh``, other families). ``"numba"`` (the CPU default for float64
:class:`~ppclust.families.GaussianNIW`): the O(n) passes of each move run as compiled multi-threaded loops
(:mod:`ppclust.inference._subcluster_cpu`) called from the jitted program through
:func:`jax.pure_callback`, only the branch taken (split or merge) and only for the points of the chosen
cluster(s): the subsample of the sub-cluster fit, the final responsibilities, the Bernoulli sides,
:math:`\log q` and the split side's statistics (the fit's four subsamples in one visit of the labels);
the peel/absorb step's point; the label step's unlinked block (up to d = 4
:func:`ppclust.inference._subcluster_draw_cpu.dense_draw`: blocks of points, every density and weight in
vector loops over the points; above, :func:`ppclust.inference._subcluster_draw_cpu.block_draw`: an O(d)
bound that skips most O(d^2) densities and exps within 20 nats of the largest weight only, with an exact
redraw when the left-out mass could matter); the end-of-sweep statistics too.
The data never cross the callbacks (:func:`sample` holds a host copy for its compiled call,
:func:`ppclust.inference._callback.hold`),
and a per-sweep cluster index (a counting sort of the labels before the moves, its covers updated by
accepted moves, :class:`ppclust.inference._cluster_index.ClusterIndex`) lets a move's kernels visit the
points of its clusters only. The labels do cross, into two callbacks per split/merge move (one returns the
proposal), one per peel/absorb step and four more per sweep, at a fixed cost that grows with their bytes,
so within a sweep the numba backend carries them as uint8 when ``k_max`` < 256 (``_UINT8_SLOTS``; the
same draws).
Everything O(K), the sub-cluster fit on its fixed-size subsample and the colour
classes stay in JAX. Both backends draw point i's uniforms with :func:`counter_uniform` (a hash of a
per-draw seed and i), so a loop draws the uniforms of the points it visits only, and both take the same
decisions up to float rounding (``tests/inference/test_subcluster_cpu.py``: twin by twin, and whole
chains label for label; the exact enumeration runs on both).

Mixing: from one cluster the splits find the clusters in few sweeps; from a start with surplus clusters
the merges remove them more slowly (a few merge attempts per sweep, and two pieces of one blob whose
boundary (d) blurs), so ``TVClust(init="one", algorithm="subcluster")`` (splits only needed) is the faster
start, and more ``n_moves`` shed surplus clusters in fewer sweeps (see docs/decisions/ for the evidence).

Stopping (SIGINT during a fit, :func:`ppclust._progress.interruptible`): the driver waits for the compiled
call interruptibly (:func:`ppclust._progress.run`); once a stop is requested the host callbacks return
without working, the program runs out at once and ``KeyboardInterrupt`` is raised.

Capacity: ``k_max`` slots with an active mask. A split proposed with every slot occupied is rejected and
flags ``overflow`` (the driver raises, as the collapsed sampler does).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust import _progress
from ppclust._buckets import bucket_size, pad_links, pad_rows, pad_vector
from ppclust.errors import KMaxExhaustedError
from ppclust.families import gamma_draws
from ppclust.inference import _callback, _cluster_index, _subcluster_cpu, _subcluster_draw_cpu
from ppclust.inference.backend import resolve_backend
from ppclust.inference.gibbs import ChainResult, GibbsState, init, sweep_info
from ppclust.inference.sampler_config import PQ_MODES, SamplerConfig
from ppclust.inference.subcluster_moves import (
    MoveProblem,
    RowShard,
    counter_seed,
    counter_uniform,
    log_joint_given,
    loglik_matrix,
    peel_absorb_move,
    split_merge_move,
)
from ppclust.models.tvclust import (
    TVClustPrior,
    escobar_west,
    link_beta_params,
    link_log_odds,
    link_reliability,
)
from ppclust.sideinfo import Links, link_counts, pair_counts

__all__ = [
    "Colouring",
    "colour_links",
    "numba_unsupported",
    "step",
    "sample",
    "sample_process_rows",
    "XLA_UP_TO",
]

#: the numba backend draws the unlinked block of the label step (d) on the compiled twin up to this
#: dimension (XLA's fused matrix-product draw above it): every d (the twin's O(d) bounds skip most O(d^2)
#: densities at large d)
_NUMBA_DRAW_MAX_D = 1 << 30
#: above d = 4 the compiled block draw computes exp(l_k - max) only for l_k - max > -_DRAW_CUT and redraws a
#: point with every exp when the left-out mass (< K e^-20 of the total) could change its draw
#: (``_subcluster_draw_cpu.block_draw``: the same draws for any cut)
_DRAW_CUT = 20.0
#: ``backend="auto"`` runs :func:`sample` as one XLA program up to this many points and on the compiled
#: twins above it: below it the twins' fixed cost per callback crossing outweighs their speed. The largest
#: size at which the XLA fit was the faster one at every size up to it, for d = 2 and d = 13
#: (``benchmarks/bench_backend.py``, ``benchmarks/results/backend.md``); the same chain either way
XLA_UP_TO = 10_000
#: :func:`sample` runs its kept draws in calls of at most this many (the last call's surplus draws make no
#: sweep and are dropped): the number of draws and of warm-up sweeps are operands of the compiled program,
#: not shapes, so a new ``n_draws`` or ``n_warmup`` compiles nothing new beyond the block's bucket
#: (:func:`ppclust._buckets.bucket_size` of ``n_draws`` when it is smaller)
_DRAW_BLOCK = 32
#: the smallest row bucket of :func:`sample` (:func:`ppclust._buckets.bucket_size`'s ``minimum``)
_ROWS_MIN = 32
#: the numba backend's move phase carries the labels as uint8 when k_max is below this (the fixed cost of a
#: callback crossing grows with its bytes; the bucket padding's label k_max must fit too); the same draws
_UINT8_SLOTS = 256


class Colouring(NamedTuple):
    """Colour classes of the link graph: ``classes`` (C, m) point indices padded with ``n``; ``linked``
    (n,) bool, the points with at least one link (the unlinked points are one more block).

    Attributes
    ----------
    classes : jax.Array of int of shape (C, m)
        Point indices of each colour class, padded with ``n``.
    linked : jax.Array of bool of shape (n,)
        The points with at least one link (the unlinked points are one more block).

    Examples
    --------
    >>> from ppclust.models.tvclust import make_links
    >>> col = colour_links(make_links(4, [[0, 1], [1, 2]], [1, -1]), 4)
    >>> isinstance(col, Colouring), col.linked.tolist()
    (True, [True, True, True, False])
    """

    classes: jax.Array
    linked: jax.Array


def colour_links(links: Links, n: int) -> Colouring:
    """Greedy colouring of the link graph (host side, NumPy, once per fit): linked points in order of
    decreasing degree take the smallest colour none of their neighbours holds. Sparse links need few
    colours (at most max degree + 1).

    Parameters
    ----------
    links : Links
        The observed pairs.
    n : int
        Number of points.

    Examples
    --------
    >>> from ppclust.models.tvclust import make_links
    >>> colour_links(make_links(3, [[0, 1]], [1]), 3).classes.shape[0]
    2
    """
    wgt = np.asarray(links.wgt)
    nbr = np.asarray(links.nbr)
    has = wgt > 0
    deg = has.sum(1)
    linked = deg > 0
    colour = np.full(n, -1, np.int64)
    for i in np.flatnonzero(linked)[np.argsort(-deg[linked], kind="stable")]:
        used = set(colour[nbr[i][has[i]]].tolist())
        c = 0
        while c in used:
            c += 1
        colour[i] = c
    n_col = int(colour.max()) + 1 if linked.any() else 0
    members = [np.flatnonzero(colour == c) for c in range(n_col)]
    width = max([len(m) for m in members] + [1])
    classes = np.full((max(n_col, 1), width), n, np.int32)
    for c, m in enumerate(members):
        classes[c, : len(m)] = m
    if n_col == 0:
        classes = classes[:0]
    return Colouring(*jax.device_put((classes, linked)))  # a transfer: no program compiled per n


def _bucketed_colouring(colouring: Colouring, n, n_pad) -> Colouring:
    """``colouring`` of ``n`` points for the rows padded to ``n_pad`` (:mod:`ppclust._buckets`): the class
    count and width padded to bucket sizes (at least 4 classes when there is one, 8 points; empty entries
    ``n_pad``, outside every class), the padding rows unlinked. Host side, put on the device without a
    program compiled per size."""
    classes = np.asarray(colouring.classes)
    c, width = classes.shape
    shape = (0 if c == 0 else bucket_size(c, minimum=4), bucket_size(width, minimum=8))
    out = np.full(shape, n_pad, np.int32)
    out[:c, :width] = np.where(classes >= n, n_pad, classes)
    linked = pad_vector(np.asarray(colouring.linked, bool), n_pad, False)
    return Colouring(*jax.device_put((out, linked)))


@partial(jax.jit, static_argnames=("k_max", "n_chains"))
def _init_chains(x, links, family, labels, p, q, alpha, *, k_max, n_chains) -> GibbsState:
    """:func:`ppclust.inference.gibbs.init` of the padded rows (padding label ``k_max``, in no slot),
    broadcast over ``n_chains``: one program per bucket."""
    one = init(x, links, family, k_max=k_max, labels=labels, p=p, q=q, alpha=alpha)
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n_chains,) + a.shape), one._replace(theta=None))


def _pad_labels(lab, n_pad, k_max):
    """Labels (..., n) padded with ``k_max`` (no slot) up to ``n_pad`` on the last axis (host)."""
    lab = np.asarray(lab)
    fill = np.full(lab.shape[:-1] + (n_pad - lab.shape[-1],), k_max, lab.dtype)
    return np.concatenate([lab, fill], axis=-1)


def _draw_rows(logw, u):
    """Inverse-CDF draw per row of (m, K) log-weights with uniforms u (m,)."""
    e = jnp.exp(logw - jnp.max(logw, -1, keepdims=True))
    k = logw.shape[-1]
    # cumulative sums as one product with a triangular ones matrix (XLA:CPU's cumsum is slower);
    # the count of cumulative weights <= u * total is the inverse-CDF index
    c = e @ jnp.triu(jnp.ones((k, k), e.dtype))
    return jnp.minimum(jnp.sum(c <= (u * c[:, -1])[:, None], -1), k - 1).astype(jnp.int32)


def _fused_draw(x, u, keep, labels, family, log_pi, theta, chunk):
    """The unlinked block's draw fused per chunk of rows: data term, weights, inverse-CDF draw and the
    new slot counts of ``chunk`` rows at a time, so no (n, width) array is ever stored (passes over an
    (n, width) array run from memory). Rows with ``keep`` keep ``labels``."""
    n, d = x.shape
    w = log_pi.shape[0]
    m = -(-n // chunk)
    pad = m * chunk - n
    xp = jnp.pad(x, ((0, pad), (0, 0))).reshape(m, chunk, d)
    up = jnp.pad(u, (0, pad)).reshape(m, chunk)
    kp = jnp.pad(keep, (0, pad), constant_values=True).reshape(m, chunk)
    lp = jnp.pad(labels, (0, pad), constant_values=w).reshape(m, chunk)  # padding: counted in no slot

    def body(inp):
        xb, ub, kb, lb = inp
        z = jnp.where(kb, lb, _draw_rows(loglik_matrix(family, theta, xb) + log_pi, ub))
        return z, jnp.sum(z[:, None] == jnp.arange(w, dtype=z.dtype), 0, dtype=jnp.int32)

    z, cnt = jax.lax.map(body, (xp, up, kp, lp))
    return z.reshape(-1)[:n], cnt.sum(0)


#: rows per chunk of the fused unlinked-block draw (fits the (chunk, width) blocks in cache)
_DRAW_CHUNK = 2048


def _replicated(mesh, *trees):
    """``trees`` constrained to be whole on every device of ``mesh``: the fence around a ``shard_map`` of
    this module. Without it XLA's sharding propagation carries the map's row sharding of its operands
    and results into the rest of the sweep (the moves, the colour classes, the relabelling), whose
    gathers and scatters it then partitions over the points, at a cost growing faster than n.
    The map's own operands are then sliced locally (no communication) and its row-sharded result
    gathered once (O(n))."""
    from jax.sharding import NamedSharding
    from jax.sharding import PartitionSpec as P

    whole = NamedSharding(mesh, P())
    out = tuple(jax.tree.map(lambda a: jax.lax.with_sharding_constraint(a, whole), t) for t in trees)
    return out[0] if len(out) == 1 else out


def _block_draw(x, u, keep, labels, family, log_pi, theta, mesh):
    """:func:`_fused_draw` on one device, or data parallel over the 1-D ``mesh`` (``jax.shard_map``): each
    device draws its rows (the draw of a row depends on that row and the replicated ``log_pi, theta``
    only, so the labels are the single-device labels) and the slot counts are summed with ``psum``
    (integers: exact). Rows are padded to a multiple of the device count with kept rows counted nowhere.
    """
    n = x.shape[0]
    if mesh is None:
        return _fused_draw(x, u, keep, labels, family, log_pi, theta, min(_DRAW_CHUNK, n))
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS, pad_rows

    n_pad = pad_rows(n, mesh)
    w = log_pi.shape[0]
    pad = n_pad - n
    x, u, keep, labels = _replicated(mesh, x, u, keep, labels)
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    up = jnp.pad(u, (0, pad))
    kp = jnp.pad(keep, (0, pad), constant_values=True)
    lp = jnp.pad(labels, (0, pad), constant_values=w)
    n_loc = n_pad // int(mesh.devices.size)

    def per_device(xb, ub, kb, lb, log_pi, theta):
        z, cnt = _fused_draw(xb, ub, kb, lb, family, log_pi, theta, min(_DRAW_CHUNK, n_loc))
        return z, jax.lax.psum(cnt, AXIS)

    z, cnt = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(AXIS), P(AXIS), P(AXIS), P(AXIS), P(), P()),
        out_specs=(P(AXIS), P()),
        check_vma=False,
    )(xp, up, kp, lp, log_pi, theta)
    return _replicated(mesh, z[:n], cnt)


def _sharded_stats_counts(x, labels, links, family, k_max, mesh):
    """The end-of-sweep family statistics and pair counts, data parallel over the 1-D ``mesh``
    (``jax.shard_map``): each device sums its rows of ``x`` (``family.stats(..., reduce=psum)``: counts,
    sums and shifted outer products per slot, reduced before the statistics are finished) and its share
    of the link pairs (:func:`ppclust.sideinfo.pair_counts` on its pairs, the labels replicated), and the
    partial sums are added with ``psum``. Padding rows carry label ``k_max`` (counted in no slot) and
    padding pairs weight 0. The same statistics as the single-device pass up to the order of the float
    additions."""
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS, pad_rows

    n = x.shape[0]
    x, labels, links = _replicated(mesh, x, labels, links)
    pad = pad_rows(n, mesh) - n
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    lp = jnp.pad(labels, (0, pad), constant_values=k_max)
    m = links.pairs.shape[0]
    mpad = pad_rows(m, mesh) - m
    pairs = jnp.pad(links.pairs, ((0, mpad), (0, 0)))
    sign = jnp.pad(links.sign, (0, mpad))
    weight = jnp.pad(links.weight, (0, mpad))  # weight 0: a padding pair adds to no count

    def per_device(xb, lb, pb, sb, wb, lab_all):
        psum = partial(jax.lax.psum, axis_name=AXIS)
        st = family.stats(xb, lb, k_max, reduce=psum)
        local = Links(pairs=pb, sign=sb, weight=wb, nbr=None, sgn=None, wgt=None)  # pair_counts reads these
        return st, psum(pair_counts(lab_all, local))

    st, counts = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(AXIS), P(AXIS), P(AXIS), P(AXIS), P(AXIS), P()),
        out_specs=(P(), P()),
        check_vma=False,
    )(xp, lp, pairs, sign, weight, labels)
    return _replicated(mesh, st, counts.astype(x.dtype))


#: sub-blocks of the unlinked block of (d), each accepted or rejected on its own, in turn (point i is in
#: sub-block i mod B, B = min(_SUB_BLOCKS, n)): a tiny cluster then freezes the sub-block(s) of its last
#: point(s) only, not the whole block (module docstring (d))
_SUB_BLOCKS = 64


def _n_sub_blocks(n):
    return max(1, min(_SUB_BLOCKS, int(n)))


def accept_sub_blocks(labels, draw, sizes, n_blocks, max_blocks=None):
    """Acceptance of the unlinked block's draw sub-block by sub-block (module docstring (d)): point i is in
    sub-block ``i mod n_blocks``; in the order 0, 1, ..., sub-block b takes its points' ``draw`` iff, given
    the labels after the sub-blocks before it, no slot occupied in ``sizes`` (the slot sizes of ``labels``)
    empties. Returns ``(labels, sizes)`` after the scan. Rows whose draw equals their label (the kept,
    linked rows and the bucket padding) count nowhere. ``n_blocks`` may be traced (from the number of
    points, not of rows) when ``max_blocks`` (static, ``>= n_blocks``) is given: the sub-blocks past
    ``n_blocks`` are empty and change nothing. Twin: ``_subcluster_draw_cpu.accept_sub_blocks``."""
    n, w = labels.shape[0], sizes.shape[0]
    rows = n_blocks if max_blocks is None else max_blocks
    blk = jnp.arange(n, dtype=jnp.int32) % n_blocks
    chg = (draw != labels).astype(sizes.dtype)
    seg = blk * w
    delta = (
        jax.ops.segment_sum(chg, seg + draw, rows * w) - jax.ops.segment_sum(chg, seg + labels, rows * w)
    ).reshape(rows, w)
    active = sizes > 0

    def visit(now, d):
        trial = now + d
        ok = ~jnp.any(active & (trial == 0))
        return jnp.where(ok, trial, now), ok

    sizes, acc = jax.lax.scan(visit, sizes, delta)
    return jnp.where(acc[blk], draw, labels), sizes


def _label_step(key, labels, sizes, problem: MoveProblem, colouring, log_pi, theta, mesh=None):
    """(d) of the module docstring: unlinked block, then each colour class. The unlinked block is accepted
    sub-block by sub-block (:func:`accept_sub_blocks`), a colour class as a whole, each iff it empties no
    occupied cluster. Point i draws with uniform
    ``counter_uniform(seed, i)``. The unlinked block: the fused XLA draw (:func:`_block_draw`), or with
    ``backend="numba"`` (d <= ``_NUMBA_DRAW_MAX_D``) its compiled twin (the same draws up to rounding); the
    colour classes (gathered rows, few) in XLA on both. ``problem``: the data, links, family, the new
    ``p, q``, the backend, the wired data and the number of points
    (:class:`~ppclust.inference.subcluster_moves.MoveProblem`): bucket padding rows (from ``n_valid`` on)
    are kept like linked points, in no sub-block's count nor colour class. With ``problem.rows`` (rows
    spread over devices, :func:`sample_process_rows`) each device draws its rows of the unlinked block and
    the draws are gathered into every point's labels; the rest runs on every device alike."""
    x, links, family, _, _, p, q, backend, xw, n_valid, rows = problem
    n = labels.shape[0]
    k_max = sizes.shape[0]
    active = sizes > 0
    log_pi = jnp.where(active, log_pi, -jnp.inf)
    seed = counter_seed(key)
    keep = colouring.linked
    if n_valid is None:
        n_blocks, max_blocks = _n_sub_blocks(n), None
    else:  # the sub-blocks of the points (i mod min(64, n_valid)), whatever the padding
        keep = keep | (jnp.arange(n) >= n_valid)
        n_blocks, max_blocks = jnp.clip(n_valid, 1, _SUB_BLOCKS).astype(jnp.int32), _n_sub_blocks(n)
    if backend == "numba" and x.shape[1] <= _NUMBA_DRAW_MAX_D:
        draw, cnt = _subcluster_draw_cpu.draw_block(
            x, keep, labels, log_pi, theta, seed, family, _DRAW_CUT, xw, n_valid
        )
    elif rows is not None:  # this device's rows, their uniforms keyed by global row: as in one process
        u = counter_uniform(seed, rows.rid, x.dtype)
        lab_l = rows.local(labels)
        b = x.shape[0]
        draw_l, cnt = _fused_draw(
            x, u, rows.local(keep, True), lab_l, family, log_pi, theta, min(_DRAW_CHUNK, b)
        )
        draw = rows.to_global(draw_l, labels)
    else:
        u = counter_uniform(seed, jnp.arange(n), x.dtype)
        draw, cnt = _block_draw(x, u, keep, labels, family, log_pi, theta, mesh)
    del cnt  # the unlinked block is accepted sub-block by sub-block (module docstring (d))
    if backend == "numba" and x.shape[1] <= _NUMBA_DRAW_MAX_D:
        labels, sizes = _subcluster_draw_cpu.accept_sub_blocks(labels, draw, sizes, n_blocks)
    else:
        labels, sizes = accept_sub_blocks(labels, draw, sizes, n_blocks, max_blocks)
    xi1, xi2 = link_log_odds(p, q, xp=jnp)
    for c in range(colouring.classes.shape[0]):
        idx = colouring.classes[c]
        real = idx < n
        ii = jnp.where(real, idx, 0)
        f, s, _, _, _ = link_counts(labels[links.nbr[ii]], links.sgn[ii], links.wgt[ii], k_max)
        x_c = x[ii] if rows is None else rows.take(ii)
        logw = loglik_matrix(family, theta, x_c) + log_pi  # the class's rows only (gathered)
        zc = _draw_rows(logw + f * xi1 - s * xi2, counter_uniform(seed, ii, x.dtype)).astype(labels.dtype)
        old = labels[ii]
        w = real.astype(sizes.dtype)
        trial = sizes.at[old].add(-w).at[zc].add(w)
        ok = ~jnp.any(active & (trial == 0))
        labels = labels.at[jnp.where(real & ok, idx, n)].set(zc, mode="drop")
        sizes = jnp.where(ok, trial, sizes)
    return labels


#: the name of the vmapped chain axis of :func:`_run` (``step``'s ``chain_axis``)
_CHAINS = "chains"
#: whether vmapped chains agree on one label-block width per sweep (``step``'s ``chain_axis``); False only
#: as the anchor of ``benchmarks/bench_subcluster.py``'s "chains" section (every width runs, as before).
#: Read by ``sample`` and passed to the jitted ``_run`` as a static argument (part of its cache key)
_AGREE_WIDTH = True


def _widths(k_max):
    """Static widths of the label block: 8, 16, 32, ... (below k_max), and k_max."""
    out, w = [], 8
    while w < k_max:
        out.append(w)
        w *= 2
    return out + [k_max]


def step(
    key,
    state: GibbsState,
    x,
    links: Links,
    colouring: Colouring,
    family,
    prior: TVClustPrior,
    config: SamplerConfig = None,
    *,
    x_wired=None,
    chain_axis=None,
    n_valid=None,
    **options,
):
    """One sweep: ``n_moves`` split/merge, max(1, n_moves) peel/absorb MH steps, ``p, q``, augmentation,
    restricted block label updates (module docstring (a)-(d)). Returns ``(state, moves)`` with ``moves`` a
    :class:`~ppclust.inference.subcluster_moves.MoveInfo` of shape (n_moves,) (the split/merge steps).
    Pure; not jitted.

    Parameters
    ----------
    key, state, x, links :
        As :func:`ppclust.inference.gibbs.step`; ``x`` may also be a
        :class:`~ppclust.inference.subcluster_moves.RowShard` (inside :func:`sample_process_rows`'
        ``shard_map``: this device's rows, the labels those of every point).
    colouring : :class:`Colouring`
        The link graph's colour classes (:func:`colour_links`).
    family, prior :
        As :func:`ppclust.inference.gibbs.step`.
    config : :class:`~ppclust.inference.sampler_config.SamplerConfig` or None, default=None
        Read: ``pq``, ``n_moves``, ``sample_alpha``, ``alpha_shape``, ``alpha_rate``, ``mesh`` (None, or a
        1-D data mesh over which the unlinked block of (d) is drawn; the same draws) and ``backend``
        (``"xla"``, or ``"numba"``: the O(n) passes on the compiled twins of
        :mod:`ppclust.inference._subcluster_cpu`, one device; the same chain). None:
        ``SamplerConfig(n_moves=1, backend="xla")``; ``**options`` replace single fields.
    x_wired : :class:`~ppclust.inference._callback.Wired` or None, default=None
        For the numba backend, ``x`` as the compiled twins take it (made here when None: make it once
        outside a loop over sweeps, it is a copy of ``x``).
    chain_axis : str or None, default=None
        Under ``jax.vmap`` over chains, the vmapped axis' name: the chains then agree on one label-block
        width, the widest any of them needs (``lax.pmax``), so the width ``switch`` keeps an unbatched index
        and runs one branch. A chain drawn at a wider width than its own draws the same labels up to float
        rounding: the extra slots are empty, with weight exp(-inf) = 0.
    n_valid : int scalar or None, default=None
        Rows ``0 .. n_valid - 1`` of ``x`` are the points; the rows after them are bucket padding
        (:mod:`ppclust._buckets`: label ``k_max``, no links, never in a colour class), in no cluster, sum,
        draw or move. Traced: one program serves every ``n_valid`` of a bucket, and the sweep's draws do
        not depend on the padding (the sub-blocks, the sub-cluster fit's subsample sizes and the
        concentration update count the points). None: every row is a point.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> state = init(x, links, fam, k_max=4)
    >>> new, moves = step(jax.random.key(0), state, x, links, colour_links(links, 4), fam, TVClustPrior())
    >>> new.labels.shape, moves.accepted.shape
    ((4,), (1,))
    """
    cfg = (SamplerConfig(n_moves=1, backend="xla") if config is None else config).with_options(**options)
    pq, n_moves, sample_alpha, mesh = cfg.pq, cfg.n_moves, cfg.sample_alpha, cfg.mesh
    rows = None
    if isinstance(x, RowShard):  # rows spread over devices (sample_process_rows): x is this device's rows
        rows, x = x, x.x
    backend = resolve_backend(cfg.backend, numba_unsupported(family, x.dtype, mesh, rows is not None))
    n = x.shape[0]
    if backend == "numba" and x_wired is None:
        x_wired = _callback.wired(x)
    k_max = state.stats.n.shape[0]
    k_moves, k_p, k_pi, k_theta, k_lab, k_alpha = jax.random.split(key, 6)
    prior_now = prior._replace(alpha=state.alpha)
    labels, stats, counts = state.labels, state.stats, state.counts
    lj = log_joint_given(stats, counts, family, prior_now, pq, state.p, state.q)

    index = None
    if backend == "numba":  # the points of each slot, once per sweep: a move visits its clusters' points only
        if k_max < _UINT8_SLOTS and mesh is None:  # the sweep carries uint8 labels: each of its callbacks
            labels = labels.astype(jnp.uint8)  # takes them (and returns a proposal or a draw) in a quarter of
            # the bytes; the same draws (tests/inference/test_subcluster_cpu.py: numba chain == xla chain)
        index = _cluster_index.cluster_index(labels, k_max)

    problem = MoveProblem(x, links, family, prior_now, pq, state.p, state.q, backend, x_wired, n_valid, rows)

    def one(carry, k):
        labels, lj, stats, counts, full, index = carry
        labels, lj, stats, counts, f, info, *rest = split_merge_move(
            k, labels, lj, stats, counts, problem, index
        )
        return (labels, lj, stats, counts, full | f, index if index is None else rest[0]), info

    (labels, lj, stats, counts, full, index), moves = jax.lax.scan(
        one, (labels, lj, stats, counts, jnp.asarray(False), index), jax.random.split(k_moves, n_moves)
    )

    # (a'): max(1, n_moves) peel/absorb steps per sweep (one point moves: O(1) but finding it)
    def peel(carry, k):
        labels, lj, stats, counts, full, index = carry
        labels, lj, stats, counts, f, _, *rest = peel_absorb_move(
            k, labels, lj, stats, counts, problem, index
        )
        return (labels, lj, stats, counts, full | f, index if index is None else rest[0]), None

    peel_keys = jax.vmap(lambda j: jax.random.fold_in(k_moves, j))(n_moves + jnp.arange(max(1, n_moves)))
    (labels, lj, stats, counts, full, index), _ = jax.lax.scan(
        peel, (labels, lj, stats, counts, full, index), peel_keys
    )
    p, q = state.p, state.q
    if pq != "fixed":  # (b): Beta conditionals given the partition
        g = gamma_draws(
            k_p,
            jnp.stack(link_beta_params(counts, prior.a_p, prior.b_p, prior.a_q, prior.b_q)).astype(x.dtype),
            (4,),
            x.dtype,
        )
        p, q = g[0] / (g[0] + g[1]), g[2] / (g[2] + g[3])
    # (c): pi_k ~ Dir(n_1..n_K, alpha) up to normalisation (pi_{K+1} is not needed), theta_k | x_k
    active = stats.n > 0
    g = gamma_draws(k_pi, jnp.where(active, stats.n, 1.0), (k_max,), x.dtype)
    log_pi = jnp.where(active, jnp.log(g), -jnp.inf)
    theta = family.sample_posterior(k_theta, stats)
    # the occupied slots first (a relabelling: the partition is unchanged), then the label block over
    # the smallest width of _widths(k_max) holding them: (n, width) instead of (n, k_max) arrays
    order = jnp.argsort(~active, stable=True)
    log_pi, theta = log_pi[order], jax.tree.map(lambda a: a[order], theta)
    # (bucket padding keeps its label k_max: the permutation is extended by k_max -> k_max)
    perm = jnp.append(jnp.argsort(order), k_max).astype(labels.dtype)
    labels = perm[labels]
    n_act = active.sum()
    widths = _widths(k_max)

    label_problem = problem._replace(p=p, q=q)

    def block(w):
        return lambda lab: _label_step(
            k_lab,
            lab,
            stats.n[order][:w],
            label_problem,
            colouring,
            log_pi[:w],
            jax.tree.map(lambda a: a[:w], theta),
            mesh,
        )

    branch = jnp.sum(jnp.asarray(widths) < n_act)
    if chain_axis is not None:  # one width for all chains: an unbatched index, one branch runs
        branch = jax.lax.pmax(branch, chain_axis)
    labels = jax.lax.switch(branch, [block(w) for w in widths], labels)
    if rows is not None:  # every device's rows' sums, reduced; the links' counts from every point's labels
        stats = rows.stats(family, rows.local(labels, k_max), k_max)
        counts = pair_counts(labels, links).astype(x.dtype)
    elif mesh is not None:  # the points' and the links' sums per device, reduced with psum
        stats, counts = _sharded_stats_counts(x, labels, links, family, k_max, mesh)
    else:
        if backend == "numba":  # at every d: XLA's segment sums run as three unfused scatters, and the
            # O(n d^2) sums dominate the sweep at large d
            stats = _subcluster_cpu.family_stats(x, labels, k_max, family, x_wired, n_valid)
        else:
            stats = family.stats(x, labels, k_max)
        counts = pair_counts(labels, links).astype(x.dtype)
    if pq == "collapse":  # report E[p | z, E], E[q | z, E] as the collapsed sampler does
        p, q = link_reliability(counts, prior.a_p, prior.b_p, a_q=prior.a_q, b_q=prior.b_q, xp=jnp)
    alpha = state.alpha
    if sample_alpha:
        n_points = n if n_valid is None else n_valid
        alpha = escobar_west(k_alpha, alpha, (stats.n > 0).sum(), n_points, cfg.alpha_shape, cfg.alpha_rate)
    labels = labels.astype(state.labels.dtype)
    new = GibbsState(labels, stats, counts, p, q, alpha, state.overflow | full, None)
    return new, moves


def numba_unsupported(family, dtype, mesh=None, rows=False) -> str | None:
    """Why the compiled passes (:mod:`ppclust.inference._subcluster_cpu`) cannot run this problem, or None:
    they need numba, one device (no ``mesh``) and a float64 :class:`~ppclust.families.GaussianNIW` family
    (the argument ``unsupported`` of :func:`ppclust.inference.backend.resolve_backend`).

    Parameters
    ----------
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    dtype : dtype
        Float type of the data.
    mesh : jax.sharding.Mesh or None, default=None
        The data mesh, if any.
    rows : bool, default=False
        Rows spread over processes (:func:`sample_process_rows`).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> numba_unsupported(GaussianNIW.default(jnp.eye(3)), jnp.float32) is None
    False
    """
    if rows:
        return (
            "of the sub-cluster sampler needs every row in one process (rows spread over processes run XLA)"
        )
    if mesh is not None or not _subcluster_cpu.supports(family, dtype):
        return (
            "of the sub-cluster sampler needs numba, one device (no mesh) and a float64 GaussianNIW "
            f"family (got {type(family).__name__}, {np.dtype(dtype)}, mesh={mesh is not None})"
        )
    return None


def sample(
    key,
    x,
    links: Links,
    family,
    prior: TVClustPrior = TVClustPrior(),
    config: SamplerConfig = None,
    *,
    init_labels=None,
    init_state: GibbsState | None = None,
    colouring: Colouring | None = None,
    **options,
) -> ChainResult:
    """Run ``n_chains`` chains of the sub-cluster sampler: ``jit(vmap(scan))`` over sweeps.

    The same arguments and the same :class:`~ppclust.inference.gibbs.ChainResult` as
    :func:`ppclust.inference.gibbs.sample` (``log_joint`` is the collapsed log joint, ``p, q`` the draws in
    ``"sample"`` mode and the conditional means in ``"collapse"`` mode), with these differences.

    Parameters
    ----------
    key, x, links, family, prior :
        As :func:`ppclust.inference.gibbs.sample`.
    config : :class:`~ppclust.inference.sampler_config.SamplerConfig` or None, default=None
        The run's options, ``**options`` replacing single fields. Read here besides the common ones:
        ``n_moves`` (split/merge proposals per sweep) and ``mesh`` (None, or a 1-D
        :class:`jax.sharding.Mesh` with axis ``"data"``: the unlinked block's draw is split over its
        devices; the same chain). ``progress_bar`` is ignored (the draws run in calls of at most
        ``_DRAW_BLOCK`` draws of one compiled program, whose draw and warm-up counts are operands, so a new
        ``n_draws`` or ``n_warmup`` compiles nothing); ``algorithm``,
        ``partition``, ``devices``, ``chunk`` and ``desc`` do not apply. ``backend="auto"`` is ``"numba"``
        on CPU without a mesh for a float64 :class:`~ppclust.families.GaussianNIW` family
        (:func:`numba_unsupported`) above :data:`XLA_UP_TO` points, else ``"xla"``; the same chain up
        to float rounding either way.
    init_labels, init_state :
        As :func:`ppclust.inference.gibbs.sample`.
    colouring : :class:`Colouring` or None, default=None
        Precomputed :func:`colour_links` (else computed here, host side).

    Returns
    -------
    ChainResult
        The draws, shapes (n_chains, n_draws, ...), and the final states.

    Raises
    ------
    KMaxExhaustedError
        When a split was proposed with all ``k_max`` slots occupied.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> res = sample(jax.random.key(0), x, links, fam, n_draws=2, n_warmup=2, n_chains=1, k_max=4,
    ...              backend="xla")
    >>> res.labels.shape
    (1, 2, 4)
    """
    cfg = (SamplerConfig() if config is None else config).with_options(**options)
    cfg.check_unused(("algorithm", "partition", "devices", "chunk", "desc"), "subcluster.sample")
    n_draws, n_warmup, n_chains, thin, k_max = cfg.n_draws, cfg.n_warmup, cfg.n_chains, cfg.thin, cfg.k_max
    pq, p, q, sample_alpha = cfg.pq, cfg.p, cfg.q, cfg.sample_alpha
    alpha_shape, alpha_rate = cfg.alpha_shape, cfg.alpha_rate
    n_moves, mesh, backend, store_labels = cfg.n_moves, cfg.mesh, cfg.backend, cfg.store_labels
    if pq not in PQ_MODES:
        raise ValueError(f"pq must be one of {PQ_MODES}, got {pq!r}")
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    n = x.shape[0]
    backend = resolve_backend(backend, numba_unsupported(family, x.dtype, mesh), n=n, xla_up_to=XLA_UP_TO)
    if colouring is None:
        colouring = colour_links(links, n)
    # bucket padding (ppclust._buckets): rows, links, neighbour table and colour classes padded on the host
    # to bucket sizes, so one program serves every n of a bucket; padding rows carry label k_max (in no
    # slot), no link and no colour class, and the sweep counts the first n rows only (n_valid)
    n_pad = bucket_size(n, minimum=_ROWS_MIN)
    n_valid = np.int32(n)
    x = jax.device_put(pad_rows(np.asarray(x), n_pad)[0])
    links = Links(*jax.device_put(tuple(pad_links(links, n_pad))))
    colouring = _bucketed_colouring(colouring, n, n_pad)
    if init_state is None:
        lab = np.zeros(n, np.int32) if init_labels is None else np.asarray(init_labels, np.int32)
        lab = _pad_labels(lab, n_pad, k_max)
        state = _init_chains(x, links, family, lab, p, q, prior.alpha, k_max=k_max, n_chains=n_chains)
    else:  # host copy: a state left sharded by a mesh run must not change the compiled program's inputs
        state = jax.tree.map(np.asarray, init_state._replace(theta=None))
        if state.labels.shape[-1] != n_pad:  # a state of the unpadded rows
            state = state._replace(labels=_pad_labels(state.labels, n_pad, k_max))
        state = jax.device_put(state)
        n_chains = state.labels.shape[0]
    keys = jax.random.split(jax.random.fold_in(key, 0), n_chains)
    block = min(bucket_size(n_draws, minimum=1), _DRAW_BLOCK)
    n_calls = -(-int(n_draws) // block)
    # draw j of chain c is keyed split(keys[c], n_draws)[j] under JAX's partitionable threefry (its
    # default: a split is a prefix of a longer one, ppclust._buckets.split_count), so the blocks draw what
    # one call of all draws would
    draw_keys = jax.vmap(lambda k: jax.random.split(k, n_calls * block))(keys)
    # the options the compiled program depends on (a static argument: equal options, one program)
    run_cfg = SamplerConfig(
        n_draws=block,
        n_warmup=0,  # an operand (`counts` below)
        thin=int(thin),
        pq=pq,
        n_moves=int(n_moves),
        sample_alpha=bool(sample_alpha),
        store_labels=bool(store_labels),
        mesh=mesh,
        backend=backend,
    )
    data = (x, links, colouring, family, prior, alpha_shape, alpha_rate, n_valid)
    infos = []
    # every kept draw's labels, filled block by block (no second copy)
    labels = np.empty((n_chains, n_draws, n), np.int32) if store_labels else None

    def run_all(**token):
        st = state
        for b in range(n_calls):
            counts = (jnp.int32(b * block), jnp.int32(n_warmup), jnp.int32(n_draws))
            kb = draw_keys[:, b * block : (b + 1) * block]
            st, (lab_b, info_b) = _progress.run(
                _run, kb, st, data, counts, config=run_cfg, agree_width=_AGREE_WIDTH, **token
            )
            infos.append(jax.device_get(info_b))
            if labels is not None:
                lo, hi = b * block, min((b + 1) * block, n_draws)
                labels[:, lo:hi] = np.asarray(lab_b)[:, : hi - lo, :n]
        return st

    if backend == "numba":  # the callbacks read x from a host copy held for this call (never an operand)
        with _callback.hold(x) as token:  # the callbacks run before the block releases the copy
            state = run_all(x_token=token)
    else:
        state = run_all()
    info = jax.tree.map(lambda *a: np.concatenate(a, axis=1)[:, :n_draws], *infos)
    return _chain_result(labels, info, state, k_max, n)


def _chain_result(labels, info, state, k_max, n) -> ChainResult:
    """The :class:`ChainResult` of a run's kept ``labels`` and sweep ``info`` (host arrays), after
    checking that no split found every one of the ``k_max`` slots occupied."""
    if bool(np.any(np.asarray(state.overflow))):
        raise KMaxExhaustedError(
            f"k_max={k_max} cluster slots were exhausted (a split was proposed with every slot occupied); "
            f"increase k_max (at most n={n} is ever needed) or lower alpha."
        )
    return ChainResult(
        labels=labels,
        n_clusters=np.asarray(info.n_clusters),
        log_joint=np.asarray(info.log_joint),
        p=np.asarray(info.p),
        q=np.asarray(info.q),
        alpha=np.asarray(info.alpha),
        state=state,
    )


def sample_process_rows(
    key,
    x,
    links: Links,
    family,
    prior: TVClustPrior = TVClustPrior(),
    config: SamplerConfig = None,
    *,
    init_labels=None,
    **options,
) -> ChainResult:
    """:func:`sample` on rows spread over processes (:mod:`ppclust.distributed`); call it on every process
    with the same arguments.

    Every device draws the labels of its own rows in the label step and sums its rows' statistics (reduced
    over the processes), and every process keeps the labels of all points (int32 per point, a point's link
    term reads its partners' labels), so the moves, ``p, q`` and alpha are decided alike everywhere; the
    split/merge fit gathers only its subsamples' rows. Uniforms are keyed by global row, so the chains are
    those of :func:`sample` with ``backend="xla"`` on all the rows in one process, up to the order of
    floating-point sums.

    Parameters
    ----------
    key :
        As :func:`sample` (the same on every process).
    x : jax.Array of shape (P * block, d)
        The global rows (:func:`ppclust.distributed.process_rows`).
    links : Links
        Every link, by *global* row index (``make_links(n, ...)`` with ``n`` all the points; the same on
        every process).
    family, prior :
        As :func:`sample` (the same on every process).
    config : :class:`~ppclust.inference.sampler_config.SamplerConfig` or None, default=None
        As :func:`sample`; ``mesh`` must be None and ``backend`` "auto" or "xla" (the run is XLA).
    init_labels : array-like of int of shape (n,) or None, default=None
        Starting labels of every point in global row order (None: one cluster).

    Returns
    -------
    ChainResult
        As :func:`sample`, but ``labels`` (when stored) is a global array of shape ``(P * block, n_chains,
        n_draws)`` with ``x``'s row sharding (:func:`ppclust.distributed.local` gives this process's rows)
        and ``state.labels`` holds every point's final labels (n_pad, global row order, bucket padding last).

    Raises
    ------
    KMaxExhaustedError
        When a split was proposed with all ``k_max`` slots occupied.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust import distributed
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import make_links
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> xg = distributed.process_rows(X)  # one process here: the same code runs on every process
    >>> res = sample_process_rows(jax.random.key(0), xg, make_links(4, [[0, 1]], [1]),
    ...                           GaussianNIW.default(X), n_draws=2, n_warmup=2, n_chains=1, k_max=4)
    >>> distributed.local(res.labels).shape
    (4, 1, 2)
    """
    from ppclust import _devices

    cfg = (SamplerConfig() if config is None else config).with_options(**options)
    cfg.check_unused(
        ("algorithm", "partition", "devices", "chunk", "desc", "mesh"), "subcluster.sample_process_rows"
    )
    if cfg.pq not in PQ_MODES:
        raise ValueError(f"pq must be one of {PQ_MODES}, got {cfg.pq!r}")
    if cfg.n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {cfg.n_draws}")
    resolve_backend(
        "xla" if cfg.backend == "auto" else cfg.backend, numba_unsupported(family, x.dtype, rows=True)
    )
    layout = _devices.layout_of(x)
    n, k_max, me = layout.n, int(cfg.k_max), jax.process_index()
    n_pad = bucket_size(n, minimum=_ROWS_MIN)
    host = lambda tree: jax.tree.map(np.asarray, tree)  # noqa: E731  (replicated inputs: host arrays)
    colouring = host(_bucketed_colouring(colour_links(links, n), n, n_pad))
    links = Links(*pad_links(links, n_pad))
    lab = np.zeros(n, np.int32) if init_labels is None else np.asarray(init_labels, np.int32)
    lab = _pad_labels(lab, n_pad, k_max)
    lo = layout.offsets[me]
    rid = _devices.from_process_rows(np.arange(lo, lo + layout.counts[me], dtype=np.int32), layout, n_pad)
    pos = np.full(n_pad, -1, np.int32)
    pos[:n] = layout.positions(np.arange(n))
    keys = jax.random.split(jax.random.fold_in(key, 0), int(cfg.n_chains))
    run_cfg = SamplerConfig(
        n_draws=int(cfg.n_draws),
        n_warmup=int(cfg.n_warmup),
        thin=int(cfg.thin),
        pq=cfg.pq,
        n_moves=int(cfg.n_moves),
        sample_alpha=bool(cfg.sample_alpha),
        store_labels=bool(cfg.store_labels),
        backend="xla",
    )
    start = (lab, np.float64(cfg.p), np.float64(cfg.q), np.float64(prior.alpha))
    data = (links, colouring, family, prior, cfg.alpha_shape, cfg.alpha_rate, np.int32(n))
    run = partial(
        _run_rows,
        keys,
        start,
        (x, rid, pos),
        data,
        config=run_cfg,
        k_max=k_max,
        mesh=_devices.global_mesh(),
    )
    state, (lab_out, info) = _progress.run(run)
    info, state = jax.tree.map(np.asarray, (info, state))
    labels = None if lab_out is None else _devices.register_layout(lab_out, layout)
    return _chain_result(labels, info, state, k_max, n)


@partial(jax.jit, static_argnames=("config", "k_max", "mesh"))
def _run_rows(keys, start, rows_data, data, *, config, k_max, mesh):
    """The chains of :func:`sample_process_rows`: one ``shard_map`` over the ``"data"`` axis of every
    process's devices, each device its block of rows (:class:`~ppclust.inference.subcluster_moves.RowShard`),
    everything else replicated."""
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS

    links, colouring, family, prior, alpha_shape, alpha_rate, n_valid = data
    cfg = config.with_options(alpha_shape=alpha_shape, alpha_rate=alpha_rate)

    def per_device(keys, start, x, rid, pos):
        rows = RowShard(x, rid, pos)
        lab, p, q, alpha = start
        one = GibbsState(
            lab,
            rows.stats(family, rows.local(lab, k_max), k_max),
            pair_counts(lab, links).astype(x.dtype),
            jnp.asarray(p, x.dtype),
            jnp.asarray(q, x.dtype),
            jnp.asarray(alpha, x.dtype),
            jnp.asarray(False),
            None,
        )
        state = jax.tree.map(lambda a: jnp.broadcast_to(a, (keys.shape[0],) + a.shape), one)

        def sweep(key, st, **more):
            return step(key, st, rows, links, colouring, family, prior, cfg, n_valid=n_valid, **more)[0]

        state, (lab_out, info) = _chains(
            keys, state, sweep, (family, prior), config, _AGREE_WIDTH, kept=rows.local
        )
        if lab_out is not None:  # (n_chains, n_draws, b) -> this device's rows first
            lab_out = jnp.moveaxis(lab_out, -1, 0)
        return state, (lab_out, info)

    rows_spec = P(AXIS) if config.store_labels else None
    return jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P(), P(AXIS), P(AXIS), P()),
        out_specs=(P(), (rows_spec, P())),
        check_vma=False,
    )(keys, start, *rows_data)


@partial(jax.jit, static_argnames=("config", "agree_width"))
def _run(keys, state, data, counts, *, config, agree_width=True, x_token=None):
    x, links, colouring, family, prior, alpha_shape, alpha_rate, n_valid = data
    kw = dict(config=config.with_options(alpha_shape=alpha_shape, alpha_rate=alpha_rate), n_valid=n_valid)
    if config.backend == "numba":  # x never crosses the host callbacks: read from the copy held under x_token
        kw["x_wired"] = _callback.wired(x, x_token)

    def sweep(key, st, **more):
        return step(key, st, x, links, colouring, family, prior, **kw, **more)[0]

    return _chains(keys, state, sweep, (family, prior), config, agree_width, counts=counts)


def _chains(keys, state, sweep, model, config, agree_width, kept=None, counts=None):
    """The chains of :func:`_run` (and of :func:`_run_rows`): ``sweep(key, state, **more)`` one sweep,
    ``model`` the ``(family, prior)`` of the draws' summaries, ``kept`` what a kept draw stores of the labels
    (None: all of them). ``counts``: None (``keys`` one per chain, ``config.n_draws`` draws after
    ``config.n_warmup`` warm-up sweeps) or ``(first, n_warmup, n_draws)`` traced, ``keys`` then the
    ``config.n_draws`` draw keys per chain of draws ``first, first + 1, ...`` (a block of :func:`sample`;
    draws past ``n_draws`` make no sweep)."""
    family, prior = model
    thin = config.thin
    if counts is None:
        first, n_warmup, n_total = 0, config.n_warmup, config.n_draws
        draw_keys = jax.vmap(lambda k: jax.random.split(k, config.n_draws))(keys)
    else:
        (first, n_warmup, n_total), draw_keys = counts, keys
    more = {}

    def chain(keys_c, st):
        # `step` appears once in the program (compile time): draw j runs its sweeps t in [lo, hi), the
        # warm-up being the first n_warmup sweeps of draw 0, sweep t keyed fold_in(key j, t)
        def body(s, inp):
            k, j = inp
            lo = jnp.where(j == 0, -n_warmup, 0)
            hi = jnp.where(j < n_total, thin, lo)
            s = jax.lax.fori_loop(
                lo, hi, lambda t, s_: sweep(jax.random.fold_in(k, t + n_warmup), s_, **more), s
            )
            lab = (s.labels if kept is None else kept(s.labels)) if config.store_labels else None
            return s, (lab, sweep_info(s, family, prior, config.pq))

        js = first + jnp.arange(keys_c.shape[0])
        return jax.lax.scan(body, st, (keys_c, js))

    if draw_keys.shape[0] == 1:  # one chain: no vmap, so lax.switch over the label-block widths runs one
        # branch (a batched branch index turns switch and cond into a select that runs every branch)
        out = chain(draw_keys[0], jax.tree.map(lambda a: a[0], state))
        return jax.tree.map(lambda a: a[None], out)
    if agree_width:  # several chains: they agree on one width per sweep (see `step`)
        more["chain_axis"] = _CHAINS
    return jax.vmap(chain, axis_name=_CHAINS)(draw_keys, state)
