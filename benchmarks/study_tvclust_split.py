"""Why clean links barely help TVClust on vehicle / segment / penbased, and why it under-splits satimage:
model or mixing? (issue 20) -> results/tvclust_split_study.md.

On the benefit panel's own subsamples and links (``bench_benefit.panel_sample`` / ``panel_seed``; 3 random
pairs per point, clean, and for satimage also 10% flipped), TVClust is fitted under the session-9 neutral
link prior (``link_noise=None``: p ~ Beta(1, 10), q ~ Beta(10, 1)) and under the session-10 default
(``link_noise="auto"``: p, q ~ Beta(0.9 L, 0.1 L) for L links). Under the prior it was fitted with, the
model's own collapsed log joint (p and q integrated out; its three terms from ``models.tvclust.log_crp``,
the family's ``log_marginal`` and ``log_link_likelihood``, which ``log_joint_from_stats`` sums) is
evaluated at
  * ``chain``: the last draw of each chain (the best of the chains is shown),
  * ``point``: the point estimate ``labels_``,
  * ``merged``: the chain's last draw with the clusters whose majority class is the same merged (the
    sub-clusters of each class joined),
  * ``classes``: the true class partition.
If ``classes`` / ``merged`` score above ``chain``, the model prefers the class-level partition and the
chain does not reach it (mixing); if below, the model itself prefers the split partition (prior).

Run: ``PYTHONPATH=. python benchmarks/study_tvclust_split.py [--draws 1] [--data vehicle segment ...]``.
"""

from __future__ import annotations

import argparse

import jax.numpy as jnp
import numpy as np

from benchmarks import bench_benefit as bb
from benchmarks._common import machine_info, md_table, write_result
from ppclust import datasets, metrics
from ppclust._jax import x64
from ppclust.estimators._base import link_side_info
from ppclust.families import GaussianNIW
from ppclust.models.tvclust import TVClustPrior, log_crp, log_link_likelihood, make_links, pair_counts

DATA = ("vehicle", "segment", "penbased", "satimage")


def merged_by_class(labels, y):
    """Each cluster relabelled by its majority class: the sub-clusters of a class joined."""
    out = np.empty_like(labels)
    for k in np.unique(labels):
        m = labels == k
        out[m] = np.bincount(y[m]).argmax()
    return out


def terms(labels, X, links, family, prior):
    """(CRP, data, links, total) of the collapsed log joint, each from the model's functions."""
    with x64():
        lab = jnp.asarray(np.unique(labels, return_inverse=True)[1], jnp.int32)
        stats = family.stats(jnp.asarray(X), lab, X.shape[0])
        crp = float(log_crp(stats.n, prior.alpha))
        data = float(family.log_marginal(stats).sum())
        link = float(log_link_likelihood(pair_counts(lab, links), prior))
    return crp, data, link, crp + data + link


PRIORS = {"neutral (session 9)": {"link_noise": None}, "default": {}}


def study(data, draw, level, noise, prior_name, seed_fit=None):
    from ppclust.estimators.tvclust import TVClust

    X, y = bb.panel_sample(data, 200, draw)
    n, d = X.shape
    side = datasets.sample_links(y, int(round(level * n)), noise, seed=bb.panel_seed(draw, level, noise))
    est = TVClust(random_state=draw if seed_fit is None else seed_fit, progress_bar=False,
                  **PRIORS[prior_name])
    est.fit(X, must_link=side.must_link, cannot_link=side.cannot_link)
    a = est.posterior_.attrs
    Xs = (X - X.mean(0)) / np.where(X.std(0) > 0, X.std(0), 1.0)
    with x64():
        nu0 = float(a["niw_nu0"])  # Psi0 as the estimator builds it (psi_scale I (nu0 - d - 1))
        psi0 = np.eye(d) * est.psi_scale * max(nu0 - d - 1.0, 1.0)
        family = GaussianNIW(jnp.zeros(d), jnp.asarray(float(a["niw_kappa0"])), jnp.asarray(nu0),
                             jnp.asarray(psi0), str(a["covariance"]))
        side = link_side_info(n, None, side.must_link, side.cannot_link, link_model="soft")
        links = make_links(n, side=side)
    prior = TVClustPrior(float(a["prior_alpha"]), float(a["prior_a_p"]), float(a["prior_b_p"]),
                         float(a["prior_a_q"]), float(a["prior_b_q"]))
    lasts = est.samples_.labels[:, -1]
    chain = max(lasts, key=lambda lab: terms(lab, Xs, links, family, prior)[3])
    rows = []
    for name, lab in (("chain", chain), ("point", est.labels_), ("merged", merged_by_class(chain, y)),
                      ("classes", y)):
        t = terms(lab, Xs, links, family, prior)
        rows.append([data, draw, f"{level:g}/{noise:.0%}", prior_name, f"{est.p_:.2f} / {est.q_:.2f}", name,
                     len(np.unique(lab)),
                     f"{metrics.nmi(y, lab):.3f}", *(f"{v:.1f}" for v in t)])
    print(*rows, sep="\n", flush=True)
    return rows, est


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--draws", type=int, default=1)
    ap.add_argument("--data", nargs="*", default=list(DATA))
    ap.add_argument("--out", default="tvclust_split_study.md")
    args = ap.parse_args(argv)
    bb.CFG.update(n_max=200, quick=False)
    rows = []
    for data in args.data:
        for draw in range(args.draws):
            for level, noise in ((3.0, 0.0),) + (((3.0, 0.1),) if data == "satimage" else ()):
                for prior_name in PRIORS:
                    rows += study(data, draw, level, noise, prior_name)[0]
    out = ["# TVClust: model or mixing? (issue 20)", "",
           f"Written by `benchmarks/study_tvclust_split.py`. {machine_info()}", "",
           __doc__.split("\n\n")[1], "",
           md_table(["data", "draw", "pairs/noise", "prior", "p / q", "partition", "K", "NMI", "log CRP",
                     "log data", "log links", "log joint"], rows), ""]
    write_result(args.out, "\n".join(out))


if __name__ == "__main__":
    main()
