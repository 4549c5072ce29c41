"""cos(pi x) with the same bits on every platform: the learning-rate schedule's cosine.

It is computed with +, -, * and / only, which IEEE 754 rounds the same everywhere, rather than with
`math.cos`, whose last bit differs between C libraries (glibc on the server, musl in Pyodide).
(The random numbers every platform reproduces are py_core.rng's.)
"""
from __future__ import annotations

_HALF_PI = 1.5707963267948966
# sine and cosine Taylor coefficients, highest power first (|x| <= pi / 4: error < 1e-17)
_SIN_C = [(-1) ** k / _f for k, _f in reversed(list(enumerate(
    [1, 6, 120, 5040, 362880, 39916800, 6227020800, 1307674368000])))]
_COS_C = [(-1) ** k / _f for k, _f in reversed(list(enumerate(
    [1, 2, 24, 720, 40320, 3628800, 479001600, 87178291200, 20922789888000])))]


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
