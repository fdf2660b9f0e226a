r"""Active clustering: choose the next pairs (or points) to ask about, from the posterior and the noise model.

:class:`ActiveLearner` wraps an estimator. ``fit`` fits it, ``suggest`` proposes the next questions,
``tell`` records the answers and refits *warm*; the answers are any callable's (a person, a language-model
judge, :func:`simulated_oracle`). Kept whole: the learner and the functions that score, batch and
warm-start its questions read one posterior summary and one noise model.

For a pair :math:`(i, j)` with posterior co-clustering probability :math:`\pi_{ij} = P(z_i = z_j \mid
\text{data})` (the share of the kept partition draws with both points together) and TVClust's link noise
(:math:`p = P(\text{answer} = +1 \mid z_i = z_j)`, the sensitivity; :math:`q = P(\text{answer} = -1 \mid
z_i \ne z_j)`, the specificity; ``TVClust.p_``, ``q_``) the answer is +1 with probability
:math:`P_+ = \pi p + (1 - \pi)(1 - q)` and the information it carries about the partition is

.. math::

    I_{ij} = H(P_+) - \left[\pi H(p) + (1 - \pi) H(q)\right], \qquad
    H(u) = -u \log u - (1 - u) \log(1 - u),

the mutual information between the answer and the partition (nats), :func:`information_gain`. No n x n
array is built: the candidates are the most uncertain points (highest entropy of their membership in the
point estimate's clusters over the draws) and, for each, a few points of its own and of its most confused
other cluster; a round costs O(n K draws + candidates x draws) for K point-estimate clusters.
"""

from __future__ import annotations

import inspect
import math

import numpy as np
from scipy import sparse
from sklearn.base import clone

from ppclust.errors import PPClustError

__all__ = [
    "ActiveLearner",
    "STRATEGIES",
    "coclustering",
    "information_gain",
    "membership",
    "simulated_oracle",
]

#: The strategies :class:`ActiveLearner` accepts.
STRATEGIES = ("information", "uncertainty", "random")

#: ``warm_algorithm`` values: samplers that continue from a given partition, or None (the estimator's own).
_WARM_ALGORITHMS = (None, "collapsed", "explicit", "subcluster")

#: Estimators whose posterior draws (or variational responsibilities) give pi for ``strategy="information"``.
_INFORMATION_ESTIMATORS = ("TVClust",)


def _entropy2(u):
    """Binary entropy in nats, 0 at 0 and 1."""
    u = np.clip(np.asarray(u, np.float64), 1e-300, 1.0)
    v = np.clip(1.0 - np.asarray(u), 1e-300, 1.0)
    return -(u * np.log(u) + v * np.log(v))


def information_gain(pi, p, q):
    r"""Expected information (nats) that a noisy answer about a pair carries about the partition.

    .. math::

        I = H(\pi p + (1 - \pi)(1 - q)) - [\pi H(p) + (1 - \pi) H(q)]

    with :math:`H` the binary entropy: the answer's entropy minus its expected entropy given the partition.
    Zero when the posterior is sure (:math:`\pi \in \{0, 1\}`) or the answers are coin flips
    (:math:`p = 1 - q`); largest near :math:`\pi = 1/2` with reliable answers (:math:`\log 2` for
    :math:`p = q = 1`).

    Parameters
    ----------
    pi : float or array-like
        Posterior co-clustering probabilities, in [0, 1].
    p : float
        P(answer = +1 | same cluster), the link sensitivity.
    q : float
        P(answer = -1 | different clusters), the link specificity.

    Returns
    -------
    ndarray
        The information gain of each pair, the shape of ``pi``.

    Examples
    --------
    >>> from ppclust.active import information_gain
    >>> information_gain([0.0, 0.5, 1.0], 0.9, 0.9).round(3)
    array([0.   , 0.368, 0.   ])
    >>> float(information_gain(0.5, 1.0, 1.0).round(4))  # log 2
    0.6931
    """
    pi = np.clip(np.asarray(pi, np.float64), 0.0, 1.0)
    p_plus = pi * p + (1.0 - pi) * (1.0 - q)
    return np.maximum(_entropy2(p_plus) - (pi * _entropy2(p) + (1.0 - pi) * _entropy2(q)), 0.0)


def coclustering(draws, pairs):
    r"""Share of partition draws in which each pair shares a cluster, :math:`\pi_{ij}`.

    Parameters
    ----------
    draws : int array-like of shape (S, n)
        Partition draws (labels of any kind; chains stacked).
    pairs : int array-like of shape (m, 2)
        Row pairs.

    Returns
    -------
    ndarray of shape (m,)
        :math:`\frac{1}{S}\sum_s [z^{(s)}_i = z^{(s)}_j]`, in O(S m) time and memory.

    Examples
    --------
    >>> from ppclust.active import coclustering
    >>> coclustering([[0, 0, 1], [0, 1, 1]], [(0, 1), (1, 2), (0, 2)])
    array([0.5, 0.5, 0. ])
    """
    d = np.asarray(draws)
    pr = np.asarray(pairs, np.int64).reshape(-1, 2)
    if pr.shape[0] == 0:
        return np.zeros(0)
    return (d[:, pr[:, 0]] == d[:, pr[:, 1]]).mean(0)


def membership(draws, labels):
    r"""Posterior membership of every point in the clusters of a point estimate, from partition draws.

    In draw s, point i's cluster holds a share :math:`c_{sk} / |c_s|` of point-estimate cluster k's
    points among its members; averaged over draws,

    .. math::

        P_{ik} = \frac{1}{S} \sum_s \frac{|\{j : z^{(s)}_j = z^{(s)}_i,\ \hat z_j = k\}|}
                                        {|\{j : z^{(s)}_j = z^{(s)}_i\}|},

    the probability that a random co-member of i belongs to cluster k. Rows sum to 1. Cost O(S n K),
    memory O(n K) plus chunks of draws of at most about 4 million cells: no n x n array.

    Parameters
    ----------
    draws : int array-like of shape (S, n)
        Partition draws.
    labels : int array-like of shape (n,)
        Point estimate with labels 0 .. K-1.

    Returns
    -------
    ndarray of shape (n, K)

    Examples
    --------
    >>> from ppclust.active import membership
    >>> membership([[0, 0, 1, 1], [0, 0, 0, 1]], [0, 0, 1, 1]).round(3)
    array([[0.833, 0.167],
           [0.833, 0.167],
           [0.333, 0.667],
           [0.   , 1.   ]])
    """
    d = np.asarray(draws)
    z = np.asarray(labels, np.int64)
    S, n = d.shape
    K = int(z.max()) + 1
    if d.dtype.kind in "iu" and d.min(initial=0) >= 0 and d.max(initial=0) < 4 * n + 64:
        codes = d.astype(np.int64)  # small non-negative labels serve as codes as they are
    else:  # one code per label value, all draws
        codes = np.unique(d, return_inverse=True)[1].reshape(S, n)
    L = int(codes.max()) + 1
    out = np.zeros((n, K))
    step = max(1, (1 << 22) // max(1, L * K))  # draws per chunk: at most ~4M table cells
    for s0 in range(0, S, step):
        c = codes[s0 : s0 + step]
        m = c.shape[0]
        col = np.arange(m)[:, None] * L + c  # (draw, cluster) of every point in every draw
        # table[(s, l), k]: share of draw s's cluster l that lies in point-estimate cluster k
        table = np.bincount((col * K + z[None, :]).ravel(), minlength=m * L * K).reshape(m * L, K)
        table = table / np.maximum(table.sum(1, keepdims=True), 1)
        # sum over draws of each point's row: a sparse (n, m L) one-per-draw matrix times the table
        pick = sparse.csr_matrix(
            (np.ones(m * n), col.T.ravel(), np.arange(0, m * n + 1, m)), shape=(n, m * L)
        )
        out += pick @ table
    return out / S


def simulated_oracle(labels, noise=0.1, random_state=None):
    r"""An oracle that answers pairs from known labels, flipping each answer with probability ``noise``.

    Parameters
    ----------
    labels : array-like of shape (n,)
        The true classes.
    noise : float in [0, 0.5], default=0.1
        Probability that an answer is wrong (p = q = 1 - noise).
    random_state : None, int or numpy Generator, default=None
        Seed of the flips.

    Returns
    -------
    callable
        ``oracle(pairs) -> answers``: int array of +1 (same class) and -1, one per pair. Given a 1-D array
        of row indices instead, it returns their labels (label-based learners), ``noise`` of them
        replaced by another class.

    Examples
    --------
    >>> from ppclust.active import simulated_oracle
    >>> oracle = simulated_oracle([0, 0, 1], noise=0.0)
    >>> oracle([(0, 1), (1, 2)])
    array([ 1, -1])
    >>> oracle([2, 0])
    array([1, 0])
    """
    y = np.asarray(labels)
    if not 0.0 <= float(noise) <= 0.5:
        raise PPClustError(f"noise must lie in [0, 0.5], got {noise}")
    rng = np.random.default_rng(random_state)
    classes = np.unique(y)

    def oracle(query):
        q = np.asarray(query, np.int64)
        flip = rng.random(q.shape[0]) < float(noise)
        if q.ndim == 1:
            out = y[q].copy()
            for r in np.flatnonzero(flip):
                others = classes[classes != out[r]]
                if others.size:
                    out[r] = rng.choice(others)
            return out
        same = y[q[:, 0]] == y[q[:, 1]]
        return np.where(same ^ flip, 1, -1).astype(np.int64)

    return oracle


def _uses_links(estimator) -> bool:
    return "must_link" in inspect.signature(estimator.fit).parameters


def _soft_membership(est, X):
    """(n, K) memberships of a fit without draws: ``responsibilities_`` (variational TVClust),
    ``predict_proba`` (GMMs, SMIC, CCIB), else a softmax of minus the squared distance to the centres of
    ``labels_`` (standardised features; temperature: the mean squared distance to the own centre)."""
    if getattr(est, "responsibilities_", None) is not None:
        r = np.asarray(est.responsibilities_)
        r = r[:, r.sum(0) > 1e-9]
        return r / r.sum(1, keepdims=True)
    if hasattr(est, "predict_proba"):
        try:
            return np.asarray(est.predict_proba(X))
        except Exception:  # noqa: BLE001 - some predict_proba need extra inputs: fall back to distances
            pass
    Z = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    lab = np.unique(np.asarray(est.labels_), return_inverse=True)[1]
    K = int(lab.max()) + 1
    centres = np.stack([Z[lab == k].mean(0) for k in range(K)])
    d2 = ((Z[:, None, :] - centres[None]) ** 2).sum(-1)
    t = max(float(d2[np.arange(lab.size), lab].mean()), 1e-12)
    logits = -d2 / (2.0 * t)
    logits -= logits.max(1, keepdims=True)
    e = np.exp(logits)
    return e / e.sum(1, keepdims=True)


def _standardise(X):
    return (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)


def _warm_start(labels, X, must_link, cannot_link, k_max, rng, cells=1):
    """The warm start of a refit: ``labels`` corrected by the answers, then made finer, at most
    ``max(1, k_max // 2)`` clusters.

    Single-point Gibbs moves split a cluster rarely and merge two large ones slowly, so the start carries
    what the answers say: two clusters with at least 2 more must-links than cannot-links between them are
    merged (one answer may be wrong); then every cluster that holds a cannot-link is split between the
    link's two ends (each member to the nearer end, standardised features; links in random order); then,
    for ``cells`` >= 2, the result is crossed with the Voronoi cells of the most k-means++ seeds (``cells``
    down to 2) that keep the cap, for the chain to merge back what neither the answers nor the data
    separate.
    """
    Z = _standardise(X)
    cap = max(1, k_max // 2)
    lab = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.int64)
    ml = np.asarray(must_link, np.int64).reshape(-1, 2)
    cl = np.asarray(cannot_link, np.int64).reshape(-1, 2)
    K = int(lab.max()) + 1
    votes = np.zeros((K, K))
    for sign, links in ((1.0, ml), (-1.0, cl)):
        u, v = lab[links[:, 0]], lab[links[:, 1]]
        np.add.at(votes, (np.minimum(u, v), np.maximum(u, v)), sign)
    np.fill_diagonal(votes, 0.0)
    root = np.arange(K)
    for u, v in np.argwhere(votes >= 2.0).tolist():  # union of the clusters the answers join
        ru, rv = root[u], root[v]
        root[root == ru] = rv
    lab = np.unique(root[lab], return_inverse=True)[1].astype(np.int64)
    for a, b in cl[rng.permutation(cl.shape[0])].tolist():
        if lab[a] != lab[b] or a == b:
            continue
        if lab.max() + 1 >= cap:
            break
        members = np.flatnonzero(lab == lab[a])
        nearer_b = ((Z[members] - Z[b]) ** 2).sum(1) < ((Z[members] - Z[a]) ** 2).sum(1)
        lab[members[nearer_b]] = lab.max() + 1
    seeds = [int(rng.integers(Z.shape[0]))]
    d2 = ((Z - Z[seeds[0]]) ** 2).sum(1)
    for _ in range(cells - 1):
        if d2.sum() <= 0:
            break
        seeds.append(int(rng.choice(Z.shape[0], p=d2 / d2.sum())))
        d2 = np.minimum(d2, ((Z - Z[seeds[-1]]) ** 2).sum(1))
    dist = ((Z[:, None, :] - Z[seeds][None]) ** 2).sum(-1)
    for c in range(len(seeds), 1, -1):  # the most cells that keep the cap
        out = np.unique(lab * c + dist[:, :c].argmin(1), return_inverse=True)[1]
        if out.max() + 1 <= cap:
            return out
    return lab


class ActiveLearner:
    r"""Ask the most useful questions next: pairs (same cluster or not?) or points to label.

    Parameters
    ----------
    estimator : estimator
        A ppclust estimator, cloned at ``fit``. Pair learners: estimators whose ``fit`` takes
        ``must_link`` / ``cannot_link`` (TVClust, RDPMeans, DPMeans, SMIC, ...); label learners: the others
        (SemiSupervisedGMM, BayesianSemiSupervisedGMM, CECIB, C3L).
    strategy : {"information", "uncertainty", "random"}, default="information"
        Pairs: "information" maximises the expected information gain :math:`I_{ij}`
        (:func:`information_gain`, with ``p_``, ``q_`` of the fit); only estimators with a posterior over
        partitions support it (TVClust: its draws, or the variational responsibilities with
        :math:`\pi_{ij} = r_i^\top r_j`). "uncertainty": :math:`\pi_{ij}` closest to 1/2, where estimators
        without draws give :math:`\pi_{ij} = P_i^\top P_j` from soft memberships P (``predict_proba``, or a
        softmax of minus the squared distances to the cluster centres, temperature the mean squared distance
        to the own centre). "random": uniform pairs. Labels: "information" scores a point by the entropy
        of its membership probabilities times its density (the entropy labelling removes, weighted by how
        many points resemble it; density :math:`1 / (1 + \bar d_i)` with :math:`\bar d_i` the mean distance
        to its 10 nearest points of a 256-point sample); "uncertainty" by the entropy alone.
    batch_size : int >= 1, default=20
        Questions per :meth:`suggest` when ``n`` is not given.
    n_candidates : int >= 1, default=200
        Uncertain points considered per round; each is paired with ``n_neighbours`` points of its own and
        ``n_neighbours`` of its most confused other cluster.
    n_neighbours : int >= 1, default=4
        Partners per uncertain point and cluster.
    warm_warmup : int >= 0 or None, default=None
        ``n_warmup`` of a warm TVClust refit (None: a tenth of the estimator's, at least 10).
    warm_draws : int >= 1 or None, default=None
        ``n_draws`` of a warm TVClust refit (None: a fifth of the estimator's, at least 20).
    warm_cells : int >= 1, default=1
        Voronoi cells of k-means++ seeds crossed with a warm TVClust start (1: none; see Notes). Default 1
        (docs/decisions/0062-active-warm-start-without-cells.md): the cells add clusters at every round
        that a warm refit's few single-point sweeps do not merge back, so the point estimate keeps them.
    warm_algorithm : {None, "collapsed", "explicit", "subcluster"}, default=None
        ``algorithm`` of a warm TVClust refit (the cold :meth:`fit` keeps the estimator's own). None: the
        estimator's own. "subcluster": the sub-cluster sampler's split/merge moves, which join or divide
        whole clusters in one step where the single-point moves of a short warm chain rarely do
        (docs/decisions/0063-active-warm-refits-with-split-merge.md).
    random_state : None or int, default=None
        Seed of the candidates, the tie breaks, the random strategy and the refits' seeds.

    Attributes
    ----------
    estimator_ : estimator
        The current fit.
    must_link_, cannot_link_ : ndarray of shape (m, 2)
        The accumulated links (the user's and the answers +1 / -1).
    skipped_ : ndarray of shape (m, 2)
        Pairs answered 0 (unknown): never used as links and never suggested again.
    labels_given_ : ndarray of shape (n,)
        Label learners: the partial labels so far (-1 = unlabelled).
    n_queries_ : int
        Answers received by :meth:`tell` (skipped ones included).
    warm_ : bool
        Whether the refits continue from the last partition (TVClust) or refit cold (the other estimators:
        none accepts a starting partition).

    Notes
    -----
    Batches avoid redundant pairs: in one batch every point appears at most once and every pair of
    point-estimate clusters at most :math:`\lceil b / C \rceil` times (C the cluster pairs among the
    candidates); when the candidates run short the limits are relaxed in that order. Pairs already asked
    (or given as links) are never suggested. A warm TVClust refit starts every chain from a finer partition
    corrected by the answers and finer than the last point estimate (single-point moves rarely split a
    cluster and merge large ones slowly): two clusters with at least 2 more must-links than cannot-links
    between them are merged, every cluster holding a cannot-link is split between the link's ends (at most
    ``k_max // 2`` clusters), and with ``warm_cells`` >= 2 the result is crossed with the Voronoi cells of
    up to ``warm_cells`` k-means++ seeds, as many as keep at most ``k_max // 2`` clusters; then
    ``warm_warmup`` warm-up sweeps and ``warm_draws`` draws.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import TVClust
    >>> from ppclust.active import ActiveLearner, simulated_oracle
    >>> X = np.r_[np.zeros((10, 2)), np.full((10, 2), 5.0)] + np.random.default_rng(0).normal(size=(20, 2))
    >>> y = np.repeat([0, 1], 10)
    >>> est = TVClust(n_draws=20, n_warmup=20, n_chains=1, progress_bar=False, random_state=0)
    >>> al = ActiveLearner(est, batch_size=5, random_state=0).fit(X)
    >>> pairs = al.suggest()
    >>> pairs.shape
    (5, 2)
    >>> _ = al.tell(pairs, simulated_oracle(y, noise=0.0)(pairs))
    >>> al.n_queries_, len(al.must_link_) + len(al.cannot_link_)
    (5, 5)
    """

    def __init__(
        self,
        estimator,
        strategy="information",
        *,
        batch_size=20,
        n_candidates=200,
        n_neighbours=4,
        warm_warmup=None,
        warm_draws=None,
        warm_cells=1,
        warm_algorithm=None,
        random_state=None,
    ):
        self.estimator = estimator
        self.strategy = strategy
        self.batch_size = batch_size
        self.n_candidates = n_candidates
        self.n_neighbours = n_neighbours
        self.warm_warmup = warm_warmup
        self.warm_draws = warm_draws
        self.warm_cells = warm_cells
        self.warm_algorithm = warm_algorithm
        self.random_state = random_state

    # ----------------------------------------------------------------------------------------------
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """Fit the estimator (cold) with the side information given so far (links may be empty).

        Parameters
        ----------
        X : array-like of shape (n, d)
            The points.
        y, partial_labels : array-like of shape (n,) or None, default=None
            Partial labels (-1 = unlabelled); the starting labels of a label learner.
        must_link, cannot_link : array-like of shape (m, 2) or None, default=None
            Starting links of a pair learner.

        Returns
        -------
        self : ActiveLearner

        Raises
        ------
        PPClustError
            An unknown strategy or ``warm_algorithm``, or ``strategy="information"`` for a pair estimator
            without a posterior.
        """
        if self.strategy not in STRATEGIES:
            raise PPClustError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.warm_algorithm not in _WARM_ALGORITHMS:
            raise PPClustError(
                f"warm_algorithm must be one of {_WARM_ALGORITHMS} (a sampler that continues from a "
                f"partition), got {self.warm_algorithm!r}"
            )
        self.X_ = np.asarray(X, np.float64)
        n = self.X_.shape[0]
        self._rng = np.random.default_rng(self.random_state)
        self.pairs_mode_ = _uses_links(self.estimator)
        params = self.estimator.get_params()
        self.warm_ = "init" in params and "n_warmup" in params and params.get("algorithm") != "variational"
        lab = partial_labels if partial_labels is not None else y
        self.labels_given_ = np.full(n, -1, np.int64) if lab is None else np.asarray(lab, np.int64).copy()
        self.must_link_ = np.asarray(must_link if must_link is not None else np.zeros((0, 2)), np.int64)
        self.cannot_link_ = np.asarray(cannot_link if cannot_link is not None else np.zeros((0, 2)), np.int64)
        self.must_link_ = self.must_link_.reshape(-1, 2)
        self.cannot_link_ = self.cannot_link_.reshape(-1, 2)
        self.skipped_ = np.zeros((0, 2), np.int64)
        self.n_queries_ = 0
        self._asked = {(min(a, b), max(a, b)) for a, b in np.r_[self.must_link_, self.cannot_link_].tolist()}
        self.estimator_ = clone(self.estimator)
        self._refit()
        est = self.estimator_
        has_posterior = getattr(est, "samples_", None) is not None or hasattr(est, "responsibilities_")
        if self.pairs_mode_ and self.strategy == "information" and not (has_posterior and hasattr(est, "p_")):
            raise PPClustError(
                f"strategy='information' needs a posterior over partitions and the link noise p, q; "
                f"{type(est).__name__} has neither. Use an estimator that has them "
                f"({', '.join(_INFORMATION_ESTIMATORS)}), or strategy='uncertainty' / 'random'."
            )
        return self

    def _side(self):
        if self.pairs_mode_:
            kw = {}
            if len(self.must_link_):
                kw["must_link"] = self.must_link_
            if len(self.cannot_link_):
                kw["cannot_link"] = self.cannot_link_
            if (self.labels_given_ >= 0).any():
                kw["partial_labels"] = self.labels_given_
            return kw
        return {"partial_labels": self.labels_given_}

    def _refit(self, warm=False):
        est = self.estimator_
        if warm and self.warm_:
            base = self.estimator
            ww = max(10, int(base.n_warmup) // 10) if self.warm_warmup is None else int(self.warm_warmup)
            wd = max(20, int(base.n_draws) // 5) if self.warm_draws is None else int(self.warm_draws)
            est.set_params(
                init=_warm_start(
                    np.asarray(est.labels_),
                    self.X_,
                    self.must_link_,
                    self.cannot_link_,
                    int(getattr(est, "k_max", 64)),
                    self._rng,
                    cells=int(self.warm_cells),
                ),
                n_warmup=ww,
                n_draws=wd,
                random_state=int(self._rng.integers(2**31 - 1)),
            )
            if self.warm_algorithm is not None and "algorithm" in est.get_params():
                est.set_params(algorithm=self.warm_algorithm)
        elif warm:  # cold refit with a fresh seed where the estimator takes one
            if "random_state" in est.get_params() and self.estimator.random_state is not None:
                est.set_params(random_state=int(self._rng.integers(2**31 - 1)))
        est.fit(self.X_, **self._side())
        self._cache = None

    # ----------------------------------------------------------------------------------------------
    def _posterior(self):
        """(draws or None, memberships (n, K), point-estimate labels, p, q), cached per fit."""
        if self._cache is None:
            est = self.estimator_
            z = np.unique(np.asarray(est.labels_), return_inverse=True)[1]
            samples = getattr(est, "samples_", None)
            draws = None
            if samples is not None:
                draws = np.asarray(samples.labels).reshape(-1, z.size)
                if draws.min(initial=0) >= 0 and draws.max(initial=0) < 256:  # compact: faster pair lookups
                    draws = draws.astype(np.uint8)
                P = membership(draws, z)
            else:  # the clusters are the columns of the soft memberships
                P = _soft_membership(est, self.X_)
                z = P.argmax(1)
            p = float(getattr(est, "p_", 0.9))
            q = float(getattr(est, "q_", 0.9))
            self._cache = (draws, P, z, p, q)
        return self._cache

    def _pi(self, pairs):
        draws, P, _, _, _ = self._posterior()
        if draws is not None:
            return coclustering(draws, pairs)
        return np.einsum("mk,mk->m", P[pairs[:, 0]], P[pairs[:, 1]])

    def _candidates(self):
        """Candidate pairs: the uncertain points with partners from their own and most confused cluster,
        plus as many uniform random pairs for exploration; no pair asked before."""
        _, P, z, _, _ = self._posterior()
        n, K = P.shape[0], P.shape[1]
        rng = self._rng
        ent = -(P * np.log(np.clip(P, 1e-300, 1.0))).sum(1)
        m = min(int(self.n_candidates), n)
        # highest entropy first; random tie breaks
        order = np.lexsort((rng.random(n), -ent))[:m]
        other = P.copy()
        other[np.arange(n), z] = -1.0
        confused = other.argmax(1) if K > 1 else z
        r = int(self.n_neighbours)
        rows = []
        for k in range(K):  # partners drawn per cluster, for every uncertain point that needs them
            pool = np.flatnonzero(z == k)
            need = order[(z[order] == k) | (confused[order] == k)]
            if pool.size and need.size:
                js = pool[rng.integers(0, pool.size, size=(need.size, min(r, pool.size)))]
                rows.append(np.c_[np.repeat(need, js.shape[1]), js.reshape(-1)])
        rows.append(rng.integers(0, n, size=(max(m * r, 4 * int(self.batch_size)), 2)))
        cand = np.sort(np.concatenate(rows).astype(np.int64), axis=1)
        cand = cand[cand[:, 0] != cand[:, 1]]
        cand = np.unique(cand, axis=0)
        if self._asked:
            asked = np.array(sorted(self._asked), np.int64).reshape(-1, 2)
            cand = cand[~np.isin(cand[:, 0] * n + cand[:, 1], asked[:, 0] * n + asked[:, 1])]
        return cand

    def _select(self, cand, score, k):
        """Greedy batch: best score first; a point once per batch, a cluster pair at most ceil(k / C) times;
        the limits relaxed in that order when the candidates run short."""
        _, _, z, _, _ = self._posterior()
        order = np.lexsort((self._rng.random(len(score)), -score))
        cp = np.sort(np.c_[z[cand[:, 0]], z[cand[:, 1]]], axis=1)
        n_cp = max(1, len(np.unique(cp, axis=0)))
        cap = max(1, math.ceil(k / n_cp))
        chosen: list[int] = []
        for limits in ((True, True), (True, False), (False, False)):
            used_points: set[int] = set()
            used_cp: dict[tuple, int] = {}
            for c in chosen:
                used_points.update(cand[c].tolist())
                used_cp[tuple(cp[c])] = used_cp.get(tuple(cp[c]), 0) + 1
            taken = set(chosen)
            for c in order:
                if len(chosen) >= k:
                    break
                if c in taken:
                    continue
                a, b = int(cand[c, 0]), int(cand[c, 1])
                if limits[0] and (a in used_points or b in used_points):
                    continue
                key = tuple(cp[c])
                if limits[1] and used_cp.get(key, 0) >= cap:
                    continue
                chosen.append(int(c))
                taken.add(int(c))
                used_points.update((a, b))
                used_cp[key] = used_cp.get(key, 0) + 1
            if len(chosen) >= k:
                break
        return cand[np.asarray(chosen, np.int64)].reshape(-1, 2)

    def suggest(self, n=None):
        """The next questions: ``n`` row pairs (pair learners) or row indices (label learners).

        Parameters
        ----------
        n : int or None, default=None
            How many (None: ``batch_size``).

        Returns
        -------
        ndarray of shape (n, 2) or (n,)
            Pairs ``(i, j)`` with ``i < j``, best first after the batch rules (class Notes); or the rows to
            label next. Fewer when fewer remain.
        """
        k = int(self.batch_size if n is None else n)
        if not self.pairs_mode_:
            return self._suggest_rows(k)
        if self.strategy == "random":
            cand = self._random_pairs(k)
            return cand[:k]
        cand = self._candidates()
        if cand.shape[0] < k:
            cand = np.unique(np.r_[cand, self._random_pairs(k)], axis=0)
        pi = self._pi(cand)
        if self.strategy == "information":
            _, _, _, p, q = self._posterior()
            score = information_gain(pi, p, q)
        else:
            score = -np.abs(pi - 0.5)
        return self._select(cand, score, k)

    def _random_pairs(self, k):
        n = self.X_.shape[0]
        out: list[tuple[int, int]] = []
        seen = set(self._asked)
        for _ in range(50):
            if len(out) >= k:
                break
            c = np.sort(self._rng.integers(0, n, size=(2 * k, 2)), axis=1)
            for a, b in c.tolist():
                if a != b and (a, b) not in seen and len(out) < k:
                    seen.add((a, b))
                    out.append((a, b))
        return np.asarray(out, np.int64).reshape(-1, 2)

    def _suggest_rows(self, k):
        free = np.flatnonzero(self.labels_given_ < 0)
        if self.strategy == "random" or free.size == 0:
            return self._rng.permutation(free)[:k]
        est = self.estimator_
        P = _soft_membership(est, self.X_)[free]
        score = -(P * np.log(np.clip(P, 1e-300, 1.0))).sum(1)
        if self.strategy == "information":
            score = score * self._density()[free]
        order = np.lexsort((self._rng.random(free.size), -score))
        return free[order[:k]]

    def _density(self):
        """1 / (1 + mean distance to the 10 nearest of a 256-point sample), standardised features."""
        X = self.X_
        Z = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
        ref = Z[self._rng.choice(Z.shape[0], size=min(256, Z.shape[0]), replace=False)]
        out = np.empty(Z.shape[0])
        for s in range(0, Z.shape[0], 1024):
            d = np.sqrt(((Z[s : s + 1024, None, :] - ref[None]) ** 2).sum(-1))
            kk = min(10, d.shape[1])
            out[s : s + 1024] = np.partition(d, kk - 1, axis=1)[:, :kk].mean(1)
        return 1.0 / (1.0 + out)

    def tell(self, query, answers):
        """Record the answers and refit (warm for TVClust, cold otherwise; see ``warm_``).

        Parameters
        ----------
        query : array-like of shape (m, 2) or (m,)
            The pairs (or rows) asked, as :meth:`suggest` returned them.
        answers : array-like of shape (m,)
            Pairs: +1 (same cluster), -1 (different), 0 (unknown / skipped: recorded in ``skipped_``, not a
            link). Rows: the labels (-1 = unknown).

        Returns
        -------
        self : ActiveLearner
        """
        a = np.asarray(answers, np.int64).reshape(-1)
        if self.pairs_mode_:
            pr = np.sort(np.asarray(query, np.int64).reshape(-1, 2), axis=1)
            if pr.shape[0] != a.size:
                raise PPClustError(f"{pr.shape[0]} pairs but {a.size} answers")
            if not np.isin(a, (-1, 0, 1)).all():
                raise PPClustError("answers must be +1 (same cluster), -1 (different) or 0 (unknown)")
            self.must_link_ = np.r_[self.must_link_, pr[a > 0]]
            self.cannot_link_ = np.r_[self.cannot_link_, pr[a < 0]]
            self.skipped_ = np.r_[self.skipped_, pr[a == 0]]
            self._asked.update(map(tuple, pr.tolist()))
        else:
            rows = np.asarray(query, np.int64).reshape(-1)
            if rows.size != a.size:
                raise PPClustError(f"{rows.size} rows but {a.size} labels")
            self.labels_given_[rows] = np.where(a >= 0, a, self.labels_given_[rows])
        self.n_queries_ += int(a.size)
        self._refit(warm=True)
        return self

    def run(self, oracle, n_queries):
        """Ask ``oracle`` in batches of ``batch_size`` until ``n_queries`` answers were given.

        Parameters
        ----------
        oracle : callable
            ``oracle(pairs) -> answers`` (or rows -> labels), e.g. :func:`simulated_oracle`.
        n_queries : int
            Total answers to collect in this call.

        Returns
        -------
        self : ActiveLearner
        """
        left = int(n_queries)
        while left > 0:
            q = self.suggest(min(int(self.batch_size), left))
            if len(q) == 0:
                break
            self.tell(q, oracle(q))
            left -= len(q)
        return self
