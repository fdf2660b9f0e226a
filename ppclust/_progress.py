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
"""

from __future__ import annotations

import logging
import os
import sys
import time

__all__ = ["logger", "enabled", "bar", "Bar"]

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
