r"""Point estimates and credible balls for a posterior over partitions, at any n (no n x n array).
The module is kept whole: the losses, the SALSO search (with its compiled kernels) and the credible ball
share one representation, the per-draw contingency tables.

Losses (Dahl, Johnson & Müller 2022, "Search algorithms and loss functions for Bayesian clustering",
JCGS 31, Sections 2-3; Wade & Ghahramani 2018, Bayesian Analysis 13, Section 3). For a *truth* ``z`` (a
posterior draw) and an *estimate* ``c`` of ``n`` items, with contingency table :math:`N_{lk}` =
#{i : z_i = l, c_i = k}, row sums :math:`s_l` (truth) and column sums :math:`r_k` (estimate):

* generalised **Binder** loss with unequal costs, ``a`` for putting apart a pair the truth joins and
  ``2 - a`` for joining a pair the truth separates (``a = 1``: Binder's equal costs, 1 - Rand index),
  normalised per pair:

  .. math::

      B_a(z, c) = \binom n2^{-1}\Big[a\Big(\sum_l\tbinom{s_l}{2} - \sum_{lk}\tbinom{N_{lk}}{2}\Big)
                  + (2-a)\Big(\sum_k\tbinom{r_k}{2} - \sum_{lk}\tbinom{N_{lk}}{2}\Big)\Big];

* generalised **variation of information** (Meila 2007; Dahl et al. 2022, Section 3.2), in nats:

  .. math::

      VI_a(z, c) = a\,H(c \mid z) + (2-a)\,H(z \mid c)
                 = \tfrac1n\Big[a\sum_l s_l\log s_l + (2-a)\sum_k r_k\log r_k
                   - 2\sum_{lk}N_{lk}\log N_{lk}\Big],

  which is ``H(z) + H(c) - 2 I(z, c)`` at ``a = 1`` (the ``log n`` terms of the entropies cancel).

The posterior expected loss of ``c`` is the average over the ``S`` draws, computed from the ``S``
contingency tables: O(n S) time and O(n S) memory (the draws themselves), never an n x n array.

Search (SALSO, Dahl et al. 2022, Section 4): *sequential allocation* (items in a random order, each
put in the existing or a new cluster that minimises the expected loss of the items allocated so far)
followed by *sweetening* (each item in turn removed and re-placed where the expected loss is lowest, until
a full pass moves nothing), repeated over several random orders and also started from the best sampled
draws; the estimate with the lowest expected loss wins. Moving item ``i`` into cluster ``k`` changes the
expected loss by (common factors dropped)

.. math::

    \Delta_k = (2-a)\,g(r_k) - \frac2S\sum_{s} g\big(N^{(s)}_{z^{(s)}_i k}\big), \qquad
    g(m) = m \ \ (\text{Binder}), \quad g(m) = (m+1)\log(m+1) - m\log m \ \ (\text{VI}),

and :math:`\Delta_{\rm new} = 0`, so one move costs O(S K) with the per-draw tables kept up to date
(memory O(S K L), K and L the cluster counts of the estimate and the draws).

Credible ball (Wade & Ghahramani 2018, Section 4): the smallest ball :math:`\{c: d(\hat c, c) \le
\varepsilon\}` around the estimate holding posterior mass ``prob`` (estimated from the draws), summarised
by the *horizontal bound* (the draws in the ball farthest from the estimate), the *upper vertical bound*
(among the draws in the ball with the fewest clusters, the farthest) and the *lower vertical bound*
(most clusters, farthest).
"""

from __future__ import annotations

import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np

from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR before the cache=True kernels below are made)
from ppclust.metrics import contingency

try:  # numba compiles the search loop; without it the same Python function runs (slowly)
    import numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None

__all__ = [
    "LOSSES",
    "compact_labels",
    "canonical_labels",
    "loss_from_table",
    "partition_loss",
    "losses_to_draws",
    "expected_loss",
    "salso",
    "best_draw",
    "SALSO_MAX_N",
    "credible_ball",
    "PartitionEstimate",
    "CredibleBall",
]

LOSSES = ("binder", "vi")
#: Largest ``n`` at which estimators run the full :func:`salso` search; above it they take
#: :func:`best_draw` (O(candidates n S): a search move costs O(S K) with K, the estimate's clusters,
#: growing with n when many points are uncertain, so sweetening at large n costs far more than sampling).
SALSO_MAX_N = 5000


# --------------------------------------------------------------------------- label handling


def compact_labels(labels) -> np.ndarray:
    """Relabel each row of ``labels`` to 0, ..., K - 1, keeping the order of the label values.

    Parameters
    ----------
    labels : int array of shape (..., n)
        Non-negative labels; each row (the last axis) is one partition.

    Returns
    -------
    compact : int32 ndarray of shape (S, n)
        One row per partition (``S`` = product of the leading dimensions, 1 for a 1-D input); the
        smallest label of a row becomes 0, the next 1, and so on.

    Notes
    -----
    O(n + max label) per row (no sort), in one compiled pass per row (numba).

    Examples
    --------
    >>> from ppclust.partition import compact_labels
    >>> compact_labels([5, 5, 2, 9]).tolist()
    [[1, 1, 0, 2]]
    """
    lab = np.asarray(labels)
    if lab.ndim == 0 or lab.shape[-1] == 0:
        raise ValueError(f"`labels` must have shape (..., n) with n >= 1, got shape {lab.shape}.")
    lab = lab.reshape(-1, lab.shape[-1])
    if not np.issubdtype(lab.dtype, np.integer):
        raise TypeError(f"`labels` must be integers, got dtype {lab.dtype}.")
    if lab.min() < 0:
        raise ValueError(f"`labels` must be >= 0 (every item in a cluster), got min {lab.min()}.")
    out = np.empty(lab.shape, np.int32)
    _compact_rows(np.ascontiguousarray(lab, dtype=np.int32), int(lab.max()) + 1, out)
    return out


def canonical_labels(labels) -> np.ndarray:
    """Relabel a partition 0, 1, 2, ... in order of first appearance.

    Parameters
    ----------
    labels : int array of shape (n,) or (..., n)
        Non-negative labels; each row (the last axis) is one partition.

    Returns
    -------
    canonical : ndarray of shape (n,) for a 1-D input, else (S, n)
        Equal partitions get equal rows, whatever their labels were.

    Examples
    --------
    >>> from ppclust.partition import canonical_labels
    >>> canonical_labels([7, 7, 2, 9, 2]).tolist()
    [0, 0, 1, 2, 1]
    """
    lab = np.asarray(labels)
    one = lab.ndim == 1
    lab = compact_labels(lab)
    out = np.empty_like(lab)
    for r, row in enumerate(lab):
        first = np.full(int(row.max()) + 1, row.size, np.int64)
        np.minimum.at(first, row, np.arange(row.size))
        rank = np.empty_like(first)
        rank[np.argsort(first, kind="stable")] = np.arange(first.size)
        out[r] = rank[row]
    return out[0] if one else out


# --------------------------------------------------------------------------- losses


def _check_loss(loss, a):
    if loss not in LOSSES:
        raise ValueError(f"`loss` must be one of {LOSSES}, got {loss!r}.")
    if not (0.0 < float(a) < 2.0):
        raise ValueError(
            f"`a` (cost of splitting a pair the truth joins; the other mistake costs 2 - a) "
            f"must lie in (0, 2), got {a!r}."
        )


def _xlogx(t):
    t = np.asarray(t, np.float64)
    return np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0)


def loss_from_table(table, loss="vi", a=1.0) -> float:
    """Loss of an estimate against a truth, from their contingency table.

    Parameters
    ----------
    table : array of shape (L, K)
        ``table[l, k]`` = number of items in cluster ``l`` of the truth and ``k`` of the estimate.
    loss : {"vi", "binder"}, default "vi"
        The generalised variation of information (nats) or Binder loss (per pair); formulas in the module
        docstring.
    a : float in (0, 2), default 1.0
        Cost of separating a pair the truth joins; joining a separated pair costs ``2 - a``. ``a = 1`` gives
        the usual (symmetric) losses; ``a > 1`` favours fewer, larger clusters.

    Returns
    -------
    loss : float
        ``B_a`` (per pair) or ``VI_a`` (nats) of the module docstring; 0 when the partitions agree.

    References
    ----------
    D. B. Dahl, D. J. Johnson and P. Müller, "Search algorithms and loss functions for Bayesian
    clustering", JCGS 31 (2022), Sections 2-3.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import loss_from_table
    >>> round(loss_from_table(np.array([[2, 0], [0, 2]])), 6)
    0.0
    >>> round(loss_from_table(np.array([[2, 2]]), loss="binder"), 4)
    0.6667
    """
    _check_loss(loss, a)
    return float(_loss_of_tables(np.asarray(table, np.float64), loss, a))


def _loss_of_tables(t, loss, a):
    """:func:`loss_from_table` of every table of ``t`` (..., L, K), float64: shape (...)."""
    n = t.sum((-2, -1))
    s, r = t.sum(-1), t.sum(-2)
    if loss == "binder":
        c2 = lambda v, ax: (v * (v - 1.0) / 2.0).sum(ax)
        both = c2(t, (-2, -1))
        pairs = n * (n - 1.0) / 2.0
        return np.where(
            pairs > 0,
            (a * (c2(s, -1) - both) + (2.0 - a) * (c2(r, -1) - both)) / np.where(pairs > 0, pairs, 1.0),
            0.0,
        )
    return np.maximum(
        (a * _xlogx(s).sum(-1) + (2.0 - a) * _xlogx(r).sum(-1) - 2.0 * _xlogx(t).sum((-2, -1))) / n, 0.0
    )


def partition_loss(truth, estimate, loss="vi", a=1.0) -> float:
    """Loss of ``estimate`` when ``truth`` is the true partition.

    Parameters
    ----------
    truth : array of shape (n,)
        Labels of the true partition.
    estimate : array of shape (n,)
        Labels of the estimate.
    loss : {"vi", "binder"}, default "vi"
        The generalised variation of information (nats) or Binder loss (per pair); formulas in the module
        docstring.
    a : float in (0, 2), default 1.0
        Cost of separating a pair the truth joins; joining a separated pair costs ``2 - a``. ``a = 1`` gives
        the usual (symmetric) losses; ``a > 1`` favours fewer, larger clusters.

    Returns
    -------
    loss : float
        :func:`loss_from_table` of the two partitions' contingency table.

    Examples
    --------
    >>> from ppclust.partition import partition_loss
    >>> round(partition_loss([0, 0, 1, 1], [0, 0, 0, 0]), 4)  # VI = H(truth) = log 2
    0.6931
    """
    return loss_from_table(contingency(truth, estimate), loss, a)


def losses_to_draws(estimate, draws, loss="vi", a=1.0) -> np.ndarray:
    """Loss of ``estimate`` against every sampled partition.

    Parameters
    ----------
    estimate : int array of shape (n,)
        Labels of the estimate (non-negative).
    draws : int array of shape (..., n)
        Sampled partitions, e.g. of shape (chain, draw, n).
    loss : {"vi", "binder"}, default "vi"
        The generalised variation of information (nats) or Binder loss (per pair); formulas in the module
        docstring.
    a : float in (0, 2), default 1.0
        Cost of separating a pair the truth joins; joining a separated pair costs ``2 - a``. ``a = 1`` gives
        the usual (symmetric) losses; ``a > 1`` favours fewer, larger clusters.

    Returns
    -------
    losses : ndarray of shape (S,)
        One loss per draw (``S`` = product of the leading dimensions of ``draws``).

    Notes
    -----
    The contingency tables of a block of draws come from one compiled pass over its labels (memory
    O(block K L)); O(n S) time.

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]])
    >>> from ppclust.partition import losses_to_draws
    >>> losses_to_draws([0, 0, 1, 1], draws, loss="binder").round(4).tolist()
    [0.0, 0.0, 0.5]
    """
    _check_loss(loss, a)
    est = compact_labels(estimate)[0]
    return _losses_compact(est, _as_compact_draws(draws, est.size), loss, float(a))


def _losses_compact(est, z, loss, a):
    """:func:`losses_to_draws` for compact labels ``est`` (n,) and ``z`` (S, n) (no relabelling)."""
    k = int(est.max()) + 1
    lmax = int(z.max()) + 1
    S = z.shape[0]
    out = np.empty(S)
    step = max(1, int(4e6 // max(lmax * k, 1)))  # draws per block: bounded tables
    est = np.ascontiguousarray(est, np.int32)
    z = np.ascontiguousarray(z, np.int32)
    for s0 in range(0, S, step):
        m = min(step, S - s0)
        t = np.zeros((m, lmax, k), np.int64)
        _count_tables(est, z[s0 : s0 + m], t)
        t = t.astype(np.float64)
        out[s0 : s0 + m] = _loss_of_tables(t, loss, a)
    return out


def expected_loss(estimate, draws, loss="vi", a=1.0) -> float:
    """Posterior expected loss of ``estimate``: the mean loss over the draws.

    Parameters
    ----------
    estimate : int array of shape (n,)
        Labels of the estimate (non-negative).
    draws : int array of shape (..., n)
        Sampled partitions.
    loss : {"vi", "binder"}, default "vi"
        The generalised variation of information (nats) or Binder loss (per pair); formulas in the module
        docstring.
    a : float in (0, 2), default 1.0
        Cost of separating a pair the truth joins; joining a separated pair costs ``2 - a``. ``a = 1`` gives
        the usual (symmetric) losses; ``a > 1`` favours fewer, larger clusters.

    Returns
    -------
    expected_loss : float
        ``mean_s loss(z_s, estimate)`` (:func:`losses_to_draws`).

    Examples
    --------
    >>> import numpy as np
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]])
    >>> from ppclust.partition import expected_loss
    >>> round(expected_loss([0, 0, 1, 1], draws, loss="binder"), 4)
    0.1667
    """
    return float(losses_to_draws(estimate, draws, loss, a).mean())


def _as_compact_draws(draws, n=None):
    z = np.asarray(draws)
    if z.ndim < 1:
        raise ValueError(f"`draws` must have shape (..., n), got shape {z.shape}.")
    z = z.reshape(-1, z.shape[-1])
    if n is not None and z.shape[1] != n:
        raise ValueError(f"`draws` have n={z.shape[1]} items but the estimate has {n}.")
    if z.shape[0] == 0:
        raise ValueError("`draws` is empty: need at least one sampled partition.")
    return compact_labels(z)


# --------------------------------------------------------------------------- results


@dataclass
class PartitionEstimate:
    """A partition point estimate and its posterior expected loss (the result of :func:`salso`).

    Attributes
    ----------
    labels : int64 ndarray of shape (n,)
        The estimate, canonical (0, 1, ... by first appearance).
    loss : str
        The loss minimised, ``"vi"`` or ``"binder"``.
    a : float
        The loss's cost parameter.
    expected_loss : float
        Posterior expected loss of ``labels``.
    best_draw_loss : float
        The lowest expected loss among the sampled partitions the search started from (the estimate is
        never worse); NaN when no search started from a draw.
    n_runs : int
        Searches run.
    seconds : float
        Wall time of the search.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import PartitionEstimate
    >>> est = PartitionEstimate(np.array([0, 0, 1]), "vi", 1.0, 0.1, 0.2, 4, 0.01)
    >>> est.n_clusters
    2
    """

    labels: np.ndarray
    loss: str
    a: float
    expected_loss: float
    best_draw_loss: float
    n_runs: int
    seconds: float

    @property
    def n_clusters(self) -> int:
        return int(self.labels.max()) + 1

    def __str__(self):
        sizes = np.bincount(self.labels)
        return (
            f"SALSO point estimate ({self.loss}, a={self.a:g}): K={self.n_clusters}, expected loss "
            f"{self.expected_loss:.6g} (best starting draw {self.best_draw_loss:.6g}); cluster sizes "
            f"{sorted(sizes.tolist(), reverse=True)[:12]}{' ...' if sizes.size > 12 else ''}; "
            f"{self.n_runs} runs in {self.seconds:.2f} s"
        )


@dataclass
class CredibleBall:
    """Credible ball around a point estimate (the result of :func:`credible_ball`).

    Attributes
    ----------
    loss : str
        The distance, ``"vi"`` or ``"binder"``.
    a : float
        The loss's cost parameter.
    prob : float
        Posterior mass the ball holds.
    epsilon : float
        Radius of the smallest ball around the estimate holding mass ``prob``.
    estimate : ndarray of shape (n,)
        The centre, canonical labels.
    distances : ndarray of shape (S,)
        Distance of each draw to the estimate.
    horizontal, upper_vertical, lower_vertical : ndarray of shape (n,)
        Canonical labels of the three bounds (each a draw in the ball): the farthest draw; the farthest
        among those with the fewest clusters; the farthest among those with the most clusters.
    n_clusters : dict
        Number of clusters of the estimate and of each bound.
    bound_distances : dict
        Distance of the estimate (0) and of each bound to the estimate.

    References
    ----------
    S. Wade and Z. Ghahramani, "Bayesian cluster analysis: point estimation and credible balls",
    Bayesian Analysis 13 (2018), Definitions 4.1-4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import credible_ball
    >>> ball = credible_ball([0, 0, 1, 1], np.array([[0, 0, 1, 1], [0, 0, 0, 0]]), prob=1.0)
    >>> sorted(ball.bounds())
    ['estimate', 'horizontal', 'lower_vertical', 'upper_vertical']
    """

    loss: str
    a: float
    prob: float
    epsilon: float
    estimate: np.ndarray
    distances: np.ndarray
    horizontal: np.ndarray
    upper_vertical: np.ndarray
    lower_vertical: np.ndarray
    n_clusters: dict = field(default_factory=dict)
    bound_distances: dict = field(default_factory=dict)

    def bounds(self) -> dict:
        """``{"estimate", "horizontal", "upper_vertical", "lower_vertical"}`` -> labels."""
        return {
            "estimate": self.estimate,
            "horizontal": self.horizontal,
            "upper_vertical": self.upper_vertical,
            "lower_vertical": self.lower_vertical,
        }

    def __str__(self):
        lines = [
            f"{self.prob:.0%} credible ball ({self.loss}, a={self.a:g}): radius {self.epsilon:.4g}, "
            f"{int((self.distances <= self.epsilon).sum())} of {self.distances.size} draws inside",
            f"  {'bound':15s} {'K':>4s} {'distance':>10s}",
        ]
        for name in ("estimate", "horizontal", "upper_vertical", "lower_vertical"):
            lines.append(f"  {name:15s} {self.n_clusters[name]:4d} {self.bound_distances[name]:10.4g}")
        return "\n".join(lines)

    def plot(self, X=None, *, axes=None):
        """Figure: with ``X`` (n, d >= 2), the estimate and the three bounds as scatter plots (first two
        principal components); without, the histogram of draw distances with the radius marked."""
        import matplotlib.pyplot as plt

        if X is None:
            if axes is None:
                fig, axes = plt.subplots(figsize=(5, 3))
            fig = axes.figure
            axes.hist(self.distances, bins=30, color="0.6")
            axes.axvline(self.epsilon, color="C3", label=f"radius ({self.prob:.0%})")
            axes.set_xlabel(f"{self.loss} distance of a draw to the estimate")
            axes.set_ylabel("draws")
            axes.legend()
            return fig
        X = np.asarray(X, float)
        xc = X - X.mean(0)
        if xc.shape[1] > 2:
            xc = xc @ np.linalg.svd(xc, full_matrices=False)[2][:2].T
        if axes is None:
            fig, axes = plt.subplots(1, 4, figsize=(14, 3.4), sharex=True, sharey=True)
        fig = np.ravel(axes)[0].figure
        for ax, (name, lab) in zip(np.ravel(axes), self.bounds().items(), strict=True):
            ax.scatter(xc[:, 0], xc[:, 1], c=lab, cmap="tab20", s=10)
            ax.set_title(
                f"{name} (K={self.n_clusters[name]}, d={self.bound_distances[name]:.3g})", fontsize=9
            )
        return fig


# --------------------------------------------------------------------------- search


def salso(
    draws, loss="vi", *, a=1.0, n_runs=16, n_draw_starts=4, log_joint=None, max_sweeps=100, seed=0
) -> PartitionEstimate:
    """Partition minimising the posterior expected ``loss`` over all partitions (SALSO search).

    Parameters
    ----------
    draws : int array of shape (..., n)
        Sampled partitions (any labelling; e.g. ``ChainResult.labels`` of shape (chain, draw, n)).
    loss : {"vi", "binder"}, default "vi"
        The loss whose posterior expectation is minimised (module docstring).
    a : float in (0, 2), default 1.0
        Cost of separating a pair the truth joins; joining a separated pair costs ``2 - a``. ``a > 1``
        favours fewer, larger clusters.
    n_runs : int >= 0, default 16
        Sequential-allocation runs from random orders (then sweetened).
    n_draw_starts : int >= 0, default 4
        Sweetening runs started from sampled draws: those with the highest ``log_joint`` when given, else
        draws spread evenly over the sample; the lowest expected loss among them is ``best_draw_loss``.
    log_joint : array of shape (S,), optional
        Log joint density of each draw; picks the draws the search starts from.
    max_sweeps : int >= 1, default 100
        Cap on sweetening passes per run (a pass that moves nothing ends the run earlier).
    seed : int, default 0
        Seed of the random orders (same seed, same estimate).

    Returns
    -------
    PartitionEstimate
        The estimate with the lowest expected loss over all runs.

    Notes
    -----
    Moving item ``i`` into cluster ``k`` changes the expected loss by
    ``Delta_k = (2 - a) g(r_k) - (2 / S) sum_s g(N^(s)_{z_i^(s), k})`` (module docstring), so one move
    costs O(S K). Time O((n_runs + n_draw_starts) sweeps n S K); memory O(n S) plus O(S K L) contingency
    tables.

    References
    ----------
    D. B. Dahl, D. J. Johnson and P. Müller, "Search algorithms and loss functions for Bayesian
    clustering", JCGS 31 (2022), Section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import salso
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]])
    >>> salso(draws, n_runs=2, n_draw_starts=1).labels.tolist()
    [0, 0, 1, 1]
    """
    _check_loss(loss, a)
    checks = (("n_runs", n_runs, 0), ("n_draw_starts", n_draw_starts, 0), ("max_sweeps", max_sweeps, 1))
    for name, v, lo in checks:
        if not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"`{name}` must be an integer >= {lo}, got {v!r}.")
    if n_runs + n_draw_starts < 1:
        raise ValueError("`n_runs + n_draw_starts` must be >= 1 (nothing to search from).")
    t0 = time.perf_counter()
    z = _as_compact_draws(draws)
    S, n = z.shape
    rng = np.random.default_rng(seed)
    zt = np.ascontiguousarray(z.T)  # (n, S): one item's labels across draws are contiguous
    L = z.max(1).astype(np.int64) + 1
    lg = _xlogx(np.arange(n + 2, dtype=np.float64))  # x log x for counts 0..n+1
    is_vi = loss == "vi"
    starts = [z[i] for i in _start_draws(z, min(n_draw_starts, S), log_joint)] if n_draw_starts else []
    best, best_loss, draw_best = None, np.inf, np.inf
    runs = [(None, rng.permutation(n).astype(np.int64)) for _ in range(n_runs)]
    runs += [(st, rng.permutation(n).astype(np.int64)) for st in starts]
    for st, _ in runs:
        if st is not None:
            draw_best = min(draw_best, float(_losses_compact(compact_labels(st)[0], z, loss, a).mean()))

    def run(st_order):  # the compiled search releases the GIL: runs go to threads, the same results
        st, order = st_order
        init = np.full(n, -1, np.int32) if st is None else st.astype(np.int32)
        return _search(zt, L, init, order, float(a), is_vi, lg, int(max_sweeps))

    workers = min(len(runs), os.cpu_count() or 1) if numba is not None else 1
    if workers > 1:
        with ThreadPoolExecutor(workers) as pool:
            found = list(pool.map(run, runs))
    else:
        found = [run(r) for r in runs]
    for lab in found:  # in the order of the runs: the first of equal losses wins
        val = float(_losses_compact(compact_labels(lab)[0], z, loss, float(a)).mean())
        if val < best_loss - 1e-12:
            best, best_loss = lab, val
    labels = canonical_labels(best).astype(np.int64)
    return PartitionEstimate(
        labels,
        loss,
        float(a),
        float(best_loss),
        float(draw_best) if np.isfinite(draw_best) else float("nan"),
        len(runs),
        time.perf_counter() - t0,
    )


def best_draw(draws, loss="vi", *, a=1.0, n_candidates=4, log_joint=None) -> PartitionEstimate:
    """The sampled partition with the lowest posterior expected ``loss`` among a few candidate draws.

    A point estimate in O(n_candidates n S) time and O(n S) memory at any ``n`` (no search move, no n x n
    array); estimators use it above :data:`SALSO_MAX_N` points, where :func:`salso`'s moves cost O(S K)
    each with K growing with n.

    Parameters
    ----------
    draws : int array of shape (..., n)
        Sampled partitions.
    loss : {"vi", "binder"}, default "vi"
        The loss whose posterior expectation is compared (module docstring).
    a : float in (0, 2), default 1.0
        The losses' cost parameter.
    n_candidates : int >= 1, default 4
        Distinct draws compared: those with the highest ``log_joint`` when given, else draws spread evenly
        over the sample (as :func:`salso`'s draw starts).
    log_joint : array of shape (S,), optional
        Log joint density of each draw.

    Returns
    -------
    PartitionEstimate
        Canonical labels of the best candidate; ``expected_loss`` and ``best_draw_loss`` are its expected
        loss, ``n_runs`` the candidates compared.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import best_draw
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 1, 1, 1]])
    >>> best_draw(draws, "binder", n_candidates=3).labels.tolist()
    [0, 0, 1, 1]
    """
    _check_loss(loss, a)
    if not isinstance(n_candidates, (int, np.integer)) or n_candidates < 1:
        raise ValueError(f"`n_candidates` must be an integer >= 1, got {n_candidates!r}.")
    t0 = time.perf_counter()
    z = _as_compact_draws(draws)
    S = z.shape[0]
    picked = _start_draws(z, min(int(n_candidates), S), log_joint)
    best, best_loss = None, np.inf
    for i in picked:
        val = float(_losses_compact(z[i], z, loss, float(a)).mean())
        if val < best_loss - 1e-12:
            best, best_loss = z[i], val
    return PartitionEstimate(
        canonical_labels(best).astype(np.int64),
        loss,
        float(a),
        float(best_loss),
        float(best_loss),
        len(picked),
        time.perf_counter() - t0,
    )


def _start_draws(z, m, log_joint):
    """Indices of ``m`` distinct draws: the highest ``log_joint`` first, else spread evenly."""
    S = z.shape[0]
    if log_joint is not None:
        lj = np.asarray(log_joint, np.float64).reshape(-1)
        if lj.size != S:
            raise ValueError(f"`log_joint` must have one value per draw ({S}), got {lj.size}.")
        idx = np.argsort(-lj, kind="stable")
        uniq, picked = set(), []
        for i in idx:  # distinct partitions only
            key = z[i].tobytes()
            if key not in uniq:
                uniq.add(key)
                picked.append(i)
            if len(picked) == m:
                break
        return picked
    return list(np.unique(np.linspace(0, S - 1, m).round().astype(int)))


def credible_ball(estimate, draws, loss="vi", *, a=1.0, prob=0.95) -> CredibleBall:
    """Credible ball of posterior mass ``prob`` around ``estimate``, from the draws.

    Parameters
    ----------
    estimate : int array of shape (n,)
        The centre (e.g. ``salso(draws).labels``).
    draws : int array of shape (..., n)
        Sampled partitions.
    loss : {"vi", "binder"}, default "vi"
        The distance between partitions (module docstring).
    a : float in (0, 2), default 1.0
        The loss's cost parameter.
    prob : float in (0, 1], default 0.95
        Posterior mass the ball must hold.

    Returns
    -------
    CredibleBall
        Radius, distances and the three bounds.

    Notes
    -----
    The radius is the smallest distance ``eps`` with at least ``ceil(prob S)`` draws at distance
    ``<= eps``. O(n S) time.

    References
    ----------
    S. Wade and Z. Ghahramani, "Bayesian cluster analysis: point estimation and credible balls",
    Bayesian Analysis 13 (2018), Section 4.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.partition import credible_ball
    >>> draws = np.array([[0, 0, 1, 1], [0, 0, 1, 1], [0, 0, 0, 0]])
    >>> ball = credible_ball([0, 0, 1, 1], draws, prob=1.0)
    >>> round(ball.epsilon, 4), ball.n_clusters["upper_vertical"]
    (0.6931, 1)
    """
    _check_loss(loss, a)
    if not (0.0 < float(prob) <= 1.0):
        raise ValueError(f"`prob` must lie in (0, 1], got {prob!r}.")
    est = canonical_labels(np.asarray(estimate))
    z = _as_compact_draws(draws, est.size)
    d = _losses_compact(compact_labels(est)[0], z, loss, float(a))
    S = d.size
    eps = float(np.sort(d)[max(0, math.ceil(prob * S - 1e-9) - 1)])
    inside = np.flatnonzero(d <= eps + 1e-12)
    k = z[inside].max(1) + 1

    def farthest(sel):
        return inside[sel[int(np.argmax(d[inside][sel]))]]

    everyone = np.arange(inside.size)
    h = farthest(everyone)
    up = farthest(np.flatnonzero(k == k.min()))
    lo = farthest(np.flatnonzero(k == k.max()))
    picks = {"horizontal": h, "upper_vertical": up, "lower_vertical": lo}
    nclu = {"estimate": int(est.max()) + 1}
    nclu.update({name: int(z[i].max()) + 1 for name, i in picks.items()})
    dist = {"estimate": 0.0}
    dist.update({name: float(d[i]) for name, i in picks.items()})
    return CredibleBall(
        loss,
        float(a),
        float(prob),
        eps,
        est,
        d,
        canonical_labels(z[h]),
        canonical_labels(z[up]),
        canonical_labels(z[lo]),
        nclu,
        dist,
    )


# --- helpers ---


def _search_py(zt, L, init, order, a, is_vi, lg, max_sweeps):
    """SALSO from ``init`` (``-1`` = unplaced): sequential allocation of the unplaced items in ``order``,
    then rounds of sweetening passes, the best merge of two clusters, and zealous updates (a cluster
    dissolved and its items re-allocated, kept only if the expected loss drops), until none improves.

    ``zt`` (n, S) compact draw labels, ``L`` (S,) clusters per draw, ``lg[m] = m log m``. Returns labels.
    Tables ``tab[k, s, l]`` = #items in estimate cluster k with label l in draw s; ``size[k]``. Plain
    Python/NumPy code, compiled by numba as :func:`_search` (the same function, so the same result).
    """
    n, S = zt.shape
    lmax = 1
    for s in range(S):
        if L[s] > lmax:
            lmax = L[s]
    top = -1
    for i in range(n):
        if init[i] > top:
            top = init[i]
    cap = 8
    while cap < 2 * (top + 1):
        cap *= 2
    tab = np.zeros((cap, S, lmax), np.int32)
    size = np.zeros(cap, np.int64)
    lab = init.copy()
    for i in range(n):
        if lab[i] >= 0:
            _add(tab, size, zt, i, np.int64(lab[i]))
    for t in range(n):  # sequential allocation
        i = order[t]
        if lab[i] < 0:
            k, _ = _best(tab, size, zt, i, np.int64(-1), a, is_vi, lg)
            if k < 0:
                k, tab, size = _free_slot(tab, size)
            lab[i] = k
            _add(tab, size, zt, i, k)
    items = np.empty(n, np.int64)
    for _ in range(max_sweeps):
        moved = 1
        sweeps = 0
        while moved and sweeps < max_sweeps:  # sweetening
            moved = 0
            sweeps += 1
            for t in range(n):
                i = order[t]
                old = np.int64(lab[i])
                _remove(tab, size, zt, i, old)
                k, _ = _best(tab, size, zt, i, old, a, is_vi, lg)
                if k < 0:
                    k, tab, size = _free_slot(tab, size)
                if k != old:
                    moved += 1
                lab[i] = k
                _add(tab, size, zt, i, k)
        if _merge_best(tab, size, lab, a, is_vi, lg):
            continue
        if not _zealous(tab, size, lab, zt, order, items, a, is_vi, lg):
            break
    return lab


def _move_cost(tab, size, zt, i, k, a, is_vi, lg):
    """Change of the expected loss (times n for VI, times n(n-1)/2 for Binder; both common factors) when
    item ``i`` joins cluster ``k`` (module docstring, Delta_k)."""
    S = zt.shape[1]
    acc = 0.0
    if is_vi:
        for s in range(S):
            m = tab[k, s, zt[i, s]]
            acc += lg[m + 1] - lg[m]
        return (2.0 - a) * (lg[size[k] + 1] - lg[size[k]]) - 2.0 * acc / S
    for s in range(S):
        acc += tab[k, s, zt[i, s]]
    return (2.0 - a) * size[k] - 2.0 * acc / S


def _best(tab, size, zt, i, old, a, is_vi, lg):
    """Best cluster for the (removed) item ``i``: ``(k, cost)``, ``k = -1`` for a new cluster (cost 0).

    Staying in ``old`` wins ties (a singleton's "stay" is its own, now empty, slot); otherwise the first
    cluster of strictly lowest cost, then the new cluster.
    """
    best_k, best_c, stay = -1, 0.0, 0.0
    for k in range(size.shape[0]):
        if size[k] == 0:
            continue
        c = _move_cost(tab, size, zt, i, k, a, is_vi, lg)
        if k == old:
            stay = c
        if c < best_c:
            best_k, best_c = k, c
    if old >= 0 and not best_c < stay - 1e-10:
        return old, stay
    return best_k, best_c


def _add(tab, size, zt, i, k):
    size[k] += 1
    for s in range(zt.shape[1]):
        tab[k, s, zt[i, s]] += 1


def _remove(tab, size, zt, i, k):
    size[k] -= 1
    for s in range(zt.shape[1]):
        tab[k, s, zt[i, s]] -= 1


def _free_slot(tab, size):
    """An empty slot (the tables doubled when every slot is occupied)."""
    for k in range(size.shape[0]):
        if size[k] == 0:
            return k, tab, size
    cap, S, lmax = tab.shape
    new_tab = np.zeros((2 * cap, S, lmax), np.int32)
    new_size = np.zeros(2 * cap, np.int64)
    for k in range(cap):  # element by element: a slice assignment compiles numba's shape-error path
        new_size[k] = size[k]
        for s in range(S):
            for m in range(lmax):
                new_tab[k, s, m] = tab[k, s, m]
    return cap, new_tab, new_size


def _pair_f(m, is_vi, lg):
    return lg[m] if is_vi else 0.5 * m * (m - 1.0)


def _merge_best(tab, size, lab, a, is_vi, lg):
    """Merge the two clusters whose union lowers the expected loss most; False if no merge lowers it.

    Change (same units as :func:`_move_cost`): :math:`(2-a)[F(r_1+r_2)-F(r_1)-F(r_2)] - \\frac2S\\sum_{s,l}
    [F(N_1+N_2)-F(N_1)-F(N_2)]` with ``F(m) = m log m`` (VI) or ``m(m-1)/2`` (Binder). O(K^2 S L).
    """
    cap, S, lmax = tab.shape
    best, b1, b2 = -1e-10, -1, -1
    for k1 in range(cap):
        if size[k1] == 0:
            continue
        for k2 in range(k1 + 1, cap):
            if size[k2] == 0:
                continue
            acc = 0.0
            for s in range(S):
                for m in range(lmax):
                    u, v = np.int64(tab[k1, s, m]), np.int64(tab[k2, s, m])
                    if u > 0 and v > 0:
                        acc += _pair_f(u + v, is_vi, lg) - _pair_f(u, is_vi, lg) - _pair_f(v, is_vi, lg)
            r1, r2 = size[k1], size[k2]
            d = (2.0 - a) * (_pair_f(r1 + r2, is_vi, lg) - _pair_f(r1, is_vi, lg) - _pair_f(r2, is_vi, lg))
            d -= 2.0 * acc / S
            if d < best:
                best, b1, b2 = d, k1, k2
    if b1 < 0:
        return False
    for s in range(S):
        for m in range(lmax):
            tab[b1, s, m] += tab[b2, s, m]
            tab[b2, s, m] = 0
    size[b1] += size[b2]
    size[b2] = 0
    for i in range(lab.shape[0]):
        if lab[i] == b2:
            lab[i] = b1
    return True


def _zealous(tab, size, lab, zt, order, items, a, is_vi, lg):
    """Zealous update (Dahl et al. 2022, Section 4.3): dissolve one cluster at a time and re-allocate its
    items sequentially (in ``order``); keep the first that lowers the expected loss, else undo. Returns
    whether one was kept."""
    for k in range(size.shape[0]):
        if size[k] < 2:
            continue
        m = 0
        for t in range(order.shape[0]):
            if lab[order[t]] == k:
                items[m] = order[t]
                m += 1
        change = 0.0
        for j in range(m):  # dissolve: removing i costs minus the cost of putting it back
            i = items[j]
            _remove(tab, size, zt, i, k)
            change -= _move_cost(tab, size, zt, i, k, a, is_vi, lg) if size[k] > 0 else 0.0
        for j in range(m):
            i = items[j]
            kk, c = _best(tab, size, zt, i, np.int64(-1), a, is_vi, lg)
            if kk < 0:
                kk = k if size[k] == 0 else -1
                if kk < 0:
                    for q in range(size.shape[0]):
                        if size[q] == 0:
                            kk = q
                            break
                if kk < 0:  # no free slot: give up this dissolution (undo below)
                    change = 0.0
                    for jj in range(j):
                        _remove(tab, size, zt, items[jj], np.int64(lab[items[jj]]))
                    for jj in range(m):
                        lab[items[jj]] = k
                        _add(tab, size, zt, items[jj], k)
                    m = -1
                    break
                c = 0.0
            change += c
            lab[i] = kk
            _add(tab, size, zt, i, kk)
        if m < 0:
            continue
        if change < -1e-9 * m:  # a real gain, not the rounding of m cost terms (which may loop forever)
            return True
        for j in range(m):  # undo
            i = items[j]
            _remove(tab, size, zt, i, np.int64(lab[i]))
        for j in range(m):
            i = items[j]
            lab[i] = k
            _add(tab, size, zt, i, k)
    return False


def _compact_rows(lab, m, out):
    """:func:`compact_labels` of each row of ``lab`` (S, n) with labels in ``[0, m)``, into ``out``."""
    present = np.zeros(m, np.bool_)
    remap = np.zeros(m, np.int32)
    for s in range(lab.shape[0]):
        present[:] = False
        for i in range(lab.shape[1]):
            present[lab[s, i]] = True
        c = 0
        for v in range(m):
            if present[v]:
                remap[v] = c
                c += 1
        for i in range(lab.shape[1]):
            out[s, i] = remap[lab[s, i]]


def _count_tables(est, z, t):
    """Add the contingency table of each draw ``z[s]`` (rows) against ``est`` (columns) to ``t[s]``."""
    for s in range(z.shape[0]):
        for i in range(z.shape[1]):
            t[s, z[s, i], est[i]] += 1


if numba is not None:
    _jit = lambda f: numba.njit(cache=True, nogil=True)(f)  # noqa: E731
    _move_cost, _best, _add, _remove, _free_slot, _pair_f, _merge_best, _zealous = map(
        _jit, (_move_cost, _best, _add, _remove, _free_slot, _pair_f, _merge_best, _zealous)
    )
    _search = _jit(_search_py)
    _compact_rows, _count_tables = _jit(_compact_rows), _jit(_count_tables)
else:  # pragma: no cover
    _search = _search_py
