"""CCIB (Gondek & Hofmann 2004): ascent, limits, Proposition 1, two-factor recovery, clamping."""

from __future__ import annotations

from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.optimize import linear_sum_assignment
from sklearn.metrics import normalized_mutual_info_score as nmi

from ppclust._jax import x64
from ppclust.datasets import make_two_factor_bits
from ppclust.estimators.ccib import CCIB
from ppclust.inference import ccib as S


def make_table1(n, rng, noise=0.1):
    return make_two_factor_bits(n, noise=noise, seed=rng)


def precision(labels, ref):
    m = np.zeros((labels.max() + 1, ref.max() + 1))
    np.add.at(m, (labels, ref), 1)
    r, c = linear_sum_assignment(-m)
    return m[r, c].sum() / len(labels)


def _data(y, z=None, n_groups=1, k=2, w_fit=None, w_x=None, design=None, clamp=None):
    n = y.shape[0]
    return S.CCIBData(
        y=jnp.asarray(y),
        z=jnp.asarray(np.zeros(n, np.int32) if z is None else z.astype(np.int32)),
        design=jnp.ones((n, 1)) if design is None else jnp.asarray(design),
        w_x=jnp.full(n, 1.0 / n) if w_x is None else jnp.asarray(w_x),
        w_fit=jnp.ones(n) if w_fit is None else jnp.asarray(w_fit),
        clamp=jnp.zeros(n, bool) if clamp is None else jnp.asarray(clamp),
        clamp_q=jnp.zeros((n, k)),
        cond_mask=jnp.ones(y.shape[1]),
    )


def _counts(rng, n=40, d=15, g=3):
    """Crossed-factor multinomial toy: a hidden 2-class factor and a 3-group background."""
    z = rng.integers(0, g, n)
    c = rng.integers(0, 2, n)
    base = rng.dirichlet(np.ones(d), size=(2, g))
    counts = np.stack([rng.multinomial(rng.integers(5, 40), base[c[i], z[i]]) for i in range(n)])
    return counts.astype(float), z


@pytest.fixture(scope="module")
def two_factor():
    rng = np.random.default_rng(6)
    return make_table1(120, rng)


_trace = jax.jit(S.inner_trace, static_argnames=("static", "n_iter"))

_LOWERED = []  # names of the programs JAX lowers (every program it builds, compiled or read from a cache)


def _on_lowered(event, duration, **kwargs):
    if event == "/jax/core/compile/jaxpr_to_mlir_module_duration":
        _LOWERED.append(kwargs.get("fun_name"))


jax.monitoring.register_event_duration_secs_listener(_on_lowered)


@partial(jax.jit, static_argnames=("static",))
def _step_and_terms(q, data, hyper, static, rho):
    """(p_step(m_step(q)), objective_terms(q, m_step(q))) in one compiled call."""
    params = S.m_step(q, data, hyper, static)
    base = S.baseline_loglik(data, hyper, static)
    terms = S.objective_terms(q, params, data, hyper, static, rho, base)
    return S.p_step(params, data, hyper, static, rho), terms


@pytest.mark.parametrize("x_weight", ["uniform", "length"])
def test_multinomial_updates_never_decrease_objective(x_weight):
    """K3: at fixed rho each (P-step, Q-step) pair does not decrease F~ (consistent weighting modes).
    A Q-step with the wrong weights or a P-step off eq. (5) breaks the monotonicity."""
    rng = np.random.default_rng(1)
    counts, z = _counts(rng)
    lengths = counts.sum(1)
    w = lengths if x_weight == "length" else np.ones_like(lengths)
    with x64():
        data = _data(counts / lengths[:, None], z, 3, k=3, w_fit=w, w_x=w / w.sum())
        static = S.Static(n_clusters=3, n_groups=3, feature="multinomial", background="categorical")
        q0 = jnp.asarray(rng.dirichlet(np.ones(3), size=counts.shape[0]))
        for rho, lam in [(0.05, 0.3), (0.3, 1.0), (0.02, 0.0)]:
            fs, _ = _trace(q0, rho, data, S.Hyper(lam=lam, smoothing=1e-12), static, 40)
            fs = np.asarray(fs)
            assert np.all(np.diff(fs) >= -1e-10 * np.abs(fs[1:])), np.diff(fs).min()
            assert fs[-1] > fs[0] + 1e-6  # it actually moved


@pytest.mark.parametrize("feature", ["bernoulli", "gaussian"])
def test_table_models_ascent(feature):
    rng = np.random.default_rng(2)
    y, b, _ = make_table1(60, rng)
    if feature == "gaussian":
        y = y + 0.3 * rng.normal(size=y.shape)
    with x64():
        data = _data(y, b, 2)
        static = S.Static(n_clusters=2, n_groups=2, feature=feature, background="categorical")
        q0 = jnp.asarray(rng.dirichlet(np.ones(2), size=60))
        fs, _ = _trace(q0, 0.5, data, S.Hyper(lam=0.3, smoothing=1e-12), static, 30)
        fs = np.asarray(fs)
        assert np.all(np.diff(fs) >= -1e-10 * np.abs(fs[1:]))
        assert fs[-1] > fs[0] + 1e-6


def test_p_step_matches_eq5_by_hand():
    """One P-step on a 3-object, 2-cluster, 2-group multinomial toy equals eq. (5) written out in numpy."""
    counts = np.array([[3.0, 1.0, 0.0], [0.0, 2.0, 2.0], [1.0, 0.0, 4.0]])
    z = np.array([0, 1, 1])
    q = np.array([[0.7, 0.3], [0.4, 0.6], [0.2, 0.8]])
    rho, lam = 0.7, 0.3
    lengths = counts.sum(1)
    # hand-computed (9a)-(9c), paper weighting
    th_m = (q.T @ counts) / (q.T @ lengths)[:, None]
    th_c = np.stack(
        [(q[z == g].T @ counts[z == g]) / (q[z == g].T @ lengths[z == g])[:, None] for g in range(2)], axis=1
    )
    pi = q.mean(0)
    freq = counts / lengths[:, None]
    log0 = lambda t: np.log(np.maximum(t, 1e-300))  # 0 log 0 = 0: zero counts meet zero estimates
    a = freq @ log0(th_m).T
    b = np.stack([freq[i] @ log0(th_c[:, z[i]]).T for i in range(3)])
    logit = np.log(pi) + lam / rho * a + b / rho
    expected = np.exp(logit - logit.max(1, keepdims=True))
    expected /= expected.sum(1, keepdims=True)
    with x64():
        data = _data(freq, z, 2, w_fit=lengths)
        static = S.Static(n_clusters=2, n_groups=2, feature="multinomial", background="categorical")
        hyper = S.Hyper(lam=lam, smoothing=1e-14)
        got = np.asarray(_step_and_terms(jnp.asarray(q), data, hyper, static, rho)[0])
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12)


def test_large_rho_gives_uniform_solution(two_factor):
    """rho -> infinity: the perturbed uniform start relaxes back to q_ic = 1/k (I(C;X) = 0)."""
    rng = np.random.default_rng(3)
    y, b, _ = two_factor
    # c_max = 0 stops after the first temperature (traced option: no recompilation)
    with pytest.warns(RuntimeWarning, match="distinct parameters"):  # k_eff = 1 is reported (E9)
        est = CCIB(2, lam=0.3, rho0=1e8, c_max=0.0, n_init=2, random_state=0).fit(y, background=b)
    assert est.n_iter_ == 1 and est.rho_ == 1e8
    r = est.responsibilities_
    np.testing.assert_allclose(r, np.broadcast_to(r[0], r.shape), atol=1e-9)
    np.testing.assert_allclose(r, 0.5, atol=1e-2)  # pi only moved by the 1e-2 perturbation
    assert est.objective_terms_["i_cx"] < 1e-10
    with x64():
        data = _data(y, b, 2, k=3)
        static = S.Static(n_clusters=3, n_groups=2, feature="bernoulli", background="categorical")
        q0 = jnp.asarray(rng.dirichlet(np.ones(3), size=len(b)))
        _, q = _trace(q0, 1e9, data, S.Hyper(lam=0.3), static, 5)
        q = np.asarray(q)
        np.testing.assert_allclose(q, np.broadcast_to(q.mean(0), q.shape), atol=1e-8)  # q independent of x


def test_proposition1_blockwise_permutation():
    """K2: lambda = 0 -> permuting labels inside one z-block leaves I(C;Y|Z) and H(C|X) unchanged;
    the coordination term I(C;Y) changes."""
    rng = np.random.default_rng(4)
    counts, z = _counts(rng, n=30, g=2)
    freq = counts / counts.sum(1, keepdims=True)
    q = rng.dirichlet(np.ones(2), size=30)
    qp = q.copy()
    qp[z == 1] = qp[z == 1][:, ::-1]
    with x64():
        data = _data(freq, z, 2, w_fit=counts.sum(1))
        static = S.Static(n_clusters=2, n_groups=2, feature="multinomial", background="categorical")
        hyper = S.Hyper(lam=0.0, smoothing=1e-14)
        t = [_step_and_terms(jnp.asarray(v), data, hyper, static, 1.0)[1] for v in (q, qp)]
    assert abs(float(t[0]["i_cy_given_z"] - t[1]["i_cy_given_z"])) < 1e-12
    h = [np.sum(v * np.log(v)) for v in (q, qp)]
    assert abs(h[0] - h[1]) < 1e-12
    assert abs(float(t[0]["i_cy"] - t[1]["i_cy"])) > 1e-4


def test_constant_background_is_ib_and_glm_intercept_equals_tables():
    """Z constant: categorical path == no background (IB); continuous path with an intercept-only design
    == the table path (spec section 14) to 1e-8."""
    rng = np.random.default_rng(5)
    y, _, _ = make_table1(40, rng)
    q = jnp.asarray(rng.dirichlet(np.ones(2), size=40))
    with x64():
        hyper = S.Hyper(lam=0.4, smoothing=1e-12)
        out = []
        for bg in ("none", "categorical", "continuous"):
            static = S.Static(n_clusters=2, n_groups=1, feature="bernoulli", background=bg, n_newton=10)
            data = _data(y)
            out.append(np.asarray(_step_and_terms(q, data, hyper, static, 0.8)[0]))
    np.testing.assert_allclose(out[0], out[1], atol=1e-12)
    np.testing.assert_allclose(out[0], out[2], atol=1e-8)


def test_two_factor_finds_hidden_factor(two_factor):
    """CCIB with Z = B finds C (high NMI) and is ~independent of B; CIB (lambda=0) restarts can flip
    one block (Prop. 1), CCIB restarts agree."""
    y, b, c = two_factor
    est = CCIB(2, lam=0.3, n_init=2, random_state=0).fit(y, background=b)
    assert nmi(c, est.labels_) > 0.6
    assert nmi(b, est.labels_) < 0.05
    assert precision(est.labels_, c) > 0.93
    assert all(precision(lab, c) > 0.93 for lab in est.restart_labels_)
    assert est.labels_.dtype == np.int64 and est.n_clusters_ == 2
    tr = est.annealing_trace_
    assert np.all(np.diff(tr["rho"]) < 0) and tr["rho"][0] == est.rho0_
    assert tr["i_cx"][0] < 1e-3 < tr["i_cx"][-1]  # starts above the critical temperature, ends hard
    assert tr["k_eff"][0] == 1 and tr["k_eff"][-1] == 2
    assert set(est.objective_terms_) >= {"i_cx", "i_cy_given_z", "i_cy", "rho"}
    assert isinstance(est.objective_, float) and est.objective_ == est.restart_objectives_.max()
    np.testing.assert_array_equal(est.objective_trace_, tr["objective"])
    proba = est.predict_proba(y, background=b)
    np.testing.assert_allclose(proba.sum(1), 1.0)
    assert np.mean(proba.argmax(1) == est.labels_) > 0.97


def test_semi_supervised_labels_stay_fixed(two_factor):
    y, b, c = two_factor
    n = len(c)
    yl = np.full(n, -1)
    idx = np.random.default_rng(7).choice(n, 10, replace=False)
    yl[idx] = 1 - c[idx]  # clamp to the *opposite* naming: cluster index = given class
    est = CCIB(2, lam=0.3, n_init=2, random_state=1).fit(y, yl, background=b)
    np.testing.assert_array_equal(est.responsibilities_[idx], np.eye(2)[yl[idx]])
    np.testing.assert_array_equal(est.labels_[idx], yl[idx])
    assert np.mean(est.labels_ == 1 - c) > 0.9  # naming follows the clamp, no matching needed
    allc = CCIB(2, lam=0.3, n_init=2, random_state=1).fit(y, c, background=b)
    np.testing.assert_array_equal(allc.labels_, c)


def test_bad_input():
    y = np.zeros((5, 3))
    with pytest.raises(ValueError, match="n_clusters"):
        CCIB(6).fit(y)
    with pytest.raises(ValueError, match="has label 2 at index 2"):
        CCIB(2).fit(y, np.array([0, 1, 2, -1, -1]))
    with pytest.raises(ValueError, match="NaN"):
        CCIB(2).fit(np.full((4, 2), np.nan))
    with pytest.raises(ValueError, match="background has"):
        CCIB(2).fit(np.eye(4), background=np.zeros(3))
    est = CCIB(1).fit(np.eye(4))
    assert est.labels_.tolist() == [0, 0, 0, 0]


def test_fit_restarts_chunked_equals_one_program(monkeypatch):
    """The chunked driver (steps cut into compiled calls of any size) gives vmap(fit)'s result on its
    batches of ``BATCH`` keys (2 here; the last batch padded with its last key), bit for bit; more
    restarts build no program, and restart i's result does not depend on the number of restarts."""
    monkeypatch.setattr(S, "BATCH", 2)
    rng = np.random.default_rng(1)
    y, z = _counts(rng, n=30, d=6)
    with x64():
        data = _data(y / y.sum(1, keepdims=True), z, 3)
        static = S.Static(2, n_groups=3, feature="multinomial", background="categorical")
        static = static._replace(max_iter=40)
        keys, keys5 = jax.random.split(jax.random.key(3), 3), jax.random.split(jax.random.key(3), 5)
        one = jax.vmap(S.fit, in_axes=(0, None, None, None))
        batches = [one(keys[np.array(b)], data, S.Hyper(), static) for b in ([0, 1], [2, 2])]
        ref = jax.tree_util.tree_map(lambda *a: np.concatenate(a)[:3], *batches)
        for chunk in (1, 7):
            got = S.fit_restarts(keys, data, S.Hyper(), static, chunk=chunk)
            for a, b in zip(jax.tree_util.tree_leaves(ref), jax.tree_util.tree_leaves(got), strict=True):
                np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
        del _LOWERED[:]
        five = S.fit_restarts(keys5, data, S.Hyper(), static, chunk=7)
        assert _LOWERED == []
        assert five.labels.shape == (5, 30)
        for a, b in zip(jax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(five), strict=True):
            np.testing.assert_array_equal(a, b[:3])


def test_number_of_restarts_compiles_nothing_new(two_factor):
    """A fit with n_init=3 after one with n_init=2 on the same data builds no program (counted with
    ``jax.monitoring``; the restarts run in batches of the fixed width ``BATCH``), and restart i's result
    is the same whatever n_init."""
    y, b, _ = two_factor
    two = CCIB(2, lam=0.3, n_init=2, random_state=0).fit(y, background=b)
    del _LOWERED[:]
    three = CCIB(2, lam=0.3, n_init=3, random_state=0).fit(y, background=b)
    assert _LOWERED == []
    assert three.restart_labels_.shape == (3, len(y)) and three.restart_objectives_.shape == (3,)
    np.testing.assert_array_equal(two.restart_objectives_, three.restart_objectives_[:2])
    np.testing.assert_array_equal(two.restart_labels_, three.restart_labels_[:2])
