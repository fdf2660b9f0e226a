"""ppclust.inference: the solvers (pure functions) and the NumPyro Gibbs kernel.

``ppclust.inference.TVClustKernel`` is the collapsed Gibbs sampler of TVClust as a
``numpyro.infer.mcmc.MCMCKernel`` (:class:`ppclust.inference.tvclust_kernel.TVClustKernel`), imported lazily.
"""

__all__ = ["TVClustKernel"]


def __getattr__(name):
    if name == "TVClustKernel":
        from ppclust.inference.tvclust_kernel import TVClustKernel

        return TVClustKernel
    raise AttributeError(f"module 'ppclust.inference' has no attribute {name!r}")
