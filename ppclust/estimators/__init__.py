"""ppclust.estimators."""
