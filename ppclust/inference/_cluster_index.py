"""The cluster index: each slot's points, sorted once per sweep and held on the host for the compiled moves.

A sweep of the sub-cluster sampler builds one :class:`ClusterIndex` before its moves (:func:`cluster_index`,
a counting sort of the labels in one callback): each slot's points in increasing order, held on the host
under a token (the arrays never cross a callback), with per-slot *covers* updated by accepted moves. The
compiled kernels of a move (:mod:`ppclust.inference._subcluster_cpu`) then visit only the points of the
chosen clusters' covers (:func:`candidates`), filtered by the current labels, which gives exactly what a
visit of all n points gives. The held indices form a bounded, locked cache (callbacks of one program, or of
two devices, may run on two threads at once); an index dropped from it only costs full visits.
"""

from __future__ import annotations

import itertools
import threading
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families._numba import compile_kernel
from ppclust.inference._callback import call, labels_operand

__all__ = ["ClusterIndex", "cluster_index", "candidates", "counting_sort", "index_args"]


@compile_kernel
def counting_sort(labels, order, off):
    """The cluster index of ``labels`` (:class:`ClusterIndex`): ``order`` the
    points sorted by label, stably (each slot's points in increasing index order), slot k's points
    ``order[off[k]:off[k + 1]]``; labels outside [0, K) (K = ``off.size - 1``) are left out.

    Parameters
    ----------
    labels : ndarray of int32 of shape (n,)
        Point labels.
    order : ndarray of int32 of shape (n,)
        Output: the points sorted by label (only the first ``off[K]`` entries are written).
    off : ndarray of int32 of shape (K + 1,)
        Output: the segment offsets of the K slots.

    Examples
    --------
    >>> import numpy as np
    >>> order, off = np.empty(4, np.int32), np.empty(3, np.int32)
    >>> counting_sort(np.array([1, 0, 1, 0], np.int32), order, off)
    >>> order.tolist(), off.tolist()
    ([1, 3, 0, 2], [0, 2, 4])
    """
    n = labels.shape[0]
    K = off.shape[0] - 1
    cnt = np.zeros(K + 1, np.int64)
    for i in range(n):
        k = labels[i]
        if k >= 0 and k < K:
            cnt[k + 1] += 1
    off[0] = 0
    for k in range(K):
        off[k + 1] = off[k] + cnt[k + 1]
    pos = np.empty(K, np.int64)
    for k in range(K):
        pos[k] = off[k]
    for i in range(n):
        k = labels[i]
        if k >= 0 and k < K:
            order[pos[k]] = i
            pos[k] += 1


@compile_kernel
def merge_segments(order, off, js, out):
    """The union of the index segments of slots ``js`` (each increasing) in increasing order into ``out``
    (a k-way merge, O(len(out) len(js))); returns the count."""
    m = js.shape[0]
    pos = np.empty(m, np.int64)
    end = np.empty(m, np.int64)
    for r in range(m):
        pos[r] = off[js[r]]
        end[r] = off[js[r] + 1]
    t = 0
    while True:
        best = -1
        bv = 0
        for r in range(m):
            if pos[r] < end[r]:
                v = order[pos[r]]
                if best < 0 or v < bv:
                    best = r
                    bv = v
        if best < 0:
            break
        out[t] = bv
        t += 1
        pos[best] += 1
    return t


@compile_kernel
def merge_two(a, b, out):
    """The union of two increasing, disjoint index arrays in increasing order into ``out``
    (:func:`merge_segments` for two segments, without branches in the loop: a merge's two slots)."""
    na, nb = a.shape[0], b.shape[0]
    i = 0
    j = 0
    for t in range(na + nb):
        take_a = j >= nb or (i < na and a[min(i, na - 1)] < b[min(j, nb - 1)])
        out[t] = a[min(i, na - 1)] if take_a else b[min(j, nb - 1)]
        i += take_a
        j += not take_a


class ClusterIndex(NamedTuple):
    """The points of each slot, built once per sweep before the moves (:func:`cluster_index`), so that a move
    visits the points of its clusters only. ``token`` () int32 names the host-held ``(order, off)``
    (:func:`held_index`): ``order`` (n,) the points sorted by their label at that time (stable), ``off``
    (K + 1,) the segment offsets of the slots (held on the host: they never cross the callbacks, whose
    operands are copied on every call). ``cover`` (K, K) bool: slot k's points now lie in the union of the
    segments j with ``cover[k, j]`` (the identity when built; a move accepted since updates it: a split's or
    peel's new slot covers what the split slot covered, a merge's or absorb's kept slot covers both). A cover
    is a superset, never a miss, so the kernels filter by the current labels and give exactly what a visit
    of all n points gives; so does a token dropped from the cache (the kernels then visit all n points).

    Attributes
    ----------
    token : jax.Array of int32 of shape ()
        Names the host-held ``(order, off)`` of the index.
    cover : jax.Array of bool of shape (K, K)
        ``cover[k, j]``: segment j may hold points of slot k.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> index = cluster_index(jnp.array([1, 0, 1, 0], jnp.int32), 2)
    >>> index.moved(True, False, 0, 1).cover.tolist()
    [[True, True], [False, True]]
    """

    token: jax.Array
    cover: jax.Array

    def moved(self, acc, is_split, a, b):
        """The index after a move of slots ``a`` (kept) and ``b`` (a split's or peel's new slot, or the
        slot merged / absorbed into ``a``), accepted iff ``acc``."""
        cov = self.cover
        new = jnp.where(is_split, cov.at[b].set(cov[a]), cov.at[a].set(cov[a] | cov[b]))
        return self._replace(cover=jnp.where(acc, new, cov))


#: the host-held ``(order, off)`` of the latest cluster indices by token (oldest dropped first, at most
#: ``_INDEX_KEEP`` of them and ``_INDEX_POINTS`` points in all; a dropped one only costs full visits)
_INDEX: dict[int, tuple[np.ndarray, np.ndarray]] = {}
_INDEX_IDS = itertools.count(1)
_INDEX_KEEP = 64
_INDEX_POINTS = 1 << 26
_INDEX_LOCK = threading.Lock()


def held_index(token):
    """``(order, off)`` of a :class:`ClusterIndex` token, or None when dropped from the cache."""
    return _INDEX.get(int(token))


def cluster_index(labels, k_max):
    """The :class:`ClusterIndex` of ``labels`` (:func:`counting_sort` in one callback; its arrays held on the
    host under a fresh token).

    Parameters
    ----------
    labels : jax.Array of int of shape (n,)
        Point labels in ``[0, k_max)``.
    k_max : int
        Number of slots (static).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> index = cluster_index(jnp.array([1, 0, 1, 0], jnp.int32), 2)
    >>> held_index(index.token)[0].tolist()
    [1, 3, 0, 2]
    """
    n = labels.shape[0]

    def host(labels):
        order, off = np.empty(n, np.int32), np.empty(k_max + 1, np.int32)
        counting_sort(labels, order, off)
        with _INDEX_LOCK:  # callbacks of one program, or of two devices, may run on two threads at once
            token = next(_INDEX_IDS) & 0x7FFFFFFF
            _INDEX[token] = (order, off)
            while len(_INDEX) > _INDEX_KEEP or (len(_INDEX) > 1 and len(_INDEX) * n > _INDEX_POINTS):
                _INDEX.pop(next(iter(_INDEX)))
        return (np.asarray(token, np.int32),)

    (token,) = call(host, (jax.ShapeDtypeStruct((), jnp.int32),), (labels_operand(labels),))
    return ClusterIndex(token, jnp.eye(k_max, dtype=bool))


def candidates(n, token=None, rows=None):
    """Host side: increasing point indices holding every point of the slots whose covers are the rows of
    ``rows`` (the union of their index segments, :func:`merge_segments`); all n points without an index
    (``token`` None, or dropped from the cache).

    Parameters
    ----------
    n : int
        Number of points.
    token : int or None, default=None
        Token of a :class:`ClusterIndex`; None (or a token dropped from the cache) gives all n points.
    rows : ndarray of bool of shape (r, K), default=None
        Cover rows of the slots whose points are wanted.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> index = cluster_index(jnp.array([1, 0, 1, 0], jnp.int32), 2)
    >>> candidates(4, index.token, np.asarray(index.cover[:1])).tolist()
    [1, 3]
    """
    held = None if token is None else held_index(token)
    if held is None:
        return np.arange(n, dtype=np.int32)
    order, off = held
    js = np.flatnonzero(np.any(rows, 0)).astype(np.int64)
    if len(js) == 1:
        return order[off[js[0]] : off[js[0] + 1]]
    key = (int(token), js.tobytes())
    last = _LAST_UNION[0]  # one read of the (key, points) pair: another thread may replace it meanwhile
    if last is not None and last[0] == key:  # a move's fit and its sides visit the same union: merged once
        return last[1]
    out = np.empty(int(sum(off[j + 1] - off[j] for j in js)), np.int32)
    if len(js) == 2:
        a, b = order[off[js[0]] : off[js[0] + 1]], order[off[js[1]] : off[js[1] + 1]]
        merge_two(a, b, out)
    else:
        merge_segments(order, off, js, out)
    _LAST_UNION[0] = (key, out)  # one store of the pair
    return out


#: the latest union of index segments (:func:`candidates`): ``[((token, slots), points)]`` (read-only), a
#: pair stored and read as one object (host callbacks may run on several threads)
_LAST_UNION: list = [None]


def index_args(index, *rows):
    """The operands of a kernel's candidates: ``(token, cover rows)``, none without an index.

    Parameters
    ----------
    index : ClusterIndex or None
        The sweep's cluster index; None gives no operands.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> index = cluster_index(jnp.array([1, 0, 1, 0], jnp.int32), 2)
    >>> token, rows = index_args(index, index.cover[0])
    >>> rows.shape
    (1, 2)
    """
    if index is None:
        return ()
    return index.token, jnp.stack(rows)
