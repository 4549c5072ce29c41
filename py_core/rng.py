"""Counter-based random numbers and hashes that the GPU, Pyodide, CPython and PyTorch all
reproduce exactly: the one module the kernel families (their references), the algorithms and the
server's PyTorch twin (server/torch_gpt.py) draw from. Integer arithmetic modulo 2**32, so every
platform gets the same numbers.

- `mix32`, `hash32(key, counter)`: lowbias32, as shaders/common.wgsl's sections of the same names:
  the transformer's batch offsets (the get_batch kernel), sampling uniforms, initial weights.
- `pcg`, `hash3`: the forest's bootstrap counts and feature draws (shaders/forest.wgsl).
- `normals_fixed`: normal draws as the init_normal kernel makes them (shaders/transformer_init.wgsl).
  A weight is `f32(z) * scale`, where z is a normal quantile in fixed point (units of 2**-20) and
  scale = f32(std) * 2**-20. z comes from integer arithmetic only, so the GPU, CPython, Pyodide
  and PyTorch get the same integers; f32(z) is exact (|z| < 2**23) and f32 multiplication is
  correctly rounded everywhere (WGSL and IEEE 754), so the weights are the same bits everywhere:

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

MASK = 0xFFFFFFFF
STREAM_TRAIN, STREAM_VAL, STREAM_SAMPLE, STREAM_INIT = 1, 2, 3, 4  # independent streams of one seed
_U32 = 2.3283064365386963e-10   # 2**-32


# ---- lowbias32: the transformer's counter-based generator ----------------------------------------
def mix32(x: int) -> int:
    """lowbias32 (Chris Wellons): a bijection of 32-bit integers with good avalanche."""
    x ^= x >> 16
    x = (x * 0x7FEB352D) & MASK
    x ^= x >> 15
    x = (x * 0x846CA68B) & MASK
    x ^= x >> 16
    return x


def hash32(key: int, counter: int) -> int:
    return mix32(mix32((key ^ counter) & MASK))


def stream_key(seed: int, stream: int) -> int:
    """The 32-bit key of one stream of a seed."""
    return mix32(mix32(seed & MASK) ^ stream)


def uniform(key: int, counter: int) -> float:
    """A float in (0, 1) from the hash of (key, counter)."""
    return (hash32(key, counter) + 0.5) * _U32


def batch_offset(key: int, step: int, b: int, batch_size: int, n_windows: int) -> int:
    """Start of sequence b of step `step`'s batch, as the get_batch kernel computes it."""
    return hash32(key, (step * batch_size + b) & MASK) % n_windows


def batch_offsets(seed: int, stream: int, step: int, batch_size: int, n_windows: int) -> list[int]:
    """Starts of the batch_size sequences of batch `step`, as the get_batch kernel draws them."""
    key = stream_key(seed, stream)
    return [batch_offset(key, step, b, batch_size, n_windows) for b in range(batch_size)]


# ---- PCG: the forest's hash ----------------------------------------------------------------------
def pcg(x: int) -> int:
    s = (x * 747796405 + 2891336453) & MASK
    w = (((s >> ((s >> 28) + 4)) ^ s) * 277803737) & MASK
    return (w >> 22) ^ w


def hash3(a: int, b: int, c: int) -> int:
    return pcg((pcg((pcg(a) + b) & MASK) + c) & MASK)


# ---- fixed-point normals: the initial weights -----------------------------------------------------
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


def init_key(seed: int, label: str) -> int:
    """The 32-bit key of tensor `label`'s initial weights."""
    return tensor_key(stream_key(seed, STREAM_INIT), label)


def normals(seed: int, label: str, n: int, std: float = 1.0) -> array:
    """n normal(0, std) float32 values for the tensor `label`: element i from hash32 of the
    tensor's key and i, as the init_normal kernel draws them on the GPU."""
    return normals_fixed(init_key(seed, label), n, std)
