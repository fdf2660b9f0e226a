"""Plot helpers: the backend is left alone, every figure draws and labels something, colours and the
uncertainty formula are right. Figures are drawn on stand-alone Figures (no pyplot) unless a test is
about pyplot."""

from __future__ import annotations

import colorsys
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import LineCollection, PathCollection
from matplotlib.colors import to_rgb
from matplotlib.figure import Figure

from ppclust import plot
from ppclust.plot import match_labels, plot_partitions

ROOT = Path(__file__).resolve().parent.parent


def _ax():
    return Figure(figsize=(4, 3)).add_subplot()


def _blobs(n=30, d=4, seed=0):
    rng = np.random.default_rng(seed)
    y = np.repeat([0, 1, 2], n // 3)
    X = rng.normal(size=(n, d)) + 4 * y[:, None]
    return X, y


def test_import_leaves_the_backend_alone():
    """`import ppclust.plot` (and drawing into pyplot) must not switch a notebook's inline backend."""
    code = (
        "import matplotlib; before = matplotlib.get_backend(); import ppclust.plot as p;"
        "import numpy as np; p.plot_k_posterior(np.array([1, 2, 2]));"
        "after = matplotlib.get_backend(); print(before, after); assert before == after, (before, after)"
    )
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline", PYTHONPATH=str(ROOT))
    res = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split() == ["module://matplotlib_inline.backend_inline"] * 2


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
    X, y = _blobs()
    axes = plot_partitions(X, {"truth": y, "a": (y + 1) % 3, "b": np.zeros(30, int)}, ncols=2, fig=Figure())
    assert axes.shape == (2, 2)
    titles = [ax.get_title() for ax in axes.ravel() if ax.get_title()]
    assert titles == ["truth (K=3)", "a (K=3)", "b (K=1)"]
    assert axes[0, 0].get_xlabel().startswith("PC1 (") and "% of variance" in axes[0, 0].get_xlabel()
    assert not axes[1, 1].axison
    assert axes[0, 0].get_legend() is not None and axes[0, 1].get_legend() is None


def _distinct_hue(a, b):
    """Two RGB colours differ in hue family: hue 18 degrees apart, or one grey and one saturated."""
    (h1, s1, _), (h2, s2, _) = colorsys.rgb_to_hsv(*a), colorsys.rgb_to_hsv(*b)
    if min(s1, s2) < 0.15:
        return abs(s1 - s2) > 0.3
    return min(abs(h1 - h2), 1 - abs(h1 - h2)) > 0.05


@pytest.mark.parametrize("n", [3, 10, 20, 40])
def test_neighbouring_cluster_ids_get_distinct_colours(n):
    colors = plot.cluster_colors(n)
    assert colors.shape == (n, 4)
    rgb = colors[:, :3]
    assert all(_distinct_hue(rgb[k], rgb[k + 1]) for k in range(n - 1))
    assert len({tuple(np.round(c, 3)) for c in rgb}) == n
    # the check has teeth: tab20 in its own order puts each colour next to its light shade
    from matplotlib import colormaps

    tab20 = np.asarray(colormaps["tab20"].colors)
    assert not _distinct_hue(tab20[0], tab20[1])


def test_pca_axis_labels_give_explained_variance():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(200, 3)) * np.array([3.0, 2.0, 1.0])  # variances 9 : 4 : 1
    X2, ratio = plot.pca_2d(X)
    assert X2.shape == (200, 2)
    lam = np.linalg.eigvalsh(np.cov(X.T, bias=True))[::-1]
    np.testing.assert_allclose(ratio, lam[:2] / lam.sum(), rtol=1e-10)
    ax = plot.plot_data_links(X, np.zeros(200, int), ax=_ax())
    assert ax.get_xlabel() == f"PC1 ({100 * ratio[0]:.1f}% of variance)"
    assert ax.get_ylabel() == f"PC2 ({100 * ratio[1]:.1f}% of variance)"
    ax2 = plot.plot_data_links(X[:, :2], np.zeros(200, int), ax=_ax())
    assert ax2.get_xlabel() == "feature 1"


def test_data_links_draws_links_in_two_styles_and_samples_them_down():
    X, y = _blobs(60)
    rng = np.random.default_rng(0)
    ml = rng.integers(0, 60, size=(500, 2))
    ml = ml[ml[:, 0] != ml[:, 1]]
    cl = np.array([[0, 59], [1, 58]])
    ax = plot.plot_data_links(X, y, ml, cl, ax=_ax(), max_links=100)
    lines = [c for c in ax.collections if isinstance(c, LineCollection)]
    assert len(lines) == 2
    may, mayn = lines
    assert len(may.get_segments()) == 100 and len(mayn.get_segments()) == 2
    assert may.get_linestyle() != mayn.get_linestyle()
    assert to_rgb(may.get_color()[0]) != to_rgb(mayn.get_color()[0])
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [
        "cluster 0",
        "cluster 1",
        "cluster 2",
        f"may-link (100 of {len(ml)} shown)",
        "may-not-link (2)",
    ]
    pts = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(pts) == 1 and len(pts[0].get_offsets()) == 60


def test_unlabelled_points_are_grey_and_in_the_legend():
    X, y = _blobs()
    y = y.copy()
    y[::2] = -1
    ax = plot.plot_data_links(X, y, ax=_ax())
    pts = [c for c in ax.collections if isinstance(c, PathCollection)][0]
    np.testing.assert_allclose(pts.get_facecolors()[0], plot.UNLABELLED_COLOR)
    assert "unlabelled" in [t.get_text() for t in ax.get_legend().get_texts()]


def test_point_uncertainty_against_hand_values():
    # mclust form: 1 - max_k z_ik
    proba = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    np.testing.assert_allclose(plot.point_uncertainty(None, proba=proba), [0.1, 0.5, 0.2])
    # co-clustering form on a 4-point PSM, estimate {0, 1}, {2, 3}
    psm = np.array([[1.0, 0.8, 0.2, 0.0], [0.8, 1.0, 0.6, 0.4], [0.2, 0.6, 1.0, 0.9], [0.0, 0.4, 0.9, 1.0]])
    labels = np.array([0, 0, 1, 1])
    # point 1: own cluster mean 0.8, other cluster mean (0.6 + 0.4) / 2 = 0.5 -> 1 - 0.8
    # point 0: 0.8 vs 0.1 -> 0.2; point 2: 0.9 vs 0.4 -> 0.1; point 3: 0.9 vs 0.2 -> 0.1
    np.testing.assert_allclose(plot.point_uncertainty(labels, psm=psm), [0.2, 0.2, 0.1, 0.1])
    # a point whose mean co-clustering with another cluster beats its own: that probability counts
    labels2 = np.array([0, 1, 1, 1])  # point 1 with {2, 3}: (0.6 + 0.4) / 2 = 0.5, with {0}: 0.8
    u = plot.point_uncertainty(labels2, psm=psm)
    assert u[1] == pytest.approx(0.2)
    # singleton {0}: best other mean = (0.8 + 0.2 + 0.0) / 3 = 1/3 -> min(1/3, 2/3)
    assert u[0] == pytest.approx(1 / 3)
    # a sure partition: zero uncertainty everywhere
    sure = (labels[:, None] == labels[None, :]).astype(float)
    np.testing.assert_allclose(plot.point_uncertainty(labels, psm=sure), 0.0)
    with pytest.raises(ValueError, match="exactly one of"):
        plot.point_uncertainty(labels)


def test_uncertainty_plot_colours_by_uncertainty_and_circles_the_worst():
    X, y = _blobs()
    u = np.linspace(0, 0.5, 30)
    ax = plot.plot_uncertainty(X, y, u, ax=_ax(), top=3)
    pts = [c for c in ax.collections if isinstance(c, PathCollection)]
    assert len(pts) == 2
    np.testing.assert_allclose(pts[0].get_array(), u)
    np.testing.assert_allclose(pts[1].get_offsets(), plot.pca_2d(X)[0][[29, 28, 27]])
    assert ax.get_xlabel().startswith("PC1") and "uncertainty" in ax.figure.axes[-1].get_ylabel()


def test_k_posterior_bars_are_the_draw_frequencies():
    k = np.array([[3, 3, 4, 3], [3, 5, 3, 4]])
    ax = plot.plot_k_posterior(k, ax=_ax())
    heights = {round(p.get_x() + p.get_width() / 2): p.get_height() for p in ax.patches}
    assert heights == {3: pytest.approx(5 / 8), 4: pytest.approx(2 / 8), 5: pytest.approx(1 / 8)}
    assert ax.get_xlabel() == "number of clusters K" and ax.get_ylabel() == "posterior probability"


def test_psm_heatmap_is_ordered_by_the_point_estimate():
    labels = np.array([1, 0, 1, 0])
    psm = (labels[:, None] == labels[None, :]).astype(float)
    ax = plot.plot_psm(psm, labels, ax=_ax())
    shown = ax.images[0].get_array()
    np.testing.assert_array_equal(shown, [[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]])
    assert "point estimate" in ax.get_xlabel() and len(ax.lines) == 2  # one block boundary each way
    assert "P(z_i = z_j" in ax.figure.axes[-1].get_ylabel()


def test_trace_has_one_line_per_chain():
    ax = plot.plot_trace(np.arange(12).reshape(3, 4), "log joint", ax=_ax())
    assert len(ax.lines) == 3 and ax.get_ylabel() == "log joint" and ax.get_xlabel() == "draw"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["chain 0", "chain 1", "chain 2"]


def test_cost_trace_from_arrays_dicts_and_estimators():
    ax = plot.plot_cost_trace(np.array([5.0, 3.0, 2.5, np.nan]), ax=_ax(), label="run")
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [5.0, 3.0, 2.5])
    ax = plot.plot_cost_trace({"a": [3, 2], "b": [4, 1, 0]}, ax=_ax())
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]

    class Fitted:  # the trace attributes of a fitted C3L / CCIB
        cost_trace_ = np.array([10.0, 8.0, 7.5])

    class Annealed:
        annealing_trace_ = {"objective": np.array([0.1, 0.3]), "rho": np.array([1.0, 0.9])}

    ax = plot.plot_cost_trace(Fitted(), ax=_ax())
    assert ax.get_ylabel() == "cost" and ax.get_xlabel() == "pass"
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), Fitted.cost_trace_)
    ax = plot.plot_cost_trace(Annealed(), ax=_ax())
    assert ax.get_xlabel() == "temperature step"
    np.testing.assert_array_equal(ax.lines[0].get_ydata(), [0.1, 0.3])
    with pytest.raises(TypeError, match="has no cost trace"):
        plot.plot_cost_trace(object(), ax=_ax())


def test_cost_trace_of_a_real_fit():
    from ppclust import DPMeans

    X, _ = _blobs()
    est = DPMeans(lam=20.0, random_state=0).fit(X)
    ax = plot.plot_cost_trace(est, ax=_ax())
    np.testing.assert_allclose(ax.lines[0].get_ydata(), est.objective_trace_)
    assert ax.get_legend().get_texts()[0].get_text() == "DPMeans"


def test_benefit_curve_mean_and_band():
    amounts = [0, 50, 100]
    scores = {"TVClust": np.array([[0.5, 0.7], [0.8, 0.8], [0.9, 1.0]]), "SMIC": [0.4, 0.5, 0.6]}
    ax = plot.plot_benefit(amounts, scores, ax=_ax(), baseline={"no links": 0.45})
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.6, 0.8, 0.95])
    assert len(ax.collections) == 1  # the band of the repeated method only
    assert ax.get_xlabel() == "number of links" and ax.get_ylabel() == "NMI"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["TVClust", "SMIC", "no links"]
    with pytest.raises(ValueError, match="one row per amount"):
        plot.plot_benefit([0, 1], {"x": [1, 2, 3]}, ax=_ax())


def test_benefit_curve_errorbars_are_one_sd_of_the_repeats():
    scores = {"TVClust": np.array([[0.5, 0.7], [0.8, 0.8], [0.9, 1.0]])}
    ax = plot.plot_benefit([0, 50, 100], scores, ax=_ax(), errorbars=True)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.6, 0.8, 0.95])
    segs = ax.collections[0].get_segments()  # one vertical bar per amount: mean -+ sd
    np.testing.assert_allclose([s[:, 1] for s in segs], [[0.5, 0.7], [0.8, 0.8], [0.9, 1.0]])


def test_render_and_save_fit_figures_bypass_pyplot(tmp_path):
    import matplotlib.pyplot as plt

    from ppclust import DPMeans

    before = plt.get_fignums()
    fig = plot.render(plot.plot_partitions, *_blobs()[:1], {"a": _blobs()[1]})
    assert isinstance(fig, Figure) and fig.axes[0].get_title() == "a (K=3)"
    X, y = _blobs()
    est = DPMeans(lam=20.0, random_state=0).fit(X)
    paths = plot.save_fit_figures(est, X, tmp_path, must_link=[[0, 1]], cannot_link=[[0, 29]])
    assert [p.name for p in paths] == ["partition.png", "cost_trace.png"]
    assert all(p.stat().st_size > 1000 for p in paths)
    assert plt.get_fignums() == before


def test_pyplot_path_makes_a_figure_when_no_axes_are_given():
    import matplotlib.pyplot as plt

    plt.switch_backend("Agg")  # this test process only (the library never switches)
    ax = plot.plot_k_posterior([2, 2, 3])
    try:
        assert ax.figure.number in plt.get_fignums() and ax.patches
    finally:
        plt.close(ax.figure)


def test_benefit_curve_skips_missing_repeats():
    """NaN = a repeat missing at that amount: the mean and sd are over the repeats present."""
    scores = {"TVClust": np.array([[0.5, 0.7, 0.9], [0.8, np.nan, np.nan]])}
    ax = plot.plot_benefit([0, 1], scores, ax=_ax(), errorbars=True)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), [0.7, 0.8])
