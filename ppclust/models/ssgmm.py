r"""Semi-supervised Gaussian mixture: generative model with partial (optionally noisy) labels.

Generative story (``K`` components, ``C`` classes, class map ``g: {0..K-1} -> {-1, 0..C-1}``):

.. math::

    \pi \sim \mathrm{Dir}(\alpha),\quad (\mu_k, \Sigma_k) \sim p(\mu, \Sigma),\quad
    z_i \sim \mathrm{Cat}(\pi),\quad x_i \mid z_i \sim \mathcal{N}(\mu_{z_i}, \Sigma_{z_i}),

    \text{and, for a labelled point,}\quad
    p(y_i = c \mid z_i = k) = \begin{cases} 1 - \varepsilon & g(k) = c \\
        \varepsilon / (C - 1) & \text{otherwise.} \end{cases}

With ``eps = 0`` a labelled point can only come from its class's components (Rmixmod ``knownLabels`` /
mclust ``MclustSSC``; CEC-IB spec section 4.1); several components may share a class, and a component with
``g(k) = -1`` ("free") takes no labelled point. ``eps > 0`` is the label-noise model: a wrong label costs
``log(eps / (C - 1))`` instead of forcing the fit.

The assignments are marginalised (``logsumexp`` factor; ``funsor`` enumeration is not available), so the
model runs under NUTS; the per-point term is exactly :func:`ppclust.inference.em.e_step`'s
(:func:`ppclust.families.log_gaussian_prob`).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from jax.scipy.special import gammaln, logsumexp

from ppclust.families import log_gaussian_prob

__all__ = [
    "LabelTerm",
    "default_component_classes",
    "label_allowed",
    "label_log_mask",
    "label_term",
    "label_noise_update",
    "partition_flip_rate",
    "ssgmm_model",
    "ssgmm_log_likelihood",
    "ssgmm_log_joint",
]


def default_component_classes(n_components: int, n_classes: int) -> np.ndarray:
    r"""Class of each component: component ``k`` -> class ``k mod C`` (so ``k = c`` for the first C).

    Parameters
    ----------
    n_components : int
        Number of components ``K``.
    n_classes : int
        Number of classes ``C``; 0: every component free (-1).

    Returns
    -------
    ndarray of shape (K,), int32

    Examples
    --------
    >>> default_component_classes(5, 2).tolist()
    [0, 1, 0, 1, 0]
    """
    if n_classes == 0:
        return np.full(n_components, -1, np.int32)
    return (np.arange(n_components) % n_classes).astype(np.int32)


class LabelTerm(NamedTuple):
    r"""The label term :math:`\log p(y_i \mid z_i = k)` in O(n + C K) memory: row ``codes[i]`` of ``table``.

    Parameters
    ----------
    codes : int32 array of shape (n,)
        Class index ``0..C-1`` of each point, ``C`` for unlabelled (and bucket padding) rows.
    table : array of shape (C + 1, K)
        Row c: the term of a point labelled c (:func:`label_log_mask`'s rows); row C: zeros.

    Examples
    --------
    >>> import numpy as np
    >>> term = label_term(np.array([0, -1]), np.array([0, 1]), 2, 0.1)
    >>> term.codes.tolist(), np.round(term.table[term.codes], 3).tolist()
    ([0, 2], [[-0.105, -2.303], [0.0, 0.0]])
    """

    codes: np.ndarray
    table: np.ndarray

    def rows(self):
        """The (n, K) term (``table[codes]``; inside a jitted function a gather that XLA fuses into its use).

        Examples
        --------
        >>> import numpy as np
        >>> label_term(np.array([1]), np.array([0, 1]), 2).rows().tolist()
        [[-inf, 0.0]]
        """
        return self.table[self.codes]


def label_term(y_codes, component_classes, n_classes, eps=0.0) -> LabelTerm:
    r""":func:`label_log_mask`'s term as a :class:`LabelTerm` (a table row per class), host NumPy.

    Parameters
    ----------
    y_codes, component_classes, n_classes, eps :
        As :func:`label_log_mask`.

    Returns
    -------
    LabelTerm

    Examples
    --------
    >>> import numpy as np
    >>> label_term(np.array([0, -1, 1]), np.array([0, 1]), 2).codes.tolist()
    [0, 2, 1]
    """
    y_codes = np.asarray(y_codes)
    g = np.asarray(component_classes)
    with np.errstate(divide="ignore"):
        other = np.log(eps / max(n_classes - 1, 1)) if eps > 0 else -np.inf
        keep = np.log1p(-eps)
    table = np.zeros((n_classes + 1, g.shape[0]))
    table[:n_classes] = np.where(g[None, :] == np.arange(n_classes)[:, None], keep, other)
    codes = np.where(y_codes >= 0, y_codes, n_classes).astype(np.int32)
    return LabelTerm(codes, table)


def label_log_mask(y_codes, component_classes, n_classes, eps=0.0):
    r"""The label term :math:`\log p(y_i \mid z_i = k)` of every point and component, and the hard mask.

    A labelled point of class ``c`` gets :math:`\log(1-\varepsilon)` for the components of class ``c``
    and :math:`\log(\varepsilon/(C-1))` for the others (``-inf`` when ``eps = 0``); an unlabelled point
    a row of zeros. Host NumPy.

    Parameters
    ----------
    y_codes : int array of shape (n,)
        Class index ``0..C-1`` of each point, ``-1`` for unlabelled.
    component_classes : int array of shape (K,)
        Class of each component (-1: free).
    n_classes : int
        Number of classes ``C``.
    eps : float, default=0.0
        Label-flip rate in [0, 1).

    Returns
    -------
    log_mask : ndarray of shape (n, K)
    allowed : bool ndarray of shape (n, K)
        The components of the point's own class (all for unlabelled points).

    Examples
    --------
    >>> import numpy as np
    >>> lm, allowed = label_log_mask(np.array([0, -1]), np.array([0, 1]), 2, 0.1)
    >>> np.round(lm, 3).tolist(), allowed.tolist()
    ([[-0.105, -2.303], [0.0, 0.0]], [[True, False], [True, True]])
    """
    term = label_term(y_codes, component_classes, n_classes, eps)
    return term.rows(), label_allowed(y_codes, component_classes)


def label_allowed(y_codes, component_classes) -> np.ndarray:
    """The components a point may belong to under a hard label: those of its class (all when unlabelled).

    Parameters
    ----------
    y_codes, component_classes :
        As :func:`label_log_mask`.

    Returns
    -------
    bool ndarray of shape (n, K)

    Examples
    --------
    >>> import numpy as np
    >>> label_allowed(np.array([0, -1]), np.array([0, 1])).tolist()
    [[True, False], [True, True]]
    """
    y_codes = np.asarray(y_codes)
    g = np.asarray(component_classes)
    return np.where((y_codes >= 0)[:, None], g[None, :] == y_codes[:, None], True)


def ssgmm_log_likelihood(x, weights, means, prec_chol, log_mask=None, cov_type="full"):
    r"""Marginal log-likelihood of the semi-supervised mixture, assignments summed out.

    .. math:: \sum_i \log \sum_k p(y_i \mid k)\,\pi_k\,\mathcal N(x_i; \mu_k, \Sigma_k)

    Parameters
    ----------
    x : array of shape (n, d)
        The data.
    weights : array of shape (K,)
        Mixture weights.
    means : array of shape (K, d)
        Component means.
    prec_chol : array
        Cholesky factors of the precisions (scikit-learn's layout for ``cov_type``).
    log_mask : array of shape (n, K) or None, default=None
        Label term (:func:`label_log_mask`); None: no labels.
    cov_type : {"full", "tied", "diag", "spherical"}, default="full"
        Covariance type.

    Returns
    -------
    float array of shape ()

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> ll = ssgmm_log_likelihood(jnp.zeros((1, 1)), jnp.ones(1), jnp.zeros((1, 1)), jnp.ones(1),
    ...                           cov_type="spherical")
    >>> round(float(ll), 4)  # log N(0; 0, 1)
    -0.9189
    """
    lp = log_gaussian_prob(x, means, prec_chol, cov_type) + jnp.log(weights)[None]
    if log_mask is not None:
        lp = lp + log_mask
    return jnp.sum(logsumexp(lp, axis=1))


def ssgmm_model(x, log_mask=None, *, n_components, cov_type="full", alpha=1.0, prior_scale=None):
    r"""NumPyro model of the semi-supervised mixture with the assignments summed out.

    Sites ``weights``, ``means`` and scale sites; the likelihood is ``numpyro.factor("obs", ...)`` with
    :func:`ssgmm_log_likelihood`. Priors (weakly informative, for NUTS checks): ``weights ~ Dir(alpha)``,
    ``means ~ N(mean(x), 10 sd)``; full: ``Sigma_k = diag(s_k) L_k L_k^T diag(s_k)`` with
    ``L_k ~ LKJCholesky(d, 2)``, ``s_k ~ HalfNormal(prior_scale)``; diag: per-dimension sds
    ``HalfNormal``; spherical: one sd each; tied: one LKJ/HalfNormal pair.

    Parameters
    ----------
    x : array of shape (n, d)
        The data.
    log_mask : array of shape (n, K) or None, default=None
        Label term (:func:`label_log_mask`).
    n_components : int
        Number of components ``K``.
    cov_type : {"full", "tied", "diag", "spherical"}, default="full"
        Covariance type.
    alpha : float, default=1.0
        Dirichlet concentration of the weights.
    prior_scale : float, array or None, default=None
        Scale of the HalfNormal priors on the sds; None: 2 x the data's sd.

    Examples
    --------
    >>> import jax, jax.numpy as jnp
    >>> from numpyro.handlers import seed, trace
    >>> tr = trace(seed(ssgmm_model, 0)).get_trace(jnp.zeros((3, 2)), n_components=2, cov_type="diag")
    >>> tr["means"]["value"].shape
    (2, 2)
    """
    x = jnp.asarray(x)
    n, d = x.shape
    k = n_components
    centre = jnp.mean(x, 0)
    sd = jnp.std(x, 0) + 1e-12
    scale = 2.0 * sd if prior_scale is None else jnp.broadcast_to(jnp.asarray(prior_scale), (d,))
    weights = numpyro.sample("weights", dist.Dirichlet(jnp.full((k,), alpha)))
    means = numpyro.sample("means", dist.Normal(centre, 10.0 * sd).expand((k, d)).to_event(2))
    if cov_type in ("full", "tied"):
        m = k if cov_type == "full" else 1
        corr = numpyro.sample("corr_chol", dist.LKJCholesky(d, 2.0).expand((m,)).to_event(1))
        sds = numpyro.sample("sds", dist.HalfNormal(scale).expand((m, d)).to_event(2))
        cov_chol = sds[:, :, None] * corr  # lower Cholesky of Sigma
        eye = jnp.broadcast_to(jnp.eye(d, dtype=x.dtype), cov_chol.shape)
        prec_chol = jnp.swapaxes(jnp.linalg.solve(cov_chol, eye), -1, -2)
        if cov_type == "tied":
            prec_chol = prec_chol[0]
    elif cov_type == "diag":
        sds = numpyro.sample("sds", dist.HalfNormal(scale).expand((k, d)).to_event(2))
        prec_chol = 1.0 / sds
    else:
        sds = numpyro.sample("sds", dist.HalfNormal(jnp.mean(scale)).expand((k,)).to_event(1))
        prec_chol = 1.0 / sds
    numpyro.factor("obs", ssgmm_log_likelihood(x, weights, means, prec_chol, log_mask, cov_type))


def ssgmm_log_joint(x, labels, family, weight_concentration, log_mask=None):
    r"""Collapsed log joint :math:`\log p(z, x, y)` of component assignments ``labels`` (weights and
    component parameters integrated out).

    .. math::

        \log p(z, x, y) = \sum_k \log p(x_{z=k}) + \log\Gamma(Ka) - \log\Gamma(Ka + n)
            + \sum_k [\log\Gamma(n_k + a) - \log\Gamma(a)] + \sum_i \log p(y_i \mid z_i),

    with :math:`a` = ``weight_concentration`` (symmetric Dirichlet on the ``K`` weights), ``family`` a
    conjugate family of :mod:`ppclust.families` (its ``log_marginal``) and ``log_mask`` the label term of
    :func:`label_log_mask` (None: no labels). It is the log joint that
    :func:`ppclust.inference.gibbs.sample` reports per draw for this model (``partition="finite"``).

    Parameters
    ----------
    x : array of shape (n, d)
        The data (centred as the sampler saw them).
    labels : int array of shape (n,)
        Component of each point, in ``[0, K)``, ``K = log_mask.shape[1]`` or ``labels.max() + 1``.
    family : conjugate family
        Its ``stats`` and ``log_marginal`` give the per-component marginal likelihoods.
    weight_concentration : float
        Dirichlet concentration ``a > 0`` of each weight.
    log_mask : array of shape (n, K) or None, default=None
        :math:`\log p(y_i \mid z_i = k)`.

    Returns
    -------
    float array of shape ()

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> fam = GaussianNIW(jnp.zeros(1), jnp.asarray(1.0), jnp.asarray(3.0), jnp.eye(1))
    >>> x = jnp.asarray([[0.0], [0.1], [5.0]])
    >>> bool(ssgmm_log_joint(x, jnp.asarray([0, 0, 1]), fam, 1.0, jnp.zeros((3, 2)))
    ...      > ssgmm_log_joint(x, jnp.asarray([0, 1, 1]), fam, 1.0, jnp.zeros((3, 2))))
    True
    """
    labels = jnp.asarray(labels, jnp.int32)
    k = int(log_mask.shape[1]) if log_mask is not None else int(labels.max()) + 1
    stats = family.stats(x, labels, k)
    a = jnp.asarray(weight_concentration, x.dtype)
    sizes = stats.n
    lj = family.log_marginal(stats).sum() + gammaln(k * a) - gammaln(k * a + sizes.sum())
    lj = lj + (gammaln(sizes + a) - gammaln(a)).sum()
    if log_mask is not None:
        lj = lj + jnp.take_along_axis(log_mask, labels[:, None], axis=1).sum()
    return lj


def label_noise_update(resp, y_codes, component_classes, n_classes, reduce=None) -> float:
    r"""The EM update (M-step) of the label-flip rate :math:`\varepsilon` of the label model.

    A labelled point shows its component's class with probability :math:`1-\varepsilon`, else one of the
    other ``C - 1`` classes uniformly (the model of this module). The update is the expected share of
    labelled points ``L`` whose component is not of their observed class,

    .. math::

        \hat\varepsilon = \frac{1}{|L|} \sum_{i \in L} \sum_{k:\, g(k) \ne y_i} r_{ik},

    the maximiser over :math:`\varepsilon` of the expected complete log-likelihood
    :math:`\sum_{i\in L}[(1 - w_i)\log(1-\varepsilon) + w_i \log(\varepsilon / (C-1))]`, :math:`w_i` the
    mass off the observed class. Host NumPy.

    Parameters
    ----------
    resp : array of shape (n, K)
        Responsibilities :math:`r_{ik}`.
    y_codes : int array of shape (n,)
        Class index of each point in ``0..C-1``, ``-1`` for unlabelled (not counted).
    component_classes : int array of shape (K,)
        Class :math:`g(k)` of each component (``-1``: free, off every class).
    n_classes : int
        Number of classes ``C``.
    reduce : callable or None, default=None
        Sums ``[mass off the class, labelled count]`` over the parts of a data set held apart (rows spread
        over processes: :func:`ppclust._devices.process_sum`); None: these rows are the whole data set.

    Returns
    -------
    float
        :math:`\hat\varepsilon`, clipped to :math:`[0, (C-1)/C]` (at :math:`(C-1)/C` a label says
        nothing); 0 without labelled points or with fewer than two classes.

    Examples
    --------
    >>> import numpy as np
    >>> resp = np.array([[0.9, 0.1], [0.2, 0.8]])
    >>> round(label_noise_update(resp, np.array([0, 1]), np.array([0, 1]), 2), 3)
    0.15
    """
    y_codes = np.asarray(y_codes)
    lab = y_codes >= 0
    if n_classes < 2:
        return 0.0
    g = np.asarray(component_classes)
    off = g[None, :] != y_codes[lab][:, None]
    mass, count = np.sum(np.asarray(resp)[lab] * off), lab.sum()
    if reduce is not None:
        mass, count = reduce([mass, count])
    if not count:
        return 0.0
    return min(max(float(mass / count), 0.0), (n_classes - 1) / n_classes)


def partition_flip_rate(labels, codes, m: int) -> float:
    r"""The label-flip rate read off a hard partition: the share of labelled points whose category is not
    their cluster's majority category.

    .. math:: \hat\varepsilon = \frac{1}{|L|}\sum_{i\in L} [\,y_i \ne g(z_i)\,],\qquad
              g(k) = \arg\max_j c_{kj},

    with :math:`c_{kj}` the number of labelled points of category ``j`` in cluster ``k`` (ties: the lower
    category). It is :func:`label_noise_update` with one-hot responsibilities and each cluster's class its
    majority category, so a cluster may be a category or a part of one (CEC-IB's model of coarse labels;
    its ``label_noise="auto"``). Host NumPy.

    Parameters
    ----------
    labels : int array of shape (n,)
        Cluster of each point (any ids).
    codes : int array of shape (n,)
        Category of each point in ``0..m-1``, ``-1`` for unlabelled.
    m : int
        Number of categories.

    Returns
    -------
    float
        :math:`\hat\varepsilon`, clipped to :math:`(m-1)/m`; 0 without labelled points or for ``m < 2``.

    Examples
    --------
    >>> import numpy as np
    >>> partition_flip_rate(np.array([0, 0, 0, 1, 1]), np.array([0, 0, 1, 1, -1]), 2)
    0.25
    """
    labels = np.asarray(labels)
    codes = np.asarray(codes)
    lab = codes >= 0
    if m < 2 or not lab.any():
        return 0.0
    _, slot = np.unique(labels, return_inverse=True)
    counts = np.zeros((int(slot.max()) + 1, m))
    np.add.at(counts, (slot[lab], codes[lab]), 1.0)
    return label_noise_update(np.eye(counts.shape[0])[slot[lab]], codes[lab], counts.argmax(1), m)
