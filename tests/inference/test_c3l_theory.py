"""C3L building blocks: Theorem 1 closed form (brute force), limits, T_H, PP helpers (fast)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.stats import norm

from ppclust._jax import x64
from ppclust.inference import c3l


def _fit(mu, s2, alpha):
    with x64():
        return tuple(np.asarray(v) for v in c3l.constrained_fit_1d(mu, s2, c3l.quantile(alpha)))


def _h(mu, s2, m, sig):
    return 0.5 * np.log(2 * np.pi * sig**2) + ((mu - m) ** 2 + s2) / (2 * sig**2)


@pytest.mark.parametrize(
    ("mu", "s", "alpha", "m", "sig", "e1"),
    [
        (1.0, 1.0, 0.1, 1.168561, 0.911833, 1.445093),
        (1.0, 1.0, 0.05, 1.338153, 0.813540, 1.554425),
        (1.0, 1.0, 0.01, 1.553858, 0.667939, 1.979889),
        (1.0, 1.0, 0.001, 1.698058, 0.549492, 2.783047),
        (0.0, 1.0, 0.05, 1.644854, 1.0, 2.771710),
        (-2.0, 3.0, 0.05, -3.813048, 2.318168, 2.902939),
        (3.0, 1.0, 0.01, 3.0, 1.0, 1.418939),
        (1.0, 1.0, 0.2, 1.0, 1.0, 1.418939),
    ],
)
def test_spec_vectors(mu, s, alpha, m, sig, e1):
    got = _fit(mu, s * s, alpha)
    np.testing.assert_allclose(got[:3], (m, sig, e1), atol=1e-6)


def test_closed_form_equals_brute_force():
    """C1: closed form = constrained minimum of h(m, sigma) over a 2-D grid, refined by SLSQP."""
    rng = np.random.default_rng(0)
    n_cases = 40
    mus = rng.normal(0, 2, n_cases)
    ss = np.exp(rng.uniform(-1.5, 1.5, n_cases))
    alphas = np.exp(rng.uniform(np.log(1e-4), np.log(0.45), n_cases))
    m_cf, sig_cf, e_cf, act = _fit(mus, ss**2, alphas)
    for i in range(n_cases):
        mu, s, a = mus[i], ss[i], alphas[i]
        p = norm.isf(a)
        span = abs(mu) + 4 * s
        M, LS = np.meshgrid(np.linspace(-span, span, 401), np.linspace(np.log(s) - 6, np.log(s) + 1, 401))
        S = np.exp(LS)
        feas = np.abs(M) >= p * S  # leakage Phi(-|m|/sigma) <= alpha
        H = np.where(feas, _h(mu, s * s, M, S), np.inf)
        j = np.unravel_index(np.argmin(H), H.shape)
        # no feasible grid point beats the closed form; the grid gets within its resolution
        assert H[j] >= e_cf[i] - 1e-12
        assert H[j] <= e_cf[i] + 5e-2
        sgn = np.sign(M[j]) or 1.0
        cons = [{"type": "ineq", "fun": lambda v, sgn=sgn, p=p: sgn * v[0] - p * np.exp(v[1])}]
        res = minimize(
            lambda v, mu=mu, s=s: _h(mu, s * s, v[0], np.exp(v[1])),
            [M[j], LS[j]],
            constraints=cons,
            method="SLSQP",
            options={"ftol": 1e-15, "maxiter": 500},
        )
        assert res.fun >= e_cf[i] - 1e-9
        assert abs(res.fun - e_cf[i]) < 1e-7
        # the returned parameters attain the cost, are feasible, and leak exactly alpha when active
        np.testing.assert_allclose(_h(mu, s * s, m_cf[i], sig_cf[i]), e_cf[i], rtol=1e-12, atol=1e-12)
        leak = norm.cdf(-abs(m_cf[i]) / sig_cf[i])
        assert leak <= a + 1e-12
        if act[i]:
            np.testing.assert_allclose(leak, a, rtol=1e-9)


def test_paper_form_agrees_and_continuity():
    rng = np.random.default_rng(1)
    mu = rng.normal(0, 1, 500)
    s2 = np.exp(rng.normal(0, 1, 500))
    alpha = 0.01
    p = norm.isf(alpha)
    m, sig, e, act = _fit(mu, s2, alpha)
    paper = (-p * p * mu + np.where(mu < 0, -1, 1) * p * np.sqrt((p * p + 4) * mu * mu + 4 * s2)) / 2
    np.testing.assert_allclose(m[act], paper[act], rtol=1e-11)
    # continuity at the activation threshold |mu| = p s and across mu = 0
    s = 0.7
    for mu0 in (p * s, -p * s):
        lo = _fit(mu0 * (1 - 1e-9), s * s, alpha)
        hi = _fit(mu0 * (1 + 1e-9), s * s, alpha)
        np.testing.assert_allclose(lo[2], hi[2], atol=1e-7)
        np.testing.assert_allclose(lo[0], hi[0], atol=1e-7)
    np.testing.assert_allclose(_fit(1e-12, 1.0, alpha)[2], _fit(-1e-12, 1.0, alpha)[2], atol=1e-10)


def test_alpha_to_zero_limit():
    """C2: m -> mu + s^2/mu monotonically, sigma -> 0 monotonically, |m| >= |mu|, sigma <= s."""
    alphas = 10.0 ** -np.arange(1, 13)
    for mu, s in [(1.0, 1.0), (-0.5, 2.0), (2.0, 0.3)]:
        m, sig, _, _ = _fit(mu, s * s, alphas)
        L = mu + s * s / mu
        assert np.all(np.abs(m) >= abs(mu) - 1e-15) and np.all(sig <= s + 1e-15)
        assert np.all(np.diff(np.abs(m)) >= -1e-15) and np.all(np.diff(sig) <= 1e-15)
        assert np.all(np.abs(m) <= abs(L) + 1e-12)
    m, sig, _, _ = _fit(1.0, 1.0, np.array([1e-12, 1e-50, 1e-300]))
    np.testing.assert_allclose(m[-1], 2.0, atol=2e-2)
    assert np.all(np.diff(np.abs(2.0 - m)) < 0) and sig[-1] < 0.06
    # sigma ~ |L| / sqrt(2 ln(1/alpha)) for small alpha
    np.testing.assert_allclose(sig[-1] * np.sqrt(2 * np.log(1e300)), 2.0, rtol=0.05)


def test_alpha_half_is_mle():
    mu = np.array([0.0, 0.3, -2.0])
    for a in (0.5, 0.7):
        m, sig, e, act = _fit(mu, 1.5, a)
        assert not act.any()
        np.testing.assert_allclose(m, mu)
        np.testing.assert_allclose(sig, np.sqrt(1.5))
        np.testing.assert_allclose(e, 0.5 * (1 + np.log(2 * np.pi * 1.5)))


def test_transform_roundtrip_and_basis_invariance():
    rng = np.random.default_rng(2)
    X = rng.normal(size=(50, 4))
    h, a = rng.normal(size=4), 0.3
    hp = c3l.make_hyperplane(h, a)
    Z = c3l.transform(X, hp)
    np.testing.assert_allclose(Z[:, 0], (X @ h - a) / np.linalg.norm(h))
    A, b = c3l.inverse_transform(hp)
    np.testing.assert_allclose(Z @ A.T + b, X, atol=1e-12)
    # a different orthonormal basis of h-perp leaves the r-part ln det unchanged
    R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
    r1, r2 = Z[:, 1:], Z[:, 1:] @ R
    np.testing.assert_allclose(np.linalg.slogdet(np.cov(r1.T))[1], np.linalg.slogdet(np.cov(r2.T))[1])
    with pytest.raises(ValueError, match="independent"):
        c3l.make_hyperplane(np.zeros(3), 0.0)


def test_hyperplane_from_labels_separates():
    rng = np.random.default_rng(3)
    X = np.concatenate([rng.normal(-3, 1, (100, 3)), rng.normal(3, 1, (100, 3))]) * [1, 10, 0.1]
    y = np.repeat([0, 1], 100)
    y_part = np.where(rng.random(200) < 0.15, y, -1)
    h, a = c3l.hyperplane_from_labels(X, y_part)
    assert np.mean((X @ h - a > 0) == (y == 1)) > 0.97
    with pytest.raises(ValueError, match="two categories"):
        c3l.hyperplane_from_labels(X, np.where(y == 0, 0, -1))


def test_gaussian_leakage_matches_1d():
    cov = np.diag([4.0, 1.0])
    got = c3l.gaussian_leakage(np.array([1.0, 5.0]), cov, np.array([1.0, 0.0]), 0.0)
    np.testing.assert_allclose(got, norm.cdf(-0.5))


def test_gmm_1d_threshold_and_pp_direction():
    rng = np.random.default_rng(4)
    y = np.concatenate([rng.normal(-2, 1, 300), rng.normal(3, 1, 300)])
    tau, (w, mu, var), lab = c3l.gmm_1d_threshold(y)
    np.testing.assert_allclose(mu, [-2, 3], atol=0.2)
    # equal-variance, equal-weight crossing is the midpoint
    assert abs(tau - 0.5) < 0.25
    # bimodal direction hidden among Gaussian noise dims is found by minimum kurtosis
    X = rng.normal(size=(600, 4))
    X[:, 2] = np.where(np.arange(600) < 300, -2.0, 2.0) + 0.5 * rng.normal(size=600)
    X = X @ np.linalg.qr(rng.normal(size=(4, 4)))[0]
    h, a, lab = c3l.pp_hyperplane(X, random_state=0, n_starts=10)
    truth = np.arange(600) >= 300
    acc = max(np.mean(lab == truth), np.mean(lab != truth))
    assert acc > 0.97
