r"""Fixed-capacity per-slot statistics: the containers every family fills and the sums that fill them.

Per-cluster statistics live in arrays of ``K`` slots so that every solver is shape-static and jittable.
``Stats.n`` holds (possibly weighted) counts as floats.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

__all__ = ["Stats", "PredictiveCache", "slot_sum", "one_hot_stats", "triangle_outer_sum", "centered_scatter"]

Array = jax.Array


class Stats(NamedTuple):
    """Fixed-capacity sufficient statistics of ``K`` cluster slots.

    Parameters
    ----------
    n : array (K,)
        Counts (floats; weighted counts allowed).
    s : array (K, d)
        Sums of the points.
    scale : array
        Family-specific: a Cholesky factor (K, d, d), a diagonal (K, d) or a scalar per slot (K,) (see each
        family).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> st = Stats(jnp.zeros(3), jnp.zeros((3, 2)), jnp.zeros(3))
    >>> st.s.shape
    (3, 2)
    """

    n: Array
    s: Array
    scale: Array


class PredictiveCache(NamedTuple):
    r"""A family's posterior predictive of ``K`` slots in the form a Gibbs sweep evaluates per point.

    Every conjugate family here has a predictive :math:`\log p(x\mid k) = c_k - h_k\,\phi(a_k\,q_k(x))` with
    :math:`q_k(x)` the (scaled) squared distance of x to ``loc[k]``; the slot constants depend on the slot's
    statistics only, so a sweep computes them once per slot change (O(d) per slot and point remain).

    Parameters
    ----------
    loc : array (K, d)
        Predictive location.
    log_norm : array (K,)
        :math:`c_k` (normaliser and log-determinant).
    a1 : array (K,)
        Factor of the quadratic form.
    hexp : array (K,)
        Exponent :math:`h_k`.
    b1 : array (K, d)
        Per-coordinate factors (full: the reciprocal Cholesky diagonal; diag:
        :math:`1/(\sigma^2_{kj}\,\mathrm{df}_k)`). Unused fields are filled with ones.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> c = PredictiveCache(jnp.zeros((2, 3)), jnp.zeros(2), jnp.ones(2), jnp.ones(2), jnp.ones((2, 3)))
    >>> c.loc.shape
    (2, 3)
    """

    loc: Array
    log_norm: Array
    a1: Array
    hexp: Array
    b1: Array


def slot_sum(v: Array, z: Array, K: int, w: Array | None) -> Array:
    r"""Per-slot sums :math:`\sum_i w_i [z_i = k] v_i`.

    Parameters
    ----------
    v : array (n, ...)
        Per-point values.
    z : int array (n,)
        Labels; labels outside [0, K) are dropped.
    K : int
        Number of slots.
    w : array (n,) or None
        Point weights (None: all 1).

    Returns
    -------
    array (K, ...)
        The sums.

    Notes
    -----
    On CPU a segment sum (one O(n) pass); elsewhere a one-hot matrix product (no scatter atomics on
    accelerators).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> [float(a) for a in slot_sum(jnp.array([1.0, 2.0, 4.0]), jnp.array([0, 2, 0]), 3, None)]
    [5.0, 0.0, 2.0]
    """
    if w is not None:
        v = v * w.reshape((-1,) + (1,) * (v.ndim - 1))
    if jax.default_backend() == "cpu":
        return jax.ops.segment_sum(v, z, K)
    r = jax.nn.one_hot(z, K, dtype=v.dtype)
    return jnp.tensordot(r, v, axes=(0, 0))


def one_hot_stats(x: Array, z: Array, K: int, w: Array | None, reduce=None):
    """The per-slot summing function of a labelling, with the counts and sums it gives.

    Parameters
    ----------
    x : array (n, d)
        Points.
    z : int array (n,)
        Labels (outside [0, K): counted nowhere).
    K : int
        Number of slots.
    w : array (n,) or None
        Point weights.
    reduce : callable or None, default None
        Applied to every per-slot sum, e.g. ``lambda t: jax.lax.psum(t, "data")`` when ``x`` holds one
        device's rows of a sharded data set (the sums are then the whole data set's).

    Returns
    -------
    summ : callable
        ``summ(v)`` sums a per-point array (n, ...) into slots (K, ...).
    n : array (K,)
        Counts.
    s : array (K, d)
        Sums of the points.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> summ, n, s = one_hot_stats(jnp.array([[1.0], [3.0]]), jnp.array([1, 1]), 2, None)
    >>> [float(a) for a in n], [float(a) for a in s[:, 0]]
    ([0.0, 2.0], [0.0, 4.0])
    """
    if reduce is None:
        summ = lambda v: slot_sum(v, z, K, w)  # noqa: E731
    else:
        summ = lambda v: reduce(slot_sum(v, z, K, w))  # noqa: E731
    n = summ(jnp.ones(x.shape[:1], x.dtype))
    return summ, n, summ(x)


def triangle_outer_sum(summ):
    """An ``outer_sum`` for :func:`centered_scatter` that sums only the d(d+1)/2 upper-triangle products.

    Parameters
    ----------
    summ : callable
        The per-slot summing function of :func:`one_hot_stats`.

    Returns
    -------
    callable
        ``outer_sum(xc)``: per-slot sums of :math:`x_c x_c^\\top` (K, d, d), mirrored from the upper
        triangle (the same additions as the full (n, d, d) sum, so the same values, with half the memory
        traffic).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> summ, n, s = one_hot_stats(jnp.array([[1.0, 2.0]]), jnp.array([0]), 1, None)
    >>> triangle_outer_sum(summ)(jnp.array([[1.0, 2.0]]))[0].tolist()
    [[1.0, 2.0], [2.0, 4.0]]
    """

    def outer_sum(xc):
        d = xc.shape[1]
        iu, ju = np.triu_indices(d)
        t = summ(xc[:, iu] * xc[:, ju])
        out = jnp.zeros(t.shape[:1] + (d, d), t.dtype)
        return out.at[:, iu, ju].set(t).at[:, ju, iu].set(t)

    return outer_sum


def centered_scatter(x: Array, summ, n: Array, s: Array, outer_sum=None, reduce=None) -> Array:
    r"""Per-slot scatter :math:`\sum_i r_{ik} (x_i - \bar x_k)(x_i - \bar x_k)^\top`, shift-stabilised.

    Parameters
    ----------
    x : array (n, d)
        Points.
    summ : callable
        Per-slot summing function (:func:`one_hot_stats`).
    n, s : arrays (K,), (K, d)
        Counts and sums of the points per slot.
    outer_sum : callable or None, default None
        Sums the outer products of the shifted points itself (e.g. :func:`triangle_outer_sum`, or one
        matrix product); None: ``summ`` of the (n, d, d) outer products.
    reduce : callable or None, default None
        Cross-device sum, as in :func:`one_hot_stats`.

    Returns
    -------
    array (K, d, d)
        The scatter matrices.

    Notes
    -----
    With shift :math:`c` (the mean of the rows; of all devices' rows under ``reduce``),
    :math:`S_k = \sum_i r_{ik}(x_i-c)(x_i-c)^\top - n_k (\bar x_k - c)(\bar x_k - c)^\top`; any shift gives
    the same scatter in exact arithmetic, and the data mean keeps the cancellation small.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> x = jnp.array([[0.0], [2.0]])
    >>> summ, n, s = one_hot_stats(x, jnp.array([0, 0]), 1, None)
    >>> float(centered_scatter(x, summ, n, s)[0, 0, 0])
    2.0
    """
    c = x.mean(0) if reduce is None else reduce(x.sum(0)) / reduce(jnp.asarray(x.shape[0], x.dtype))
    xc = x - c
    sc = s - n[:, None] * c
    outer = summ(xc[:, :, None] * xc[:, None, :]) if outer_sum is None else outer_sum(xc)
    mean_c = sc / jnp.maximum(n, 1e-300)[:, None]
    return outer - n[:, None, None] * mean_c[:, :, None] * mean_c[:, None, :]
