r"""The Metropolis-Hastings moves of the sub-cluster sampler: split/merge and peel/absorb, exactly.

Kept whole (over 700 lines): the two kinds of move share the proposal kernel, the terms of the Hastings
ratio and the move's result type, and their exactness is tested together.

Kernels (a) and (a') of :mod:`ppclust.inference.subcluster` (see its docstring for the sweep). A *split*
picks an occupied cluster C, fits two sub-clusters to its points afresh (:func:`subcluster_responsibilities`:
an auxiliary variable drawn from a kernel that depends on C's points only, so it never needs storing) and
sends each point to side A with its responsibility; a *merge* joins a pair of clusters chosen by
:func:`merge_pair_log_prob`, proposing the fit of the union from the two pieces. :func:`propose` draws a
proposal, :func:`split_merge_log_ratio` is its Hastings ratio (including the density ratio of the fit's
labelled subsample), :func:`split_merge_move` one accept/reject step. A *peel* splits one point off a
cluster, an *absorb* joins a singleton to a partner (:func:`peel_absorb_log_probs`,
:func:`peel_absorb_move`). The proposal's statistics change in two slots only
(:func:`_proposal_stats`). With ``backend="numba"`` the O(n_C) passes run on the compiled twins of
:mod:`ppclust.inference._subcluster_cpu`; both backends consume the same counter-based uniforms
(:func:`counter_uniform`) and take the same decisions.

The moves in detail (the sweep's kernels (a) and (a')):

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
    as merges, hence as many peel/absorb steps per sweep as split/merge steps.

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

References: J. Chang, J. W. Fisher III, "Parallel sampling of DP mixture models using sub-cluster
splits", NIPS 2013 (Sections 3-4); S. Jain, R. M. Neal, "A split-merge Markov chain Monte Carlo procedure
for the Dirichlet process mixture model", JCGS 2004.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import gammaln

from ppclust._devices import AXIS
from ppclust.families import GaussianNIW
from ppclust.inference import _subcluster_cpu, _subcluster_move_cpu
from ppclust.models.tvclust import log_joint_from_stats
from ppclust.sideinfo import pair_counts

__all__ = [
    "MoveInfo",
    "MoveProblem",
    "RowShard",
    "SubFit",
    "subcluster_responsibilities",
    "propose",
    "merge_pair_log_prob",
    "peel_absorb_log_probs",
    "split_merge_log_ratio",
    "split_merge_move",
    "peel_absorb_move",
    "log_joint_given",
    "loglik_matrix",
    "counter_seed",
    "counter_uniform",
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
#: labelled subsample of a sub-cluster fit (its first points): the sub-cluster parameters are fitted to
#: their side labels y; a merge proposes y from the two pieces and pays log h(y) - log m(y) <= (m+1) log 2
_LAB_FIT = 64
#: probability that h draws the labels y as a uniform-size uniform subset (else the EM sides, flipped): a
#: split's fit comes from the EM sides 9 times in 10, while a merge whose pieces disagree with the EM
#: sides pays about log(0.5 / 0.1) nats more in log h - log m (see docs/decisions/ for the evidence)
_LAB_SUBSET = 0.1
#: probability that a label copied into y (from the EM sides or from the pieces) is flipped
_LAB_FLIP = 0.02
#: a merge's labelled subsample takes at least this share of its points from the smaller piece
_LAB_MIN = 1.0 / 16.0
#: share of merge pairs drawn uniformly (:func:`merge_pair_log_prob`); the rest take a uniform cluster and
#: a partner with near means likelier. Any value in (0, 1] is exact; 1/8 proposes the merges of adjacent
#: surplus pieces often while every pair stays possible (see docs/decisions/ for the evidence)
_MERGE_UNIFORM = 0.125
#: the informed partner's weight exp(-_MERGE_SHARPNESS D_ab / min_c D_ac) (:func:`_neighbour_log_probs`):
#: 3 makes the nearest cluster e^2 times likelier than one at sqrt(2) times its distance
_MERGE_SHARPNESS = 3.0
#: rows per chunk of the (n, K) data-term block (bounds the (chunk, K d) intermediate of full covariances)
_CHUNK = 1 << 15


def loglik_matrix(family, theta, x):
    """(n, K) ``log p(x_i | theta_k)``: ``family.log_likelihood_matrix`` where the family has one (matrix
    products), else the per-point log likelihood mapped over the points.

    Parameters
    ----------
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    theta : pytree
        Per-slot cluster parameters (``family.sample_posterior``), K slots.
    x : array of shape (n, d)
        The points.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> theta = fam.sample_posterior(jax.random.key(0), fam.stats(x, jnp.array([0, 0, 1, 1]), 2))
    >>> loglik_matrix(fam, theta, x).shape
    (4, 2)
    """
    if hasattr(family, "log_likelihood_matrix"):
        return family.log_likelihood_matrix(theta, x)
    return jax.vmap(family.log_likelihood, (None, 0))(theta, x)


def data_term(family, theta, x):
    """(n, K) ``log p(x_i | theta_k)`` in chunks of ``_CHUNK`` rows (one XLA loop, bounded memory)."""
    n = x.shape[0]
    if n <= _CHUNK:
        return loglik_matrix(family, theta, x)
    m = -(-n // _CHUNK)
    xp = jnp.pad(x, ((0, m * _CHUNK - n), (0, 0))).reshape(m, _CHUNK, x.shape[1])
    out = jax.lax.map(lambda xb: loglik_matrix(family, theta, xb), xp)
    return out.reshape(m * _CHUNK, -1)[:n]


class MoveProblem(NamedTuple):
    """What the moves of one sweep read and never change: the data ``x``, the ``links``, the ``family``,
    the ``prior`` (its alpha the current one), the link mode ``pq`` with the current ``p``, ``q``, the
    ``backend`` and, for ``"numba"``, the data as the compiled twins take them (``xw``,
    :func:`ppclust.inference._callback.wired`).

    Attributes
    ----------
    x : jax.Array of shape (n, d)
        The points.
    links : Links
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        The prior, its alpha the current one.
    pq : {"collapse", "sample", "fixed"}
        How the link parameters enter.
    p, q : jax.Array of shape ()
        Current link sensitivity and specificity.
    backend : {"xla", "numba"}, default="xla"
        Where the O(n) passes run.
    xw : Wired or None, default=None
        For ``"numba"``, the data as the compiled twins take them.
    n_valid : int scalar or None, default=None
        The points among the rows of ``x``: rows ``n_valid ..`` are bucket padding (label ``k_max``, in no
        cluster; :mod:`ppclust._buckets`), and the sub-cluster fit's subsample sizes count the points
        only. None: every row is a point.
    rows : RowShard or None, default=None
        Rows spread over processes (:class:`RowShard`, inside the sampler's ``shard_map``): ``x`` is then
        this device's block of rows, and the labels (of every point, replicated) are indexed by global
        row. None: ``x`` holds every row.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> st = init(x, links, fam, k_max=4)
    >>> problem = MoveProblem(x, links, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> lj = log_joint_given(st.stats, st.counts, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> problem.backend
    'xla'
    """

    x: jax.Array
    links: object
    family: object
    prior: object
    pq: str
    p: jax.Array
    q: jax.Array
    backend: str = "xla"
    xw: object = None
    n_valid: object = None
    rows: object = None


class RowShard(NamedTuple):
    """One device's rows of a data set spread over processes, inside a ``shard_map`` over the ``"data"``
    axis (:func:`ppclust.inference.subcluster.sample_process_rows`).

    The sampler keeps the labels of every point on every device (int32, indexed by global row ``0 .. n_pad
    - 1``, bucket padding after the ``n`` points, as in a one-process fit); only the rows of ``x`` stay
    where they are. The methods are the few ways the moves and the label step reach rows: gather given
    rows (:meth:`take`), this device's part of a per-point array (:meth:`local`), a per-row result back
    to every point (:meth:`to_global`), and sums over devices (:meth:`sum`, :meth:`stats`). Each row is
    held by one device, so a gather or a scatter sums one value and zeros: exact.

    Attributes
    ----------
    x : jax.Array of shape (b, d)
        This device's block of rows (padding rows: zeros).
    rid : jax.Array of int32 of shape (b,)
        The global row of each (padding rows: ``n_pad``, outside every per-point array).
    pos : jax.Array of int32 of shape (n_pad,)
        The position of every global row in the sharded array (bucket padding rows: -1).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> rows = RowShard(jnp.zeros((4, 2)), jnp.arange(4, dtype=jnp.int32), jnp.arange(4, dtype=jnp.int32))
    >>> rows.local(jnp.array([5, 6, 7, 8])).tolist()
    [5, 6, 7, 8]
    """

    x: jax.Array
    rid: jax.Array
    pos: jax.Array

    def local(self, values, fill=0):
        """This device's rows of a per-point array ``values`` (n_pad, ...); ``fill`` on padding rows."""
        return values.at[self.rid].get(mode="fill", fill_value=fill)

    def sum(self, value):
        """The sum over every device of ``value`` (``psum`` over the ``"data"`` axis)."""
        return jax.lax.psum(value, AXIS)

    def take(self, idx):
        """The rows of global rows ``idx`` (...,) as (..., d), on every device (the one holding each
        row sends it, the others zeros)."""
        b = self.x.shape[0]
        loc = self.pos[idx] - jax.lax.axis_index(AXIS) * b
        mine = (loc >= 0) & (loc < b)
        return self.sum(jnp.where(mine[..., None], self.x[jnp.clip(loc, 0, b - 1)], 0.0))

    def to_global(self, values, default):
        """Per-point array from every device's per-row ``values`` (b,); ``default`` (n_pad,) on the bucket
        padding rows."""
        out = jnp.zeros(default.shape, jnp.int32).at[self.rid].set(values.astype(jnp.int32), mode="drop")
        return jnp.where(self.pos >= 0, self.sum(out), default).astype(default.dtype)

    def stats(self, family, labels, k_max, w=None):
        """``family.stats`` of every device's rows with their ``labels`` (b,) (sums reduced over devices)."""
        return family.stats(self.x, labels, k_max, w, reduce=self.sum)


class MoveInfo(NamedTuple):
    """One split/merge proposal (for tests and diagnostics).

    Attributes
    ----------
    is_split : jax.Array of bool of shape ()
        A split (else a merge) was proposed.
    log_ratio : jax.Array of shape ()
        Log Hastings ratio (``-inf``: an invalid proposal).
    accepted : jax.Array of bool of shape ()
        Whether the proposal was accepted.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> st = init(x, links, fam, k_max=4)
    >>> problem = MoveProblem(x, links, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> lj = log_joint_given(st.stats, st.counts, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> out = split_merge_move(jax.random.key(0), st.labels, lj, st.stats, st.counts, problem)
    >>> isinstance(out[-1], MoveInfo)
    True
    """

    is_split: jax.Array  # () bool
    log_ratio: jax.Array  # () log Hastings ratio (-inf: invalid proposal)
    accepted: jax.Array  # () bool


class SubFit(NamedTuple):
    """A sub-cluster fit of one cluster (:func:`subcluster_responsibilities`).

    Attributes
    ----------
    log_r : jax.Array of shape (n,)
        log r_i, the probability of side A (arbitrary outside the cluster).
    log_1r : jax.Array of shape (n,)
        log(1 - r_i).
    idx : jax.Array of int of shape (m,)
        The labelled subsample (indices of points of the cluster).
    y : jax.Array of bool of shape (m,)
        Its side labels, from which the sub-cluster parameters were fitted.
    em : jax.Array of bool of shape (m,)
        The EM sides of the labelled points.
    log_h : jax.Array of shape ()
        log h(I, y | C), the kernel's own probability of the labelled subsample.
    valid : jax.Array of bool of shape (m,) or None, default=None
        The entries of ``idx, y, em`` that belong to the labelled subsample (its size counts the points
        only, not the bucket padding rows of ``x``); None: all of them.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> fit = subcluster_responsibilities(jax.random.key(0), x, jnp.ones(4, bool), fam)
    >>> isinstance(fit, SubFit)
    True
    """

    log_r: jax.Array  # (n,) log r_i, the probability of side A (arbitrary outside the cluster)
    log_1r: jax.Array  # (n,) log(1 - r_i)
    idx: jax.Array  # (m,) the labelled subsample (indices of points of the cluster)
    y: jax.Array  # (m,) bool, its side labels, from which the sub-cluster parameters were fitted
    em: jax.Array  # (m,) bool, the EM sides of the labelled points
    log_h: jax.Array  # () log h(I, y | C), the kernel's own probability of the labelled subsample
    valid: jax.Array | None = None  # (m,) bool, the entries in the labelled subsample (None: all)


def _log_flip(y, side, valid=None):
    r"""log of :math:`\tfrac12[\prod_k P(y_k\mid s_k)+\prod_k P(y_k\mid\neg s_k)]` with
    :math:`P(y\mid s) = 1 - f` if :math:`y = s` else :math:`f` (``f = _LAB_FLIP``): labels copied from
    sides ``s`` of unknown orientation, each flipped with probability f; over the entries ``valid``
    (None: all)."""
    dt = jnp.result_type(float)
    if valid is None:
        agree, m = (y == side).sum().astype(dt), y.shape[0]
    else:
        agree, m = ((y == side) & valid).sum().astype(dt), valid.sum().astype(dt)
    lf, l1f = jnp.log(_LAB_FLIP), jnp.log1p(-_LAB_FLIP)
    return jnp.logaddexp(agree * l1f + (m - agree) * lf, (m - agree) * l1f + agree * lf) - jnp.log(2.0)


def _log_h(y, em_side, valid=None):
    r"""log h(y | I): with probability ``_LAB_SUBSET`` a uniform count :math:`k\in\{0..m\}` of ones and
    a uniform subset of that size (:math:`1/((m+1)\binom{m}{k})`: a small piece's few labels cost
    :math:`\log\binom{m}{k}` instead of :math:`m\log 2`), else the EM sides copied with flips; over the
    entries ``valid`` (None: all)."""
    dt = jnp.result_type(float)
    if valid is None:
        m, k = y.shape[0], y.sum().astype(dt)
    else:
        m, k = valid.sum().astype(dt), (y & valid).sum().astype(dt)
    log_subset = -jnp.log(m + 1.0) - (gammaln(m + 1.0) - gammaln(k + 1.0) - gammaln(m - k + 1.0))
    return jnp.logaddexp(
        jnp.log(_LAB_SUBSET) + log_subset, jnp.log1p(-_LAB_SUBSET) + _log_flip(y, em_side, valid)
    )


def subcluster_responsibilities(key, x, mask, family, in_a=None, from_pieces=False, n_valid=None):
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

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    x : array of shape (n, d)
        The points.
    mask : array of bool of shape (n,)
        The points of the cluster.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    in_a : array of bool of shape (n,) or None, default=None
        For a merge, membership of piece A.
    from_pieces : bool, default=False
        Draw the side labels from the pieces (a merge's reverse split).
    n_valid : int scalar or None, default=None
        The points among the rows of ``x`` (the rest is bucket padding, outside ``mask``): the subsample
        sizes are ``min(_SUB_FIT, n_valid)`` and ``min(_LAB_FIT, .)`` (traced; the arrays keep the sizes
        of all rows, the entries past them weighted 0 and left out of every sum), so the fit does not
        depend on the padding. None: every row is a point.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> fit = subcluster_responsibilities(jax.random.key(0), x, jnp.ones(4, bool), fam)
    >>> fit.log_r.shape
    (4,)
    """
    fit, theta, lw = _subcluster_fit(key, x, mask, family, in_a, from_pieces, n_valid=n_valid)
    log_r, log_1r = _responsibilities(family, theta, lw, x)
    return fit._replace(log_r=log_r, log_1r=log_1r)


def _subcluster_fit(
    key, x, mask, family, in_a=None, from_pieces=False, pick_all=None, n_valid=None, take=None
):
    """Steps 1-3 of :func:`subcluster_responsibilities` on the subsamples (everything but the final O(n)
    pass): ``(fit, theta, log_weights)`` with ``fit`` a :class:`SubFit` whose ``log_r, log_1r`` are
    placeholders. ``pick_all``: None (uniform points of ``mask``, of ``mask & in_a`` and of ``mask & ~in_a``
    from cumulative counts here) or a function ``(u, u_lab) -> ((idx, count), (li, count), (ia, n_a), (ib,
    n_b))`` giving the same points: of C from the uniforms ``u`` and ``u_lab``, of A and of B from
    ``u_lab`` (the compiled twin :func:`ppclust.inference._subcluster_cpu.pick_subsamples`, all four in one
    visit of the labels). ``n_valid``: as :func:`subcluster_responsibilities`. ``take``: None (rows of
    ``x`` by index) or a function giving them (:meth:`RowShard.take`; ``x`` then only carries the shape
    and dtype of all rows)."""
    if take is None:
        take = lambda i: x[i]  # noqa: E731
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
    # the subsamples' own sizes (m_n, ml_n) count the points only: with bucket padding the arrays keep
    # the static sizes m, ml and the entries past m_n, ml_n are weighted 0 and left out of every sum (the
    # uniforms of the first entries do not depend on the array's length: partitionable Threefry)
    if n_valid is None:
        ml_n, sub_ok, lab_ok = ml, None, None
    else:
        m_n = jnp.minimum(_SUB_FIT, n_valid)
        ml_n = jnp.minimum(_LAB_FIT, m_n)
        sub_ok, lab_ok = jnp.arange(m) < m_n, jnp.arange(ml) < ml_n
    k_mix, k_bits, k_flip, k_orient, k_lab, k_ab = jax.random.split(k_y, 6)
    u_lab = jax.random.uniform(k_lab, (ml,), dtype=x.dtype)
    if pick_all is None:
        picked = (pick("C", u), pick("C", u_lab)) + (
            (pick("A", u_lab), pick("B", u_lab)) if in_a is not None else ()
        )
    else:
        picked = pick_all(u, u_lab)
    idx, count = picked[0]
    xs = take(idx)
    side = (jnp.sum((xs - xs[0]) ** 2, -1) > jnp.sum((xs - xs[1]) ** 2, -1)).astype(jnp.int32)
    w = jnp.broadcast_to(jnp.asarray(count > 0, x.dtype), (m,))
    if sub_ok is not None:
        w = w * sub_ok

    def body(t, side):
        st = _two_slot_stats(family, xs, side, w)
        theta = family.sample_posterior(jax.random.fold_in(k_iter, t), st)
        ll = loglik_matrix(family, theta, xs) + jnp.log(st.n + 1.0)
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
    x_lab = take(li)
    ll = loglik_matrix(family, theta_em, x_lab) + lw_em
    em = ll[:, 0] < ll[:, 1]  # the EM sides of the labelled points
    k_ones = jax.random.randint(k_bits, (), 0, ml_n + 1)  # a uniform count, then a uniform subset of it
    u_sub = jax.random.uniform(jax.random.fold_in(k_bits, 1), (ml,), dtype=x.dtype)
    if lab_ok is not None:  # the entries past ml_n sort last: the first ml_n positions as without them
        u_sub = jnp.where(lab_ok, u_sub, 2.0)
    subset = jnp.argsort(u_sub) < k_ones
    y = jnp.where(jax.random.uniform(k_mix, dtype=x.dtype) < _LAB_SUBSET, subset, em ^ flip)
    if in_a is not None:
        y_pieces = in_a[li] ^ flip ^ (jax.random.uniform(k_orient, dtype=x.dtype) < 0.5)
        y = jnp.where(from_pieces, y_pieces, y)
    n_c = count.astype(x.dtype)
    w_lab = jnp.broadcast_to(n_c / ml_n, (ml,))
    st = _two_slot_stats(family, x_lab, y.astype(jnp.int32), w_lab if lab_ok is None else w_lab * lab_ok)
    theta = family.sample_posterior(k_fit, st)
    log_h = _log_h(y, em, lab_ok) - ml_n * jnp.log(jnp.maximum(n_c, 1.0))
    empty = jnp.zeros((0,), x.dtype)
    return SubFit(empty, empty, li, y, em, log_h, lab_ok), theta, jnp.log(st.n + 1.0)


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
    :func:`ppclust.inference._subcluster_move_cpu.move_sides`, for the points of the cluster only)."""
    ll = data_term(family, theta, x) + lw
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
    return _log_m_counts(fit.y, side_a[fit.idx], (mask & side_a).sum(), (mask & ~side_a).sum(), fit.valid)


def _log_m_counts(y, ina, n_a, n_b, valid=None):
    """:func:`_log_m_lab` from the labelled points' membership of A (``ina``) and the pieces' sizes, over
    the entries ``valid`` (None: all)."""
    beta = _beta_a(n_a, n_b)
    dt = jnp.result_type(float)
    lp = jnp.where(
        ina,
        jnp.log(beta) - jnp.log(jnp.maximum(n_a, 1).astype(dt)),
        jnp.log1p(-beta) - jnp.log(jnp.maximum(n_b, 1).astype(dt)),
    )
    if valid is not None:
        lp = jnp.where(valid, lp, 0.0)
    return lp.sum() + _log_flip(y, ina, valid)


def counter_seed(key):
    """Two 32-bit words of ``key``: the seed of :func:`counter_uniform`.

    Parameters
    ----------
    key : jax.random key
        PRNG key.

    Examples
    --------
    >>> import jax
    >>> counter_seed(jax.random.key(0)).shape
    (2,)
    """
    return jax.random.bits(key, (2,), jnp.uint32)


def counter_uniform(seed, idx, dtype):
    r"""Uniforms on (0, 1) as a hash of (``seed``, index): ``idx`` (...) int -> (...) ``dtype``.

    Counter based, so a compiled loop draws the uniform of point i itself, for the points it visits only
    (twin: :func:`ppclust.inference._counter_rng.counter_uniform`), where a threefry draw of all n costs
    a pass. Two 32-bit words :math:`a, b` from the lowbias32 integer hash
    (C. Wellons) of the index mixed with the two seed words; float64: :math:`u = (\lfloor a/2^5\rfloor 2^{26}
    + \lfloor b/2^6\rfloor + \tfrac12)\,2^{-53}` (53 bits, never 0 or 1), float32: :math:`(\lfloor
    a/2^8\rfloor + \tfrac12)\,2^{-24}`. ``tests/inference/test_subcluster_cpu.py`` checks uniformity (KS)
    and independence across seeds and neighbouring indices.

    Parameters
    ----------
    seed : array of uint32 of shape (2,)
        The seed (:func:`counter_seed`).
    idx : array of int
        Point indices, any shape.
    dtype : dtype
        Float type of the uniforms (float32 or float64).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> u = counter_uniform(counter_seed(jax.random.key(0)), jnp.arange(3), jnp.float32)
    >>> bool(((u > 0) & (u < 1)).all())
    True
    """

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
        return ((a >> 5).astype(dtype) * 67108864.0 + (b >> 6).astype(dtype) + 0.5) * (2.0**-53)
    return ((a >> 8).astype(dtype) + 0.5) * (2.0**-24)


def _log_q_pair(log_r, log_1r, mask, in_a, reduce=None):
    """log q({A, B} | C): both orientations of the unordered bipartition (A = mask & in_a); ``reduce``:
    the sum over devices of the two orientations' sums (rows spread over devices)."""
    ina, inb = mask & in_a, mask & ~in_a
    o1 = jnp.where(ina, log_r, 0.0).sum() + jnp.where(inb, log_1r, 0.0).sum()
    o2 = jnp.where(ina, log_1r, 0.0).sum() + jnp.where(inb, log_r, 0.0).sum()
    if reduce is not None:
        o1, o2 = reduce(jnp.stack([o1, o2]))
    return jnp.logaddexp(o1, o2)


def log_joint_given(stats, counts, family, prior, pq, p, q):
    """The collapsed log joint from the statistics and pair counts: p and q integrated out
    (``pq="collapse"``) or at their current values.

    Parameters
    ----------
    stats : family statistics
        Per-slot sufficient statistics.
    counts : array of shape (4,)
        Pair counts ``[N11, N01, N10, N00]``.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        The prior (its alpha the current one).
    pq : {"collapse", "sample", "fixed"}
        ``"collapse"`` integrates p and q out; otherwise they are taken at ``p``, ``q``.
    p, q : float or scalar
        Current link sensitivity and specificity.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> st = init(x, links, fam, k_max=4)
    >>> problem = MoveProblem(x, links, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> lj = log_joint_given(st.stats, st.counts, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> bool(jnp.isfinite(lj))
    True
    """
    if pq == "collapse":
        return log_joint_from_stats(stats, counts, family, prior)
    return log_joint_from_stats(stats, counts, family, prior, p, q)


def _log_joint(labels, x, links, family, prior, pq, p, q, k_max):
    stats = family.stats(x, labels, k_max)
    counts = pair_counts(labels, links).astype(x.dtype)
    return log_joint_given(stats, counts, family, prior, pq, p, q), stats, counts


def split_merge_log_ratio(is_split, lj_new, lj_old, n_clusters, log_q, log_pair=None):
    r"""The Hastings ratio of the module docstring, (a): split from K clusters or merge of two of K.

    ``log_pair``: log probability that the merge move picks the pair, :func:`merge_pair_log_prob`, in the
    state where the two clusters exist (after the split for a split, the current state for a merge);
    None means the uniform choice :math:`2/(K'(K'-1))`. A split picks one of K clusters (1/K), a merge
    from K clusters is reversed by a split picking one of K - 1.

    Parameters
    ----------
    is_split : bool or bool scalar
        A split (else a merge).
    lj_new : float or scalar
        Log joint of the proposed state.
    lj_old : float or scalar
        Log joint of the current state.
    n_clusters : int or int scalar
        K, the number of clusters before the move.
    log_q : float or scalar
        Log proposal term of :func:`propose`.
    log_pair : float or scalar or None, default=None
        Log probability that the merge move picks the pair.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> float(split_merge_log_ratio(True, 0.0, 0.0, 1, 0.0))
    0.0
    """
    k = jnp.asarray(n_clusters).astype(jnp.result_type(lj_new))
    if log_pair is None:
        kp = jnp.where(is_split, k + 1.0, k)
        log_pair = jnp.log(2.0 / (kp * (kp - 1.0)))
    return jnp.where(
        is_split,
        lj_new - lj_old + log_pair + jnp.log(k) - log_q,
        lj_new - lj_old - jnp.log(k - 1.0) + log_q - log_pair,
    )


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
    choices propose the merges of adjacent surplus clusters that a uniform choice rarely tries; the
    uniform share keeps every pair possible.

    Parameters
    ----------
    a, b : int or int scalar
        Two occupied slots.
    stats : family statistics
        Per-slot sufficient statistics.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> st = fam.stats(x, jnp.array([0, 0, 1, 1]), 3)
    >>> round(float(merge_pair_log_prob(0, 1, st)), 4)
    0.0
    """
    k = (stats.n > 0).sum().astype(stats.s.dtype)
    lp = _neighbour_log_probs(stats)
    informed = jnp.logaddexp(lp[a, b], lp[b, a]) - jnp.log(k)
    return jnp.logaddexp(
        jnp.log(_MERGE_UNIFORM) + jnp.log(2.0 / (k * (k - 1.0))), jnp.log1p(-_MERGE_UNIFORM) + informed
    )


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

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    is_split : bool or bool scalar
        Propose a split (else a merge).
    labels : array of int of shape (n,)
        Current labels.
    stats : family statistics
        Their per-slot statistics.
    x : array of shape (n, d)
        The points.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    backend : {"xla", "numba"}, default="xla"
        Where the O(n) part runs.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> st = fam.stats(x, jnp.zeros(4, jnp.int32), 4)
    >>> z = jnp.zeros(4, jnp.int32)
    >>> prop, log_q, valid, full, pair = propose(jax.random.key(0), True, z, st, x, fam)
    >>> prop.shape
    (4,)
    """
    return _propose(key, is_split, labels, stats, x, family, backend)[:5]


def _propose(key, is_split, labels, stats, x, family, backend, xw=None, index=None, n_valid=None, rows=None):
    """:func:`propose`, plus the split side B's statistics when the compiled twin computed them (else
    None). ``xw``: ``x`` as the compiled twins take it (:func:`ppclust.inference._callback.wired`),
    made once per chain (else per call); ``index``: the sweep's
    :class:`~ppclust.inference._cluster_index.ClusterIndex` (numba: the twins visit the points of the
    chosen clusters only; None: all n); ``n_valid``: the points among the rows of ``x`` (the rest is
    bucket padding, :func:`subcluster_responsibilities`); ``rows``: a :class:`RowShard` (``x`` its rows,
    ``labels`` those of every point), the split side B's statistics then reduced over devices."""
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
        fit, theta, lw = _subcluster_fit(
            k_sub,
            x,
            None,
            family,
            in_a,
            jnp.logical_not(is_split),
            pick_all=lambda u, u_lab: _subcluster_cpu.subsamples(labels, ca, cb, is_split, u, u_lab, index),
            n_valid=n_valid,
        )
        slots = _subcluster_move_cpu.MoveSlots(ca, cb, new, is_split)
        proposal, log_q, n_c, n_a, side_b = _subcluster_move_cpu.move(
            x, labels, slots, theta, lw, side_seed, family, _LOGIT_CLIP, xw, index
        )
    elif rows is not None:  # rows spread over devices: the fit's subsamples gathered, the O(n) pass local
        mask = jnp.where(is_split, in_a, in_a | (labels == cb))
        shape = jax.ShapeDtypeStruct((labels.shape[0], x.shape[1]), x.dtype)
        fit, theta, lw = _subcluster_fit(
            k_sub, shape, mask, family, in_a, jnp.logical_not(is_split), n_valid=n_valid, take=rows.take
        )
        log_r, log_1r = _responsibilities(family, theta, lw, rows.x)
        u = counter_uniform(side_seed, rows.rid, x.dtype)  # keyed by global row: as in one process
        mask_l, in_a_l = rows.local(mask, False), rows.local(in_a, False)
        side_l = jnp.where(is_split, jnp.log(u) < log_r, in_a_l)
        n_c, n_a = mask.sum(), rows.sum((mask_l & side_l).sum())
        target = jnp.where(is_split, new, ca).astype(labels.dtype)
        proposal = rows.to_global(jnp.where(mask_l & ~side_l, target, rows.local(labels)), labels)
        log_q = _log_q_pair(log_r, log_1r, mask_l, side_l, rows.sum)
        in_b = (rows.local(proposal, -1) == new).astype(x.dtype)  # the split's new slot (padding: -1)
        side_b = rows.stats(family, jnp.zeros(rows.rid.shape, jnp.int32), 1, in_b)
    else:
        mask = jnp.where(is_split, in_a, in_a | (labels == cb))
        fit = subcluster_responsibilities(k_sub, x, mask, family, in_a, jnp.logical_not(is_split), n_valid)
        u = counter_uniform(side_seed, jnp.arange(labels.shape[0]), x.dtype)
        side_a = jnp.where(is_split, jnp.log(u) < fit.log_r, in_a)
        n_c, n_a = mask.sum(), (mask & side_a).sum()
        target = jnp.where(is_split, new, ca).astype(labels.dtype)
        proposal = jnp.where(mask & ~side_a, target, labels)
        log_q = _log_q_pair(fit.log_r, fit.log_1r, mask, side_a)
    # log h - log m of the fit's labelled subsample: its points' side A is slot ca in the split's result
    # (side B moved to the new slot) and in the merge's current labels
    ina = jnp.where(is_split, proposal[fit.idx], labels[fit.idx]) == ca
    log_q = log_q + fit.log_h - _log_m_counts(fit.y, ina, n_a, n_c - n_a, fit.valid)
    full = is_split & active[new] & (n_c >= 2)  # a split was possible but no slot was free
    valid = jnp.where(is_split, (n_a > 0) & (n_a < n_c) & ~active[new], active.sum() >= 2)
    pair = (ca, jnp.where(is_split, new, cb))
    return proposal, log_q, valid, full, pair, side_b


def split_merge_move(key, labels, lj, stats, counts, problem: MoveProblem, index=None):
    """One split-or-merge MH step. Returns ``(labels, lj, stats, counts, full, MoveInfo)``, and the updated
    ``index`` (:class:`~ppclust.inference._cluster_index.ClusterIndex`) when one is given. ``lj`` is the log
    joint of the current state (:func:`log_joint_given`).

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    labels : array of int of shape (n,)
        Current labels.
    lj : scalar
        Log joint of the current state.
    stats : family statistics
        Per-slot statistics of ``labels``.
    counts : array of shape (4,)
        Pair counts of ``labels``.
    problem : MoveProblem
        What the moves read.
    index : ClusterIndex or None, default=None
        The sweep's cluster index (numba backend).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> st = init(x, links, fam, k_max=4)
    >>> problem = MoveProblem(x, links, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> lj = log_joint_given(st.stats, st.counts, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> labels, lj2, stats, counts, full, info = split_merge_move(jax.random.key(0), st.labels, lj, st.stats,
    ...                                                           st.counts, problem)
    >>> labels.shape
    (4,)
    """
    x, links, family, prior, pq, p, q, backend, xw, n_valid, rows = problem
    k_type, k_prop, k_acc = jax.random.split(key, 3)
    is_split = jax.random.uniform(k_type, dtype=x.dtype) < 0.5
    n_act = (stats.n > 0).sum()
    prop, log_q, ok, full, (a, b), side_b = _propose(
        k_prop, is_split, labels, stats, x, family, backend, xw, index, n_valid, rows
    )
    st_new = _proposal_stats(family, stats, x, is_split, prop, a, b, side_b)
    c_new = pair_counts(prop, links).astype(x.dtype)
    lj_new = log_joint_given(st_new, c_new, family, prior, pq, p, q)
    log_pair = jnp.where(is_split, merge_pair_log_prob(a, b, st_new), merge_pair_log_prob(a, b, stats))
    log_h = split_merge_log_ratio(is_split, lj_new, lj, n_act, log_q, log_pair)
    log_h = jnp.where(ok & jnp.isfinite(log_h), log_h, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, dtype=x.dtype)) < log_h
    pick = lambda u, v: jax.tree.map(lambda u_, v_: jnp.where(acc, u_, v_), u, v)  # noqa: E731
    out = (
        pick(prop, labels),
        pick(lj_new, lj),
        pick(st_new, stats),
        pick(c_new, counts),
        full,
        MoveInfo(is_split, log_h, acc),
    )
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
    :math:`P(s\mid c)/N_1` if c is a singleton too (absorbing c into s gives the same partition).

    Parameters
    ----------
    is_split : bool or bool scalar
        A peel (else an absorb).
    c : int or int scalar
        The cluster a point is peeled off, or absorbed into.
    s : int or int scalar
        The singleton's slot.
    stats_from : family statistics
        Statistics before the move.
    stats_to : family statistics
        Statistics after the move.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> one = fam.stats(x, jnp.array([0, 0, 0, 0]), 4)
    >>> two = fam.stats(x, jnp.array([0, 0, 0, 1]), 4)
    >>> fwd, rev = peel_absorb_log_probs(True, 0, 1, one, two)
    >>> round(float(fwd), 4)
    -1.3863
    """

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


def peel_absorb_move(key, labels, lj, stats, counts, problem: MoveProblem, index=None):
    """One peel-or-absorb MH step (module docstring, (a')). Returns ``(labels, lj, stats, counts, full,
    MoveInfo)``, and the updated ``index`` when one is given. Either proposal moves one point (the peeled
    point, or the singleton's point), so the proposal is one scatter and the new slot's statistics are that
    point's; what remains O(n) is finding the point (``backend="numba"``: one compiled visit of the labels,
    :func:`ppclust.inference._subcluster_cpu.peel_points`, the same point).

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    labels : array of int of shape (n,)
        Current labels.
    lj : scalar
        Log joint of the current state.
    stats : family statistics
        Per-slot statistics of ``labels``.
    counts : array of shape (4,)
        Pair counts of ``labels``.
    problem : MoveProblem
        What the moves read.
    index : ClusterIndex or None, default=None
        The sweep's cluster index (numba backend).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> fam = GaussianNIW.default(x)
    >>> from ppclust.inference.gibbs import init
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> links = make_links(4, [[0, 1]], [1])
    >>> st = init(x, links, fam, k_max=4)
    >>> problem = MoveProblem(x, links, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> lj = log_joint_given(st.stats, st.counts, fam, TVClustPrior(), "collapse", st.p, st.q)
    >>> labels, lj2, stats, counts, full, info = peel_absorb_move(jax.random.key(0), st.labels, lj, st.stats,
    ...                                                           st.counts, problem)
    >>> labels.shape
    (4,)
    """
    x, links, family, prior, pq, p, q, backend = problem[:8]
    take = (lambda i: x[i]) if problem.rows is None else problem.rows.take  # noqa: E731
    k_type, k_c, k_i, k_s, k_nb, k_acc = jax.random.split(key, 6)
    is_split = jax.random.uniform(k_type, dtype=x.dtype) < 0.5
    active = stats.n > 0
    new = jnp.argmin(active)
    c_peel = _pick_occupied(k_c, active)
    single = stats.n == 1
    s_abs = _pick_occupied(k_s, single)
    if backend == "numba":
        # the draw of _pick_point: |c_peel| is its slot count (the statistics count the labels)
        j = jax.random.randint(k_i, (), 0, jnp.maximum(stats.n[c_peel].astype(jnp.int32), 1))
        i, i_abs = _subcluster_cpu.peel_points_of(labels, c_peel, j, s_abs, index)
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
    side_b = family.weighted_stats(take(i_sel[None]), jnp.ones((1,), x.dtype)) if _pools(family) else None
    st_new = _proposal_stats(family, stats, x, is_split, prop, c, s, side_b)
    c_new = pair_counts(prop, links).astype(x.dtype)
    lj_new = log_joint_given(st_new, c_new, family, prior, pq, p, q)
    fwd, rev = peel_absorb_log_probs(is_split, c, s, stats, st_new)
    log_h = lj_new - lj + rev - fwd
    log_h = jnp.where(valid & jnp.isfinite(log_h), log_h, -jnp.inf)
    acc = jnp.log(jax.random.uniform(k_acc, dtype=x.dtype)) < log_h
    pick = lambda a, b: jax.tree.map(lambda u, v: jnp.where(acc, u, v), a, b)  # noqa: E731
    out = (
        labels.at[i_sel].set(jnp.where(acc, to, labels[i_sel])),
        pick(lj_new, lj),
        pick(st_new, stats),
        pick(c_new, counts),
        full,
        MoveInfo(is_split, log_h, acc),
    )
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
    keep = jax.tree.map(
        lambda u, v: jnp.where(is_split, u, v),
        family.pool(one(a), side_b, -1.0),
        family.pool(one(a), one(b), 1.0),
    )
    other = jax.tree.map(lambda u, v: jnp.where(is_split, u, v), side_b, family.empty(1, x.shape[1], x.dtype))
    put = lambda st, k, v: jax.tree.map(lambda s_, v_: s_.at[k].set(v_[0]), st, v)  # noqa: E731
    return put(put(stats, a, keep), b, other)
