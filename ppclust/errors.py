"""ppclust's exception hierarchy: one base class, so callers (and the CLI) have one thing to catch.

``PPClustError`` derives from ``ValueError`` because nearly every failure a user can cause is a bad
value (data, parameter, side information); code that already catches ``ValueError`` keeps working.
"""

from __future__ import annotations


class PPClustError(ValueError):
    """Base class of every error ppclust raises on purpose."""


class OutputExistsError(PPClustError):
    """The output path exists and ppclust would have to overwrite something it did not write."""
