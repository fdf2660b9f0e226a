"""Batch (Lloyd-type) CEC mode: the n x K assignment costs against independent formulas (SciPy Gaussian
log-densities, C3L's fitted model, brute-force label entropies), and batch + Hartigan polish against the
exact Hartigan engine on data where both finish."""

from __future__ import annotations

import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.stats import multivariate_normal

from ppclust.estimators.c3l import C3L
from ppclust.estimators.cecib import CECIB
from ppclust.inference import c3l, cecib, hartigan
from ppclust.metrics import nmi


def _data(seed=0, n_per=70, d=3):
    rng = np.random.default_rng(seed)
    centres = rng.normal(scale=4.0, size=(3, d))
    x = np.concatenate([c + rng.normal(size=(n_per, d)) @ rng.normal(size=(d, d)) * 0.5 for c in centres])
    truth = np.repeat(np.arange(3), n_per)
    y = np.where(rng.random(len(x)) < 0.3, truth, -1)
    return x, y, truth


def _h(counts):
    L = counts.sum()
    q = counts[counts > 0] / L
    return float(-(q * np.log(q)).sum()) if L > 0 else 0.0


def test_assignment_costs_cecib_match_gaussian_and_label_entropy():
    x, y, _ = _data()
    n, d = x.shape
    K = 4
    z = np.random.default_rng(1).integers(0, K, n)
    yc, m = cecib.encode_labels(y, n)
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        out = {}
        for beta in (0.0, 1.0):
            cost = cecib.make_cost(X, m, beta)
            st = cost.stats(X, jnp.asarray(yc), jnp.asarray(z, jnp.int32), K)
            out[beta] = np.asarray(
                hartigan.assignment_costs(cost, X, jnp.asarray(yc), st, jnp.ones(K, bool), chunk=64)
            )
    for k in range(K):
        xk = x[z == k]
        want = -np.log(len(xk) / n) - multivariate_normal(xk.mean(0), np.cov(xk.T, bias=True)).logpdf(x)
        np.testing.assert_allclose(out[0.0][:, k], want, rtol=0, atol=1e-9)
        cnt = np.bincount(yc[(z == k) & (yc >= 0)], minlength=m).astype(float)
        for i in range(0, n, 7):
            if yc[i] >= 0:
                new = cnt.copy()
                new[yc[i]] += 1
                lab = (len(xk) + 1) * _h(new) - len(xk) * _h(cnt)
            else:
                lab = _h(cnt)  # an unlabelled point adds its share p H_k of the unchanged entropy
            assert out[1.0][i, k] - out[0.0][i, k] == pytest.approx(lab, abs=1e-9)
    active = np.array([True, False, True, True])
    with jax.enable_x64(True):
        masked = hartigan.assignment_costs(cost, X, jnp.asarray(yc), st, jnp.asarray(active))
    assert np.all(np.isinf(np.asarray(masked)[:, 1]))


def test_assignment_costs_c3l_equal_minus_log_density():
    """C3L's batch rule is its CEC rule: -ln p_k g_k(z) with the leakage-constrained fits (spec 1.7)."""
    rng = np.random.default_rng(2)
    x = np.concatenate([rng.normal(size=(90, 3)) * [1, 3, 1], rng.normal(size=(50, 3)) * 0.4 + [2.5, 0, 1]])
    z_part = rng.integers(0, 3, len(x))
    Z = c3l.transform(x, c3l.make_hyperplane([1.0, 0.2, 0.0], 0.3))
    with jax.enable_x64(True):
        Zj = jnp.asarray(Z)
        cost = c3l.make_cost(Zj, 1, 0.05)
        st = cost.stats(Zj, None, jnp.asarray(z_part, jnp.int32), 3)
        got = np.asarray(hartigan.assignment_costs(cost, Zj, None, st, jnp.ones(3, bool), chunk=50))
        want = -np.asarray(c3l.log_density(Zj, c3l.cluster_params(cost, st), 1))
    assert np.asarray(c3l.cluster_params(cost, st).active_constraint).any()  # the constraint matters here
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)


@pytest.mark.slow
def test_batch_then_polish_matches_hartigan():
    x, y, truth = _data(3, n_per=150)
    n, d = x.shape
    yc, m = cecib.encode_labels(y, n)
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        cost = cecib.make_cost(X, m, 1.0)
        fitted, runs = hartigan.fit_batch(
            jax.random.key(0), cost, X, jnp.asarray(yc), K=6, min_size=cecib.min_size(n, d, 0.05), n_init=4
        )
        exact = cecib.fit(jax.random.key(0), X, yc, m, n_clusters=6, n_init=4)
    best = fitted.best
    assert bool(best.converged)
    assert np.asarray(best.active)[np.asarray(best.labels)].all()
    assert float(best.cost) <= np.nanmin(np.asarray(runs.cost)) + 1e-9  # polishing only lowers the cost
    assert float(best.cost) == pytest.approx(cecib.cecib_cost(x, np.asarray(best.labels), y).total, abs=1e-9)
    assert abs(nmi(truth, np.asarray(best.labels)) - nmi(truth, np.asarray(exact.best.labels))) <= 0.02
    # without polish: the best batch partition itself
    with jax.enable_x64(True):
        raw, _ = hartigan.fit_batch(
            jax.random.key(0),
            cost,
            X,
            jnp.asarray(yc),
            K=6,
            min_size=cecib.min_size(n, d, 0.05),
            n_init=4,
            polish=False,
        )
    assert float(raw.best.cost) == pytest.approx(np.nanmin(np.asarray(runs.cost)), abs=1e-9)


@pytest.mark.slow
def test_estimators_algorithm_batch():
    x, y, truth = _data(4, n_per=120)
    est = CECIB(n_clusters=6, n_init=3, random_state=0, algorithm="batch").fit(x, y)
    assert est.labels_.min() >= 0 and nmi(truth, est.labels_) > 0.9
    assert est.objective_ == pytest.approx(cecib.cecib_cost(x, est.labels_, y).total, abs=1e-9)
    m = C3L(n_clusters=5, n_init=3, random_state=0, algorithm="batch").fit(x, hyperplane=([1.0, 0, 0], 0.0))
    assert m.labels_.min() >= 0 and np.all(m.leakage_ <= 0.05 + 1e-9)
    with pytest.raises(ValueError, match="algorithm"):
        CECIB(algorithm="lloyd").fit(x)
    with pytest.raises(ValueError, match="algorithm"):
        C3L(algorithm="lloyd").fit(x, hyperplane=([1.0, 0, 0], 0.0))


BATCH_CHILD = textwrap.dedent(
    """
    import json
    import jax, jax.numpy as jnp, numpy as np
    from ppclust._devices import make_mesh
    from ppclust.inference import c3l, cecib, hartigan
    assert len(jax.devices()) == 2, jax.devices()
    rng = np.random.default_rng(5)
    x = np.concatenate([rng.normal(size=(60, 3)) * (0.5 + 0.3 * c) + 3.0 * c for c in range(3)])[:-1]
    truth = np.repeat(np.arange(3), 60)[:-1]  # n = 179: odd, so 2 devices need one padding row
    y = np.where(rng.random(len(x)) < 0.3, truth, -1)
    yc, m = cecib.encode_labels(y, len(x))
    out = {}
    with jax.enable_x64(True):
        X = jnp.asarray(x)
        Z = jnp.asarray(c3l.transform(x, c3l.make_hyperplane([1.0, 0, 0], 0.5)))
        problems = {"cecib": (cecib.make_cost(X, m, 1.0), X, jnp.asarray(yc)),
                    "c3l": (c3l.make_cost(Z, 1, 0.05), Z, None)}
        for name, (cost, data, side) in problems.items():
            res = {}
            for mesh in (None, make_mesh(jax.devices())):
                _, runs = hartigan.fit_batch(jax.random.key(1), cost, data, side, K=5, min_size=8.0, n_init=2,
                                             polish=False, mesh=mesh, chunk=32)
                res[str(mesh is not None)] = dict(labels=np.asarray(runs.labels).tolist(),
                                                  cost=np.asarray(runs.cost).tolist(),
                                                  n_iter=np.asarray(runs.n_iter).tolist(),
                                                  active=np.asarray(runs.active).tolist())
            out[name] = res
    print(json.dumps(out))
    """
)


@pytest.mark.slow  # ~20 s alone (4 compiled while loops in a subprocess), ~50 s on the loaded machine
def test_batch_sharded_over_two_devices_equals_one():
    """The data-mesh batch mode (points split over 2 simulated devices, n odd so one padding row) gives
    the one-device partitions, step counts and costs: a padding row that counted in a sum or in the
    convergence test, or a missing psum, would change them."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = dict(
        os.environ,
        XLA_FLAGS="--xla_force_host_platform_device_count=2",
        JAX_PLATFORMS="cpu",
        PYTHONPATH=str(Path(__file__).resolve().parents[2]),
    )
    out = subprocess.run(
        [sys.executable, "-c", BATCH_CHILD], env=env, capture_output=True, text=True, timeout=600
    )
    assert out.returncode == 0, out.stderr[-3000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    for name in ("cecib", "c3l"):
        one, two = res[name]["False"], res[name]["True"]
        assert one["labels"] == two["labels"] and one["n_iter"] == two["n_iter"], name
        assert one["active"] == two["active"], name
        np.testing.assert_allclose(two["cost"], one["cost"], rtol=1e-12, atol=0)
        assert max(one["n_iter"]) > 1  # the runs took real steps
