"""k-means++ seeding (ppclust.inference.init): the gather-free inverse-CDF search and the seeding of rows
with padding anywhere (rows spread over processes) against the seeding of the real rows."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from ppclust._jax import x64
from ppclust.inference import init

_search = jax.jit(init.prefix_search)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=70),
    st.integers(-1, 120),
)
def test_prefix_search_is_searchsorted_of_the_cumulative_sum(counts, t):
    v = np.array(counts, np.int32)
    want = min(int(np.searchsorted(np.cumsum(v), t, side="left")), len(v) - 1)
    assert int(_search(jnp.asarray(v), jnp.int32(t))) == want


def test_prefix_search_on_probabilities():
    rng = np.random.default_rng(0)
    for n in (1, 2, 7, 64, 1000):
        p = rng.random(n) * (rng.random(n) < 0.7)
        cum = np.cumsum(p)
        for u in rng.random(20):
            t = cum[-1] * (1 - u)
            want = min(int(np.searchsorted(cum, t, side="left")), n - 1)
            assert int(_search(jnp.asarray(p), jnp.asarray(t))) == want


def test_kmeanspp_with_padding_anywhere_equals_the_seeding_of_the_real_rows():
    """The seeding used on rows spread over processes (padding between the processes' blocks) picks the
    same centres as :func:`kmeanspp_centres` on the real rows alone, labelled (fixed) centres or not."""
    rng = np.random.default_rng(3)
    x = rng.normal(size=(90, 3)) + rng.integers(0, 4, (90, 1)) * 5.0
    blocks = [x[:20], x[20:55], x[55:]]
    pad = 32
    xp = np.concatenate([np.concatenate([b, np.full((pad - len(b) % pad, 3), 7.5)]) for b in blocks])
    w = np.concatenate([np.r_[np.ones(len(b)), np.zeros(pad - len(b) % pad)] for b in blocks])
    with x64():
        for fixed in ([False] * 4, [True, False, False, True]):
            fixed = jnp.asarray(fixed)
            centres = jnp.where(fixed[:, None], jnp.asarray(rng.normal(size=(4, 3))), 0.0)
            for seed in range(4):
                key = jax.random.key(seed)
                want = init.kmeanspp_centres(key, jnp.asarray(x), centres, fixed)
                mask = jnp.asarray(w) > 0
                got = init.kmeanspp_centres(key, jnp.asarray(xp), centres, fixed, len(x), mask=mask)
                np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
                # the seeds' positions in the padded rows are the seeds' rows among the real ones
                first, u = init.kmeanspp_uniforms(key, 4, len(x))
                idx_real = init.kmeanspp_from_uniforms(first, u, jnp.asarray(x), centres, fixed)[0]
                xp_j = jnp.asarray(xp)
                idx_pad = init.kmeanspp_from_uniforms(first, u, xp_j, centres, fixed, len(x), mask)[0]
                real_rows = np.flatnonzero(w)
                seeds = np.asarray(idx_pad)
                np.testing.assert_array_equal(
                    np.where(seeds >= 0, np.searchsorted(real_rows, seeds), -1), np.asarray(idx_real)
                )
                assert np.all(w[seeds[seeds >= 0]] == 1)
