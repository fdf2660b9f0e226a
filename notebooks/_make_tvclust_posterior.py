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
code("""fig = plot.plot_data_links(X, y, side.must_link, side.cannot_link, title="iris (PCA), true classes, 10% noisy links")
plt.show()"""),
md("## Fit: a few chains of collapsed Gibbs ($p$, $q$ integrated out)"),
code("""est = ppclust.TVClust(n_draws=n_draws, n_warmup=n_warmup, n_chains=n_chains, random_state=0)
est.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
print("K =", est.n_clusters_, " posterior mean p =", round(est.p_, 3), " q =", round(est.q_, 3))
dt = est.posterior_
dt"""),
md("## Convergence: ESS and R-hat of the label-invariant summaries"),
code("""summ = az.summary(dt, var_names=["n_clusters", "p", "q"])
lp = az.summary(dt, group="sample_stats", var_names=["lp"]) if hasattr(az, "summary") else None
print(summ)
print(lp)"""),
code("""plot.plot_trace(est.samples_.n_clusters, "number of clusters"); plt.show()
plot.plot_trace(est.log_joint_, "log joint"); plt.show()"""),
md("## Posterior similarity matrix, ordered by the Binder point estimate"),
code("""plot.plot_psm(est.psm_, order_by=est.labels_); plt.show()
fig = plot.plot_data_links(X, est.labels_, side.must_link, side.cannot_link, title="TVClust point estimate (Binder)")
plt.show()"""),
md("## Point estimates: Binder vs variation of information vs highest log joint"),
code("""lab = est.samples_.labels
points = {"binder": est.labels_,
          "vi": posterior.point_estimate(lab, loss="vi", max_reference=100),
          "max_log_joint": posterior.point_estimate(lab, loss="max_log_joint", log_joint=est.log_joint_)}
for name, z in points.items():
    print(f"{name:14s} K={len(np.unique(z))}  NMI={metrics.nmi(y, z):.3f}  ARI={metrics.ari(y, z):.3f}")
plot.plot_partitions(X, {"truth": y, **points}); plt.show()"""),
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
`TVClustKernel` runs one collapsed Gibbs sweep per `sample()`, so `numpyro.infer.MCMC` drives it
(only in full mode here, to keep the small run fast)."""),
        code("""if FULL:
    import jax, jax.numpy as jnp
    from numpyro.infer import MCMC
    from ppclust._jax import x64
    from ppclust.families import GaussianNIW
    from ppclust.inference.gibbs import TVClustKernel
    from ppclust.models.tvclust import make_links
    with x64():
        d = X.shape[1]
        fam = GaussianNIW(jnp.zeros(d), jnp.asarray(1.0), jnp.asarray(d + 2.0), jnp.eye(d))
        mcmc = MCMC(TVClustKernel(make_links(len(X), side=side), fam, k_max=32), num_warmup=100,
                    num_samples=100, progress_bar=False)
        mcmc.run(jax.random.key(0), jnp.asarray(X), extra_fields=("log_joint", "n_clusters"))
        k = np.asarray(mcmc.get_extra_fields()["n_clusters"])
    print("NumPyro MCMC: K posterior mean", k.mean())"""),
    ]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbf.write(nb, "notebooks/tvclust_posterior.ipynb")
