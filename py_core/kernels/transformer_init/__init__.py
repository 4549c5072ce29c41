"""Reference of `transformer_init.wgsl`: normal initial weights from an integer hash.

A weight is `f32(z) * scale`, where z is a normal quantile in fixed point (units of 2**-20) and
scale = f32(std) * 2**-20. z comes from integer arithmetic only, so the GPU, CPython, Pyodide and
PyTorch get the same integers; f32(z) is exact (|z| < 2**23) and f32 multiplication is correctly
rounded everywhere (WGSL and IEEE 754), so the weights are the same bits everywhere:

    u = hash32(key, i)                       # the tensor's key, the element's index
    sign = u >> 31; r = max(u & 0x7fffffff, 1)   # tail mass r / 2**32 of |z|
    L = floor(log2 r); j = the 8 bits after r's leading one; f = the next 16 (zero-filled)
    z = T[256 L + j] - ((T[256 L + j] - T[256 L + j + 1]) * f >> 16)   # -z when sign

T[256 L + j] is the normal quantile of tail mass 2**(L - 32) * (1 + j / 256), in units of 2**-20
(31 octaves of 256 nodes; T[31 * 256] = 0 is the median): piecewise-linear within each of 7936
segments whose width in z is below 0.004, so the draws are normal to far better than the f32
weights can show. The table is computed once from statistics.NormalDist (whose last bits could
differ between C libraries): every entry sits more than 1e-4 of a unit from a rounding boundary
(tests/test_transformer_model.py checks), so the rounded integers cannot differ.
"""
from __future__ import annotations

import struct
from array import array
from statistics import NormalDist

from ...gpu.layout import Struct
from .. import reference
from ..family import Family
from ..transformer_embedding import MASK, hash32, mix32

INIT = Struct("n:u32 offset:u32 key:u32 scale:f32")
FAMILY = Family(structs={"Init": INIT})
WRITES = {("transformer_init", "init_normal"): {2}}
OCTAVES, NODES, FRAC = 31, 256, 16
ONE = 1 << 20  # fixed point of the table: z in units of 2**-20

_table: array | None = None


def quantile_table() -> array:
    """T (u32, OCTAVES * NODES + 1 entries): tail quantiles in units of 2**-20, decreasing."""
    global _table
    if _table is None:
        inv = NormalDist().inv_cdf
        t = array("I", [round(-inv(2.0 ** (octave - 32) * (1 + j / NODES)) * ONE)
                        for octave in range(OCTAVES) for j in range(NODES)])
        t.append(0)
        _table = t
    return _table


def table_margin() -> float:
    """How far (in table units) the closest entry's exact value lies from a rounding boundary."""
    inv = NormalDist().inv_cdf
    return min(abs(-inv(2.0 ** (o - 32) * (1 + j / NODES)) * ONE % 1.0 - 0.5)
               for o in range(OCTAVES) for j in range(NODES))


def fixed_normal(u: int, table) -> int:
    """The fixed-point normal draw (units of 2**-20) of the 32-bit hash u."""
    r = (u & 0x7FFFFFFF) or 1
    octave = r.bit_length() - 1
    if octave >= 8:
        b = octave - 8
        j = (r >> b) & 255
        rem = r & ((1 << b) - 1)
        f = rem >> (b - FRAC) if b >= FRAC else rem << (FRAC - b)
    else:
        j, f = (r << (8 - octave)) & 255, 0
    i = octave * NODES + j
    z = table[i] - (((table[i] - table[i + 1]) * f) >> FRAC)
    return -z if u >> 31 else z


def tensor_key(stream_key: int, label: str) -> int:
    """The 32-bit key of one tensor: its name's bytes mixed into the init stream's key."""
    key = stream_key
    for byte in label.encode():
        key = mix32((key ^ byte) & MASK)
    return key


def scale_of(std: float) -> float:
    """f32(std) * 2**-20: what multiplies the fixed-point draw (exact in f32)."""
    return struct.unpack("<f", struct.pack("<f", std))[0] / ONE


def normals_fixed(key: int, n: int, std: float) -> array:
    """n weights f32(z_i) * scale for i = 0 .. n - 1: what init_normal writes."""
    table, scale = quantile_table(), scale_of(std)
    # z * scale is exact in a double (23 x 24 bits); array("f") rounds it once, as f32 multiply does
    return array("f", [fixed_normal(hash32(key, i), table) * scale for i in range(n)])


@reference("transformer_init", "init_normal")
def init_normal(bufs, grid, constants):
    prm, table, out = bufs
    p = INIT.unpack(prm)
    scale = p["scale"]
    o = p["offset"]
    out[o:o + p["n"]] = array("f", [fixed_normal(hash32(p["key"], i), table) * scale
                                    for i in range(p["n"])])
