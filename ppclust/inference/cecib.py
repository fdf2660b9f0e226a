r"""CEC-IB: cross-entropy clustering with an information-bottleneck label term (Śmieja & Geiger 2017).

Cost of a hard partition :math:`Y=\{Y_1..Y_k\}` of n points in :math:`\mathbb R^N` with partial
labels (spec ``cecib.md`` eqs. 10, 11; natural logs, nats):

.. math::

    E_\beta(Y) = \sum_i p_i\Big[-\ln p_i + \tfrac N2\ln(2\pi e) + \tfrac12\ln\det\Sigma_i
                 + \beta\,H(Z\mid Y_i\cap X_l)\Big],\qquad p_i = n_i/n,

with :math:`\Sigma_i` the MLE covariance of :math:`Y_i` and
:math:`H(Z\mid Y_i\cap X_l) = \ln L_i - \tfrac1{L_i}\sum_j c_{ij}\ln c_{ij}` (0 when :math:`L_i=0`)
computed from the :math:`L_i` labelled members only, but weighted by the full :math:`p_i`. So moving an
*unlabelled* point still changes the label term by :math:`\pm\beta H_i/n` (the spec's correction to the
paper's Sec. 3.4, which says these terms cancel). With complete labels this is eq. (4); with
``beta = 0`` or no labels it is plain CEC (eq. 2).

Degenerate clusters (spec §7.3 / reference README): a cluster whose MLE covariance is numerically
singular (smallest eigenvalue <= 1e-12 x largest, or a removal that shrinks det S by more than 1e12)
costs +inf, so no move creates one, and it is deleted after initialisation and after each pass; the
engine also deletes clusters below ``min_size = max(eps * n, N + 2)`` points. Optional regularisation
(``reg > 0``, off by default): every cluster's scatter gets a pseudo-scatter ``reg * tr(Σ_X)/N * I``
(a fixed ridge, so the rank-one updates stay exact). It breaks the affine invariance slightly.

Statistics per slot (``CECIBStats``): ``n``, sums ``s``, ``scale`` = lower Cholesky of the scatter
:math:`S_k` (+ ridge), label counts ``counts`` (K, m), ``n_lab`` = L, ``clogc`` = :math:`\sum_j c\ln c`.
A candidate move is O(K N^2) (matrix determinant lemma) + O(K) for the label term.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from ppclust.families import LOG_2PIE, ML_SING_TOL, ml_entropy
from ppclust.inference import hartigan
from ppclust.inference.cec import CECCost
from ppclust.sideinfo import labelled_means

__all__ = ["CostParts", "make_cost", "cecib_cost", "fit", "fit_batch", "replay", "beta0",
           "beta0_from_labels", "encode_labels", "LOG_2PIE", "BETA0_HALF_NORMAL"]

Array = jax.Array
#: Example 4.1: 1-D Gaussian split at its mean, 1 + ln sqrt(1 - 2/pi) / ln 2 = 0.26978 (paper: "0.269").
BETA0_HALF_NORMAL = 1.0 + 0.5 * math.log(1.0 - 2.0 / math.pi) / math.log(2.0)
#: A cluster is numerically singular when lambda_min <= SING_TOL * lambda_max (reference README).
SING_TOL = ML_SING_TOL


class CostParts(NamedTuple):
    """Cost of a partition, with the paper's three parts (the jar's columns)."""

    total: Array  # E_beta
    model_complexity: Array  # H(Y) = sum_i -p_i ln p_i
    accuracy: Array  # sum_i p_i H(N(mu_i, Sigma_i))
    side_information: Array  # beta * sum_i p_i H(Z | Y_i ∩ X_l)
    cluster_terms: Array  # (K, 3) per cluster [a_i, b_i, c_i] (c_i without beta), 0 for empty
    sizes: Array  # (K,)


def make_cost(x: Array, n_labels: int, beta=1.0, reg: float = 0.0) -> CECCost:
    """The CEC-IB cost for data ``x`` with ``n_labels`` categories: :class:`~ppclust.inference.cec.CECCost`
    with the label term and no leakage term (ridge :func:`ppclust.inference.hartigan.ridge`
    ``= reg·tr(Σ_X)/N``)."""
    n, d = x.shape
    ridge = hartigan.ridge(x, reg)
    dt = x.dtype
    return CECCost(jnp.asarray(float(n), dt), jnp.asarray(beta, dt), jnp.zeros(0, dt), jnp.zeros(0, dt),
                   jnp.asarray(ridge, dt), n_labels=max(int(n_labels), 1), n_dec=0, dim=int(d),
                   min_count=d + 1.0)


def min_size(n: int, d: int, eps: float) -> float:
    """Deletion threshold: a cluster with fewer than ``max(eps * n, d + 2)`` points dies (ref-impl rule)."""
    return max(eps * n, d + 2.0)


# ---------------------------------------------------------------------------------------------
# cost of a given partition (fresh two-pass statistics)
# ---------------------------------------------------------------------------------------------


def cecib_cost(x, labels, y=None, beta: float = 1.0, ridge: float = 0.0) -> CostParts:
    """E_beta of the partition ``labels`` (any ints; one cluster per distinct value, in sorted order).

    ``y``: partial labels (any ints, -1 = unlabelled) or None. Host-side NumPy with fresh two-pass
    statistics and ``slogdet``; a numerically singular cluster makes the accuracy term (and the
    total) +inf. Matches the authors' jar to ~1e-13 on its demo data (tests/inference/test_cecib.py).
    ``ridge``: pseudo-scatter added to every cluster's scatter (:func:`hartigan.ridge`; 0 = none).
    """
    x = np.asarray(x, np.float64)
    n, d = x.shape
    _, z = np.unique(np.asarray(labels), return_inverse=True)
    yy, m = encode_labels(y, n)
    K = int(z.max()) + 1
    terms = np.zeros((K, 3))
    sizes = np.bincount(z, minlength=K).astype(float)
    for k in range(K):
        xk = x[z == k]
        p = len(xk) / n
        cov = np.atleast_2d(np.cov(xk.T, bias=True)) if len(xk) > 1 else np.zeros((d, d))
        if ridge > 0:
            cov = cov + ridge / len(xk) * np.eye(d)
        sign, logdet = np.linalg.slogdet(cov)
        ev = np.linalg.eigvalsh(cov)
        sing = sign <= 0 or ev[0] <= SING_TOL * ev[-1] or (len(xk) < d + 1 and ridge <= 0)
        cnt = np.bincount(yy[(z == k) & (yy >= 0)], minlength=max(m, 1)).astype(float)
        L = cnt.sum()
        q = cnt[cnt > 0] / L if L > 0 else np.zeros(0)
        terms[k] = (-p * np.log(p), np.inf if sing else p * ml_entropy(1.0, logdet, d, xp=np),
                    p * float(-(q * np.log(q)).sum()))
    a, b, c = terms.sum(0)
    return CostParts(a + b + beta * c, a, b, beta * c, terms, sizes)


def encode_labels(y, n: int):
    """Map partial labels (any ints, -1 = unlabelled; None = no labels) to 0..m-1 / -1 -> (codes, m)."""
    if y is None:
        return np.full(n, -1, np.int32), 0
    y = np.asarray(y)
    lab = y != -1
    cats, codes = np.unique(y[lab], return_inverse=True)
    out = np.full(n, -1, np.int32)
    out[lab] = codes
    return out, len(cats)


# ---------------------------------------------------------------------------------------------
# solvers
# ---------------------------------------------------------------------------------------------


def fit(key, x, y_codes, n_labels: int, *, n_clusters: int, beta=1.0, eps: float = 0.05, n_init: int = 10,
        init: str = "kmeans++", max_passes: int = 100, reassign: str = "lazy", reg: float = 0.0, tol=0.0,
        devices="auto", backend: str = "auto") -> hartigan.HartiganFit:
    """CEC-IB by Hartigan moves with ``n_init`` restarts; call inside ``jax.enable_x64(True)``.

    Returns a :class:`~ppclust.inference.hartigan.HartiganFit` ``(best, costs, n_passes, n_clusters)``.
    ``backend``: ``"auto"`` | ``"numba"`` | ``"xla"`` (:func:`ppclust.inference.hartigan.run`).
    ``init="labels"``: the first ``n_labels`` initial centres are the labelled categories' means
    (:func:`ppclust.sideinfo.labelled_means`), the others k-means++ given them
    (:func:`ppclust.inference.hartigan.seeded_partitions`); ``n_clusters`` is raised to ``n_labels`` if
    smaller.
    """
    n, d = x.shape
    cost = make_cost(x, n_labels, beta, reg)
    K, centres = _seeding(x, y_codes, n_labels, n_clusters, init)
    return hartigan.fit(key, cost, x, jnp.asarray(y_codes, jnp.int32), K=K,
                        min_size=min_size(n, d, eps), n_init=n_init, init=init, max_passes=max_passes,
                        reassign=reassign, tol=tol, devices=devices, backend=backend, centres=centres)


def _seeding(x, y_codes, n_labels, n_clusters, init):
    """(K, centres) of a start: the labelled means and max(n_clusters, n_labels) slots for ``"labels"``."""
    if init != "labels":
        return n_clusters, None
    if n_labels == 0:
        raise ValueError("init='labels' needs labelled points")
    return max(n_clusters, n_labels), labelled_means(x, y_codes, n_labels)


def fit_batch(key, x, y_codes, n_labels: int, *, n_clusters: int, beta=1.0, eps: float = 0.05,
              n_init: int = 10, init: str = "kmeans++", max_iter: int = 100, polish: bool = True,
              max_passes: int = 100, reassign: str = "lazy", reg: float = 0.0,
              backend: str = "auto", mesh=None) -> hartigan.HartiganFit:
    """CEC-IB by batch (Lloyd-type) steps, then Hartigan passes (:func:`hartigan.fit_batch`, which says
    when to prefer it); call inside ``jax.enable_x64(True)``. Returns the :class:`hartigan.HartiganFit`
    of the polished run (restart arrays: the batch restarts). ``mesh``: points split over a 1-D data
    mesh (see :func:`hartigan.fit_batch`)."""
    n, d = x.shape
    cost = make_cost(x, n_labels, beta, reg)
    K, centres = _seeding(x, y_codes, n_labels, n_clusters, init)
    fitted, _ = hartigan.fit_batch(key, cost, x, jnp.asarray(y_codes, jnp.int32), K=K,
                                   min_size=min_size(n, d, eps), n_init=n_init, init=init,
                                   max_iter=max_iter, polish=polish, polish_passes=max_passes,
                                   reassign=reassign, backend=backend, mesh=mesh, centres=centres)
    return fitted


def replay(x, y_codes, n_labels: int, centre_idx, *, beta=1.0, eps: float = 0.05, max_passes: int = 100,
           reassign: str = "lazy", reg: float = 0.0, backend: str = "auto") -> hartigan.HartiganResult:
    """One deterministic run seeded by given centre indices (nearest-centre partition), as the
    reference's ``fixed_centres`` runs. Call inside ``jax.enable_x64(True)``."""
    n, d = x.shape
    cost = make_cost(x, n_labels, beta, reg)
    labels0 = hartigan.voronoi(x, jnp.asarray(centre_idx, jnp.int32))
    return hartigan.run(cost, x, jnp.asarray(y_codes, jnp.int32), labels0, K=len(centre_idx),
                        min_size=min_size(n, d, eps), max_passes=max_passes, reassign=reassign,
                        backend=backend)


# ---------------------------------------------------------------------------------------------
# choosing beta (Theorems 4.1 / 4.2)
# ---------------------------------------------------------------------------------------------


def beta0(parts) -> float:
    r"""Critical :math:`\beta_0` of Theorem 4.2 (eq. 14) for merging the point sets ``parts`` into one.

    :math:`\beta_0 = 1 + \sum_i \frac{p_i}{2}\ln\frac{\det\Sigma_i}{\det\Sigma} \big/ H(p)` with
    :math:`p_i \propto |part_i|`, :math:`\Sigma_i` their MLE covariances and :math:`\Sigma` the pooled one.
    For ``beta >= beta0`` the split, label-consistent partition costs no more than the merged one; the
    cost difference is exactly :math:`q H(p)(\beta - \beta_0)`. Always <= 1 (Lemma E.1).
    """
    parts = [np.atleast_2d(np.asarray(p, np.float64).reshape(len(p), -1)) for p in parts]
    if len(parts) < 2:
        raise ValueError("beta0 needs at least two parts")
    sizes = np.array([len(p) for p in parts], float)
    p = sizes / sizes.sum()

    def logdet(a):
        sign, ld = np.linalg.slogdet(np.atleast_2d(np.cov(a.T, bias=True)))
        if sign <= 0:
            raise ValueError("beta0: a part has a singular covariance (needs more than d points)")
        return ld

    pooled = logdet(np.concatenate(parts))
    num = sum(pi / 2.0 * (logdet(a) - pooled) for pi, a in zip(p, parts, strict=True))
    return float(1.0 + num / -np.sum(p * np.log(p)))


def beta0_from_labels(X, y) -> float:
    """Data-driven heuristic [ours]: :func:`beta0` of the labelled points grouped by category."""
    X = np.asarray(X, np.float64)
    y = np.asarray(y)
    cats = [c for c in np.unique(y) if c != -1]
    return beta0([X[y == c] for c in cats])

