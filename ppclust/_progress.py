"""Progress bars and log messages for long fits (one place for the policy).

Estimators whose fit can take more than a few seconds take ``progress_bar=True`` (NumPyro's name) and
report through :func:`bar`:

* A bar is shown only when someone can see it: in a Jupyter kernel, or when stderr is a terminal; never
  when the ``CI`` environment variable is set. ``PPCLUST_PROGRESS=1`` forces bars on (even in CI or
  into a pipe), ``PPCLUST_PROGRESS=0`` turns them off everywhere; ``progress_bar=False`` always wins.
* Bars use ``tqdm``: the widget in a Jupyter kernel with ``ipywidgets`` installed, the text bar
  otherwise (which Jupyter also renders in place), so there is no "IProgress not found" warning.
* Messages (what ran, how long it took) go to the ``logging`` logger ``"ppclust"``, never to ``print``;
  ``logging.getLogger("ppclust").setLevel(logging.INFO)`` (with a handler) shows them.

The same drivers make a fit stoppable (:func:`interruptible`): during a fit, SIGINT (Ctrl-C in a terminal,
"interrupt kernel" in Jupyter) records a stop request. Every driver returns to Python between pieces of
bounded work (a chunk of sweeps, restarts or annealing steps) and calls :func:`check`, which raises
``KeyboardInterrupt``. While a compiled program runs (:func:`run`, :func:`wait`: a polling wait, as a
blocking one keeps Python's signal handlers from running), the request is raised once the program has
run out, which is at once: compiled CPU kernels called back from it read :func:`stop_requested` and
return without working. Outside a program SIGINT raises at once, as by default; the request stays
recorded until the fit ends, so a raise swallowed on the way (inside a garbage-collector callback) is
raised again at the next check or at the end of the fit. A second SIGINT raises at once.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager

import jax

__all__ = ["logger", "enabled", "bar", "Bar", "interruptible", "stop_requested", "check", "wait", "run"]

logger = logging.getLogger("ppclust")

_ON = {"1", "true", "yes", "on", "force"}
_OFF = {"0", "false", "no", "off"}


def _in_kernel() -> bool:
    """True inside a Jupyter (IPython) kernel, where stderr is not a TTY but a bar is seen."""
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return False
    try:
        shell = ipython.get_ipython()
    except Exception:  # noqa: BLE001 - a broken IPython install only means "not a kernel"
        return False
    return shell is not None and hasattr(shell, "kernel")


def enabled(progress_bar: bool = True) -> bool:
    """Whether a progress bar is shown for an estimator's ``progress_bar`` setting.

    Parameters
    ----------
    progress_bar : bool, default True
        The estimator's setting; ``False`` always hides the bar.

    Returns
    -------
    bool
        ``PPCLUST_PROGRESS`` (``1``/``on`` or ``0``/``off``) decides when set; otherwise no bar under
        ``CI``, a bar in a Jupyter kernel, else a bar when stderr is a terminal.

    Examples
    --------
    >>> from ppclust._progress import enabled
    >>> enabled(progress_bar=False)
    False
    """
    if not progress_bar:
        return False
    forced = os.environ.get("PPCLUST_PROGRESS", "").strip().lower()
    if forced in _OFF:
        return False
    if forced in _ON:
        return True
    if os.environ.get("CI"):
        return False
    if _in_kernel():
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # closed or replaced stderr
        return False


def _tqdm_class():
    if _in_kernel():
        try:
            import ipywidgets  # noqa: F401
            from tqdm.notebook import tqdm

            return tqdm
        except ImportError:
            pass
    from tqdm.std import tqdm

    return tqdm


class Bar:
    """A tqdm bar, or a no-op with the same methods when bars are off; logs its total time on close.

    Parameters
    ----------
    total : int
        Number of steps.
    desc : str
        Label of the bar and of the log line.
    unit : str
        Name of one step.
    show : bool
        Whether to draw the bar (see :func:`enabled`).

    Examples
    --------
    >>> from ppclust._progress import Bar
    >>> with Bar(3, "sweeps", "sweep", show=False) as b:
    ...     b.update(3)
    >>> b.n
    3
    """

    def __init__(self, total, desc, unit, show):
        self.desc = desc
        self.unit = unit
        self.n = 0
        self._t0 = time.perf_counter()
        self._tqdm = (
            _tqdm_class()(total=total, desc=desc, unit=unit, leave=True, dynamic_ncols=True, file=sys.stderr)
            if show
            else None
        )

    def update(self, n=1):
        self.n += n
        if self._tqdm is not None:
            self._tqdm.update(n)

    def set_postfix(self, **kwargs):
        if self._tqdm is not None:
            self._tqdm.set_postfix(**kwargs)

    def close(self):
        if self._tqdm is not None:
            self._tqdm.close()
            self._tqdm = None
        logger.info("%s: %d %s in %.2f s", self.desc, self.n, self.unit, time.perf_counter() - self._t0)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def bar(total, desc, unit="it", progress_bar: bool = True) -> Bar:
    """A progress bar over ``total`` steps (a :class:`Bar`; use it as a context manager).

    Parameters
    ----------
    total : int
        Number of steps.
    desc : str
        Label of the bar and of the log line written on close.
    unit : str, default "it"
        Name of one step.
    progress_bar : bool, default True
        The estimator's setting, passed to :func:`enabled`.

    Returns
    -------
    Bar

    Examples
    --------
    >>> from ppclust._progress import bar
    >>> with bar(2, "restarts", "restart", progress_bar=False) as b:
    ...     b.update()
    ...     b.update()
    >>> b.n
    2
    """
    return Bar(total, desc, unit, enabled(progress_bar))


#: set by the SIGINT handler of :func:`interruptible` (read by compiled kernels' host code on any thread)
_STOP = threading.Event()
_DEPTH = [0]  # 1 inside the outermost :func:`interruptible` of the main thread (the one that installs)
#: seconds between two looks at a running program in :func:`wait`
POLL_S = 0.02


_RUNNING = [0]  # > 0 while the main thread dispatches or waits for a compiled program (:func:`run`)


def _on_sigint(signum, frame):
    again = _STOP.is_set()
    _STOP.set()  # kept until the fit ends: a later check raises even if this raise is swallowed
    if again or not _RUNNING[0]:  # outside a compiled program, or a second Ctrl-C: at once, as by default
        raise KeyboardInterrupt


@contextmanager
def interruptible():
    """Run a fit so that SIGINT stops it with ``KeyboardInterrupt`` (the module docstring's contract).

    In the main thread, while Python's default SIGINT handler is installed (a script, a terminal, a
    Jupyter kernel), the handler is replaced for the duration of the block by one that records a stop
    request and raises ``KeyboardInterrupt`` (inside :func:`run`, once the program has run out); a
    recorded request is raised again at the next :func:`check` or :func:`wait`, or when the block ends.
    Elsewhere (another thread, a custom handler) the block changes nothing. Nested blocks share the
    outermost one's handler.

    Examples
    --------
    >>> from ppclust._progress import interruptible, check
    >>> with interruptible():
    ...     check()  # no stop requested: returns
    """
    if (
        _DEPTH[0]
        or threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is not signal.default_int_handler
    ):
        yield
        return
    _STOP.clear()
    signal.signal(signal.SIGINT, _on_sigint)
    _DEPTH[0] = 1
    try:
        yield
        check()
    finally:
        _DEPTH[0] = 0
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _STOP.clear()


def stop_requested() -> bool:
    """Whether a stop was requested (SIGINT inside :func:`interruptible`); safe from any thread.

    Returns
    -------
    bool

    Examples
    --------
    >>> from ppclust._progress import stop_requested
    >>> stop_requested()
    False
    """
    return _STOP.is_set()


def check():
    """Raise ``KeyboardInterrupt`` if a stop was requested; drivers call it between pieces of work.

    Raises
    ------
    KeyboardInterrupt
        When SIGINT arrived inside :func:`interruptible`.

    Examples
    --------
    >>> from ppclust._progress import check
    >>> check()
    """
    if _STOP.is_set():
        raise KeyboardInterrupt


def wait(tree):
    """Wait until every array of ``tree`` is computed, watching for a stop request; returns ``tree``.

    A blocking wait on a running program does not let Python's signal handlers run; this polls instead.
    On a stop request it lets the running program finish (compiled CPU kernels return at once then, see
    :func:`stop_requested`) and raises ``KeyboardInterrupt``.

    Parameters
    ----------
    tree : pytree of jax.Array
        Outputs of a dispatched program.

    Returns
    -------
    pytree
        ``tree`` itself, ready.

    Raises
    ------
    KeyboardInterrupt
        When SIGINT arrived inside :func:`interruptible`.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust._progress import wait
    >>> wait({"a": jnp.ones(2) * 2})["a"].tolist()
    [2.0, 2.0]
    """
    leaves = [a for a in jax.tree_util.tree_leaves(tree) if isinstance(a, jax.Array)]
    for a in leaves:
        while not a.is_ready():
            if _STOP.is_set():
                jax.block_until_ready(leaves)
                raise KeyboardInterrupt
            time.sleep(POLL_S)
    check()
    return tree


def run(fn, *args, **kwargs):
    """``wait(fn(*args, **kwargs))``: dispatch a compiled program and wait for it, a stop request
    meanwhile letting it run out (its callbacks return at once) before ``KeyboardInterrupt`` is raised, so
    that no program of a stopped fit runs on behind it.

    Parameters
    ----------
    fn : callable
        A jitted function (or one that dispatches compiled programs and returns their outputs).
    *args, **kwargs
        Its arguments.

    Returns
    -------
    pytree
        ``fn``'s outputs, ready.

    Raises
    ------
    KeyboardInterrupt
        When SIGINT arrived inside :func:`interruptible`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._progress import run
    >>> run(jax.jit(lambda a: a + 1), jnp.zeros(2)).tolist()
    [1.0, 1.0]
    """
    _RUNNING[0] += 1
    try:
        return wait(fn(*args, **kwargs))
    finally:
        _RUNNING[0] -= 1
