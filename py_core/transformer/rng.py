"""Counter-based random numbers that the browser, the server and PyTorch all reproduce exactly.

- Everything starts from `hash32(key, counter)`, integer arithmetic modulo 2**32, which the
  kernels compute on the GPU too (py_core/kernels/transformer_embedding.py): batch offsets,
  sampling uniforms, and the initial weights, normals made from the hash with integer steps and
  one correctly rounded f32 multiply (py_core/kernels/transformer_init.py), so the weights are
  bit-identical whether the GPU, Pyodide or CPython draws them.
- The cosine of the learning-rate schedule is computed here with +, -, * and / only, which IEEE
  754 rounds the same everywhere, rather than with `math.cos`, whose last bit differs between C
  libraries (glibc on the server, musl in Pyodide).
"""
from __future__ import annotations

from array import array

from ..kernels.transformer_embedding import MASK, batch_offset, hash32, mix32
from ..kernels.transformer_init import normals_fixed, tensor_key

__all__ = ["STREAM_TRAIN", "STREAM_VAL", "STREAM_SAMPLE", "STREAM_INIT", "stream_key", "hash32",
           "uniform", "normals", "init_key", "batch_offsets", "cos_pi"]

STREAM_TRAIN, STREAM_VAL, STREAM_SAMPLE, STREAM_INIT = 1, 2, 3, 4  # independent streams of one seed

_HALF_PI = 1.5707963267948966
_U32 = 2.3283064365386963e-10   # 2**-32
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
    """n normal(0, std) float32 values for the tensor `label`: element i from hash32 of the
    tensor's key and i, through a fixed-point quantile table (kernels/transformer_init.py), as
    the init_normal kernel draws them on the GPU."""
    return normals_fixed(init_key(seed, label), n, std)


def init_key(seed: int, label: str) -> int:
    """The 32-bit key of tensor `label`'s initial weights."""
    return tensor_key(stream_key(seed, STREAM_INIT), label)


def batch_offsets(seed: int, stream: int, step: int, batch_size: int, n_windows: int) -> list[int]:
    """Starts of the batch_size sequences of batch `step`, as the get_batch kernel draws them."""
    key = stream_key(seed, stream)
    return [batch_offset(key, step, b, batch_size, n_windows) for b in range(batch_size)]
