"""Validation helpers shared by every ppclust estimator (host side, before any tracing).

Each helper returns a fresh array (inputs are never modified) and raises a ``TypeError`` or
``ValueError`` whose message names the argument, says what was expected and what was received.
scikit-learn's private parameter-validation API is wrapped here, in one place (STYLE "Estimators").
"""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
from sklearn.base import _fit_context as fit_context
from sklearn.utils._param_validation import Interval, StrOptions

from ppclust.errors import ConflictingLinksError
from ppclust.sideinfo import SideInfo, check_labels

__all__ = ["check_X", "check_partial_labels", "check_links", "check_side_info", "fit_context",
           "Interval", "StrOptions", "Integral", "Real"]


def check_X(X, *, name="X", min_samples=1, min_features=1, dtype=np.float64) -> np.ndarray:
    """Validate a data matrix: a finite, real, 2-D array of shape (n_samples, n_features).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    name : str, default="X"
        Argument name used in error messages.
    min_samples, min_features : int, default=1
    dtype : numpy dtype, default=float64

    Returns
    -------
    X : ndarray of shape (n_samples, n_features), C-contiguous copy in ``dtype``.
    """
    if X is None:
        raise TypeError(f"`{name}` must be an array of shape (n_samples, n_features), got None.")
    if hasattr(X, "tocsr") or hasattr(X, "toarray"):
        raise TypeError(f"`{name}` is a sparse matrix; ppclust needs a dense array: pass {name}.toarray().")
    try:
        arr = np.asarray(X)
    except Exception as err:  # ragged lists and the like
        raise ValueError(f"`{name}` could not be converted to an array: {err}") from err
    if arr.dtype == object or arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must hold real numbers, got dtype {arr.dtype}; encode categorical "
                        "features as numbers first.")
    if arr.ndim == 1:
        raise ValueError(f"`{name}` must be 2-D of shape (n_samples, n_features), got a 1-D array of shape "
                         f"{arr.shape}; reshape with {name}.reshape(-1, 1) for one feature or "
                         f"{name}.reshape(1, -1) for one sample.")
    if arr.ndim != 2:
        raise ValueError(f"`{name}` must be 2-D of shape (n_samples, n_features), got shape {arr.shape}.")
    if arr.shape[0] < min_samples:
        raise ValueError(f"`{name}` has {arr.shape[0]} sample(s); at least {min_samples} required.")
    if arr.shape[1] < min_features:
        raise ValueError(f"`{name}` has {arr.shape[1]} feature(s); at least {min_features} required.")
    out = np.array(arr, dtype=dtype, order="C", copy=True)
    finite = np.isfinite(out)
    if not finite.all():
        r, c = np.argwhere(~finite)[0]
        raise ValueError(f"`{name}` contains {int((~finite).sum())} NaN or inf value(s) (first at row {r}, "
                         f"column {c}: {out[r, c]}); remove or impute them.")
    return out


def check_partial_labels(y, n, *, name="y", n_classes=None, allow_none=True) -> np.ndarray | None:
    """Validate partial labels: integers in ``{-1, 0, 1, ...}`` of length ``n`` (``-1`` = unlabelled).

    Returns an int32 copy, or ``None`` when ``y`` is None and ``allow_none``. With ``n_classes``,
    labels must also be ``< n_classes``.
    """
    if y is None:
        if allow_none:
            return None
        raise TypeError(f"`{name}` is required: an integer array of length {n} (-1 = unlabelled).")
    lab = check_labels(y, n=n, name=name)
    if n_classes is not None and lab.size and lab.max() >= n_classes:
        k = int(np.argmax(lab >= n_classes))
        raise ValueError(f"`{name}` has label {int(lab[k])} at index {k}, but labels must lie in "
                         f"[0, n_classes={n_classes}) (or be -1 for unlabelled).")
    return lab


def check_links(n, must_link=None, cannot_link=None, *, weight=None, on_conflict="error",
                hard=False) -> SideInfo:
    """Validate must-link / cannot-link lists into a :class:`~ppclust.sideinfo.SideInfo` (links only).

    A ``SideInfo`` may be passed as ``must_link`` (with ``cannot_link=None``); its ``n`` must match.
    With ``hard=True`` the links must be consistent as hard constraints (:meth:`SideInfo.check_hard`).
    """
    if isinstance(must_link, SideInfo):
        if cannot_link is not None:
            raise ValueError("pass either a SideInfo as `must_link` or pair lists, not both.")
        side = must_link
        if side.n != n:
            raise ValueError(f"the SideInfo passed as `must_link` is for n={side.n} points, but X has "
                             f"n_samples={n}.")
    else:
        side = SideInfo.from_links(n, must_link=must_link, cannot_link=cannot_link, weight=weight,
                                   on_conflict=on_conflict)
    if hard:
        side.check_hard()
    return side


def check_side_info(n, y=None, must_link=None, cannot_link=None, *, weight=None, on_conflict="error",
                    n_classes=None, hard=False) -> SideInfo:
    """Partial labels and links together in one validated :class:`~ppclust.sideinfo.SideInfo`."""
    lab = check_partial_labels(y, n, n_classes=n_classes)
    links = check_links(n, must_link, cannot_link, weight=weight, on_conflict=on_conflict)
    if links.n_links:
        side = SideInfo.from_pairs(n, links.pairs, links.sign, links.weight, on_conflict="keep", labels=lab)
    else:
        side = SideInfo(n, labels=lab)
    if hard:
        side.check_hard()
    return side


#: What a pair given both as may-link and may-not-link means, per kind of link model: the one place
#: ppclust decides it (``SideInfo``'s ``on_conflict`` for each kind).
#:
#: * ``"soft"``: links are noisy evidence or penalties (TVClust's link likelihood, RDP-means'
#:   :math:`-\xi_1 f^i_k + \xi_2 s^i_k`, Khashabi et al. 2015 eq. 12). Both entries are kept and their
#:   terms add up, so in RDP-means (``xi_ratio=1``) a pair given with weights :math:`w_+` and
#:   :math:`w_-` acts as one link of net weight :math:`w_+ - w_-` (sign included).
#: * ``"hard"``: links are constraints (SMIC's binary M and C, COP-style methods); a contradiction is
#:   a :class:`~ppclust.errors.ConflictingLinksError` naming the first pair.
LINK_MODELS = {"soft": "keep", "hard": "error"}


def link_side_info(n, y=None, must_link=None, cannot_link=None, *, link_model="hard", max_label_pairs=None,
                   seed=0, on_conflict=None) -> SideInfo:
    """Links for the link-based methods (TVClust, RDP-means, SMIC): the given links plus the pairs
    among labelled points of ``y`` (all of them, or ``max_label_pairs`` sampled uniformly).

    ``link_model`` is ``"soft"`` or ``"hard"`` (see :data:`LINK_MODELS`): whether a pair given with
    both signs (also a given link that contradicts two labels) is combined or an error.
    The labels themselves are dropped afterwards, so they are not counted twice. ``on_conflict``
    ("keep" / "error") is the older spelling of ``link_model`` ("soft" / "hard"), still accepted.
    """
    if on_conflict is not None:
        link_model = {v: k for k, v in LINK_MODELS.items()}.get(on_conflict, on_conflict)
    if link_model not in LINK_MODELS:
        raise ValueError(f"`link_model` must be one of {tuple(LINK_MODELS)}, got {link_model!r}")
    on_conflict = LINK_MODELS[link_model]
    try:
        side = check_side_info(n, y, must_link, cannot_link, on_conflict=on_conflict)
        if side.labels is not None and side.n_labelled > 1:
            return side.links_from_labels(max_pairs=max_label_pairs, seed=seed, on_conflict=on_conflict)
    except ConflictingLinksError as err:  # say it in the estimator's terms (it has no on_conflict)
        via = "" if y is None else ", counting the pairs implied by the labels `y`"
        raise ConflictingLinksError(
            f"{err.n_pairs} pair(s) are given both as may-link (+1) and may-not-link (-1){via} (first: "
            f"{err.first}); this method treats links as hard constraints. Remove the contradiction, or "
            "use a method that models noisy links (TVClust, RDPMeans), where both signs combine.",
            n_pairs=err.n_pairs, first=err.first) from None
    if side.labels is not None and side.n_links:
        side = SideInfo.from_pairs(n, side.pairs, side.sign, side.weight, on_conflict="keep")
    elif side.labels is not None:
        side = SideInfo(n)
    return side
