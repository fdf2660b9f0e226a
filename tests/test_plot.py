"""Plot helpers: colour matching across partitions, figures build without error."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402

from ppclust.plot import match_labels, plot_partitions  # noqa: E402


def test_match_labels_follows_reference_and_keeps_partition():
    ref = np.array([0, 0, 1, 1, 2, 2])
    lab = np.array([5, 5, 3, 3, 3, 7])
    out = match_labels(ref, lab)
    assert out.tolist() == [0, 0, 1, 1, 1, 2]
    # a permutation of the reference maps back onto it exactly
    perm = np.array([2, 0, 1])[ref]
    assert match_labels(ref, perm).tolist() == ref.tolist()
    # more clusters than classes: the extra ones get fresh ids beyond the reference's
    many = np.arange(6)
    assert sorted(match_labels(ref, many).tolist()) == [0, 1, 2, 3, 4, 5]


def test_plot_partitions_builds_one_panel_per_partition():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 3))
    y = np.repeat([0, 1, 2], 10)
    fig = plot_partitions(X, {"truth": y, "a": (y + 1) % 3, "b": np.zeros(30, int)}, ncols=2)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titles == ["truth (K=3)", "a (K=3)", "b (K=1)"]
