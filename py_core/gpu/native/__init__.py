"""The native backend (wgpu-native): server and tests only. A package of its own so the browser's
wheel (py_core/pyproject.toml) leaves it out: it needs `wgpu`, which the tab has not."""
from .backend import NativeBackend

__all__ = ["NativeBackend"]
