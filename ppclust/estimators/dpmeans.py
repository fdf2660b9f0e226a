"""scikit-learn estimators for DP-means and RDP-means (Kulis & Jordan 2012; Khashabi et al. 2015).

The numerics live in :mod:`ppclust.inference.dpmeans`; this module validates, converts links and
labels into a neighbour table, runs ``n_init`` vmapped restarts and keeps the one with the lowest
final objective J (spec Section 3.5).

Rows spread over processes (:mod:`ppclust.distributed`, ``variant="delayed"``): each process validates
and holds its own rows and the neighbour-table rows of its own points; ``lam`` from the data, the data's
scale and the mean may-link weight are reductions over processes; the labels of every row (one int32
each) are on every process during the fit, as the link term of a point reads its partners' labels.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ppclust import _devices
from ppclust._buckets import bucket_size, rowwise
from ppclust._jax import as_key, x64
from ppclust.errors import InvalidInputError, KMaxExhaustedError, NonFiniteError, PPClustError
from ppclust.estimators._base import (
    DEVICES,
    NONNEG_REAL,
    POSITIVE_INT,
    POSITIVE_REAL,
    RANDOM_STATE,
    ClusterMixin,
    StrOptions,
    check_global_X,
    check_partial_labels,
    data_mesh,
    data_variance,
    fit_context,
    link_side_info,
    side_labels,
    validate_X,
)
from ppclust.inference import dpmeans as _dp
from ppclust.models.tvclust import link_reliability_share
from ppclust.sideinfo import NeighbourTable, SideInfo, link_weight_per_point, pair_counts, weigh_link_kinds

__all__ = ["DPMeans", "RDPMeans"]

#: divergences of new points to the centres, one program per row bucket and divergence
_divergence_rows = rowwise(_dp.divergence_matrix, static_argnames=("divergence",))

_DIVERGENCES = ("sqeuclidean", "euclidean", "kl")


def _side_table(n, y, must_link, cannot_link):
    """Links and their neighbour table from links and/or partial labels (labels -> all pairs among
    labelled points): ``(side, table)``, table None without links.

    Links are soft penalties (``link_model="soft"``): a pair given with both signs keeps both entries,
    whose terms add up in :math:`-\\xi_1 f^i_k + \\xi_2 s^i_k` (with ``xi_ratio=1``: the net weight)."""
    side = link_side_info(n, y, must_link, cannot_link, link_model="soft")
    return side, (side.neighbour_table() if side.n_links else None)


class _Rows(NamedTuple):
    """Rows spread over processes: the global array, this process's validated rows, the layout and the
    data's mean per-feature variance (over all rows)."""

    x: object
    local: np.ndarray
    layout: _devices.RowLayout
    variance: float


def _gather_labelled(y_loc, offset):
    """``(global index, label)`` of every process's labelled rows, gathered (the unlabelled rows stay)."""
    idx = np.flatnonzero(y_loc >= 0)
    sizes = _devices.process_gather(np.int64(len(idx)))
    top = int(sizes.max())
    mine = np.full((top, 2), -1, np.int64)
    mine[: len(idx)] = np.stack([idx + offset, y_loc[idx]], axis=1)
    every = _devices.process_gather(mine) if top else np.zeros((len(sizes), 0, 2), np.int64)
    return np.concatenate([every[p, : int(c)] for p, c in enumerate(sizes)])


def _rows_table(side: SideInfo, layout):
    """This process's block of the neighbour table of ``side`` (global indices), its neighbours as
    positions in the global array, and the mean may-link weight of a point.

    The table is :meth:`ppclust.sideinfo.SideInfo.neighbour_table` of the linked points alone (renumbered
    in order, so each row lists its partners in the same order as the whole table), of which this process
    keeps the rows of its own points: never a row per point of the whole data set."""
    pts = np.unique(side.pairs)
    compact = SideInfo.from_pairs(
        len(pts), np.searchsorted(pts, side.pairs), side.sign, side.weight, on_conflict="keep"
    ).neighbour_table()
    w_plus = link_weight_per_point(weigh_link_kinds(compact, (1.0, 0.0))) * len(pts) / layout.n
    me = jax.process_index()
    lo, count = layout.offsets[me], layout.counts[me]
    mine = (pts >= lo) & (pts < lo + count)
    width = compact.nbr.shape[1]
    nbr = np.zeros((count, width), np.int32)
    sgn, wgt = np.zeros((count, width)), np.zeros((count, width))
    rows = pts[mine] - lo
    linked = compact.sgn[mine] != 0
    nbr[rows] = np.where(linked, layout.positions(pts[compact.nbr[mine]]), 0)
    sgn[rows], wgt[rows] = compact.sgn[mine], compact.wgt[mine]
    return NeighbourTable(nbr, sgn, wgt), w_plus


class _Base(ClusterMixin, BaseEstimator):
    _parameter_constraints: dict = {
        "lam": [None, *POSITIVE_REAL],
        "lam_k": POSITIVE_INT,
        "lam_method": [StrOptions({"kth_farthest_from_mean", "farthest_first"})],
        "divergence": [StrOptions(set(_DIVERGENCES))],
        "k_max": POSITIVE_INT,
        "n_init": POSITIVE_INT,
        "init": [StrOptions({"bbox_random", "mean"})],
        "order": [StrOptions({"random", "fixed"})],
        "tie": [StrOptions({"first", "last"})],
        "variant": [StrOptions({"sequential", "delayed"})],
        "compat": ["boolean"],
        "patience": POSITIVE_INT,
        "max_iter": POSITIVE_INT,
        "smoothing": NONNEG_REAL,
        "random_state": RANDOM_STATE,
        "devices": DEVICES,
    }

    def __init__(  # DPMeans's signature and defaults; RDPMeans passes its own
        self,
        lam=None,
        *,
        lam_k=3,
        lam_method="kth_farthest_from_mean",
        divergence="sqeuclidean",
        k_max=64,
        n_init=1,
        init="bbox_random",
        order="random",
        tie="first",
        variant="sequential",
        compat=False,
        patience=1,
        max_iter=100,
        smoothing=0.3,
        random_state=None,
        devices=None,
    ):
        self.lam = lam
        self.lam_k = lam_k
        self.lam_method = lam_method
        self.divergence = divergence
        self.k_max = k_max
        self.n_init = n_init
        self.init = init
        self.order = order
        self.tie = tie
        self.variant = variant
        self.compat = compat
        self.patience = patience
        self.max_iter = max_iter
        self.smoothing = smoothing
        self.random_state = random_state
        self.devices = devices

    def _lambda(self, X, rows: _Rows | None = None):
        if self.lam is not None:
            return float(self.lam)
        n = X.shape[0] if rows is None else rows.layout.n
        if self.lam_k > n:
            raise PPClustError(
                f"`lam_k`={self.lam_k} exceeds n_samples={n}: lam is computed from "
                "the lam_k-th farthest point, so lam_k must lie in [1, n_samples]; lower "
                "`lam_k` or pass `lam`."
            )
        gather = None if rows is None else _devices.process_gather
        lam = _dp.lambda_from_k(X, int(self.lam_k), self.lam_method, self.divergence, gather=gather)
        if not lam > 0:  # every new point would open a cluster: garbage, not a fit
            if rows is None:
                spread = np.ptp(X, axis=0).max()
            else:  # the processes' extremes (a process without rows sends -inf / +inf)
                hi = _devices.process_gather(X.max(0) if len(X) else np.full(X.shape[1], -np.inf)).max(0)
                lo = _devices.process_gather(X.min(0) if len(X) else np.full(X.shape[1], np.inf)).min(0)
                spread = (hi - lo).max()
            what = (
                "all points are identical"
                if spread == 0
                else f"the data have too few distinct points for lam_k={self.lam_k}"
            )
            raise PPClustError(
                f"cannot set lam from the data: {what}, so lam_method={self.lam_method!r} "
                f"gives lam={lam:g}, but lam must be > 0; pass an explicit lam > 0"
            )
        return lam

    def _xi_cap(self, lam, table, xi0, w_plus=None):
        """``xi_max``, or for ``"auto"`` ``max(xi0, lam / max(w_+, 1))`` with ``w_+`` the mean may-link weight
        of a point (:func:`ppclust.sideinfo.link_weight_per_point` of the may-links; see :class:`RDPMeans`),
        ``w_plus`` when given. A pair given with both signs counts with its net weight, as it acts in the
        cost (``xi_ratio = 1``)."""
        cap = getattr(self, "xi_max", 1e12)
        if cap != "auto":
            return float(cap)
        w = w_plus
        if w is None:
            w = 0.0 if table is None else link_weight_per_point(weigh_link_kinds(table, (1.0, 0.0)))
        return max(float(xi0), lam / max(w, 1.0))

    def _xi_unit(self, X, rows: _Rows | None = None) -> float:
        """The data's unit of a link weight (``xi0`` is relative to it): the mean per-feature variance
        (:func:`ppclust.estimators._base.data_variance`) for ``"sqeuclidean"``, its square root for
        ``"euclidean"``, 1 for ``"kl"`` (rows normalised) and with ``compat=True`` (the authors' absolute
        weights)."""
        if self.compat or self.divergence == "kl":
            return 1.0
        s2 = data_variance(X) if rows is None else rows.variance
        return s2 if self.divergence == "sqeuclidean" else float(np.sqrt(s2))

    def _prepare(self, X, *, reset):
        X = validate_X(self, X, reset=reset)
        if self.divergence == "kl":
            if (X < 0).any():
                raise PPClustError("`X` must be non-negative counts for divergence='kl'")
            X = X + self.smoothing
            X = X / X.sum(axis=1, keepdims=True)
        return X

    def _prepare_rows(self, X) -> _Rows:
        """``fit``'s checks on rows spread over processes: each process checks its own rows."""
        if self.variant != "delayed" or self.compat:
            raise InvalidInputError(
                f"{type(self).__name__} fits rows spread over processes with variant='delayed' (and "
                f"compat=False) only: the sequential sweep (variant={self.variant!r}) visits the points "
                "one after the other. Pass variant='delayed'."
            )
        x, layout, _, var = check_global_X(self, X)
        if self.divergence == "kl":
            if _devices.process_gather(np.int8((x < 0).any())).any():
                raise PPClustError("`X` must be non-negative counts for divergence='kl'")
            x = x + self.smoothing
            x = x / x.sum(axis=1, keepdims=True)
        if self.divergence == "kl" or X.dtype != np.float64:
            X = _devices.from_process_rows(x, layout)
        return _Rows(X, x, layout, var)

    def _run(self, X, table, xi0, xi_max=None, rows: _Rows | None = None, w_plus=None):
        """The restarts, on ``X`` (NumPy) or on rows spread over processes (``rows``; ``X`` its local rows,
        ``table`` this process's block of the neighbour table, ``w_plus`` the mean may-link weight). Sets
        the fitted attributes; returns the labels of all rows (NumPy, every process)."""
        n = X.shape[0] if rows is None else rows.layout.n
        lam = self._lambda(X, rows)
        xi_max = self._xi_cap(lam, table, xi0, w_plus) if xi_max is None else xi_max
        kw = dict(
            xi0=xi0,
            xi_rate=getattr(self, "xi_rate", 1.0),
            xi_ratio=getattr(self, "xi_ratio", 1.0),
            xi_max=xi_max,
            k_max=min(int(self.k_max), bucket_size(n)),  # at most n clusters can open
            max_iter=self.max_iter,
            divergence=self.divergence,
            tie=self.tie,
            compat=self.compat,
            variant=self.variant,
            order=self.order,
            init=self.init,
            patience=self.patience,
        )
        with x64():
            key = as_key(self.random_state)
            if rows is None:
                mesh = data_mesh(self.devices, parallel_ok=self.variant == "delayed" and not self.compat)
                res = _dp.fit_restarts(key, X, table, lam, int(self.n_init), mesh=mesh, **kw)
            else:
                res = _dp.fit_process_rows(key, rows.x, table, lam, int(self.n_init), rows.layout, **kw)
            res = type(res)(*[np.asarray(a) for a in res])
        if res.overflow.any():
            raise KMaxExhaustedError(
                f"all k_max={kw['k_max']} cluster slots were used and another cluster "
                f"was needed (lam={lam:g}); increase `k_max` or `lam`"
            )
        if not np.all(np.isfinite(res.objective)):
            raise NonFiniteError(
                f"non-finite objective in {int((~np.isfinite(res.objective)).sum())} of "
                f"{len(res.objective)} restart(s); check the data and `xi_max`"
            )
        best = int(np.argmin(res.objective))
        k = int(res.n_clusters[best])
        self.lam_ = lam
        if hasattr(self, "xi_max"):  # RDP-means: the cap of the link weight that was used
            self.xi_max_ = xi_max
        labels = res.labels[best].astype(np.int64)
        if rows is not None:  # the labels of every position are on every process: keep this process's rows
            lay, me = rows.layout, jax.process_index()
            mine = labels[me * lay.block : me * lay.block + lay.counts[me]]
            labels = np.concatenate(
                [labels[p * lay.block : p * lay.block + c] for p, c in enumerate(lay.counts)]
            )
            self.labels_ = _devices.from_process_rows(mine, lay)
        else:
            self.labels_ = labels
        self.cluster_centers_ = res.centers[best][:k].copy()
        self.n_clusters_ = k
        self.objective_ = float(res.objective[best])
        self.restart_objectives_ = np.asarray(res.objective, dtype=np.float64)
        self.n_iter_ = int(res.n_iter[best])
        self.converged_ = bool(res.converged[best])
        n_it = self.n_iter_
        self.objective_trace_ = res.objective_trace[best][:n_it].copy()
        self.xi_trace_ = res.xi_trace[best][:n_it].copy()
        return labels

    def predict(self, X):
        """Nearest centre under the divergence (links play no part for new points)."""
        check_is_fitted(self, "cluster_centers_")
        X = self._prepare(X, reset=False)
        with x64():
            D = _divergence_rows(np.asarray(X, np.float64), self.cluster_centers_, divergence=self.divergence)
        return np.argmin(D, axis=1).astype(np.int64)


class DPMeans(_Base):
    r"""DP-means (Kulis & Jordan 2012): the small-variance limit of a Dirichlet-process Gaussian mixture.

    Each point joins its nearest centre unless every centre is farther than ``lam``, in which case it
    opens a new cluster; centres are then the means of their points. Side information plays no part:
    :class:`RDPMeans` adds link rewards and penalties.

    Parameters
    ----------
    lam : float or None, default=None
        New-cluster penalty :math:`\lambda > 0`, in the units of ``divergence``; None sets it from the
        data with ``lam_method`` and ``lam_k`` (the authors' rule).
    lam_k : int, default=3
        With ``lam=None``: the rank ``k`` used by ``lam_method`` (in ``[1, n_samples]``); roughly the
        number of clusters expected.
    lam_method : {"kth_farthest_from_mean", "farthest_first"}, default="kth_farthest_from_mean"
        How ``lam`` is set from the data: the ``lam_k``-th largest distance to the mean (the authors'
        rule) or Kulis & Jordan's farthest-first heuristic.
    divergence : {"sqeuclidean", "euclidean", "kl"}, default="sqeuclidean"
        Distance of a point to a centre: squared Euclidean (the Bregman divergence of the Gaussian, Kulis
        & Jordan's DP-means), Euclidean (the authors' code), or KL of count rows (rows smoothed by
        ``smoothing`` and normalised).
    k_max : int, default=64
        Cluster slot capacity (>= 1); exceeding it raises :class:`~ppclust.errors.KMaxExhaustedError`.
    n_init : int, default=1
        Restarts (vmapped, >= 1); the lowest final objective wins.
    init : {"bbox_random", "mean"}, default="bbox_random"
        First centre: a uniform point of the data's bounding box (the authors' code) or the data mean
        (Kulis & Jordan 2012, Algorithm 1).
    order : {"random", "fixed"}, default="random"
        Visiting order of a sweep: a new permutation each sweep, or ``0..n-1``.
    tie : {"first", "last"}, default="first"
        Which of equally near clusters wins: the lowest slot, or the last (the authors' scan).
    variant : {"sequential", "delayed"}, default="sequential"
        Algorithm 1 (points assigned one at a time), or the parallel "delayed cluster creation" pass
        (Dinari & Freifeld 2022: at most one new cluster per pass; fast on large n).
    compat : bool, default=False
        Follow the authors' Octave code exactly (:mod:`ppclust.inference.dpmeans`).
    patience : int, default=1
        Stop once the partition has been unchanged for ``patience`` consecutive sweeps (>= 1).
    max_iter : int, default=100
        Most sweeps (>= 1).
    smoothing : float, default=0.3
        Added to every count before normalising, with ``divergence="kl"`` (>= 0).
    random_state : None, int, numpy Generator or JAX key, default=None
        Seeds the first centre and the visiting orders.
    devices : None, "all", "auto", int or list of devices, default=None
        The devices the fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`);
        here a data-parallel delayed pass (needs ``variant="delayed"``, ``compat=False``): points split
        over the devices, per-cluster sums reduced with ``psum``; same result as one device up to
        summation order.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of each training point.
    n_clusters_ : int
        Number of clusters found.
    cluster_centers_ : ndarray of shape (n_clusters_, n_features)
        Cluster means.
    objective_ : float
        Final objective :math:`J` of the kept restart (formula in Notes); smaller is better.
    objective_trace_ : ndarray of shape (n_iter_,)
        :math:`J` after each sweep (at that sweep's link weight).
    restart_objectives_ : ndarray of shape (n_init,)
        Final :math:`J` of every restart.
    n_iter_ : int
        Sweeps run.
    converged_ : bool
        Whether the stopping rule was met before ``max_iter``.
    lam_ : float
        The new-cluster penalty used.
    xi_trace_ : ndarray of shape (n_iter_,)
        Link weight :math:`\xi_1` of each sweep (0 for DP-means).
    n_features_in_ : int
        Number of features seen in ``fit``.

    See Also
    --------
    RDPMeans : DP-means with may-link and may-not-link rewards and penalties.

    Notes
    -----
    The objective, never increased by a sweep followed by the mean step, is

    .. math:: J(z, \mu) = \sum_i D(x_i, \mu_{z_i}) + \lambda K

    (Kulis & Jordan 2012, eq. 1 for the squared Euclidean :math:`D`).

    References
    ----------
    Kulis, B. and Jordan, M. I. (2012). Revisiting k-means: new algorithms via Bayesian nonparametrics.
    ICML.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import DPMeans
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [5.0, 5.0], [5.1, 4.9]])
    >>> dp = DPMeans(lam=4.0, random_state=0).fit(X)
    >>> int(dp.n_clusters_), bool(dp.labels_[0] != dp.labels_[2])
    (2, True)
    """

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """Fit on X. DP-means uses no side information: links are an error (use :class:`RDPMeans`)."""
        if must_link is not None or cannot_link is not None:
            raise InvalidInputError(
                "DPMeans uses no links; `must_link`/`cannot_link` were given. Use "
                "RDPMeans, DP-means with link rewards and penalties (Khashabi et al. "
                "2015), to fit with links."
            )
        if _devices.is_process_rows(X):
            rows = self._prepare_rows(X)
            self._run(rows.local, None, 0.0, rows=rows)
            return self
        X = self._prepare(X, reset=True)
        self._run(X, None, 0.0)
        return self


class RDPMeans(_Base):
    r"""RDP-means (Khashabi et al. 2015, Algorithm 1): DP-means with annealed link rewards and penalties.

    The cost of putting point :math:`i` in cluster :math:`k` is
    :math:`D(x_i, \mu_k) - \xi_1 f^i_k + \xi_2 s^i_k` (:math:`f^i_k`, :math:`s^i_k`: the weights of its
    may-link and may-not-link neighbours in cluster :math:`k`), a new cluster costs ``lam``; the link
    weight :math:`\xi_1` grows from ``xi0`` by ``xi_rate`` per sweep up to ``xi_max`` (sweep 0 uses 0,
    as the authors' code) and :math:`\xi_2 = ` ``xi_ratio`` :math:`\xi_1`. Links come from
    ``must_link`` / ``cannot_link`` and from partial labels (every labelled pair becomes a link). It is
    the small-variance limit of TVClust.

    Parameters
    ----------
    lam : float or None, default=None
        New-cluster penalty :math:`\lambda > 0`, in the units of ``divergence``; None sets it from the
        data with ``lam_method`` and ``lam_k`` (the authors' rule).
    xi0 : float, default=1e-3
        Link weight of sweep 1 (>= 0), relative to the data's scale: it acts as ``xi0 * s``, ``s`` the
        mean per-feature variance of ``X`` for ``divergence="sqeuclidean"`` (its square root for
        ``"euclidean"``; 1 for ``"kl"`` and with ``compat=True``, the authors' absolute weight), so that
        ``X * c`` gives the partition of ``X``. The weight used is ``xi0_``.
    xi_rate : float, default=2.0
        Growth of the link weight per sweep (> 0; 1 keeps it constant).
    xi_ratio : float, default=1.0
        :math:`\xi_2 / \xi_1`, weight of a may-not-link relative to a may-link (>= 0).
    xi_max : float or "auto", default="auto"
        Cap of :math:`\xi_1` (> 0), in the units of the divergence. ``"auto"`` stops the annealing at
        ``lam / max(w_+, 1)``, ``w_+`` the mean may-link weight of a point (or at ``xi0_`` if that is
        larger): at the cap one violated link weighs at most one new cluster, and the violated may-not-links
        of a point inside its cluster open a new one once they are as many as a point's may-links (two
        classes merged into one cluster leave about as many cross pairs as within pairs), so links can still
        demand a cluster when they are plentiful, while a few wrong links cannot override the geometry
        (see docs/decisions/ for the evidence). ``1e12`` is the authors' schedule (every link a hard
        constraint). The value used is ``xi_max_``.
    link_reliability : {"auto", None}, default="auto"
        ``"auto"`` weighs each kind of link by the evidence the data give it: after a first fit, TVClust's
        link sensitivity :math:`p` and specificity :math:`q` are estimated from its partition
        (:func:`ppclust.sideinfo.link_reliability`, prior Beta(9.9, 1.1)); may-links are weighted by
        :math:`r_+ = \min\{1, \max(0, \ln\frac{p}{1-q}) / \ln 9\}` and may-not-links by
        :math:`r_- = \min\{1, \max(0, \ln\frac{q}{1-p}) / \ln 9\}`
        (:func:`ppclust.sideinfo.link_reliability_share`; :math:`\ln 9` is the log-odds at the prior
        mean), and the fit is repeated with the same ``xi_max_`` (not when both shares are 1). A kind of
        link the first partition often violates loses weight (see docs/decisions/ for the evidence).
        None: every link at full weight.
    lam_k : int, default=3
        With ``lam=None``: the rank ``k`` used by ``lam_method`` (in ``[1, n_samples]``); roughly the
        number of clusters expected.
    lam_method : {"kth_farthest_from_mean", "farthest_first"}, default="kth_farthest_from_mean"
        How ``lam`` is set from the data: the ``lam_k``-th largest distance to the mean (the authors'
        rule) or Kulis & Jordan's farthest-first heuristic.
    divergence : {"sqeuclidean", "euclidean", "kl"}, default="sqeuclidean"
        Distance of a point to a centre: squared Euclidean (the Bregman divergence of the Gaussian, Kulis
        & Jordan's DP-means), Euclidean (the authors' code), or KL of count rows (rows smoothed by
        ``smoothing`` and normalised).
    k_max : int, default=64
        Cluster slot capacity (>= 1); exceeding it raises :class:`~ppclust.errors.KMaxExhaustedError`.
    n_init : int, default=1
        Restarts (vmapped, >= 1); the lowest final objective wins.
    init : {"bbox_random", "mean"}, default="mean"
        First centre: a uniform point of the data's bounding box (the authors' code) or the data mean
        (Kulis & Jordan 2012, Algorithm 1).
    order : {"random", "fixed"}, default="random"
        Visiting order of a sweep: a new permutation each sweep, or ``0..n-1``.
    tie : {"first", "last"}, default="first"
        Which of equally near clusters wins: the lowest slot, or the last (the authors' scan).
    variant : {"sequential", "delayed"}, default="sequential"
        Algorithm 1 (points assigned one at a time), or the parallel "delayed cluster creation" pass
        (Dinari & Freifeld 2022: at most one new cluster per pass; fast on large n).
    compat : bool, default=False
        Follow the authors' Octave code exactly (:mod:`ppclust.inference.dpmeans`).
    patience : int, default=20
        Stop once the partition has been unchanged for ``patience`` consecutive sweeps (>= 1).
    max_iter : int, default=1000
        Most sweeps (>= 1).
    smoothing : float, default=0.3
        Added to every count before normalising, with ``divergence="kl"`` (>= 0).
    random_state : None, int, numpy Generator or JAX key, default=None
        Seeds the first centre and the visiting orders.
    devices : None, "all", "auto", int or list of devices, default=None
        The devices the fit may use (one meaning for every estimator, :mod:`ppclust.estimators._base`);
        here a data-parallel delayed pass (needs ``variant="delayed"``, ``compat=False``): points split
        over the devices, per-cluster sums reduced with ``psum``; same result as one device up to
        summation order.

    Attributes
    ----------
    labels_ : ndarray of shape (n_samples,), int64
        Cluster of each training point.
    n_clusters_ : int
        Number of clusters found.
    cluster_centers_ : ndarray of shape (n_clusters_, n_features)
        Cluster means.
    objective_ : float
        Final objective :math:`J` of the kept restart (formula in Notes); smaller is better.
    objective_trace_ : ndarray of shape (n_iter_,)
        :math:`J` after each sweep (at that sweep's link weight).
    restart_objectives_ : ndarray of shape (n_init,)
        Final :math:`J` of every restart.
    n_iter_ : int
        Sweeps run.
    converged_ : bool
        Whether the stopping rule was met before ``max_iter``.
    lam_ : float
        The new-cluster penalty used.
    xi_trace_ : ndarray of shape (n_iter_,)
        Link weight :math:`\xi_1` of each sweep (0 for DP-means).
    n_features_in_ : int
        Number of features seen in ``fit``.
    xi0_ : float
        The link weight of sweep 1 in the units of the divergence (``xi0`` times the data's scale).
    xi_max_ : float
        The cap of the link weight used.
    link_reliability_ : dict or None
        Estimated ``{"p": ..., "q": ...}`` (None without links or with ``link_reliability=None``).
    link_weight_share_ : dict or None
        ``{"may_link": r_+, "may_not_link": r_-}`` applied to the link weights.

    See Also
    --------
    DPMeans : the same without links.
    TVClust : the Bayesian model whose small-variance limit this is.

    Notes
    -----
    At fixed :math:`\xi` a sweep followed by the mean step never increases

    .. math:: J(z, \mu) = \sum_i D(x_i, \mu_{z_i}) + \lambda K - \xi_1 N_{11}(z) + \xi_2 N_{01}(z),

    :math:`N_{11}` / :math:`N_{01}` the weights of may-links within clusters and may-not-links within
    clusters, each pair counted once (Khashabi et al. 2015, eqs. 12 and 20).

    References
    ----------
    Khashabi, D., Wieting, J., Liu, J. Y. and Liang, F. (2015). Clustering with side information: from a
    probabilistic model to a deterministic algorithm. arXiv:1508.06235.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import RDPMeans
    >>> X = np.array([[0.0, 0.0], [0.2, 0.1], [5.0, 5.0], [5.1, 4.9]])
    >>> rdp = RDPMeans(lam=4.0, random_state=0).fit(X, must_link=[(0, 1)], cannot_link=[(1, 2)])
    >>> int(rdp.n_clusters_), bool(rdp.labels_[0] == rdp.labels_[1])
    (2, True)
    """

    _parameter_constraints: dict = {
        **_Base._parameter_constraints,
        "xi0": NONNEG_REAL,
        "xi_rate": POSITIVE_REAL,
        "xi_ratio": NONNEG_REAL,
        "xi_max": [StrOptions({"auto"}), *POSITIVE_REAL],
        "link_reliability": [StrOptions({"auto"}), None],
    }

    def __init__(
        self,
        lam=None,
        *,
        xi0=1e-3,
        xi_rate=2.0,
        xi_ratio=1.0,
        xi_max="auto",
        link_reliability="auto",
        lam_k=3,
        lam_method="kth_farthest_from_mean",
        divergence="sqeuclidean",
        k_max=64,
        n_init=1,
        init="mean",
        order="random",
        tie="first",
        variant="sequential",
        compat=False,
        patience=20,
        max_iter=1000,
        smoothing=0.3,
        random_state=None,
        devices=None,
    ):
        self.xi0 = xi0
        self.xi_rate = xi_rate
        self.xi_ratio = xi_ratio
        self.xi_max = xi_max
        self.link_reliability = link_reliability
        super().__init__(
            lam,
            lam_k=lam_k,
            lam_method=lam_method,
            divergence=divergence,
            k_max=k_max,
            n_init=n_init,
            init=init,
            order=order,
            tie=tie,
            variant=variant,
            compat=compat,
            patience=patience,
            max_iter=max_iter,
            smoothing=smoothing,
            random_state=random_state,
            devices=devices,
        )

    @fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None, *, must_link=None, cannot_link=None, partial_labels=None):
        """RDP-means (Khashabi et al. 2015, Algorithm 1) on X with links from ``must_link`` /
        ``cannot_link`` (pair arrays or :class:`~ppclust.sideinfo.RowPairs`) and from the labelled
        pairs of the partial labels (``partial_labels`` if given, else ``y``; -1 = unlabelled)."""
        y = side_labels(y, partial_labels)
        rows, w_plus = None, None
        if _devices.is_process_rows(X):
            rows = self._prepare_rows(X)
            X = rows.local
            side, table, w_plus = self._rows_side_table(rows, y, must_link, cannot_link)
        else:
            X = self._prepare(X, reset=True)
            side, table = _side_table(X.shape[0], y, must_link, cannot_link)
        self.xi0_ = float(self.xi0) * self._xi_unit(X, rows)
        labels = self._run(X, table, self.xi0_, rows=rows, w_plus=w_plus)
        self.link_reliability_ = self.link_weight_share_ = None
        if table is not None and self.link_reliability is not None:
            share, (p, q) = link_reliability_share(pair_counts(labels, side, xp=np))
            self.link_reliability_ = {"p": p, "q": q}
            self.link_weight_share_ = {"may_link": share[0], "may_not_link": share[1]}
            if share != (1.0, 1.0):
                table = weigh_link_kinds(table, share)
                self._run(X, table, self.xi0_, xi_max=self.xi_max_, rows=rows, w_plus=w_plus)
        return self

    def _rows_side_table(self, rows: _Rows, y, must_link, cannot_link):
        """Links over processes (global row indices; every process passes all of them, and the labelled
        rows of the partial labels are gathered): ``(side, this process's table block or None, w_+)``."""
        lay = rows.layout
        y_full = None
        if y is not None:
            y_loc = check_partial_labels(_devices.local_rows(y), len(rows.local))
            y_full = np.full(lay.n, -1, np.int64)
            idx, lab = _gather_labelled(y_loc, lay.offsets[jax.process_index()]).T
            y_full[idx] = lab
        side = link_side_info(lay.n, y_full, must_link, cannot_link, link_model="soft")
        if not side.n_links:
            return side, None, 0.0
        table, w_plus = _rows_table(side, lay)
        return side, table, w_plus
