"""Fitting with rows spread over processes: each process holds only its own rows.

Every process runs the same script::

    import jax, ppclust
    from ppclust import distributed

    jax.distributed.initialize(coordinator_address="host0:1234", num_processes=P, process_id=i)
    X = distributed.process_rows(X_local)            # this process's rows, NumPy (n_i, d)
    y = distributed.process_labels(y_local)          # optional partial labels (n_i,), -1 = unlabelled
    est = ppclust.SemiSupervisedGMM(n_clusters=5, random_state=0).fit(X, partial_labels=y)
    labels_local = distributed.local(est.labels_)    # this process's rows' labels, NumPy (n_i,)

:func:`process_rows` returns a global :class:`jax.Array` over every process's devices whose rows are the
processes' rows in process order (process ``i``'s rows start after those of processes ``0 .. i-1``). No
process ever holds the whole data: each process's block is padded with zero-weight rows to one shared
length (the bucket of the largest count, :mod:`ppclust._buckets`), so processes may hold different
numbers of rows. A fitted estimator's per-row attributes (``labels_``, ``responsibilities_``) are global
arrays with ``X``'s row sharding (:func:`local` returns this process's rows); its model attributes
(means, covariances, weights, number of clusters) are NumPy and identical on every process. With one
process the same code runs unchanged, which is how the examples below run.

Methods that scale out: ``TVClust`` with ``algorithm="subcluster"`` (``init="one"``,
``point_estimate="max_log_joint"``; each device draws its rows' labels, uniforms keyed by global row;
the statistics per cluster reduced; the split/merge fits' subsample rows sent by the processes holding
them; the labels of all rows, one int32 each, gathered after each proposal and label step; moves,
``p``, ``q`` and alpha decided alike on every process; ``posterior_`` and the partition summaries that
need every row are None), ``SemiSupervisedGMM`` (EM's sufficient statistics, reduced over processes) and
``DPMeans`` / ``RDPMeans`` with ``variant="delayed"`` (the delayed pass: sums and counts per cluster
reduced, the opening point a global argmax, and the labels of all rows, one int32 each, gathered on
every process after each pass, since a point's link term reads its partners' labels), ``CECIB`` and ``C3L``
with ``algorithm="batch"`` (the starts' D^2 sampling and the batch steps' per-cluster counts, sums, scatters
and label counts reduced over processes; the Hartigan polish hands the clusters' statistics from process to
process in row order; C3L takes an explicit ``hyperplane``). The labels equal those of a one-process fit of
the same rows and seed, up to the order of floating-point sums.

Links
-----
Links (must-link, cannot-link) use *global* row indices. Every process passes the same, complete list
of links (they are small next to the rows, and the solvers need all of them on every process);
:func:`global_rows` turns this process's local row indices into global ones when links are built per
process (gather them, e.g. with ``jax.experimental.multihost_utils.process_allgather``, before ``fit``).

Failure
-------
When a process dies, the others fail in their next collective with JAX's error (the coordination
service's heartbeat timeout, ``jax.distributed.initialize(heartbeat_timeout_seconds=...)``) instead of
waiting forever.
"""

from __future__ import annotations

import jax
import numpy as np

from ppclust import _devices
from ppclust._devices import RowLayout

__all__ = [
    "RowLayout",
    "process_rows",
    "process_labels",
    "local",
    "layout",
    "global_rows",
    "positions",
    "row_counts",
]


def process_rows(X_local, *, fill=0):
    """The global array of every process's rows, in process order; call it on every process.

    Parameters
    ----------
    X_local : array-like of shape (n_i, ...)
        This process's rows (every process the same trailing shape and dtype; ``n_i`` may differ).
    fill : scalar, default=0
        Value of the zero-weight padding rows.

    Returns
    -------
    jax.Array of shape (P * block, ...)
        Sharded by rows over every process's devices; process ``p`` holds positions
        ``[p * block, (p + 1) * block)``, its ``n_p`` rows followed by padding (:func:`layout`).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import distributed
    >>> X = distributed.process_rows(np.ones((5, 2)))
    >>> X.shape, distributed.layout(X).n
    ((32, 2), 5)
    """
    X_local = np.asarray(X_local)
    if X_local.ndim == 0:
        raise ValueError("`X_local` must have a row axis")
    if X_local.dtype.kind == "f" and X_local.dtype != np.float64:
        X_local = X_local.astype(np.float64)
    counts = tuple(int(c) for c in row_counts(X_local.shape[0]))
    lay = RowLayout(counts, _devices.process_block(counts))
    return _devices.from_process_rows(X_local, lay, fill)


def process_labels(y_local, *, like=None):
    """Partial labels (``-1`` = unlabelled) of this process's rows as a global array; padding is ``-1``.

    Parameters
    ----------
    y_local : array-like of int of shape (n_i,)
        Labels of this process's rows.
    like : jax.Array, optional
        The global ``X`` the labels belong to (checks that the counts agree).

    Returns
    -------
    jax.Array of int64 of shape (P * block,)

    Examples
    --------
    >>> from ppclust import distributed
    >>> y = distributed.process_labels([0, -1, 1])
    >>> distributed.local(y).tolist()
    [0, -1, 1]
    """
    y = np.asarray(y_local)
    if y.ndim != 1 or (y.size and y.dtype.kind not in "iu" and not np.all(y == np.round(y))):
        raise ValueError("`y_local` must be a 1-D array of integer labels (-1 = unlabelled)")
    out = process_rows(y.astype(np.int64), fill=-1)
    if like is not None and layout(like).counts != layout(out).counts:
        raise ValueError(
            f"labels per process {layout(out).counts} but rows per process {layout(like).counts}"
        )
    return out


def local(arr) -> np.ndarray:
    """This process's real rows of a global array (``X``, ``labels_``, ``responsibilities_``) as NumPy.

    Parameters
    ----------
    arr : jax.Array or array-like
        A global array from :func:`process_rows` or a fit on one; anything else is returned whole.

    Returns
    -------
    ndarray of shape (n_i, ...)

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import distributed
    >>> distributed.local(distributed.process_rows(np.arange(3.0)[:, None])).ravel().tolist()
    [0.0, 1.0, 2.0]
    """
    return _devices.local_rows(arr)


def layout(arr) -> RowLayout:
    """The :class:`RowLayout` of a global array: real rows per process and the block length.

    Parameters
    ----------
    arr : jax.Array
        A global array from :func:`process_rows` (or a per-row attribute fitted on one).

    Returns
    -------
    RowLayout

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import distributed
    >>> distributed.layout(distributed.process_rows(np.zeros((3, 1)))).counts
    (3,)
    """
    return _devices.layout_of(arr)


def global_rows(local_rows, arr) -> np.ndarray:
    """Global row indices (those links use) of this process's local row indices.

    Parameters
    ----------
    local_rows : array-like of int
        Indices into this process's ``X_local`` (any shape, e.g. ``(m, 2)`` link pairs).
    arr : jax.Array
        The global ``X``.

    Returns
    -------
    ndarray of int64
        ``local_rows`` plus the number of rows of the earlier processes.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import distributed
    >>> X = distributed.process_rows(np.zeros((4, 1)))
    >>> distributed.global_rows([[0, 3]], X).tolist()
    [[0, 3]]
    """
    lay = layout(arr)
    rows = np.asarray(local_rows, dtype=np.int64)
    me = jax.process_index()
    if rows.size and (rows.min() < 0 or rows.max() >= lay.counts[me]):
        raise ValueError(f"local row indices must lie in [0, {lay.counts[me]})")
    return rows + lay.offsets[me]


def positions(rows, arr) -> np.ndarray:
    """Positions in the padded global array of global row indices (what a solver indexes).

    Parameters
    ----------
    rows : array-like of int
        Global row indices, in ``[0, n)``.
    arr : jax.Array
        The global ``X``.

    Returns
    -------
    ndarray of int64 of the shape of ``rows``

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust import distributed
    >>> X = distributed.process_rows(np.zeros((4, 1)))
    >>> distributed.positions([1, 3], X).tolist()
    [1, 3]
    """
    return layout(arr).positions(rows)


def row_counts(n_local: int) -> np.ndarray:
    """Every process's number of rows, in process order; call it on every process (a collective).

    The sum is the number of rows that global row indices (links) refer to.

    Parameters
    ----------
    n_local : int
        This process's number of rows.

    Returns
    -------
    ndarray of int64, shape (jax.process_count(),)

    Examples
    --------
    >>> from ppclust import distributed
    >>> distributed.row_counts(5).tolist()
    [5]
    """
    return _devices.process_gather(np.int64(n_local)).reshape(-1)
