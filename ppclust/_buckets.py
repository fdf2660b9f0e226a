"""Bucketed shapes: pad every data-dependent length up to one of a few sizes, so that compiled programs
are reused across data sizes.

A jitted solver compiles one program per input shape. Padding the row count (and the link count, the
number of labelled points, a neighbour table's width ...) up to a *bucket* makes every data size between
two buckets share one program. Buckets are ``2**k`` and ``3 * 2**(k-1)`` (..., 64, 96, 128, 192, 256,
384, ...), at least ``minimum``: the padding is at most a third of the bucket, and the sizes from 100 to
10,000 fall into 14 buckets.

Padded entries carry weight 0 (:func:`pad_rows`, :func:`pad_pairs`); a solver multiplies every sum, cost,
draw and acceptance by that weight (or masks with it), so no result depends on the bucket. Random draws
per point are keyed by the point's row index (``jax.random.fold_in(key, i)`` or a counter-based stream),
never by the array's length, so the same data give the same draws whatever padding they got.
Predictions on new points run the same way (:func:`rowwise`): one program per bucket of their number.
"""

from __future__ import annotations

import functools

import jax
import numpy as np

__all__ = [
    "bucket_size",
    "split_count",
    "aligned_zeros",
    "pad_rows",
    "pad_pairs",
    "pad_vector",
    "pad_links",
    "rowwise",
]


def bucket_size(n: int, minimum: int = 32) -> int:
    """The smallest bucket ``>= n``: a power of two or 1.5 times one, at least ``minimum``.

    Parameters
    ----------
    n : int
        The length to cover (rows, links, labelled points ...), ``n >= 0``.
    minimum : int, default=32
        The smallest bucket; a power of two (so that the buckets above it keep the ``2**k, 3 * 2**(k-1)``
        pattern).

    Returns
    -------
    int
        ``b >= max(n, minimum)`` with ``b`` in ``{minimum * 2**j, minimum * 3 * 2**(j-1)}``; ``b < 1.5 * n``
        whenever ``n > minimum``.

    Examples
    --------
    >>> [bucket_size(n) for n in (0, 1, 32, 33, 48, 49, 100, 178, 1000)]
    [32, 32, 32, 48, 48, 64, 128, 192, 1024]
    >>> bucket_size(5, minimum=8)
    8
    """
    n = int(n)
    if n < 0:
        raise ValueError(f"bucket_size: n must be >= 0, got {n}")
    if minimum < 1 or minimum & (minimum - 1):
        raise ValueError(f"bucket_size: minimum must be a power of two, got {minimum}")
    if n <= minimum:
        return int(minimum)
    power = 1 << (n - 1).bit_length()  # smallest power of two >= n
    three_halves = 3 * power // 4  # 1.5 times the power of two below it
    return int(three_halves) if three_halves >= n and three_halves >= minimum else int(power)


#: the alignment XLA's CPU client needs to use a host buffer in place (it copies a less aligned one)
ALIGNMENT = 64


def split_count(n: int, minimum: int = 16) -> int:
    """How many keys to split so that the first ``n`` are ``jax.random.split(key, n)`` while the count takes
    few values (a program per value): :func:`bucket_size` under JAX's partitionable threefry (its
    default), where a split's keys are a prefix of any longer split's; ``n`` itself otherwise.

    Parameters
    ----------
    n : int
        Keys needed.
    minimum : int, default=16
        The smallest count (a power of two).

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust._buckets import split_count
    >>> key = jax.random.key(0)
    >>> keys = jax.random.split(key, split_count(3))[:3]
    >>> bool(np.array_equal(jax.random.key_data(keys), jax.random.key_data(jax.random.split(key, 3))))
    True
    """
    return bucket_size(n, minimum=minimum) if jax.config.jax_threefry_partitionable else int(n)


def aligned_zeros(shape, dtype) -> np.ndarray:
    """A C-contiguous array of zeros whose data start on an :data:`ALIGNMENT`-byte boundary.

    NumPy's large allocations are only 16-byte aligned, and JAX's CPU backend copies a host array that is
    not 64-byte aligned when it passes it to a program: one more copy of the data for every padded input.

    Parameters
    ----------
    shape : tuple of int
        The array's shape.
    dtype : dtype-like
        Its element type.

    Returns
    -------
    ndarray
        Zeros of ``shape`` and ``dtype``; a view into a slightly larger zeroed byte buffer.

    Examples
    --------
    >>> a = aligned_zeros((1000, 3), np.float64)
    >>> a.shape, a.ctypes.data % ALIGNMENT, float(a.sum())
    ((1000, 3), 0, 0.0)
    """
    dtype = np.dtype(dtype)
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(nbytes + ALIGNMENT, dtype=np.uint8)
    start = (-raw.ctypes.data) % ALIGNMENT
    return raw[start : start + nbytes].view(dtype).reshape(shape)


def pad_rows(X, size: int | None = None, *, minimum: int = 32):
    """Pad the rows of ``X`` with zeros up to ``size`` (default: :func:`bucket_size` of its length).

    Parameters
    ----------
    X : array-like of shape (n, ...)
        The rows to pad (data, labels, weights ...).
    size : int, optional
        The padded length, ``>= n``; default ``bucket_size(n, minimum)``.
    minimum : int, default=32
        Passed to :func:`bucket_size` when ``size`` is not given.

    Returns
    -------
    padded : ndarray of shape (size, ...)
        ``X`` followed by ``size - n`` rows of zeros (same dtype), 64-byte aligned
        (:func:`aligned_zeros`).
    weight : ndarray of shape (size,)
        ``1.0`` on the ``n`` real rows, ``0.0`` on the padding (``X``'s float dtype, float64 otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> Xp, w = pad_rows(np.ones((3, 2)), 4)
    >>> Xp.shape, w.tolist()
    ((4, 2), [1.0, 1.0, 1.0, 0.0])
    >>> pad_rows(np.arange(40.0))[0].shape
    (48,)
    """
    X = np.asarray(X)
    n = X.shape[0]
    size = bucket_size(n, minimum) if size is None else int(size)
    if size < n:
        raise ValueError(f"pad_rows: size {size} is smaller than the {n} rows")
    padded = aligned_zeros((size,) + X.shape[1:], X.dtype)
    padded[:n] = X
    wdtype = X.dtype if np.issubdtype(X.dtype, np.floating) else np.float64
    weight = aligned_zeros(size, wdtype)
    weight[:n] = 1.0
    return padded, weight


def pad_vector(v, size: int, fill) -> np.ndarray:
    """Pad a 1-D array with ``fill`` up to ``size`` (e.g. partial labels with ``-1``, "unlabelled").

    Parameters
    ----------
    v : array-like of shape (n,)
        The values.
    size : int
        The padded length, ``>= n``.
    fill : scalar
        The value of the padding.

    Returns
    -------
    ndarray of shape (size,)
        ``v`` followed by ``size - n`` copies of ``fill`` (``v``'s dtype).

    Examples
    --------
    >>> pad_vector([0, 2, 1], 5, -1).tolist()
    [0, 2, 1, -1, -1]
    """
    v = np.asarray(v)
    if size < v.shape[0]:
        raise ValueError(f"pad_vector: size {size} is smaller than the {v.shape[0]} entries")
    out = aligned_zeros((size,) + v.shape[1:], v.dtype)
    out[...] = fill
    out[: v.shape[0]] = v
    return out


def pad_pairs(pairs, size: int | None = None, *, minimum: int = 8):
    """Pad an ``(m, 2)`` array of row pairs up to ``size`` rows with the pair ``(0, 0)`` of weight 0.

    Parameters
    ----------
    pairs : array-like of shape (m, 2)
        Row-index pairs (links), integers.
    size : int, optional
        The padded length, ``>= m``; default ``bucket_size(m, minimum)``.
    minimum : int, default=8
        Passed to :func:`bucket_size` when ``size`` is not given.

    Returns
    -------
    padded : ndarray of shape (size, 2)
        The pairs followed by ``(0, 0)`` rows (a self-pair, which no solver reads as a link once its
        weight is 0).
    weight : ndarray of shape (size,)
        ``1.0`` on the real pairs, ``0.0`` on the padding (float64).

    Examples
    --------
    >>> p, w = pad_pairs([[0, 3], [1, 2]])
    >>> p.shape, int(w.sum())
    ((8, 2), 2)
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    padded, weight = pad_rows(pairs, size, minimum=minimum)
    return padded, weight.astype(np.float64)


def pad_links(links, n_pad: int):
    """A link set padded on the host for ``n_pad`` rows: the shape of every array a bucket size.

    The pair list goes to :func:`pad_pairs`' bucket (pairs ``(0, 0)`` of sign 0 and weight 0), the
    neighbour table to ``n_pad`` rows and :func:`bucket_size` ``(width, minimum=1)`` columns (neighbour 0,
    sign 0, weight 0): a padding entry adds to no count a solver forms by weight. Every ``n`` of a bucket
    with link counts and degrees of one bucket gives the same shapes.

    Parameters
    ----------
    links : ppclust.sideinfo.Links
        The observed pairs of ``n <= n_pad`` points (fields ``pairs, sign, weight, nbr, sgn, wgt``).
    n_pad : int
        The padded row count, ``>=`` the rows of the neighbour table.

    Returns
    -------
    ppclust.sideinfo.Links
        The same type, NumPy arrays (put them on the device with ``jax.device_put``: a transfer, no
        program compiled per shape).

    Examples
    --------
    >>> from ppclust.models.tvclust import make_links
    >>> padded = pad_links(make_links(5, [[0, 1], [1, 3]], [1, -1]), 32)
    >>> padded.pairs.shape, padded.nbr.shape, float(padded.weight.sum())
    ((8, 2), (32, 2), 2.0)
    """
    pairs = np.asarray(links.pairs).reshape(-1, 2)
    pairs_pad, _ = pad_pairs(pairs)
    m_pad = pairs_pad.shape[0]
    nbr = np.asarray(links.nbr)
    if nbr.shape[0] > n_pad:
        raise ValueError(f"pad_links: n_pad {n_pad} is smaller than the {nbr.shape[0]} rows")
    width = bucket_size(nbr.shape[1], minimum=1)

    def table(a):
        a = np.asarray(a)
        out = np.zeros((n_pad, width), a.dtype)
        out[: a.shape[0], : a.shape[1]] = a
        return out

    return links._replace(
        pairs=pairs_pad.astype(pairs.dtype),
        sign=pad_vector(np.asarray(links.sign), m_pad, 0),
        weight=pad_vector(np.asarray(links.weight), m_pad, 0),
        nbr=table(nbr),
        sgn=table(links.sgn),
        wgt=table(links.wgt),
    )


def rowwise(fn=None, *, static_argnames=()):
    """Run a row-by-row function as one jitted program per row bucket (a prediction on new points).

    ``fn(rows, *args, **kwargs)`` takes ``rows``, an array or a tuple of arrays sharing their leading
    axis n (the new points and anything else given per point), and returns arrays whose leading axis is
    those rows, each output row depending on its own input row only. The decorated function pads every
    array of ``rows`` with zero rows to ``bucket_size(n, 8)`` (:func:`pad_rows`), calls the jitted ``fn``
    and returns its outputs as NumPy arrays cut back to the n real rows: a new number of points inside a
    seen bucket compiles nothing, and no operation runs eagerly (each would build a program of its own).

    Parameters
    ----------
    fn : callable
        The row-by-row function; its other arguments (fitted parameters) are pytrees of arrays, or static
        when named in ``static_argnames``.
    static_argnames : sequence of str, default=()
        Keyword arguments of ``fn`` that select the program (passed to :func:`jax.jit`).

    Returns
    -------
    callable
        ``fn`` on bucket-padded rows; its ``jitted`` attribute is the program.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust._buckets import rowwise
    >>> @rowwise
    ... def sq_dist(x, c):
    ...     return ((x[:, None, :] - c[None]) ** 2).sum(-1)
    >>> sq_dist(np.zeros((3, 2)), np.ones((4, 2))).shape  # computed on 8 rows, 3 returned
    (3, 4)
    """
    if fn is None:
        return functools.partial(rowwise, static_argnames=static_argnames)
    jitted = jax.jit(fn, static_argnames=static_argnames)

    @functools.wraps(fn)
    def run(rows, *args, **kwargs):
        group = isinstance(rows, tuple)
        arrays = tuple(np.asarray(a) for a in (rows if group else (rows,)))
        n = arrays[0].shape[0]
        size = bucket_size(n, 8)
        padded = tuple(pad_rows(a, size)[0] for a in arrays)
        if group and hasattr(rows, "_fields"):  # a named tuple stays one
            padded = type(rows)(*padded)
        out = jitted(padded if group else padded[0], *args, **kwargs)
        return jax.tree_util.tree_map(lambda a: np.asarray(a)[:n], out)

    run.jitted = jitted
    return run
