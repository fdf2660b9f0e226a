"""ppclust.estimators: the scikit-learn estimators, one module per method (``ppclust.TVClust`` etc.)."""

__all__: list[str] = []
