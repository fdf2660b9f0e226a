"""The options of a sampler run: one frozen configuration shared by the Gibbs and sub-cluster samplers.

:class:`SamplerConfig` holds every option of :func:`ppclust.inference.gibbs.sample` and
:func:`ppclust.inference.subcluster.sample` (each reads its own and refuses the other's), and
:func:`check_modes` the rules that tie the modes together.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["PQ_MODES", "PARTITIONS", "ALGORITHMS", "SamplerConfig", "check_modes"]

PQ_MODES = ("fixed", "sample", "collapse")
PARTITIONS = ("dp", "finite")
ALGORITHMS = ("collapsed", "explicit")


class SamplerConfig(NamedTuple):
    """The options of a sampler run, shared by :func:`sample` and :func:`ppclust.inference.subcluster.sample`
    (immutable and hashable: every field is a Python scalar, string or None, or a mesh).

    Attributes
    ----------
    n_draws, n_warmup, n_chains, thin : int, default=1000, 1000, 4, 1
        Kept draws per chain (>= 1), discarded sweeps, chains, sweeps per kept draw.
    k_max : int, default=64
        Cluster slots per chain (the capacity; a chain that needs more raises ``KMaxExhaustedError``).
    pq : {"collapse", "sample", "fixed"}, default="collapse"
        Link parameters integrated out, sampled, or fixed at ``p``, ``q`` (the starting values otherwise).
    p, q : float, default=0.9
        Link sensitivity and specificity in (0, 1).
    sample_alpha : bool, default=False
        Resample alpha after each sweep (:func:`ppclust.models.tvclust.escobar_west`) under a
        Gamma(``alpha_shape``, ``alpha_rate``) prior.
    alpha_shape, alpha_rate : float, default=1.0
        Shape and rate of the Gamma prior on alpha.
    store_labels : bool, default=True
        Keep the labels of every draw (else only the scalars).
    backend : {"auto", "numba", "xla"}, default="auto"
        :func:`ppclust.inference.backend.resolve_backend`.
    algorithm : {"collapsed", "explicit"}, default="collapsed"
        Gibbs only: Neal's Algorithm 3 or 2.
    partition : {"dp", "finite"}, default="dp"
        Gibbs only: the CRP of TVClust, or ``k_max`` labelled components with Dirichlet(alpha / k_max)
        weights.
    devices : "auto", None or int, default="auto"
        Gibbs only: the devices the chains are spread over (the same draws either way).
    progress_bar : bool or None, default=None
        Gibbs only: progress bars when someone can see them (None: on).
    chunk : int or None, default=None
        Gibbs only: draws per compiled call (the draws do not depend on it).
    desc : str, default="tvclust gibbs"
        Gibbs only: the progress bars' label.
    n_moves : int, default=4
        Sub-cluster only: split/merge proposals per sweep.
    mesh : jax.sharding.Mesh or None, default=None
        Sub-cluster only: a 1-D data mesh over which the label step's unlinked block is drawn.

    Examples
    --------
    >>> cfg = SamplerConfig(n_draws=10, n_warmup=5)
    >>> cfg.with_options(n_chains=2).n_chains
    2
    """

    n_draws: int = 1000
    n_warmup: int = 1000
    n_chains: int = 4
    thin: int = 1
    k_max: int = 64
    pq: str = "collapse"
    p: float = 0.9
    q: float = 0.9
    sample_alpha: bool = False
    alpha_shape: float = 1.0
    alpha_rate: float = 1.0
    store_labels: bool = True
    backend: str = "auto"
    algorithm: str = "collapsed"
    partition: str = "dp"
    devices: object = "auto"
    progress_bar: object = None
    chunk: object = None
    desc: str = "tvclust gibbs"
    n_moves: int = 4
    mesh: object = None

    def with_options(self, **options) -> SamplerConfig:
        """This configuration with some fields replaced (an unknown name is a TypeError).

        Examples
        --------
        >>> SamplerConfig().with_options(k_max=8).k_max
        8
        """
        unknown = set(options) - set(self._fields)
        if unknown:
            raise TypeError(
                f"unknown sampler option(s) {sorted(unknown)}; the options are the fields of "
                "ppclust.inference.sampler_config.SamplerConfig"
            )
        return self._replace(**options)

    def check_unused(self, names, who) -> None:
        """ValueError naming the first of ``names`` that is set away from its default (``who`` does not
        read it).

        Examples
        --------
        >>> SamplerConfig().check_unused(("mesh",), "gibbs.sample") is None
        True
        """
        for name in names:
            if getattr(self, name) != self._field_defaults[name]:
                raise ValueError(f"{who} does not use the option {name}={getattr(self, name)!r}")


def check_modes(pq, partition, sample_alpha, algorithm="collapsed"):
    """ValueError unless the sampler's modes are valid together (``pq``, ``partition``, ``sample_alpha``,
    ``algorithm``: see :func:`sample`).

    Parameters
    ----------
    pq : {"collapse", "sample", "fixed"}
        How the link parameters are treated.
    partition : {"dp", "finite"}
        The partition prior.
    sample_alpha : bool
        Whether alpha is resampled (``"dp"`` only).
    algorithm : {"collapsed", "explicit"}, default="collapsed"
        Neal's Algorithm 3 or 2 (``"explicit"`` with ``"dp"`` only).

    Examples
    --------
    >>> check_modes("collapse", "dp", False) is None
    True
    """
    if algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {ALGORITHMS}, got {algorithm!r}")
    if algorithm == "explicit" and partition != "dp":
        raise ValueError("algorithm='explicit' supports partition='dp' only")
    if pq not in PQ_MODES:
        raise ValueError(f"pq must be one of {PQ_MODES}, got {pq!r}")
    if partition not in PARTITIONS:
        raise ValueError(f"partition must be one of {PARTITIONS}, got {partition!r}")
    if partition == "finite" and sample_alpha:
        raise ValueError("sample_alpha (Escobar-West) applies to partition='dp' only")
