"""numba compilation of the compiled twins: availability, the disk cache and its source dependencies.

Every compiled twin of :mod:`ppclust.families` and every kernel that inlines them is made by
:func:`compile_kernel`, so that editing any twin module recompiles the kernels built from it.
"""

from __future__ import annotations

import os
from pathlib import Path

from ppclust import _jax  # noqa: F401  (sets NUMBA_CACHE_DIR before the cache=True kernels are made)

try:  # numba is a run-time dependency; without it (e.g. a Python it has no wheel for) XLA paths run
    import numba
except ImportError:  # pragma: no cover - exercised only where numba is missing
    numba = None

__all__ = ["TWIN_SOURCES", "available", "compile_kernel", "inline_kernel"]

#: The source files of the compiled twins: folded into the cache stamp of every kernel made here (numba keys
#: a cached function on its own source file only, and the kernels inline the twins).
TWIN_SOURCES = tuple(
    str(Path(__file__).with_name(f))
    for f in ("_numba.py", "_cholesky_cpu.py", "_niw_cpu.py", "_densities_cpu.py")
)


def available() -> bool:
    """Whether numba imports, so that the compiled kernels can run.

    Returns
    -------
    bool
        True when numba is installed.

    Examples
    --------
    >>> isinstance(available(), bool)
    True
    """
    return numba is not None


def compile_kernel(fn, *, depends=(), **options):
    """``numba.njit`` with the disk cache where a cache location is writable (identity without numba).

    Parameters
    ----------
    fn : callable
        The Python function to compile (nopython mode, ``nogil``, ``error_model="numpy"``).
    depends : tuple of str, default ()
        Further source files whose (inlined) functions ``fn`` compiles in; with :data:`TWIN_SOURCES` they
        are folded into the cache's source stamp, so that editing them recompiles ``fn`` too.
    **options
        Further ``numba.njit`` options (``inline="always"``, ``parallel=True``, ``fastmath=...``).

    Returns
    -------
    numba dispatcher, or ``fn`` itself without numba

    Notes
    -----
    The stamp is extended through numba's cache object; should that private attribute move, the cache falls
    back to numba's own rule (the function's own file).

    Examples
    --------
    >>> add = compile_kernel(lambda a, b: a + b)
    >>> add(1.0, 2.0)
    3.0
    """
    if numba is None:
        return fn
    try:  # compiled code cached on disk (next to the module, else numba's user cache directory)
        dispatcher = numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    except RuntimeError:  # no writable cache location (read-only install and home): compile per process
        return numba.njit(nogil=True, error_model="numpy", **options)(fn)
    try:
        cache_file = dispatcher._cache._cache_file
        extra = tuple((os.stat(f).st_mtime, os.stat(f).st_size) for f in TWIN_SOURCES + tuple(depends))
        cache_file._source_stamp = (cache_file._source_stamp, extra)
    except (AttributeError, OSError):  # pragma: no cover - numba internals changed
        pass
    return dispatcher


def inline_kernel(fn):
    """A kernel called from the sweeps, compiled on its own and left to LLVM to inline.

    Parameters
    ----------
    fn : callable
        The Python function to compile.

    Returns
    -------
    numba dispatcher, or ``fn`` itself without numba

    Notes
    -----
    numba's IR inlining (``inline="always"``) re-runs type inference of every inlined body at every call
    site, which makes the first compilation of a sweep slow; LLVM inlining of a separately compiled function
    costs nothing of that and keeps the sweep as fast.

    Examples
    --------
    >>> sq = inline_kernel(lambda a: a * a)
    >>> sq(3.0)
    9.0
    """
    return compile_kernel(fn)
