"""Data-parallel helpers: a 1-D device mesh over axis ``"data"`` and zero-weight row padding.

The data-parallel solvers (EM sufficient statistics in :mod:`ppclust.inference.em`, the delayed
DP-means / RDP-means pass in :mod:`ppclust.inference.dpmeans`) split the points over the devices of
a :class:`jax.sharding.Mesh` with one axis named ``"data"`` (``jax.shard_map``), compute per-device
partial sums and reduce them with ``jax.lax.psum``. ``n`` is padded to a multiple of the device
count with zero-weight points, which contribute nothing to any sum.

Devices
-------
``devices=None`` (default) or ``1``: the plain single-device path. ``"all"``: every device of
``jax.devices()``; an int ``m``: the first ``m`` devices; a sequence of devices or a ready
``Mesh`` (its first axis is used, renamed ``"data"``) are also accepted.

On one CPU, simulate devices with ``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (set
before jax is imported). GPUs are picked up as they are.

Independent runs (chains, restarts)
-----------------------------------
Embarrassingly parallel axes use :func:`axis_sharding`: TVClust's Gibbs chains
(:func:`ppclust.inference.gibbs.sample`, axis ``"chains"``) and the Hartigan engine's restarts
(:func:`ppclust.inference.hartigan.fit`, used by CEC-IB and C3L, axis ``"restarts"``). The leading
axis of the vmapped state is sharded over a 1-D mesh of *local* devices; every run stays on its
device (no communication inside a run) and the results are identical to the single-device ones
(same keys per run). ``devices="auto"`` (their default) uses every local device when the number of
runs is a multiple of their count and one device otherwise; ``None``/``1``: one device; an int
``m``: the first ``m`` local devices (the number of runs must be a multiple of ``m``).

Single-device by design: SMIC
-----------------------------
SMIC (:mod:`ppclust.inference.smic`) stays on one device. Its eigenproblem is solved by scipy's
sparse ``eigsh`` (ARPACK) on the host: the Lanczos iteration calls the kernel mat-vec products from
Python one at a time, so there is no jitted program to shard, and moving each product to devices
would cost a host-device round trip per iteration. The sparse kernel is O(n t) memory (t nearest
neighbours per point), small enough for one host at any n the O(n t) solver handles.

Multi-host
----------
Two ways to use several processes (hosts), each started with ``jax.distributed.initialize()``
(coordinator address, process count and id; auto-detected under SLURM and on Cloud TPU):

* **Rows spread over processes** (:mod:`ppclust.distributed`): every process holds only its own rows
  and passes ``ppclust.distributed.process_rows(X_local)``, a global :class:`jax.Array` whose rows are
  the processes' rows in process order, to ``fit``. Each process's block is padded with zero-weight
  rows to one shared length (:func:`process_block`: the bucket of the largest count, a multiple of the
  local device count), so processes may hold different numbers of rows; :class:`RowLayout` records the
  counts, and the solvers weigh every row by :func:`layout_weights`. The data-parallel solvers then
  run as one program over the mesh of every process's devices (:func:`global_mesh`); their sums
  travel over the interconnect and their results (model parameters) are replicated on every process.
  Host-side reductions (a start's D^2 sums, a model's moments) use :func:`process_sum` and
  :func:`process_gather`; CEC's Hartigan polish (:func:`ppclust.inference.hartigan.fit_batch_rows`) hands
  the clusters' statistics from process to process with :func:`process_gather`.
* **Every process passes the same full data set** with ``devices="all"``: ``jax.devices()`` lists the
  devices of all hosts, the mesh spans them, and each host materialises only its own shards' rows on
  its devices (the whole data set is still read by every process).
"""

from __future__ import annotations

import weakref
from typing import NamedTuple

import jax
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from ppclust._buckets import bucket_size
from ppclust._jax import x64

__all__ = [
    "AXIS",
    "make_mesh",
    "resolve_mesh",
    "pad_rows",
    "n_devices",
    "axis_sharding",
    "RowLayout",
    "global_mesh",
    "process_block",
    "layout_of",
    "register_layout",
    "is_process_rows",
    "from_process_rows",
    "layout_weights",
    "local_rows",
    "process_sum",
    "process_gather",
]

AXIS = "data"
_MSG = "`devices` must be None, 'all', an int >= 1 or a list of devices"


def make_mesh(devices) -> Mesh:
    """One-dimensional mesh with axis ``"data"`` (:data:`AXIS`) over a sequence of devices.

    Parameters
    ----------
    devices : sequence of jax.Device
        At least one device.

    Returns
    -------
    jax.sharding.Mesh

    Examples
    --------
    >>> import jax
    >>> from ppclust._devices import make_mesh
    >>> make_mesh(jax.devices()[:1]).axis_names
    ('data',)
    """
    devs = np.asarray(list(devices), dtype=object)
    if devs.size == 0:
        raise ValueError("`devices` is empty")
    return Mesh(devs.reshape(-1), (AXIS,))


def resolve_mesh(devices) -> Mesh | None:
    """Turn an estimator's ``devices`` option into a mesh, or ``None`` for the single-device path.

    Parameters
    ----------
    devices : None, "all", int >= 1, sequence of devices or Mesh
        ``None`` or ``1``: one device (``None`` is returned); ``"all"``: every device; an int ``m``: the
        first ``m`` devices; a list or mesh: those devices.

    Returns
    -------
    jax.sharding.Mesh or None

    Examples
    --------
    >>> from ppclust._devices import resolve_mesh
    >>> resolve_mesh(None) is None and resolve_mesh(1) is None
    True
    >>> resolve_mesh("all").axis_names
    ('data',)
    """
    if devices is None:
        return None
    if isinstance(devices, Mesh):
        return make_mesh(devices.devices.reshape(-1))
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(f"{_MSG}, got {devices!r}")
        return make_mesh(jax.devices())
    if isinstance(devices, (int, np.integer)) and not isinstance(devices, bool):
        avail = jax.devices()
        if not 1 <= devices <= len(avail):
            raise ValueError(
                f"`devices`={devices} but {len(avail)} device(s) are available "
                "(on CPU: XLA_FLAGS=--xla_force_host_platform_device_count=N)"
            )
        return None if devices == 1 else make_mesh(avail[:devices])
    try:
        return make_mesh(devices)
    except TypeError:
        raise ValueError(f"{_MSG}, got {devices!r}") from None


def n_devices(mesh: Mesh | None) -> int:
    """Number of devices of a mesh (1 for ``None``).

    Parameters
    ----------
    mesh : jax.sharding.Mesh or None
        A mesh from :func:`resolve_mesh`.

    Returns
    -------
    int

    Examples
    --------
    >>> from ppclust._devices import n_devices
    >>> n_devices(None)
    1
    """
    return 1 if mesh is None else int(mesh.devices.size)


def pad_rows(n: int, mesh: Mesh | None) -> int:
    """Padded row count: the smallest multiple of the mesh's device count that is at least ``n``.

    Parameters
    ----------
    n : int
        Number of rows.
    mesh : jax.sharding.Mesh or None
        The mesh the rows are split over (``None``: one device).

    Returns
    -------
    int

    Examples
    --------
    >>> from ppclust._devices import pad_rows
    >>> pad_rows(10, None)
    10
    """
    m = n_devices(mesh)
    return -(-n // m) * m


def axis_sharding(n_items: int, devices, axis: str, what: str | None = None):
    """Sharding of a leading axis of ``n_items`` independent runs over the local devices, or ``None``.

    Parameters
    ----------
    n_items : int
        Length of the leading axis (restarts, chains).
    devices : "auto", None or int
        ``"auto"``: every local device when there are several and ``n_items`` is a multiple of their
        count, else ``None``; ``None`` or ``1``: ``None``; an int ``m`` in ``[1, #local devices]``:
        ``m`` devices (``n_items`` must be a multiple of ``m``).
    axis : str
        Name of the mesh axis.
    what : str, optional
        Name of the count in error messages (default ``"n_" + axis``).

    Returns
    -------
    jax.sharding.NamedSharding or None

    Examples
    --------
    >>> from ppclust._devices import axis_sharding
    >>> axis_sharding(4, None, "chains") is None
    True
    """
    local = jax.local_devices()
    what = what or f"n_{axis}"
    is_int = isinstance(devices, (int, np.integer)) and not isinstance(devices, bool)
    if devices is None or (is_int and devices == 1):
        return None
    if isinstance(devices, str) and devices == "auto":
        m = len(local)
        if m < 2 or n_items % m:
            return None
    elif is_int and 1 <= devices <= len(local):
        m = int(devices)
        if n_items % m:
            raise ValueError(f"{what}={n_items} must be a multiple of devices={m}")
    else:
        raise ValueError(f"devices must be 'auto', None or an int in [1, {len(local)}], got {devices!r}")
    return NamedSharding(Mesh(np.asarray(local[:m]), (axis,)), PartitionSpec(axis))


# ----------------------------------------------------------------------------------- rows over processes


class RowLayout(NamedTuple):
    """How the rows of a global array (:func:`from_process_rows`) are spread over the processes.

    Process ``p`` holds the global positions ``[p * block, (p + 1) * block)``; its first ``counts[p]``
    are real rows, the rest zero-weight padding.

    Attributes
    ----------
    counts : tuple of int
        Real rows held by each process, in process order.
    block : int
        Rows (real and padding) of each process's block.

    Examples
    --------
    >>> lay = RowLayout((3, 2), 4)
    >>> lay.n, lay.offsets, lay.positions([0, 3, 4]).tolist()
    (5, (0, 3), [0, 4, 5])
    """

    counts: tuple
    block: int

    @property
    def n(self) -> int:
        """Number of real rows over all processes."""
        return int(sum(self.counts))

    @property
    def offsets(self) -> tuple:
        """Global row index of each process's first real row."""
        return tuple(int(v) for v in np.concatenate([[0], np.cumsum(self.counts)[:-1]]))

    def positions(self, rows) -> np.ndarray:
        """Positions in the padded global array of global row indices ``rows`` (int64)."""
        rows = np.asarray(rows, dtype=np.int64)
        if rows.size and (rows.min() < 0 or rows.max() >= self.n):
            raise ValueError(f"row indices must lie in [0, {self.n}), got {rows.min()}..{rows.max()}")
        ends = np.cumsum(self.counts)
        proc = np.searchsorted(ends, rows, side="right")
        return rows - np.asarray(self.offsets, dtype=np.int64)[proc] + proc * self.block


def global_mesh() -> Mesh:
    """The 1-D ``"data"`` mesh over every process's devices, ordered by process (then device id).

    Returns
    -------
    jax.sharding.Mesh

    Examples
    --------
    >>> global_mesh().axis_names
    ('data',)
    """
    devs = sorted(jax.devices(), key=lambda d: (d.process_index, d.id))
    return make_mesh(devs)


def process_block(counts) -> int:
    """Rows of each process's block: the bucket (:func:`ppclust._buckets.bucket_size`) of the largest
    count, rounded up to a multiple of the local device count (every process has as many devices).

    Parameters
    ----------
    counts : sequence of int
        Real rows per process.

    Returns
    -------
    int

    Examples
    --------
    >>> process_block([100, 37])
    128
    """
    m = jax.local_device_count()
    b = bucket_size(max(int(c) for c in counts))
    return -(-b // m) * m


_LAYOUTS: dict = {}


def register_layout(arr, layout: RowLayout):
    """Record ``arr``'s :class:`RowLayout` (for :func:`layout_of`); returns ``arr``.

    Parameters
    ----------
    arr : jax.Array
        A global array whose first axis follows ``layout``.
    layout : RowLayout
        Its layout.

    Returns
    -------
    jax.Array
        ``arr``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> a = register_layout(jnp.zeros(4), RowLayout((3,), 4))
    >>> layout_of(a).counts
    (3,)
    """
    for key in [k for k, (ref, _) in _LAYOUTS.items() if ref() is None]:
        del _LAYOUTS[key]
    _LAYOUTS[id(arr)] = (weakref.ref(arr), layout)
    return arr


def is_process_rows(arr) -> bool:
    """Whether ``arr`` is a global array of rows spread over processes: made by :func:`from_process_rows`
    (registered), or a :class:`jax.Array` that this process cannot address whole.

    Parameters
    ----------
    arr : object
        Anything.

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> is_process_rows(np.zeros((2, 2)))
    False
    """
    if not isinstance(arr, jax.Array):
        return False
    entry = _LAYOUTS.get(id(arr))
    if entry is not None and entry[0]() is arr:
        return True
    return not arr.is_fully_addressable


def layout_of(arr) -> RowLayout:
    """The :class:`RowLayout` of a global array: the registered one, else equal blocks without padding.

    Parameters
    ----------
    arr : jax.Array
        A global array.

    Returns
    -------
    RowLayout

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> layout_of(jnp.zeros((6, 2))).counts
    (6,)
    """
    entry = _LAYOUTS.get(id(arr))
    if entry is not None and entry[0]() is arr:
        return entry[1]
    p = jax.process_count()
    n = int(arr.shape[0])
    if n % p:
        raise ValueError(f"a global array of {n} rows cannot be split evenly over {p} processes")
    return RowLayout((n // p,) * p, n // p)


def from_process_rows(local, layout: RowLayout, fill=0):
    """Assemble the global array whose block ``p`` holds process ``p``'s rows ``local`` padded with ``fill``.

    Parameters
    ----------
    local : array-like of shape (counts[this process], ...)
        This process's rows.
    layout : RowLayout
        The layout (the same on every process).
    fill : scalar, default=0
        Value of the padding rows.

    Returns
    -------
    jax.Array of shape (block * process_count, ...)
        Sharded by rows over :func:`global_mesh`; registered with ``layout``.

    Examples
    --------
    >>> import numpy as np
    >>> a = from_process_rows(np.ones((3, 2)), RowLayout((3,), 32))
    >>> a.shape, float(a.sum())
    ((32, 2), 6.0)
    """
    local = np.asarray(local)
    me = jax.process_index()
    if local.shape[0] != layout.counts[me]:
        raise ValueError(f"process {me} passed {local.shape[0]} rows, its layout says {layout.counts[me]}")
    padded = np.full((layout.block,) + local.shape[1:], fill, dtype=local.dtype)
    padded[: local.shape[0]] = local
    spec = PartitionSpec(AXIS, *([None] * (local.ndim - 1)))
    sharding = NamedSharding(global_mesh(), spec)
    shape = (layout.block * len(layout.counts),) + local.shape[1:]
    with x64():  # float64 rows stay float64
        arr = jax.make_array_from_process_local_data(sharding, padded, shape)
    return register_layout(arr, layout)


def layout_weights(layout: RowLayout, dtype=np.float64):
    """The global 0/1 row weights of ``layout`` (0 on padding), sharded like the rows.

    Parameters
    ----------
    layout : RowLayout
        The layout.
    dtype : numpy dtype, default=float64
        dtype of the weights.

    Returns
    -------
    jax.Array of shape (block * process_count,)

    Examples
    --------
    >>> layout_weights(RowLayout((3,), 4)).tolist()
    [1.0, 1.0, 1.0, 0.0]
    """
    me = jax.process_index()
    return from_process_rows(np.ones(layout.counts[me], dtype=dtype), layout, 0)


def local_rows(arr, layout: RowLayout | None = None) -> np.ndarray:
    """This process's real rows of a global array, as NumPy.

    Parameters
    ----------
    arr : jax.Array
        A global array sharded by rows (or any array: then all its rows).
    layout : RowLayout, optional
        Its layout (default :func:`layout_of`).

    Returns
    -------
    ndarray of shape (counts[this process], ...)

    Examples
    --------
    >>> import numpy as np
    >>> a = from_process_rows(np.arange(3.0), RowLayout((3,), 4))
    >>> local_rows(a).tolist()
    [0.0, 1.0, 2.0]
    """
    if not isinstance(arr, jax.Array):
        return np.asarray(arr)
    layout = layout_of(arr) if layout is None else layout
    me = jax.process_index()
    start = me * layout.block
    parts, seen = [], set()
    for shard in sorted(arr.addressable_shards, key=lambda s: s.index[0].start or 0):
        lo = shard.index[0].start or 0
        if lo in seen:  # replicated over another local axis
            continue
        seen.add(lo)
        parts.append(np.asarray(shard.data))
    block = np.concatenate(parts) if len(parts) > 1 else parts[0]
    if block.shape[0] != layout.block:  # the whole array (one process, or replicated)
        block = block[start : start + layout.block]
    return block[: layout.counts[me]]


def process_sum(value) -> np.ndarray:
    """The sum over processes of a NumPy array of the same shape on every process.

    Parameters
    ----------
    value : array-like
        This process's part.

    Returns
    -------
    ndarray
        The sum (the same on every process).

    Examples
    --------
    >>> process_sum([1.0, 2.0]).tolist()
    [1.0, 2.0]
    """
    return process_gather(value).sum(0)


def process_gather(value) -> np.ndarray:
    """Every process's NumPy array (same shape on every process), stacked in process order.

    Parameters
    ----------
    value : array-like
        This process's part.

    Returns
    -------
    ndarray of shape (process_count, ...)
        The same on every process.

    Examples
    --------
    >>> process_gather(3).tolist()
    [3]
    """
    value = np.asarray(value)
    if jax.process_count() == 1:
        return value[None]
    if value.size == 0:
        return np.zeros((jax.process_count(),) + value.shape, value.dtype)
    from jax.experimental import multihost_utils

    return np.asarray(multihost_utils.process_allgather(value)).reshape((-1,) + value.shape)
