"""PyTorch implementations of the WGSL kernels, for the cuda backend (server only).

`torch_impl/<family>.py` mirrors `shaders/<family>.wgsl` as `py_core/kernels/<family>.py` does,
but with vectorised torch ops over the whole grid: `fn(bufs, grid, constants)` where each buffer
is a `py_core.gpu.cuda.TBuf` (`.t`, the 1-D device tensor: float32, or int32 holding u32 bits;
`.host`, the host copy of a uniform buffer). Integer atomics become scatter/index adds on int64,
wrapped back to 32 bits; f32 arithmetic is done op by op in float32 where the WGSL's result
decides something (split scores), so the same inputs give the same decisions.

These modules import torch: only `py_core/gpu/cuda.py` imports them, never the browser.
"""
from __future__ import annotations

import importlib

_REGISTRY: dict[tuple[str, str], object] = {}
_LOADED: set[str] = set()

M32 = 0xFFFFFFFF


def torch_kernel(family: str, entry: str):
    """Register `fn` as the torch implementation of `shaders/<family>.wgsl`'s entry `entry`."""
    def register(fn):
        _REGISTRY[(family, entry)] = fn
        return fn
    return register


def lookup(family: str, entry: str):
    """The torch implementation of (family, entry), or None when there is none yet."""
    if family not in _LOADED:
        _LOADED.add(family)
        try:
            importlib.import_module(f"{__name__}.{family}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{family}":
                raise
    return _REGISTRY.get((family, entry))


def implemented() -> list[str]:
    """Every "family.entry" with a torch implementation (families are imported first)."""
    from pathlib import Path
    for path in Path(__file__).parent.glob("*.py"):
        if path.stem != "__init__":
            lookup(path.stem, "")
    return sorted(f"{f}.{e}" for f, e in _REGISTRY)


# -- helpers for the kernels ------------------------------------------------------------------------

def params(buf, struct) -> dict:
    """A uniform buffer's fields, from its host copy."""
    return struct.unpack(buf.host)


def u32(t):
    """int32 bits -> their unsigned values as int64."""
    import torch
    return t.to(torch.int64) & M32


def to_u32(v):
    """int64 values -> int32 holding their low 32 bits (wraps as u32 arithmetic does)."""
    import torch
    return (((v & M32) ^ 0x80000000) - 0x80000000).to(torch.int32)
