"""py_core's kernel interface and its backends (see `backend.py` for the contract)."""
from .backend import (
    Backend,
    Buffer,
    Catalog,
    Clear,
    Copy,
    Dispatch,
    GPUError,
    Kernel,
    LimitError,
    Plan,
    shader_source,
    use_catalog,
)

BACKENDS = ("reference", "native", "webgpu")


def get_backend(name: str = "reference", **options) -> Backend:
    """A backend by name. `webgpu` needs the JS runtime (`runtime=`), given only in the browser."""
    if name == "reference":
        from .reference import ReferenceBackend
        return ReferenceBackend()
    if name == "native":
        from .native import NativeBackend
        return NativeBackend(**options)
    if name == "webgpu":
        from .webgpu import WebGPUBackend
        return WebGPUBackend(**options)
    raise ValueError(f"unknown backend {name!r}: choose one of {', '.join(BACKENDS)}")


__all__ = ["Backend", "Buffer", "Clear", "Copy", "Dispatch", "GPUError", "Kernel", "LimitError",
           "Plan", "Catalog", "use_catalog",
           "get_backend", "shader_source", "BACKENDS"]
