"""Matplotlib figures: data with links, partitions, posterior summaries.

Functions take arrays (not estimators) where they can, return the matplotlib ``Figure`` and never
call ``plt.show``; ``save_fit_figures`` is what ``ppclust fit`` writes next to its labels.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def project_2d(X: np.ndarray) -> np.ndarray:
    """First two principal components (or the data itself when d <= 2)."""
    X = np.asarray(X, dtype=float)
    if X.shape[1] == 1:
        return np.column_stack([X[:, 0], np.zeros(len(X))])
    if X.shape[1] == 2:
        return X
    Xc = X - X.mean(0)
    _, _, vt = np.linalg.svd(Xc, full_matrices=False)
    return Xc @ vt[:2].T


def scatter_partition(ax, X2, labels, *, must_link=None, cannot_link=None, title=None, max_links=400):
    """Points coloured by cluster; may-links as green lines, may-not-links as dashed red lines."""
    labels = np.asarray(labels)
    for pairs, style in ((must_link, dict(color="tab:green", lw=0.6, alpha=0.5)),
                         (cannot_link, dict(color="tab:red", lw=0.5, alpha=0.4, ls="--"))):
        if pairs is not None and len(pairs):
            pairs = np.asarray(pairs)[:max_links]
            for i, j in pairs:
                ax.plot(X2[[i, j], 0], X2[[i, j], 1], **style, zorder=1)
    cmap = plt.get_cmap("tab20")
    uniq = {v: k for k, v in enumerate(np.unique(labels))}
    colors = [cmap(uniq[v] % 20) if v >= 0 else (0.7, 0.7, 0.7, 1.0) for v in labels]
    ax.scatter(X2[:, 0], X2[:, 1], c=colors, s=12, edgecolors="none", zorder=2)
    ax.set_xticks([])
    ax.set_yticks([])
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def plot_data_links(X, y, must_link=None, cannot_link=None, title="data and side information"):
    """Data (first two principal components) coloured by ``y``, may-links solid, may-not-links dashed."""
    fig, ax = plt.subplots(figsize=(5, 4.5), constrained_layout=True)
    scatter_partition(ax, project_2d(X), y, must_link=must_link, cannot_link=cannot_link, title=title)
    return fig


def match_labels(reference, labels) -> np.ndarray:
    """Relabel ``labels`` so that clusters share colours with the reference classes they overlap most
    (Hungarian matching on :func:`ppclust.metrics.contingency`); unmatched clusters get fresh ids after
    the reference's."""
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


def plot_partitions(X, partitions: dict[str, np.ndarray], ncols: int = 4, match: bool = True):
    """One panel per named partition, on the same 2-D projection; with ``match`` the colours of
    every partition follow the first one (e.g. the truth) through :func:`match_labels`."""
    X2 = project_2d(X)
    if match and partitions:
        ref = next(iter(partitions.values()))
        partitions = {k: match_labels(ref, v) for k, v in partitions.items()}
    n = max(len(partitions), 1)
    ncols = min(ncols, n)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False,
                             constrained_layout=True)
    for ax, (name, lab) in zip(axes.ravel(), partitions.items(), strict=False):
        scatter_partition(ax, X2, lab, title=f"{name} (K={len(np.unique(lab))})")
    for ax in axes.ravel()[n:]:
        ax.axis("off")
    return fig


def plot_psm(psm: np.ndarray, order_by: np.ndarray | None = None, title="posterior similarity matrix"):
    """Heatmap of P(z_i = z_j | data), rows ordered by a point estimate."""
    psm = np.asarray(psm)
    order = np.argsort(order_by, kind="stable") if order_by is not None else np.arange(len(psm))
    fig, ax = plt.subplots(figsize=(4.8, 4.2), constrained_layout=True)
    im = ax.imshow(psm[np.ix_(order, order)], vmin=0, vmax=1, cmap="viridis", interpolation="nearest")
    fig.colorbar(im, ax=ax, shrink=0.8)
    ax.set_title(title, fontsize=9)
    ax.set_xticks([])
    ax.set_yticks([])
    return fig


def plot_trace(values: np.ndarray, name: str = "number of clusters"):
    """Trace per chain of a scalar (chains, draws)."""
    values = np.atleast_2d(np.asarray(values))
    fig, ax = plt.subplots(figsize=(6, 2.6), constrained_layout=True)
    for c, v in enumerate(values):
        ax.plot(v, lw=0.8, label=f"chain {c}")
    ax.set_xlabel("draw")
    ax.set_ylabel(name)
    if len(values) > 1:
        ax.legend(fontsize=7)
    return fig


def save_fit_figures(est, X, out, must_link=None, cannot_link=None, **_) -> list[Path]:
    """Figures written by ``ppclust fit``: the partition (with links) and, for samplers, PSM and K trace."""
    out = Path(out)
    paths = []
    fig = plot_data_links(X, est.labels_, must_link, cannot_link, title=f"{type(est).__name__} partition")
    paths.append(out / "partition.png")
    fig.savefig(paths[-1], dpi=110)
    plt.close(fig)
    psm = getattr(est, "psm_", None)
    if psm is not None:
        fig = plot_psm(psm, est.labels_)
        paths.append(out / "psm.png")
        fig.savefig(paths[-1], dpi=110)
        plt.close(fig)
    post = getattr(est, "posterior_", None)
    if post is not None:
        try:
            k = np.asarray(post["posterior"]["n_clusters"])
            fig = plot_trace(k)
            paths.append(out / "trace_n_clusters.png")
            fig.savefig(paths[-1], dpi=110)
            plt.close(fig)
        except (KeyError, TypeError):
            pass
    return paths
