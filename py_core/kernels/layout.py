"""Uniform-buffer layouts shared by Python, the WGSL kernels and the reference kernels.

A kernel's parameters travel in one uniform buffer (binding 0 of group 0 by convention). Python
packs them with `Struct.pack`; the WGSL side declares the same fields in the same order; the
reference kernels read them back with `Struct.unpack`. Every field is 4 bytes (u32, i32, f32), and
the buffer is padded to 16 bytes as WGSL's uniform layout requires.
"""
from __future__ import annotations

import struct
from array import array

_CODES = {"u32": "I", "i32": "i", "f32": "f"}


class Struct:
    """A flat WGSL struct of 4-byte scalars: `Struct("n:u32 lr:f32")`."""

    def __init__(self, spec: str):
        self.fields = [tuple(item.split(":")) for item in spec.split()]
        for name, kind in self.fields:
            if kind not in _CODES:
                raise ValueError(f"field {name!r}: type {kind!r} is not one of u32, i32, f32")
        self._format = "<" + "".join(_CODES[k] for _, k in self.fields)
        self.words = -(-len(self.fields) // 4) * 4  # padded to 16 bytes

    def pack(self, **values) -> array:
        missing = [n for n, _ in self.fields if n not in values]
        extra = set(values) - {n for n, _ in self.fields}
        if missing or extra:
            raise TypeError(f"struct fields missing {missing} or unknown {sorted(extra)}")
        raw = struct.pack(self._format, *(values[n] for n, _ in self.fields))
        words = array("I", raw)
        words.extend([0] * (self.words - len(words)))
        return words

    def unpack(self, words) -> dict:
        raw = memoryview(words).cast("B")[: 4 * len(self.fields)]
        return dict(zip((n for n, _ in self.fields), struct.unpack(self._format, raw)))

    def wgsl(self, name: str) -> str:
        """The WGSL declaration of this layout: `struct Name { n: u32, lr: f32 }`."""
        return f"struct {name} {{ " + ", ".join(f"{n}: {k}" for n, k in self.fields) + " }"
