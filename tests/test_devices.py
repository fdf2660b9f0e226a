"""Data-parallel paths (``devices=``) on 2 simulated CPU devices give the single-device results.

jax fixes its device count at start-up, so the 2-device run happens in a subprocess with
``XLA_FLAGS=--xla_force_host_platform_device_count=2``; it fits every model on 1 device and on 2
devices in the same process and prints both results as JSON. n is odd, so the padding rows
(zero-weight points) are exercised: a padding row that counted in a sum, opened a cluster or
took part in the convergence test would change the objective, the labels or the iteration count.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import numpy as np
import pytest

from ppclust._devices import axis_sharding, pad_rows, resolve_mesh
from ppclust.estimators.dpmeans import DPMeans
from ppclust.inference import dpmeans as _dp

ROOT = Path(__file__).resolve().parents[1]

CHILD = textwrap.dedent(
    """
    import json, time, warnings
    import jax, numpy as np
    from ppclust.estimators.dpmeans import DPMeans, RDPMeans
    from ppclust.estimators.ssgmm import SemiSupervisedGMM
    warnings.simplefilter("ignore")
    assert len(jax.devices()) == 2, jax.devices()
    rng = np.random.default_rng(3)
    n_per = 67
    X = np.concatenate([rng.normal(size=(n_per, 3)) * (0.6 + 0.3 * c) + 3.0 * c for c in range(3)])
    X = X[:-2]  # n = 199: odd, so 2 devices need one padding row
    truth = np.repeat(np.arange(3), n_per)[:-2]
    y = np.where(rng.random(len(X)) < 0.15, truth, -1)
    models = {
        "ssgmm_full": lambda dev: SemiSupervisedGMM(3, covariance_type="full", n_init=2, random_state=0,
                                                    tol=1e-6, devices=dev),
        "dpmeans": lambda dev: DPMeans(lam=6.0, variant="delayed", n_init=2, patience=2, random_state=0,
                                       devices=dev),
        "rdpmeans": lambda dev: RDPMeans(lam=6.0, variant="delayed", xi0=0.05, patience=3, max_iter=60,
                                         random_state=0, devices=dev),
    }
    out = {}
    for name, make in models.items():
        res = {}
        for dev in (None, 2):
            t = time.perf_counter()
            m = make(dev).fit(X, y)
            obj = m.objective_
            res[str(dev)] = dict(labels=m.labels_.tolist(), objective=obj, n_iter=m.n_iter_,
                                 ll=getattr(m, "log_likelihood_", obj),
                                 trace=np.nan_to_num(getattr(m, "trace_", None) if hasattr(m, "trace_")
                                                     else m.objective_trace_).tolist(),
                                 seconds=time.perf_counter() - t)
        out[name] = res
    # TVClust: the chain axis is sharded over the two devices ("auto"); same keys -> same draws
    from ppclust._jax import x64
    from ppclust.families import GaussianNIW
    from ppclust.inference import gibbs
    from ppclust.models.tvclust import make_links
    with x64():
        xs = jax.numpy.asarray(X[::4])
        fam = GaussianNIW.default(xs, "full")
        links = make_links(len(xs), [[0, 1], [2, 30], [5, 40]], [1, 1, -1])
        tv = {}
        for dev in (None, "auto"):
            r = gibbs.sample(jax.random.key(0), xs, links, fam, n_draws=5, n_warmup=5, n_chains=2,
                             k_max=16, devices=dev, progress_bar=False)
            tv[str(dev)] = dict(labels=r.labels.tolist(), log_joint=r.log_joint.tolist(),
                                n_devices=len(r.state.labels.sharding.device_set))
    out["tvclust"] = tv
    # CEC-IB: the n_init restarts of the Hartigan engine are sharded over the two devices
    from ppclust._devices import axis_sharding
    from ppclust.estimators.cecib import CECIB
    from ppclust.inference import cecib as _cecib
    xc, yc = X[::2], y[::2]  # n = 100, d = 3: small, the child stays fast
    ce = {}
    for dev in (None, 2, "auto"):
        m = CECIB(n_clusters=5, n_init=2, random_state=0, devices=dev).fit(xc, yc)
        ce[str(dev)] = dict(labels=m.labels_.tolist(), cost=m.objective_,
                            restart_costs=m.restart_objectives_.tolist(), n_iter=m.n_iter_)
    with x64():
        codes, n_lab = _cecib.encode_labels(yc, len(xc))
        _, costs, _, _ = _cecib.fit(jax.random.key(0), jax.numpy.asarray(xc), codes, n_lab, n_clusters=5,
                                    n_init=2, devices=2)
        ce["n_devices"] = len(costs.sharding.device_set)
    ce["auto_odd"] = axis_sharding(3, "auto", "restarts") is None  # 3 restarts on 2 devices: one device
    try:
        axis_sharding(3, 2, "restarts", "n_init")
        ce["odd_error"] = ""
    except ValueError as e:
        ce["odd_error"] = str(e)
    out["cecib"] = ce
    print("RESULT" + json.dumps(out))
    """
)


def run_two_device_child(child: str, timeout: int = 300) -> dict:
    """Run ``child`` in a fresh process that sees 2 CPU devices; returns the JSON it printed after
    ``RESULT``."""
    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
    )
    proc = subprocess.run(
        [sys.executable, "-c", child], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")][-1]
    return json.loads(line[len("RESULT") :])


@pytest.fixture(scope="module")
def two_device_results():
    return run_two_device_child(CHILD)


@pytest.mark.parametrize("name", ["ssgmm_full", "dpmeans", "rdpmeans"])
def test_two_devices_equal_one(two_device_results, name):
    one, two = two_device_results[name]["None"], two_device_results[name]["2"]
    assert one["labels"] == two["labels"]
    assert one["n_iter"] == two["n_iter"]
    assert len(set(one["labels"])) >= 3  # a real clustering, not a degenerate one
    np.testing.assert_allclose(two["objective"], one["objective"], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(two["ll"], one["ll"], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(two["trace"], one["trace"], rtol=1e-10, atol=1e-10)
    print(f"{name}: 1 device {one['seconds']:.2f}s, 2 devices {two['seconds']:.2f}s (with compilation)")


def test_tvclust_chains_spread_over_two_devices(two_device_results):
    one, two = two_device_results["tvclust"]["None"], two_device_results["tvclust"]["auto"]
    assert one["n_devices"] == 1 and two["n_devices"] == 2
    assert one["labels"] == two["labels"]
    np.testing.assert_allclose(two["log_joint"], one["log_joint"], rtol=1e-12)


def test_cecib_restarts_spread_over_two_devices(two_device_results):
    """Hartigan restarts sharded over 2 devices ("restarts" mesh) give the single-device fit: same
    labels, passes and restart costs (a restart run on the wrong key, or a best-restart pick mixed up
    across shards, would change the labels or the cost vector)."""
    res = two_device_results["cecib"]
    assert res["n_devices"] == 2
    one = res["None"]
    assert len(set(one["labels"])) >= 3
    assert one["restart_costs"][0] != one["restart_costs"][1]  # the two restarts really differ
    for dev in ("2", "auto"):
        two = res[dev]
        assert two["labels"] == one["labels"] and two["n_iter"] == one["n_iter"]
        np.testing.assert_allclose(two["cost"], one["cost"], rtol=1e-12)
        np.testing.assert_allclose(two["restart_costs"], one["restart_costs"], rtol=1e-12)
    assert res["auto_odd"]
    assert "n_init=3 must be a multiple of devices=2" in res["odd_error"]


def test_axis_sharding_single_device():
    assert axis_sharding(4, None, "restarts") is None
    assert axis_sharding(4, 1, "restarts") is None
    if len(jax.local_devices()) == 1:
        assert axis_sharding(4, "auto", "restarts") is None
    with pytest.raises(ValueError, match="devices must be"):
        axis_sharding(4, "all", "restarts")
    with pytest.raises(ValueError, match="devices must be"):
        axis_sharding(4, len(jax.local_devices()) + 1, "chains")


def test_resolve_mesh_and_padding():
    assert resolve_mesh(None) is None
    assert resolve_mesh(1) is None
    mesh = resolve_mesh("all")
    assert mesh.axis_names == ("data",) and mesh.devices.size == len(jax.devices())
    assert [pad_rows(n, resolve_mesh([jax.devices()[0]] * 1)) for n in (1, 5)] == [1, 5]
    with pytest.raises(ValueError, match="device"):
        resolve_mesh(len(jax.devices()) + 1)
    with pytest.raises(ValueError, match="devices"):
        resolve_mesh("gpu")


def test_mesh_needs_delayed_variant():
    mesh = resolve_mesh([jax.devices()[0]])
    X = np.random.default_rng(0).normal(size=(10, 2))
    with pytest.raises(ValueError, match="delayed"):
        _dp.fit(jax.random.key(0), X, None, 1.0, variant="sequential", mesh=mesh)
    with pytest.raises(ValueError, match="delayed"):
        DPMeans(lam=1.0, variant="sequential", devices=[jax.devices()[0]]).fit(X)
