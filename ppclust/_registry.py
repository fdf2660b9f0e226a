"""The one table of ppclust's methods: estimator class, side information accepted, paper.

The CLI (`ppclust methods`, `ppclust fit --method NAME`), the demo and the lazy top-level imports all
read this table, so a method becomes reachable everywhere by adding its row here.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

__all__ = ["MethodInfo", "METHODS", "ESTIMATORS", "available"]


@dataclass(frozen=True)
class MethodInfo:
    """One row of the table of methods: the CLI name, the estimator class and what the method accepts.

    Parameters
    ----------
    name : str
        The CLI name (``ppclust fit --method NAME``).
    estimator : str
        ``"module:Class"`` of the estimator, imported by :meth:`load`.
    side_info : str
        The side information the method accepts, in words.
    inference : str
        The inference algorithm, in words.
    paper : str
        The paper the method comes from.

    Examples
    --------
    >>> from ppclust._registry import METHODS
    >>> info = METHODS["dpmeans"]
    >>> info.estimator, info.load().__name__
    ('ppclust.estimators.dpmeans:DPMeans', 'DPMeans')
    """

    name: str  # CLI name
    estimator: str  # "module:Class"
    side_info: str  # what it accepts
    inference: str
    paper: str

    def load(self):
        """The estimator class (its module is imported on first use)."""
        module, cls = self.estimator.split(":")
        return getattr(importlib.import_module(module), cls)


METHODS: dict[str, MethodInfo] = {
    m.name: m
    for m in [
        MethodInfo(
            "tvclust",
            "ppclust.estimators.tvclust:TVClust",
            "noisy links (labels -> links)",
            "collapsed Gibbs, ArviZ posterior",
            "Khashabi et al. 2015",
        ),
        MethodInfo(
            "dpmeans",
            "ppclust.estimators.dpmeans:DPMeans",
            "none",
            "hard assignments (small-variance limit)",
            "Kulis & Jordan 2012",
        ),
        MethodInfo(
            "rdpmeans",
            "ppclust.estimators.dpmeans:RDPMeans",
            "noisy links (labels -> links)",
            "hard assignments, annealed link weights",
            "Khashabi et al. 2015",
        ),
        MethodInfo(
            "ssgmm",
            "ppclust.estimators.ssgmm:SemiSupervisedGMM",
            "partial labels",
            "EM (jitted), ML or MAP",
            "CEC-IB / C3L papers' baseline",
        ),
        MethodInfo(
            "bayesian-ssgmm",
            "ppclust.estimators.ssgmm:BayesianSemiSupervisedGMM",
            "partial labels",
            "collapsed Gibbs, ArviZ posterior",
            "CEC-IB / C3L papers' baseline (Bayesian)",
        ),
        MethodInfo(
            "cecib",
            "ppclust.estimators.cecib:CECIB",
            "partial labels (coarse, noisy)",
            "Hartigan moves",
            "Smieja & Geiger 2017",
        ),
        MethodInfo(
            "c3l",
            "ppclust.estimators.c3l:C3L",
            "two categories or a hyperplane",
            "Hartigan moves",
            "Smieja, Struski & Tabor 2019",
        ),
        MethodInfo(
            "ccib",
            "ppclust.estimators.ccib:CCIB",
            "background partition to avoid",
            "deterministic annealing",
            "Gondek & Hofmann 2004",
        ),
        MethodInfo(
            "smic",
            "ppclust.estimators.smic:SMIC",
            "must/cannot links (labels -> links)",
            "eigendecomposition",
            "Calandriello, Niu & Sugiyama 2014",
        ),
    ]
}

# public estimator name -> registry entry
ESTIMATORS = {m.estimator.split(":")[1]: m for m in METHODS.values()}


def available() -> dict[str, MethodInfo]:
    """The methods whose estimator module is present in this installation.

    Returns
    -------
    dict of str to MethodInfo
        The rows of :data:`METHODS` whose estimator class imports.

    Examples
    --------
    >>> from ppclust._registry import available
    >>> "tvclust" in available()
    True
    """
    out = {}
    for name, info in METHODS.items():
        try:
            info.load()
        except (ImportError, AttributeError):
            continue
        out[name] = info
    return out
