"""PyTorch implementations of the WGSL kernels, for the cuda backend (server only).

`torch_impl/<family>.py` mirrors `shaders/<family>.wgsl` as `py_core/kernels/<family>.py` does,
but with vectorised torch ops over the whole grid: `fn(bufs, grid, constants)` where each buffer
is a `py_core.gpu.cuda.TBuf` (`.t`, the 1-D device tensor: float32, or int32 holding u32 bits;
`.host`, the host copy of a uniform buffer). Each module sets `WRITTEN_FOR`, the `fingerprint`
of the WGSL it mirrors: when the WGSL changes, the backend runs the reference for that family (a
warning says so) until the torch code is checked and the fingerprint updated
(`python -m py_core.kernels.torch_impl` prints them). Integer atomics become scatter/index adds
on int64, wrapped back to 32 bits; f32 arithmetic is done op by op in float32 where the WGSL's result
decides something (split scores), so the same inputs give the same decisions.

These modules import torch: only `py_core/gpu/cuda.py` imports them, never the browser.
"""
from __future__ import annotations

import importlib
import logging

log = logging.getLogger(__name__)

_REGISTRY: dict[tuple[str, str], object] = {}
_LOADED: set[str] = set()
STALE: dict[str, str] = {}  # family -> its fingerprint now, for families whose torch code is stale

M32 = 0xFFFFFFFF


def torch_kernel(family: str, entry: str):
    """Register `fn` as the torch implementation of `shaders/<family>.wgsl`'s entry `entry`."""
    def register(fn):
        if (family, entry) in _REGISTRY:  # a second definition would silently replace the first
            raise RuntimeError(f"torch kernel {family}.{entry} is defined twice")
        _REGISTRY[(family, entry)] = fn
        return fn
    return register


def lookup(family: str, entry: str):
    """The torch implementation of (family, entry), or None when there is none, or when the
    family's WGSL changed since its torch module was written (then it is in STALE)."""
    if family not in _LOADED:
        _LOADED.add(family)
        module = _module(family)
        if module is not None:
            now, written = fingerprint(family), written_for(module, family)
            if written != now:
                STALE[family] = now
                log.warning("torch kernels of %r were written for another version of %s.wgsl "
                            "(fingerprint %s, now %s): the cuda backend runs the reference "
                            "instead until %s is checked and updated",
                            family, family, written, now, module.__file__)
    if family in STALE:
        return None
    return _REGISTRY.get((family, entry))


def _module(family: str):
    """The module holding a family's torch kernels: torch_impl/<family>.py, or for the families
    `transformer_*` the shared torch_impl/transformer.py; None when there is none."""
    for name in dict.fromkeys((family, family.split("_")[0])):
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
    return None


def written_for(module, family: str) -> str | None:
    """The fingerprint a module's torch code was written for (WRITTEN_FOR: str, or per family)."""
    written = getattr(module, "WRITTEN_FOR", None)
    return written.get(family) if isinstance(written, dict) else written


def fingerprint(family: str) -> str:
    """A digest of what a family's kernels do: its WGSL without comments and layout. A torch
    module records the digest it was written for (`WRITTEN_FOR`); any later change to the code of
    the WGSL makes it stale. (The references may be refactored freely: the tests hold the torch
    kernels to them on every run.)"""
    import hashlib
    import re

    from ...gpu.backend import shader_source
    wgsl = " ".join(re.sub(r"//[^\n]*", "", shader_source(family)).split())
    return hashlib.sha256(wgsl.encode()).hexdigest()[:16]


def families() -> list[str]:
    """Every family with torch kernels (their modules are imported to find them)."""
    from pathlib import Path
    for path in Path(__file__).parent.glob("*.py"):
        if not path.stem.startswith("__"):
            importlib.import_module(f"{__name__}.{path.stem}")
    return sorted({family for family, _ in _REGISTRY})


def implemented() -> list[str]:
    """Every "family.entry" with a current torch implementation (stale families left out)."""
    for family in families():
        lookup(family, "")  # checks its fingerprint
    return sorted(f"{f}.{e}" for f, e in _REGISTRY if f not in STALE)


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

