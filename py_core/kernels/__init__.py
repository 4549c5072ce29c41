"""The kernel families, and the plain-Python references of their WGSL kernels.

A family is a package, `py_core/kernels/<family>/` (see `family.py`): its WGSL, its description
(layouts and constants, from which the WGSL header is generated), its self-test cases (`cases.py`)
and this reference. The reference mirrors `<family>.wgsl`: for each entry point it registers
a function `fn(buffers, grid, constants)` that does what the whole dispatch does, over
`array.array` buffers in binding order. These functions are the kernels' executable
specification: the reference backend runs them, and tests hold the GPU backends to them.
"""
from __future__ import annotations

import importlib

from ..gpu.backend import use_catalog

_REGISTRY: dict[tuple[str, str], object] = {}
_WRITES: dict[tuple[str, str], frozenset] = {}


def reference(family: str, entry: str, writes=()):
    """Register `fn` as the reference of `<family>.wgsl`'s entry point `entry`, which writes the
    bindings numbered `writes` and only reads the others."""
    def register(fn):
        _REGISTRY[(family, entry)] = fn
        _WRITES[(family, entry)] = frozenset(writes)
        return fn
    return register


def written(family: str, entry: str) -> frozenset:
    """The bindings that entry `entry` of `family` writes (its reference's `writes`): WebGPU
    forbids binding a written buffer a second time in the same dispatch."""
    lookup(family, entry)
    return _WRITES[(family, entry)]


def lookup(family: str, entry: str):
    if (family, entry) not in _REGISTRY:
        try:
            importlib.import_module(package(family))
        except ModuleNotFoundError as exc:
            raise KeyError(f"no reference module for kernel family {family!r}") from exc
    try:
        return _REGISTRY[(family, entry)]
    except KeyError:
        raise KeyError(f"kernel family {family!r} has no reference for entry {entry!r}") from None


# The GPU interface imports no family: it is handed their WGSL and references here.
from .family import package, shader_source  # noqa: E402  (after lookup: family.py imports nothing of this)

use_catalog(shader_source, lookup)
