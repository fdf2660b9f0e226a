r"""Compiled (numba) twin of :func:`ppclust.families.gaussian_loglik`: one point, one slot.

The sub-cluster sampler's compiled passes (:mod:`ppclust.inference._subcluster_cpu`) evaluate the explicit
Gaussian parameters of :class:`~ppclust.families.GaussianParams` point by point with it.
"""

from __future__ import annotations

from functools import partial

from ppclust.families._niw_cpu import DIAG, FULL
from ppclust.families._numba import compile_kernel
from ppclust.families.densities import LOG_2PI

__all__ = ["UPPER", "gaussian_loglik"]

#: Full covariance whose precision factor is upper triangular (``A[k, j * d + r] = 0`` for r > j): the
#: kernels skip the zeros (a layout of explicit parameters, never a family's code).
UPPER = 4


@partial(compile_kernel, inline="always")  # IR inlining: no array structs passed per point
def gaussian_loglik(x, i, mean, A, half, k, code, w):
    r"""Log-density of point ``x[i]`` in slot k, twin of :func:`ppclust.families.gaussian_loglik`.

    Parameters
    ----------
    x : float64 array (n, d)
        Points.
    i : int
        Row of the point.
    mean : float64 array (K, d)
        Means.
    A : float64 array (K, m)
        Precision factors flattened: m = d * d column-major (``code`` FULL: ``A[k, j * d + r]`` =
        :math:`(A_k)_{rj}`; UPPER the same layout of an upper-triangular factor, whose zeros are skipped),
        d (DIAG) or 1 (SPHERICAL).
    half : float64 array (K,)
        :math:`\tfrac12\ln\det\Sigma_k^{-1}`.
    k : int
        Slot.
    code : int
        Layout code.
    w : float64 array (d,)
        Scratch.

    Returns
    -------
    float
        :math:`-\tfrac d2\ln 2\pi + h_k - \tfrac12\|A_k(x-\mu_k)\|^2`.

    Notes
    -----
    Full covariance accumulates :math:`A_k u` column by column (each row's sum in the order j = 0..d-1, as a
    row-wise dot product, while the loop over rows vectorises).

    Examples
    --------
    >>> import numpy as np
    >>> lp = gaussian_loglik(np.zeros((1, 2)), 0, np.zeros((1, 2)), np.ones((1, 1)), np.zeros(1), 0,
    ...                      2, np.zeros(2))  # code 2: spherical
    >>> round(lp, 6)
    -1.837877
    """
    d = x.shape[1]
    q = 0.0
    if code == FULL or code == UPPER:
        for r in range(d):
            w[r] = 0.0
        for j in range(d):
            u = x[i, j] - mean[k, j]
            top = j + 1 if code == UPPER else d
            for r in range(top):
                w[r] += A[k, j * d + r] * u
        for r in range(d):
            q += w[r] * w[r]
    elif code == DIAG:
        for j in range(d):
            t = A[k, j] * (x[i, j] - mean[k, j])
            q += t * t
    else:
        for j in range(d):
            t = A[k, 0] * (x[i, j] - mean[k, j])
            q += t * t
    return -0.5 * d * LOG_2PI + half[k] - 0.5 * q
