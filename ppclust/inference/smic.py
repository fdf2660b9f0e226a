r"""SMIC and 3SMIC: squared-loss mutual information clustering, optionally with must/cannot links.

Kept whole (over 700 lines) because its parts are one pipeline that shares private helpers and one
numerical convention: the sparse kNN kernel, its link-modified form, the eigen-solvers (dense LAPACK and
matrix-free Lanczos), LSMI with its per-data-set precomputation, and the model selection that calls them
all; split apart, each piece would export helpers that only its neighbour uses.

Calandriello, Niu & Sugiyama (2014), "Semi-Supervised Information-Maximization Clustering", built on
unsupervised SMIC (Sugiyama et al. 2011) with LSMI (Suzuki et al. 2009) for model selection.
Section numbers (§) refer to ``../shared/specs/smic.md``.

* Kernel (§4): sparse local-scaling kernel on the symmetric t-nearest-neighbour graph,
  :math:`K_{ij}=\exp(-\|x_i-x_j\|^2/(2\sigma_i\sigma_j))`, ``K_ii = 1``, stored as SciPy CSR (O(n t)).
* SMIC (§2): the top-c eigenvectors of K by :math:`|\lambda|` maximise :math:`\widehat{\rm SMI}`
  (eq. 6) under orthonormality; sign fixing, clipping, normalisation to the uniform prior, argmax.
* 3SMIC (§3): :math:`U = K'[(I+\gamma M)^2 + (I-\eta C)^2]K'` (eq. 8), with ``K'`` the kernel with
  must-linked entries set to 1 and cannot-linked to 0; ``eta`` is forced to 0 when c > 2. U is PSD,
  so its top-c eigenvectors are the solution. For ``n <= dense_max`` U is formed densely (float64)
  and ``eigh``-ed by LAPACK's ``syevd`` for every (gamma, eta) of the grid; beyond that only the
  matrix-free product :math:`v\mapsto K'(A(K'v))` is used, with ``M^2 v = M(M v)``, in SciPy's
  Lanczos ``eigsh`` (never an n x n array).
* Model selection (§2.5, §3.7): LSMI (§5) with label-independent pieces (centres, folds, per-fold
  Gram matrices) precomputed once per data set, so each candidate labelling costs O(n b + c (b/c)^3);
  the semi-supervised criterion eq. (9) over the (t, gamma, eta) grid.
* Held-out link check (not in the paper; ``select(..., link_folds=k)``, the estimator's default k = 5):
  the eq. (9) winner refitted without each fold of the links must satisfy the unseen links at least as
  well as the no-link SMIC, else the no-link SMIC is returned (:func:`link_check`). Eq. (9) trusts every
  link; with c > 2 most random pairs are cannot-links (which act only through K', eta being 0, on pairs
  that are seldom kNN neighbours), so a flipped share turns into a majority of wrong must-links.

Everything runs on the host in NumPy/SciPy (kNN search by scikit-learn): no XLA program is compiled, so
a new data size builds nothing. The dense eigenproblems (n <= ``dense_max``) are small enough that
LAPACK's ``syevd`` on one core (the routine JAX's CPU ``eigh`` calls) is the fast way to solve them.
"""

from __future__ import annotations

import math
import warnings
from functools import cache
from typing import NamedTuple

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg as spla
from sklearn.neighbors import NearestNeighbors
from threadpoolctl import ThreadpoolController

from ppclust import _progress
from ppclust._jax import LABEL_DTYPE

__all__ = [
    "Kernel",
    "LinkMatrices",
    "SMICResult",
    "LSMIEstimator",
    "SelectionResult",
    "EigenOptions",
    "build_kernel",
    "kernel_rows",
    "link_matrices",
    "modify_kernel",
    "u_operator",
    "u_dense",
    "smic_fit",
    "threesmic_fit",
    "postprocess",
    "predict_scores",
    "count_violations",
    "eq9_scores",
    "select",
    "link_check",
    "DEFAULT_GAMMAS",
    "DEFAULT_ETAS",
    "DEFAULT_TS",
]

DEFAULT_TS = tuple(range(1, 11))  # §3.7 [P]
DEFAULT_GAMMAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)  # §3.7 [R]
DEFAULT_ETAS = (0.0, 0.1, 0.3, 1.0, 3.0, 10.0)  # §3.7 [R], binary problems only
# n up to which the eigenproblem is solved densely (LAPACK eigh); the spec allows <= 2000, sparse Lanczos
# (eigsh) is the faster solver well below that (see docs/decisions/ for the evidence)
DENSE_MAX = 200
# repeats of the held-out link check's k-fold split (select's link_repeats): repeated cross-validation
# decides more stably than one split (see docs/decisions/ for the evidence)
DEFAULT_LINK_REPEATS = 3


@cache
def _blas_controller() -> ThreadpoolController:
    """The process's BLAS controller, built once (building one scans the loaded libraries)."""
    return ThreadpoolController()


def one_blas_thread():
    """Context manager: BLAS/LAPACK (scipy's OpenBLAS, which NumPy and SciPy call) on one thread.

    Used around the dense eigenproblems (n <= ``DENSE_MAX``) and LSMI's many small solves. On small
    matrices a second BLAS thread gains little on an idle machine and costs a great deal on a busy one: a
    LAPACK call is many small BLAS calls, each a fork/join of threads that spin or wait for a core another
    process holds (see docs/decisions/ for the evidence)."""
    return _blas_controller().limit(limits=1, user_api="blas")


class Kernel(NamedTuple):
    """Sparse kNN kernel and what out-of-sample prediction needs (§4, E6).

    Attributes
    ----------
    K : scipy.sparse.csr_matrix of shape (n, n)
        Symmetric kernel, entries in (0, 1], ``K_ii = 1``.
    sigma : ndarray of shape (n,)
        Local scales (distance to the t-th other neighbour, floored).
    t : int
        Neighbourhood size actually used (clamped to ``n - 1``).
    nn : sklearn.neighbors.NearestNeighbors
        Fitted on the training points.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> kern.K.shape, kern.t
    ((20, 20), 3)
    """

    K: sp.csr_matrix  # (n, n) symmetric, entries in (0, 1], K_ii = 1
    sigma: np.ndarray  # (n,) local scales (distance to the t-th other neighbour, floored)
    t: int  # neighbourhood size actually used (clamped to n - 1)
    nn: NearestNeighbors  # fitted on the training points


class LinkMatrices(NamedTuple):
    """Symmetric binary link matrices (§3.1): M with unit diagonal, C with zero diagonal.

    SMIC's own view of the links (sparse n x n operators for the eigenproblem); built from the one link
    type, :class:`ppclust.sideinfo.SideInfo`, by :func:`link_matrices`.

    Attributes
    ----------
    M : scipy.sparse.csr_matrix of shape (n, n)
        Must-link matrix with unit diagonal.
    C : scipy.sparse.csr_matrix of shape (n, n)
        Cannot-link matrix with zero diagonal.
    must : ndarray of int of shape (m1, 2)
        Unique must-linked pairs, ``i < j``.
    cannot : ndarray of int of shape (m2, 2)
        Unique cannot-linked pairs, ``i < j``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> links.must.tolist(), links.cannot.tolist()
    ([[0, 1]], [[0, 15]])
    """

    M: sp.csr_matrix
    C: sp.csr_matrix
    must: np.ndarray  # (m1, 2) unique pairs i < j
    cannot: np.ndarray  # (m2, 2) unique pairs i < j


class SMICResult(NamedTuple):
    """One SMIC / 3SMIC solution: labels, normalised scores, sign-fixed eigenvectors, eigenvalues, the
    out-of-sample normaliser and the number of non-empty clusters.

    Attributes
    ----------
    labels : ndarray of int32 of shape (n,)
        Cluster of every point.
    scores : ndarray of shape (n, c)
        Normalised clipped outputs ``[g_y]_i / 1^T g_y``.
    phi : ndarray of shape (n, c)
        Sign-fixed eigenvectors.
    eigenvalues : ndarray of shape (c,)
        Eigenvalues of the solved matrix (K for SMIC, U for 3SMIC).
    norms : ndarray of shape (c,)
        ``1^T max(0, K' phi_y)``, the out-of-sample normaliser.
    n_nonempty : int
        Number of non-empty clusters (E2).

    Examples
    --------
    >>> SMICResult._fields[:2]
    ('labels', 'scores')
    """

    labels: np.ndarray  # (n,) int32
    scores: np.ndarray  # (n, c) normalised clipped outputs [g_y]_i / 1^T g_y
    phi: np.ndarray  # (n, c) sign-fixed eigenvectors
    eigenvalues: np.ndarray  # (c,) eigenvalues of the solved matrix (K for SMIC, U for 3SMIC)
    norms: np.ndarray  # (c,) 1^T max(0, K' phi_y), the out-of-sample normaliser
    n_nonempty: int  # E2


# ------------------------------------------------------------------------------------------------
# kernel (§4)


def build_kernel(x, t, *, nn=None, max_t=None):
    """Sparse local-scaling kNN kernel of §4 (self excluded, ties by index, K_ii = 1).

    ``nn``: an already fitted ``NearestNeighbors`` on ``x`` to reuse; ``max_t``: query that many
    neighbours once (callers building kernels for several t pass the largest).

    Parameters
    ----------
    x : array-like of shape (n, d)
        Training points, n >= 2.
    t : int
        Neighbourhood size, >= 1 (clamped to ``n - 1`` with a warning).
    nn : sklearn.neighbors.NearestNeighbors, default=None
        Already fitted on ``x``, to reuse.
    max_t : int, default=None
        Query that many neighbours once (callers building kernels for several t pass the largest).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> bool(np.allclose(kern.K.diagonal(), 1.0))
    True
    """
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if n < 2:
        raise ValueError("x must contain at least 2 points to build a kNN kernel")
    if t < 1:
        raise ValueError(f"n_neighbors t must be >= 1, got {t}")
    if t >= n:
        warnings.warn(f"n_neighbors t={t} >= n={n}; clamped to {n - 1} (E1)", stacklevel=2)
        t = n - 1
    if nn is None:
        nn = NearestNeighbors(algorithm="auto").fit(x)
    dist, idx = _knn_excluding_self(nn, x, t)
    return _kernel_from_knn(x, dist, idx, t, nn)


def _knn_excluding_self(nn, x, t):
    """t nearest *other* points of each training point, ties broken by index (§4 [R])."""
    n = x.shape[0]
    kq = min(t + 1, n)
    dist, idx = nn.kneighbors(x, n_neighbors=kq)
    # drop self: the point itself may not be in column 0 when there are duplicates
    rows = np.arange(n)[:, None]
    is_self = idx == rows
    has_self = is_self.any(axis=1)
    # for rows without self in the list (many exact duplicates), drop the last column instead
    drop = np.where(has_self, np.argmax(is_self, axis=1), kq - 1)
    keep = np.ones_like(idx, dtype=bool)
    keep[np.arange(n), drop] = False
    dist = dist[keep].reshape(n, kq - 1)[:, :t]
    idx = idx[keep].reshape(n, kq - 1)[:, :t]
    # stable tie-break by index among equal distances
    order = np.lexsort((idx, dist), axis=1)
    return np.take_along_axis(dist, order, 1), np.take_along_axis(idx, order, 1)


def _kernel_from_knn(x, dist, idx, t, nn):
    n = x.shape[0]
    dist, idx = dist[:, :t], idx[:, :t]
    sigma = dist[:, t - 1].copy()
    med = np.median(sigma)
    eps = 1e-12 * med if med > 0 else 1e-12
    sigma = np.maximum(sigma, eps)  # duplicates (§4 [R])
    rows = np.repeat(np.arange(n), t)
    cols = idx.ravel()
    adj = sp.coo_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)).tocsr()
    adj = ((adj + adj.T) > 0).tocoo()  # "or": symmetric
    i, j = adj.row, adj.col
    d2 = np.sum((x[i] - x[j]) ** 2, axis=1)
    vals = np.exp(-d2 / (2.0 * sigma[i] * sigma[j]))
    K = sp.coo_matrix((vals, (i, j)), shape=(n, n)).tocsr()
    K.setdiag(1.0)
    K.sort_indices()
    return Kernel(K=K, sigma=sigma, t=int(t), nn=nn)


def kernel_rows(kernel: Kernel, x_train, x_new):
    """Out-of-sample kernel rows K(x', x_i) as CSR (n_new, n) (E6): x_i among the t nearest training
    points of x', or ||x' - x_i|| <= sigma_i; sigma' is the distance to the t-th nearest training point.

    Parameters
    ----------
    kernel : Kernel
        The training kernel.
    x_train : ndarray of shape (n, d)
        The training points.
    x_new : array-like of shape (n_new, d)
        New points.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> kernel_rows(kern, x, x[:2]).shape
    (2, 20)
    """
    x_new = np.asarray(x_new, dtype=np.float64)
    t = kernel.t
    dist, idx = kernel.nn.kneighbors(x_new, n_neighbors=t)
    sig_new = np.maximum(dist[:, t - 1], 1e-12 * max(np.median(kernel.sigma), 1e-300))
    r_dist, r_idx = kernel.nn.radius_neighbors(x_new, radius=float(kernel.sigma.max()))
    rows, cols = [], []
    for a in range(x_new.shape[0]):
        inside = r_idx[a][r_dist[a] <= kernel.sigma[r_idx[a]]]
        c = np.union1d(idx[a], inside)
        rows.append(np.full(c.size, a))
        cols.append(c)
    rows = np.concatenate(rows)
    cols = np.concatenate(cols)
    d2 = np.sum((x_new[rows] - x_train[cols]) ** 2, axis=1)
    vals = np.exp(-d2 / (2.0 * sig_new[rows] * kernel.sigma[cols]))
    return sp.csr_matrix((vals, (rows, cols)), shape=(x_new.shape[0], x_train.shape[0]))


# ------------------------------------------------------------------------------------------------
# links and the 3SMIC matrices (§3)


def link_matrices(side) -> LinkMatrices:
    """Sparse symmetric M (unit diagonal) and C (§3.1, E4) from a validated ``SideInfo``.

    A pair stored with both signs (a ``SideInfo`` built with ``on_conflict="keep"``) is dropped with a
    warning: 3SMIC's links are hard.

    Parameters
    ----------
    side : SideInfo
        Validated side information (its links are read).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> links.M.shape, int(links.C.nnz)
    ((20, 20), 2)
    """
    n = side.n
    must = np.asarray(side.must_link, np.int64).reshape(-1, 2)
    cannot = np.asarray(side.cannot_link, np.int64).reshape(-1, 2)
    if side.has_conflicts:
        key_m, key_c = must[:, 0] * n + must[:, 1], cannot[:, 0] * n + cannot[:, 1]
        both = np.intersect1d(key_m, key_c)
        warnings.warn(f"dropping {both.size} pair(s) given as both must- and cannot-link", stacklevel=2)
        must, cannot = must[~np.isin(key_m, both)], cannot[~np.isin(key_c, both)]
    M = _sym_binary(must, n) + sp.identity(n, format="csr")
    C = _sym_binary(cannot, n)
    return LinkMatrices(M=M.tocsr(), C=C, must=must, cannot=cannot)


def _sym_binary(pairs, n):
    if pairs.shape[0] == 0:
        return sp.csr_matrix((n, n))
    i, j = pairs[:, 0], pairs[:, 1]
    A = sp.coo_matrix((np.ones(2 * i.size), (np.r_[i, j], np.r_[j, i])), shape=(n, n)).tocsr()
    A.data[:] = 1.0  # binary: duplicates do not add
    return A


def labels_to_links(y):
    """All pairs among labelled points (y >= 0): must-links within a label, cannot-links across."""
    from ppclust.sideinfo import SideInfo

    side = SideInfo(len(y), labels=np.asarray(y)).links_from_labels()
    return np.asarray(side.must_link, np.int64), np.asarray(side.cannot_link, np.int64)


def modify_kernel(K, links: LinkMatrices):
    """K' of §3.4: K'_ij = 1 on must-links, 0 on cannot-links (direct links only, symmetric).

    Parameters
    ----------
    K : scipy.sparse matrix of shape (n, n)
        The kernel.
    links : LinkMatrices
        The links.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> Kp = modify_kernel(kern.K, links)
    >>> float(Kp[0, 1]), float(Kp[0, 15])
    (1.0, 0.0)
    """
    if links.must.shape[0] == 0 and links.cannot.shape[0] == 0:
        return K
    M0 = links.M - sp.identity(K.shape[0], format="csr")
    M0.eliminate_zeros()
    mask = ((M0 + links.C) > 0).astype(np.float64)
    Kp = K - K.multiply(mask) + M0
    Kp = sp.csr_matrix(Kp)
    Kp.eliminate_zeros()
    Kp.setdiag(1.0)
    return Kp


def _effective_eta(eta, c):
    return 0.0 if c > 2 else float(eta)  # §3.5 [P]: eta fixed to 0 when c > 2


def u_operator(Kp, links: LinkMatrices, gamma, eta):
    """Matrix-free U = K'[(I + gamma M)^2 + (I - eta C)^2]K' as a SciPy LinearOperator.

    Parameters
    ----------
    Kp : scipy.sparse matrix of shape (n, n)
        The modified kernel K'.
    links : LinkMatrices
        The links.
    gamma : float
        Must-link weight, >= 0.
    eta : float
        Cannot-link weight, >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> u_operator(modify_kernel(kern.K, links), links, 1.0, 0.0).shape
    (20, 20)
    """
    n = Kp.shape[0]
    M, C = links.M, links.C

    def matvec(v):
        v = np.asarray(v, dtype=np.float64).reshape(n, -1)
        w = Kp @ v
        a = w + gamma * (M @ w)
        a = a + gamma * (M @ a)
        b = w - eta * (C @ w)
        b = b - eta * (C @ b)
        out = Kp @ (a + b)
        return out

    return spla.LinearOperator((n, n), matvec=matvec, matmat=matvec, dtype=np.float64)


def u_dense(Kp, links: LinkMatrices, gamma, eta):
    """Dense U (small n only; used by tests and the dense path's oracle).

    Parameters
    ----------
    Kp : scipy.sparse matrix of shape (n, n)
        The modified kernel K'.
    links : LinkMatrices
        The links.
    gamma : float
        Must-link weight, >= 0.
    eta : float
        Cannot-link weight, >= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> u_dense(modify_kernel(kern.K, links), links, 1.0, 0.0).shape
    (20, 20)
    """
    n = Kp.shape[0]
    I = np.eye(n)
    Kd = Kp.toarray()
    M = links.M.toarray()
    C = links.C.toarray()
    A = (I + gamma * M) @ (I + gamma * M) + (I - eta * C) @ (I - eta * C)
    return Kd @ A @ Kd


# ------------------------------------------------------------------------------------------------
# eigen solutions (§2.3, §3.5, §7)


def _dense_top_grid(parts, gammas, etas, c):
    """Top-c eigenpairs of U(gamma, eta) = 2 P0 + 2g P1 + g^2 P2 - 2e P3 + e^2 P4 over a grid: the
    eigenvalues (G, c + 1) and eigenvectors (G, n, c), largest first."""
    lams, vecs = [], []
    for g, e in zip(gammas, etas, strict=True):
        U = 2 * parts[0] + 2 * g * parts[1] + g * g * parts[2] - 2 * e * parts[3] + e * e * parts[4]
        lam, vec = _dense_eigh(0.5 * (U + U.T))
        lams.append(lam[::-1][: c + 1])
        vecs.append(vec[:, ::-1][:, :c])
    return np.stack(lams), np.stack(vecs)


def _dense_eigh(K):
    """All eigenpairs of the symmetric ``K`` (ascending), by LAPACK's divide-and-conquer ``syevd`` on its
    lower triangle on the host: no program compiled per n."""
    return scipy.linalg.eigh(K, lower=True, driver="evd")


def _u_parts(Kp, links: LinkMatrices):
    Kd = Kp.toarray()
    MK = links.M @ Kd
    CK = links.C @ Kd
    return np.stack([Kd @ Kd, Kd @ MK, MK.T @ MK, Kd @ CK, CK.T @ CK])


def _gap_warn(lam_sorted, c):
    if lam_sorted.size > c and abs(lam_sorted[c - 1] - lam_sorted[c]) < 1e-8 * abs(lam_sorted[0]):
        warnings.warn(
            "near-degenerate eigenvalues at the c-th position (e.g. exactly c connected components): "
            "the eigenspace rotation, hence the clipped assignment, is not unique",
            stacklevel=3,
        )


def smic_fit(kernel_or_K, c, *, dense_max=DENSE_MAX, tol=1e-10):
    """Unsupervised SMIC (§2): top-c eigenvectors of K by |lambda|, then §2.4 post-processing.

    Parameters
    ----------
    kernel_or_K : Kernel or sparse matrix of shape (n, n)
        The kernel.
    c : int
        Number of clusters.
    dense_max : int, default=DENSE_MAX
        Largest n solved with a dense eigendecomposition; above it Lanczos (``scipy.sparse.linalg.eigsh``).
    tol : float, default=1e-10
        Tolerance of the Lanczos solver.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> res = smic_fit(kern, 2)
    >>> bool(res.labels[0] != res.labels[19]), res.n_nonempty
    (True, 2)
    """
    K = kernel_or_K.K if isinstance(kernel_or_K, Kernel) else sp.csr_matrix(kernel_or_K)
    n = K.shape[0]
    if n <= dense_max:
        with one_blas_thread():
            lam, vec = _dense_eigh(K.toarray())
    else:
        k = min(c + 1, n - 1)
        lam, vec = spla.eigsh(K, k=k, which="LM", tol=tol, v0=np.ones(n) / math.sqrt(n))
    order = np.argsort(-np.abs(lam), kind="stable")
    lam, vec = lam[order], vec[:, order]
    _gap_warn(np.abs(lam), c)
    lam, vec = lam[:c], vec[:, :c]
    if np.any(lam <= 0):
        warnings.warn(
            "a chosen SMIC eigenvalue is <= 0; the simplified post-processing assumes > 0", stacklevel=2
        )
    return postprocess(K, vec, lam)


def threesmic_fit(
    kernel_or_K,
    c,
    links: LinkMatrices,
    gamma,
    eta,
    *,
    assign="model",
    sign="eigvec",
    dense_max=DENSE_MAX,
    tol=1e-10,
):
    """3SMIC (§3) for one (gamma, eta): top-c eigenvectors of U, then post-processing (§3.6).

    Parameters
    ----------
    kernel_or_K : Kernel or sparse matrix of shape (n, n)
        The kernel.
    c : int
        Number of clusters.
    links : LinkMatrices
        The links.
    gamma : float
        Must-link weight, >= 0.
    eta : float
        Cannot-link weight, >= 0 (fixed to 0 when c > 2).
    assign : {"model", "eigvec"}, default="model"
        Post-processing (:func:`postprocess`).
    sign : {"eigvec", "model"}, default="eigvec"
        Sign fixing (:func:`postprocess`).
    dense_max : int, default=DENSE_MAX
        Largest n solved with a dense eigendecomposition.
    tol : float, default=1e-10
        Tolerance of the Lanczos solver.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> res = threesmic_fit(kern, 2, links, 1.0, 1.0)
    >>> bool(res.labels[0] == res.labels[1] != res.labels[15])
    True
    """
    return threesmic_grid(
        kernel_or_K, c, links, [(gamma, eta)], assign=assign, sign=sign, dense_max=dense_max, tol=tol
    )[0]


def threesmic_grid(
    kernel_or_K,
    c,
    links: LinkMatrices,
    grid,
    *,
    assign="model",
    sign="eigvec",
    dense_max=DENSE_MAX,
    tol=1e-10,
):
    """3SMIC for a list of (gamma, eta) sharing one kernel (dense: one LAPACK eigh per grid point)."""
    K = kernel_or_K.K if isinstance(kernel_or_K, Kernel) else sp.csr_matrix(kernel_or_K)
    n = K.shape[0]
    Kp = modify_kernel(K, links)
    grid = [(float(g), _effective_eta(e, c)) for g, e in grid]
    out = []
    if n <= dense_max:
        with one_blas_thread():
            parts = _u_parts(Kp, links)
            lams, vecs = _dense_top_grid(parts, [g for g, _ in grid], [e for _, e in grid], c)
        for a in range(len(grid)):
            _gap_warn(lams[a], c)
            out.append(postprocess(Kp, vecs[a], lams[a][:c], assign=assign, sign=sign))
        return out
    rng = np.random.default_rng(0)
    v0 = rng.standard_normal(n)
    for g, e in grid:
        op = u_operator(Kp, links, g, e)
        k = min(c + 1, n - 1)
        lam, vec = spla.eigsh(op, k=k, which="LA", tol=tol, v0=v0)
        order = np.argsort(-lam, kind="stable")
        lam, vec = lam[order], vec[:, order]
        _gap_warn(lam, c)
        out.append(postprocess(Kp, vec[:, :c], lam[:c], assign=assign, sign=sign))
    return out


def postprocess(Kp, phi, lam, *, assign="model", sign="eigvec"):
    """§2.4 / §3.6: sign fixing, clipping, normalisation to the uniform prior, argmax (E2, E3, E7).

    ``assign="model"``: g_y = max(0, K' phi_y) (the model output); ``"eigvec"``: g_y = max(0, phi_y).
    ``sign="eigvec"``: sign(phi_y^T 1) (paper); ``"model"``: sign(1^T K' phi_y).

    Parameters
    ----------
    Kp : scipy.sparse matrix of shape (n, n)
        The (modified) kernel.
    phi : ndarray of shape (n, c)
        Eigenvectors.
    lam : ndarray of shape (c,)
        Their eigenvalues.
    assign : {"model", "eigvec"}, default="model"
        Clip the model output or the eigenvectors.
    sign : {"eigvec", "model"}, default="eigvec"
        Sign fixing rule.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> phi = np.c_[np.ones(20), np.r_[np.ones(10), -np.ones(10)]] / np.sqrt(20)
    >>> postprocess(kern.K, phi, np.ones(2), assign="eigvec").labels[[0, 19]].tolist()
    [1, 0]
    """
    phi = np.asarray(phi, dtype=np.float64)
    Kphi = Kp @ phi
    s_src = phi.sum(0) if sign == "eigvec" else Kphi.sum(0)
    s = np.where(s_src >= 0, 1.0, -1.0)  # sign(0) = +1
    phi = phi * s
    Kphi = Kphi * s
    if assign == "model":
        raw = Kphi
    elif assign == "eigvec":
        raw = phi
    else:
        raise ValueError("assign must be 'model' or 'eigvec'")
    g = np.maximum(raw, 0.0)
    tot = g.sum(0)
    scores = g / np.where(tot > 0, tot, 1.0)
    labels = np.argmax(scores, axis=1)  # ties -> lowest y
    zero = ~(scores > 0).any(axis=1)
    if zero.any():  # E3: outside every clipped support -> largest unclipped output
        labels[zero] = np.argmax(raw[zero], axis=1)
    norms = np.maximum(Kphi, 0.0).sum(0)  # out-of-sample normaliser (E6)
    labels = labels.astype(LABEL_DTYPE)
    return SMICResult(
        labels=labels,
        scores=scores,
        phi=phi,
        eigenvalues=np.asarray(lam),
        norms=norms,
        n_nonempty=int(np.unique(labels).size),
    )


def predict_scores(rows, phi, norms, n):
    """Out-of-sample soft outputs p_hat(y|x') = (n/c) max(0, k(x') phi_y) / 1^T max(0, K' phi_y).

    Parameters
    ----------
    rows : scipy.sparse matrix of shape (n_new, n)
        Out-of-sample kernel rows (:func:`kernel_rows`).
    phi : ndarray of shape (n, c)
        Sign-fixed eigenvectors of the fit.
    norms : ndarray of shape (c,)
        The fit's normalisers (:class:`SMICResult`).
    n : int
        Number of training points.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> res = smic_fit(kern, 2)
    >>> p, raw = predict_scores(kernel_rows(kern, x, x[:3]), res.phi, res.norms, 20)
    >>> p.shape
    (3, 2)
    """
    c = phi.shape[1]
    raw = rows @ phi
    g = np.maximum(raw, 0.0)
    return (n / c) * g / np.where(norms > 0, norms, 1.0), raw


def count_violations(labels, links: LinkMatrices):
    """Violated links (§3.7 [R]): must-linked pairs apart plus cannot-linked pairs together.

    Parameters
    ----------
    labels : ndarray of int of shape (n,)
        A labelling.
    links : LinkMatrices
        The links.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> count_violations(np.zeros(20, int), links)  # the cannot-link is violated
    1
    """
    labels = np.asarray(labels)
    v = 0
    if links.must.shape[0]:
        v += int(np.sum(labels[links.must[:, 0]] != labels[links.must[:, 1]]))
    if links.cannot.shape[0]:
        v += int(np.sum(labels[links.cannot[:, 0]] == labels[links.cannot[:, 1]]))
    return v


# ------------------------------------------------------------------------------------------------
# LSMI (§5)


class LSMIEstimator:
    """LSMI with label-independent parts cached: centres, folds, and per (kappa, fold) Gram matrices.

    ``estimate(labels)`` returns the LSMI value after 5-fold CV over the (kappa, delta) grid (§5).

    Parameters
    ----------
    x : ndarray of shape (n, d)
        The points.
    seed : int, default=0
        Seed of the centres and the folds.
    n_centres : int, default=500
        Number of kernel centres (at most n).
    n_folds : int, default=5
        Cross-validation folds.
    max_cache_bytes : float, default=4e8
        Cache the per-kappa design matrices only when they fit in this many bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> lsmi = LSMIEstimator(x, seed=0)
    >>> bool(lsmi.estimate(np.r_[np.zeros(10, int), np.ones(10, int)]) > lsmi.estimate(np.arange(20) % 2))
    True
    """

    KAPPA_FACTORS = (0.25, 0.5, 2**-0.5, 1.0, 2**0.5, 2.0, 4.0)
    DELTAS = (1e-3, 1e-2, 1e-1, 1.0)

    def __init__(self, x, *, seed=0, n_centres=500, n_folds=5, max_cache_bytes=4e8):
        x = np.asarray(x, dtype=np.float64)
        self.n = n = x.shape[0]
        rng = np.random.default_rng(seed)
        b = min(n_centres, n)
        self.centres = np.sort(rng.choice(n, size=b, replace=False))
        sub = rng.choice(n, size=min(n, 1000), replace=False)
        xs = x[sub]
        d2s = np.sum((xs[:, None, :] - xs[None, :, :]) ** 2, -1)
        md = float(np.median(np.sqrt(d2s[np.triu_indices(len(sub), 1)]))) if len(sub) > 1 else 1.0
        md = md if md > 0 else 1.0
        self.kappas = np.array([md * f for f in self.KAPPA_FACTORS])
        self.deltas = np.array(self.DELTAS)
        self.fold = rng.permutation(np.arange(n) % n_folds)
        self.n_folds = n_folds
        xc = x[self.centres]
        self._d2 = np.maximum(np.sum(x**2, 1)[:, None] + np.sum(xc**2, 1)[None, :] - 2 * x @ xc.T, 0.0)
        cache = self._d2.nbytes * len(self.kappas) <= max_cache_bytes
        self._L = np.stack([self._phi(k) for k in self.kappas]) if cache else None  # (nk, n, b)
        # label-independent Grams per kappa: per fold (nk, M, b, b) and their sum (nk, b, b)
        nk = len(self.kappas)
        self._Gf = np.zeros((nk, n_folds, b, b))
        for a in range(nk):
            L = self._get_L(a)
            for m in range(n_folds):
                Lm = L[self.fold == m]
                self._Gf[a, m] = Lm.T @ Lm
        self._G_all = self._Gf.sum(1)

    def _phi(self, kappa):
        return np.exp(-self._d2 / (2 * kappa**2))

    def _get_L(self, a):
        return self._L[a] if self._L is not None else self._phi(self.kappas[a])

    def _all_L(self):
        return self._L if self._L is not None else np.stack([self._phi(k) for k in self.kappas])

    def estimate(self, labels, return_params=False):
        """LSMI of ``labels``: 5-fold CV over (kappa, delta), then the closed form on all data."""
        # many small (b/c x b/c) solves: threaded BLAS only adds contention here
        with one_blas_thread():
            return self._estimate(labels, return_params)

    def _estimate(self, labels, return_params):
        labels = np.asarray(labels)
        n = self.n
        classes = np.unique(labels)
        yc = labels[self.centres]
        onehot = (labels[:, None] == classes[None, :]).astype(np.float64)
        L = self._all_L()  # (nk, n, b)
        S_all = np.einsum("anb,nc->abc", L, onehot)  # (nk, b, c)
        nk, nd = len(self.kappas), len(self.deltas)
        cv = np.zeros((nk, nd))
        cys = [np.flatnonzero(yc == cl) for cl in classes]
        for m in range(self.n_folds):
            val = self.fold == m
            nv = int(val.sum())
            Lv = L[:, val]  # (nk, nv, b)
            oh_v = onehot[val]
            S_tr = S_all - np.einsum("anb,nc->abc", Lv, oh_v)
            n_tr = n - nv
            n_y_tr = onehot.sum(0) - oh_v.sum(0)
            n_y_v = oh_v.sum(0)
            for ci, cy in enumerate(cys):
                if cy.size == 0 or n_y_tr[ci] < 1:
                    continue  # E8: r = 0 for this class
                sub = np.ix_(np.arange(nk), cy, cy)
                H = (n_y_tr[ci] / n_tr**2) * (self._G_all[sub] - self._Gf[:, m][sub])  # (nk, by, by)
                h = S_tr[:, cy, ci] / n_tr  # (nk, by)
                s, V = np.linalg.eigh(H)  # once per (kappa, fold, class); all deltas reuse it
                proj = np.einsum("aij,ai->aj", V, h)[:, :, None]
                coef = proj / (s[:, :, None] + self.deltas[None, None, :])
                Om = V @ coef  # (nk, by, nd)
                R = Lv[:, :, cy] @ Om  # (nk, nv, nd)
                cv += n_y_v[ci] * np.sum(R**2, 1) / (2 * nv**2)
                cv -= np.einsum("and,n->ad", R, oh_v[:, ci]) / nv
        cv /= self.n_folds
        a, d = np.unravel_index(int(np.argmin(cv)), cv.shape)
        value = self._final(labels, classes, onehot, a, self.deltas[d])
        if return_params:
            return value, float(self.kappas[a]), float(self.deltas[d])
        return value

    def _final(self, labels, classes, onehot, a, delta):
        n = self.n
        L = self._get_L(a)
        G_all = self._G_all[a]
        S_all = L.T @ onehot
        yc = labels[self.centres]
        n_y = onehot.sum(0)
        total = 0.0
        for ci in range(classes.size):
            cy = np.flatnonzero(yc == classes[ci])
            if cy.size == 0:
                continue
            H = (n_y[ci] / n**2) * G_all[np.ix_(cy, cy)]
            h = S_all[cy, ci] / n
            w = np.linalg.solve(H + delta * np.eye(cy.size), h)
            total += -0.5 * w @ H @ w + w @ h
        return float(total - 0.5)

    def ratio_direct(self, labels, kappa_index, delta):
        """Direct form of the final LSMI (-1/(2n^2) sum_ij r(x_i,y_j)^2 + 1/n sum r(x_i,y_i) - 1/2)."""
        labels = np.asarray(labels)
        n = self.n
        classes = np.unique(labels)
        L = self._get_L(kappa_index)
        yc = labels[self.centres]
        R = np.zeros((n, classes.size))
        for ci, cl in enumerate(classes):
            cy = np.flatnonzero(yc == cl)
            if cy.size == 0:
                continue
            Phi = L[:, cy]
            n_y = np.sum(labels == cl)
            H = (n_y / n**2) * Phi.T @ Phi
            h = Phi[labels == cl].sum(0) / n
            w = np.linalg.solve(H + delta * np.eye(cy.size), h)
            R[:, ci] = Phi @ w
        counts = np.array([np.sum(labels == cl) for cl in classes])
        sq = np.sum(R**2 * counts[None, :]) / (2 * n**2)
        lin = np.mean(R[np.arange(n), np.searchsorted(classes, labels)])
        return float(-sq + lin - 0.5)


# ------------------------------------------------------------------------------------------------
# model selection (§2.5, §3.7)


class EigenOptions(NamedTuple):
    """How each candidate's eigenproblem is solved and post-processed (:func:`select`,
    :func:`link_check`), a frozen value.

    Parameters
    ----------
    assign : {"model", "eigvec"}, default="model"
        3SMIC post-processing (spec A1): clip the model output ``K' phi`` or ``phi`` itself.
    sign : str, default="eigvec"
        Sign fixing of the eigenvectors (:func:`postprocess`).
    dense_max : int, default=DENSE_MAX
        Largest n solved with a dense eigendecomposition; above it the matrix-free Lanczos solver.
    tol : float, default=1e-10
        Tolerance of the Lanczos solver.

    Examples
    --------
    >>> EigenOptions(assign="eigvec").dense_max == DENSE_MAX
    True
    """

    assign: str = "model"
    sign: str = "eigvec"
    dense_max: int = DENSE_MAX
    tol: float = 1e-10


class SelectionResult(NamedTuple):
    """Output of :func:`select`: the index of the chosen row, every candidate's row, the chosen solution,
    its kernel and modified kernel, and the held-out link check (None when not run).

    Attributes
    ----------
    best : int
        Index of the chosen row.
    rows : list of dict
        Every candidate: t, gamma, eta, lsmi, violations, score.
    fit : SMICResult
        The selected solution.
    kernel : Kernel
        Kernel of the selected t.
    Kp : scipy.sparse.csr_matrix
        Modified kernel of the selected t.
    link_check : dict or None, default=None
        The held-out link check (:func:`link_check`), None when not run.

    Examples
    --------
    >>> SelectionResult._fields[:3]
    ('best', 'rows', 'fit')
    """

    best: int  # index into rows
    rows: list  # dicts: t, gamma, eta, lsmi, violations, score
    fit: SMICResult  # the selected solution
    kernel: Kernel  # kernel of the selected t
    Kp: sp.csr_matrix  # modified kernel of the selected t
    link_check: dict | None = None  # the held-out link check (select's link_folds), None when not run


def eq9_scores(lsmi, nv):
    """Semi-supervised selection criterion eq. (9) with the §3.7 [R] guards.

    Parameters
    ----------
    lsmi : ndarray of shape (m,)
        LSMI of every candidate.
    nv : ndarray of shape (m,)
        Number of violated links of every candidate.

    Examples
    --------
    >>> eq9_scores([1.0, 0.5], [0, 2]).tolist()
    [1.0, -0.5]
    """
    lsmi = np.asarray(lsmi, dtype=np.float64)
    nv = np.asarray(nv, dtype=np.float64)
    lmax, lmin = lsmi.max(), lsmi.min()
    if lmax == lmin:
        term = np.ones_like(lsmi)
    elif lmax <= 0:
        warnings.warn("max LSMI <= 0: eq. (9) normalisation replaced by min-max scaling", stacklevel=2)
        term = (lsmi - lmin) / (lmax - lmin)
    else:
        term = lsmi / lmax
    vmax = nv.max()
    pen = nv / vmax if vmax > 0 else np.zeros_like(nv)
    return term - pen


def select(
    x,
    c,
    links: LinkMatrices | None,
    *,
    ts=DEFAULT_TS,
    gammas=DEFAULT_GAMMAS,
    etas=DEFAULT_ETAS,
    lsmi: LSMIEstimator | None = None,
    seed=0,
    progress_bar=False,
    link_folds=0,
    link_repeats=DEFAULT_LINK_REPEATS,
    eigen: EigenOptions | None = None,
    **options,
):
    """Grid search: LSMI over t for SMIC (no links), eq. (9) over (t, gamma, eta) for 3SMIC.

    ``progress_bar``: a bar over the model-selection candidates (:mod:`ppclust._progress`).

    ``link_folds`` (not in the paper; 0 = off, the paper's 3SMIC): the held-out link check of
    :func:`link_check`. With ``k >= 2`` folds the eq. (9) winner is refitted k times, each time without one
    fold of the links, and its labels scored on the links it did not see
    (:func:`ppclust.sideinfo.link_agreement`), over ``link_repeats`` random fold splits (repeated
    cross-validation); the no-link SMIC (LSMI over ``ts``) is scored on all links,
    none of which it saw. The links are used only when the held-out score of the link fit is at least that
    of the no-link fit; otherwise the no-link SMIC is returned (a row with ``links=False``). Eq. (9) itself
    counts violations as if every link were right, so with flipped links it can pick a fit that is worse
    than ignoring them; the held-out score ranks the two by pair accuracy whatever the flip rate.

    Ties go to the smallest t, then smallest gamma, then smallest eta. LSMI values are cached per
    distinct labelling. ``eigen`` (:class:`EigenOptions`; its fields may also be given as keywords,
    ``options``) says how each candidate is solved.

    Parameters
    ----------
    x : array-like of shape (n, d)
        The points.
    c : int
        Number of clusters.
    links : LinkMatrices or None
        The links; None (or no links) selects SMIC by LSMI.
    ts : sequence of int, default=DEFAULT_TS
        Candidate neighbourhood sizes (the grids: ``docs/decisions/0013-smic-model-selection.md``).
    gammas : sequence of float, default=DEFAULT_GAMMAS
        Candidate must-link weights.
    etas : sequence of float, default=DEFAULT_ETAS
        Candidate cannot-link weights (binary problems only).
    lsmi : LSMIEstimator, default=None
        A prepared estimator to reuse; None builds one.
    seed : int, default=0
        Seed of the LSMI estimator and the link folds.
    progress_bar : bool, default=False
        Show a bar over the candidates.
    link_folds : int, default=0
        Folds of the held-out link check; 0 turns it off (the paper's 3SMIC;
        ``docs/decisions/0014-smic-link-check.md``).
    link_repeats : int, default=DEFAULT_LINK_REPEATS
        Random fold splits of the link check.
    eigen : EigenOptions, default=None
        How each candidate is solved; None is ``EigenOptions()``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> sel = select(x, 2, links, ts=(3,), gammas=(1.0,), etas=(0.0,), seed=0)
    >>> len(sel.rows), bool(sel.fit.labels[0] != sel.fit.labels[19])
    (1, True)
    """
    eigen = (EigenOptions() if eigen is None else eigen)._replace(**options)
    assign, sign, dense_max, tol = eigen
    x = np.asarray(x, dtype=np.float64)
    n = x.shape[0]
    if lsmi is None:
        lsmi = LSMIEstimator(x, seed=seed)
    ts = sorted({min(int(t), n - 1) for t in ts})
    nn = NearestNeighbors().fit(x)
    dist, idx = _knn_excluding_self(nn, x, max(ts))
    supervised = links is not None and (links.must.shape[0] + links.cannot.shape[0]) > 0
    if supervised:
        etas_eff = sorted({_effective_eta(e, c) for e in etas})
        grid = [(float(g), float(e)) for g in sorted(gammas) for e in etas_eff]
    cache: dict[bytes, float] = {}
    rows, fits, kernels, kernel_of_t = [], [], [], []
    n_candidates = len(ts) * (len(grid) if supervised else 1)
    bar = _progress.bar(n_candidates, "SMIC model selection", "candidate", progress_bar)
    for t in ts:
        kern = _kernel_from_knn(x, dist, idx, t, nn)
        kernel_of_t.append((t, kern))
        if supervised:
            results = threesmic_grid(
                kern, c, links, grid, assign=assign, sign=sign, dense_max=dense_max, tol=tol
            )
            params = grid
        else:
            results = [smic_fit(kern, c, dense_max=dense_max, tol=tol)]
            params = [(0.0, 0.0)]
        for (g, e), res in zip(params, results, strict=True):
            key = _canonical(res.labels).tobytes()
            if key not in cache:
                cache[key] = lsmi.estimate(res.labels)
            nv = count_violations(res.labels, links) if supervised else 0
            rows.append(dict(t=t, gamma=g, eta=e, lsmi=cache[key], violations=nv))
            fits.append(res)
            kernels.append(kern)
            bar.update(1)
    bar.close()
    lv = np.array([r["lsmi"] for r in rows])
    if supervised:
        score = eq9_scores(lv, [r["violations"] for r in rows])
    else:
        score = lv
    for r, s in zip(rows, score, strict=True):
        r["score"] = float(s)
    best = int(np.argmax(score))
    kern = kernels[best]
    Kp = modify_kernel(kern.K, links) if supervised else kern.K
    if not (supervised and link_folds):
        return SelectionResult(best=best, rows=rows, fit=fits[best], kernel=kern, Kp=Kp)
    # the no-link SMIC (select's unsupervised branch) on the kernels built above, LSMI from the same cache
    none_fits = [smic_fit(k, c, dense_max=dense_max, tol=tol) for _, k in kernel_of_t]
    for res in none_fits:
        key = _canonical(res.labels).tobytes()
        if key not in cache:
            cache[key] = lsmi.estimate(res.labels)
    none_lsmi = [cache[_canonical(res.labels).tobytes()] for res in none_fits]
    nb = int(np.argmax(none_lsmi))  # ties to the smallest t, as in the unsupervised branch
    none_fit, (none_t, none_kern) = none_fits[nb], kernel_of_t[nb]
    check = link_check(
        kern,
        c,
        links,
        rows[best]["gamma"],
        rows[best]["eta"],
        none_fit.labels,
        n_folds=link_folds,
        n_repeats=link_repeats,
        seed=seed,
        eigen=eigen,
    )
    if check["use_links"]:
        return SelectionResult(best=best, rows=rows, fit=fits[best], kernel=kern, Kp=Kp, link_check=check)
    rows.append(
        dict(
            t=none_t,
            gamma=0.0,
            eta=0.0,
            lsmi=none_lsmi[nb],
            violations=count_violations(none_fit.labels, links),
            score=float("nan"),
            links=False,
        )
    )
    return SelectionResult(
        best=len(rows) - 1, rows=rows, fit=none_fit, kernel=none_kern, Kp=none_kern.K, link_check=check
    )


def link_check(
    kernel: Kernel,
    c,
    links: LinkMatrices,
    gamma,
    eta,
    labels_none,
    *,
    n_folds=5,
    n_repeats=1,
    seed=0,
    eigen: EigenOptions | None = None,
    **options,
):
    """Held-out link check (not in the paper): do the links improve on the no-link labelling?

    The links are split into ``n_folds`` folds (:func:`ppclust.sideinfo.link_folds`); 3SMIC at ``(gamma,
    eta)`` on ``kernel`` is fitted without each fold and scored on it, for ``n_repeats`` independent fold
    splits (split r seeded ``seed + 1000 r``; the score is the mean over splits); ``labels_none`` (a fit
    that saw no link) is scored on all links. Both scores are :func:`ppclust.sideinfo.link_agreement`, whose
    expectation on unseen links is increasing in pair accuracy for any flip rate below 1/2. Returns a
    dict: ``folds``, ``agreement_links`` (pooled over the held-out folds), ``agreement_none``, ``use_links``
    (``agreement_links >= agreement_none``; True when there are fewer than 2 links). ``eigen`` and
    ``options`` as in :func:`select`.

    Parameters
    ----------
    kernel : Kernel
        The kernel of the chosen t.
    c : int
        Number of clusters.
    links : LinkMatrices
        The links.
    gamma : float
        Must-link weight.
    eta : float
        Cannot-link weight.
    labels_none : ndarray of int of shape (n,)
        A labelling fitted without links.
    n_folds : int, default=5
        Folds of the links.
    n_repeats : int, default=1
        Independent fold splits.
    seed : int, default=0
        Seed of the first split.
    eigen : EigenOptions, default=None
        As :func:`select`.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.sideinfo import SideInfo
    >>> rng = np.random.default_rng(0)
    >>> x = np.r_[rng.normal(0, 0.3, (10, 2)), rng.normal(4, 0.3, (10, 2))]
    >>> kern = build_kernel(x, 3)
    >>> links = link_matrices(SideInfo.from_links(20, must_link=[(0, 1)], cannot_link=[(0, 15)]))
    >>> chk = link_check(kern, 2, links, 1.0, 0.0, smic_fit(kern, 2).labels, n_folds=2, seed=0)
    >>> sorted(chk)
    ['agreement_links', 'agreement_none', 'folds', 'use_links']
    """
    from ppclust.sideinfo import SideInfo, link_agreement, link_folds

    assign, sign, dense_max, tol = (EigenOptions() if eigen is None else eigen)._replace(**options)
    side = SideInfo.from_links(kernel.K.shape[0], must_link=links.must, cannot_link=links.cannot)
    hit, n_splits = 0.0, 0
    for r in range(int(n_repeats)):
        splits = link_folds(side, n_folds, seed=seed + 1000 * r)
        for train, held in splits:
            res = threesmic_fit(
                kernel,
                c,
                link_matrices(train),
                gamma,
                eta,
                assign=assign,
                sign=sign,
                dense_max=dense_max,
                tol=tol,
            )
            hit += link_agreement(res.labels, held) * float(np.sum(held.weight))
        n_splits = len(splits)
    if not n_splits:
        return dict(folds=0, agreement_links=float("nan"), agreement_none=float("nan"), use_links=True)
    a_links = hit / (float(np.sum(side.weight)) * int(n_repeats))
    a_none = link_agreement(labels_none, side)
    return dict(
        folds=n_splits,
        agreement_links=float(a_links),
        agreement_none=float(a_none),
        use_links=bool(a_links >= a_none),
    )


# --- helpers ---


def _canonical(labels):
    """Relabel by order of first appearance (LSMI is invariant to label names)."""
    _, first, inv = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.argsort(np.argsort(first))
    return rank[inv].astype(np.int32)
