r"""Matplotlib figures: data with links, partitions, posterior summaries, cost traces, benefit curves.
The module is kept whole: every figure follows the conventions below and shares the colour and
projection helpers.

Conventions (shared by every function here):

* **The backend is the user's.** Importing this module never calls ``matplotlib.use``; in Jupyter the
  inline backend keeps working for ppclust's figures and the user's own.
* Every plotting function takes an optional ``ax`` (a grid function: an optional ``fig``) and returns
  what it drew on: a ``matplotlib.axes.Axes`` (or an array of them). Without ``ax`` a new figure is
  made with :mod:`matplotlib.pyplot`, so that notebooks show it; ``plt.show`` is never called.
* :func:`render` draws on a stand-alone :class:`matplotlib.figure.Figure` that pyplot does not
  manage (no backend, no GUI window); the CLI and ``ppclust demo`` save figures this way.
* Everything drawn is labelled: axis labels (the explained variance of a principal-component
  projection), a legend for clusters and one for link types (may-link solid, may-not-link dashed;
  a uniform sample when there are more than ``max_links``), colour bars with their quantity.

The quantities plotted are computed elsewhere (:mod:`ppclust.metrics`, :mod:`ppclust.posterior`, the
estimators' ``*_trace_`` attributes); the only formula defined here is the per-point uncertainty of
:func:`point_uncertainty`, the co-clustering analogue of mclust's :math:`1 - \max_k z_{ik}`.
"""

from __future__ import annotations

import colorsys
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "project_2d",
    "pca_2d",
    "cluster_colors",
    "match_labels",
    "scatter_partition",
    "plot_data_links",
    "plot_partitions",
    "plot_psm",
    "plot_trace",
    "point_uncertainty",
    "plot_uncertainty",
    "plot_k_posterior",
    "plot_cost_trace",
    "plot_benefit",
    "plot_stability",
    "render",
    "save_fit_figures",
]

#: Colour of points without a label (``-1``) and of noise.
UNLABELLED_COLOR = (0.72, 0.72, 0.72, 1.0)
#: Order of tab20's light colours after its dark ones in :func:`cluster_colors` (light grey first, after
#: dark cyan; found by a search maximising the smallest hue step between neighbours).
_LIGHT_ORDER = (7, 1, 9, 8, 4, 5, 0, 3, 2, 6)
#: Clusters listed by name in a legend; beyond this the legend gives only their number.
MAX_LEGEND_CLUSTERS = 12


def pca_2d(X) -> tuple[np.ndarray, np.ndarray | None]:
    """First two principal components of ``X`` and the fraction of variance each explains.

    Returns ``(X2, ratio)``: ``X2`` of shape (n, 2); ``ratio`` of shape (2,) when a projection was made
    (d > 2), else ``None`` (d <= 2: the data itself, a zero second column when d = 1).

    Parameters
    ----------
    X : array of shape (n, d)
        The data.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import pca_2d
    >>> X2, ratio = pca_2d(np.random.default_rng(0).normal(size=(20, 4)))
    >>> X2.shape, ratio.shape
    ((20, 2), (2,))
    """
    X = np.asarray(X, dtype=float)
    if X.ndim != 2:
        raise ValueError(f"`X` must be 2-D of shape (n_samples, n_features), got shape {X.shape}.")
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))]), None
    if X.shape[1] == 2:
        return X, None
    Xc = X - X.mean(0)
    _, s, vt = np.linalg.svd(Xc, full_matrices=False)
    total = float(np.sum(s**2))
    ratio = s[:2] ** 2 / total if total > 0 else np.zeros(2)
    return Xc @ vt[:2].T, ratio


def project_2d(X) -> np.ndarray:
    """First two principal components (or the data itself when d <= 2); see :func:`pca_2d`.

    Parameters
    ----------
    X : array of shape (n, d)
        The data.

    Returns
    -------
    X2 : ndarray of shape (n, 2)

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import project_2d
    >>> project_2d(np.ones((5, 3))).shape
    (5, 2)
    """
    return pca_2d(X)[0]


def cluster_colors(n: int) -> np.ndarray:
    """``n`` RGBA colours in which neighbouring cluster ids differ clearly.

    Up to 10: ``tab10``. Up to 20: the ten saturated ``tab20`` colours, then their ten light partners
    in an order chosen so that no two neighbours share a hue (``tab20`` itself pairs each colour with
    its light shade at neighbouring ids). Beyond: hues stepped by
    the golden angle (137.5 degrees) with alternating lightness, so ids ``k`` and ``k + 1`` never share a
    hue family.

    Parameters
    ----------
    n : int
        Number of colours.

    Returns
    -------
    colors : ndarray of shape (n, 4)
        RGBA rows.

    Examples
    --------
    >>> from ppclust.plot import cluster_colors
    >>> cluster_colors(25).shape
    (25, 4)
    """
    from matplotlib import colormaps

    if n <= 10:
        return _rgba(np.asarray(colormaps["tab10"].colors)[:n])
    if n <= 20:
        c = np.asarray(colormaps["tab20"].colors)
        light = c[1::2][list(_LIGHT_ORDER)]
        return _rgba(np.concatenate([c[0::2], light])[:n])
    golden = 137.508 / 360.0
    rgb = [colorsys.hls_to_rgb((k * golden) % 1.0, 0.45 if k % 2 == 0 else 0.62, 0.75) for k in range(n)]
    return _rgba(np.asarray(rgb))


def match_labels(reference, labels) -> np.ndarray:
    """Relabel ``labels`` so that clusters share colours with the reference classes they overlap most
    (Hungarian matching on :func:`ppclust.metrics.contingency`); unmatched clusters get fresh ids after
    the reference's.

    Parameters
    ----------
    reference : int array of shape (n,)
        The labels whose colours are kept (e.g. the truth).
    labels : int array of shape (n,)
        The labels to rename.

    Returns
    -------
    matched : int ndarray of shape (n,)

    Examples
    --------
    >>> from ppclust.plot import match_labels
    >>> match_labels([0, 0, 1, 1], [1, 1, 0, 2]).tolist()
    [0, 0, 1, 2]
    """
    from scipy.optimize import linear_sum_assignment

    from ppclust.metrics import contingency

    table = contingency(reference, labels)  # (reference classes, clusters)
    _, lab = np.unique(np.asarray(labels), return_inverse=True)
    classes, clusters = linear_sum_assignment(table, maximize=True)
    new = np.empty(table.shape[1], int)
    new[clusters] = classes
    rest = np.setdiff1d(np.arange(table.shape[1]), clusters)
    new[rest] = table.shape[0] + np.arange(len(rest))
    return new[lab]


def scatter_partition(
    ax,
    X2,
    labels,
    *,
    must_link=None,
    cannot_link=None,
    title=None,
    max_links=400,
    legend=True,
    seed=0,
    point_size=14,
):
    """Points of a 2-D embedding coloured by cluster, with may-links and may-not-links.

    Parameters
    ----------
    ax : matplotlib Axes
        Where to draw.
    X2 : array of shape (n, 2)
        The embedding.
    labels : int array of shape (n,)
        Cluster of each point; ``-1`` = unlabelled (grey).
    must_link, cannot_link : int array of shape (n_pairs, 2), optional
        Drawn as solid green (may-link) and dashed red (may-not-link) segments. When a type has more than
        ``max_links`` pairs, a uniform sample of ``max_links`` (``seed``) is drawn and the legend says how
        many of how many are shown.
    title : str, optional
        Title of the axes.
    max_links : int, default 400
        Largest number of links drawn per type.
    legend : bool, default True
        A legend of the clusters (their number beyond ``MAX_LEGEND_CLUSTERS``) and of the link types.
    seed : int, default 0
        Seed of the sample of links.
    point_size : float, default 14
        Marker size.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from matplotlib.figure import Figure
    >>> from ppclust.plot import scatter_partition
    >>> ax = Figure().add_subplot()
    >>> X2 = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> scatter_partition(ax, X2, np.array([0, 0, 1, -1]), must_link=np.array([[0, 1]])) is ax
    True
    """
    from matplotlib.collections import LineCollection
    from matplotlib.lines import Line2D

    X2 = np.asarray(X2, dtype=float)
    labels = np.asarray(labels)
    if labels.shape != (len(X2),):
        raise ValueError(f"`labels` must have shape ({len(X2)},) to match the points, got {labels.shape}.")
    rng = np.random.default_rng(seed)
    handles = []
    styles = (
        ("may-link", must_link, dict(color="tab:green", lw=0.7, alpha=0.55, linestyle="-")),
        ("may-not-link", cannot_link, dict(color="tab:red", lw=0.6, alpha=0.45, linestyle="--")),
    )
    for name, pairs, style in styles:
        if pairs is None or len(pairs) == 0:
            continue
        pairs = np.asarray(pairs, dtype=int).reshape(-1, 2)
        total = len(pairs)
        if total > max_links:
            pairs = pairs[np.sort(rng.choice(total, size=max_links, replace=False))]
        segments = X2[pairs]  # (m, 2 ends, 2 coordinates)
        ax.add_collection(LineCollection(segments, zorder=1, label=name, **style))
        text = f"{name} ({total})" if len(pairs) == total else f"{name} ({len(pairs)} of {total} shown)"
        handles.append(Line2D([], [], label=text, **style))
    ids = np.unique(labels[labels >= 0])
    palette = cluster_colors(max(len(ids), 1))
    index = np.searchsorted(ids, labels)
    colors = np.where(
        (labels >= 0)[:, None],
        palette[np.minimum(index, len(ids) - 1) if len(ids) else 0],
        np.asarray(UNLABELLED_COLOR),
    )
    ax.scatter(X2[:, 0], X2[:, 1], c=colors, s=point_size, edgecolors="none", zorder=2)
    ax.autoscale_view()
    if title:
        ax.set_title(title, fontsize=9)
    if legend:
        marker = dict(marker="o", linestyle="", markersize=5)
        cluster_handles = []
        if len(ids) <= MAX_LEGEND_CLUSTERS:
            cluster_handles = [
                Line2D([], [], color=palette[k], label=f"cluster {v}", **marker) for k, v in enumerate(ids)
            ]
        else:
            cluster_handles = [Line2D([], [], color=palette[0], label=f"{len(ids)} clusters", **marker)]
        if (labels < 0).any():
            cluster_handles.append(Line2D([], [], color=UNLABELLED_COLOR, label="unlabelled", **marker))
        ax.legend(handles=cluster_handles + handles, fontsize=7, loc="best", framealpha=0.8)
    return ax


def plot_data_links(
    X,
    y,
    must_link=None,
    cannot_link=None,
    title="data and side information",
    *,
    ax=None,
    max_links=400,
    legend=True,
):
    """Data (first two principal components when d > 2) coloured by ``y``, may-links solid, may-not-links
    dashed (:func:`scatter_partition`); the axes name the components and the variance they explain.

    Parameters
    ----------
    X : array of shape (n, d)
        The data.
    y : int array of shape (n,)
        Colours (labels; ``-1`` = unlabelled, grey).
    must_link, cannot_link : int array of shape (m, 2), optional
        May-links and may-not-links.
    title : str, default "data and side information"
        Title of the axes.
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    max_links : int, default 400
        Largest number of links drawn per type (a uniform sample beyond).
    legend : bool, default True
        Legends of the clusters and the link types.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_data_links
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> plot_data_links(X, [0, 0, 1, 1], must_link=[[0, 1]], cannot_link=[[1, 2]], ax=ax) is ax
    True
    """
    X2, ratio = pca_2d(X)
    ax = _axes(ax, (5.2, 4.6))
    scatter_partition(
        ax,
        X2,
        y,
        must_link=must_link,
        cannot_link=cannot_link,
        title=title,
        max_links=max_links,
        legend=legend,
    )
    _label_projection(ax, ratio)
    return ax


def plot_partitions(
    X, partitions: dict[str, np.ndarray], ncols: int = 4, match: bool = True, *, fig=None, legend=False
):
    """One panel per named partition, on the same 2-D projection; with ``match`` the colours of
    every partition follow the first one (e.g. the truth) through :func:`match_labels`.

    Returns an array of Axes of shape (nrows, ncols) (unused panels switched off). The cluster legend
    is drawn on the first panel (with ``match``) or on every panel (``legend=True``).

    Parameters
    ----------
    X : array of shape (n, d)
        The data (projected with :func:`project_2d`).
    partitions : dict of str to int array of shape (n,)
        Named partitions, one panel each, in order.
    ncols : int, default 4
        Panels per row.
    match : bool, default True
        Colour every partition after the first one through :func:`match_labels`.
    fig : matplotlib Figure, optional
        Where to draw; default a new pyplot figure.
    legend : bool, default False
        A cluster legend on every panel.

    Examples
    --------
    >>> import numpy as np
    >>> from matplotlib.figure import Figure
    >>> from ppclust.plot import plot_partitions
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> plot_partitions(X, {"truth": [0, 0, 1, 1], "fit": [1, 1, 0, 0]}, ncols=2, fig=Figure()).shape
    (1, 2)
    """
    X2, ratio = pca_2d(X)
    if match and partitions:
        ref = next(iter(partitions.values()))
        partitions = {k: match_labels(ref, v) for k, v in partitions.items()}
    n = max(len(partitions), 1)
    ncols = min(ncols, n)
    nrows = int(np.ceil(n / ncols))
    if fig is None:
        import matplotlib.pyplot as plt

        fig = plt.figure(figsize=(3.2 * ncols, 3.0 * nrows), layout="constrained")
    axes = np.asarray(fig.subplots(nrows, ncols, squeeze=False))
    for i, (ax, (name, lab)) in enumerate(zip(axes.ravel(), partitions.items(), strict=False)):
        # matched colours mean the same thing in every panel: one legend, on the first, is enough
        scatter_partition(
            ax, X2, lab, title=f"{name} (K={len(np.unique(lab))})", legend=legend or (match and i == 0)
        )
        _label_projection(ax, ratio, fontsize=7)
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    return axes


def plot_psm(psm, order_by=None, title="posterior similarity matrix", *, ax=None, boundaries=True):
    r"""Co-clustering heatmap :math:`P(z_i = z_j \mid \text{data})`, rows and columns ordered by a point
    estimate ``order_by`` (its clusters become diagonal blocks, outlined when ``boundaries``).

    Parameters
    ----------
    psm : array of shape (n, n)
        Posterior similarity matrix (:func:`ppclust.posterior.similarity_matrix`).
    order_by : int array of shape (n,), optional
        A point estimate whose clusters order the rows and columns.
    title : str, default "posterior similarity matrix"
        Title of the axes.
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    boundaries : bool, default True
        Outline the clusters of ``order_by``.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_psm
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> plot_psm(np.eye(3), order_by=[0, 1, 1], ax=ax) is ax
    True
    """
    psm = np.asarray(psm, dtype=float)
    if psm.ndim != 2 or psm.shape[0] != psm.shape[1]:
        raise ValueError(f"`psm` must be a square (n, n) matrix, got shape {psm.shape}.")
    ax = _axes(ax, (5.0, 4.3))
    if order_by is not None:
        order_by = np.asarray(order_by)
        if order_by.shape != (len(psm),):
            raise ValueError(f"`order_by` must have shape ({len(psm)},), got {order_by.shape}.")
        order = np.argsort(order_by, kind="stable")
    else:
        order = np.arange(len(psm))
    im = ax.imshow(psm[np.ix_(order, order)], vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    ax.figure.colorbar(im, ax=ax, shrink=0.8, label=r"$P(z_i = z_j \mid \mathrm{data})$")
    if order_by is not None and boundaries:
        sizes = np.unique(order_by, return_counts=True)[1]
        for edge in np.cumsum(sizes)[:-1]:
            ax.axhline(edge - 0.5, color="white", lw=0.6)
            ax.axvline(edge - 0.5, color="white", lw=0.6)
    which = "point estimate" if order_by is not None else "index"
    ax.set_xlabel(f"point j (ordered by {which})")
    ax.set_ylabel(f"point i (ordered by {which})")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=9)
    return ax


def plot_trace(values, name: str = "number of clusters", *, ax=None):
    """Trace per chain of a scalar of shape (chains, draws) (or (draws,)).

    Parameters
    ----------
    values : array of shape (chains, draws) or (draws,)
        The scalar per draw.
    name : str
        Its name (the y label).
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_trace
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> plot_trace(np.array([[2, 3, 3], [3, 3, 2]]), "K", ax=ax) is ax
    True
    """
    values = np.atleast_2d(np.asarray(values))
    ax = _axes(ax, (6.0, 2.6))
    for c, v in enumerate(values):
        ax.plot(v, lw=0.8, label=f"chain {c}")
    ax.set_xlabel("draw")
    ax.set_ylabel(name)
    if len(values) > 1:
        ax.legend(fontsize=7)
    return ax


def point_uncertainty(labels, *, psm=None, proba=None) -> np.ndarray:
    r"""Per-point classification uncertainty, as mclust's ``uncertainty`` (:math:`1 - \max_k z_{ik}`).

    From a mixture's responsibilities ``proba`` (n, K): :math:`u_i = 1 - \max_k z_{ik}`.

    From a posterior similarity matrix ``psm`` and a point estimate ``labels`` (clusters :math:`C_k`):
    :math:`u_i = 1 - \max_k \frac{1}{|C_k \setminus \{i\}|} \sum_{j \in C_k \setminus \{i\}}
    P(z_i = z_j \mid \text{data})`, one minus the highest mean co-clustering probability of point
    :math:`i` with a cluster of the estimate. A singleton :math:`\{i\}` of the estimate has no other
    member: its own score is taken as :math:`1 - m_i`, with :math:`m_i` the highest mean co-clustering
    probability with another cluster, so :math:`u_i = \min(m_i, 1 - m_i)`. Values lie in [0, 1]; 0 means
    the point always sits with one cluster of the estimate. Cost O(n^2 K) on the given (n, n) matrix.

    Parameters
    ----------
    labels : int array of shape (n,)
        The point estimate (ignored with ``proba``).
    psm : array of shape (n, n), optional
        Posterior similarity matrix.
    proba : array of shape (n, K), optional
        A mixture's responsibilities; give ``psm`` or ``proba``.

    Returns
    -------
    uncertainty : ndarray of shape (n,)

    References
    ----------
    L. Scrucca, M. Fop, T. B. Murphy and A. E. Raftery, "mclust 5", The R Journal 8 (2016).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import point_uncertainty
    >>> point_uncertainty(None, proba=np.array([[0.9, 0.1], [0.5, 0.5]])).round(2).tolist()
    [0.1, 0.5]
    """
    if (psm is None) == (proba is None):
        raise ValueError("point_uncertainty needs exactly one of `psm` (with `labels`) or `proba`.")
    if proba is not None:
        proba = np.asarray(proba, dtype=float)
        if proba.ndim != 2:
            raise ValueError(f"`proba` must have shape (n, n_clusters), got {proba.shape}.")
        return 1.0 - proba.max(axis=1)
    psm = np.asarray(psm, dtype=float)
    labels = np.asarray(labels)
    n = len(labels)
    if psm.shape != (n, n):
        raise ValueError(f"`psm` must have shape (n, n) = ({n}, {n}) to match `labels`, got {psm.shape}.")
    ids, code = np.unique(labels, return_inverse=True)
    onehot = np.zeros((n, len(ids)))
    onehot[np.arange(n), code] = 1.0
    sums = psm @ onehot  # (n, K): sum_j in C_k psm_ij, own cluster includes psm_ii
    sizes = onehot.sum(0)[None, :] - onehot  # |C_k \ {i}|
    sums = sums - onehot * np.diag(psm)[:, None]
    mean = np.where(sizes > 0, sums / np.maximum(sizes, 1), 0.0)
    alone = sizes[np.arange(n), code] == 0  # singleton of the estimate: sure of itself unless pulled away
    mean[alone, code[alone]] = 1.0 - np.max(np.where(sizes[alone] > 0, mean[alone], 0.0), axis=1, initial=0.0)
    return np.clip(1.0 - mean.max(axis=1), 0.0, 1.0)


def plot_uncertainty(X, labels, uncertainty, *, ax=None, title="classification uncertainty", top=None):
    """mclust-style uncertainty plot: the points of the 2-D projection, coloured and sized by their
    uncertainty (:func:`point_uncertainty`); the ``top`` most uncertain points (default: those above
    the 90th percentile, at most 20) are circled.

    Parameters
    ----------
    X : array of shape (n, d)
        The data.
    labels : int array of shape (n,)
        The point estimate.
    uncertainty : array of shape (n,)
        Per-point uncertainty (:func:`point_uncertainty`).
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    title : str, default "classification uncertainty"
        Title of the axes.
    top : int, optional
        Number of points circled.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_uncertainty
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> plot_uncertainty(X, [0, 0, 1, 1], np.array([0.0, 0.2, 0.1, 0.4]), ax=ax) is ax
    True
    """
    X2, ratio = pca_2d(X)
    u = np.asarray(uncertainty, dtype=float)
    if u.shape != (len(X2),):
        raise ValueError(f"`uncertainty` must have shape ({len(X2)},), got {u.shape}.")
    ax = _axes(ax, (5.4, 4.6))
    size = 8 + 60 * (u / max(float(u.max()), 1e-12))
    sc = ax.scatter(
        X2[:, 0],
        X2[:, 1],
        c=u,
        s=size,
        cmap="magma_r",
        vmin=0,
        vmax=max(float(u.max()), 1e-12),
        edgecolors="none",
        zorder=2,
    )
    ax.figure.colorbar(sc, ax=ax, shrink=0.8, label=r"uncertainty $1 - \max_k P(i \in C_k)$")
    if top is None:
        top = int(min(20, np.sum(u > np.quantile(u, 0.9)))) if u.max() > 0 else 0
    if top:
        idx = np.argsort(-u, kind="stable")[:top]
        ax.scatter(
            X2[idx, 0],
            X2[idx, 1],
            s=size[idx] + 40,
            facecolors="none",
            edgecolors="black",
            linewidths=0.7,
            zorder=3,
            label=f"{top} most uncertain",
        )
        ax.legend(fontsize=7, loc="best")
    _label_projection(ax, ratio)
    ax.set_title(f"{title} (K={len(np.unique(labels))})", fontsize=9)
    return ax


def plot_k_posterior(n_clusters, *, ax=None, title="posterior of the number of clusters"):
    r"""Bar chart of :math:`P(K = k \mid \text{data})` from draws of the number of clusters (any shape,
    e.g. (chains, draws)), with the number of draws on the title.

    Parameters
    ----------
    n_clusters : int array
        Draws of the number of clusters.
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    title : str, optional
        Title of the axes.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_k_posterior
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> plot_k_posterior(np.array([2, 3, 3, 3]), ax=ax) is ax
    True
    """
    k = np.asarray(n_clusters).ravel().astype(int)
    if k.size == 0:
        raise ValueError("`n_clusters` holds no draws.")
    values, counts = np.unique(k, return_counts=True)
    ax = _axes(ax, (4.6, 3.0))
    ax.bar(values, counts / k.size, width=0.8, color="tab:blue", label="posterior")
    ax.set_xticks(values)
    ax.set_xlabel("number of clusters K")
    ax.set_ylabel("posterior probability")
    ax.set_title(f"{title} ({k.size} draws)", fontsize=9)
    ax.set_ylim(0, 1.05)
    return ax


#: Trace attributes of the deterministic estimators, in the order looked up by :func:`plot_cost_trace`:
#: (attribute, y label, x label).
TRACE_ATTRIBUTES = (
    ("cost_trace_", "cost", "pass"),
    ("objective_trace_", "objective", "iteration"),
    ("annealing_trace_", "objective", "temperature step"),
    ("trace_", "objective", "iteration"),
)


def plot_cost_trace(trace, *, ax=None, label=None, ylabel="cost", xlabel="iteration", title=None):
    """Cost (or objective) per iteration of a deterministic solver.

    ``trace`` is an array (one run), a dict of named arrays (one line each), or a fitted estimator whose
    trace attribute is found in ``TRACE_ATTRIBUTES`` (``C3L.cost_trace_``, ``DPMeans``/``RDPMeans``
    ``objective_trace_``, ``CCIB.annealing_trace_["objective"]``, ``SemiSupervisedGMM.trace_``).

    Parameters
    ----------
    trace : array, dict of str to array, or fitted estimator
        The values per iteration.
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    label : str, optional
        Legend entry of a single trace.
    ylabel : str, default "cost"
        The y label (an estimator's attribute sets its own).
    xlabel : str, default "iteration"
        The x label (an estimator's attribute sets its own).
    title : str, optional
        Title of the axes.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_cost_trace
    >>> from matplotlib.figure import Figure
    >>> ax = Figure().add_subplot()
    >>> plot_cost_trace(np.array([5.0, 3.0, 2.5]), ax=ax) is ax
    True
    """
    if not isinstance(trace, (np.ndarray, list, tuple, dict)):
        est = trace
        for attr, ylab, xlab in TRACE_ATTRIBUTES:
            value = getattr(est, attr, None)
            if value is not None:
                trace, ylabel, xlabel = value, ylab, xlab
                if isinstance(trace, dict):
                    trace = trace.get("objective", trace)
                label = label or type(est).__name__
                break
        else:
            found = ", ".join(a for a, _, _ in TRACE_ATTRIBUTES)
            raise TypeError(
                f"{type(est).__name__} has no cost trace: expected a fitted estimator with one "
                f"of {found}, an array or a dict of arrays."
            )
    series = trace if isinstance(trace, dict) else {label: trace}
    ax = _axes(ax, (5.0, 3.0))
    for name, values in series.items():
        values = np.asarray(values, dtype=float).ravel()
        values = values[np.isfinite(values)]
        ax.plot(np.arange(len(values)), values, marker="o", markersize=2.5, lw=1.0, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    if any(name is not None for name in series):
        ax.legend(fontsize=7)
    return ax


def plot_benefit(
    amounts,
    scores,
    *,
    ax=None,
    xlabel="number of links",
    ylabel="NMI",
    title=None,
    baseline=None,
    errorbars=False,
):
    """Score (NMI by default) against the amount of side information, one line per method.

    Parameters
    ----------
    amounts : array of shape (m,)
        Amounts of side information (links, labelled fraction, ...).
    scores : dict of method name -> array of shape (m,) or (m, n_repeats)
        Repeats are summarised by their mean with a band of +- one standard deviation; NaN marks a
        missing repeat (means and sds over those present).
    ax : matplotlib Axes, optional
        Where to draw; default a new pyplot figure.
    xlabel : str, default "number of links"
        The x label.
    ylabel : str, default "NMI"
        The y label.
    title : str, optional
        Title of the axes.
    baseline : dict of name -> float, optional
        Horizontal reference lines (e.g. the method without side information).
    errorbars : bool, default False
        Show the +- one standard deviation of the repeats as error bars instead of a band.

    Returns
    -------
    ax : matplotlib Axes

    Examples
    --------
    >>> import numpy as np
    >>> from matplotlib.figure import Figure
    >>> from ppclust.plot import plot_benefit
    >>> ax = Figure().add_subplot()
    >>> scores = {"TVClust": np.array([[0.5, 0.6], [0.7, 0.8]])}
    >>> plot_benefit(np.array([10, 20]), scores, ax=ax, baseline={"DP-means": 0.4}) is ax
    True
    """
    amounts = np.asarray(amounts, dtype=float)
    ax = _axes(ax, (5.2, 3.4))
    for name, values in scores.items():
        values = np.asarray(values, dtype=float)
        if values.shape[0] != len(amounts):
            raise ValueError(
                f"scores[{name!r}] has {values.shape[0]} rows, but there are {len(amounts)} "
                "amounts; give one row per amount."
            )
        with warnings.catch_warnings():  # an all-NaN row (no repeat at that amount) stays NaN
            warnings.simplefilter("ignore", RuntimeWarning)
            mean = np.nanmean(values, axis=1) if values.ndim == 2 else values
            sd = np.nanstd(values, axis=1) if values.ndim == 2 else None
        if errorbars and values.ndim == 2 and values.shape[1] > 1:
            ax.errorbar(amounts, mean, yerr=sd, marker="o", markersize=3.5, capsize=2.5, lw=1.2, label=name)
            continue
        (line,) = ax.plot(amounts, mean, marker="o", markersize=3.5, label=name)
        if values.ndim == 2 and values.shape[1] > 1:
            ax.fill_between(amounts, mean - sd, mean + sd, color=line.get_color(), alpha=0.2, lw=0)
    for name, value in (baseline or {}).items():
        ax.axhline(value, color="grey", lw=0.8, ls=":", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    return ax


def plot_stability(report, *, ax=None):
    """Runs of a stability report: the number of clusters of each run and the ARI between runs.

    Left: each run's point estimate's K (cross) and, for samplers, the posterior mean of K with its 95%
    interval (dot and bar). Right: the pairwise ARI of the runs' point estimates (colour bar). The title
    is the report's verdict up to its first colon (stable, unstable, prior-sensitive).

    Parameters
    ----------
    report : StabilityReport
        The result of :func:`ppclust.stability.stability_report`.
    ax : matplotlib Axes or sequence of two Axes, optional
        One Axes: the K panel only; two: both panels; default a new pyplot figure with both.

    Returns
    -------
    matplotlib Axes, or ndarray of two Axes

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import DPMeans
    >>> from ppclust.plot import plot_stability
    >>> from ppclust.stability import stability_report
    >>> from matplotlib.figure import Figure
    >>> X = np.r_[np.zeros((8, 2)), np.full((8, 2), 6.0)] + np.random.default_rng(0).normal(size=(16, 2))
    >>> rep = stability_report(DPMeans(), X, seeds=(0, 1))
    >>> axes = plot_stability(rep, ax=Figure().subplots(1, 2))
    >>> axes[0].get_ylabel()
    'number of clusters K'
    """
    if ax is None:
        import matplotlib.pyplot as plt

        _, ax = plt.subplots(1, 2, figsize=(9.0, 3.4), layout="constrained")
    axes = np.ravel(np.asarray(ax, dtype=object))
    names = report.labels
    x = np.arange(len(names))
    k_ax = axes[0]
    k_ax.scatter(x, report.n_clusters, marker="x", color="black", zorder=3, label="point estimate")
    has = np.isfinite(report.k_mean)
    if has.any():  # the interval as a bar: a mean may lie outside its quantiles when K barely moves
        k_ax.vlines(x[has], report.k_low[has], report.k_high[has], color="tab:blue", lw=2, alpha=0.6)
        k_ax.scatter(x[has], report.k_mean[has], color="tab:blue", label="posterior mean, 95% interval")
    k_ax.set_xticks(x, names, rotation=30, ha="right", fontsize=7)
    k_ax.set_xlabel("run")
    k_ax.set_ylabel("number of clusters K")
    k_ax.legend(fontsize=7)
    k_ax.set_title(report.verdict.split(":")[0], fontsize=9)
    if axes.size > 1:
        a_ax = axes[1]
        im = a_ax.imshow(report.ari, vmin=min(0.0, float(np.min(report.ari))), vmax=1.0, cmap="viridis")
        a_ax.set_xticks(x, names, rotation=30, ha="right", fontsize=7)
        a_ax.set_yticks(x, names, fontsize=7)
        a_ax.set_xlabel("run")
        a_ax.set_ylabel("run")
        a_ax.set_title("ARI between point estimates", fontsize=9)
        a_ax.figure.colorbar(im, ax=a_ax, label="adjusted Rand index")
        return axes
    return k_ax


def render(plot_fn, *args, figsize=(5.2, 4.4), dpi=100, **kwargs):
    """Draw ``plot_fn(*args, ax=..., **kwargs)`` on a stand-alone Figure that pyplot does not manage.

    For scripts and the CLI: no backend is selected, no window opens, nothing is left in pyplot's
    figure list; save the result with ``render(...).savefig(path)``. Grid functions
    (:func:`plot_partitions`) receive ``fig=`` instead of ``ax=``.

    Parameters
    ----------
    plot_fn : callable
        A plotting function of this module.
    *args
        Its positional arguments.
    figsize : (float, float), default (5.2, 4.4)
        Figure size in inches.
    dpi : int, default 100
        Figure resolution.
    **kwargs
        Its keyword arguments.

    Returns
    -------
    fig : matplotlib Figure

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.plot import plot_k_posterior, render
    >>> type(render(plot_k_posterior, np.array([2, 3, 3]))).__name__
    'Figure'
    """
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, dpi=dpi, layout="constrained")
    if plot_fn is plot_partitions:
        plot_fn(*args, fig=fig, **kwargs)
    else:
        plot_fn(*args, ax=fig.add_subplot(), **kwargs)
    return fig


def save_fit_figures(est, X, out, must_link=None, cannot_link=None, **_) -> list[Path]:
    """Figures written by ``ppclust fit``: the partition (with links) and, for samplers, the PSM, the
    trace and posterior of the number of clusters; for deterministic solvers with a trace, the cost
    trace. Drawn with :func:`render` (pyplot's backend and figure list are left alone).

    Parameters
    ----------
    est : fitted estimator
        Its ``labels_`` and, where present, posterior draws or trace are drawn.
    X : array of shape (n, d)
        The data it was fitted on.
    out : str or Path
        Folder to write the PNG files into.
    must_link, cannot_link : int array of shape (m, 2), optional
        The links it was given (drawn on the partition).

    Returns
    -------
    paths : list of Path
        The files written.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from ppclust import DPMeans
    >>> from ppclust.plot import save_fit_figures
    >>> X = np.array([[0.0, 0.0], [0.1, 0.2], [3.0, 3.0], [3.1, 2.9]])
    >>> est = DPMeans(random_state=0).fit(X)
    >>> [p.suffix for p in save_fit_figures(est, X, tempfile.mkdtemp())][:1]
    ['.png']
    """
    out = Path(out)
    jobs = [
        (
            "partition.png",
            (plot_data_links, X, est.labels_, must_link, cannot_link),
            dict(title=f"{type(est).__name__} partition"),
        )
    ]
    psm = getattr(est, "psm_", None)
    if psm is not None:
        jobs.append(("psm.png", (plot_psm, psm, est.labels_), {}))
    post = getattr(est, "posterior_", None)
    if post is not None:
        try:
            k = np.asarray(post["posterior"]["n_clusters"])
        except (KeyError, TypeError):
            k = None
        if k is not None:
            jobs.append(("trace_n_clusters.png", (plot_trace, k), dict(figsize=(6.0, 2.6))))
            jobs.append(("posterior_n_clusters.png", (plot_k_posterior, k), dict(figsize=(4.6, 3.0))))
    elif any(getattr(est, a, None) is not None for a, _, _ in TRACE_ATTRIBUTES):
        jobs.append(("cost_trace.png", (plot_cost_trace, est), dict(figsize=(5.0, 3.0))))
    paths = []
    for name, (fn, *args), kw in jobs:
        figsize = kw.pop("figsize", (5.2, 4.6))
        fig = render(fn, *args, figsize=figsize, **kw)
        paths.append(out / name)
        fig.savefig(paths[-1], dpi=110)
    return paths


# --- helpers ---


def _rgba(rgb) -> np.ndarray:
    rgb = np.asarray(rgb, dtype=float).reshape(-1, 3)
    return np.column_stack([rgb, np.ones(len(rgb))])


def _axes(ax, figsize):
    """``ax`` itself, or the axes of a new pyplot figure (shown by Jupyter's inline backend)."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _label_projection(ax, ratio, fontsize=8):
    """Axis labels of a 2-D embedding: principal components with their explained variance."""
    if ratio is None:
        ax.set_xlabel("feature 1", fontsize=fontsize)
        ax.set_ylabel("feature 2", fontsize=fontsize)
    else:
        ax.set_xlabel(f"PC1 ({100 * ratio[0]:.1f}% of variance)", fontsize=fontsize)
        ax.set_ylabel(f"PC2 ({100 * ratio[1]:.1f}% of variance)", fontsize=fontsize)
    ax.tick_params(labelsize=6)
