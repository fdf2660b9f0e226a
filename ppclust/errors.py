"""ppclust's exception hierarchy: one base class, so callers (and the CLI) have one thing to catch.

``PPClustError`` derives from ``ValueError`` because nearly every failure a user can cause is a bad
value (data, parameter, side information); code that already catches ``ValueError`` keeps working.
Each subclass also derives from the built-in class it replaces (``RuntimeError`` for
:class:`KMaxExhaustedError`, ``FloatingPointError`` for :class:`NonFiniteError`), so code written
against the old types keeps working too.

================================  =====================================================================
class                             raised when
================================  =====================================================================
:class:`PPClustError`             base class; any deliberate ppclust error
:class:`OutputExistsError`        the CLI would overwrite something it did not write
:class:`ConflictingLinksError`    a pair is given both as may-link and may-not-link to a method that
                                  treats links as hard constraints
:class:`KMaxExhaustedError`       a solver needed more than ``k_max`` cluster slots
:class:`NonFiniteError`           a solver produced a non-finite cost / objective / parameter
================================  =====================================================================

The historical import paths stay valid: ``ppclust.inference.gibbs.KMaxExhaustedError`` is this
module's class.
"""

from __future__ import annotations

__all__ = ["PPClustError", "OutputExistsError", "ConflictingLinksError", "KMaxExhaustedError",
           "NonFiniteError", "one_line"]


class PPClustError(ValueError):
    """Base class of every error ppclust raises on purpose."""


class OutputExistsError(PPClustError):
    """The output path exists and ppclust would have to overwrite something it did not write."""


class ConflictingLinksError(PPClustError):
    """Links that cannot hold together as hard constraints (soft-link methods combine them instead).

    ``n_pairs`` and ``first`` (the first offending pair ``(i, j)``), when known, let a caller restate
    the message in its own terms.
    """

    def __init__(self, message, *, n_pairs=None, first=None):
        super().__init__(message)
        self.n_pairs = n_pairs
        self.first = first


class KMaxExhaustedError(PPClustError, RuntimeError):
    """Every one of the ``k_max`` cluster slots was occupied when a new cluster had to be opened."""


class NonFiniteError(PPClustError, FloatingPointError):
    """A solver produced a non-finite value (NaN or inf) in its cost, objective or parameters."""


def one_line(err: BaseException) -> str:
    """The first non-blank line of an error's message (JAX and NumPy messages span several lines)."""
    return next((ln.strip() for ln in str(err).splitlines() if ln.strip()), "")
