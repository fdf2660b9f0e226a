r"""TVClust by mean-field variational inference: the authors' own code path (``func_TVClust.r``, J. Liu).

Spec ``tvclust-rdpmeans.md`` Section 2.9 [C]; the paper does not describe it, but the TVClust rows of its
Tables 1-3 were produced with it. Model: truncated stick-breaking DP (``K`` components, :math:`v_K\equiv1`,
concentration :math:`\alpha_0`), Gaussian components with a Normal-Wishart prior (:math:`m_0, \beta_0, W_0,
\nu_0`; NIW with :math:`\kappa_0=\beta_0`, :math:`\Psi_0=W_0^{-1}`), link sensitivity / specificity
:math:`p\sim\mathrm{Beta}(a_p,b_p)`, :math:`q\sim\mathrm{Beta}(a_q,b_q)`. Factors :math:`q(z_i)=r_{i\cdot}`,
:math:`q(v_k)=\mathrm{Beta}(\gamma_{k1},\gamma_{k2})`, :math:`q(\mu_k,\Lambda_k)=\mathrm{NW}`,
:math:`q(p), q(q)` Beta.

One iteration, in the authors' order:

1. responsibilities, **sequentially in place** (point ``i`` sees the current :math:`r_{j\cdot}` of all
   others): :math:`\ln r_{ik}\doteq\mathbb E\ln\pi_k+\tfrac12\mathbb E'\ln|\Lambda_k|-\tfrac12(d/\beta_k+
   \nu_k(x_i-m_k)^\top W_k(x_i-m_k))+\sum_{j:C_{ij}=1}r_{jk}[e_{ij}A-(1-e_{ij})B]` with
   :math:`A=\mathbb E\ln p-\mathbb E\ln(1-q)`, :math:`B=\mathbb E\ln q-\mathbb E\ln(1-p)`, where
   :math:`\mathbb E'\ln|\Lambda|` omits the constant :math:`d\ln2` (as the code does); then
   :math:`r_i\propto e^{\cdot}+10^{-100}` (no max-shift; an overflow becomes :math:`10^{300}`);
2. :math:`\gamma_{k1}=1+N_k`, :math:`\gamma_{k2}=\alpha_0+\sum_{l>k}N_l`;
3. Normal-Wishart updates (Bishop 10.60-10.63) through :meth:`ppclust.families.GaussianNIW.soft_stats`;
4. :math:`\alpha_p=a_p+\sum_{C}e\rho`, :math:`\beta_p=b_p+\sum_C(1-e)\rho`, :math:`\alpha_q=a_q+\sum_C(1-e)
   (1-\rho)`, :math:`\beta_q=b_q+\sum_C e(1-\rho)`, :math:`\rho_{ij}=r_i^\top r_j`;
5. :math:`r\leftarrow(r+10^{-40})/\text{row sum}` and the ELBO of the code (Bishop 10.71-10.77 plus the
   link and Beta terms, with the code's omitted constants; the entropy of :math:`q(\Lambda)` is
   :func:`ppclust.families.wishart_entropy`). A component with :math:`N_k\le10^{-10}` skips its data term
   and reuses the previous component's :math:`\mathbb E'\ln|\Lambda|`, as the R loop does.

Stop when the relative change :math:`(L_t-L_{t-1})/|L_{t-1}|` falls below ``tol`` (negative changes
included) or after ``max_iter`` iterations. Output :math:`z_i=\arg\max_k r_{ik}`.

The mask ``C`` is a list of *directed* entries ``(src, dst, e)``: ``src`` is the point whose responsibility
the entry informs. The authors' experiments pass the sampled ordered pairs only ("as-run"); the symmetric
mask lists both directions of each pair (:func:`directed_entries`). Every entry counts once in the Beta
updates. With the golden runs in ``../shared/reference/tvclust_vb/`` (same data, mask, initial means) this
reproduces labels, iteration counts, ELBO traces and responsibilities to rounding
(tests/inference/test_tvclust_vb.py).
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.scipy.linalg import cho_solve
from jax.scipy.special import betaln, digamma

from ppclust.families import GaussianNIW, chol_logdet, wishart_entropy, wishart_expected_logdet

__all__ = [
    "VBResult",
    "VBState",
    "VBInfo",
    "VBAlgorithm",
    "build",
    "MASKS",
    "authors_init_means",
    "directed_entries",
    "neighbour_arrays",
    "fit",
]

MASKS = ("symmetric", "as_run")
_LOG2 = float(np.log(2.0))


class VBResult(NamedTuple):
    """What :func:`fit` returns: the labels, responsibilities, ELBO trace and the final variational
    parameters.

    Attributes
    ----------
    labels : array of int of shape (n,)
        ``argmax_k r_ik``, slot indices 0..K-1.
    resp : array of shape (n, K)
        Final responsibilities (after the 1e-40 smoothing).
    elbo : array of shape (max_iter,)
        ELBO after each iteration, NaN after the last.
    n_iter : int scalar
        Iterations run.
    converged : bool scalar
        Stopped by the tolerance (not by ``max_iter``).
    gamma : array of shape (K - 1, 2)
        Stick-breaking Beta parameters.
    means : array of shape (K, d)
        Posterior means :math:`m_k`.
    nk : array of shape (K,)
        Soft counts :math:`N_k` of the last iteration.
    pq_params : array of shape (4,)
        ``alpha_p, beta_p, alpha_q, beta_q`` of ``q(p), q(q)``.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> x = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> src, dst, e = directed_entries([[0, 1]], [1])
    >>> nbr, ev, valid = neighbour_arrays(4, src, dst, e)
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(2.0), jnp.eye(2), "full")
    ...     res = fit(jnp.asarray(x), jnp.asarray(authors_init_means(3, 2)), fam, (nbr, ev, valid),
    ...               (src, dst, e), (1.0, 10.0, 10.0, 1.0), 1.0, max_iter=3)
    >>> isinstance(res, VBResult), res.resp.shape
    (True, (4, 3))
    """

    labels: jax.Array  # (n,) argmax_k r_ik, slot indices 0..K-1
    resp: jax.Array  # (n, K) final responsibilities (after the +1e-40 smoothing)
    elbo: jax.Array  # (max_iter,) ELBO after each iteration, NaN after the last
    n_iter: jax.Array  # iterations run
    converged: jax.Array  # stopped by the tolerance (not by max_iter)
    gamma: jax.Array  # (K-1, 2) stick-breaking Beta parameters
    means: jax.Array  # (K, d) posterior means m_k
    nk: jax.Array  # (K,) soft counts N_k of the last iteration
    pq_params: jax.Array  # (4,) alpha_p, beta_p, alpha_q, beta_q


def authors_init_means(K: int, d: int, seed: int = 1) -> np.ndarray:
    """The authors' initial means: R's ``set.seed(seed); array(rnorm(d * K), c(d, 1, K))`` as (K, d).

    R's default generator is emulated: the seed scrambling of ``RNG_Init`` (50 + 625 steps of the LCG
    69069 s + 1 on 32-bit integers), Mersenne-Twister MT19937 from that state (numpy's bit generator, raw
    32-bit outputs times 2^-32), and ``norm_rand``'s inversion with two uniforms,
    ``qnorm((floor(2^27 u1) + u2) / 2^27)``. Matches the reference's ``init_means_d{2,4}.csv`` to 1e-15.

    Parameters
    ----------
    K : int
        Number of components.
    d : int
        Dimension.
    seed : int, default=1
        R's ``set.seed`` value (the authors' 1).

    Returns
    -------
    ndarray of shape (K, d)

    Examples
    --------
    >>> authors_init_means(15, 2).shape
    (15, 2)
    """
    from scipy.special import ndtri

    s = np.uint32(seed)
    key = np.zeros(625, np.uint32)
    with np.errstate(over="ignore"):
        for j in range(50 + 625):
            s = np.uint32(69069) * s + np.uint32(1)
            if j >= 50:
                key[j - 50] = s
    bg = np.random.MT19937()
    bg.state = {"bit_generator": "MT19937", "state": {"key": key[1:], "pos": 624}}
    u = bg.random_raw(2 * d * K).astype(np.float64) * 2.3283064365386963e-10
    big = 134217728.0
    return ndtri((np.floor(big * u[0::2]) + u[1::2]) / big).reshape(K, d)


def directed_entries(pairs, signs, mask: str = "symmetric"):
    """Directed mask entries from link pairs ``(i, j)`` (in the order given) and signs (+1 may-link, -1
    cannot-link; later rows overwrite earlier ones for the same unordered pair, as the authors' E matrix).
    ``"as_run"``: one entry ``i -> j`` per distinct ordered pair given; ``"symmetric"``: both directions
    of every unordered pair. Returns ``src, dst, e`` (e = 1 for may-link, 0 for cannot-link).

    Parameters
    ----------
    pairs : array-like of shape (m, 2)
        Row pairs.
    signs : array-like of shape (m,)
        +1 may-link, -1 cannot-link.
    mask : {"symmetric", "as_run"}, default="symmetric"
        Which directed entries the mask holds.

    Returns
    -------
    src, dst : ndarray of int of shape (m',)
    e : ndarray of shape (m',)

    Examples
    --------
    >>> [a.tolist() for a in directed_entries([[0, 1]], [-1])]
    [[0, 1], [1, 0], [0.0, 0.0]]
    """
    pairs = np.asarray(pairs, np.int64).reshape(-1, 2)
    signs = np.asarray(signs).reshape(-1)
    e_of = {}
    for (i, j), s in zip(pairs.tolist(), signs.tolist(), strict=True):
        e_of[(min(i, j), max(i, j))] = 1.0 if s > 0 else 0.0
    if mask == "symmetric":
        ent = {(i, j) for i, j in e_of} | {(j, i) for i, j in e_of}
    elif mask == "as_run":
        ent = {(i, j) for i, j in pairs.tolist() if i != j}
    else:
        raise ValueError(f"mask must be one of {MASKS}, got {mask!r}")
    ent = sorted(ent)
    src = np.array([a for a, _ in ent], np.int64)
    dst = np.array([b for _, b in ent], np.int64)
    e = np.array([e_of[(min(a, b), max(a, b))] for a, b in ent], np.float64)
    return src, dst, e


def neighbour_arrays(n: int, src, dst, e, width: int | None = None):
    """Padded out-neighbour table of the directed entries: ``nbr`` (n, D) int, ``ev`` (n, D) e-values,
    ``valid`` (n, D) bool, D = max out-degree (at least 1), or ``width`` if given (>= that).

    Parameters
    ----------
    n : int
        Number of points.
    src, dst : array-like of int of shape (m,)
        Directed entries ``src -> dst``.
    e : array-like of shape (m,)
        Their values (1 may-link, 0 cannot-link).
    width : int or None, default=None
        The table's width D when given (at least the largest out-degree).

    Returns
    -------
    nbr, ev, valid : ndarrays of shape (n, D)

    Examples
    --------
    >>> nbr, ev, valid = neighbour_arrays(3, [0, 1], [1, 0], [1.0, 1.0])
    >>> nbr.tolist(), valid.tolist()
    ([[1], [0], [0]], [[True], [True], [False]])
    """
    src, dst, e = (np.asarray(a) for a in (src, dst, e))
    deg = np.bincount(src, minlength=n) if len(src) else np.zeros(n, np.int64)
    D = max(1, int(deg.max()) if n else 1, width or 1)
    nbr = np.zeros((n, D), np.int64)
    ev = np.zeros((n, D))
    valid = np.zeros((n, D), bool)
    slot = np.zeros(n, np.int64)
    for a, b, v in zip(src.tolist(), dst.tolist(), e.tolist(), strict=True):
        nbr[a, slot[a]], ev[a, slot[a]], valid[a, slot[a]] = b, v, True
        slot[a] += 1
    return nbr, ev, valid


def _resp_base(x, family: GaussianNIW, stats, gamma):
    """(n, K) data + stick-breaking part of ln r_ik (the code's E ln|Lambda| omits d ln 2)."""
    d = x.shape[1]
    kn, nun, mun = family.posterior_params(stats)
    logdet_w = -chol_logdet(stats.scale)
    eln = wishart_expected_logdet(logdet_w, nun, d) - d * _LOG2
    W = cho_solve((stats.scale, True), jnp.broadcast_to(jnp.eye(d, dtype=x.dtype), stats.scale.shape))
    diff = x[:, None, :] - mun[None]
    esq = d / kn + nun * jnp.einsum("nki,kij,nkj->nk", diff, W, diff)
    sg = digamma(gamma.sum(1))
    elnv = digamma(gamma[:, 0]) - sg
    eln1v = digamma(gamma[:, 1]) - sg
    elnpi = jnp.concatenate([elnv, jnp.zeros(1, x.dtype)]) + jnp.concatenate(
        [jnp.zeros(1, x.dtype), jnp.cumsum(eln1v)]
    )
    return eln / 2 - esq / 2 + elnpi, eln


def _link_coefs(ab):
    ap, bp, aq, bq = ab[0], ab[1], ab[2], ab[3]
    A = digamma(ap) - digamma(ap + bp) - digamma(bq) + digamma(aq + bq)
    B = digamma(aq) - digamma(aq + bq) - digamma(bp) + digamma(ap + bp)
    return A, B


def _sweep(r, base, nbr, ev, valid, A, B, row_weight):
    w = jnp.where(valid, jnp.where(ev > 0, A, -B), 0.0)

    def body(i, r):
        tmp = base[i] + w[i] @ r[nbr[i]]
        ri = jnp.exp(tmp)
        ri = jnp.where(jnp.isinf(ri), 1e300, ri) + 1e-100
        return r.at[i].set(ri / ri.sum() * row_weight[i])  # a padding row (weight 0) stays 0

    return lax.fori_loop(0, r.shape[0], body, r)


def _pq_update(r, src, dst, e, w, prior_ab):
    rho = jnp.sum(r[src] * r[dst], 1)
    s_e_rho, s_ne_rho = jnp.sum(w * e * rho), jnp.sum(w * (1 - e) * rho)
    s_ne_nrho, s_e_nrho = jnp.sum(w * (1 - e) * (1 - rho)), jnp.sum(w * e * (1 - rho))
    return jnp.stack(
        [prior_ab[0] + s_e_rho, prior_ab[1] + s_ne_rho, prior_ab[2] + s_ne_nrho, prior_ab[3] + s_e_nrho]
    ), (s_e_rho, s_ne_rho, s_e_nrho, s_ne_nrho)


def _elbo(x, r, N, family: GaussianNIW, stats, gamma, ab, prior_ab, sums, alpha0, eln_stale):
    """The code's lower bound (terms 71-77 of Bishop ch. 10 with its omitted constants, plus links)."""
    n, d = x.shape
    kn, nun, mun = family.posterior_params(stats)
    logdet_w = -chol_logdet(stats.scale)
    eln_new = wishart_expected_logdet(logdet_w, nun, d) - d * _LOG2
    ok = N > 1e-10

    def carry_eln(prev, a):  # the R loop reuses the previous component's value where N_k <= 1e-10
        v = jnp.where(a[1], a[0], prev)
        return v, v

    _, eln = lax.scan(carry_eln, eln_stale, (eln_new, ok))
    W = cho_solve((stats.scale, True), jnp.broadcast_to(jnp.eye(d, dtype=x.dtype), stats.scale.shape))
    Nsafe = jnp.where(ok, N, 1.0)
    xb = (r.T @ x) / Nsafe[:, None]
    xc = x[:, None, :] - xb[None]
    S = jnp.einsum("nk,nki,nkj->kij", r, xc, xc) / Nsafe[:, None, None]
    dm = xb - mun
    t71 = (
        0.5
        * N
        * (eln - d / kn - nun * jnp.einsum("kij,kji->k", S, W) - nun * jnp.einsum("ki,kij,kj->k", dm, W, dm))
    )
    t71 = jnp.sum(jnp.where(ok, t71, 0.0))
    sg = digamma(gamma.sum(1))
    l1, l2 = digamma(gamma[:, 0]) - sg, digamma(gamma[:, 1]) - sg
    tail = jnp.cumsum(N[::-1])[::-1][1:]  # sum_{j>k} N_j, k = 0..K-2
    t72 = jnp.sum(N[:-1] * l1 + tail * l2)
    t73 = jnp.sum((alpha0 - 1) * l2)
    m0, b0, nu0 = family.mu0, family.kappa0, family.nu0
    dm0 = mun - m0
    tmp2 = (-d * b0 / kn - b0 * nun * jnp.einsum("ki,kij,kj->k", dm0, W, dm0)) / 2
    tmp3 = nun * jnp.einsum("ij,kji->k", family.psi0, W) / 2
    t74 = jnp.sum(eln * (nu0 - d) / 2 + tmp2 - tmp3)
    t75 = jnp.sum(jnp.where(r > 0, r * jnp.log(jnp.where(r > 0, r, 1.0)), 0.0))  # padding rows: r = 0
    t76 = jnp.sum((gamma[:, 0] - 1) * l1 + (gamma[:, 1] - 1) * l2 - betaln(gamma[:, 0], gamma[:, 1]))
    t77 = jnp.sum(eln / 2 + d / 2 * jnp.log(kn) - wishart_entropy(logdet_w, nun, d))
    ap, bp, aq, bq = ab[0], ab[1], ab[2], ab[3]
    elnp, elnmp = digamma(ap) - digamma(ap + bp), digamma(bp) - digamma(ap + bp)
    elnq, elnmq = digamma(aq) - digamma(aq + bq), digamma(bq) - digamma(aq + bq)
    s_e_rho, s_ne_rho, s_e_nrho, s_ne_nrho = sums
    t_links = s_e_rho * elnp + s_ne_rho * elnmp + s_e_nrho * elnmq + s_ne_nrho * elnq
    t_pq = (
        (prior_ab[0] - ap) * elnp
        + (prior_ab[1] - bp) * elnmp
        + (prior_ab[2] - aq) * elnq
        + (prior_ab[3] - bq) * elnmq
        + betaln(ap, bp)
        + betaln(aq, bq)
    )
    return t71 + t72 + t73 + t74 - t75 - t76 - t77 + t_links + t_pq


class VBState(NamedTuple):
    """State carried between VB iterations (:func:`build`).

    Attributes
    ----------
    n_iter : int scalar
        Iterations done.
    resp : array of shape (n, K)
        Responsibilities :math:`r`.
    stats : NIW statistics
        The soft Normal-Wishart statistics of ``q(mu, Lambda)``.
    gamma : array of shape (K - 1, 2)
        Stick-breaking Beta parameters.
    pq_params : array of shape (4,)
        Beta parameters of ``q(p), q(q)``.
    elbo : float scalar
        The last iteration's ELBO.
    nk : array of shape (K,)
        Soft counts of the last iteration.
    stop : bool scalar
        The relative ELBO change fell below ``tol``.

    Examples
    --------
    >>> VBState._fields[:2]
    ('n_iter', 'resp')
    """

    n_iter: jax.Array
    resp: jax.Array
    stats: object
    gamma: jax.Array
    pq_params: jax.Array
    elbo: jax.Array
    nk: jax.Array
    stop: jax.Array


class VBInfo(NamedTuple):
    """Per-iteration diagnostics: the ELBO after the iteration and its relative change.

    Attributes
    ----------
    elbo : float scalar
        The ELBO after the iteration.
    improvement : float scalar
        Its relative change from the previous iteration.

    Examples
    --------
    >>> VBInfo._fields
    ('elbo', 'improvement')
    """

    elbo: jax.Array
    improvement: jax.Array


class VBAlgorithm(NamedTuple):
    """``init(init_means) -> VBState`` and ``step(key, state) -> (VBState, VBInfo)`` (BlackJAX's shape; VB is
    deterministic, ``key`` is accepted for the common signature and not used).

    Attributes
    ----------
    init : callable
        ``init(init_means) -> VBState``.
    step : callable
        ``step(key, state) -> (VBState, VBInfo)``.

    Examples
    --------
    >>> VBAlgorithm._fields
    ('init', 'step')
    """

    init: object
    step: object


def build(
    x,
    family: GaussianNIW,
    table,
    entries,
    prior_ab,
    alpha0,
    *,
    tol: float = 5e-5,
    entry_weight=None,
    row_weight=None,
) -> VBAlgorithm:
    """The authors' VB iteration (module docstring, steps 1-5) with the data, links, prior and ``tol``
    closed over.

    Parameters
    ----------
    x : array of shape (n, d)
        The data as the model sees it.
    family : GaussianNIW
        The Normal-Wishart prior (full covariance).
    table : tuple
        ``(nbr, ev, valid)``, arrays of shape (n, D): the out-neighbour table of :func:`neighbour_arrays`.
    entries : tuple
        ``(src, dst, e)``, arrays of shape (m,): the directed entries of :func:`directed_entries`.
    prior_ab : tuple of 4 floats
        ``(a_p, b_p, a_q, b_q)``, the Beta priors of p and q.
    alpha0 : float
        The DP concentration.
    tol : float, default=5e-5
        Stop when the relative ELBO change falls below it.
    entry_weight : array of shape (m,) or None, default=None
        1 per real entry, 0 on padding; None: all 1.
    row_weight : array of shape (n,) or None, default=None
        1 per real row, 0 on padding rows (zeros in ``x``, no entries): their responsibilities stay 0,
        so no count, statistic or ELBO term sees them; None: all 1.

    Returns
    -------
    VBAlgorithm
        ``init`` and ``step``.

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> x = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> src, dst, e = directed_entries([[0, 1]], [1])
    >>> nbr, ev, valid = neighbour_arrays(4, src, dst, e)
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(2.0), jnp.eye(2), "full")
    ...     res = fit(jnp.asarray(x), jnp.asarray(authors_init_means(3, 2)), fam, (nbr, ev, valid),
    ...               (src, dst, e), (1.0, 10.0, 10.0, 1.0), 1.0, max_iter=3)
    >>> with x64():
    ...     alg = build(jnp.asarray(x), fam, (nbr, ev, valid), (src, dst, e), (1.0, 10.0, 10.0, 1.0), 1.0)
    >>> callable(alg.init), callable(alg.step)
    (True, True)
    """
    n, d = x.shape
    dt = x.dtype
    nbr, ev, valid = table
    src, dst, e = entries
    prior_ab = jnp.asarray(prior_ab, dt)
    w = jnp.ones(jnp.shape(e), dt) if entry_weight is None else jnp.asarray(entry_weight, dt)
    w_row = jnp.ones(n, dt) if row_weight is None else jnp.asarray(row_weight, dt)

    def init(init_means) -> VBState:
        K = init_means.shape[0]
        empty = family.empty(K, d, dt)
        # the initial q(mu, Lambda): m_k = init means, beta_k = beta0, W_k = W0, nu_k = nu0; an "empty" Stats
        # whose posterior mean is the init mean (s = m_k * kappa0 - kappa0 * mu0 makes mu_n = m_k with n = 0)
        stats0 = empty._replace(s=(init_means - family.mu0) * family.kappa0)
        return VBState(
            jnp.asarray(0),
            jnp.full((n, K), 1.0 / K, dt) * w_row[:, None],
            stats0,
            jnp.ones((K - 1, 2), dt),
            prior_ab,
            jnp.asarray(jnp.nan, dt),
            jnp.zeros(K, dt),
            jnp.asarray(False),
        )

    def step(key, state: VBState) -> tuple[VBState, VBInfo]:
        del key  # deterministic
        K = state.resp.shape[1]
        base, eln_old = _resp_base(x, family, state.stats, state.gamma)
        A, B = _link_coefs(state.pq_params)
        r = _sweep(state.resp, base, nbr, ev, valid, A, B, w_row)
        N = r.sum(0)
        gamma = jnp.stack([1.0 + N[:-1], alpha0 + jnp.cumsum(N[::-1])[::-1][1:]], 1)
        stats = family.soft_stats(x, r)
        ab, _ = _pq_update(r, src, dst, e, w, prior_ab)
        r = r + 1e-40
        r = r / r.sum(1, keepdims=True) * w_row[:, None]
        _, sums = _pq_update(r, src, dst, e, w, prior_ab)
        L = _elbo(x, r, N, family, stats, gamma, ab, prior_ab, sums, alpha0, eln_old[K - 1])
        improve = jnp.where(state.n_iter == 0, 1.0, (L - state.elbo) / jnp.abs(state.elbo))
        new = VBState(state.n_iter + 1, r, stats, gamma, ab, L, N, improve < tol)
        return new, VBInfo(L, improve)

    return VBAlgorithm(init, step)


@partial(jax.jit, static_argnames=("max_iter",))
def fit(
    x,
    init_means,
    family: GaussianNIW,
    table,
    entries,
    prior_ab,
    alpha0,
    *,
    max_iter: int = 30,
    tol: float = 5e-5,
    entry_weight=None,
    row_weight=None,
) -> VBResult:
    """Run the authors' VB (module docstring): a ``while_loop`` over :func:`build`'s ``step``. ``x`` (n, d)
    as the model sees it (the authors standardise first, sd with n - 1); ``init_means`` (K, d) the initial
    m_k (the authors: R's ``set.seed(1); rnorm(d K)``); ``family`` the Normal-Wishart prior as
    :class:`GaussianNIW` (full covariance, ``psi0`` = W_0^{-1}); ``table`` the tuple ``(nbr, ev, valid)`` of
    :func:`neighbour_arrays` and ``entries`` the tuple ``(src, dst, e)`` of :func:`directed_entries` (the same
    entries);
    ``prior_ab`` = (a_p, b_p, a_q, b_q). ``entry_weight`` (1 per entry, default) lets callers pad the entry
    arrays to a fixed length with weight-0 rows (and the table to a fixed width with invalid slots) so
    that many link sets share one compilation; ``row_weight`` (1 per row, default) does the same for the
    rows (padding rows: zeros in ``x``, weight 0, labels and responsibilities to be dropped).

    Parameters
    ----------
    x : array of shape (n, d)
        The data as the model sees it (the authors standardise with sd of denominator n - 1).
    init_means : array of shape (K, d)
        The initial :math:`m_k` (:func:`authors_init_means` reproduces the authors' start).
    family : GaussianNIW
        The Normal-Wishart prior (full covariance, ``psi0`` = :math:`W_0^{-1}`).
    table : tuple
        ``(nbr, ev, valid)`` of :func:`neighbour_arrays`.
    entries : tuple
        ``(src, dst, e)`` of :func:`directed_entries` (the same entries).
    prior_ab : tuple of 4 floats
        ``(a_p, b_p, a_q, b_q)``.
    alpha0 : float
        The DP concentration.
    max_iter : int, default=30
        Iterations at most (the authors' setting).
    tol : float, default=5e-5
        Relative ELBO change below which the loop stops (the authors' setting).
    entry_weight : array of shape (m,) or None, default=None
        1 per real entry, 0 on padding rows; None: all 1.
    row_weight : array of shape (n,) or None, default=None
        1 per real row, 0 on padding rows; None: all 1.

    Returns
    -------
    VBResult

    Examples
    --------
    >>> import jax.numpy as jnp, numpy as np
    >>> from ppclust._jax import x64
    >>> from ppclust.families import GaussianNIW
    >>> x = np.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0], [4.1, 3.9]])
    >>> src, dst, e = directed_entries([[0, 1]], [1])
    >>> nbr, ev, valid = neighbour_arrays(4, src, dst, e)
    >>> with x64():
    ...     fam = GaussianNIW(jnp.zeros(2), jnp.asarray(1.0), jnp.asarray(2.0), jnp.eye(2), "full")
    ...     res = fit(jnp.asarray(x), jnp.asarray(authors_init_means(3, 2)), fam, (nbr, ev, valid),
    ...               (src, dst, e), (1.0, 10.0, 10.0, 1.0), 1.0, max_iter=3)
    >>> int(res.n_iter) <= 3, res.labels.shape
    (True, (4,))
    """
    alg = build(
        x, family, table, entries, prior_ab, alpha0, tol=tol, entry_weight=entry_weight, row_weight=row_weight
    )

    def cond(c):
        state, _ = c
        return (state.n_iter < max_iter) & ~state.stop

    def body(c):
        state, elbo = c
        new, info = alg.step(None, state)
        return new, elbo.at[state.n_iter].set(info.elbo)

    elbo0 = jnp.full((max_iter,), jnp.nan, x.dtype)
    state, elbo = lax.while_loop(cond, body, (alg.init(init_means), elbo0))
    _, _, mun = family.posterior_params(state.stats)
    return VBResult(
        jnp.argmax(state.resp, 1),
        state.resp,
        elbo,
        state.n_iter,
        state.stop,
        state.gamma,
        mun,
        state.nk,
        state.pq_params,
    )
