"""TVClust's collapsed Gibbs sweep as a NumPyro ``MCMCKernel``: one ``sample()`` is one sweep.

:class:`TVClustKernel` wraps :func:`ppclust.inference.gibbs.step` so that NumPyro's ``MCMC`` driver (chains,
``print_summary``, ArviZ conversion) runs the sampler; ``ppclust.inference.TVClustKernel`` imports it lazily.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from ppclust.inference import hartigan
from ppclust.inference.gibbs import GibbsState, init, step, sweep_info
from ppclust.inference.sampler_config import check_modes
from ppclust.models.tvclust import TVClustPrior
from ppclust.sideinfo import Links

__all__ = ["TVClustKernel"]


class TVClustKernel:
    """``numpyro.infer.mcmc.MCMCKernel``: one ``sample()`` = one collapsed Gibbs sweep (:func:`step`).

    Public as ``ppclust.inference.TVClustKernel``. Use ``numpyro.infer.MCMC(TVClustKernel(links, family,
    prior, k_max=...), ...)`` and ``mcmc.run(key, x)``. Chains start from the same k-means++ Voronoi
    partition as :class:`ppclust.TVClust` (``init="kmeans++"``, ``init_clusters`` seeds; or ``init="one"``,
    or ``init_params`` labels). ``mcmc.get_samples()`` holds ``labels`` (relabelled 0, 1, ... by first
    appearance) and the label-invariant ``n_clusters``, ``log_joint``, ``p``, ``q`` (genuine draws: with
    ``pq="collapse"`` drawn from their Beta conditionals given the partition) and ``alpha`` (when sampled);
    constants are left out. ``mcmc.print_summary()`` shows those scalars, not one row per point label.
    Extra fields: ``labels``, ``n_clusters``, ``log_joint``, ``p``, ``q``, ``alpha``. Supports
    ``chain_method`` ``"sequential"`` and ``"vectorized"``.

    Examples
    --------
    >>> import jax.numpy as jnp
    >>> from ppclust.families import GaussianNIW
    >>> from ppclust.models.tvclust import make_links
    >>> x = jnp.array([[0.0, 0.0], [0.2, 0.1], [4.0, 4.0]])
    >>> kernel = TVClustKernel(make_links(3, [[0, 1]], [1]), GaussianNIW.default(x), k_max=3)
    >>> kernel.sample_field
    'z'
    """

    sample_field = "z"
    model = None  # arviz_base.from_numpyro reads sampler.model

    def __new__(cls, *args, **kwargs):
        # subclass numpyro's ABC lazily so that importing this module does not import numpyro
        from numpyro.infer.mcmc import MCMCKernel

        if not issubclass(cls, MCMCKernel):
            cls = type(cls.__name__, (cls, MCMCKernel), {})
        return object.__new__(cls)

    def __init__(
        self,
        links: Links,
        family,
        prior: TVClustPrior = TVClustPrior(),
        *,
        k_max=64,
        pq="collapse",
        p=0.9,
        q=0.9,
        sample_alpha=False,
        init="kmeans++",
        init_clusters=10,
    ):
        if init not in ("kmeans++", "one"):
            raise ValueError(f"`init` must be 'kmeans++' or 'one', got {init!r}")
        check_modes(pq, "dp", sample_alpha)
        self.links, self.family, self.prior = links, family, prior
        self.k_max, self.pq, self.p, self.q, self.sample_alpha = k_max, pq, p, q, sample_alpha
        self.init_mode, self.init_clusters = init, init_clusters

    @property
    def default_fields(self):
        return ("z",)

    def init(self, rng_key, num_warmup, init_params, model_args, model_kwargs):
        (x,) = model_args
        n = x.shape[0]
        k_max = min(int(self.k_max), n)

        def one(key, labels):
            key, key_init = jax.random.split(key)
            if labels is None and self.init_mode == "kmeans++":
                k0 = max(1, min(int(self.init_clusters), k_max // 2, n))
                labels = hartigan.voronoi(x, hartigan.init_kmeanspp(key_init, x, k0)).astype(jnp.int32)
            st = init(
                x,
                self.links,
                self.family,
                k_max=k_max,
                labels=labels,
                p=self.p,
                q=self.q,
                alpha=self.prior.alpha,
            )
            return self._wrap(st, sweep_info(st, self.family, self.prior, self.pq), key)

        from numpyro.util import is_prng_key

        if is_prng_key(rng_key):
            return one(rng_key, init_params)
        return jax.vmap(one, (0, None if init_params is None else 0))(rng_key, init_params)

    def _wrap(self, st, info, key):
        p, q = info.p, info.q
        if self.pq == "collapse":  # genuine draws given the partition (conditional means are not draws)
            key, key_p, key_q = jax.random.split(key, 3)
            c, pr = st.counts, self.prior
            p = jax.random.beta(key_p, pr.a_p + c[0], pr.b_p + c[1], dtype=c.dtype)
            q = jax.random.beta(key_q, pr.a_q + c[3], pr.b_q + c[2], dtype=c.dtype)
        z = {"slot_labels": st.labels, "n_clusters": info.n_clusters, "log_joint": info.log_joint}
        if self.pq != "fixed":
            z.update(p=p, q=q)
        if self.sample_alpha:
            z["alpha"] = info.alpha
        return _KernelState(z, st.labels, info.n_clusters, info.log_joint, p, q, info.alpha, st, key)

    def sample(self, state, model_args, model_kwargs):
        (x,) = model_args
        if state.labels.ndim == 1:
            return self._sample_one(state, x)
        return jax.vmap(self._sample_one, (0, None))(state, x)

    def _sample_one(self, state, x):
        key, sub = jax.random.split(state.rng_key)
        st, info = step(
            sub,
            state.inner,
            x,
            self.links,
            self.family,
            self.prior,
            pq=self.pq,
            sample_alpha=self.sample_alpha,
        )
        return self._wrap(st, info, key)

    def postprocess_fn(self, model_args, model_kwargs):
        # the state's slot ids become canonical (first-appearance) "labels"; print_summary lists only the
        # sites whose name is also in the state's dict, i.e. the label-invariant scalars
        def post(z):
            out = {k: v for k, v in z.items() if k != "slot_labels"}
            out["labels"] = _first_appearance(z["slot_labels"])
            return out

        return post

    def get_diagnostics_str(self, state):
        return f"K={int(state.n_clusters)} logp={float(state.log_joint):.1f}"

    def refresh(self, *args, **kwargs):
        """Nothing cached depends on the other Gibbs blocks; kept for ``numpyro.infer.Gibbs``."""
        return None


def _first_appearance(labels):
    """Relabel 0, 1, ... in order of first appearance (label-switching-free labels of a partition)."""
    if labels.ndim > 1:
        return jax.vmap(_first_appearance)(labels)
    n = labels.shape[-1]
    first = jnp.full(n, n, jnp.int32).at[labels].min(jnp.arange(n, dtype=jnp.int32))
    rank = jnp.argsort(jnp.argsort(first)).astype(jnp.int32)
    return rank[labels]


class _KernelState(NamedTuple):
    z: dict  # the sample field: slot_labels and the label-invariant scalars (constants left out)
    labels: jax.Array
    n_clusters: jax.Array
    log_joint: jax.Array
    p: jax.Array
    q: jax.Array
    alpha: jax.Array
    inner: GibbsState
    rng_key: jax.Array
