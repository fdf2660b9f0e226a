"""Argument checks shared by the data set generators and the side-information samplers."""

from __future__ import annotations

import numpy as np

__all__ = ["probability", "positive_int"]


def probability(v, name):
    """ValueError unless ``v`` is a real number in [0, 1].

    Parameters
    ----------
    v : object
        The value checked.
    name : str
        The argument's name, for the message.

    Returns
    -------
    None

    Examples
    --------
    >>> probability(0.5, "noise") is None
    True
    """
    if not (isinstance(v, (int, float, np.floating, np.integer)) and 0.0 <= float(v) <= 1.0):
        raise ValueError(f"`{name}` must be a probability in [0, 1], got {v!r}.")


def positive_int(v, name):
    """ValueError unless ``v`` is an int (not a bool) of at least 1.

    Parameters
    ----------
    v : object
        The value checked.
    name : str
        The argument's name, for the message.

    Returns
    -------
    None

    Examples
    --------
    >>> positive_int(3, "n_samples") is None
    True
    """
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
        raise ValueError(f"`{name}` must be a positive int, got {v!r}.")
