import nbformat as nbf
nb = nbf.v4.new_notebook()
md, code = nbf.v4.new_markdown_cell, nbf.v4.new_code_cell
nb.cells = [
md("""# TVClust: the posterior over partitions

TVClust (Khashabi et al. 2015) treats the data and a set of noisy may-link / may-not-link pairs as two
views of one partition: a Dirichlet-process Gaussian mixture for the data, and a noisy random graph for
the links (a pair inside a cluster is a may-link with probability $p$, a pair across clusters a
may-not-link with probability $q$). `ppclust.TVClust` samples the posterior with a collapsed Gibbs
sampler and returns an ArviZ `DataTree`. Set `PPCLUST_NOTEBOOK_FULL=1` for longer chains."""),
code("""import os
import numpy as np
import matplotlib.pyplot as plt
import arviz as az
import ppclust
from ppclust import datasets, metrics, plot, posterior

FULL = os.environ.get("PPCLUST_NOTEBOOK_FULL") == "1"
n_draws, n_warmup, n_chains, n_links = (1000, 1000, 4, 400) if FULL else (60, 60, 2, 150)
X, y = datasets.load("iris")
X = (X - X.mean(0)) / X.std(0)
side = datasets.sample_links(y, n_links, noise=0.1, seed=0)
print(X.shape, "links:", side.n_links, "may-link:", len(side.must_link), "may-not-link:", len(side.cannot_link))"""),
code("""plot.plot_data_links(X, y, side.must_link, side.cannot_link, title="iris (PCA), true classes, 10% noisy links")
plt.show()"""),
md("## Fit: a few chains of collapsed Gibbs ($p$, $q$ integrated out)"),
code("""est = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains, random_state=0)
est.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
print("K =", est.n_clusters_, " posterior mean p =", round(est.p_, 3), " q =", round(est.q_, 3))
dt = est.posterior_
dt"""),
md("""## Convergence: ESS and R-hat of the label-invariant summaries
`p` and `q` are genuine posterior draws: with the default `pq="collapse"` the sampler integrates them out,
and `posterior_` draws them from their Beta conditionals given each saved partition. Their
Rao-Blackwellised conditional means $E[p \\mid z, E]$ are stored as `p_cond_mean`, `q_cond_mean`: a
much narrower spread, which is *not* the posterior uncertainty of $p$. Constants (fixed $\\alpha$) are
attributes, not posterior variables, so no R-hat is NaN."""),
code("""print(az.summary(dt, var_names=["n_clusters", "p", "q", "p_cond_mean", "q_cond_mean"]))
print(az.summary(dt, group="sample_stats", var_names=["lp"]))
print("sd of p draws / sd of E[p | z]:", float(dt.posterior["p"].std() / dt.posterior["p_cond_mean"].std()))"""),
code("""fig, axes = plt.subplots(1, 3, figsize=(13, 2.8), layout="constrained")
plot.plot_trace(est.samples_.n_clusters, "number of clusters", ax=axes[0])
plot.plot_trace(est.log_joint_, "log joint", ax=axes[1])
plot.plot_k_posterior(est.samples_.n_clusters, ax=axes[2])
plt.show()"""),
md("""## Model criticism: PSIS-LOO and model comparison
The `log_likelihood` group holds, per point and draw, the collapsed leave-one-out predictive
$\\log p(x_i \\mid x_{-i}, z_{-i}, E)$ (the point's own label summed out; `ppclust.posterior.loo_log_predictive`),
which is exactly the importance ratio PSIS-LOO needs. Compare TVClust with and without links, and full
against diagonal covariances, on the same observations."""),
code("""print(az.loo(dt))
fits = {"links, full": est}
fits["no links, full"] = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains,
                                         random_state=0).fit(X)
fits["links, diag"] = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains,
                                      covariance_type="diag", random_state=0).fit(
    X, must_link=side.must_link, cannot_link=side.cannot_link)
ok = {}
for name, f in fits.items():
    try:
        az.loo(f.posterior_)
        ok[name] = f.posterior_
    except ValueError as err:  # e.g. "All tail values are the same": the draws sit on a few partitions
        print(f"{name}: no PSIS-LOO ({err}); the posterior visits too few partitions, run longer chains "
              "(PPCLUST_NOTEBOOK_FULL=1)")
if len(ok) > 1:
    print(az.compare(ok))"""),
md("""## Point estimate over all partitions (SALSO) and its credible ball
`labels_` minimises the posterior expected loss (Binder by default, `point_estimate="vi"` for the
variation of information; `loss_a` sets unequal costs) over *all* partitions by sequential allocation and
sweetening (Dahl, Johnson & Müller 2022), with O(n x draws) memory. The 95% credible ball (Wade &
Ghahramani 2018) shows how far the posterior spreads around it."""),
code("""print(est.point_estimate_)
print(est.credible_ball_)
est.credible_ball_.plot(X); plt.show()
est.credible_ball_.plot(); plt.show()"""),
md("## Posterior similarity matrix, ordered by the Binder point estimate"),
code("""fig, axes = plt.subplots(1, 2, figsize=(11, 4.3), layout="constrained")
plot.plot_psm(est.psm_, order_by=est.labels_, ax=axes[0])
plot.plot_data_links(X, est.labels_, side.must_link, side.cannot_link, title="TVClust point estimate (Binder)",
                     ax=axes[1])
plt.show()"""),
md("""## Which points is the posterior unsure about?
mclust's uncertainty, $1 - \\max_k z_{ik}$, has a partition-posterior analogue: one minus the highest mean
co-clustering probability of a point with a cluster of the point estimate (`plot.point_uncertainty`)."""),
code("""u = plot.point_uncertainty(est.labels_, psm=est.psm_)
print(f"mean uncertainty {u.mean():.3f}; points above 0.2: {(u > 0.2).sum()}")
plot.plot_uncertainty(X, est.labels_, u); plt.show()"""),
md("## Point estimates: SALSO (Binder) vs variation of information vs highest log joint"),
code("""from ppclust import partition
lab = est.samples_.labels
points = {"binder": est.labels_,
          "vi": partition.salso(lab, "vi", log_joint=est.log_joint_).labels,
          "max_log_joint": posterior.point_estimate(lab, loss="max_log_joint", log_joint=est.log_joint_)}
for name, z in points.items():
    print(f"{name:14s} K={len(np.unique(z))}  E[VI]={partition.expected_loss(z, lab, 'vi'):.4f}  "
          f"E[Binder]={partition.expected_loss(z, lab, 'binder'):.4f}  NMI={metrics.nmi(y, z):.3f}")
plot.plot_partitions(X, {"truth": y, **points}); plt.show()"""),
md("## A self-describing netCDF: sampler settings and prior are attributes"),
code("""import tempfile, pathlib
path = pathlib.Path(tempfile.mkdtemp()) / "tvclust.nc"
posterior.save(dt, path)
back = posterior.load(path)
print({k: back.attrs[k] for k in ("model", "param_pq", "prior_a_p", "prior_b_p", "niw_nu0", "log_likelihood")})"""),
md("""## Sensitivity to noisy links
The posterior of $p$ (sensitivity) and $q$ (specificity) tracks the link noise: with more flipped links
both fall, so the sampler trusts the links less (the prior Beta(1,10) / Beta(10,1) is neutral)."""),
code("""rows = []
for noise in ((0.0, 0.2, 0.4) if FULL else (0.35,)):
    s = datasets.sample_links(y, n_links, noise=noise, seed=1)
    e = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains, random_state=0)
    e.fit(X, must_link=s.must_link, cannot_link=s.cannot_link)
    rows.append((noise, e.p_, e.q_, e.n_clusters_, metrics.nmi(y, e.labels_), metrics.ari(y, e.labels_)))
    print(f"noise={noise:.1f}  E[p]={e.p_:.3f}  E[q]={e.q_:.3f}  K={e.n_clusters_}  "
          f"NMI={rows[-1][4]:.3f}  ARI={rows[-1][5]:.3f}")
if FULL:
    e0 = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains, random_state=0).fit(X)
    print(f"no links      K={e0.n_clusters_}  NMI={metrics.nmi(y, e0.labels_):.3f}  "
          f"ARI={metrics.ari(y, e0.labels_):.3f}")"""),
]
nb.cells += [
    md("""## Two implementations of the sweep, the same draws
On CPU the point updates run as one numba-compiled loop (`backend="auto"` → `"numba"`); `"xla"` keeps
them inside the jitted JAX program (what runs on a GPU). Both consume the same random numbers, so
the same seed gives the same chains; only the time differs (second fits, compilation excluded)."""),
    code("""import time
timings, fits = {}, {}
for backend in ("numba", "xla"):
    kw = dict(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains, random_state=1, backend=backend)
    ppclust.TVClust(**kw).fit(X, must_link=side.must_link, cannot_link=side.cannot_link)  # compile
    t0 = time.perf_counter()
    fits[backend] = ppclust.TVClust(**kw).fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
    timings[backend] = time.perf_counter() - t0
same = np.array_equal(fits["numba"].samples_.labels, fits["xla"].samples_.labels)
print(f"identical draws: {same};  numba {timings['numba']:.2f} s, xla {timings['xla']:.2f} s "
      f"({timings['xla'] / timings['numba']:.1f}x)")
assert same"""),
    md("""## The same sampler as a NumPyro `MCMCKernel`
`ppclust.inference.TVClustKernel` runs one collapsed Gibbs sweep per `sample()` from the estimator's
k-means++ start; `print_summary` reports the label-invariant scalars (only in full mode here)."""),
    code("""if FULL:
    import jax, jax.numpy as jnp
    from numpyro.infer import MCMC
    from ppclust.families import GaussianNIW
    from ppclust.inference import TVClustKernel
    from ppclust.models.tvclust import make_links
    with jax.enable_x64(True):
        d = X.shape[1]
        fam = GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(d + 2.0), jnp.eye(d))
        mcmc = MCMC(TVClustKernel(make_links(len(X), side=side), fam, k_max=32), num_warmup=100,
                    num_samples=100, progress_bar=False)
        mcmc.run(jax.random.key(0), jnp.asarray(X))
        mcmc.print_summary()"""),
    ]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/tvclust_posterior.ipynb")
