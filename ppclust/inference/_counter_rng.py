"""A counter-based uniform for the compiled passes: point i's uniform is a hash of a per-draw seed and i.

The compiled twin of :func:`ppclust.inference.subcluster.counter_uniform`: a loop that visits some of the
points draws the uniforms of those points only, and both backends of the sub-cluster sampler consume the
same numbers (the hash is lowbias32, C. Wellons' 32-bit integer hash, applied twice per 26-/27-bit half).
"""

from __future__ import annotations

import numpy as np

from ppclust.families._numba import compile_kernel

__all__ = ["counter_uniform", "host_seed"]

_M32 = np.uint64(0xFFFFFFFF)
_H1, _H2, _H3 = np.uint64(0x7FEB352D), np.uint64(0x846CA68B), np.uint64(0x5BD1E995)
_S15, _S16 = np.uint64(15), np.uint64(16)
_S5, _S6 = np.uint64(5), np.uint64(6)


def host_seed(seed):
    """The two uint64 words a kernel takes from a seed array (two uint32, :func:`ppclust.inference.
    subcluster.counter_seed`).

    Parameters
    ----------
    seed : ndarray of uint32 of shape (2,)
        A per-draw seed.

    Examples
    --------
    >>> import numpy as np
    >>> [int(v) for v in host_seed(np.array([3, 4], np.uint32))]
    [3, 4]
    """
    return np.uint64(int(seed[0])), np.uint64(int(seed[1]))


@compile_kernel
def _mix32(h):
    """lowbias32 (C. Wellons' 32-bit integer hash), on uint64 holding 32 bits: a bijection of 32-bit words."""
    h = h & _M32
    h ^= h >> _S16
    h = (h * _H1) & _M32
    h ^= h >> _S15
    h = (h * _H2) & _M32
    h ^= h >> _S16
    return h


@compile_kernel
def counter_uniform(s0, s1, i):
    """The twin of ``subcluster.counter_uniform`` for one index ``i``: uniform on (0, 1) with 53 bits.

    Parameters
    ----------
    s0, s1 : numpy.uint64
        The two seed words (:func:`host_seed`).
    i : int
        Point index.

    Examples
    --------
    >>> import numpy as np
    >>> 0.0 < counter_uniform(np.uint64(1), np.uint64(2), 5) < 1.0
    True
    """
    a = _mix32(_mix32(np.uint64(i) ^ s0) ^ s1)
    b = _mix32(_mix32(np.uint64(i) ^ s1 ^ _H3) + s0)
    return ((a >> _S5) * 67108864.0 + (b >> _S6) + 0.5) * (1.0 / 9007199254740992.0)
