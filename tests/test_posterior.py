"""posterior_: genuine draws, pointwise LOO log-likelihood (vs brute force), ArviZ functions, attributes."""

from __future__ import annotations

import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.scipy.special import logsumexp

from ppclust import posterior
from ppclust._jax import x64
from ppclust.families import GaussianNIW
from ppclust.models.tvclust import TVClustPrior, log_crp, log_link_likelihood, make_links, pair_counts

X5 = np.array([[0.0, 0.1], [0.4, -0.2], [1.3, 0.9], [2.0, 1.6], [2.3, 1.2]])
PAIRS5 = np.array([[0, 1], [1, 2], [2, 3], [0, 4], [3, 4]])
SIGN5 = np.array([1, -1, 1, -1, 1])
PRIOR = TVClustPrior(alpha=1.3, a_p=2.0, b_p=1.0, a_q=3.0, b_q=1.0)


def _family(d):
    return GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(d + 2.0), jnp.eye(d))


def _brute_loo(z, x, links, fam, prior, p=None, q=None):
    """log p(x_i | x_-i, z_-i, E) = logsumexp_{z_i} log p(z, x, E) - logsumexp_{z_i} log p(z, x_-i, E)."""
    n = len(z)
    out = []
    for i in range(n):
        num, den = [], []
        for k in list(np.unique(np.delete(z, i))) + [n + 10]:
            zz = z.copy()
            zz[i] = k
            zz = np.unique(zz, return_inverse=True)[1]
            zj = jnp.asarray(zz, jnp.int32)
            sizes = jnp.zeros(n).at[zj].add(1.0)
            common = log_crp(sizes, prior.alpha) + log_link_likelihood(pair_counts(zj, links), prior, p, q)
            w = jnp.ones(n).at[i].set(0.0)
            num.append(common + fam.log_marginal(fam.stats(x, zj, n)).sum())
            den.append(common + fam.log_marginal(fam.stats(x, zj, n, w)).sum())
        out.append(logsumexp(jnp.array(num)) - logsumexp(jnp.array(den)))
    return np.array(out)


@pytest.mark.parametrize(
    "backend", [pytest.param("auto", marks=pytest.mark.core), "xla"]
)  # auto: the compiled CPU twin where numba is installed
@pytest.mark.parametrize("pq", ["collapse", "fixed"])
def test_loo_log_predictive_equals_brute_force(pq, backend):
    with x64():
        x = jnp.asarray(X5)
        links = make_links(5, PAIRS5, SIGN5)
        fam = _family(2)
        draws = np.array([[0, 0, 1, 1, 1], [3, 3, 3, 0, 0], [0, 1, 2, 3, 4]])
        kw = dict(p=0.8, q=0.7) if pq == "fixed" else {}
        got = posterior.loo_log_predictive(
            draws[None], x, links, fam, PRIOR, pq=pq, alpha=PRIOR.alpha, backend=backend, **kw
        )
        for s, z in enumerate(draws):
            want = _brute_loo(z, x, links, fam, PRIOR, kw.get("p"), kw.get("q"))
            np.testing.assert_allclose(got[0, s], want, rtol=0, atol=1e-9)


@pytest.mark.parametrize("bad", [-1, 3])
def test_loo_of_a_finite_mixture_refuses_labels_outside_its_components(bad):
    """With ``partition="finite"`` the labels index the K columns of ``point_logprior`` (and the compiled
    pass's slot arrays) unchecked: a label outside [0, K) is a ValueError naming the range."""
    with x64():
        x = jnp.asarray(X5)
        links = make_links(5, PAIRS5, SIGN5)
        z = np.array([[[0, 0, 1, 2, bad]]])
        with pytest.raises(ValueError, match=r"component ids in \[0, K=3\)"):
            posterior.loo_log_predictive(
                z, x, links, _family(2), PRIOR, partition="finite", point_logprior=np.zeros((5, 3))
            )


def test_link_parameter_draws_are_beta_given_the_partition():
    with x64():
        links = make_links(5, PAIRS5, SIGN5)
        z = np.broadcast_to(np.array([0, 0, 1, 1, 1]), (4, 5000, 5))
        out = posterior.link_parameter_draws(jax.random.key(0), z, links, PRIOR)
    n11, n01, n10, n00 = np.asarray(pair_counts(jnp.asarray(z[0, 0]), links))
    a, b = PRIOR.a_p + n11, PRIOR.b_p + n01
    assert out["p"].shape == (4, 5000)
    np.testing.assert_allclose(out["p_cond_mean"], a / (a + b))
    sd = np.sqrt(a * b / ((a + b) ** 2 * (a + b + 1)))
    assert out["p"].mean() == pytest.approx(a / (a + b), abs=4 * sd / np.sqrt(20000))
    assert out["p"].std() == pytest.approx(sd, rel=0.03)


@pytest.mark.slow  # two fits of 360 sweeps (about 30 s on an idle 2-core machine)
def test_collapsed_p_draws_have_the_posterior_spread_of_sampled_p(blobs):
    """With pq='collapse' the stored p, q are genuine draws (sd as with pq='sample'); the
    Rao-Blackwellised conditional means are much narrower and stored under another name."""
    from ppclust import TVClust

    X, ml, cl = blobs.X, blobs.must_link, blobs.cannot_link
    kw = dict(n_draws=300, n_warmup=60, n_chains=2, k_max=12, random_state=1)
    sd = {}
    for pq in ("collapse", "sample"):
        est = TVClust(pq=pq, **kw).fit(X, must_link=ml, cannot_link=cl)
        ds, derived = est.posterior_["posterior"].ds, est.posterior_["derived"].ds
        sd[pq] = {v: float(ds[v].std()) for v in ("p", "q")}
        sd[pq]["p_cond_mean"] = float(derived["p_cond_mean"].std())
    for v in ("p", "q"):
        # Monte Carlo error of an sd from 800 (autocorrelated) draws is a few percent; 20% is > 4 se
        assert sd["collapse"][v] == pytest.approx(sd["sample"][v], rel=0.2), sd
    assert sd["collapse"]["p"] > 3 * sd["collapse"]["p_cond_mean"], sd


@pytest.mark.core
def test_tvclust_datatree_works_with_arviz_loo_compare_and_netcdf(tmp_path, make_linked_blobs):
    import arviz as az

    from ppclust import TVClust

    X, truth, _, ml, cl = make_linked_blobs(1)
    kw = dict(n_draws=60, n_warmup=40, n_chains=2, k_max=12, random_state=0, sample_alpha=True)
    with_links = TVClust(**kw).fit(X, must_link=ml, cannot_link=cl)
    without = TVClust(pq="fixed", **kw).fit(X)  # p, q fixed: constants, so not posterior variables
    dt = with_links.posterior_
    assert "log_likelihood" not in dt.children  # fit does not compute it: az.loo says so until asked
    with pytest.raises(TypeError, match="log likelihood not found"):
        az.loo(dt)
    group = with_links.compute_log_likelihood()
    assert with_links.compute_log_likelihood() is not None and "x" in group
    without.compute_log_likelihood()
    assert set(dt.children) >= {"posterior", "sample_stats", "log_likelihood", "observed_data", "clustering"}
    with x64():  # the draws' own leave-one-out predictive, for the features as the sampler saw them
        want = posterior.loo_log_predictive(
            with_links.samples_.labels,
            jnp.asarray(dt["observed_data"]["x"].values),
            *with_links._loglik_inputs[:3],
            **with_links._loglik_inputs[3],
        )
    np.testing.assert_array_equal(dt["log_likelihood"]["x"].values, want)
    names = set(dt["posterior"].ds.data_vars)
    assert {"p", "q", "alpha", "n_clusters"} <= names
    assert not {"p_cond_mean", "q_cond_mean"} & names  # derived, not draws: no r-hat in az.summary
    assert {"p_cond_mean", "q_cond_mean"} <= set(dt["derived"].ds.data_vars)
    assert not {"p", "q", "p_cond_mean"} & set(without.posterior_["posterior"].ds.data_vars)
    assert dt["log_likelihood"]["x"].shape == (2, 60, len(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no r_hat NaN from constant variables
        summ = az.summary(dt)
    assert np.all(np.isfinite(summ["r_hat"].to_numpy(dtype=float)[summ.index != "n_clusters"]))
    loo = az.loo(dt)
    assert np.isfinite(loo.elpd)
    cmp = az.compare({"links": with_links.posterior_, "no links": without.posterior_})
    assert set(cmp.index) == {"links", "no links"}
    posterior.save(dt, tmp_path / "post.nc")
    back = posterior.load(tmp_path / "post.nc")
    n_links = dt["observed_data"]["link_sign"].size  # default link prior: Beta(0.9 L, 0.1 L), L >= 11
    assert back.attrs["param_pq"] == "collapse"
    assert back.attrs["prior_b_p"] == pytest.approx(0.1 * max(11, n_links))
    assert "loo_log_predictive" in back.attrs["pointwise_log_likelihood"]
    np.testing.assert_array_equal(back["clustering"]["point_estimate"].values, with_links.labels_)
    np.testing.assert_allclose(back["log_likelihood"]["x"].values, dt["log_likelihood"]["x"].values)
    assert with_links.expected_loss_ == pytest.approx(with_links.point_estimate_.expected_loss)
    assert "credible ball" in str(with_links.credible_ball_)


def test_ssgmm_gibbs_posterior_has_its_own_quantities():
    import arviz as az

    from ppclust import BayesianSemiSupervisedGMM

    rng = np.random.default_rng(0)
    z = np.repeat([0, 1, 2], 30)
    X = np.array([[0, 0], [3, 0], [0, 3]])[z] + rng.normal(size=(90, 2))  # overlapping: draws vary
    y = np.where(np.arange(90) % 3 == 0, z, -1)
    y[0] = 1  # one wrong label
    g = BayesianSemiSupervisedGMM(
        3, covariance_type="full", n_draws=50, n_warmup=30, n_chains=2, label_noise=0.05, random_state=0
    ).fit(X, y)
    ds = g.posterior_["posterior"].ds
    assert set(ds.data_vars) == {"n_clusters", "weights_sorted", "label_noise_rate"}
    w = ds["weights_sorted"].values
    assert w.shape == (2, 50, 3) and np.all(np.diff(w, axis=-1) <= 0)
    np.testing.assert_allclose(w.sum(-1), 1.0)
    rate = ds["label_noise_rate"].values
    assert np.all(rate < 0.3) and rate.mean() > 0  # realised share of wrong labels (1 of 30 planted)
    assert np.allclose(rate * 30, np.round(rate * 30))
    assert "log_likelihood" not in g.posterior_.children  # fit does not compute it
    with pytest.raises(TypeError, match="log likelihood not found"):
        az.loo(g.posterior_)
    ll = g.compute_log_likelihood()["x"].values
    assert ll.shape == (2, 50, 90)
    assert np.isfinite(az.loo(g.posterior_).elpd)
    # the label's likelihood p(y_i | k) <= 1 enters for labelled points only: lower there, equal elsewhere
    xc, links, family, prior, kw = g._loglik_inputs
    with x64():
        no_label = np.asarray(
            posterior.loo_log_predictive(
                g.samples_.labels,
                jnp.asarray(xc),
                links,
                family,
                prior,
                **{**kw, "point_logprior": jnp.zeros(np.shape(kw["point_logprior"]))},
            )
        )
    np.testing.assert_allclose(ll[..., y < 0], no_label[..., y < 0], rtol=1e-12)
    assert np.all(ll[..., y >= 0] < no_label[..., y >= 0])
    lab = y >= 0
    np.testing.assert_array_equal(
        g.classes_[g.component_classes_[g.labels_[lab & (np.arange(90) > 0)]]], y[lab & (np.arange(90) > 0)]
    )


def test_numpyro_kernel_starts_like_the_estimator_and_summarises_scalars(
    monkeypatch, capsys, make_linked_blobs
):
    from numpyro.infer import MCMC

    from ppclust import inference
    from ppclust.inference import hartigan

    monkeypatch.setenv("TQDM_DISABLE", "1")  # progress_bar=True keeps numpyro's cached step
    X, truth, _, ml, cl = make_linked_blobs(2)
    with x64():
        x = jnp.asarray((X - X.mean(0)) / X.std(0))
        pairs = np.concatenate([ml, cl])
        links = make_links(len(X), pairs, np.r_[np.ones(len(ml)), -np.ones(len(cl))])
        kernel = inference.TVClustKernel(links, _family(2), k_max=12)
        key = jax.random.key(0)
        state = kernel.init(key, 0, None, (x,), {})
        k0 = hartigan.voronoi(x, hartigan.init_kmeanspp(jax.random.split(key)[1], x, 6))
        np.testing.assert_array_equal(state.labels, k0)  # the estimator's k-means++ start (6 = k_max // 2)
        mcmc = MCMC(kernel, num_warmup=30, num_samples=60, progress_bar=True)
        mcmc.run(jax.random.key(1), x)
        samples = mcmc.get_samples()
        mcmc.print_summary()
    out = capsys.readouterr().out
    assert set(samples) == {"labels", "n_clusters", "log_joint", "p", "q"}  # alpha fixed: not a site
    assert samples["labels"].shape == (60, len(X)) and samples["p"].std() > 0
    rows = [ln.split()[0] for ln in out.splitlines()[2:] if ln.strip()]
    assert set(rows) == {"n_clusters", "log_joint", "p", "q"}, out
    from ppclust.metrics import ari

    assert ari(truth, np.asarray(samples["labels"][-1])) > 0.9


def test_numpyro_model_is_generative_with_the_estimator_defaults():
    from numpyro.infer import Predictive

    from ppclust.models.tvclust import numpyro_model

    pairs = np.array([[0, 1], [2, 3], [4, 5], [1, 7]])
    sim = Predictive(numpyro_model, num_samples=7)(jax.random.key(0), n=30, d=3, pairs=pairs)
    assert sim["x"].shape == (7, 30, 3) and sim["E"].shape == (7, 4) and sim["z"].shape == (7, 30)
    assert set(np.unique(np.asarray(sim["E"]))) <= {0, 1}
    # the estimator's NIW defaults: Sigma ~ IW(nu0 = d + 2, psi0 = I), so E[Sigma] = I (spec 2.8 [R])
    from numpyro import handlers
    from scipy.stats import invwishart

    tr = handlers.trace(handlers.seed(numpyro_model, 0)).get_trace(n=2, d=3)
    sigma = np.array([[2.0, 0.3, 0.0], [0.3, 1.0, 0.2], [0.0, 0.2, 0.5]])
    got = float(tr["Sigma"]["fn"].base_dist.log_prob(jnp.asarray(sigma)))
    assert got == pytest.approx(invwishart(df=5, scale=np.eye(3)).logpdf(sigma), rel=1e-5)
    with pytest.raises(ValueError, match="`n` and `d`"):
        numpyro_model()
