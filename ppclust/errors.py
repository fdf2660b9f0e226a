"""ppclust's exception hierarchy: one base class, so callers (and the CLI) have one thing to catch.

``PPClustError`` derives from ``ValueError`` because nearly every failure a user can cause is a bad
value (data, parameter, side information); code that already catches ``ValueError`` keeps working.
Some subclasses also derive from the built-in class of their kind (``RuntimeError`` for
:class:`KMaxExhaustedError`, ``FloatingPointError`` for :class:`NonFiniteError`), so code that catches
the built-in catches them too.

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

Warnings (``UserWarning`` subclasses, so ``warnings.filterwarnings`` can single them out):

================================  =====================================================================
class                             warned when
================================  =====================================================================
:class:`AllLabelledWarning`       ``fit(X, y)`` reads ``y`` as partial labels and ``y`` labels every
                                  point: likely the ground truth of a scorer (``GridSearchCV``), which
                                  would leak into the fit
:class:`DegenerateDataWarning`    the data cannot support the model's covariances (too few distinct rows
                                  or values, binary or collinear features): the fit may degenerate
================================  =====================================================================

The two validation errors are both ``ValueError`` and ``TypeError`` (as scikit-learn's own
``InvalidParameterError``, of which :class:`InvalidParameterError` is also a subclass), so code that
catches either built-in, or scikit-learn's class, keeps working; catching :class:`PPClustError` is enough.

"""

from __future__ import annotations

import re

from sklearn.exceptions import ConvergenceWarning as _SklearnConvergenceWarning
from sklearn.utils._param_validation import InvalidParameterError as _SklearnInvalidParameterError

__all__ = [
    "PPClustError",
    "InvalidParameterError",
    "InvalidInputError",
    "OutputExistsError",
    "ConflictingLinksError",
    "KMaxExhaustedError",
    "NonFiniteError",
    "AllLabelledWarning",
    "DegenerateDataWarning",
    "ConvergenceWarning",
    "one_line",
]


class PPClustError(ValueError):
    """Base class of every error ppclust raises on purpose (a ``ValueError``).

    Examples
    --------
    >>> from ppclust.errors import PPClustError, KMaxExhaustedError
    >>> issubclass(KMaxExhaustedError, PPClustError) and issubclass(PPClustError, ValueError)
    True
    """


class InvalidParameterError(PPClustError, _SklearnInvalidParameterError):
    """A constructor parameter fails the constraint its estimator declares (``_parameter_constraints``).

    Raised by :func:`ppclust.estimators._base.fit_context` in place of scikit-learn's class, of which it is a
    subclass, as it is of ``ValueError`` and ``TypeError``.

    Parameters
    ----------
    message : str
        The error message.
    parameter : str, optional
        The parameter's name; when omitted, read from a message of scikit-learn's form
        ``"The 'name' parameter ..."`` (``None`` if the message names none).

    Attributes
    ----------
    parameter : str or None
        The parameter's name.

    Examples
    --------
    >>> from ppclust.errors import InvalidParameterError
    >>> InvalidParameterError("The 'tol' parameter of X must be > 0.").parameter
    'tol'
    """

    def __init__(self, message, *, parameter=None):
        super().__init__(message)
        if parameter is None:
            m = re.search(r"The '([^']+)' parameter", str(message))
            parameter = m.group(1) if m else None
        self.parameter = parameter


class InvalidInputError(PPClustError, TypeError):
    """A data argument (``X``, partial labels, links, weights, ...) has the wrong type, shape or values.

    Both a ``ValueError`` (through :class:`PPClustError`) and a ``TypeError``, so callers may catch either
    built-in.

    Examples
    --------
    >>> from ppclust.errors import InvalidInputError
    >>> isinstance(InvalidInputError("X must be 2-D"), TypeError)
    True
    """


class OutputExistsError(PPClustError):
    """The output path exists and ppclust would have to overwrite something it did not write.

    Examples
    --------
    >>> from ppclust.errors import OutputExistsError, PPClustError
    >>> issubclass(OutputExistsError, PPClustError)
    True
    """


class ConflictingLinksError(PPClustError):
    """Links that cannot hold together as hard constraints (soft-link methods combine them instead).

    Parameters
    ----------
    message : str
        The error message.
    n_pairs : int, optional
        Number of offending pairs, when known.
    first : tuple of int, optional
        The first offending pair ``(i, j)``, when known.

    Attributes
    ----------
    n_pairs, first
        As given, so a caller can restate the message in its own terms.

    Examples
    --------
    >>> from ppclust.errors import ConflictingLinksError
    >>> err = ConflictingLinksError("pair (0, 1) is both linked and not", n_pairs=1, first=(0, 1))
    >>> err.first
    (0, 1)
    """

    def __init__(self, message, *, n_pairs=None, first=None):
        super().__init__(message)
        self.n_pairs = n_pairs
        self.first = first


class KMaxExhaustedError(PPClustError, RuntimeError):
    """Every one of the ``k_max`` cluster slots was occupied when a new cluster had to be opened.

    Also a ``RuntimeError``.

    Examples
    --------
    >>> from ppclust.errors import KMaxExhaustedError
    >>> issubclass(KMaxExhaustedError, RuntimeError)
    True
    """


class NonFiniteError(PPClustError, FloatingPointError):
    """A solver produced a non-finite value (NaN or inf) in its cost, objective or parameters.

    Also a ``FloatingPointError``.

    Examples
    --------
    >>> from ppclust.errors import NonFiniteError
    >>> issubclass(NonFiniteError, FloatingPointError)
    True
    """


class AllLabelledWarning(UserWarning):
    """``fit(X, y)`` read ``y`` as partial labels, and ``y`` labels every point (no ``-1``).

    scikit-learn's model selection (``GridSearchCV``, ``cross_validate``) passes the *ground truth* as
    ``y`` so that a scorer can compare with it; read as partial labels it supervises the fit with the
    answer. Pass the side information apart, ``fit(X, y, partial_labels=y_partial)`` (``-1`` =
    unlabelled; all ``-1`` for none): ``y`` is then only the scorer's. To fit on fully labelled data on
    purpose, pass ``partial_labels=y``, which does not warn.

    Examples
    --------
    >>> from ppclust.errors import AllLabelledWarning
    >>> issubclass(AllLabelledWarning, UserWarning)
    True
    """


class DegenerateDataWarning(UserWarning):
    """The data cannot support the model's full covariances: too few distinct rows, a binary or few-valued
    column, collinear features. Clusters can then collapse onto a value (zero variance) and the fit
    degenerates (one cluster, the labels ignored) or depends on the collinearity.

    Examples
    --------
    >>> from ppclust.errors import DegenerateDataWarning
    >>> issubclass(DegenerateDataWarning, UserWarning)
    True
    """


class ConvergenceWarning(_SklearnConvergenceWarning):
    """A sampler's chains disagree (split R-hat above :data:`ppclust.posterior.RHAT_MAX`) or mix slowly
    (bulk effective sample size below :data:`ppclust.posterior.ESS_MIN`) on a scalar statistic (the
    number of clusters, the log joint, p, q). The message names the statistic, its values and what to do.
    A subclass of scikit-learn's ``ConvergenceWarning`` (itself a ``UserWarning``).

    Examples
    --------
    >>> from sklearn.exceptions import ConvergenceWarning as SkWarning
    >>> from ppclust.errors import ConvergenceWarning
    >>> issubclass(ConvergenceWarning, SkWarning)
    True
    """


def one_line(err: BaseException) -> str:
    r"""The first non-blank line of an error's message (JAX and NumPy messages span several lines).

    Parameters
    ----------
    err : BaseException
        Any exception.

    Returns
    -------
    line : str
        Its first non-blank line, stripped; ``""`` for an empty message.

    Examples
    --------
    >>> from ppclust.errors import one_line
    >>> one_line(ValueError("\n  bad shape\n  details follow"))
    'bad shape'
    """
    return next((ln.strip() for ln in str(err).splitlines() if ln.strip()), "")
