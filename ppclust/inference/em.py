r"""Jitted EM for a finite Gaussian mixture whose points may carry (partial, noisy) labels. Kept whole (over
700 lines): the one-device, device-mesh and rows-over-processes forms share one loop, one configuration
and one result type.

The objective is the semi-supervised mixture log-likelihood plus an optional log prior,

.. math::

    \mathcal{L}(\theta) = \sum_i \log \sum_k \exp\big(M_{ik}\big)\, \pi_k\, \mathcal{N}(x_i; \mu_k, \Sigma_k)
        + \log p(\pi) + \sum_k \log p(\mu_k, \Sigma_k),

where ``log_mask`` :math:`M` (built by :func:`ppclust.models.ssgmm.label_log_mask`) is 0 for unlabelled points
and, for a labelled point, :math:`\log p(\text{observed label} \mid z_i = k)` (``-inf`` for components of
other classes when labels are trusted). With every entry 0 this is the plain GMM of scikit-learn's
``GaussianMixture``; with one component per class and hard labels it is the "mixmod" / ``MclustSSC``
semi-supervised likelihood (CEC-IB spec section 4.1).

Parameterisation follows scikit-learn: each component stores the Cholesky factor ``P`` of its *precision*
(``Lambda = P P^T``, ``P`` upper triangular for ``"full"``), so the E-step is one matrix product per
component block and no matrix is ever inverted. Covariance types: ``"full"`` (k, d, d), ``"tied"`` (d, d),
``"diag"`` (k, d), ``"spherical"`` (k,).

Each EM iteration never decreases :math:`\mathcal{L}` (tested) when ``reg_covar = 0``; ``reg_covar`` (added to
the covariance diagonals after each M-step, as scikit-learn does) makes it a slightly shrunk maximiser.

All functions assume validated inputs and a float64 scope (:func:`ppclust._jax.x64`).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import logsumexp

from ppclust._buckets import bucket_size, pad_rows, pad_vector
from ppclust.families import (  # re-exported: EM's Gaussian algebra lives in the family module
    GMMParams,
    NIWPrior,
    covariances,
    gaussian_map_estimate,
    gaussian_moment_stats,
    log_gaussian_prob,
    mixture_niw_prior,
    niw_log_prior,
    precision_cholesky,
)
from ppclust.inference.init import (
    kmeanspp_centres,  # re-exported, as is the next one
    nearest_centre,
)
from ppclust.models.ssgmm import LabelTerm

__all__ = [
    "GMMParams",
    "NIWPrior",
    "EMResult",
    "EMState",
    "EMInfo",
    "EMAlgorithm",
    "build",
    "COVARIANCE_TYPES",
    "log_gaussian_prob",
    "e_step",
    "m_step",
    "m_step_from_stats",
    "suff_stats",
    "log_prior",
    "precision_cholesky",
    "covariances",
    "n_parameters",
    "kmeanspp_centres",
    "nearest_centre",
    "fit",
    "EMConfig",
    "default_prior",
]

COVARIANCE_TYPES = ("full", "tied", "diag", "spherical")


class EMResult(NamedTuple):
    r"""Output of :func:`fit` (best restart).

    Attributes
    ----------
    params : GMMParams
        The fitted parameters.
    objective : jax.Array of shape ()
        Final log-likelihood + log prior (total, not per point).
    log_likelihood : jax.Array of shape ()
        Final log-likelihood.
    resp : jax.Array of shape (n, k)
        Responsibilities at the final parameters.
    trace : jax.Array of shape (max_iter,)
        Objective at each E-step (NaN after stopping).
    n_iter : jax.Array of int of shape ()
        EM iterations done.
    converged : jax.Array of bool of shape ()
        Whether the objective change fell below ``tol``.
    finite : jax.Array of bool of shape ()
        False when a restart produced non-finite values.
    all_objectives : jax.Array of shape (n_init,)
        Final objective of every restart.

    Examples
    --------
    >>> EMResult._fields[:2]
    ('params', 'objective')
    """

    params: GMMParams
    objective: jax.Array
    log_likelihood: jax.Array
    resp: jax.Array
    trace: jax.Array
    n_iter: jax.Array
    converged: jax.Array
    finite: jax.Array
    all_objectives: jax.Array


def default_prior(x, alpha=1.0):
    """The mixture's default conjugate prior, :func:`ppclust.families.mixture_niw_prior` (one definition,
    shared with the Gibbs sampler).

    Parameters
    ----------
    x : array of shape (n, d)
        The (centred) data: the prior's scale is their per-feature variance.
    alpha : float, default=1.0
        Dirichlet concentration of the weights.

    Returns
    -------
    NIWPrior

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> default_prior(jnp.asarray([[0.0, 1.0], [2.0, 3.0]])).psi0.shape
    (2, 2)
    """
    return mixture_niw_prior(x, alpha)


# ----------------------------------------------------------------------------------------------- E-step


def e_step(x, params, log_mask, cov_type, w=None):
    r"""The E-step: the (weighted) log-likelihood total and the log responsibilities.

    .. math:: \log r_{ik} = M_{ik} + \log\pi_k + \log\mathcal N(x_i;\mu_k,\Sigma_k)
              - \log\sum_j e^{M_{ij}}\pi_j\mathcal N(x_i;\mu_j,\Sigma_j)

    Parameters
    ----------
    x : array of shape (n, d)
        The data.
    params : GMMParams
        Current parameters.
    log_mask : array of shape (n, k), LabelTerm or None
        Label term :math:`M` (:func:`ppclust.models.ssgmm.label_log_mask`, or its O(n) form
        :class:`ppclust.models.ssgmm.LabelTerm`); None: a plain GMM.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance type.
    w : array of shape (n,) or None, default=None
        Point weights of the total (0 for padding rows).

    Returns
    -------
    (log-likelihood, log_resp of shape (n, k))

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> with x64():
    ...     x = jnp.asarray([[0.0], [0.2], [5.0], [5.2]])
    ...     resp = jnp.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    ...     params = m_step(x, resp, "spherical", 1e-6)
    ...     ll, log_resp = e_step(x, params, None, "spherical")
    >>> log_resp.shape
    (4, 2)
    """
    lp = log_gaussian_prob(x, params.means, params.prec_chol, cov_type) + jnp.log(params.weights)[None]
    if log_mask is not None:
        lp = lp + (log_mask.rows() if isinstance(log_mask, LabelTerm) else log_mask)
    norm = logsumexp(lp, axis=1)
    return jnp.sum(norm if w is None else w * norm), lp - norm[:, None]


# ----------------------------------------------------------------------------------------------- M-step


def m_step(x, resp, cov_type, reg_covar, prior=None):
    r"""The M-step: weighted ML (or MAP under ``prior``) parameters from responsibilities.

    Parameters
    ----------
    x : array of shape (n, d)
        The data.
    resp : array of shape (n, k)
        Responsibilities.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance type.
    reg_covar : float
        Added to the covariance diagonals (absolute).
    prior : NIWPrior or None, default=None
        MAP under this prior (Fraley & Raftery 2007); None: maximum likelihood.

    Returns
    -------
    GMMParams

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> with x64():
    ...     x = jnp.asarray([[0.0], [0.2], [5.0], [5.2]])
    ...     resp = jnp.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    ...     params = m_step(x, resp, "spherical", 1e-6)
    >>> [round(float(m), 1) for m in params.means[:, 0]]
    [0.1, 5.1]
    """
    return m_step_from_stats(suff_stats(x, resp, cov_type), cov_type, reg_covar, prior)


# the family's moment statistics, MAP estimate and log prior under EM's names
suff_stats = gaussian_moment_stats
m_step_from_stats = gaussian_map_estimate
log_prior = niw_log_prior


def n_parameters(n_components, d, cov_type):
    r"""Number of free parameters of a Gaussian mixture: weights, means and covariances.

    Parameters
    ----------
    n_components : int
        Number of components.
    d : int
        Number of features.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance type.

    Returns
    -------
    int

    Examples
    --------
    >>> n_parameters(2, 3, "full")
    19
    """
    cov = {
        "full": n_components * d * (d + 1) / 2,
        "tied": d * (d + 1) / 2,
        "diag": n_components * d,
        "spherical": n_components,
    }[cov_type]
    return int(cov + n_components * d + n_components - 1)


# ----------------------------------------------------------------------------------------------- init


def _resp_from_centres(x, centres, allowed):
    """One-hot responsibilities: nearest centre among the components a point is allowed to use."""
    return jax.nn.one_hot(nearest_centre(x, centres, allowed), centres.shape[0], dtype=x.dtype)


# ----------------------------------------------------------------------------------------------- EM loop


class EMState(NamedTuple):
    r"""State carried between EM iterations (:func:`build`).

    Attributes
    ----------
    params : GMMParams
        The current parameters (after the last M-step).
    n_iter : jax.Array of int of shape ()
        EM iterations done.
    prev_objective, objective : jax.Array of shape ()
        The objective (log-likelihood + log prior) at the previous and the last E-step (``-inf`` before
        any).
    log_likelihood : jax.Array of shape ()
        The log-likelihood at the last E-step (NaN before any).

    Examples
    --------
    >>> EMState._fields[1]
    'n_iter'
    """

    params: GMMParams
    n_iter: jax.Array
    prev_objective: jax.Array
    objective: jax.Array
    log_likelihood: jax.Array


class EMInfo(NamedTuple):
    r"""Per-step diagnostics, not carried: objective and log-likelihood at this step's E-step (the
    parameters the step started from).

    Attributes
    ----------
    objective : jax.Array of shape ()
        Log-likelihood + log prior at this step's E-step.
    log_likelihood : jax.Array of shape ()
        Log-likelihood at this step's E-step.

    Examples
    --------
    >>> EMInfo._fields
    ('objective', 'log_likelihood')
    """

    objective: jax.Array
    log_likelihood: jax.Array


class EMAlgorithm(NamedTuple):
    r"""``init(params0) -> EMState`` and ``step(key, state) -> (EMState, EMInfo)`` (BlackJAX's shape; EM is
    deterministic, ``key`` is accepted for the common signature and not used); ``objective(params) ->
    (log-likelihood, objective, log responsibilities)`` is the E-step alone (the final one of a fit).

    Attributes
    ----------
    init : callable
        ``init(params0) -> EMState``.
    step : callable
        ``step(key, state) -> (EMState, EMInfo)``.
    objective : callable
        ``objective(params) -> (log-likelihood, objective, log responsibilities)``.

    Examples
    --------
    >>> EMAlgorithm._fields
    ('init', 'step', 'objective')
    """

    init: Callable[[GMMParams], EMState]
    step: Callable[[jax.Array, EMState], tuple[EMState, EMInfo]]
    objective: Callable


def build(x, log_mask, cov_type, reg_covar, prior=None, w=None, axis=None) -> EMAlgorithm:
    r"""EM's ``init``/``step`` with the data and the configuration closed over.

    One step is an E-step at ``state.params`` (responsibilities, objective) then an M-step (ML or MAP
    under ``prior``); the objective never decreases when ``reg_covar = 0``.

    Parameters
    ----------
    x : array of shape (n, d)
        The data (this device's rows in the data-parallel form).
    log_mask : array of shape (n, k) or None
        Label term (:func:`ppclust.models.ssgmm.label_log_mask`); None: a plain GMM.
    cov_type : {"full", "tied", "diag", "spherical"}
        Covariance type.
    reg_covar : float
        Added to the covariance diagonals after every M-step (absolute).
    prior : NIWPrior or None, default=None
        MAP under this prior; None: maximum likelihood.
    w : array of shape (n,) or None, default=None
        Data-parallel form (inside ``shard_map``): 0 on padding rows.
    axis : str or None, default=None
        Data-parallel form: the mesh axis to reduce the log-likelihood and sufficient statistics over.

    Returns
    -------
    EMAlgorithm

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> with x64():
    ...     x = jnp.asarray([[0.0], [0.2], [5.0], [5.2]])
    ...     resp = jnp.asarray([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]])
    ...     params = m_step(x, resp, "spherical", 1e-6)
    ...     alg = build(x, None, "spherical", 1e-6)
    ...     state, info = alg.step(None, alg.init(params))
    >>> int(state.n_iter)
    1
    """
    reduce = (lambda a: a) if axis is None else (lambda a: jax.lax.psum(a, axis))

    def objective(params):
        ll, log_resp = e_step(x, params, log_mask, cov_type, w)
        ll = reduce(ll)
        return ll, ll + log_prior(params, prior, cov_type), log_resp

    def mstep(log_resp):
        resp = jnp.exp(log_resp)
        if w is None:
            return m_step(x, resp, cov_type, reg_covar, prior)
        stats = reduce(suff_stats(x, resp * w[:, None], cov_type))
        return m_step_from_stats(stats, cov_type, reg_covar, prior)

    def init(params0) -> EMState:
        ninf = jnp.asarray(-jnp.inf, x.dtype)
        return EMState(params0, jnp.asarray(0, jnp.int32), ninf, ninf, jnp.asarray(jnp.nan, x.dtype))

    def step(key, state: EMState) -> tuple[EMState, EMInfo]:
        del key  # deterministic
        ll, obj, log_resp = objective(state.params)
        new = EMState(mstep(log_resp), state.n_iter + 1, state.objective, obj, ll)
        return new, EMInfo(obj, ll)

    return EMAlgorithm(init, step, objective)


def _em(x, params0, log_mask, cov_type, max_iter, tol, reg_covar, prior, w=None, n_total=None, axis=None):
    """EM loop: ``lax.while_loop`` over :func:`build`'s ``step`` until the objective per point changes by
    less than ``tol`` or ``max_iter`` steps (``n_total``: the real number of points in the data-parallel
    form, see :func:`build`)."""
    n = x.shape[0] if n_total is None else n_total
    alg = build(x, log_mask, cov_type, reg_covar, prior, w, axis)

    def cond(carry):
        state, _ = carry
        it, prev, cur = state.n_iter, state.prev_objective, state.objective
        not_conv = (it < 2) | (jnp.abs(cur - prev) / n >= tol)
        return (it < max_iter) & not_conv & ((it == 0) | jnp.isfinite(cur))

    def body(carry):
        state, trace = carry
        new, info = alg.step(None, state)
        return new, trace.at[state.n_iter].set(info.objective)

    trace0 = jnp.full((max_iter,), jnp.asarray(jnp.nan, x.dtype))
    state, trace = jax.lax.while_loop(cond, body, (alg.init(params0), trace0))
    params, it, prev, cur = state.params, state.n_iter, state.prev_objective, state.objective
    converged = (it >= 2) & (jnp.abs(cur - prev) / n < tol)
    ll, obj, log_resp = alg.objective(params)
    finite = jnp.isfinite(obj) & jnp.all(jnp.isfinite(params.means))
    return params, obj, ll, jnp.exp(log_resp), trace, it, converged, finite


def _initial_params(key, x, allowed, init_centres, init_fixed, cov_type, reg_covar, prior, w, n):
    """k-means++ centres among the first ``n`` rows, one-hot responsibilities, an M-step; the padding rows
    (``w = 0``) are never drawn and add nothing to the statistics."""
    centres = kmeanspp_centres(key, x, init_centres, init_fixed, n)
    resp = _resp_from_centres(x, centres, allowed) * w[:, None]
    return m_step(x, resp, cov_type, reg_covar, prior)


class EMConfig(NamedTuple):
    """Options of :func:`fit`, a frozen value.

    Parameters
    ----------
    n_components : int
        Number of mixture components ``K``.
    cov_type : {"full", "tied", "diag", "spherical"}, default="full"
        Covariance type (scikit-learn's meanings).
    max_iter : int, default=100
        Most EM iterations.
    tol : float, default=1e-3
        Stop when the objective per point changes by less than ``tol`` (scikit-learn's convention).
        Traced: changing it compiles nothing new.
    reg_covar : float, default=1e-6
        Added to the covariance diagonals after every M-step (absolute, in x's units). Traced.
    n_init : int, default=1
        Restarts (vmapped); the one with the highest objective is kept.

    Examples
    --------
    >>> EMConfig(3, cov_type="diag").max_iter
    100
    """

    n_components: int
    cov_type: str = "full"
    max_iter: int = 100
    tol: float = 1e-3
    reg_covar: float = 1e-6
    n_init: int = 1


def fit(
    key,
    x,
    log_mask,
    allowed,
    init_centres,
    init_fixed,
    config: EMConfig | None = None,
    *,
    prior=None,
    init_params=None,
    mesh=None,
    weight=None,
    **options,
) -> EMResult:
    """EM with ``n_init`` restarts (vmapped); returns the :class:`EMResult` of the best restart.

    The rows are padded to their bucket (:mod:`ppclust._buckets`) with zero-weight rows that no
    k-means++ draw, sum, objective or convergence test sees, so every ``n`` of a bucket runs one compiled
    program; ``resp`` is cut back to the ``n`` rows.

    Parameters
    ----------
    key : JAX PRNG key
        Seeds the k-means++ starts.
    x : array of shape (n, d)
        The data (validated, float64 scope).
    log_mask : array of shape (n, K), LabelTerm or None
        :math:`\\log p(\\text{observed label} \\mid z = k)`, 0 for unlabelled points; None for a plain GMM.
        A :class:`ppclust.models.ssgmm.LabelTerm` (a table row per class) keeps it O(n) in memory.
    allowed : bool array of shape (n, K)
        Components a point may start in (the hard label restriction of the start).
    init_centres, init_fixed : arrays of shape (K, d) and (K,) bool
        Fixed initial centres (labelled class means); the others are drawn by k-means++ in each restart.
        Initial responsibilities are one-hot to the nearest allowed centre, followed by an M-step
        (scikit-learn's ``init_params="k-means++"`` scheme).
    config : EMConfig or None, default=None
        The options; None builds one from ``options`` (``n_components`` required).
    prior : NIWPrior or None, default=None
        MAP under this prior; None: maximum likelihood.
    init_params : GMMParams or None, default=None
        If given, every restart starts from these parameters (E-step first, like scikit-learn's
        ``weights_init`` / ``means_init`` / ``precisions_init``).
    mesh : None or a 1-D :class:`jax.sharding.Mesh` with axis ``"data"``, default=None
        With a mesh the points are split over its devices (padded with zero-weight rows); each device
        computes the E-step and the sufficient statistics of its rows, reduced with ``psum``. The
        initialisation runs replicated on the full data, so results equal the single-device ones up to
        floating-point summation order.
    weight : jax.Array of shape (N,) or None, default=None
        Rows spread over processes (:mod:`ppclust.distributed`): ``x``, ``log_mask`` and ``allowed`` are
        global arrays of ``N`` positions whose padding rows (anywhere, weight 0) no draw, sum or objective
        sees; the program runs over every process's devices and ``resp`` stays a global ``(N, K)``
        array. The k-means++ draws are those of the unpadded rows (the same keys). ``mesh`` is ignored.
    **options
        Fields of :class:`EMConfig` replacing those of ``config``.

    Returns
    -------
    EMResult

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from ppclust._jax import x64
    >>> with x64():
    ...     x = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    ...     res = fit(jax.random.key(0), x, None, jnp.ones((6, 2), bool), jnp.zeros((2, 1)),
    ...               jnp.zeros(2, bool), n_components=2, cov_type="spherical")
    >>> sorted(round(float(m), 1) for m in res.params.means[:, 0])
    [0.1, 5.1]
    """
    config = EMConfig(**options) if config is None else config._replace(**options)
    static = _EMStatic(int(config.n_components), config.cov_type, int(config.max_iter), int(config.n_init))
    if weight is not None:
        n_real = jnp.sum(weight > 0).astype(jnp.int32)
        data = (x, weight, n_real)
        start = (allowed, init_centres, init_fixed)
        return _fit(
            key,
            data,
            log_mask,
            *start,
            config.tol,
            config.reg_covar,
            prior,
            init_params,
            static._replace(weighted=True),
            None,
        )
    x = np.asarray(x)
    n = x.shape[0]
    size = bucket_size(n)
    xp, w = pad_rows(x, size)
    if isinstance(log_mask, LabelTerm):  # padding rows take the zero row (unlabelled)
        table = np.asarray(log_mask.table)
        codes = pad_vector(np.asarray(log_mask.codes, np.int32), size, table.shape[0] - 1)
        lm = LabelTerm(codes, table) if mesh is None else table[codes]
    else:
        lm = None if log_mask is None else pad_rows(np.asarray(log_mask), size)[0]
    allowed_p = pad_vector(np.asarray(allowed), size, True)
    res = _fit(
        key,
        (xp, w, np.int32(n)),
        lm,
        allowed_p,
        init_centres,
        init_fixed,
        config.tol,
        config.reg_covar,
        prior,
        init_params,
        static,
        mesh,
    )
    return res._replace(resp=np.asarray(res.resp)[:n])


class _EMStatic(NamedTuple):
    n_components: int
    cov_type: str
    max_iter: int
    n_init: int
    weighted: bool = False  # padding rows anywhere (rows spread over processes), not only at the end


@partial(jax.jit, static_argnames=("static", "mesh"))
def _fit(
    key,
    data,
    log_mask,
    allowed,
    init_centres,
    init_fixed,
    tol,
    reg_covar,
    prior,
    init_params,
    static: _EMStatic,
    mesh,
):
    cov_type, max_iter, n_init = static.cov_type, static.max_iter, static.n_init
    x, w, n = data  # the rows padded to their bucket, their 0/1 weights, the number of real rows
    keys = jax.random.split(key, n_init)

    if mesh is None:

        def one(k_):
            if init_params is None and static.weighted:
                centres = kmeanspp_centres(k_, x, init_centres, init_fixed, n, mask=w > 0)
                resp = _resp_from_centres(x, centres, allowed) * w[:, None]
                p0 = m_step(x, resp, cov_type, reg_covar, prior)
            elif init_params is None:
                p0 = _initial_params(
                    k_, x, allowed, init_centres, init_fixed, cov_type, reg_covar, prior, w, n
                )
            else:
                p0 = init_params
            return _em(x, p0, log_mask, cov_type, max_iter, tol, reg_covar, prior, w=w, n_total=n)

        params, obj, ll, resp, trace, it, conv, finite = jax.vmap(one)(keys)
    else:
        params, obj, ll, resp, trace, it, conv, finite = _fit_sharded(
            keys,
            (x, w, n),
            log_mask,
            (allowed, init_centres, init_fixed),
            static,
            tol,
            reg_covar,
            prior,
            init_params,
            mesh,
        )
    score = jnp.where(finite, obj, -jnp.inf)
    b = jnp.argmax(score)
    take = lambda a: a[b]
    return EMResult(
        jax.tree.map(take, params), obj[b], ll[b], resp[b], trace[b], it[b], conv[b], jnp.any(finite), obj
    )


def _fit_sharded(keys, data, log_mask, start, static: _EMStatic, tol, reg_covar, prior, init_params, mesh):
    x, w_rows, n = data
    allowed, init_centres, init_fixed = start
    cov_type, max_iter = static.cov_type, static.max_iter
    from jax.sharding import PartitionSpec as P

    from ppclust._devices import AXIS
    from ppclust._devices import pad_rows as pad_to_mesh

    size = x.shape[0]
    pad = pad_to_mesh(size, mesh) - size
    xp = jnp.pad(x, ((0, pad), (0, 0)))
    w = jnp.pad(w_rows, (0, pad))
    k = init_centres.shape[0]
    lm = jnp.zeros((size, k), x.dtype) if log_mask is None else log_mask  # adding 0.0 is exact
    lm = jnp.pad(lm, ((0, pad), (0, 0)))
    rep = (x, w_rows, n, allowed, init_centres, init_fixed, tol, reg_covar, prior, init_params)

    def per_device(keys, rep, x_loc, w_loc, lm_loc):
        x_full, w_full, n, allowed, centres0, fixed, tol, reg_covar, prior, init_params = rep

        def one(k_):
            if init_params is None:  # replicated on every device: identical to the single-device init
                p0 = _initial_params(
                    k_, x_full, allowed, centres0, fixed, cov_type, reg_covar, prior, w_full, n
                )
            else:
                p0 = init_params
            return _em(
                x_loc, p0, lm_loc, cov_type, max_iter, tol, reg_covar, prior, w=w_loc, n_total=n, axis=AXIS
            )

        return jax.vmap(one)(keys)

    out_specs = (P(), P(), P(), P(None, AXIS), P(), P(), P(), P())
    out = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P(), P(AXIS), P(AXIS), P(AXIS)),
        out_specs=out_specs,
        check_vma=False,
    )(keys, rep, xp, w, lm)
    params, obj, ll, resp, trace, it, conv, finite = out
    return params, obj, ll, resp[:, :size], trace, it, conv, finite
