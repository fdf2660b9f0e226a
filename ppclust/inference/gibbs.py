r"""Gibbs samplers for TVClust (Neal 2000, Algorithms 3 and 2, with the link view of Khashabi et al.).

Kept whole (over 700 lines): the collapsed and the explicit sweeps share the conditional, the state, the
chunked driver and the backend dispatch.

One sweep visits the points in a random order. For point :math:`i`, removed from its cluster
(eqs. 11, 13 of Khashabi et al., ratio form of spec Section 2.2, cluster parameters integrated out):

.. math::

    \log w_k &= \log n_{-i,k} + \log p(x_i \mid x_{k \setminus i}) + \ell_k, \qquad
    \log w_{\rm new} = \log\alpha + \log p_{G_0}(x_i) + \ell_{\rm new}, \\
    \ell_k &= f_k^i \ln\tfrac{p}{1-q} - s_k^i \ln\tfrac{q}{1-p}, \quad \ell_{\rm new} = 0
    \qquad (p, q \text{ fixed or sampled}), \\
    \ell_k &= \ln B(a_p + N^{-i}_{11} + f_k, b_p + N^{-i}_{01} + s_k)
             + \ln B(a_q + N^{-i}_{00} + S_i - s_k, b_q + N^{-i}_{10} + F_i - f_k)
    \qquad (p, q \text{ collapsed, spec 2.6; new: } f = s = 0),

with :math:`f_k^i, s_k^i` the (weighted) friends and strangers of :math:`i` in cluster :math:`k`, counted
over the point's row of the neighbour table: O(degree + K) per point, no n x n array.

Modes for ``p, q`` (static ``pq``): ``"fixed"`` (given values), ``"sample"`` (conjugate Beta draws after
each sweep, spec 2.5), ``"collapse"`` (integrated out). ``alpha`` is fixed or resampled after each sweep
(Escobar & West 1995) under a Gamma(``alpha_shape``, ``alpha_rate``) prior.

Capacity: ``k_max`` slots with an active mask (slot count > 0); when every slot is occupied at a point
update the new-cluster option is unavailable, the chain is flagged ``overflow`` and the Python driver
raises (never a silent truncation).

Finite mixtures (static ``partition="finite"``, used by :class:`ppclust.SemiSupervisedGMM`): the slots are
``K = k_max`` fixed, *labelled* components under a symmetric Dirichlet(``alpha / K``) prior on the weights,
integrated out. Every slot then gets :math:`\log(n_{-i,k} + \alpha/K) + \log p(x_i \mid x_{k\setminus i})
+ \ell_k`, empty slots included (their predictive is the prior predictive) and there is no new-cluster
term; the chain targets assignments :math:`z \in \{0..K-1\}^n`, not partitions. An optional per-point log
prior ``point_logprior`` (n, K) is added to point ``i``'s weights (``-inf`` forbids a slot): the
semi-supervised label likelihood :math:`\log p(y_i \mid z_i = k)` of :mod:`ppclust.models.ssgmm`.

Backends (static ``backend``, :func:`ppclust.inference.backend.resolve_backend`): the point updates of the
collapsed sweep run either as a ``fori_loop`` inside the jitted program (``"xla"``: GPU, any family) or, on
CPU, as one numba-compiled loop called through :func:`jax.pure_callback` (``"numba"``,
:mod:`ppclust.inference._gibbs_cpu`: Gaussian families; faster than the XLA loop, whose small kernels per
point bound its throughput). Both consume the same per-sweep random numbers (:func:`shuffle_order`,
:func:`draw_categorical`) and take the same decisions; everything else (p, q, alpha updates, log joint,
chains, devices) is shared JAX code. Neither restates the family: the XLA sweep calls
``family.log_predictive`` / ``add`` / ``remove`` (the cached predictive of :mod:`ppclust.families`), the
compiled one their numba twins in :mod:`ppclust.families._niw_cpu`; link counts come from
:func:`ppclust.sideinfo.link_counts`.

Stopping (SIGINT during a fit, :func:`ppclust._progress.interruptible`): :func:`sample` waits for each
compiled call interruptibly (:func:`ppclust._progress.run`); once a stop is requested the numba sweep's
host function returns its input unchanged, the rest of the call in flight runs out (its sweeps' JAX parts:
link rates, log joint; with the XLA sweep the whole sweeps) and ``KeyboardInterrupt`` is raised. With
``chunk=None`` each call is sized to about :data:`CHUNK_S` seconds of work (CPU time) at the measured cost
of a sweep, warm-up included, so that the wait is at most that. The draws do not depend on this (nor on
how the run is cut into calls).

Explicit parameters (static ``algorithm="explicit"``, Neal's Algorithm 2, the paper-literal sampler of spec
2.7): the state also holds per-slot parameters ``theta`` (``family.sample_posterior``); an occupied slot's
data term is :math:`\log p(x_i \mid \theta_k)` instead of the posterior predictive, the new cluster keeps
the integrated prior predictive and, when chosen, draws its theta from :math:`p(\theta \mid x_i)`; after
the point updates every slot's theta is redrawn from its conjugate posterior (spec 2.4). Link terms and
the ``p, q`` modes are shared with the collapsed sweep.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betaln, gammaln

from ppclust import _progress
from ppclust._buckets import bucket_size, pad_links, pad_rows
from ppclust._devices import axis_sharding
from ppclust.errors import KMaxExhaustedError
from ppclust.inference import _gibbs_cpu
from ppclust.inference.backend import resolve_backend
from ppclust.inference.sampler_config import ALGORITHMS, SamplerConfig, check_modes
from ppclust.models.tvclust import (
    TVClustPrior,
    escobar_west,
    link_beta_params,
    link_log_odds,
    link_reliability,
    log_crp,
    log_joint_from_stats,
)
from ppclust.sideinfo import Links, link_counts, pair_counts

__all__ = [
    "GibbsState",
    "SweepInfo",
    "ChainResult",
    "GibbsAlgorithm",
    "build",
    "init",
    "step",
    "conditional",
    "sample",
    "log_dirichlet_multinomial",
    "draw_categorical",
    "shuffle_order",
    "numba_unsupported",
    "sweep_info",
]


class GibbsState(NamedTuple):
    """Carried between sweeps (one chain).

    Attributes
    ----------
    labels : jax.Array of int32 of shape (n,)
        Slot index of every point.
    stats : family statistics
        Per-slot sufficient statistics with ``k_max`` slots; the active slots are those with ``n > 0``.
    counts : jax.Array of shape (4,)
        Weighted pair counts ``[N11, N01, N10, N00]``.
    p : jax.Array of shape ()
        Current link sensitivity (its fixed value, the last draw, or the posterior mean when collapsed).
    q : jax.Array of shape ()
        Current link specificity, likewise.
    alpha : jax.Array of shape ()
        DP concentration.
    overflow : jax.Array of bool of shape ()
        True once ``k_max`` was exhausted at some point update.
    theta : pytree or None, default=None
        Per-slot cluster parameters (``family.sample_posterior``) with ``algorithm="explicit"``; else None.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> init(x, links, fam, k_max=4).labels.tolist()
    [0, 0, 0, 0]
    """

    labels: jax.Array  # (n,) int32 slot index per point
    stats: object  # family Stats with k_max slots; active slots are those with n > 0
    counts: jax.Array  # (4,) weighted pair counts [N11, N01, N10, N00]
    p: jax.Array  # () current sensitivity (fixed value, or last draw; posterior mean when collapsed)
    q: jax.Array  # () current specificity
    alpha: jax.Array  # () DP concentration
    overflow: jax.Array  # () bool, k_max was exhausted at some point update
    theta: object = None  # algorithm="explicit": per-slot parameters (family.sample_posterior); else None


class SweepInfo(NamedTuple):
    """Label-invariant per-sweep diagnostics (not carried).

    Attributes
    ----------
    n_clusters : jax.Array of int32 of shape ()
        Number of occupied slots.
    log_joint : jax.Array of shape ()
        ``log p(z, x, E | alpha[, p, q])`` (plus the Beta log densities of ``p`` and ``q`` with
        ``pq="sample"``).
    p, q : jax.Array of shape ()
        Link sensitivity and specificity after the sweep.
    alpha : jax.Array of shape ()
        DP concentration after the sweep.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> info = sweep_info(init(x, links, fam, k_max=4), fam, TVClustPrior(), "collapse")
    >>> int(info.n_clusters)
    1
    """

    n_clusters: jax.Array  # () int32
    log_joint: jax.Array  # () log p(z, x, E | alpha[, p, q]) (+ log Beta(p) + log Beta(q) in "sample" mode)
    p: jax.Array
    q: jax.Array
    alpha: jax.Array


class ChainResult(NamedTuple):
    """Draws of all chains, shapes (chain, draw, ...), and the final states (resume from them).

    Attributes
    ----------
    labels : ndarray of int32 of shape (n_chains, n_draws, n) or None
        Labels of every kept draw; None when not stored.
    n_clusters : ndarray of shape (n_chains, n_draws)
        Occupied slots of every draw.
    log_joint : ndarray of shape (n_chains, n_draws)
        Log joint of every draw (:class:`SweepInfo`).
    p, q : ndarray of shape (n_chains, n_draws)
        Link sensitivity and specificity of every draw.
    alpha : ndarray of shape (n_chains, n_draws)
        DP concentration of every draw.
    state : GibbsState
        Final states, batched over chains (resume from them with ``init_state``). With
        ``algorithm="collapsed"`` the labels cover the rows padded to their bucket (:func:`sample`): the
        padding rows carry the label ``k_max``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> res = sample(jax.random.key(0), x, links, fam, n_draws=2, n_warmup=2, n_chains=1, k_max=4,
    ...              progress_bar=False)
    >>> res.labels.shape, res.log_joint.shape
    ((1, 2, 4), (1, 2))
    """

    labels: np.ndarray | None  # (chain, draw, n) int32, or None when not stored
    n_clusters: np.ndarray
    log_joint: np.ndarray
    p: np.ndarray
    q: np.ndarray
    alpha: np.ndarray
    state: GibbsState  # batched over chains


def init(
    x,
    links: Links,
    family,
    *,
    k_max: int,
    labels=None,
    p=0.9,
    q=0.9,
    alpha=1.0,
    algorithm="collapsed",
    key=None,
) -> GibbsState:
    """Initial state: all points in one cluster (spec 2.8 [R]) unless ``labels`` (values < k_max) given.

    ``algorithm="explicit"`` also draws every slot's theta from its posterior (``key`` required).

    Parameters
    ----------
    x : array of shape (n, d)
        The points.
    links : Links
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    k_max : int
        Number of cluster slots (static).
    labels : array of int of shape (n,), default=None
        Starting labels in ``[0, k_max)``; None puts every point in slot 0.
    p, q : float, default=0.9
        Starting link sensitivity and specificity.
    alpha : float, default=1.0
        Starting DP concentration.
    algorithm : {"collapsed", "explicit"}, default="collapsed"
        Neal's Algorithm 3 or 2; ``"explicit"`` also draws every slot's parameters.
    key : jax.random key, default=None
        Required with ``algorithm="explicit"``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> state = init(x, links, fam, k_max=4, labels=jnp.array([0, 0, 1, 1]))
    >>> state.stats.n.tolist()
    [2.0, 2.0, 0.0, 0.0]
    """
    n = x.shape[0]
    labels = jnp.zeros(n, jnp.int32) if labels is None else jnp.asarray(labels, jnp.int32)
    stats = family.stats(x, labels, k_max)
    dtype = x.dtype
    theta = None
    if algorithm == "explicit":
        if key is None:
            raise ValueError("algorithm='explicit' needs a key to draw the initial cluster parameters")
        theta = family.sample_posterior(key, stats)
    elif algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    return GibbsState(
        labels,
        stats,
        pair_counts(labels, links).astype(dtype),
        jnp.asarray(p, dtype),
        jnp.asarray(q, dtype),
        jnp.asarray(alpha, dtype),
        jnp.asarray(False),
        theta,
    )


@partial(jax.jit, static_argnames=("k_max", "n_chains"))
def _init_chains(x, links, family, labels, p, q, alpha, *, k_max, n_chains) -> GibbsState:
    """:func:`init` broadcast over ``n_chains`` as one program (the set-up of :func:`sample`: a new process
    traces and lowers one program instead of dozens of eager operations)."""
    one = init(x, links, family, k_max=k_max, labels=labels, p=p, q=q, alpha=alpha)
    return jax.tree.map(lambda a: jnp.broadcast_to(a, (n_chains,) + a.shape), one)


@partial(jax.jit, static_argnames=("n_chains", "n_samples"))
def _draw_keys(key, *, n_chains, n_samples):
    """(n_chains, n_samples) keys: draw j of chain c uses ``split(chain key c, n_samples)[j]`` (under JAX's
    default partitionable Threefry the same key for every ``n_samples > j``: a bucket of the number of
    draws gives the keys of the draws themselves)."""
    chain_keys = jax.random.split(jax.random.fold_in(key, 0), n_chains)
    return jax.vmap(lambda k: jax.random.split(k, n_samples))(chain_keys)


def numba_unsupported(family, algorithm="collapsed") -> str | None:
    """Why the compiled CPU sweep (:mod:`ppclust.inference._gibbs_cpu`) cannot run this problem, or None.

    The compiled sweep runs the collapsed sweep of the Gaussian families (NIW full, diag, spherical, and the
    known-variance spherical Gaussian); the argument ``unsupported`` of
    :func:`ppclust.inference.backend.resolve_backend`.

    Parameters
    ----------
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    algorithm : {"collapsed", "explicit"}, default="collapsed"
        The sampler's algorithm.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> numba_unsupported(GaussianNIW.default(jnp.eye(3)), "explicit")
    'runs the collapsed sweep only (algorithm="collapsed")'
    """
    if algorithm != "collapsed":
        return 'runs the collapsed sweep only (algorithm="collapsed")'
    if not _gibbs_cpu.supports(family):
        return f"does not support {type(family).__name__}"
    return None


def step(
    key,
    state: GibbsState,
    x,
    links: Links,
    family,
    prior: TVClustPrior,
    config: SamplerConfig = None,
    *,
    point_logprior=None,
    n_valid=None,
    **options,
):
    """One sweep over all points, then the global updates. Returns ``(state, info)``. Pure; not jitted.

    Parameters
    ----------
    key : JAX PRNG key
        The sweep's randomness (visiting order, one uniform per point, the global draws).
    state : :class:`GibbsState`
        The current state (one chain).
    x, links, family, prior :
        As :func:`sample`.
    config : :class:`SamplerConfig` or None, default=None
        Read: ``pq``, ``sample_alpha``, ``alpha_shape``, ``alpha_rate``, ``partition``, ``algorithm``
        (``"explicit"`` needs ``state.theta``) and ``backend``; ``**options`` replace single fields.
    point_logprior : array of shape (n, k_max) or None, default=None
        Per-point log prior over the slots (module docstring).
    n_valid : int scalar or None, default=None
        Rows ``0 .. n_valid - 1`` of ``x`` are the points; the rows after them are bucket padding
        (:mod:`ppclust._buckets`; label ``k_max``, no links, zero ``point_logprior``), never visited nor
        counted. Traced: one program serves every ``n_valid`` of a bucket. None: every row is a point.
        The sweep's uniforms are drawn for all rows, and the first ``n_valid`` of them are those of an
        unpadded ``x``, so the draws do not depend on the padding.

    Returns
    -------
    (GibbsState, SweepInfo)

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> state, info = step(jax.random.key(0), init(x, links, fam, k_max=4), x, links, fam, TVClustPrior(),
    ...                    backend="xla")
    >>> state.labels.shape
    (4,)
    """
    cfg = (SamplerConfig() if config is None else config).with_options(**options)
    pq, sample_alpha, partition, algorithm = cfg.pq, cfg.sample_alpha, cfg.partition, cfg.algorithm
    check_modes(pq, partition, sample_alpha, algorithm)
    backend = resolve_backend(cfg.backend, numba_unsupported(family, algorithm))
    n = x.shape[0]
    key_order, key_u, key_p, key_q, key_alpha = jax.random.split(key, 5)
    # Visiting order (Fisher-Yates, shuffle_order) and inverse-CDF draws (draw_categorical) from n uniforms
    # each: both backends consume the same random numbers and take the same decisions.
    order_u = jax.random.uniform(key_order, (n,), dtype=x.dtype)
    u = jax.random.uniform(key_u, (n,), dtype=x.dtype)
    theta = state.theta
    if algorithm == "explicit":
        if theta is None:
            raise ValueError(
                "algorithm='explicit' needs state.theta (init(..., algorithm='explicit', key=...))"
            )
        key_cand, key_theta = jax.random.split(jax.random.fold_in(key, 0x5EED))
        labels, stats, counts, overflow, theta = _sweep_explicit(
            key_cand,
            shuffle_order(order_u, n_valid),
            u,
            state,
            x,
            links,
            family,
            prior,
            pq,
            point_logprior,
            n_valid,
        )
        theta = family.sample_posterior(key_theta, stats)  # (b): every slot's theta | its points
    elif backend == "numba":
        labels, stats, counts, overflow = _gibbs_cpu.sweep(
            order_u, u, state, x, links, family, prior, pq, partition, point_logprior, n_valid=n_valid
        )
    else:
        order = shuffle_order(order_u, n_valid)
        labels, stats, counts, overflow = _sweep(
            order, u, state, x, links, family, prior, pq, partition, point_logprior, n_valid
        )
    p, q, alpha = state.p, state.q, state.alpha
    if pq == "sample":
        ap, bp, aq, bq = link_beta_params(counts, prior.a_p, prior.b_p, prior.a_q, prior.b_q)
        p = jax.random.beta(key_p, ap, bp, dtype=x.dtype)
        q = jax.random.beta(key_q, aq, bq, dtype=x.dtype)
    elif pq == "collapse":
        p, q = link_reliability(counts, prior.a_p, prior.b_p, a_q=prior.a_q, b_q=prior.b_q, xp=jnp)
    if sample_alpha:
        n_clusters = (stats.n > 0).sum()
        n_pts = n if n_valid is None else jnp.asarray(n_valid, x.dtype)
        alpha = escobar_west(key_alpha, alpha, n_clusters, n_pts, cfg.alpha_shape, cfg.alpha_rate)
    new = GibbsState(labels, stats, counts, p, q, alpha, overflow, theta)
    return new, sweep_info(new, family, prior, pq, partition, point_logprior)


class GibbsAlgorithm(NamedTuple):
    """``init(labels=None, *, p, q, alpha, key) -> GibbsState`` and ``step(key, state) -> (GibbsState,
    SweepInfo)`` with the data, links, family, prior and sweep options closed over (BlackJAX's shape).

    Attributes
    ----------
    init : callable
        ``init(labels=None, *, p=0.9, q=0.9, alpha=None, key=None) -> GibbsState``.
    step : callable
        ``step(key, state) -> (GibbsState, SweepInfo)``.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> alg = build(x, links, fam, TVClustPrior(), k_max=4, backend="xla")
    >>> isinstance(alg, GibbsAlgorithm)
    True
    """

    init: Callable
    step: Callable


def build(
    x,
    links: Links,
    family,
    prior: TVClustPrior,
    config: SamplerConfig = None,
    *,
    point_logprior=None,
    n_valid=None,
    **options,
) -> GibbsAlgorithm:
    """The sampler's :func:`init` and :func:`step` as a pair of two-argument functions (options as
    :func:`step`, slots ``config.k_max``); :func:`sample`'s chains run this ``step``.

    Parameters
    ----------
    x : array of shape (n, d)
        The points.
    links : Links
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        alpha and the Beta priors of p and q.
    config : SamplerConfig or None, default=None
        Sweep options as :func:`step` reads them, and ``k_max``; None is ``SamplerConfig()``.
    point_logprior : array of shape (n, k_max) or None, default=None
        Per-point log prior over the slots.
    n_valid : int scalar or None, default=None
        The points among the rows of ``x`` (the rest is bucket padding), as :func:`step`.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> alg = build(x, make_links(4, [[0, 1]], [1]), GaussianNIW.default(x), TVClustPrior(), k_max=4,
    ...             backend="xla")
    >>> state, info = alg.step(jax.random.key(0), alg.init())
    >>> state.labels.shape
    (4,)
    """
    cfg = (SamplerConfig() if config is None else config).with_options(**options)
    k_max, algorithm = cfg.k_max, cfg.algorithm

    def init_(labels=None, *, p=0.9, q=0.9, alpha=None, key=None) -> GibbsState:
        return init(
            x,
            links,
            family,
            k_max=k_max,
            labels=labels,
            p=p,
            q=q,
            alpha=prior.alpha if alpha is None else alpha,
            algorithm=algorithm,
            key=key,
        )

    def step_(key, state: GibbsState):
        return step(key, state, x, links, family, prior, cfg, point_logprior=point_logprior, n_valid=n_valid)

    return GibbsAlgorithm(init_, step_)


def sample(
    key,
    x,
    links: Links,
    family,
    prior: TVClustPrior = TVClustPrior(),
    config: SamplerConfig = None,
    *,
    init_labels=None,
    init_state: GibbsState | None = None,
    point_logprior=None,
    **options,
) -> ChainResult:
    """Run ``n_chains`` chains: ``jit(vmap(scan))`` over sweeps, the chains spread over local devices.

    Buckets: the rows, the links and the neighbour table's width are padded on
    the host to bucket sizes (:mod:`ppclust._buckets`), so every ``n`` of a bucket runs the same compiled
    program. The padding rows are never visited and counted in no slot; the sweep's uniforms are drawn
    per row (the first ``n`` equal those of the unpadded rows under JAX's default partitionable
    Threefry), so the draws do not depend on the padding.

    Parameters
    ----------
    key : JAX PRNG key
        The seed of every draw: draw j of chain c depends on the key, c and j only.
    x : array of shape (n, d)
        The points.
    links : :class:`~ppclust.sideinfo.Links`
        The observed pairs.
    family : a conjugate family of :mod:`ppclust.families`
        The data view.
    prior : :class:`~ppclust.models.tvclust.TVClustPrior`
        alpha and the Beta priors of p and q.
    config : :class:`SamplerConfig` or None, default=None
        The run's options (None: the defaults); ``**options`` replace single fields (``n_draws=...``).
        ``partition="finite"``: exactly ``k_max`` components, ``prior.alpha`` the total concentration.
        ``algorithm="explicit"``: per-slot parameters in ``state.theta`` drawn from their conjugate
        posteriors after each sweep (``partition="dp"`` only); the reported ``log_joint`` is the collapsed
        one either way. ``devices="auto"``: with several local devices and ``n_chains`` a multiple of
        their number, the chains are sharded over them.
    init_labels : int array of shape (n,) or (n_chains, n), default=None
        Starting slots (< ``k_max``); None: one cluster, or the most probable slot of ``point_logprior``.
    init_state : :class:`GibbsState`, batched over chains, default=None
        A ``ChainResult.state`` to resume from (``n_warmup=0`` continues a converged run directly).
    point_logprior : array of shape (n, k_max), default=None
        Per-point log prior over the slots (``-inf`` forbids a slot).

    Returns
    -------
    ChainResult
        The draws, shapes (n_chains, n_draws, ...), and the final states.

    Raises
    ------
    KMaxExhaustedError
        When a chain needed more than ``k_max`` clusters.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> res = sample(jax.random.key(0), x, links, fam, n_draws=2, n_warmup=2, n_chains=1, k_max=4,
    ...              progress_bar=False)
    >>> res.n_clusters.shape
    (1, 2)
    """
    cfg = (SamplerConfig() if config is None else config).with_options(**options)
    cfg.check_unused(("n_moves", "mesh"), "gibbs.sample")
    n_draws, n_warmup, n_chains, thin, k_max = cfg.n_draws, cfg.n_warmup, cfg.n_chains, cfg.thin, cfg.k_max
    pq, p, q, sample_alpha = cfg.pq, cfg.p, cfg.q, cfg.sample_alpha
    alpha_shape, alpha_rate = cfg.alpha_shape, cfg.alpha_rate
    partition, algorithm, backend, devices = cfg.partition, cfg.algorithm, cfg.backend, cfg.devices
    store_labels, progress_bar, chunk, desc = cfg.store_labels, cfg.progress_bar, cfg.chunk, cfg.desc
    n = x.shape[0]
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    check_modes(pq, partition, sample_alpha, algorithm)
    if point_logprior is not None:
        point_logprior = jnp.asarray(point_logprior, x.dtype)
        if point_logprior.shape != (n, k_max):
            raise ValueError(
                f"point_logprior must have shape (n, k_max)={(n, k_max)}, got {point_logprior.shape}"
            )
        if init_labels is None:  # on the host: no program per n
            init_labels = np.argmax(np.asarray(point_logprior), axis=1).astype(np.int32)
    if init_labels is not None and not isinstance(init_labels, jax.core.Tracer):
        lab = np.asarray(init_labels)  # the compiled sweep indexes its slot arrays by these labels unchecked
        if lab.shape[-1:] != (n,) or (lab.size and (lab.min() < 0 or lab.max() >= k_max)):
            raise ValueError(
                f"init_labels must be {n} slot indices in [0, k_max={k_max}), got shape "
                f"{lab.shape} with values in [{lab.min() if lab.size else None}, "
                f"{lab.max() if lab.size else None}]"
            )
    # bucket padding: rows, links and the neighbour table's width padded on the host to bucket sizes, so
    # one program serves every n of a bucket; padding rows carry label k_max (counted in no slot), no link
    # and a zero log prior, and the sweeps visit the first n rows only (n_valid)
    n_valid = np.int32(n)
    x, links, point_logprior, init_labels = _bucketed(x, links, point_logprior, init_labels, k_max)
    if init_state is None:
        state = _init_chains(x, links, family, init_labels, p, q, prior.alpha, k_max=k_max, n_chains=n_chains)
        if algorithm == "explicit":
            keys0 = jax.random.split(jax.random.fold_in(key, 0x7FFFFFFF), n_chains)
            state = state._replace(theta=jax.vmap(family.sample_posterior)(keys0, state.stats))
    else:
        state = init_state
        n_chains = state.labels.shape[0]
        if algorithm == "explicit" and state.theta is None:
            raise ValueError("init_state has no theta (a collapsed run's state); use algorithm='collapsed'")
        if algorithm == "collapsed":
            state = state._replace(theta=None)
        if state.labels.shape[-1] != x.shape[0]:  # a state of the unpadded rows
            state = state._replace(
                labels=jax.device_put(_pad_labels(np.asarray(state.labels), x.shape[0], k_max))
            )
    # the options the compiled program depends on (a static argument: equal options, one program)
    sweep_cfg = SamplerConfig(
        pq=pq,
        sample_alpha=sample_alpha,
        store_labels=store_labels,
        partition=partition,
        algorithm=algorithm,
        backend=resolve_backend(backend, numba_unsupported(family, algorithm)),
    )
    place = _chain_placement(n_chains, devices)
    state = place(state)
    show = _progress.enabled(True if progress_bar is None else progress_bar)
    # One compiled program serves every call: the sweep range of the first draw, the thinning and the
    # number of draws kept are traced; the draws per call are a bucket of the chunk (ppclust._buckets),
    # those past the call's own draws run no sweep and are dropped, so every n_draws runs the same
    # program. Draw j of a chain always uses key j of split(chain key, .) and its sweeps t the keys
    # fold_in(key j, t), warm-up sweeps being sweeps t < n_warmup of draw 0; so the draws do not depend on
    # how the run is cut into calls (progress bar on or off, any chunk). chunk=None: at most 100 sweeps a
    # call, each call sized to about CHUNK_S of work (_Pace), within which a stop request is honoured.
    pace = _Pace(None if chunk is None else max(1, int(chunk)) * thin)
    if chunk is None:
        chunk = max(1, 100 // max(thin, 1))
    n_chunks = max(1, -(-n_draws // chunk))
    per_chunk = -(-n_draws // n_chunks)
    length = bucket_size(per_chunk, minimum=8)
    # the keys of a call's draws are cut on the host: the program does not depend on n_draws
    draw_keys = _draw_keys(key, n_chains=n_chains, n_samples=bucket_size(n_draws - 1 + length, minimum=8))
    draw_keys = (np.asarray(jax.random.key_data(draw_keys)), jax.random.key_impl(draw_keys))

    def call(offset, state, first_lo, first_hi, thin, keep):
        bounds = tuple(jnp.int32(v) for v in (first_lo, first_hi, thin, keep, 0))
        keys = place(jax.random.wrap_key_data(draw_keys[0][:, offset : offset + length], impl=draw_keys[1]))
        data = (x, links, family, prior, point_logprior, alpha_shape, alpha_rate, n_valid)
        return _run(keys, state, bounds, data, length=length, config=sweep_cfg)

    warm_done = 0
    with _progress.bar(n_warmup, f"{desc} warm-up", "sweep", progress_bar=show and n_warmup > 0) as bar:
        # warm-up in pieces (at most a chunk's sweeps each), its own bar
        while warm_done < n_warmup and (show or pace.adaptive):
            hi = min(n_warmup, warm_done + pace.sweeps(max(1, per_chunk * thin)))
            state, out = pace.run(hi - warm_done, call, 0, state, warm_done, hi, 0, 1)
            bar.update(hi - warm_done)
            warm_done = hi
    outs, done = [], 0
    with _progress.bar(n_draws * thin, f"{desc} sampling", "sweep", progress_bar=show) as bar:
        while done < n_draws:
            lo, hi = (warm_done, n_warmup + thin) if done == 0 else (0, thin)
            keep = min(per_chunk, n_draws - done, max(1, pace.sweeps(per_chunk * thin) // thin))
            state, out = pace.run((keep - 1) * thin + hi - lo, call, done, state, lo, hi, thin, keep)
            outs.append(jax.tree.map(lambda a, keep=keep: a[:, :keep], jax.device_get(out)))
            bar.update(keep * thin)
            bar.set_postfix(K=float(np.mean(outs[-1][1].n_clusters[:, -1])))
            done += keep
    if bool(np.any(np.asarray(state.overflow))):
        raise KMaxExhaustedError(
            f"k_max={k_max} cluster slots were exhausted (a chain needed a new cluster with every slot "
            f"occupied); increase k_max (at most n={n} is ever needed) or lower alpha."
        )
    cat = lambda f: np.concatenate([f(o) for o in outs], axis=1)[:, :n_draws]
    lab = cat(lambda o: o[0])[..., :n] if store_labels else None
    return ChainResult(
        labels=None if lab is None else lab.astype(np.int32),
        n_clusters=cat(lambda o: o[1].n_clusters),
        log_joint=cat(lambda o: o[1].log_joint),
        p=cat(lambda o: o[1].p),
        q=cat(lambda o: o[1].q),
        alpha=cat(lambda o: o[1].alpha),
        state=state,
    )


def _bucketed(x, links: Links, point_logprior, init_labels, k_max):
    """The problem padded on the host to the bucket of its ``n`` rows (:func:`ppclust._buckets.bucket_size`):
    points (zero rows), per-point log prior (zero rows), starting labels (``k_max``: counted in no slot),
    the link list (weight-0 pairs, :func:`ppclust._buckets.pad_pairs`) and the neighbour table (rows and
    columns of sign and weight 0). Put on the device without a program compiled per size."""
    n = x.shape[0]
    n_pad = bucket_size(n)
    x = jax.device_put(pad_rows(np.asarray(x), n_pad)[0])
    if point_logprior is not None:
        point_logprior = jax.device_put(pad_rows(np.asarray(point_logprior), n_pad)[0])
    lab = np.zeros(n, np.int32) if init_labels is None else np.asarray(init_labels, np.int32)
    links = Links(*jax.device_put(tuple(pad_links(links, n_pad))))
    return x, links, point_logprior, _pad_labels(lab, n_pad, k_max)


def _pad_labels(lab, n_pad, k_max):
    """Labels (..., n) padded with ``k_max`` (no slot) up to ``n_pad`` on the last axis."""
    fill = np.full(lab.shape[:-1] + (n_pad - lab.shape[-1],), k_max, np.int32)
    return np.concatenate([lab.astype(np.int32), fill], axis=-1)


#: seconds of work (CPU time of the process) a compiled call of :func:`sample` is sized to with
#: ``chunk=None``: the most a stop request waits for; CPU time, not wall time, so that waiting for a busy
#: machine's cores does not shrink the calls until their fixed cost dominates
CHUNK_S = 0.25


class _Pace:
    """The sweeps of :func:`sample`'s next compiled call: ``fixed`` (an explicit chunk), or from one sweep
    at most doubling per call towards :data:`CHUNK_S` of work at the measured cost of a sweep."""

    def __init__(self, fixed):
        self.adaptive, self.size, self.per_sweep = fixed is None, 1 if fixed is None else fixed, None

    def sweeps(self, cap):
        """Sweeps for the next call, at most ``cap``."""
        if self.adaptive and self.per_sweep is not None:
            self.size = max(1, min(2 * self.size, int(CHUNK_S / self.per_sweep)))
        return max(1, min(cap, self.size))

    def run(self, sweeps, fn, *args):
        """:func:`ppclust._progress.run` of ``fn(*args)``, a call of ``sweeps`` sweeps, timed."""
        t0 = time.process_time()
        out = _progress.run(fn, *args)
        self.per_sweep = max(time.process_time() - t0, 1e-6) / max(sweeps, 1)
        return out


def _chain_placement(n_chains, devices):
    """A function putting arrays with a leading chain axis onto the chain mesh (identity if none)."""
    sharding = axis_sharding(n_chains, devices, "chains")
    if sharding is None:
        return lambda tree: tree
    return lambda tree: jax.device_put(tree, sharding)


def conditional(
    i,
    state: GibbsState,
    x,
    links: Links,
    family,
    prior: TVClustPrior,
    pq: str = "collapse",
    *,
    removed: bool = False,
    partition: str = "dp",
    point_logprior=None,
):
    """Unnormalised log-weights of z_i over the ``k_max`` slots (module docstring), O(degree + K d^2).

    ``state`` gives the labels, ``p``, ``q``, ``alpha`` and the statistics and pair counts of the full
    current state, or with point ``i`` already taken out of the statistics when ``removed=True``
    (``state.counts`` always include ``i``'s pairs). ``partition="dp"``: occupied
    slots get the existing-cluster weight, the first free slot the new-cluster weight, other free slots
    ``-inf``; ``"finite"``: every slot gets ``log(n_k + alpha / k_max) + ...``. ``point_logprior[i]`` is added
    when given. Returns ``(logw, counts_without_i, (f, s, F, S))``.

    Parameters
    ----------
    i : int or int scalar
        The point.
    state : GibbsState
        The current state.
    x : array of shape (n, d)
        The points.
    links : Links
        The observed pairs.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        alpha and the Beta priors of p and q.
    pq : {"collapse", "sample", "fixed"}, default="collapse"
        How the link parameters enter.
    removed : bool, default=False
        Whether ``state.stats`` already exclude point ``i``.
    partition : {"dp", "finite"}, default="dp"
        The partition prior.
    point_logprior : array of shape (n, k_max) or None, default=None
        Per-point log prior over the slots.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0]])
    >>> links = make_links(3, [[0, 1]], [1])
    >>> state = init(x, links, GaussianNIW.default(x), k_max=3, labels=jnp.array([0, 0, 1]))
    >>> logw, _, _ = conditional(0, state, x, links, GaussianNIW.default(x), TVClustPrior())
    >>> int(jnp.argmax(logw))
    0
    """
    labels, stats = state.labels, state.stats
    xi, k_old = x[i], labels[i]
    if not removed:
        stats = family.remove(stats, k_old, xi)
    lp = family.log_predictive(stats, xi)
    return _weights(i, state, stats.n, lp, links, prior, pq, partition, point_logprior)


def _weights(i, state: GibbsState, sizes, lp, links: Links, prior, pq, partition, point_logprior):
    """:func:`conditional` given the slot sizes without ``i`` and the data term ``lp`` (K,) of ``x_i``.

    ``lp`` is read at the occupied slots and at the first free slot (the new-cluster term). Shared by the
    collapsed sweep (``lp`` = posterior predictive) and the explicit one (``lp`` = ``log p(x_i | theta_k)``,
    prior predictive at the free slot).
    """
    labels, counts, p, q, alpha = state.labels, state.counts, state.p, state.q, state.alpha
    k_max = sizes.shape[0]
    k_old = labels[i]
    nb_lab = labels[links.nbr[i]]
    f, s, F, S, hot = link_counts(nb_lab, links.sgn[i], links.wgt[i], k_max)
    c = counts - jnp.stack([f[k_old], s[k_old], F - f[k_old], S - s[k_old]])
    active = sizes > 0
    new = jnp.argmin(active)  # first free slot (0 if none; then `full` blocks it)
    full = active[new]
    link = _link_terms(f, s, F, S, c, p, q, prior, pq, nb_lab, hot)
    if partition == "finite":
        logw = jnp.log(sizes + alpha / k_max) + lp + link
    else:
        logw = jnp.where(active, jnp.log(jnp.where(active, sizes, 1.0)) + lp + link, -jnp.inf)
        logw = jnp.where((jnp.arange(k_max) == new) & ~full, jnp.log(alpha) + lp + link, logw)
    if point_logprior is not None:
        logw = logw + point_logprior[i]
    logw = jnp.where(jnp.isnan(logw), -jnp.inf, logw)
    return logw, c, (f, s, F, S)


# --- helpers ---


def _link_terms(f, s, F, S, c, p, q, prior, pq, nb_lab, hot):
    """Per-slot link log-weights; an empty slot (f = s = 0) gets the new-cluster value.

    Collapsed: a slot holding none of the point's neighbours has f = s = 0, so its value is one scalar;
    ``betaln`` is evaluated only at the (at most max-degree) slots of the neighbours, O(degree + K).
    """
    if pq == "collapse":
        # one betaln call over [untouched value, neighbour slots] x [p term, q term]: few XLA kernels
        zero = jnp.zeros((1,), f.dtype)
        fk = jnp.concatenate([zero, f[nb_lab]])
        sk = jnp.concatenate([zero, s[nb_lab]])
        a = jnp.concatenate([prior.a_p + c[0] + fk, prior.a_q + c[3] + S - sk])
        b = jnp.concatenate([prior.b_p + c[1] + sk, prior.b_q + c[2] + F - fk])
        v = betaln(a, b)
        v = v[: fk.shape[0]] + v[fk.shape[0] :]
        return jnp.where(hot.any(0), v[1:][jnp.argmax(hot, 0)], v[0])
    xi1, xi2 = link_log_odds(p, q, xp=jnp)
    return f * xi1 - s * xi2


def shuffle_order(order_u, n_valid=None):
    """The sweep's visiting order: a Fisher-Yates shuffle of 0..n-1 driven by ``n`` uniforms.

    ``j = min(floor(u_t (t + 1)), t)`` swapped with ``t`` for ``t = n-1 .. 1``: the same arithmetic here and
    in the compiled sweep (:mod:`ppclust.inference._gibbs_cpu`), so both backends visit the points in the
    same order. O(n); the compiled sweep shuffles in place (no sort-based permutation per sweep).

    Parameters
    ----------
    order_u : array of shape (n,)
        Uniforms in [0, 1).
    n_valid : int scalar or None, default=None
        Shuffle only the first ``n_valid`` entries with the first ``n_valid`` uniforms (the rows after
        them, bucket padding, keep their places); traced. None: all ``n``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> sorted(shuffle_order(jnp.array([0.1, 0.7, 0.4])).tolist())
    [0, 1, 2]
    >>> shuffle_order(jnp.array([0.1, 0.7, 0.4, 0.9]), 3)[3].tolist()
    3
    """
    n = order_u.shape[0]
    m = n if n_valid is None else n_valid

    def body(r, order):
        t = m - 1 - r
        j = jnp.minimum((order_u[t] * (t + 1)).astype(jnp.int32), t)
        # both reads before either write: XLA then swaps in place (a read fused into the write's loop copies
        # the whole order every step, O(n^2) per sweep)
        ot, oj = jax.lax.optimization_barrier((order[t], order[j]))
        return order.at[t].set(oj).at[j].set(ot)

    return jax.lax.fori_loop(0, m - 1, body, jnp.arange(n, dtype=jnp.int32))


def draw_categorical(logw, u):
    """Inverse-CDF draw from unnormalised log-weights (``-inf`` allowed) with a uniform ``u`` in [0, 1).

    The first slot whose cumulative weight exceeds ``u`` times the total; a slot of zero weight is never
    returned (its cumulative weight equals its predecessor's).

    Parameters
    ----------
    logw : array of shape (K,)
        Unnormalised log-weights.
    u : float or scalar
        A uniform in [0, 1).

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> int(draw_categorical(jnp.log(jnp.array([0.2, 0.8])), 0.5))
    1
    """
    c = jnp.cumsum(jnp.exp(logw - jnp.max(logw)))
    return jnp.argmax(c > u * c[-1])


def _sweep(
    order,
    u,
    state: GibbsState,
    x,
    links: Links,
    family,
    prior,
    pq,
    partition="dp",
    point_logprior=None,
    n_valid=None,
):
    def body(t, carry):
        labels, stats, counts, overflow = carry
        i = order[t]
        xi, k_old = x[i], labels[i]
        stats = family.remove(stats, k_old, xi)
        now = GibbsState(labels, stats, counts, state.p, state.q, state.alpha, overflow)
        logw, c, fs = conditional(
            i,
            now,
            x,
            links,
            family,
            prior,
            pq,
            removed=True,
            partition=partition,
            point_logprior=point_logprior,
        )
        f, s, F, S = fs
        full = jnp.all(stats.n > 0) if partition == "dp" else jnp.asarray(False)
        k = draw_categorical(logw, u[i]).astype(labels.dtype)
        stats = family.add(stats, k, xi)
        counts = c + jnp.stack([f[k], s[k], F - f[k], S - s[k]])
        # every read of the old labels before the write: XLA then writes in place (a read left after the
        # write copies the whole label vector every step, O(n^2) per sweep)
        labels, k, stats, counts = jax.lax.optimization_barrier((labels, k, stats, counts))
        return labels.at[i].set(k), stats, counts, overflow | full

    carry = (state.labels, state.stats, state.counts, state.overflow)
    return jax.lax.fori_loop(0, x.shape[0] if n_valid is None else n_valid, body, carry)


def _sweep_explicit(
    key, order, u, state: GibbsState, x, links: Links, family, prior, pq, point_logprior=None, n_valid=None
):
    r"""Neal (2000) Algorithm 2 point updates with explicit ``state.theta`` (spec 2.2-2.3, 2.7).

    Occupied slot: :math:`\log n_{-i,k} + \log p(x_i\mid\theta_k) + \ell_k`; new cluster:
    :math:`\log\alpha + \log p_{G_0}(x_i) + \ell_{\rm new}` (integrated prior predictive); when chosen, the
    slot gets :math:`\theta\sim p(\theta\mid x_i)`. That draw depends on ``x_i`` and the prior only, so all
    ``n`` candidates are drawn in one batch before the scan, candidate i from ``fold_in(key, i)`` (keyed by
    row: the padding rows after ``n_valid``, never visited, change no candidate). A slot emptied by a
    removal is free again (its stale theta is never read). Only the sizes are carried; the family stats
    are rebuilt after the sweep for the theta update. Returns ``(labels, stats, counts, overflow, theta)``.
    """
    n, d = x.shape
    k_max = state.stats.n.shape[0]
    one = jax.vmap(lambda xi: family.add(family.empty(1, d, x.dtype), 0, xi))(x)  # (n, 1, ...)

    def candidate(i, st):  # theta | x_i alone, keyed by the row
        return jax.tree.map(lambda a: a[0], family.sample_posterior(jax.random.fold_in(key, i), st))

    cand = jax.vmap(candidate)(jnp.arange(n), one)  # (n, ...)
    log_pp = jax.vmap(family.log_prior_predictive)(x)

    def body(t, carry):
        labels, sizes, theta, counts, overflow = carry
        i = order[t]
        sizes = sizes.at[labels[i]].add(-1.0)
        lp = jnp.where(sizes > 0, family.log_likelihood(theta, x[i]), log_pp[i])
        now = GibbsState(labels, state.stats, counts, state.p, state.q, state.alpha, overflow)
        logw, c, (f, s, F, S) = _weights(i, now, sizes, lp, links, prior, pq, "dp", point_logprior)
        full = jnp.all(sizes > 0)
        k = draw_categorical(logw, u[i]).astype(labels.dtype)
        fresh = sizes[k] == 0
        theta = jax.tree.map(lambda a, b: a.at[k].set(jnp.where(fresh, b[i], a[k])), theta, cand)
        counts = c + jnp.stack([f[k], s[k], F - f[k], S - s[k]])
        sizes = sizes.at[k].add(1.0)
        # every read of the old labels before the write (see _sweep)
        labels, k, sizes, theta, counts = jax.lax.optimization_barrier((labels, k, sizes, theta, counts))
        return labels.at[i].set(k), sizes, theta, counts, overflow | full

    carry = (state.labels, state.stats.n, state.theta, state.counts, state.overflow)
    labels, _, theta, counts, overflow = jax.lax.fori_loop(0, n if n_valid is None else n_valid, body, carry)
    return labels, family.stats(x, labels, k_max), counts, overflow, theta


def log_dirichlet_multinomial(sizes, alpha) -> jax.Array:
    r"""log p(z) of labelled assignments under symmetric Dirichlet(alpha / K) weights, integrated out.

    :math:`\log\Gamma(\alpha) - \log\Gamma(\alpha + n) + \sum_k [\log\Gamma(n_k + \alpha/K)
    - \log\Gamma(\alpha/K)]` with ``K = len(sizes)``.

    Parameters
    ----------
    sizes : array of shape (K,)
        Slot sizes.
    alpha : float
        Total Dirichlet concentration, > 0.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> round(float(log_dirichlet_multinomial(jnp.array([1.0, 0.0]), 2.0)), 4)
    -0.6931
    """
    a = alpha / sizes.shape[0]
    return gammaln(alpha) - gammaln(alpha + sizes.sum()) + (gammaln(sizes + a) - gammaln(a)).sum()


def sweep_info(state: GibbsState, family, prior, pq, partition="dp", point_logprior=None) -> SweepInfo:
    """The label-invariant summary of a state: its number of clusters, log joint (collapsed over the
    cluster parameters, and over ``p, q`` when ``pq="collapse"``; the Dirichlet-multinomial in place of the
    CRP for ``partition="finite"``; plus ``point_logprior`` of the labels when given), ``p``, ``q``, alpha.

    Parameters
    ----------
    state : GibbsState
        The state to summarise.
    family : a conjugate family from :mod:`ppclust.families`
        The data view's cluster model.
    prior : TVClustPrior
        The Beta priors of p and q (alpha is read from ``state``).
    pq : {"collapse", "sample", "fixed"}
        How the link parameters enter.
    partition : {"dp", "finite"}, default="dp"
        The partition prior.
    point_logprior : array of shape (n, k_max) or None, default=None
        Per-point log prior over the slots.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> links, fam = make_links(4, [[0, 1]], [1]), GaussianNIW.default(x)
    >>> float(sweep_info(init(x, links, fam, k_max=4), fam, TVClustPrior(), "collapse").alpha)
    1.0
    """
    prior_now = prior._replace(alpha=state.alpha)
    if pq == "collapse":
        lj = log_joint_from_stats(state.stats, state.counts, family, prior_now)
    else:
        lj = log_joint_from_stats(state.stats, state.counts, family, prior_now, state.p, state.q)
    if partition == "finite":  # swap the CRP EPPF for the Dirichlet-multinomial over labelled slots
        lj = lj - log_crp(state.stats.n, state.alpha) + log_dirichlet_multinomial(state.stats.n, state.alpha)
    if point_logprior is not None:
        # bucket padding rows carry label k_max and a zero log prior: clipped, they add nothing
        k_last = point_logprior.shape[1] - 1
        lj = lj + jnp.take_along_axis(point_logprior, jnp.minimum(state.labels, k_last)[:, None], 1).sum()
        if pq == "sample":
            lj = (
                lj
                + _log_beta_pdf(state.p, prior.a_p, prior.b_p)
                + _log_beta_pdf(state.q, prior.a_q, prior.b_q)
            )
    n_clusters = (state.stats.n > 0).sum().astype(jnp.int32)
    return SweepInfo(n_clusters, lj.astype(state.p.dtype), state.p, state.q, state.alpha)


def _log_beta_pdf(v, a, b):
    return (a - 1) * jnp.log(v) + (b - 1) * jnp.log1p(-v) - betaln(a, b)


def _chain(keys, state, bounds, data, *, length, config):
    # `step` appears once in the program (compile time): draw j runs the sweeps t in [first_lo, first_hi)
    # for j = 0 (warm-up and / or its thinning sweeps) and [0, thin) after, sweep t with fold_in(key j, t),
    # key j the (offset + j)-th of the chain's keys; draws j >= keep run none (dropped by the caller).
    first_lo, first_hi, thin, keep, offset = bounds
    keys = jax.lax.dynamic_slice_in_dim(keys, offset, length)
    x, links, family, prior, point_logprior, alpha_shape, alpha_rate, n_valid = data
    cfg = config.with_options(k_max=state.stats.n.shape[-1], alpha_shape=alpha_shape, alpha_rate=alpha_rate)
    alg = build(x, links, family, prior, cfg, point_logprior=point_logprior, n_valid=n_valid)
    pq, partition = cfg.pq, cfg.partition

    def draw(carry, k, j):
        lo = jnp.where(j == 0, first_lo, 0)
        hi = jnp.where(j == 0, first_hi, thin)
        carry, _ = jax.lax.fori_loop(
            lo,
            hi,
            lambda t, c: alg.step(jax.random.fold_in(k, t), c[0]),
            (carry, sweep_info(carry, family, prior, pq, partition, point_logprior)),
        )
        info = sweep_info(carry, family, prior, pq, partition, point_logprior)
        return carry, (carry.labels if cfg.store_labels else None, info)

    def skip(carry, k, j):  # a draw past the call's own: no sweep, no log joint, zeros (dropped)
        out = jax.eval_shape(draw, carry, k, j)[1]
        return carry, jax.tree.map(lambda a: jnp.zeros(a.shape, a.dtype), out)

    def body(carry, inp):
        k, j = inp
        return jax.lax.cond(j < keep, draw, skip, carry, k, j)

    return jax.lax.scan(body, state, (keys, jnp.arange(length)))


@partial(jax.jit, static_argnames=("length", "config"))
def _run(keys, state, bounds, data, *, length, config):
    fn = partial(_chain, length=length, config=config)
    return jax.vmap(fn, in_axes=(0, 0, None, None))(keys, state, bounds, data)
