r"""CEC-IB: cross-entropy clustering with an information-bottleneck label term (Śmieja & Geiger 2017).

Kept whole although over 700 lines: the cost's configuration (:func:`make_cost`, :func:`min_size`, the
label codes), its solvers on one process and on rows spread over processes, and the cost and Gaussians of
a fitted partition (host-side and reduced over processes) are one model; split, each part would import
the private cost set-up of the others.

Cost of a hard partition :math:`Y=\{Y_1..Y_k\}` of n points in :math:`\mathbb R^N` with partial
labels (spec ``cecib.md`` eqs. 10, 11; natural logs, nats):

.. math::

    E_\beta(Y) = \sum_i p_i\Big[-\ln p_i + \tfrac N2\ln(2\pi e) + \tfrac12\ln\det\Sigma_i
                 + \beta\,H(Z\mid Y_i\cap X_l)\Big],\qquad p_i = n_i/n,

with :math:`\Sigma_i` the MLE covariance of :math:`Y_i` and
:math:`H(Z\mid Y_i\cap X_l) = \ln L_i - \tfrac1{L_i}\sum_j c_{ij}\ln c_{ij}` (0 when :math:`L_i=0`)
computed from the :math:`L_i` labelled members only, but weighted by the full :math:`p_i`. So moving an
*unlabelled* point still changes the label term by :math:`\pm\beta H_i/n` (the spec's correction to the
paper's Sec. 3.4, which says these terms cancel). With complete labels this is eq. (4); with
``beta = 0`` or no labels it is plain CEC (eq. 2). The cost is :class:`ppclust.inference.cec.CECCost`
with its label term (:func:`make_cost`), minimised by :mod:`ppclust.inference.hartigan`.

Degenerate clusters (spec §7.3): a cluster whose MLE covariance is numerically singular (smallest
eigenvalue <= 1e-12 x largest) costs +inf, so no move creates one, and it is deleted after
initialisation and after each pass; the engine also deletes clusters below
``min_size = max(min_cluster_fraction * n, N + 2)`` points (:func:`min_size`). Optional regularisation
(``reg_covar > 0``, off by default): every cluster's scatter gets a pseudo-scatter
``reg_covar * tr(Σ_X)/N * I`` (a fixed ridge, so the rank-one updates stay exact); it breaks the affine
invariance slightly.

Also here: the clusters' Gaussians of a partition (:func:`cluster_gaussians`). The automatic start and
label-noise weighting of the estimator (:func:`choose_start`, :func:`label_channel_information`) and
the critical beta of Theorem 4.2 (:func:`beta0`) are defined in :mod:`ppclust.inference.cecib_beta` and
re-exported here.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust import families
from ppclust._buckets import rowwise
from ppclust.families import LOG_2PIE, ML_SING_TOL, ml_entropy
from ppclust.inference import hartigan
from ppclust.inference.cec import CECCost
from ppclust.inference.cecib_beta import (
    BETA0_HALF_NORMAL,
    beta0,
    beta0_from_labels,
    choose_start,
    label_channel_information,
)
from ppclust.sideinfo import labelled_means

__all__ = [
    "CostParts",
    "make_cost",
    "min_size",
    "cecib_cost",
    "cecib_cost_rows",
    "encode_labels",
    "fit",
    "fit_batch",
    "fit_batch_rows",
    "replay",
    "label_channel_information",
    "choose_start",
    "ClusterGaussians",
    "cluster_gaussians",
    "log_weighted_densities",
    "beta0",
    "beta0_from_labels",
    "LOG_2PIE",
    "BETA0_HALF_NORMAL",
    "SING_TOL",
]

Array = jax.Array
#: A cluster is numerically singular when lambda_min <= SING_TOL * lambda_max (reference README).
SING_TOL = ML_SING_TOL


class CostParts(NamedTuple):
    r"""Cost of a partition, with the paper's three parts (the columns of the authors' program).

    Parameters
    ----------
    total : array
        :math:`E_\beta`, the sum of the three parts.
    model_complexity : array
        :math:`H(Y) = \sum_i -p_i \ln p_i`.
    accuracy : array
        :math:`\sum_i p_i H(N(\mu_i, \Sigma_i))`.
    side_information : array
        :math:`\beta \sum_i p_i H(Z \mid Y_i \cap X_l)`.
    cluster_terms : array (K, 3)
        Per cluster ``[a_i, b_i, c_i]`` (``c_i`` without beta), 0 for an empty one.
    sizes : array (K,)
        Cluster sizes.

    Examples
    --------
    >>> from ppclust.inference.cecib import CostParts
    >>> CostParts._fields[:4]
    ('total', 'model_complexity', 'accuracy', 'side_information')
    """

    total: Array  # E_beta
    model_complexity: Array  # H(Y) = sum_i -p_i ln p_i
    accuracy: Array  # sum_i p_i H(N(mu_i, Sigma_i))
    side_information: Array  # beta * sum_i p_i H(Z | Y_i ∩ X_l)
    cluster_terms: Array  # (K, 3) per cluster [a_i, b_i, c_i] (c_i without beta), 0 for empty
    sizes: Array  # (K,)


def make_cost(x: Array, n_labels: int, beta=1.0, reg_covar: float = 0.0) -> CECCost:
    """The CEC-IB cost: :class:`~ppclust.inference.cec.CECCost` with the label term, no leakage term.

    Parameters
    ----------
    x : array of shape (n, N)
        The points.
    n_labels : int
        Label categories m (at least one slot of label counts is kept).
    beta : float, default=1.0
        Weight of the label term.
    reg_covar : float, default=0.0
        Relative covariance regulariser: the ridge :func:`ppclust.inference.hartigan.ridge`
        ``= reg_covar · tr(Σ_X) / N`` is added to every cluster's scatter.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.cecib import make_cost
    >>> cost = make_cost(jnp.zeros((10, 3)), 2, beta=0.5)
    >>> cost.n_labels, cost.n_dec, cost.dim
    (2, 0, 3)
    """
    n, d = x.shape
    return _cost(n, d, n_labels, beta, hartigan.ridge(x, reg_covar), x.dtype)


def _cost(n: int, d: int, n_labels: int, beta, ridge: float, dt) -> CECCost:
    """:func:`make_cost` from the row count, the dimension and the absolute ridge."""
    dt = np.dtype(dt)
    host = (
        np.asarray(float(n), dt),
        np.asarray(beta, dt),
        np.zeros(0, dt),
        np.zeros(0, dt),
        np.asarray(ridge, dt),
    )
    return CECCost(
        *jax.device_put(host),  # moved, not built by a program per operation
        n_labels=max(int(n_labels), 1),
        n_dec=0,
        dim=int(d),
        min_count=d + 1.0,
    )


def min_size(n: int, d: int, min_cluster_fraction: float) -> float:
    """Deletion threshold: a cluster with fewer than ``max(min_cluster_fraction * n, d + 2)`` points dies.

    The rule of the authors' program.

    Parameters
    ----------
    n : int
        Points.
    d : int
        Dimension.
    min_cluster_fraction : float
        Fraction of n.

    Examples
    --------
    >>> from ppclust.inference.cecib import min_size
    >>> min_size(200, 36, 0.05), min_size(1000, 2, 0.05)
    (38.0, 50.0)
    """
    return max(min_cluster_fraction * n, d + 2.0)


# ---------------------------------------------------------------------------------------------
# cost of a given partition (fresh two-pass statistics)
# ---------------------------------------------------------------------------------------------


def cecib_cost(x, labels, y=None, beta: float = 1.0, ridge: float = 0.0) -> CostParts:
    """E_beta of the partition ``labels`` (any ints; one cluster per distinct value, in sorted order).

    Host-side NumPy with fresh two-pass statistics and ``slogdet``; a numerically singular cluster makes
    the accuracy term (and the total) +inf. Checked against the authors' program on its demo data
    (``tests/inference/test_cecib.py``).

    Parameters
    ----------
    x : array of shape (n, N)
    labels : array of shape (n,)
    y : array of shape (n,) or None
        Partial labels (any ints, -1 = unlabelled).
    beta : float, default=1.0
    ridge : float, default=0.0
        Pseudo-scatter added to every cluster's scatter (:func:`ppclust.inference.hartigan.ridge`).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.cecib import cecib_cost
    >>> x = np.random.default_rng(0).normal(size=(20, 2))
    >>> parts = cecib_cost(x, np.zeros(20, int))
    >>> float(parts.model_complexity) == 0.0, float(parts.side_information) == 0.0  # one cluster, no labels
    (True, True)
    """
    x = np.asarray(x, np.float64)
    n, d = x.shape
    _, z = np.unique(np.asarray(labels), return_inverse=True)
    yy, m = encode_labels(y, n)
    K = int(z.max()) + 1
    terms = np.zeros((K, 3))
    sizes = np.bincount(z, minlength=K).astype(float)
    for k in range(K):
        xk = x[z == k]
        p = len(xk) / n
        cov = np.atleast_2d(np.cov(xk.T, bias=True)) if len(xk) > 1 else np.zeros((d, d))
        if ridge > 0:
            cov = cov + ridge / len(xk) * np.eye(d)
        sign, logdet = np.linalg.slogdet(cov)
        ev = np.linalg.eigvalsh(cov)
        sing = sign <= 0 or ev[0] <= SING_TOL * ev[-1] or (len(xk) < d + 1 and ridge <= 0)
        cnt = np.bincount(yy[(z == k) & (yy >= 0)], minlength=max(m, 1)).astype(float)
        L = cnt.sum()
        q = cnt[cnt > 0] / L if L > 0 else np.zeros(0)
        terms[k] = (
            -p * np.log(p),
            np.inf if sing else p * ml_entropy(1.0, logdet, d, xp=np),
            p * float(-(q * np.log(q)).sum()),
        )
    a, b, c = terms.sum(0)
    return CostParts(a + b + beta * c, a, b, beta * c, terms, sizes)


def cecib_cost_rows(
    x, labels, y_codes, n_labels: int, k: int, beta: float, ridge: float, reduce
) -> CostParts:
    """:func:`cecib_cost` of a partition of rows spread over processes (every sum reduced by ``reduce``).

    Parameters
    ----------
    x : array of shape (n_i, N)
        This process's rows.
    labels : int array of shape (n_i,)
        Their clusters, 0..k-1 (the same numbering on every process).
    y_codes : int array of shape (n_i,)
        Their label codes 0..m-1 / -1 (:func:`encode_labels` with categories shared by all processes).
    n_labels : int
        m.
    k : int
        Clusters.
    beta, ridge : float
        As :func:`cecib_cost`.
    reduce : callable
        Sums an array over processes (:func:`ppclust._devices.process_sum`).

    Returns
    -------
    CostParts
        The same on every process; the two-pass statistics are reduced (cluster means first, then the
        centred scatters), so the parts equal :func:`cecib_cost`'s up to the order of the sums.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.cecib import cecib_cost, cecib_cost_rows
    >>> x = np.random.default_rng(0).normal(size=(20, 2))
    >>> z, y = np.arange(20) % 2, np.where(np.arange(20) < 4, np.arange(20) % 2, -1)
    >>> a = cecib_cost_rows(x, z, y, 2, 2, 1.0, 0.0, lambda v: v)
    >>> bool(np.isclose(float(a.total), float(cecib_cost(x, z, y).total)))
    True
    """
    x = np.asarray(x, np.float64)
    z = np.asarray(labels, np.int64)
    codes = np.asarray(y_codes, np.int64)
    d = x.shape[1]
    one_hot = np.eye(k)[z]
    sizes = np.asarray(reduce(one_hot.sum(0)), np.float64)
    n = sizes.sum()
    means = np.asarray(reduce(one_hot.T @ x)) / np.maximum(sizes, 1.0)[:, None]
    xc = x - means[z]
    scatter = np.asarray(reduce(np.einsum("nk,ni,nj->kij", one_hot, xc, xc)))
    mm = max(int(n_labels), 1)
    lab = codes >= 0
    cnt = np.asarray(reduce(np.bincount(z[lab] * mm + codes[lab], minlength=k * mm).astype(np.float64)))
    cnt = cnt.reshape(k, mm)
    terms = np.zeros((k, 3))
    for j in range(k):
        p = sizes[j] / n
        cov = scatter[j] / sizes[j]
        if ridge > 0:
            cov = cov + ridge / sizes[j] * np.eye(d)
        sign, logdet = np.linalg.slogdet(cov)
        ev = np.linalg.eigvalsh(cov)
        sing = sign <= 0 or ev[0] <= SING_TOL * ev[-1] or (sizes[j] < d + 1 and ridge <= 0)
        L = cnt[j].sum()
        q = cnt[j][cnt[j] > 0] / L if L > 0 else np.zeros(0)
        terms[j] = (
            -p * np.log(p),
            np.inf if sing else p * ml_entropy(1.0, logdet, d, xp=np),
            p * float(-(q * np.log(q)).sum()),
        )
    a, b, c = terms.sum(0)
    return CostParts(a + b + beta * c, a, b, beta * c, terms, sizes)


def encode_labels(y, n: int):
    """Map partial labels (any ints, -1 = unlabelled; None = no labels) to 0..m-1 / -1 -> (codes, m).

    Parameters
    ----------
    y : array (n,) or None
        Partial labels.
    n : int
        Points (the length of the codes when ``y`` is None).

    Examples
    --------
    >>> from ppclust.inference.cecib import encode_labels
    >>> codes, m = encode_labels([7, -1, 3, 7], 4)
    >>> codes.tolist(), m
    ([1, -1, 0, 1], 2)
    """
    if y is None:
        return np.full(n, -1, np.int32), 0
    y = np.asarray(y)
    lab = y != -1
    cats, codes = np.unique(y[lab], return_inverse=True)
    out = np.full(n, -1, np.int32)
    out[lab] = codes
    return out, len(cats)


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------


def fit(
    key,
    x,
    y_codes,
    n_labels: int,
    config: hartigan.HartiganConfig | None = None,
    *,
    n_clusters: int,
    beta=1.0,
    min_cluster_fraction: float = 0.05,
    reg_covar: float = 0.0,
    devices="auto",
    **options,
) -> hartigan.HartiganFit:
    """CEC-IB by Hartigan moves with ``n_init`` restarts; call inside ``jax.enable_x64(True)``.

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions.
    x : array of shape (n, N)
        The data.
    y_codes, n_labels : int array (n,), int
        Label codes 0..m-1 / -1 and m (:func:`encode_labels`).
    config : HartiganConfig or None, default=None
        The restarts' options (:class:`ppclust.inference.hartigan.HartiganConfig`); None: its defaults.
        ``init="labels"``: the first ``n_labels`` initial centres are the labelled categories' means
        (:func:`ppclust.sideinfo.labelled_means`), the others k-means++ given them.
    n_clusters : int
        Initial clusters (slots); with ``init="labels"`` raised to ``n_labels`` if smaller.
    beta, min_cluster_fraction, reg_covar : float
        See :func:`make_cost` and :func:`min_size`.
    devices : "auto", None or int, default="auto"
        See :func:`ppclust.inference.hartigan.fit`.
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig` replacing those of ``config``.

    Returns
    -------
    HartiganFit
        ``(best, costs, n_passes, n_clusters)``.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.inference import cecib
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     res = cecib.fit(jax.random.key(0), jax.numpy.asarray(x), np.full(40, -1), 0, n_clusters=2,
    ...                     n_init=2)
    >>> int(res.best.active.sum())
    2
    """
    n, d = x.shape
    config = (hartigan.HartiganConfig() if config is None else config).with_options(**options)
    cost = make_cost(x, n_labels, beta, reg_covar)
    K, centres = _seeding(x, y_codes, n_labels, n_clusters, config.init)
    codes = jnp.asarray(y_codes, jnp.int32)
    m_min = min_size(n, d, min_cluster_fraction)
    return hartigan.fit(key, cost, x, codes, config, K=K, min_size=m_min, devices=devices, centres=centres)


def _seeding(x, y_codes, n_labels, n_clusters, init):
    """(K, centres) of a start: the labelled means and max(n_clusters, n_labels) slots for ``"labels"``."""
    if init != "labels":
        return n_clusters, None
    if n_labels == 0:
        raise ValueError("init='labels' needs labelled points")
    return max(n_clusters, n_labels), labelled_means(x, y_codes, n_labels)


def fit_batch(
    key,
    x,
    y_codes,
    n_labels: int,
    config: hartigan.HartiganConfig | None = None,
    *,
    n_clusters: int,
    beta=1.0,
    min_cluster_fraction: float = 0.05,
    reg_covar: float = 0.0,
    mesh=None,
    **options,
) -> hartigan.HartiganFit:
    """CEC-IB by batch steps, then Hartigan passes; call inside ``jax.enable_x64(True)``.

    Batch steps reassign every point at once (:func:`ppclust.inference.hartigan.fit_batch`, which says
    when to prefer them; at most ``max_iter`` steps, then with ``polish`` at most ``max_passes`` Hartigan
    passes).

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions.
    x : array of shape (n, N)
        The data.
    y_codes, n_labels : int array (n,), int
        Label codes 0..m-1 / -1 and m (:func:`encode_labels`).
    config : HartiganConfig or None, default=None
        As :func:`fit` (``max_iter``, ``polish`` read; ``tol`` not).
    n_clusters : int
        Initial clusters (slots).
    beta, min_cluster_fraction, reg_covar : float
        See :func:`make_cost` and :func:`min_size`.
    mesh : None or a 1-D data mesh, default=None
        Points split over its devices (:func:`ppclust.inference.hartigan.fit_batch`).
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig` replacing those of ``config``.

    Returns
    -------
    HartiganFit
        Of the polished run (restart arrays: the batch restarts).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.inference import cecib
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     res = cecib.fit_batch(jax.random.key(0), jax.numpy.asarray(x), np.full(40, -1), 0, n_clusters=2,
    ...                           n_init=2)
    >>> int(res.best.active.sum())
    2
    """
    n, d = x.shape
    config = (hartigan.HartiganConfig() if config is None else config).with_options(**options)
    cost = make_cost(x, n_labels, beta, reg_covar)
    K, centres = _seeding(x, y_codes, n_labels, n_clusters, config.init)
    codes = jnp.asarray(y_codes, jnp.int32)
    m_min = min_size(n, d, min_cluster_fraction)
    fitted, _ = hartigan.fit_batch(
        key, cost, x, codes, config, K=K, min_size=m_min, mesh=mesh, centres=centres
    )
    return fitted


def fit_batch_rows(
    key,
    x,
    y_codes,
    n_labels: int,
    layout,
    config: hartigan.HartiganConfig | None = None,
    *,
    n_clusters: int,
    beta=1.0,
    min_cluster_fraction: float = 0.05,
    ridge: float = 0.0,
    centres=None,
    **options,
) -> hartigan.HartiganFit:
    """:func:`fit_batch` on rows spread over processes (:func:`ppclust.inference.hartigan.fit_batch_rows`);
    call it on every process, inside ``jax.enable_x64(True)``.

    Parameters
    ----------
    key : JAX key
        Seeds the restarts' initial partitions (the same on every process).
    x : jax.Array of shape (P * block, N)
        The global rows (:func:`ppclust.distributed.process_rows`).
    y_codes : jax.Array of int32 of shape (P * block,)
        Label codes 0..m-1 / -1 of every position (-1 on padding), codes shared by all processes.
    n_labels : int
        m.
    layout : ppclust._devices.RowLayout
        How many rows each process holds.
    config : HartiganConfig or None, default=None
        The options, as for :func:`fit_batch`.
    n_clusters : int
        Initial clusters (slots); with ``init="labels"`` raised to the number of ``centres`` if smaller.
    beta, min_cluster_fraction : float
        See :func:`make_cost` and :func:`min_size`.
    ridge : float, default=0.0
        The absolute pseudo-scatter (:func:`ppclust.inference.hartigan.ridge` of all rows).
    centres : array (m, N) or None, default=None
        ``init="labels"``: the labelled categories' means over all rows.
    **options
        Fields of :class:`~ppclust.inference.hartigan.HartiganConfig`.

    Returns
    -------
    HartiganFit
        As :func:`ppclust.inference.hartigan.fit_batch_rows` (``best.labels``: this process's rows).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust import distributed
    >>> from ppclust.inference import cecib
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     X = distributed.process_rows(x)
    ...     codes = distributed.process_labels(np.full(40, -1)).astype(np.int32)
    ...     res = cecib.fit_batch_rows(jax.random.key(0), X, codes, 0, distributed.layout(X), n_clusters=2,
    ...                                n_init=2)
    >>> int(res.best.active.sum()), res.best.labels.shape
    (2, (40,))
    """
    n, d = layout.n, x.shape[1]
    config = (hartigan.HartiganConfig() if config is None else config).with_options(**options)
    K = n_clusters if centres is None else max(n_clusters, len(centres))
    cost = _cost(n, d, n_labels, beta, ridge, x.dtype)
    return hartigan.fit_batch_rows(
        key,
        cost,
        x,
        y_codes,
        layout,
        config,
        K=K,
        min_size=min_size(n, d, min_cluster_fraction),
        centres=centres,
    )


def replay(
    x,
    y_codes,
    n_labels: int,
    centre_idx,
    *,
    beta=1.0,
    min_cluster_fraction: float = 0.05,
    max_passes: int = 100,
    reassign: str = "lazy",
    reg_covar: float = 0.0,
    backend: str = "auto",
) -> hartigan.HartiganResult:
    """One deterministic run from the nearest-centre partition of given centre indices.

    As the ``fixed_centres`` runs of the authors' program. Call inside ``jax.enable_x64(True)``.
    Arguments as :func:`fit`.

    Parameters
    ----------
    x : array (n, N)
        The data.
    y_codes, n_labels : int array (n,), int
        Label codes and categories (:func:`encode_labels`).
    centre_idx : int sequence
        Indices of the initial centres (their nearest-centre partition starts the run).
    beta, min_cluster_fraction : float
        See :func:`make_cost` and :func:`min_size`.
    max_passes : int, default=100
        Safety cap on passes.
    reassign : {"lazy", "immediate"}, default="lazy"
        See :func:`ppclust.inference.hartigan.run`.
    reg_covar : float, default=0.0
        Relative regulariser (:func:`make_cost`).
    backend : {"auto", "numba", "xla"}, default="auto"
        See :func:`ppclust.inference.hartigan.run`.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.inference import cecib
    >>> rng = np.random.default_rng(0)
    >>> x = np.concatenate([rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 8.0])
    >>> with jax.enable_x64(True):
    ...     res = cecib.replay(jax.numpy.asarray(x), np.full(40, -1), 0, [0, 39])
    >>> np.asarray(res.labels)[[0, 39]].tolist()
    [0, 1]
    """
    n, d = x.shape
    cost = make_cost(x, n_labels, beta, reg_covar)
    labels0 = hartigan.voronoi(x, jnp.asarray(centre_idx, jnp.int32))
    return hartigan.run(
        cost,
        x,
        jnp.asarray(y_codes, jnp.int32),
        labels0,
        K=len(centre_idx),
        min_size=min_size(n, d, min_cluster_fraction),
        max_passes=max_passes,
        reassign=reassign,
        backend=backend,
    )


# ---------------------------------------------------------------------------------------------
# the fitted Gaussians
# ---------------------------------------------------------------------------------------------


class ClusterGaussians(NamedTuple):
    """The clusters' ML Gaussians.

    Parameters
    ----------
    weights : array (k,)
        :math:`n_k / n`.
    means : array (k, d)
        Means.
    covariances : array (k, d, d)
        Covariances.
    precisions_cholesky : array (k, d, d)
        Cholesky factors of the precisions (scikit-learn's layout).

    Examples
    --------
    >>> from ppclust.inference.cecib import ClusterGaussians
    >>> ClusterGaussians._fields
    ('weights', 'means', 'covariances', 'precisions_cholesky')
    """

    weights: Array
    means: Array
    covariances: Array
    precisions_cholesky: Array


def cluster_gaussians(x, labels, ridge: float, k: int, chunk: int = 4096, reduce=None) -> ClusterGaussians:
    r"""The ML Gaussians of the clusters ``labels`` (0..k-1), covariances :math:`(S_k + \rho I) / n_k`.

    The MAP estimate of :func:`ppclust.families.gaussian_map_estimate` under an NIW "prior" with
    :math:`\kappa_0 = 0`, :math:`\Psi_0 = \rho I`, :math:`\nu_0 = -(d + 2)` (weights :math:`n_k / n`, means
    :math:`s_k / n_k`). The moment statistics (sums over points) are summed on the host in chunks of
    ``chunk`` points, so a new n compiles nothing; the estimate is jitted on (k, d). Call inside
    ``jax.enable_x64(True)`` for float64.

    Parameters
    ----------
    x : array of shape (n, d)
        The points.
    labels : int array of shape (n,)
        Clusters 0..k-1.
    ridge : float
        :math:`\rho` (:func:`ppclust.inference.hartigan.ridge`).
    k : int
        Slots (empty slots give garbage the caller cuts off).
    chunk : int, default=4096
        Points per host-side sum.
    reduce : callable or None, default=None
        Rows spread over processes: ``x`` and ``labels`` are this process's rows and ``reduce(a)`` sums
        ``a`` over processes (:func:`ppclust._devices.process_sum`); the moment sums are reduced.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.inference.cecib import cluster_gaussians
    >>> x = np.array([[0.0, 0.0], [2.0, 0.0], [0.0, 2.0], [2.0, 2.0]])
    >>> with jax.enable_x64(True):
    ...     g = cluster_gaussians(x, np.zeros(4, int), 0.0, 1)
    >>> np.asarray(g.means).round(6).tolist(), np.asarray(g.covariances).round(6).tolist()
    ([[1.0, 1.0]], [[[1.0, 0.0], [0.0, 1.0]]])
    """
    x = np.asarray(x, np.float64)
    one_hot = np.eye(k)
    parts = [
        families.gaussian_moment_stats(x[i : i + chunk], one_hot[labels[i : i + chunk]], "full")
        for i in range(0, len(x), chunk)
    ]
    if not parts:  # a process without rows
        parts = [families.gaussian_moment_stats(x[:0], one_hot[np.zeros(0, int)], "full")]
    sums = [np.asarray(sum(p[j] for p in parts)) for j in range(3)]
    if reduce is not None:
        sums = [reduce(v) for v in sums]
    stats = tuple(jax.device_put(v) for v in sums)
    params = _map_estimate(stats, np.float64(ridge))
    covs = families.covariances(params.prec_chol, "full")
    return ClusterGaussians(params.weights, params.means, covs, params.prec_chol)


def log_weighted_densities(x, weights, means, precisions_cholesky) -> np.ndarray:
    r"""(n, k) :math:`\ln N(x_i; \mu_k, \Sigma_k) + \ln p_k`, the CEC rule's scores (argmax = cluster).

    Parameters
    ----------
    x : array (n, d)
        The points.
    weights : array (k,)
        Mixture weights.
    means : array (k, d)
        Means.
    precisions_cholesky : array (k, d, d)
        Cholesky factors of the precisions.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.inference.cecib import log_weighted_densities
    >>> with jax.enable_x64(True):
    ...     s = log_weighted_densities(np.zeros((1, 2)), np.array([0.5, 0.5]),
    ...                                np.array([[0.0, 0.0], [5.0, 5.0]]), np.stack([np.eye(2)] * 2))
    >>> int(np.argmax(s, 1)[0])
    0
    """
    score = _log_gaussian_prob(np.asarray(x), np.asarray(means), np.asarray(precisions_cholesky))
    return score + np.log(weights)


@jax.jit
def _map_estimate(stats, rho):
    d = stats[1].shape[1]
    dt = stats[1].dtype
    ridge = families.NIWPrior(
        jnp.ones((), dt),
        jnp.zeros(d, dt),
        jnp.zeros((), dt),
        jnp.asarray(-(d + 2.0), dt),
        rho * jnp.eye(d, dtype=dt),
    )
    return families.gaussian_map_estimate(stats, "full", 0.0, ridge)


_log_gaussian_prob = rowwise(partial(families.log_gaussian_prob, cov_type="full"))
