"""Posterior analysis of sampled partitions: ArviZ DataTree, similarity matrix, point estimates.

Raw labels suffer from label switching, so every per-draw summary here is label-invariant: the number
of clusters, ``p``, ``q``, ``alpha`` and the log joint (``posterior`` / ``sample_stats`` groups, with
ESS and R-hat from ArviZ), plus draw-free results (posterior similarity matrix, point estimate) in a
``clustering`` group.

Point estimates minimise the posterior expected loss over the *sampled* partitions:

* Binder loss (equal costs): :math:`E[L(c)] \\propto \\sum_{i<j} |1[c_i=c_j] - \\pi_{ij}|` with
  :math:`\\pi` the PSM (Binder 1978; Dahl 2006);
* variation of information (Meila 2007; Wade & Ghahramani 2018), the expectation taken exactly over
  (a subsample of) the draws;
* or the draw with the highest log joint (spec 2.8 [R]).
"""

from __future__ import annotations

import numpy as np

__all__ = ["similarity_matrix", "point_estimate", "to_datatree", "save", "load", "variation_of_information"]


def similarity_matrix(labels, *, max_n=5000) -> np.ndarray | None:
    """Posterior similarity matrix P(z_i = z_j) from draws ``labels`` of shape (..., n); None if n > max_n."""
    lab = np.asarray(labels)
    lab = lab.reshape(-1, lab.shape[-1])
    n = lab.shape[1]
    if n > max_n:
        return None
    psm = np.zeros((n, n), np.float64)
    k = int(lab.max()) + 1
    eye = np.eye(k, dtype=np.float32)
    for row in lab:
        oh = eye[row]
        psm += oh @ oh.T
    return psm / lab.shape[0]


def variation_of_information(a, b) -> float:
    """VI(a, b) = H(a) + H(b) - 2 I(a, b) in nats."""
    a = np.unique(np.asarray(a), return_inverse=True)[1]
    b = np.unique(np.asarray(b), return_inverse=True)[1]
    n = a.size
    joint = np.bincount(a * (b.max() + 1) + b, minlength=(a.max() + 1) * (b.max() + 1)) / n
    joint = joint.reshape(a.max() + 1, b.max() + 1)
    pa, pb = joint.sum(1), joint.sum(0)
    nz = joint > 0
    ent = lambda p: -np.sum(p[p > 0] * np.log(p[p > 0]))
    mi = np.sum(joint[nz] * np.log(joint[nz] / np.outer(pa, pb)[nz]))
    return float(ent(pa) + ent(pb) - 2 * mi)


def point_estimate(labels, *, loss="binder", psm=None, log_joint=None, max_candidates=200, max_reference=500,
                   seed=0) -> np.ndarray:
    """Partition among the draws minimising expected ``loss`` ("binder", "vi") or maximising the log joint.

    ``labels``: draws of shape (..., n). Returned labels are relabelled 0..K-1 by first appearance.
    """
    lab = np.asarray(labels).reshape(-1, np.asarray(labels).shape[-1])
    if loss == "max_log_joint":
        if log_joint is None:
            raise ValueError("loss='max_log_joint' needs `log_joint` (one value per draw)")
        best = lab[int(np.argmax(np.asarray(log_joint).ravel()))]
        return _canonical(best)
    uniq = np.unique(np.array([_canonical(r) for r in lab]), axis=0)
    rng = np.random.default_rng(seed)
    if len(uniq) > max_candidates:
        uniq = uniq[rng.choice(len(uniq), max_candidates, replace=False)]
    if loss == "binder":
        psm = similarity_matrix(lab) if psm is None else psm
        costs = [np.abs((c[:, None] == c[None, :]) - psm).sum() for c in uniq]
    elif loss == "vi":
        ref = lab if len(lab) <= max_reference else lab[rng.choice(len(lab), max_reference, replace=False)]
        costs = [np.mean([variation_of_information(c, r) for r in ref]) for c in uniq]
    else:
        raise ValueError(f"loss must be 'binder', 'vi' or 'max_log_joint', got {loss!r}")
    return uniq[int(np.argmin(costs))]


def to_datatree(result, *, psm=None, point=None):
    """ArviZ DataTree of a :class:`ppclust.inference.gibbs.ChainResult` (arrays shaped (chain, draw)).

    Groups: ``posterior`` (n_clusters, p, q, alpha), ``sample_stats`` (lp = log joint) and, when given,
    ``clustering`` (psm, point estimate; no draw dimension).
    """
    import arviz as az
    import xarray as xr

    dt = az.from_dict({
        "posterior": {"n_clusters": np.asarray(result.n_clusters), "p": np.asarray(result.p),
                      "q": np.asarray(result.q), "alpha": np.asarray(result.alpha)},
        "sample_stats": {"lp": np.asarray(result.log_joint)},
    })
    data = {}
    if psm is not None:
        data["psm"] = (("obs", "obs_bis"), np.asarray(psm))
    if point is not None:
        data["point_estimate"] = (("obs",), np.asarray(point))
    if data:
        dt["clustering"] = xr.DataTree(xr.Dataset(data))
    return dt


def save(dt, path) -> None:
    """Write a DataTree to netCDF (needs h5netcdf + h5py)."""
    dt.to_netcdf(str(path))


def load(path):
    """Read a DataTree written by :func:`save`."""
    import arviz as az

    return az.from_netcdf(str(path))


def _canonical(row):
    _, first = np.unique(row, return_index=True)
    order = np.argsort(first)
    remap = np.empty(row.max() + 1, np.int32)
    remap[np.unique(row)[order]] = np.arange(len(order), dtype=np.int32)
    return remap[row]
