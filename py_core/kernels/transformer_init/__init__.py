"""Reference of `transformer_init.wgsl`: normal initial weights from an integer hash.

The draw (fixed-point quantile table, integer steps, one f32 multiply: the same bits on the GPU,
CPython, Pyodide and PyTorch) is py_core.rng's `normals_fixed`; this kernel makes it on the GPU.
"""
from __future__ import annotations

from array import array

from ...rng import fixed_normal, hash32
from .. import reference
from ..family import Family
from ..layout import Struct

INIT = Struct("n:u32 offset:u32 key:u32 scale:f32")
FAMILY = Family(structs={"Init": INIT})


@reference("transformer_init", "init_normal", writes={2})
def init_normal(bufs, grid, constants):
    prm, table, out = bufs
    p = INIT.unpack(prm)
    scale = p["scale"]
    o = p["offset"]
    out[o:o + p["n"]] = array("f", [fixed_normal(hash32(p["key"], i), table) * scale
                                    for i in range(p["n"])])
