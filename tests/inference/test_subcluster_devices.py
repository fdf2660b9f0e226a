"""The sub-cluster sampler data parallel over 2 simulated CPU devices equals the single-device chain.

jax fixes its device count at start-up, so the run happens in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=2`` (as ``tests/test_devices.py``). n is odd, so
a padding row exists: a padding row counted in a slot, or a row drawn on the wrong device or with the
wrong uniform, would change the labels of some sweep, and every later draw with them.
"""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

from tests.test_devices import run_two_device_child

CHILD = textwrap.dedent(
    """
    import json, warnings
    import jax, numpy as np
    from ppclust._devices import resolve_mesh
    from ppclust._jax import x64
    from ppclust.estimators.tvclust import TVClust
    from ppclust.families import GaussianNIW
    from ppclust.inference import subcluster
    from ppclust.models.tvclust import make_links
    warnings.simplefilter("ignore")
    assert len(jax.devices()) == 2, jax.devices()
    rng = np.random.default_rng(4)
    truth = np.repeat(np.arange(3), 41)[:-2]  # n = 121: odd
    X = rng.normal(size=(len(truth), 2)) * 0.7 + 3.0 * np.stack([truth, truth % 2], 1)
    pairs = np.array([[0, 1], [2, 50], [5, 90], [45, 46], [100, 3], [7, 8]])
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    out = {}
    with x64():
        xs = jax.numpy.asarray(X)
        fam = GaussianNIW.default(xs, "full")
        links = make_links(len(xs), pairs, sign)
        for dev in (None, 2):
            r = subcluster.sample(jax.random.key(3), xs, links, fam, n_draws=6, n_warmup=4, n_chains=2,
                                  k_max=16, n_moves=2, mesh=resolve_mesh(dev))
            out[str(dev)] = dict(labels=r.labels.tolist(), log_joint=r.log_joint.tolist(),
                                 k=r.n_clusters.tolist())
    for dev in (None, 2):
        m = TVClust(n_draws=4, n_warmup=4, n_chains=2, algorithm="subcluster", random_state=0,
                    progress_bar=False, devices=dev).fit(X, must_link=pairs[sign > 0],
                                                         cannot_link=pairs[sign < 0])
        out["est" + str(dev)] = dict(labels=m.labels_.tolist(), log_joint=m.objective_trace_.tolist())
    print("RESULT" + json.dumps(out))
    """
)


@pytest.mark.slow  # ~4 compiles of the sampler in a fresh process (~60-120 s on the loaded 2-core VM)
def test_subcluster_two_devices_equal_one():
    res = run_two_device_child(CHILD, timeout=900)
    one, two = res["None"], res["2"]
    assert one["labels"] == two["labels"]  # same seed, same draws, sweep by sweep and chain by chain
    assert one["k"] == two["k"]
    assert max(max(k) for k in one["k"]) >= 2  # the chains moved (splits accepted), not a frozen state
    np.testing.assert_allclose(two["log_joint"], one["log_joint"], rtol=1e-10)
    assert res["estNone"]["labels"] == res["est2"]["labels"]  # TVClust(devices=2) reaches the same path
    np.testing.assert_allclose(res["est2"]["log_joint"], res["estNone"]["log_joint"], rtol=1e-10)


FENCE_CHILD = textwrap.dedent(
    """
    import json, re, warnings
    from collections import Counter
    import jax, numpy as np
    from ppclust._devices import resolve_mesh
    from ppclust._jax import x64
    from ppclust.families import GaussianNIW
    from ppclust.inference import gibbs, subcluster
    from ppclust.models.tvclust import TVClustPrior, make_links
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(4)
    truth = np.repeat(np.arange(3), 41)[:-2]
    X = rng.normal(size=(len(truth), 2)) * 0.7 + 3.0 * np.stack([truth, truth % 2], 1)
    pairs = np.array([[0, 1], [2, 50], [5, 90], [45, 46], [100, 3], [7, 8]])
    sign = np.where(truth[pairs[:, 0]] == truth[pairs[:, 1]], 1, -1)
    out = {}
    fence = subcluster._replicated
    no_fence = lambda mesh, *t: t[0] if len(t) == 1 else t
    with x64():
        xs = jax.numpy.asarray(X)
        fam = GaussianNIW.default(xs, "full")
        links = make_links(len(xs), pairs, sign)
        col = subcluster.colour_links(links, len(xs))
        st = gibbs.init(xs, links, fam, k_max=16, labels=jax.numpy.asarray(truth), p=0.9, q=0.9, alpha=1.0)
        for name in ("fenced", "unfenced"):
            subcluster._replicated = fence if name == "fenced" else no_fence
            f = jax.jit(lambda k: subcluster.step(k, st, xs, links, col, fam, TVClustPrior(), n_moves=2,
                                                  mesh=resolve_mesh(2), backend="xla")[0].labels)
            text = f.lower(jax.random.key(0)).compile().as_text()
            ops = re.findall(r"\\b(all-gather|all-reduce|all-to-all|collective-permute|reduce-scatter)"
                             r"(?:-start)?\\(", text)
            out[name] = dict(Counter(ops))
    print("RESULT" + json.dumps(out))
    """
)


def test_a_sweep_under_a_mesh_communicates_only_at_its_fences():
    """One sweep on 2 devices compiles to a program whose only collectives are the shard_maps' own: the
    fence (``subcluster._replicated``) keeps XLA's sharding propagation from partitioning the rest of the
    sweep over the points. Without it the program held 35 collectives here, and a sweep at n = 100,000 took
    3.1 s against 0.036 s on one device (growing faster than n: benchmarks/results/subcluster.md)."""
    res = run_two_device_child(FENCE_CHILD, timeout=600)
    fenced, unfenced = sum(res["fenced"].values()), sum(res["unfenced"].values())
    assert fenced <= 4, res
    assert unfenced > 3 * fenced, res  # the probe sees what the fence removes
