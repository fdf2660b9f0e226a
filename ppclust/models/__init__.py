"""ppclust.models."""
