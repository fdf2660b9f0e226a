r"""A parallel exact sampler for TVClust: restricted block Gibbs with explicit parameters + split/merge MH.

Target: the TVClust posterior over partitions :math:`p(z \mid x, E)` (:mod:`ppclust.models.tvclust`;
``p, q`` integrated out, ``pq="collapse"``) or :math:`p(z, p, q \mid x, E)` (``pq="sample"``; ``"fixed"``
conditions on given ``p, q``). One sweep is the composition of five kernels ((a), (a'), (b)-(d)), each
leaving the target invariant (Chang & Fisher 2013, "Parallel sampling of DP mixture models using
sub-cluster splits", NIPS, Sections 3-4, made exact as described under (a)):

(a) **Split/merge Metropolis-Hastings on the partition** (``n_moves`` proposals per sweep), cluster
    parameters integrated out; ``p, q`` integrated out too in ``"collapse"`` mode, so the ratio uses the
    Beta-function link likelihood of the four pair counts (spec 2.6), else the explicit one.
    With probability 1/2 a *split*: pick an occupied cluster :math:`C` uniformly (1/K), fit two
    *sub-clusters* to its points afresh (:func:`subcluster_responsibilities`: two random seeds, a few
    classification-EM iterations with parameters drawn from the family's posterior), and send each point
    :math:`i\in C` to side A with probability :math:`r_i` independently (:math:`r_i` clipped to
    :math:`[\sigma(-30), \sigma(30)]`, so every bipartition has positive probability). Otherwise a *merge*
    of a pair of clusters chosen with probability :math:`P_m(\{a,b\}\mid z)` (:func:`merge_pair_log_prob`:
    1/8 a uniform pair, :math:`2/(K(K-1))`, 7/8 a uniform cluster and a partner with near means
    likelier). With
    :math:`q(\{A,B\}\mid C,\phi)=\prod_A r_i\prod_B(1-r_i)+\prod_A(1-r_i)\prod_B r_i` (the split is an
    unordered pair), the Hastings ratios are

    .. math::

        \log H_{\rm split} = \Delta\log p + \log P_m(\{A,B\}\mid z') + \log K - \log q(\{A,B\}\mid C,\phi_C),
        \qquad
        \log H_{\rm merge} = \Delta\log p - \log(K-1) + \log q(\{A,B\}\mid C,\phi_C)
        - \log P_m(\{a,b\}\mid z),

    with :math:`K` the current number of clusters and :math:`\Delta\log p` the change of the log joint
    (:func:`ppclust.models.tvclust.log_joint_from_stats`: CRP, NIW marginals, link likelihood).
    *Why this is exact.* Chang & Fisher keep sub-cluster labels in the state and propose the current
    sub-clusters as the split; the reverse merge then needs the probability of sub-cluster labels that
    were themselves produced by past sweeps, which their ratio leaves out. Here the sub-cluster fit
    :math:`\phi_C` is an auxiliary variable drawn afresh from a kernel :math:`h(\cdot\mid x_C)` that
    depends on :math:`C`'s points only, on the extended target :math:`p(z)\prod_k h(\phi_k\mid x_{C_k})`;
    refreshing :math:`\phi` from :math:`h` is a Gibbs step, so :math:`\phi` never needs storing.
    :math:`\phi = (\text{EM subsample and keys}, I, y, \text{key})`: a classification EM on a uniform
    subsample of :math:`C`; a *labelled subsample* :math:`I` of ``_LAB_FIT`` = 64 points with side labels
    :math:`y`; the sub-cluster parameters are drawn from the family's posterior of the labelled points
    (each weighted :math:`n_C/64`) and give :math:`r_i` for every point (:func:`subcluster_responsibilities`).
    Under :math:`h`, :math:`I` is uniform (:math:`n_C^{-64}`) and :math:`y` is, with probability
    ``_LAB_SUBSET`` = 0.1, a uniform-size uniform subset (:math:`1/(65\binom{64}{k})`), else the EM
    sides with each label flipped with probability ``_LAB_FLIP`` (either orientation). A split draws
    :math:`\phi_C` from :math:`h`, the sides from :math:`r`, and :math:`\phi_A, \phi_B` from :math:`h`
    (they cancel). A merge of :math:`a, b` instead *proposes* :math:`\phi_C` from the pieces, :math:`m(I,
    y\mid a, b)`: each point of :math:`I` from :math:`a` with probability :math:`\beta_a =
    \mathrm{clip}(n_a/n_C, 1/16, 15/16)`, else from :math:`b`, uniform within its piece, and :math:`y` =
    the pieces' labels of :math:`I` in a random orientation, each flipped with probability ``_LAB_FLIP``;
    the EM part and the keys are drawn as under :math:`h`. So the fit of the union is a fit of the two
    pieces (their boundary, however blurred, is what :math:`r` reproduces), and the ratio carries the
    density ratio of :math:`\phi_C`: :math:`\log q` above stands for :math:`\log q(\{A,B\}\mid\phi_C) +
    \log h(I, y\mid x_C) - \log m(I, y\mid A, B)` in both directions (the split's reverse is a merge
    proposing the very :math:`\phi_C` the split used). Both :math:`h` and :math:`m` are explicit products
    (64 terms), the EM draws and keys cancel, and :math:`h, m > 0` everywhere, so every move has its
    reverse. ``tests/test_subcluster.py`` checks :math:`\log H` (including :math:`\log h - \log m`,
    written out in probability space) against a brute-force ratio of joint densities, the merge's draws of
    :math:`(I, y)` against :math:`m`, and the whole sampler against the exact posterior over all
    partitions of 5 and 6 points.

(a') **Peel/absorb Metropolis-Hastings** (``max(1, n_moves)`` steps per sweep, after the split/merge
    steps; each step moves one point and costs O(1) besides finding it): with
    probability 1/2 a *peel* (a uniform cluster with :math:`\ge 2` points, a uniform point of it, split
    off alone), else an *absorb* (a uniform singleton cluster joins a partner drawn as the merge's
    informed partner, :func:`_neighbour_log_probs`). The Hastings ratio is :math:`\Delta\log p` plus the
    log ratio of the reverse and forward proposal probabilities (:func:`peel_absorb_log_probs`, counting
    the two ways a 2-point cluster peels, or two singletons absorb, into the same partition). A
    singleton costs the split/merge fit an unlikely bipartition; the peel proposes it with probability
    :math:`1/(K n_C)`, so singletons left by (d) are absorbed quickly. (d) shrinks a small cluster whose
    points belong elsewhere to its last point (see its sub-blocks), so absorbs are needed about as often
    as merges: one step per sweep left singletons and 2-point clusters alive for tens of sweeps from a
    wrong K (``benchmarks/results/subcluster.md``, "Mixing from a wrong K").

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
    (few points, small weight) is almost always emptied by the unrestricted draw, which rejected the whole
    unlinked block; now only the sub-blocks holding its last points are rejected. The strided cut
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

Two backends (``sample(backend=...)``, :func:`resolve_backend`), one chain. ``"xla"``: every pass in the
jitted program (GPU, ``mesh``, other families). ``"numba"`` (the CPU default for float64
:class:`~ppclust.families.GaussianNIW`): the O(n) passes of each move run as compiled multi-threaded loops
(:mod:`ppclust.inference._subcluster_cpu`) called from the jitted program through
:func:`jax.pure_callback`, only the branch taken (split or merge) and only for the points of the chosen
cluster(s): the subsample of the sub-cluster fit, the final responsibilities, the Bernoulli sides,
:math:`\log q` and the split side's statistics (the fit's four subsamples in one visit of the labels);
the peel/absorb step's point; the label step's unlinked block (up to d = 4
:func:`ppclust.inference._subcluster_cpu.dense_draw`: blocks of points, every density and weight in vector
loops over the points; above, :func:`ppclust.inference._subcluster_cpu.block_draw`: an O(d) bound that skips
most O(d^2) densities and exps within 20 nats of the largest weight only, with an exact redraw when the
left-out mass could matter); the end-of-sweep statistics too. The data never cross the callbacks
(:func:`sample` holds a host copy for its compiled call, :func:`ppclust.inference._subcluster_cpu.hold`),
and a per-sweep cluster index (a counting sort of the labels before the moves, its covers updated by
accepted moves, :class:`ppclust.inference._subcluster_cpu.ClusterIndex`) lets a move's kernels visit the
points of its clusters only. The labels do cross, into two callbacks per split/merge move (one returns the
proposal), one per peel/absorb step and four more per sweep, at a fixed cost that grows with their bytes
(``benchmarks/results/subcluster.md``, "The fixed cost of a callback crossing": about 0.9 ms for 10^6 int32
labels into a callback, 1.5 ms in and out), so within a sweep the numba backend carries them as uint8 when
``k_max`` <= 256 (``_UINT8_SLOTS``; the same draws).
Everything O(K), the sub-cluster fit on its fixed-size subsample and the colour
classes stay in JAX. Both backends draw point i's uniforms with :func:`counter_uniform` (a hash of a
per-draw seed and i), so a loop draws the uniforms of the points it visits only, and both take the same
decisions up to float rounding (``tests/inference/test_subcluster_cpu.py``: twin by twin, and whole
chains label for label; the exact enumeration runs on both).

Cost of a move: the proposal's statistics change in two slots only (:func:`_proposal_stats`): a merge
pools the two slots' statistics (``GaussianNIW.pool``, :math:`O(d^3)`, no pass over the points), a split
computes its new side's statistics in one weighted pass (``GaussianNIW.weighted_stats``, a matrix
product) and the kept side's as the difference; the pair counts are :math:`O(m)`. What remains
:math:`O(n_C)` per proposal is the fresh sub-cluster fit's responsibilities (and, for a split, the
Bernoulli sides), the price of exactness here: see the next paragraph (:math:`O(n)` on the XLA backend,
which evaluates them for every point; on numba the kernels visit the clusters' points through the cluster
index, leaving the labels' O(n) copies in and out of the callbacks).

Why not Chang & Fisher's augmented moves (sub-cluster labels kept in the state, the split proposing
exactly the current sub-clusters, the merge setting the merged cluster's sub-clusters to the two old
clusters): on an extended target :math:`p(z)\,h(s\mid z)` the merge's reverse split is deterministic,
but the ratio then contains :math:`h(s_C = \{a, b\}\mid C)`, the probability of those very sub-cluster
labels under the auxiliary's own distribution. For the sub-cluster posterior that Chang & Fisher sample
the labels from, that is a 2-component mixture posterior over :math:`2^{n_C}` labellings with an
intractable normaliser; their ratio leaves the term out, and so does not leave :math:`p(z)` exactly
invariant. Any tractable :math:`h` (a product of Bernoullis given parameters) brings back an
:math:`O(n_C)` evaluation per merge and, for two pieces of one blob, the same entropy of their boundary
as the fresh fit's :math:`\log q`. The exact enumeration detects a ratio that leaves :math:`\log q` out
(``tests/inference/test_subcluster.py``, ``test_enumeration_detects_a_ratio_without_the_proposal_
probability``).

Known weakness (measured in ``benchmarks/results/subcluster.md``, "Mixing from a wrong K", "Mixing from
one cluster" and "Why merges from a wrong K are rejected"). From one cluster the chain reaches the blobs'
partition (ARI > 0.95) in a few tens of sweeps where the collapsed sampler has not in hundreds. From a
k-means++ start with K = 30 for 12 blobs the merges of two pieces of one blob are mostly acceptable
(their fit is fitted to the pieces; what remains is the penalty :math:`\log h - \log m` of up to ~45
nats for 64 labels and the entropy of a blurred boundary), but with the default 4 moves per sweep the
surplus pieces of a few hundred points go slowly: two merge attempts per sweep, and the boundary between
two pieces of one blob blurred by (d), so that the reverse split of a merge is unlikely. Since session
15 the merge pair is informed 7/8 of the time with a sharper partner weight (``_MERGE_UNIFORM``,
``_MERGE_SHARPNESS``): with 4 moves every seed of the section reaches ARI > 0.99 within 30 sweeps (one
in eight did before), about as soon as or sooner than the collapsed sampler; with 16 moves per sweep the
chain reaches it in far fewer sweeps than the collapsed sampler. The pieces that stay longest are
duplicates rather than spatial pieces: a cluster of about a hundred points scattered over the same blob
as a big one, with the same mean and spread, which the label step (d) keeps when two clusters hold
near-identical parameters. Merging them raises :math:`\log p` by hundreds of nats, but the reverse split
must propose that scattered subset, so :math:`\log q` is about minus its entropy, nearly as large, and the
ratio is near 1 at best (an interactive diagnosis in session 15). A random-allocation split/merge pair
(:math:`\rho` uniform, each point to the new side with probability :math:`\rho`, :math:`q =
2B(n_a+1, n_b+1)`), which proposes such subsets as well as any proposal can, was tried (exact, with its
own Hastings ratio) and not kept: it did not shorten the chains in a 4-seed check. Two causes named in
session 10 are addressed: (d) used to reject the whole unlinked block whenever the unrestricted draw
emptied an occupied cluster, which froze every unlinked label while a tiny cluster existed (about half
the sweeps of an instrumented wrong-K chain); it now accepts sub-blocks in turn. And the tiny clusters that
(d) then shrinks to one point are absorbed by ``max(1, n_moves)`` peel/absorb steps per sweep instead of one.
K = 12 exactly is not the stationary state here: started from the true partition both samplers hold a few
clusters of 1-3 points (tail points of the blobs; "Mixing from one cluster", reference table), so ARI is the
measure of reaching the partition. ``TVClust(init="one", algorithm="subcluster")`` (splits only needed) is the
faster start.

Capacity: ``k_max`` slots with an active mask. A split proposed with every slot occupied is rejected and
flags ``overflow`` (the driver raises, as the collapsed sampler does).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ppclust.errors import KMaxExhaustedError
from ppclust.families import GaussianNIW, gamma_draws
from ppclust.inference.gibbs import (
    PQ_MODES,
    ChainResult,
    GibbsState,
    _escobar_west,
    _info,
    init,
    renamed_n_samples,
)
from ppclust.models.tvclust import TVClustPrior, log_joint_from_stats
from ppclust.sideinfo import (
    Links,
    link_beta_params,
    link_counts,
    link_log_odds,
    link_reliability,
    pair_counts,
)

__all__ = [
    "Colouring",
    "MoveInfo",
    "colour_links",
    "SubFit",
    "subcluster_responsibilities",
    "propose",
    "merge_pair_log_prob",
    "peel_absorb_log_probs",
    "split_merge_log_ratio",
    "counter_uniform",
    "resolve_backend",
    "step",
    "sample",
]

#: logit clip of the split probabilities r_i: sigma(30) = 1 - 9.4e-14, so every bipartition of a cluster
#: can be proposed (irreducibility) while a clean split of separated groups costs log q ~ -n 1e-13.
_LOGIT_CLIP = 30.0
#: classification-EM iterations of a sub-cluster fit (a cluster holding two groups separates in 2-3).
_SUB_ITERS = 4
#: points of a cluster (drawn with replacement) that a sub-cluster fit sees: enough for two well-separated
#: groups, independent of n (the final responsibilities are computed for every point of the cluster)
_SUB_FIT = 1024
#: a sub-cluster fit's two-slot statistics as two weighted matrix products above this dimension
#: (:func:`_two_slot_stats`)
_WEIGHTED_STATS_MIN_D = 4
#: the numba backend draws the unlinked block of the label step (d) on the compiled twin up to this
#: dimension (XLA's fused matrix-product draw above it). Every d: at d = 30 the twin's O(d) bounds skip
#: most O(d^2) densities (2.6x faster than XLA in a loaded A/B), at d = 2 the two ran level (profile
#: sections of ``benchmarks/results/subcluster.md``)
_NUMBA_DRAW_MAX_D = 1 << 30
#: above d = 4 the compiled block draw computes exp(l_k - max) only for l_k - max > -_DRAW_CUT and redraws a
#: point with every exp when the left-out mass (< K e^-20 ~ 3e-8 of the total) could change its draw
#: (``_subcluster_cpu.block_draw``: the same draws for any cut; about one redraw per 10^7 points)
_DRAW_CUT = 20.0
#: labelled subsample of a sub-cluster fit (its first points): the sub-cluster parameters are fitted to
#: their side labels y; a merge proposes y from the two pieces and pays log h(y) - log m(y) <= (m+1) log 2
_LAB_FIT = 64
#: probability that h draws the labels y as a uniform-size uniform subset (else the EM sides, flipped): a
#: split's fit comes from the EM sides 9 times in 10 (with 1/2, half the splits were fitted to random
#: labels and chains from one cluster split markedly slower in a 3-seed check at n = 10^5), while a merge
#: whose pieces disagree with the EM sides pays log(0.5 / 0.1) ~ 1.6 nats more in log h - log m
_LAB_SUBSET = 0.1
#: probability that a label copied into y (from the EM sides or from the pieces) is flipped
_LAB_FLIP = 0.02
#: a merge's labelled subsample takes at least this share of its points from the smaller piece
_LAB_MIN = 1.0 / 16.0
#: share of merge pairs drawn uniformly (:func:`merge_pair_log_prob`); the rest take a uniform cluster and
#: a partner with near means likelier. Any value in (0, 1] is exact; 1/8 (it was 1/2) proposes the merges
#: of adjacent surplus pieces 1.75x as often while every pair stays possible ("Mixing from a wrong K" in
#: ``benchmarks/results/subcluster.md``: with 4 moves a sweep, 8 of 8 seeds reach ARI > 0.99 within 30
#: sweeps, against 1 of 8 with 1/2 and sharpness 1)
_MERGE_UNIFORM = 0.125
#: the informed partner's weight exp(-_MERGE_SHARPNESS D_ab / min_c D_ac) (:func:`_neighbour_log_probs`):
#: 3 (it was 1) makes the nearest cluster e^2 times likelier than one at sqrt(2) times its distance
_MERGE_SHARPNESS = 3.0
#: the numba backend's move phase carries the labels as uint8 when k_max is at most this (the fixed cost of
#: a callback crossing grows with its bytes: ``benchmarks/results/subcluster.md``, "The fixed cost of a
#: callback crossing"); the same draws
_UINT8_SLOTS = 256
#: rows per chunk of the (n, K) data-term block (bounds the (chunk, K d) intermediate of full covariances)
_CHUNK = 1 << 15


class Colouring(NamedTuple):
    """Colour classes of the link graph: ``classes`` (C, m) point indices padded with ``n``; ``linked``
    (n,) bool, the points with at least one link (the unlinked points are one more block)."""

    classes: jax.Array
    linked: jax.Array


class MoveInfo(NamedTuple):
    """One split/merge proposal (for tests and diagnostics)."""

    is_split: jax.Array  # () bool
    log_ratio: jax.Array  # () log Hastings ratio (-inf: invalid proposal)
    accepted: jax.Array  # () bool


def colour_links(links: Links, n: int) -> Colouring:
    """Greedy colouring of the link graph (host side, NumPy, once per fit): linked points in order of
    decreasing degree take the smallest colour none of their neighbours holds. Sparse links need few
    colours (at most max degree + 1)."""
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
        classes[c, :len(m)] = m
    if n_col == 0:
        classes = classes[:0]
    return Colouring(jnp.asarray(classes), jnp.asarray(linked))


class SubFit(NamedTuple):
    """A sub-cluster fit of one cluster (:func:`subcluster_responsibilities`)."""

    log_r: jax.Array  # (n,) log r_i, the probability of side A (arbitrary outside the cluster)
    log_1r: jax.Array  # (n,) log(1 - r_i)
    idx: jax.Array  # (m,) the labelled subsample (indices of points of the cluster)
    y: jax.Array  # (m,) bool, its side labels, from which the sub-cluster parameters were fitted
    em: jax.Array  # (m,) bool, the EM sides of the labelled points
    log_h: jax.Array  # () log h(I, y | C), the kernel's own probability of the labelled subsample


def _log_flip(y, side):
    r"""log of :math:`\tfrac12[\prod_k P(y_k\mid s_k)+\prod_k P(y_k\mid\neg s_k)]` with
    :math:`P(y\mid s) = 1 - f` if :math:`y = s` else :math:`f` (``f = _LAB_FLIP``): labels copied from
    sides ``s`` of unknown orientation, each flipped with probability f."""
    agree = (y == side).sum().astype(jnp.result_type(float))
    m = y.shape[0]
    lf, l1f = jnp.log(_LAB_FLIP), jnp.log1p(-_LAB_FLIP)
    return jnp.logaddexp(agree * l1f + (m - agree) * lf, (m - agree) * l1f + agree * lf) - jnp.log(2.0)


def _log_h(y, em_side):
    r"""log h(y | I): with probability ``_LAB_SUBSET`` a uniform count :math:`k\in\{0..m\}` of ones and
    a uniform subset of that size (:math:`1/((m+1)\binom{m}{k})`: a small piece's few labels cost
    :math:`\log\binom{m}{k}` instead of :math:`m\log 2`), else the EM sides copied with flips."""
    m = y.shape[0]
    k = y.sum().astype(jnp.result_type(float))
    log_subset = -jnp.log(m + 1.0) - (gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0))
    return jnp.logaddexp(jnp.log(_LAB_SUBSET) + log_subset,
                         jnp.log1p(-_LAB_SUBSET) + _log_flip(y, em_side))


def subcluster_responsibilities(key, x, mask, family, in_a=None, from_pieces=False):
    r"""A sub-cluster fit of the cluster ``mask``: the split proposal's probabilities :math:`r_i` of side A.

    The auxiliary variable :math:`\phi = (I, y, \text{keys})` of the module docstring, (a):

    1. a random subsample :math:`I` of :math:`C` (``min(_SUB_FIT, n)`` points drawn uniformly with
       replacement, so the cost does not grow with n) and a classification-EM on it: two seeds,
       nearest-seed assignment, ``_SUB_ITERS`` iterations (sub-cluster parameters drawn from
       ``family.sample_posterior`` of each side, points to the side of higher weighted likelihood);
    2. side labels :math:`y` of the first ``_LAB_FIT`` subsample points. Drawn from the kernel's own
       :math:`h(y\mid x_C, I)`: with probability ``_LAB_SUBSET`` a uniform-size uniform subset, else the
       EM sides with each label
       flipped with probability ``_LAB_FLIP`` (``in_a`` None, or ``from_pieces`` False). Or, for a merge
       of two clusters (``from_pieces`` True): drawn from :math:`m(y\mid A, B)`, the labels of the
       pieces, ``in_a`` = membership of A, in a random orientation, each flipped with probability
       ``_LAB_FLIP``; the merge's Hastings ratio carries :math:`\log h(y) - \log m(y)`;
    3. sub-cluster parameters drawn from ``family.sample_posterior`` of the labelled points, each
       weighted :math:`n_C/\text{\_LAB\_FIT}` (so the fit is as sure as one of all :math:`n_C` points),
       log weights :math:`\log(n_{\text{side}}+1)`; finally, for every point, :math:`r_i =
       \sigma(\ell_{iA} - \ell_{iB})` clipped to :math:`\pm` ``_LOGIT_CLIP``.

    Everything but :math:`y` depends on the points of :math:`C` and fresh randomness only. Returns a
    :class:`SubFit` (``log_h`` = :math:`\log h(y\mid x_C, I)`, whichever way y was drawn).
    """
    fit, theta, lw = _subcluster_fit(key, x, mask, family, in_a, from_pieces)
    log_r, log_1r = _responsibilities(family, theta, lw, x)
    return fit._replace(log_r=log_r, log_1r=log_1r)


def _subcluster_fit(key, x, mask, family, in_a=None, from_pieces=False, pick_all=None):
    """Steps 1-3 of :func:`subcluster_responsibilities` on the subsamples (everything but the final O(n)
    pass): ``(fit, theta, log_weights)`` with ``fit`` a :class:`SubFit` whose ``log_r, log_1r`` are
    placeholders. ``pick_all``: None (uniform points of ``mask``, of ``mask & in_a`` and of ``mask & ~in_a``
    from cumulative counts here) or a function ``(u, u_lab) -> ((idx, count), (li, count), (ia, n_a), (ib,
    n_b))`` giving the same points: of C from the uniforms ``u`` and ``u_lab``, of A and of B from
    ``u_lab`` (the compiled twin :func:`ppclust.inference._subcluster_cpu.pick_subsamples`, all four in one
    visit of the labels)."""
    if pick_all is None:
        members = {"C": lambda: mask, "A": lambda: mask & in_a, "B": lambda: mask & ~in_a}
        cums = {}  # each cumulative count once ("C" serves both subsamples)

        def pick(which, u):
            if which not in cums:
                cums[which] = jnp.cumsum(members[which]().astype(jnp.int32))
            return _uniform_points(cums[which], u), cums[which][-1]

    k_pick, k_iter, k_y, k_fit = jax.random.split(key, 4)
    m = min(_SUB_FIT, x.shape[0])
    u = jax.random.uniform(k_pick, (m,), dtype=x.dtype)
    ml = min(_LAB_FIT, m)
    k_mix, k_bits, k_flip, k_orient, k_lab, k_ab = jax.random.split(k_y, 6)
    u_lab = jax.random.uniform(k_lab, (ml,), dtype=x.dtype)
    if pick_all is None:
        picked = (pick("C", u), pick("C", u_lab)) + ((pick("A", u_lab), pick("B", u_lab)) if in_a is not None
                                                      else ())
    else:
        picked = pick_all(u, u_lab)
    idx, count = picked[0]
    xs = x[idx]
    side = (jnp.sum((xs - xs[0]) ** 2, -1) > jnp.sum((xs - xs[1]) ** 2, -1)).astype(jnp.int32)
    w = jnp.broadcast_to(jnp.asarray(count > 0, x.dtype), (m,))

    def body(t, side):
        st = _two_slot_stats(family, xs, side, w)
        theta = family.sample_posterior(jax.random.fold_in(k_iter, t), st)
        ll = _loglik_matrix(family, theta, xs) + jnp.log(st.n + 1.0)
        return (ll[:, 0] < ll[:, 1]).astype(jnp.int32)

    side = jax.lax.fori_loop(0, _SUB_ITERS, body, side)
    st = _two_slot_stats(family, xs, side, w)
    theta_em = family.sample_posterior(jax.random.fold_in(k_iter, _SUB_ITERS), st)
    lw_em = jnp.log(st.n + 1.0)
    li, _ = picked[1]  # the labelled subsample I: uniform points of C
    flip = jax.random.uniform(k_flip, (ml,), dtype=x.dtype) < _LAB_FLIP
    if in_a is not None:  # I from m(I | A, B): each point from A with probability beta_A, else from B
        (ia, n_a), (ib, n_b) = picked[2], picked[3]
        from_a = jax.random.uniform(k_ab, (ml,), dtype=x.dtype) < _beta_a(n_a, n_b)
        li = jnp.where(from_pieces, jnp.where(from_a, ia, ib), li)
    ll = _loglik_matrix(family, theta_em, x[li]) + lw_em
    em = ll[:, 0] < ll[:, 1]  # the EM sides of the labelled points
    k_ones = jax.random.randint(k_bits, (), 0, ml + 1)  # a uniform count, then a uniform subset of it
    subset = jnp.argsort(jax.random.uniform(jax.random.fold_in(k_bits, 1), (ml,), dtype=x.dtype)) < k_ones
    y = jnp.where(jax.random.uniform(k_mix, dtype=x.dtype) < _LAB_SUBSET, subset, em ^ flip)
    if in_a is not None:
        y_pieces = in_a[li] ^ flip ^ (jax.random.uniform(k_orient, dtype=x.dtype) < 0.5)
        y = jnp.where(from_pieces, y_pieces, y)
    n_c = count.astype(x.dtype)
    st = _two_slot_stats(family, x[li], y.astype(jnp.int32), jnp.broadcast_to(n_c / ml, (ml,)))
    theta = family.sample_posterior(k_fit, st)
    log_h = _log_h(y, em) - ml * jnp.log(jnp.maximum(n_c, 1.0))
    empty = jnp.zeros((0,), x.dtype)
    return SubFit(empty, empty, li, y, em, log_h), theta, jnp.log(st.n + 1.0)


def _two_slot_stats(family, x, side, w):
    """``family.stats(x, side, 2, w)`` of a sub-cluster fit's subsample. For d > ``_WEIGHTED_STATS_MIN_D``
    with a pooling family (:func:`_pools`), the two slots as ``family.weighted_stats`` (each scatter one
    (d, m) x (m, d) product; ``stats`` forms the (m, d, d) outer products, and the fit's six such calls were
    most of a move at d = 30): the same statistics up to float rounding."""
    if x.shape[1] > _WEIGHTED_STATS_MIN_D and _pools(family):
        a = family.weighted_stats(x, w * (side == 0))
        b = family.weighted_stats(x, w * (side == 1))
        return jax.tree.map(lambda u, v: jnp.concatenate([u, v]), a, b)
    return family.stats(x, side, 2, w)


def _responsibilities(family, theta, lw, x):
    """The final pass of :func:`subcluster_responsibilities`: ``log r, log(1 - r)`` of every point (twin:
    :func:`ppclust.inference._subcluster_cpu.move_sides`, for the points of the cluster only)."""
    ll = _data_term(family, theta, x) + lw
    lg = jnp.clip(ll[:, 0] - ll[:, 1], -_LOGIT_CLIP, _LOGIT_CLIP)
    return jax.nn.log_sigmoid(lg), jax.nn.log_sigmoid(-lg)


def _uniform_points(cum, u):
    """Points of a mask with cumulative counts ``cum``, one uniform point per uniform ``u``."""
    idx = jnp.searchsorted(cum, 1 + jnp.floor(u * cum[-1]).astype(jnp.int32))
    return jnp.minimum(idx, cum.shape[0] - 1)


def _beta_a(n_a, n_b):
    """Probability that m(I | A, B) draws a labelled point from A: A's share, clipped to
    [_LAB_MIN, 1 - _LAB_MIN] so that a small piece is seen by the fit."""
    return jnp.clip(n_a / jnp.maximum(n_a + n_b, 1), _LAB_MIN, 1.0 - _LAB_MIN)


def _log_m_lab(fit, side_a, mask):
    r"""log m(I, y | A, B): the probability that a merge of A = ``mask & side_a`` and B = ``mask & ~side_a``
    proposes the labelled subsample ``fit.idx`` (each point from A with probability :math:`\beta_A`, then
    uniform in its piece) and its labels ``fit.y`` (the pieces' labels, random orientation, flips)."""
    return _log_m_counts(fit.y, side_a[fit.idx], (mask & side_a).sum(), (mask & ~side_a).sum())


def _log_m_counts(y, ina, n_a, n_b):
    """:func:`_log_m_lab` from the labelled points' membership of A (``ina``) and the pieces' sizes."""
    beta = _beta_a(n_a, n_b)
    dt = jnp.result_type(float)
    lp = jnp.where(ina, jnp.log(beta) - jnp.log(jnp.maximum(n_a, 1).astype(dt)),
                   jnp.log1p(-beta) - jnp.log(jnp.maximum(n_b, 1).astype(dt)))
    return lp.sum() + _log_flip(y, ina)


def counter_seed(key):
    """Two 32-bit words of ``key``: the seed of :func:`counter_uniform`."""
    return jax.random.bits(key, (2,), jnp.uint32)


def counter_uniform(seed, idx, dtype):
    r"""Uniforms on (0, 1) as a hash of (``seed``, index): ``idx`` (...) int -> (...) ``dtype``.

    Counter based, so a compiled loop draws the uniform of point i itself, for the points it visits only
    (twin: :func:`ppclust.inference._subcluster_cpu.counter_uniform`), where a threefry draw of all n costs
    a pass (~10 ms per 10^6 here). Two 32-bit words :math:`a, b` from the lowbias32 integer hash
    (C. Wellons) of the index mixed with the two seed words; float64: :math:`u = (\lfloor a/2^5\rfloor 2^{26}
    + \lfloor b/2^6\rfloor + \tfrac12)\,2^{-53}` (53 bits, never 0 or 1), float32: :math:`(\lfloor
    a/2^8\rfloor + \tfrac12)\,2^{-24}`. ``tests/inference/test_subcluster_cpu.py`` checks uniformity (KS)
    and independence across seeds and neighbouring indices."""
    def mix(h):
        h = h ^ (h >> 16)
        h = h * jnp.uint32(0x7FEB352D)
        h = h ^ (h >> 15)
        h = h * jnp.uint32(0x846CA68B)
        return h ^ (h >> 16)

    i = jnp.asarray(idx).astype(jnp.uint32)
    s0, s1 = seed[0], seed[1]
    a = mix(mix(i ^ s0) ^ s1)
    if np.dtype(dtype) == np.float64:
        b = mix(mix(i ^ s1 ^ jnp.uint32(0x5BD1E995)) + s0)
        return ((a >> 5).astype(dtype) * 67108864.0 + (b >> 6).astype(dtype) + 0.5) * (2.0 ** -53)
    return ((a >> 8).astype(dtype) + 0.5) * (2.0 ** -24)


def _log_q_pair(log_r, log_1r, mask, in_a):
    """log q({A, B} | C): both orientations of the unordered bipartition (A = mask & in_a)."""
    ina, inb = mask & in_a, mask & ~in_a
    o1 = jnp.where(ina, log_r, 0.0).sum() + jnp.where(inb, log_1r, 0.0).sum()
    o2 = jnp.where(ina, log_1r, 0.0).sum() + jnp.where(inb, log_r, 0.0).sum()
    return jnp.logaddexp(o1, o2)


def _log_joint_given(stats, counts, family, prior, pq, p, q):
    """The collapsed log joint from the statistics and pair counts: p and q integrated out
    (``pq="collapse"``) or at their current values."""
    if pq == "collapse":
        return log_joint_from_stats(stats, counts, family, prior)
    return log_joint_from_stats(stats, counts, family, prior, p, q)


def _log_joint(labels, x, links, family, prior, pq, p, q, k_max):
    stats = family.stats(x, labels, k_max)
    counts = pair_counts(labels, links).astype(x.dtype)
    return _log_joint_given(stats, counts, family, prior, pq, p, q), stats, counts


def split_merge_log_ratio(is_split, lj_new, lj_old, n_clusters, log_q, log_pair=None):
    r"""The Hastings ratio of the module docstring, (a): split from K clusters or merge of two of K.

    ``log_pair``: log probability that the merge move picks the pair, :func:`merge_pair_log_prob`, in the
    state where the two clusters exist (after the split for a split, the current state for a merge);
    None means the uniform choice :math:`2/(K'(K'-1))`. A split picks one of K clusters (1/K), a merge
    from K clusters is reversed by a split picking one of K - 1."""
    k = jnp.asarray(n_clusters).astype(jnp.result_type(lj_new))
    if log_pair is None:
        kp = jnp.where(is_split, k + 1.0, k)
        log_pair = jnp.log(2.0 / (kp * (kp - 1.0)))
    return jnp.where(is_split, lj_new - lj_old + log_pair + jnp.log(k) - log_q,
                     lj_new - lj_old - jnp.log(k - 1.0) + log_q - log_pair)


def _neighbour_log_probs(stats):
    r"""(k_max, k_max) :math:`\log P(b\mid a)` of the informed merge partner: among the other occupied
    slots, :math:`P(b\mid a)\propto\exp(-s D_{ab}/\min_{c\ne a}D_{ac})` with :math:`D` the squared distance
    of the cluster means and :math:`s` = ``_MERGE_SHARPNESS`` (the nearest cluster has weight :math:`e^{-s}`,
    far ones decay)."""
    active = stats.n > 0
    m = stats.s / jnp.maximum(stats.n, 1.0)[:, None]
    D = jnp.sum((m[:, None, :] - m[None, :, :]) ** 2, -1)
    other = active[:, None] & active[None, :] & ~jnp.eye(active.shape[0], dtype=bool)
    dmin = jnp.min(jnp.where(other, D, jnp.inf), 1, keepdims=True)
    logw = jnp.where(other, -_MERGE_SHARPNESS * D / jnp.maximum(dmin, 1e-300), -jnp.inf)
    return logw - jax.nn.logsumexp(logw, 1, keepdims=True)


def merge_pair_log_prob(a, b, stats):
    r"""log probability that a merge picks the unordered pair of occupied slots {a, b} from ``stats``.

    The merge pair is a mixture: with probability :math:`u` = ``_MERGE_UNIFORM`` (1/8) a uniform pair,
    :math:`2/(K(K-1))`; else a uniform cluster a and its partner from :func:`_neighbour_log_probs` (nearest
    means likelier), so the pair has :math:`u\,2/(K(K-1)) + (1-u)(P(b\mid a)+P(a\mid b))/K`. Informed
    choices propose the merges of adjacent surplus clusters that a uniform choice rarely tries
    (``benchmarks/results/subcluster.md``, "Mixing from a wrong K"); the uniform share keeps every pair
    possible."""
    k = (stats.n > 0).sum().astype(stats.s.dtype)
    lp = _neighbour_log_probs(stats)
    informed = jnp.logaddexp(lp[a, b], lp[b, a]) - jnp.log(k)
    return jnp.logaddexp(jnp.log(_MERGE_UNIFORM) + jnp.log(2.0 / (k * (k - 1.0))),
                         jnp.log1p(-_MERGE_UNIFORM) + informed)


def _pick_occupied(key, active, exclude=None):
    """A uniform occupied slot (or, with ``exclude``, a uniform occupied slot other than it)."""
    n_act = active.sum() - (0 if exclude is None else 1)
    j = jax.random.randint(key, (), 0, jnp.maximum(n_act, 1))
    if exclude is not None:
        active = active & (jnp.arange(active.shape[0]) != exclude)
    return jnp.argmax(jnp.cumsum(active) > j)


def propose(key, is_split, labels, stats, x, family, backend="xla"):
    r"""One split (``is_split``) or merge proposal from ``labels`` (module docstring (a)).

    Split: a uniform occupied slot ``c``, its sub-cluster fit, Bernoulli sides; side A stays in ``c``, side
    B moves to the first free slot. Merge: an unordered pair of occupied slots drawn as in
    :func:`merge_pair_log_prob` (from ``stats``), the second joins the first, the sub-cluster fit of
    the union proposed from the two pieces. ``log_q`` is, in both directions, the log probability that a
    split of the merged cluster with this fit proposes exactly this pair plus :math:`\log h - \log m` of
    the fit's labelled subsample (module docstring, (a)). Returns
    ``(new_labels, log_q, valid, full, pair)``: ``valid`` is False for an empty side, a merge with one
    cluster, or a split with no free slot; ``full`` flags the last (k_max exhausted); ``pair`` the two
    slots (kept slot, other slot) of the split's result or of the merged pair. ``backend="numba"``: the
    O(n) part on the compiled twins (:mod:`ppclust.inference._subcluster_cpu`), the same proposal.
    """
    return _propose(key, is_split, labels, stats, x, family, backend)[:5]


def _propose(key, is_split, labels, stats, x, family, backend, xw=None, index=None):
    """:func:`propose`, plus the split side B's statistics when the compiled twin computed them (else
    None). ``xw``: ``x`` as the compiled twins take it (:func:`ppclust.inference._subcluster_cpu.wired`),
    made once per chain (else per call); ``index``: the sweep's
    :class:`~ppclust.inference._subcluster_cpu.ClusterIndex` (numba: the twins visit the points of the
    chosen clusters only; None: all n)."""
    k_a, k_b, k_sub, k_side, k_mix, k_nb = jax.random.split(key, 6)
    sizes = stats.n
    active = sizes > 0
    ca = _pick_occupied(k_a, active)
    cb_uniform = _pick_occupied(k_b, active, exclude=ca)
    cb_near = jax.random.categorical(k_nb, _neighbour_log_probs(stats)[ca])
    cb = jnp.where(jax.random.uniform(k_mix, dtype=x.dtype) < _MERGE_UNIFORM, cb_uniform, cb_near)
    new = jnp.argmin(active)
    side_seed = counter_seed(k_side)  # side A iff log u_i < log r_i, u_i = counter_uniform(side_seed, i)
    side_b = None
    in_a = labels == ca
    if backend == "numba":
        from ppclust.inference import _subcluster_cpu as cpu

        fit, theta, lw = _subcluster_fit(k_sub, x, None, family, in_a, jnp.logical_not(is_split),
                                         pick_all=lambda u, u_lab: cpu.subsamples(labels, ca, cb, is_split, u,
                                                                                  u_lab, index))
        proposal, log_q, n_c, n_a, side_b = cpu.move(x, labels, ca, cb, new, is_split, theta, lw, side_seed,
                                                     family, _LOGIT_CLIP, xw, index)
    else:
        mask = jnp.where(is_split, in_a, in_a | (labels == cb))
        fit = subcluster_responsibilities(k_sub, x, mask, family, in_a, jnp.logical_not(is_split))
        u = counter_uniform(side_seed, jnp.arange(labels.shape[0]), x.dtype)
        side_a = jnp.where(is_split, jnp.log(u) < fit.log_r, in_a)
        n_c, n_a = mask.sum(), (mask & side_a).sum()
        target = jnp.where(is_split, new, ca).astype(labels.dtype)
        proposal = jnp.where(mask & ~side_a, target, labels)
        log_q = _log_q_pair(fit.log_r, fit.log_1r, mask, side_a)
    # log h - log m of the fit's labelled subsample: its points' side A is slot ca in the split's result
    # (side B moved to the new slot) and in the merge's current labels
    ina = jnp.where(is_split, proposal[fit.idx], labels[fit.idx]) == ca
    log_q = log_q + fit.log_h - _log_m_counts(fit.y, ina, n_a, n_c - n_a)
    full = is_split & active[new] & (n_c >= 2)  # a split was possible but no slot was free
    valid = jnp.where(is_split, (n_a > 0) & (n_a < n_c) & ~active[new], active.sum() >= 2)
    pair = (ca, jnp.where(is_split, new, cb))
    return proposal, log_q, valid, full, pair, side_b


def _move(key, labels, lj, stats, counts, x, links, family, prior, pq, p, q, backend="xla", xw=None,
          index=None):
    """One split-or-merge MH step. Returns ``(labels, lj, stats, counts, full, MoveInfo)``, and the updated
    ``index`` (:class:`~ppclust.inference._subcluster_cpu.ClusterIndex`) when one is given."""
    k_type, k_prop, k_acc = jax.random.split(key, 3)
    is_split = jax.random.uniform(k_type, dtype=x.dtype) < 0.5
    n_act = (stats.n > 0).sum()
    prop, log_q, ok, full, (a, b), side_b = _propose(k_prop, is_split, labels, stats, x, family, backend, xw,
                                                     index)
    st_new = _proposal_stats(family, stats, x, is_split, prop, a, b, side_b)
    c_new = pair_counts(prop, links).astype(x.dtype)
    lj_new = _log_joint_given(st_new, c_new, family, prior, pq, p, q)
    log_pair = jnp.where(is_split, merge_pair_log_prob(a, b, st_new), merge_pair_log_prob(a, b, stats))
    log_h = split_merge_log_ratio(is_split, lj_new, lj, n_act, log_q, log_pair)
    log_h = jnp.where(ok & jnp.isfinite(log_h), log_h, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, dtype=x.dtype)) < log_h
    pick = lambda u, v: jax.tree.map(lambda u_, v_: jnp.where(acc, u_, v_), u, v)  # noqa: E731
    out = (pick(prop, labels), pick(lj_new, lj), pick(st_new, stats), pick(c_new, counts), full,
           MoveInfo(is_split, log_h, acc))
    return out if index is None else out + (index.moved(acc, is_split, a, b),)


def _pick_point(key, mask):
    """A uniform point of ``mask`` (one O(n) pass)."""
    cum = jnp.cumsum(mask.astype(jnp.int32))
    j = jax.random.randint(key, (), 0, jnp.maximum(cum[-1], 1))
    return jnp.argmax(cum > j)


def peel_absorb_log_probs(is_split, c, s, stats_from, stats_to):
    r"""Proposal log probabilities of the peel/absorb move (module docstring, (a')) of the partition pair
    (``stats_from`` -> ``stats_to``): ``(log P(forward), log P(reverse))``.

    Peel (``is_split``) splits the one point of slot ``s`` off slot ``c`` of ``stats_from``; absorb moves
    the singleton ``s`` of ``stats_from`` into ``c``. A peel picks a uniform occupied cluster and a uniform
    point of it: :math:`1/(K n_C)`, twice that if :math:`n_C = 2` (either point gives the same
    partition). An absorb picks a uniform singleton (1/N_1) and a partner :math:`c` from
    :func:`_neighbour_log_probs` (nearest means likelier): :math:`P(c\mid s)/N_1`, plus
    :math:`P(s\mid c)/N_1` if c is a singleton too (absorbing c into s gives the same partition)."""
    def peel(st, big):
        k = (st.n > 0).sum().astype(st.s.dtype)
        nb = st.n[big]
        return -jnp.log(k) - jnp.log(nb) + jnp.where(nb == 2, jnp.log(2.0), 0.0)

    def absorb(st, single, into):
        n1 = (st.n == 1).sum().astype(st.s.dtype)
        lp = _neighbour_log_probs(st)
        both = jnp.logaddexp(lp[single, into], jnp.where(st.n[into] == 1, lp[into, single], -jnp.inf))
        return both - jnp.log(n1)

    fwd = jnp.where(is_split, peel(stats_from, c), absorb(stats_from, s, c))
    rev = jnp.where(is_split, absorb(stats_to, s, c), peel(stats_to, c))
    return fwd, rev


def _peel_move(key, labels, lj, stats, counts, x, links, family, prior, pq, p, q, backend="xla", index=None):
    """One peel-or-absorb MH step (module docstring, (a')). Returns ``(labels, lj, stats, counts, full,
    MoveInfo)``. Either proposal moves one point (the peeled point, or the singleton's point), so the
    proposal is one scatter and the new slot's statistics are that point's; what remains O(n) is finding
    the point (``backend="numba"``: one compiled visit of the labels, :func:`ppclust.inference.
    _subcluster_cpu.peel_points`, the same point)."""
    k_type, k_c, k_i, k_s, k_nb, k_acc = jax.random.split(key, 6)
    is_split = jax.random.uniform(k_type, dtype=x.dtype) < 0.5
    active = stats.n > 0
    new = jnp.argmin(active)
    c_peel = _pick_occupied(k_c, active)
    single = stats.n == 1
    s_abs = _pick_occupied(k_s, single)
    if backend == "numba":
        from ppclust.inference import _subcluster_cpu as cpu

        # the draw of _pick_point: |c_peel| is its slot count (the statistics count the labels)
        j = jax.random.randint(k_i, (), 0, jnp.maximum(stats.n[c_peel].astype(jnp.int32), 1))
        i, i_abs = cpu.peel_points_of(labels, c_peel, j, s_abs, index)
    else:
        i = _pick_point(k_i, labels == c_peel)
        i_abs = jnp.argmax(labels == s_abs)  # the singleton's point
    c_abs = jax.random.categorical(k_nb, _neighbour_log_probs(stats)[s_abs])
    c = jnp.where(is_split, c_peel, c_abs)
    s = jnp.where(is_split, new, s_abs)
    full = is_split & active[new] & (stats.n[c_peel] >= 2)
    valid = jnp.where(is_split, (stats.n[c_peel] >= 2) & ~active[new], single.any() & (active.sum() >= 2))
    i_sel = jnp.where(is_split, i, i_abs)
    to = jnp.where(is_split, new, c_abs).astype(labels.dtype)
    prop = labels.at[i_sel].set(to)  # (an invalid absorb moves one point of a non-singleton: rejected)
    # a peel's new slot holds the one point: its statistics are that point's (families that pool)
    side_b = family.weighted_stats(x[i_sel][None], jnp.ones((1,), x.dtype)) if _pools(family) else None
    st_new = _proposal_stats(family, stats, x, is_split, prop, c, s, side_b)
    c_new = pair_counts(prop, links).astype(x.dtype)
    lj_new = _log_joint_given(st_new, c_new, family, prior, pq, p, q)
    fwd, rev = peel_absorb_log_probs(is_split, c, s, stats, st_new)
    log_h = lj_new - lj + rev - fwd
    log_h = jnp.where(valid & jnp.isfinite(log_h), log_h, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, dtype=x.dtype)) < log_h
    pick = lambda a, b: jax.tree.map(lambda u, v: jnp.where(acc, u, v), a, b)  # noqa: E731
    out = (labels.at[i_sel].set(jnp.where(acc, to, labels[i_sel])), pick(lj_new, lj), pick(st_new, stats),
           pick(c_new, counts), full, MoveInfo(is_split, log_h, acc))
    return out if index is None else out + (index.moved(acc, is_split, c, s),)


def _pools(family) -> bool:
    """The one capability test of the moves' statistics: :class:`~ppclust.families.GaussianNIW` pools two
    groups' statistics (``pool``) and weighs points' statistics (``weighted_stats``), so a move updates two
    slots without a pass over the points; other families recompute every slot (``family.stats``)."""
    return isinstance(family, GaussianNIW)


def _proposal_stats(family, stats, x, is_split, prop, a, b, side_b=None):
    """The statistics of a proposed partition: only its two slots ``a`` (kept) and ``b`` (the split's new
    slot / the merged slot, emptied) change. When the family pools (:func:`_pools`) a merge pools the two
    slots' statistics (O(d^3), no pass over the points) and a split computes its side B's statistics in one
    weighted pass (``family.weighted_stats``, a matrix product) and side A's as the old slot minus side B;
    other families recompute every slot (``family.stats``). ``side_b``: side B's
    statistics when already computed (the compiled twin's pass)."""
    k_max = stats.n.shape[0]
    if not _pools(family):
        return family.stats(x, prop, k_max)
    one = lambda k: jax.tree.map(lambda v: v[k][None], stats)  # noqa: E731
    if side_b is None:
        side_b = family.weighted_stats(x, (prop == b).astype(x.dtype))  # the split's new slot
    keep = jax.tree.map(lambda u, v: jnp.where(is_split, u, v),
                        family.pool(one(a), side_b, -1.0), family.pool(one(a), one(b), 1.0))
    other = jax.tree.map(lambda u, v: jnp.where(is_split, u, v), side_b, family.empty(1, x.shape[1], x.dtype))
    put = lambda st, k, v: jax.tree.map(lambda s_, v_: s_.at[k].set(v_[0]), st, v)  # noqa: E731
    return put(put(stats, a, keep), b, other)


def _loglik_matrix(family, theta, x):
    if hasattr(family, "log_likelihood_matrix"):
        return family.log_likelihood_matrix(theta, x)
    return jax.vmap(family.log_likelihood, (None, 0))(theta, x)


def _data_term(family, theta, x):
    """(n, K) ``log p(x_i | theta_k)`` in chunks of ``_CHUNK`` rows (one XLA loop, bounded memory)."""
    n = x.shape[0]
    if n <= _CHUNK:
        return _loglik_matrix(family, theta, x)
    m = -(-n // _CHUNK)
    xp = jnp.pad(x, ((0, m * _CHUNK - n), (0, 0))).reshape(m, _CHUNK, x.shape[1])
    out = jax.lax.map(lambda xb: _loglik_matrix(family, theta, xb), xp)
    return out.reshape(m * _CHUNK, -1)[:n]


def _draw_rows(logw, u):
    """Inverse-CDF draw per row of (m, K) log-weights with uniforms u (m,)."""
    e = jnp.exp(logw - jnp.max(logw, -1, keepdims=True))
    k = logw.shape[-1]
    # cumulative sums as one product with a triangular ones matrix (XLA:CPU's cumsum is ~10x slower);
    # the count of cumulative weights <= u * total is the inverse-CDF index
    c = e @ jnp.triu(jnp.ones((k, k), e.dtype))
    return jnp.minimum(jnp.sum(c <= (u * c[:, -1])[:, None], -1), k - 1).astype(jnp.int32)


def _fused_draw(x, u, keep, labels, family, log_pi, theta, chunk):
    """The unlinked block's draw fused per chunk of rows: data term, weights, inverse-CDF draw and the
    new slot counts of ``chunk`` rows at a time, so no (n, width) array is ever stored (the (n, width)
    passes ran from memory, about 5x slower at n = 10^6). Rows with ``keep`` keep ``labels``."""
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
        z = jnp.where(kb, lb, _draw_rows(_loglik_matrix(family, theta, xb) + log_pi, ub))
        return z, jnp.sum(z[:, None] == jnp.arange(w, dtype=z.dtype), 0, dtype=jnp.int32)

    z, cnt = jax.lax.map(body, (xp, up, kp, lp))
    return z.reshape(-1)[:n], cnt.sum(0)


#: rows per chunk of the fused unlinked-block draw (fits the (chunk, width) blocks in cache)
_DRAW_CHUNK = 2048


def _replicated(mesh, *trees):
    """``trees`` constrained to be whole on every device of ``mesh``: the fence around a ``shard_map`` of
    this module. Without it XLA's sharding propagation carries the map's row sharding of its operands
    and results into the rest of the sweep (the moves, the colour classes, the relabelling), whose
    gathers and scatters it then partitions over the points: measured at n = 100,000 on two CPU
    devices, 3.1 s a sweep against 0.036 s with the fence (and on one device), growing faster than n.
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

    z, cnt = jax.shard_map(per_device, mesh=mesh, in_specs=(P(AXIS), P(AXIS), P(AXIS), P(AXIS), P(), P()),
                           out_specs=(P(AXIS), P()), check_vma=False)(xp, up, kp, lp, log_pi, theta)
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

    st, counts = jax.shard_map(per_device, mesh=mesh,
                               in_specs=(P(AXIS), P(AXIS), P(AXIS), P(AXIS), P(AXIS), P()),
                               out_specs=(P(), P()), check_vma=False)(xp, lp, pairs, sign, weight, labels)
    return _replicated(mesh, st, counts.astype(x.dtype))


#: sub-blocks of the unlinked block of (d), each accepted or rejected on its own, in turn (point i is in
#: sub-block i mod B, B = min(_SUB_BLOCKS, n)): a tiny cluster then freezes the sub-block(s) of its last
#: point(s) only, not the whole block (module docstring (d))
_SUB_BLOCKS = 64


def _n_sub_blocks(n):
    return max(1, min(_SUB_BLOCKS, int(n)))


def accept_sub_blocks(labels, draw, sizes, n_blocks):
    """Acceptance of the unlinked block's draw sub-block by sub-block (module docstring (d)): point i is in
    sub-block ``i mod n_blocks``; in the order 0, 1, ..., sub-block b takes its points' ``draw`` iff, given
    the labels after the sub-blocks before it, no slot occupied in ``sizes`` (the slot sizes of ``labels``)
    empties. Returns ``(labels, sizes)`` after the scan. Rows whose draw equals their label (the kept,
    linked rows) count nowhere. Twin: ``_subcluster_cpu.accept_sub_blocks``."""
    n, w = labels.shape[0], sizes.shape[0]
    blk = jnp.arange(n, dtype=jnp.int32) % n_blocks
    chg = (draw != labels).astype(sizes.dtype)
    seg = blk * w
    delta = (jax.ops.segment_sum(chg, seg + draw, n_blocks * w)
             - jax.ops.segment_sum(chg, seg + labels, n_blocks * w)).reshape(n_blocks, w)
    active = sizes > 0

    def visit(now, d):
        trial = now + d
        ok = ~jnp.any(active & (trial == 0))
        return jnp.where(ok, trial, now), ok

    sizes, acc = jax.lax.scan(visit, sizes, delta)
    return jnp.where(acc[blk], draw, labels), sizes


def _label_step(key, labels, sizes, x, links, colouring, family, log_pi, theta, p, q, mesh=None,
                backend="xla", xw=None):
    """(d) of the module docstring: unlinked block, then each colour class. The unlinked block is accepted
    sub-block by sub-block (:func:`accept_sub_blocks`), a colour class as a whole, each iff it empties no
    occupied cluster. Point i draws with uniform
    ``counter_uniform(seed, i)``. The unlinked block: the fused XLA draw (:func:`_block_draw`), or with
    ``backend="numba"`` (d <= ``_NUMBA_DRAW_MAX_D``) its compiled twin (the same draws up to rounding); the
    colour classes (gathered rows, few) in XLA on both."""
    n = x.shape[0]
    k_max = sizes.shape[0]
    active = sizes > 0
    log_pi = jnp.where(active, log_pi, -jnp.inf)
    seed = counter_seed(key)
    if backend == "numba" and x.shape[1] <= _NUMBA_DRAW_MAX_D:
        from ppclust.inference import _subcluster_cpu as cpu

        draw, cnt = cpu.draw_block(x, colouring.linked, labels, log_pi, theta, seed, family, _DRAW_CUT, xw)
    else:
        u = counter_uniform(seed, jnp.arange(n), x.dtype)
        draw, cnt = _block_draw(x, u, colouring.linked, labels, family, log_pi, theta, mesh)
    del cnt  # the unlinked block is accepted sub-block by sub-block (module docstring (d))
    if backend == "numba" and x.shape[1] <= _NUMBA_DRAW_MAX_D:
        labels, sizes = cpu.accept_sub_blocks(labels, draw, sizes, _n_sub_blocks(n))
    else:
        labels, sizes = accept_sub_blocks(labels, draw, sizes, _n_sub_blocks(n))
    xi1, xi2 = link_log_odds(p, q, xp=jnp)
    for c in range(colouring.classes.shape[0]):
        idx = colouring.classes[c]
        real = idx < n
        ii = jnp.where(real, idx, 0)
        f, s, _, _, _ = link_counts(labels[links.nbr[ii]], links.sgn[ii], links.wgt[ii], k_max)
        logw = _loglik_matrix(family, theta, x[ii]) + log_pi  # the class's rows only (gathered)
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


def step(key, state: GibbsState, x, links: Links, colouring: Colouring, family, prior: TVClustPrior, *,
         pq="collapse", n_moves=1, sample_alpha=False, alpha_shape=1.0, alpha_rate=1.0, mesh=None,
         backend="xla", x_wired=None, chain_axis=None):
    """One sweep: ``n_moves`` split/merge, max(1, n_moves) peel/absorb MH steps, ``p, q``, augmentation,
    restricted block label updates (module docstring (a)-(d)). Returns ``(state, moves)`` with ``moves`` a
    :class:`MoveInfo` of shape (n_moves,) (the split/merge steps). ``mesh``: None, or a 1-D data mesh over
    which the unlinked block of (d) is drawn (:func:`_block_draw`; the same draws). ``backend``: ``"xla"``
    or ``"numba"`` (the split/merge moves' O(n) passes, the peel step's point, the unlinked block's draw
    and the end-of-sweep statistics on the compiled twins of :mod:`ppclust.inference._subcluster_cpu`, one
    device; the same chain). ``x_wired``: for the numba
    backend, ``x`` as the compiled twins take it (``_subcluster_cpu.wired(x)``; made here when None: make
    it once outside a loop over sweeps, it is a copy of ``x``). ``chain_axis``: under ``jax.vmap`` over
    chains, the vmapped axis' name: the chains then agree on one label-block width, the widest any of them
    needs (``lax.pmax``), so the width ``switch`` keeps an unbatched index and runs one branch (a batched
    index turns it into a select that runs every width's label step, callbacks included). A chain drawn at
    a wider width than its own draws the same labels up to float rounding: the extra slots are empty, with
    weight exp(-inf) = 0. Pure; not jitted."""
    n = x.shape[0]
    if backend == "numba" and x_wired is None:
        from ppclust.inference import _subcluster_cpu as cpu

        x_wired = cpu.wired(x)
    k_max = state.stats.n.shape[0]
    k_moves, k_p, k_pi, k_theta, k_lab, k_alpha = jax.random.split(key, 6)
    prior_now = prior._replace(alpha=state.alpha)
    labels, stats, counts = state.labels, state.stats, state.counts
    lj = _log_joint_given(stats, counts, family, prior_now, pq, state.p, state.q)

    index = None
    if backend == "numba":  # the points of each slot, once per sweep: a move visits its clusters' points only
        from ppclust.inference import _subcluster_cpu as cpu

        if k_max <= _UINT8_SLOTS and mesh is None:  # the sweep carries uint8 labels: each of its callbacks
            labels = labels.astype(jnp.uint8)  # takes them (and returns a proposal or a draw) in a quarter of
            # the bytes; the same draws (tests/inference/test_subcluster_cpu.py: numba chain == xla chain)
        index = cpu.cluster_index(labels, k_max)

    def one(carry, k):
        labels, lj, stats, counts, full, index = carry
        labels, lj, stats, counts, f, info, *rest = _move(k, labels, lj, stats, counts, x, links, family,
                                                           prior_now, pq, state.p, state.q, backend, x_wired,
                                                           index)
        return (labels, lj, stats, counts, full | f, index if index is None else rest[0]), info

    (labels, lj, stats, counts, full, index), moves = jax.lax.scan(
        one, (labels, lj, stats, counts, jnp.asarray(False), index), jax.random.split(k_moves, n_moves))
    # (a'): max(1, n_moves) peel/absorb steps per sweep (one point moves: O(1) but finding it)
    def peel(carry, k):
        labels, lj, stats, counts, full, index = carry
        labels, lj, stats, counts, f, _, *rest = _peel_move(k, labels, lj, stats, counts, x, links, family,
                                                            prior_now, pq, state.p, state.q, backend, index)
        return (labels, lj, stats, counts, full | f, index if index is None else rest[0]), None

    peel_keys = jax.vmap(lambda j: jax.random.fold_in(k_moves, j))(n_moves + jnp.arange(max(1, n_moves)))
    (labels, lj, stats, counts, full, index), _ = jax.lax.scan(peel, (labels, lj, stats, counts, full, index),
                                                               peel_keys)
    p, q = state.p, state.q
    if pq != "fixed":  # (b): Beta conditionals given the partition
        g = gamma_draws(k_p, jnp.stack(link_beta_params(counts, prior.a_p, prior.b_p, prior.a_q,
                                                        prior.b_q)).astype(x.dtype), (4,), x.dtype)
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
    labels = jnp.argsort(order).astype(labels.dtype)[labels]
    n_act = active.sum()
    widths = _widths(k_max)

    def block(w):
        return lambda lab: _label_step(k_lab, lab, stats.n[order][:w], x, links, colouring, family,
                                       log_pi[:w], jax.tree.map(lambda a: a[:w], theta), p, q, mesh, backend,
                                       x_wired)

    branch = jnp.sum(jnp.asarray(widths) < n_act)
    if chain_axis is not None:  # one width for all chains: an unbatched index, one branch runs
        branch = jax.lax.pmax(branch, chain_axis)
    labels = jax.lax.switch(branch, [block(w) for w in widths], labels)
    if mesh is not None:  # the points' and the links' sums per device, reduced with psum
        stats, counts = _sharded_stats_counts(x, labels, links, family, k_max, mesh)
    else:
        if backend == "numba":  # at every d: XLA's segment sums ran as three unfused scatters (about 8 ms
            # of a 90 ms sweep at n = 10^6, d = 2, against 2.4 ms for the twin), its O(n d^2) sums dominate
            # the sweep at d = 30
            from ppclust.inference import _subcluster_cpu as cpu

            stats = cpu.family_stats(x, labels, k_max, family, x_wired)
        else:
            stats = family.stats(x, labels, k_max)
        counts = pair_counts(labels, links).astype(x.dtype)
    if pq == "collapse":  # report E[p | z, E], E[q | z, E] as the collapsed sampler does
        p, q = link_reliability(counts, prior.a_p, prior.b_p, a_q=prior.a_q, b_q=prior.b_q, xp=jnp)
    alpha = state.alpha
    if sample_alpha:
        alpha = _escobar_west(k_alpha, alpha, (stats.n > 0).sum(), n, alpha_shape, alpha_rate)
    labels = labels.astype(state.labels.dtype)
    new = GibbsState(labels, stats, counts, p, q, alpha, state.overflow | full, None)
    return new, moves


def resolve_backend(backend, family, dtype, mesh=None) -> str:
    """``"numba"`` or ``"xla"`` for :func:`sample` (see its ``backend``); ``"numba"`` with a ``mesh``, an
    unsupported family or without numba raises ValueError."""
    from ppclust.inference import _subcluster_cpu as cpu
    from ppclust.inference.gibbs import BACKENDS

    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    ok = cpu.supports(family, dtype)
    if backend == "auto":
        return "numba" if ok and mesh is None and jax.default_backend() == "cpu" else "xla"
    if backend == "numba" and (mesh is not None or not ok):
        raise ValueError("backend='numba' of the sub-cluster sampler needs numba, one device (no mesh) and a "
                         f"float64 GaussianNIW family (got {type(family).__name__}, {np.dtype(dtype)}, "
                         f"mesh={mesh is not None}); use backend='xla'")
    return backend


def sample(key, x, links: Links, family, prior: TVClustPrior = TVClustPrior(), *, n_draws=1000,
           n_warmup=1000, n_chains=4, thin=1, k_max=64, pq="collapse", p=0.9, q=0.9, n_moves=4,
           sample_alpha=False, alpha_shape=1.0, alpha_rate=1.0, init_labels=None,
           init_state: GibbsState | None = None, store_labels=True, colouring: Colouring | None = None,
           progress_bar=None, mesh=None, backend="auto", n_samples=None) -> ChainResult:
    """Run ``n_chains`` chains of the sub-cluster sampler: ``jit(vmap(scan))`` over sweeps.

    Same arguments (``n_draws``; ``n_samples`` is its deprecated name) and the same
    :class:`~ppclust.inference.gibbs.ChainResult` as :func:`ppclust.inference.gibbs.sample` (``log_joint``
    is the collapsed log joint, ``p, q`` the draws in ``"sample"`` mode and the conditional means in
    ``"collapse"`` mode). ``n_moves``: split/merge proposals per sweep. ``colouring``: precomputed
    :func:`colour_links` (else computed here, host side).
    ``progress_bar`` is accepted for interface parity and ignored (one compiled call). ``mesh``: None (one
    device) or a 1-D :class:`jax.sharding.Mesh` with axis ``"data"`` (:mod:`ppclust._devices`): the
    unlinked block's draw, the (n, width) part of a sweep, is split over its devices (same chain, same
    draws; :func:`_block_draw`). ``backend``: ``"auto"`` (default: ``"numba"`` when JAX runs on CPU with no
    ``mesh``, numba imports and the family is a float64 :class:`~ppclust.families.GaussianNIW`, else
    ``"xla"``), ``"xla"`` (every pass in the jitted program) or ``"numba"`` (the O(n) passes of the
    split/merge moves, the peel step's point, the unlinked block's draw and the end-of-sweep statistics, on
    the compiled twins of
    :mod:`ppclust.inference._subcluster_cpu`, called from the jitted program; the same chain up to float
    rounding). :func:`resolve_backend`.

    Raises
    ------
    KMaxExhaustedError when a split was proposed with all ``k_max`` slots occupied.
    """
    if pq not in PQ_MODES:
        raise ValueError(f"pq must be one of {PQ_MODES}, got {pq!r}")
    n_draws = renamed_n_samples(n_draws, n_samples)
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    n = x.shape[0]
    backend = resolve_backend(backend, family, x.dtype, mesh)
    if colouring is None:
        colouring = colour_links(links, n)
    if init_state is None:
        one = init(x, links, family, k_max=k_max, labels=init_labels, p=p, q=q, alpha=prior.alpha)
        state = jax.tree.map(lambda a: jnp.broadcast_to(a, (n_chains,) + a.shape), one)
    else:  # host copy: a state left sharded by a mesh run must not change the compiled program's inputs
        state = jax.tree.map(lambda a: jnp.asarray(np.asarray(a)), init_state._replace(theta=None))
        n_chains = state.labels.shape[0]
    keys = jax.random.split(jax.random.fold_in(key, 0), n_chains)
    run = partial(_run, keys, state, x, links, colouring, family, prior, n_warmup=int(n_warmup),
                  n_samples=int(n_draws), thin=int(thin), pq=pq, n_moves=int(n_moves),
                  sample_alpha=bool(sample_alpha), alpha_shape=alpha_shape, alpha_rate=alpha_rate,
                  store_labels=bool(store_labels), mesh=mesh, backend=backend, agree_width=_AGREE_WIDTH)
    if backend == "numba":  # the callbacks read x from a host copy held for this call (never an operand)
        from ppclust.inference import _subcluster_cpu as cpu

        with cpu.hold(x) as token:  # the callbacks run before the block releases the copy
            state, out = jax.block_until_ready(run(x_token=token))
    else:
        state, out = run()
    out = jax.device_get(out)
    if bool(np.any(np.asarray(state.overflow))):
        raise KMaxExhaustedError(
            f"k_max={k_max} cluster slots were exhausted (a split was proposed with every slot occupied); "
            f"increase k_max (at most n={n} is ever needed) or lower alpha.")
    lab, info = out
    return ChainResult(labels=None if lab is None else np.asarray(lab, np.int32),
                       n_clusters=np.asarray(info.n_clusters), log_joint=np.asarray(info.log_joint),
                       p=np.asarray(info.p), q=np.asarray(info.q), alpha=np.asarray(info.alpha), state=state)


@partial(jax.jit, static_argnames=("n_warmup", "n_samples", "thin", "pq", "n_moves", "sample_alpha",
                                   "store_labels", "mesh", "backend", "agree_width"))
def _run(keys, state, x, links, colouring, family, prior, *, n_warmup, n_samples, thin, pq, n_moves,
         sample_alpha, alpha_shape, alpha_rate, store_labels, mesh, backend="xla", x_token=None,
         agree_width=True):
    kw = dict(pq=pq, n_moves=n_moves, sample_alpha=sample_alpha, alpha_shape=alpha_shape,
              alpha_rate=alpha_rate, mesh=mesh, backend=backend)
    if backend == "numba":  # x never crosses the host callbacks: read from the copy held under x_token
        from ppclust.inference import _subcluster_cpu as cpu  # (else as uint32 pairs, converted once)

        kw["x_wired"] = cpu.wired(x, x_token)

    def sweep(key, st):
        return step(key, st, x, links, colouring, family, prior, **kw)[0]

    def chain(key, st):
        # `step` appears once in the program (compile time): draw j runs its sweeps t in [lo, hi), the
        # warm-up being the first n_warmup sweeps of draw 0, sweep t keyed fold_in(key j, t)
        def body(s, inp):
            k, j = inp
            lo = jnp.where(j == 0, -n_warmup, 0)
            s = jax.lax.fori_loop(lo, thin, lambda t, s_: sweep(jax.random.fold_in(k, t + n_warmup), s_), s)
            return s, (s.labels if store_labels else None, _info(s, family, prior, pq))

        return jax.lax.scan(body, st, (jax.random.split(key, n_samples), jnp.arange(n_samples)))

    if keys.shape[0] == 1:  # one chain: no vmap, so lax.switch over the label-block widths runs one branch
        # (a batched branch index turns switch and cond into a select that runs every branch)
        out = chain(keys[0], jax.tree.map(lambda a: a[0], state))
        return jax.tree.map(lambda a: a[None], out)
    if agree_width:  # several chains: they agree on one width per sweep (see `step`)
        kw["chain_axis"] = _CHAINS
    return jax.vmap(chain, axis_name=_CHAINS)(keys, state)
