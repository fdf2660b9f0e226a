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
:class:`InvalidParameterError`    a constructor parameter fails its declared constraint (checked at
                                  ``fit``, before the data are read); ``parameter`` names it
:class:`InvalidInputError`        an argument of ``fit`` / ``predict`` / a validator (``X``, ``y``, links,
                                  sample weights, ...) has the wrong type, shape or values
:class:`OutputExistsError`        the CLI would overwrite something it did not write
:class:`ConflictingLinksError`    a pair is given both as may-link and may-not-link to a method that
                                  treats links as hard constraints
:class:`KMaxExhaustedError`       a solver needed more than ``k_max`` cluster slots
:class:`NonFiniteError`           a solver produced a non-finite cost / objective / parameter
================================  =====================================================================

The two validation errors are both ``ValueError`` and ``TypeError`` (as scikit-learn's own
``InvalidParameterError``, of which :class:`InvalidParameterError` is also a subclass), so code that
catches either built-in, or scikit-learn's class, keeps working; catching :class:`PPClustError` is enough.

The historical import paths stay valid: ``ppclust.inference.gibbs.KMaxExhaustedError`` is this
module's class.
"""

from __future__ import annotations

import re

from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError

__all__ = ["PPClustError", "InvalidParameterError", "InvalidInputError", "OutputExistsError",
           "ConflictingLinksError", "KMaxExhaustedError", "NonFiniteError", "one_line"]


class PPClustError(ValueError):
    """Base class of every error ppclust raises on purpose."""


class InvalidParameterError(PPClustError, _SklearnInvalidParameterError):
    """A constructor parameter fails the constraint its estimator declares (``_parameter_constraints``).

    Raised by :func:`ppclust.estimators._base.fit_context` in place of scikit-learn's class (of which it
    is a subclass, as it is of ``ValueError`` and ``TypeError``). ``parameter`` is the parameter's name
    (``None`` if the message does not name one).
    """

    def __init__(self, message, *, parameter=None):
        super().__init__(message)
        if parameter is None:
            m = re.search(r"The '([^']+)' parameter", str(message))
            parameter = m.group(1) if m else None
        self.parameter = parameter


class InvalidInputError(PPClustError, TypeError):
    """A data argument (``X``, partial labels, links, weights, ...) has the wrong type, shape or values.

    Both a ``ValueError`` (through :class:`PPClustError`) and a ``TypeError``: the validators used to raise
    one or the other, and callers may catch either.
    """


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
