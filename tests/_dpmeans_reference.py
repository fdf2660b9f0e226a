"""Plain NumPy Algorithm 1 (RDP-means), point by point: the test oracle (and the benchmark baseline).

Same semantics as ``ppclust.inference.dpmeans.fit`` with ``variant="sequential"``, ``compat=False``,
squared Euclidean distance and lowest-index ties: friends/strangers from a neighbour table, new
cluster when the best augmented cost is >= lam, mean step, stable deletion of empty clusters, stop
when the partition is unchanged for ``patience`` sweeps.
"""

from __future__ import annotations

import numpy as np


def same_partition(a, b):
    pa = {}
    pb = {}
    for u, v in zip(a.tolist(), b.tolist(), strict=True):
        if pa.setdefault(u, v) != v or pb.setdefault(v, u) != u:
            return False
    return True


def rdpmeans_numpy(
    x,
    nbr,
    sgn,
    wgt,
    lam,
    mu0,
    orders,
    *,
    xi0=1e-3,
    xi_rate=2.0,
    xi_max=1e12,
    patience=20,
    max_iter=1000,
    on_move=None,
):
    """Returns (labels, centers (K, d), n_iter). ``orders(t)`` gives the visiting order of sweep t.

    ``on_move(z, centers, xi)`` (optional) is called after every single-point assignment.
    """
    n, d = x.shape
    z = np.zeros(n, np.int64)
    mu = [np.asarray(mu0, float).copy()]
    run = 0
    t = 0
    while t < max_iter:
        xi = 0.0 if t == 0 else min(xi0 * xi_rate**t, xi_max)
        z_old = z.copy()
        k_start = len(mu)
        for i in orders(t):
            m = np.asarray(mu)
            diff = m - x[i]
            a = np.einsum("kd,kd->k", diff, diff)
            fs = np.zeros(len(mu))
            np.add.at(fs, z[nbr[i]], wgt[i] * sgn[i])
            a = a - xi * fs
            k = int(np.argmin(a))
            if a[k] < lam:
                z[i] = k
            else:
                mu.append(x[i].copy())
                z[i] = len(mu) - 1
            if on_move is not None:
                on_move(z, np.asarray(mu), xi)
        counts = np.bincount(z, minlength=len(mu))
        keep = np.flatnonzero(counts > 0)
        sums = np.zeros((len(mu), d))
        np.add.at(sums, z, x)
        new_index = np.cumsum(counts > 0) - 1
        mu = list(sums[keep] / counts[keep, None])
        z = new_index[z]
        t += 1
        unchanged = same_partition(z_old, z) and len(mu) == k_start
        run = run + 1 if unchanged else 0
        if run >= patience:
            break
    return z, np.asarray(mu), t
