"""The version of ppclust (one place; pyproject.toml reads it)."""

__all__ = ["__version__"]

__version__ = "0.1.0"
