"""Bucket padding is invisible: a solver run on rows padded to a larger bucket returns the unpadded result.

Each test runs a solver twice on the same data, once padded to its own bucket and once to a much larger
size (the module's ``bucket_size`` replaced), and compares labels, objectives and statistics. A padding
row that leaked into a sum (an M-step, a mean, the objective), a draw (k-means++, a visiting order) or a
cluster opening would change them.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest

from ppclust._buckets import pad_rows
from ppclust._jax import x64
from ppclust.families import mixture_niw_prior
from ppclust.inference import dpmeans, em
from ppclust.models.ssgmm import default_component_classes, label_log_mask
from ppclust.sideinfo import SideInfo


def _blobs(n, seed=0):
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n)
    X = np.array([[0.0, 0.0], [4.0, 0.0], [0.0, 4.0]])[truth] + rng.normal(size=(n, 2))
    return X - X.mean(0), truth


def _big(n, minimum=32):
    return 4 * n + 13  # far beyond the bucket, not a bucket size


def test_weighted_prior_equals_the_unpadded_prior():
    X, _ = _blobs(37)
    with x64():
        ref = mixture_niw_prior(X, 2.0)
        Xp, w = pad_rows(X + 0.0, 200)
        Xp[37:] = 1e3  # padding rows far away: a leak would move the mean and the variance
        got = mixture_niw_prior(Xp, 2.0, weight=w)
    for a, b in zip(ref, got, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("cov_type", ["full", "diag"])
def test_em_on_padded_rows_equals_em_on_the_rows(monkeypatch, cov_type):
    n, K = 61, 3
    X, truth = _blobs(n)
    codes = np.where(np.arange(n) % 5 == 0, truth, -1)
    log_mask, allowed = label_log_mask(codes, default_component_classes(K, 3), 3, 0.05)
    centres, fixed = np.zeros((K, 2)), np.zeros(K, bool)
    centres[0], fixed[0] = X[codes == 0].mean(0), True

    def run():
        with x64():
            prior = em.default_prior(X)
            return em.fit(
                jax.random.key(3), X, log_mask, allowed, centres, fixed,
                n_components=K, cov_type=cov_type, max_iter=30, tol=1e-8, n_init=3, prior=prior,
            )  # fmt: skip

    ref = run()
    monkeypatch.setattr(em, "bucket_size", _big)
    got = run()
    assert np.asarray(got.resp).shape == (n, K)
    np.testing.assert_array_equal(np.asarray(got.resp).argmax(1), np.asarray(ref.resp).argmax(1))
    assert int(got.n_iter) == int(ref.n_iter)
    np.testing.assert_allclose(float(got.objective), float(ref.objective), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(got.all_objectives), np.asarray(ref.all_objectives), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(got.resp), np.asarray(ref.resp), atol=1e-9)
    np.testing.assert_allclose(np.asarray(got.params.means), np.asarray(ref.params.means), atol=1e-9)
    np.testing.assert_allclose(np.asarray(got.params.weights), np.asarray(ref.params.weights), atol=1e-10)


@pytest.mark.parametrize("variant", ["sequential", "delayed"])
def test_dpmeans_on_padded_rows_equals_dpmeans_on_the_rows(monkeypatch, variant):
    n = 53
    X, truth = _blobs(n, seed=1)
    rng = np.random.default_rng(2)
    pairs = rng.integers(0, n, (40, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1).astype(np.int8)
    table = SideInfo.from_pairs(n, pairs, sign, on_conflict="keep").neighbour_table()

    def run():
        with x64():
            return dpmeans.fit_restarts(
                jax.random.key(5), X, table, 6.0, 2, k_max=8, max_iter=12, variant=variant, patience=2
            )

    ref = run()
    monkeypatch.setattr(dpmeans, "bucket_size", _big)
    got = run()
    assert np.asarray(got.labels).shape == (2, n)
    np.testing.assert_array_equal(np.asarray(got.labels), np.asarray(ref.labels))
    np.testing.assert_array_equal(np.asarray(got.n_iter), np.asarray(ref.n_iter))
    np.testing.assert_allclose(np.asarray(got.objective), np.asarray(ref.objective), rtol=1e-10)
    np.testing.assert_allclose(np.asarray(got.centers), np.asarray(ref.centers), atol=1e-10)


@pytest.mark.parametrize(("n", "size"), [(178, 192), (1600, 2048), (1, 32)])
def test_random_visiting_order_is_the_permutation_of_the_real_rows(n, size):
    """DP-means' random sweep order on padded rows is ``jax.random.permutation(key, n)`` (the draws of the
    unpadded solver), then the padding rows; 1600 and 2048 need different numbers of shuffle rounds."""
    key = jax.random.fold_in(jax.random.key(4), 9)
    want = np.asarray(jax.random.permutation(key, n))
    got = np.asarray(jax.jit(dpmeans._random_order, static_argnums=2)(key, np.int32(n), size))
    np.testing.assert_array_equal(got[:n], want)
    np.testing.assert_array_equal(np.sort(got[n:]), np.arange(n, size))
