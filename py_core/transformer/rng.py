"""Counter-based random numbers that the browser, the server and PyTorch all reproduce exactly.

- Initial weights: normals from Box–Muller over uniforms from keyed BLAKE2b in counter mode
  (`hashlib`, C speed in CPython and Pyodide alike). The logarithm and the sine and cosine are
  computed here with +, -, *, / and sqrt only, which IEEE 754 rounds the same everywhere, rather
  than with `math.log` / `math.cos`, whose last bit differs between C libraries (glibc on the
  server, musl in Pyodide): so the weights are bit-identical in the tab and on the server.
- Batches and sampling: `hash32(key, counter)`, integer arithmetic modulo 2**32, which the
  get_batch kernel computes on the GPU too (see py_core/kernels/transformer_embedding.py).
"""
from __future__ import annotations

import hashlib
from array import array
from math import frexp, sqrt

from ..kernels.transformer_embedding import MASK, batch_offset, hash32, mix32

__all__ = ["STREAM_TRAIN", "STREAM_VAL", "STREAM_SAMPLE", "stream_key", "hash32", "uniform",
           "normals", "batch_offsets", "cos_pi"]

STREAM_TRAIN, STREAM_VAL, STREAM_SAMPLE = 1, 2, 3  # independent streams of one seed

_LN2 = 0.6931471805599453
_SQRT_HALF = 0.7071067811865476
_HALF_PI = 1.5707963267948966
_BIG_ENDIAN = array("I", [1]).tobytes()[0] != 1
_U32 = 2.3283064365386963e-10   # 2**-32
_Q32 = 9.313225746154785e-10    # 4 * 2**-32: a u32 as quarter turns
# 1 / (2k + 1) for the atanh series of the logarithm, highest power first
_LOG_C = [1.0 / (2 * k + 1) for k in range(10, -1, -1)]
# sine and cosine Taylor coefficients, highest power first (|x| <= pi / 4: error < 1e-17)
_SIN_C = [(-1) ** k / _f for k, _f in reversed(list(enumerate(
    [1, 6, 120, 5040, 362880, 39916800, 6227020800, 1307674368000])))]
_COS_C = [(-1) ** k / _f for k, _f in reversed(list(enumerate(
    [1, 2, 24, 720, 40320, 3628800, 479001600, 87178291200, 20922789888000])))]


def stream_key(seed: int, stream: int) -> int:
    """The 32-bit key of one stream of a seed."""
    return mix32(mix32(seed & MASK) ^ stream)


def uniform(key: int, counter: int) -> float:
    """A float in (0, 1) from the hash of (key, counter)."""
    return (hash32(key, counter) + 0.5) * _U32


def _log(u: float) -> float:
    """ln(u) for u > 0 with IEEE basic operations only: u = m 2^e, ln m = 2 atanh((m-1)/(m+1))."""
    m, e = frexp(u)
    if m < _SQRT_HALF:
        m += m
        e -= 1
    t = (m - 1.0) / (m + 1.0)
    t2 = t * t
    s = 0.0
    for c in _LOG_C:
        s = s * t2 + c
    return 2.0 * t * s + e * _LN2


def _sincos(quarter_turns: float) -> tuple[float, float]:
    """(cos, sin) of an angle given in quarter turns, in [0, 4)."""
    q = int(quarter_turns + 0.5)
    x = (quarter_turns - q) * _HALF_PI  # |x| <= pi / 4
    x2 = x * x
    s = c = 0.0
    for k in _SIN_C:
        s = s * x2 + k
    for k in _COS_C:
        c = c * x2 + k
    s *= x
    q &= 3
    if q == 0:
        return c, s
    if q == 1:
        return -s, c
    if q == 2:
        return -c, -s
    return s, -c


def cos_pi(x: float) -> float:
    """cos(pi x) for 0 <= x <= 1, the same bits on every platform (the cosine schedule's)."""
    return _sincos(2.0 * x)[0]


def normals(seed: int, label: str, n: int, std: float = 1.0) -> array:
    """n normal(0, std) float32 values for the tensor `label`; block b of 16 comes from
    BLAKE2b(label || 0 || b, key=seed) as 8 pairs of u32, each pair one Box–Muller draw
    (radius from the first, angle from the second). `_log` and `_sincos`, inlined for speed."""
    key = seed.to_bytes(8, "little")
    prefix = label.encode() + b"\0"
    out = array("d")
    push = out.append
    lc, sc, cc = _LOG_C, _SIN_C, _COS_C
    for b in range(-(-n // 16)):
        w = array("I", hashlib.blake2b(prefix + b.to_bytes(8, "little"), key=key, digest_size=64).digest())
        if _BIG_ENDIAN:  # pragma: no cover
            w.byteswap()
        for i in range(0, 16, 2):
            m, e = frexp((w[i] + 0.5) * _U32)
            if m < _SQRT_HALF:
                m += m
                e -= 1
            t = (m - 1.0) / (m + 1.0)
            t2 = t * t
            ln = ((((((((((lc[0] * t2 + lc[1]) * t2 + lc[2]) * t2 + lc[3]) * t2 + lc[4]) * t2 + lc[5])
                      * t2 + lc[6]) * t2 + lc[7]) * t2 + lc[8]) * t2 + lc[9]) * t2 + lc[10])
            r = sqrt(-2.0 * (2.0 * t * ln + e * _LN2))
            a = (w[i + 1] + 0.5) * _Q32
            q = int(a + 0.5)
            x = (a - q) * _HALF_PI
            x2 = x * x
            sn = x * (((((((sc[0] * x2 + sc[1]) * x2 + sc[2]) * x2 + sc[3]) * x2 + sc[4]) * x2 + sc[5])
                       * x2 + sc[6]) * x2 + sc[7])
            cs = (((((((cc[0] * x2 + cc[1]) * x2 + cc[2]) * x2 + cc[3]) * x2 + cc[4]) * x2 + cc[5])
                   * x2 + cc[6]) * x2 + cc[7]) * x2 + cc[8]
            q &= 3
            if q == 0:
                push(r * cs); push(r * sn)
            elif q == 1:
                push(-r * sn); push(r * cs)
            elif q == 2:
                push(-r * cs); push(-r * sn)
            else:
                push(r * sn); push(-r * cs)
    return array("f", [v * std for v in out[:n]])


def batch_offsets(seed: int, stream: int, step: int, batch_size: int, n_windows: int) -> list[int]:
    """Starts of the batch_size sequences of batch `step`, as the get_batch kernel draws them."""
    key = stream_key(seed, stream)
    return [batch_offset(key, step, b, batch_size, n_windows) for b in range(batch_size)]
