r"""The weight :math:`\beta` of CEC-IB's label term: its critical value and the estimator's automatic choices.

The critical :math:`\beta_0` of Theorem 4.2 (eq. 14) above which a label-consistent split costs no more
than the merged cluster (:func:`beta0`, :func:`beta0_from_labels`, :data:`BETA0_HALF_NORMAL`), the share
of a label's information that survives label noise (:func:`label_channel_information`), and the
estimator's ``"auto"`` start and weight (:func:`choose_start`). :mod:`ppclust.inference.cecib` re-exports
these.
"""

from __future__ import annotations

import math

import numpy as np

from ppclust.models.ssgmm import partition_flip_rate

__all__ = ["label_channel_information", "choose_start", "beta0", "beta0_from_labels", "BETA0_HALF_NORMAL"]

#: Example 4.1: 1-D Gaussian split at its mean, 1 + ln sqrt(1 - 2/pi) / ln 2 = 0.26978 (paper: "0.269").
BETA0_HALF_NORMAL = 1.0 + 0.5 * math.log(1.0 - 2.0 / math.pi) / math.log(2.0)


def label_channel_information(eps: float, m: int) -> float:
    r"""The share of a label's information about its category that survives a symmetric flip channel.

    An observed label equals the true category with probability :math:`1 - \varepsilon` and is otherwise
    uniform over the :math:`m - 1` others (the label-noise model of ``SemiSupervisedGMM(label_noise=...)``).
    With uniform categories the mutual information between the true and the observed label is the
    channel's capacity

    .. math:: C(\varepsilon) = \ln m - H_b(\varepsilon) - \varepsilon \ln(m - 1)

    (Cover & Thomas, Sec. 7.1.5, for the m-ary symmetric channel), and the share is
    :math:`C(\varepsilon) / \ln m`: 1 for clean labels, 0 at :math:`\varepsilon = (m-1)/m` where a label
    says nothing (0 beyond). 1 for m < 2 (one category carries no label term). CEC-IB weighs its label
    term by it.

    Parameters
    ----------
    eps : float
        Flip rate in [0, 1).
    m : int
        Label categories.

    Examples
    --------
    >>> from ppclust.inference.cecib_beta import label_channel_information
    >>> label_channel_information(0.0, 3), label_channel_information(0.5, 2)
    (1.0, 0.0)
    >>> round(label_channel_information(0.2, 2), 4)
    0.2781
    """
    eps = float(eps)
    if m < 2 or eps <= 0.0:
        return 1.0
    if eps >= (m - 1) / m:
        return 0.0
    h_b = -eps * np.log(eps) - (1.0 - eps) * np.log1p(-eps)
    return float(max(0.0, 1.0 - (h_b + eps * np.log(m - 1)) / np.log(m)))


def choose_start(solve, init: str, y_codes, n_labels: int, beta: float, label_noise):
    """The start, label-term weight and flip rate of a CEC-IB fit (the estimator's ``"auto"`` choices).

    ``init="auto"``: with labels and ``beta > 0``, plain CEC (``beta = 0``) is fitted from the
    label-seeded start and from k-means++, and the start whose fit has the lower cost is taken (the labels
    on a tie); else ``"k-means++"``. ``label_noise="auto"`` (with at least two categories and
    ``beta > 0``): the flip rate is read off the plain-CEC fit of the chosen start
    (:func:`ppclust.models.ssgmm.partition_flip_rate`). The weight is ``beta`` times
    :func:`label_channel_information` of the rate.

    Parameters
    ----------
    solve : callable
        ``solve(beta, init)`` fits and returns the best :class:`~ppclust.inference.hartigan.HartiganResult`.
    init : str
        ``"auto"`` or a start (returned as is).
    y_codes : array of shape (n,)
        Label codes 0..m-1, -1 unlabelled (:func:`ppclust.inference.cecib.encode_labels`).
    n_labels : int
        m.
    beta : float
        The label term's weight before the flip channel.
    label_noise : float or "auto"
        The flip rate.

    Returns
    -------
    (init, beta, flip_rate)

    Examples
    --------
    >>> from ppclust.inference.cecib_beta import choose_start
    >>> choose_start(None, "auto", [-1, -1], 0, 1.0, 0.0)  # no labels: k-means++, no fit needed
    ('k-means++', 1.0, 0.0)
    """
    if init == "auto":
        init = "choose" if n_labels > 0 and beta > 0 else "k-means++"
    first = None
    if init == "choose":  # plain CEC (beta = 0) from both starts; the lower cost picks the start
        first = solve(0.0, "labels")
        km = solve(0.0, "k-means++")
        init = "labels" if float(first.cost) <= float(km.cost) else "k-means++"  # a tie: the labels
        first = first if init == "labels" else km
    flip = 0.0 if label_noise == "auto" else float(label_noise)
    if label_noise == "auto" and n_labels >= 2 and beta > 0:
        # read off a plain-CEC fit: the label term would move wrong-labelled points to their labels' clusters
        if first is None:
            first = solve(0.0, init)
        flip = partition_flip_rate(np.asarray(first.labels), y_codes, n_labels)
    return init, beta * label_channel_information(flip, n_labels), flip


def beta0(parts) -> float:
    r"""Critical :math:`\beta_0` of Theorem 4.2 (eq. 14) for merging the point sets ``parts`` into one.

    :math:`\beta_0 = 1 + \sum_i \frac{p_i}{2}\ln\frac{\det\Sigma_i}{\det\Sigma} \big/ H(p)` with
    :math:`p_i \propto |part_i|`, :math:`\Sigma_i` their MLE covariances and :math:`\Sigma` the pooled one.
    For ``beta >= beta0`` the split, label-consistent partition costs no more than the merged one; the
    cost difference is exactly :math:`q H(p)(\beta - \beta_0)`. Always <= 1 (Lemma E.1).

    Parameters
    ----------
    parts : sequence of arrays (n_i, d)
        The point sets.

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.cecib_beta import beta0
    >>> rng = np.random.default_rng(0)
    >>> parts = [rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 5.0]
    >>> bool(beta0(parts) <= 1.0)
    True
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
    """Data-driven heuristic [ours]: :func:`beta0` of the labelled points grouped by category.

    Parameters
    ----------
    X : array (n, d)
        The data.
    y : int array (n,)
        Partial labels (-1: unlabelled).

    Examples
    --------
    >>> import numpy as np
    >>> from ppclust.inference.cecib_beta import beta0_from_labels
    >>> rng = np.random.default_rng(0)
    >>> X = np.concatenate([rng.normal(size=(50, 2)), rng.normal(size=(50, 2)) + 5.0])
    >>> y = np.repeat([0, 1], 50)
    >>> y[::2] = -1
    >>> bool(beta0_from_labels(X, y) <= 1.0)
    True
    """
    X = np.asarray(X, np.float64)
    y = np.asarray(y)
    cats = [c for c in np.unique(y) if c != -1]
    return beta0([X[y == c] for c in cats])
