"""Where a solver's inner loops run: ``"numba"`` (compiled CPU loops) or ``"xla"`` (the jitted program).

Every solver with a compiled CPU twin takes a ``backend`` argument with the same three values and resolves
it here: ``"auto"`` picks the compiled loops when JAX runs on CPU, numba imports and the twin covers the
problem at hand; ``"numba"`` insists on them (an error says why it cannot); ``"xla"`` keeps everything in
the jitted program (GPU, other families). Both backends take the same decisions from the same random
numbers, so the choice changes speed, not results.
"""

from __future__ import annotations

import jax

from ppclust.families import _numba

__all__ = ["BACKENDS", "resolve_backend"]

#: the values of every solver's ``backend`` argument
BACKENDS = ("auto", "numba", "xla")


def resolve_backend(
    backend: str, unsupported: str | None = None, *, n: int | None = None, xla_up_to: int = 0
) -> str:
    """``"numba"`` or ``"xla"``: the implementation that runs a solver's inner loops.

    Parameters
    ----------
    backend : {"auto", "numba", "xla"}
        The request. ``"auto"``: ``"numba"`` when JAX's default backend is the CPU, numba imports,
        ``unsupported`` is None and the problem has more than ``xla_up_to`` points, else ``"xla"``.
    unsupported : str or None, default=None
        None when the compiled twin covers the problem (family, dtype, algorithm, devices), else the reason
        it does not, completing the sentence "backend='numba' ..." of the ValueError raised for an explicit
        ``backend="numba"``.
    n : int or None, default=None
        The number of points (None: not considered).
    xla_up_to : int, default=0
        ``"auto"`` keeps the jitted program for problems of at most this many points, where the compiled
        loops' fixed cost per call (crossing into and out of the program) outweighs their speed; the solver
        states where its value comes from.

    Returns
    -------
    str
        ``"numba"`` or ``"xla"``.

    Raises
    ------
    ValueError
        For an unknown ``backend``, or ``"numba"`` without numba or with ``unsupported`` set.

    Examples
    --------
    >>> resolve_backend("xla")
    'xla'
    >>> resolve_backend("auto", unsupported="does not support Multinomial")
    'xla'
    >>> resolve_backend("auto", n=100, xla_up_to=1000)
    'xla'
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "auto":
        ok = unsupported is None and _numba.available() and jax.default_backend() == "cpu"
        return "numba" if ok and (n is None or n > xla_up_to) else "xla"
    if backend == "numba":
        if not _numba.available():
            raise ValueError("backend='numba' needs numba (pip install numba); backend='xla' works without")
        if unsupported is not None:
            raise ValueError(f"backend='numba' {unsupported}; use backend='xla'")
    return backend
