"""The playground's ML core: data, forest, transformer, kernels (standard library only)."""

__version__ = "0.1.0"  # the one place: both pyproject.toml files read it
