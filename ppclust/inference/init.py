"""Seeding of cluster centres shared by the solvers (k-means++ D^2 sampling, Arthur & Vassilvitskii 2007).

One definition of k-means++ for every caller: the Hartigan engine (CEC-IB, C3L; :func:`kmeanspp_indices`,
re-exported as ``hartigan.init_kmeanspp``), the Gibbs and TVClust starts, and EM / the semi-supervised
GMM with fixed centres (:func:`kmeanspp_centres`). Inputs are assumed validated; pure JAX, jittable.

The random draws are separated from the selection: :func:`kmeanspp_uniforms` draws one uniform index
(the first centre) and one uniform in [0, 1) per centre, a shape that does not depend on the number of
points; :func:`kmeanspp_from_uniforms` turns them into centres by inverse-CDF sampling on the cumulative
D^2 weights (the algorithm of ``jax.random.choice`` with ``p``). Its compiled twin
``ppclust.inference._init_cpu.kmeanspp_from_uniforms`` takes the same uniforms, so the compiled Hartigan
engine seeds any n without a program compiled per n and picks the same seeds as the XLA engine
(``tests/inference/test_init_cpu.py``).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

__all__ = [
    "kmeanspp_centres",
    "kmeanspp_indices",
    "kmeanspp_uniforms",
    "kmeanspp_from_uniforms",
    "nearest_centre",
    "prefix_search",
]


def kmeanspp_uniforms(key, k: int, m, dtype=jnp.float64):
    """The random numbers of one k-means++ seeding of ``k`` centres among ``m`` points (``m`` may be traced):
    ``first`` (int32, uniform in 0..m-1) and ``u`` (k,) uniforms in [0, 1) of ``dtype``, centre j drawing
    with ``u[j]``. ``key`` is split into k keys; ``first`` comes from the first, ``u[j]`` from the j-th (the
    draws of ``jax.random.randint`` and ``jax.random.choice``).

    Parameters
    ----------
    key : jax.random key
        PRNG key, split into ``k`` keys.
    k : int
        Number of centres (static).
    m : int or traced int
        Number of points to draw the first centre among.
    dtype : dtype, default=jnp.float64
        Float type of ``u``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.inference.init import kmeanspp_uniforms
    >>> first, u = kmeanspp_uniforms(jax.random.key(0), 3, 10, jnp.float32)
    >>> u.shape, bool(0 <= int(first) < 10)
    ((3,), True)
    """
    keys = jax.random.split(key, k)
    first = jax.random.randint(keys[0], (), 0, m, dtype=jnp.int32)
    u = jax.vmap(lambda kj: jax.random.uniform(kj, (), dtype=dtype))(keys)
    return first, u


def kmeanspp_from_uniforms(first, u, x, centres, fixed, n_valid=None, mask=None):
    """k-means++ D^2 selection from the draws of :func:`kmeanspp_uniforms`: ``(idx (k,), centres (k, d))``.

    The rows of ``centres`` where ``fixed`` is True (e.g. labelled class means) are kept and count as
    already chosen (their ``idx`` is -1); the others are filled in order: with no centre chosen yet, point
    ``first``; then point i with probability ``D(x_i)^2 / sum_j D(x_j)^2`` (D the distance to the nearest
    chosen centre), drawn by inverse CDF with ``u[j]`` (the first i with ``cumsum(p)_i >= cumsum(p)_{-1}
    (1 - u_j)``); uniformly over the points when every point sits on a centre. A point at distance 0 is
    never drawn, so the seeds are distinct points while any other point is left.

    ``n_valid`` (optional, may be traced): only the first ``n_valid`` rows are points, the rest padding
    that is never drawn; the draws equal those on the unpadded rows. ``mask`` (optional): the real rows
    are those where it is True, padding anywhere among them (rows spread over processes, ``n_valid`` then
    their count); the running sums are then :func:`prefix_search`'s masked sums and a centre is read by a
    masked sum, so that rows sharded over processes are never gathered (the same centres up to the
    rounding :func:`prefix_search` names).

    Parameters
    ----------
    first : int or int scalar
        Index of the first centre when no row is fixed.
    u : array of shape (k,)
        Uniforms in [0, 1) (:func:`kmeanspp_uniforms`).
    x : array of shape (n, d)
        Points.
    centres : array of shape (k, d)
        Centres; the rows where ``fixed`` is True are kept.
    fixed : array of bool of shape (k,)
        Rows of ``centres`` that count as already chosen.
    n_valid : int or traced int, default=None
        Number of real rows of ``x``; None is ``n``.
    mask : bool array of shape (n,), default=None
        The real rows, padding anywhere; None: the first ``n_valid`` rows. ``idx`` are then positions in
        ``x``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.init import kmeanspp_from_uniforms
    >>> x = jnp.array([[0.0], [1.0], [10.0]])
    >>> idx, _ = kmeanspp_from_uniforms(0, jnp.array([0.0, 0.5]), x, jnp.zeros((2, 1)), jnp.zeros(2, bool))
    >>> idx.tolist()
    [0, 2]
    """
    n = x.shape[0]
    k = centres.shape[0]
    m = n if n_valid is None else n_valid
    pos = jnp.arange(n)
    live = pos < m if mask is None else mask
    if mask is not None:  # the position of real row ``first``
        first = prefix_search(live.astype(jnp.int32), first + 1)
    any_fixed = jnp.any(fixed)
    d_fixed = jnp.sum((x[:, None] - centres[None]) ** 2, -1)  # (n, k)
    big = jnp.finfo(x.dtype).max
    dmin0 = jnp.min(jnp.where(fixed[None], d_fixed, big), axis=1)
    d2_0 = jnp.where(live & any_fixed, dmin0, 0.0)

    def body(j, carry):
        idx, cs, d2, any_chosen = carry
        tot = d2.sum()
        p = jnp.where(tot > 0, d2 / jnp.where(tot > 0, tot, 1.0), jnp.where(live, 1.0 / m, 0.0))
        if mask is None:
            cum = jnp.cumsum(p)
            i = jnp.searchsorted(cum, cum[-1] * (1 - u[j])).astype(jnp.int32)
        else:
            i = prefix_search(p, jnp.sum(p) * (1 - u[j]))
        i = jnp.where(any_chosen, i, first)
        take = ~fixed[j]
        x_i = x[i] if mask is None else jnp.sum(jnp.where((pos == i)[:, None], x, 0.0), axis=0)
        c = jnp.where(take, x_i, cs[j])
        dnew = jnp.where(live, jnp.sum((x - c[None]) ** 2, -1), 0.0)
        d2 = jnp.where(take, jnp.where(any_chosen, jnp.minimum(d2, dnew), dnew), d2)
        return idx.at[j].set(jnp.where(take, i, -1)), cs.at[j].set(c), d2, any_chosen | take

    idx0 = jnp.full(k, -1, jnp.int32)
    idx, cs, _, _ = jax.lax.fori_loop(0, k, body, (idx0, centres.astype(x.dtype), d2_0, any_fixed))
    return idx, cs


def kmeanspp_centres(key, x, centres, fixed, n_valid=None, mask=None):
    """Fill the rows of ``centres`` (k, d) where ``fixed`` is False by k-means++ D^2 sampling
    (:func:`kmeanspp_from_uniforms` with the draws of :func:`kmeanspp_uniforms`).

    The fixed rows (e.g. labelled class means) count as already chosen. With no fixed row, the first
    centre is a uniformly drawn point. ``n_valid`` (optional, may be traced): only the first ``n_valid``
    rows are points, the rest padding that is never drawn (same centres as on the unpadded rows).

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    x : array of shape (n, d)
        Points.
    centres : array of shape (k, d)
        Centres; the rows where ``fixed`` is True are kept.
    fixed : array of bool of shape (k,)
        Rows of ``centres`` that count as already chosen.
    n_valid : int or None, default=None
        Number of real rows of ``x`` (the rows after it are bucket padding, never chosen); None: all rows.
    mask : bool array of shape (n,), default=None
        The real rows with padding anywhere (``n_valid`` their count): :func:`kmeanspp_from_uniforms`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.inference.init import kmeanspp_centres
    >>> x = jnp.array([[0.0], [1.0], [10.0]])
    >>> kmeanspp_centres(jax.random.key(0), x, jnp.array([[0.0], [0.0]]), jnp.array([True, False])).shape
    (2, 1)
    """
    m = x.shape[0] if n_valid is None else n_valid
    first, u = kmeanspp_uniforms(key, centres.shape[0], m, x.dtype)
    return kmeanspp_from_uniforms(first, u, x, centres, fixed, n_valid, mask)[1]


def kmeanspp_indices(key, x, K: int, n_valid=None):
    """K distinct seed indices (int32) by D^2 sampling, the first uniform (the authors' Java demo of
    CEC-IB; :func:`kmeanspp_from_uniforms` with no fixed centre). ``n_valid``: see there.

    Parameters
    ----------
    key : jax.random key
        PRNG key.
    x : array of shape (n, d)
        Points.
    K : int
        Number of seeds (static), at most the number of distinct points.
    n_valid : int or traced int, default=None
        Number of real rows of ``x``; None is ``n``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.inference.init import kmeanspp_indices
    >>> idx = kmeanspp_indices(jax.random.key(0), jnp.arange(10.0)[:, None], 3)
    >>> len(set(idx.tolist()))
    3
    """
    m = x.shape[0] if n_valid is None else n_valid
    first, u = kmeanspp_uniforms(key, K, m, x.dtype)
    centres = jnp.zeros((K, x.shape[1]), x.dtype)
    return kmeanspp_from_uniforms(first, u, x, centres, jnp.zeros(K, bool), n_valid)[0]


def prefix_search(v, t):
    r"""The first index whose running sum of the non-negative ``v`` reaches ``t``, without a cumulative sum.

    .. math:: i^\star = \min\Big\{ i : \sum_{j \le i} v_j \ge t \Big\}\quad(n - 1 \text{ when no } i),

    the ``searchsorted(cumsum(v), t, side="left")`` of inverse-CDF sampling, clipped to the last index. The
    search bisects on the index: each of the ``ceil(log2 n)`` steps is one masked sum of ``v``. On rows
    sharded over devices or processes (automatic partitioning of ``jax.jit``) a masked sum is a local sum
    and an all-reduce of one number, where XLA partitions a cumulative sum over a sharded axis by gathering
    every row on every device and summing windows of length n (quadratic work). Integer ``v`` gives the
    exact index; float ``v`` sums in another order than ``cumsum``, so a threshold within rounding of a
    running sum may resolve to the neighbouring index.

    Parameters
    ----------
    v : jax.Array of shape (n,)
        Non-negative weights (counts or probabilities).
    t : scalar
        The threshold.

    Returns
    -------
    jax.Array
        int32 scalar index in ``[0, n)``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.init import prefix_search
    >>> int(prefix_search(jnp.array([1, 0, 2, 1]), 3)), int(prefix_search(jnp.array([1, 0, 2, 1]), 9))
    (2, 3)
    """
    n = v.shape[0]
    pos = jnp.arange(n, dtype=jnp.int32)
    zero = jnp.zeros((), v.dtype)

    def step(_, bounds):  # the answer lies in (lo, hi]
        lo, hi = bounds
        mid = (lo + hi) // 2
        reach = jnp.sum(jnp.where(pos <= mid, v, zero)) >= t
        open_ = hi - lo > 1
        return jnp.where(open_ & ~reach, mid, lo), jnp.where(open_ & reach, mid, hi)

    bounds = (jnp.int32(-1), jnp.int32(n - 1))
    return jax.lax.fori_loop(0, max(1, n.bit_length()), step, bounds)[1]


def nearest_centre(x, centres, allowed):
    """Label (int32, (n,)) of each point's nearest centre (squared Euclidean, expanded form, first on
    ties) among the components it is ``allowed`` (n, k) to use.

    Parameters
    ----------
    x : array of shape (n, d)
        Points.
    centres : array of shape (k, d)
        Centres.
    allowed : array of bool of shape (n, k)
        The components each point may use.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.inference.init import nearest_centre
    >>> nearest_centre(jnp.array([[0.0], [9.0]]), jnp.array([[0.0], [10.0]]), jnp.ones((2, 2), bool)).tolist()
    [0, 1]
    """
    d2 = jnp.sum(x * x, 1)[:, None] - 2 * x @ centres.T + jnp.sum(centres**2, 1)[None]
    return jnp.argmin(jnp.where(allowed, d2, jnp.inf), axis=1).astype(jnp.int32)
