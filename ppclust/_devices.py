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
On a cluster, call ``jax.distributed.initialize()`` (coordinator address, process count and id,
or auto-detected under SLURM / Cloud TPU) at the start of *every* process, then run the same
code with ``devices="all"``: ``jax.devices()`` then lists the devices of all hosts, the mesh spans
them, and the ``psum`` reductions travel over the interconnect. Every process must pass the same
full data set (each host materialises only its own shards' rows on its devices).
"""

from __future__ import annotations

import jax
import numpy as np
from jax.sharding import Mesh

__all__ = ["AXIS", "make_mesh", "resolve_mesh", "pad_rows", "n_devices", "axis_sharding"]

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
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(Mesh(np.asarray(local[:m]), (axis,)), PartitionSpec(axis))
