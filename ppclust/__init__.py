"""ppclust: clustering with side information on JAX and NumPyro.

Estimators (scikit-learn style) are imported lazily so that ``import ppclust`` stays fast:
``ppclust.TVClust``, ``ppclust.DPMeans``, ``ppclust.RDPMeans``, ``ppclust.SemiSupervisedGMM``,
``ppclust.BayesianSemiSupervisedGMM``,
``ppclust.CECIB``, ``ppclust.C3L``, ``ppclust.CCIB``, ``ppclust.SMIC``.
"""

from __future__ import annotations

import importlib

from ppclust._version import __version__

_SUBMODULES = {"sideinfo", "families", "metrics", "datasets", "posterior", "plot", "models", "inference"}
_LAZY = {
    "SideInfo": ("ppclust.sideinfo", "SideInfo"),
    "RowPairs": ("ppclust.sideinfo", "RowPairs"),
    "load": ("ppclust.datasets", "load"),
    "warmup": ("ppclust._warmup", "warmup"),
}


def __getattr__(name: str):
    from ppclust._registry import ESTIMATORS

    if name in ESTIMATORS:
        try:
            return ESTIMATORS[name].load()
        except (ImportError, AttributeError) as err:
            raise AttributeError(f"ppclust.{name} is not available in this build: {err}") from err
    if name in _LAZY:
        mod, attr = _LAZY[name]
        return getattr(importlib.import_module(mod), attr)
    if name in _SUBMODULES:
        return importlib.import_module(f"ppclust.{name}")
    raise AttributeError(f"module 'ppclust' has no attribute {name!r}")


def __dir__():
    from ppclust._registry import ESTIMATORS

    return sorted(set(globals()) | set(ESTIMATORS) | set(_LAZY) | _SUBMODULES)


__all__ = [
    "__version__",
    "SideInfo",
    "RowPairs",
    "load",
    "TVClust",
    "DPMeans",
    "RDPMeans",
    "SemiSupervisedGMM",
    "BayesianSemiSupervisedGMM",
    "CECIB",
    "C3L",
    "CCIB",
    "SMIC",
    "warmup",
]
