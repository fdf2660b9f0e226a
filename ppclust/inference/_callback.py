r"""Host-callback transport: how arrays cross :func:`jax.pure_callback` to the compiled CPU kernels.

Three pieces, shared by the compiled Gibbs sweep (:mod:`ppclust.inference._gibbs_cpu`) and the compiled
passes of the sub-cluster sampler (:mod:`ppclust.inference._subcluster_cpu`):

* the *wire protocol* (:func:`wire`, :func:`unwire`, :func:`wire_shape`, :func:`to_wire`,
  :func:`from_wire`): 64-bit arrays cross a callback as uint32 pairs. JAX canonicalises a callback's inputs
  and outputs with the x64 flag of the thread that runs it, not the caller's ``jax.enable_x64`` scope, so
  float64 would otherwise arrive as float32;
* the *data registry* (:func:`hold`, :class:`Wired`, :func:`wired`): a host copy of the data held for the
  duration of one compiled call, named by a token, so that the data never cross a callback (each crossing
  copies its operands);
* the *packed call* (:func:`call`): small operands and results cross packed into one uint32 vector each way
  (every array crossing has a fixed cost), and under ``vmap`` the host function runs once per chain.
  When a stop is requested (:func:`ppclust._progress.stop_requested`, SIGINT during a fit) the host
  function is not run: zeros come back and the program runs out at once, its result discarded.
"""

from __future__ import annotations

import itertools
from contextlib import contextmanager

import jax
import jax.numpy as jnp
import numpy as np

from ppclust import _progress

__all__ = [
    "wire",
    "unwire",
    "wire_shape",
    "to_wire",
    "from_wire",
    "hold",
    "Wired",
    "wired",
    "call",
    "labels_operand",
]


def wire(a):
    """``a`` (a JAX array) as it crosses a callback: 64-bit types as uint32 pairs (a trailing axis of 2).

    Parameters
    ----------
    a : jax.Array
        An operand of a callback.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> wire(jnp.zeros(3, jnp.int32)).shape
    (3,)
    """
    if np.dtype(a.dtype).itemsize == 8:
        return jax.lax.bitcast_convert_type(a, jnp.uint32)
    return a


def unwire(a, dtype):
    """Host side: the operand ``a`` as its own ``dtype`` again (inverse of :func:`wire`).

    Parameters
    ----------
    a : array-like
        The operand as it arrived on the host.
    dtype : numpy.dtype
        Its own type before :func:`wire`.

    Examples
    --------
    >>> import numpy as np
    >>> bits = np.array([1.5]).view(np.uint32).reshape(1, 2)
    >>> unwire(bits, np.dtype(np.float64))
    array([1.5])
    """
    a = np.asarray(a)
    if dtype.itemsize == 8:
        return np.ascontiguousarray(a).view(dtype)[..., 0]
    return a


def wire_shape(a):
    """The :class:`jax.ShapeDtypeStruct` of a result ``a`` as it crosses back (see :func:`to_wire`).

    Parameters
    ----------
    a : jax.ShapeDtypeStruct
        Shape and type of a result of the host function.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> wire_shape(jax.ShapeDtypeStruct((4,), jnp.int32)).shape
    (4,)
    """
    if a.dtype.itemsize == 8:
        return jax.ShapeDtypeStruct(a.shape + (2,), jnp.uint32)
    return jax.ShapeDtypeStruct(a.shape, a.dtype)


def to_wire(a):
    """Host side: a result ``a`` (NumPy) as it crosses back: 64-bit types as uint32 pairs.

    Parameters
    ----------
    a : numpy.ndarray
        A result of the host function.

    Examples
    --------
    >>> import numpy as np
    >>> to_wire(np.zeros(3)).shape
    (3, 2)
    """
    if a.dtype.itemsize == 8:
        return np.ascontiguousarray(a).view(np.uint32).reshape(a.shape + (2,))
    return a


def from_wire(r, dtype):
    """A result ``r`` back in JAX as its own ``dtype`` (inverse of :func:`to_wire`).

    Parameters
    ----------
    r : jax.Array
        The result as it crossed back.
    dtype : dtype
        Its own type before :func:`to_wire`.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from_wire(jnp.zeros(2, jnp.int32), np.int32).shape
    (2,)
    """
    if np.dtype(dtype).itemsize == 8:
        return jax.lax.bitcast_convert_type(r, dtype)
    return r


#: host copies of the data by token (:func:`hold`): a callback given a held :class:`Wired` reads ``x`` here
#: instead of receiving it as an operand, which ``pure_callback`` copies on every call
_HELD: dict[int, np.ndarray] = {}
_TOKENS = itertools.count(1)


@contextmanager
def hold(x):
    """Hold a host copy of the data ``x`` for the duration of a ``with`` block; yields its token (an int) for
    :func:`wired`. The sampler holds its data around one compiled call (``subcluster.sample``): the token is
    an operand of the program (no recompilation per data set) and the callbacks look the data up by it.

    Parameters
    ----------
    x : array-like of shape (n, d)
        The data; a private, C-contiguous copy is held until the block ends.

    Examples
    --------
    >>> import numpy as np
    >>> with hold(np.zeros((3, 2))) as token:
    ...     isinstance(token, int)
    True
    """
    token = next(_TOKENS)
    _HELD[token] = np.array(x, copy=True)  # owned, writable, C-contiguous
    try:
        yield token
    finally:
        _HELD.pop(token, None)


@jax.tree_util.register_pytree_node_class
class Wired:
    """The data already in its callback form (:func:`wired`): ``bits`` (uint32 pairs for 64-bit types; None
    when held), ``dtype`` the array's own type (static), ``centre`` its column means (the shift of the
    centred sums, as ``families._centered_scatter`` takes it), ``token`` (a () int32 array, or None) the
    :func:`hold` token of the data: the callbacks then read the held host copy (``x`` never crosses them).

    Parameters
    ----------
    bits : jax.Array or None
        The data as :func:`wire` gives it; None when held.
    dtype : dtype
        The data's own type (static: the pytree's auxiliary data).
    centre : jax.Array of shape (d,)
        Column means of the data.
    token : jax.Array of int32 of shape () or None, default=None
        :func:`hold` token of the data, None when ``bits`` are passed instead.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> w = wired(jnp.ones((3, 2), jnp.float32))
    >>> isinstance(w, Wired), w.dtype
    (True, dtype('float32'))
    """

    def __init__(self, bits, dtype, centre, token=None):
        self.bits, self.dtype, self.centre, self.token = bits, np.dtype(dtype), centre, token

    def tree_flatten(self):
        return (self.bits, self.centre, self.token), self.dtype

    @classmethod
    def tree_unflatten(cls, dtype, leaves):
        return cls(leaves[0], dtype, leaves[1], leaves[2])


def wired(x, token=None):
    """The data ``x`` (n, d) in the form the callbacks take it, with its column means: a :class:`Wired`.
    Without ``token``, 64-bit types as uint32 pairs (:func:`wire`): the conversion is a copy of ``x``
    (about as long as the callback's own operand copy) and the means a pass over it, so the sampler makes
    both once per chain, not once per call. With the ``token`` of :func:`hold` (the sampler's path), only
    the token crosses the callbacks.

    Parameters
    ----------
    x : jax.Array of shape (n, d)
        The data.
    token : int or None, default=None
        :func:`hold` token of a held host copy of ``x``; None sends ``x`` itself.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> wired(jnp.ones((3, 2), jnp.float32)).centre.tolist()
    [1.0, 1.0]
    """
    if token is not None:
        return Wired(None, x.dtype, x.mean(0), jnp.asarray(token, jnp.int32))
    return Wired(wire(x), np.dtype(x.dtype), x.mean(0))


#: operands and results of at most this many 32-bit words cross a callback packed into one uint32 vector
#: each way (:func:`call`): every array crossing has a fixed cost (a device put or a host view), which a
#: move's dozen scalars and small parameter arrays would otherwise pay one by one
_PACK_MAX = 1 << 12


def _as_words(a):
    """A wired array (:func:`wire`: no 64-bit types) as uint32 words, in JAX (bool and uint8: one word per
    element)."""
    if a.dtype in (jnp.bool_, jnp.uint8):
        return a.astype(jnp.uint32)
    return a if a.dtype == jnp.uint32 else jax.lax.bitcast_convert_type(a, jnp.uint32)


def _from_words(w, dtype):
    """Inverse of :func:`_as_words`, in JAX."""
    if dtype == jnp.bool_:
        return w != 0
    if dtype == jnp.uint8:
        return w.astype(jnp.uint8)
    return w if dtype == jnp.uint32 else jax.lax.bitcast_convert_type(w, dtype)


def _np_from_words(w, dtype):
    """Inverse of :func:`_as_words`, on the host."""
    if dtype == np.bool_:
        return w != 0
    return w.astype(np.uint8) if dtype == np.uint8 else np.ascontiguousarray(w).view(dtype)


def _np_as_words(a):
    """:func:`_as_words` on the host."""
    a = np.ascontiguousarray(a)
    return a.astype(np.uint32) if a.dtype in (np.bool_, np.uint8) else a.view(np.uint32)


def call(host, outs, args):
    """``pure_callback`` with 64-bit operands as uint32 pairs (:func:`wire`; an operand given as
    :class:`Wired` is passed as it is, or as its :func:`hold` token, the callback reading the held data).
    Operands of at most ``_PACK_MAX`` words cross packed into one uint32 vector, results likewise (the
    sizes are static: JAX slices and bitcasts them back, the host views them). Under ``vmap`` the chains
    come in one call (``expand_dims``: leading batch axes, size 1 where an operand is shared) and ``host``
    runs once per chain (each kernel is multi-threaded over the points).

    Parameters
    ----------
    host : callable
        Host function taking the operands (NumPy, own types; held data for a held :class:`Wired`) and
        returning a sequence of arrays matching ``outs``.
    outs : sequence of jax.ShapeDtypeStruct
        Shapes and types of the results.
    args : sequence of jax.Array or Wired
        The operands.

    Examples
    --------
    >>> import jax, jax.numpy as jnp, numpy as np
    >>> (out,) = call(lambda a: (np.asarray(a) * 2,), (jax.ShapeDtypeStruct((3,), jnp.int32),),
    ...               (jnp.arange(3, dtype=jnp.int32),))
    >>> out.tolist()
    [0, 2, 4]
    """
    dtypes = [a.dtype if isinstance(a, Wired) else np.dtype(a.dtype) for a in args]
    held = [isinstance(a, Wired) and a.token is not None for a in args]
    wired_args = [
        a.token if h else a.bits if isinstance(a, Wired) else wire(a) for a, h in zip(args, held, strict=True)
    ]
    core = [a.ndim for a in wired_args]
    shapes = [tuple(a.shape) for a in wired_args]
    wdt = [np.dtype(a.dtype) for a in wired_args]
    packed = [i for i, a in enumerate(wired_args) if a.size <= _PACK_MAX]
    big = [i for i in range(len(wired_args)) if i not in packed]
    sizes = [int(np.prod(shapes[i], dtype=np.int64)) for i in packed]
    wire_outs = [wire_shape(o) for o in outs]
    out_small = [r for r, o in enumerate(wire_outs) if int(np.prod(o.shape, dtype=np.int64)) <= _PACK_MAX]
    out_big = [r for r in range(len(outs)) if r not in out_small]
    out_sizes = [int(np.prod(wire_outs[r].shape, dtype=np.int64)) for r in out_small]

    def operand(a, t, h):
        return _HELD[int(a)] if h else unwire(a, t)

    def unpack(words, rest):
        """The operands (batch axes in front) from the packed words and the big operands."""
        nb = words.ndim - 1
        ops = [None] * len(wired_args)
        o = 0
        for i, m in zip(packed, sizes, strict=True):
            ops[i] = _np_from_words(words[..., o : o + m], wdt[i]).reshape(words.shape[:nb] + shapes[i])
            o += m
        for i, a in zip(big, rest, strict=True):
            ops[i] = a
        return ops

    def run_all(*wired):
        nb = wired[0].ndim - core[0]
        batch = np.broadcast_shapes(*(a.shape[:nb] for a in wired))
        if not batch:
            res = host(*[operand(a, t, h) for a, t, h in zip(wired, dtypes, held, strict=True)])
            return [to_wire(np.asarray(r)) for r in res], ()
        per = []
        for ix in np.ndindex(*batch):
            one = [a[tuple(j if a.shape[m] > 1 else 0 for m, j in enumerate(ix))] for a in wired]
            res = host(*[operand(a, t, h) for a, t, h in zip(one, dtypes, held, strict=True)])
            per.append([np.asarray(r) for r in res])
        return [
            to_wire(np.stack([p[r] for p in per]).reshape(batch + per[0][r].shape)) for r in range(len(outs))
        ], batch

    def run(words, *rest):  # (the operands arrive as jax Arrays: slicing them would dispatch XLA ops)
        if _progress.stop_requested():  # a stopped fit: its program runs out at once, its result unread
            nb = np.ndim(words) - 1
            batch = np.broadcast_shapes(*(np.shape(a)[:nb] for a in (words, *rest)))
            return tuple(np.zeros(r.shape, r.dtype) for r in result_shapes(batch))
        res, batch = run_all(*unpack(np.asarray(words), [np.asarray(a) for a in rest]))
        flat = [_np_as_words(res[r]).reshape(batch + (-1,)) for r in out_small]
        small = np.concatenate(flat, -1) if flat else np.zeros(batch + (0,), np.uint32)
        return (small,) + tuple(res[r] for r in out_big)

    def result_shapes(batch):
        small = jax.ShapeDtypeStruct(batch + (sum(out_sizes),), np.uint32)
        return (small,) + tuple(
            jax.ShapeDtypeStruct(batch + wire_outs[r].shape, wire_outs[r].dtype) for r in out_big
        )

    words = (
        jnp.concatenate([_as_words(wired_args[i]).reshape(-1) for i in packed])
        if packed
        else jnp.zeros((0,), jnp.uint32)
    )
    res = jax.pure_callback(
        run,
        (jax.ShapeDtypeStruct((sum(out_sizes),), jnp.uint32),) + tuple(wire_outs[r] for r in out_big),
        words,
        *[wired_args[i] for i in big],
        vmap_method="expand_dims",
    )
    got = [None] * len(outs)
    o = 0
    for r, m in zip(out_small, out_sizes, strict=True):
        got[r] = _from_words(res[0][o : o + m], wire_outs[r].dtype).reshape(wire_outs[r].shape)
        o += m
    for r, a in zip(out_big, res[1:], strict=True):
        got[r] = a
    return tuple(from_wire(r, o.dtype) for r, o in zip(got, outs, strict=True))


def labels_operand(labels):
    """``labels`` as a callback operand: uint8 labels as they are (within a sweep of :func:`ppclust.inference.
    subcluster.step`: a quarter of the bytes of int32, and the fixed cost of a crossing grows with them),
    else int32. The kernels compile for either.

    Parameters
    ----------
    labels : jax.Array of int
        Point labels.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> labels_operand(jnp.zeros(3, jnp.int16)).dtype
    dtype('int32')
    """
    return labels if labels.dtype == jnp.uint8 else labels.astype(jnp.int32)
