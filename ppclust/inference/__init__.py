"""ppclust.inference."""
