"""ppclust.models: the generative models (TVClust's mixture and link graph, the semi-supervised Gaussian
mixture with partial labels) that the solvers of ppclust.inference share."""

__all__: list[str] = []
