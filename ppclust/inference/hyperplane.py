r"""C3L's decision hyperplanes and the map :math:`T_H` to ``z = (t, r)`` (spec ``c3l.md`` §2.1, §5.2).

``J`` hyperplanes :math:`h_j^\top x = a_j` (:class:`Hyperplane`, :func:`make_hyperplane`; J = 1 is the
paper's case), the map to signed distances and complement coordinates (:func:`transform`) and back
(:func:`inverse_transform`), the optional standardisation (:func:`standardization`,
:func:`standardized_hyperplane`, :func:`log_jacobian`), and a hyperplane from labels by a linear SVM
(:func:`hyperplane_from_labels`). :mod:`ppclust.inference.c3l` fits its model in z and re-exports these.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

__all__ = [
    "Hyperplane",
    "make_hyperplane",
    "transform",
    "inverse_transform",
    "standardization",
    "standardized_hyperplane",
    "log_jacobian",
    "hyperplane_from_labels",
]


class Hyperplane(NamedTuple):
    """``J`` decision hyperplanes ``h_j^T x = a_j`` in R^N (J = 1 is the paper's case).

    Parameters
    ----------
    normals : array (J, N)
        The normals, as given.
    offsets : array (J,)
        The offsets.
    basis : array (N, N - J)
        Orthonormal basis of the complement of span(normals) (the ``r`` coordinates).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import hyperplane as c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> hp.normals.shape, hp.basis.shape
    ((1, 2), (2, 1))
    """

    normals: np.ndarray
    offsets: np.ndarray
    basis: np.ndarray


def make_hyperplane(normal, offset) -> Hyperplane:
    """Validate ``(normal, offset)`` (normal (N,) or (J, N); offset scalar or (J,)) and build the basis.

    Parameters
    ----------
    normal : array (N,) or (J, N)
        The normals.
    offset : float or array (J,)
        The offsets.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import hyperplane as c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> hp.offsets.tolist()
    [1.0]
    """
    h = np.atleast_2d(np.asarray(normal, dtype=np.float64))
    a = np.atleast_1d(np.asarray(offset, dtype=np.float64)).reshape(-1)
    if h.ndim != 2 or a.shape[0] != h.shape[0]:
        raise ValueError(
            f"hyperplane: normal must be (N,) or (J, N) and offset scalar or (J,); got shapes "
            f"{np.shape(normal)} and {np.shape(offset)}"
        )
    if not (np.all(np.isfinite(h)) and np.all(np.isfinite(a))):
        raise ValueError("hyperplane: normal and offset must be finite")
    J, N = h.shape
    u, sv, vt = np.linalg.svd(h, full_matrices=True)
    if sv.size < J or sv[-1] <= 1e-10 * max(sv[0], 1e-300):
        raise ValueError("hyperplane: the normal vectors must be non-zero and linearly independent")
    basis = vt[J:].T  # (N, N - J), orthonormal, orthogonal to every normal
    return Hyperplane(h, a, basis)


def transform(X, hp: Hyperplane) -> np.ndarray:
    """``z = (t_1..t_J, r)``: signed distances ``(h_j^T x - a_j)/||h_j||`` then ``r = Q^T x`` (n, N).

    Parameters
    ----------
    X : array (n, N)
        The points.
    hp : Hyperplane
        The decision hyperplanes.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import hyperplane as c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> c3l.transform(np.array([[3.0, 5.0]]), hp)[:, 0].tolist()  # signed distance 3 - 1
    [2.0]
    """
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(hp.normals, axis=1)
    t = (X @ hp.normals.T - hp.offsets) / norms
    return np.concatenate([t, X @ hp.basis], axis=1)


def inverse_transform(hp: Hyperplane):
    """Affine map ``x = A z + b`` inverting :func:`transform`; returns ``(A (N, N), b (N,))``.

    Parameters
    ----------
    hp : Hyperplane
        The decision hyperplanes.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import hyperplane as c3l
    >>> hp = c3l.make_hyperplane([1.0, 0.0], 1.0)
    >>> A, b = c3l.inverse_transform(hp)
    >>> x = np.array([3.0, 5.0])
    >>> bool(np.allclose(A @ c3l.transform(x[None], hp)[0] + b, x))
    True
    """
    norms = np.linalg.norm(hp.normals, axis=1)
    # rows of M z-coordinates: t = (h/||h||) x - a/||h||, r = Q^T x
    M = np.concatenate([hp.normals / norms[:, None], hp.basis.T], axis=0)
    c = np.concatenate([-hp.offsets / norms, np.zeros(hp.basis.shape[1])])
    A = np.linalg.inv(M)
    return A, -A @ c


def standardization(X, standardize: bool):
    """``(center, scale)`` of the optional standardisation ``x = center + scale * xs``.

    The columns' means and standard deviations (1 where a column is constant), or zeros and ones.

    Parameters
    ----------
    X : array (n, N)
        The data.
    standardize : bool
        Standardise (else the identity: zeros and ones).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.hyperplane import standardization
    >>> c, s = standardization(np.array([[0.0, 1.0], [2.0, 1.0]]), True)
    >>> c.tolist(), s.tolist()
    ([1.0, 1.0], [1.0, 1.0])
    """
    X = np.asarray(X, dtype=np.float64)
    N = X.shape[1]
    center = X.mean(0) if standardize else np.zeros(N)
    sd = X.std(0) if standardize else np.ones(N)
    return center, np.where(sd > 0, sd, 1.0)


def standardized_hyperplane(hp: Hyperplane, center, scale) -> Hyperplane:
    """The hyperplane ``h^T x = a`` in standardised coordinates ``xs = (x - center) / scale``.

    ``h^T x = a`` <=> ``(h scale)^T xs = a - h^T center``.

    Parameters
    ----------
    hp : Hyperplane
        In x coordinates.
    center, scale : arrays (N,)
        Of :func:`standardization`.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.hyperplane import make_hyperplane, standardized_hyperplane
    >>> hp0 = make_hyperplane([1.0, 0.0], 3.0)
    >>> hp = standardized_hyperplane(hp0, np.array([1.0, 0.0]), np.array([2.0, 1.0]))
    >>> hp.normals.tolist(), hp.offsets.tolist()
    ([[2.0, 0.0]], [2.0])
    """
    return make_hyperplane(hp.normals * scale, hp.offsets - hp.normals @ center)


def log_jacobian(hp: Hyperplane, scale) -> float:
    """ln |det| of the Jacobian of ``x -> z`` (standardisation by ``scale``, then :func:`transform`).

    Adds to a log-density in z space to give one in X space.

    Parameters
    ----------
    hp : Hyperplane
        The standardised hyperplane.
    scale : array (N,)
        Of :func:`standardization`.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.hyperplane import log_jacobian, make_hyperplane
    >>> abs(log_jacobian(make_hyperplane([1.0, 0.0], 0.0), np.ones(2))) < 1e-12
    True
    """
    A, _ = inverse_transform(hp)
    return float(-np.linalg.slogdet(A)[1] - np.sum(np.log(scale)))


def hyperplane_from_labels(X, y, C: float = 1.0, random_state=0):
    """Linear SVM (``C``, standardised features) on the labelled points -> ``(normal, offset)`` in X space.

    Spec §5.2 resolution [ours]: plain ``LinearSVC(C=1)`` on features standardised with the mean and
    standard deviation of *all* rows of X; the hyperplane is mapped back to the original coordinates.
    ``y`` uses two categories ``{0, 1}`` (``-1`` = unlabelled); the + side is category 1. With ``J > 2``
    categories one-vs-rest hyperplanes are returned ((J, N) normals; the extension in the module
    docstring). Raises ``ValueError`` if fewer than two categories have labelled points.

    Parameters
    ----------
    X : array (n, N)
        The data.
    y : int array (n,)
        Partial labels (-1: unlabelled).
    C : float, default=1.0
        The SVM's regularisation.
    random_state : int, default=0
        Seeds the SVM.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference import hyperplane as c3l
    >>> X = np.array([[0.0, 0.0], [0.0, 1.0], [4.0, 0.0], [4.0, 1.0]])
    >>> normal, offset = c3l.hyperplane_from_labels(X, np.array([0, 0, 1, 1]))
    >>> bool(normal[0] > 0 and 0 < offset / normal[0] < 4)
    True
    """
    from sklearn.svm import LinearSVC

    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y)
    lab = y >= 0
    cats = np.unique(y[lab])
    if cats.size < 2:
        raise ValueError(
            "hyperplane_from_labels: y needs labelled points of at least two categories "
            f"(found {cats.tolist()}); pass hyperplane=(normal, offset) instead"
        )
    mean = X.mean(0)
    std = X.std(0)
    std = np.where(std > 0, std, 1.0)
    Xs = (X[lab] - mean) / std
    svm = LinearSVC(C=C, random_state=random_state, dual="auto", max_iter=20000)
    svm.fit(Xs, y[lab])
    w = np.atleast_2d(svm.coef_)  # (1, N) for two classes (+ = the larger label), (J, N) one-vs-rest
    b = np.atleast_1d(svm.intercept_)
    normal = w / std
    offset = -b + (w * mean / std).sum(1)  # w^T (x - mean)/std + b = 0  <=>  normal^T x = offset
    if normal.shape[0] == 1:
        return normal[0], float(offset[0])
    return normal, offset
