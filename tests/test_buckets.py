"""Bucket sizes and zero-weight padding (``ppclust._buckets``)."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust._buckets import bucket_size, pad_pairs, pad_rows, pad_vector


@pytest.mark.parametrize("minimum", [1, 8, 32])
def test_buckets_cover_n_with_at_most_a_third_padding(minimum):
    sizes = set()
    for n in range(0, 5000):
        b = bucket_size(n, minimum)
        sizes.add(b)
        assert b >= max(n, minimum)
        if n > minimum:
            assert b < 1.5 * n  # the padding is less than half of the data, under a third of the bucket
        top = b & -b  # the bucket is 2**k or 3 * 2**(k-1)
        assert b == top or b == 3 * top
    assert len({bucket_size(n, minimum) for n in range(100, 10_001)}) == 14


def test_bucket_size_is_monotone_and_idempotent():
    bs = [bucket_size(n) for n in range(3000)]
    assert bs == sorted(bs)
    assert all(bucket_size(b) == b for b in set(bs))


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="n must be >= 0"):
        bucket_size(-1)
    with pytest.raises(ValueError, match="power of two"):
        bucket_size(10, minimum=24)
    with pytest.raises(ValueError, match="smaller"):
        pad_rows(np.ones((5, 2)), 4)


def test_padding_is_zero_with_zero_weight():
    X = np.arange(14.0).reshape(7, 2)
    Xp, w = pad_rows(X)
    assert Xp.shape == (32, 2) and np.array_equal(Xp[:7], X) and not Xp[7:].any()
    assert w.sum() == 7 and w[:7].all()
    pairs, pw = pad_pairs([[0, 3], [2, 1]], 8)
    assert pairs.shape == (8, 2) and pw.tolist() == [1, 1, 0, 0, 0, 0, 0, 0]
    assert pad_vector(np.array([2, 0]), 4, -1).tolist() == [2, 0, -1, -1]
