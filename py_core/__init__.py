"""The playground's ML core: data, forest, transformer, kernels (standard library only)."""

__version__ = "0.1.0"  # the one place: both pyproject.toml files read it

# The composition root: the kernel families register their WGSL and references with the GPU
# interface (py_core.gpu imports no family), so any backend made below py_core can load a kernel.
from . import kernels  # noqa: E402, F401
