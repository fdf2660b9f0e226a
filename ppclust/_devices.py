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

__all__ = ["AXIS", "make_mesh", "resolve_mesh", "pad_rows", "n_devices"]

AXIS = "data"
_MSG = "`devices` must be None, 'all', an int >= 1 or a list of devices"


def make_mesh(devices) -> Mesh:
    """1-D mesh with axis ``"data"`` over a sequence of devices."""
    devs = np.asarray(list(devices), dtype=object)
    if devs.size == 0:
        raise ValueError("`devices` is empty")
    return Mesh(devs.reshape(-1), (AXIS,))


def resolve_mesh(devices) -> Mesh | None:
    """Turn an estimator's ``devices`` option into a Mesh, or None for the single-device path."""
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
            raise ValueError(f"`devices`={devices} but {len(avail)} device(s) are available "
                             "(on CPU: XLA_FLAGS=--xla_force_host_platform_device_count=N)")
        return None if devices == 1 else make_mesh(avail[:devices])
    try:
        return make_mesh(devices)
    except TypeError:
        raise ValueError(f"{_MSG}, got {devices!r}") from None


def n_devices(mesh: Mesh | None) -> int:
    return 1 if mesh is None else int(mesh.devices.size)


def pad_rows(n: int, mesh: Mesh | None) -> int:
    """Padded row count: the smallest multiple of the device count that is >= n."""
    m = n_devices(mesh)
    return -(-n // m) * m
