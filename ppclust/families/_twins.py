"""The registry of compiled twins: each numba function of the families and the JAX function it mirrors.

``tests/families/test_twins.py`` walks :data:`TWINS` and checks every pair to 1e-12 in float64; an entry the
walk does not cover, or a twin missing from the registry, fails that test.
"""

from __future__ import annotations

from typing import NamedTuple

from ppclust.families import _cholesky_cpu, _densities_cpu, _niw_cpu, cholesky, densities
from ppclust.families.niw import GaussianNIW
from ppclust.families.spherical import SphericalGaussian

__all__ = ["Twin", "TWINS", "NOT_TWINS"]


class Twin(NamedTuple):
    """One compiled twin and the JAX definitions it mirrors.

    Parameters
    ----------
    name : str
        ``module.function`` of the twin, relative to :mod:`ppclust.families` (the key of its parity check).
    twin : callable
        The compiled (numba) function.
    jax : tuple of callable
        The JAX functions or methods it mirrors.

    Examples
    --------
    >>> TWINS[0].name
    '_cholesky_cpu.chol_rank_one'
    """

    name: str
    twin: object
    jax: tuple


TWINS = [
    Twin("_cholesky_cpu.chol_rank_one", _cholesky_cpu.chol_rank_one, (cholesky.chol_rank_one,)),
    Twin("_cholesky_cpu.solve_lower_sq", _cholesky_cpu.solve_lower_sq, (cholesky.solve_lower_sq,)),
    Twin("_cholesky_cpu.rank_one_slot", _cholesky_cpu.rank_one_slot, (cholesky.chol_rank_one,)),
    Twin("_cholesky_cpu.chol_update", _cholesky_cpu.chol_update, (cholesky.chol_update,)),
    Twin("_cholesky_cpu.chol_downdate", _cholesky_cpu.chol_downdate, (cholesky.chol_downdate,)),
    Twin("_cholesky_cpu.logdet_slot", _cholesky_cpu.logdet_slot, (cholesky.chol_logdet,)),
    Twin("_cholesky_cpu.chol_logdet", _cholesky_cpu.chol_logdet, (cholesky.chol_logdet,)),
    Twin("_cholesky_cpu.pivots_slot", _cholesky_cpu.pivots_slot, (cholesky.chol_singular,)),
    Twin("_cholesky_cpu.chol_singular", _cholesky_cpu.chol_singular, (cholesky.chol_singular,)),
    Twin(
        "_niw_cpu.rank_one",
        _niw_cpu.rank_one,
        (GaussianNIW.add, GaussianNIW.remove, SphericalGaussian.add, SphericalGaussian.remove),
    ),
    Twin(
        "_niw_cpu.predictive_log_norm",
        _niw_cpu.predictive_log_norm,
        (GaussianNIW.predictive_log_norm, SphericalGaussian.predictive_log_norm),
    ),
    Twin(
        "_niw_cpu.predictive_cache_slot",
        _niw_cpu.predictive_cache_slot,
        (GaussianNIW.predictive_cache, SphericalGaussian.predictive_cache),
    ),
    Twin(
        "_niw_cpu.log_predictive_cached",
        _niw_cpu.log_predictive_cached,
        (GaussianNIW.log_predictive_cached, SphericalGaussian.log_predictive_cached),
    ),
    Twin("_niw_cpu.log_predictive_loo", _niw_cpu.log_predictive_loo, (GaussianNIW.log_predictive_loo,)),
    Twin("_densities_cpu.gaussian_loglik", _densities_cpu.gaussian_loglik, (densities.gaussian_loglik,)),
]

#: Public names of the twin modules that are no twins (layout codes, converters and containers of the
#: kernels' inputs).
NOT_TWINS = frozenset(
    {
        "_niw_cpu.FULL",
        "_niw_cpu.DIAG",
        "_niw_cpu.SPHERICAL",
        "_niw_cpu.KNOWN_VAR",
        "_niw_cpu.family_code",
        "_niw_cpu.family_arrays",
        "_niw_cpu.SlotCache",
        "_niw_cpu.empty_cache",
        "_densities_cpu.UPPER",
    }
)
