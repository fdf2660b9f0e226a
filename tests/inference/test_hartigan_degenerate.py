"""Degenerate data for CEC-IB and C3L: every point gets a cluster, at least one cluster survives,
and a singular covariance is regularised with the documented relative jitter only when the data need it.

Each case failed before the fix: C3L with a constant feature returned every label -1 and n_clusters_ == 0;
CECIB raised "need at least one array to stack" (constant, collinear, one-hot columns, n_clusters > n) and
returned -1 labels after max_passes=1.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from ppclust.estimators.c3l import C3L
from ppclust.estimators.cecib import CECIB
from ppclust.inference import cecib, hartigan


def _two_blobs(seed=0, n=60, d=3):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(size=(n, d)), rng.normal(size=(n, d)) + 6.0])
    return x, np.repeat([0, 1], n)


def _check_labels(est, n):
    assert est.labels_.shape == (n,)
    assert est.labels_.min() >= 0, "a point was left without a cluster"
    assert est.n_clusters_ >= 1
    assert set(np.unique(est.labels_)) == set(range(est.n_clusters_))


def _refines(labels, truth):
    """Well separated blobs: every cluster lies inside one blob, and there are at most a few."""
    for k in np.unique(labels):
        assert len(np.unique(truth[labels == k])) == 1
    assert len(np.unique(labels)) <= 4


def _constant(x):
    return np.c_[x, np.full(len(x), 3.0)]


def _collinear(x):
    return np.c_[x, x[:, 0] - 2.0 * x[:, 1]]


def _one_hot(x):
    return np.c_[x, np.eye(3)[np.arange(len(x)) % 3]]


@pytest.mark.parametrize(
    "make",
    [
        _constant,
        pytest.param(_collinear, marks=pytest.mark.slow),
        pytest.param(_one_hot, marks=pytest.mark.slow),
    ],
    ids=["constant", "collinear", "one-hot"],
)
def test_cecib_singular_features_regularised(make):
    x, truth = _two_blobs()
    X = make(x)
    with pytest.warns(UserWarning, match="regularised"):
        est = CECIB(n_clusters=4, n_init=3, random_state=0).fit(X)
    _check_labels(est, len(X))
    assert est.reg_covar_ == hartigan.JITTER and np.isfinite(est.objective_)
    if make is not _one_hot:  # one-hot categories are themselves near-zero-entropy clusters of the model
        _refines(est.labels_, truth)
    # the cost is that of the regularised model, part by part
    assert est.objective_ == pytest.approx(sum(est.objective_terms_.values()), rel=1e-7)  # cond ~1/jitter


@pytest.mark.slow
def test_cecib_jitter_is_relative_to_the_data_scale():
    x, _ = _two_blobs(1)
    X = _constant(x)
    with pytest.warns(UserWarning):
        ref = CECIB(n_clusters=4, n_init=2, random_state=0).fit(X).labels_
    for c in (1e-5, 1e5):
        with pytest.warns(UserWarning):
            got = CECIB(n_clusters=4, n_init=2, random_state=0).fit(X * c).labels_
        np.testing.assert_array_equal(got, ref, err_msg=f"scale {c}")


def test_cecib_well_posed_data_not_regularised():
    x, _ = _two_blobs(2)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = CECIB(n_clusters=4, n_init=2, random_state=0).fit(x)
    assert est.reg_covar_ == 0.0


def test_cecib_binary_columns_and_more_clusters_than_points():
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(40, 3)).astype(float) + 1e-3 * rng.normal(size=(40, 3))
    X[:, 2] = rng.integers(0, 2, 40)  # an exactly binary column: clusters pure in it are singular
    est = CECIB(n_clusters=8, n_init=2, random_state=0).fit(X)
    _check_labels(est, len(X))
    x, _ = _two_blobs(4, n=6, d=2)
    est = CECIB(n_clusters=30, n_init=2, random_state=0).fit(x)  # n_clusters > n = 12
    _check_labels(est, len(x))
    assert np.isfinite(est.objective_)


def test_cecib_max_passes_one_assigns_every_point():
    """Lazy reassignment leaves a deleted cluster's earlier points orphaned until the next pass; a run
    stopped by max_passes right after a deletion must still assign them (to the cheapest cluster)."""
    x, _ = _two_blobs(5, n=80, d=2)
    x = np.r_[x, np.random.default_rng(5).normal(size=(40, 2)) * 0.3 + [3.0, 3.0]]
    hits = 0
    for seed in range(6):
        est = CECIB(n_clusters=10, n_init=1, max_iter=1, min_cluster_fraction=0.1, random_state=seed).fit(x)
        _check_labels(est, len(x))
        hits += not est.converged_
    assert hits > 0  # the scenario was exercised
    with jax.enable_x64(True):  # the engine result itself: no slot label of a dead cluster
        X = jnp.asarray(x)
        cost = cecib.make_cost(X, 1, 1.0)
        labels0 = jnp.asarray(np.arange(len(x)) % 10, jnp.int32)
        for backend in ("numba", "xla"):
            res = hartigan.run(
                cost,
                X,
                jnp.full(len(x), -1, jnp.int32),
                labels0,
                K=10,
                min_size=12.0,
                max_passes=1,
                backend=backend,
            )
            assert np.asarray(res.active)[np.asarray(res.labels)].all(), backend
            fresh = cecib.cecib_cost(x, np.asarray(res.labels), None, 1.0).total
            assert float(res.cost) == pytest.approx(fresh, abs=1e-9)


def test_engine_keeps_one_cluster_when_every_initial_cluster_is_degenerate():
    x, _ = _two_blobs(6, n=10, d=2)
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        cost = cecib.make_cost(X, 1, 1.0)
        labels0 = jnp.arange(len(x), dtype=jnp.int32)  # one point per slot: all singular
        for backend in ("numba", "xla"):
            res = hartigan.run(
                cost, X, jnp.full(len(x), -1, jnp.int32), labels0, K=len(x), min_size=4.0, backend=backend
            )
            assert int(np.asarray(res.active).sum()) == 1 and np.all(np.asarray(res.labels) == 0), backend
            one = cecib.cecib_cost(x, np.zeros(len(x)), None).total
            assert float(res.cost) == pytest.approx(one, abs=1e-9)


def _collinear_r(x):
    return np.c_[x, x[:, 1] - 2.0 * x[:, 2]]  # collinear among the coordinates along the hyperplane


@pytest.mark.parametrize(
    "make", [_constant, pytest.param(_collinear_r, marks=pytest.mark.slow)], ids=["constant", "collinear"]
)
def test_c3l_singular_features(make):
    x, truth = _two_blobs(7)
    X = make(x)
    hp = (np.r_[1.0, 0.0, 0.0, 0.0], 3.0)
    with pytest.warns(UserWarning, match="regularised"):
        est = C3L(n_clusters=4, n_init=3, random_state=0).fit(X, hyperplane=hp)
    _check_labels(est, len(X))
    assert est.reg_covar_ == hartigan.JITTER and np.isfinite(est.objective_)
    _refines(est.labels_, truth)
    assert np.isfinite(est.predict(X)).all()
