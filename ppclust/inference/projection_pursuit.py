r"""Projection pursuit for C3L without labels: a categorisation from the data alone (paper Sec. 6.3).

The minimum-kurtosis direction of the sphered data (:func:`min_kurtosis_direction`), a two-component 1-D
Gaussian mixture on the projection (:func:`gmm_1d_threshold`) and the boundary at the crossing of its
weighted densities give a hyperplane (:func:`pp_hyperplane`) that C3L then refines
(:mod:`ppclust.inference.c3l`; spec ``c3l.md`` §4 and §7.2). The algorithmic details are ours: the paper
used R's REPPlab without stating its algorithm.
"""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

from ppclust._jax import as_key, x64
from ppclust.families import normal_logpdf

__all__ = ["min_kurtosis_direction", "gmm_1d_threshold", "pp_hyperplane"]


@partial(jax.jit, static_argnames=("n_starts", "n_steps"))
def _min_kurtosis_sphered(key, xs, n_starts: int = 50, n_steps: int = 300, lr: float = 0.1):
    """Minimise the sample kurtosis of ``xs @ w`` over unit ``w`` (xs sphered) by projected gradient."""

    def kurt(w):
        w = w / jnp.linalg.norm(w)
        y = xs @ w
        y = y - y.mean()
        return jnp.mean(y**4) / jnp.mean(y**2) ** 2

    g = jax.grad(kurt)

    def one(w0):
        def body(_, w):
            w = w - lr * g(w)
            return w / jnp.linalg.norm(w)

        w = lax.fori_loop(0, n_steps, body, w0 / jnp.linalg.norm(w0))
        return w, kurt(w)

    w0 = jax.random.normal(key, (n_starts, xs.shape[1]), xs.dtype)
    ws, ks = jax.vmap(one)(w0)
    best = jnp.argmin(ks)
    return ws[best], ks[best]


def min_kurtosis_direction(X, random_state=0, n_starts: int = 50, n_steps: int = 300):
    """Unit direction ``w`` (in sphered coordinates) minimising the kurtosis of the projection [ours].

    The paper used R's REPPlab without stating the algorithm; here the data are sphered
    (``xs = (x - mean) W`` with ``W = Sigma^{-1/2}``) and the kurtosis is minimised over the unit sphere
    by projected gradient from ``n_starts`` random starts. Returns ``(h, kurtosis, W, mean)`` with
    ``h = W w`` the direction in the original space (projection ``h^T (x - mean)``).

    Parameters
    ----------
    X : array (n, N)
        The data.
    random_state : int, default=0
        Seeds the random starts.
    n_starts : int, default=50
        Random starts.
    n_steps : int, default=300
        Projected-gradient steps per start.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.projection_pursuit import min_kurtosis_direction
    >>> X = np.random.default_rng(0).normal(size=(100, 2)) + np.repeat([[-4.0, 0.0], [4.0, 0.0]], 50, 0)
    >>> h, k, W, mean = min_kurtosis_direction(X, n_starts=4, n_steps=50)
    >>> h.shape, W.shape, bool(k < 3.0)  # a bimodal projection has kurtosis below the normal's 3
    ((2,), (2, 2), True)
    """
    X = np.asarray(X, dtype=np.float64)
    mean = X.mean(0)
    cov = np.cov(X, rowvar=False, bias=True)
    ev, V = np.linalg.eigh(cov)
    keep = ev > 1e-10 * ev.max()
    W = V[:, keep] / np.sqrt(ev[keep])  # (N, r) whitening
    xs = (X - mean) @ W
    with x64():
        w, k = _min_kurtosis_sphered(
            as_key(random_state), jnp.asarray(xs), n_starts=n_starts, n_steps=n_steps
        )
        w = np.asarray(w)
        k = float(k)
    return W @ w, k, W, mean


def gmm_1d_threshold(y, n_iter: int = 500, tol: float = 1e-10):
    """Two-component 1-D Gaussian mixture by EM (init: the two halves split at the median) and the crossing
    point of the weighted densities between the two means (spec §7.2). Returns ``(tau, params, labels)``
    with params = (weights, means, variances) and labels the MAP component (0 = lower mean).

    Parameters
    ----------
    y : array (n,)
        The projections.
    n_iter : int, default=500
        Most EM iterations.
    tol : float, default=1e-10
        Stop when the log-likelihood's relative gain is below it.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.projection_pursuit import gmm_1d_threshold
    >>> rng = np.random.default_rng(0)
    >>> y = np.r_[rng.normal(size=50) - 4.0, rng.normal(size=50) + 4.0]
    >>> tau, _, labels = gmm_1d_threshold(y)
    >>> bool(-2.0 < tau < 2.0), int(labels.sum())
    (True, 50)
    """
    y = np.asarray(y, dtype=np.float64)
    med = np.median(y)
    lo, hi = y[y <= med], y[y > med]
    w = np.array([lo.size, hi.size], float) / y.size
    mu = np.array([lo.mean(), hi.mean()])
    var = np.array([lo.var(), hi.var()]) + 1e-12 * y.var()
    ll_old = -np.inf
    for _ in range(n_iter):
        lp = np.log(w) + normal_logpdf(y[:, None], mu, np.sqrt(var), xp=np)
        mx = lp.max(1, keepdims=True)
        ll = float((mx[:, 0] + np.log(np.exp(lp - mx).sum(1))).sum())
        r = np.exp(lp - mx)
        r /= r.sum(1, keepdims=True)
        nk = r.sum(0)
        w = nk / y.size
        mu = (r * y[:, None]).sum(0) / nk
        var = (r * (y[:, None] - mu) ** 2).sum(0) / nk + 1e-12 * y.var()
        if ll - ll_old < tol * abs(ll):
            break
        ll_old = ll
    order = np.argsort(mu)
    w, mu, var = w[order], mu[order], var[order]
    # crossing of w0 N(mu0, v0) and w1 N(mu1, v1): quadratic a y^2 + b y + c = 0
    a = 0.5 / var[1] - 0.5 / var[0]
    b = mu[0] / var[0] - mu[1] / var[1]
    c = (
        0.5 * mu[1] ** 2 / var[1]
        - 0.5 * mu[0] ** 2 / var[0]
        + np.log(w[0] / w[1])
        + 0.5 * np.log(var[1] / var[0])
    )
    if abs(a) < 1e-14 * (abs(b) + 1e-300):
        roots = np.array([-c / b])
    else:
        roots = np.roots([a, b, c])
        roots = roots[np.isreal(roots)].real
    inside = roots[(roots >= mu[0]) & (roots <= mu[1])]
    tau = float(inside[0]) if inside.size else float(0.5 * (mu[0] + mu[1]))
    lp = np.log(w) + normal_logpdf(y[:, None], mu, np.sqrt(var), xp=np)
    return tau, (w, mu, var), np.argmax(lp, 1).astype(np.int32)


def pp_hyperplane(X, random_state=0, n_starts: int = 50):
    """Projection-pursuit categorisation (paper Sec. 6.3): minimum-kurtosis direction, 2-component 1-D
    GMM, boundary at the density crossing. Returns ``(normal, offset, pp_labels)`` in the original space;
    then run C3L with ``hyperplane=(normal, offset)`` to refine (see :class:`ppclust.C3L`).

    Parameters
    ----------
    X : array (n, N)
        The data.
    random_state : int, default=0
        Seeds the random starts.
    n_starts : int, default=50
        Random starts of :func:`min_kurtosis_direction`.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.projection_pursuit import pp_hyperplane
    >>> X = np.random.default_rng(0).normal(size=(100, 2)) + np.repeat([[-4.0, 0.0], [4.0, 0.0]], 50, 0)
    >>> normal, offset, labels = pp_hyperplane(X, n_starts=4)
    >>> normal.shape, sorted(np.bincount(labels).tolist())
    ((2,), [50, 50])
    """
    h, _, _, mean = min_kurtosis_direction(X, random_state=random_state, n_starts=n_starts)
    proj = (np.asarray(X, dtype=np.float64) - mean) @ h
    tau, _, labels = gmm_1d_threshold(proj)
    return h, float(h @ mean + tau), labels
