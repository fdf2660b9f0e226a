r"""Coordinated Conditional Information Bottleneck (CCIB) by deterministic annealing.

Kept whole (just over 700 lines): the annealing driver, the Q- and P-steps and the feature and
background models are one algorithm sharing its state and result types.

Gondek & Hofmann, *Non-Redundant Data Clustering* (ICDM 2004); spec ``../shared/specs/ccib.md``.

The clustering is a soft assignment :math:`q_{ic}=P(c\mid x_i)` maximising

.. math::  F = I(C;Y\mid Z) - \rho\, I(C;X) + \lambda\, I(C;Y)

(``lam`` = :math:`\lambda`; :math:`\lambda=0` is the CIB).  Each inner iteration alternates

* the Q-step (M-step): the distributions induced by ``q`` -- :math:`P(c)`, the marginal feature model
  :math:`\hat P(y\mid c)` and the conditional model :math:`\hat P(y\mid c,z)` (tables for categorical
  background, eq. (9); a ridge-penalised per-cluster GLM on :math:`[1,z]` for continuous background,
  spec section 5.3), and
* the P-step, eq. (5) in log space:
  :math:`\log q_{ic}=\log\pi_c+\tfrac{\lambda}{\rho}A_{ic}+\tfrac1\rho B_{ic}-\mathrm{logsumexp}`,
  with :math:`A_{ic}` (:math:`B_{ic}`) the expected log-likelihood of object :math:`i`'s features under
  cluster :math:`c`'s marginal (conditional) model.

:math:`\rho` is annealed geometrically (spec section 6.2): the start :math:`\rho_0` is found by doubling
from 1 until the perturbed uniform solution stays uniform, then :math:`\rho\leftarrow b\rho` with a
symmetry-breaking perturbation before each temperature, until the assignments are hard, :math:`\rho`
falls below :math:`10^{-8}\rho_0`, :math:`I(C;X)` reaches ``c_max`` or ``max_iter`` is used up.
One run is one jitted function (:func:`fit`): the annealing is a ``lax.while_loop`` writing a fixed-size
trace. :func:`fit_restarts` runs the restarts as the same loop cut into chunks of steps driven from Python
(the same result), so that a fit can be stopped between chunks, in batches of a fixed width, so that its
programs do not depend on the number of restarts.

Feature models (``Static.feature``):

* ``"multinomial"`` -- counts / text; the solver receives row-normalised frequencies
  :math:`\tilde n_{ij}=n_{ij}/n_i` and per-object fitting weights (``n_i`` for ``x_weight`` "paper" and
  "length", 1 for "uniform"), which reproduces (9a)/(9b) or the uniform-weight variant of section 5.1.
* ``"bernoulli"`` -- binary attributes (the synthetic experiment of section 11.1).
* ``"gaussian"`` -- real features with a shared, fixed isotropic variance (section 5.2).
* ``"poisson"`` -- counts with per-term rates (section 5.2 table).

Background (``Static.background``): ``"none"`` (standard IB with :math:`\beta=(1+\lambda)/\rho`),
``"categorical"`` (codes ``0..n_groups-1``) or ``"continuous"`` (design matrix :math:`[1,z]`; the GLM is
Gaussian/identity, Bernoulli/logit or Poisson/log, canonical links; multinomial features use the
Poisson GLM on the frequencies, whose intercept-only fit is the uniform-weight multinomial table up to a
constant).  All information quantities are in nats and are *model-based*: :math:`I(C;Y\mid Z)` is the
expected log-likelihood under the fitted conditional model minus that of the single-cluster model.

Multinomial tables are the Dirichlet posterior means of :class:`ppclust.families.Multinomial`.
"""

from __future__ import annotations

import time
from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.special import logsumexp, xlogy

from ppclust import _progress
from ppclust._buckets import split_count
from ppclust.families import Multinomial, isotropic_gaussian_loglik

__all__ = [
    "FEATURES",
    "BACKGROUNDS",
    "CCIBData",
    "Hyper",
    "Static",
    "Params",
    "Result",
    "AnnealState",
    "AnnealInfo",
    "AnnealAlgorithm",
    "build",
    "m_step",
    "p_step",
    "objective_terms",
    "inner_trace",
    "fit",
    "fit_restarts",
    "restart_keys",
    "log_assignment",
]

FEATURES = ("multinomial", "bernoulli", "gaussian", "poisson")
BACKGROUNDS = ("none", "categorical", "continuous")

_HARD = 1e-6  # stop when min_i max_c q_ic > 1 - _HARD (spec 6.2)
_ICX_START = 1e-4  # rho0 doubling rule: I(C;X) below this many nats counts as "uniform"
_SPLIT_TAU = 1e-6  # clusters closer than this are one effective cluster (diagnostic)
_DEAD = 1e-8  # a cluster with pi_c below this is dead (reported, not reseeded)
_TINY = 1e-300


class CCIBData(NamedTuple):
    """Everything the solver reads about the objects (host code builds it; see the estimator).

    Attributes
    ----------
    y : jax.Array of shape (n, D)
        Features: frequencies (multinomial), 0/1, reals or counts.
    z : jax.Array of int32 of shape (n,)
        Background codes (zeros unless categorical).
    design : jax.Array of shape (n, a)
        ``[1, z]`` for a continuous background, ones ``(n, 1)`` otherwise.
    w_x : jax.Array of shape (n,)
        P(x_i), summing to 1; 0 for objects excluded from fitting (empty documents).
    w_fit : jax.Array of shape (n,)
        Weights of the feature M-step (``n_i`` for multinomial "paper" / "length" weighting).
    clamp : jax.Array of bool of shape (n,)
        Semi-supervised objects whose assignment is fixed.
    clamp_q : jax.Array of shape (n, k)
        The fixed one-hot rows (ignored where ``clamp`` is False).
    cond_mask : jax.Array of shape (D,)
        1 where a feature enters the conditional term, 0 where dropped.

    Examples
    --------
    >>> CCIBData._fields[:3]
    ('y', 'z', 'design')
    """

    y: jax.Array  # (n, D) features: frequencies (multinomial), 0/1, reals or counts
    z: jax.Array  # (n,) int32 background codes (zeros unless categorical)
    design: jax.Array  # (n, a) [1, z] for continuous background, ones (n, 1) otherwise
    w_x: jax.Array  # (n,) P(x_i), sums to 1; 0 for objects excluded from fitting (empty documents)
    w_fit: jax.Array  # (n,) weights of the feature M-step (n_i for multinomial paper/length)
    clamp: jax.Array  # (n,) bool, semi-supervised objects whose assignment is fixed
    clamp_q: jax.Array  # (n, k) the fixed one-hot rows (ignored where clamp is False)
    cond_mask: jax.Array  # (D,) 1 where a feature enters the conditional term, 0 where dropped


class Hyper(NamedTuple):
    """Real-valued options (traced: a lambda sweep compiles once).

    Attributes
    ----------
    lam : float, default=0.3
        lambda, weight of the coordination term I(C;Y), >= 0.
    rate : float, default=0.9
        Cooling factor b in (0, 1): ``rho <- b rho``.
    eps : float, default=1e-2
        Symmetry-breaking perturbation ``q <- normalise(q (1 + eps U(-1, 1)))``.
    smoothing : float, default=1e-10
        Additive smoothing of the tables (spec section 9).
    variance : float, default=1.0
        s^2 of the Gaussian feature model, > 0.
    ridge : float, default=1e-2
        tau of the GLM slopes, scaled by the cluster mass.
    c_max : float, default=inf
        Stop when I(C;X) >= ``c_max - 1e-3``.
    rho0 : float, default=0.0
        Start temperature; <= 0 means the doubling rule of spec 6.2.
    rho_min_ratio : float, default=1e-8
        Stop when ``rho < rho_min_ratio * rho0``.
    tol : float, default=1e-6
        Inner loop: stop when ``max |q_new - q_old|`` falls below it.
    ftol : float, default=1e-9
        Inner loop: stop when the relative change of F falls below it.

    Examples
    --------
    >>> Hyper().lam
    0.3
    """

    lam: float = 0.3  # lambda, weight of the coordination term I(C;Y)
    rate: float = 0.9  # b, rho <- b rho
    eps: float = 1e-2  # symmetry-breaking perturbation q <- normalise(q (1 + eps U(-1, 1)))
    smoothing: float = 1e-10  # additive smoothing of the tables (spec section 9)
    variance: float = 1.0  # s^2 of the Gaussian feature model
    ridge: float = 1e-2  # tau of the GLM slopes, scaled by the cluster mass
    c_max: float = float("inf")  # stop when I(C;X) >= c_max - 1e-3
    rho0: float = 0.0  # start temperature; <= 0 means the doubling rule of spec 6.2
    rho_min_ratio: float = 1e-8  # stop when rho < rho_min_ratio * rho0
    tol: float = 1e-6  # inner loop: max |q_new - q_old|
    ftol: float = 1e-9  # inner loop: relative change of F


class Static(NamedTuple):
    """Shape-setting options (static under jit).

    Attributes
    ----------
    n_clusters : int
        Number of clusters k.
    n_groups : int, default=1
        Number of background categories (categorical background).
    feature : {"multinomial", "bernoulli", "gaussian", "poisson"}, default="multinomial"
        Feature model.
    background : {"none", "categorical", "continuous"}, default="none"
        Background model.
    n_newton : int, default=3
        GLM Newton steps per M-step (generalised EM, warm started).
    max_iter : int, default=300
        Temperature (annealing) steps, the trace length.
    max_inner : int, default=500
        Most inner (P-step, Q-step) alternations per temperature.
    max_doublings : int, default=60
        Most steps of the search for rho0.

    Examples
    --------
    >>> Static(n_clusters=2).max_iter
    300
    """

    n_clusters: int
    n_groups: int = 1  # number of background categories (categorical background)
    feature: str = "multinomial"
    background: str = "none"
    n_newton: int = 3  # GLM Newton steps per M-step (generalised EM, warm started)
    max_iter: int = 300  # temperature (annealing) steps, the trace length
    max_inner: int = 500
    max_doublings: int = 60


class Params(NamedTuple):
    """The Q-step distributions induced by q.

    Attributes
    ----------
    log_pi : jax.Array of shape (k,)
        Log cluster weights.
    marg : jax.Array of shape (k, D)
        Table parameters of P(y | c).
    cond : jax.Array
        Tables of P(y | c, z), shape (k, G, D), or GLM coefficients, shape (k, D, a).

    Examples
    --------
    >>> Params._fields
    ('log_pi', 'marg', 'cond')
    """

    log_pi: jax.Array  # (k,)
    marg: jax.Array  # (k, D) table parameters of P(y | c)
    cond: jax.Array  # (k, G, D) tables of P(y | c, z), or (k, D, a) GLM coefficients


class Result(NamedTuple):
    """Output of :func:`fit`: the final assignments, distributions, temperatures, objective terms and
    the per-step trace of one annealing run.

    Attributes
    ----------
    q : jax.Array of shape (n, k)
        Final soft assignments.
    labels : jax.Array of int32 of shape (n,)
        Hard assignments (argmax, lowest c on ties).
    params : Params
        The final Q-step distributions.
    rho : jax.Array of shape ()
        Final temperature.
    rho0 : jax.Array of shape ()
        Start temperature.
    objective : jax.Array of shape ()
        F~ at the final rho.
    i_cx, i_cy_given_z, i_cy : jax.Array of shape ()
        I(C;X), I(C;Y|Z) and I(C;Y) at the end (nats, model-based).
    k_eff : jax.Array of shape ()
        Effective number of clusters.
    n_dead : jax.Array of shape ()
        Clusters with weight below 1e-8.
    n_steps : jax.Array of shape ()
        Recorded temperatures.
    inner_capped : jax.Array of shape ()
        Number of temperatures whose inner loop hit ``max_inner``.
    trace : dict
        ``(max_iter,)`` arrays: rho, objective, i_cx, i_cy_given_z, i_cy, k_eff, n_inner.

    Examples
    --------
    >>> Result._fields[:3]
    ('q', 'labels', 'params')
    """

    q: jax.Array  # (n, k) final soft assignments
    labels: jax.Array  # (n,) int32 hard assignments (argmax, lowest c on ties)
    params: Params
    rho: jax.Array  # final temperature
    rho0: jax.Array
    objective: jax.Array  # F~ at the final rho
    i_cx: jax.Array
    i_cy_given_z: jax.Array
    i_cy: jax.Array
    k_eff: jax.Array
    n_dead: jax.Array
    n_steps: jax.Array
    inner_capped: jax.Array  # number of temperatures whose inner loop hit max_inner
    trace: dict  # (max_iter,) arrays: rho, objective, i_cx, i_cy_given_z, i_cy, k_eff, n_inner


# ------------------------------------------------------------------------------------------------
# Q-step, P-step, objective
# ------------------------------------------------------------------------------------------------


def m_step(q, data: CCIBData, hyper: Hyper, static: Static, cond_prev=None) -> Params:
    """Q-step: P(c), P(y|c) and P(y|c,z) induced by ``q`` (GLM warm-started from ``cond_prev``).

    Parameters
    ----------
    q : jax.Array of shape (n, k)
        Soft assignments.
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options.
    cond_prev : jax.Array or None, default=None
        GLM coefficients to warm-start from (continuous background).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> m_step(q, data, hyper, static).log_pi.shape
    (2,)
    """
    pi = q.T @ data.w_x
    w = data.w_fit[:, None] * q  # (n, k)
    marg = _table_params(static.feature, w.T @ data.y, w.sum(0), data, hyper)
    k = q.shape[1]
    if static.background == "continuous":
        if cond_prev is None:
            cond_prev = _glm_init(w, data, static)
        cond = _glm_newton(cond_prev, w, data, hyper, static, static.n_newton)
    else:
        g = static.n_groups if static.background == "categorical" else 1
        onehot_z = jax.nn.one_hot(data.z, g, dtype=q.dtype)  # (n, G)
        wz = (w[:, :, None] * onehot_z[:, None, :]).reshape(-1, k * g)  # (n, k G)
        cond = _table_params(static.feature, wz.T @ data.y, wz.sum(0), data, hyper).reshape(k, g, -1)
    return Params(jnp.log(jnp.maximum(pi, _TINY)), marg, cond)


def log_likelihoods(params: Params, data: CCIBData, hyper: Hyper, static: Static):
    """(A, B): the (n, k) expected log-likelihoods under the marginal and the conditional model."""
    ones = jnp.ones(data.y.shape[1], data.y.dtype)
    a = _table_loglik(static.feature, data.y, params.marg, ones, hyper)
    if static.background == "continuous":
        b = _glm_loglik(params.cond, data, hyper, static)
    else:
        k, g, d = params.cond.shape
        b_all = _table_loglik(static.feature, data.y, params.cond.reshape(k * g, d), data.cond_mask, hyper)
        b = jnp.take_along_axis(b_all.reshape(-1, k, g), data.z[:, None, None], axis=2)[:, :, 0]
    return a, b


def log_assignment(params: Params, a, b, rho, lam):
    """Eq. (5) in log space: log q_ic (normalised over c).

    Parameters
    ----------
    params : Params
        The Q-step distributions.
    a : jax.Array of shape (n, k)
        Expected log-likelihoods under the marginal model.
    b : jax.Array of shape (n, k)
        Expected log-likelihoods under the conditional model.
    rho : float
        Temperature, > 0.
    lam : float
        Weight of the coordination term.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> params = m_step(q, data, hyper, static)
    >>> a, b = log_likelihoods(params, data, hyper, static)
    >>> log_assignment(params, a, b, 1.0, hyper.lam).shape
    (6, 2)
    """
    logits = params.log_pi[None, :] + (lam / rho) * a + b / rho
    return logits - logsumexp(logits, axis=1, keepdims=True)


def p_step(params: Params, data: CCIBData, hyper: Hyper, static: Static, rho):
    """P-step, eq. (5); clamped (semi-supervised) rows keep their one-hot assignment.

    Parameters
    ----------
    params : Params
        The Q-step distributions.
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options.
    rho : float
        Temperature, > 0.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> q1 = p_step(m_step(q, data, hyper, static), data, hyper, static, 0.5)
    >>> bool(q1[0, 0] > 0.5 and q1[5, 1] > 0.5)
    True
    """
    a, b = log_likelihoods(params, data, hyper, static)
    q = jnp.exp(log_assignment(params, a, b, rho, hyper.lam))
    return jnp.where(data.clamp[:, None], data.clamp_q, q)


def objective_terms(
    q, params: Params, data: CCIBData, hyper: Hyper, static: Static, rho, baseline, loglik=None
):
    r"""F~(q, Q) and its terms (nats).  At Q = m_step(q) (consistent weighting) F~ = F up to constants.

    Returns a dict with ``objective`` = :math:`\sum_i w_i\sum_c q_{ic}(B_{ic}+\lambda A_{ic})-\rho\,
    \tilde I(C;X)`, ``i_cx``, ``i_cy_given_z`` and ``i_cy`` (model-based, relative to ``baseline``,
    the single-cluster expected log-likelihoods (cond, marg)).  ``loglik``: precomputed (A, B).

    Parameters
    ----------
    q : jax.Array of shape (n, k)
        Soft assignments.
    params : Params
        The Q-step distributions.
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options.
    rho : float
        Temperature.
    baseline : jax.Array of shape (2,)
        Single-cluster expected log-likelihoods (cond, marg).
    loglik : tuple of jax.Array or None, default=None
        Precomputed ``(A, B)``; None computes them.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> terms = objective_terms(q, m_step(q, data, hyper, static), data, hyper, static, 1.0, jnp.zeros(2))
    >>> sorted(terms)
    ['i_cx', 'i_cy', 'i_cy_given_z', 'objective']
    """
    a, b = log_likelihoods(params, data, hyper, static) if loglik is None else loglik
    wq = data.w_x[:, None] * q
    l_cond = jnp.sum(wq * b)
    l_marg = jnp.sum(wq * a)
    p_c = wq.sum(0)
    neg_h_cx = jnp.sum(data.w_x[:, None] * xlogy(q, q))
    # cross-entropy form: sum_i w_i sum_c q log q - sum_c P(c) log Q(c)  (= I(C;X) when Q(c) = P(c))
    i_cx_tilde = neg_h_cx - jnp.sum(p_c * params.log_pi)
    return {
        "objective": l_cond + hyper.lam * l_marg - rho * i_cx_tilde,
        "i_cx": neg_h_cx - jnp.sum(xlogy(p_c, p_c)),
        "i_cy_given_z": l_cond - baseline[0],
        "i_cy": l_marg - baseline[1],
    }


def baseline_loglik(data: CCIBData, hyper: Hyper, static: Static):
    """Expected log-likelihoods (cond, marg) of the one-cluster model: -H(Y|Z), -H(Y) estimates."""
    q1 = jnp.ones((data.y.shape[0], 1), data.y.dtype)
    one = static._replace(n_clusters=1)
    params = m_step(q1, data, hyper, one)
    if static.background == "continuous":
        w = data.w_fit[:, None] * q1
        params = params._replace(cond=_glm_newton(params.cond, w, data, hyper, one, 25))
    a, b = log_likelihoods(params, data, hyper, one)
    return jnp.stack([data.w_x @ b[:, 0], data.w_x @ a[:, 0]])


def inner_trace(q0, rho, data: CCIBData, hyper: Hyper, static: Static, n_iter: int):
    """``n_iter`` alternations at fixed ``rho`` from ``q0``; returns the F~ after each (for ascent tests).

    Element 0 is F~(q0, m_step(q0)); element t is F~ after t (P-step, Q-step) pairs.

    Parameters
    ----------
    q0 : jax.Array of shape (n, k)
        Starting soft assignments.
    rho : float
        Temperature.
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options.
    n_iter : int
        Number of alternations (static).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> fs, q_end = inner_trace(q, 0.5, data, hyper, static, 3)
    >>> fs.shape
    (4,)
    """
    baseline = jnp.zeros(2)
    params = m_step(q0, data, hyper, static)

    def body(carry, _):
        q, params = carry
        q = p_step(params, data, hyper, static, rho)
        params = m_step(q, data, hyper, static, params.cond)
        return (q, params), objective_terms(q, params, data, hyper, static, rho, baseline)["objective"]

    f0 = objective_terms(q0, params, data, hyper, static, rho, baseline)["objective"]
    (q, _), fs = lax.scan(body, (q0, params), None, length=n_iter)
    return jnp.concatenate([f0[None], fs]), q


# ------------------------------------------------------------------------------------------------
# The annealing driver
# ------------------------------------------------------------------------------------------------


class AnnealState(NamedTuple):
    """State carried between temperature steps (:func:`build`).

    Attributes
    ----------
    it : jax.Array of int of shape ()
        Steps taken (search + annealing).
    phase : jax.Array of int of shape ()
        0 while searching rho0, 1 annealing.
    n_doublings : jax.Array of int of shape ()
        Search steps.
    step : jax.Array of int of shape ()
        Recorded (annealing) temperatures.
    rho, rho0 : jax.Array of shape ()
        The current and the start temperature.
    q : jax.Array of shape (n, k)
        Soft assignments.
    params : Params
        The Q-step distributions of ``q``.
    done : jax.Array of bool of shape ()
        A stopping rule fired.
    capped : jax.Array of int of shape ()
        Recorded temperatures whose inner loop hit ``max_inner``.
    terms : dict
        The objective terms at the last temperature (:func:`objective_terms`).
    work : jax.Array of int of shape ()
        Inner alternations run so far (the unit of a chunk of :func:`fit_restarts`).
    mid : jax.Array of bool of shape ()
        A temperature's inner loop was cut by a chunk's end: ``q`` and ``params`` are its current
        iterate and ``inner`` the rest of its carry, and the next step resumes it.
    inner : tuple
        ``(ab, f, n_inner, dq, df)`` of the cut inner loop: the log-likelihoods of ``params``, F~,
        the alternations run at this temperature and the last changes of q and F~.

    Examples
    --------
    >>> AnnealState._fields[:2]
    ('it', 'phase')
    """

    it: jax.Array
    phase: jax.Array
    n_doublings: jax.Array
    step: jax.Array
    rho: jax.Array
    rho0: jax.Array
    q: jax.Array
    params: Params
    done: jax.Array
    capped: jax.Array
    terms: dict
    work: jax.Array
    mid: jax.Array
    inner: tuple


class AnnealInfo(NamedTuple):
    """Per-step diagnostics: ``recorded`` (an annealing temperature, written to the trace at ``index``)
    and ``row``, the trace entries (rho, objective, i_cx, i_cy_given_z, i_cy, k_eff, n_inner).

    Attributes
    ----------
    recorded : jax.Array of bool of shape ()
        The step was an annealing temperature, written to the trace.
    index : jax.Array of int of shape ()
        Its index in the trace.
    row : dict
        The trace entries (rho, objective, i_cx, i_cy_given_z, i_cy, k_eff, n_inner).

    Examples
    --------
    >>> AnnealInfo._fields
    ('recorded', 'index', 'row')
    """

    recorded: jax.Array
    index: jax.Array
    row: dict


class AnnealAlgorithm(NamedTuple):
    """``init() -> AnnealState`` and ``step(key, state) -> (AnnealState, AnnealInfo)`` (BlackJAX's shape);
    ``key`` is the step's own key (its symmetry-breaking perturbation). ``step(key, state, stop)`` with a
    traced ``stop`` ends the inner loop when ``state.work`` reaches it, leaving the temperature unfinished
    (``mid``) for the next step to resume.

    Attributes
    ----------
    init : callable
        ``init() -> AnnealState``.
    step : callable
        ``step(key, state, stop=None) -> (AnnealState, AnnealInfo)``.

    Examples
    --------
    >>> AnnealAlgorithm._fields
    ('init', 'step')
    """

    init: object
    step: object


_TRACE = ("rho", "objective", "i_cx", "i_cy_given_z", "i_cy", "k_eff", "n_inner")


def build(data: CCIBData, hyper: Hyper, static: Static) -> AnnealAlgorithm:
    """One temperature step of the annealing (module docstring) with the data and options closed over:
    perturb, converge the inner (P-step, Q-step) loop at the current rho, record, lower rho (or, in the
    rho0 search, double it).

    Parameters
    ----------
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> alg = build(data, hyper, static)
    >>> state, info = alg.step(jax.random.key(0), alg.init())
    >>> state.q.shape
    (6, 2)
    """
    n, k = data.y.shape[0], static.n_clusters
    dtype = data.y.dtype
    baseline = baseline_loglik(data, hyper, static)
    uniform = jnp.where(data.clamp[:, None], data.clamp_q, jnp.full((n, k), 1.0 / k, dtype))
    params_u = m_step(uniform, data, hyper, static)

    def begin(key, s):
        """A temperature's inner carry: the perturbed start, its Q-step, likelihoods and F~."""
        q = perturb(key, jnp.where(s.phase == 0, uniform, s.q))
        params = m_step(q, data, hyper, static, s.params.cond)
        ab = log_likelihoods(params, data, hyper, static)
        f = objective_terms(q, params, data, hyper, static, s.rho, baseline, ab)["objective"]
        inf = jnp.asarray(jnp.inf, dtype)
        return (q, params, ab, f, jnp.int32(0), inf, inf)

    def moving(c):
        """The inner loop's own test: q and F~ still move and ``max_inner`` is not used up."""
        return (c[4] < static.max_inner) & (c[5] >= hyper.tol) & (c[6] >= hyper.ftol)

    def converge(c, rho, work, stop):
        """Inner loop at fixed rho: (P-step, Q-step) until q or F~ stop moving (or ``work`` reaches
        ``stop``).  One likelihood evaluation per iteration: (A, B) of the current Q serve both the P-step
        and F~."""

        def cond(t):
            return moving(t[0]) if stop is None else moving(t[0]) & (t[1] < stop)

        def body(t):
            (q, params, ab, f, it, _, _), w = t
            q_new = jnp.exp(log_assignment(params, ab[0], ab[1], rho, hyper.lam))
            q_new = jnp.where(data.clamp[:, None], data.clamp_q, q_new)
            params = m_step(q_new, data, hyper, static, params.cond)
            ab = log_likelihoods(params, data, hyper, static)
            f_new = objective_terms(q_new, params, data, hyper, static, rho, baseline, ab)["objective"]
            dq = jnp.max(jnp.abs(q_new - q))
            df = jnp.abs(f_new - f) / jnp.maximum(jnp.abs(f_new), 1e-300)
            return (q_new, params, ab, f_new, it + 1, dq, df), w + 1

        return lax.while_loop(cond, body, (c, work))

    def perturb(key, q):
        u = jax.random.uniform(key, q.shape, dtype, -1.0, 1.0)
        qp = q * (1.0 + hyper.eps * u)
        qp = qp / qp.sum(1, keepdims=True)
        return jnp.where(data.clamp[:, None], data.clamp_q, qp)

    def i_cx_free(q):
        """I(C;X) over the unclamped objects (with the global P(c)): clamps do not count as structure."""
        p_c = q.T @ data.w_x
        w = jnp.where(data.clamp, 0.0, data.w_x)
        return jnp.sum(w[:, None] * (xlogy(q, q) - q * jnp.log(jnp.maximum(p_c, _TINY))[None, :]))

    def init() -> AnnealState:
        auto = hyper.rho0 <= 0
        zero = jnp.asarray(0.0, dtype)
        rho_start = jnp.where(auto, 1.0, hyper.rho0).astype(dtype)
        ab_u = log_likelihoods(params_u, data, hyper, static)
        return AnnealState(
            jnp.int32(0),
            jnp.where(auto, 0, 1).astype(jnp.int32),
            jnp.int32(0),
            jnp.int32(0),
            rho_start,
            rho_start,
            uniform,
            params_u,
            jnp.asarray(False),
            jnp.int32(0),
            {"objective": zero, "i_cx": zero, "i_cy_given_z": zero, "i_cy": zero},
            jnp.int32(0),
            jnp.asarray(False),
            (ab_u, zero, jnp.int32(0), zero, zero),
        )

    def step(key, s: AnnealState, stop=None) -> tuple[AnnealState, AnnealInfo]:
        search = s.phase == 0
        rho = s.rho
        c = lax.cond(s.mid, lambda: (s.q, s.params, *s.inner), lambda: begin(key, s))
        c, work = converge(c, rho, s.work, stop)
        q, params, ab, _, n_inner, _, _ = c
        finished = ~moving(c)  # else cut by ``stop``: resumed by the next step
        terms = objective_terms(q, params, data, hyper, static, rho, baseline, ab)
        found = finished & search & ((i_cx_free(q) <= _ICX_START) | (s.n_doublings >= static.max_doublings))
        record = finished & (~search | found)
        rho0 = jnp.where(found, rho, s.rho0)
        idx = s.step
        keff = _k_eff(params, q, data, static)
        row = dict(terms, rho=rho, k_eff=keff.astype(dtype), n_inner=n_inner.astype(dtype))
        hard = jnp.min(jnp.where(data.clamp, 1.0, q.max(1))) > 1.0 - _HARD
        done = record & (
            hard
            | (rho * hyper.rate < hyper.rho_min_ratio * rho0)
            | (terms["i_cx"] >= hyper.c_max - 1e-3)
            | (idx + 1 >= static.max_iter)
        )
        new_rho = jnp.where(search & ~found, 2.0 * rho, jnp.where(done, rho, rho * hyper.rate))
        new = AnnealState(
            s.it + finished.astype(jnp.int32),
            jnp.where(finished, jnp.where(record, 1, 0), s.phase).astype(jnp.int32),
            s.n_doublings + (finished & search).astype(jnp.int32),
            idx + record.astype(jnp.int32),
            jnp.where(finished, new_rho, rho),
            rho0,
            q,
            params,
            done,
            s.capped + (record & (n_inner >= static.max_inner)).astype(jnp.int32),
            jax.tree_util.tree_map(lambda a, b: jnp.where(finished, a, b), terms, s.terms),
            work,
            ~finished,
            tuple(c[2:]),
        )
        return new, AnnealInfo(record, idx, {m: row[m] for m in _TRACE})

    return AnnealAlgorithm(init, step)


@partial(jax.jit, static_argnames=("static",))
def fit(key, data: CCIBData, hyper: Hyper, static: Static) -> Result:
    """One annealing run (vmap it over keys for restarts).  See the module docstring.

    A single ``lax.while_loop`` over :func:`build`'s ``step`` runs both phases: the search for rho0 (phase
    0: converge the perturbed uniform solution at rho = 1, 2, 4, ... until I(C;X) <= 1e-4 nats; that
    temperature becomes the first annealing step) and the annealing itself (phase 1: perturb, converge,
    record, rho <- b rho). Step ``t`` gets the key ``fold_in(key, t)``.

    Parameters
    ----------
    key : jax.random key
        PRNG key; step ``t`` uses ``fold_in(key, t)``.
    data : CCIBData
        The objects.
    hyper : Hyper
        Real-valued options.
    static : Static
        Shape-setting options (static under jit).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> hyper, static = Hyper(), Static(n_clusters=2, feature="gaussian")
    >>> q = jnp.asarray([[0.9, 0.1]] * 3 + [[0.1, 0.9]] * 3)
    >>> res = fit(jax.random.key(0), data, hyper, static._replace(max_iter=50))
    >>> bool(res.labels[0] != res.labels[5])
    True
    """
    alg = build(data, hyper, static)
    s, trace = lax.while_loop(lambda c: ~c[0].done, partial(_body, alg, key), _start(data, static, alg))
    return _result(s, trace, data, static)


def _start(data, static, alg):
    """The annealing's first carry: the initial state and an empty trace."""
    return alg.init(), {m: jnp.full(static.max_iter, jnp.nan, data.y.dtype) for m in _TRACE}


def _body(alg, key, c, stop=None):
    """One annealing step of the ``while_loop``: step ``s.it`` with the key ``fold_in(key, s.it)``, its
    inner loop cut where ``s.work`` reaches ``stop`` (None: never)."""
    s, trace = c
    new, info = alg.step(jax.random.fold_in(key, s.it), s, stop)
    trace = {m: jnp.where(info.recorded, trace[m].at[info.index].set(info.row[m]), trace[m]) for m in _TRACE}
    return new, trace


def _result(s, trace, data, static):
    """The :class:`Result` of a finished annealing carry."""
    q, params, terms = s.q, s.params, s.terms
    labels = jnp.argmax(q, axis=1).astype(jnp.int32)
    return Result(
        q=q,
        labels=labels,
        params=params,
        rho=s.rho,
        rho0=s.rho0,
        objective=terms["objective"],
        i_cx=terms["i_cx"],
        i_cy_given_z=terms["i_cy_given_z"],
        i_cy=terms["i_cy"],
        k_eff=_k_eff(params, q, data, static),
        n_dead=jnp.sum(jnp.exp(params.log_pi) < _DEAD),
        n_steps=s.step,
        inner_capped=s.capped,
        trace=trace,
    )


@partial(jax.jit, static_argnames=("static",))
def _starts(keys, data, hyper, static):
    return jax.vmap(lambda _: _start(data, static, build(data, hyper, static)))(keys)


@partial(jax.jit, static_argnames=("static",))
def _advance(keys, carry, stop, data, hyper, static):
    """The restarts' carries after their inner alternations below ``stop`` (a traced bound: one program
    for any), a temperature cut there left ``mid`` for the next call to resume."""
    alg = build(data, hyper, static)

    def one(key, c):
        return lax.while_loop(
            lambda c: ~c[0].done & (c[0].work < stop), partial(_body, alg, key, stop=stop), c
        )

    return jax.vmap(one)(keys, carry)


@partial(jax.jit, static_argnames=("static",))
def _results(carry, data, static):
    return jax.vmap(lambda c: _result(*c, data, static))(carry)


#: seconds of work (the process's CPU time) per compiled call of :func:`fit_restarts`, between which a stop
#: request is honoured; CPU time, not wall time, so that waiting for a busy machine's cores does not
#: shrink the calls until their fixed cost dominates
CHUNK_S = 0.25

#: restarts per compiled call of :func:`fit_restarts` (the width its programs are vmapped to, whatever the
#: number of restarts); on a CPU one restart per call: a wider batch runs no faster per restart
#: (``docs/decisions/0059-ccib-restarts-in-fixed-width-batches.md``)
BATCH = 1


def restart_keys(key, n_restarts: int):
    """``jax.random.split(key, n_restarts)``, split at a bucketed count (with partitionable threefry keys
    the first ``n_restarts`` keys are the same) so that splitting compiles once per bucket of
    ``n_restarts``, not once per count.

    Parameters
    ----------
    key : jax.random key
        The fit's key.
    n_restarts : int
        Number of restarts, ``>= 1``.

    Returns
    -------
    jax.Array of keys of shape (n_restarts,)
        Restart ``i``'s key at ``i``, for :func:`fit_restarts`.

    Examples
    --------
    >>> import jax, numpy as np
    >>> keys = restart_keys(jax.random.key(0), 3)
    >>> ref = jax.random.split(jax.random.key(0), 3)
    >>> bool(np.array_equal(jax.random.key_data(keys), jax.random.key_data(ref)))
    True
    """
    n = int(n_restarts)
    raw = np.asarray(jax.random.key_data(jax.random.split(key, split_count(n))))
    return jax.random.wrap_key_data(raw[:n], impl=jax.random.key_impl(key))


def fit_restarts(keys, data: CCIBData, hyper: Hyper, static: Static, *, chunk=None, progress=None) -> Result:
    """:func:`fit` vmapped over ``keys`` (one restart per key) in batches of ``BATCH`` restarts (the last
    batch filled up with copies of its last key, whose results are dropped), so that the compiled programs
    do not depend on the number of restarts and restart ``i``'s result on its key alone. Each batch is
    driven from Python in chunks of inner (P-step, Q-step) alternations, a temperature's inner loop cut
    and resumed across chunks, so that a stop request (:func:`ppclust._progress.check`) is honoured
    between chunks. A batch's result is vmapped :func:`fit`'s on the same keys, bit for bit, for any
    chunking.

    Parameters
    ----------
    keys : jax.Array of keys of shape (r,)
        One key per restart (see :func:`restart_keys`).
    data, hyper, static :
        As for :func:`fit`.
    chunk : int or None, default=None
        Inner alternations per compiled call; None adapts it so that a call does about ``CHUNK_S``
        seconds of work (CPU time).
    progress : callable or None, default=None
        Called with the number of restarts finished after each batch.

    Returns
    -------
    Result
        Batched over the restarts (numpy arrays).

    Raises
    ------
    KeyboardInterrupt
        On SIGINT during a fit (:func:`ppclust._progress.interruptible`).

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> y = jnp.asarray([[0.0], [0.2], [0.1], [5.0], [5.2], [5.1]])
    >>> data = CCIBData(y=y, z=jnp.zeros(6, jnp.int32), design=jnp.ones((6, 1)), w_x=jnp.full(6, 1 / 6),
    ...                 w_fit=jnp.ones(6), clamp=jnp.zeros(6, bool), clamp_q=jnp.zeros((6, 2)),
    ...                 cond_mask=jnp.ones(1))
    >>> static = Static(n_clusters=2, feature="gaussian", max_iter=50)
    >>> res = fit_restarts(jax.random.split(jax.random.key(0), 2), data, Hyper(), static, chunk=7)
    >>> res.labels.shape
    (2, 6)
    """
    raw, impl = np.asarray(jax.random.key_data(keys)), jax.random.key_impl(keys)
    r = raw.shape[0]
    width = int(BATCH)
    size = 1 if chunk is None else int(chunk)
    parts = []
    for first in range(0, r, width):
        rows = np.minimum(np.arange(first, first + width), r - 1)
        batch = jax.random.wrap_key_data(raw[rows], impl=impl)
        res, size = _fit_batch(batch, data, hyper, static, size, chunk is None)
        parts.append(jax.tree_util.tree_map(np.asarray, res))
        if progress is not None:
            progress(min(width, r - first))
    return jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:r], *parts)


def _fit_batch(keys, data, hyper, static, size, adapt):
    """One batch of restarts in chunks of ``size`` inner alternations (adapted to ``CHUNK_S`` if
    ``adapt``); returns its :class:`Result` and the chunk size reached, for the next batch to start from."""
    carry = _starts(keys, data, hyper, static)
    done = 0
    while True:
        t0 = time.process_time()
        carry = _progress.run(_advance, keys, carry, jnp.int32(done + size), data, hyper, static)
        done += size
        if bool(np.all(np.asarray(carry[0].done))):
            return _results(carry, data, static), size
        if adapt:
            size = max(1, min(2 * size, int(size * CHUNK_S / max(time.process_time() - t0, 1e-6))))


# --- helpers -------------------------------------------------------------------------------------


def _multinomial_log_theta(s, alpha):
    """log of the smoothed multinomial estimate (s + alpha) / (sum_j s + J alpha), rows of ``s``:
    the Dirichlet posterior mean of :class:`ppclust.families.Multinomial` with symmetric ``alpha``."""
    return Multinomial(jnp.full(s.shape[-1], alpha, s.dtype)).log_posterior_mean(s)


def _table_params(feature, s, nw, data, hyper):
    """Weighted-ML tables from sums ``s`` (M, D) and masses ``nw`` (M,)."""
    alpha = hyper.smoothing
    if feature == "multinomial":
        return _multinomial_log_theta(s, alpha)
    if feature == "bernoulli":
        return (s + alpha) / (nw[:, None] + 2 * alpha)
    if feature == "gaussian":
        mean = data.w_fit @ data.y / jnp.sum(data.w_fit)  # empty cells fall back to the global mean
        return (s + alpha * mean[None, :]) / (nw[:, None] + alpha)
    if feature == "poisson":
        return (s + alpha) / (nw[:, None] + alpha)
    raise ValueError(f"unknown feature model {feature!r}")


def _table_loglik(feature, y, params, mask, hyper):
    """(n, M) expected log-likelihood of each object's features under each table row (masked features)."""
    if feature == "multinomial":
        return (y * mask) @ params.T
    if feature == "bernoulli":
        return (y * mask) @ jnp.log(params).T + ((1.0 - y) * mask) @ jnp.log1p(-params).T
    if feature == "gaussian":
        s2 = hyper.variance
        sq = ((y * y) @ mask)[:, None] - 2.0 * (y * mask) @ params.T + ((params * params) @ mask)[None, :]
        return isotropic_gaussian_loglik(sq, s2, jnp.sum(mask))
    if feature == "poisson":
        return (y * mask) @ jnp.log(params).T - (params @ mask)[None, :]
    raise ValueError(f"unknown feature model {feature!r}")


def _glm_kind(feature):
    return {"gaussian": "gaussian", "bernoulli": "bernoulli", "poisson": "poisson", "multinomial": "poisson"}[
        feature
    ]


def _glm_init(w, data, static):
    """Intercept = link(weighted mean), slopes 0, for every (cluster, feature)."""
    mean = (w.T @ data.y + 1e-10) / (w.sum(0)[:, None] + 2e-10)  # (k, D)
    kind = _glm_kind(static.feature)
    if kind == "bernoulli":
        mean = jnp.clip(mean, 1e-6, 1 - 1e-6)
        icpt = jnp.log(mean) - jnp.log1p(-mean)
    elif kind == "poisson":
        icpt = jnp.log(jnp.maximum(mean, 1e-10))
    else:
        icpt = mean
    a = data.design.shape[1]
    return jnp.concatenate([icpt[:, :, None], jnp.zeros(icpt.shape + (a - 1,), icpt.dtype)], axis=2)


def _glm_elem(kind, y, eta):
    """Per-element log-likelihood (unit dispersion), mean and variance function for the canonical link."""
    if kind == "gaussian":
        return -0.5 * (y - eta) ** 2, eta, jnp.ones_like(eta)
    if kind == "bernoulli":
        mu = jax.nn.sigmoid(eta)
        return y * eta - jax.nn.softplus(eta), mu, mu * (1 - mu)
    mu = jnp.exp(eta)
    return y * eta - mu, mu, mu


def _glm_loglik(theta, data, hyper, static):
    """B_ic = sum_d mask_d log P(y_id | c, z_i; theta_cd)  ->  (n, k)."""
    kind = _glm_kind(static.feature)
    eta = jnp.einsum("ia,kda->ikd", data.design, theta)
    ll, _, _ = _glm_elem(kind, data.y[:, None, :], eta)
    if kind == "gaussian":  # unit-dispersion -> N(y; eta, s^2)
        ll = isotropic_gaussian_loglik(-2.0 * ll, hyper.variance, 1)  # ll = -(y - eta)^2 / 2
    return jnp.einsum("ikd,d->ik", ll, data.cond_mask)


def _glm_newton(theta, w, data, hyper, static, n_steps):
    """``n_steps`` guarded Newton steps of the ridge-penalised weighted GLM, all (cluster, feature) at once.

    Penalty: 0.5 * ridge * (sum_i w_ic) * ||slopes||^2.  A step that lowers the penalised log-likelihood
    of a (cluster, feature) is rejected for it (spec E8).
    """
    kind = _glm_kind(static.feature)
    x = data.design
    a = x.shape[1]
    pen = hyper.ridge * w.sum(0)  # (k,)
    pmask = jnp.concatenate([jnp.zeros(1, x.dtype), jnp.ones(a - 1, x.dtype)])
    xx = (x[:, :, None] * x[:, None, :]).reshape(x.shape[0], a * a)

    def penalised(th):
        eta = jnp.einsum("ia,kda->ikd", x, th)
        ll, mu, v = _glm_elem(kind, data.y[:, None, :], eta)
        obj = jnp.einsum("ik,ikd->kd", w, ll) - 0.5 * pen[:, None] * jnp.sum(pmask * th * th, -1)
        return obj, mu, v

    def step(th, _):
        obj, mu, v = penalised(th)
        kk, dd = th.shape[:2]
        grad = jnp.einsum("ik,ikd,ia->kda", w, data.y[:, None, :] - mu, x) - pen[:, None, None] * pmask * th
        hess = ((w[:, :, None] * v).reshape(-1, kk * dd).T @ xx).reshape(kk, dd, a, a)
        hess = hess + (pen[:, None, None, None] * jnp.diag(pmask) + 1e-10 * jnp.eye(a))
        new = th + jnp.linalg.solve(hess, grad[..., None])[..., 0]
        obj_new, _, _ = penalised(new)
        ok = jnp.isfinite(obj_new) & (obj_new >= obj)
        return jnp.where(ok[..., None], new, th), None

    theta, _ = lax.scan(step, theta, None, length=n_steps)
    return theta


def _k_eff(params: Params, q, data: CCIBData, static: Static):
    """Effective number of clusters: components of the graph linking clusters with d(c, c') < tau."""
    k = static.n_clusters
    if static.feature == "multinomial" and static.background != "continuous":
        d = _js_rows(params.marg)
        p_z = jax.nn.one_hot(data.z, params.cond.shape[1], dtype=q.dtype).T @ data.w_x  # (G,)
        d = d + jnp.einsum("g,gcd->cd", p_z, jax.vmap(_js_rows, in_axes=1)(params.cond))
    else:

        def msd(m):  # (k, ...) -> (k, k) mean squared difference
            m = m.reshape(k, -1)
            return jnp.mean((m[:, None, :] - m[None, :, :]) ** 2, axis=-1)

        d = msd(params.marg) + msd(params.cond)
    adj = (d < _SPLIT_TAU) | jnp.eye(k, dtype=bool)
    for _ in range(max(1, (k - 1).bit_length())):  # transitive closure by repeated squaring
        adj = (adj.astype(jnp.int32) @ adj.astype(jnp.int32)) > 0
    earlier = jnp.tril(adj, -1).any(axis=1)  # c is linked to some c' < c
    return jnp.sum(~earlier)


def _js_rows(log_theta):
    """(k, k) Jensen-Shannon divergences between the rows of a table of log-probabilities."""
    p = jnp.exp(log_theta)
    m = 0.5 * (p[:, None, :] + p[None, :, :])
    log_m = jnp.log(jnp.maximum(m, _TINY))
    kl_pm = jnp.sum(xlogy(p[:, None, :], p[:, None, :]) - p[:, None, :] * log_m, axis=-1)
    kl_qm = jnp.sum(xlogy(p[None, :, :], p[None, :, :]) - p[None, :, :] * log_m, axis=-1)
    return 0.5 * (kl_pm + kl_qm)
