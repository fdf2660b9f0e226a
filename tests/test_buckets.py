"""Bucket sizes and zero-weight padding (``ppclust._buckets``)."""

from __future__ import annotations

import numpy as np
import pytest

from ppclust._buckets import bucket_size, pad_links, pad_pairs, pad_rows, pad_vector


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


def test_padded_links_add_no_count():
    """``pad_links``: the pair list and the neighbour table padded to bucket shapes with weight-0 entries, so
    the link counts of any labelling (``ppclust.sideinfo.pair_counts``, ``link_counts``) are those of the
    links themselves; two sizes of one bucket give the same shapes."""
    from ppclust.models.tvclust import make_links
    from ppclust.sideinfo import link_counts, pair_counts

    rng = np.random.default_rng(0)
    links = make_links(20, [[0, 1], [1, 2], [3, 9], [1, 9]], [1, -1, 1, -1])
    padded = pad_links(links, 32)
    assert padded.pairs.shape == (8, 2) and padded.nbr.shape == (32, 3)  # widest row: degree 3
    assert padded.weight[4:].sum() == 0 and padded.wgt[20:].sum() == 0
    other = pad_links(make_links(25, [[0, 1], [1, 2], [1, 5]], [1, 1, -1]), 32)
    assert [a.shape for a in other] == [a.shape for a in padded]
    labels = rng.integers(0, 3, 20)
    lab_pad = np.r_[labels, np.full(12, 3)]  # padding label k_max = 3
    np.testing.assert_array_equal(pair_counts(lab_pad, padded, xp=np), pair_counts(labels, links, xp=np))
    got = link_counts(lab_pad[padded.nbr[:20]], padded.sgn[:20], padded.wgt[:20], 3)
    want = link_counts(labels[np.asarray(links.nbr)], np.asarray(links.sgn), np.asarray(links.wgt), 3)
    for a, b in zip(got[:4], want[:4], strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    with pytest.raises(ValueError, match="smaller"):
        pad_links(links, 16)


def test_padded_arrays_start_on_a_64_byte_boundary():
    """JAX's CPU backend copies a host array that is not 64-byte aligned when a program reads it; NumPy's
    large allocations are 16-byte aligned, so every padded input (rows, weights, vectors) is allocated
    aligned, whatever the size and dtype."""
    from ppclust._buckets import ALIGNMENT, aligned_zeros

    for n in (3, 1000, 300_001):
        for dtype in (np.float64, np.float32, np.int32, np.int8):
            X = np.arange(n * 2, dtype=dtype).reshape(n, 2)
            Xp, w = pad_rows(X)
            v = pad_vector(np.arange(n, dtype=dtype), bucket_size(n), fill=-1)
            for a in (Xp, w, v):
                assert a.ctypes.data % ALIGNMENT == 0 and a.flags.c_contiguous
            np.testing.assert_array_equal(Xp[:n], X)
            assert not Xp[n:].any() and w.sum() == n and (v[n:] == -1).all()
    z = aligned_zeros((7, 5), np.float32)
    assert z.shape == (7, 5) and z.dtype == np.float32 and not z.any() and z.ctypes.data % ALIGNMENT == 0
