r"""Posterior analysis of sampled partitions: ArviZ DataTree, pointwise log-likelihood, similarity matrix.

Kept whole (over 700 lines, most of them docstrings): every function reads or writes the one DataTree
layout described below, and its groups, checks and file format are defined together.

Raw labels suffer from label switching, so every per-draw variable here is label-invariant. A DataTree
built by :func:`build_datatree` has the groups

* ``posterior``: genuine posterior draws only (never a constant: ArviZ would report R-hat NaN), e.g. for
  TVClust the number of clusters, ``p`` and ``q`` (draws from their Beta conditionals given the saved
  partition, :func:`link_parameter_draws`), and ``alpha`` when it is sampled;
* ``derived``: per-draw functions of the draws that are not draws of a parameter, e.g. the
  Rao-Blackwellised conditional means ``p_cond_mean``, ``q_cond_mean`` (:math:`E[p \mid z, E]`, narrower
  than the posterior of ``p``), kept out of ``posterior`` so that ``az.summary`` reports no R-hat for them;
* ``partition_draws``: ``z`` (chain, draw, obs), the sampled partitions as the sampler's slot ids in the
  smallest unsigned integer type that holds them (:func:`encode_partitions`; :func:`partition_draws` reads
  them back);
* ``sample_stats``: ``lp``, the log joint of each draw (Gibbs samplers have no acceptance statistics);
* ``log_likelihood``: pointwise :func:`loo_log_predictive` per point and draw (for ``az.loo`` /
  ``az.compare``), added on request (:func:`add_log_likelihood`, called by the samplers'
  ``compute_log_likelihood``: O(draws n K d^2));
* ``observed_data``: the data as the sampler saw it (and the links);
* ``clustering`` (no draw dimension): the point estimate, its credible-ball bounds and, when computed,
  the posterior similarity matrix;

and the sampler settings and the prior as attributes of the root (a saved netCDF describes itself), with
:data:`LOO_VALIDITY` as ``loo_validity``. :func:`check_convergence` warns
(:class:`~ppclust.errors.ConvergenceWarning`) when the chains disagree. Point estimates and credible balls
live in :mod:`ppclust.partition`.
"""

from __future__ import annotations

import json
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

__all__ = [
    "similarity_matrix",
    "point_estimate",
    "variation_of_information",
    "link_parameter_draws",
    "loo_log_predictive",
    "build_datatree",
    "add_log_likelihood",
    "encode_partitions",
    "partition_draws",
    "convergence_diagnostics",
    "check_convergence",
    "save",
    "load",
    "LOO_VALIDITY",
    "RHAT_MAX",
    "ESS_MIN",
    "LOO_BATCH_SIZE",
]

#: Points per batch of :func:`loo_log_predictive`'s XLA program (its memory is O(batch K d^2)).
LOO_BATCH_SIZE = 256
#: When the pointwise log-likelihood (:func:`loo_log_predictive`) supports PSIS-LOO, and what to use else.
LOO_VALIDITY = (
    "PSIS-LOO (az.loo) is valid when every point's leave-one-out predictive is close to its full-data "
    "one: the draws' partitions change little when one point leaves, i.e. many points per cluster and "
    "Pareto k below 0.7. A point whose largest importance ratios tie (az.loo's 'All tail values are "
    "the same') has bounded ratios: its raw weights are stable (reproduce/loo_validity.py scores such "
    "points that way). With small or unstable clusters (Pareto k above 0.7) the weights are "
    "unreliable: compare models by K-fold held-out score_samples (log posterior predictive density "
    "of rows left out of the fit) instead."
)
#: :func:`check_convergence` warns when a statistic's split R-hat exceeds this (Gelman et al. 2013, 1.1)
RHAT_MAX = 1.1
#: ... or its bulk effective sample size over all chains falls below this
ESS_MIN = 50.0


def similarity_matrix(labels, *, max_n=5000) -> np.ndarray | None:
    """Posterior similarity matrix ``P(z_i = z_j)`` estimated from sampled partitions.

    Parameters
    ----------
    labels : int array of shape (..., n)
        Sampled partitions (non-negative labels), e.g. of shape (chain, draw, n).
    max_n : int or None, default 5000
        Largest ``n`` computed (the matrix takes O(n^2) memory); ``None`` lifts the cap.

    Returns
    -------
    psm : ndarray of shape (n, n) or None
        ``psm[i, j]`` = share of the draws that put ``i`` and ``j`` together; ``None`` when ``n > max_n``.

    Examples
    --------
    >>> from ppclust.posterior import similarity_matrix
    >>> similarity_matrix([[0, 0, 1], [0, 1, 1]]).tolist()
    [[1.0, 0.5, 0.0], [0.5, 1.0, 0.5], [0.0, 0.5, 1.0]]
    """
    lab = np.asarray(labels)
    lab = lab.reshape(-1, lab.shape[-1])
    n = lab.shape[1]
    if max_n is not None and n > max_n:
        return None
    psm = np.zeros((n, n), np.float64)
    k = int(lab.max()) + 1
    eye = np.eye(k, dtype=np.float32)
    for row in lab:
        oh = eye[row]
        psm += oh @ oh.T
    return psm / lab.shape[0]


def variation_of_information(a, b) -> float:
    """Variation of information between two partitions, in nats.

    Parameters
    ----------
    a, b : array of shape (n,)
        Labels of the two partitions.

    Returns
    -------
    vi : float
        ``VI(a, b) = H(a) + H(b) - 2 I(a, b)`` (:func:`ppclust.partition.partition_loss` with ``a = 1``).

    References
    ----------
    M. Meila, "Comparing clusterings -- an information based distance", J. Multivariate Analysis 98 (2007).

    Examples
    --------
    >>> from ppclust.posterior import variation_of_information
    >>> round(variation_of_information([0, 0, 1, 1], [0, 0, 0, 0]), 4)
    0.6931
    """
    from ppclust.partition import partition_loss

    return partition_loss(a, b, "vi", 1.0)


def point_estimate(labels, *, loss="binder", a=1.0, log_joint=None, seed=0, **search) -> np.ndarray:
    """Canonical labels of a partition point estimate from sampled partitions.

    Parameters
    ----------
    labels : int array of shape (..., n)
        Sampled partitions.
    loss : {"binder", "vi", "max_log_joint"}, default "binder"
        ``"binder"`` / ``"vi"``: the SALSO search over all partitions (:func:`ppclust.partition.salso`);
        ``"max_log_joint"``: the draw with the highest ``log_joint``.
    a : float in (0, 2), default 1.0
        The losses' unequal-cost parameter.
    log_joint : array of shape (S,), optional
        Log joint of each draw; required by ``"max_log_joint"``, and picks SALSO's starting draws.
    seed : int, default 0
        Seed of the SALSO search.
    **search
        Further options of :func:`ppclust.partition.salso` (``n_runs``, ``max_sweeps``, ...).

    Returns
    -------
    labels : ndarray of shape (n,)
        Canonical labels (0, 1, ... by first appearance).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.posterior import point_estimate
    >>> draws = np.array([[1, 1, 0, 0], [0, 0, 1, 1], [0, 1, 1, 1]])
    >>> point_estimate(draws, n_runs=2).tolist()
    [0, 0, 1, 1]
    >>> point_estimate(draws, loss="max_log_joint", log_joint=[-3.0, -1.0, -2.0]).tolist()
    [0, 0, 1, 1]
    """
    from ppclust import partition

    if loss == "max_log_joint":
        if log_joint is None:
            raise ValueError("loss='max_log_joint' needs `log_joint` (one value per draw)")
        lab = np.asarray(labels).reshape(-1, np.asarray(labels).shape[-1])
        return partition.canonical_labels(lab[int(np.argmax(np.asarray(log_joint).ravel()))])
    if loss not in partition.LOSSES:
        raise ValueError(f"loss must be 'binder', 'vi' or 'max_log_joint', got {loss!r}")
    return partition.salso(labels, loss, a=a, log_joint=log_joint, seed=seed, **search).labels


def link_parameter_draws(key, labels, links, prior, *, weights=None) -> dict:
    r"""Draws of the link sensitivity ``p`` and specificity ``q`` given each saved partition.

    Parameters
    ----------
    key : jax.random key
        Seeds NumPy's Beta sampler.
    labels : int array of shape (chain, draw, n)
        Saved partitions.
    links : Links
        The links (:func:`ppclust.models.tvclust.make_links`).
    prior : TVClustPrior
        Supplies the Beta priors ``a_p, b_p, a_q, b_q``.
    weights : optional
        Unused; kept for the callers' uniform signature.

    Returns
    -------
    draws : dict of ndarray of shape (chain, draw)
        ``"p"``, ``"q"`` (draws) and ``"p_cond_mean"``, ``"q_cond_mean"`` (the Rao-Blackwellised conditional
        means, whose spread is *not* the posterior spread of ``p``).

    Notes
    -----
    Khashabi et al. (2015) Section 3 with conjugate Beta priors:
    :math:`p \mid z, E \sim \mathrm{Beta}(a_p + N_{11}, b_p + N_{01})`,
    :math:`q \mid z, E \sim \mathrm{Beta}(a_q + N_{00}, b_q + N_{10})`, with the pair counts of the draw.
    With ``pq="collapse"`` the sampler integrates ``p, q`` out, so ``(z, p)`` drawn this way is an exact
    draw from the joint posterior.

    Examples
    --------
    >>> import jax, numpy as np
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> from ppclust.posterior import link_parameter_draws
    >>> links = make_links(4, np.array([[0, 1], [1, 2]]), np.array([1, -1]))
    >>> out = link_parameter_draws(jax.random.key(0), np.array([[[0, 0, 1, 1]]]), links, TVClustPrior())
    >>> out["p"].shape, sorted(out)
    ((1, 1), ['p', 'p_cond_mean', 'q', 'q_cond_mean'])
    """
    from ppclust.sideinfo import pair_counts

    lab = np.asarray(labels, np.int32)
    shape = lab.shape[:-1]
    # on the host, O(draws x links): no program per data size
    host_links = jax.tree.map(np.asarray, links)
    counts = np.asarray(pair_counts(lab.reshape(-1, lab.shape[-1]), host_links, xp=np), np.float64)  # (S, 4)
    from ppclust.models.tvclust import link_beta_params

    ap, bp, aq, bq = link_beta_params(counts, prior.a_p, prior.b_p, prior.a_q, prior.b_q)
    # NumPy's Beta sampler, seeded from the JAX key (jax.random.beta compiles for tens of seconds)
    rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).ravel().tolist())
    out = {
        "p": rng.beta(ap, bp),
        "q": rng.beta(aq, bq),
        "p_cond_mean": ap / (ap + bp),
        "q_cond_mean": aq / (aq + bq),
    }
    return {k: v.reshape(shape) for k, v in out.items()}


def loo_log_predictive(
    labels,
    x,
    links,
    family,
    prior,
    *,
    pq="collapse",
    p=None,
    q=None,
    alpha=None,
    partition="dp",
    point_logprior=None,
    backend="auto",
) -> np.ndarray:
    r"""Pointwise log-likelihood for PSIS-LOO: the collapsed leave-one-out predictive of each point.

    Parameters
    ----------
    labels : int array of shape (chain, draw, n)
        Saved partitions, slot ids ``< K`` (the sampler's ``k_max``).
    x : Array of shape (n, d)
        The data as the sampler saw it.
    links : Links
        The links (:func:`ppclust.models.tvclust.make_links`).
    family : conjugate family
        The cluster model (e.g. :class:`ppclust.families.GaussianNIW`).
    prior : TVClustPrior
        Concentration and link priors.
    pq : {"collapse", "sample", "fixed"}, default "collapse"
        How the link weights treat ``p`` and ``q``, as in the sampler.
    p, q, alpha : float or array of shape (chain, draw), optional
        Link sensitivity, specificity and DP concentration per draw (defaults 0.5, 0.5, ``prior.alpha``).
    partition : {"dp", "finite"}, default "dp"
        Dirichlet-process partition, or ``K`` fixed components (labels are component ids).
    point_logprior : Array of shape (n, K), optional
        Per-point log prior of each component (SemiSupervisedGMM's label term); then the observation is
        ``(x_i, y_i)`` and this term is part of the likelihood. Required with ``partition="finite"``.
    backend : {"auto", "numba", "xla"}, default "auto"
        ``"auto"``: the compiled CPU twin where the numba sweep supports the family on CPU, else XLA.

    Returns
    -------
    loglik : ndarray of shape (chain, draw, n)
        :math:`\log p(x_i \mid x_{-i}, z^{(s)}_{-i}, E)` per draw and point.

    Notes
    -----
    For draw :math:`s` and point :math:`i`, with cluster parameters integrated out and the point's own label
    summed over (existing clusters and a new one, or the ``K`` components when ``partition="finite"``):

    .. math::

        \log p(x_i \mid x_{-i}, z^{(s)}_{-i}, E) = \log \sum_k \pi_k(z^{(s)}_{-i}, E)\,
        p(x_i \mid x_{\{j \ne i: z_j = k\}}),

    where :math:`\pi_k \propto w_k / p(x_i \mid \cdot)` are the Gibbs weights of
    :func:`ppclust.inference.gibbs.conditional` without their data term (CRP or Dirichlet size term times the
    link term of Khashabi et al. eqs. 11, 13), normalised over ``k``.

    PSIS-LOO reweights full-posterior draws by :math:`1 / p(\text{obs}_i \mid \theta^{(s)})`, which is exact
    when :math:`p(\theta \mid \text{data}_{-i}) \propto p(\theta \mid \text{data}) / p(\text{obs}_i \mid
    \theta)`. With :math:`\theta = z_{-i}` (``x`` and ``E`` kept) the quantity above is that ratio exactly,
    because the point's own label is integrated out rather than conditioned on; conditioning on
    :math:`z_i` would give heavy-tailed weights (high Pareto k). Links stay observed, so fits with and
    without links are compared on the same observations ``x``. O(draws n K d^2) time; the XLA program
    visits the points in batches of ``LOO_BATCH_SIZE`` (memory O(LOO_BATCH_SIZE K d^2)).

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> from ppclust._jax import x64
    >>> from ppclust.posterior import loo_log_predictive
    >>> with x64():  # the samplers run in float64
    ...     x = jnp.array([[0.0, 0.1], [0.3, -0.2], [3.0, 3.1], [3.2, 2.9]])
    ...     family = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(4.0), jnp.eye(2))
    ...     links = make_links(4, np.array([[0, 1]]), np.array([1]))
    ...     out = loo_log_predictive(np.array([[[0, 0, 1, 1]]]), x, links, family, TVClustPrior())
    >>> out.shape
    (1, 1, 4)
    """
    lab = np.asarray(labels, np.int32)  # on the host: no reshape program per shape
    shape = lab.shape[:-1]
    S = int(np.prod(shape))
    lab = lab.reshape(S, lab.shape[-1])
    dtype = x.dtype
    per = lambda v, dflt: np.broadcast_to(np.asarray(dflt if v is None else v, dtype), shape).reshape(S)
    p_s, q_s, a_s = per(p, 0.5), per(q, 0.5), per(alpha, prior.alpha)
    if partition == "dp":  # compacted slot ids + one free slot (the new cluster); a power of 2: few compiles
        k_max = 1 << int(np.ceil(np.log2(int(np.max(np.asarray(labels))) + 2)))
    else:
        k_max = point_logprior.shape[1]
        lo, hi = int(np.min(np.asarray(labels))), int(np.max(np.asarray(labels)))
        if lo < 0 or hi >= k_max:  # the compiled pass indexes the K components by these labels unchecked
            raise ValueError(
                f"labels of partition='finite' must be component ids in [0, K={k_max}) (K: the "
                f"columns of point_logprior), got values in [{lo}, {hi}]"
            )
    if backend == "auto":
        from ppclust.inference import _gibbs_cpu

        backend = "numba" if _gibbs_cpu.supports(family) and jax.default_backend() == "cpu" else "xla"
    if backend == "numba":  # the compiled twin: no program compiled per shape, so a first fit is fast
        from ppclust.inference import _gibbs_cpu
        from ppclust.partition import compact_labels
        from ppclust.sideinfo import pair_counts

        z = compact_labels(np.asarray(lab)) if partition == "dp" else np.asarray(lab)
        host_links = links._replace(**{f: np.asarray(getattr(links, f)) for f in ("pairs", "sign", "weight")})
        counts = pair_counts(z, host_links, xp=np)  # every draw's counts on the host (no traced program)
        out = _gibbs_cpu.loo_log_predictive(
            z,
            x,
            links,
            family,
            prior,
            counts,
            (p_s, q_s, a_s),
            pq=pq,
            partition=partition,
            point_logprior=point_logprior,
            k_max=k_max,
        )
    else:
        out = _loo_all(
            lab,
            (p_s, q_s, a_s),
            x,
            links,
            family,
            prior,
            point_logprior,
            pq=pq,
            partition=partition,
            k_max=k_max,
            batch_size=min(LOO_BATCH_SIZE, x.shape[0]),
        )
    return np.asarray(out).reshape(shape + (lab.shape[-1],))


@partial(jax.jit, static_argnames=("pq", "partition", "k_max", "batch_size"))
def _loo_all(lab, draw_params, x, links, family, prior, point_logprior, *, pq, partition, k_max, batch_size):
    """:func:`loo_log_predictive` in one XLA program; ``draw_params`` = ``(p, q, alpha)``, each (S,)."""
    from ppclust.inference.gibbs import GibbsState, conditional
    from ppclust.models.tvclust import pair_counts

    def draw(args):
        z, p, q, alpha = args
        if partition == "dp":  # slot ids compacted so that k_max slots always leave one free
            present = jnp.zeros(z.shape[0] + 1, bool).at[z].set(True)
            z = (jnp.cumsum(present) - 1)[z].astype(jnp.int32)
        stats = family.stats(x, z, k_max)
        counts = pair_counts(z, links).astype(x.dtype)

        def one(i):
            st = family.remove(stats, z[i], x[i])
            lp = family.log_predictive(st, x[i])
            now = GibbsState(z, st, counts, p, q, alpha, jnp.asarray(False))
            logw, _, _ = conditional(
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
            base = logw - lp
            if point_logprior is not None:
                base = base - point_logprior[i]
            base = jnp.where(jnp.isfinite(logw), base, -jnp.inf)
            return logsumexp(logw) - logsumexp(base)

        return jax.lax.map(one, jnp.arange(x.shape[0]), batch_size=batch_size)

    return jax.lax.map(draw, (lab, *draw_params))


def build_datatree(
    posterior: dict,
    *,
    sample_stats: dict | None = None,
    log_likelihood: dict | None = None,
    observed_data: dict | None = None,
    clustering: dict | None = None,
    attrs: dict | None = None,
    dims: dict | None = None,
    derived: dict | None = None,
    partition_draws: np.ndarray | None = None,
):
    """ArviZ DataTree from per-draw arrays shaped (chain, draw, ...), with the groups of the module docstring.

    Parameters
    ----------
    posterior : dict of array (chain, draw, ...)
        Genuine posterior draws (label-invariant quantities).
    sample_stats : dict of array (chain, draw, ...), optional
        E.g. ``lp``, the log joint of each draw.
    log_likelihood : dict of array (chain, draw, n), optional
        Pointwise log-likelihood (:func:`loo_log_predictive`).
    observed_data : dict of array, optional
        Arrays without draw dimensions (the data, the links).
    clustering : dict, optional
        ``name -> (dims, array)`` without draws (point estimate, credible-ball bounds, similarity matrix).
    attrs : dict, optional
        Settings and prior, stored on the root and the posterior group (non-scalar values as JSON strings).
    dims : dict, optional
        Dimension names of the non-scalar variables (``"obs"`` for points).
    derived : dict of array (chain, draw), optional
        Per-draw derived quantities (not draws of a parameter), stored as the ``derived`` group.
    partition_draws : int array of shape (chain, draw, n), optional
        Sampled partitions (non-negative slot ids), stored as ``partition_draws/z`` by
        :func:`encode_partitions`.

    Returns
    -------
    xarray.DataTree

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.posterior import build_datatree
    >>> dt = build_datatree({"n_clusters": np.array([[2, 3, 2]])}, attrs={"k_max": 8})
    >>> sorted(dt.children), int(dt.attrs["k_max"])
    (['posterior'], 8)
    """
    import arviz_base as az  # ArviZ's data layer only: ``arviz`` itself also imports its plots and matplotlib
    import xarray as xr

    groups = {"posterior": posterior}
    if sample_stats:
        groups["sample_stats"] = sample_stats
    if log_likelihood:
        groups["log_likelihood"] = log_likelihood
    if observed_data:
        groups["observed_data"] = observed_data
    dt = az.from_dict(groups, dims=dims or {})
    if clustering:
        dt["clustering"] = xr.DataTree(xr.Dataset({k: v for k, v in clustering.items()}))
    if derived:
        dt["derived"] = xr.DataTree(
            xr.Dataset({k: (("chain", "draw"), np.asarray(v)) for k, v in derived.items()})
        )
    if partition_draws is not None:
        z = encode_partitions(partition_draws)
        dt["partition_draws"] = xr.DataTree(xr.Dataset({"z": (("chain", "draw", "obs"), z)}))
    if attrs:
        clean = {k: _attr(v) for k, v in attrs.items()}
        dt.attrs.update(clean)
        dt["posterior"].attrs.update(clean)
    return dt


def add_log_likelihood(dt, labels, x, links, family, prior, **options):
    r"""The ``log_likelihood`` group of ``dt``: :func:`loo_log_predictive` of the draws, computed (in float64)
    and stored when ``dt`` has none yet.

    What the samplers' ``compute_log_likelihood`` methods call: ``fit`` leaves the group out (it costs
    O(draws n K d^2), more than the sampling at large n), and a second call returns the stored group.

    Parameters
    ----------
    dt : xarray.DataTree
        A tree of :func:`build_datatree`, changed in place.
    labels, x, links, family, prior, **options
        The arguments of :func:`loo_log_predictive`: ``labels`` (chain, draw, n), ``x`` (n, d) as the
        sampler saw it. The result is stored as variable ``x`` with dimension ``obs``.

    Returns
    -------
    xarray.DataTree
        ``dt["log_likelihood"]``, what ``az.loo(dt)`` reads.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import TVClustPrior, make_links
    >>> from ppclust.posterior import add_log_likelihood, build_datatree
    >>> labels = np.array([[[0, 0, 1, 1], [0, 0, 0, 1]]])
    >>> dt = build_datatree({"n_clusters": np.array([[2, 2]])})
    >>> x = np.array([[0.0, 0.1], [0.3, -0.2], [3.0, 3.1], [3.2, 2.9]])
    >>> with x64():
    ...     family = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(4.0), jnp.eye(2))
    >>> add_log_likelihood(dt, labels, x, make_links(4), family, TVClustPrior())["x"].shape
    (1, 2, 4)
    >>> add_log_likelihood(dt, None, None, None, None, None)["x"].dims  # stored: not computed again
    ('chain', 'draw', 'obs')
    """
    import arviz_base as az
    import xarray as xr

    from ppclust._jax import x64

    if "log_likelihood" not in dt.children:
        with x64():
            # device_put, not jnp.asarray (which compiles a conversion per shape)
            ll = loo_log_predictive(labels, jax.device_put(x), links, family, prior, **options)
        group = az.from_dict({"log_likelihood": {"x": np.asarray(ll)}}, dims={"x": ["obs"]})
        dt["log_likelihood"] = xr.DataTree(group["log_likelihood"].ds)
    return dt["log_likelihood"]


def encode_partitions(labels) -> np.ndarray:
    """Partition draws in the smallest unsigned integer type that holds their labels (uint8 below 256).

    Parameters
    ----------
    labels : int array of shape (..., n)
        Non-negative labels (slot ids).

    Returns
    -------
    ndarray of uint8, uint16 or uint32, the same shape and values

    Examples
    --------
    >>> from ppclust.posterior import encode_partitions
    >>> encode_partitions([[0, 3, 3]]).dtype.name
    'uint8'
    """
    z = np.asarray(labels)
    top = int(z.max()) if z.size else 0
    if z.size and int(z.min()) < 0:
        raise ValueError("partition draws must be non-negative labels")
    dtype = np.uint8 if top < 2**8 else np.uint16 if top < 2**16 else np.uint32
    return z.astype(dtype)


def partition_draws(dt) -> np.ndarray:
    """The partition draws of a DataTree built with ``partition_draws`` (a fitted estimator's
    ``posterior_``, or one read back by :func:`load`), as int32 of shape (chain, draw, n).

    Parameters
    ----------
    dt : xarray.DataTree
        With a ``partition_draws`` group.

    Returns
    -------
    ndarray of int32 of shape (chain, draw, n)

    Raises
    ------
    KeyError
        When the tree has no ``partition_draws`` group.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.posterior import build_datatree, partition_draws
    >>> dt = build_datatree({"n_clusters": np.array([[1, 2]])}, partition_draws=np.array([[[0, 0], [0, 1]]]))
    >>> partition_draws(dt).tolist()
    [[[0, 0], [0, 1]]]
    """
    if "partition_draws" not in dt.children:
        raise KeyError("the DataTree has no partition_draws group")
    return np.asarray(dt["partition_draws"]["z"].values, np.int32)


def convergence_diagnostics(dt, variables=("n_clusters", "lp", "p", "q")) -> dict:
    """Split R-hat (rank-normalised) and bulk ESS of scalar per-draw statistics across chains (ArviZ).

    Parameters
    ----------
    dt : xarray.DataTree
        With ``posterior`` and ``sample_stats`` groups of shape (chain, draw).
    variables : sequence of str, default=("n_clusters", "lp", "p", "q")
        Names looked up in ``posterior`` then ``sample_stats``; missing ones are skipped.

    Returns
    -------
    dict
        ``name -> (r_hat, ess_bulk)``. A statistic constant over every draw (up to rounding) gets
        ``(1.0, nan)``; one constant within each chain but different between chains ``(inf, nan)``.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.posterior import build_datatree, convergence_diagnostics
    >>> rng = np.random.default_rng(0)
    >>> dt = build_datatree({"n_clusters": np.array([[2] * 50, [5] * 50])})
    >>> convergence_diagnostics(dt)["n_clusters"][0]
    inf
    """
    from arviz_stats.base import array_stats

    out = {}
    for name in variables:
        for group in ("posterior", "sample_stats"):
            if group in dt.children and name in dt[group].ds.data_vars:
                v = np.asarray(dt[group][name].values, np.float64)
                break
        else:
            continue
        if v.ndim != 2 or v.shape[0] < 2:
            continue
        tol = 1e-9 * (1.0 + float(np.max(np.abs(v))))  # the same partition's log joint, rounded apart
        if np.ptp(v) <= tol:
            out[name] = (1.0, float("nan"))
        elif np.all(np.ptp(v, axis=1) <= tol):
            out[name] = (float("inf"), float("nan"))
        else:
            r = float(array_stats.rhat(v, chain_axis=0, draw_axis=1, method="rank"))
            e = float(array_stats.ess(v, chain_axis=0, draw_axis=1, method="bulk"))
            out[name] = (r, e)
    return out


def check_convergence(dt, estimator="the sampler", advice="run more sweeps or more chains") -> dict:
    """Warn (:class:`~ppclust.errors.ConvergenceWarning`) when the chains of a fit disagree.

    A statistic of :func:`convergence_diagnostics` warns when its split R-hat exceeds :data:`RHAT_MAX` or
    its bulk ESS falls below :data:`ESS_MIN`; one warning names every such statistic with its values and
    what to do. Needs at least two chains (else nothing is checked).

    Parameters
    ----------
    dt : xarray.DataTree
        A fitted estimator's ``posterior_``.
    estimator : str, default="the sampler"
        Named in the message.
    advice : str, default="run more sweeps or more chains"
        What to do, appended to the message.

    Returns
    -------
    dict
        The diagnostics (:func:`convergence_diagnostics`).

    Examples
    --------
    >>> import warnings, numpy as np
    >>> from ppclust.posterior import build_datatree, check_convergence
    >>> dt = build_datatree({"n_clusters": np.array([[2, 3] * 25, [7, 8] * 25])})
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     _ = check_convergence(dt)
    >>> w[0].category.__name__
    'ConvergenceWarning'
    """
    import warnings

    from ppclust.errors import ConvergenceWarning

    diag = convergence_diagnostics(dt)
    bad = [
        f"{name}: r_hat={r:.3g}, ess_bulk={e:.3g}"
        for name, (r, e) in diag.items()
        if r > RHAT_MAX or (np.isfinite(e) and e < ESS_MIN)
    ]
    if bad:
        warnings.warn(
            f"{estimator}: the chains disagree or mix slowly ({'; '.join(bad)}; split R-hat should be "
            f"<= {RHAT_MAX}, bulk ESS >= {ESS_MIN:g}); {advice}.",
            ConvergenceWarning,
            stacklevel=3,
        )
    return diag


def _attr(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, float, str, np.integer, np.floating)):
        return v
    if v is None:
        return "None"
    return json.dumps(np.asarray(v).tolist() if hasattr(v, "shape") else v)


def save(dt, path) -> None:
    """Write a DataTree to netCDF (needs h5netcdf and h5py).

    Parameters
    ----------
    dt : xarray.DataTree
        E.g. an estimator's ``posterior_``.
    path : str or Path
        The file to write.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> from pathlib import Path
    >>> from ppclust.posterior import build_datatree, load, save
    >>> path = Path(tempfile.mkdtemp()) / "post.nc"
    >>> save(build_datatree({"n_clusters": np.array([[2, 3]])}), path)
    >>> load(path)["posterior"]["n_clusters"].values.tolist()
    [[2, 3]]
    """
    dt.to_netcdf(str(path))


def load(path):
    """Read a DataTree written by :func:`save`.

    Parameters
    ----------
    path : str or Path
        A netCDF file.

    Returns
    -------
    xarray.DataTree

    Examples
    --------
    See :func:`save`.

    >>> from ppclust.posterior import load
    >>> callable(load)
    True
    """
    import arviz as az

    return az.from_netcdf(str(path))
